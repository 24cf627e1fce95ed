//! The box's counters: per side (frames not scheduled and why, frames sent, kernel drops),
//! per flow (a bounded table), and the snapshot the metrics thread reads. The exit tables
//! (`links.csv`, `queue_states.csv`, `lateness.csv`, `box.json`) are written from them.

use crate::io::KernelStats;
use crate::link::{LinkCumulative, LinkEmu};
use crate::parse::DropCause;
use hdrhistogram::Histogram;
use crate::config::{ClientAddresses, MetricsConfig};
use crate::delay_window::DelayWindow;
use rustc_hash::FxHashMap;
use std::net::IpAddr;
use smallpipe_core::qdisc::taq::{TaqQueue, TaqState};
use smallpipe_core::{AnyQdisc, DropReason, FlowKey, Instant, Packet, QdiscCounter, QdiscStats};
use std::fmt::Write as _;

pub const DIRECTIONS: [&str; 2] = ["a_to_b", "b_to_a"];
pub const SIDES: [&str; 2] = ["a", "b"];

/// Per side (index 0 = A, 1 = B).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoxStats {
    /// Frames received on the side and dropped before the discipline, by [`DropCause`].
    pub parse_drops: [[u64; DropCause::COUNT]; 2],
    /// Non-IP frames received on the side and forwarded at once.
    pub unscheduled: [u64; 2],
    /// Frames sent out of the side.
    pub sent: [u64; 2],
    /// Frames the kernel refused to send out of the side (full transmit queue).
    pub send_failed: [u64; 2],
    /// Receive-side kernel counters (`PACKET_STATISTICS`), read at the end of the run.
    pub kernel: [KernelStats; 2],
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowCounters {
    pub arrived_pkts: u64,
    pub arrived_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    pub dropped_pkts: u64,
}

/// One tracked flow: its real addresses (IPv6 in full; the 5-tuple key folds them), its
/// counters and when it was last seen (run time, ns), for eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEntry {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub counters: FlowCounters,
    pub last_ns: u64,
}

/// One client host (the address on side A, which faces the clients) per direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostEntry {
    pub counters: FlowCounters,
    pub last_ns: u64,
}

/// Per (direction, 5-tuple) and per (direction, client host) counters, each table at most
/// `capacity` entries. An entry idle for `idle_ns` goes at the next [`FlowTable::expire`]; a
/// new entry in a full table first evicts the least recently seen eighth, so a 5-tuple
/// flood costs O(1) amortized per packet and a scrape stays bounded.
#[derive(Debug, Clone)]
pub struct FlowTable {
    pub flows: FxHashMap<(u8, FlowKey), FlowEntry>,
    pub hosts: FxHashMap<(u8, IpAddr), HostEntry>,
    /// Deliveries and drops of packets whose flow was evicted while they were queued.
    pub untracked: FlowCounters,
    pub evicted_flows: u64,
    pub evicted_hosts: u64,
    /// Queue delay of departures per direction over the last seconds.
    pub delay: [DelayWindow; 2],
    pub labels: ClientLabels,
    capacity: usize,
    idle_ns: u64,
}

impl Default for FlowTable {
    fn default() -> Self {
        FlowTable::with_config(&MetricsConfig::default())
    }
}

/// Client addresses as metric labels: shown, hashed with a key drawn at start, or omitted.
#[derive(Debug, Clone)]
pub struct ClientLabels {
    pub policy: ClientAddresses,
    /// SipHash with a random key per process (`RandomState`): a label cannot be reversed
    /// by hashing every IPv4 address without the key, and changes at each start.
    key: std::hash::RandomState,
}

impl ClientLabels {
    pub fn new(policy: ClientAddresses) -> Self {
        ClientLabels { policy, key: std::hash::RandomState::new() }
    }

    /// The label of a client address, `None` when omitted.
    pub fn label(&self, addr: IpAddr) -> Option<String> {
        use std::hash::BuildHasher;
        match self.policy {
            ClientAddresses::Show => Some(addr.to_string()),
            ClientAddresses::Hash => Some(format!("h{:016x}", self.key.hash_one(addr))),
            ClientAddresses::Omit => None,
        }
    }
}

/// Make room for one more entry in `map` at `now_ns`: drop the idle, then (if still full)
/// the least recently seen eighth. Returns how many went.
fn make_room<K: Copy + Eq + std::hash::Hash, V>(map: &mut FxHashMap<K, V>, capacity: usize, now_ns: u64, idle_ns: u64,
                                                last: impl Fn(&V) -> u64) -> u64 {
    if map.len() < capacity {
        return 0;
    }
    let before = map.len();
    map.retain(|_, v| now_ns.saturating_sub(last(v)) < idle_ns);
    if map.len() >= capacity {
        let mut ages: Vec<u64> = map.values().map(&last).collect();
        let k = (capacity / 8).max(1);
        let cutoff = *ages.select_nth_unstable(k - 1).1;
        let full = map.len();
        map.retain(|_, v| last(v) >= cutoff);
        // Ties at the cutoff: evict just enough of them to have removed `k`.
        let mut left = k - (full - map.len());
        map.retain(|_, v| {
            let evict = left > 0 && last(v) == cutoff;
            left -= usize::from(evict);
            !evict
        });
    }
    (before - map.len()) as u64
}

impl FlowTable {
    pub fn with_config(m: &MetricsConfig) -> Self {
        FlowTable {
            flows: FxHashMap::default(), hosts: FxHashMap::default(), untracked: FlowCounters::default(),
            evicted_flows: 0, evicted_hosts: 0, delay: [DelayWindow::new(m.delay_window_s), DelayWindow::new(m.delay_window_s)],
            labels: ClientLabels::new(m.client_addresses), capacity: m.flow_table_capacity,
            idle_ns: m.flow_idle_timeout_s.saturating_mul(1_000_000_000),
        }
    }

    /// A packet of direction `dir` left the queue at `at` (its transmission started).
    pub fn departed(&mut self, dir: usize, p: &Packet, at: Instant) {
        self.delay[dir].record(at.as_nanos(), at.saturating_since(p.arrival).as_nanos());
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The client host of a flow in direction `dir`: the source going A to B, else the destination.
    fn client(dir: usize, e: &FlowEntry) -> IpAddr {
        if dir == 0 { e.src } else { e.dst }
    }

    fn host(&mut self, dir: usize, addr: IpAddr, now_ns: u64) -> &mut HostEntry {
        let k = (dir as u8, addr);
        if !self.hosts.contains_key(&k) {
            self.evicted_hosts += make_room(&mut self.hosts, self.capacity, now_ns, self.idle_ns, |h| h.last_ns);
        }
        let h = self.hosts.entry(k).or_default();
        h.last_ns = now_ns;
        h
    }

    /// A packet of `frame` (its addresses are read from it when the flow is new) arrived.
    pub fn arrived(&mut self, dir: usize, p: &Packet, frame: &[u8], now_ns: u64) {
        let k = (dir as u8, p.flow);
        if !self.flows.contains_key(&k) {
            self.evicted_flows += make_room(&mut self.flows, self.capacity, now_ns, self.idle_ns, |e| e.last_ns);
            let (src, dst) = ip_addrs(frame).unwrap_or((IpAddr::from(p.flow.src_ip.to_be_bytes()), IpAddr::from(p.flow.dst_ip.to_be_bytes())));
            self.flows.insert(k, FlowEntry { src, dst, counters: FlowCounters::default(), last_ns: now_ns });
        }
        let e = self.flows.get_mut(&k).expect("inserted above");
        e.last_ns = now_ns;
        e.counters.arrived_pkts += 1;
        e.counters.arrived_bytes += p.len_bytes();
        let client = Self::client(dir, e);
        let h = self.host(dir, client, now_ns);
        h.counters.arrived_pkts += 1;
        h.counters.arrived_bytes += p.len_bytes();
    }

    /// The flow's and its host's counters, or the untracked ones if the flow was evicted.
    fn update(&mut self, dir: usize, p: &Packet, now_ns: u64, f: impl Fn(&mut FlowCounters)) {
        match self.flows.get_mut(&(dir as u8, p.flow)) {
            Some(e) => {
                e.last_ns = now_ns;
                f(&mut e.counters);
                let client = Self::client(dir, e);
                f(&mut self.host(dir, client, now_ns).counters);
            }
            None => f(&mut self.untracked),
        }
    }

    pub fn delivered(&mut self, dir: usize, p: &Packet, now_ns: u64) {
        let bytes = p.len_bytes();
        self.update(dir, p, now_ns, |c| {
            c.delivered_pkts += 1;
            c.delivered_bytes += bytes;
        });
    }

    pub fn dropped(&mut self, dir: usize, p: &Packet, now_ns: u64) {
        self.update(dir, p, now_ns, |c| c.dropped_pkts += 1);
    }

    /// Drop the entries idle for the timeout (called before each metrics snapshot).
    pub fn expire(&mut self, now_ns: u64) {
        let idle = self.idle_ns;
        let (f, h) = (self.flows.len(), self.hosts.len());
        self.flows.retain(|_, e| now_ns.saturating_sub(e.last_ns) < idle);
        self.hosts.retain(|_, e| now_ns.saturating_sub(e.last_ns) < idle);
        self.evicted_flows += (f - self.flows.len()) as u64;
        self.evicted_hosts += (h - self.hosts.len()) as u64;
    }
}

/// The IP source and destination of an Ethernet frame (through VLAN tags), IPv6 in full.
pub fn ip_addrs(frame: &[u8]) -> Option<(IpAddr, IpAddr)> {
    match etherparse::SlicedPacket::from_ethernet(frame).ok()?.net? {
        etherparse::NetSlice::Ipv4(ip) => Some((IpAddr::from(ip.header().source()), IpAddr::from(ip.header().destination()))),
        etherparse::NetSlice::Ipv6(ip) => Some((IpAddr::from(ip.header().source()), IpAddr::from(ip.header().destination()))),
        _ => None,
    }
}

/// A TAQ queue's flows by state and packets by queue at the end of one slice.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStateRow {
    pub direction: usize,
    pub slice: u32,
    pub time_ns: u64,
    pub flows_by_state: [u32; TaqState::COUNT],
    pub queue_pkts: [u32; TaqQueue::COUNT],
}

/// A TAQ link's row for the slice ending at `at` (`None` for any other discipline).
pub fn queue_state_row(direction: usize, link: &LinkEmu, at: Instant, slice_ns: u64) -> Option<QueueStateRow> {
    let AnyQdisc::Taq(taq) = link.queue.inner() else { return None };
    let s = taq.taq_snapshot(at);
    Some(QueueStateRow {
        direction,
        slice: (at.as_nanos() / slice_ns) as u32 - 1,
        time_ns: at.as_nanos(),
        flows_by_state: s.flows_by_state,
        queue_pkts: s.queue_pkts,
    })
}

/// One direction's link as the exit table and the metrics report it (the simulator's
/// `links` columns where they apply).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkRow {
    pub direction: &'static str,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub stats: QdiscStats,
    pub backlog_pkts: u64,
    pub backlog_bytes: u64,
    pub in_flight_pkts: u64,
    pub flows_tracked: u64,
    pub mean_backlog_pkts: f64,
    pub mean_queue_delay_ms: f64,
    pub queue_delay_p50_ms: f64,
    pub queue_delay_p99_ms: f64,
    pub queue_delay_max_ms: f64,
    /// The discipline's own counters (`tc -s`'s extra statistics).
    pub counters: Vec<QdiscCounter>,
}

impl LinkRow {
    fn of(direction: &'static str, l: &mut LinkEmu, now: Instant) -> Self {
        let mean_backlog_pkts = l.queue.mean_backlog_pkts(now);
        let hist = l.queue.sojourn_histogram().filter(|h| !h.is_empty());
        let q_ms = |q: f64| hist.map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1e6);
        LinkRow {
            direction,
            rate_bps: l.rate_bps,
            delay_ns: l.delay.as_nanos(),
            tx_pkts: l.tx_pkts,
            tx_bytes: l.tx_bytes,
            stats: l.queue.stats().clone(),
            backlog_pkts: l.queue.len_pkts() as u64,
            backlog_bytes: l.queue.backlog_bytes(),
            in_flight_pkts: l.in_flight() as u64,
            flows_tracked: smallpipe_core::Qdisc::flow_table_len(l.queue.inner()) as u64,
            mean_backlog_pkts,
            mean_queue_delay_ms: l.queue.mean_sojourn_ns() / 1e6,
            queue_delay_p50_ms: q_ms(0.5),
            queue_delay_p99_ms: q_ms(0.99),
            queue_delay_max_ms: hist.map_or(0.0, |h| h.max() as f64 / 1e6),
            counters: l.queue.counters(),
        }
    }
}

/// The flow and host tables' size and evictions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowTableRow {
    pub capacity: u64,
    pub flows: u64,
    pub hosts: u64,
    pub evicted_flows: u64,
    pub evicted_hosts: u64,
}

/// What the metrics thread serves: a copy taken by the data path, never its live state.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub time_ns: u64,
    pub links: Vec<LinkRow>,
    pub stats: BoxStats,
    pub flows: Vec<((u8, FlowKey), FlowEntry)>,
    pub hosts: Vec<((u8, IpAddr), FlowCounters)>,
    pub untracked: FlowCounters,
    pub flow_table: FlowTableRow,
    /// Per direction: queue delay p50, p95, p99 and max over the last `delay_window_s`, ms.
    pub delay_window_ms: Vec<[f64; 4]>,
    pub delay_window_s: u32,
    pub labels: ClientLabels,
    pub lateness_count: u64,
    pub lateness_p50_ns: u64,
    pub lateness_p99_ns: u64,
    pub lateness_max_ns: u64,
    pub slab_in_use: u64,
    /// TAQ's latest slice sample per direction (flows by state), if the queue is TAQ.
    pub taq_states: Vec<QueueStateRow>,
}

impl Snapshot {
    pub fn empty() -> Self {
        Snapshot {
            time_ns: 0, links: vec![], stats: BoxStats::default(), flows: vec![], hosts: vec![], untracked: FlowCounters::default(),
            flow_table: FlowTableRow::default(), delay_window_ms: vec![], delay_window_s: 0, labels: ClientLabels::new(ClientAddresses::Show),
            lateness_count: 0, lateness_p50_ns: 0, lateness_p99_ns: 0, lateness_max_ns: 0, slab_in_use: 0, taq_states: vec![],
        }
    }

    pub fn take(now: Instant, links: &mut [LinkEmu; 2], stats: &BoxStats, flows: &FlowTable, lateness: &Histogram<u64>,
                slab_in_use: usize, queue_states: &[QueueStateRow]) -> Self {
        let [a, b] = links;
        Snapshot {
            time_ns: now.as_nanos(),
            links: vec![LinkRow::of(DIRECTIONS[0], a, now), LinkRow::of(DIRECTIONS[1], b, now)],
            stats: stats.clone(),
            flows: flows.flows.iter().map(|(k, v)| (*k, *v)).collect(),
            hosts: flows.hosts.iter().map(|(k, v)| (*k, v.counters)).collect(),
            untracked: flows.untracked,
            flow_table: FlowTableRow {
                capacity: flows.capacity() as u64, flows: flows.flows.len() as u64, hosts: flows.hosts.len() as u64,
                evicted_flows: flows.evicted_flows, evicted_hosts: flows.evicted_hosts,
            },
            delay_window_ms: flows.delay.iter().map(|w| {
                let h = w.merged(now.as_nanos());
                let ms = |v: u64| if h.is_empty() { 0.0 } else { v as f64 / 1e6 };
                [ms(h.value_at_quantile(0.5)), ms(h.value_at_quantile(0.95)), ms(h.value_at_quantile(0.99)), ms(h.max())]
            }).collect(),
            delay_window_s: flows.delay[0].seconds(),
            labels: flows.labels.clone(),
            lateness_count: lateness.len(),
            lateness_p50_ns: lateness.value_at_quantile(0.5),
            lateness_p99_ns: lateness.value_at_quantile(0.99),
            lateness_max_ns: lateness.max(),
            slab_in_use: slab_in_use as u64,
            taq_states: queue_states.iter().rev().take(2).cloned().collect(),
        }
    }
}

pub fn links_csv(rows: &[LinkRow], duration_ns: u64) -> String {
    let mut s = String::from("direction,rate_bps,delay_ns,tx_pkts,tx_bytes,utilization,arrived_pkts,arrived_bytes,departed_pkts,departed_bytes,dropped_pkts,dropped_bytes");
    for r in DropReason::ALL {
        write!(s, ",drop_{}", r.name()).unwrap();
    }
    s.push_str(",marked_pkts,loss_rate,mean_backlog_pkts,mean_queue_delay_ms,queue_delay_p50_ms,queue_delay_p99_ms,queue_delay_max_ms\n");
    for l in rows {
        let st = &l.stats;
        let util = if duration_ns == 0 { 0.0 } else { (l.tx_bytes * 8) as f64 / (l.rate_bps as f64 * duration_ns as f64 * 1e-9) };
        let dropped = st.total_dropped_pkts();
        let loss = if st.arrived_pkts == 0 { 0.0 } else { dropped as f64 / st.arrived_pkts as f64 };
        write!(s, "{},{},{},{},{},{util},{},{},{},{},{dropped},{}", l.direction, l.rate_bps, l.delay_ns, l.tx_pkts, l.tx_bytes,
               st.arrived_pkts, st.arrived_bytes, st.departed_pkts, st.departed_bytes, st.total_dropped_bytes()).unwrap();
        for r in DropReason::ALL {
            write!(s, ",{}", st.dropped(r)).unwrap();
        }
        writeln!(s, ",{},{loss},{},{},{},{},{}", st.marked.total_pkts(), l.mean_backlog_pkts, l.mean_queue_delay_ms, l.queue_delay_p50_ms,
                 l.queue_delay_p99_ms, l.queue_delay_max_ms).unwrap();
    }
    s
}

/// Each direction's discipline counters: one line per counter (`class` empty for the whole
/// discipline), the simulator's `link_counters` table with `direction` for its link.
pub fn link_counters_csv(rows: &[LinkRow]) -> String {
    let mut s = String::from("direction,counter,class,kind,value\n");
    for l in rows {
        for c in &l.counters {
            writeln!(s, "{},{},{},{},{}", l.direction, c.name, c.class.unwrap_or(""), c.kind.name(), c.value).unwrap();
        }
    }
    s
}

pub fn queue_states_csv(rows: &[QueueStateRow]) -> String {
    let mut s = queue_states_header();
    for r in rows {
        push_queue_state(&mut s, r);
    }
    s
}

/// `queue_states.csv`'s header line.
pub fn queue_states_header() -> String {
    let mut s = String::from("direction,slice,time_ns");
    for st in TaqState::ALL {
        write!(s, ",flows_{}", st.name()).unwrap();
    }
    for q in TaqQueue::ALL {
        write!(s, ",queued_{}", q.name()).unwrap();
    }
    s.push('\n');
    s
}

/// One line of `queue_states.csv`.
pub fn push_queue_state(s: &mut String, r: &QueueStateRow) {
    write!(s, "{},{},{}", DIRECTIONS[r.direction], r.slice, r.time_ns).unwrap();
    for n in r.flows_by_state.iter().chain(&r.queue_pkts) {
        write!(s, ",{n}").unwrap();
    }
    s.push('\n');
}

/// Both directions' counters since the run's start at each slice's end (and at the stop):
/// the difference of two rows is a window's exact arrivals, drops, departures and backlog
/// integral.
pub fn link_slices_csv(rows: &[[LinkCumulative; 2]]) -> String {
    let mut s = String::from(LINK_SLICES_HEADER);
    for row in rows {
        push_link_slice(&mut s, row);
    }
    s
}

/// `link_slices.csv`'s header line.
pub const LINK_SLICES_HEADER: &str = "direction,time_ns,arrived_pkts,dropped_pkts,tx_pkts,tx_bytes,backlog_pkt_ns\n";

/// The two lines of `link_slices.csv` for one sample (`a_to_b` first).
pub fn push_link_slice(s: &mut String, row: &[LinkCumulative; 2]) {
    for (d, c) in row.iter().enumerate() {
        writeln!(s, "{},{},{},{},{},{},{}", DIRECTIONS[d], c.time_ns, c.arrived_pkts, c.dropped_pkts, c.tx_pkts,
                 c.tx_bytes, c.backlog_pkt_ns).unwrap();
    }
}

/// The departure-lateness histogram: (bucket's highest lateness in ns, departures), non-empty
/// buckets only.
pub fn lateness_csv(h: &Histogram<u64>) -> String {
    let mut s = String::from("lateness_ns,departures\n");
    for v in h.iter_recorded() {
        writeln!(s, "{},{}", v.value_iterated_to(), v.count_at_value()).unwrap();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(src_port: u16) -> Packet {
        Packet { flow: FlowKey { src_ip: 0x0a00_0001, dst_ip: 0x0a00_0002, src_port, proto: 17, ..Default::default() }, ip_len_bytes: 100, ..Default::default() }
    }

    #[test]
    fn a_full_table_evicts_the_least_recently_seen_and_tracks_new_flows() {
        let m = MetricsConfig { flow_table_capacity: 64, ..MetricsConfig::default() };
        let mut t = FlowTable::with_config(&m);
        for port in 0..64u16 {
            t.arrived(0, &pkt(port), &[], u64::from(port));
        }
        // Flow 0 is seen again, so flows 1..=8 are now the eighth least recently seen.
        t.arrived(0, &pkt(0), &[], 100);
        t.arrived(0, &pkt(1000), &[], 101);
        assert_eq!(t.flows.len(), 64 - 8 + 1);
        assert_eq!(t.evicted_flows, 8);
        for port in 1..=8 {
            assert!(!t.flows.contains_key(&(0, pkt(port).flow)), "flow {port} should be gone");
        }
        assert!(t.flows.contains_key(&(0, pkt(0).flow)) && t.flows.contains_key(&(0, pkt(1000).flow)));
        // A packet of an evicted flow that was still queued is counted as untracked.
        t.delivered(0, &pkt(3), 102);
        assert_eq!(t.untracked.delivered_pkts, 1);
        // All of them came from one client host: one host entry carries all the arrivals.
        assert_eq!(t.hosts.len(), 1);
        assert_eq!(t.hosts.values().next().unwrap().counters.arrived_pkts, 66);
    }

    #[test]
    fn the_exit_tables_carry_marks_and_one_line_per_counter() {
        let cfg = crate::config::BoxConfig::parse(r#"{"seed": 1,
            "a_to_b": {"rate_bps": 10000000, "delay_ns": 0, "queue": {"kind": "cake", "diffserv": "besteffort"}},
            "b_to_a": {"rate_bps": 10000000, "delay_ns": 0, "queue": {"kind": "droptail"}}}"#, "t").unwrap();
        let mut links = cfg.build_links().unwrap();
        for port in 0..3 {
            links[0].queue.enqueue(pkt(port), Instant(0));
        }
        let rows = [LinkRow::of(DIRECTIONS[0], &mut links[0], Instant(0)), LinkRow::of(DIRECTIONS[1], &mut links[1], Instant(0))];
        let links_csv = links_csv(&rows, 1);
        let header: Vec<&str> = links_csv.lines().next().unwrap().split(',').collect();
        let marked = header.iter().position(|c| *c == "marked_pkts").expect("a marked_pkts column");
        assert!(links_csv.lines().skip(1).all(|l| l.split(',').nth(marked) == Some("0")), "{links_csv}");
        // CAKE's one tin: 13 counters with their class; DropTail has none.
        let counters = link_counters_csv(&rows);
        let lines: Vec<&str> = counters.lines().collect();
        assert_eq!(lines[0], "direction,counter,class,kind,value");
        assert_eq!(lines.len(), 1 + 13);
        assert!(lines[1..].iter().all(|l| l.starts_with("a_to_b,") && l.contains(",best_effort,")));
        // Three 100-byte packets of three flows wait: 300 bytes, three sparse flows.
        assert!(lines.contains(&"a_to_b,backlog,best_effort,level,300"), "{counters}");
        assert!(lines.contains(&"a_to_b,sp_flows,best_effort,level,3"), "{counters}");
        assert!(lines.contains(&"a_to_b,pkts,best_effort,total,0"), "{counters}");
    }

    #[test]
    fn idle_flows_expire() {
        let mut t = FlowTable::default();
        t.arrived(0, &pkt(1), &[], 0);
        t.arrived(1, &pkt(2), &[], 59_000_000_000);
        t.expire(60_000_000_000);
        assert_eq!((t.flows.len(), t.evicted_flows), (1, 1));
        assert!(t.flows.contains_key(&(1, pkt(2).flow)));
    }

    #[test]
    fn ipv6_addresses_are_kept_whole_and_the_client_is_side_a() {
        use etherparse::PacketBuilder;
        let (a, b) = ([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10], [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20]);
        let frame = |src, dst| {
            let b = PacketBuilder::ethernet2([2; 6], [4; 6]).ipv6(src, dst, 64).udp(5000, 53);
            let mut f = Vec::new();
            b.write(&mut f, &[0; 10]).unwrap();
            f
        };
        let p = match crate::parse::parse_frame(&frame(a, b)) {
            crate::parse::Verdict::Scheduled(p) => p,
            v => panic!("{v:?}"),
        };
        let mut t = FlowTable::default();
        t.arrived(0, &p, &frame(a, b), 1);
        let e = t.flows[&(0, p.flow)];
        assert_eq!((e.src.to_string(), e.dst.to_string()), ("2001:db8::10".to_string(), "2001:db8:1::20".to_string()));
        // B to A: the client (side A) is the destination.
        let mut back = p;
        back.flow = p.flow.reversed();
        t.arrived(1, &back, &frame(b, a), 2);
        assert!(t.hosts.contains_key(&(1, "2001:db8::10".parse().unwrap())));
    }

}
