"""Thesis ("short flows: FCT with RED, FQ and RCP"), Figure 5.1: flow completion time of
a measuring flow against 4 infinite background flows, under the thesis's protocols.

Set-up (its §4.2 and Chapter 5): 10 Mbit/s links, 10 ms access latency, 10 ms bottleneck
(RTT 40 ms), 4 background flows of infinite size starting at about 0. The measuring flow
starts after 250 RTTs plus a random offset; the time at which its k-th packet and all
before it have arrived is the FCT of a k-packet flow (1 KB packets). Reported: median and
99th-percentile FCT against flow size, and CDFs at 12 and 133 packets (the median and
90th-percentile KB per host of the web).

Protocols (its §4.3): TCP Reno with IW 2 over DropTail (the baseline), IW 10 over
DropTail, IW 10 over RED with ns-2's automatic parameters, IW 10 over Fair Queueing (1000
hashed queues, a shared buffer, overflow drops the last packet of the longest queue).
RCP ("rcp": RCP end hosts over an RCP router with α = β = 1, docs/rcp.md) is in Figures
5.2-5.4; Figure 5.1 runs the four above.

Choices where the thesis is silent (docs/reproductions/thesis.md): a 50-packet buffer
(ns-2's default) for every discipline, which RED in byte mode holds as 50 mean-size
packets' worth of bytes (25 000 bytes, as ns-2.34's RED defaults), 1000-byte packets on the wire (960 payload bytes, no
timestamps), minimum RTO 200 ms (ns-2's), no delayed ACKs, a measuring flow of 500
packets, a random offset uniform in one RTT, one run per seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.models import fct_bounds
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["PROTOCOLS", "RCP", "SIZES_PKTS", "WITH_RCP", "draw_reference_lines", "protocol_config", "reproduce", "run",
           "scenario", "summary"]

SIZES_PKTS = (1, 2, 4, 8, 12, 16, 32, 64, 133, 256, 500)
BUFFER_PKTS = 50
PACKET_SIZE_BYTES = 1000
MSS_BYTES = 960
BOTTLENECK_DELAY_MS = 10.0

PROTOCOLS: dict[str, tuple[int, dict[str, Any]]] = {
    "tcp": (2, {"kind": "droptail"}),
    "iw10": (10, {"kind": "droptail"}),
    "red": (10, {"kind": "red"}),
    "fq": (10, {"kind": "fq", "buckets": 1000}),
}
"""The thesis's protocols (§4.3): name → (initial window, bottleneck discipline)."""

RCP = "rcp"
"""The thesis's target (§4.3): RCP senders over an RCP router, α = β = 1, d = the path RTT."""

WITH_RCP: tuple[str, ...] = (*PROTOCOLS, RCP)


def protocol_config(protocol: str, rtt: float) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """``protocol``'s initial window, bottleneck discipline and top-level scenario fields
    on a path of ``rtt`` ms. RCP has no window; its router is told the path's RTT (its d)."""
    if protocol == RCP:
        return 2, {"kind": "rcp", "avg_rtt_ms": rtt}, {"transport": RCP}
    iw_pkts, queue = PROTOCOLS[protocol]
    return iw_pkts, queue, {}


def rtt_ms(latency_ms: float) -> float:
    """The thesis's RTT: twice the access latency plus twice the 10 ms bottleneck."""
    return 2 * latency_ms + 2 * BOTTLENECK_DELAY_MS


def scenario(
    seed: int,
    protocol: str = "tcp",
    *,
    rate_bps: int = 10_000_000,
    latency_ms: float = 10.0,
    buffer_pkts: int = BUFFER_PKTS,
    rwnd_bytes: int | None = None,
    background: dict[str, Any] | None = None,
    measuring: bool = True,
    warmup_rtts: float = 250.0,
    after_s: float = 30.0,
) -> Scenario:
    """The thesis's half-dumbbell: ``background`` is a flow group (default: 4 infinite
    flows starting within the first 10 ms), plus a measuring flow after ``warmup_rtts``
    RTTs and a random offset of up to one RTT when ``measuring``. ``rwnd_bytes`` overrides
    the receiver window (the default caps a flow at 64 KB in flight)."""
    rtt = rtt_ms(latency_ms)
    iw_pkts, queue, transport = protocol_config(protocol, rtt)
    start = warmup_rtts * rtt / 1000
    flows = [{"app": "bulk", "count": 4, "rtt_ms": rtt, "start_s": [0.0, 0.01], **(background or {})}]
    if measuring:
        flows.append({"app": "transfer", "size_bytes": SIZES_PKTS[-1] * MSS_BYTES, "rtt_ms": rtt,
                      "record_progress": True, "start_s": [start, start + rtt / 1000]})
    return Scenario(
        seed=seed, duration_s=start + after_s, slice_s=1.0,
        link={"rate_bps": rate_bps, "delay_ms": BOTTLENECK_DELAY_MS, "access_rate_bps": rate_bps,
              "queue": {**queue, "limit_pkts": buffer_pkts}},
        **transport,
        tcp={"packet_size_bytes": PACKET_SIZE_BYTES, "recovery": "reno", "delayed_ack": False, "timestamps": False,
             "initial_window_pkts": iw_pkts, "min_rto_ms": 200.0,
             **({"rwnd_bytes": rwnd_bytes} if rwnd_bytes is not None else {})},
        flows=flows,
    )


def run(*, protocols: Sequence[str] = tuple(PROTOCOLS), runs: int = 300, seed: int = 1, **setup: Any) -> pl.DataFrame:
    """k-packet FCTs over `runs` seeds per protocol: one row per (protocol, run, k).
    ``setup`` goes to :func:`scenario` (rate, latency)."""
    frames = []
    for protocol in protocols:
        for i in range(runs):
            result = simulate(scenario(seed * 100_000 + i, protocol, **setup))
            frames.append(
                result.progress.select("packets", fct_s=pl.col("fct_ns") / 1e9).with_columns(
                    protocol=pl.lit(protocol), run=pl.lit(i)
                )
            )
    return pl.concat(frames)


def summary(fcts: pl.DataFrame, *, latency_ms: float = 10.0) -> pl.DataFrame:
    """Per protocol and flow size: runs, median and p99 FCT, and the slow-start bound
    (1 + log2(k / IW)) RTT with the protocol's initial window (none for RCP)."""
    rtt_s = rtt_ms(latency_ms) / 1000
    frames = []
    for (protocol,), group in fcts.filter(pl.col("packets").is_in(SIZES_PKTS)).group_by("protocol", maintain_order=True):
        iw_pkts = PROTOCOLS[protocol][0] if protocol in PROTOCOLS else None
        bound = (
            metrics.slow_start_bound_s(pl.col("packets") * MSS_BYTES, pl.lit(rtt_s), mss_bytes=MSS_BYTES, iw_pkts=iw_pkts)
            if iw_pkts is not None
            else pl.lit(None, dtype=pl.Float64)
        )
        frames.append(
            group.group_by("packets")
            .agg(
                runs=pl.len(),
                median_s=pl.col("fct_s").median(),
                p99_s=pl.col("fct_s").quantile(0.99, interpolation="linear"),
            )
            .with_columns(slow_start_bound_s=bound)
            .select(pl.lit(protocol).alias("protocol"), pl.all())
        )
    return pl.concat(frames).sort("protocol", "packets")


BACKGROUND_FLOWS = 4


def draw_reference_lines(ax: Any, sizes_pkts: Sequence[int], *, rate_bps: float, rtt_s: float, load: float = 0.0,
                         background_flows: int = BACKGROUND_FLOWS) -> None:
    """The thesis's reference lines (:mod:`smallpipe.models.fct_bounds`): slow start's lower
    bound at IW 2 and IW 10, and processor sharing at offered ``load`` beside
    ``background_flows`` infinite flows (Figure 5.1's 4 elephants unless told)."""
    sizes = sorted(sizes_pkts)
    for iw_pkts, style in ((2, ":"), (10, "-.")):
        ax.plot(sizes, [fct_bounds.slow_start_fct_s(k, rtt_s, rate_bps, PACKET_SIZE_BYTES, iw_pkts) for k in sizes],
                linestyle=style, color="grey", label=f"slow start bound, IW {iw_pkts}")
    ps = [fct_bounds.processor_sharing_fct_s(k, rtt_s, rate_bps, PACKET_SIZE_BYTES, load=load,
                                             background_flows=background_flows) for k in sizes]
    share = [f"1 of {background_flows + 1}"] if background_flows else []
    ax.plot(sizes, ps, linestyle="--", color="black",
            label=", ".join(["processor sharing", *share, *([f"load {load:g}"] if load else [])]))


def plot(fcts: pl.DataFrame, table: pl.DataFrame, path: Path, *, title: str) -> None:
    """Median and p99 FCT against size per protocol, and FCT CDFs at 12 and 133 packets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (median, p99, cdf) = plt.subplots(1, 3, figsize=(14, 4))
    for (protocol,), group in table.group_by("protocol", maintain_order=True):
        (line,) = median.plot(group["packets"], group["median_s"], marker="o", label=protocol)
        p99.plot(group["packets"], group["p99_s"], marker="s", label=protocol, color=line.get_color())
        for k, style in ((12, "-"), (133, "--")):
            values = np.sort(fcts.filter(pl.col("protocol") == protocol, pl.col("packets") == k)["fct_s"].to_numpy())
            cdf.plot(values, np.arange(1, values.size + 1) / values.size, linestyle=style,
                     color=line.get_color(), label=f"{protocol}, {k} pkts")
    for ax, name in ((median, "median"), (p99, "99th percentile")):
        draw_reference_lines(ax, SIZES_PKTS, rate_bps=10_000_000, rtt_s=rtt_ms(10.0) / 1000)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("flow size (packets of 1 KB)")
        ax.set_ylabel(f"{name} FCT (s)")
        ax.legend(fontsize=7)
    cdf.set_xscale("log")
    cdf.set_xlabel("FCT (s)")
    cdf.set_ylabel("CDF")
    cdf.legend(fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """300 runs per protocol (60 with ``quick``), written as CSV and PNG."""
    fcts = run(runs=60 if quick else 300, seed=seed)
    table = summary(fcts)
    write_csv(table, out / "thesis-fig5.1.csv")
    plot(fcts, table, out / "thesis-fig5.1.png",
         title="Thesis Fig. 5.1: Reno, 4 elephants, 10 Mbit/s, RTT 40 ms, 50-packet buffers")
    return table
