//! Connections' endpoints: opening a connection in a slot, demultiplexing by 5-tuple, what
//! follows an endpoint's (or RCP sender's) output — sending, timers, progress — the end of a
//! connection, and recycling its slot (`crate::flows`).

use super::topology::Node;
use super::udp_flows::{udp_dropped, UdpFlow, UDP_HANDLE};
use super::units::UnitApp;
use super::Simulator;
use crate::config::{AppKind, EdgeConfig, EdgeMark, GapFrom, ReplayMode, Scenario, Transport};
use crate::event::{Event, EventQueue};
use crate::flows::{is_over, push_rows, Conn, FinishedRows, RowContext};
use crate::rcp::{RcpConn, RcpSender};
use crate::tcp::{Endpoint, State};
use rustc_hash::FxHashMap;
use smallpipe_core::{Duration, FlowKey, Instant, Packet};

/// Bytes an unlimited bulk sender has "written": more than any run can send.
const UNLIMITED_BYTES: u64 = 1 << 50;

const SERVER_PORT: u16 = 80;
pub(super) const FIRST_CLIENT_PORT: u16 = 1024;

impl Simulator {
    /// Opens a connection of the unit in a free slot (or a new one) and returns the slot;
    /// `size` None is unlimited, Some(0) writes nothing.
    pub(super) fn open_conn(&mut self, u: u32, size: Option<u64>) -> u32 {
        let flow_id = self.flows_opened;
        self.flows_opened += 1;
        let reused = self.free_slots.pop();
        let c = reused.unwrap_or(self.conns.len() as u32);
        let unit = &mut self.units[u as usize];
        let unit_group = unit.group;
        let p = &self.params[unit.tcp as usize];
        let port = unit.next_port;
        unit.next_port = if port == u16::MAX { FIRST_CLIENT_PORT } else { port + 1 };
        let key = FlowKey { src_ip: unit.sender_ip, dst_ip: unit.receiver_ip, src_port: port, dst_port: SERVER_PORT, proto: 6 };
        let (iss_s, iss_r) = (unit.rng.next_u64() as u32, unit.rng.next_u64() as u32);
        if unit.open == 0 {
            unit.last_progress = self.now; // a hang is counted only while something is open
        }
        unit.opened += 1;
        unit.open += 1;
        // A connection still open on this port (the unit's ports wrapped) loses its keys.
        for (k, e) in [(key, 2 * c), (key.reversed(), 2 * c + 1)] {
            if let Some(previous) = self.demux.insert(k, e) {
                self.conns[(previous / 2) as usize].owns_keys = false;
            }
        }
        let first_slice = (self.now.as_nanos() / self.slice.as_nanos()) as u32;
        let conn = Conn::new(flow_id, u, self.now, size, first_slice, self.groups[unit_group as usize].record_progress);
        let (mut snd, mut rcv) = (Endpoint::client(key, iss_s, p), Endpoint::listener(key.reversed(), iss_r, p));
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
            let now = self.now;
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
        let now = self.now;
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

    /// Sends what an endpoint emitted, re-arms its timer, records progress, and lets the
    /// application react to a finished connection or acknowledged burst.
    pub(super) fn after_endpoint(&mut self, e: u32, mut out: Vec<Packet>) {
        let c = (e / 2) as usize;
        let u = self.conns[c].unit as usize;
        let node = if e.is_multiple_of(2) { self.units[u].sender_node } else { self.units[u].receiver_node };
        let Node::Host { egress } = self.nodes[node as usize] else { unreachable!("endpoints live on hosts") };
        let group_dscp = self.groups[self.units[u].group as usize].dscp;
        if let Some(trace) = self.trace.as_mut().filter(|t| t.conn == self.conns[c].flow_id && e.is_multiple_of(2)) {
            trace.record(&self.endpoints[e as usize], &out, self.now);
        }
        if let Some(r) = self.recorder.as_mut().filter(|_| e.is_multiple_of(2)) {
            r.on_sender_emit(e / 2, &out, self.now);
        }
        self.conns[c].in_flight += out.len() as u32;
        if self.recycle && self.endpoints[2 * c + 1].finished_at.is_some() {
            self.recycle_candidates.push(c as u32);
        }
        for mut pkt in out.drain(..) {
            pkt.runtime_handle = e;
            if e.is_multiple_of(2) {
                pkt.dscp = group_dscp.unwrap_or_else(|| edge_mark(&self.edge, &mut self.conns[c]));
            } else if let Some(r) = self.rcp.get(&(c as u32)) {
                pkt.rcp_rate_kbps = r.echo_kbps;
            }
            self.host_send(egress, pkt);
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
                    let mss = self.params[unit.tcp as usize].mss;
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
                let gap = Duration::from_secs_f64(unit.rng.exponential(g.mean_gap_s));
                self.events.push(now + gap, Event::App { endpoint: e });
            }
        } else if g.gap_from == GapFrom::Response && ep.completed_bursts.len() > conn.bursts_seen {
            conn.bursts_seen = ep.completed_bursts.len();
            let gap = Duration::from_secs_f64(unit.rng.exponential(g.mean_gap_s));
            self.events.push(now + gap, Event::App { endpoint: e });
        }
    }

    /// Sends what an RCP sender emitted and re-arms its timer (its receiver is a TCP
    /// endpoint, handled by `after_endpoint`).
    pub(super) fn after_rcp(&mut self, c: u32, mut out: Vec<Packet>) {
        let u = self.conns[c as usize].unit as usize;
        let Node::Host { egress } = self.nodes[self.units[u].sender_node as usize] else { unreachable!("senders live on hosts") };
        self.conns[c as usize].in_flight += out.len() as u32;
        if self.recycle && self.endpoints[2 * c as usize + 1].finished_at.is_some() {
            self.recycle_candidates.push(c);
        }
        for mut pkt in out.drain(..) {
            pkt.runtime_handle = 2 * c;
            self.host_send(egress, pkt);
        }
        self.scratch = out;
        let s = &mut self.rcp.get_mut(&c).expect("an RCP connection").sender;
        arm_timer(&mut self.events, self.now, 2 * c, s.next_deadline(), &mut s.timer_gen, &mut s.timer_armed);
        if s.failed && !self.conns[c as usize].done {
            self.conn_done(c as usize);
        }
    }

    /// The unit's row fields a connection's row takes.
    pub(super) fn row_context(&self, u: u32) -> RowContext {
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
    pub(super) fn try_recycle(&mut self, c: usize) {
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
        self.conns[c].owns_keys = false;
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
                let think = Duration::from_secs_f64(g.think_s.sample(&mut unit.rng));
                self.events.push(self.now + think, Event::Unit { unit: u });
            }
            UnitApp::Web { to_open } => {
                if to_open > 0 {
                    self.fill_pool(u);
                } else if unit.open == 0 {
                    unit.pages_done += 1;
                    let think = Duration::from_secs_f64(g.think_s.sample(&mut unit.rng));
                    self.events.push(self.now + think, Event::Unit { unit: u });
                }
            }
            UnitApp::Replay { mode: ReplayMode::Asap, .. } => self.fill_pool(u),
            UnitApp::Single | UnitApp::Poisson { .. } | UnitApp::Replay { .. } => {}
            UnitApp::Udp { .. } => unreachable!("a UDP unit opens no connection"),
        }
    }
}

/// Whether a scenario's connections are recycled: not when a table is keyed by slot (a
/// `[trace]` recorder that reads connections, `trace_conn`, `record_sender_epochs` read
/// every endpoint by index); a recorder of the links' series alone reads none.
pub(super) fn recycles(sc: &Scenario) -> bool {
    sc.trace.as_ref().is_none_or(|t| t.reads_links_only()) && sc.trace_conn.is_none() && !sc.record_sender_epochs
}

/// The endpoint a packet is for, as demultiplexing by its 5-tuple finds it. The endpoint
/// that sent it stamped itself in the packet's runtime handle (`after_endpoint`), so the
/// answer is that endpoint's peer, without a hash lookup, while its connection still owns
/// both keys and the peer's key is the packet's; otherwise (the slot was reused, or a later
/// connection took the port) the map decides.
#[inline]
pub(super) fn addressee(demux: &FxHashMap<FlowKey, u32>, conns: &[Conn], endpoints: &[Endpoint], pkt: &Packet) -> Option<u32> {
    let e = pkt.runtime_handle ^ 1;
    let key = pkt.flow.reversed();
    match endpoints.get(e as usize) {
        Some(peer) if conns[(e / 2) as usize].owns_keys && peer.key == key => Some(e),
        _ => demux.get(&key).copied(),
    }
}

/// Packets that left the network (delivered, dropped by a queue, lost on a link): their
/// connections have that many fewer in flight; one with none left may be over.
#[inline]
pub(super) fn left_network<'a>(demux: &FxHashMap<FlowKey, u32>, endpoints: &[Endpoint], conns: &mut [Conn],
                               candidates: &mut Vec<u32>, udp: &mut [UdpFlow], pkts: impl IntoIterator<Item = &'a Packet>) {
    for pkt in pkts {
        if pkt.runtime_handle & UDP_HANDLE != 0 {
            udp_dropped(udp, pkt);
            continue;
        }
        let Some(e) = addressee(demux, conns, endpoints, pkt) else { continue };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(size: Option<u64>) -> Conn {
        Conn::new(0, 0, Instant::ZERO, size, 0, false)
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
}
