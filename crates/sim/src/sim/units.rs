//! Units and their applications. A *unit* is one sender host and one receiver host of its
//! own, joined to the shared bottleneck by access links whose delays give the unit its base
//! RTT. A unit is a single flow (bulk, transfer, interactive), a session of back-to-back
//! connections, a web user with a pool of parallel connections, a host pair of a Poisson
//! arrival process, or a client of a replayed log. This file builds units and decides when
//! they open connections and write interactive bursts.

use super::endpoints::FIRST_CLIENT_PORT;
use super::topology::Node;
use super::udp_flows::UdpFlow;
use crate::udp::UdpSchedule;
use super::Simulator;
use crate::config::{AppKind, GapFrom, ReplayMode, Scenario, Spread, MAX_UNITS};
use crate::event::Event;
use crate::tcp::compact::Opt64;
use rustc_hash::FxHashMap;
use smallpipe_core::qdisc::DropTailConfig;
use smallpipe_core::{ConfigError, Duration, Instant, QdiscConfig, Rng};
use std::collections::VecDeque;

/// What a unit's application does next.
pub(super) enum UnitApp {
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
    /// A UDP source: its flow in `Simulator::udp`.
    Udp { flow: u32 },
}

pub(super) struct Unit {
    pub(super) group: u32,
    pub(super) sender_node: u32,
    pub(super) receiver_node: u32,
    pub(super) sender_ip: u32,
    pub(super) receiver_ip: u32,
    pub(super) rtt: Duration,
    pub(super) rng: Rng,
    pub(super) next_port: u16,
    /// Index of the unit's TCP knobs in `Simulator::params` (its group's).
    pub(super) tcp: u16,
    pub(super) app: UnitApp,
    /// Connections opened, and still open (the receiver has not had everything).
    pub(super) opened: u32,
    pub(super) open: u32,
    pub(super) bytes_delivered: u64,
    /// User-perceived hang: the longest time, while at least one connection is open, in
    /// which none of them receives data (TAQ §2.3).
    pub(super) last_progress: Instant,
    pub(super) longest_hang: Duration,
    pub(super) pages_done: u32,
}

/// Host addresses of the first units come from the benchmarking range 198.18.0.0/15, one
/// /16 per side; later units from 10.0.0.0/9 and 10.128.0.0/9 (room for 8 million), so
/// that the first units keep the addresses (and flow hashes) they always had.
const SENDER_NET: u32 = 0xC612_0000; // 198.18.0.0
const RECEIVER_NET: u32 = 0xC613_0000; // 198.19.0.0
const NARROW_UNITS: u32 = 0xFFFE; // .0.1 to .255.254
const WIDE_SENDER_NET: u32 = 0x0A00_0000; // 10.0.0.0
const WIDE_RECEIVER_NET: u32 = 0x0A80_0000; // 10.128.0.0

fn draw(spread: Spread, rng: &mut Rng) -> f64 {
    let (lo, hi) = spread.bounds();
    lo + (hi - lo) * rng.uniform()
}

impl Simulator {
    /// A unit: its own sender and receiver hosts, access links whose delays give it its
    /// base RTT, and routes. Returns the unit and its start time.
    pub(super) fn add_unit(&mut self, sc: &Scenario, gi: usize, app: UnitApp) -> Result<(u32, Instant), ConfigError> {
        let (l, g) = (&sc.link, &sc.flows[gi]);
        let u = self.units.len() as u32;
        if u as usize >= MAX_UNITS {
            return Err(ConfigError::new("flows", format!("more than {MAX_UNITS} units in all"),
                format!("at most {MAX_UNITS} flows, sessions, users, host pairs or log clients per run")));
        }
        let mut rng = Rng::new(sc.seed, 0x4000_0000 + u as u64);
        let rtt_ms = draw(g.rtt_ms, &mut rng);
        let start = Instant::ZERO + Duration::from_secs_f64(draw(g.start_s, &mut rng));
        let sender_delay = Duration::from_millis_f64(rtt_ms / 2.0 - l.delay_ms - l.receiver_delay_ms);
        let receiver_delay = Duration::from_millis_f64(l.receiver_delay_ms);
        let access_rate = l.access_rate_bps as u64;
        let access_queue = QdiscConfig::DropTail(DropTailConfig::packets(1000));
        let (s_ip, d_ip) = unit_addresses(u);
        let s_node = self.nodes.len() as u32;
        let d_node = s_node + 1;
        let group_tcp = self.group_tcp[gi];
        let s_up = self.add_link(&format!("sender{u}_up"), access_rate, sender_delay, group_tcp.overhead, 0.0, &access_queue, 0)?;
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
            rtt: Duration::from_millis_f64(rtt_ms),
            rng,
            next_port: FIRST_CLIENT_PORT,
            tcp: group_tcp.params,
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

    /// The group's UDP flows: a unit each, whose source draws on the unit's own stream.
    pub(super) fn add_udp_units(&mut self, sc: &Scenario, gi: usize) -> Result<(), ConfigError> {
        let src = sc.flows[gi].udp_source().map_err(|e| e.within(&format!("flows[{gi}]")))?.expect("a UDP app");
        for _ in 0..sc.flows[gi].count {
            let flow = self.udp.len() as u32;
            let (u, start) = self.add_unit(sc, gi, UnitApp::Udp { flow })?;
            let mut schedule = UdpSchedule::new(src, Rng::new(sc.seed, 0x6000_0000 + u64::from(u)));
            let first = start + Duration::from_secs_f64(schedule.next_gap_s());
            self.udp.push(UdpFlow { unit: u, schedule, sent_pkts: 0, sent_bytes: 0, delivered_pkts: 0, delivered_bytes: 0,
                dropped_pkts: 0, dropped_bytes: 0, delay_sum_ns: 0, delay_max_ns: 0 });
            self.events.push(first, Event::Unit { unit: u });
        }
        Ok(())
    }

    /// One unit per client of the group's Squid log, in order of first appearance.
    pub(super) fn add_replay_clients(&mut self, sc: &Scenario, gi: usize) -> Result<(), ConfigError> {
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
            clients[i].1.push_back((Instant::ZERO + Duration::from_secs_f64(r.time_s), r.bytes.max(1)));
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

    /// A unit starts, ends a think time, or sees a Poisson arrival.
    pub(super) fn unit_event(&mut self, u: u32) {
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
            UnitApp::Udp { flow } => {
                let flow = *flow;
                self.udp_send(flow);
            }
            UnitApp::Poisson { mean_gap_s } => {
                let gap = Duration::from_secs_f64(unit.rng.exponential(*mean_gap_s));
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
    pub(super) fn fill_pool(&mut self, u: u32) {
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

    pub(super) fn write_burst(&mut self, e: u32) {
        let c = (e / 2) as usize;
        let unit = &mut self.units[self.conns[c].unit as usize];
        let g = &self.groups[unit.group as usize];
        let ep = &mut self.endpoints[e as usize];
        if ep.failed {
            return;
        }
        let p = &self.params[unit.tcp as usize];
        let mut out = std::mem::take(&mut self.scratch);
        let burst = g.burst_bytes.map_or(p.mss, |b| b as u64);
        ep.app_write(burst, true, self.now, p, &mut out);
        if g.gap_from == GapFrom::Send {
            let gap = Duration::from_secs_f64(unit.rng.exponential(g.mean_gap_s));
            self.events.push(self.now + gap, Event::App { endpoint: e });
        }
        self.after_endpoint(e, out);
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
