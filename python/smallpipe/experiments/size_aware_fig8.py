"""Size-aware paper (Tokuda et al.), Figure 8: the Section 3 analysis' throughput against
transfer size when the loss probability steps from 0 to 0.03 at a threshold — packets up to
the threshold are never lost, later ones with 0.03; "Threshold = 0" loses every packet with
0.03.

Set-up as Figure 5 (:mod:`smallpipe.experiments.size_aware_fig5`: 200 ms RTT, T0 = 1 s,
Reno, initial window 1, one ACK per packet, no window limit). The paper shows the analysis
only and does not list its thresholds in the text; we draw 0, 5, 10, 20 (Figure 7's), 50
and 100 packets. Figure 7 (``size-aware-fig7``) is the simulated check of one of them.

What the paper reports: a larger threshold raises the throughput of small transfers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.size_aware_fig5 import RTT_MS, T0_S
from smallpipe.models import size_aware as analysis

__all__ = ["FIG8_P", "SIZES_PKTS", "THRESHOLDS_PKTS", "loss_pattern", "plot", "reproduce", "run"]

THRESHOLDS_PKTS: tuple[int, ...] = (0, 5, 10, 20, 50, 100)
FIG8_P = 0.03
"""Loss probability of packets after the threshold (Section 3.3)."""
SIZES_PKTS: tuple[int, ...] = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000, 2000)


def loss_pattern(threshold_pkts: int) -> list[float]:
    """Per-packet loss probabilities: 0 for packets 1..threshold, ``FIG8_P`` after (the last value repeats)."""
    return [0.0] * threshold_pkts + [FIG8_P]


def run(*, thresholds: Sequence[int] = THRESHOLDS_PKTS, sizes: Sequence[int] = SIZES_PKTS) -> pl.DataFrame:
    """Rows: threshold_pkts, size_pkts, analysis_pkts_per_rtt."""
    rtt_s = RTT_MS / 1e3
    return pl.DataFrame([
        {"threshold_pkts": th, "size_pkts": d,
         "analysis_pkts_per_rtt": analysis.throughput_pkts_per_rtt(d, loss_pattern(th), rtt_s=rtt_s, t0_s=T0_S)}
        for th in thresholds for d in sizes
    ])


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 8's axes: throughput (packets per RTT) against transfer size, one line per threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for th in table["threshold_pkts"].unique().sort().to_list():
        t = table.filter(pl.col("threshold_pkts") == th).sort("size_pkts")
        ax.plot(t["size_pkts"], t["analysis_pkts_per_rtt"], ".-", label=f"threshold = {th}")
    ax.set_xscale("log")
    ax.set_xlabel("transfer size (packets)")
    ax.set_ylabel("throughput (packets per RTT)")
    ax.set_title(f"Size-aware Figure 8 (analysis): p = 0, then {FIG8_P} after the threshold", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The analysis only (``quick`` and ``seed`` change nothing), as CSV and PNG."""
    del quick, seed
    table = run()
    write_csv(table, out / "size-aware-fig8.csv")
    plot(table, out / "size-aware-fig8.png")
    return table
