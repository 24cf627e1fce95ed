"""The memory guard: estimate a run's peak memory from its scenario, before anything is
allocated, and refuse a run that would not fit.

The estimate adds what grows with the scenario (measured on this simulator, see
docs/scenario.md "Memory guard"): one row per flow and time slice of its life (the
per-slice delivered bytes, in Rust, then as Python lists, then as a Polars column), the
state of every unit (hosts, access links, TCP endpoints, events), one row per connection
of the churning workloads, per interactive burst, per progress point, per traced packet
and per TAQ link and slice. The limit is half the physical RAM unless
``SMALLPIPE_MEMORY_LIMIT`` says otherwise (``8GB``, ``500MB``, ``25%``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smallpipe._smallpipe import ConfigError

__all__ = ["LIMIT_ENV", "Estimate", "check_memory", "estimate_memory", "memory_limit_bytes"]

LIMIT_ENV = "SMALLPIPE_MEMORY_LIMIT"
"""Environment variable overriding the memory limit (bytes with a unit, or a % of RAM)."""
DEFAULT_LIMIT_SHARE = 0.5
"""Default limit: this share of the physical RAM (other processes and a sweep's other
workers need the rest)."""

# Measured with `/usr/bin/time -f %M smallpipe run examples/dumbbell.toml` while varying
# one knob (docs/scenario.md gives the commands and readings).
BASE_BYTES = 150e6
"""Python with Polars, DuckDB and Matplotlib loaded, and a small run (145 MB measured)."""
SLICE_ROW_BYTES = 160.0
"""One flow-slice row (139-174 B measured in 11 pairs of runs: 100 flows, 6 000 and 24 000 slices)."""
UNIT_BYTES = 8700.0
"""One unit's hosts, links, endpoints and result rows (8.4 KB measured: 1 000 to 20 000 flows)."""
CONNECTION_BYTES = 1000.0
"""One more connection's result row (17 columns, in Rust, in Python lists and in Polars)."""
ROW_BYTES = 128.0
"""A burst, progress or queue-state row (a few columns, as a slice row)."""
TRACE_ROW_BYTES = 256.0
"""A traced packet (7 columns)."""
MAX_UNITS = 1_000_000
"""Units per run (`MAX_UNITS` in crates/sim/src/config.rs): a replayed log's clients beyond it are refused."""
MIN_CONNECTION_WIRE_BYTES = 120.0
"""Bytes a connection puts on the bottleneck at least (SYN, one data segment, FIN: 40-byte
headers each): bounds how many connections sessions and web users can open."""


@dataclass(frozen=True)
class Estimate:
    """A run's estimated peak memory and its largest parts."""

    total_bytes: float
    slice_rows: float
    """Flow-slice rows: flows alive over the whole run x slices, plus the churn's rows."""
    whole_run_flows: int
    """Flows that live the whole run (bulk, interactive, transfer): each has a row per slice."""
    units: int
    connections: float
    n_slices: int

    @property
    def slice_bytes(self) -> float:
        return self.slice_rows * SLICE_ROW_BYTES


def _dist_mean(dist: Any) -> float | None:
    """The mean of a validated size/think distribution (None: no finite mean)."""
    if isinstance(dist, int | float):
        return float(dist)
    if not isinstance(dist, Mapping):
        return None
    kind = dist.get("dist")
    if kind == "fixed":
        return float(dist["value"])
    if kind == "uniform":
        return (float(dist["min"]) + float(dist["max"])) / 2
    if kind in ("exponential", "pareto"):
        return float(dist["mean"])
    if kind == "lognormal":
        sigma = float(dist["sigma"])
        exponent = float(dist["mu"]) + sigma * sigma / 2  # `**` would raise on overflow
        return math.exp(exponent) if exponent < 700 else math.inf
    if kind == "empirical":
        values = [float(v) for v in dist["values"]]
        return sum(values) / len(values)
    return None


def _low(spread: Any) -> float:
    """The smallest value of a fixed value or a [min, max] range."""
    return float(spread[0]) if isinstance(spread, list) else float(spread)


def _log_lines(path: str) -> int:
    """Requests in a Squid log, at most: its lines."""
    try:
        with Path(path).open("rb") as file:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: file.read(1 << 20), b"")) + 1
    except OSError:
        return 1


def estimate_memory(config: Mapping[str, Any] | Any) -> Estimate:
    """The peak memory of running ``config``: a :class:`~smallpipe.Scenario` or its
    canonical dict (``Scenario.to_dict()``, every default filled in)."""
    if not isinstance(config, Mapping) and hasattr(config, "to_dict"):  # a Scenario (it imports this module)
        config = config.to_dict()
    duration_s = float(config["duration_s"])
    n_slices = math.ceil(duration_s / float(config["slice_s"]))
    link = config["link"]
    capacity_bps = float(link["rate_bps"])
    topology = config.get("topology") or {}
    if topology.get("kind") == "diamond":
        capacity_bps += float(topology.get("path2_rate_bps") or link["rate_bps"])
    bottleneck_bytes = capacity_bps / 8 * duration_s
    packet_bytes = float(config["tcp"]["packet_size_bytes"])

    whole_run_flows = 0
    units = 0
    churn_connections = 0.0
    churn_concurrent = 0
    rows = 0.0  # bursts and progress points
    for group in config["flows"]:
        count = int(group["count"])
        app = group["app"]
        rtt_s = max(_low(group["rtt_ms"]) / 1000, 1e-6)
        if app in ("bulk", "transfer", "interactive"):
            whole_run_flows += count
            units += count
            if app == "interactive":
                rows += count * duration_s / float(group["mean_gap_s"])
            if group.get("record_progress"):
                group_packet_bytes = float((group.get("tcp") or {}).get("packet_size_bytes", packet_bytes))
                rows += bottleneck_bytes / group_packet_bytes + count
            continue
        if app == "replay":
            lines = _log_lines(str(group.get("log_path") or ""))
            units += min(lines, MAX_UNITS)
            churn_connections += lines
            churn_concurrent += min(lines, MAX_UNITS) * int(group["connections"])
            continue
        units += count
        mean_size = _dist_mean(group["size"]) if group.get("size") is not None else group.get("size_bytes")
        if app == "poisson":
            # Arrivals come whether or not the link keeps up: the rate alone counts them.
            if group.get("rate_per_s") is not None:
                arrivals_per_s = float(group["rate_per_s"])
            else:
                arrivals_per_s = float(group["load"]) * float(link["rate_bps"]) / 8 / max(float(mean_size or 1), 1.0)
            # Connections are short unless the link is overloaded: two slice rows each.
            churn_connections += arrivals_per_s * duration_s
            continue
        # Sessions and web users open a connection after the previous ones ended: at most
        # one per RTT and think time, and no more than the bottleneck can carry. Their
        # lifetimes add up to at most the run per parallel connection: n_slices rows each.
        think_s = _dist_mean(group["think_s"]) or 0.0
        per_cycle = (_dist_mean(group["objects_per_page"]) or 1.0) if app == "web" else 1.0
        parallel = int(group["connections"]) if app == "web" else 1
        by_time = count * per_cycle * (duration_s / (think_s + rtt_s) + 1)
        churn_connections += min(by_time, bottleneck_bytes / MIN_CONNECTION_WIRE_BYTES + count * parallel)
        churn_concurrent += count * parallel
    units = min(units, MAX_UNITS)

    held_connections = churn_connections
    output = config.get("output")
    if output:  # streamed: the finished flows' rows are held a batch at a time (one in Rust, one being written)
        held_connections = min(churn_connections, 2.0 * float(output["stream_flows_every"]))
    slice_rows = whole_run_flows * n_slices + 2 * held_connections + churn_concurrent * n_slices
    queues = [link.get("queue"), link.get("reverse_queue"), topology.get("path2_queue")]
    taq_links = sum(1 for queue in queues if isinstance(queue, Mapping) and queue.get("kind") == "taq")
    rows += taq_links * n_slices
    trace_rows = 2 * bottleneck_bytes / packet_bytes + 1000 if config.get("trace_conn") is not None else 0.0
    total = (
        BASE_BYTES
        + slice_rows * SLICE_ROW_BYTES
        + units * UNIT_BYTES
        + held_connections * CONNECTION_BYTES
        + rows * ROW_BYTES
        + trace_rows * TRACE_ROW_BYTES
    )
    return Estimate(total, slice_rows, whole_run_flows, units, churn_connections, n_slices)


def _physical_ram_bytes() -> float:
    return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


_UNITS = {"": 1.0, "B": 1.0, "K": 1e3, "KB": 1e3, "M": 1e6, "MB": 1e6, "G": 1e9, "GB": 1e9, "T": 1e12, "TB": 1e12}


def memory_limit_bytes() -> tuple[float, str]:
    """The limit and how it was set (for the message)."""
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        share = DEFAULT_LIMIT_SHARE
        return share * _physical_ram_bytes(), f"{share:.0%} of the physical RAM, the default"
    number = text.rstrip("%KMGTBkmgtb ")
    suffix = text[len(number) :].strip().upper()
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or (suffix != "%" and suffix not in _UNITS):
        raise ConfigError(
            f"{LIMIT_ENV}: {text!r} is not allowed; expected a size such as 8GB, 500MB or 25% (of the physical RAM)"
        )
    if suffix == "%":
        return value / 100 * _physical_ram_bytes(), f"{LIMIT_ENV}={text}"
    return value * _UNITS[suffix], f"{LIMIT_ENV}={text}"


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.3g} GB"


def check_memory(config: Mapping[str, Any]) -> Estimate:
    """Raise ConfigError, naming the knob to change, when ``config`` would not fit."""
    estimate = estimate_memory(config)
    limit, source = memory_limit_bytes()
    if estimate.total_bytes <= limit:
        return estimate
    limit_text = f"at most {_gb(limit)} ({source}; set {LIMIT_ENV}, e.g. {LIMIT_ENV}=16GB, to change it)"
    if estimate.slice_bytes >= estimate.total_bytes / 2 and estimate.slice_rows > 0:
        # The slices dominate: the slice length that would fit, all else equal.
        room = limit - (estimate.total_bytes - estimate.slice_bytes)
        factor = estimate.slice_bytes / room if room > 0 else math.inf
        slice_s = float(config["slice_s"])
        advice = (
            f"raise slice_s to at least {slice_s * factor:.3g} s, shorten duration_s or use fewer flows"
            if math.isfinite(factor) and slice_s * factor <= float(config["duration_s"])
            else "shorten duration_s or use fewer flows"
        )
        field = "slice_s"
        others = f" and {estimate.connections:,.0f} other connections" if estimate.connections else ""
        value = (
            f"{config['slice_s']:g} (about {_gb(estimate.total_bytes)}: {estimate.n_slices:,} slices of "
            f"{estimate.whole_run_flows:,} whole-run flows{others} make {estimate.slice_rows:.3g} flow-slice rows)"
        )
    else:
        field = "flows"
        value = (
            f"{estimate.units:,} units and {estimate.connections:,.0f} connections over {config['duration_s']:g} s "
            f"(about {_gb(estimate.total_bytes)})"
        )
        advice = "use fewer units (count), a lower load or rate_per_s, or a shorter duration_s"
    raise _guard_error(field, value, f"a run of {limit_text}: {advice}")


def _guard_error(field: str, value: str, allowed: str) -> ConfigError:
    error = ConfigError(f"{field}: {value} is not allowed; expected {allowed}")
    error.field, error.value, error.allowed = field, value, allowed
    return error
