"""Thesis, Figure 5.2: median and 99th-percentile FCT against flow size on RCP's home turf.

Set-up (its §5.1, after Dukkipati et al.'s Figure 6): one 2.4 Gbit/s link with a 100 ms
RTT; flows arrive as a Poisson process with Pareto sizes (mean 25 packets, shape 1.2) at
90% of the link's capacity, and one flow in 500 is a marker whose length is drawn
uniformly from every 25th packet count from 100 to 1075. The thesis simulated 10^8 flows so
that each plotted length rests on at least 5000 flows; it reports that RED keeps small
flows near the slow-start limit at the median, that FQ closes half the TCP-RCP gap at the
median and 75% (13 and 133 packets), 85% (500) and 88% (1000) of it at the 99th percentile.

Choices where the thesis is silent (docs/reproductions/thesis.md): the protocols, packets
(1000 bytes on the wire, 960 of payload), no delayed ACKs and 200 ms minimum RTO of
Figure 5.1; a buffer of one bandwidth-delay product (as the RCP scripts size theirs); the
offered load counted on the wire (the payload rate is 0.9 x 960 / 1000 of the link); a
10 ms bottleneck and 40 ms access links on each side of it; flows of each protocol counted
when they start after ``warmup_s`` and at least ``drain_s`` before the end, so the long ones
have time to finish. The scale (link rate, simulated time) is a parameter: the full run is
the largest that finishes within minutes here, and the table says how many flows every
point rests on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.thesis_fig51 import (
    MSS_BYTES,
    PACKET_SIZE_BYTES,
    RCP,
    WITH_RCP,
    draw_reference_lines,
    protocol_config,
)
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["MARKER_PKTS", "SMALL_PKTS", "counted_flows", "flow_counts", "gap_closed", "plot", "reproduce", "run", "scenario", "summary"]

RATE_BPS = 2_400_000_000
RTT_MS = 100.0
BOTTLENECK_DELAY_MS = 10.0
MEAN_PKTS = 25
PARETO_SHAPE = 1.2
LOAD = 0.9
MARKER_EVERY = 500
MARKER_PKTS: tuple[int, ...] = tuple(range(100, 1076, 25))
SMALL_PKTS: tuple[int, ...] = (5, 8, 13, 25, 50, 75, 133)
"""Flow lengths of panels (a) and (c): 13 and 133 packets are the thesis's gap sizes; the
Pareto's smallest flow is its scale, 25 x 0.2 / 1.2 = 4.2 packets, so none is shorter than 5."""
STREAM_FLOWS_EVERY = 100_000
"""Flows per Parquet part when ``run`` streams."""
MARKER_BINS: tuple[tuple[int, int], ...] = ((100, 300), (325, 550), (575, 800), (825, 1075))
"""Panels (b) and (d): marker lengths pooled into bins (too few markers per length here)."""


def scenario(seed: int, protocol: str, *, rate_bps: int = RATE_BPS, duration_s: float = 2.0,
             stream_flows_every: int | None = None, fifo_hops: str = "events") -> Scenario:
    """The Figure 5.2 link under ``protocol`` (one of :data:`WITH_RCP`); with
    ``stream_flows_every`` its flow rows stream out in parts of that many flows (so the
    memory guard counts only the flows open at once). ``fifo_hops`` is the scenario's
    field of that name (``"computed"``: fewer events, ties ordered otherwise)."""
    bdp_pkts = round(rate_bps * RTT_MS / 1000 / (PACKET_SIZE_BYTES * 8))
    iw_pkts, queue, transport = protocol_config(protocol, RTT_MS)
    flows = [{
        "app": "poisson",
        "count": 1000,
        "rtt_ms": RTT_MS,
        "load": LOAD * MSS_BYTES / PACKET_SIZE_BYTES,
        "size": {"dist": "pareto", "mean": MEAN_PKTS * MSS_BYTES, "shape": PARETO_SHAPE},
        "marker_every": MARKER_EVERY,
        "marker_size": {"dist": "empirical", "values": [k * MSS_BYTES for k in MARKER_PKTS]},
    }]
    config: dict[str, Any] = {
        "seed": seed,
        "duration_s": duration_s,
        "slice_s": duration_s,
        "link": {"rate_bps": rate_bps, "delay_ms": BOTTLENECK_DELAY_MS, "access_rate_bps": rate_bps,
                 "queue": {**queue, "limit_pkts": bdp_pkts}},
        "tcp": {"packet_size_bytes": PACKET_SIZE_BYTES, "recovery": "reno", "delayed_ack": False,
                "timestamps": False, "initial_window_pkts": iw_pkts, "min_rto_ms": 200.0,
                "rwnd_bytes": 2 * bdp_pkts * PACKET_SIZE_BYTES},
        "flows": flows,
        "fifo_hops": fifo_hops,
        **transport,
    }
    if stream_flows_every is not None:
        config["output"] = {"stream_flows_every": stream_flows_every}
    return Scenario(**config)


def run(
    *,
    protocols: Sequence[str] = WITH_RCP,
    rate_bps: int = RATE_BPS,
    duration_s: float = 4.0,
    warmup_s: float = 0.5,
    drain_s: float = 1.5,
    seed: int = 1,
    stream_dir: Path | None = None,
    fifo_hops: str = "events",
) -> pl.DataFrame:
    """One row per counted flow (:func:`counted_flows`) of each protocol's run.

    With ``stream_dir`` (for the thesis's 10^8 flows) each protocol's flow rows go to
    Parquet parts under ``stream_dir/<protocol>`` during its run, are read back lazily, and
    only the flows :func:`summary` uses (lengths in :data:`SMALL_PKTS` or
    :data:`MARKER_PKTS`) are kept; the summary is the same."""
    frames = []
    for protocol in protocols:
        every = None if stream_dir is None else STREAM_FLOWS_EVERY
        sc = scenario(seed, protocol, rate_bps=rate_bps, duration_s=duration_s, stream_flows_every=every,
                      fifo_hops=fifo_hops)
        flows = simulate(sc).flows if stream_dir is None else simulate(sc, stream_dir=stream_dir / protocol).scan("flows")
        frames.append(counted_flows(flows, protocol, duration_s=duration_s, warmup_s=warmup_s, drain_s=drain_s))
    return pl.concat(frames)


def counted_flows(flows: pl.DataFrame | pl.LazyFrame, protocol: str, *, duration_s: float, warmup_s: float,
                  drain_s: float) -> pl.DataFrame:
    """The flows of one protocol's run that count (started after ``warmup_s`` and at least
    ``drain_s`` before the end): protocol, length in packets, FCT (s; null if it did not
    finish). From streamed parts (a ``LazyFrame``) only the lengths :func:`summary` uses
    are kept, the length as Int16 and the protocol as Categorical: at 10^8 flows these are
    3·10^7 rows, and reading and summarizing them peaked at 1 056 MiB this way against 1 771 MiB
    with an Int64 and a string (docs/performance.md)."""
    counted = flows.filter(pl.col("start_ns") >= warmup_s * 1e9, pl.col("start_ns") <= (duration_s - drain_s) * 1e9)
    packets = (pl.col("size_bytes") + MSS_BYTES - 1) // MSS_BYTES
    fct_s = (pl.col("end_ns") - pl.col("start_ns")) / 1e9
    if isinstance(counted, pl.DataFrame):
        return counted.select(protocol=pl.lit(protocol), packets=packets.cast(pl.Int64), fct_s=fct_s)
    return counted.filter(packets.is_in([*SMALL_PKTS, *MARKER_PKTS])).select(
        protocol=pl.lit(protocol, dtype=pl.Categorical), packets=packets.cast(pl.Int16), fct_s=fct_s,
    ).collect()


def flow_counts(fcts: pl.DataFrame) -> pl.DataFrame:
    """Per protocol: the flows counted (every length, not only the plotted ones) and how
    many of them had not finished at the end."""
    return fcts.group_by("protocol").agg(counted_flows=pl.len(), unfinished=pl.col("fct_s").null_count()).sort("protocol")


def summary(fcts: pl.DataFrame) -> pl.DataFrame:
    """Per protocol: median and p99 FCT at each of :data:`SMALL_PKTS` and each marker bin,
    with the number of flows behind each point (unfinished ones count as slower than all)."""
    far = 1e9  # an unfinished flow ranks above every finished one
    with_far = fcts.with_columns(pl.col("fct_s").fill_null(far))
    rows = [(k, k, k) for k in SMALL_PKTS] + [(lo, hi, None) for lo, hi in MARKER_BINS]
    frames = []
    for lo, hi, exact in rows:
        part = with_far.filter(pl.col("packets") == exact) if exact else with_far.filter(
            pl.col("packets").is_between(lo, hi), pl.col("packets").is_in(MARKER_PKTS))
        frames.append(part.group_by("protocol").agg(
            size_lo_pkts=pl.lit(lo), size_hi_pkts=pl.lit(hi), flows=pl.len(),
            unfinished=(pl.col("fct_s") >= far).sum(),
            median_s=pl.col("fct_s").median(),
            p99_s=pl.col("fct_s").quantile(0.99, interpolation="linear"),
            slowest_finished_s=pl.col("fct_s").filter(pl.col("fct_s") < far).max(),
        ))
    table = pl.concat(frames).with_columns(pl.col("protocol").cast(pl.String)).sort("protocol", "size_lo_pkts")
    # A quantile that lands on, or interpolates towards, an unfinished flow is unknown: not
    # 1e9 s, nor a value between the slowest finished flow (if any) and 1e9 s.
    return table.with_columns(
        [pl.when(pl.col(c) > pl.col("slowest_finished_s").fill_null(-1.0)).then(None).otherwise(pl.col(c)).alias(c)
         for c in ("median_s", "p99_s")]
    ).drop("slowest_finished_s")


def gap_closed(table: pl.DataFrame, column: str, *, by: str = "fq") -> pl.DataFrame:
    """The share of the TCP-RCP gap ``by`` closes per size: (tcp - by) / (tcp - rcp)."""
    wide = table.pivot(on="protocol", index=["size_lo_pkts", "size_hi_pkts"], values=column)
    return wide.select(
        "size_lo_pkts", "size_hi_pkts",
        gap_closed=(pl.col("tcp") - pl.col(by)) / (pl.col("tcp") - pl.col(RCP)),
    )


def plot(table: pl.DataFrame, path: Path, *, title: str, rate_bps: float) -> None:
    """Median and p99 FCT against size per protocol, with the slow-start bounds and the
    processor-sharing ideal at the offered load (an M/G/1-PS queue's mean FCT) of a
    ``rate_bps`` link."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    small = table.filter(pl.col("size_lo_pkts") == pl.col("size_hi_pkts"))
    large = table.filter(pl.col("size_lo_pkts") != pl.col("size_hi_pkts")).with_columns(
        mid=(pl.col("size_lo_pkts") + pl.col("size_hi_pkts")) / 2)
    for (protocol,), group in small.group_by("protocol", maintain_order=True):
        for row, column in enumerate(("median_s", "p99_s")):
            axes[row][0].plot(group["size_lo_pkts"], group[column], marker="o", label=protocol)
            big = large.filter(pl.col("protocol") == protocol)
            axes[row][1].plot(big["mid"], big[column], marker="s", label=protocol)
    for row, name in enumerate(("median", "99th percentile")):
        for col, (what, sizes) in enumerate((("smaller flows", SMALL_PKTS), ("marker flows (bins)", MARKER_PKTS))):
            ax = axes[row][col]
            draw_reference_lines(ax, sizes, rate_bps=rate_bps, rtt_s=RTT_MS / 1000, load=LOAD, background_flows=0)
            ax.set_title(f"{name} FCT, {what}", fontsize=9)
            ax.set_xlabel("flow size (packets)")
            ax.set_ylabel("FCT (s)")
            ax.legend(fontsize=7)
        axes[row][0].set_xscale("log")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


QUICK: dict[str, Any] = {"rate_bps": 240_000_000, "duration_s": 4.0, "warmup_s": 0.5, "drain_s": 1.5}
FULL: dict[str, Any] = {"rate_bps": RATE_BPS, "duration_s": 20.0, "warmup_s": 1.0, "drain_s": 3.0}
"""The pinned quick run (a tenth of the link) and the full run (the paper's link, 20 s)."""


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The full run (``quick``: :data:`QUICK`), written as CSV and PNG."""
    setup = QUICK if quick else FULL
    fcts = run(seed=seed, **setup)
    table = summary(fcts)
    write_csv(table, out / "thesis-fig5.2.csv")
    write_csv(flow_counts(fcts), out / "thesis-fig5.2-flows.csv")
    plot(table, out / "thesis-fig5.2.png", rate_bps=setup["rate_bps"],
         title=f"Thesis Fig. 5.2: {setup['rate_bps'] / 1e9:g} Gbit/s, RTT 100 ms, Poisson/Pareto at 90% load")
    return table
