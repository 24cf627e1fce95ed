//! Flow pools and admission control (Section 4.3).
//!
//! A *flow pool* is the set of connections one initiator address opens together (the
//! paper: "inter-related flows from the same source ... initiated within a short
//! time-period (e.g. a few seconds)"). How long a pool keeps admitting its initiator's new
//! connections is [`PoolLifetime`]: a fixed `pool_window_ns` from the pool's first admitted
//! SYN, or while it has active flows (at most `pool_max_lifetime_ns`). A SYN opens a new
//! pool when its initiator has no pool or its pool's lifetime is over.
//!
//! With admission control on, a new pool is admitted when (b) the measured drop rate
//! (congestion drops over arrivals in the last complete `drop_rate_window_ns`, admission
//! drops left out of both so refusing SYNs cannot feed back into the measure) is below
//! `admission_drop_threshold` ("slightly smaller than p_thresh") *and* the NewFlow class
//! holds fewer than `new_flow_limit_conns` connections ("limiting the number of new
//! connections that are queued in this queue"). SYNs of an admitted pool are always
//! admitted ((a): "it belongs to a flow pool that has already been admitted"). A pool that
//! has waited `t_wait_ns` is admitted whatever the measure, under [`TWaitPolicy`]: every
//! such pool, or one pool per `t_wait_ns` ("the user is guaranteed admission for one flow
//! pool"). A refused SYN is dropped (the client retries after its SYN timeout) or, with
//! `admission_hold_syns` > 0, held by the caller in a FIFO (the paper's "feedback oriented"
//! proxy) and released when its pool is admitted.
//!
//! Memory: pools live in a bounded table (`pool_table_capacity`), evicted least recently
//! used among pools no tracked flow or held SYN belongs to; a pool waiting for admission
//! can be evicted by a flood of SYNs from other addresses, and then starts waiting anew.

use super::TaqConfig;
use crate::qdisc::parts::{hash::host_hash, BoundedTable, Slot};
use crate::time::Instant;
use serde::{Deserialize, Serialize};

/// Which waiting pools T_wait admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TWaitPolicy {
    /// Every pool that has waited `t_wait_ns` is admitted at its next SYN.
    AllWaiting,
    /// One pool per `t_wait_ns` ("guaranteed admission for one flow pool"): the grant goes to
    /// the oldest held pool in proxy mode, and to the first waiting pool to retry after the
    /// grant falls due when refused SYNs are dropped (the box cannot call a client back).
    #[default]
    OnePoolFifo,
}

/// How long an admitted pool admits its initiator's new connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolLifetime {
    /// `pool_window_ns` from the pool's first admitted SYN ("initiated within a short
    /// time-period").
    #[default]
    Window,
    /// While a flow of the pool is active or its last SYN is within `pool_window_ns`, at
    /// most `pool_max_lifetime_ns` from its first admitted SYN ("honor commitments to allow
    /// flows belonging to an admitted flow pool").
    WhileActive,
}

/// One flow pool.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    pub admitted: bool,
    /// Admitted: when the pool was admitted (its lifetime starts). Waiting: when it was
    /// first refused.
    pub since: Instant,
    /// Its last SYN (admitted or refused).
    pub last_syn: Instant,
    /// Tracked flows and held SYNs that belong to the pool (not evictable while > 0).
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
    /// A window has completed: `last_rate` is a measurement, not the initial 0.
    estimated: bool,
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
        self.estimated = true;
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
    /// What admission compares with the threshold: the last complete window's rate, or,
    /// with `conservative_start` and before any window has completed, the rate measured so
    /// far in the first one (rather than the initial 0, which would admit every pool).
    pub fn admission_rate(&mut self, now: Instant, window_ns: u64, conservative_start: bool) -> f64 {
        self.advance(now, window_ns);
        if conservative_start && !self.estimated && self.arrivals > 0 {
            self.drops as f64 / self.arrivals as f64
        } else {
            self.last_rate
        }
    }
    /// The last complete window's rate (what `admission_rate` reads once one has completed), without advancing the window (for snapshots,
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
    /// Refused; the pool slot it waits in (`None`: the pool table was full of busy pools).
    Refuse(Option<u32>),
}

#[derive(Debug)]
pub(crate) struct Admission {
    table: BoundedTable<u32>,
    pub pools: Vec<Pool>,
    pub drop_rate: DropRate,
    /// `one_pool_fifo`: the next T_wait grant falls due at this time.
    next_grant: Instant,
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
            next_grant: Instant::ZERO,
            pools_admitted: 0,
            pools_admitted_after_wait: 0,
            syns_refused: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// A SYN from initiator `ip`, with `new_flow_conns` connections now in the NewFlow
    /// class: admit it (into which pool) or refuse it. `grant` lets T_wait admit the pool
    /// here (off in proxy mode, where held pools are granted in FIFO order by
    /// [`Self::try_admit_held`]).
    pub fn on_syn(&mut self, ip: u32, now: Instant, cfg: &TaqConfig, new_flow_conns: u32, grant: bool) -> Verdict {
        let i = match self.table.lookup(ip, host_hash(ip, 0)) {
            Slot::Existing(i) => i,
            Slot::New(i) => {
                let fresh = Pool {
                    admitted: false,
                    since: now,
                    last_syn: now,
                    flows: 0,
                    active_flows: 0,
                    served: Default::default(),
                };
                if (i as usize) < self.pools.len() {
                    self.pools[i as usize] = fresh;
                } else {
                    self.pools.push(fresh);
                }
                i
            }
            // Every pool is busy: this SYN is judged without a pool (and cannot wait).
            Slot::Shared(_) => {
                return if self.open(now, cfg, new_flow_conns) {
                    Verdict::Admit(None)
                } else {
                    self.syns_refused += 1;
                    Verdict::Refuse(None)
                };
            }
        };
        let p = &mut self.pools[i as usize];
        if p.admitted && !alive(p, now, cfg) {
            // Its lifetime is over: this SYN starts a new pool of the same initiator.
            p.admitted = false;
            p.since = now;
        }
        p.last_syn = now;
        let verdict = if self.pools[i as usize].admitted || self.decide(i, now, cfg, new_flow_conns, grant) {
            Verdict::Admit(Some(i))
        } else {
            self.syns_refused += 1;
            Verdict::Refuse(Some(i))
        };
        self.touch(i);
        verdict
    }

    /// Proxy mode: may the held pool `i` (the oldest held) be admitted now?
    pub fn try_admit_held(&mut self, i: u32, now: Instant, cfg: &TaqConfig, new_flow_conns: u32) -> bool {
        self.pools[i as usize].admitted || self.decide(i, now, cfg, new_flow_conns, true)
    }

    /// Admission of waiting pool `i`: (b) by the measure, or by T_wait.
    fn decide(&mut self, i: u32, now: Instant, cfg: &TaqConfig, new_flow_conns: u32, grant: bool) -> bool {
        let ok = self.open(now, cfg, new_flow_conns);
        let waited = now.saturating_since(self.pools[i as usize].since).as_nanos();
        let forced = !ok
            && grant
            && waited >= cfg.t_wait_ns
            && (cfg.t_wait_policy == TWaitPolicy::AllWaiting || now >= self.next_grant);
        if !(ok || forced) {
            return false;
        }
        if forced {
            self.next_grant = now + crate::time::Duration(cfg.t_wait_ns);
        }
        let p = &mut self.pools[i as usize];
        p.admitted = true;
        p.since = now;
        self.pools_admitted += 1;
        self.pools_admitted_after_wait += forced as u64;
        true
    }

    /// Rule (b): the drop rate is under the threshold and the NewFlow class has room.
    fn open(&mut self, now: Instant, cfg: &TaqConfig, new_flow_conns: u32) -> bool {
        if !cfg.admission_control {
            return true;
        }
        let rate = self.drop_rate.admission_rate(now, cfg.drop_rate_window_ns, cfg.conservative_start);
        let room = cfg.new_flow_limit_conns == 0 || new_flow_conns < cfg.new_flow_limit_conns;
        rate < cfg.admission_drop_threshold && room
    }

    /// Most recently used goes to the back of the eviction order, if evictable.
    fn touch(&mut self, i: u32) {
        self.table.set_busy(i);
        if self.pools[i as usize].flows == 0 {
            self.table.set_idle(i);
        }
    }

    /// A tracked flow or a held SYN now belongs to pool `i`.
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

/// Does an admitted pool still admit its initiator's new connections?
fn alive(p: &Pool, now: Instant, cfg: &TaqConfig) -> bool {
    let age = now.saturating_since(p.since).as_nanos();
    match cfg.pool_lifetime {
        PoolLifetime::Window => age <= cfg.pool_window_ns,
        PoolLifetime::WhileActive => {
            age <= cfg.pool_max_lifetime_ns
                && (p.active_flows > 0 || now.saturating_since(p.last_syn).as_nanos() <= cfg.pool_window_ns)
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
    /// Holds the drop rate of every window from `from_s` for `windows` windows at `drops`%.
    fn congest(a: &mut Admission, c: &TaqConfig, from_s: u64, windows: u64, drops: u64) {
        for w in 0..windows {
            let t = Instant((from_s + w) * S);
            for _ in 0..100 {
                a.drop_rate.arrival(t, c.drop_rate_window_ns);
            }
            for _ in 0..drops {
                a.drop_rate.drop(t, c.drop_rate_window_ns);
            }
        }
    }
    fn at_s(s: f64) -> Instant {
        Instant((s * S as f64) as u64)
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
        assert_eq!(d.admission_rate(Instant(999), w, false), 0.0, "window not complete yet");
        assert!((d.peek(Instant(1_000), w) - 0.09).abs() < 1e-12);
        assert!((d.admission_rate(Instant(1_000), w, false) - 0.09).abs() < 1e-12);
        // An empty window measures zero; so does a long pause.
        assert_eq!(d.admission_rate(Instant(2_000), w, false), 0.0);
        d.arrival(Instant(2_100), w);
        d.drop(Instant(2_100), w);
        assert_eq!(d.admission_rate(Instant(10_000), w, false), 0.0);
    }

    #[test]
    fn conservative_start_uses_the_first_window_so_far() {
        let w = 1_000;
        let mut d = DropRate::default();
        for t in 0..10u64 {
            d.arrival(Instant(t), w);
        }
        d.drop(Instant(5), w);
        d.drop(Instant(6), w);
        // 2 drops in 10 arrivals so far; the blanket 0 without it.
        assert!((d.admission_rate(Instant(500), w, true) - 0.2).abs() < 1e-12);
        assert_eq!(d.admission_rate(Instant(500), w, false), 0.0);
        // Once the first window completed, both read it.
        assert!((d.admission_rate(Instant(1_000), w, true) - 0.2).abs() < 1e-12);
        assert!((d.admission_rate(Instant(1_000), w, false) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn conservative_start_refuses_pools_while_the_first_second_is_lossy() {
        for (conservative, want) in [(true, Verdict::Refuse(Some(1))), (false, Verdict::Admit(Some(1)))] {
            let c = TaqConfig { conservative_start: conservative, ..cfg() };
            let mut a = Admission::new(16);
            assert_eq!(a.on_syn(1, Instant(0), &c, 0, true), Verdict::Admit(Some(0)), "nothing measured yet");
            // 20% of the first 0.5 s dropped: above 0.09.
            for _ in 0..100 {
                a.drop_rate.arrival(at_s(0.1), c.drop_rate_window_ns);
            }
            for _ in 0..20 {
                a.drop_rate.drop(at_s(0.1), c.drop_rate_window_ns);
            }
            assert_eq!(a.on_syn(2, at_s(0.5), &c, 0, true), want, "conservative_start = {conservative}");
        }
    }

    #[test]
    fn all_waiting_admits_every_pool_that_waited_t_wait() {
        let c = TaqConfig { t_wait_policy: TWaitPolicy::AllWaiting, ..cfg() }; // T_wait 3 s
        let mut a = Admission::new(16);
        congest(&mut a, &c, 0, 10, 10); // 10% in every window: over 0.09
        // Three pools refused at 1 s; retries at 2 s (1 s SYN timer) refused, at 4 s all in.
        for ip in 1..=3 {
            assert_eq!(a.on_syn(ip, at_s(1.0), &c, 0, true), Verdict::Refuse(Some(ip - 1)));
            assert_eq!(a.on_syn(ip, at_s(2.0), &c, 0, true), Verdict::Refuse(Some(ip - 1)), "waited 1 s < 3 s");
        }
        for ip in 1..=3 {
            assert_eq!(a.on_syn(ip, at_s(4.0), &c, 0, true), Verdict::Admit(Some(ip - 1)), "waited 3 s");
        }
        assert_eq!((a.pools_admitted, a.pools_admitted_after_wait, a.syns_refused), (3, 3, 6));
    }

    #[test]
    fn one_pool_fifo_admits_one_waiting_pool_per_t_wait() {
        let c = cfg(); // one_pool_fifo, T_wait 3 s
        let mut a = Admission::new(16);
        congest(&mut a, &c, 0, 30, 10);
        // Four pools refused at 1 s; each retries every 0.5 s. The n-th admission after
        // waiting falls at 1 s + n × T_wait: 4, 7, 10, 13 s.
        for ip in 1..=4 {
            assert!(matches!(a.on_syn(ip, at_s(1.0), &c, 0, true), Verdict::Refuse(_)));
        }
        let mut admitted_at = Vec::new();
        for step in 3..=28 {
            let t = at_s(step as f64 * 0.5);
            for ip in 1..=4 {
                if !a.pools[ip as usize - 1].admitted && matches!(a.on_syn(ip, t, &c, 0, true), Verdict::Admit(_)) {
                    admitted_at.push((ip, step as f64 * 0.5));
                }
            }
        }
        assert_eq!(admitted_at, vec![(1, 4.0), (2, 7.0), (3, 10.0), (4, 13.0)]);
        assert_eq!(a.pools_admitted_after_wait, 4);
    }

    #[test]
    fn grants_are_not_taken_at_syns_in_proxy_mode() {
        let c = cfg();
        let mut a = Admission::new(16);
        congest(&mut a, &c, 0, 10, 10);
        assert_eq!(a.on_syn(1, at_s(1.0), &c, 0, false), Verdict::Refuse(Some(0)));
        assert_eq!(a.on_syn(1, at_s(5.0), &c, 0, false), Verdict::Refuse(Some(0)), "waited, but no grant here");
        assert!(a.try_admit_held(0, at_s(5.0), &c, 0), "the held pool takes the grant");
        assert_eq!(a.on_syn(1, at_s(5.1), &c, 0, false), Verdict::Admit(Some(0)), "a member now");
    }

    #[test]
    fn members_always_new_pools_by_threshold_and_new_flow_room() {
        let c = TaqConfig { new_flow_limit_conns: 8, ..cfg() };
        let mut a = Admission::new(16);
        assert_eq!(a.on_syn(1, Instant(0), &c, 0, true), Verdict::Admit(Some(0)));
        // NewFlow full (8 of 8): a new pool waits, a member of pool 1 does not.
        assert_eq!(a.on_syn(2, at_s(0.1), &c, 8, true), Verdict::Refuse(Some(1)));
        assert_eq!(a.on_syn(1, at_s(0.1), &c, 8, true), Verdict::Admit(Some(0)));
        assert_eq!(a.on_syn(2, at_s(1.1), &c, 7, true), Verdict::Admit(Some(1)), "room again, rate 0");
        congest(&mut a, &c, 1, 1, 10);
        assert_eq!(a.on_syn(3, at_s(2.5), &c, 0, true), Verdict::Refuse(Some(2)), "0.10 ≥ 0.09");
        congest(&mut a, &c, 2, 1, 8);
        assert_eq!(a.on_syn(3, at_s(3.5), &c, 0, true), Verdict::Admit(Some(2)), "0.08 < 0.09");
    }

    #[test]
    fn window_pools_end_after_the_window_while_active_pools_last_with_their_flows() {
        // Window: 3 s from the first admitted SYN, whatever the flows do.
        let c = cfg();
        let mut a = Admission::new(16);
        assert_eq!(a.on_syn(1, Instant(0), &c, 0, true), Verdict::Admit(Some(0)));
        a.pools[0].active_flows = 1;
        congest(&mut a, &c, 0, 10, 10);
        assert_eq!(a.on_syn(1, at_s(3.0), &c, 0, true), Verdict::Admit(Some(0)), "within 3 s");
        assert_eq!(a.on_syn(1, at_s(3.5), &c, 0, true), Verdict::Refuse(Some(0)), "a new pool, congested");
        // WhileActive: kept while a flow is active, up to the 10 s bound; then, with no
        // active flow, until 3 s after its last SYN.
        let c = TaqConfig { pool_lifetime: PoolLifetime::WhileActive, pool_max_lifetime_ns: 10 * S, ..cfg() };
        let mut a = Admission::new(16);
        assert_eq!(a.on_syn(1, Instant(0), &c, 0, true), Verdict::Admit(Some(0)));
        a.pools[0].active_flows = 1;
        congest(&mut a, &c, 0, 20, 10);
        assert_eq!(a.on_syn(1, at_s(9.0), &c, 0, true), Verdict::Admit(Some(0)), "active flows");
        a.pools[0].active_flows = 0;
        assert_eq!(a.on_syn(1, at_s(9.9), &c, 0, true), Verdict::Admit(Some(0)), "0.9 s after its last SYN");
        a.pools[0].active_flows = 1;
        assert_eq!(a.on_syn(1, at_s(10.5), &c, 0, true), Verdict::Refuse(Some(0)), "past the 10 s bound");
        let mut a = Admission::new(16);
        assert_eq!(a.on_syn(1, Instant(0), &c, 0, true), Verdict::Admit(Some(0)));
        congest(&mut a, &c, 0, 20, 10);
        assert_eq!(a.on_syn(1, at_s(3.5), &c, 0, true), Verdict::Refuse(Some(0)), "idle and 3.5 s since its SYN");
    }

    #[test]
    fn without_admission_control_every_syn_is_admitted_and_pooled() {
        let c = TaqConfig::default();
        let mut a = Admission::new(4);
        for _ in 0..10 {
            a.drop_rate.drop(Instant(0), c.drop_rate_window_ns);
        }
        assert_eq!(a.on_syn(5, Instant(2 * S), &c, 1000, true), Verdict::Admit(Some(0)));
        assert_eq!(a.on_syn(5, Instant(2 * S + 1), &c, 1000, true), Verdict::Admit(Some(0)));
    }

    #[test]
    fn pool_table_is_bounded_and_keeps_pools_with_flows() {
        let c = cfg();
        let mut a = Admission::new(4);
        let Verdict::Admit(Some(p)) = a.on_syn(1, Instant(0), &c, 0, true) else { panic!() };
        a.add_flow(p);
        for ip in 100..10_000u32 {
            a.on_syn(ip, Instant(ip as u64), &c, 0, true);
            assert!(a.len() <= 4);
        }
        let admitted = a.pools_admitted;
        // Still within its window and still in the table: a member, not a new pool.
        assert_eq!(a.on_syn(1, Instant(20_000), &c, 0, true), Verdict::Admit(Some(p)), "a pool with a tracked flow is kept");
        assert_eq!(a.pools_admitted, admitted);
        a.remove_flow(p);
        for ip in 20_000..20_004u32 {
            a.on_syn(ip, Instant(ip as u64), &c, 0, true);
        }
        // Evicted once its flows were gone: host 1's next SYN opens a new pool.
        let admitted = a.pools_admitted;
        a.on_syn(1, Instant(30_000), &c, 0, true);
        assert_eq!(a.pools_admitted, admitted + 1);
    }
}
