"""Padding/diversity paper, Figure 3 (model): mean response time against the loss
probability for the interactive flow (Eq. 3) and the fully-backlogged flow under
correlated (DropTail, Eqs. 4-6) and random (RED, Eqs. 7-8) losses, Eq. (10).

What the paper reports: the fully-backlogged flow is always faster than the interactive
one, and more so with RED. The paper does not state Figure 3's RTT; we draw 100 ms.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from smallpipe.experiments.padding_models import curves, shown
from smallpipe.experiments.provenance import write_csv

__all__ = ["RTT_S", "plot", "reproduce"]

RTT_S = 0.1


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 3's axes: mean response time (s) against loss probability."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for column, label in (("interactive_s", "interactive (Eq. 3)"),
                          ("backlogged_droptail_s", "fully backlogged, correlated losses (Padhye Q)"),
                          ("backlogged_red_s", "fully backlogged, random losses (Brosh Q, Eq. 7 summed)"),
                          ("backlogged_red_eq8_s", "fully backlogged, random losses (Eq. 8 approx.)")):
        ax.plot(table["p"], table[column], label=label)
    ax.set_xlabel("packet loss probability p")
    ax.set_ylabel("expected response time (s)")
    ax.set_title(f"Padding paper, Figure 3 (model), RTO 1 s, RTT {RTT_S * 1e3:.0f} ms")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The curves at RTT 100 ms as CSV and PNG; returns them at a few losses (the model is
    exact: ``quick`` and ``seed`` change nothing)."""
    del quick, seed
    table = curves(RTT_S)
    write_csv(table, out / "padding-fig3.csv")
    plot(table, out / "padding-fig3.png")
    return shown(table, ("interactive_s", "backlogged_droptail_s", "backlogged_red_s", "backlogged_red_eq8_s"))
