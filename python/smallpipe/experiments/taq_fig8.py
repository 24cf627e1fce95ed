"""TAQ paper, Figure 8: short-term (20 s) Jain fairness against the per-flow fair share,
TAQ against DropTail, for 0.5, 1 and 2 Mbit/s bottlenecks (and at 1 Mbit/s RED, SFQ, FQ,
FQ-CoDel and per-host FQ on the same seeds).

What the paper reports (Section 5.1): TAQ improves the 20 s Jain index over DropTail
"across the entire spectrum of bandwidth configurations", is "higher than 0.8" in many
cases, and keeps the link utilization "close to 1".

Set-up: the Figure 2 dumbbell (:func:`smallpipe.presets.taq_dumbbell`), every discipline
with its documented defaults and the one-RTT buffer as its packet limit; the runs are
those of :func:`smallpipe.experiments.taq_aqm.run`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments import taq_aqm
from smallpipe.experiments.provenance import write_csv

__all__ = ["OTHERS", "PAPER", "RATES_BPS", "plot", "reproduce", "run"]

RATES_BPS: tuple[int, ...] = (500_000, 1_000_000, 2_000_000)
OTHERS: tuple[str, ...] = ("red", "sfq", "fq", "fq_codel", "host_fq")
"""Disciplines run beside TAQ and DropTail at 1 Mbit/s only."""

PAPER = {"jain_often_above": 0.8, "utilization_close_to": 1.0}


def run(*, duration_s: float = 10_000.0, seed: int = 1, fair_shares_bps: Sequence[int] = taq_aqm.FAIR_SHARES_BPS) -> pl.DataFrame:
    """TAQ and DropTail at every rate, the other disciplines at 1 Mbit/s; one row per run."""
    main = taq_aqm.run(disciplines=("droptail", "taq"), rates_bps=RATES_BPS, fair_shares_bps=fair_shares_bps,
                       duration_s=duration_s, seed=seed)
    others = taq_aqm.run(disciplines=OTHERS, rates_bps=(1_000_000,), fair_shares_bps=fair_shares_bps,
                         duration_s=duration_s, seed=seed)
    return pl.concat([main, others])


def plot(table: pl.DataFrame, path: Path) -> None:
    """One panel per rate: 20 s Jain index against fair share, one line per discipline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted(table["rate_bps"].unique())
    fig, axes = plt.subplots(1, len(rates), figsize=(4.2 * len(rates), 4), sharey=True, squeeze=False)
    for ax, rate in zip(axes[0], rates, strict=True):
        for (kind,), group in table.filter(pl.col("rate_bps") == rate).sort("fair_share_bps").group_by(
            "discipline", maintain_order=True
        ):
            bold = kind in ("taq", "droptail")
            ax.plot(group["fair_share_bps"] / 1000, group["short_term_jain"], marker="o" if bold else ".",
                    linewidth=2 if bold else 1, alpha=1 if bold else 0.7, label=kind)
        ax.axhline(PAPER["jain_often_above"], color="grey", linestyle=":")
        ax.set_xscale("log")
        ax.set_xlabel("ideal per-flow fair share (kbit/s)")
        ax.set_title(f"{rate / 1e6:g} Mbit/s")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel("Jain index, 20 s slices")
    fig.suptitle("TAQ Figure 8: short-term fairness, buffer = 1 RTT")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The runs (10 000 s each; 1000 s with ``quick``), written as CSV and PNG."""
    table = run(duration_s=1000.0 if quick else 10_000.0, seed=seed)
    write_csv(table, out / "taq-fig8.csv")
    plot(table, out / "taq-fig8.png")
    return table
