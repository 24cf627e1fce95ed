"""The generator's and the box's records as the simulator's tables.

Columns a real run cannot know are null (documented in docs/testbed.md):
``flows.fast_retransmits``, ``flows.loss_probes``, ``flows.rto_undos``, ``flows.spurious_rtos``,
``flows.recovery_undos`` and ``flows.dsacks_received`` (Linux counts them per namespace, not per
socket: ``meta["loss_probe_counters"]`` has each namespace's tail-loss probes over the run), and
``timeouts``/``backoff_ns`` on kernels before 6.7 (no ``tcpi_total_rto``). ``queue_delays``
is empty (the box reports quantiles, not the histogram). Where the testbed measures a
column differently, docs/testbed.md says how (``backoff_ns`` is Linux's time in RTO
recovery, ``segments_sent`` its data segments out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.result import (
    BURSTS_SCHEMA,
    FLOWS_SCHEMA,
    LINK_COUNTERS_SCHEMA,
    LINKS_SCHEMA,
    PROGRESS_SCHEMA,
    QUEUE_DELAYS_SCHEMA,
    QUEUE_STATES_SCHEMA,
    SENDER_EPOCHS_SCHEMA,
    SLICES_SCHEMA,
    TRACE_SCHEMA,
    UNITS_SCHEMA,
    Result,
)
from smallpipe.scenario import Scenario

__all__ = ["LINK_NAMES", "link_window", "to_result"]

LINK_NAMES = {"b_to_a": "bottleneck", "a_to_b": "bottleneck_reverse"}
"""The box's directions under the simulator's link names (data flows from the servers)."""


def _flows(client: dict[str, Any], server: dict[str, Any], units: list[dict[str, Any]]) -> pl.DataFrame:
    sender = {row["flow_id"]: row["info"] for row in server["flows"]}
    rows = []
    for flow in client["flows"]:
        unit = units[flow["unit_id"]]
        info = sender.get(flow["flow_id"])
        rto_time_ms = info and info["total_rto_time_ms"]
        rows.append({
            "flow_id": flow["flow_id"],
            "unit_id": flow["unit_id"],
            "group": unit["group"],
            "app": unit["app"],
            "rtt_ms": unit["rtt_ms"],
            "start_ns": flow["start_ns"],
            "requested_ns": flow["requested_ns"],
            "end_ns": flow["end_ns"],
            "size_bytes": flow["size_bytes"],
            "bytes_delivered": flow["bytes_delivered"],
            "segments_sent": info and info["data_segs_out"],
            "retransmits": info and info["total_retrans"],
            "timeouts": info and info["total_rto"],
            # TCP_INFO does not say where a timeout fired.
            "timeouts_in_recovery": None,
            "timeouts_after_dupacks": None,
            "timeouts_repeated": None,
            "syn_timeouts": flow["syn_timeouts"],
            "fast_retransmits": None,
            "loss_probes": None,
            "rto_undos": None,
            "spurious_rtos": None,
            "recovery_undos": None,
            "dsacks_received": None,
            "backoff_ns": None if rto_time_ms is None else rto_time_ms * 1_000_000,
            "longest_silence_ns": flow["longest_silence_ns"],
        })
    return pl.DataFrame(rows, schema=FLOWS_SCHEMA)


def _slices(client: dict[str, Any], slice_ns: int) -> pl.DataFrame:
    rows = [
        {"flow_id": flow["flow_id"], "slice": flow["first_slice"] + k,
         "start_ns": (flow["first_slice"] + k) * slice_ns, "bytes": count}
        for flow in client["flows"]
        for k, count in enumerate(flow["slice_bytes"])
    ]
    return pl.DataFrame(rows, schema=SLICES_SCHEMA)


def _units(client: dict[str, Any], units: list[dict[str, Any]]) -> pl.DataFrame:
    rows = [
        {"unit_id": rec["unit_id"], "group": units[rec["unit_id"]]["group"], "app": units[rec["unit_id"]]["app"],
         "rtt_ms": units[rec["unit_id"]]["rtt_ms"], "connections": rec["connections"],
         "bytes_delivered": rec["bytes_delivered"], "longest_hang_ns": rec["longest_hang_ns"],
         "pages_done": rec["pages_done"]}
        for rec in client["units"]
    ]
    return pl.DataFrame(rows, schema=UNITS_SCHEMA)


def _box_table(path: Path, schema: pl.Schema, name_column: str) -> pl.DataFrame:
    """A CSV the box wrote, as ``schema``: its ``direction`` under the simulator's link names
    in ``name_column``, its other columns that the schema has, the rest null."""
    if not path.is_file():
        return pl.DataFrame(schema=schema)
    raw = pl.read_csv(path)
    raw = raw.with_columns(pl.col("direction").replace_strict(LINK_NAMES).alias(name_column))
    return raw.select(
        pl.col(name).cast(dtype) if name in raw.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in schema.items()
    )


def _links(box_out: Path, duration_ns: int) -> pl.DataFrame:
    links = _box_table(box_out / "links.csv", LINKS_SCHEMA, "name")
    # The box starts before t0 (idle until then) and stops at the end: utilization is over the
    # scenario's duration, as the simulator's.
    return links.with_columns((pl.col("tx_bytes") * 8 / (pl.col("rate_bps") * duration_ns / 1e9)).alias("utilization"))


def _bursts(server: dict[str, Any]) -> pl.DataFrame:
    rows = [
        {"flow_id": b["flow_id"], "sent_ns": b["sent_ns"], "first_sent_ns": None, "covered_ns": None,
         "acked_ns": b["acked_ns"],
         "response_ns": None if b["acked_ns"] is None else b["acked_ns"] - b["sent_ns"]}
        for b in server["bursts"]
    ]
    return pl.DataFrame(rows, schema=BURSTS_SCHEMA).sort("flow_id", "sent_ns")


def _progress(client: dict[str, Any]) -> pl.DataFrame:
    rows = [
        {"flow_id": flow["flow_id"], "packets": k + 1, "fct_ns": t}
        for flow in client["flows"]
        for k, t in enumerate(flow["progress_ns"])
    ]
    return pl.DataFrame(rows, schema=PROGRESS_SCHEMA)


def tcp_info_frame(server: dict[str, Any]) -> pl.DataFrame:
    """The senders' ``TCP_INFO`` at each slice's end: one row per open flow and slice."""
    rows = [{"flow_id": s["flow_id"], "slice": s["slice"], "time_ns": s["time_ns"]} | s["info"]
            for s in server["tcp_info"]]
    return pl.DataFrame(rows, infer_schema_length=None)


def to_result(scenario: Scenario, units: list[dict[str, Any]], workdir: Path, meta_extra: dict[str, Any]) -> Result:
    """Join ``client.json``, ``server.json`` and the box's output in ``workdir`` into a Result;
    the senders' per-slice ``TCP_INFO`` goes to ``workdir/tcp_info.parquet``."""
    client = json.loads((workdir / "client.json").read_text())
    server = json.loads((workdir / "server.json").read_text())
    duration_ns = meta_extra.get("stopped_at_ns", round(scenario["duration_s"] * 1e9))  # Ctrl-C: the time run
    slice_ns = round(scenario["slice_s"] * 1e9)
    tcp_info_frame(server).write_parquet(workdir / "tcp_info.parquet")
    links = _links(workdir / "box", duration_ns)
    box_summary_path = workdir / "box" / "box.json"
    failed = [f"flow {f['flow_id']}: {f['error']}" for f in client["flows"] if f["error"]]
    meta = {
        "seed": scenario["seed"],
        "duration_ns": duration_ns,
        "slice_ns": slice_ns,
        "events": 0,
        "packets": int(links.get_column("tx_pkts").sum() or 0),
        "skipped_log_lines": 0,
        "failed_connections": failed,
        "box": json.loads(box_summary_path.read_text()) if box_summary_path.is_file() else None,
    } | meta_extra
    return Result(
        flows=_flows(client, server, units),
        slices=_slices(client, slice_ns),
        units=_units(client, units),
        links=links,
        bursts=_bursts(server),
        progress=_progress(client),
        queue_delays=pl.DataFrame(schema=QUEUE_DELAYS_SCHEMA),
        trace=pl.DataFrame(schema=TRACE_SCHEMA),
        sender_epochs=pl.DataFrame(schema=SENDER_EPOCHS_SCHEMA),
        queue_states=_box_table(workdir / "box" / "queue_states.csv", QUEUE_STATES_SCHEMA, "link"),
        link_counters=_box_table(workdir / "box" / "link_counters.csv", LINK_COUNTERS_SCHEMA, "link"),
        meta=meta,
        scenario=scenario,
    )


def link_window(workdir: str | Path, start_s: float, end_s: float, name: str = "bottleneck") -> dict[str, float]:
    """The box's counters of link ``name`` over a window of the run's time (seconds since t0),
    from ``workdir/box/link_slices.csv`` (cumulative counters at each slice's end and at the
    stop): the window runs from the first sample at or after ``start_s`` to the last at or
    before ``end_s``, so its counts are exact and it is at most a slice shorter at each end.

    Returns ``start_s``, ``end_s`` (the samples'), ``arrived_pkts``, ``dropped_pkts``,
    ``loss_rate``, ``mean_backlog_pkts`` (waiting packets, time-averaged) and ``tx_bytes``.
    """
    workdir = Path(workdir)
    origin_ns = json.loads((workdir / "box" / "box.json").read_text())["clock_start_monotonic_ns"]
    t0_ns = json.loads((workdir / "plan.json").read_text())["t0_ns"]
    direction = {v: k for k, v in LINK_NAMES.items()}[name]
    rows = pl.read_csv(workdir / "box" / "link_slices.csv").filter(pl.col("direction") == direction).with_columns(
        run_s=(pl.col("time_ns") + origin_ns - t0_ns) / 1e9)
    inside = rows.filter(pl.col("run_s").is_between(start_s, end_s))
    if inside.height < 2:
        raise ValueError(f"link_window: fewer than two samples of {name} in [{start_s}, {end_s}] s "
                         f"(samples every slice_s; the run has {rows.height})")
    first, last = inside.row(0, named=True), inside.row(-1, named=True)
    arrived = last["arrived_pkts"] - first["arrived_pkts"]
    dropped = last["dropped_pkts"] - first["dropped_pkts"]
    return {
        "start_s": first["run_s"], "end_s": last["run_s"], "arrived_pkts": arrived, "dropped_pkts": dropped,
        "loss_rate": dropped / arrived if arrived else 0.0,
        "mean_backlog_pkts": (last["backlog_pkt_ns"] - first["backlog_pkt_ns"]) / (last["time_ns"] - first["time_ns"]),
        "tx_bytes": last["tx_bytes"] - first["tx_bytes"],
    }
