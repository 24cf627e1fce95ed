//! The thin link of one direction, as plain functions of (packet, now): a discipline in
//! front of a transmitter of fixed rate, then a propagation pipe with optional Bernoulli
//! loss and per-source extra delay. The same shape as the simulator's link
//! (`crates/sim/src/link.rs`), so it is tested with scripted arrivals and virtual time.
//!
//! Logical time: the transmitter's departures are computed from the link model, never from
//! when the box happened to wake up. A busy period that starts at `t0` sends its `k`-th
//! byte at `t0 + ceil(8 k / rate)`, so neither a late timer nor per-packet rounding ever
//! accumulates into rate error. A wake-up at `now` performs every dequeue and delivery
//! whose logical time is `<= now`, in time order, each at its logical time.
//!
//! Counting: the discipline's bytes are IP bytes (Ethernet header excluded), as in the
//! simulator, so `rate_bps` is the IP-layer rate; with `framing` (per-packet overhead, MPU,
//! ATM/PTM: `smallpipe_core::link`) the rate is spent on each packet's wire bytes instead.
//!
//! A direction may send by a delivery trace (mahimahi's format) in place of a fixed rate:
//! a queued packet then leaves at the first delivery opportunity with bytes left, and ends
//! at the opportunity that carries its last byte, as in the simulator (one model for both,
//! in core). Loss may be bursty (Gilbert–Elliott) in place of Bernoulli.

use smallpipe_core::link::{Framing, GilbertElliott, TraceServer};
use smallpipe_core::{Accounted, AnyQdisc, DropReason, Duration, Instant, Packet, Qdisc, Rng};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a call to the link produced, in time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkEvent {
    /// The discipline (or the link) dropped this packet; its frame can be freed.
    Dropped(Packet, DropReason),
    /// The packet left the queue and started serialization at `at` (the other direction's
    /// discipline observes it as reverse traffic).
    Departed { pkt: Packet, at: Instant },
    /// The packet reached the far end at logical time `due`: send its frame now.
    Delivered { pkt: Packet, due: Instant },
}

/// The direction whose next event is due first, by `now`, and when (the lower direction on
/// a tie). Both directions are run to a time one event at a time through this, because a
/// departure on one is reverse traffic for the other's discipline (TAQ reads the ACKs), so
/// the two must see each other's events in time order. The running box and the replay both
/// do, so a replay repeats the run.
pub fn next_due(links: &[LinkEmu; 2], now: Instant) -> Option<(usize, Instant)> {
    let [a, b] = [0, 1].map(|d| links[d].next_deadline().filter(|t| *t <= now));
    match (a, b) {
        (Some(ta), Some(tb)) if tb < ta => Some((1, tb)),
        (Some(ta), _) => Some((0, ta)),
        (None, Some(tb)) => Some((1, tb)),
        (None, None) => None,
    }
}

/// One direction's counters from the run's start to `time_ns` (run time): the rows of
/// `link_slices.csv`, so any window's loss rate and mean backlog can be computed exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkCumulative {
    pub time_ns: u64,
    pub arrived_pkts: u64,
    pub dropped_pkts: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Integral of the waiting packets (the one in service not counted) over time.
    pub backlog_pkt_ns: u64,
}

/// A packet in flight in the pipe, ordered by arrival time then by entry order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InFlight {
    due: Instant,
    order: u64,
    pkt: Packet,
}
impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.order).cmp(&(other.due, other.order))
    }
}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

pub struct LinkEmu {
    pub rate_bps: u64,
    pub delay: Duration,
    /// Bernoulli loss applied as packets reach the far end (as the simulator does).
    pub loss: f64,
    /// Bursty loss in place of `loss`, when set.
    burst_loss: Option<GilbertElliott>,
    /// Sends by a delivery trace in place of `rate_bps`, when set.
    trace: Option<TraceServer>,
    /// Bytes on the wire per packet: what the rate is spent on.
    framing: Framing,
    /// Extra one-way delay by IP source (core's 32-bit host address).
    extra_delay_by_src: FxHashMap<u32, Duration>,
    pub queue: Accounted<AnyQdisc>,
    rng: Rng,
    /// When the transmitter finishes the packet it is sending (or finished the last one).
    free_at: Instant,
    /// Start of the current busy period and the bytes sent in it (exact logical departures).
    busy_start: Instant,
    busy_bytes: u64,
    last_arrival: Instant,
    pipe: BinaryHeap<Reverse<InFlight>>,
    entered: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
}

impl LinkEmu {
    pub fn new(rate_bps: u64, delay: Duration, loss: f64, extra_delay_by_src: FxHashMap<u32, Duration>,
               queue: Accounted<AnyQdisc>, rng: Rng) -> Self {
        assert!(rate_bps > 0, "rate_bps is validated by the config");
        LinkEmu {
            rate_bps, delay, loss, burst_loss: None, trace: None, framing: Framing::default(), extra_delay_by_src, queue, rng,
            free_at: Instant::ZERO, busy_start: Instant::ZERO, busy_bytes: 0, last_arrival: Instant::ZERO,
            pipe: BinaryHeap::new(), entered: 0, tx_pkts: 0, tx_bytes: 0,
        }
    }

    /// The link's delivery trace, wire framing and bursty loss (`DirectionConfig`): set
    /// once, before the first packet.
    pub fn shape(&mut self, trace: Option<TraceServer>, framing: Framing, burst_loss: Option<GilbertElliott>) {
        debug_assert_eq!(self.tx_pkts, 0, "shaped before the first packet");
        (self.trace, self.framing, self.burst_loss) = (trace, framing, burst_loss);
    }

    /// A packet arrives at the queue at `now`: everything due before it happens first, and
    /// an idle transmitter starts on it at once.
    pub fn enqueue(&mut self, pkt: Packet, now: Instant, out: &mut Vec<LinkEvent>) {
        self.advance(now, out);
        self.last_arrival = self.last_arrival.max(now);
        self.queue.enqueue(pkt, now);
        out.extend(self.queue.last_drops().iter().map(|&(p, r)| LinkEvent::Dropped(p, r)));
        self.advance(now, out);
    }

    /// Perform every dequeue and delivery whose logical time is `<= now`, in time order.
    pub fn advance(&mut self, now: Instant, out: &mut Vec<LinkEvent>) {
        loop {
            let next_tx = (!self.queue.is_empty()).then(|| self.next_tx_at());
            let next_rx = self.pipe.peek().map(|r| r.0.due);
            match (next_tx, next_rx) {
                (Some(t), rx) if t <= now && rx.is_none_or(|r| t <= r) => self.start_tx(t, out),
                (_, Some(r)) if r <= now => self.deliver(out),
                _ => return,
            }
        }
    }

    /// The next instant at which [`Self::advance`] has work, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        let tx = (!self.queue.is_empty()).then(|| self.next_tx_at());
        let rx = self.pipe.peek().map(|r| r.0.due);
        match (tx, rx) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The link's counters since the run's start, as of `now`: every event up to `now`
    /// happens first, so two samples give exact counts and the exact backlog integral
    /// between them.
    pub fn cumulative(&mut self, now: Instant, out: &mut Vec<LinkEvent>) -> LinkCumulative {
        self.advance(now, out);
        // mean_backlog_pkts is the integral over [0, now] divided by now: multiplying back
        // is exact to well under a packet-nanosecond for any run shorter than years.
        let backlog_pkt_ns = (self.queue.mean_backlog_pkts(now) * now.as_nanos() as f64).round() as u64;
        let st = self.queue.stats();
        LinkCumulative {
            time_ns: now.as_nanos(),
            arrived_pkts: st.arrived_pkts,
            dropped_pkts: st.total_dropped_pkts(),
            tx_pkts: self.tx_pkts,
            tx_bytes: self.tx_bytes,
            backlog_pkt_ns,
        }
    }

    /// A new rate from `now` (a reload): what was due happens first at the old rate and
    /// the packet in service finishes when it would have; the departures after it follow
    /// the new rate.
    pub fn set_rate(&mut self, rate_bps: u64, now: Instant, out: &mut Vec<LinkEvent>) {
        assert!(rate_bps > 0, "rate_bps is validated by the config");
        self.advance(now, out);
        self.rate_bps = rate_bps;
        self.busy_start = self.free_at;
        self.busy_bytes = 0;
    }

    /// New propagation delay, per-source extra delays and loss (a reload): packets already
    /// in the pipe keep the arrival time they were given; a new bursty-loss model starts
    /// in its Good state.
    pub fn set_path(&mut self, delay: Duration, extra_delay_by_src: FxHashMap<u32, Duration>, loss: f64,
                    burst_loss: Option<GilbertElliott>) {
        self.delay = delay;
        self.extra_delay_by_src = extra_delay_by_src;
        self.loss = loss;
        self.burst_loss = burst_loss;
    }

    /// Another discipline from `now` (a reload), the queue migrated into it in the old
    /// one's service order (`Accounted::replace_inner`); drops on the way are reported.
    /// Returns the packets moved and those dropped on the way. The old discipline must
    /// hand out everything it holds (the caller refuses a change away from TAQ's proxy
    /// mode, whose held SYNs it would not).
    pub fn replace_queue(&mut self, queue: AnyQdisc, now: Instant, out: &mut Vec<LinkEvent>) -> (usize, usize) {
        self.advance(now, out);
        let (moved, old) = self.queue.replace_inner(queue, now);
        assert_eq!(old.len_pkts(), 0, "the old discipline handed out every packet");
        let dropped = self.queue.last_drops().len();
        out.extend(self.queue.last_drops().iter().map(|&(p, r)| LinkEvent::Dropped(p, r)));
        self.advance(now, out);
        (moved, dropped)
    }

    /// Packets in the pipe (serialized, not yet delivered).
    pub fn in_flight(&self) -> usize {
        self.pipe.len()
    }

    /// A queued packet leaves when the transmitter is free, and no earlier than the latest
    /// arrival: since every arrival first performs what was due before it, a non-empty
    /// queue behind an idle transmitter can only hold packets that arrived since it idled.
    fn queue_clock(&self) -> Instant {
        self.last_arrival
    }

    /// When the head of a non-empty queue starts: as soon as the transmitter is free and it
    /// has arrived, or, traced, at the first delivery opportunity with bytes left from then.
    fn next_tx_at(&self) -> Instant {
        let ready = self.free_at.max(self.queue_clock());
        self.trace.as_ref().map_or(ready, |t| t.next_start(ready))
    }

    fn start_tx(&mut self, t: Instant, out: &mut Vec<LinkEvent>) {
        let Some(pkt) = self.queue.dequeue(t) else {
            // The discipline dropped what it held (AQM on dequeue): report and go idle.
            out.extend(self.queue.last_drops().iter().map(|&(p, r)| LinkEvent::Dropped(p, r)));
            return;
        };
        out.extend(self.queue.last_drops().iter().map(|&(p, r)| LinkEvent::Dropped(p, r)));
        let wire_bytes = self.framing.wire_bytes(pkt.len_bytes());
        let tx_end = match &mut self.trace {
            Some(trace) => trace.send(t, wire_bytes),
            None => {
                if t > self.free_at {
                    // The transmitter was idle: a new busy period starts now.
                    self.busy_start = t;
                    self.busy_bytes = 0;
                }
                self.busy_bytes += wire_bytes;
                let bits_ns = self.busy_bytes as u128 * 8 * 1_000_000_000;
                self.busy_start + Duration(bits_ns.div_ceil(self.rate_bps as u128) as u64)
            }
        };
        self.free_at = tx_end;
        self.tx_pkts += 1;
        self.tx_bytes += pkt.len_bytes();
        out.push(LinkEvent::Departed { pkt, at: t });
        let extra = self.extra_delay_by_src.get(&pkt.flow.src_ip).copied().unwrap_or(Duration::ZERO);
        self.entered += 1;
        self.pipe.push(Reverse(InFlight { due: tx_end + self.delay + extra, order: self.entered, pkt }));
    }

    fn deliver(&mut self, out: &mut Vec<LinkEvent>) {
        let Reverse(f) = self.pipe.pop().expect("deliver with an empty pipe");
        let lost = match &mut self.burst_loss {
            Some(ge) => ge.lose(&mut self.rng),
            None => self.loss > 0.0 && self.rng.chance(self.loss),
        };
        if lost {
            self.queue.record_external_drop(&f.pkt, DropReason::LinkLoss);
            out.push(LinkEvent::Dropped(f.pkt, DropReason::LinkLoss));
        } else {
            out.push(LinkEvent::Delivered { pkt: f.pkt, due: f.due });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallpipe_core::qdisc::DropTailConfig;
    use smallpipe_core::{FlowKey, QdiscConfig};

    fn link(rate_bps: u64, delay_ms: u64, loss: f64, extra: &[(u32, u64)]) -> LinkEmu {
        let q = QdiscConfig::DropTail(DropTailConfig::packets(100_000)).build().unwrap();
        let extra = extra.iter().map(|&(ip, ms)| (ip, Duration::from_millis(ms))).collect();
        LinkEmu::new(rate_bps, Duration::from_millis(delay_ms), loss, extra, Accounted::new(q, Rng::new(1, 0)), Rng::new(7, 2))
    }

    fn pkt(src_ip: u32, seq: u32, len: u16) -> Packet {
        Packet { flow: FlowKey { src_ip, proto: 6, ..Default::default() }, seq, ip_len_bytes: len, ..Default::default() }
    }

    /// Wake at each deadline plus `late(i)` until nothing is left; returns the deliveries.
    fn drain(l: &mut LinkEmu, mut late: impl FnMut(u64) -> Duration) -> Vec<(Packet, Instant)> {
        let (mut out, mut got, mut i) = (Vec::new(), Vec::new(), 0);
        while let Some(t) = l.next_deadline() {
            l.advance(t + late(i), &mut out);
            i += 1;
            got.extend(out.drain(..).filter_map(|e| match e {
                LinkEvent::Delivered { pkt, due } => Some((pkt, due)),
                _ => None,
            }));
        }
        got
    }

    #[test]
    fn back_to_back_departures_are_exact_to_the_byte() {
        // 1000 packets of 1499 bytes at 3 Mbit/s: packet k (1-based) has sent 1499 k bytes when
        // it completes, at ceil(8 * 1499 k / 3e6 s); no per-packet rounding accumulates.
        let mut l = link(3_000_000, 0, 0.0, &[]);
        let mut out = Vec::new();
        for k in 0..1000 {
            l.enqueue(pkt(1, k, 1499), Instant::ZERO, &mut out);
        }
        let got = drain(&mut l, |_| Duration::ZERO);
        assert_eq!(got.len(), 1000);
        for (k, (p, due)) in got.iter().enumerate() {
            let bytes = 1499 * (k as u64 + 1);
            assert_eq!(p.seq, k as u32);
            assert_eq!(due.as_nanos(), (bytes * 8 * 1_000_000_000).div_ceil(3_000_000), "packet {k}");
        }
    }

    #[test]
    fn cumulative_counters_give_exact_window_counts_and_backlog_integral() {
        // One waiting slot; three 125-byte packets at t = 0 on 1 Mbit/s (1 ms each): the
        // first goes into service, the second waits 1 ms, the third finds the slot full.
        let q = QdiscConfig::DropTail(DropTailConfig::packets(1)).build().unwrap();
        let mut l = LinkEmu::new(1_000_000, Duration::ZERO, 0.0, FxHashMap::default(), Accounted::new(q, Rng::new(1, 0)),
                                 Rng::new(7, 2));
        let mut out = Vec::new();
        for k in 0..3 {
            l.enqueue(pkt(1, k, 125), Instant::ZERO, &mut out);
        }
        let half = l.cumulative(Instant(500_000), &mut out);
        let end = l.cumulative(Instant(10_000_000), &mut out);
        assert_eq!((half.arrived_pkts, half.dropped_pkts, half.tx_pkts, half.backlog_pkt_ns), (3, 1, 1, 500_000));
        assert_eq!((end.arrived_pkts, end.dropped_pkts, end.tx_pkts, end.tx_bytes), (3, 1, 2, 250));
        // The waiting packet: 1 packet for 1 ms in all, half of it after 0.5 ms.
        assert_eq!((end.backlog_pkt_ns, end.backlog_pkt_ns - half.backlog_pkt_ns), (1_000_000, 500_000));
        assert_eq!(end.time_ns, 10_000_000);
    }

    #[test]
    fn a_rate_change_applies_after_the_packet_in_service_and_a_new_discipline_takes_the_queue() {
        // Four 1000-byte packets at t = 0 on 1 Mbit/s (8 ms each), no delay. At 4 ms the rate
        // becomes 2 Mbit/s: the first still leaves at 8 ms, the others 4 ms apart.
        let mut l = link(1_000_000, 0, 0.0, &[]);
        let mut out = Vec::new();
        for k in 0..4 {
            l.enqueue(pkt(1, k, 1000), Instant::ZERO, &mut out);
        }
        l.set_rate(2_000_000, Instant(4_000_000), &mut out);
        // A DropTail of one waiting packet takes the three waiting: two are dropped.
        let small = QdiscConfig::DropTail(DropTailConfig::packets(1)).build().unwrap();
        assert_eq!(l.replace_queue(small, Instant(4_000_000), &mut out), (3, 2));
        let dropped: Vec<u32> =
            out.iter().filter_map(|e| if let LinkEvent::Dropped(p, _) = e { Some(p.seq) } else { None }).collect();
        assert_eq!(dropped, vec![2, 3]);
        let got = drain(&mut l, |_| Duration::ZERO);
        let times: Vec<(u32, u64)> = got.iter().map(|(p, t)| (p.seq, t.as_nanos())).collect();
        assert_eq!(times, vec![(0, 8_000_000), (1, 12_000_000)]);
        assert_eq!(l.queue.stats().arrived_pkts, 4, "counters survive the swap");
        l.queue.check().unwrap();
    }

    #[test]
    fn a_packet_on_an_idle_link_takes_serialization_plus_delay() {
        let mut l = link(1_000_000, 20, 0.0, &[]);
        let mut out = Vec::new();
        l.enqueue(pkt(1, 0, 1000), Instant(5_000_000), &mut out);
        // Second packet long after the first left: a new busy period from its own arrival.
        let got = drain(&mut l, |_| Duration::ZERO);
        l.enqueue(pkt(1, 1, 500), Instant(1_000_000_000), &mut out);
        let got2 = drain(&mut l, |_| Duration::ZERO);
        assert_eq!(got[0].1, Instant(5_000_000 + 8_000_000 + 20_000_000));
        assert_eq!(got2[0].1, Instant(1_000_000_000 + 4_000_000 + 20_000_000));
    }

    #[test]
    fn late_wakeups_do_not_move_logical_departures() {
        let script = |late_ns: u64| {
            let mut l = link(10_000_000, 20, 0.0, &[]);
            let mut out = Vec::new();
            let mut dues = Vec::new();
            // 200 arrivals every 0.9 ms (faster than the 1.2 ms service time): a queue builds.
            for k in 0..200u64 {
                let at = Instant(k * 900_000);
                // The box wakes late for whatever was due before this arrival.
                while let Some(t) = l.next_deadline().filter(|&t| t <= at) {
                    l.advance((t + Duration(late_ns)).min(at), &mut out);
                }
                l.enqueue(pkt(1, k as u32, 1500), at, &mut out);
            }
            dues.extend(drain(&mut l, |i| Duration(late_ns * (i % 3))).into_iter().map(|(_, d)| d));
            dues.extend(out.iter().filter_map(|e| match e {
                LinkEvent::Delivered { due, .. } => Some(*due),
                _ => None,
            }));
            dues.sort();
            dues
        };
        let on_time = script(0);
        assert_eq!(on_time.len(), 200);
        // 3 ms late at every wake-up, still the same logical times, to the nanosecond.
        assert_eq!(script(3_000_000), on_time);
        // And the rate is the set one: 200 back-to-back packets after the first arrival.
        let busy_ns = on_time[199].as_nanos() - 20_000_000;
        assert_eq!(busy_ns, (200 * 1500 * 8 * 1_000_000_000u64).div_ceil(10_000_000));
    }

    #[test]
    fn loss_fraction_is_within_binomial_bounds() {
        let (n, p) = (20_000u64, 0.1);
        let mut l = link(100_000_000_000, 1, p, &[]);
        let mut out = Vec::new();
        for k in 0..n {
            l.enqueue(pkt(1, k as u32, 100), Instant(k * 1_000), &mut out);
        }
        let delivered = drain(&mut l, |_| Duration::ZERO).len() as u64 + out.iter().filter(|e| matches!(e, LinkEvent::Delivered { .. })).count() as u64;
        let lost = n - delivered;
        // Binomial(n, p): mean 2000, sd sqrt(n p (1-p)) = 42.4; 5 sd either side.
        let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
        assert!((lost as f64 - mean).abs() < 5.0 * sd, "lost {lost}, expected {mean} ± {}", 5.0 * sd);
        assert_eq!(l.queue.stats().dropped(DropReason::LinkLoss), lost);
        l.queue.check().unwrap();
    }

    /// A saturated traced direction sends the trace's capacity: 0.5 Mbit/s (every 24 ms)
    /// for 1 s, then 2 Mbit/s (every 6 ms) for 1 s. 1500-byte packets, one per opportunity:
    /// over 10 periods (20 s) exactly the trace's 10 x 208 opportunities, each packet
    /// delivered at its opportunity plus the delay, whatever the box's wake-ups.
    #[test]
    fn a_saturated_trace_direction_delivers_the_trace_capacity() {
        use smallpipe_core::link::{DeliveryTrace, TraceServer};
        let lines: Vec<u64> = (1..=1000 / 24).map(|k| k * 24).chain((1..=1000 / 6).map(|k| 1000 + k * 6)).chain([2000]).collect();
        let text: String = lines.iter().map(|ms| format!("{ms}\n")).collect();
        let trace = std::sync::Arc::new(DeliveryTrace::parse(&text).unwrap());
        let capacity_bps = lines.len() as f64 * 12_000.0 / 2.0;
        assert_eq!(trace.mean_rate_bps(), capacity_bps);
        let mut l = link(1_000_000, 5, 0.0, &[]);
        l.shape(Some(TraceServer::new(trace)), Framing::default(), None);
        let mut out = Vec::new();
        for k in 0..6000 {
            l.enqueue(pkt(1, k, 1500), Instant::ZERO, &mut out);
        }
        let got = drain(&mut l, |i| Duration(i % 7 * 300_000));
        let dues: Vec<u64> = got.iter().map(|(_, d)| d.as_nanos()).collect();
        // Opportunity j of loop n is at 2 s n + lines[j] ms; 5 ms of delay after it.
        let want: Vec<u64> = (0..6000).map(|k| ((k / lines.len()) as u64 * 2000 + lines[k % lines.len()] + 5) * 1_000_000).collect();
        assert_eq!(dues, want);
        let in_20s = dues.iter().filter(|&&d| d <= 20_005_000_000).count() as f64;
        assert!((in_20s * 12_000.0 / 20.0 / capacity_bps - 1.0).abs() < 0.01);
    }

    /// A packet reaching an idle traced direction waits for the next opportunity; a small
    /// one behind a small one shares an opportunity's 1500 bytes.
    #[test]
    fn an_idle_trace_direction_waits_for_the_next_opportunity() {
        use smallpipe_core::link::{DeliveryTrace, TraceServer};
        let trace = std::sync::Arc::new(DeliveryTrace::parse("10\n20\n30\n").unwrap());
        let mut l = link(1_000_000, 0, 0.0, &[]);
        l.shape(Some(TraceServer::new(trace)), Framing::default(), None);
        let mut out = Vec::new();
        l.enqueue(pkt(1, 0, 600), Instant(12_000_000), &mut out);
        l.enqueue(pkt(1, 1, 600), Instant(13_000_000), &mut out);
        l.enqueue(pkt(1, 2, 600), Instant(13_000_000), &mut out);
        let got = drain(&mut l, |_| Duration::ZERO);
        // 600 + 600 at 20 ms (300 bytes left), the third's 300 + 300 at 20 and 30 ms.
        assert_eq!(got.iter().map(|(p, d)| (p.seq, d.as_nanos() / 1_000_000)).collect::<Vec<_>>(), vec![(0, 20), (1, 20), (2, 30)]);
    }

    /// ATM framing: back-to-back 1500-byte packets take 32 cells (1696 bytes) each, so
    /// packet k (1-based) ends at ceil(8 x 1696 k / rate); the delivered IP rate is 1500/1696
    /// of the link's.
    #[test]
    fn atm_framing_spends_the_rate_on_cells() {
        use smallpipe_core::link::FramingKind;
        let mut l = link(1_000_000, 0, 0.0, &[]);
        l.shape(None, Framing::new(0, 0, FramingKind::Atm).unwrap(), None);
        let mut out = Vec::new();
        for k in 0..500 {
            l.enqueue(pkt(1, k, 1500), Instant::ZERO, &mut out);
        }
        let got = drain(&mut l, |_| Duration::ZERO);
        for (k, (_, due)) in got.iter().enumerate() {
            // 8 x 1696 bits at 1 Mbit/s: 13 568 µs per packet, whole nanoseconds.
            assert_eq!(due.as_nanos(), 1696 * 8 * (k as u64 + 1) * 1000, "packet {k}");
        }
        let ip_bps = 500.0 * 1500.0 * 8.0 / (got[499].1.as_nanos() as f64 / 1e9);
        assert!((ip_bps / (1e6 * 1500.0 / 1696.0) - 1.0).abs() < 1e-9, "{ip_bps}");
    }

    /// Gilbert–Elliott on a direction: h = 0, k = 1, p = 0.01, r = 0.25 over 200 000
    /// packets: about 1 900 bursts of mean 1 / r = 4 (variance 12; standard error 0.08,
    /// checked within 0.4) and a lost share of p / (p + r) (checked within 10%, over 3 sd).
    #[test]
    fn bursty_loss_matches_the_gilbert_closed_forms() {
        use smallpipe_core::link::{GilbertElliottConfig, LossModelConfig};
        let (p, r) = (0.01, 0.25);
        let mut l = link(100_000_000_000, 1, 0.0, &[]);
        l.shape(None, Framing::default(), Some(LossModelConfig::GilbertElliott(GilbertElliottConfig { p, r, h: 0.0, k: 1.0 }).build().unwrap()));
        let n = 200_000u32;
        let mut out = Vec::new();
        for k in 0..n {
            l.enqueue(pkt(1, k, 100), Instant(u64::from(k) * 1_000), &mut out);
        }
        l.advance(Instant(u64::from(n) * 1_000 + 10_000_000), &mut out);
        let lost: std::collections::BTreeSet<u32> =
            out.iter().filter_map(|e| if let LinkEvent::Dropped(p, DropReason::LinkLoss) = e { Some(p.seq) } else { None }).collect();
        let bursts = lost.iter().filter(|&&s| s == 0 || !lost.contains(&(s - 1))).count() as f64;
        let mean_burst = lost.len() as f64 / bursts;
        assert!((mean_burst - 1.0 / r).abs() < 0.4, "mean burst {mean_burst}");
        let share = lost.len() as f64 / f64::from(n);
        assert!((share / (p / (p + r)) - 1.0).abs() < 0.10, "lost {share}");
        assert_eq!(l.queue.stats().dropped(DropReason::LinkLoss), lost.len() as u64);
    }

    #[test]
    fn per_source_extra_delay_applies_to_that_source_only() {
        let mut l = link(8_000_000, 10, 0.0, &[(7, 40)]);
        let mut out = Vec::new();
        l.enqueue(pkt(7, 0, 1000), Instant::ZERO, &mut out); // 1 ms to send, then 10 + 40 ms
        l.enqueue(pkt(9, 1, 1000), Instant::ZERO, &mut out); // done at 2 ms, then 10 ms
        let got = drain(&mut l, |_| Duration::ZERO);
        assert_eq!(got.iter().map(|(p, d)| (p.flow.src_ip, d.as_nanos())).collect::<Vec<_>>(),
                   vec![(9, 12_000_000), (7, 51_000_000)]);
    }
}
