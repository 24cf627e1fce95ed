//! Offline replay: the frames a capture saw enter the box, given to the box's own link
//! model (`link.rs`, the same disciplines) at the capture's timestamps, with no sockets and
//! no clock. The senders do not react (the capture's traffic is fixed), so a replay answers
//! "what did this discipline do to this traffic, and why": replaying the box's own capture
//! under its own config performs the same enqueues at the same logical times and so repeats
//! the run's decisions; replaying a simulator's bottleneck pcap shows how the box would have
//! treated the simulator's packets; another config asks what another discipline would have
//! done. TAQ's per-flow state changes are logged with what revealed them.
//!
//! Inputs: a pcapng whose interfaces are named as the box names them (`a_in`, `b_in`; the
//! other points are ignored), or a classic pcap with a rule saying which sources sit on
//! side A (`--side-a PREFIX/LEN`; every other source enters on side B).

use crate::config::BoxConfig;
use crate::link::{next_due, LinkCumulative, LinkEmu, LinkEvent};
use crate::parse::{parse_frame, Verdict};
use crate::stats::{queue_state_row, BoxStats, FlowTable, QueueStateRow};
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use rustc_hash::FxHashMap;
use smallpipe_core::qdisc::taq::TaqState;
use smallpipe_core::{AnyQdisc, DropReason, Duration, FlowKey, Instant, Packet};
use std::net::Ipv4Addr;

/// One frame that entered the box on `side` (0 = A) at `time_ns` (the capture's time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub time_ns: u64,
    pub side: usize,
    pub frame: Vec<u8>,
}

/// Which IPv4 sources are on side A, for captures that do not say where a frame entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SideA {
    pub prefix: u32,
    pub len: u8,
}

impl SideA {
    /// `198.18.0.0/24`: the network and its prefix length.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("--side-a: {s:?} is not allowed (allowed: an IPv4 prefix such as 198.18.0.0/24)");
        let (addr, len) = s.split_once('/').ok_or_else(bad)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        let len: u8 = len.parse().ok().filter(|l| *l <= 32).ok_or_else(bad)?;
        Ok(SideA { prefix: u32::from(addr) & Self::mask(len), len })
    }
    fn mask(len: u8) -> u32 {
        if len == 0 { 0 } else { u32::MAX << (32 - len) }
    }
    /// The side a frame entered on: A when its IPv4 source is in the prefix, else B.
    fn side_of(&self, frame: &[u8]) -> usize {
        match parse_frame(frame) {
            Verdict::Scheduled(p) if p.flow.src_ip & Self::mask(self.len) == self.prefix => 0,
            _ => 1,
        }
    }
}

/// The input frames of a capture, in time order. A pcapng names its points (the box's own
/// capture); a classic pcap needs `side_a`.
pub fn read_inputs(data: &[u8], side_a: Option<SideA>) -> Result<Vec<Input>, String> {
    let mut inputs = if data.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        read_pcapng(data)?
    } else {
        let side_a = side_a.ok_or("a classic pcap does not say where a frame entered: give --side-a PREFIX/LEN")?;
        let mut r = pcap_file::pcap::PcapReader::new(data).map_err(|e| format!("not a pcap or pcapng: {e}"))?;
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.map_err(|e| format!("pcap: {e}"))?;
            out.push(Input { time_ns: p.timestamp.as_nanos() as u64, side: side_a.side_of(&p.data), frame: p.data.to_vec() });
        }
        out
    };
    inputs.sort_by_key(|i| i.time_ns); // stable: frames of equal time keep the capture's order
    Ok(inputs)
}

fn read_pcapng(data: &[u8]) -> Result<Vec<Input>, String> {
    let mut r = PcapNgReader::new(data).map_err(|e| format!("pcapng: {e}"))?;
    // The side each interface is an input of (None: an output point, or unnamed).
    let mut sides: Vec<Option<usize>> = Vec::new();
    let mut out = Vec::new();
    while let Some(block) = r.next_block() {
        match block.map_err(|e| format!("pcapng: {e}"))? {
            Block::InterfaceDescription(idb) => {
                let name = idb.options.iter().find_map(|o| match o {
                    InterfaceDescriptionOption::IfName(n) => Some(n.to_string()),
                    _ => None,
                });
                sides.push(match name.as_deref() {
                    Some("a_in") => Some(0),
                    Some("b_in") => Some(1),
                    _ => None,
                });
            }
            Block::EnhancedPacket(p) => {
                if let Some(Some(side)) = sides.get(p.interface_id as usize) {
                    out.push(Input { time_ns: p.timestamp.as_nanos() as u64, side: *side, frame: p.data.to_vec() });
                }
            }
            _ => {}
        }
    }
    if sides.iter().all(Option::is_none) {
        return Err("pcapng: no interface named a_in or b_in (the box's capture points)".into());
    }
    Ok(out)
}

/// What made a TAQ flow's state change visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// One of its packets arrived carrying new data (or no data); the change may also be
    /// an epoch boundary this arrival rolled the flow across.
    Arrival,
    /// One of its packets arrived that TAQ took for a retransmission.
    RetransmissionArrival,
    /// The discipline dropped one of its packets.
    Drop,
    /// Its reverse direction (an ACK) left the other queue.
    Reverse,
}

impl Trigger {
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Arrival => "arrival",
            Trigger::RetransmissionArrival => "retransmission",
            Trigger::Drop => "drop",
            Trigger::Reverse => "reverse",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub time_ns: u64,
    pub direction: usize,
    pub flow: FlowKey,
    /// `None`: the flow was not tracked before.
    pub from: Option<TaqState>,
    pub to: TaqState,
    pub trigger: Trigger,
    /// The flow's epoch (TAQ's estimate of its round-trip time) after the change, ns.
    pub epoch_ns: u64,
}

/// A packet the link dropped, when and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropRecord {
    pub time_ns: u64,
    pub direction: usize,
    pub pkt: Packet,
    pub reason: DropReason,
}

pub struct Replay {
    pub links: [LinkEmu; 2],
    pub stats: BoxStats,
    pub flows: FlowTable,
    pub queue_states: Vec<QueueStateRow>,
    pub link_slices: Vec<[LinkCumulative; 2]>,
    pub transitions: Vec<Transition>,
    pub drops: Vec<DropRecord>,
    slice_ns: u64,
    next_slice: Instant,
    events: Vec<LinkEvent>,
    /// The last state logged per (direction, flow).
    seen: FxHashMap<(usize, FlowKey), TaqState>,
}

impl Replay {
    pub fn new(cfg: &BoxConfig, slice_ns: u64) -> Result<Self, String> {
        let links = cfg.build_links().map_err(|e| format!("{}: {} is not allowed (allowed: {})", e.field, e.value, e.allowed))?;
        Ok(Replay {
            links,
            stats: BoxStats::default(),
            flows: FlowTable::with_config(&cfg.metrics),
            queue_states: Vec::new(),
            link_slices: Vec::new(),
            transitions: Vec::new(),
            drops: Vec::new(),
            slice_ns,
            next_slice: Instant(slice_ns),
            events: Vec::new(),
            seen: FxHashMap::default(),
        })
    }

    /// One input frame: every slice end and every departure and delivery due by its time
    /// happen first, then the frame enters its side's link as the running box would have
    /// handed it over.
    pub fn feed(&mut self, input: &Input) {
        let now = Instant(input.time_ns);
        self.advance_to(now);
        let side = input.side;
        let pkt = match parse_frame(&input.frame) {
            Verdict::Scheduled(p) => p,
            Verdict::Unscheduled => {
                self.stats.unscheduled[side] += 1; // forwarded at once, as the box does
                return;
            }
            Verdict::Drop(cause) => {
                self.stats.parse_drops[side][cause as usize] += 1;
                return;
            }
        };
        self.flows.arrived(side, &pkt, &input.frame, now.as_nanos());
        let retx_before = self.retransmissions_seen(side);
        self.links[side].enqueue(pkt, now, &mut self.events);
        let trigger = if self.retransmissions_seen(side) > retx_before { Trigger::RetransmissionArrival } else { Trigger::Arrival };
        self.note_state(side, pkt.flow, now, trigger);
        self.handle_events(side, now);
    }

    /// Run the links to `end` (the capture's end): what is due by then happens, the slices
    /// ending by then are sampled, and the links' counters are taken at `end`.
    pub fn finish(&mut self, end: Instant) {
        self.advance_to(end);
        self.sample_links(end);
    }

    fn advance_to(&mut self, now: Instant) {
        while self.next_slice <= now {
            let at = self.next_slice;
            self.advance_links(at);
            for (d, l) in self.links.iter().enumerate() {
                self.queue_states.extend(queue_state_row(d, l, at, self.slice_ns));
            }
            self.sample_links(at);
            self.next_slice += Duration(self.slice_ns);
        }
        self.advance_links(now);
    }

    /// Both directions' counters at `at`, run to it first (as the box samples them).
    fn sample_links(&mut self, at: Instant) {
        self.advance_links(at);
        let row = [0, 1].map(|d| self.links[d].cumulative(at, &mut self.events));
        debug_assert!(self.events.is_empty(), "nothing is left due by `at`");
        self.link_slices.push(row);
    }

    /// Both links up to `now`, their events in time order across the two (`next_due`).
    fn advance_links(&mut self, now: Instant) {
        while let Some((d, t)) = next_due(&self.links, now) {
            self.links[d].advance(t, &mut self.events);
            self.handle_events(d, t);
        }
    }

    fn handle_events(&mut self, dir: usize, now: Instant) {
        let mut events = std::mem::take(&mut self.events);
        for ev in events.drain(..) {
            match ev {
                LinkEvent::Dropped(pkt, reason) => {
                    self.flows.dropped(dir, &pkt, now.as_nanos());
                    self.drops.push(DropRecord { time_ns: now.as_nanos(), direction: dir, pkt, reason });
                    self.note_state(dir, pkt.flow, now, Trigger::Drop);
                }
                LinkEvent::Departed { pkt, at } => {
                    self.flows.departed(dir, &pkt, at);
                    self.links[1 - dir].queue.observe_reverse(&pkt, at);
                    self.note_state(1 - dir, pkt.flow.reversed(), at, Trigger::Reverse);
                }
                LinkEvent::Delivered { pkt, .. } => {
                    self.flows.delivered(dir, &pkt, now.as_nanos());
                    self.stats.sent[1 - dir] += 1;
                }
            }
        }
        self.events = events;
    }

    fn retransmissions_seen(&self, dir: usize) -> u64 {
        match self.links[dir].queue.inner() {
            AnyQdisc::Taq(taq) => taq.retransmissions_seen(),
            _ => 0,
        }
    }

    /// Log the flow's TAQ state if it changed since it was last logged.
    fn note_state(&mut self, dir: usize, flow: FlowKey, now: Instant, trigger: Trigger) {
        let AnyQdisc::Taq(taq) = self.links[dir].queue.inner() else { return };
        let Some(model) = taq.flow_state(&flow) else { return };
        let from = self.seen.insert((dir, flow), model.state);
        if from != Some(model.state) {
            self.transitions.push(Transition { time_ns: now.as_nanos(), direction: dir, flow, from, to: model.state, trigger,
                                              epoch_ns: model.epoch_ns });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::{Capture, Point};
    use etherparse::PacketBuilder;

    fn frame(src: [u8; 4], dst: [u8; 4], seq: u32, payload: usize, syn: bool, ack: bool) -> Vec<u8> {
        let mut b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv4(src, dst, 64).tcp(40000, 80, seq, 65535);
        if syn {
            b = b.syn();
        }
        if ack {
            b = b.ack(1);
        }
        let mut out = Vec::new();
        b.write(&mut out, &vec![0u8; payload]).unwrap();
        out
    }

    fn config(b_to_a_queue: &str) -> BoxConfig {
        let text = format!(r#"{{"seed": 1,
            "a_to_b": {{"rate_bps": 1000000, "delay_ns": 0, "queue": {{"kind": "droptail", "limit_pkts": 5}}}},
            "b_to_a": {{"rate_bps": 1000000, "delay_ns": 0, "queue": {b_to_a_queue}}}}}"#);
        BoxConfig::parse(&text, "test").unwrap()
    }

    fn replay(cfg: &BoxConfig, inputs: &[Input], end_ns: u64) -> Replay {
        let mut r = Replay::new(cfg, 1_000_000_000).unwrap();
        for i in inputs {
            r.feed(i);
        }
        r.finish(Instant(end_ns));
        r
    }

    /// Ten 1000-byte packets at once into a 5-packet DropTail at 1 Mbit/s: the first is sent
    /// at once, five wait, four are dropped; the six leave 8 ms apart (1000 B at 1 Mbit/s).
    #[test]
    fn a_burst_meets_the_droptail_limit_as_a_formula_says() {
        let pkt = frame([198, 18, 0, 1], [198, 19, 0, 1], 1, 960, false, true); // 1000 IP bytes
        let inputs: Vec<Input> = (0..10).map(|_| Input { time_ns: 0, side: 0, frame: pkt.clone() }).collect();
        let r = replay(&config(r#"{"kind": "droptail", "limit_pkts": 5}"#), &inputs, 100_000_000);
        assert_eq!(r.drops.len(), 4);
        assert!(r.drops.iter().all(|d| d.direction == 0 && d.reason == DropReason::Overlimit));
        assert_eq!((r.links[0].tx_pkts, r.stats.sent[1]), (6, 6));
        let s = r.links[0].queue.stats();
        assert_eq!((s.arrived_pkts, s.departed_pkts), (10, 6));
        // Waiting times 0, 8, ..., 40 ms: the backlog integral is their sum, 120 ms·packet.
        let c = r.link_slices.last().unwrap()[0];
        assert_eq!(c.backlog_pkt_ns, 120_000_000);
    }

    /// The box's own capture: only the input points are replayed, each on its side, in
    /// time order; a classic pcap needs the side-A rule.
    #[test]
    fn inputs_come_from_the_box_points_or_from_the_side_a_rule() {
        let path = std::env::temp_dir().join(format!("smallpipe-replay-{}.pcapng", std::process::id()));
        let mut c = Capture::create(path.to_str().unwrap()).unwrap();
        let from_a = frame([198, 18, 0, 1], [198, 19, 0, 1], 1, 100, false, true);
        let from_b = frame([198, 19, 0, 1], [198, 18, 0, 1], 1, 100, false, true);
        c.record(Point::AIn, 5, &from_a);
        c.record(Point::BOut, 6, &from_a);
        c.record(Point::BIn, 7, &from_b);
        c.record(Point::AOut, 8, &from_b);
        c.finish().unwrap();
        let data = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let got: Vec<(u64, usize)> = read_inputs(&data, None).unwrap().iter().map(|i| (i.time_ns, i.side)).collect();
        assert_eq!(got, vec![(5, 0), (7, 1)]);

        let mut classic = Vec::new();
        {
            let header = pcap_file::pcap::PcapHeader { ts_resolution: pcap_file::TsResolution::NanoSecond, ..Default::default() };
            let mut w = pcap_file::pcap::PcapWriter::with_header(&mut classic, header).unwrap();
            for (t, f) in [(9u64, &from_b), (3, &from_a)] {
                w.write_packet(&pcap_file::pcap::PcapPacket::new(std::time::Duration::from_nanos(t), f.len() as u32, f)).unwrap();
            }
        }
        assert!(read_inputs(&classic, None).unwrap_err().contains("--side-a"));
        let side_a = SideA::parse("198.18.0.0/16").unwrap();
        let got: Vec<(u64, usize)> = read_inputs(&classic, Some(side_a)).unwrap().iter().map(|i| (i.time_ns, i.side)).collect();
        assert_eq!(got, vec![(3, 0), (9, 1)], "sorted by time; 198.19.0.1 is not in 198.18.0.0/16");
        for bad in ["198.18.0.0", "198.18.0.0/33", "a.b.c.d/8"] {
            assert!(SideA::parse(bad).unwrap_err().contains(bad), "{bad}");
        }
    }

    /// A download through TAQ: the server's SYN-ACK enters on side B, the client's ACK on
    /// side A, then data. The flow's states are logged with what revealed them.
    #[test]
    fn taq_state_changes_are_logged_with_their_trigger() {
        let cfg = config(r#"{"kind": "taq", "limit_pkts": 30}"#);
        let (client, server) = ([198, 18, 0, 1], [198, 19, 0, 1]);
        let ms = 1_000_000;
        let inputs = [
            Input { time_ns: 0, side: 1, frame: frame(server, client, 0, 0, true, true) },
            Input { time_ns: 30 * ms, side: 0, frame: frame(client, server, 1, 0, false, true) },
            Input { time_ns: 230 * ms, side: 1, frame: frame(server, client, 1, 500, false, true) },
        ];
        let r = replay(&cfg, &inputs, 300 * ms);
        let t = &r.transitions;
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!((t[0].from, t[0].to, t[0].trigger, t[0].direction), (None, TaqState::SlowStart, Trigger::Arrival, 1));
        let AnyQdisc::Taq(taq) = r.links[1].queue.inner() else { panic!("TAQ configured") };
        let flow = parse_frame(&inputs[0].frame);
        let Verdict::Scheduled(p) = flow else { panic!("a TCP frame") };
        assert_eq!(taq.flow_state(&p.flow).unwrap().epoch_ns, 230 * ms, "30 ms to the client and back, 200 to the server");
    }
}
