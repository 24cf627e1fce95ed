//! The accounting wrapper: the only door into a discipline. It stamps arrival times, counts
//! arrivals, departures and drops by reason, integrates the backlog over time, keeps the
//! distribution of queueing delays, and (in debug builds) asserts
//! `arrived = departed + dropped + backlog` after every call.

use super::{Cx, Qdisc, QdiscCounter};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::stats::{DropReason, QdiscStats};
use crate::time::Instant;
use hdrhistogram::Histogram;

/// Queueing delays above this are recorded as this (no real queue holds a packet longer).
pub const MAX_RECORDED_SOJOURN_NS: u64 = 1_000_000_000_000;
/// Significant decimal digits the delay histogram keeps: quantiles within 1% (4352 counters, 35 KB,
/// which is why the histogram is opt-in: a simulation has thousands of access links).
const SOJOURN_SIGNIFICANT_DIGITS: u8 = 2;

#[derive(Debug)]
pub struct Accounted<Q> {
    inner: Q,
    rng: Rng,
    stats: QdiscStats,
    drops: Vec<(Packet, DropReason)>,
    /// Integral of the backlog over time, packet-nanoseconds.
    backlog_pkt_ns: u128,
    last_change: Instant,
    /// Sum of sojourn times of departed packets, for the mean queueing delay.
    sojourn_ns_sum: u128,
    /// With [`Self::with_delay_histogram`]: the sojourn time of every departed packet, in
    /// nanoseconds, to 2 significant digits.
    sojourn_ns: Option<Box<Histogram<u64>>>,
}

impl<Q: Qdisc> Accounted<Q> {
    pub fn new(inner: Q, rng: Rng) -> Self {
        Self {
            inner,
            rng,
            stats: QdiscStats::default(),
            drops: Vec::new(),
            backlog_pkt_ns: 0,
            last_change: Instant::ZERO,
            sojourn_ns_sum: 0,
            sojourn_ns: None,
        }
    }

    /// Also keep the distribution of queueing delays (see [`Self::sojourn_histogram`]).
    pub fn with_delay_histogram(mut self) -> Self {
        let histogram = Histogram::new_with_bounds(1, MAX_RECORDED_SOJOURN_NS, SOJOURN_SIGNIFICANT_DIGITS)
            .expect("constant histogram bounds are valid");
        self.sojourn_ns = Some(Box::new(histogram));
        self
    }

    /// Offer a packet. The packets dropped by this call are in [`Self::last_drops`].
    pub fn enqueue(&mut self, mut pkt: Packet, now: Instant) {
        self.advance(now);
        self.drops.clear();
        pkt.arrival = now;
        self.stats.arrived_pkts += 1;
        self.stats.arrived_bytes += pkt.len_bytes();
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops, marks: &mut self.stats.marked };
        self.inner.enqueue(pkt, &mut cx);
        self.count_drops();
        self.debug_check();
    }

    /// Take the next packet to send. Packets dropped on the way are in [`Self::last_drops`].
    pub fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.advance(now);
        self.drops.clear();
        if self.inner.len_pkts() == 0 && self.inner.empty_dequeue_is_noop() {
            return None;
        }
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops, marks: &mut self.stats.marked };
        let out = self.inner.dequeue(&mut cx);
        self.count_drops();
        if let Some(p) = &out {
            self.stats.departed_pkts += 1;
            self.stats.departed_bytes += p.len_bytes();
            let sojourn_ns = now.saturating_since(p.arrival).as_nanos();
            self.sojourn_ns_sum += sojourn_ns as u128;
            if let Some(histogram) = &mut self.sojourn_ns {
                histogram.saturating_record(sojourn_ns);
            }
        }
        self.debug_check();
        out
    }

    /// A packet offered at `now` to a discipline that would hand it straight back
    /// (`Qdisc::passes_through`), taken at once by an idle transmitter: counted as `enqueue`
    /// then `dequeue` at `now` would count it (an arrival and a departure with no queueing
    /// delay, no drop), without touching the queue. Returns the packet as the dequeue
    /// would have, or `None` (nothing done) if the discipline would not pass it.
    pub fn pass_through(&mut self, mut pkt: Packet, now: Instant) -> Option<Packet> {
        if !self.inner.passes_through(&pkt) {
            return None;
        }
        self.advance(now);
        self.drops.clear();
        pkt.arrival = now;
        self.stats.arrived_pkts += 1;
        self.stats.arrived_bytes += pkt.len_bytes();
        self.stats.departed_pkts += 1;
        self.stats.departed_bytes += pkt.len_bytes();
        if let Some(histogram) = &mut self.sojourn_ns {
            histogram.saturating_record(0);
        }
        self.debug_check();
        Some(pkt)
    }

    /// Swap in another discipline at `now`, keeping the counters (a live reconfiguration).
    /// The old discipline's packets are taken out in its service order and offered to the
    /// new one with their arrival times, so their queueing delay keeps counting and the
    /// identity `arrived = departed + dropped + backlog` holds across the swap. Drops on
    /// the way (an AQM's on dequeue, the new discipline's limits) are in
    /// [`Self::last_drops`]. Returns how many packets moved and the old discipline, empty
    /// unless it held packets it would not hand out at `now` (the caller must check).
    pub fn replace_inner(&mut self, inner: Q, now: Instant) -> (usize, Q) {
        self.advance(now);
        self.drops.clear();
        let mut old = std::mem::replace(&mut self.inner, inner);
        let mut moved = 0;
        while old.len_pkts() > 0 {
            let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops, marks: &mut self.stats.marked };
            let Some(pkt) = old.dequeue(&mut cx) else { break };
            let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops, marks: &mut self.stats.marked };
            self.inner.enqueue(pkt, &mut cx);
            moved += 1;
        }
        self.count_drops();
        (moved, old)
    }

    pub fn observe_reverse(&mut self, pkt: &Packet, now: Instant) {
        self.inner.observe_reverse(pkt, now);
    }

    /// Record a loss on the wire (`LinkLoss`: corruption after the packet left the queue)
    /// so the link's drop table and loss rate are complete. The packet was counted once
    /// already, as an arrival and a departure; it is not an arrival again, so a link with
    /// Bernoulli loss p reports a loss rate of p, not p / (1 + p).
    pub fn record_external_drop(&mut self, pkt: &Packet, reason: DropReason) {
        debug_assert_eq!(reason, DropReason::LinkLoss, "only losses after the queue are external");
        self.stats.dropped_pkts[reason as usize] += 1;
        self.stats.dropped_bytes[reason as usize] += pkt.len_bytes();
    }

    pub fn last_drops(&self) -> &[(Packet, DropReason)] {
        &self.drops
    }
    pub fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    pub fn inner(&self) -> &Q {
        &self.inner
    }
    /// The discipline's own counters ([`Qdisc::counters`]).
    pub fn counters(&self) -> Vec<QdiscCounter> {
        let mut out = Vec::new();
        self.inner.counters(&mut out);
        out
    }
    pub fn len_pkts(&self) -> usize {
        self.inner.len_pkts()
    }
    pub fn backlog_bytes(&self) -> u64 {
        self.inner.backlog_bytes()
    }
    pub fn is_empty(&self) -> bool {
        self.inner.len_pkts() == 0
    }

    /// Time-averaged backlog in packets over `[0, now]`.
    pub fn mean_backlog_pkts(&mut self, now: Instant) -> f64 {
        self.advance(now);
        if now.as_nanos() == 0 { 0.0 } else { self.backlog_pkt_ns as f64 / now.as_nanos() as f64 }
    }
    /// Mean time departed packets spent queued, in nanoseconds.
    pub fn mean_sojourn_ns(&self) -> f64 {
        if self.stats.departed_pkts == 0 {
            0.0
        } else {
            self.sojourn_ns_sum as f64 / self.stats.departed_pkts as f64
        }
    }

    /// Sum of the sojourn times of departed packets, nanoseconds (a time series takes its
    /// differences for the mean delay per interval).
    pub fn sojourn_ns_sum(&self) -> u128 {
        self.sojourn_ns_sum
    }

    /// The queueing-delay distribution of departed packets (nanoseconds, 1% resolution),
    /// if it was asked for with [`Self::with_delay_histogram`].
    pub fn sojourn_histogram(&self) -> Option<&Histogram<u64>> {
        self.sojourn_ns.as_deref()
    }

    /// Checks the conservation identity now (tests call this; debug builds assert it).
    pub fn check(&self) -> Result<(), String> {
        self.stats.check(self.inner.len_pkts() as u64, self.inner.backlog_bytes())
    }

    fn advance(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last_change).as_nanos() as u128;
        self.backlog_pkt_ns += dt * self.inner.len_pkts() as u128;
        self.last_change = self.last_change.max(now);
    }

    fn count_drops(&mut self) {
        for (p, reason) in &self.drops {
            self.stats.dropped_pkts[*reason as usize] += 1;
            self.stats.dropped_bytes[*reason as usize] += p.len_bytes();
        }
    }

    fn debug_check(&self) {
        #[cfg(debug_assertions)]
        if let Err(e) = self.check() {
            panic!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{DropTail, DropTailConfig};
    use crate::time::Duration;
    use proptest::prelude::{prop_assert, prop_assert_eq, prop_assume, proptest};

    /// The shortcut for an empty DropTail keeps what the wrapper reports: `last_drops` holds
    /// the drops of the last call only (none for a dequeue), and the time-averaged backlog
    /// is that of the schedule: one packet for the first 2 of 8 ms, then none (0.25).
    #[test]
    fn dequeue_of_an_empty_droptail_reports_no_drops_and_keeps_the_backlog_integral() {
        let q: DropTail = DropTailConfig { limit_pkts: None, limit_bytes: Some(1000), ..DropTailConfig::default() }.build().unwrap();
        let mut acc = Accounted::new(q, Rng::new(1, 0));
        let at = |ms| Instant::ZERO + Duration::from_millis(ms);
        acc.enqueue(Packet { ip_len_bytes: 600, ..Default::default() }, at(0));
        acc.enqueue(Packet { ip_len_bytes: 600, ..Default::default() }, at(1)); // over 1000 bytes
        assert_eq!(acc.last_drops().len(), 1);
        assert!(acc.dequeue(at(2)).is_some());
        assert!(acc.dequeue(at(3)).is_none());
        assert!(acc.last_drops().is_empty(), "the enqueue's drop is not this dequeue's");
        acc.enqueue(Packet { ip_len_bytes: 2000, ..Default::default() }, at(4)); // dropped, queue stays empty
        assert_eq!(acc.last_drops().len(), 1);
        assert!(acc.dequeue(at(5)).is_none());
        assert!(acc.last_drops().is_empty());
        assert!((acc.mean_backlog_pkts(at(8)) - 0.25).abs() < 1e-12);
        acc.check().unwrap();
    }

    /// A swap keeps the counters and the arrival times: three packets move from a
    /// DropTail of 10 to one of 2 (one dropped by the new limit), and the delay of the two
    /// that leave later counts from their first arrival.
    #[test]
    fn replace_inner_moves_the_queue_and_keeps_counters_and_arrivals() {
        let dt = |n| DropTailConfig::packets(n).build().unwrap();
        let mut acc = Accounted::new(dt(10), Rng::new(1, 0));
        let at = |ms| Instant::ZERO + Duration::from_millis(ms);
        for (i, ms) in [0u64, 1, 2].into_iter().enumerate() {
            acc.enqueue(Packet { ip_len_bytes: 100, seq: i as u32, ..Default::default() }, at(ms));
        }
        let (moved, old) = acc.replace_inner(dt(2), at(5));
        assert_eq!((moved, old.len_pkts(), acc.len_pkts()), (3, 0, 2));
        assert_eq!(acc.last_drops().iter().map(|(p, _)| p.seq).collect::<Vec<_>>(), vec![2], "the tail, over the new limit");
        let first = acc.dequeue(at(10)).unwrap();
        assert_eq!((first.seq, first.arrival), (0, at(0)));
        assert_eq!(acc.stats().arrived_pkts, 3);
        assert_eq!(acc.stats().total_dropped_pkts(), 1);
        acc.check().unwrap();
        assert!((acc.mean_sojourn_ns() - 10e6).abs() < 1.0, "10 ms since its first arrival");
    }

    proptest! {
        /// `pass_through` is an `enqueue` then `dequeue` at the same instant, without the
        /// queue: on offers to a DropTail that is empty at each (limits as small as one
        /// packet, or below a packet's size), a wrapper that passes packets through (and
        /// offers a refused one to the queue, as a link does) and one that queues every
        /// packet hand out the same packets and end with the same counters, backlog
        /// integral and delay distribution; a refused packet is one the queue drops.
        #[test]
        fn passing_through_counts_as_enqueue_then_dequeue(
            limit_pkts in proptest::option::of(1u32..4),
            limit_bytes in proptest::option::of(40u64..3000),
            offers in proptest::collection::vec((0u64..5_000_000, 40u16..1500), 1..60),
        ) {
            prop_assume!(limit_pkts.is_some() || limit_bytes.is_some());
            let config = DropTailConfig { limit_pkts, limit_bytes, ..DropTailConfig::default() };
            let mut fast = Accounted::new(config.build().unwrap(), Rng::new(1, 0)).with_delay_histogram();
            let mut slow = Accounted::new(config.build().unwrap(), Rng::new(1, 0)).with_delay_histogram();
            let mut now = Instant::ZERO;
            for (i, &(gap_ns, ip_len_bytes)) in offers.iter().enumerate() {
                now += Duration(gap_ns);
                let pkt = Packet { seq: i as u32, ip_len_bytes, ..Default::default() };
                slow.enqueue(pkt, now);
                let queued = slow.dequeue(now);
                let passed = fast.pass_through(pkt, now);
                if passed.is_none() {
                    fast.enqueue(pkt, now);
                    prop_assert_eq!(fast.last_drops().len(), 1, "a refused packet is dropped");
                }
                prop_assert_eq!(passed, queued);
                prop_assert!(fast.is_empty() && slow.is_empty());
            }
            let end = now + Duration(1);
            prop_assert_eq!(fast.stats(), slow.stats());
            prop_assert_eq!(fast.mean_backlog_pkts(end), slow.mean_backlog_pkts(end));
            prop_assert_eq!(fast.mean_sojourn_ns(), slow.mean_sojourn_ns());
            prop_assert_eq!(fast.sojourn_histogram(), slow.sojourn_histogram());
            fast.check().unwrap();
        }
    }

    #[test]
    fn delay_quantiles_match_the_sojourns_of_a_known_schedule() {
        // 100 packets arrive together at t = 0 and leave one per millisecond from t = 1 ms:
        // packet i waits (i + 1) ms, so the q-quantile is ceil(100 q) ms.
        let q: DropTail = DropTailConfig::packets(1000).build().unwrap();
        let mut acc = Accounted::new(q, Rng::new(1, 0)).with_delay_histogram();
        for i in 0..100u32 {
            acc.enqueue(Packet { seq: i, ip_len_bytes: 1500, ..Default::default() }, Instant::ZERO);
        }
        for i in 1..=100u64 {
            acc.dequeue(Instant::ZERO + Duration::from_millis(i)).unwrap();
        }
        let h = acc.sojourn_histogram().expect("asked for");
        assert_eq!(h.len(), 100);
        for (quantile, expected_ms) in [(0.5, 50.0), (0.9, 90.0), (0.99, 99.0), (1.0, 100.0)] {
            let got_ms = h.value_at_quantile(quantile) as f64 / 1e6;
            assert!((got_ms - expected_ms).abs() <= 0.01 * expected_ms, "q{quantile}: {got_ms} ms, expected {expected_ms}");
        }
        assert!((acc.mean_sojourn_ns() / 1e6 - 50.5).abs() < 1e-9);
    }
}
