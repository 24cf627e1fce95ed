//! Opt-in traces (the scenario's `[trace]` table): per-flow sender time series, per-link
//! queue counters per interval (`tc -s` style), an event trace of the bottleneck queues and
//! a pcap of the bottleneck, and pcaps of chosen end hosts. Off, the simulator holds `None` and each hook is one branch;
//! on, every table stops at `max_rows` rows (and the pcap at `max_pcap_bytes`) and says so
//! in `TraceOutput::truncated`. Recording only reads simulator state, so a traced run
//! delivers exactly what the untraced one does.

pub use crate::trace_config::{PcapPoint, TraceConfig};
use crate::flow_delays::FlowDelays;
use crate::pcap::PcapBuffer;
use crate::tcp::Endpoint;
use crate::link::Link;
use rustc_hash::FxHashMap;
use smallpipe_core::{DropReason, Duration, FlowKey, Instant, Packet};

/// A traced sender at one sample time.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSampleRow {
    pub time_ns: u64,
    pub flow_id: u32,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    /// `None` before the first RTT sample.
    pub srtt_ns: Option<u64>,
    pub rto_ns: u64,
    /// RFC 5681 FlightSize: sent and not yet cumulatively acknowledged.
    pub flight_bytes: u64,
    /// Application bytes the peer has acknowledged so far (goodput is its rate of change).
    pub bytes_acked: u64,
    /// With `congestion = "bbr"`: its bandwidth estimate and pacing rate, payload bits per
    /// second (segments per second × MSS × 8, as Linux's `bbr_get_info`); `None` otherwise.
    pub bbr_bw_bps: Option<u64>,
    pub pacing_rate_bps: Option<u64>,
}

/// A bottleneck queue over the interval ending at `time_ns` (counters) and at that time
/// (backlog). Per interval, enqueued − dequeued − dropped is the backlog's change.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSampleRow {
    pub time_ns: u64,
    pub link: u8,
    pub enqueued_pkts: u64,
    pub enqueued_bytes: u64,
    pub dequeued_pkts: u64,
    pub dequeued_bytes: u64,
    pub dropped_pkts: [u64; DropReason::COUNT],
    pub backlog_pkts: u64,
    pub backlog_bytes: u64,
    /// Packets ECN-marked in the interval (every mark reason).
    pub marked_pkts: u64,
    /// Sum of the queueing delays of the packets dequeued in the interval, ns (over
    /// `dequeued_pkts`: their mean).
    pub queue_delay_ns_sum: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueEvent {
    Enqueue,
    Dequeue,
    Drop(DropReason),
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub time_ns: u64,
    pub link: u8,
    pub event: QueueEvent,
    /// The connection the packet belongs to (either direction).
    pub flow_id: Option<u32>,
    /// Wire sequence and acknowledgment numbers, flags and IP length.
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub len_bytes: u16,
}

/// What the recorder hands to `Results`.
#[derive(Debug, Clone, Default)]
pub struct TraceOutput {
    /// Names of the traced links, indexed by the rows' `link`.
    pub link_names: Vec<String>,
    pub flow_series: Vec<FlowSampleRow>,
    pub link_series: Vec<LinkSampleRow>,
    pub events: Vec<EventRow>,
    pub pcap: Option<Vec<u8>>,
    /// With `pcap_hosts`: each captured host's name and pcap, in `pcap_hosts`' order.
    pub host_pcaps: Vec<(String, Vec<u8>)>,
    /// With `flow_delays`: one row per traced flow, and their histograms' non-empty buckets.
    pub flow_delays: Vec<crate::flow_delays::FlowDelayRow>,
    pub flow_delay_buckets: Vec<crate::flow_delays::FlowDelayBucket>,
    /// Tables (`flow_series`, `link_series`, `events`, `pcap`, and a captured host's name)
    /// that hit their cap.
    pub truncated: Vec<String>,
}

/// A table that stops growing at its cap and remembers that it did.
struct Capped<T> {
    rows: Vec<T>,
    max: usize,
    truncated: bool,
}

impl<T> Capped<T> {
    fn new(max: u64) -> Self {
        Capped { rows: Vec::new(), max: max as usize, truncated: false }
    }

    fn push(&mut self, row: T) {
        if self.rows.len() < self.max {
            self.rows.push(row);
        } else {
            self.truncated = true;
        }
    }
}

pub(crate) struct Recorder {
    config: TraceConfig,
    /// Links 0..n_links are traced: the bottleneck directions (and the diamond's path 2).
    n_links: u32,
    link_names: Vec<String>,
    last_sample_ns: Option<u64>,
    /// Per traced link: the queue's counters at the last sample.
    last_counts: Vec<Counts>,
    flow_series: Capped<FlowSampleRow>,
    link_series: Capped<LinkSampleRow>,
    events: Capped<EventRow>,
    pcap: Option<PcapBuffer>,
    /// `pcap_hosts`, once the hosts exist (`capture_hosts`).
    hosts: Vec<HostCapture>,
    delays: Option<FlowDelays>,
    /// The connections sampled by name (`TraceConfig::named_flows`).
    named: Vec<u32>,
    /// Bit `l`: link `l` gets the per-packet hooks (`hooks`).
    hooked: u32,
}

/// An end host captured as on its interface (`pcap_hosts`): the packets it hands to its
/// access link (`egress`), when it hands them over, and those delivered to it (`node`),
/// when they arrive.
struct HostCapture {
    name: String,
    node: u32,
    egress: u32,
    pcap: PcapBuffer,
}

#[derive(Clone, Copy, Default)]
struct Counts {
    arrived: (u64, u64),
    departed: (u64, u64),
    dropped: [u64; DropReason::COUNT],
    marked: u64,
    sojourn_ns: u128,
}

impl Counts {
    fn of(link: &Link) -> Self {
        let s = link.queue.stats();
        Counts {
            arrived: (s.arrived_pkts, s.arrived_bytes),
            departed: (s.departed_pkts, s.departed_bytes),
            dropped: s.dropped_pkts,
            marked: s.marked.total_pkts(),
            sojourn_ns: link.queue.sojourn_ns_sum(),
        }
    }
}

impl Recorder {
    pub fn new(config: &TraceConfig, links: &[Link]) -> Self {
        Recorder {
            config: config.clone(),
            n_links: links.len() as u32,
            link_names: links.iter().map(|l| l.name.clone()).collect(),
            last_sample_ns: None,
            last_counts: vec![Counts::default(); links.len()],
            flow_series: Capped::new(config.max_rows),
            link_series: Capped::new(config.max_rows),
            events: Capped::new(config.max_rows),
            pcap: config.pcap.map(|_| PcapBuffer::new(config.pcap_snaplen, config.max_pcap_bytes)),
            hosts: Vec::new(),
            delays: config.flow_delays.then(|| FlowDelays::new(&config.named_flows(), config.all_flows)),
            named: config.named_flows(),
            hooked: (0..links.len().min(32) as u32)
                .filter(|&l| config.events || config.pcap.is_some() || (config.flow_delays && l != 1))
                .fold(0, |mask, l| mask | 1 << l),
        }
    }

    /// Captures the end hosts `(name, node, egress link)` named by `pcap_hosts`.
    pub fn capture_hosts(&mut self, hosts: impl IntoIterator<Item = (String, u32, u32)>) {
        let (snaplen, max_bytes) = (self.config.pcap_snaplen, self.config.max_pcap_bytes);
        self.hosts = hosts.into_iter()
            .map(|(name, node, egress)| HostCapture { name, node, egress, pcap: PcapBuffer::new(snaplen, max_bytes) })
            .collect();
    }

    /// A host handed `pkt` to its access link `link`.
    #[inline]
    pub fn on_host_send(&mut self, link: u32, pkt: &Packet, now: Instant) {
        for h in self.hosts.iter_mut().filter(|h| h.egress == link) {
            h.pcap.record(pkt, now.as_nanos());
        }
    }

    /// `pkt` reached host `node` (any node: only captured hosts match).
    #[inline]
    pub fn on_host_receive(&mut self, node: u32, pkt: &Packet, now: Instant) {
        for h in self.hosts.iter_mut().filter(|h| h.node == node) {
            h.pcap.record(pkt, now.as_nanos());
        }
    }

    pub fn traces(&self, link: u32) -> bool {
        link < self.n_links
    }

    /// Whether the per-packet hooks (`on_enqueue`, `on_dequeue`, `on_departure`,
    /// `on_link_loss`, `on_pass_through`) want `link`'s packets: every traced link's for the
    /// event trace and the pcap, the data directions' (not `bottleneck_reverse`, link 1) for
    /// `flow_delays`; none for the time series alone, which read the queues' counters.
    #[inline]
    pub fn hooks(&self, link: u32) -> bool {
        self.hooked.checked_shr(link).is_some_and(|m| m & 1 != 0) // links from 32 on: never
    }

    /// Whether every packet offered to traced `link` must enter its queue (the event trace
    /// and an arrivals pcap see each enqueue); otherwise an idle link may pass a packet
    /// straight through (`Link::pass_through`) and the recorder hears of it by `on_pass_through`.
    #[inline]
    pub fn sees_every_enqueue(&self, link: u32) -> bool {
        self.traces(link) && (self.config.events || self.config.pcap == Some(PcapPoint::Arrivals))
    }

    /// An idle traced link sent `pkt` at once, without queueing it.
    #[inline]
    pub fn on_pass_through(&mut self, pkt: &Packet) {
        if let Some(d) = &mut self.delays {
            d.on_offered(pkt);
            d.on_passed(pkt);
        }
    }

    /// The first sample time, if any time series is on.
    pub fn first_sample(&self) -> Option<Instant> {
        self.config.samples().then(|| Instant::ZERO + Duration::from_secs_f64(self.config.interval_s))
    }

    /// The sample after the one at `now`.
    pub fn next_sample(&self, now: Instant) -> Instant {
        now + Duration::from_secs_f64(self.config.interval_s)
    }

    /// Records a queue event if the event trace is on (checked here, inlined: the hooks run
    /// for every bottleneck packet).
    #[inline(always)]
    fn event(&mut self, link: u32, pkt: &Packet, event: QueueEvent, now: Instant, demux: &FxHashMap<FlowKey, u32>) {
        if self.config.events {
            self.record_event(link, pkt, event, now, demux);
        }
    }

    fn record_event(&mut self, link: u32, pkt: &Packet, event: QueueEvent, now: Instant, demux: &FxHashMap<FlowKey, u32>) {
        {
            self.events.push(EventRow {
                time_ns: now.as_nanos(),
                link: link as u8,
                event,
                flow_id: demux.get(&pkt.flow).map(|e| e / 2),
                seq: pkt.seq,
                ack: pkt.ack,
                flags: pkt.flags.0,
                len_bytes: pkt.ip_len_bytes,
            });
        }
    }

    #[inline]
    fn drops(&mut self, link: u32, drops: &[(Packet, DropReason)], now: Instant, demux: &FxHashMap<FlowKey, u32>) {
        if !self.config.events {
            return;
        }
        for (pkt, reason) in drops {
            self.event(link, pkt, QueueEvent::Drop(*reason), now, demux);
        }
    }

    /// A packet was offered to a traced queue, which dropped `drops` doing so.
    #[inline]
    pub fn on_enqueue(&mut self, link: u32, pkt: &Packet, drops: &[(Packet, DropReason)], now: Instant,
                      demux: &FxHashMap<FlowKey, u32>) {
        self.event(link, pkt, QueueEvent::Enqueue, now, demux);
        self.drops(link, drops, now, demux);
        if let Some(d) = &mut self.delays {
            d.on_offered(pkt);
            drops.iter().for_each(|(p, _)| d.on_lost(p));
        }
        if self.config.pcap == Some(PcapPoint::Arrivals) {
            self.record_pcap(pkt, now);
        }
    }

    /// A traced queue was asked for a packet: it gave `sent` and dropped `drops`.
    #[inline]
    pub fn on_dequeue(&mut self, link: u32, sent: Option<&Packet>, drops: &[(Packet, DropReason)], now: Instant,
                      demux: &FxHashMap<FlowKey, u32>) {
        self.drops(link, drops, now, demux);
        if let Some(pkt) = sent {
            self.event(link, pkt, QueueEvent::Dequeue, now, demux);
        }
        if let Some(d) = &mut self.delays {
            drops.iter().for_each(|(p, _)| d.on_lost(p));
            if let Some(pkt) = sent {
                d.on_dequeued(pkt, now);
            }
        }
    }

    /// A traced link finished serializing `pkt`.
    #[inline]
    pub fn on_departure(&mut self, pkt: &Packet, now: Instant) {
        if self.config.pcap == Some(PcapPoint::Departures) {
            self.record_pcap(pkt, now);
        }
    }

    /// A traced link lost `pkt` on the wire.
    #[inline]
    pub fn on_link_loss(&mut self, link: u32, pkt: &Packet, now: Instant, demux: &FxHashMap<FlowKey, u32>) {
        self.event(link, pkt, QueueEvent::Drop(DropReason::LinkLoss), now, demux);
        if let Some(d) = &mut self.delays {
            d.on_lost(pkt);
        }
    }

    /// Connection `c`'s data sender emitted `pkts` (RTT samples are timed from here).
    #[inline]
    pub fn on_sender_emit(&mut self, c: u32, pkts: &[Packet], now: Instant) {
        if let Some(d) = &mut self.delays {
            d.on_sent(c, pkts, now);
        }
    }

    /// A packet reached connection `c`'s data sender.
    #[inline]
    pub fn on_sender_receive(&mut self, c: u32, pkt: &Packet, now: Instant) {
        if let Some(d) = &mut self.delays {
            d.on_ack(c, pkt, now);
        }
    }

    fn record_pcap(&mut self, pkt: &Packet, now: Instant) {
        if let Some(p) = &mut self.pcap {
            p.record(pkt, now.as_nanos());
        }
    }

    /// One sample of every time series at `now`; `open(c)` says whether connection `c`
    /// is still open (only open senders are sampled). Once per time.
    pub fn sample(&mut self, now: Instant, links: &[Link], endpoints: &[Endpoint], open: impl Fn(usize) -> bool) {
        let t = now.as_nanos();
        if self.last_sample_ns == Some(t) {
            return;
        }
        self.last_sample_ns = Some(t);
        if self.config.links {
            for (i, l) in links[..self.n_links as usize].iter().enumerate() {
                let (now_c, last) = (Counts::of(l), self.last_counts[i]);
                self.last_counts[i] = now_c;
                let mut dropped = now_c.dropped;
                for (d, before) in dropped.iter_mut().zip(last.dropped) {
                    *d -= before;
                }
                self.link_series.push(LinkSampleRow {
                    time_ns: t,
                    link: i as u8,
                    enqueued_pkts: now_c.arrived.0 - last.arrived.0,
                    enqueued_bytes: now_c.arrived.1 - last.arrived.1,
                    dequeued_pkts: now_c.departed.0 - last.departed.0,
                    dequeued_bytes: now_c.departed.1 - last.departed.1,
                    dropped_pkts: dropped,
                    backlog_pkts: l.queue.len_pkts() as u64,
                    backlog_bytes: l.queue.backlog_bytes(),
                    marked_pkts: now_c.marked - last.marked,
                    queue_delay_ns_sum: (now_c.sojourn_ns - last.sojourn_ns) as u64,
                });
            }
        }
        let n_conns = endpoints.len() / 2;
        let mut sample_flow = |c: usize| {
            if c < n_conns && open(c) {
                let ep = &endpoints[2 * c];
                self.flow_series.push(FlowSampleRow {
                    time_ns: t,
                    flow_id: c as u32,
                    cwnd_bytes: ep.cwnd_bytes(),
                    ssthresh_bytes: ep.ssthresh_bytes(),
                    srtt_ns: ep.rtt_estimator().srtt().map(|d| d.as_nanos()),
                    rto_ns: ep.rto().as_nanos(),
                    flight_bytes: ep.flight_bytes(),
                    bytes_acked: ep.bytes_acked(),
                    bbr_bw_bps: ep.bbr_bw_bps(),
                    pacing_rate_bps: ep.bbr_pacing_rate_bps(),
                });
            }
        };
        if self.config.all_flows {
            (0..n_conns).for_each(&mut sample_flow);
        } else {
            self.named.iter().for_each(|&c| sample_flow(c as usize));
        }
    }

    pub fn finish(self) -> TraceOutput {
        let mut truncated = Vec::new();
        for (name, t) in [("flow_series", self.flow_series.truncated), ("link_series", self.link_series.truncated),
                          ("events", self.events.truncated), ("pcap", self.pcap.as_ref().is_some_and(|p| p.truncated))] {
            if t {
                truncated.push(name.to_string());
            }
        }
        truncated.extend(self.hosts.iter().filter(|h| h.pcap.truncated).map(|h| h.name.clone()));
        let (flow_delays, flow_delay_buckets) = self.delays.map_or_else(Default::default, FlowDelays::finish);
        TraceOutput {
            flow_delays,
            flow_delay_buckets,
            link_names: self.link_names,
            flow_series: self.flow_series.rows,
            link_series: self.link_series.rows,
            events: self.events.rows,
            pcap: self.pcap.map(PcapBuffer::into_bytes),
            host_pcaps: self.hosts.into_iter().map(|h| (h.name, h.pcap.into_bytes())).collect(),
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{simulate, Scenario};
    use smallpipe_core::DropReason;

    /// Four bulk flows through a 20-packet drop-tail at 1 Mbit/s with 1% wire loss: queue
    /// drops and link losses both happen in 20 s.
    fn scenario(trace: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"duration_s":20,"link":{{"rate_bps":1000000,"loss":0.01,"queue":{{"kind":"droptail","limit_pkts":20}}}},
                "flows":[{{"app":"bulk","count":4,"rtt_ms":[40,120]}}]{trace}}}"#
        ))
        .unwrap()
    }

    const ALL: &str = r#","trace":{"interval_s":0.05,"all_flows":true,"links":true,"events":true,"pcap":"departures","flow_delays":true,"pcap_hosts":["sender0","receiver3"]}"#;

    #[test]
    fn tracing_does_not_change_the_run() {
        let (plain, traced) = (simulate(&scenario("")).unwrap(), simulate(&scenario(ALL)).unwrap());
        assert_eq!(plain.flows, traced.flows);
        assert_eq!(plain.links, traced.links);
        assert!(plain.traces.pcap.is_none() && plain.traces.flow_series.is_empty());
        let hosts: Vec<&str> = traced.traces.host_pcaps.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(hosts, ["sender0", "receiver3"]);
    }

    /// Each record of a pcap as (time ns, TCP/IP headers as etherparse reads them, payload length).
    fn read_pcap(bytes: &[u8]) -> Vec<(u64, etherparse::Ipv4Header, etherparse::TcpHeader, usize)> {
        let mut reader = pcap_file::pcap::PcapReader::new(bytes).unwrap();
        let mut out = Vec::new();
        while let Some(p) = reader.next_packet() {
            let p = p.unwrap();
            let (ip, rest) = etherparse::Ipv4Header::from_slice(&p.data[crate::pcap::ETHERNET_HEADER_BYTES..]).unwrap();
            let (tcp, _) = etherparse::TcpHeader::from_slice(rest).unwrap();
            let payload = ip.total_len as usize - ip.header_len() - tcp.header_len();
            out.push((p.timestamp.as_nanos() as u64, ip, tcp, payload));
        }
        out
    }

    /// One bulk flow, no loss, every segment ACKed at once (no delayed ACK), captured at its
    /// two hosts. The SYN is in the receiver's capture one one-way delay after the sender's:
    /// the sender's access link (100 ms / 2 − 10 − 5 = 35 ms), the bottleneck's 10 ms and the
    /// receiver's 5 ms, plus the 52-byte SYN's serialization at 100, 1 and 100 Mbit/s (no
    /// random send overhead, which comes after the capture: it sees what TCP sends). The
    /// receiver's last ACK is the bytes it delivered past its ISN and the SYN. Every
    /// segment advertises the configured 20 000-byte window.
    #[test]
    fn host_captures_show_each_host_sending_and_receiving() {
        let sc = Scenario::from_json(r#"{"duration_s":3,"link":{"rate_bps":1000000,"delay_ms":10,"receiver_delay_ms":5},
            "tcp":{"delayed_ack":false,"rwnd_bytes":20000,"overhead_max_ms":0},"flows":[{"app":"bulk","rtt_ms":100}],
            "trace":{"pcap_hosts":["sender0","receiver0"]}}"#).unwrap();
        let r = simulate(&sc).unwrap();
        let [(_, sender), (_, receiver)] = &r.traces.host_pcaps[..] else { panic!("two captures") };
        let (sender, receiver) = (read_pcap(sender), read_pcap(receiver));
        let syn_tx_ns = |rate_bps: u64| 52 * 8 * 1_000_000_000 / rate_bps;
        let one_way_ns = (35 + 10 + 5) * 1_000_000 + 2 * syn_tx_ns(100_000_000) + syn_tx_ns(1_000_000);
        let (s0, r0) = (&sender[0], &receiver[0]);
        assert!(s0.2.syn && !s0.2.ack && r0.2.syn && r0.2.sequence_number == s0.2.sequence_number);
        assert_eq!(s0.0, r.flows[0].start_ns);
        assert_eq!(r0.0 - s0.0, one_way_ns);
        for (_, _, tcp, _) in sender.iter().chain(&receiver) {
            assert_eq!(tcp.window_size, 20_000);
        }
        let receiver_ip = r0.1.destination;
        let acks: Vec<_> = receiver.iter().filter(|(_, ip, _, _)| ip.source == receiver_ip).collect();
        let isn = s0.2.sequence_number;
        let last_ack = acks.last().unwrap().2.acknowledgment_number;
        assert_eq!(u64::from(last_ack.wrapping_sub(isn)) - 1, r.flows[0].bytes_delivered);
        // What the sender sent and what reached the receiver: the receiver's capture holds
        // the sender's segments (none lost) less those still on the way at the end.
        let sent = sender.iter().filter(|(_, ip, _, _)| ip.destination == receiver_ip).count();
        let arrived = receiver.iter().filter(|(_, ip, _, _)| ip.destination == receiver_ip).count();
        assert!(arrived <= sent && sent - arrived <= 20_000 / 1448 + 1, "{sent} sent, {arrived} arrived");
    }

    /// Every segment advertises its stack's receive window, and a window past 65 535 bytes
    /// (no window scaling modelled) shows as 65 535. ns-2's is `window_` = 20 packets
    /// (ns-default.tcl) of 1500 − 40 bytes; the others' default is 65 535.
    #[test]
    fn segments_advertise_the_stacks_receive_window() {
        for (tcp, window) in [(r#"{}"#, 65_535), (r#"{"stack":"ns2"}"#, 20 * 1460), (r#"{"stack":"ns3"}"#, 65_535),
                              (r#"{"stack":"linux"}"#, 65_535), (r#"{"rwnd_bytes":1000000}"#, 65_535),
                              (r#"{"rwnd_bytes":9000}"#, 9_000)] {
            let sc = Scenario::from_json(&format!(r#"{{"duration_s":2,"tcp":{tcp},"flows":[{{"app":"bulk","count":2}}],
                "trace":{{"pcap":"departures"}}}}"#)).unwrap();
            let r = simulate(&sc).unwrap();
            let records = read_pcap(r.traces.pcap.as_ref().unwrap());
            assert!(records.len() > 100, "{tcp}");
            assert!(records.iter().all(|(_, _, t, _)| t.window_size == window), "{tcp}: a window other than {window}");
        }
    }

    #[test]
    fn a_host_past_the_runs_units_is_refused_by_name() {
        let sc = scenario(r#","trace":{"pcap_hosts":["receiver4"]}"#);
        let e = crate::Simulator::new(&sc).err().expect("4 units: 0 to 3");
        assert_eq!(e.field, "trace.pcap_hosts", "{e}");
        assert!(e.to_string().contains("[0, 4)"), "{e}");
    }

    /// The per-interval queue counters add up to the link's totals and conserve packets
    /// (enqueued − dequeued − dropped = change of backlog); the backlog never passes the
    /// 20-packet limit; every sampled cwnd is at least one MSS (1448 bytes with timestamps).
    #[test]
    fn time_series_keep_the_queue_invariants() {
        let r = simulate(&scenario(ALL)).unwrap();
        let t = &r.traces;
        assert!(t.truncated.is_empty());
        assert_eq!(t.link_names, ["bottleneck", "bottleneck_reverse"]);
        for (i, link) in r.links.iter().enumerate() {
            let rows: Vec<_> = t.link_series.iter().filter(|s| s.link as usize == i).collect();
            assert_eq!(rows.len(), 400, "20 s every 50 ms, the last at the end");
            assert_eq!(rows.last().unwrap().time_ns, 20_000_000_000);
            for reason in DropReason::ALL {
                let sum: u64 = rows.iter().map(|s| s.dropped_pkts[reason as usize]).sum();
                assert_eq!(sum, link.drops_by_reason[reason as usize], "{} {reason:?}", link.name);
            }
            // A packet still being serialized at the end has left the queue but is not yet counted.
            let dequeued = rows.iter().map(|s| s.dequeued_pkts).sum::<u64>();
            assert!(dequeued - link.tx_pkts <= 1, "{dequeued} dequeued, {} sent", link.tx_pkts);
            // The intervals' delay sums over their departures give the link's mean delay.
            let delay_ns = rows.iter().map(|s| s.queue_delay_ns_sum).sum::<u64>() as f64;
            let mean_ms = delay_ns / dequeued as f64 / 1e6;
            assert!((mean_ms - link.mean_queue_delay_ms).abs() <= 1e-9 * mean_ms.max(1.0), "{mean_ms} {}", link.mean_queue_delay_ms);
            assert!(rows.iter().all(|s| s.marked_pkts == 0), "DropTail marks nothing");
            let mut backlog = 0i64;
            for s in &rows {
                assert!(s.backlog_pkts <= 20, "{}: backlog {} at {}", link.name, s.backlog_pkts, s.time_ns);
                // A loss on the wire is of a packet that had left the queue already.
                let dropped_in_queue = s.dropped_pkts.iter().sum::<u64>() - s.dropped_pkts[DropReason::LinkLoss as usize];
                backlog += s.enqueued_pkts as i64 - s.dequeued_pkts as i64 - dropped_in_queue as i64;
                assert_eq!(backlog, s.backlog_pkts as i64);
            }
        }
        let fwd = &r.links[0];
        assert!(fwd.drops_by_reason[DropReason::Overlimit as usize] > 0 && fwd.drops_by_reason[DropReason::LinkLoss as usize] > 0);
        assert!(!t.flow_series.is_empty());
        assert!(t.flow_series.iter().all(|s| s.cwnd_bytes >= 1448 && s.rto_ns >= 200_000_000), "RFC 5681: cwnd ≥ 1 MSS");
        assert!(t.flow_series.iter().any(|s| s.srtt_ns.is_some() && s.flight_bytes > 0));
        // Acknowledged bytes only grow, and end at most at what the receiver got.
        for f in 0..4 {
            let acked: Vec<u64> = t.flow_series.iter().filter(|s| s.flow_id == f).map(|s| s.bytes_acked).collect();
            assert!(acked.windows(2).all(|w| w[0] <= w[1]));
            assert!(*acked.last().unwrap() <= r.flows[f as usize].bytes_delivered);
        }
    }

    /// The event trace has one enqueue per packet offered to the queue, one dequeue per
    /// departure and one drop per counted drop, each with its reason; the pcap has one
    /// record per transmission of both directions.
    #[test]
    fn events_and_pcap_match_the_link_counters() {
        use super::QueueEvent;
        let r = simulate(&scenario(ALL)).unwrap();
        for (i, link) in r.links.iter().enumerate() {
            let ev: Vec<_> = r.traces.events.iter().filter(|e| e.link as usize == i).collect();
            let count = |k: QueueEvent| ev.iter().filter(|e| e.event == k).count() as u64;
            assert_eq!(count(QueueEvent::Enqueue), link.arrived_pkts, "a loss on the wire is not an arrival");
            assert!(count(QueueEvent::Dequeue) - link.tx_pkts <= 1, "one may be on the wire at the end");
            for reason in DropReason::ALL {
                assert_eq!(count(QueueEvent::Drop(reason)), link.drops_by_reason[reason as usize]);
            }
            assert!(ev.iter().all(|e| e.flow_id.is_some_and(|f| f < 4)));
        }
        let pcap = r.traces.pcap.as_ref().unwrap();
        let mut reader = pcap_file::pcap::PcapReader::new(&pcap[..]).unwrap();
        let mut records = 0;
        while let Some(p) = reader.next_packet() {
            let p = p.unwrap();
            assert_eq!(p.data.len(), (p.orig_len as usize).min(128));
            records += 1;
        }
        assert_eq!(records, r.links[0].tx_pkts + r.links[1].tx_pkts);
    }

    #[test]
    fn tables_stop_at_their_cap_and_say_so() {
        let r = simulate(&scenario(r#","trace":{"all_flows":true,"events":true,"max_rows":1000,"pcap":"arrivals","max_pcap_bytes":10000}"#)).unwrap();
        let t = &r.traces;
        assert_eq!((t.events.len(), t.flow_series.len()), (1000, 800), "800 = 4 flows × 200 samples: under the cap");
        assert_eq!(t.truncated, ["events", "pcap"]);
        assert!(t.pcap.as_ref().unwrap().len() <= 10_000);
    }

    /// `first_flows = 2` with `flows = [3]` samples connections 0, 1 and 3, each once per time.
    #[test]
    fn first_flows_sample_the_first_connections() {
        let r = simulate(&scenario(r#","trace":{"first_flows":2,"flows":[3,1],"interval_s":1}"#)).unwrap();
        let mut ids: Vec<u32> = r.traces.flow_series.iter().map(|s| s.flow_id).collect();
        assert_eq!(ids.len(), 3 * 20, "3 flows, 20 samples each");
        ids.dedup();
        assert_eq!(&ids[..3], [0, 1, 3]);
    }

    /// A link series alone reads no connection, so connections are still recycled (a web
    /// workload's memory stays that of the untraced run) and the run is the same; anything
    /// keyed by connection stops the recycling.
    #[test]
    fn a_link_series_alone_keeps_recycling() {
        use crate::Simulator;
        let web = |trace: &str| Scenario::from_json(&format!(
            r#"{{"duration_s":20,"link":{{"rate_bps":1000000}},"flows":[{{"app":"web","count":4,"size_bytes":20000}}]{trace}}}"#
        )).unwrap();
        let links = web(r#","trace":{"links":true}"#);
        assert!(Simulator::new(&links).unwrap().recycles_connections());
        for keyed in [r#","trace":{"links":true,"first_flows":1}"#, r#","trace":{"flow_delays":true}"#, r#","trace":{"events":true}"#] {
            assert!(!Simulator::new(&web(keyed)).unwrap().recycles_connections(), "{keyed}");
        }
        let (plain, traced) = (simulate(&web("")).unwrap(), simulate(&links).unwrap());
        assert_eq!((plain.flows, plain.links), (traced.flows, traced.links));
        assert!(!traced.traces.link_series.is_empty());
    }

    /// Stored scenarios and their hashes stay as they were: no `"trace": null` key.
    #[test]
    fn an_absent_trace_table_leaves_the_canonical_scenario_unchanged() {
        let json = Scenario::from_json(r#"{"flows":[{"app":"bulk"}]}"#).unwrap().to_json();
        assert!(!json.contains(r#""trace":"#), "{json}");
    }

    #[test]
    fn bad_trace_settings_name_the_field() {
        let seventeen_hosts = format!(r#"{{"pcap_hosts":[{}]}}"#, (0..17).map(|u| format!(r#""sender{u}""#)).collect::<Vec<_>>().join(","));
        for (trace, field) in [(r#"{"interval_s":0}"#, "trace.interval_s"), (r#"{"interval_s":1e-9}"#, "trace.interval_s"),
                               (r#"{"pcap_snaplen":20}"#, "trace.pcap_snaplen"), (r#"{"max_rows":0}"#, "trace.max_rows"),
                               (r#"{"max_pcap_bytes":1e12}"#, "trace.max_pcap_bytes"), (r#"{"pcap":"both"}"#, "trace.pcap"),
                               (r#"{"first_flows":20000}"#, "trace.first_flows"),
                               (r#"{"pcap_hosts":["host0"]}"#, "trace.pcap_hosts"), (r#"{"pcap_hosts":["sender01"]}"#, "trace.pcap_hosts"),
                               (r#"{"pcap_hosts":["sender"]}"#, "trace.pcap_hosts"),
                               (r#"{"pcap_hosts":["sender1","sender1"]}"#, "trace.pcap_hosts"),
                               (seventeen_hosts.as_str(), "trace.pcap_hosts")] {
            let json = format!(r#"{{"flows":[{{"app":"bulk"}}],"trace":{trace}}}"#);
            let e = Scenario::from_json(&json).unwrap_err();
            assert_eq!(e.field, field, "{trace}: {e}");
        }
    }
}
