//! A unidirectional link: a queue discipline on its egress, a transmitter of fixed rate,
//! and a propagation pipe. Each link keeps at most one TxDone and one Arrive event pending
//! (htsim's pipe): the pipe is a FIFO of (arrival time, packet) and only its head is
//! scheduled.
//!
//! A link may instead run "computed" (`fifo_hops = "computed"`, DropTail only): a FIFO
//! that works whenever it holds a packet sends each packet from `max(offered, previous
//! departure)` for `size / rate`, so its departure is known when it is offered. The packet
//! enters the pipe at once with its arrival time and no TxDone event is ever scheduled: one
//! event per hop instead of two. The queue still sees every dequeue at its exact time,
//! performed lazily (`settle`) before each later offer and before the results are read,
//! so its accounting (backlog integral, sojourns, drops) and `tx_pkts` are what the events
//! would have made them. Only ties change: a transmission that ends at the very time a
//! packet is offered counts as ended first, and the arrival is scheduled earlier (so
//! arrivals of equal time may be handled in another order).
//!
//! A computed link may also be "chained" to the links at its far end (`chained`, set by the
//! simulator where it is sound: the bottleneck direction that alone feeds the access links
//! after it, which provably never drop). Its packets then never enter its pipe: the
//! simulator offers each to the next hop at its arrival time as soon as this link accepts
//! it, and only the arrival at the next hop's far end is an event (two hops, one event).
//! The next hop's queue is thus offered packets ahead of simulated time, in order.
//!
//! A link may send by a delivery trace instead of a constant rate (`trace`, mahimahi's
//! format: `smallpipe_core::link`). Its queue then hands out a packet only at a delivery
//! opportunity, as mahimahi's does: an idle link with packets waiting schedules a wake-up
//! (a TxDone with nothing in service) at the next opportunity and takes its packet then.
//! Traced links never run computed. Either way the time a packet takes counts its bytes on
//! the wire (`framing`: overhead, MPU, ATM/PTM).

use smallpipe_core::link::{Framing, GilbertElliott, TraceServer};
use smallpipe_core::{Accounted, AnyQdisc, DropReason, Duration, Instant, Packet, Rng};
use crate::prefetch::prefetch;
use std::collections::VecDeque;

/// Packets of pipe capacity an empty pipe keeps (a few cache lines' worth of slots).
const PIPE_KEPT_CAPACITY: usize = 64;

/// The propagation pipe: packets with their arrival times, in order. Aligned so that its
/// head index, length and buffer pointer share one cache line, which one prefetch brings
/// (`Link::prefetch_arrival_state`).
#[derive(Debug, Default)]
#[repr(align(64))]
struct Pipe(VecDeque<(Instant, Packet)>);

pub struct Link {
    pub name: String,
    pub rate_bps: u64,
    pub delay: Duration,
    /// Extra per-packet delay uniform in [0, jitter_max] (sender processing time), FIFO kept.
    pub jitter_max: Duration,
    /// Bernoulli loss applied as packets arrive at the far end.
    pub loss: f64,
    /// Bursty loss in place of `loss`, when set (Gilbert–Elliott, drawn per arrival).
    pub burst_loss: Option<GilbertElliott>,
    /// Sends by a delivery trace instead of `rate_bps`, when set.
    pub trace: Option<TraceServer>,
    /// Bytes on the wire per packet (overhead, MPU, cells): what the rate is spent on.
    pub framing: Framing,
    /// Traced: a wake-up (TxDone with nothing in service) is scheduled for the next
    /// delivery opportunity.
    waking: bool,
    /// Sorted 1-based arrival indices to lose (validation scripts).
    pub drop_nth: Vec<u64>,
    arrivals: u64,
    pub queue: Accounted<AnyQdisc>,
    pub to_node: u32,
    /// Packet being serialized, if any.
    pub sending: Option<Packet>,
    pipe: Pipe,
    /// Random stream for loss and jitter (the qdisc has its own).
    pub rng: Rng,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Time at which the last packet entered the pipe will arrive (keeps jittered FIFO order).
    last_arrival: Instant,
    /// Departures computed at offer time instead of TxDone events (see the module doc).
    pub computed: bool,
    /// Computed: when the transmission of `sending` ends.
    sending_end: Instant,
    /// Computed: when the transmission of the last packet accepted ends.
    busy_until: Instant,
    /// Computed, and its arrivals are no events: the next hop is offered each packet when
    /// this link accepts it (see the module doc; `pass_chained`).
    pub chained: bool,
    /// Its arrivals are scheduled after the other events of their time
    /// (`EventQueue::push_after_ties`): set where a chained link feeds it and its own delay
    /// is shorter than the chained link's (see `Simulator::chain_hop`).
    pub arrivals_after_ties: bool,
}

impl Link {
    #[allow(clippy::too_many_arguments)]
    pub fn new(name: String, rate_bps: u64, delay: Duration, jitter_max: Duration, loss: f64,
               queue: Accounted<AnyQdisc>, to_node: u32, rng: Rng) -> Self {
        Link { name, rate_bps, delay, jitter_max, loss, burst_loss: None, trace: None, framing: Framing::default(),
               waking: false, drop_nth: Vec::new(), arrivals: 0, queue, to_node, sending: None,
               pipe: Pipe::default(), rng, tx_pkts: 0, tx_bytes: 0, last_arrival: Instant::ZERO, computed: false,
               sending_end: Instant::ZERO, busy_until: Instant::ZERO, chained: false,
               arrivals_after_ties: false }
    }

    /// If idle, take the next packet from the queue; returns when its serialization ends
    /// (the caller schedules TxDone then). A traced link between delivery opportunities
    /// takes nothing and returns the next opportunity instead, a wake-up (`wake`).
    #[inline(always)] // the hooks of `[trace]` in its callers made the inliner stop (callgrind: +3.7% per event)
    pub fn start_tx(&mut self, now: Instant) -> Option<Instant> {
        if self.sending.is_some() {
            return None;
        }
        if let Some(t) = &self.trace {
            if self.waking || self.queue.is_empty() {
                return None;
            }
            let start = t.next_start(now);
            if start > now {
                self.waking = true;
                return Some(start);
            }
        }
        let pkt = self.queue.dequeue(now)?;
        self.sending = Some(pkt);
        Some(self.tx_end(&pkt, now))
    }

    /// Whether an idle traced link takes nothing from its queue at `now`: it waits for a
    /// delivery opportunity (or has nothing to wait for). Constant-rate links never wait.
    #[inline]
    pub fn waits_for_opportunity(&self, now: Instant) -> bool {
        self.trace.as_ref().is_some_and(|t| self.waking || self.queue.is_empty() || t.next_start(now) > now)
    }

    /// A TxDone with nothing in service: the delivery opportunity a traced link waited for.
    pub fn wake(&mut self) {
        debug_assert!(self.waking && self.sending.is_none());
        self.waking = false;
    }

    /// When the transmission of `pkt` starting at `start` ends: its wire bytes at the
    /// link's rate, or the trace's opportunity that carries its last byte.
    #[inline]
    fn tx_end(&mut self, pkt: &Packet, start: Instant) -> Instant {
        let wire_bytes = self.framing.wire_bytes(pkt.len_bytes());
        match &mut self.trace {
            None => start + Duration::serialization(wire_bytes, self.rate_bps),
            Some(t) => t.send(start, wire_bytes),
        }
    }

    /// Idle link: a packet the discipline would queue and hand straight back
    /// (`Qdisc::passes_through`: an empty FIFO) is sent at once, counted as queued and
    /// dequeued at `now` without the trip through the queue (most offers to access links).
    /// Returns when its serialization ends, or `None` (nothing done) if the discipline
    /// would not pass it.
    #[inline(always)] // the hooks of `[trace]` in its callers made the inliner stop (callgrind: +3.7% per event)
    pub fn pass_through(&mut self, pkt: Packet, now: Instant) -> Option<Instant> {
        debug_assert!(self.sending.is_none());
        if self.trace.as_ref().is_some_and(|t| self.waking || t.next_start(now) > now) {
            return None; // it waits in the queue for the next opportunity
        }
        let pkt = self.queue.pass_through(pkt, now)?;
        self.sending = Some(pkt);
        Some(self.tx_end(&pkt, now))
    }

    /// Serialization ended: the packet enters the pipe. Returns its arrival time when it is
    /// the new head of the pipe (the caller schedules Arrive only then).
    #[inline]
    pub fn finish_tx(&mut self, now: Instant) -> Option<Instant> {
        let pkt = self.end_tx();
        self.enter_pipe(pkt, now)
    }

    /// The packet being serialized is sent: counted, and handed back.
    fn end_tx(&mut self) -> Packet {
        let pkt = self.sending.take().expect("a transmission ends without a packet in flight");
        self.tx_pkts += 1;
        self.tx_bytes += pkt.len_bytes();
        pkt
    }

    /// A packet whose transmission ends at `sent`, in sending order, goes into the pipe.
    /// Returns its arrival time when it is the pipe's new head.
    fn enter_pipe(&mut self, pkt: Packet, sent: Instant) -> Option<Instant> {
        let jitter = Duration(self.rng.below_inclusive(self.jitter_max.as_nanos()));
        let at = (sent + self.delay + jitter).max(self.last_arrival);
        self.last_arrival = at;
        self.pipe.0.push_back((at, pkt));
        (self.pipe.0.len() == 1).then_some(at)
    }

    /// Computed link: offer a packet at `now`. The queue decides as it would have with the
    /// events (its backlog is settled up to `now` first); an accepted packet goes into the
    /// pipe with the arrival its departure gives. Returns that arrival when it is the pipe's
    /// new head (the caller schedules Arrive only then); the queue's drops are in
    /// `queue.last_drops()`.
    pub fn offer_computed(&mut self, pkt: Packet, now: Instant) -> Option<Instant> {
        let tx_end = self.accept_computed(pkt, now)?;
        // What the queue stamps on the packet it holds, and would hand out.
        self.enter_pipe(Packet { arrival: now, ..pkt }, tx_end)
    }

    /// Chained link: offer a packet at `now` as `offer_computed` does; an accepted packet
    /// does not enter the pipe: returns when it reaches the far end, where the caller
    /// offers it to the next hop. A chained link has no jitter, so its transmissions'
    /// order and spacing carry over to the far end.
    pub fn pass_chained(&mut self, pkt: Packet, now: Instant) -> Option<Instant> {
        debug_assert!(self.chained && self.jitter_max == Duration::ZERO);
        Some(self.accept_computed(pkt, now)? + self.delay)
    }

    /// Computed link: the queue takes or drops a packet offered at `now` (settled up to
    /// `now` first); returns when the transmission of an accepted one ends.
    fn accept_computed(&mut self, pkt: Packet, now: Instant) -> Option<Instant> {
        debug_assert!(self.computed);
        self.settle(now, true);
        if self.sending.is_none() {
            // Idle: every transmission accepted ended by `now`, so this one starts now.
            debug_assert!(self.busy_until <= now);
            if let Some(tx_end) = self.pass_through(pkt, now) {
                self.sending_end = tx_end;
                self.busy_until = tx_end;
                return Some(tx_end);
            }
        }
        self.queue.enqueue(pkt, now);
        if !self.queue.last_drops().is_empty() {
            return None; // DropTail drops only the packet offered
        }
        debug_assert!(self.trace.is_none(), "traced links never run computed");
        let tx_end = now.max(self.busy_until)
            + Duration::serialization(self.framing.wire_bytes(pkt.len_bytes()), self.rate_bps);
        self.busy_until = tx_end;
        if self.sending.is_none() {
            // Idle: the packet leaves the queue at once.
            self.sending_end = self.start_tx(now).expect("the packet just accepted");
            debug_assert_eq!(self.sending_end, tx_end);
        }
        Some(tx_end)
    }

    /// Computed link: performs the transmissions that end by `until` (at `until` too when
    /// `at_until`) and the dequeue each end makes at its own time, as the TxDone events
    /// would have. An offer at `until` settles them first (a tie the events would order by
    /// insertion); the results leave out those ending at the run's end, as the event loop
    /// does.
    pub fn settle(&mut self, until: Instant, at_until: bool) {
        while self.sending.is_some() && (self.sending_end < until || (self.sending_end == until && at_until)) {
            self.end_tx();
            if self.queue.is_empty() {
                // A computed link's DropTail hands nothing out and counts nothing then (the
                // empty backlog adds nothing to its integral): no dequeue to make.
                break;
            }
            if let Some(next_end) = self.start_tx(self.sending_end) {
                self.sending_end = next_end;
            }
        }
    }

    /// Prefetches the fields `arrive` reads before the packet (`crate::prefetch`).
    #[inline]
    pub fn prefetch_arrival_state(&self) {
        prefetch(&self.pipe);
        prefetch(&self.to_node);
        prefetch(&self.arrivals);
        prefetch(&self.drop_nth);
    }

    /// Prefetches the packet `arrive` takes next, the head of the pipe.
    #[inline]
    pub fn prefetch_pipe_head(&self) {
        if let Some(head) = self.pipe.0.front() {
            prefetch(head);
        }
    }

    /// The packet `arrive` takes next.
    #[inline]
    pub fn pipe_head(&self) -> Option<&Packet> {
        self.pipe.0.front().map(|(_, pkt)| pkt)
    }

    /// The head of the pipe arrives, or `Err` with it if the link lost it. Also returns when
    /// the next head arrives, if any.
    pub fn arrive(&mut self) -> (Result<Packet, Packet>, Option<Instant>) {
        let (_, pkt) = self.pipe.0.pop_front().expect("Arrive with an empty pipe");
        let next = self.pipe.0.front().map(|(t, _)| *t);
        if next.is_none() && self.pipe.0.capacity() > PIPE_KEPT_CAPACITY {
            // A drained pipe gives back what a burst made it grow to: otherwise every one
            // of thousands of access links keeps its largest burst's capacity (up to a
            // bandwidth-delay product of packets) for the rest of the run.
            self.pipe.0.shrink_to(PIPE_KEPT_CAPACITY);
        }
        self.arrivals += 1;
        let lost = match &mut self.burst_loss {
            None => self.rng.chance(self.loss),
            Some(ge) => ge.lose(&mut self.rng),
        };
        if lost || self.drop_nth.binary_search(&self.arrivals).is_ok() {
            self.queue.record_external_drop(&pkt, DropReason::LinkLoss);
            return (Err(pkt), next);
        }
        (Ok(pkt), next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallpipe_core::qdisc::DropTailConfig;
    use smallpipe_core::QdiscConfig;

    /// The sender's processing delay (ns-2 `overhead_`): each packet arrives between `delay`
    /// and `delay + jitter_max` after its transmission ends, in the order it was sent, and
    /// the draws cover the whole range (uniform: mean near `jitter_max / 2`).
    #[test]
    fn processing_delay_stays_in_range_keeps_fifo_and_is_random() {
        let jitter_max = Duration::from_millis(4);
        let delay = Duration::from_millis(10);
        let q = QdiscConfig::DropTail(DropTailConfig::packets(10));
        let q = Accounted::new(q.build().unwrap(), Rng::new(1, 2));
        let mut link = Link::new("sender0_up".into(), 100_000_000, delay, jitter_max, 0.0, q, 0, Rng::new(1, 3));
        let mut last = Instant::ZERO;
        let mut extra_ns = Vec::new();
        // Back-to-back packets (10 µs apart, well inside the jitter) and spaced ones (10 ms).
        let mut now = Instant::ZERO;
        for i in 0..4000u64 {
            now += Duration::from_micros(if i % 2 == 0 { 10 } else { 10_000 });
            link.sending = Some(Packet { seq: i as u32, ..Packet::default() });
            link.finish_tx(now);
            let &(at, pkt) = link.pipe.0.back().unwrap();
            assert_eq!(pkt.seq, i as u32);
            assert!(at >= last, "FIFO: packet {i} would overtake the one before");
            let extra = at.saturating_since(now + delay);
            assert!(at >= now + delay && extra <= jitter_max, "packet {i}: extra delay {extra:?}");
            extra_ns.push(extra.as_nanos() as f64);
            last = at;
        }
        let mean = extra_ns.iter().sum::<f64>() / extra_ns.len() as f64;
        let max = extra_ns.iter().cloned().fold(0.0, f64::max);
        let j = jitter_max.as_nanos() as f64;
        assert!(max > 0.99 * j, "the draws reach the top of the range: {max}");
        // Uniform on [0, J] has mean J/2 and standard deviation J/√12; the FIFO hold-back of
        // the back-to-back packets only raises it. 2000 spaced draws: standard error 0.0065 J.
        assert!((0.45 * j..0.65 * j).contains(&mean), "mean extra delay {mean} of {j}");
    }

    /// Gilbert–Elliott loss as the link applies it at the far end: with h = 0 and k = 1
    /// the runs of lost arrivals are the stays in Bad, of mean 1 / r, and the lost share is
    /// p / (p + r). p = 0.005, r = 0.2 over 10^6 arrivals: about 4 900 bursts of variance
    /// (1 - r) / r^2 = 20, so the mean burst's standard error is 0.064 (5 of them: 0.32);
    /// the lost share's relative error is about 2%, checked within 8%.
    #[test]
    fn bursty_loss_runs_last_one_over_r_and_lose_the_stationary_share() {
        use smallpipe_core::link::{GilbertElliottConfig, LossModelConfig};
        let (p, r) = (0.005, 0.2);
        let q = QdiscConfig::DropTail(DropTailConfig::packets(10)).build().unwrap();
        let mut link = Link::new("bottleneck".into(), 1_000_000, Duration::ZERO, Duration::ZERO, 0.0,
                                 Accounted::new(q, Rng::new(1, 2)), 0, Rng::new(1, 3));
        link.burst_loss = Some(LossModelConfig::GilbertElliott(GilbertElliottConfig { p, r, h: 0.0, k: 1.0 }).build().unwrap());
        let n = 1_000_000u64;
        let (mut lost, mut bursts, mut in_burst) = (0u64, 0u64, false);
        for i in 0..n {
            link.sending = Some(Packet { seq: i as u32, ..Packet::default() });
            link.finish_tx(Instant(i));
            let l = link.arrive().0.is_err();
            lost += l as u64;
            bursts += (l && !in_burst) as u64;
            in_burst = l;
        }
        let burst = lost as f64 / bursts as f64;
        assert!((burst - 1.0 / r).abs() < 0.32, "mean burst {burst} packets, want {}", 1.0 / r);
        let share = lost as f64 / n as f64;
        assert!((share / (p / (p + r)) - 1.0).abs() < 0.08, "lost {share}, want {}", p / (p + r));
    }

    /// A computed link against the FIFO's own arithmetic. Packet j offered at t_j and
    /// accepted starts at s_j = max(t_j, e_{j-1}) and ends at e_j = s_j + size/rate; the
    /// DropTail (limit L) accepts it iff fewer than L accepted packets wait at t_j (those
    /// with s > t_j: a transmission ending at t_j has ended, the tie rule). At the end T
    /// the accounting must give: departures #{s_j < T}, transmissions #{e_j < T}, backlog
    /// integral Σ (min(s_j, T) - t_j), sojourn sum Σ_{s_j < T} (s_j - t_j), and arrivals =
    /// departures + drops + backlog; the pipe delivers every accepted packet at
    /// e_j + delay, in order. Bursts of offers with random gaps and sizes keep the queue at
    /// its limit part of the time.
    #[test]
    fn computed_link_keeps_the_fifo_accounting_exact() {
        const LIMIT: usize = 8;
        let (rate_bps, delay) = (10_000_000, Duration::from_micros(2_345));
        let mut ended_with_backlog = 0;
        for seed in 0..20 {
            let q = QdiscConfig::DropTail(DropTailConfig::packets(LIMIT as u32));
            let q = Accounted::new(q.build().unwrap(), Rng::new(seed, 2));
            let mut link = Link::new("sender0_up".into(), rate_bps, delay, Duration::ZERO, 0.0, q, 0, Rng::new(seed, 3));
            link.computed = true;
            let mut rng = Rng::new(seed, 4);
            let (mut now, mut last_end) = (Instant::ZERO, Instant::ZERO);
            let mut accepted: Vec<(Instant, Instant, Instant, u32)> = Vec::new(); // (t, s, e, seq)
            let mut drops = 0u64;
            for seq in 0..3000u32 {
                // Mostly back-to-back (a burst), sometimes a pause longer than a full queue,
                // and sometimes at the very end of the transmission in progress (a tie).
                let gap_ns = if rng.chance(0.9) { rng.below_inclusive(200_000) } else { rng.below_inclusive(8_000_000) };
                let in_progress = accepted.partition_point(|a| a.2 <= now);
                now = match accepted.get(in_progress).map(|a| a.2) {
                    Some(e) if rng.chance(0.2) => e,
                    _ => now + Duration(gap_ns),
                };
                let ip_len_bytes = 40 + rng.below_inclusive(1460) as u16;
                let waiting = accepted.iter().rev().take(LIMIT + 1).filter(|a| a.1 > now).count();
                let pkt = Packet { seq, ip_len_bytes, ..Packet::default() };
                link.offer_computed(pkt, now);
                if waiting >= LIMIT {
                    drops += 1;
                    assert_eq!(link.queue.last_drops().len(), 1, "packet {seq} is dropped");
                    continue;
                }
                assert!(link.queue.last_drops().is_empty(), "packet {seq} is accepted");
                let start = now.max(last_end);
                last_end = start + Duration::serialization(u64::from(ip_len_bytes), rate_bps);
                accepted.push((now, start, last_end, seq));
            }
            let end = now + Duration(1); // some packets still queued, one on the wire
            link.settle(end, false);
            let st = link.queue.stats();
            let departed = accepted.iter().filter(|a| a.1 < end).count() as u64;
            assert!(drops > 0, "seed {seed}: the queue overflows");
            ended_with_backlog += u32::from(departed < accepted.len() as u64);
            assert_eq!(st.departed_pkts, departed);
            assert_eq!(st.dropped_pkts.iter().sum::<u64>(), drops);
            assert_eq!(link.tx_pkts, accepted.iter().filter(|a| a.2 < end).count() as u64);
            link.queue.check().unwrap();
            let integral_ns: u128 = accepted.iter().map(|a| a.1.min(end).saturating_since(a.0).as_nanos() as u128).sum();
            assert_eq!(link.queue.mean_backlog_pkts(end), integral_ns as f64 / end.as_nanos() as f64);
            let sojourn_ns: u128 = accepted.iter().filter(|a| a.1 < end).map(|a| a.1.saturating_since(a.0).as_nanos() as u128).sum();
            assert_eq!(link.queue.mean_sojourn_ns(), sojourn_ns as f64 / departed as f64);
            let delivered: Vec<(Instant, u32)> = link.pipe.0.iter().map(|(at, p)| (*at, p.seq)).collect();
            let expected: Vec<(Instant, u32)> = accepted.iter().map(|a| (a.2 + delay, a.3)).collect();
            assert_eq!(delivered, expected);
        }
        assert!(ended_with_backlog >= 5, "{ended_with_backlog} of 20 runs end with packets queued");
    }

    /// A pipe that a burst filled gives the memory back once it drains, and keeps its
    /// order while it does.
    /// Bernoulli loss on the wire: each packet that left the queue is lost with probability
    /// p, and the link's counters see it once, as an arrival (at the queue) and a drop, so
    /// its loss rate estimates p (binomial: standard error √(p(1−p)/n) = 0.0028 at p = 0.2,
    /// n = 20 000), not p / (1 + p) = 0.167 as when the loss was also counted an arrival.
    #[test]
    fn loss_on_the_wire_counts_each_packet_once() {
        let (p, n) = (0.2, 20_000u32);
        let q = QdiscConfig::DropTail(DropTailConfig::packets(10));
        let q = Accounted::new(q.build().unwrap(), Rng::new(1, 2));
        let mut link = Link::new("bottleneck".into(), 1_000_000_000, Duration::from_millis(1), Duration::ZERO, p, q, 0,
                                 Rng::new(1, 3));
        let mut lost = 0u64;
        for i in 0..n {
            let now = Instant(u64::from(i) * 1_000_000);
            link.queue.enqueue(Packet { seq: i, ip_len_bytes: 500, ..Packet::default() }, now);
            link.sending = link.queue.dequeue(now);
            link.finish_tx(now);
            lost += link.arrive().0.is_err() as u64;
        }
        let stats = link.queue.stats();
        assert_eq!(stats.arrived_pkts, u64::from(n), "each packet arrives once");
        assert_eq!(stats.departed_pkts, u64::from(n));
        assert_eq!(stats.dropped(DropReason::LinkLoss), lost);
        link.queue.check().unwrap();
        let rate = stats.total_dropped_pkts() as f64 / stats.arrived_pkts as f64;
        assert!((rate - p).abs() < 4.0 * (p * (1.0 - p) / f64::from(n)).sqrt(), "loss rate {rate} for p = {p}");
    }

    #[test]
    fn a_drained_pipe_keeps_little_capacity() {
        let q = QdiscConfig::DropTail(DropTailConfig::packets(10));
        let q = Accounted::new(q.build().unwrap(), Rng::new(1, 2));
        let mut link = Link::new("bottleneck".into(), 1_000_000_000, Duration::from_millis(40), Duration::ZERO, 0.0,
                                 q, 0, Rng::new(1, 3));
        let burst = 10_000u32;
        for i in 0..burst {
            link.sending = Some(Packet { seq: i, ..Packet::default() });
            link.finish_tx(Instant(u64::from(i) * 1_000));
        }
        assert!(link.pipe.0.capacity() >= burst as usize);
        for i in 0..burst {
            let (pkt, next) = link.arrive();
            assert_eq!(pkt.expect("no loss configured").seq, i, "FIFO");
            assert_eq!(next.is_none(), i == burst - 1);
        }
        assert!(link.pipe.0.capacity() <= PIPE_KEPT_CAPACITY, "capacity {}", link.pipe.0.capacity());
    }
}
