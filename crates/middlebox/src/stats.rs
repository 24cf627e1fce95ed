//! The box's counters: per side (frames not scheduled and why, frames sent, kernel drops),
//! per flow (a bounded table), and the snapshot the metrics thread reads. The exit tables
//! (`links.csv`, `queue_states.csv`, `lateness.csv`, `box.json`) are written from them.

use crate::io::KernelStats;
use crate::link::{LinkCumulative, LinkEmu};
use crate::parse::DropCause;
use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;
use smallpipe_core::qdisc::taq::{TaqQueue, TaqState};
use smallpipe_core::{AnyQdisc, DropReason, FlowKey, Instant, Packet, QdiscStats};
use std::fmt::Write as _;

pub const DIRECTIONS: [&str; 2] = ["a_to_b", "b_to_a"];
pub const SIDES: [&str; 2] = ["a", "b"];
/// Flows counted one by one; later flows are counted together as untracked.
pub const FLOW_TABLE_CAPACITY: usize = 4096;

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

/// Per (direction, 5-tuple) counters, at most [`FLOW_TABLE_CAPACITY`] entries.
#[derive(Debug, Clone, Default)]
pub struct FlowTable {
    pub flows: FxHashMap<(u8, FlowKey), FlowCounters>,
    pub untracked: FlowCounters,
}

impl FlowTable {
    fn entry(&mut self, dir: usize, key: FlowKey, create: bool) -> &mut FlowCounters {
        let k = (dir as u8, key);
        if create && !self.flows.contains_key(&k) && self.flows.len() >= FLOW_TABLE_CAPACITY {
            return &mut self.untracked;
        }
        match self.flows.get_mut(&k) {
            Some(_) => self.flows.get_mut(&k).expect("just seen"),
            None if create => self.flows.entry(k).or_default(),
            None => &mut self.untracked,
        }
    }
    pub fn arrived(&mut self, dir: usize, p: &Packet) {
        let c = self.entry(dir, p.flow, true);
        c.arrived_pkts += 1;
        c.arrived_bytes += p.len_bytes();
    }
    pub fn delivered(&mut self, dir: usize, p: &Packet) {
        let c = self.entry(dir, p.flow, false);
        c.delivered_pkts += 1;
        c.delivered_bytes += p.len_bytes();
    }
    pub fn dropped(&mut self, dir: usize, p: &Packet) {
        self.entry(dir, p.flow, false).dropped_pkts += 1;
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
        }
    }
}

/// What the metrics thread serves: a copy taken by the data path, never its live state.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub time_ns: u64,
    pub links: Vec<LinkRow>,
    pub stats: BoxStats,
    pub flows: Vec<((u8, FlowKey), FlowCounters)>,
    pub untracked: FlowCounters,
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
            time_ns: 0, links: vec![], stats: BoxStats::default(), flows: vec![], untracked: FlowCounters::default(),
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
            untracked: flows.untracked,
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
    s.push_str(",loss_rate,mean_backlog_pkts,mean_queue_delay_ms,queue_delay_p50_ms,queue_delay_p99_ms,queue_delay_max_ms\n");
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
        writeln!(s, ",{loss},{},{},{},{},{}", l.mean_backlog_pkts, l.mean_queue_delay_ms, l.queue_delay_p50_ms,
                 l.queue_delay_p99_ms, l.queue_delay_max_ms).unwrap();
    }
    s
}

pub fn queue_states_csv(rows: &[QueueStateRow]) -> String {
    let mut s = String::from("direction,slice,time_ns");
    for st in TaqState::ALL {
        write!(s, ",flows_{}", st.name()).unwrap();
    }
    for q in TaqQueue::ALL {
        write!(s, ",queued_{}", q.name()).unwrap();
    }
    s.push('\n');
    for r in rows {
        write!(s, "{},{},{}", DIRECTIONS[r.direction], r.slice, r.time_ns).unwrap();
        for n in r.flows_by_state.iter().chain(&r.queue_pkts) {
            write!(s, ",{n}").unwrap();
        }
        s.push('\n');
    }
    s
}

/// Both directions' counters since the run's start at each slice's end (and at the stop):
/// the difference of two rows is a window's exact arrivals, drops, departures and backlog
/// integral.
pub fn link_slices_csv(rows: &[[LinkCumulative; 2]]) -> String {
    let mut s = String::from("direction,time_ns,arrived_pkts,dropped_pkts,tx_pkts,tx_bytes,backlog_pkt_ns\n");
    for row in rows {
        for (d, c) in row.iter().enumerate() {
            writeln!(s, "{},{},{},{},{},{},{}", DIRECTIONS[d], c.time_ns, c.arrived_pkts, c.dropped_pkts, c.tx_pkts,
                     c.tx_bytes, c.backlog_pkt_ns).unwrap();
        }
    }
    s
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

    #[test]
    fn the_flow_table_stops_growing_at_capacity_and_counts_the_rest_together() {
        let mut t = FlowTable::default();
        let pkt = |port: u16| Packet { flow: FlowKey { src_port: port, ..Default::default() }, ip_len_bytes: 100, ..Default::default() };
        for port in 0..(FLOW_TABLE_CAPACITY as u16 + 10) {
            t.arrived(0, &pkt(port));
            t.delivered(0, &pkt(port));
        }
        assert_eq!(t.flows.len(), FLOW_TABLE_CAPACITY);
        assert_eq!((t.untracked.arrived_pkts, t.untracked.delivered_pkts, t.untracked.arrived_bytes), (10, 10, 1000));
        assert_eq!(t.flows[&(0, pkt(3).flow)].delivered_bytes, 100);
    }
}
