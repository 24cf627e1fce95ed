//! Flow pools and admission control (Section 4.3).
//!
//! A *flow pool* is the set of connections one initiator address opens within
//! `pool_window_ns` of the pool's first SYN (the paper: "inter-related flows from the same
//! source ... initiated within a short time-period (e.g. a few seconds)"). A SYN opens a
//! new pool when its initiator has no pool, or its pool's window has passed.
//!
//! With admission control on, a new pool is admitted only while the measured drop rate
//! (congestion drops over arrivals in the last complete `drop_rate_window_ns`, admission
//! drops left out of both so refusing SYNs cannot feed back into the measure) is below
//! `admission_drop_threshold` (the paper: "slightly smaller than p_thresh = 0.1"). SYNs of
//! an admitted pool are always admitted. A refused SYN is dropped (the client retries
//! after its SYN timeout); a pool waiting since `t_wait_ns` or longer is admitted on its
//! next SYN whatever the drop rate (the paper's guaranteed admission after T_wait).
//!
//! Memory: pools live in a bounded table (`pool_table_capacity`), evicted least recently
//! used among pools no tracked flow belongs to; a pool waiting for admission can be
//! evicted by a flood of SYNs from other addresses, and then starts waiting anew.

use super::TaqConfig;
use crate::qdisc::parts::{hash::host_hash, BoundedTable, Slot};
use crate::time::Instant;

/// One flow pool.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    pub admitted: bool,
    /// Admitted: when the pool was admitted (its window starts). Waiting: when it was first
    /// refused.
    pub since: Instant,
    /// Tracked flows that belong to the pool (the pool is not evictable while > 0).
    pub flows: u32,
    /// Of those, flows in an active (non-silent) state.
    pub active_flows: u32,
    /// Bytes served, exponentially decayed (pool fairness).
    pub served: super::Decayed,
}

/// Drops over arrivals, per window of `drop_rate_window_ns`.
#[derive(Debug, Clone, Default)]
pub(crate) struct DropRate {
    start: Instant,
    arrivals: u64,
    drops: u64,
    last_rate: f64,
}

impl DropRate {
    fn advance(&mut self, now: Instant, window_ns: u64) {
        let elapsed = now.saturating_since(self.start).as_nanos();
        if elapsed < window_ns {
            return;
        }
        // A window with no arrivals at all (or more than one window of silence) measures 0.
        self.last_rate = if elapsed < 2 * window_ns && self.arrivals > 0 {
            self.drops as f64 / self.arrivals as f64
        } else {
            0.0
        };
        self.start = Instant(now.as_nanos() - elapsed % window_ns);
        self.arrivals = 0;
        self.drops = 0;
    }
    pub fn arrival(&mut self, now: Instant, window_ns: u64) {
        self.advance(now, window_ns);
        self.arrivals += 1;
    }
    pub fn drop(&mut self, now: Instant, window_ns: u64) {
        self.advance(now, window_ns);
        self.drops += 1;
    }
    /// The rate of the last complete window.
    pub fn rate(&mut self, now: Instant, window_ns: u64) -> f64 {
        self.advance(now, window_ns);
        self.last_rate
    }
    /// What [`Self::rate`] would return, without advancing the window (for snapshots,
    /// which must not change what the discipline does next).
    pub fn peek(&self, now: Instant, window_ns: u64) -> f64 {
        let elapsed = now.saturating_since(self.start).as_nanos();
        if elapsed < window_ns {
            self.last_rate
        } else if elapsed < 2 * window_ns && self.arrivals > 0 {
            self.drops as f64 / self.arrivals as f64
        } else {
            0.0
        }
    }
}

/// What happened to a SYN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Admitted into this pool slot (`None`: the pool table was full of busy pools).
    Admit(Option<u32>),
    Refuse,
}

#[derive(Debug)]
pub(crate) struct Admission {
    table: BoundedTable<u32>,
    pub pools: Vec<Pool>,
    pub drop_rate: DropRate,
    pub pools_admitted: u64,
    pub pools_admitted_after_wait: u64,
    pub syns_refused: u64,
}

impl Admission {
    pub fn new(capacity: u32) -> Self {
        Admission {
            table: BoundedTable::new(capacity),
            pools: Vec::new(),
            drop_rate: DropRate::default(),
            pools_admitted: 0,
            pools_admitted_after_wait: 0,
            syns_refused: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// A SYN from initiator `ip`: admit it (into which pool) or refuse it.
    pub fn on_syn(&mut self, ip: u32, now: Instant, cfg: &TaqConfig) -> Verdict {
        let slot = self.table.lookup(ip, host_hash(ip, 0));
        let i = match slot {
            Slot::Existing(i) => i,
            Slot::New(i) => {
                let fresh = Pool { admitted: false, since: now, flows: 0, active_flows: 0, served: Default::default() };
                if (i as usize) < self.pools.len() {
                    self.pools[i as usize] = fresh;
                } else {
                    self.pools.push(fresh);
                }
                i
            }
            // Every pool has tracked flows: this SYN is judged without a pool.
            Slot::Shared(_) => {
                return if !cfg.admission_control || self.below_threshold(now, cfg) {
                    Verdict::Admit(None)
                } else {
                    self.syns_refused += 1;
                    Verdict::Refuse
                };
            }
        };
        let window_over = now.saturating_since(self.pools[i as usize].since).as_nanos() > cfg.pool_window_ns;
        let p = &self.pools[i as usize];
        if p.admitted && !window_over {
            self.touch(i);
            return Verdict::Admit(Some(i));
        }
        if p.admitted {
            // Its window has passed: this SYN starts a new pool of the same initiator.
            let p = &mut self.pools[i as usize];
            p.admitted = false;
            p.since = now;
        }
        let waited = now.saturating_since(self.pools[i as usize].since).as_nanos();
        let ok = !cfg.admission_control || self.below_threshold(now, cfg);
        let forced = !ok && waited >= cfg.t_wait_ns;
        if ok || forced {
            let p = &mut self.pools[i as usize];
            p.admitted = true;
            p.since = now;
            self.pools_admitted += 1;
            self.pools_admitted_after_wait += forced as u64;
            self.touch(i);
            Verdict::Admit(Some(i))
        } else {
            self.syns_refused += 1;
            self.touch(i);
            Verdict::Refuse
        }
    }

    fn below_threshold(&mut self, now: Instant, cfg: &TaqConfig) -> bool {
        self.drop_rate.rate(now, cfg.drop_rate_window_ns) < cfg.admission_drop_threshold
    }

    /// Most recently used goes to the back of the eviction order, if evictable.
    fn touch(&mut self, i: u32) {
        self.table.set_busy(i);
        if self.pools[i as usize].flows == 0 {
            self.table.set_idle(i);
        }
    }

    pub fn add_flow(&mut self, i: u32) {
        self.pools[i as usize].flows += 1;
        self.table.set_busy(i);
    }

    pub fn remove_flow(&mut self, i: u32) {
        let p = &mut self.pools[i as usize];
        p.flows -= 1;
        if p.flows == 0 {
            self.table.set_idle(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn cfg() -> TaqConfig {
        TaqConfig { admission_control: true, ..TaqConfig::default() }
    }

    #[test]
    fn drop_rate_is_the_last_complete_window() {
        let w = 1_000;
        let mut d = DropRate::default();
        for t in 0..100u64 {
            d.arrival(Instant(t), w);
        }
        for t in 0..9u64 {
            d.drop(Instant(t), w);
        }
        assert_eq!(d.rate(Instant(999), w), 0.0, "window not complete yet");
        assert!((d.peek(Instant(1_000), w) - 0.09).abs() < 1e-12);
        assert!((d.rate(Instant(1_000), w) - 0.09).abs() < 1e-12);
        // An empty window measures zero; so does a long pause.
        assert_eq!(d.rate(Instant(2_000), w), 0.0);
        d.arrival(Instant(2_100), w);
        d.drop(Instant(2_100), w);
        assert_eq!(d.rate(Instant(10_000), w), 0.0);
    }

    #[test]
    fn pools_admitted_below_threshold_members_always_and_refused_above_until_t_wait() {
        let c = cfg(); // threshold 0.09, window 1 s, pool window 3 s, T_wait 3 s
        let mut a = Admission::new(16);
        // Drop rate 0: pool of host 1 admitted; its later SYNs within 3 s too.
        assert_eq!(a.on_syn(1, Instant(0), &c), Verdict::Admit(Some(0)));
        // Make the drop rate 10% over [0, 1 s).
        for _ in 0..100 {
            a.drop_rate.arrival(Instant(0), c.drop_rate_window_ns);
        }
        for _ in 0..10 {
            a.drop_rate.drop(Instant(0), c.drop_rate_window_ns);
        }
        let t = Instant(S + S / 2);
        assert_eq!(a.on_syn(1, t, &c), Verdict::Admit(Some(0)), "member of an admitted pool");
        assert_eq!(a.on_syn(2, t, &c), Verdict::Refuse, "new pool, 0.10 ≥ 0.09");
        for _ in 0..100 {
            a.drop_rate.arrival(Instant(2 * S + S / 2), c.drop_rate_window_ns);
        }
        for _ in 0..10 {
            a.drop_rate.drop(Instant(2 * S + S / 2), c.drop_rate_window_ns);
        }
        assert_eq!(a.on_syn(2, Instant(S + S / 2 + 2 * S), &c), Verdict::Refuse, "waited 2 s < 3 s");
        // Keep the rate at 10% for the window before the retry at 4.5 s.
        for _ in 0..100 {
            a.drop_rate.arrival(Instant(3 * S + S / 2), c.drop_rate_window_ns);
        }
        for _ in 0..10 {
            a.drop_rate.drop(Instant(3 * S + S / 2), c.drop_rate_window_ns);
        }
        assert_eq!(a.on_syn(2, Instant(4 * S + S / 2), &c), Verdict::Admit(Some(1)), "T_wait reached");
        assert_eq!((a.pools_admitted, a.pools_admitted_after_wait, a.syns_refused), (2, 1, 2));
        // Host 1's window (from 0 s) has passed at 4.5 s: its next SYN is a new pool, refused.
        assert_eq!(a.on_syn(1, Instant(4 * S + S / 2), &c), Verdict::Refuse);
    }

    #[test]
    fn without_admission_control_every_syn_is_admitted_and_pooled() {
        let c = TaqConfig::default();
        let mut a = Admission::new(4);
        for _ in 0..10 {
            a.drop_rate.drop(Instant(0), c.drop_rate_window_ns);
        }
        assert_eq!(a.on_syn(5, Instant(2 * S), &c), Verdict::Admit(Some(0)));
        assert_eq!(a.on_syn(5, Instant(2 * S + 1), &c), Verdict::Admit(Some(0)));
    }

    #[test]
    fn pool_table_is_bounded_and_keeps_pools_with_flows() {
        let c = cfg();
        let mut a = Admission::new(4);
        let Verdict::Admit(Some(p)) = a.on_syn(1, Instant(0), &c) else { panic!() };
        a.add_flow(p);
        for ip in 100..10_000u32 {
            a.on_syn(ip, Instant(ip as u64), &c);
            assert!(a.len() <= 4);
        }
        let admitted = a.pools_admitted;
        // Still within its window and still in the table: a member, not a new pool.
        assert_eq!(a.on_syn(1, Instant(20_000), &c), Verdict::Admit(Some(p)), "a pool with a tracked flow is kept");
        assert_eq!(a.pools_admitted, admitted);
        a.remove_flow(p);
        for ip in 20_000..20_004u32 {
            a.on_syn(ip, Instant(ip as u64), &c);
        }
        // Evicted once its flows were gone: host 1's next SYN opens a new pool.
        let admitted = a.pools_admitted;
        a.on_syn(1, Instant(30_000), &c);
        assert_eq!(a.pools_admitted, admitted + 1);
    }
}
