"""What `smallpipe run` reports besides the link: the setup that made the run, and the
metrics of the scenario's workload (response times for interactive flows, completion
times and hangs for sized transfers, per-slice fairness for bulk flows)."""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl

from smallpipe import metrics
from smallpipe.result import Result
from smallpipe.scenario import Scenario, tcp_departures

__all__ = ["cut_short_notes", "discipline", "setup_rows", "udp_rows", "workload_rows"]

SIZED_APPS = ("transfer", "web", "session", "poisson", "replay")
"""Apps whose connections carry a known number of bytes: they have a completion time."""


def _or_na(value: float | None, spec: str) -> str:
    """``format(value, spec)``, or ``n/a`` for a missing value (e.g. no slice carried data)."""
    return "n/a" if value is None or math.isnan(value) else format(value, spec)


def _seconds(values_s: pl.Series, quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)) -> str:
    """``p50 0.12 s · p90 ...`` of a series in seconds."""
    return " · ".join(f"p{round(q * 100)} {_or_na(values_s.quantile(q, 'linear'), '.3g')} s" for q in quantiles)


def _queue_settings(queue: dict[str, Any]) -> str:
    """``kind`` (if any) and the settings that are set (not null), nested queues in
    parentheses: ``droptail, limit_pkts 50``, ``class_isolation, short (weight 1, queue
    (droptail, limit_pkts 50)), ...``."""
    settings = [
        f"{key} ({_queue_settings(value)})" if isinstance(value, dict) else f"{key} {value}"
        for key, value in queue.items()
        if key != "kind" and value not in (None, [], {})
    ]
    return ", ".join([str(queue["kind"]), *settings] if "kind" in queue else settings)


def discipline(scenario: Scenario) -> str:
    """The bottleneck's queue discipline (its ``kind``)."""
    return str(scenario["link"]["queue"]["kind"])


def setup_rows(scenario: Scenario) -> list[tuple[str, str]]:
    """The settings a reader needs to interpret the numbers: discipline, rate, delay,
    buffer and TCP."""
    link, tcp = scenario["link"], scenario["tcp"]
    return [
        ("discipline", _queue_settings(link["queue"])),
        ("bottleneck", f"{link['rate_bps'] / 1e6:g} Mbit/s, {link['delay_ms']:g} ms one-way, loss {link['loss']:g}"),
        (
            "TCP",
            (
                f"stack {tcp.get('stack', 'rfc')}: {tcp['congestion']}/{tcp['recovery']}, "
                f"{tcp['packet_size_bytes']} B packets, IW {tcp['initial_window_pkts']}, "
                f"min RTO {tcp['min_rto_ms']:g} ms{', delayed ACKs' if tcp['delayed_ack'] else ''}"
            ),
        ),
        *(
            [("TCP knobs off the stack", ", ".join(f"{key} = {json.dumps(value)}" for key, value in departures.items()))]
            if (departures := tcp_departures(tcp))
            else []
        ),
        *(
            (f"TCP of flows[{index}]", ", ".join(f"{key} = {json.dumps(value)}" for key, value in group["tcp"].items()))
            for index, group in enumerate(scenario["flows"])
            if group.get("tcp")
        ),
    ]


def workload_rows(result: Result) -> list[tuple[str, str]]:
    """Headline metrics of each kind of app in the run."""
    apps = set(result.flows.get_column("app").unique().to_list())
    rows: list[tuple[str, str]] = []
    if "interactive" in apps:
        response_s = result.bursts.get_column("response_ns").drop_nulls() / 1e9
        unanswered = result.bursts.get_column("response_ns").null_count()
        rows += [
            ("interactive bursts", f"{result.bursts.height} ({unanswered} unanswered)"),
            ("response time", _seconds(response_s)),
            ("mean response time", f"{_or_na(response_s.mean(), '.3g')} s"),  # type: ignore[arg-type]
        ]
    sized = result.flows.filter(pl.col("app").is_in(SIZED_APPS), pl.col("size_bytes").is_not_null())
    if sized.height:
        finished = sized.filter(pl.col("end_ns").is_not_null())
        fct_s = (finished.get_column("end_ns") - finished.get_column("start_ns")) / 1e9
        rows += [
            ("sized transfers finished", f"{finished.height} of {sized.height}"),
            ("completion time (FCT)", _seconds(fct_s)),
        ]
        for bucket in metrics.fct_summary(sized).iter_rows(named=True):
            hi = bucket["size_hi_bytes"]
            size = f"{bucket['size_lo_bytes']:,}–{hi - 1:,} B" if hi is not None else f"≥ {bucket['size_lo_bytes']:,} B"
            rows.append(
                (
                    f"  FCT of {size}",
                    (
                        f"median {_or_na(bucket['fct_median_s'], '.3g')} s, p90 {_or_na(bucket['fct_p90_s'], '.3g')} s "
                        f"({bucket['flows']} flows, {bucket['unfinished']} unfinished)"
                    ),
                )
            )
        units = result.units.filter(pl.col("app").is_in(SIZED_APPS))
        if units.height:
            rows.append(("longest hang per user", _seconds(units.get_column("longest_hang_ns") / 1e9)))
    if "bulk" in apps:
        bulk_ids = result.flows.filter(pl.col("app") == "bulk").select("flow_id")
        bulk = result.flows.join(bulk_ids, on="flow_id")
        per_slice = metrics.jain_per_slice(result.slices.join(bulk_ids, on="flow_id"), flows=bulk)
        zero_byte_share = per_slice.select(
            (pl.col("zero_share") * pl.col("n_flows")).sum() / pl.col("n_flows").sum()
        ).item()
        rows += [
            (
                "long-term Jain index (bulk)",
                f"{metrics.long_term_jain(bulk, duration_ns=result.meta['duration_ns']):.3f}",
            ),
            (
                f"mean per-slice Jain ({result.meta['slice_ns'] / 1e9:g} s slices, bulk)",
                _or_na(per_slice.select(pl.col("jain").mean()).item(), ".3f"),
            ),
            ("zero-byte flow-slices (bulk)", _or_na(zero_byte_share, ".1%")),
        ]
    return rows


def udp_rows(result: Result) -> list[tuple[str, str]]:
    """The run's UDP sources per kind (they are not in ``flows``); none without them."""
    rows: list[tuple[str, str]] = []
    for app in metrics.udp_summary(result.udp_flows).iter_rows(named=True):
        rows += [
            (f"{app['app']} sources", f"{app['sources']}"),
            (
                f"  {app['app']} datagrams",
                (
                    f"{app['packets_delivered']:,} delivered, {app['packets_dropped']:,} dropped, "
                    f"{app['packets_in_flight']:,} in flight"
                ),
            ),
            (f"  {app['app']} loss rate", _or_na(app["loss_rate"], ".2%")),
            (
                f"  {app['app']} one-way delay",
                f"mean {_or_na(app['delay_mean_ms'], '.1f')} ms, max {_or_na(app['delay_max_ms'], '.1f')} ms",
            ),
        ]
    return rows


def cut_short_notes(result: Result) -> list[str]:
    """What a run recorded less of than asked, one sentence each (also in ``meta.json``):
    a ``[trace]`` table or the pcap that hit its cap, traced connections the run never
    opened, replayed log lines skipped as malformed."""
    meta, notes = result.meta, []
    trace = result.scenario.to_dict().get("trace") or {}
    for table in meta.get("trace_truncated", []):
        if table == "pcap" or table in trace.get("pcap_hosts", []):
            name = "the pcap" if table == "pcap" else f"{table}.pcap"
            notes.append(f"{name} stopped at trace.max_pcap_bytes = {trace.get('max_pcap_bytes')} bytes "
                         "(meta.json trace_truncated); raise it or shorten the run to capture it all")
        else:
            notes.append(f"{table} stopped at trace.max_rows = {trace.get('max_rows')} rows (meta.json trace_truncated)")
    if missing := meta.get("trace_flows_never_opened"):
        notes.append(f"traced connections {missing} were never opened (the run opened {meta['flows_opened']}, "
                     f"ids 0 to {meta['flows_opened'] - 1}): no series for them (meta.json trace_flows_never_opened)")
    if skipped := meta.get("skipped_log_lines"):
        notes.append(f"{skipped} malformed log lines skipped (skip_malformed; meta.json skipped_log_lines)")
    return notes
