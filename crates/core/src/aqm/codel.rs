//! The CoDel decision core (Controlled Delay).
//!
//! Source: K. Nichols, V. Jacobson, A. McGregor, J. Iyengar, "Controlled Delay Active
//! Queue Management", RFC 8289 (2018), Section 5 pseudocode; ECN handling as in Linux
//! `include/net/codel_impl.h`.
//!
//! Principles: CoDel watches the sojourn time of the packet at the head of the queue.
//! - If it has stayed at or above `target` (5 ms) for a whole `interval` (100 ms), with
//!   more than one MTU still queued, CoDel enters the dropping state and drops the head
//!   packet.
//! - While dropping, the next drop is due at `drop_next = t + interval/√count` (the control
//!   law), so drops come closer together the longer the queue stays above target. Leaving
//!   the state happens as soon as a dequeued packet's sojourn falls below target.
//! - Count restoring: on re-entering soon after leaving (`now − drop_next < 16·interval`),
//!   `count` resumes at `count − lastcount` (if that is more than 1) rather than 1, since
//!   the drop rate that last controlled the queue is a good starting point.
//! - With ECN, an ECN-capable packet is marked instead of dropped and is delivered.
//!
//! It runs at dequeue: the discipline supplies a [`CodelQueue`] and gets back the packet
//! to send; CoDel pops (and drops) through that trait. Complexity: O(1) per dequeued
//! packet plus O(1) per dropped packet. The control law uses an `f64` square root on
//! integer nanoseconds (IEEE `sqrt` is correctly rounded, so it is reproducible).

use crate::packet::{Ecn, Packet};
use crate::time::{Duration, Instant};

/// CoDel configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing queue delay (RFC 8289: 5 ms).
    pub target: Duration,
    /// Window over which the delay must stay above target (RFC 8289: 100 ms).
    pub interval: Duration,
    /// No drop while at most this many bytes remain queued (RFC `MAXPACKET`, Linux uses
    /// the device MTU: 1514 bytes on Ethernet).
    pub mtu_bytes: u64,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            mtu_bytes: 1514,
            ecn: false,
        }
    }
}

/// CoDel state (one per queue; FQ-CoDel keeps one per flow).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodelVars {
    /// Drops (and marks) since entering the dropping state, with the restoring rule.
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    pub dropping: bool,
    /// When the sojourn time will have been above target for a whole interval.
    pub first_above_time: Option<Instant>,
    /// When the next drop is due while dropping.
    pub drop_next: Instant,
    /// Sojourn time of the last packet looked at.
    pub ldelay: Duration,
}

/// CoDel counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodelStats {
    pub drop_count: u64,
    pub drop_bytes: u64,
    pub ecn_mark: u64,
    /// Largest packet seen, bytes.
    pub maxpacket: u64,
}

/// The queue CoDel controls.
pub trait CodelQueue {
    /// Remove the head packet.
    fn pop(&mut self) -> Option<Packet>;
    /// Bytes still queued (after the pops so far).
    fn backlog_bytes(&self) -> u64;
    /// CoDel dropped this (already popped) packet.
    fn drop(&mut self, pkt: Packet);
}

/// What [`codel_dequeue`] hands back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodelOutcome {
    pub pkt: Option<Packet>,
    /// The packet was chosen for a congestion signal and is ECN-capable: the caller sets
    /// CE (and counts the mark).
    pub mark: bool,
}

/// `t + interval / √count` (RFC 8289 `control_law`).
pub fn control_law(t: Instant, interval: Duration, count: u32) -> Instant {
    let step = interval.as_nanos() as f64 / (count.max(1) as f64).sqrt();
    t + Duration(step as u64)
}

fn ecn_capable(pkt: &Packet) -> bool {
    matches!(pkt.ecn, Ecn::Ect | Ecn::Ce)
}

/// RFC 8289 `dodequeue`'s test: is it OK to drop `pkt` (just popped) now?
fn should_drop(
    pkt: Option<&Packet>,
    backlog_after: u64,
    p: &CodelParams,
    v: &mut CodelVars,
    s: &mut CodelStats,
    now: Instant,
) -> bool {
    let Some(pkt) = pkt else {
        v.first_above_time = None;
        return false;
    };
    v.ldelay = now.saturating_since(pkt.arrival);
    s.maxpacket = s.maxpacket.max(pkt.len_bytes());
    if v.ldelay < p.target || backlog_after <= p.mtu_bytes {
        v.first_above_time = None;
        return false;
    }
    match v.first_above_time {
        None => {
            v.first_above_time = Some(now + p.interval);
            false
        }
        Some(t) => now >= t,
    }
}

/// Dequeue through CoDel (RFC 8289 `dequeue`). Dropped packets go to `q.drop`.
pub fn codel_dequeue<Q: CodelQueue>(
    p: &CodelParams,
    v: &mut CodelVars,
    s: &mut CodelStats,
    now: Instant,
    q: &mut Q,
) -> CodelOutcome {
    let mut pkt = q.pop();
    if pkt.is_none() {
        v.dropping = false;
        v.first_above_time = None;
        return CodelOutcome { pkt, mark: false };
    }
    let mut drop = should_drop(pkt.as_ref(), q.backlog_bytes(), p, v, s, now);
    if v.dropping {
        if !drop {
            v.dropping = false;
        } else {
            while v.dropping && now >= v.drop_next {
                v.count = v.count.saturating_add(1);
                let cur = pkt.expect("dropping with a packet in hand");
                if p.ecn && ecn_capable(&cur) {
                    s.ecn_mark += 1;
                    v.drop_next = control_law(v.drop_next, p.interval, v.count);
                    return CodelOutcome { pkt, mark: true };
                }
                s.drop_count += 1;
                s.drop_bytes += cur.len_bytes();
                q.drop(cur);
                pkt = q.pop();
                if !should_drop(pkt.as_ref(), q.backlog_bytes(), p, v, s, now) {
                    v.dropping = false;
                } else {
                    v.drop_next = control_law(v.drop_next, p.interval, v.count);
                }
            }
        }
    } else if drop {
        let cur = pkt.expect("drop decided on a packet");
        let mut mark = false;
        if p.ecn && ecn_capable(&cur) {
            s.ecn_mark += 1;
            mark = true;
        } else {
            s.drop_count += 1;
            s.drop_bytes += cur.len_bytes();
            q.drop(cur);
            pkt = q.pop();
            drop = should_drop(pkt.as_ref(), q.backlog_bytes(), p, v, s, now);
        }
        let _ = drop;
        v.dropping = true;
        let delta = v.count.wrapping_sub(v.lastcount);
        v.count = if delta > 1
            && delta < u32::MAX / 2
            && now.saturating_since(v.drop_next) < Duration(16 * p.interval.as_nanos())
        {
            delta
        } else {
            1
        };
        v.lastcount = v.count;
        v.drop_next = control_law(now, p.interval, v.count);
        return CodelOutcome { pkt, mark };
    }
    CodelOutcome { pkt, mark: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A plain FIFO under CoDel, recording drop times.
    #[derive(Default)]
    struct Fifo {
        q: VecDeque<Packet>,
        bytes: u64,
        dropped: Vec<Packet>,
    }
    impl CodelQueue for Fifo {
        fn pop(&mut self) -> Option<Packet> {
            let p = self.q.pop_front()?;
            self.bytes -= p.len_bytes();
            Some(p)
        }
        fn backlog_bytes(&self) -> u64 {
            self.bytes
        }
        fn drop(&mut self, pkt: Packet) {
            self.dropped.push(pkt);
        }
    }
    impl Fifo {
        fn push(&mut self, at_ns: u64, len: u16) {
            self.bytes += len as u64;
            self.q.push_back(Packet { ip_len_bytes: len, arrival: Instant(at_ns), ..Packet::default() });
        }
    }

    const MS: u64 = 1_000_000;

    /// Two 1000-byte arrivals per ms, one dequeue per ms: the standing queue (and the
    /// sojourn) keep growing, so CoDel, once dropping, stays dropping. Returns the times
    /// (ms) of the dequeues at which drops happened.
    fn run_overload(ms: u64, p: &CodelParams) -> (Vec<u64>, CodelVars) {
        let (mut f, mut v, mut s) = (Fifo::default(), CodelVars::default(), CodelStats::default());
        let mut drop_times = Vec::new();
        for t in 0..ms {
            f.push(t * MS, 1000);
            f.push(t * MS, 1000);
            let before = f.dropped.len();
            codel_dequeue(p, &mut v, &mut s, Instant(t * MS), &mut f);
            for _ in before..f.dropped.len() {
                drop_times.push(t);
            }
        }
        (drop_times, v)
    }

    #[test]
    fn first_drop_after_a_whole_interval_above_target_then_interval_over_sqrt_count() {
        let p = CodelParams::default();
        let (drops, _) = run_overload(700, &p);
        // The dequeue at t pops packet number t of the arrival sequence (two per ms), which
        // arrived at ⌊t/2⌋ ms: its sojourn is ⌈t/2⌉ ms, at or above 5 ms from t = 9 on, and
        // the backlog behind it, (t+1)·1000 bytes, is above one MTU.
        let first_above = 9;
        let t0 = first_above + 100; // RFC: OK to drop once now ≥ first_above_time
        assert_eq!(drops[0], t0, "first drop exactly one interval after going above target");
        // Then drop k+1 is due at drop_next_k = t0 + Σ_{j=1..k} 100/√j ms, and happens at
        // the first dequeue (whole ms) at or after it.
        let mut due = t0 as f64;
        for (k, &d) in drops.iter().enumerate().skip(1).take(15) {
            due += 100.0 / (k as f64).sqrt();
            assert_eq!(d, due.ceil() as u64, "drop {k}");
        }
    }

    #[test]
    fn no_drop_while_at_most_one_mtu_is_queued() {
        // With MAXPACKET = 20 000 bytes the sojourn is above target early, but CoDel must
        // not start its clock until more than 20 000 bytes remain queued.
        let p = CodelParams { mtu_bytes: 20_000, ..CodelParams::default() };
        let (drops, _) = run_overload(300, &p);
        // Backlog after the dequeue at t is 2(t+1) − (t+1) = t+1 packets of 1000 bytes;
        // it exceeds 20 000 bytes from t = 20 on, so the 100 ms clock starts at t = 20.
        assert_eq!(drops[0], 120);
    }

    #[test]
    fn re_entering_soon_restores_count_minus_lastcount() {
        let p = CodelParams::default();
        let (mut f, mut v, mut s) = (Fifo::default(), CodelVars::default(), CodelStats::default());
        // Overload for 400 ms as above.
        let mut t = 0;
        while t < 400 {
            f.push(t * MS, 1000);
            f.push(t * MS, 1000);
            codel_dequeue(&p, &mut v, &mut s, Instant(t * MS), &mut f);
            t += 1;
        }
        assert!(v.dropping);
        let (count_before, lastcount) = (v.count, v.lastcount);
        assert!(count_before - lastcount > 1);
        // Drain instantly: fresh packets only (sojourn 0) → leave the dropping state.
        f.q.clear();
        f.bytes = 0;
        f.push(t * MS, 1000);
        f.push(t * MS, 1000);
        codel_dequeue(&p, &mut v, &mut s, Instant(t * MS), &mut f);
        assert!(!v.dropping);
        // Congest again: the first drop comes one interval after going above target, well
        // within 16 intervals of drop_next, so count resumes at count − lastcount.
        let drops_before = s.drop_count;
        loop {
            t += 1;
            f.push(t * MS, 1000);
            f.push(t * MS, 1000);
            codel_dequeue(&p, &mut v, &mut s, Instant(t * MS), &mut f);
            if s.drop_count > drops_before {
                break;
            }
        }
        assert!(v.dropping);
        assert_eq!(v.count, count_before - lastcount);
        assert_eq!(v.lastcount, v.count);
        let expect_next = t as f64 * 1e6 + 100e6 / (v.count as f64).sqrt();
        assert!((v.drop_next.as_nanos() as f64 - expect_next).abs() < 2.0);
    }

    #[test]
    fn ecn_capable_packets_are_marked_and_delivered() {
        let p = CodelParams { ecn: true, ..CodelParams::default() };
        let (mut f, mut v, mut s) = (Fifo::default(), CodelVars::default(), CodelStats::default());
        let mut marks = 0;
        for t in 0..400u64 {
            for _ in 0..2 {
                f.bytes += 1000;
                f.q.push_back(Packet { ip_len_bytes: 1000, ecn: Ecn::Ect, arrival: Instant(t * MS), ..Packet::default() });
            }
            let out = codel_dequeue(&p, &mut v, &mut s, Instant(t * MS), &mut f);
            assert!(out.pkt.is_some());
            marks += out.mark as u64;
        }
        assert!(f.dropped.is_empty());
        assert!(marks > 0);
        assert_eq!(marks, s.ecn_mark);
        // Marks follow the same schedule as drops would: the first at t = 109 ms.
    }

    #[test]
    fn control_law_is_interval_over_sqrt_count() {
        let i = Duration::from_millis(100);
        assert_eq!(control_law(Instant(0), i, 1), Instant(100_000_000));
        assert_eq!(control_law(Instant(0), i, 4), Instant(50_000_000));
        assert_eq!(control_law(Instant(7), i, 100), Instant(10_000_007));
    }
}
