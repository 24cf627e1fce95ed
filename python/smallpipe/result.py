"""Running a scenario and holding its results as Polars frames.

One results schema serves every runtime (simulator today, middlebox later): per-flow
records, per-flow bytes per time slice, per-link counters and interactive bursts.
The schemas are explicit so that an empty table still has the right column types.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import Any

import polars as pl

from smallpipe import _smallpipe
from smallpipe._smallpipe import SimulationError
from smallpipe.provenance import run_provenance
from smallpipe.rundir import replace_atomically
from smallpipe.scenario import Scenario, check_simulable
from smallpipe.streaming import STREAMED_TABLES, FlowStream, scan

__all__ = [
    "BURSTS_SCHEMA",
    "EVENTS_SCHEMA",
    "FLOWS_SCHEMA",
    "FLOW_DELAYS_SCHEMA",
    "FLOW_DELAY_COLUMNS",
    "FLOW_DELAY_HIST_SCHEMA",
    "FLOW_SERIES_SCHEMA",
    "LINKS_SCHEMA",
    "LINK_COUNTERS_SCHEMA",
    "LINK_SERIES_SCHEMA",
    "PROGRESS_SCHEMA",
    "QUEUE_STATES_SCHEMA",
    "SLICES_SCHEMA",
    "TRACE_SCHEMA",
    "UDP_FLOWS_SCHEMA",
    "UNITS_SCHEMA",
    "Interrupted",
    "Result",
    "overriding",
    "reporting_progress",
    "simulate",
    "with_flow_delays",
]

FLOWS_SCHEMA = pl.Schema(
    {
        "flow_id": pl.Int64,
        "unit_id": pl.Int64,
        "group": pl.Int64,
        "app": pl.String,
        "rtt_ms": pl.Float64,
        "start_ns": pl.Int64,
        "requested_ns": pl.Int64,
        "end_ns": pl.Int64,
        "size_bytes": pl.Int64,
        "bytes_delivered": pl.Int64,
        "segments_sent": pl.Int64,
        "retransmits": pl.Int64,
        "timeouts": pl.Int64,
        "timeouts_in_recovery": pl.Int64,
        "timeouts_after_dupacks": pl.Int64,
        "timeouts_repeated": pl.Int64,
        "syn_timeouts": pl.Int64,
        "fast_retransmits": pl.Int64,
        "loss_probes": pl.Int64,
        "rto_undos": pl.Int64,
        "spurious_rtos": pl.Int64,
        "recovery_undos": pl.Int64,
        "dsacks_received": pl.Int64,
        "backoff_ns": pl.Int64,
        "longest_silence_ns": pl.Int64,
    }
)
"""One row per flow; ``end_ns`` is null while unfinished, ``size_bytes`` null when unlimited,
``requested_ns`` (replayed logs only) when the client wanted the object."""

SLICES_SCHEMA = pl.Schema({"flow_id": pl.Int64, "slice": pl.Int64, "start_ns": pl.Int64, "bytes": pl.Int64})
"""In-order bytes delivered per flow and time slice, dense over each flow's lifetime (from
the slice it started in through the one it finished in, or the last; zeros included)."""

UNITS_SCHEMA = pl.Schema(
    {
        "unit_id": pl.Int64,
        "group": pl.Int64,
        "app": pl.String,
        "rtt_ms": pl.Float64,
        "connections": pl.Int64,
        "bytes_delivered": pl.Int64,
        "longest_hang_ns": pl.Int64,
        "pages_done": pl.Int64,
    }
)
"""One row per unit (a flow, session, web user, or Poisson host pair). ``longest_hang_ns``
is the TAQ paper's user-perceived hang: the longest time, while at least one of the unit's
connections was open, in which none of them received data."""

LINKS_SCHEMA = pl.Schema(
    {
        "name": pl.String,
        "rate_bps": pl.Int64,
        "tx_pkts": pl.Int64,
        "tx_bytes": pl.Int64,
        "utilization": pl.Float64,
        "arrived_pkts": pl.Int64,
        "dropped_pkts": pl.Int64,
        "drop_overlimit": pl.Int64,
        "drop_early": pl.Int64,
        "drop_flow_limit": pl.Int64,
        "drop_admission": pl.Int64,
        "drop_size_policy": pl.Int64,
        "drop_link_loss": pl.Int64,
        "drop_ack_filter": pl.Int64,
        "marked_pkts": pl.Int64,
        "loss_rate": pl.Float64,
        "mean_backlog_pkts": pl.Float64,
        "mean_queue_delay_ms": pl.Float64,
        "queue_delay_p50_ms": pl.Float64,
        "queue_delay_p99_ms": pl.Float64,
        "queue_delay_max_ms": pl.Float64,
        "size_aware_mean_target_pkts_per_rtt": pl.Float64,
    }
)
"""One row per link direction (``"bottleneck"``, ``"bottleneck_reverse"``, ...). Queueing
delays are those of departed packets, quantiles to 1%. ``marked_pkts``: packets the
discipline marked CE instead of dropping (0 for a discipline without ECN)."""

LINK_COUNTERS_SCHEMA = pl.Schema(
    {"link": pl.String, "counter": pl.String, "class": pl.String, "kind": pl.String, "value": pl.Int64}
)
"""Each link's discipline's own counters at the run's end, as ``tc -s qdisc`` prints them
(FQ-CoDel's ``new_flow_count``, ``ecn_mark``; RED's ``early``, ``pdrop``, ``marked``; CAKE's per
tin ``pkts``, ``drops``, ``marks``; ...): one row per link and counter, ``class`` the tin or
queue it belongs to (null: the whole discipline), ``kind`` ``"total"`` (a count since the
start) or ``"level"`` (a value now). Names and meanings: each discipline's page in docs/ (its "Counters" list)."""

UDP_FLOWS_SCHEMA = pl.Schema(
    {"udp_flow_id": pl.Int64, "unit_id": pl.Int64, "group": pl.Int64, "app": pl.String, "rtt_ms": pl.Float64,
     "packets_sent": pl.Int64, "bytes_sent": pl.Int64, "packets_delivered": pl.Int64, "bytes_delivered": pl.Int64,
     "packets_dropped": pl.Int64, "bytes_dropped": pl.Int64, "packets_in_flight": pl.Int64,
     "delay_sum_ns": pl.Int64, "delay_max_ns": pl.Int64}
)
"""One row per UDP source (``app = "udp_cbr"``, ``"udp_expoo"``, ``"udp_pareto"``; the ``flows``
table has TCP connections only), FlowMonitor-style counts at the run's end: datagrams (and
bytes, whole IP packets) sent, delivered to the receiving host, dropped (by a queue or lost on
a wire) and still in flight, so ``packets_sent = packets_delivered + packets_dropped +
packets_in_flight``; ``delay_sum_ns`` and ``delay_max_ns`` are the one-way delays of the
delivered datagrams, sender to receiver host, to the µs (their mean is ``delay_sum_ns /
packets_delivered``). See :func:`smallpipe.metrics.udp_summary`. Empty without UDP sources."""

QUEUE_DELAYS_SCHEMA = pl.Schema({"link": pl.String, "delay_ns": pl.Int64, "packets": pl.Int64})
"""The queueing-delay distribution per link: packets whose delay fell in a bucket whose
highest value is ``delay_ns`` (buckets 1% wide; empty buckets left out). See
:func:`smallpipe.metrics.queue_delay_quantiles`."""

BURSTS_SCHEMA = pl.Schema(
    {"flow_id": pl.Int64, "sent_ns": pl.Int64, "first_sent_ns": pl.Int64, "covered_ns": pl.Int64,
     "acked_ns": pl.Int64, "response_ns": pl.Int64}
)
"""One row per interactive burst: ``sent_ns`` when the application wrote it, ``first_sent_ns``
when its first byte first went on the wire (null while unsent, and on the testbed, where the
application cannot see it), ``covered_ns`` when the first ACK whose cumulative ACK or SACK
blocks cover all of it reached the sender (null until then and on the testbed; before
``acked_ns`` when an earlier hole held the cumulative ACK back), ``acked_ns`` when all of it
was cumulatively acknowledged; ``response_ns`` is
``acked_ns − sent_ns``. ``acked_ns``/``response_ns`` null if never acknowledged."""

PROGRESS_SCHEMA = pl.Schema({"flow_id": pl.Int64, "packets": pl.Int64, "fct_ns": pl.Int64})
"""Flows with ``record_progress``: the time since the flow started at which its first
``packets`` MSS of data had arrived in order, i.e. the FCT of a ``packets``-packet flow
(the thesis's measuring flow)."""

_TAQ_STATES = ("slow_start", "normal", "explicit_recovery", "timeout_silence", "timeout_recovery",
               "extended_silence", "idle_silence")
_TAQ_QUEUES = ("recovery_extended", "recovery_silence", "recovery_first", "sparse", "new_flow", "over_penalized",
               "below_fair_share", "above_fair_share")
QUEUE_STATES_SCHEMA = pl.Schema(
    {"link": pl.String, "slice": pl.Int64, "time_ns": pl.Int64}
    | {f"flows_{state}": pl.Int64 for state in _TAQ_STATES}
    | {f"queued_{queue}": pl.Int64 for queue in _TAQ_QUEUES}
)
"""Links whose queue is TAQ, one row per link and time slice, taken at the slice's end:
flows tracked by TAQ in each state of its flow model (``flows_<state>``) and packets in
each of its queues (``queued_<queue>``); see docs/taq.md. Empty without a TAQ queue."""

TRACE_SCHEMA = pl.Schema(
    {"time_ns": pl.Int64, "sent": pl.Boolean, "seq": pl.Int64, "payload_len": pl.Int64, "flags": pl.Int64,
     "cwnd_bytes": pl.Int64, "ssthresh_bytes": pl.Int64}
)
"""With the scenario's ``trace_conn``: that connection's sender after each of its events, one
row per packet it emitted (``sent``; ``seq`` relative to its ISS, so the SYN is 0 and the
first data byte 1; ``flags`` the TCP flag bits) or one row with ``sent`` false when the event
only changed ``cwnd_bytes`` or ``ssthresh_bytes``. Empty without ``trace_conn``."""

SENDER_EPOCHS_SCHEMA = pl.Schema(
    {"flow_id": pl.Int64, "slice": pl.Int64, "segments_sent": pl.Int64, "cwnd_segments": pl.Int64,
     "rto_backoff": pl.Int64, "in_timeout": pl.Boolean, "taq_state": pl.String}
)
"""With the scenario's ``record_sender_epochs``: every open connection's data sender at the
end of each slice, from its own view: ``segments_sent`` in the slice, ``cwnd_segments``
(cwnd in whole MSS), ``rto_backoff`` (doublings of the retransmission timer since the
last RTT sample) and ``in_timeout`` (from a timer expiry until new data is acknowledged);
``taq_state`` is the state TAQ inferred for the flow from the wire (its flow model's
state names, see ``queue_states``) when the bottleneck is TAQ, else null. A connection
appears while open and in the slice it closed in. Empty without ``record_sender_epochs``."""
FLOW_SERIES_SCHEMA = pl.Schema(
    {"time_ns": pl.Int64, "flow_id": pl.Int64, "cwnd_bytes": pl.Int64, "ssthresh_bytes": pl.Int64,
     "srtt_ns": pl.Int64, "rto_ns": pl.Int64, "flight_bytes": pl.Int64, "bytes_acked": pl.Int64,
     "bbr_bw_bps": pl.Int64, "pacing_rate_bps": pl.Int64}
)
"""With ``trace.flows`` or ``trace.all_flows``: each traced sender that is still open, every
``trace.interval_s`` and at the end: its congestion window, slow-start threshold, smoothed RTT
(null before the first RTT sample), retransmission timeout, FlightSize (RFC 5681: bytes sent
and not yet cumulatively acknowledged) and the application bytes acknowledged so far (goodput
over an interval is its difference); with ``tcp.congestion = "bbr"`` also BBR's bandwidth
estimate and pacing rate in payload bits/s (segments/s × MSS × 8; null for other controllers).
``trace.first_flows`` adds the first connections opened."""

_DROP_REASONS = ("overlimit", "early", "flow_limit", "admission", "size_policy", "link_loss", "ack_filter")
LINK_SERIES_SCHEMA = pl.Schema(
    {"time_ns": pl.Int64, "link": pl.String, "enqueued_pkts": pl.Int64, "enqueued_bytes": pl.Int64,
     "dequeued_pkts": pl.Int64, "dequeued_bytes": pl.Int64, "dropped_pkts": pl.Int64}
    | {f"drop_{reason}": pl.Int64 for reason in _DROP_REASONS}
    | {"backlog_pkts": pl.Int64, "backlog_bytes": pl.Int64, "marked_pkts": pl.Int64, "queue_delay_ns_sum": pl.Int64}
)
"""With ``trace.links``: per bottleneck direction, ``tc -s`` style, the packets (and bytes)
offered to the queue, sent from it and dropped (by reason) in the interval that ends at
``time_ns``, and the backlog at that time; the packets ECN-marked in the interval, and the sum of
the queueing delays of the packets dequeued in it (over ``dequeued_pkts``: their mean delay).
Per interval, enqueued − dequeued − dropped in the queue (every drop but ``drop_link_loss``, a
loss on the wire after the packet left the queue) is the backlog's change; the intervals' drops add
up to the ``links`` table's."""

FLOW_DELAYS_SCHEMA = pl.Schema(
    {"flow_id": pl.Int64, "rtt_samples": pl.Int64, "rtt_min_ns": pl.Int64, "rtt_mean_ns": pl.Float64,
     "rtt_p99_ns": pl.Int64, "queue_delay_pkts": pl.Int64, "queue_delay_mean_ns": pl.Float64,
     "queue_delay_p99_ns": pl.Int64, "jitter_mean_ns": pl.Float64, "offered_pkts": pl.Int64, "lost_pkts": pl.Int64}
)
"""With ``trace.flow_delays``: per sampled connection, FlowMonitor-style (docs/scenario.md):
RTT samples timed from outside the sender (one segment at a time, none from a resent one),
the queueing delay its data-direction packets saw at the bottleneck, its jitter (mean
|difference| of consecutive packets' delays) and the packets offered to and lost at the
bottleneck (queue drops and wire loss). Quantiles are read from a histogram of 8 buckets per
doubling (to 9%). Also joined into ``flows`` as the ``FLOW_DELAY_COLUMNS``."""

FLOW_DELAY_HIST_SCHEMA = pl.Schema(
    {"flow_id": pl.Int64, "metric": pl.String, "upper_ns": pl.Int64, "count": pl.Int64}
)
"""With ``trace.flow_delays``: the non-empty buckets of each sampled connection's ``rtt`` and
``queue_delay`` histograms (``upper_ns``: the bucket's upper end)."""

FLOW_DELAY_COLUMNS = pl.Schema(
    {"rtt_samples": pl.Int64, "rtt_min_ms": pl.Float64, "rtt_mean_ms": pl.Float64, "rtt_p99_ms": pl.Float64,
     "queue_delay_mean_ms": pl.Float64, "queue_delay_p99_ms": pl.Float64, "jitter_ms": pl.Float64,
     "loss_rate": pl.Float64}
)
"""Columns the ``flows`` table gains when the run recorded ``flow_delays`` (null for the
connections not sampled): ``flow_delays`` in milliseconds, and ``loss_rate`` = lost / offered
packets at the bottleneck. Retransmits are ``flows.retransmits`` already."""


def with_flow_delays(flows: pl.DataFrame, delays: pl.DataFrame) -> pl.DataFrame:
    """``flows`` with the ``FLOW_DELAY_COLUMNS`` of the connections in ``delays`` (a
    ``flow_delays`` table); unchanged when ``delays`` is empty (the run did not record them)."""
    if delays.is_empty():
        return flows
    ms = 1e-6
    columns = delays.select(
        "flow_id",
        "rtt_samples",
        (pl.col("rtt_min_ns") * ms).alias("rtt_min_ms"),
        (pl.col("rtt_mean_ns") * ms).alias("rtt_mean_ms"),
        (pl.col("rtt_p99_ns") * ms).alias("rtt_p99_ms"),
        (pl.col("queue_delay_mean_ns") * ms).alias("queue_delay_mean_ms"),
        (pl.col("queue_delay_p99_ns") * ms).alias("queue_delay_p99_ms"),
        (pl.col("jitter_mean_ns") * ms).alias("jitter_ms"),
        pl.when(pl.col("offered_pkts") > 0).then(pl.col("lost_pkts") / pl.col("offered_pkts")).alias("loss_rate"),
    ).cast(FLOW_DELAY_COLUMNS)
    return flows.drop([c for c in FLOW_DELAY_COLUMNS if c in flows.columns]).join(columns, on="flow_id", how="left")

EVENTS_SCHEMA = pl.Schema(
    {"time_ns": pl.Int64, "link": pl.String, "event": pl.String, "reason": pl.String, "flow_id": pl.Int64,
     "seq": pl.Int64, "ack": pl.Int64, "flags": pl.Int64, "len_bytes": pl.Int64}
)
"""With ``trace.events``: every ``enqueue`` (a packet offered to a bottleneck queue),
``dequeue`` and ``drop`` (with its ``reason``, as the ``links`` table's ``drop_*`` columns) in
time order; ``seq``/``ack``/``flags`` as on the wire, ``len_bytes`` the IP length and
``flow_id`` the connection, of either direction."""

_TABLES = {
    "flows": FLOWS_SCHEMA,
    "slices": SLICES_SCHEMA,
    "units": UNITS_SCHEMA,
    "links": LINKS_SCHEMA,
    "bursts": BURSTS_SCHEMA,
    "progress": PROGRESS_SCHEMA,
    "queue_delays": QUEUE_DELAYS_SCHEMA,
    "link_counters": LINK_COUNTERS_SCHEMA,
    "udp_flows": UDP_FLOWS_SCHEMA,
    "queue_states": QUEUE_STATES_SCHEMA,
    "trace": TRACE_SCHEMA,
    "sender_epochs": SENDER_EPOCHS_SCHEMA,
}
_TRACE_TABLES = {
    "flow_series": FLOW_SERIES_SCHEMA,
    "link_series": LINK_SERIES_SCHEMA,
    "events": EVENTS_SCHEMA,
    "flow_delays": FLOW_DELAYS_SCHEMA,
    "flow_delay_hist": FLOW_DELAY_HIST_SCHEMA,
}
"""The ``[trace]`` tables: written only by runs that recorded them."""
PCAP_FILE = "bottleneck.pcap"


@dataclass(frozen=True)
class Result:
    """The output of one run: twelve tables, run metadata and the scenario that made it, and
    with the scenario's ``[trace]`` table up to five more and a pcap (docs/scenario.md); with
    ``trace.flow_delays`` the ``flows`` table also has the ``FLOW_DELAY_COLUMNS``.

    ``meta`` holds ``seed``, ``duration_ns``, ``slice_ns``, ``events``, ``packets``
    (link transmissions on all links), ``wall_seconds``, ``skipped_log_lines``,
    ``trace_truncated`` (the ``[trace]`` tables that hit their cap: ``flow_series``,
    ``link_series``, ``events``, ``pcap``, or a captured host's name for its pcap), ``trace_flows_never_opened`` (``trace.flows``
    ids past the connections the run opened, when there are any), ``provenance``
    (``version``, ``commit``, ``command_line``, ``host``, ``kernel``, ``python``; see
    :func:`smallpipe.provenance.run_provenance`) and
    ``partial``: true when Ctrl-C stopped the run, whose tables then cover only its first
    ``stopped_at_ns`` (also its ``duration_ns``; the scenario keeps the planned duration),
    ``flows_opened`` and ``packets_to_closed_flows`` (packets that reached a host after
    their connection's state was recycled, dropped there).

    A streamed run (``[output] stream_flows_every``, simulated with ``stream_dir``) has its
    ``flows``, ``slices``, ``bursts`` and ``progress`` as Parquet parts under ``stream_dir``:
    those frames are empty, :meth:`scan` reads the parts lazily, and ``meta["streamed"]``
    holds the parts' count and the online summary (flows, finished, timeouts, FCT median
    and 99th percentile to 12%).
    """

    flows: pl.DataFrame
    slices: pl.DataFrame
    units: pl.DataFrame
    links: pl.DataFrame
    bursts: pl.DataFrame
    progress: pl.DataFrame
    queue_delays: pl.DataFrame
    queue_states: pl.DataFrame
    trace: pl.DataFrame
    sender_epochs: pl.DataFrame
    meta: dict[str, Any]
    scenario: Scenario
    flow_series: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FLOW_SERIES_SCHEMA))
    link_series: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=LINK_SERIES_SCHEMA))
    events: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=EVENTS_SCHEMA))
    flow_delays: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FLOW_DELAYS_SCHEMA))
    flow_delay_hist: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FLOW_DELAY_HIST_SCHEMA))
    link_counters: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=LINK_COUNTERS_SCHEMA))
    """Each link's discipline's own counters (:data:`LINK_COUNTERS_SCHEMA`)."""
    udp_flows: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=UDP_FLOWS_SCHEMA))
    """One row per UDP source (:data:`UDP_FLOWS_SCHEMA`)."""
    pcap: bytes | None = None
    """A pcap (nanosecond timestamps, Ethernet) of both bottleneck directions, with ``trace.pcap``."""
    host_pcaps: dict[str, bytes] = field(default_factory=dict)
    """With ``trace.pcap_hosts``: each captured end host's pcap (as on its interface), by its name."""
    stream_dir: Path | None = None
    """Where a streamed run's per-flow parts are (None: the frames hold every row)."""

    def scan(self, table: str) -> pl.LazyFrame:
        """``table`` as a lazy frame: a streamed run's parts, or the frame in memory."""
        if self.stream_dir is not None and table in STREAMED_TABLES:
            return scan(self.stream_dir, table, _TABLES[table])
        frame: pl.DataFrame = getattr(self, table)
        return frame.lazy()

    @classmethod
    def from_native(cls, native: dict[str, Any], scenario: Scenario) -> Result:
        """Wrap the column dicts returned by ``_smallpipe.simulate``.

        Raises:
            SimulationError: a table's columns differ from its schema (the native
                module and this package disagree on the results schema).
        """
        frames = {}
        for table, schema in (_TABLES | _TRACE_TABLES).items():
            columns = native[table]
            missing, unexpected = set(schema) - set(columns), set(columns) - set(schema)
            if missing or unexpected:
                raise SimulationError(
                    f"native {table} table does not match the results schema: "
                    f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"
                )
            frames[table] = pl.DataFrame(columns, schema=schema, strict=False)
        frames["flows"] = with_flow_delays(frames["flows"], frames["flow_delays"])
        return cls(**frames, meta=dict(native["meta"]), scenario=scenario, pcap=native["pcap"],
                   host_pcaps=dict(native["host_pcaps"]), stream_dir=None)

    def write(self, directory: str | PathLike[str]) -> Path:
        """Write the run to ``directory`` (created if needed) and return its path.

        Files: ``flows.parquet``, ``slices.parquet``, ``units.parquet``, ``links.parquet``,
        ``bursts.parquet``, ``progress.parquet``, ``queue_delays.parquet``, ``link_counters.parquet``,
        ``udp_flows.parquet``, ``queue_states.parquet``,
        ``trace.parquet``, ``sender_epochs.parquet``, ``meta.json`` (with ``scenario``, the
        canonical scenario as simulated) and ``scenario.json`` (the same, from which
        :meth:`read` rebuilds the :class:`Scenario`); with a
        ``[trace]`` table also ``flow_series.parquet``, ``link_series.parquet``,
        ``events.parquet``, ``flow_delays.parquet`` and ``flow_delay_hist.parquet`` when
        recorded, ``bottleneck.pcap`` and one ``NAME.pcap`` per captured host
        (``sender0.pcap``, ...). Each file is written under
        a temporary name and renamed, ``meta.json`` last: a write that fails (a full disk)
        leaves no truncated file, and a folder without ``meta.json`` is one whose write did
        not finish (:meth:`read` says so). Raises OSError when a write fails.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for table in _TABLES:
            if self.stream_dir is not None and table in STREAMED_TABLES:
                continue  # its parts are on disk already
            replace_atomically(directory / f"{table}.parquet", getattr(self, table).write_parquet)
        for table in _TRACE_TABLES:
            if not getattr(self, table).is_empty():
                replace_atomically(directory / f"{table}.parquet", getattr(self, table).write_parquet)
        if self.pcap is not None:
            pcap = self.pcap
            replace_atomically(directory / PCAP_FILE, lambda path: path.write_bytes(pcap))
        for name, host_pcap in self.host_pcaps.items():
            replace_atomically(directory / f"{name}.pcap", _bytes(host_pcap))
        scenario = self.scenario.to_dict()
        replace_atomically(directory / "scenario.json", _text(json.dumps(scenario, indent=2) + "\n"))
        # meta.json last: a folder without it is one whose write did not finish.
        meta = {**self.meta, "provenance": self.meta.get("provenance") or run_provenance(), "scenario": scenario}
        replace_atomically(directory / "meta.json", _text(json.dumps(meta, indent=2) + "\n"))
        return directory

    @classmethod
    def read(cls, directory: str | PathLike[str]) -> Result:
        """Read a run written by :meth:`write`. A run written by an older smallpipe lacks the
        tables and columns added since: they read as empty tables and null columns."""
        directory = Path(directory)
        frames = {table: _read_table(directory / f"{table}.parquet", schema) for table, schema in _TABLES.items()}
        for table, schema in _TRACE_TABLES.items():
            frames[table] = _read_table(directory / f"{table}.parquet", schema)
        frames["flows"] = with_flow_delays(frames["flows"], frames["flow_delays"])
        pcap_path = directory / PCAP_FILE
        if not (directory / "meta.json").is_file():
            raise FileNotFoundError(
                f"{directory} holds no meta.json: not a run folder, or one whose write did not finish "
                "(meta.json is written last)"
            )
        meta = json.loads((directory / "meta.json").read_text())
        meta.pop("scenario", None)  # scenario.json has it, and it is `scenario` below
        scenario = Scenario.from_dict(json.loads((directory / "scenario.json").read_text()))
        pcap = pcap_path.read_bytes() if pcap_path.is_file() else None
        hosts = (scenario.to_dict().get("trace") or {}).get("pcap_hosts", [])
        host_pcaps = {name: (directory / f"{name}.pcap").read_bytes() for name in hosts
                      if (directory / f"{name}.pcap").is_file()}
        stream_dir = directory if "streamed" in meta else None
        return cls(**frames, meta=meta, scenario=scenario, pcap=pcap, host_pcaps=host_pcaps, stream_dir=stream_dir)


def _text(text: str) -> Callable[[Path], object]:
    return lambda path: path.write_text(text)


def _bytes(data: bytes) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(data)


def _read_table(path: Path, schema: pl.Schema) -> pl.DataFrame:
    if not path.exists():
        return pl.DataFrame(schema=schema)
    frame = pl.read_parquet(path)
    missing = [pl.lit(None, dtype).alias(name) for name, dtype in schema.items() if name not in frame.columns]
    return frame.with_columns(missing).select(schema.names()).cast(schema)


_OVERRIDES: ContextVar[Mapping[str, Any]] = ContextVar("smallpipe_overrides", default=MappingProxyType({}))


@contextmanager
def overriding(overrides: Mapping[str, Any]) -> Iterator[None]:
    """Within the block, every :func:`simulate` applies ``overrides`` (dotted paths, as
    :meth:`Scenario.with_overrides` takes them) after the scenario's own values. This runs
    a whole reproduction as a variant (``smallpipe reproduce NAME --set tcp.recovery=reno``)
    to test one cause at a time. Nested blocks add to the outer ones."""
    token = _OVERRIDES.set({**_OVERRIDES.get(), **overrides})
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


def active_overrides() -> Mapping[str, Any]:
    """The overrides the enclosing :func:`overriding` blocks apply (empty outside them)."""
    return _OVERRIDES.get()


def with_active_overrides(scenario: Scenario) -> Scenario:
    """``scenario`` with the enclosing :func:`overriding` blocks applied: what every runtime
    (the simulator, the testbed) runs."""
    overrides = _OVERRIDES.get()
    return scenario.with_overrides(overrides) if overrides else scenario


_KEEP: ContextVar[Callable[[Result], None] | None] = ContextVar("smallpipe_keep", default=None)


@contextmanager
def keeping_results(keep: Callable[[Result], None]) -> Iterator[None]:
    """Within the block, every :func:`simulate` in this process hands its result to ``keep``
    as it ends (an interrupted one too, flagged partial): `smallpipe reproduce` keeps what
    was measured when Ctrl-C stops a figure before it has written its table."""
    token = _KEEP.set(keep)
    try:
        yield
    finally:
        _KEEP.reset(token)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`simulate`; ``result`` holds the tables computed until then
    (``result.meta["partial"]`` is true)."""

    def __init__(self, result: Result) -> None:
        super().__init__(f"interrupted at {result.meta['stopped_at_ns'] / 1e9:g} s of simulated time")
        self.result = result

    def __reduce__(self) -> tuple[type[Interrupted], tuple[Result]]:
        # A sweep worker sends it back to the sweep: rebuild it from the result, not the message.
        return (type(self), (self.result,))


ProgressCallback = Callable[[int, int], None]
"""Called during a run with the simulated time reached and the run's end (ns)."""

_PROGRESS: ContextVar[Callable[[Scenario], ProgressCallback] | None] = ContextVar("smallpipe_progress", default=None)


@contextmanager
def reporting_progress(start: Callable[[Scenario], ProgressCallback]) -> Iterator[None]:
    """Within the block, every :func:`simulate` calls ``start(scenario)`` as it begins
    and the callback it returns every chunk of events (a few tens of milliseconds) with
    the simulated time reached and the end, in nanoseconds. The CLI draws its progress
    bars with this, also for the many runs of a reproduction."""
    token = _PROGRESS.set(start)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def simulate(
    scenario: Scenario | dict[str, Any] | str | PathLike[str], *, stream_dir: str | PathLike[str] | None = None
) -> Result:
    """Run a scenario in the simulator.

    Arguments:
        scenario: a :class:`Scenario`, a dict with the TOML keys, or the path of a
            TOML scenario file.
        stream_dir: with the scenario's ``[output] stream_flows_every``, where the per-flow
            tables go as Parquet parts during the run (see :class:`Result`); without it the
            rows stay in memory as in any run. An interrupted run keeps the parts written.

    Raises:
        ConfigError: the scenario is invalid.
        SimulationError: the run failed.
        Interrupted: Ctrl-C (SIGINT) stopped the run; it carries the partial result.
    """
    if isinstance(scenario, dict):
        scenario = Scenario.from_dict(scenario)
    elif not isinstance(scenario, Scenario):
        scenario = Scenario.from_toml(scenario)
    scenario = with_active_overrides(scenario)
    check_simulable(scenario)
    start = _PROGRESS.get()
    stream = None
    if stream_dir is not None and scenario.to_dict().get("output"):
        stream = FlowStream(Path(stream_dir), _TABLES)
    native = _smallpipe.simulate(scenario.to_json(), progress=start(scenario) if start else None, on_rows=stream)
    result = Result.from_native(native, scenario)
    result.meta["provenance"] = run_provenance()
    traced = (scenario.to_dict().get("trace") or {}).get("flows") or []
    if never_opened := sorted(c for c in traced if c >= result.meta["flows_opened"]):
        result.meta["trace_flows_never_opened"] = never_opened  # said, not left to an empty table
    if stream is not None:
        stream({table: native[table] for table in STREAMED_TABLES})  # the rows still held: the last part
        result.meta["streamed"] = {"parts": stream.parts, **stream.summary.to_dict()}
        result = replace(
            result,
            flows=pl.DataFrame(schema=_TABLES["flows"]),
            slices=pl.DataFrame(schema=_TABLES["slices"]),
            bursts=pl.DataFrame(schema=_TABLES["bursts"]),
            progress=pl.DataFrame(schema=_TABLES["progress"]),
            stream_dir=stream.directory,
        )
    if (keep := _KEEP.get()) is not None:
        keep(result)
    if result.meta["partial"]:
        raise Interrupted(result)
    return result
