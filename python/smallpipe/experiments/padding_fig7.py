"""Padding/diversity paper, Figure 7 (model): mean response time against the loss
probability for the three countermeasures against the fully-backlogged flow: Approach I
(minRTO′ = 500 ms, Eq. 3), Approach II (short-term padding with three dummies, Eq. 12),
Approach III (diversity, k = 2, Eq. 14).

What the paper reports: Approaches II and III beat the fully-backlogged flow; Approach I
does not. The paper does not state Figure 7's RTT; we draw 100 ms as in Figure 3.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from smallpipe.experiments.padding_fig3 import RTT_S
from smallpipe.experiments.padding_models import curves, shown
from smallpipe.experiments.provenance import write_csv

__all__ = ["plot", "reproduce"]


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 7's axes: mean response time (s) against loss probability."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for column, label in (("interactive_s", "interactive, minRTO 1 s (Eq. 3)"),
                          ("min_rto_prime_s", "Approach I: minRTO' 500 ms (Eq. 3)"),
                          ("backlogged_red_s", "fully backlogged, random losses (Eq. 10)"),
                          ("backlogged_droptail_s", "fully backlogged, correlated losses (Eq. 10)"),
                          ("padding_s", "Approach II: padding, 3 dummies (Eq. 12)"),
                          ("diversity_s", "Approach III: diversity, k = 2 (Eq. 14)")):
        ax.plot(table["p"], table[column], label=label)
    ax.set_xlabel("packet loss probability p")
    ax.set_ylabel("expected response time (s)")
    ax.set_title(f"Padding paper, Figure 7 (model), RTO 1 s, RTT {RTT_S * 1e3:.0f} ms")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The curves at RTT 100 ms as CSV and PNG; returns them at a few losses (the model is
    exact: ``quick`` and ``seed`` change nothing)."""
    del quick, seed
    table = curves(RTT_S)
    write_csv(table, out / "padding-fig7.csv")
    plot(table, out / "padding-fig7.png")
    return shown(table, ("interactive_s", "min_rto_prime_s", "backlogged_droptail_s", "backlogged_red_s", "padding_s",
                         "diversity_s"))
