//! Python bindings of smallpipe: convert types and errors, nothing else.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use smallpipe_core::models::size_aware_analysis::{self as sa, TcpModel};
use smallpipe_core::{ConfigError as CoreConfigError, DropReason};
use smallpipe_core::qdisc::taq::{TaqQueue, TaqState};
use smallpipe_sim::trace::{QueueEvent, TraceOutput};
use smallpipe_sim::results::{BurstRow, FlowRow, ProgressRow};
use smallpipe_sim::{Results, Scenario};

mod run;

/// mimalloc serves the simulator's allocations. glibc's malloc, in a heap fragmented by a
/// long run, spent 2.6% of a Figure 5.2 run regrowing link pipes (measured with perf).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

create_exception!(_smallpipe, SimulationError, PyRuntimeError);

create_exception!(_smallpipe, ConfigError, PyValueError, "A bad scenario: `field`, `value` and `allowed` say what and why.");

fn config_error(py: Python<'_>, e: CoreConfigError) -> PyErr {
    let err = ConfigError::new_err(e.to_string());
    let value = err.value(py);
    for (name, v) in [("field", &e.field), ("value", &e.value), ("allowed", &e.allowed)] {
        if let Err(set) = value.setattr(name, v) {
            return set;
        }
    }
    err
}

/// Parses and checks a scenario given as JSON; returns the canonical JSON with defaults.
#[pyfunction]
fn validate_config(py: Python<'_>, config_json: &str) -> PyResult<String> {
    Scenario::from_json(config_json).map(|s| s.to_json()).map_err(|e| config_error(py, e))
}

/// Runs a scenario given as JSON; returns columns of flows, slices, links, bursts and meta.
/// See `run::simulate_in_chunks` for `progress`, `on_rows`, `chunk_events` and interruption.
#[pyfunction]
#[pyo3(signature = (config_json, progress=None, chunk_events=run::CHUNK_EVENTS, on_rows=None))]
fn simulate<'py>(
    py: Python<'py>,
    config_json: &str,
    progress: Option<Bound<'py, PyAny>>,
    chunk_events: u64,
    on_rows: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let scenario = Scenario::from_json(config_json).map_err(|e| config_error(py, e))?;
    run::simulate_in_chunks(py, &scenario, progress.as_ref(), chunk_events, on_rows.as_ref())
}

fn results_to_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    rows_to_dict(py, &out, &r.flows, &r.bursts, &r.progress, r.slice_ns)?;

    let units = PyDict::new(py);
    let u = &r.units;
    units.set_item("unit_id", u.iter().map(|x| x.unit_id).collect::<Vec<_>>())?;
    units.set_item("group", u.iter().map(|x| x.group).collect::<Vec<_>>())?;
    units.set_item("app", u.iter().map(|x| x.app.name()).collect::<Vec<_>>())?;
    units.set_item("rtt_ms", u.iter().map(|x| x.rtt_ms).collect::<Vec<_>>())?;
    units.set_item("connections", u.iter().map(|x| x.connections).collect::<Vec<_>>())?;
    units.set_item("bytes_delivered", u.iter().map(|x| x.bytes_delivered).collect::<Vec<_>>())?;
    units.set_item("longest_hang_ns", u.iter().map(|x| x.longest_hang_ns).collect::<Vec<_>>())?;
    units.set_item("pages_done", u.iter().map(|x| x.pages_done).collect::<Vec<_>>())?;
    out.set_item("units", units)?;

    let links = PyDict::new(py);
    let l = &r.links;
    links.set_item("name", l.iter().map(|x| x.name.clone()).collect::<Vec<_>>())?;
    links.set_item("rate_bps", l.iter().map(|x| x.rate_bps).collect::<Vec<_>>())?;
    links.set_item("tx_pkts", l.iter().map(|x| x.tx_pkts).collect::<Vec<_>>())?;
    links.set_item("tx_bytes", l.iter().map(|x| x.tx_bytes).collect::<Vec<_>>())?;
    links.set_item("utilization", l.iter().map(|x| x.utilization).collect::<Vec<_>>())?;
    links.set_item("arrived_pkts", l.iter().map(|x| x.arrived_pkts).collect::<Vec<_>>())?;
    links.set_item("dropped_pkts", l.iter().map(|x| x.dropped_pkts).collect::<Vec<_>>())?;
    for reason in DropReason::ALL {
        let col = format!("drop_{}", reason.name());
        links.set_item(col, l.iter().map(|x| x.drops_by_reason[reason as usize]).collect::<Vec<_>>())?;
    }
    links.set_item("marked_pkts", l.iter().map(|x| x.marked_pkts).collect::<Vec<_>>())?;
    links.set_item("loss_rate", l.iter().map(|x| x.loss_rate).collect::<Vec<_>>())?;
    links.set_item("mean_backlog_pkts", l.iter().map(|x| x.mean_backlog_pkts).collect::<Vec<_>>())?;
    links.set_item("mean_queue_delay_ms", l.iter().map(|x| x.mean_queue_delay_ms).collect::<Vec<_>>())?;
    links.set_item("queue_delay_p50_ms", l.iter().map(|x| x.queue_delay_p50_ms).collect::<Vec<_>>())?;
    links.set_item("queue_delay_p99_ms", l.iter().map(|x| x.queue_delay_p99_ms).collect::<Vec<_>>())?;
    links.set_item("queue_delay_max_ms", l.iter().map(|x| x.queue_delay_max_ms).collect::<Vec<_>>())?;
    links.set_item(
        "size_aware_mean_target_pkts_per_rtt",
        l.iter().map(|x| x.size_aware_mean_target_pkts_per_rtt).collect::<Vec<_>>(),
    )?;
    out.set_item("links", links)?;

    let delays = PyDict::new(py);
    let rows = l.iter().flat_map(|x| x.queue_delay_hist.iter().map(move |&(d, n)| (x.name.clone(), d, n)));
    let (names, delay_ns, counts): (Vec<_>, Vec<_>, Vec<_>) = unzip3(rows);
    delays.set_item("link", names)?;
    delays.set_item("delay_ns", delay_ns)?;
    delays.set_item("packets", counts)?;
    out.set_item("queue_delays", delays)?;

    let counters = PyDict::new(py);
    let rows: Vec<_> = l.iter().flat_map(|x| x.counters.iter().map(move |c| (x.name.as_str(), c))).collect();
    counters.set_item("link", rows.iter().map(|(name, _)| *name).collect::<Vec<_>>())?;
    counters.set_item("counter", rows.iter().map(|(_, c)| c.name).collect::<Vec<_>>())?;
    counters.set_item("class", rows.iter().map(|(_, c)| c.class).collect::<Vec<_>>())?;
    counters.set_item("kind", rows.iter().map(|(_, c)| c.kind.name()).collect::<Vec<_>>())?;
    counters.set_item("value", rows.iter().map(|(_, c)| c.value).collect::<Vec<_>>())?;
    out.set_item("link_counters", counters)?;

    let udp = PyDict::new(py);
    let d = &r.udp_flows;
    udp.set_item("udp_flow_id", d.iter().map(|x| x.udp_flow_id).collect::<Vec<_>>())?;
    udp.set_item("unit_id", d.iter().map(|x| x.unit_id).collect::<Vec<_>>())?;
    udp.set_item("group", d.iter().map(|x| x.group).collect::<Vec<_>>())?;
    udp.set_item("app", d.iter().map(|x| x.app.name()).collect::<Vec<_>>())?;
    udp.set_item("rtt_ms", d.iter().map(|x| x.rtt_ms).collect::<Vec<_>>())?;
    udp.set_item("packets_sent", d.iter().map(|x| x.packets_sent).collect::<Vec<_>>())?;
    udp.set_item("bytes_sent", d.iter().map(|x| x.bytes_sent).collect::<Vec<_>>())?;
    udp.set_item("packets_delivered", d.iter().map(|x| x.packets_delivered).collect::<Vec<_>>())?;
    udp.set_item("bytes_delivered", d.iter().map(|x| x.bytes_delivered).collect::<Vec<_>>())?;
    udp.set_item("packets_dropped", d.iter().map(|x| x.packets_dropped).collect::<Vec<_>>())?;
    udp.set_item("bytes_dropped", d.iter().map(|x| x.bytes_dropped).collect::<Vec<_>>())?;
    udp.set_item("packets_in_flight", d.iter().map(|x| x.packets_in_flight).collect::<Vec<_>>())?;
    udp.set_item("delay_sum_ns", d.iter().map(|x| x.delay_sum_ns).collect::<Vec<_>>())?;
    udp.set_item("delay_max_ns", d.iter().map(|x| x.delay_max_ns).collect::<Vec<_>>())?;
    out.set_item("udp_flows", udp)?;

    let states = PyDict::new(py);
    let q = &r.queue_states;
    states.set_item("link", q.iter().map(|x| x.link.clone()).collect::<Vec<_>>())?;
    states.set_item("slice", q.iter().map(|x| x.slice).collect::<Vec<_>>())?;
    states.set_item("time_ns", q.iter().map(|x| x.time_ns).collect::<Vec<_>>())?;
    for st in TaqState::ALL {
        let col = format!("flows_{}", st.name());
        states.set_item(col, q.iter().map(|x| x.flows_by_state[st as usize]).collect::<Vec<_>>())?;
    }
    for qu in TaqQueue::ALL {
        let col = format!("queued_{}", qu.name());
        states.set_item(col, q.iter().map(|x| x.queue_pkts[qu as usize]).collect::<Vec<_>>())?;
    }
    out.set_item("queue_states", states)?;

    let trace = PyDict::new(py);
    let t = &r.trace;
    trace.set_item("time_ns", t.iter().map(|x| x.time_ns).collect::<Vec<_>>())?;
    trace.set_item("sent", t.iter().map(|x| x.sent).collect::<Vec<_>>())?;
    trace.set_item("seq", t.iter().map(|x| x.seq).collect::<Vec<_>>())?;
    trace.set_item("payload_len", t.iter().map(|x| x.payload_len).collect::<Vec<_>>())?;
    trace.set_item("flags", t.iter().map(|x| u32::from(x.flags)).collect::<Vec<_>>())?; // Vec<u8> would become bytes
    trace.set_item("cwnd_bytes", t.iter().map(|x| x.cwnd_bytes).collect::<Vec<_>>())?;
    trace.set_item("ssthresh_bytes", t.iter().map(|x| x.ssthresh_bytes).collect::<Vec<_>>())?;
    out.set_item("trace", trace)?;
    traces_to_dict(py, &out, &r.traces)?;

    let epochs = PyDict::new(py);
    let e = &r.sender_epochs;
    epochs.set_item("flow_id", e.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    epochs.set_item("slice", e.iter().map(|x| x.slice).collect::<Vec<_>>())?;
    epochs.set_item("segments_sent", e.iter().map(|x| x.segments_sent).collect::<Vec<_>>())?;
    epochs.set_item("cwnd_segments", e.iter().map(|x| x.cwnd_segments).collect::<Vec<_>>())?;
    epochs.set_item("rto_backoff", e.iter().map(|x| x.rto_backoff).collect::<Vec<_>>())?;
    epochs.set_item("in_timeout", e.iter().map(|x| x.in_timeout).collect::<Vec<_>>())?;
    let taq_state = |x: &smallpipe_sim::epochs::SenderEpochRow| x.taq_state.map(|s| TaqState::ALL[s as usize].name());
    epochs.set_item("taq_state", e.iter().map(taq_state).collect::<Vec<_>>())?;
    out.set_item("sender_epochs", epochs)?;

    let meta = PyDict::new(py);
    meta.set_item("seed", r.seed)?;
    meta.set_item("duration_ns", r.duration_ns)?;
    meta.set_item("slice_ns", r.slice_ns)?;
    meta.set_item("events", r.events)?;
    meta.set_item("packets", r.packets)?;
    meta.set_item("wall_seconds", r.wall_seconds)?;
    meta.set_item("skipped_log_lines", r.skipped_log_lines)?;
    meta.set_item("flows_opened", r.flows_opened)?;
    meta.set_item("packets_to_closed_flows", r.packets_to_closed_flows)?;
    meta.set_item("trace_truncated", r.traces.truncated.clone())?;
    out.set_item("meta", meta)?;
    Ok(out)
}

/// The per-flow tables (`flows`, `slices`, `bursts`, `progress`) of some rows into `out`:
/// a whole run's, or a streamed batch's.
fn rows_to_dict<'py>(py: Python<'py>, out: &Bound<'py, PyDict>, f: &[FlowRow], bursts_rows: &[BurstRow],
                     progress_rows: &[ProgressRow], slice_ns: u64) -> PyResult<()> {
    let flows = PyDict::new(py);
    flows.set_item("flow_id", f.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    flows.set_item("unit_id", f.iter().map(|x| x.unit_id).collect::<Vec<_>>())?;
    flows.set_item("group", f.iter().map(|x| x.group).collect::<Vec<_>>())?;
    flows.set_item("app", f.iter().map(|x| x.app.name()).collect::<Vec<_>>())?;
    flows.set_item("rtt_ms", f.iter().map(|x| x.rtt_ms).collect::<Vec<_>>())?;
    flows.set_item("start_ns", f.iter().map(|x| x.start_ns).collect::<Vec<_>>())?;
    flows.set_item("requested_ns", f.iter().map(|x| x.requested_ns).collect::<Vec<_>>())?;
    flows.set_item("end_ns", f.iter().map(|x| x.end_ns).collect::<Vec<_>>())?;
    flows.set_item("size_bytes", f.iter().map(|x| x.size_bytes).collect::<Vec<_>>())?;
    flows.set_item("bytes_delivered", f.iter().map(|x| x.bytes_delivered).collect::<Vec<_>>())?;
    flows.set_item("segments_sent", f.iter().map(|x| x.segments_sent).collect::<Vec<_>>())?;
    flows.set_item("retransmits", f.iter().map(|x| x.retransmits).collect::<Vec<_>>())?;
    flows.set_item("timeouts", f.iter().map(|x| x.timeouts).collect::<Vec<_>>())?;
    flows.set_item("timeouts_in_recovery", f.iter().map(|x| x.timeouts_in_recovery).collect::<Vec<_>>())?;
    flows.set_item("timeouts_after_dupacks", f.iter().map(|x| x.timeouts_after_dupacks).collect::<Vec<_>>())?;
    flows.set_item("timeouts_repeated", f.iter().map(|x| x.timeouts_repeated).collect::<Vec<_>>())?;
    flows.set_item("syn_timeouts", f.iter().map(|x| x.syn_timeouts).collect::<Vec<_>>())?;
    flows.set_item("fast_retransmits", f.iter().map(|x| x.fast_retransmits).collect::<Vec<_>>())?;
    flows.set_item("loss_probes", f.iter().map(|x| x.loss_probes).collect::<Vec<_>>())?;
    flows.set_item("rto_undos", f.iter().map(|x| x.rto_undos).collect::<Vec<_>>())?;
    flows.set_item("spurious_rtos", f.iter().map(|x| x.spurious_rtos).collect::<Vec<_>>())?;
    flows.set_item("recovery_undos", f.iter().map(|x| x.recovery_undos).collect::<Vec<_>>())?;
    flows.set_item("dsacks_received", f.iter().map(|x| x.dsacks_received).collect::<Vec<_>>())?;
    flows.set_item("backoff_ns", f.iter().map(|x| x.backoff_ns).collect::<Vec<_>>())?;
    flows.set_item("longest_silence_ns", f.iter().map(|x| x.longest_silence_ns).collect::<Vec<_>>())?;
    out.set_item("flows", flows)?;

    let slices = PyDict::new(py);
    let rows = f.iter().map(|x| x.slice_bytes.len()).sum();
    let (mut ids, mut idx, mut starts, mut bytes) =
        (Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows));
    for x in f {
        for (i, b) in x.slice_bytes.iter().enumerate() {
            let slice = x.first_slice + i as u32;
            ids.push(x.flow_id);
            idx.push(slice);
            starts.push(slice as u64 * slice_ns);
            bytes.push(*b);
        }
    }
    slices.set_item("flow_id", ids)?;
    slices.set_item("slice", idx)?;
    slices.set_item("start_ns", starts)?;
    slices.set_item("bytes", bytes)?;
    out.set_item("slices", slices)?;

    let bursts = PyDict::new(py);
    let b = bursts_rows;
    bursts.set_item("flow_id", b.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    bursts.set_item("sent_ns", b.iter().map(|x| x.sent_ns).collect::<Vec<_>>())?;
    bursts.set_item("first_sent_ns", b.iter().map(|x| x.first_sent_ns).collect::<Vec<_>>())?;
    bursts.set_item("covered_ns", b.iter().map(|x| x.covered_ns).collect::<Vec<_>>())?;
    bursts.set_item("acked_ns", b.iter().map(|x| x.acked_ns).collect::<Vec<_>>())?;
    bursts.set_item("response_ns", b.iter().map(|x| x.acked_ns.map(|a| a - x.sent_ns)).collect::<Vec<_>>())?;
    out.set_item("bursts", bursts)?;

    let progress = PyDict::new(py);
    let p = progress_rows;
    progress.set_item("flow_id", p.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    progress.set_item("packets", p.iter().map(|x| x.packets).collect::<Vec<_>>())?;
    progress.set_item("fct_ns", p.iter().map(|x| x.fct_ns).collect::<Vec<_>>())?;
    out.set_item("progress", progress)?;
    Ok(())
}

/// The `[trace]` tables (`flow_series`, `link_series`, `events`), the pcap's bytes (or None)
/// and the captured hosts' pcaps (name → bytes).
fn traces_to_dict<'py>(py: Python<'py>, out: &Bound<'py, PyDict>, t: &TraceOutput) -> PyResult<()> {
    let name = |link: u8| t.link_names[link as usize].clone();
    let series = PyDict::new(py);
    let f = &t.flow_series;
    series.set_item("time_ns", f.iter().map(|x| x.time_ns).collect::<Vec<_>>())?;
    series.set_item("flow_id", f.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    series.set_item("cwnd_bytes", f.iter().map(|x| x.cwnd_bytes).collect::<Vec<_>>())?;
    series.set_item("ssthresh_bytes", f.iter().map(|x| x.ssthresh_bytes).collect::<Vec<_>>())?;
    series.set_item("srtt_ns", f.iter().map(|x| x.srtt_ns).collect::<Vec<_>>())?;
    series.set_item("rto_ns", f.iter().map(|x| x.rto_ns).collect::<Vec<_>>())?;
    series.set_item("flight_bytes", f.iter().map(|x| x.flight_bytes).collect::<Vec<_>>())?;
    series.set_item("bytes_acked", f.iter().map(|x| x.bytes_acked).collect::<Vec<_>>())?;
    series.set_item("bbr_bw_bps", f.iter().map(|x| x.bbr_bw_bps).collect::<Vec<_>>())?;
    series.set_item("pacing_rate_bps", f.iter().map(|x| x.pacing_rate_bps).collect::<Vec<_>>())?;
    out.set_item("flow_series", series)?;

    let links = PyDict::new(py);
    let l = &t.link_series;
    links.set_item("time_ns", l.iter().map(|x| x.time_ns).collect::<Vec<_>>())?;
    links.set_item("link", l.iter().map(|x| name(x.link)).collect::<Vec<_>>())?;
    links.set_item("enqueued_pkts", l.iter().map(|x| x.enqueued_pkts).collect::<Vec<_>>())?;
    links.set_item("enqueued_bytes", l.iter().map(|x| x.enqueued_bytes).collect::<Vec<_>>())?;
    links.set_item("dequeued_pkts", l.iter().map(|x| x.dequeued_pkts).collect::<Vec<_>>())?;
    links.set_item("dequeued_bytes", l.iter().map(|x| x.dequeued_bytes).collect::<Vec<_>>())?;
    links.set_item("dropped_pkts", l.iter().map(|x| x.dropped_pkts.iter().sum::<u64>()).collect::<Vec<_>>())?;
    for reason in DropReason::ALL {
        let col = format!("drop_{}", reason.name());
        links.set_item(col, l.iter().map(|x| x.dropped_pkts[reason as usize]).collect::<Vec<_>>())?;
    }
    links.set_item("backlog_pkts", l.iter().map(|x| x.backlog_pkts).collect::<Vec<_>>())?;
    links.set_item("backlog_bytes", l.iter().map(|x| x.backlog_bytes).collect::<Vec<_>>())?;
    links.set_item("marked_pkts", l.iter().map(|x| x.marked_pkts).collect::<Vec<_>>())?;
    links.set_item("queue_delay_ns_sum", l.iter().map(|x| x.queue_delay_ns_sum).collect::<Vec<_>>())?;
    out.set_item("link_series", links)?;

    let events = PyDict::new(py);
    let e = &t.events;
    events.set_item("time_ns", e.iter().map(|x| x.time_ns).collect::<Vec<_>>())?;
    events.set_item("link", e.iter().map(|x| name(x.link)).collect::<Vec<_>>())?;
    let kind = |ev: QueueEvent| match ev {
        QueueEvent::Enqueue => ("enqueue", None),
        QueueEvent::Dequeue => ("dequeue", None),
        QueueEvent::Drop(reason) => ("drop", Some(reason.name())),
    };
    events.set_item("event", e.iter().map(|x| kind(x.event).0).collect::<Vec<_>>())?;
    events.set_item("reason", e.iter().map(|x| kind(x.event).1).collect::<Vec<_>>())?;
    events.set_item("flow_id", e.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    events.set_item("seq", e.iter().map(|x| x.seq).collect::<Vec<_>>())?;
    events.set_item("ack", e.iter().map(|x| x.ack).collect::<Vec<_>>())?;
    events.set_item("flags", e.iter().map(|x| u32::from(x.flags)).collect::<Vec<_>>())?;
    events.set_item("len_bytes", e.iter().map(|x| x.len_bytes).collect::<Vec<_>>())?;
    out.set_item("events", events)?;

    let delays = PyDict::new(py);
    let d = &t.flow_delays;
    delays.set_item("flow_id", d.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    delays.set_item("rtt_samples", d.iter().map(|x| x.rtt_samples).collect::<Vec<_>>())?;
    delays.set_item("rtt_min_ns", d.iter().map(|x| x.rtt_min_ns).collect::<Vec<_>>())?;
    delays.set_item("rtt_mean_ns", d.iter().map(|x| x.rtt_mean_ns).collect::<Vec<_>>())?;
    delays.set_item("rtt_p99_ns", d.iter().map(|x| x.rtt_p99_ns).collect::<Vec<_>>())?;
    delays.set_item("queue_delay_pkts", d.iter().map(|x| x.queue_delay_pkts).collect::<Vec<_>>())?;
    delays.set_item("queue_delay_mean_ns", d.iter().map(|x| x.queue_delay_mean_ns).collect::<Vec<_>>())?;
    delays.set_item("queue_delay_p99_ns", d.iter().map(|x| x.queue_delay_p99_ns).collect::<Vec<_>>())?;
    delays.set_item("jitter_mean_ns", d.iter().map(|x| x.jitter_mean_ns).collect::<Vec<_>>())?;
    delays.set_item("offered_pkts", d.iter().map(|x| x.offered_pkts).collect::<Vec<_>>())?;
    delays.set_item("lost_pkts", d.iter().map(|x| x.lost_pkts).collect::<Vec<_>>())?;
    out.set_item("flow_delays", delays)?;

    let hist = PyDict::new(py);
    let h = &t.flow_delay_buckets;
    hist.set_item("flow_id", h.iter().map(|x| x.flow_id).collect::<Vec<_>>())?;
    hist.set_item("metric", h.iter().map(|x| x.metric).collect::<Vec<_>>())?;
    hist.set_item("upper_ns", h.iter().map(|x| x.upper_ns).collect::<Vec<_>>())?;
    hist.set_item("count", h.iter().map(|x| x.count).collect::<Vec<_>>())?;
    out.set_item("flow_delay_hist", hist)?;

    out.set_item("pcap", t.pcap.as_deref().map(|b| PyBytes::new(py, b)))?;
    let hosts = PyDict::new(py);
    for (name, pcap) in &t.host_pcaps {
        hosts.set_item(name, PyBytes::new(py, pcap))?;
    }
    out.set_item("host_pcaps", hosts)?;
    Ok(())
}

/// The TCP of the size-aware analysis, checked: every argument finite and in range.
#[allow(clippy::too_many_arguments)]
fn size_aware_model(rtt_s: f64, t0_s: f64, b: f64, w1_pkts: f64, w_max_pkts: Option<f64>) -> PyResult<TcpModel> {
    let ok = rtt_s.is_finite() && rtt_s > 0.0 && t0_s.is_finite() && t0_s > 0.0 && b >= 1.0 && b.is_finite()
        && w1_pkts >= 1.0 && w1_pkts.is_finite() && w_max_pkts.is_none_or(|w| w >= w1_pkts);
    if !ok {
        return Err(PyValueError::new_err(
            "need rtt_s > 0, t0_s > 0, b ≥ 1, w1_pkts ≥ 1 and w_max_pkts ≥ w1_pkts (or None)",
        ));
    }
    Ok(TcpModel { rtt_s, t0_s, b, delta: 1.0, w1_pkts, w_max_pkts: w_max_pkts.unwrap_or(f64::INFINITY) })
}

fn check_probs(p: &[f64]) -> PyResult<()> {
    if p.iter().all(|x| (0.0..=1.0).contains(x)) {
        Ok(())
    } else {
        Err(PyValueError::new_err("every loss probability must be in [0, 1]"))
    }
}

/// Expected time (s) to transfer `d` packets when the i-th is lost with probability
/// `p[i-1]` (the last value repeats) — Tokuda et al. Section 3.
#[pyfunction]
#[pyo3(signature = (d, p, *, rtt_s, t0_s, b, w1_pkts, w_max_pkts=None))]
fn size_aware_transfer_time_s(d: usize, p: Vec<f64>, rtt_s: f64, t0_s: f64, b: f64, w1_pkts: f64,
                              w_max_pkts: Option<f64>) -> PyResult<f64> {
    check_probs(&p)?;
    Ok(sa::transfer_time_s(&size_aware_model(rtt_s, t0_s, b, w1_pkts, w_max_pkts)?, d, &p))
}

/// Drop probabilities of the size-aware discipline for a target (packets per RTT): per
/// packet `1..=m_pkts` when `thresholds` is 0, else one per log-spaced interval.
#[pyfunction]
#[pyo3(signature = (target_pkts_per_rtt, m_pkts, *, thresholds=0, max_p=0.5, rtt_s, t0_s, b, w1_pkts, w_max_pkts=None))]
#[allow(clippy::too_many_arguments)]
fn size_aware_drop_curve(target_pkts_per_rtt: f64, m_pkts: usize, thresholds: usize, max_p: f64, rtt_s: f64,
                         t0_s: f64, b: f64, w1_pkts: f64, w_max_pkts: Option<f64>) -> PyResult<(Vec<usize>, Vec<f64>)> {
    if !(target_pkts_per_rtt.is_finite() && target_pkts_per_rtt > 0.0) || m_pkts == 0 || thresholds > m_pkts
        || !(max_p > 0.0 && max_p <= 1.0) {
        return Err(PyValueError::new_err("need target > 0, m_pkts ≥ 1, thresholds ≤ m_pkts, max_p in (0, 1]"));
    }
    let m = size_aware_model(rtt_s, t0_s, b, w1_pkts, w_max_pkts)?;
    Ok(if thresholds == 0 {
        ((1..=m_pkts).collect(), sa::per_packet_probabilities(&m, target_pkts_per_rtt, m_pkts, max_p))
    } else {
        let th = sa::log_thresholds(thresholds, m_pkts);
        let p = sa::threshold_probabilities(&m, target_pkts_per_rtt, &th, max_p);
        (th, p)
    })
}

/// RED's resolved parameters (automatic ones filled in) for a `link.queue` table given as
/// JSON, on a link of `rate_bps` and `delay_ns`, as the simulator builds it: either variant.
#[pyfunction]
fn red_params<'py>(py: Python<'py>, queue_json: &str, rate_bps: u64, delay_ns: u64) -> PyResult<Bound<'py, PyDict>> {
    let mut q: smallpipe_core::QdiscConfig =
        serde_json::from_str(queue_json).map_err(|e| PyValueError::new_err(format!("link.queue: {e}")))?;
    q.set_link(rate_bps, delay_ns);
    q.build().map_err(|e| config_error(py, e.within("queue")))?;
    let smallpipe_core::QdiscConfig::Red(c) = &q else {
        return Err(PyValueError::new_err("link.queue: kind must be \"red\""));
    };
    let p = c.params().map_err(|e| config_error(py, e.within("queue")))?;
    let scale = if p.byte_mode { p.mean_pkt_size_bytes } else { 1.0 };
    let out = PyDict::new(py);
    out.set_item("min_th_pkts", p.min_th / scale)?;
    out.set_item("max_th_pkts", p.max_th / scale)?;
    out.set_item("min_th", p.min_th)?;
    out.set_item("max_th", p.max_th)?;
    out.set_item("w_q", p.w_q)?;
    out.set_item("max_p", p.max_p)?;
    out.set_item("pkts_per_sec", p.pkts_per_sec)?;
    out.set_item("byte_mode", p.byte_mode)?;
    Ok(out)
}

#[pymodule]
fn _smallpipe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("TCP_STACK_KNOBS", smallpipe_sim::config::STACK_KNOBS.to_vec())?;
    m.add("TCP_NS2_STACK_KNOBS", smallpipe_sim::config::NS2_STACK_KNOBS.to_vec())?;
    m.add_function(wrap_pyfunction!(validate_config, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(size_aware_transfer_time_s, m)?)?;
    m.add_function(wrap_pyfunction!(size_aware_drop_curve, m)?)?;
    m.add_function(wrap_pyfunction!(red_params, m)?)?;
    Ok(())
}

fn unzip3<A, B, C>(rows: impl Iterator<Item = (A, B, C)>) -> (Vec<A>, Vec<B>, Vec<C>) {
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for (x, y, z) in rows {
        a.push(x);
        b.push(y);
        c.push(z);
    }
    (a, b, c)
}
