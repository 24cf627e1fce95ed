//! Per-flow delay and loss, in the manner of ns-3's FlowMonitor (Carneiro et al., "FlowMonitor
//! — a network monitoring framework for the Network Simulator 3", 2009): per traced flow,
//! the queueing delay its data packets saw at the bottleneck (mean, 99th percentile), their
//! jitter, FlowMonitor's mean |Δ delay| of consecutive packets (here of that queueing
//! delay: the rest of a packet's one-way delay is fixed in the dumbbell), the packets lost
//! there (queue drops and wire loss over packets offered), and RTT samples timed from the
//! outside as tcptrace does: one segment in flight at a time, from its first send to the
//! first ACK that covers it, none from a segment sent twice (Karn). Memory is fixed per
//! flow: each distribution is a histogram of `BUCKETS` log-spaced buckets, not its samples.

use smallpipe_core::{Instant, Packet};

/// Buckets per doubling: a quantile is read to within 2^(1/8) − 1 ≈ 9%.
const PER_OCTAVE: u32 = 8;
/// Octaves above 1 µs: the top bucket ends near 2^28 µs (4.5 min); longer values go there.
const OCTAVES: u32 = 28;
/// Bucket 0 holds values under 1 µs (a packet sent at once has zero queueing delay).
pub const BUCKETS: usize = (PER_OCTAVE * OCTAVES + 1) as usize;

/// A histogram of nanosecond values in log-spaced buckets, fixed size.
#[derive(Debug, Clone)]
pub struct LogHistogram {
    counts: Box<[u32; BUCKETS]>,
    n: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram { counts: Box::new([0; BUCKETS]), n: 0, sum_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }
}

impl LogHistogram {
    fn bucket(ns: u64) -> usize {
        if ns < 1_000 {
            return 0;
        }
        let us = ns as f64 / 1e3;
        let b = 1 + (us.log2() * PER_OCTAVE as f64).floor() as usize;
        b.min(BUCKETS - 1)
    }

    /// The upper end of bucket `b`, nanoseconds.
    pub fn upper_ns(b: usize) -> u64 {
        if b == 0 { 1_000 } else { (1e3 * 2f64.powf(b as f64 / PER_OCTAVE as f64)).round() as u64 }
    }

    pub fn record(&mut self, ns: u64) {
        let c = &mut self.counts[Self::bucket(ns)];
        *c = c.saturating_add(1);
        self.n += 1;
        self.sum_ns += ns as u128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn mean_ns(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_ns as f64 / self.n as f64)
    }

    pub fn min_ns(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min_ns)
    }

    /// The `q` quantile: the upper end of the bucket holding it, capped at the largest value.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                return Some(Self::upper_ns(b).min(self.max_ns).max(self.min_ns));
            }
        }
        Some(self.max_ns)
    }

    /// Non-empty buckets: (upper end in ns, count).
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| (Self::upper_ns(b), c as u64))
    }
}

/// One traced flow's running statistics.
#[derive(Debug, Clone, Default)]
struct FlowState {
    queue_delay: LogHistogram,
    rtt: LogHistogram,
    last_delay_ns: Option<u64>,
    jitter_sum_ns: u128,
    jitter_n: u64,
    offered_pkts: u64,
    lost_pkts: u64,
    /// The highest sequence end sent (wire numbers), and the segment being timed.
    snd_max: Option<u32>,
    timed: Option<(u32, Instant)>,
}

impl FlowState {
    fn record_delay(&mut self, d: u64) {
        self.queue_delay.record(d);
        if let Some(last) = self.last_delay_ns {
            self.jitter_sum_ns += last.abs_diff(d) as u128;
            self.jitter_n += 1;
        }
        self.last_delay_ns = Some(d);
    }
}

/// A traced flow's statistics at the end of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowDelayRow {
    pub flow_id: u32,
    pub rtt_samples: u64,
    pub rtt_min_ns: Option<u64>,
    pub rtt_mean_ns: Option<f64>,
    pub rtt_p99_ns: Option<u64>,
    /// Data packets (every packet of the data direction) that left the bottleneck queue.
    pub queue_delay_pkts: u64,
    pub queue_delay_mean_ns: Option<f64>,
    pub queue_delay_p99_ns: Option<u64>,
    /// FlowMonitor's jitter: mean |Δ queueing delay| of consecutive departures.
    pub jitter_mean_ns: Option<f64>,
    /// Packets of the data direction offered to the bottleneck, and lost there.
    pub offered_pkts: u64,
    pub lost_pkts: u64,
}

/// One non-empty histogram bucket of a traced flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowDelayBucket {
    pub flow_id: u32,
    /// `"queue_delay"` or `"rtt"`.
    pub metric: &'static str,
    pub upper_ns: u64,
    pub count: u64,
}

/// The statistics of the traced connections, by connection index.
#[derive(Debug, Default)]
pub(crate) struct FlowDelays {
    /// Index into `flows` of connection `c`, or `u32::MAX` (untraced).
    slot: Vec<u32>,
    flows: Vec<(u32, FlowState)>,
    all: bool,
}

/// `a` is at or after `b` in sequence space (RFC 793's modular comparison).
fn seq_ge(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

impl FlowDelays {
    pub fn new(flows: &[u32], all: bool) -> Self {
        let mut d = FlowDelays { all, ..Default::default() };
        for &c in flows {
            d.state(c);
        }
        d
    }

    /// Connection `c`'s state, made if new.
    fn state(&mut self, c: u32) -> &mut FlowState {
        let i = c as usize;
        if i >= self.slot.len() {
            self.slot.resize(i + 1, u32::MAX);
        }
        if self.slot[i] == u32::MAX {
            self.slot[i] = self.flows.len() as u32;
            self.flows.push((c, FlowState::default()));
        }
        &mut self.flows[self.slot[i] as usize].1
    }

    /// The state of the connection whose data sender sent `pkt` (even handles: the simulator
    /// puts the sending endpoint there), if that connection is traced.
    #[inline]
    fn data_flow(&mut self, pkt: &Packet) -> Option<&mut FlowState> {
        if pkt.runtime_handle % 2 != 0 {
            return None;
        }
        let c = pkt.runtime_handle / 2;
        if self.all {
            return Some(self.state(c));
        }
        let s = *self.slot.get(c as usize)?;
        (s != u32::MAX).then(|| &mut self.flows[s as usize].1)
    }

    #[inline]
    pub fn on_offered(&mut self, pkt: &Packet) {
        if let Some(f) = self.data_flow(pkt) {
            f.offered_pkts += 1;
        }
    }

    #[inline]
    pub fn on_lost(&mut self, pkt: &Packet) {
        if let Some(f) = self.data_flow(pkt) {
            f.lost_pkts += 1;
        }
    }

    /// `pkt` went through the idle bottleneck without waiting: a queueing delay of zero.
    pub fn on_passed(&mut self, pkt: &Packet) {
        self.on_dequeued(pkt, pkt.arrival);
    }

    /// `pkt` left the bottleneck queue at `now`: its queueing delay.
    #[inline]
    pub fn on_dequeued(&mut self, pkt: &Packet, now: Instant) {
        if let Some(f) = self.data_flow(pkt) {
            f.record_delay(now.saturating_since(pkt.arrival).as_nanos());
        }
    }

    /// Connection `c`'s data sender emitted `pkts` at `now`: times one new segment if none
    /// is timed, and forgets the timed one if it is sent again.
    #[inline]
    pub fn on_sent(&mut self, c: u32, pkts: &[Packet], now: Instant) {
        if self.all || self.slot.get(c as usize).is_some_and(|&s| s != u32::MAX) {
            self.time_sends(c, pkts, now);
        }
    }

    fn time_sends(&mut self, c: u32, pkts: &[Packet], now: Instant) {
        let f = self.state(c);
        for pkt in pkts.iter().filter(|p| p.payload_len > 0) {
            let end = pkt.seq.wrapping_add(pkt.seq_len());
            let resent = f.snd_max.is_some_and(|m| !seq_ge(pkt.seq, m));
            if resent {
                if f.timed.is_some_and(|(t, _)| !seq_ge(pkt.seq, t)) {
                    f.timed = None; // Karn: its ACK may be for either send
                }
            } else if f.timed.is_none() {
                f.timed = Some((end, now));
            }
            if f.snd_max.is_none_or(|m| seq_ge(end, m)) {
                f.snd_max = Some(end);
            }
        }
    }

    /// An ACK reached connection `c`'s data sender at `now`.
    #[inline]
    pub fn on_ack(&mut self, c: u32, pkt: &Packet, now: Instant) {
        let Some(&s) = self.slot.get(c as usize).filter(|&&s| s != u32::MAX) else { return };
        let f = &mut self.flows[s as usize].1;
        if let Some((_, at)) = f.timed.filter(|&(end, _)| pkt.flags.ack() && seq_ge(pkt.ack, end)) {
            f.rtt.record(now.saturating_since(at).as_nanos());
            f.timed = None;
        }
    }

    pub fn finish(mut self) -> (Vec<FlowDelayRow>, Vec<FlowDelayBucket>) {
        self.flows.sort_by_key(|(c, _)| *c);
        let mut buckets = Vec::new();
        let rows = self
            .flows
            .iter()
            .map(|(c, f)| {
                for (metric, h) in [("queue_delay", &f.queue_delay), ("rtt", &f.rtt)] {
                    buckets.extend(h.buckets().map(|(upper_ns, count)| FlowDelayBucket { flow_id: *c, metric, upper_ns, count }));
                }
                FlowDelayRow {
                    flow_id: *c,
                    rtt_samples: f.rtt.count(),
                    rtt_min_ns: f.rtt.min_ns(),
                    rtt_mean_ns: f.rtt.mean_ns(),
                    rtt_p99_ns: f.rtt.quantile_ns(0.99),
                    queue_delay_pkts: f.queue_delay.count(),
                    queue_delay_mean_ns: f.queue_delay.mean_ns(),
                    queue_delay_p99_ns: f.queue_delay.quantile_ns(0.99),
                    jitter_mean_ns: (f.jitter_n > 0).then(|| f.jitter_sum_ns as f64 / f.jitter_n as f64),
                    offered_pkts: f.offered_pkts,
                    lost_pkts: f.lost_pkts,
                }
            })
            .collect();
        (rows, buckets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Log buckets: a quantile is the upper end of its bucket, within 9% above the value.
    #[test]
    fn quantiles_are_within_one_bucket() {
        let mut h = LogHistogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1_000_000); // 1 ms .. 1 s
        }
        let p99 = h.quantile_ns(0.99).unwrap() as f64;
        assert!((990e6..=990e6 * 1.091).contains(&p99), "{p99}");
        assert_eq!(h.min_ns(), Some(1_000_000));
        assert!((h.mean_ns().unwrap() - 500.5e6).abs() < 1.0);
        assert_eq!(h.quantile_ns(1.0), Some(1_000_000_000));
        assert_eq!(h.buckets().map(|(_, c)| c).sum::<u64>(), 1000);
        let mut zero = LogHistogram::default();
        zero.record(0);
        assert_eq!(zero.quantile_ns(0.99), Some(0));
    }
}

#[cfg(test)]
mod simulated {
    use crate::{simulate, Scenario};
    use smallpipe_core::Duration;

    /// Serialization time of `bytes` at `bps`, as links round it (up to the nanosecond).
    fn ser(bytes: u64, bps: u64) -> u64 {
        Duration::serialization(bytes, bps).as_nanos()
    }

    /// One flow alone: its first timed segment finds every queue empty, so the smallest RTT
    /// sample is the base RTT plus the serialization of the data packet (1500 bytes) and of
    /// its ACK (40 bytes, no options) on the three hops each way: sender access link,
    /// bottleneck, receiver access link. No processing delay (`overhead_max_ms = 0`), no
    /// delayed ACKs. A window in flight at most the path's capacity plus the first queued
    /// burst, and no loss.
    #[test]
    fn a_lone_flow_min_rtt_is_propagation_plus_serialization() {
        let sc = Scenario::from_json(
            r#"{"duration_s":5,"link":{"rate_bps":2000000,"access_rate_bps":10000000},
                "tcp":{"delayed_ack":false,"timestamps":false,"overhead_max_ms":0},
                "flows":[{"app":"bulk","rtt_ms":80,"size_bytes":200000}],
                "trace":{"flows":[0],"flow_delays":true}}"#,
        )
        .unwrap();
        let r = simulate(&sc).unwrap();
        let d = &r.traces.flow_delays[0];
        let (c, a) = (2_000_000, 10_000_000);
        let expected = 80_000_000 + 2 * ser(1500, a) + ser(1500, c) + 2 * ser(40, a) + ser(40, c);
        assert!(d.rtt_samples > 5, "{d:?}");
        assert_eq!(d.rtt_min_ns, Some(expected), "{d:?}");
        assert!(d.rtt_mean_ns.unwrap() >= expected as f64 && d.rtt_p99_ns.unwrap() >= expected);
        assert_eq!(d.lost_pkts, 0);
        // The first segment of the flight left the bottleneck at once: the smallest delay is 0.
        assert!(d.queue_delay_pkts > 100 && d.queue_delay_mean_ns.unwrap() > 0.0);
    }

    /// Bulk Reno through a DropTail of B = 20 packets at C = 1 Mbit/s fills the buffer
    /// before each loss: the packets that arrive to a full buffer wait B packet times, so
    /// the 99th percentile of the flows' queueing delay is B·1500·8/C = 240 ms (to the
    /// histogram's 9% and a packet's time below: the one in service may be part sent).
    /// The queue also holds the flows' RTT samples up: their p99 exceeds base RTT + 0.2 s.
    #[test]
    fn a_full_droptail_delays_by_its_size_over_its_rate() {
        let sc = Scenario::from_json(
            r#"{"duration_s":60,"link":{"rate_bps":1000000,"queue":{"kind":"droptail","limit_pkts":20}},
                "flows":[{"app":"bulk","count":2,"rtt_ms":50}],
                "trace":{"all_flows":true,"flow_delays":true}}"#,
        )
        .unwrap();
        let r = simulate(&sc).unwrap();
        let full_ns = 20.0 * 1500.0 * 8.0 / 1e6 * 1e9;
        assert!(r.links[0].dropped_pkts > 0);
        for d in &r.traces.flow_delays {
            let p99 = d.queue_delay_p99_ns.unwrap() as f64;
            assert!((full_ns * 0.93..=full_ns * 1.1).contains(&p99), "{p99} vs {full_ns}: {d:?}");
            assert!(d.rtt_p99_ns.unwrap() as f64 > 50e6 + 0.2e9, "{d:?}");
            assert!(d.jitter_mean_ns.unwrap() > 0.0 && d.lost_pkts > 0);
            assert!((d.lost_pkts as f64 / d.offered_pkts as f64) < 0.1);
        }
    }

    /// With every flow traced, the flows' statistics add up to the bottleneck's: their
    /// losses are its drops (queue and wire), their departures its departures, and their
    /// delays, weighted by packets, its mean queueing delay.
    #[test]
    fn traced_flows_add_up_to_the_bottleneck() {
        let sc = Scenario::from_json(
            r#"{"duration_s":20,"link":{"rate_bps":1000000,"loss":0.01,"queue":{"kind":"red","limit_pkts":30}},
                "flows":[{"app":"bulk","count":4,"rtt_ms":[40,120]},{"app":"web","count":2,"size_bytes":20000}],
                "trace":{"all_flows":true,"flow_delays":true}}"#,
        )
        .unwrap();
        let r = simulate(&sc).unwrap();
        let (d, fwd) = (&r.traces.flow_delays, &r.links[0]);
        assert!(d.len() > 6, "web users open several connections");
        assert_eq!(d.iter().map(|x| x.lost_pkts).sum::<u64>(), fwd.dropped_pkts);
        let departed: u64 = d.iter().map(|x| x.queue_delay_pkts).sum();
        assert!(departed - fwd.tx_pkts <= 1, "{departed} {}", fwd.tx_pkts);
        let weighted: f64 = d.iter().map(|x| x.queue_delay_mean_ns.unwrap_or(0.0) * x.queue_delay_pkts as f64).sum();
        let mean_ms = weighted / departed as f64 / 1e6;
        assert!((mean_ms - fwd.mean_queue_delay_ms).abs() < 1e-9 * mean_ms, "{mean_ms} {}", fwd.mean_queue_delay_ms);
        let buckets: u64 = r.traces.flow_delay_buckets.iter().filter(|b| b.metric == "queue_delay").map(|b| b.count).sum();
        assert_eq!(buckets, departed);
    }
}
