"""Size-aware paper (Tokuda et al.), Figure 13: the method's drop probabilities against a
connection's packet count — (a) changed at every packet (Section 4), (b) changed only at
n log-spaced thresholds ``d_i = 10^(i·log10 M / n)`` up to M = 1000 packets (Section 6.2).

The paper's Figure 13 is a sketch without numbers; ours computes both forms with
``smallpipe.models.size_aware.drop_curve`` (the code the ``size_aware`` discipline runs)
at τ = 1 ms of Section 5 (RTT_an = 22 ms, T0 = 1 s, initial window 1, one ACK per packet)
and at a target of 2.6 packets per RTT, our low-threshold variant's mean target at
τ = 10 ms (docs/reproductions/size-aware.md, Table 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.size_aware_table4 import rtt_ms
from smallpipe.models import size_aware as analysis

__all__ = ["M_PKTS", "TARGET_PKTS_PER_RTT", "THRESHOLDS", "per_packet", "plot", "reproduce", "run"]

M_PKTS = 1000
TARGET_PKTS_PER_RTT = 2.6
THRESHOLDS: tuple[int, ...] = (0, 1, 2, 3, 5, 10)
"""Numbers of thresholds n; 0 stands for the per-packet form."""
RTT_AN_S = rtt_ms(1.0) / 1e3


def per_packet(ends: Sequence[int], probs: Sequence[float]) -> np.ndarray:
    """The curve as one probability per packet 1..ends[-1] (``probs[j]`` holds up to ``ends[j]``)."""
    return np.repeat(np.asarray(probs, dtype=float), np.diff([0, *ends]))


def run(*, thresholds: Sequence[int] = THRESHOLDS, target_pkts_per_rtt: float = TARGET_PKTS_PER_RTT) -> pl.DataFrame:
    """Rows: thresholds (0 = per packet), interval, end_pkts (the interval's last packet), drop_p."""
    rows = []
    for n in thresholds:
        ends, probs = analysis.drop_curve(target_pkts_per_rtt, M_PKTS, thresholds=n, rtt_s=RTT_AN_S)
        rows += [{"thresholds": n, "interval": i + 1, "end_pkts": e, "drop_p": p}
                 for i, (e, p) in enumerate(zip(ends, probs, strict=True))]
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 13's axes: drop probability against the connection's packet count, log x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    packets = np.arange(1, M_PKTS + 1)
    for ax, forms in zip(axes, ([0], [n for n in THRESHOLDS if n > 0]), strict=True):
        for n in forms:
            t = table.filter(pl.col("thresholds") == n).sort("interval")
            label = "every packet" if n == 0 else f"n = {n}"
            ax.step(packets, per_packet(t["end_pkts"].to_list(), t["drop_p"].to_list()), where="pre", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("packets sent by the connection")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("drop probability")
    axes[0].set_title("(a) changed at every packet")
    axes[1].set_title(f"(b) changed at n log-spaced thresholds (M = {M_PKTS})")
    fig.suptitle(f"Size-aware Figure 13: target {TARGET_PKTS_PER_RTT} pkts/RTT, RTT_an {RTT_AN_S * 1e3:g} ms")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The curves only (``quick`` and ``seed`` change nothing), as CSV and PNG."""
    del quick, seed
    table = run()
    write_csv(table, out / "size-aware-fig13.csv")
    plot(table, out / "size-aware-fig13.png")
    return table
