//! The simulator: one object owns every node, link, endpoint and event, so several runs can
//! live in one process. Time advances from event to event; ties go in insertion order.
//!
//! Workload model: a *unit* is one sender host and one receiver host of its own, joined to
//! the shared bottleneck by access links whose delays give the unit its base RTT. A unit is
//! a single flow (bulk, transfer, interactive), a session of back-to-back connections, a
//! web user with a pool of parallel connections, or a host pair of a Poisson arrival
//! process. Connections are opened by the data sender (the server pushes the object the
//! client implicitly asked for) and recorded one row each.

use crate::epochs::EpochRecorder;
use crate::flows::{is_over, push_rows, Conn, FinishedRows, RowContext};
use crate::config::{AppKind, MAX_UNITS, DiamondConfig, EdgeConfig, EdgeMark, FlowGroup, GapFrom, ReplayMode, Routing, Scenario,
    Spread, TopologyConfig, Transport};
use crate::event::{Event, EventQueue};
use crate::link::Link;
use crate::rcp::{RcpConn, RcpSender};
use crate::results::{LinkRow, QueueStateRow, Results, TraceRow, UnitRow};
use crate::tcp::compact::Opt64;
use crate::tcp::{Endpoint, State, TcpParams};
use crate::trace::Recorder;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use smallpipe_core::qdisc::{flow_hash, DropTailConfig};
use smallpipe_core::{Accounted, AnyQdisc, ConfigError, Duration, FlowKey, Instant, Packet, QdiscConfig, Rng};

enum Node {
    /// An end host: everything it sends leaves on one access link.
    Host { egress: u32 },
    /// Forwards by destination address.
    Router { routes: FxHashMap<u32, u32> },
}

/// What a unit's application does next.
enum UnitApp {
    /// One connection for the whole run.
    Single,
    /// Back-to-back connections.
    Session,
    /// Pages of objects over a pool of connections: objects of the page still to open.
    Web { to_open: u32 },
    /// Poisson arrivals with this mean gap.
    Poisson { mean_gap_s: f64 },
    /// A client of a replayed log: its requests (logged start time, bytes), in order.
    Replay { mode: ReplayMode, requests: VecDeque<(Instant, u64)> },
}

struct Unit {
    group: u32,
    sender_node: u32,
    receiver_node: u32,
    sender_ip: u32,
    receiver_ip: u32,
    rtt: Duration,
    rng: Rng,
    next_port: u16,
    app: UnitApp,
    /// Connections opened, and still open (the receiver has not had everything).
    opened: u32,
    open: u32,
    bytes_delivered: u64,
    /// User-perceived hang: the longest time, while at least one connection is open, in
    /// which none of them receives data (TAQ §2.3).
    last_progress: Instant,
    longest_hang: Duration,
    pages_done: u32,
}

/// Bytes an unlimited bulk sender has "written": more than any run can send.
const UNLIMITED_BYTES: u64 = 1 << 50;
/// Host addresses of the first units come from the benchmarking range 198.18.0.0/15, one
/// /16 per side; later units from 10.0.0.0/9 and 10.128.0.0/9 (room for 8 million), so
/// that the first units keep the addresses (and flow hashes) they always had.
const SENDER_NET: u32 = 0xC612_0000; // 198.18.0.0
const RECEIVER_NET: u32 = 0xC613_0000; // 198.19.0.0
const NARROW_UNITS: u32 = 0xFFFE; // .0.1 to .255.254
const WIDE_SENDER_NET: u32 = 0x0A00_0000; // 10.0.0.0
const WIDE_RECEIVER_NET: u32 = 0x0A80_0000; // 10.128.0.0
const SERVER_PORT: u16 = 80;
const FIRST_CLIENT_PORT: u16 = 1024;

pub struct Simulator {
    now: Instant,
    end: Instant,
    slice: Duration,
    n_slices: u32,
    seed: u64,
    events: EventQueue,
    nodes: Vec<Node>,
    links: Vec<Link>,
    endpoints: Vec<Endpoint>,
    demux: FxHashMap<FlowKey, u32>,
    groups: Vec<FlowGroup>,
    units: Vec<Unit>,
    /// Connections by slot (`crate::flows`); a freed slot waits on `free_slots`.
    conns: Vec<Conn>,
    free_slots: Vec<u32>,
    /// Connections opened so far: the next one's `flow_id`.
    flows_opened: u32,
    /// Whether slots of connections that are over are recycled (see `recycles`).
    recycle: bool,
    /// Slots whose connection may be over, checked after the event that named them.
    recycle_candidates: Vec<u32>,
    /// Rows of recycled connections not yet handed out (`take_finished`).
    finished: FinishedRows,
    /// Packets that reached a host after their connection was recycled (dropped there).
    packets_to_closed_flows: u64,
    params: TcpParams,
    scratch: Vec<Packet>,
    overhead: Duration,
    skipped_log_lines: u64,
    edge: EdgeConfig,
    /// The diamond's routing and its path 2 link (path 1 is link 0).
    diamond: Option<(DiamondConfig, u32)>,
    /// Diamond `lifetime` routing: packets the edge has seen per 5-tuple.
    edge_seen: FxHashMap<FlowKey, u32>,
    queue_states: Vec<QueueStateRow>,
    trace: Option<Trace>,
    /// Slices whose end has been passed and sampled (see `advance`).
    sampled_slices: u32,
    /// When `advance` was first called: the run's wall time excludes building it.
    wall_start: Option<std::time::Instant>,
    epochs: Option<EpochRecorder>,
    transport: Transport,
    /// With `transport = "rcp"`: the RCP sender of each connection (by connection index),
    /// which replaces the TCP endpoint `2c`.
    rcp: FxHashMap<u32, RcpConn>,
    /// The scenario's `[trace]` recorder; `None` (the default) costs one branch per hook.
    recorder: Option<Box<Recorder>>,
}

fn ms(v: f64) -> Duration {
    Duration((v * 1e6).round() as u64)
}
pub(crate) fn secs(v: f64) -> Duration {
    Duration((v * 1e9).round() as u64)
}

fn draw(spread: Spread, rng: &mut Rng) -> f64 {
    let (lo, hi) = spread.bounds();
    lo + (hi - lo) * rng.uniform()
}

impl Simulator {
    /// Builds the dumbbell: per-unit sender and receiver hosts around one bottleneck.
    pub fn new(sc: &Scenario) -> Result<Self, ConfigError> {
        sc.validate()?;
        let l = &sc.link;
        let rate = l.rate_bps as u64;
        let overhead = match sc.tcp.overhead_max_ms {
            Some(v) => ms(v),
            None => Duration::serialization(sc.tcp.packet_size_bytes as u64, rate),
        };
        let mut sim = Simulator {
            now: Instant::ZERO,
            end: Instant::ZERO + secs(sc.duration_s),
            slice: secs(sc.slice_s),
            n_slices: (sc.duration_s / sc.slice_s).ceil() as u32,
            seed: sc.seed,
            events: EventQueue::default(),
            nodes: vec![Node::Router { routes: FxHashMap::default() }, Node::Router { routes: FxHashMap::default() }],
            links: Vec::new(),
            endpoints: Vec::new(),
            demux: FxHashMap::default(),
            groups: sc.flows.clone(),
            units: Vec::new(),
            conns: Vec::new(),
            free_slots: Vec::new(),
            flows_opened: 0,
            recycle: recycles(sc),
            recycle_candidates: Vec::new(),
            finished: FinishedRows::default(),
            packets_to_closed_flows: 0,
            params: TcpParams::from_config(&sc.tcp).for_transport(sc.transport),
            scratch: Vec::new(),
            overhead,
            skipped_log_lines: 0,
            edge: sc.edge.clone(),
            diamond: None,
            edge_seen: FxHashMap::default(),
            queue_states: Vec::new(),
            trace: sc.trace_conn.map(|conn| Trace { conn, iss: None, rows: Vec::new() }),
            sampled_slices: 0,
            wall_start: None,
            epochs: sc.record_sender_epochs.then(EpochRecorder::default),
            transport: sc.transport,
            rcp: FxHashMap::default(),
            recorder: None,
        };
        sim.add_link("bottleneck", rate, ms(l.delay_ms), Duration::ZERO, l.loss, &l.queue, 1)?;
        sim.add_link("bottleneck_reverse", rate, ms(l.delay_ms), Duration::ZERO, l.reverse_loss, &l.reverse_queue, 0)?;
        if let TopologyConfig::Diamond(d) = &sc.topology {
            let q = d.path2_queue.as_ref().unwrap_or(&l.queue);
            let rate2 = d.path2_rate_bps.map_or(rate, |r| r as u64);
            let path2 = sim.add_link("bottleneck_path2", rate2, ms(l.delay_ms), Duration::ZERO, l.loss, q, 1)?;
            sim.diamond = Some((d.clone(), path2));
        }
        // Traced links are those made so far: the bottleneck directions and path 2.
        if let Some(t) = &sc.trace {
            let recorder = Recorder::new(t, &sim.links);
            if let Some(at) = recorder.first_sample() {
                sim.events.push(at, Event::TraceSample);
            }
            sim.recorder = Some(Box::new(recorder));
        }
        for (link, nth) in [(0, &l.drop_nth), (1, &l.reverse_drop_nth)] {
            let mut nth = nth.clone();
            nth.sort_unstable();
            sim.links[link].drop_nth = nth;
        }
        for (gi, g) in sc.flows.iter().enumerate() {
            match g.app {
                AppKind::Replay => sim.add_replay_clients(sc, gi)?,
                _ => {
                    for _ in 0..g.count {
                        let app = match g.app {
                            AppKind::Session => UnitApp::Session,
                            AppKind::Web => UnitApp::Web { to_open: 0 },
                            AppKind::Poisson => {
                                let per_s = g.rate_per_s.unwrap_or_else(|| {
                                    let mean_bytes = g.mean_size_bytes().expect("validated: finite mean");
                                    g.load.unwrap_or(1.0) * l.rate_bps / (8.0 * mean_bytes)
                                });
                                UnitApp::Poisson { mean_gap_s: g.count as f64 / per_s }
                            }
                            _ => UnitApp::Single,
                        };
                        let (u, start) = sim.add_unit(sc, gi, app)?;
                        // A Poisson process's first arrival also comes one gap after its start.
                        let unit = &mut sim.units[u as usize];
                        let first = match unit.app {
                            UnitApp::Poisson { mean_gap_s } => start + secs(unit.rng.exponential(mean_gap_s)),
                            _ => start,
                        };
                        sim.events.push(first, Event::Unit { unit: u });
                    }
                }
            }
        }
        Ok(sim)
    }

    /// A unit: its own sender and receiver hosts, access links whose delays give it its
    /// base RTT, and routes. Returns the unit and its start time.
    fn add_unit(&mut self, sc: &Scenario, gi: usize, app: UnitApp) -> Result<(u32, Instant), ConfigError> {
        let (l, g) = (&sc.link, &sc.flows[gi]);
        let u = self.units.len() as u32;
        if u as usize >= MAX_UNITS {
            return Err(ConfigError::new("flows", format!("more than {MAX_UNITS} units in all"),
                format!("at most {MAX_UNITS} flows, sessions, users, host pairs or log clients per run")));
        }
        let mut rng = Rng::new(sc.seed, 0x4000_0000 + u as u64);
        let rtt_ms = draw(g.rtt_ms, &mut rng);
        let start = Instant::ZERO + secs(draw(g.start_s, &mut rng));
        let sender_delay = ms(rtt_ms / 2.0 - l.delay_ms - l.receiver_delay_ms);
        let receiver_delay = ms(l.receiver_delay_ms);
        let access_rate = l.access_rate_bps as u64;
        let access_queue = QdiscConfig::DropTail(DropTailConfig { limit_pkts: Some(1000), limit_bytes: None });
        let (s_ip, d_ip) = unit_addresses(u);
        let s_node = self.nodes.len() as u32;
        let d_node = s_node + 1;
        let s_up = self.add_link(&format!("sender{u}_up"), access_rate, sender_delay, self.overhead, 0.0, &access_queue, 0)?;
        let s_down = self.add_link(&format!("sender{u}_down"), access_rate, sender_delay, Duration::ZERO, 0.0, &access_queue, s_node)?;
        let d_up = self.add_link(&format!("receiver{u}_up"), access_rate, receiver_delay, Duration::ZERO, 0.0, &access_queue, 1)?;
        let d_down = self.add_link(&format!("receiver{u}_down"), access_rate, receiver_delay, Duration::ZERO, 0.0, &access_queue, d_node)?;
        self.nodes.push(Node::Host { egress: s_up });
        self.nodes.push(Node::Host { egress: d_up });
        self.route(0, d_ip, 0);
        self.route(0, s_ip, s_down);
        self.route(1, d_ip, d_down);
        self.route(1, s_ip, 1);
        self.units.push(Unit {
            group: gi as u32,
            sender_node: s_node,
            receiver_node: d_node,
            sender_ip: s_ip,
            receiver_ip: d_ip,
            rtt: ms(rtt_ms),
            rng,
            next_port: FIRST_CLIENT_PORT,
            app,
            opened: 0,
            open: 0,
            bytes_delivered: 0,
            last_progress: start,
            longest_hang: Duration::ZERO,
            pages_done: 0,
        });
        Ok((u, start))
    }

    /// One unit per client of the group's Squid log, in order of first appearance.
    fn add_replay_clients(&mut self, sc: &Scenario, gi: usize) -> Result<(), ConfigError> {
        let g = &sc.flows[gi];
        let field = format!("flows[{gi}].log_path");
        let path = g.log_path.as_deref().unwrap_or_default();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(&field, path, format!("a readable UTF-8 file ({e})")))?;
        let log = crate::squid::parse_access_log(&text, &field, g.skip_malformed).map_err(|mut e| {
            e.value = format!("{path}: {}", e.value);
            e
        })?;
        self.skipped_log_lines += log.skipped;
        let mut clients: Vec<(String, VecDeque<(Instant, u64)>)> = Vec::new();
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        for r in &log.requests {
            let i = *index.entry(r.client.as_str()).or_insert_with(|| {
                clients.push((r.client.clone(), VecDeque::new()));
                clients.len() - 1
            });
            clients[i].1.push_back((Instant::ZERO + secs(r.time_s), r.bytes.max(1)));
        }
        for (_, requests) in clients {
            let (u, start) = self.add_unit(sc, gi, UnitApp::Replay { mode: g.replay, requests })?;
            // Logged times are offset by the unit's start: that is when the client wants each object.
            let UnitApp::Replay { requests, .. } = &mut self.units[u as usize].app else { unreachable!() };
            for r in requests.iter_mut() {
                r.0 += start - Instant::ZERO;
            }
            match g.replay {
                // Each request is its own event.
                ReplayMode::Logged => {
                    let times: Vec<Instant> = requests.iter().map(|&(t, _)| t).collect();
                    for t in times {
                        self.events.push(t, Event::Unit { unit: u });
                    }
                }
                ReplayMode::Asap => self.events.push(start, Event::Unit { unit: u }),
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn add_link(&mut self, name: &str, rate_bps: u64, delay: Duration, jitter: Duration, loss: f64,
                queue: &QdiscConfig, to_node: u32) -> Result<u32, ConfigError> {
        let id = self.links.len() as u32;
        let mut queue = queue.clone();
        queue.set_link(rate_bps, delay.as_nanos());
        let q = Accounted::new(queue.build()?, Rng::new(self.seed, 0x2000_0000 + id as u64));
        // Only reported links keep a delay histogram (35 KB each; access links are many).
        let q = if is_reported(name) { q.with_delay_histogram() } else { q };
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
        while !self.advance(u64::MAX) {}
        self.finish()
    }

    /// Processes at most `max_events` more events (in the same order as one uninterrupted
    /// run: pausing keeps all state); returns whether the scenario's end was reached. A
    /// caller that runs in chunks can check for signals and report progress in between.
    pub fn advance(&mut self, max_events: u64) -> bool {
        self.wall_start.get_or_insert_with(std::time::Instant::now);
        for _ in 0..max_events {
            let Some(t) = self.events.peek_time().filter(|&t| t < self.end) else {
                return true;
            };
            while self.sampled_slices < self.n_slices && t >= self.slice_end(self.sampled_slices) {
                self.sample_queue_states(self.sampled_slices);
                self.sampled_slices += 1;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            debug_assert!(t >= self.now, "causality");
            self.now = t;
            self.handle(ev);
        }
        false
    }

    /// Simulated time reached: the time of the last event processed.
    pub fn now_ns(&self) -> u64 {
        self.now.as_nanos()
    }

    /// The scenario's end.
    pub fn end_ns(&self) -> u64 {
        self.end.as_nanos()
    }

    /// The length of a slice (`FlowRow::first_slice` counts them).
    pub fn slice_ns(&self) -> u64 {
        self.slice.as_nanos()
    }

    /// Collects the results after `advance` returned true.
    pub fn finish(mut self) -> Results {
        for k in self.sampled_slices..self.n_slices {
            self.sample_queue_states(k);
        }
        self.now = self.end;
        let wall = self.wall_start.map_or(0.0, |w| w.elapsed().as_secs_f64());
        self.collect(wall)
    }

    /// Collects the results of a run stopped before its end: they cover simulated time up
    /// to `now_ns()` (the duration and the last slice end there), as if the scenario had
    /// been that long.
    pub fn finish_early(mut self) -> Results {
        // At least 1 ns, so that rates over the duration stay defined.
        self.end = self.now.max(Instant::ZERO + Duration(1));
        self.n_slices = self.n_slices.min((self.now.as_nanos() / self.slice.as_nanos()) as u32 + 1);
        self.finish()
    }

    fn slice_end(&self, k: u32) -> Instant {
        (Instant::ZERO + Duration(self.slice.as_nanos() * (k as u64 + 1))).min(self.end)
    }

    /// At the end of slice `k`: TAQ queues' flows by state and packets by queue, and the
    /// senders' own states with `record_sender_epochs`.
    fn sample_queue_states(&mut self, k: u32) {
        let at = self.slice_end(k);
        if let Some(rec) = self.epochs.as_mut() {
            let taq = match self.links[0].queue.inner() {
                AnyQdisc::Taq(taq) => Some(taq),
                _ => None,
            };
            let senders = self.conns.iter().enumerate().map(|(c, conn)| (conn.flow_id, &self.endpoints[2 * c], !conn.done));
            rec.record(k, at, senders, self.params.mss, taq);
        }
        for l in &self.links {
            if let AnyQdisc::Taq(taq) = l.queue.inner() {
                let s = taq.taq_snapshot(at);
                self.queue_states.push(QueueStateRow {
                    link: l.name.clone(),
                    slice: k,
                    time_ns: at.as_nanos(),
                    flows_by_state: s.flows_by_state,
                    queue_pkts: s.queue_pkts,
                });
            }
        }
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::TxDone { link } => {
                let l = &mut self.links[link as usize];
                let sent = l.sending;
                if let Some(at) = l.finish_tx(self.now) {
                    self.events.push(at, Event::Arrive { link });
                }
                if let (Some(r), Some(pkt)) = (self.recorder.as_mut().filter(|r| r.traces(link)), &sent) {
                    r.on_departure(pkt, self.now);
                }
                self.start_tx(link);
                // The two bottleneck directions (links 0 and 1) pass one box: what one
                // sends, the other's queue sees as its reverse direction (TAQ's ACKs).
                if link < 2 {
                    if let Some(pkt) = sent {
                        self.links[1 - link as usize].queue.observe_reverse(&pkt, self.now);
                    }
                }
            }
            Event::Arrive { link } => {
                let l = &mut self.links[link as usize];
                let to = l.to_node;
                let (pkt, next) = l.arrive();
                if let Some(at) = next {
                    self.events.push(at, Event::Arrive { link });
                }
                match pkt {
                    Ok(pkt) => self.deliver(to, pkt),
                    Err(lost) => {
                        if let Some(r) = self.recorder.as_mut().filter(|r| r.traces(link)) {
                            r.on_link_loss(link, &lost, self.now, &self.demux);
                        }
                        left_network(&self.demux, &mut self.conns, &mut self.recycle_candidates, [&lost]);
                    }
                }
            }
            Event::Timer { endpoint, gen } if self.transport == Transport::Rcp && endpoint.is_multiple_of(2) => {
                let Some(r) = self.rcp.get_mut(&(endpoint / 2)) else { return };
                if r.sender.timer_gen != gen {
                    return; // superseded
                }
                r.sender.timer_armed = None;
                let mut out = std::mem::take(&mut self.scratch);
                r.sender.on_timer(self.now, &self.params, &mut out);
                self.after_rcp(endpoint / 2, out);
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
            Event::App { endpoint } => self.write_burst(endpoint),
            Event::Unit { unit } => self.unit_event(unit),
            Event::TraceSample => self.trace_sample(),
        }
        while let Some(c) = self.recycle_candidates.pop() {
            self.try_recycle(c as usize);
        }
    }

    /// A sample of the `[trace]` time series, and the next one if it falls inside the run.
    fn trace_sample(&mut self) {
        let Some(r) = self.recorder.as_mut() else { return };
        let conns = &self.conns;
        r.sample(self.now, &self.links, &self.endpoints, |c| !conns[c].done);
        let next = r.next_sample(self.now);
        if next < self.end {
            self.events.push(next, Event::TraceSample);
        }
    }

    /// A unit starts, ends a think time, or sees a Poisson arrival.
    fn unit_event(&mut self, u: u32) {
        let unit = &mut self.units[u as usize];
        let g = &self.groups[unit.group as usize];
        match &mut unit.app {
            UnitApp::Single => {
                let size = match g.app {
                    AppKind::Interactive => Some(0),
                    _ => g.size_bytes,
                };
                self.open_conn(u, size);
            }
            UnitApp::Session => {
                let size = self.draw_size(u);
                self.open_conn(u, Some(size));
            }
            UnitApp::Web { to_open } => {
                *to_open = (g.objects_per_page.sample(&mut unit.rng).round() as u32).max(1);
                self.fill_pool(u);
            }
            UnitApp::Replay { mode: ReplayMode::Logged, requests } => {
                let (wanted, bytes) = requests.pop_front().expect("one event per logged request");
                let c = self.open_conn(u, Some(bytes));
                self.conns[c as usize].requested = Opt64::some(wanted);
            }
            UnitApp::Replay { mode: ReplayMode::Asap, .. } => self.fill_pool(u),
            UnitApp::Poisson { mean_gap_s } => {
                let gap = secs(unit.rng.exponential(*mean_gap_s));
                self.events.push(self.now + gap, Event::Unit { unit: u });
                let size = self.draw_size(u);
                self.open_conn(u, Some(size));
            }
        }
    }

    fn draw_size(&mut self, u: u32) -> u64 {
        let unit = &mut self.units[u as usize];
        self.groups[unit.group as usize].draw_size(&mut unit.rng)
    }

    /// Web and as-fast-as-possible replay: open connections while the pool has room and
    /// there is something to fetch.
    fn fill_pool(&mut self, u: u32) {
        loop {
            let unit = &mut self.units[u as usize];
            if unit.open >= self.groups[unit.group as usize].connections {
                return;
            }
            let (size, wanted) = match &mut unit.app {
                UnitApp::Web { to_open } if *to_open > 0 => {
                    *to_open -= 1;
                    (self.draw_size(u), None)
                }
                UnitApp::Replay { requests, .. } => match requests.pop_front() {
                    Some((t, bytes)) => (bytes, Some(t)),
                    None => return,
                },
                _ => return,
            };
            let c = self.open_conn(u, Some(size));
            self.conns[c as usize].requested = wanted.map_or(Opt64::NONE, Opt64::some);
        }
    }

    /// Opens a connection of the unit in a free slot (or a new one) and returns the slot;
    /// `size` None is unlimited, Some(0) writes nothing.
    fn open_conn(&mut self, u: u32, size: Option<u64>) -> u32 {
        let flow_id = self.flows_opened;
        self.flows_opened += 1;
        let reused = self.free_slots.pop();
        let c = reused.unwrap_or(self.conns.len() as u32);
        let unit = &mut self.units[u as usize];
        let unit_group = unit.group;
        let port = unit.next_port;
        unit.next_port = if port == u16::MAX { FIRST_CLIENT_PORT } else { port + 1 };
        let key = FlowKey { src_ip: unit.sender_ip, dst_ip: unit.receiver_ip, src_port: port, dst_port: SERVER_PORT, proto: 6 };
        let (iss_s, iss_r) = (unit.rng.next_u64() as u32, unit.rng.next_u64() as u32);
        if unit.open == 0 {
            unit.last_progress = self.now; // a hang is counted only while something is open
        }
        unit.opened += 1;
        unit.open += 1;
        self.demux.insert(key, 2 * c);
        self.demux.insert(key.reversed(), 2 * c + 1);
        let first_slice = (self.now.as_nanos() / self.slice.as_nanos()) as u32;
        let conn = Conn::new(flow_id, u, self.now, size, first_slice, self.groups[unit_group as usize].record_progress);
        let (mut snd, mut rcv) = (Endpoint::client(key, iss_s, &self.params), Endpoint::listener(key.reversed(), iss_r, &self.params));
        if reused.is_some() {
            // Generations go on from the freed endpoints', so their pending timer events stay stale.
            let at = 2 * c as usize;
            (snd.timer_gen, rcv.timer_gen) = (self.endpoints[at].timer_gen, self.endpoints[at + 1].timer_gen);
            self.endpoints[at] = snd;
            self.endpoints[at + 1] = rcv;
            self.conns[c as usize] = conn;
        } else {
            self.endpoints.push(snd);
            self.endpoints.push(rcv);
            self.conns.push(conn);
        }
        let mut out = std::mem::take(&mut self.scratch);
        if self.transport == Transport::Rcp {
            let (now, p) = (self.now, &self.params);
            let mut sender = RcpSender::new(key, iss_s, p);
            sender.timer_gen = self.endpoints[2 * c as usize].timer_gen;
            sender.connect(now, p, &mut out);
            sender.app_write(size.unwrap_or(UNLIMITED_BYTES), now, p, &mut out);
            if size.is_some() {
                sender.app_close(now, p, &mut out);
            }
            self.rcp.insert(c, RcpConn { sender, echo_kbps: None });
            self.after_rcp(c, out);
            return c;
        }
        let (now, p) = (self.now, &self.params);
        let ep = &mut self.endpoints[2 * c as usize];
        ep.connect(now, p, &mut out);
        match size {
            Some(0) => {} // interactive: bursts follow the handshake
            Some(bytes) => {
                ep.app_write(bytes, false, now, p, &mut out);
                ep.app_close(now, p, &mut out);
            }
            None => ep.app_write(UNLIMITED_BYTES, false, now, p, &mut out),
        }
        self.after_endpoint(2 * c, out);
        c
    }

    fn write_burst(&mut self, e: u32) {
        let c = (e / 2) as usize;
        let unit = &mut self.units[self.conns[c].unit as usize];
        let g = &self.groups[unit.group as usize];
        let ep = &mut self.endpoints[e as usize];
        if ep.failed {
            return;
        }
        let mut out = std::mem::take(&mut self.scratch);
        let burst = g.burst_bytes.map_or(self.params.mss, |b| b as u64);
        ep.app_write(burst, true, self.now, &self.params, &mut out);
        if g.gap_from == GapFrom::Send {
            let gap = secs(unit.rng.exponential(g.mean_gap_s));
            self.events.push(self.now + gap, Event::App { endpoint: e });
        }
        self.after_endpoint(e, out);
    }

    fn deliver(&mut self, node: u32, pkt: Packet) {
        match &self.nodes[node as usize] {
            Node::Router { routes } => {
                let mut link = *routes.get(&pkt.flow.dst_ip).expect("every host address is routed");
                if node == 0 && link == 0 {
                    link = self.diamond_path(&pkt);
                }
                self.enqueue(link, pkt);
            }
            Node::Host { .. } => {
                let Some(&e) = self.demux.get(&pkt.flow.reversed()) else {
                    self.packets_to_closed_flows += 1;
                    return;
                };
                let conn = &mut self.conns[(e / 2) as usize];
                conn.in_flight = conn.in_flight.saturating_sub(1); // its endpoint's event checks recycling
                let mut out = std::mem::take(&mut self.scratch);
                if let Some(r) = self.rcp.get_mut(&(e / 2)) {
                    if e.is_multiple_of(2) {
                        r.sender.on_segment(&pkt, self.now, &self.params, &mut out);
                        self.after_rcp(e / 2, out);
                        return;
                    }
                    r.echo_kbps = pkt.rcp_rate_kbps.or(r.echo_kbps);
                }
                self.endpoints[e as usize].on_segment(&pkt, self.now, &self.params, &mut out);
                self.after_endpoint(e, out);
            }
        }
    }

    /// The edge of the diamond picks a forward path (link 0 is path 1); on the dumbbell
    /// there is only link 0.
    fn diamond_path(&mut self, pkt: &Packet) -> u32 {
        let Some((d, path2)) = &self.diamond else { return 0 };
        let long = match d.routing {
            Routing::LoadBalanced => flow_hash(&pkt.flow, self.seed) & 1 == 1,
            Routing::Size => pkt.dscp != self.edge.dscp,
            Routing::Lifetime => {
                let seen = self.edge_seen.entry(pkt.flow).or_insert(0);
                *seen = seen.saturating_add(1);
                *seen > d.lifetime_pkts
            }
        };
        if long { *path2 } else { 0 }
    }

    fn enqueue(&mut self, link: u32, pkt: Packet) {
        let l = &mut self.links[link as usize];
        l.queue.enqueue(pkt, self.now);
        if let Some(r) = self.recorder.as_mut().filter(|r| r.traces(link)) {
            r.on_enqueue(link, &pkt, l.queue.last_drops(), self.now, &self.demux);
        }
        let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
        left_network(&self.demux, &mut self.conns, &mut self.recycle_candidates, dropped);
        self.start_tx(link);
    }

    /// An idle link takes its queue's next packet (traced: what the queue gave and dropped).
    fn start_tx(&mut self, link: u32) {
        let l = &mut self.links[link as usize];
        let idle = l.sending.is_none();
        if let Some(done) = l.start_tx(self.now) {
            self.events.push(done, Event::TxDone { link });
        }
        if let Some(r) = self.recorder.as_mut().filter(|r| idle && r.traces(link)) {
            r.on_dequeue(link, l.sending.as_ref(), l.queue.last_drops(), self.now, &self.demux);
        }
        if idle {
            let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
            left_network(&self.demux, &mut self.conns, &mut self.recycle_candidates, dropped);
        }
    }

    /// Sends what an endpoint emitted, re-arms its timer, records progress, and lets the
    /// application react to a finished connection or acknowledged burst.
    fn after_endpoint(&mut self, e: u32, mut out: Vec<Packet>) {
        let c = (e / 2) as usize;
        let u = self.conns[c].unit as usize;
        let node = if e.is_multiple_of(2) { self.units[u].sender_node } else { self.units[u].receiver_node };
        let Node::Host { egress } = self.nodes[node as usize] else { unreachable!("endpoints live on hosts") };
        let group_dscp = self.groups[self.units[u].group as usize].dscp;
        if let Some(trace) = self.trace.as_mut().filter(|t| t.conn == self.conns[c].flow_id && e.is_multiple_of(2)) {
            trace.record(&self.endpoints[e as usize], &out, self.now);
        }
        self.conns[c].in_flight += out.len() as u32;
        if self.recycle && self.endpoints[2 * c + 1].finished_at.is_some() {
            self.recycle_candidates.push(c as u32);
        }
        for mut pkt in out.drain(..) {
            if e.is_multiple_of(2) {
                pkt.dscp = group_dscp.unwrap_or_else(|| edge_mark(&self.edge, &mut self.conns[c]));
            } else if let Some(r) = self.rcp.get(&(c as u32)) {
                pkt.rcp_rate_kbps = r.echo_kbps;
            }
            self.enqueue(egress, pkt);
        }
        self.scratch = out;
        let now = self.now;
        let ep = &mut self.endpoints[e as usize];
        arm_timer(&mut self.events, now, e, ep.next_deadline(), &mut ep.timer_gen, &mut ep.timer_armed);
        let conn = &mut self.conns[c];
        let unit = &mut self.units[u];
        if e % 2 == 1 {
            let delivered = ep.stats.bytes_delivered;
            if delivered > conn.delivered_seen {
                let slice = ((now.as_nanos() / self.slice.as_nanos()) as u32).min(self.n_slices - 1);
                let idx = (slice - conn.first_slice) as usize;
                if conn.slice_bytes.len() <= idx {
                    conn.slice_bytes.resize(idx + 1, 0);
                }
                let new_bytes = delivered - conn.delivered_seen;
                conn.slice_bytes[idx] += new_bytes;
                conn.delivered_seen = delivered;
                conn.longest_silence = conn.longest_silence.max(now.saturating_since(conn.last_progress));
                conn.last_progress = now;
                unit.bytes_delivered += new_bytes;
                if let Some(progress) = &mut conn.progress {
                    let mss = self.params.mss;
                    let whole = delivered / mss + (ep.finished_at.is_some() && !delivered.is_multiple_of(mss)) as u64;
                    while (progress.len() as u64) < whole {
                        progress.push(now - conn.start);
                    }
                }
                unit.longest_hang = unit.longest_hang.max(now.saturating_since(unit.last_progress));
                unit.last_progress = now;
            }
            if ep.finished_at.is_some() && !conn.done {
                self.conn_done(c);
            }
            return;
        }
        if ep.failed && !conn.done {
            self.conn_done(c);
            return;
        }
        let g = &self.groups[unit.group as usize];
        if g.app != AppKind::Interactive {
            return;
        }
        if !conn.bursting {
            if ep.state == State::Established {
                conn.bursting = true;
                let gap = secs(unit.rng.exponential(g.mean_gap_s));
                self.events.push(now + gap, Event::App { endpoint: e });
            }
        } else if g.gap_from == GapFrom::Response && ep.completed_bursts.len() > conn.bursts_seen {
            conn.bursts_seen = ep.completed_bursts.len();
            let gap = secs(unit.rng.exponential(g.mean_gap_s));
            self.events.push(now + gap, Event::App { endpoint: e });
        }
    }

    /// Sends what an RCP sender emitted and re-arms its timer (its receiver is a TCP
    /// endpoint, handled by `after_endpoint`).
    fn after_rcp(&mut self, c: u32, mut out: Vec<Packet>) {
        let u = self.conns[c as usize].unit as usize;
        let Node::Host { egress } = self.nodes[self.units[u].sender_node as usize] else { unreachable!("senders live on hosts") };
        self.conns[c as usize].in_flight += out.len() as u32;
        if self.recycle && self.endpoints[2 * c as usize + 1].finished_at.is_some() {
            self.recycle_candidates.push(c);
        }
        for pkt in out.drain(..) {
            self.enqueue(egress, pkt);
        }
        self.scratch = out;
        let s = &mut self.rcp.get_mut(&c).expect("an RCP connection").sender;
        arm_timer(&mut self.events, self.now, 2 * c, s.next_deadline(), &mut s.timer_gen, &mut s.timer_armed);
        if s.failed && !self.conns[c as usize].done {
            self.conn_done(c as usize);
        }
    }

    /// The unit's row fields a connection's row takes.
    fn row_context(&self, u: u32) -> RowContext {
        let unit = &self.units[u as usize];
        RowContext {
            end: self.end,
            slice: self.slice,
            last_slice: self.n_slices - 1,
            unit_rtt: unit.rtt,
            group: unit.group,
            app: self.groups[unit.group as usize].app,
        }
    }

    /// If slot `c`'s connection is over (`flows::is_over`), builds its rows now (they are
    /// what `collect` would build at the end: nothing of it changes any more), drops its
    /// demultiplexing entries and RCP state, and frees the slot.
    fn try_recycle(&mut self, c: usize) {
        if !self.recycle || self.conns[c].freed {
            return;
        }
        let rcp = self.rcp.get(&(c as u32)).map(|r| &r.sender);
        let (snd, rcv) = (&self.endpoints[2 * c], &self.endpoints[2 * c + 1]);
        if !is_over(&self.conns[c], snd, rcp, rcv) {
            return;
        }
        let cx = self.row_context(self.conns[c].unit);
        push_rows(&mut self.conns[c], snd, rcp.map_or(&snd.stats, |r| &r.stats), rcv, &cx, &mut self.finished);
        // A later connection of the host pair on the same port (after the ports wrapped)
        // may own the key by now.
        for (key, e) in [(snd.key, 2 * c as u32), (rcv.key, 2 * c as u32 + 1)] {
            if self.demux.get(&key) == Some(&e) {
                self.demux.remove(&key);
            }
        }
        // Past every generation a pending timer event of the slot carries.
        let snd_gen = rcp.map_or(snd.timer_gen, |r| r.timer_gen).wrapping_add(1);
        self.endpoints[2 * c].timer_gen = snd_gen;
        self.endpoints[2 * c + 1].timer_gen = self.endpoints[2 * c + 1].timer_gen.wrapping_add(1);
        self.rcp.remove(&(c as u32));
        self.conns[c].freed = true;
        self.free_slots.push(c as u32);
    }

    /// Rows of the connections recycled since the last call, in flow_id order; what
    /// `finish` returns then holds only the rest. A caller streams them out so that a
    /// finished connection costs no memory.
    pub fn take_finished(&mut self) -> FinishedRows {
        let mut rows = std::mem::take(&mut self.finished);
        rows.sort();
        rows
    }

    /// Flow rows recycled and not yet taken (`take_finished`).
    pub fn finished_flows(&self) -> usize {
        self.finished.flows.len()
    }

    /// Slots of the connection table: the most connections held at once (open, or over
    /// but not yet recycled).
    pub fn slots(&self) -> usize {
        self.conns.len()
    }

    /// Disables recycling: every connection keeps its slot to the end, as before recycling
    /// existed (for tests that compare the two).
    pub fn without_recycling(mut self) -> Self {
        self.recycle = false;
        self
    }

    /// A connection delivered everything (or gave up): the application goes on.
    fn conn_done(&mut self, c: usize) {
        self.conns[c].done = true;
        let u = self.conns[c].unit;
        let unit = &mut self.units[u as usize];
        unit.open -= 1;
        let g = &self.groups[unit.group as usize];
        match unit.app {
            UnitApp::Session => {
                let think = secs(g.think_s.sample(&mut unit.rng));
                self.events.push(self.now + think, Event::Unit { unit: u });
            }
            UnitApp::Web { to_open } => {
                if to_open > 0 {
                    self.fill_pool(u);
                } else if unit.open == 0 {
                    unit.pages_done += 1;
                    let think = secs(g.think_s.sample(&mut unit.rng));
                    self.events.push(self.now + think, Event::Unit { unit: u });
                }
            }
            UnitApp::Replay { mode: ReplayMode::Asap, .. } => self.fill_pool(u),
            UnitApp::Single | UnitApp::Poisson { .. } | UnitApp::Replay { .. } => {}
        }
    }

    fn collect(mut self, wall_seconds: f64) -> Results {
        let end = self.end;
        let mut rows = std::mem::take(&mut self.finished);
        for c in 0..self.conns.len() {
            if self.conns[c].freed {
                continue;
            }
            let cx = self.row_context(self.conns[c].unit);
            let (snd, rcv) = (&self.endpoints[2 * c], &self.endpoints[2 * c + 1]);
            let snd_stats = self.rcp.get(&(c as u32)).map_or(&snd.stats, |r| &r.sender.stats);
            push_rows(&mut self.conns[c], snd, snd_stats, rcv, &cx, &mut rows);
        }
        rows.sort();
        let units = self
            .units
            .iter()
            .enumerate()
            .map(|(u, unit)| {
                let hang_to_end = if unit.open > 0 { end.saturating_since(unit.last_progress) } else { Duration::ZERO };
                UnitRow {
                    unit_id: u as u32,
                    group: unit.group,
                    app: self.groups[unit.group as usize].app,
                    rtt_ms: unit.rtt.as_nanos() as f64 / 1e6,
                    connections: unit.opened,
                    bytes_delivered: unit.bytes_delivered,
                    longest_hang_ns: unit.longest_hang.max(hang_to_end).as_nanos(),
                    pages_done: unit.pages_done,
                }
            })
            .collect();
        let duration = end.as_nanos();
        let links = self
            .links
            .iter_mut()
            .filter(|l| is_reported(&l.name))
            .map(|l| LinkRow::from_link(l, end, duration))
            .collect();
        let packets = self.links.iter().map(|l| l.tx_pkts).sum();
        let traces = self.recorder.take().map_or_else(Default::default, |mut r| {
            let conns = &self.conns;
            r.sample(self.now, &self.links, &self.endpoints, |c| !conns[c].done);
            r.finish()
        });
        Results {
            seed: self.seed,
            duration_ns: duration,
            slice_ns: self.slice.as_nanos(),
            events: self.events.events_processed(),
            packets,
            wall_seconds,
            flows: rows.flows,
            units,
            links,
            bursts: rows.bursts,
            progress: rows.progress,
            queue_states: std::mem::take(&mut self.queue_states),
            trace: self.trace.take().map_or_else(Vec::new, |t| t.rows),
            sender_epochs: self.epochs.take().map_or_else(Vec::new, |r| r.rows),
            traces,
            skipped_log_lines: self.skipped_log_lines,
            flows_opened: self.flows_opened,
            packets_to_closed_flows: self.packets_to_closed_flows,
        }
    }
}

/// Unit `u`'s sender and receiver addresses (see `SENDER_NET`).
fn unit_addresses(u: u32) -> (u32, u32) {
    if u < NARROW_UNITS {
        (SENDER_NET + u + 1, RECEIVER_NET + u + 1)
    } else {
        let i = u - NARROW_UNITS + 1;
        (WIDE_SENDER_NET + i, WIDE_RECEIVER_NET + i)
    }
}

/// Whether a scenario's connections are recycled: not when a table is keyed by slot (the
/// `[trace]` recorder, `trace_conn`, `record_sender_epochs` read every endpoint by index).
fn recycles(sc: &Scenario) -> bool {
    sc.trace.is_none() && sc.trace_conn.is_none() && !sc.record_sender_epochs
}

/// Packets that left the network (delivered, dropped by a queue, lost on a link): their
/// connections have that many fewer in flight; one with none left may be over.
fn left_network<'a>(demux: &FxHashMap<FlowKey, u32>, conns: &mut [Conn], candidates: &mut Vec<u32>,
                    pkts: impl IntoIterator<Item = &'a Packet>) {
    for pkt in pkts {
        let Some(&e) = demux.get(&pkt.flow.reversed()) else { continue };
        let conn = &mut conns[(e / 2) as usize];
        // Saturating: after ports wrap, a late packet of an old connection counts against the new one.
        conn.in_flight = conn.in_flight.saturating_sub(1);
        if conn.in_flight == 0 && conn.done {
            candidates.push(e / 2);
        }
    }
}

/// Lazy re-arming of an endpoint's timer: a later deadline keeps the earlier wake-up, which
/// re-arms; an earlier one supersedes it (a new generation).
fn arm_timer(events: &mut EventQueue, now: Instant, endpoint: u32, deadline: Option<Instant>, gen: &mut u32,
             armed: &mut Option<Instant>) {
    let Some(d) = deadline else { return };
    if armed.is_none_or(|a| d < a) {
        *gen = gen.wrapping_add(1);
        *armed = Some(d);
        events.push(d.max(now), Event::Timer { endpoint, gen: *gen });
    }
}

/// The DSCP the edge gives the next packet of a connection's sender.
fn edge_mark(edge: &EdgeConfig, conn: &mut Conn) -> u8 {
    let marked = match edge.mark {
        EdgeMark::None => false,
        EdgeMark::SizeOracle => {
            let limit = edge.threshold_bytes.expect("validated");
            conn.size_bytes.is_some_and(|s| s > 0 && s <= limit)
        }
        EdgeMark::FirstN => {
            conn.edge_pkts = conn.edge_pkts.saturating_add(1);
            conn.edge_pkts <= edge.in_pkts.expect("validated")
        }
    };
    if marked { edge.dscp } else { 0 }
}

/// `trace_conn`: the traced connection, its sender's ISS (from its first packet, the SYN),
/// and its rows.
struct Trace {
    conn: u32,
    iss: Option<u32>,
    rows: Vec<TraceRow>,
}

impl Trace {
    /// One row per packet the traced sender emitted in this event, or one window-only row
    /// if the event changed its cwnd or ssthresh without sending.
    fn record(&mut self, ep: &Endpoint, out: &[Packet], now: Instant) {
        let (cwnd_bytes, ssthresh_bytes) = (ep.cwnd_bytes(), ep.ssthresh_bytes());
        let row = |sent: bool, seq: u32, payload_len: u16, flags: u8| TraceRow {
            time_ns: now.as_nanos(), sent, seq, payload_len, flags, cwnd_bytes, ssthresh_bytes,
        };
        let Some(first) = out.first() else {
            let last = self.rows.last().map(|r| (r.cwnd_bytes, r.ssthresh_bytes));
            if last.is_some_and(|w| w != (cwnd_bytes, ssthresh_bytes)) {
                self.rows.push(row(false, 0, 0, 0));
            }
            return;
        };
        let iss = *self.iss.get_or_insert(first.seq);
        for pkt in out {
            self.rows.push(row(true, pkt.seq.wrapping_sub(iss), pkt.payload_len, pkt.flags.0));
        }
    }
}

/// The links the results table reports: the bottleneck's directions and the diamond's path 2.
fn is_reported(link_name: &str) -> bool {
    link_name.starts_with("bottleneck")
}

/// Validates and runs a scenario.
pub fn simulate(sc: &Scenario) -> Result<Results, ConfigError> {
    Ok(Simulator::new(sc)?.run())
}


#[cfg(test)]
mod tests {
    use super::*;

    fn conn(size: Option<u64>) -> Conn {
        Conn::new(0, 0, Instant::ZERO, size, 0, false)
    }

    /// Every unit up to the limit gets two addresses no other unit has, the first 65 534 in
    /// 198.18.0.0/16 and 198.19.0.0/16 as always, the rest in 10.0.0.0/8, none a network
    /// or broadcast address of its /16 or /9.
    #[test]
    fn unit_addresses_are_distinct_up_to_the_limit() {
        assert_eq!(unit_addresses(0), (0xC612_0001, 0xC613_0001));
        assert_eq!(unit_addresses(65_533), (0xC612_FFFE, 0xC613_FFFE));
        assert_eq!(unit_addresses(65_534), (0x0A00_0001, 0x0A80_0001));
        let last = MAX_UNITS as u32 - 1;
        let (s, d) = unit_addresses(last);
        assert!(s < 0x0A7F_FFFF && d < 0x0AFF_FFFF, "{s:#x} {d:#x}: inside the /9s, below their broadcast");
        let mut seen = rustc_hash::FxHashSet::default();
        for u in (0..MAX_UNITS as u32).step_by(5).chain([last]) { // last % 5 != 0
            let (s, d) = unit_addresses(u);
            assert!(seen.insert(s) && seen.insert(d), "unit {u}");
        }
    }

    #[test]
    fn edge_marks_by_size_oracle_or_the_first_n_packets() {
        let edge = |mark, threshold, n| EdgeConfig { mark, threshold_bytes: threshold, in_pkts: n, dscp: 10 };
        let oracle = edge(EdgeMark::SizeOracle, Some(1000), None);
        assert_eq!(edge_mark(&oracle, &mut conn(Some(1000))), 10);
        assert_eq!(edge_mark(&oracle, &mut conn(Some(1001))), 0);
        assert_eq!(edge_mark(&oracle, &mut conn(None)), 0, "unlimited bulk is not short");
        assert_eq!(edge_mark(&oracle, &mut conn(Some(0))), 0, "interactive has no size");
        let first3 = edge(EdgeMark::FirstN, None, Some(3));
        let mut c = conn(Some(10_000));
        let marks: Vec<u8> = (0..5).map(|_| edge_mark(&first3, &mut c)).collect();
        assert_eq!(marks, [10, 10, 10, 0, 0]);
        assert_eq!(edge_mark(&edge(EdgeMark::None, None, None), &mut conn(Some(1))), 0);
    }

    /// The forward bottleneck's TAQ sees the reverse bottleneck's ACKs (`observe_reverse`),
    /// so its flows get two-way epochs: at least the 200 ms propagation RTT, at most that
    /// plus a full 50-packet buffer of 1500-byte packets at 1 Mbit/s (600 ms) and slack.
    #[test]
    fn forward_taq_observes_the_reverse_bottleneck() {
        let sc = Scenario::from_json(
            r#"{"duration_s":5,"link":{"rate_bps":1000000,"queue":{"kind":"taq"}},"tcp":{"delayed_ack":false},
                "flows":[{"app":"bulk","count":4,"rtt_ms":200}]}"#,
        )
        .unwrap();
        let mut sim = Simulator::new(&sc).unwrap();
        while let Some((t, ev)) = sim.events.pop() {
            if t >= sim.end {
                break;
            }
            sim.now = t;
            sim.handle(ev);
        }
        let now = sim.now;
        let AnyQdisc::Taq(taq) = sim.links[0].queue.inner() else { panic!("taq on the bottleneck") };
        let s = taq.taq_snapshot(now);
        assert_eq!((s.flows_tracked, s.two_way_flows), (4, 4));
        let epoch_ms = s.mean_epoch_ns as f64 / 1e6;
        assert!((200.0..1000.0).contains(&epoch_ms), "{epoch_ms} ms");
    }

    /// Sampling TAQ's state at every slice end must not change the run: the same scenario
    /// with 1 s and 30 s slices delivers the same bytes with the same retransmissions.
    #[test]
    fn sampling_queue_states_does_not_change_the_run() {
        let run = |slice_s: f64| {
            let json = format!(
                r#"{{"duration_s":60,"slice_s":{slice_s},"link":{{"rate_bps":500000,"queue":{{"kind":"taq","limit_pkts":25}}}},
                    "tcp":{{"delayed_ack":false,"packet_size_bytes":500}},"flows":[{{"app":"bulk","count":40,"rtt_ms":200}}]}}"#
            );
            let r = simulate(&Scenario::from_json(&json).unwrap()).unwrap();
            let per_flow: Vec<(u64, u64)> = r.flows.iter().map(|f| (f.bytes_delivered, f.retransmits)).collect();
            (per_flow, r.queue_states.len())
        };
        let (fine, fine_rows) = run(1.0);
        let (coarse, coarse_rows) = run(30.0);
        assert_eq!((fine_rows, coarse_rows), (60, 2));
        assert_eq!(fine, coarse);
    }

    /// A mix of workloads (bulk, web, interactive, sessions) over TAQ with a traced flow:
    /// every table of the results is non-empty.
    const MIXED: &str = r#"{"duration_s":40,"slice_s":3,"trace_conn":0,
        "link":{"rate_bps":400000,"queue":{"kind":"taq","limit_pkts":30}},
        "tcp":{"delayed_ack":false,"packet_size_bytes":500},
        "flows":[{"app":"bulk","count":6,"rtt_ms":[100,300],"record_progress":true},
                 {"app":"web","count":3,"rtt_ms":150,"size_bytes":20000},
                 {"app":"interactive","count":2,"rtt_ms":120,"burst_bytes":100,"mean_gap_s":1.0},
                 {"app":"session","count":3,"rtt_ms":200,"size_bytes":30000}]}"#;

    /// The results without the wall time, which no two runs share.
    fn comparable(mut r: Results) -> String {
        r.wall_seconds = 0.0;
        format!("{r:?}")
    }

    /// Running in chunks (as the Python bindings do, to see Ctrl-C) must not change the
    /// run: chunks of 1, 7, 13 and 997 events in turn give the results of one `run`.
    #[test]
    fn running_in_chunks_of_odd_sizes_gives_the_same_results() {
        let sc = Scenario::from_json(MIXED).unwrap();
        let whole = simulate(&sc).unwrap();
        assert!(!whole.bursts.is_empty() && !whole.queue_states.is_empty() && !whole.trace.is_empty());
        let mut sim = Simulator::new(&sc).unwrap();
        let mut chunks = [1, 7, 13, 997].into_iter().cycle();
        let mut calls = 0;
        while !sim.advance(chunks.next().unwrap()) {
            calls += 1;
        }
        assert!(calls > 100, "{calls} chunks");
        assert_eq!(comparable(sim.finish()), comparable(whole));
    }

    /// A run stopped early covers the time up to where it stopped: its duration is that
    /// time, and every slice that ended before the stop holds the bytes the full run
    /// delivered in it (the simulation is causal: later events cannot change them).
    #[test]
    fn a_run_stopped_early_is_a_prefix_of_the_full_run() {
        let sc = Scenario::from_json(MIXED).unwrap();
        let whole = simulate(&sc).unwrap();
        let mut sim = Simulator::new(&sc).unwrap();
        while sim.now_ns() < 17_500_000_000 {
            assert!(!sim.advance(1));
        }
        let stopped_ns = sim.now_ns();
        let part = sim.finish_early();
        assert_eq!(part.duration_ns, stopped_ns);
        let complete_slices = (stopped_ns / part.slice_ns) as u32; // slices 0 to 4 end by 15 s
        assert_eq!(complete_slices, 5);
        let bytes = |r: &Results| -> Vec<(u32, u32, u64)> {
            r.flows
                .iter()
                .flat_map(|f| f.slice_bytes.iter().enumerate().map(move |(i, &b)| (f.flow_id, f.first_slice + i as u32, b)))
                .filter(|&(_, k, _)| k < complete_slices)
                .collect()
        };
        assert!(!bytes(&part).is_empty());
        assert_eq!(bytes(&part), bytes(&whole));
        assert!(part.flows.iter().all(|f| f.first_slice + f.slice_bytes.len() as u32 <= complete_slices + 1));
        assert!(part.flows.len() <= whole.flows.len());
        let states = |r: &Results| r.queue_states.iter().filter(|q| q.slice < complete_slices).map(|q| format!("{q:?}")).collect::<Vec<_>>();
        assert_eq!(states(&part), states(&whole));
    }
}
