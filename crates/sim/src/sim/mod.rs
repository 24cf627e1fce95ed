//! The simulator: one object owns every node, link, endpoint and event, so several runs can
//! live in one process. Time advances from event to event; ties go in insertion order.
//! This file holds the `Simulator` itself, its construction and the event loop; the rest is
//! split by responsibility:
//! - `topology`: nodes, links, routes, forwarding;
//! - `units`: the workload model (units and their applications);
//! - `endpoints`: connections, demultiplexing, timers, recycling;
//! - `recorders`: queue states, traces, collecting the results.
//!
//! Connections are opened by the data sender (the server pushes the object the client
//! implicitly asked for) and recorded one row each.

mod endpoints;
mod recorders;
mod topology;
mod udp_flows;
mod units;

use self::endpoints::{left_network, recycles};
use self::recorders::Trace;
use self::topology::Node;
use self::units::{Unit, UnitApp};
use crate::config::{AppKind, DiamondConfig, EdgeConfig, FifoHops, FlowGroup, LinkConfig, Scenario, TcpConfig, TopologyConfig, Transport};
use crate::epochs::EpochRecorder;
use crate::event::{Event, EventQueue};
use crate::flows::{Conn, FinishedRows};
use crate::link::Link;
use crate::prefetch::prefetch;
use crate::rcp::RcpConn;
use crate::results::{QueueStateRow, Results};
use crate::tcp::{Endpoint, TcpParams};
use crate::trace::Recorder;
use crate::trace_config::{parse_host, HostSide};
use rustc_hash::FxHashMap;
use smallpipe_core::link::{DeliveryTrace, TraceServer};
use std::sync::Arc;
use smallpipe_core::{AnyQdisc, ConfigError, Duration, FlowKey, Instant, Packet, Qdisc, Rng};

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
    /// The distinct TCP knobs of the run's groups (`Scenario::group_tcp`); a unit's endpoints
    /// use `params[unit.tcp]`, so a connection costs no more memory than with one table.
    params: Vec<TcpParams>,
    group_tcp: Vec<GroupTcp>,
    scratch: Vec<Packet>,
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
    /// UDP flows (`udp_flows`), by their unit's `UnitApp::Udp` index.
    udp: Vec<udp_flows::UdpFlow>,
}


impl Simulator {
    /// Builds the dumbbell: per-unit sender and receiver hosts around one bottleneck.
    pub fn new(sc: &Scenario) -> Result<Self, ConfigError> {
        sc.validate()?;
        let l = &sc.link;
        // A traced bottleneck's nominal rate is its trace's capacity (`from_json` has put it
        // in `rate_bps` already; a scenario built in code may not have).
        let rate = match &l.trace {
            Some(p) => LinkConfig::trace_rate_bps(&DeliveryTrace::load("link.trace", p)?) as u64,
            None => l.rate_bps as u64,
        };
        let (params, group_tcp) = distinct_params(sc, rate)?;
        let mut sim = Simulator {
            now: Instant::ZERO,
            end: Instant::ZERO + Duration::from_secs_f64(sc.duration_s),
            slice: Duration::from_secs_f64(sc.slice_s),
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
            params,
            group_tcp,
            scratch: Vec::new(),
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
            udp: Vec::new(),
        };
        sim.add_link("bottleneck", rate, Duration::from_millis_f64(l.delay_ms), Duration::ZERO, l.loss, &l.queue, 1)?;
        sim.add_link("bottleneck_reverse", rate, Duration::from_millis_f64(l.delay_ms), Duration::ZERO, l.reverse_loss, &l.reverse_queue, 0)?;
        if let TopologyConfig::Diamond(d) = &sc.topology {
            let q = d.path2_queue.as_ref().unwrap_or(&l.queue);
            let rate2 = d.path2_rate_bps.map_or(rate, |r| r as u64);
            let path2 = sim.add_link("bottleneck_path2", rate2, Duration::from_millis_f64(l.delay_ms), Duration::ZERO, l.loss, q, 1)?;
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
        sim.shape_bottleneck(l)?;
        for (link, nth) in [(0, &l.drop_nth), (1, &l.reverse_drop_nth)] {
            let mut nth = nth.clone();
            nth.sort_unstable();
            sim.links[link].drop_nth = nth;
        }
        for (gi, g) in sc.flows.iter().enumerate() {
            match g.app {
                AppKind::Replay => sim.add_replay_clients(sc, gi)?,
                _ if g.app.udp().is_some() => sim.add_udp_units(sc, gi)?,
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
                            UnitApp::Poisson { mean_gap_s } => start + Duration::from_secs_f64(unit.rng.exponential(mean_gap_s)),
                            _ => start,
                        };
                        sim.events.push(first, Event::Unit { unit: u });
                    }
                }
            }
        }
        if let Some(t) = sc.trace.as_ref().filter(|t| !t.pcap_hosts.is_empty()) {
            let hosts = t.pcap_hosts.iter().map(|name| sim.host(name)).collect::<Result<Vec<_>, _>>()?;
            sim.recorder.as_mut().expect("made with [trace]").capture_hosts(hosts);
        }
        if sc.fifo_hops == FifoHops::Computed {
            for link in 0..sim.links.len() as u32 {
                sim.links[link as usize].computed = sim.may_compute_hops(link);
            }
            for link in 0..sim.links.len() as u32 {
                if sim.may_chain_hop(link) {
                    sim.chain_hop(link);
                }
            }
        }
        Ok(sim)
    }

    /// The end host `name` names (`trace.pcap_hosts`: `sender<u>` or `receiver<u>`), as
    /// `(name, node, egress link)`.
    fn host(&self, name: &str) -> Result<(String, u32, u32), ConfigError> {
        let (side, u) = parse_host(name).expect("trace.pcap_hosts validated");
        let Some(unit) = self.units.get(u as usize) else {
            return Err(ConfigError::new("trace.pcap_hosts", format!("{name:?}"),
                format!("the hosts of the run's units: sender<u> or receiver<u>, u in [0, {})", self.units.len())));
        };
        let node = match side {
            HostSide::Sender => unit.sender_node,
            HostSide::Receiver => unit.receiver_node,
        };
        let Node::Host { egress } = self.nodes[node as usize] else { unreachable!("units' nodes are hosts") };
        Ok((name.to_string(), node, egress))
    }

    /// Whether `link` may run computed (`fifo_hops = "computed"`): its discipline is a FIFO
    /// whose drops depend on its backlog only (DropTail), and nothing needs its state or its
    /// departures between events: the `[trace]` recorder watches none of its hooks, the other
    /// bottleneck direction does not read its departures (`observe_reverse`: TAQ), and its
    /// random stream is not shared by jitter (drawn at departure, which computed links draw
    /// when the packet is offered) and loss (drawn at arrival), whose draws would interleave
    /// in another order.
    fn may_compute_hops(&self, link: u32) -> bool {
        let l = &self.links[link as usize];
        let fifo = matches!(l.queue.inner(), AnyQdisc::DropTail(_));
        let traced = self.recorder.as_ref().is_some_and(|r| r.traces(link));
        let departures_observed = link < 2 && self.links[1 - link as usize].queue.inner().observes_reverse();
        let shared_rng = (l.loss > 0.0 || l.burst_loss.is_some()) && l.jitter_max > Duration::ZERO;
        fifo && !traced && !departures_observed && !shared_rng && l.trace.is_none()
    }

    /// The bottleneck's delivery traces, bursty loss and framing (`LinkConfig`); path 2
    /// of the diamond is framed as path 1.
    fn shape_bottleneck(&mut self, l: &LinkConfig) -> Result<(), ConfigError> {
        let forward = l.trace.as_deref().map(|p| DeliveryTrace::load("link.trace", p)).transpose()?.map(Arc::new);
        let reverse = match &l.reverse_trace {
            Some(p) => Some(Arc::new(DeliveryTrace::load("link.reverse_trace", p)?)),
            None => forward.clone(),
        };
        let framing = l.framing().map_err(|e| e.within("link"))?;
        for (link, trace, model) in [(0, forward, &l.loss_model), (1, reverse, &l.reverse_loss_model)] {
            let link = &mut self.links[link];
            link.trace = trace.map(TraceServer::new);
            link.burst_loss = model.map(|m| m.build()).transpose().map_err(|e| e.within("link"))?;
            link.framing = framing;
        }
        if let Some((_, path2)) = &self.diamond {
            self.links[*path2 as usize].framing = framing;
        }
        Ok(())
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
        let mut refills = self.events.refills();
        for _ in 0..max_events {
            let Some(t) = self.events.peek_time().filter(|&t| t < self.end) else {
                return true;
            };
            while self.sampled_slices < self.n_slices && t >= self.slice_end(self.sampled_slices) {
                self.sample_queue_states(self.sampled_slices);
                self.sampled_slices += 1;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            if self.events.refills() != refills {
                refills = self.events.refills();
                self.prefetch_window();
            }
            self.prefetch_upcoming();
            if let Event::Arrive { link } = ev {
                self.prefetch_addressee(link);
            }
            debug_assert!(t >= self.now, "causality");
            self.now = t;
            self.handle(ev);
        }
        false
    }

    /// Asks the cache for what the next two arrivals will read first, while this event is
    /// handled: the next one's packet (the head of its link's pipe, written one propagation
    /// delay ago and cold by now) and the link state of the one after, which the next
    /// event's prefetch of its pipe head then reads (`Link::prefetch_arrival_state`).
    /// Hints only: what is handled, and in which order, does not change.
    #[inline]
    fn prefetch_upcoming(&self) {
        let (next, after) = self.events.upcoming();
        if let Some(Event::Arrive { link }) = next {
            self.links[link as usize].prefetch_pipe_head();
        }
        if let Some(Event::Arrive { link }) = after {
            self.links[link as usize].prefetch_arrival_state();
        }
    }

    /// An arrival at a host: asks for the endpoint its packet is for and its connection
    /// (`endpoints::addressee`), named by the packet's handle, while the link hands the
    /// packet over. The packet itself was asked for one event ago (`prefetch_upcoming`).
    #[inline]
    fn prefetch_addressee(&self, link: u32) {
        let l = &self.links[link as usize];
        if !matches!(self.nodes[l.to_node as usize], Node::Host { .. }) {
            return;
        }
        let Some(pkt) = l.pipe_head() else { return };
        let e = (pkt.runtime_handle ^ 1) as usize;
        if let (Some(endpoint), Some(conn)) = (self.endpoints.get(e), self.conns.get(e / 2)) {
            prefetch(&endpoint.key);
            prefetch(&conn.in_flight);
        }
    }

    /// A new window of events began: asks the cache for the link state its arrivals read
    /// first, some microseconds before they pop.
    fn prefetch_window(&self) {
        for ev in self.events.window() {
            if let Event::Arrive { link } = ev {
                self.links[link as usize].prefetch_arrival_state();
            }
        }
    }

    /// Simulated time reached: the time of the last event processed.
    pub fn now_ns(&self) -> u64 {
        self.now.as_nanos()
    }

    /// The scenario's end.
    pub fn end_ns(&self) -> u64 {
        self.end.as_nanos()
    }

    /// Whether finished connections' state is freed during the run (`endpoints::recycles`).
    pub fn recycles_connections(&self) -> bool {
        self.recycle
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

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::TxDone { link } => {
                let l = &mut self.links[link as usize];
                if l.sending.is_none() {
                    // A traced link's wake-up at a delivery opportunity.
                    l.wake();
                    return self.start_tx(link);
                }
                let sent = l.sending;
                if let Some(at) = l.finish_tx(self.now) {
                    self.schedule_arrival(link, at);
                }
                if let (Some(r), Some(pkt)) = (self.recorder.as_mut().filter(|r| r.hooks(link)), &sent) {
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
                    self.schedule_arrival(link, at);
                }
                match pkt {
                    Ok(pkt) => self.deliver(to, pkt),
                    Err(lost) => {
                        if let Some(r) = self.recorder.as_mut().filter(|r| r.hooks(link)) {
                            r.on_link_loss(link, &lost, self.now, &self.demux);
                        }
                        left_network(&self.demux, &self.endpoints, &mut self.conns, &mut self.recycle_candidates, &mut self.udp, [&lost]);
                    }
                }
            }
            Event::Timer { endpoint, gen } if self.transport == Transport::Rcp && endpoint.is_multiple_of(2) => {
                let tcp = self.tcp_of(endpoint);
                let Some(r) = self.rcp.get_mut(&(endpoint / 2)) else { return };
                if r.sender.timer_gen != gen {
                    return; // superseded
                }
                r.sender.timer_armed = None;
                let mut out = std::mem::take(&mut self.scratch);
                r.sender.on_timer(self.now, &self.params[tcp], &mut out);
                self.after_rcp(endpoint / 2, out);
            }
            Event::Timer { endpoint, gen } => {
                let p = &self.params[self.tcp_of(endpoint)];
                let ep = &mut self.endpoints[endpoint as usize];
                if ep.timer_gen != gen {
                    return; // superseded
                }
                ep.timer_armed = None;
                let mut out = std::mem::take(&mut self.scratch);
                ep.on_timer(self.now, p, &mut out);
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

    /// The index into `params` of endpoint `e`'s knobs (its unit's group's).
    fn tcp_of(&self, e: u32) -> usize {
        self.units[self.conns[(e / 2) as usize].unit as usize].tcp as usize
    }
}

/// A group's TCP as its units are built with it.
#[derive(Debug, Clone, Copy)]
struct GroupTcp {
    /// Index of its knobs in `Simulator::params`.
    params: u16,
    /// Its senders' processing delay bound (`overhead_max_ms`, or one bottleneck
    /// transmission of the group's full-size packet).
    overhead: Duration,
}

/// The distinct TCP knobs of the scenario's groups, and what each group takes of them.
fn distinct_params(sc: &Scenario, rate_bps: u64) -> Result<(Vec<TcpParams>, Vec<GroupTcp>), ConfigError> {
    let mut configs: Vec<TcpConfig> = Vec::new();
    let mut group_tcp = Vec::with_capacity(sc.flows.len());
    for gi in 0..sc.flows.len() {
        let tcp = sc.group_tcp(gi)?;
        let overhead = match tcp.overhead_max_ms {
            Some(v) => Duration::from_millis_f64(v),
            None => Duration::serialization(tcp.packet_size_bytes as u64, rate_bps),
        };
        let index = configs.iter().position(|c| *c == tcp).unwrap_or_else(|| {
            configs.push(tcp);
            configs.len() - 1
        });
        let index = u16::try_from(index).map_err(|_| ConfigError::new("flows", format!("more than {} distinct [flows.tcp] tables", u16::MAX),
            format!("at most {} (groups with equal tables share one)", u16::MAX)))?;
        group_tcp.push(GroupTcp { params: index, overhead });
    }
    // One jiffies clock for every host, as the testbed's namespaces share one kernel; where
    // it stands within a jiffy at time 0 is the seed's (its own stream: no other draw moves).
    let wheel_phase = configs.iter().find(|c| c.timer_wheel_hz > 0).map(|c| {
        let tick_ns = 1_000_000_000 / c.timer_wheel_hz as u64;
        Duration(Rng::new(sc.seed, JIFFIES_STREAM).below_inclusive(tick_ns - 1))
    });
    let params = configs.iter().map(|c| {
        let mut p = TcpParams::try_from(c)?.for_transport(sc.transport);
        p.timers.wheel_phase = p.timers.wheel_tick.and(wheel_phase).unwrap_or(Duration::ZERO);
        Ok(p)
    }).collect::<Result<_, ConfigError>>()?;
    Ok((params, group_tcp))
}

/// The random stream of the jiffies clock's phase (`tcp.timer_wheel_hz`).
const JIFFIES_STREAM: u64 = 0x71FF_0001;

/// Validates and runs a scenario.
pub fn simulate(sc: &Scenario) -> Result<Results, ConfigError> {
    Ok(Simulator::new(sc)?.run())
}


#[cfg(test)]
mod tests {
    use super::*;


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

    /// Every packet that reaches a host finds the endpoint that the 5-tuple map names
    /// (`endpoints::addressee`), also when its sender's slot was reused since and when its
    /// unit's ports wrapped while its connection was still open (one unit opens 75 000
    /// connections over 64 512 ports; a short queue's losses keep some of them open that
    /// long), which the map then sends to the newer connection.
    #[test]
    fn the_handle_finds_the_endpoint_the_map_names() {
        let sc = Scenario::from_json(
            r#"{"duration_s":3,"link":{"rate_bps":1e9,"queue":{"kind":"droptail","limit_pkts":40}},
                "tcp":{"delayed_ack":false},
                "flows":[{"app":"poisson","count":1,"rtt_ms":20,"rate_per_s":25000,
                          "size":{"dist":"pareto","mean":2000,"shape":1.2}}]}"#,
        )
        .unwrap();
        let mut sim = Simulator::new(&sc).unwrap();
        let (mut by_handle, mut to_newer, mut to_none) = (0, 0, 0);
        while let Some((t, ev)) = sim.events.pop() {
            if t >= sim.end {
                break;
            }
            if let Event::Arrive { link } = ev {
                let l = &sim.links[link as usize];
                if let (Node::Host { .. }, Some(pkt)) = (&sim.nodes[l.to_node as usize], l.pipe_head()) {
                    let map = sim.demux.get(&pkt.flow.reversed()).copied();
                    assert_eq!(endpoints::addressee(&sim.demux, &sim.conns, &sim.endpoints, pkt), map);
                    match map {
                        Some(e) if e == pkt.runtime_handle ^ 1 => by_handle += 1,
                        Some(_) => to_newer += 1,
                        None => to_none += 1,
                    }
                }
            }
            sim.now = t;
            sim.handle(ev);
        }
        assert!(sim.flows_opened > 65_000, "the ports wrapped: {} connections", sim.flows_opened);
        assert!(sim.conns.len() < sim.flows_opened as usize, "slots were reused: {} slots", sim.conns.len());
        assert!(to_newer > 0, "a packet of a connection whose port was taken: {by_handle} {to_newer} {to_none}");
        assert!(by_handle > 100 * (to_newer + to_none), "{by_handle} by handle, {to_newer} {to_none} not");
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

    /// The results without the wall time and the number of events (`fifo_hops` changes it).
    fn comparable_but_events(mut r: Results) -> String {
        r.events = 0;
        comparable(r)
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

    /// Runs `sc` to its end; also returns how many packets the access links after the
    /// bottleneck directions (`*_down`) were offered: the bottleneck's arrivals at its far
    /// ends, the events a chain saves.
    fn run_counting_far_end_arrivals(sc: &Scenario) -> (Results, u64) {
        let mut sim = Simulator::new(sc).unwrap();
        while !sim.advance(u64::MAX) {}
        let arrivals = sim.links.iter().filter(|l| l.name.ends_with("_down")).map(|l| l.queue.stats().arrived_pkts).sum();
        (sim.finish(), arrivals)
    }

    /// `fifo_hops = "computed"` on one flow, whose packets never tie with another flow's:
    /// every table is the same as with the events (the traced sender's per-packet rows too).
    /// Every link is an untraced DropTail, and both bottleneck directions are chained to the
    /// access links after them: the run saves one TxDone per transmission on each hop
    /// (`packets`) and one Arrive per packet the bottleneck brought to those access links
    /// (counted by their queues in the events run). The 20-packet buffer overflows (drops
    /// on the bottleneck) and the access links queue the sender's bursts, so the lazily
    /// settled dequeues matter.
    #[test]
    fn computed_hops_give_one_flows_tables_exactly() {
        let json = |hops: &str| format!(
            r#"{{"duration_s":30,"slice_s":0.7,"trace_conn":0,"fifo_hops":"{hops}",
                "link":{{"rate_bps":1500001,"delay_ms":7.3,"access_rate_bps":9999991,"queue":{{"kind":"droptail","limit_pkts":20}}}},
                "tcp":{{"delayed_ack":false}},"flows":[{{"app":"bulk","rtt_ms":93.7}}]}}"#
        );
        let run = |hops: &str| run_counting_far_end_arrivals(&Scenario::from_json(&json(hops)).unwrap());
        let ((events, far_end_arrivals), (computed, _)) = (run("events"), run("computed"));
        let bottleneck = &events.links[0];
        assert!(bottleneck.dropped_pkts > 0, "the buffer overflows");
        assert!(!events.trace.is_empty());
        assert!(far_end_arrivals > 0);
        assert_eq!(events.events - computed.events, events.packets + far_end_arrivals);
        assert_eq!(comparable_but_events(computed), comparable_but_events(events));
    }

    /// `fifo_hops = "computed"` where the links are watched: the mixed workloads with
    /// `[trace]` recording the bottleneck directions (their queue events, time series and
    /// pcap), over TAQ and over DropTail (whose bottleneck then keeps its events), give
    /// the tables and traces of the events; so does DropTail untraced (its directions
    /// chained); and running in odd chunks (the lazy dequeues and the chained packets
    /// offered ahead of time are pending at every pause) gives the results of one
    /// uninterrupted run.
    #[test]
    fn computed_hops_keep_traces_and_chunked_runs_exact() {
        const TRACE: &str = r#""trace":{"interval_s":0.25,"all_flows":true,"links":true,"events":true,"pcap":"departures"},"#;
        const DROPTAIL: &str = r#"{"kind":"droptail","limit_pkts":30}"#;
        for (queue, trace) in [(r#"{"kind":"taq","limit_pkts":30}"#, TRACE), (DROPTAIL, TRACE), (DROPTAIL, "")] {
            let mixed = MIXED.replacen(r#"{"kind":"taq","limit_pkts":30}"#, queue, 1);
            let with = |hops: &str| mixed.replacen('{', &format!(r#"{{{trace}"fifo_hops":"{hops}","#), 1);
            let events = simulate(&Scenario::from_json(&with("events")).unwrap()).unwrap();
            let sc = Scenario::from_json(&with("computed")).unwrap();
            // Untraced, the DropTail bottleneck's directions are chained.
            assert_eq!(Simulator::new(&sc).unwrap().links[0].chained, trace.is_empty(), "{queue}");
            let computed = simulate(&sc).unwrap();
            assert!(computed.events < events.events && computed.traces.events.is_empty() == trace.is_empty(), "{queue}");
            assert_eq!(comparable_but_events(computed), comparable_but_events(events), "{queue}");
            let whole = simulate(&sc).unwrap();
            let mut sim = Simulator::new(&sc).unwrap();
            let mut chunks = [1, 7, 13, 997].into_iter().cycle();
            while !sim.advance(chunks.next().unwrap()) {}
            assert_eq!(comparable(sim.finish()), comparable(whole), "{queue}");
        }
    }

    /// Which links run computed: the access links always (DropTail, untraced, no loss);
    /// a TAQ bottleneck never (not a FIFO) and nor the reverse direction whose departures
    /// TAQ reads (`observe_reverse`); FQ reads none, so its reverse direction runs computed;
    /// `[trace]` keeps the bottleneck directions it watches on events, and a lossy link
    /// with jitter keeps its random draws in event order. With the default, none.
    #[test]
    fn computed_hops_fall_back_where_something_watches_the_link() {
        let computed = |extra: &str, queue: &str| {
            let json = format!(r#"{{"fifo_hops":"computed",{extra}"link":{{"loss":0.01,"queue":{{"kind":"{queue}"}}}},
                "flows":[{{"app":"bulk","count":2}}]}}"#);
            let sim = Simulator::new(&Scenario::from_json(&json).unwrap()).unwrap();
            sim.links.iter().map(|l| l.computed).collect::<Vec<_>>()
        };
        let access = [true; 8];
        assert_eq!(computed("", "droptail"), [[true, true].as_slice(), &access].concat());
        assert_eq!(computed("", "taq"), [[false, false].as_slice(), &access].concat());
        assert_eq!(computed("", "fq"), [[false, true].as_slice(), &access].concat());
        assert_eq!(computed(r#""trace":{"links":true},"#, "droptail"), [[false, false].as_slice(), &access].concat());
        let sim = Simulator::new(&Scenario::from_json(r#"{"flows":[{"app":"bulk","count":2}]}"#).unwrap()).unwrap();
        assert!(sim.links.iter().all(|l| !l.computed));
        // The senders' up-links have jitter (processing delay); with loss they would share
        // the link's random stream.
        let mut sim = Simulator::new(&Scenario::from_json(
            r#"{"fifo_hops":"computed","flows":[{"app":"bulk","count":2}]}"#).unwrap()).unwrap();
        let up = sim.links.iter().position(|l| l.name == "sender0_up").unwrap();
        assert!(sim.links[up].jitter_max > Duration::ZERO && sim.may_compute_hops(up as u32));
        sim.links[up].loss = 0.01;
        assert!(!sim.may_compute_hops(up as u32));
    }

    /// Which bottleneck directions are chained to the access links after them
    /// (`may_chain_hop`): both on a lossless DropTail dumbbell whose access links are at
    /// least as fast as the bottleneck (equal rates too); not a direction that loses
    /// packets at arrival (`loss`, `drop_nth`), whose losses would be decided ahead of time;
    /// not the diamond's forward direction, as R2 is fed by both paths (its reverse
    /// direction is alone and chains); neither direction when the access links are slower
    /// than the bottleneck (their queues may grow without bound); no link with the events.
    /// Which access links schedule their arrivals after ties (`Simulator::chain_hop`).
    #[test]
    fn the_chain_falls_back_where_it_must() {
        let chained = |hops: &str, extra: &str, link: &str| {
            let json = format!(r#"{{"fifo_hops":"{hops}",{extra}"link":{{"rate_bps":1000000,{link}"queue":{{"kind":"droptail"}}}},
                "flows":[{{"app":"bulk","count":2}}]}}"#);
            let sim = Simulator::new(&Scenario::from_json(&json).unwrap()).unwrap();
            sim.links.iter().filter(|l| l.chained).map(|l| l.name.as_str()).collect::<Vec<_>>().join(" ")
        };
        let both = "bottleneck bottleneck_reverse";
        assert_eq!(chained("computed", "", ""), both);
        assert_eq!(chained("computed", "", r#""access_rate_bps":1000000,"#), both);
        assert_eq!(chained("computed", "", r#""loss":0.01,"#), "bottleneck_reverse");
        assert_eq!(chained("computed", "", r#""reverse_loss":0.01,"#), "bottleneck");
        assert_eq!(chained("computed", "", r#""drop_nth":[5],"#), "bottleneck_reverse");
        assert_eq!(chained("computed", r#""topology":{"kind":"diamond"},"#, ""), "bottleneck_reverse");
        assert_eq!(chained("computed", "", r#""access_rate_bps":999999,"#), "");
        assert_eq!(chained("events", "", ""), "");
        // The receivers' links (no delay, behind a bottleneck of 1 ms) schedule their
        // arrivals after the ties; the senders' (delay: half the 100 ms RTT less 1 ms) not.
        let sim = Simulator::new(&Scenario::from_json(
            r#"{"fifo_hops":"computed","flows":[{"app":"bulk","count":2,"rtt_ms":100}]}"#).unwrap()).unwrap();
        let after_ties: Vec<&str> = sim.links.iter().filter(|l| l.arrivals_after_ties).map(|l| l.name.as_str()).collect();
        assert_eq!(after_ties, ["receiver0_down", "receiver1_down"]);
    }

    /// Per-group `[flows.tcp]`: each group's sender sends its first flight by its own knobs.
    /// Half an RTT after the handshake no ACK of data is back, so a sender has sent its SYN
    /// and exactly its initial window, IW segments of its MSS (packet size less 40 header
    /// bytes and, with timestamps, 12 option bytes): group 0 IW 2 of 1500-byte packets
    /// (1448-byte MSS), group 1 IW 10 of 576-byte packets without timestamps (536), group 2
    /// the scenario's `[tcp]`, IW 4 of 1448.
    #[test]
    fn groups_send_their_first_flight_by_their_own_tcp_table() {
        let sc = Scenario::from_json(
            r#"{"duration_s":1,"link":{"rate_bps":10000000},"tcp":{"initial_window_pkts":4},
                "flows":[{"app":"bulk","rtt_ms":100,"tcp":{"initial_window_pkts":2}},
                         {"app":"bulk","rtt_ms":100,"tcp":{"initial_window_pkts":10,"packet_size_bytes":576,"timestamps":false}},
                         {"app":"bulk","rtt_ms":100}]}"#,
        )
        .unwrap();
        let mut sim = Simulator::new(&sc).unwrap();
        assert_eq!(sim.params.len(), 3);
        // The handshake takes one RTT (100 ms); data ACKs return one RTT after that.
        let stop = Instant::ZERO + Duration(150_000_000);
        while let Some((t, ev)) = sim.events.pop() {
            if t >= stop {
                break;
            }
            sim.now = t;
            sim.handle(ev);
        }
        let first_flight: Vec<(u64, u64)> = (0..3)
            .map(|c| {
                let snd = &sim.endpoints[2 * sim.conns.iter().position(|k| k.unit == c).unwrap()];
                (snd.stats.segments_sent - 1, snd.flight_bytes())
            })
            .collect();
        assert_eq!(first_flight, [(2, 2 * 1448), (10, 10 * 536), (4, 4 * 1448)]);
    }

    /// Groups with equal tables share one entry of `params`; without any `[flows.tcp]` the
    /// run has the one table it always had.
    #[test]
    fn equal_group_tables_share_one_params_entry() {
        let sc = Scenario::from_json(
            r#"{"tcp":{"initial_window_pkts":3},"flows":[{"app":"bulk"},{"app":"bulk","tcp":{"initial_window_pkts":3}},
                {"app":"bulk","tcp":{"smart_framing":true}},{"app":"bulk","tcp":{"smart_framing":true}}]}"#,
        )
        .unwrap();
        let sim = Simulator::new(&sc).unwrap();
        assert_eq!(sim.params.len(), 2);
        assert_eq!(sim.units.iter().map(|u| u.tcp).collect::<Vec<_>>(), [0, 0, 1, 1]);
        let sim = Simulator::new(&Scenario::from_json(r#"{"flows":[{"app":"bulk"},{"app":"web","size_bytes":1000}]}"#).unwrap()).unwrap();
        assert_eq!(sim.params.len(), 1);
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
