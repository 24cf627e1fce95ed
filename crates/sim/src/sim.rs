//! The simulator: one object owns every node, link, endpoint and event, so several runs can
//! live in one process. Time advances from event to event; ties go in insertion order.

use crate::config::{AppKind, GapFrom, Scenario, Spread};
use crate::event::{Event, EventQueue};
use crate::link::Link;
use crate::results::{BurstRow, FlowRow, LinkRow, Results};
use crate::tcp::{Endpoint, TcpParams};
use rustc_hash::FxHashMap;
use smallpipe_core::qdisc::DropTailConfig;
use smallpipe_core::{Accounted, ConfigError, Duration, FlowKey, Instant, Packet, QdiscConfig, Rng};

enum Node {
    /// An end host: everything it sends leaves on one access link.
    Host { egress: u32 },
    /// Forwards by destination address.
    Router { routes: FxHashMap<u32, u32> },
}

/// What one flow's application does, and what the recorder tracks of it.
struct Flow {
    group: u32,
    app: AppKind,
    size_bytes: Option<u64>,
    rtt: Duration,
    start: Instant,
    burst_bytes: u64,
    mean_gap_s: f64,
    gap_from: GapFrom,
    rng: Rng,
    delivered_seen: u64,
    bursts_seen: usize,
    /// Interactive: the handshake is done and bursts are being written.
    bursting: bool,
    last_progress: Instant,
    longest_silence: Duration,
    slice_bytes: Vec<u64>,
}

/// Bytes an unlimited bulk sender has "written": more than any run can send.
const UNLIMITED_BYTES: u64 = 1 << 50;
/// The first host addresses, from the benchmarking range 198.18.0.0/15.
const SENDER_NET: u32 = 0xC612_0000; // 198.18.0.0
const RECEIVER_NET: u32 = 0xC613_0000; // 198.19.0.0
const SERVER_PORT: u16 = 80;

pub struct Simulator {
    now: Instant,
    end: Instant,
    slice: Duration,
    seed: u64,
    events: EventQueue,
    nodes: Vec<Node>,
    links: Vec<Link>,
    /// Flow `f` has its sender at endpoint `2f` and its receiver at `2f + 1`.
    endpoints: Vec<Endpoint>,
    demux: FxHashMap<FlowKey, u32>,
    flows: Vec<Flow>,
    params: TcpParams,
    scratch: Vec<Packet>,
}

fn ms(v: f64) -> Duration {
    Duration((v * 1e6).round() as u64)
}
fn secs(v: f64) -> Duration {
    Duration((v * 1e9).round() as u64)
}

fn draw(spread: Spread, rng: &mut Rng) -> f64 {
    let (lo, hi) = spread.bounds();
    lo + (hi - lo) * rng.uniform()
}

impl Simulator {
    /// Builds the dumbbell of the scenario: per-flow sender and receiver hosts with access
    /// links whose delays give each flow its base RTT, around one shared bottleneck.
    pub fn new(sc: &Scenario) -> Result<Self, ConfigError> {
        sc.validate()?;
        let total_flows: u64 = sc.flows.iter().map(|g| g.count as u64).sum();
        if total_flows > 65_000 {
            return Err(ConfigError::new("flows", format!("{total_flows} flows in all"), "at most 65000 flows per run"));
        }
        let params = TcpParams::from_config(&sc.tcp);
        let l = &sc.link;
        let rate = l.rate_bps as u64;
        let access_rate = l.access_rate_bps as u64;
        let overhead = match sc.tcp.overhead_max_ms {
            Some(v) => ms(v),
            None => Duration::serialization(sc.tcp.packet_size_bytes as u64, rate),
        };
        let mut sim = Simulator {
            now: Instant::ZERO,
            end: Instant::ZERO + secs(sc.duration_s),
            slice: secs(sc.slice_s),
            seed: sc.seed,
            events: EventQueue::default(),
            nodes: vec![Node::Router { routes: FxHashMap::default() }, Node::Router { routes: FxHashMap::default() }],
            links: Vec::new(),
            endpoints: Vec::new(),
            demux: FxHashMap::default(),
            flows: Vec::new(),
            params,
            scratch: Vec::new(),
        };
        let access_queue = QdiscConfig::DropTail(DropTailConfig { limit_pkts: Some(1000), limit_bytes: None });
        let bottleneck_delay = ms(l.delay_ms);
        sim.add_link("bottleneck", rate, bottleneck_delay, Duration::ZERO, l.loss, &l.queue, 1)?;
        sim.add_link("bottleneck_reverse", rate, bottleneck_delay, Duration::ZERO, l.reverse_loss, &l.reverse_queue, 0)?;
        for (link, nth) in [(0, &l.drop_nth), (1, &l.reverse_drop_nth)] {
            let mut nth = nth.clone();
            nth.sort_unstable();
            sim.links[link].drop_nth = nth;
        }
        let receiver_delay = ms(l.receiver_delay_ms);
        let n_slices = (sc.duration_s / sc.slice_s).ceil() as usize;
        for (gi, g) in sc.flows.iter().enumerate() {
            for _ in 0..g.count {
                let f = sim.flows.len() as u32;
                let mut rng = Rng::new(sc.seed, 0x4000_0000 + f as u64);
                let rtt_ms = draw(g.rtt_ms, &mut rng);
                let start = Instant::ZERO + secs(draw(g.start_s, &mut rng));
                let sender_delay = ms(rtt_ms / 2.0 - l.delay_ms - l.receiver_delay_ms);
                let (s_ip, d_ip) = (SENDER_NET + f + 1, RECEIVER_NET + f + 1);
                let s_node = sim.nodes.len() as u32;
                let d_node = s_node + 1;
                let s_up = sim.add_link(&format!("sender{f}_up"), access_rate, sender_delay, overhead, 0.0, &access_queue, 0)?;
                let s_down = sim.add_link(&format!("sender{f}_down"), access_rate, sender_delay, Duration::ZERO, 0.0, &access_queue, s_node)?;
                let d_up = sim.add_link(&format!("receiver{f}_up"), access_rate, receiver_delay, Duration::ZERO, 0.0, &access_queue, 1)?;
                let d_down = sim.add_link(&format!("receiver{f}_down"), access_rate, receiver_delay, Duration::ZERO, 0.0, &access_queue, d_node)?;
                sim.nodes.push(Node::Host { egress: s_up });
                sim.nodes.push(Node::Host { egress: d_up });
                sim.route(0, d_ip, 0);
                sim.route(0, s_ip, s_down);
                sim.route(1, d_ip, d_down);
                sim.route(1, s_ip, 1);
                let key = FlowKey { src_ip: s_ip, dst_ip: d_ip, src_port: 10_000 + (f % 50_000) as u16, dst_port: SERVER_PORT, proto: 6 };
                let iss_s = rng.next_u64() as u32;
                let iss_r = rng.next_u64() as u32;
                sim.demux.insert(key, 2 * f);
                sim.demux.insert(key.reversed(), 2 * f + 1);
                sim.endpoints.push(Endpoint::client(key, iss_s, &sim.params));
                sim.endpoints.push(Endpoint::listener(key.reversed(), iss_r, &sim.params));
                sim.flows.push(Flow {
                    group: gi as u32,
                    app: g.app,
                    size_bytes: g.size_bytes,
                    rtt: ms(rtt_ms),
                    start,
                    burst_bytes: g.burst_bytes.map_or(sim.params.mss, |b| b as u64),
                    mean_gap_s: g.mean_gap_s,
                    gap_from: g.gap_from,
                    rng,
                    delivered_seen: 0,
                    bursts_seen: 0,
                    bursting: false,
                    last_progress: start,
                    longest_silence: Duration::ZERO,
                    slice_bytes: vec![0; n_slices],
                });
                sim.events.push(start, Event::App { endpoint: 2 * f });
            }
        }
        Ok(sim)
    }

    #[allow(clippy::too_many_arguments)]
    fn add_link(&mut self, name: &str, rate_bps: u64, delay: Duration, jitter: Duration, loss: f64,
                queue: &QdiscConfig, to_node: u32) -> Result<u32, ConfigError> {
        let id = self.links.len() as u32;
        let q = Accounted::new(queue.build()?, Rng::new(self.seed, 0x2000_0000 + id as u64));
        let rng = Rng::new(self.seed, 0x1000 + id as u64);
        self.links.push(Link::new(name.to_string(), rate_bps, delay, jitter, loss, q, to_node, rng));
        Ok(id)
    }

    fn route(&mut self, router: usize, dst_ip: u32, link: u32) {
        if let Node::Router { routes } = &mut self.nodes[router] {
            routes.insert(dst_ip, link);
        }
    }

    /// Runs to the end of the scenario and collects the results.
    pub fn run(mut self) -> Results {
        let wall = std::time::Instant::now();
        while let Some(t) = self.events.peek_time() {
            if t >= self.end {
                break;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            debug_assert!(t >= self.now, "causality");
            self.now = t;
            self.handle(ev);
        }
        self.now = self.end;
        self.collect(wall.elapsed().as_secs_f64())
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::TxDone { link } => {
                let l = &mut self.links[link as usize];
                if let Some(at) = l.finish_tx(self.now) {
                    self.events.push(at, Event::Arrive { link });
                }
                if let Some(done) = l.start_tx(self.now) {
                    self.events.push(done, Event::TxDone { link });
                }
            }
            Event::Arrive { link } => {
                let l = &mut self.links[link as usize];
                let to = l.to_node;
                let (pkt, next) = l.arrive();
                if let Some(at) = next {
                    self.events.push(at, Event::Arrive { link });
                }
                if let Some(pkt) = pkt {
                    self.deliver(to, pkt);
                }
            }
            Event::Timer { endpoint, gen } => {
                let ep = &mut self.endpoints[endpoint as usize];
                if ep.timer_gen != gen {
                    return; // superseded
                }
                ep.timer_armed = None;
                let mut out = std::mem::take(&mut self.scratch);
                ep.on_timer(self.now, &self.params, &mut out);
                self.after_endpoint(endpoint, out);
            }
            Event::App { endpoint } => self.app_event(endpoint),
        }
    }

    fn app_event(&mut self, e: u32) {
        let f = (e / 2) as usize;
        let mut out = std::mem::take(&mut self.scratch);
        let (now, p) = (self.now, &self.params);
        let ep = &mut self.endpoints[e as usize];
        let flow = &mut self.flows[f];
        if ep.state == crate::tcp::State::Closed && !ep.failed {
            ep.connect(now, p, &mut out);
            match flow.app {
                AppKind::Bulk | AppKind::Transfer => {
                    ep.app_write(flow.size_bytes.unwrap_or(UNLIMITED_BYTES), false, now, p, &mut out);
                    if flow.size_bytes.is_some() {
                        ep.app_close(now, p, &mut out);
                    }
                }
                // Interactive bursts begin once the handshake is done (see after_endpoint),
                // so no response time includes connection set-up.
                AppKind::Interactive => {}
            }
        } else if flow.app == AppKind::Interactive && !ep.failed {
            ep.app_write(flow.burst_bytes, true, now, p, &mut out);
            if flow.gap_from == GapFrom::Send {
                let gap = secs(flow.rng.exponential(flow.mean_gap_s));
                self.events.push(now + gap, Event::App { endpoint: e });
            }
        }
        self.after_endpoint(e, out);
    }

    fn deliver(&mut self, node: u32, pkt: Packet) {
        match &self.nodes[node as usize] {
            Node::Router { routes } => {
                let link = *routes.get(&pkt.flow.dst_ip).expect("every host address is routed");
                self.enqueue(link, pkt);
            }
            Node::Host { .. } => {
                let Some(&e) = self.demux.get(&pkt.flow.reversed()) else { return };
                let mut out = std::mem::take(&mut self.scratch);
                self.endpoints[e as usize].on_segment(&pkt, self.now, &self.params, &mut out);
                self.after_endpoint(e, out);
            }
        }
    }

    fn enqueue(&mut self, link: u32, pkt: Packet) {
        let l = &mut self.links[link as usize];
        l.queue.enqueue(pkt, self.now);
        if let Some(done) = l.start_tx(self.now) {
            self.events.push(done, Event::TxDone { link });
        }
    }

    /// Sends what an endpoint emitted, re-arms its timer, and records progress.
    fn after_endpoint(&mut self, e: u32, mut out: Vec<Packet>) {
        let f = (e / 2) as usize;
        let Node::Host { egress } = self.nodes[self.host_of(e)] else { unreachable!("endpoints live on hosts") };
        for pkt in out.drain(..) {
            self.enqueue(egress, pkt);
        }
        self.scratch = out;
        let now = self.now;
        let ep = &mut self.endpoints[e as usize];
        if let Some(d) = ep.next_deadline() {
            // Lazy re-arming: a later deadline keeps the earlier wake-up, which re-arms.
            if ep.timer_armed.is_none_or(|armed| d < armed) {
                ep.timer_gen = ep.timer_gen.wrapping_add(1);
                ep.timer_armed = Some(d);
                self.events.push(d.max(now), Event::Timer { endpoint: e, gen: ep.timer_gen });
            }
        }
        let flow = &mut self.flows[f];
        if e % 2 == 1 {
            let delivered = ep.stats.bytes_delivered;
            if delivered > flow.delivered_seen {
                let slice = ((now.as_nanos() / self.slice.as_nanos()) as usize).min(flow.slice_bytes.len() - 1);
                flow.slice_bytes[slice] += delivered - flow.delivered_seen;
                flow.delivered_seen = delivered;
                flow.longest_silence = flow.longest_silence.max(now.saturating_since(flow.last_progress));
                flow.last_progress = now;
            }
        } else if flow.app == AppKind::Interactive && !flow.bursting {
            if ep.state == crate::tcp::State::Established {
                flow.bursting = true;
                let gap = secs(flow.rng.exponential(flow.mean_gap_s));
                self.events.push(now + gap, Event::App { endpoint: e });
            }
        } else if flow.app == AppKind::Interactive && flow.gap_from == GapFrom::Response {
            let done = ep.completed_bursts.len();
            if done > flow.bursts_seen {
                flow.bursts_seen = done;
                let gap = secs(flow.rng.exponential(flow.mean_gap_s));
                self.events.push(now + gap, Event::App { endpoint: e });
            }
        }
    }

    fn host_of(&self, e: u32) -> usize {
        // Nodes 0 and 1 are the routers; flow f's hosts follow as sender, receiver.
        2 + e as usize
    }

    fn collect(mut self, wall_seconds: f64) -> Results {
        let end = self.end;
        let mut flows = Vec::with_capacity(self.flows.len());
        let mut bursts = Vec::new();
        for (f, fl) in self.flows.iter().enumerate() {
            let (snd, rcv) = (&self.endpoints[2 * f], &self.endpoints[2 * f + 1]);
            let finished = rcv.finished_at;
            let silence_end = finished.unwrap_or(end).max(fl.start);
            let longest = fl.longest_silence.max(silence_end.saturating_since(fl.last_progress));
            flows.push(FlowRow {
                flow_id: f as u32,
                group: fl.group,
                app: fl.app,
                rtt_ms: fl.rtt.as_nanos() as f64 / 1e6,
                start_ns: fl.start.as_nanos(),
                end_ns: finished.map(|t| t.as_nanos()),
                size_bytes: fl.size_bytes,
                bytes_delivered: rcv.stats.bytes_delivered,
                segments_sent: snd.stats.segments_sent,
                retransmits: snd.stats.retransmits,
                timeouts: snd.stats.timeouts,
                syn_timeouts: snd.stats.syn_timeouts,
                fast_retransmits: snd.stats.fast_retransmits,
                longest_silence_ns: if fl.start >= end { 0 } else { longest.as_nanos() },
                slice_bytes: fl.slice_bytes.clone(),
            });
            for &(sent, acked) in &snd.completed_bursts {
                bursts.push(BurstRow { flow_id: f as u32, sent_ns: sent.as_nanos(), acked_ns: Some(acked.as_nanos()) });
            }
            for sent in snd.outstanding_bursts() {
                bursts.push(BurstRow { flow_id: f as u32, sent_ns: sent.as_nanos(), acked_ns: None });
            }
        }
        let duration = end.as_nanos();
        let links = self
            .links
            .iter_mut()
            .filter(|l| l.name.starts_with("bottleneck"))
            .map(|l| LinkRow::from_link(l, end, duration))
            .collect();
        let packets = self.links.iter().map(|l| l.tx_pkts).sum();
        Results {
            seed: self.seed,
            duration_ns: duration,
            slice_ns: self.slice.as_nanos(),
            events: self.events.events_processed(),
            packets,
            wall_seconds,
            flows,
            links,
            bursts,
        }
    }
}

/// Validates and runs a scenario.
pub fn simulate(sc: &Scenario) -> Result<Results, ConfigError> {
    Ok(Simulator::new(sc)?.run())
}
