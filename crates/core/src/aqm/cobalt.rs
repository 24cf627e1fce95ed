//! COBALT: CoDel and BLUE run side by side on one queue, CAKE's per-flow AQM.
//!
//! Source: T. Høiland-Jørgensen, D. Täht, J. Morton, "Piece of CAKE: A Comprehensive Queue
//! Management Solution for Home Gateways", IEEE LANMAN 2018, Section III-D, and Linux
//! `net/sched/sch_cake.c` (`cobalt_should_drop`, `cobalt_queue_full`, `cobalt_queue_empty`).
//!
//! Principles:
//! - CoDel part. A packet is over target when its sojourn exceeds `target` and four MTU
//!   serialisation times (`mtu_time`, so a slow link's own packet time never counts as a
//!   standing queue). Going over target enters the dropping state with the next signal due
//!   one `interval` later (`count` 0 and 1 both give `interval/√1`); while dropping, each
//!   packet dequeued at or after `drop_next` is signalled (ECN mark if the packet is
//!   ECN-capable, else drop), `count` grows and the next signal is due `interval/√count`
//!   later. Unlike RFC 8289 CoDel, leaving the dropping state does not reset `count`: it
//!   decays by one per elapsed `interval/√count` while the sojourn stays under target (and
//!   when the queue is found empty), so a flow that congests again resumes near its old
//!   signalling rate. `drop_next` doubles as an activity timer while `count` is 0.
//! - BLUE part, for flows that do not respond to CoDel's signals. When the queue overflows
//!   and loses a packet (`cobalt_queue_full`), the drop probability `p_drop` rises by
//!   `p_inc` (1/256), at most once per `target`; when the queue is found empty
//!   (`cobalt_queue_empty`) it falls by `p_dec` (1/4096), at most once per `target`. Every
//!   dequeued packet is dropped with probability `p_drop`, ECN-capable or not (CAKE: "lack
//!   of ECN is deliberate").
//!
//! We compute `1/√count` in floating point where Linux keeps a Newton-iterated fixed-point
//! reciprocal (exact for `count` < 16, one Newton step per change above): the signal times
//! differ by under a microsecond at 100 ms intervals. `p_drop` is kept in Linux's 0.32 fixed
//! point and compared with 32 random bits from the discipline's seeded stream.

use crate::rng::Rng;
use crate::time::Instant;

/// COBALT configuration (Linux `cobalt_params`), all times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CobaltParams {
    pub interval_ns: u64,
    pub target_ns: u64,
    /// Serialisation time of one MTU at the rate the queue drains.
    pub mtu_time_ns: u64,
    /// BLUE's increment and decrement of `p_drop`, 0.32 fixed point.
    pub p_inc: u32,
    pub p_dec: u32,
}

impl CobaltParams {
    /// CAKE's BLUE steps: 1/256 up, 1/4096 down.
    pub const P_INC: u32 = 1 << 24;
    pub const P_DEC: u32 = 1 << 20;
}

/// COBALT state of one queue (Linux `cobalt_vars`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CobaltVars {
    /// CoDel signalling count.
    pub count: u32,
    /// When the next CoDel signal is due (or, while `count` is 0, an activity timeout).
    pub drop_next: Instant,
    /// When BLUE last changed `p_drop`.
    pub blue_timer: Instant,
    /// BLUE drop probability, 0.32 fixed point.
    pub p_drop: u32,
    pub dropping: bool,
}

/// What to do with a packet just dequeued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CobaltVerdict {
    Deliver,
    /// CoDel chose it and it is ECN-capable: set CE and deliver.
    Mark,
    Drop,
}

/// `t + interval/√count` (CoDel's control law; `count` 0 counts as 1).
fn control(t: Instant, interval_ns: u64, count: u32) -> Instant {
    Instant(t.0 + (interval_ns as f64 / (count.max(1) as f64).sqrt()) as u64)
}

/// `a − b` in signed nanoseconds.
fn signed_since(a: Instant, b: Instant) -> i64 {
    a.0 as i64 - b.0 as i64
}

/// The queue overflowed and lost a packet: raise BLUE's probability (at most once per
/// target) and make CoDel signal on the next dequeue. Returns whether BLUE went from
/// quiescent to active (the flow now counts as unresponsive).
pub fn cobalt_queue_full(v: &mut CobaltVars, p: &CobaltParams, now: Instant) -> bool {
    let mut up = false;
    if signed_since(now, v.blue_timer) > p.target_ns as i64 {
        up = v.p_drop == 0;
        v.p_drop = v.p_drop.saturating_add(p.p_inc);
        v.blue_timer = now;
    }
    v.dropping = true;
    v.drop_next = now;
    v.count = v.count.max(1);
    up
}

/// The queue was served and found empty: lower BLUE's probability (at most once per
/// target), leave the dropping state and let `count` decay one step if due. Returns whether
/// BLUE went from active to quiescent.
pub fn cobalt_queue_empty(v: &mut CobaltVars, p: &CobaltParams, now: Instant) -> bool {
    let mut down = false;
    if v.p_drop > 0 && signed_since(now, v.blue_timer) > p.target_ns as i64 {
        v.p_drop = v.p_drop.saturating_sub(p.p_dec);
        v.blue_timer = now;
        down = v.p_drop == 0;
    }
    v.dropping = false;
    if v.count > 0 && signed_since(now, v.drop_next) >= 0 {
        v.count -= 1;
        v.drop_next = control(v.drop_next, p.interval_ns, v.count);
    }
    down
}

/// Decide on a packet just dequeued that waited `sojourn_ns`; `ect` says whether it may be
/// marked instead of dropped.
pub fn cobalt_should_drop(
    v: &mut CobaltVars,
    p: &CobaltParams,
    now: Instant,
    sojourn_ns: u64,
    ect: bool,
    rng: &mut Rng,
) -> CobaltVerdict {
    // `schedule`'s sign says whether `now` is past `drop_next`; it is recomputed when
    // `drop_next` moves, and its first value is kept in `next_due`.
    let mut schedule = signed_since(now, v.drop_next);
    let over_target = sojourn_ns > p.target_ns && sojourn_ns > 4 * p.mtu_time_ns;
    let next_due = v.count > 0 && schedule >= 0;
    if over_target {
        if !v.dropping {
            v.dropping = true;
            v.drop_next = control(now, p.interval_ns, v.count);
        }
        v.count = v.count.max(1);
    } else {
        v.dropping = false;
    }
    let mut verdict = CobaltVerdict::Deliver;
    if next_due && v.dropping {
        verdict = if ect { CobaltVerdict::Mark } else { CobaltVerdict::Drop };
        v.count = v.count.saturating_add(1);
        v.drop_next = control(v.drop_next, p.interval_ns, v.count);
        schedule = signed_since(now, v.drop_next);
    } else {
        // Under target (or not yet due): one decay step per elapsed control interval.
        let mut due = next_due;
        while due {
            v.count -= 1;
            v.drop_next = control(v.drop_next, p.interval_ns, v.count);
            schedule = signed_since(now, v.drop_next);
            due = v.count > 0 && schedule >= 0;
        }
    }
    if v.p_drop > 0 && ((rng.next_u64() >> 32) as u32) < v.p_drop {
        verdict = CobaltVerdict::Drop;
    }
    if v.count == 0 {
        v.drop_next = Instant(now.0 + p.interval_ns);
    } else if schedule > 0 && verdict != CobaltVerdict::Drop {
        v.drop_next = now;
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn params() -> CobaltParams {
        CobaltParams { interval_ns: 100 * MS, target_ns: 5 * MS, mtu_time_ns: MS / 10, p_inc: CobaltParams::P_INC, p_dec: CobaltParams::P_DEC }
    }

    /// One packet per ms whose sojourn is `sojourn(t)`; the times (ms) of the signals.
    fn run(v: &mut CobaltVars, from_ms: u64, to_ms: u64, sojourn: impl Fn(u64) -> u64) -> Vec<u64> {
        let (p, mut rng) = (params(), Rng::new(1, 1));
        (from_ms..to_ms)
            .filter(|&t| cobalt_should_drop(v, &p, Instant(t * MS), sojourn(t), false, &mut rng) == CobaltVerdict::Drop)
            .collect()
    }

    #[test]
    fn first_signal_one_interval_after_going_over_target_then_interval_over_sqrt_count() {
        // Sojourn 10 ms from t = 0: dropping from t = 0, first drop due at 100 ms, then at
        // 100 + 100/√2, + 100/√3, ... (each at the first whole ms at or after it is due).
        let mut v = CobaltVars::default();
        let drops = run(&mut v, 0, 400, |_| 10 * MS);
        let mut due = 100.0f64;
        let mut expect = vec![];
        for k in 2..6u32 {
            expect.push(due.ceil() as u64);
            due += 100.0 / (k as f64).sqrt();
        }
        assert_eq!(&drops[..4], &expect[..]);
    }

    #[test]
    fn sojourn_under_four_mtu_times_is_not_over_target() {
        // A slow link: one MTU takes 3 ms, so 10 ms of sojourn is under 4·mtu_time = 12 ms.
        let p = CobaltParams { mtu_time_ns: 3 * MS, ..params() };
        let (mut v, mut rng) = (CobaltVars::default(), Rng::new(1, 1));
        for t in 0..500 {
            assert_eq!(cobalt_should_drop(&mut v, &p, Instant(t * MS), 10 * MS, false, &mut rng), CobaltVerdict::Deliver);
        }
        assert!(!v.dropping && v.count == 0);
    }

    #[test]
    fn count_decays_under_target_instead_of_resetting() {
        let mut v = CobaltVars::default();
        let drops = run(&mut v, 0, 1000, |_| 10 * MS);
        let count = v.count;
        assert!(count > 5 && drops.len() as u32 == count - 1, "{count} {}", drops.len());
        // Under target for one control interval at this count: one step down, not to zero.
        let step = (100.0 / (count as f64).sqrt()).ceil() as u64 + 1;
        assert!(run(&mut v, 1000, 1000 + step, |_| MS).is_empty());
        assert!(v.count < count && v.count >= count - 2, "{} → {}", count, v.count);
        // Congested again: signalling resumes after interval/√count, sooner than a fresh 100 ms.
        let again = run(&mut v, 1000 + step, 2000, |_| 10 * MS);
        assert!(again[0] < 1000 + step + 100, "{again:?}");
    }

    #[test]
    fn ect_packets_are_marked_where_others_are_dropped() {
        let (p, mut rng, mut v) = (params(), Rng::new(1, 1), CobaltVars::default());
        let verdicts: Vec<_> = (0..300).map(|t| cobalt_should_drop(&mut v, &p, Instant(t * MS), 10 * MS, true, &mut rng)).collect();
        assert!(verdicts.contains(&CobaltVerdict::Mark));
        assert!(!verdicts.contains(&CobaltVerdict::Drop));
    }

    #[test]
    fn blue_rises_once_per_target_on_overflow_and_falls_on_empty() {
        let (p, mut v) = (params(), CobaltVars::default());
        assert!(cobalt_queue_full(&mut v, &p, Instant(10 * MS)));
        // Within one target of the last change: no second step.
        assert!(!cobalt_queue_full(&mut v, &p, Instant(12 * MS)));
        assert_eq!(v.p_drop, CobaltParams::P_INC);
        cobalt_queue_full(&mut v, &p, Instant(20 * MS));
        assert_eq!(v.p_drop, 2 * CobaltParams::P_INC);
        // 1/128 of packets dropped at random: over 100 000 dequeues under target, the count
        // is binomial with mean 781 and sd 28; allow 5 sd.
        let mut rng = Rng::new(5, 5);
        let mut w = CobaltVars { p_drop: v.p_drop, ..CobaltVars::default() };
        let drops = (0..100_000u64)
            .filter(|&t| cobalt_should_drop(&mut w, &p, Instant(t * 1000), 0, true, &mut rng) == CobaltVerdict::Drop)
            .count();
        assert!((drops as i64 - 781).abs() < 140, "{drops}");
        // Falling: 1/4096 per empty queue, once per target; 16 steps undo one rise.
        let mut t = 30 * MS;
        let mut steps = 0;
        while v.p_drop > 0 {
            t += 6 * MS;
            cobalt_queue_empty(&mut v, &p, Instant(t));
            steps += 1;
        }
        assert_eq!(steps, 2 * (CobaltParams::P_INC / CobaltParams::P_DEC));
    }
}
