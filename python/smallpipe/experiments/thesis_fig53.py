"""Thesis, Figure 5.3: link utilization against concurrent mouse flows.

Set-up (its §5.2): 10 Mbit/s links, 10 ms latency, no measuring flow; ``n`` background
generators each restart a 32-packet flow as soon as the previous one finishes. After 20 s
to stabilise, the packets delivered in each of the next 20 seconds over 1250 (the most a
second can carry) is one utilization sample; the thesis ran 500 runs per point and plots
the median with the 10th-90th percentile spread, for its five protocols.

What it reports: FQ has the highest utilization (it keeps mice in slow start by
protecting their first packets); RED and standard TCP start together and RED pulls ahead
as generators are added; IW 10 alone makes no appreciable difference; RCP sits near 0.9.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.thesis_fig51 import (
    MSS_BYTES,
    PACKET_SIZE_BYTES,
    WITH_RCP,
    rtt_ms,
    scenario,
)
from smallpipe.models import fct_bounds
from smallpipe.result import simulate

__all__ = ["GENERATORS", "ceilings", "plot", "reproduce", "run", "utilization_ceiling"]

GENERATORS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
MOUSE_PKTS = 32
WARMUP_S = 20
MEASURE_S = 20
PACKETS_PER_SECOND = 1250
"""10 Mbit/s of 1000-byte packets."""
RATE_BPS = 10_000_000
LATENCY_MS = 10.0
"""The scenario's defaults (thesis_fig51.scenario): a 40 ms RTT."""


def utilization_ceiling(generators: int, fct_s: float) -> float:
    """The most ``generators`` can carry when each starts its next 32-packet flow no sooner
    than the last one completes, which takes at least ``fct_s``: ``n·32 / (FCT·1250)``, at
    most 1."""
    return min(1.0, generators * MOUSE_PKTS / (fct_s * PACKETS_PER_SECOND))


def ceilings() -> dict[str, float]:
    """Label → the FCT of one 32-packet flow behind each ceiling (:mod:`smallpipe.models.fct_bounds`):
    slow start without loss at IW 2 and IW 10, and processor sharing alone on the link (the
    handshake, half an RTT and 32 serialisations: no protocol, RCP included, is faster)."""
    rtt_s = rtt_ms(LATENCY_MS) / 1000
    lines = {f"slow-start ceiling, IW {iw}": fct_bounds.slow_start_fct_s(
        MOUSE_PKTS, rtt_s, RATE_BPS, PACKET_SIZE_BYTES, iw) for iw in (2, 10)}
    lines["processor-sharing ceiling"] = fct_bounds.processor_sharing_fct_s(MOUSE_PKTS, rtt_s, RATE_BPS,
                                                                            PACKET_SIZE_BYTES)
    return lines


def run(
    *, protocols: Sequence[str] = WITH_RCP, generators: Sequence[int] = GENERATORS, runs: int = 100, seed: int = 1
) -> pl.DataFrame:
    """Per-second utilization samples: one row per (protocol, generators, run, second)."""
    frames = []
    for protocol in protocols:
        for n in generators:
            for i in range(runs):
                mice = {"app": "session", "count": n, "size_bytes": MOUSE_PKTS * MSS_BYTES, "think_s": 0.0}
                s = scenario(seed * 100_000 + i, protocol, background=mice, measuring=False,
                             warmup_rtts=0, after_s=WARMUP_S + MEASURE_S)
                slices = simulate(s).slices
                per_second = (
                    slices.filter(pl.col("slice") >= WARMUP_S)
                    .group_by("slice")
                    .agg(utilization=pl.col("bytes").sum() / MSS_BYTES / PACKETS_PER_SECOND)
                )
                frames.append(per_second.with_columns(protocol=pl.lit(protocol), generators=pl.lit(n), run=pl.lit(i)))
    return pl.concat(frames)


def summary(samples: pl.DataFrame) -> pl.DataFrame:
    """Median, p10 and p90 of the per-second utilization per protocol and generator count."""
    return (
        samples.group_by("protocol", "generators")
        .agg(
            samples=pl.len(),
            median=pl.col("utilization").median(),
            p10=pl.col("utilization").quantile(0.1, interpolation="linear"),
            p90=pl.col("utilization").quantile(0.9, interpolation="linear"),
        )
        .sort("protocol", "generators")
    )


def plot(table: pl.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for offset, ((protocol,), group) in enumerate(table.group_by("protocol", maintain_order=True)):
        x = group["generators"].to_numpy() * (1 + 0.03 * offset)  # nudge so bars do not overlap
        median = group["median"].to_numpy()
        ax.errorbar(x, median, yerr=[median - group["p10"].to_numpy(), group["p90"].to_numpy() - median],
                    marker="o", capsize=3, label=protocol)
    n = np.asarray(GENERATORS)
    for (label, fct_s), style in zip(ceilings().items(), (":", "-.", "--"), strict=True):
        ax.plot(n, [utilization_ceiling(g, fct_s) for g in n], linestyle=style,
                color="black" if "sharing" in label else "grey", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent 32-packet flow generators")
    ax.set_ylabel("link utilization (per second)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Thesis Fig. 5.3: utilization vs concurrent mice (median, p10-p90)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """100 runs per point (10 with ``quick``), written as CSV and PNG."""
    table = summary(run(runs=10 if quick else 100, seed=seed))
    write_csv(table, out / "thesis-fig5.3.csv")
    plot(table, out / "thesis-fig5.3.png")
    return table
