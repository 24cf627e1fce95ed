//! The connection table: one slot per open connection, reused once a connection is over.
//!
//! A slot `s` holds the `Conn` record and the endpoints `2s` (sender) and `2s + 1`
//! (receiver). When a connection is over (`is_over`) the simulator builds its rows, frees
//! its demultiplexing entries and RCP state, and puts the slot on the free list; the next
//! connection takes it. Memory then grows with the connections open at once, not with all
//! the connections of the run. A connection's `flow_id` is its opening ordinal, whatever
//! slot it has.
//!
//! A slot's pending timer event may outlive its connection: freeing bumps the endpoints'
//! timer generation, and a new occupant starts from it, so the old event is stale for it.

use crate::rcp::{RcpSender, RcpState};
use crate::results::{BurstRow, FlowRow, ProgressRow, SliceBytes};
use crate::tcp::compact::Opt64;
use crate::tcp::{Endpoint, EndpointStats, State};
use smallpipe_core::{Duration, Instant};

/// One TCP connection: endpoints `2s` (sender) and `2s + 1` (receiver) of its slot `s`.
pub(crate) struct Conn {
    /// The connection's ordinal in opening order (`FlowRow::flow_id`).
    pub flow_id: u32,
    pub unit: u32,
    pub start: Instant,
    /// Replayed logs: when the client wanted the object (its logged time); 8 bytes where an
    /// `Option` takes 16, to keep a flow within 1 KiB (tcp::tests::an_active_flow_fits_in_one_kib).
    pub requested: Opt64<Instant>,
    pub size_bytes: Option<u64>,
    pub done: bool,
    /// The slot was freed: its connection's rows are built and it waits for reuse.
    pub freed: bool,
    /// Demultiplexing still maps both of its endpoints' keys to this slot: it is not freed
    /// and no later connection took its port (see `sim::endpoints::addressee`).
    pub owns_keys: bool,
    pub delivered_seen: u64,
    pub bursts_seen: usize,
    /// Interactive: the handshake is done and bursts are being written.
    pub bursting: bool,
    pub last_progress: Instant,
    pub longest_silence: Duration,
    /// Bytes per slice from `first_slice` on (dense over the connection's lifetime).
    pub first_slice: u32,
    pub slice_bytes: SliceBytes,
    /// With `record_progress`: when each MSS of data had arrived in order, since `start`.
    pub progress: Option<Vec<Duration>>,
    /// Packets the sender has emitted, counted by the edge's `first_n` marker.
    pub edge_pkts: u32,
    /// Packets of either endpoint in the network: emitted, not yet delivered or dropped.
    /// A connection is recycled only at zero, so no packet of it can arrive later.
    pub in_flight: u32,
}

impl Conn {
    pub fn new(flow_id: u32, unit: u32, now: Instant, size_bytes: Option<u64>, first_slice: u32, record_progress: bool) -> Self {
        Conn {
            flow_id,
            unit,
            start: now,
            requested: Opt64::NONE,
            size_bytes,
            done: false,
            freed: false,
            owns_keys: true,
            delivered_seen: 0,
            bursts_seen: 0,
            bursting: false,
            last_progress: now,
            longest_silence: Duration::ZERO,
            first_slice,
            slice_bytes: SliceBytes::new(),
            progress: record_progress.then(Vec::new),
            edge_pkts: 0,
            in_flight: 0,
        }
    }
}

/// Nothing of the connection can act again: the receiver has every byte and its own FIN
/// acknowledged (CLOSED, which ignores any segment), the sender is in TIME-WAIT (the model
/// has no 2·MSL timer; it would only answer a retransmitted FIN, and none can come: the
/// receiver's FIN was acknowledged) or CLOSED, neither gave up (a failed end answers with
/// RSTs), no timer is pending, and no packet of the connection is in the network.
pub(crate) fn is_over(conn: &Conn, snd: &Endpoint, rcp: Option<&RcpSender>, rcv: &Endpoint) -> bool {
    let sender_over = match rcp {
        Some(r) => r.state == RcpState::Closed && !r.failed && r.next_deadline().is_none(),
        None => matches!(snd.state, State::TimeWait | State::Closed) && !snd.failed && snd.next_deadline().is_none(),
    };
    conn.done
        && conn.in_flight == 0
        && sender_over
        && rcv.finished_at.is_some()
        && rcv.state == State::Closed
        && !rcv.failed
        && rcv.next_deadline().is_none()
}

/// Rows of connections, in the order they were built.
#[derive(Debug, Default)]
pub struct FinishedRows {
    pub flows: Vec<FlowRow>,
    pub bursts: Vec<BurstRow>,
    pub progress: Vec<ProgressRow>,
}

impl FinishedRows {
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty() && self.bursts.is_empty() && self.progress.is_empty()
    }

    /// Into flow_id order (stable: a flow's own rows keep their order), as one run without
    /// recycling lists them.
    pub fn sort(&mut self) {
        self.flows.sort_by_key(|f| f.flow_id);
        self.bursts.sort_by_key(|b| b.flow_id);
        self.progress.sort_by_key(|p| p.flow_id);
    }
}

/// What a row needs beyond the connection's own state.
pub(crate) struct RowContext {
    /// The run's end: open connections are counted up to it.
    pub end: Instant,
    pub slice: Duration,
    pub last_slice: u32,
    pub unit_rtt: Duration,
    pub group: u32,
    pub app: crate::config::AppKind,
}

/// Appends the connection's flow row, progress rows and burst rows to `out`; takes its
/// per-slice bytes and progress.
pub(crate) fn push_rows(conn: &mut Conn, snd: &Endpoint, snd_stats: &EndpointStats, rcv: &Endpoint, cx: &RowContext,
                        out: &mut FinishedRows) {
    let id = conn.flow_id;
    for (k, t) in conn.progress.take().into_iter().flatten().enumerate() {
        out.progress.push(ProgressRow { flow_id: id, packets: k as u32 + 1, fct_ns: t.as_nanos() });
    }
    let finished = rcv.finished_at;
    let longest = conn.longest_silence.max(finished.unwrap_or(cx.end).saturating_since(conn.last_progress));
    // Dense over the lifetime: through the slice it finished in, or the last one.
    let final_slice =
        finished.map_or(cx.last_slice, |t| ((t.as_nanos() / cx.slice.as_nanos()) as u32).min(cx.last_slice));
    conn.slice_bytes.resize((final_slice - conn.first_slice + 1) as usize, 0);
    out.flows.push(FlowRow {
        flow_id: id,
        unit_id: conn.unit,
        group: cx.group,
        app: cx.app,
        rtt_ms: cx.unit_rtt.as_nanos() as f64 / 1e6,
        start_ns: conn.start.as_nanos(),
        requested_ns: conn.requested.get().map(|t| t.as_nanos()),
        end_ns: finished.map(|t| t.as_nanos()),
        size_bytes: conn.size_bytes.filter(|&s| s > 0),
        bytes_delivered: rcv.stats.bytes_delivered,
        segments_sent: snd_stats.segments_sent,
        retransmits: snd_stats.retransmits,
        timeouts: snd_stats.timeouts,
        timeouts_in_recovery: snd_stats.timeouts_in_recovery,
        timeouts_after_dupacks: snd_stats.timeouts_after_dupacks,
        timeouts_repeated: snd_stats.timeouts_repeated,
        syn_timeouts: snd_stats.syn_timeouts,
        fast_retransmits: snd_stats.fast_retransmits,
        loss_probes: snd.loss_probes().0,
        rto_undos: snd.rto_undos(),
        spurious_rtos: snd.spurious_rtos(),
        recovery_undos: snd.recovery_undos(),
        dsacks_received: snd.dsacks_received(),
        backoff_ns: snd.backoff_ns_until(finished.unwrap_or(cx.end).min(cx.end)),
        longest_silence_ns: longest.as_nanos(),
        first_slice: conn.first_slice,
        slice_bytes: std::mem::take(&mut conn.slice_bytes),
    });
    for b in &snd.completed_bursts {
        out.bursts.push(BurstRow { flow_id: id, sent_ns: b.written.as_nanos(),
            first_sent_ns: Some(b.first_sent.as_nanos()), covered_ns: Some(b.covered.as_nanos()),
            acked_ns: Some(b.acked.as_nanos()) });
    }
    for (written, first_sent, covered) in snd.outstanding_bursts() {
        out.bursts.push(BurstRow { flow_id: id, sent_ns: written.as_nanos(),
            first_sent_ns: first_sent.map(Instant::as_nanos), covered_ns: covered.map(Instant::as_nanos),
            acked_ns: None });
    }
}

#[cfg(test)]
mod tests {
    use crate::{Results, Scenario, Simulator};
    use proptest::prelude::*;

    /// The results without the wall time, which no two runs share.
    fn comparable(mut r: Results) -> String {
        r.wall_seconds = 0.0;
        format!("{r:?}")
    }

    /// Runs in chunks, taking the recycled rows out after each (as a streaming caller
    /// does), and puts them back in front of the final ones: the whole run's tables.
    fn run_streamed(sc: &Scenario) -> (Results, usize, usize) {
        let mut sim = Simulator::new(sc).unwrap();
        let mut taken = super::FinishedRows::default();
        let mut max_slots = 0;
        while !sim.advance(500) {
            let rows = sim.take_finished();
            taken.flows.extend(rows.flows);
            taken.bursts.extend(rows.bursts);
            taken.progress.extend(rows.progress);
            max_slots = max_slots.max(sim.slots());
        }
        let streamed = taken.flows.len();
        let mut r = sim.finish();
        taken.flows.append(&mut r.flows);
        taken.bursts.append(&mut r.bursts);
        taken.progress.append(&mut r.progress);
        taken.sort();
        (r.flows, r.bursts, r.progress) = (taken.flows, taken.bursts, taken.progress);
        (r, streamed, max_slots)
    }

    fn unrecycled(sc: &Scenario) -> Results {
        Simulator::new(sc).unwrap().without_recycling().run()
    }

    /// A session has at most one connection open at a time, and a connection is over one
    /// round trip after it finished (its receiver's FIN is acknowledged): with no think
    /// time, at most two slots, however many connections it opens. The tables equal those
    /// of the run without recycling, and no packet reached a recycled connection.
    #[test]
    fn a_session_reuses_two_slots_and_its_tables_are_unchanged() {
        let sc = Scenario::from_json(
            r#"{"duration_s":20,"link":{"rate_bps":2000000},"tcp":{"delayed_ack":false},
                "flows":[{"app":"session","count":1,"rtt_ms":40,"size_bytes":3000,"think_s":0}]}"#,
        )
        .unwrap();
        let (streamed, taken, max_slots) = run_streamed(&sc);
        let whole = unrecycled(&sc);
        assert!(whole.flows.len() > 50, "{} connections", whole.flows.len());
        assert!(2 * taken >= whole.flows.len(), "{taken} rows handed out during the run");
        assert!(max_slots <= 2, "{max_slots} slots");
        assert_eq!(streamed.packets_to_closed_flows, 0);
        assert_eq!(streamed.flows_opened as usize, whole.flows.len());
        assert_eq!(comparable(streamed), comparable(whole));
    }

    fn scenario(app: usize, queue: usize, rcp: bool, loss: f64, rate_kbps: u64, seed: u64) -> Scenario {
        let flow = [
            r#"{"app":"poisson","count":5,"rtt_ms":[20,200],"load":0.8,"size":{"dist":"pareto","mean":4000,"shape":1.5}}"#,
            r#"{"app":"session","count":4,"rtt_ms":[30,120],"size_bytes":5000,"think_s":0.1}"#,
            r#"{"app":"web","count":3,"rtt_ms":80,"size_bytes":8000}"#,
            r#"{"app":"transfer","count":6,"rtt_ms":[50,150],"size_bytes":20000,"start_s":[0,3],"record_progress":true}"#,
        ][app];
        let queue = if rcp { r#"{"kind":"rcp","limit_pkts":20}"# } else {
            [r#"{"kind":"droptail","limit_pkts":8}"#, r#"{"kind":"fq_codel"}"#, r#"{"kind":"sfq","limit_pkts":10}"#][queue]
        };
        let transport = if rcp { r#""transport":"rcp","# } else { "" };
        Scenario::from_json(&format!(
            r#"{{"seed":{seed},"duration_s":8,"slice_s":1,{transport}"link":{{"rate_bps":{},"loss":{loss},"queue":{queue}}},
                "tcp":{{"packet_size_bytes":500}},"flows":[{flow}]}}"#,
            rate_kbps * 1000
        ))
        .unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
        /// Recycling (and taking rows out during the run) changes no table: random small
        /// scenarios over workloads, disciplines, RCP, random loss and seeds give the same
        /// results with and without it.
        #[test]
        fn recycled_and_unrecycled_runs_agree(app in 0usize..4, queue in 0usize..3, rcp in any::<bool>(),
                                              loss in prop::sample::select(vec![0.0, 0.02, 0.1]),
                                              rate_kbps in 200u64..3000, seed in 0u64..1000) {
            let sc = scenario(app, queue, rcp, loss, rate_kbps, seed);
            let (streamed, _, _) = run_streamed(&sc);
            prop_assert_eq!(streamed.packets_to_closed_flows, 0);
            prop_assert_eq!(comparable(streamed), comparable(unrecycled(&sc)));
        }
    }
}
