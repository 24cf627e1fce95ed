"""TAQ paper, Figure 2: long- and short-term Jain fairness against the ideal per-flow fair
share, DropTail with one RTT of buffer, for 0.5, 1 and 2 Mbit/s bottlenecks.

What the paper reports (Section 2.3): utilization stays above 90%; long-term fairness
(10 000 s runs) stays high; short-term fairness (20 s slices) collapses once the fair
share drops below about 30 kbit/s (about 3 packets per RTT at a 400 ms loaded RTT);
roughly 30% of flows get nothing in a 20 s slice and about 40% of flows take over 80% of
the bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments import taq_aqm
from smallpipe.experiments.provenance import write_csv

__all__ = ["FAIR_SHARES_BPS", "PAPER", "RATES_BPS", "plot", "reproduce", "run"]

RATES_BPS: tuple[int, ...] = (500_000, 1_000_000, 2_000_000)
FAIR_SHARES_BPS: tuple[int, ...] = (5_000, 10_000, 20_000, 30_000, 50_000, 100_000)

PAPER = {
    "utilization_min": 0.90,
    "short_term_knee_bps": 30_000,
    "zero_share_in_slice": 0.30,
    "top40_share": 0.80,
}
"""The paper's numbers, read from its text (Section 2.3)."""


def run(
    *,
    rates_bps: Sequence[int] = RATES_BPS,
    fair_shares_bps: Sequence[int] = FAIR_SHARES_BPS,
    duration_s: float = 10_000.0,
    seed: int = 1,
) -> pl.DataFrame:
    """One run per (rate, fair share): N = rate / fair share flows.

    Returns one row per run: rate_bps, fair_share_bps, flows, long_term_jain,
    short_term_jain (mean over 20 s slices, the first slice skipped as start-up),
    zero_share (fraction of flow-slices with no bytes), top40_share, utilization,
    loss_rate, timeouts_per_flow.
    """
    table = taq_aqm.run(
        disciplines=("droptail",), rates_bps=rates_bps, fair_shares_bps=fair_shares_bps, duration_s=duration_s, seed=seed
    )
    return table.select(
        "rate_bps", "fair_share_bps", "flows", "long_term_jain", "short_term_jain", "zero_share", "top40_share",
        "utilization", "loss_rate", "timeouts_per_flow",
    )


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 2's axes: Jain index against fair share, one line per rate and horizon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for rate, group in table.sort("fair_share_bps").group_by("rate_bps", maintain_order=True):
        kbps = group["fair_share_bps"] / 1000
        label = f"{rate[0] / 1e6:g} Mbit/s"
        (line,) = ax.plot(kbps, group["short_term_jain"], marker="o", label=f"{label}, 20 s slices")
        ax.plot(kbps, group["long_term_jain"], marker="s", linestyle="--", color=line.get_color(),
                label=f"{label}, whole run")
    ax.axvline(PAPER["short_term_knee_bps"] / 1000, color="grey", linestyle=":", label="paper's knee (30 kbit/s)")
    ax.set_xscale("log")
    ax.set_xlabel("ideal per-flow fair share (kbit/s)")
    ax.set_ylabel("Jain fairness index")
    ax.set_ylim(0, 1.02)
    ax.set_title("TAQ Figure 2 (DropTail, buffer = 1 RTT)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The figure's runs (10 000 s each; 1500 s with ``quick``), written as CSV and PNG."""
    table = run(duration_s=1500.0 if quick else 10_000.0, seed=seed)
    write_csv(table, out / "taq-fig2.csv")
    plot(table, out / "taq-fig2.png")
    return table
