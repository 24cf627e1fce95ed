//! What a run produces: one row per flow (with its per-slice delivered bytes), per
//! bottleneck direction, and per interactive burst.

use crate::config::AppKind;
use crate::link::Link;
use smallpipe_core::{AnyQdisc, DropReason, Instant, QdiscCounter};
use smallvec::SmallVec;

/// A flow's delivered bytes per slice. Most flows span one or two slices, and those need no
/// allocation of their own: a `Vec`'s, one per flow, took 2% of a long Figure 5.2 run in
/// glibc's malloc (perf).
pub type SliceBytes = SmallVec<[u64; 2]>;

#[derive(Debug, Clone, PartialEq)]
pub struct FlowRow {
    pub flow_id: u32,
    /// The flow, session, user or host pair the connection belongs to.
    pub unit_id: u32,
    pub group: u32,
    pub app: AppKind,
    pub rtt_ms: f64,
    pub start_ns: u64,
    /// Replayed logs: when the client wanted the object (its logged time, offset by the
    /// client's start); with `replay = "asap"` it may be later than `start_ns` (fetched
    /// ahead of the log) or earlier (waiting for one of the client's connections).
    pub requested_ns: Option<u64>,
    /// When the receiver had every byte and the FIN.
    pub end_ns: Option<u64>,
    pub size_bytes: Option<u64>,
    pub bytes_delivered: u64,
    pub segments_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    /// The parts of `timeouts` by where they fired (see `EndpointStats::timeouts_in_recovery`).
    pub timeouts_in_recovery: u64,
    pub timeouts_after_dupacks: u64,
    pub timeouts_repeated: u64,
    pub syn_timeouts: u64,
    pub fast_retransmits: u64,
    /// Tail loss probes the sender sent (`tcp.tail_loss_probe`; Linux's TcpExtTCPLossProbes).
    pub loss_probes: u64,
    /// Timeouts the sender undid as spurious (`tcp.rto_undo`; Linux's TcpExtTCPLossUndo).
    pub rto_undos: u64,
    /// Of `rto_undos`, those F-RTO found spurious (`tcp.frto`; Linux's TcpExtTCPSpuriousRTOs).
    pub spurious_rtos: u64,
    /// Fast recoveries the sender undid, by D-SACKs or timestamps (`tcp.recovery_undo`;
    /// Linux's TcpExtTCPFullUndo + TcpExtTCPDSACKUndo).
    pub recovery_undos: u64,
    /// ACKs with a D-SACK block the sender accepted (`tcp.dsack`; Linux's TcpExtTCPDSACKRecv
    /// + TcpExtTCPDSACKOfoRecv, less the dubious ones).
    pub dsacks_received: u64,
    /// Time the sender spent in retransmission-timeout episodes (see `EndpointStats::backoff_ns`);
    /// an episode still open at the end counts up to the end of the run.
    pub backoff_ns: u64,
    /// Longest interval without new in-order data at the receiver while the flow was open.
    pub longest_silence_ns: u64,
    /// In-order bytes delivered per slice, from `first_slice` through the slice the flow
    /// finished in (or the last one): dense over the flow's lifetime, zeros included.
    pub first_slice: u32,
    pub slice_bytes: SliceBytes,
}

/// One row per unit (a flow, session, web user or Poisson host pair).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitRow {
    pub unit_id: u32,
    pub group: u32,
    pub app: AppKind,
    pub rtt_ms: f64,
    /// Connections opened.
    pub connections: u32,
    pub bytes_delivered: u64,
    /// Longest time, while at least one of the unit's connections was open, in which none
    /// received data (the TAQ paper's user-perceived hang).
    pub longest_hang_ns: u64,
    /// Web: pages fully downloaded.
    pub pages_done: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LinkRow {
    pub name: String,
    pub rate_bps: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub utilization: f64,
    pub arrived_pkts: u64,
    pub dropped_pkts: u64,
    pub drops_by_reason: [u64; DropReason::COUNT],
    /// Packets the discipline marked CE instead of dropping (every discipline; 0 without ECN).
    pub marked_pkts: u64,
    pub loss_rate: f64,
    pub mean_backlog_pkts: f64,
    pub mean_queue_delay_ms: f64,
    /// Queueing-delay quantiles of departed packets (1% resolution).
    pub queue_delay_p50_ms: f64,
    pub queue_delay_p99_ms: f64,
    pub queue_delay_max_ms: f64,
    /// The delay distribution: (bucket's highest delay in ns, packets), non-empty buckets only.
    pub queue_delay_hist: Vec<(u64, u64)>,
    /// Size-aware dropping: its target throughput (packets per RTT_an) averaged over the
    /// run's update instants; `None` for other disciplines.
    pub size_aware_mean_target_pkts_per_rtt: Option<f64>,
    /// The discipline's own counters at the run's end (`tc -s`'s extra statistics).
    pub counters: Vec<QdiscCounter>,
}

impl LinkRow {
    pub(crate) fn from_link(l: &mut Link, end: Instant, duration_ns: u64) -> Self {
        let stats = l.queue.stats().clone();
        let mean_backlog_pkts = l.queue.mean_backlog_pkts(end);
        let hist = l.queue.sojourn_histogram().filter(|h| !h.is_empty());
        let quantile_ms = |q: f64| hist.map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1e6);
        let dropped = stats.total_dropped_pkts();
        LinkRow {
            name: l.name.clone(),
            rate_bps: l.rate_bps,
            tx_pkts: l.tx_pkts,
            tx_bytes: l.tx_bytes,
            utilization: (l.tx_bytes * 8) as f64 / (l.rate_bps as f64 * duration_ns as f64 * 1e-9),
            arrived_pkts: stats.arrived_pkts,
            dropped_pkts: dropped,
            drops_by_reason: stats.dropped_pkts,
            marked_pkts: stats.marked.total_pkts(),
            loss_rate: if stats.arrived_pkts == 0 { 0.0 } else { dropped as f64 / stats.arrived_pkts as f64 },
            mean_backlog_pkts,
            mean_queue_delay_ms: l.queue.mean_sojourn_ns() / 1e6,
            queue_delay_p50_ms: quantile_ms(0.5),
            queue_delay_p99_ms: quantile_ms(0.99),
            queue_delay_max_ms: hist.map_or(0.0, |h| h.max() as f64 / 1e6),
            queue_delay_hist: hist.map_or_else(Vec::new, |h| {
                h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
            }),
            size_aware_mean_target_pkts_per_rtt: match l.queue.inner() {
                AnyQdisc::SizeAware(q) => Some(q.mean_target_pkts_per_rtt()),
                _ => None,
            },
            counters: l.queue.counters(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BurstRow {
    pub flow_id: u32,
    /// When the application wrote the burst.
    pub sent_ns: u64,
    /// First transmission of the burst's first byte (the padding paper's response time
    /// runs from here); `None` while still unsent.
    pub first_sent_ns: Option<u64>,
    /// First ACK whose cumulative ACK or SACK blocks covered the whole burst: the sender
    /// then knows the receiver holds it, though an earlier hole may hold `acked_ns` back.
    pub covered_ns: Option<u64>,
    pub acked_ns: Option<u64>,
}

/// With `record_progress`: the time since the flow's start at which its first `packets`
/// MSS of data had all arrived in order (the thesis's k-packet FCT).
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressRow {
    pub flow_id: u32,
    pub packets: u32,
    pub fct_ns: u64,
}

/// A TAQ queue's flows by state and packets by queue, at the end of one time slice
/// (`smallpipe_core::qdisc::taq::TaqState` and `TaqQueue` order).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStateRow {
    pub link: String,
    pub slice: u32,
    pub time_ns: u64,
    pub flows_by_state: [u32; smallpipe_core::qdisc::taq::TaqState::COUNT],
    pub queue_pkts: [u32; smallpipe_core::qdisc::taq::TaqQueue::COUNT],
}

/// With `trace_conn`: the traced sender after one of its events, one row per packet it
/// emitted then (`payload_len`, `flags` and `seq` of the packet), or one row with `sent`
/// false when the event only changed cwnd or ssthresh.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    pub time_ns: u64,
    pub sent: bool,
    /// Sequence number relative to the sender's ISS (the SYN is 0, the first data byte 1).
    pub seq: u32,
    pub payload_len: u16,
    pub flags: u8,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Results {
    pub seed: u64,
    pub duration_ns: u64,
    pub slice_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Packet transmissions on all links (each hop counts).
    pub packets: u64,
    pub wall_seconds: f64,
    pub flows: Vec<FlowRow>,
    pub units: Vec<UnitRow>,
    pub links: Vec<LinkRow>,
    pub bursts: Vec<BurstRow>,
    pub progress: Vec<ProgressRow>,
    /// Links whose queue is TAQ: one row per link and slice.
    pub queue_states: Vec<QueueStateRow>,
    /// The `trace_conn` sender's packets and window changes, in event order.
    pub trace: Vec<TraceRow>,
    /// With `record_sender_epochs`: every open connection's sender at each slice's end.
    pub sender_epochs: Vec<crate::epochs::SenderEpochRow>,
    /// The scenario's `[trace]` tables and pcap; empty without it.
    pub traces: crate::trace::TraceOutput,
    /// Malformed lines of replayed logs skipped (with `skip_malformed`).
    pub skipped_log_lines: u64,
    /// Connections opened (rows already handed out by `Simulator::take_finished` included).
    pub flows_opened: u32,
    /// Packets that reached a host after their connection was recycled, dropped there
    /// (`crate::flows`); zero unless a packet outlived the in-flight count.
    pub packets_to_closed_flows: u64,
    /// One row per UDP flow (`app = "udp_*"`); empty without them.
    pub udp_flows: Vec<UdpFlowRow>,
}

/// A UDP flow's datagrams at the run's end: sent = delivered + dropped + in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct UdpFlowRow {
    pub udp_flow_id: u32,
    pub unit_id: u32,
    pub group: u32,
    pub app: AppKind,
    pub rtt_ms: f64,
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_delivered: u64,
    pub bytes_delivered: u64,
    /// Dropped by a queue or lost on a link.
    pub packets_dropped: u64,
    pub bytes_dropped: u64,
    /// Still queued or on a wire at the end.
    pub packets_in_flight: u64,
    /// One-way delays of the delivered datagrams, sender to receiver host, to the µs (as
    /// FlowMonitor's `delaySum`; the mean is this over `packets_delivered`), and the largest.
    pub delay_sum_ns: u64,
    pub delay_max_ns: u64,
}
