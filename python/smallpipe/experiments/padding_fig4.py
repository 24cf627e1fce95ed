"""Padding/diversity paper, Figure 4 (model): the gain ratio G = E[L]/E[L′] of the
fully-backlogged flow over the interactive one against the loss probability, for several
RTTs, DropTail (correlated) and RED (random losses).

What the paper reports: G rises, peaks and falls with p; a larger RTT gives a smaller G
that peaks at a larger p; RED's G exceeds DropTail's; response times "two to three times
smaller" (Section I). The paper does not list its RTTs; we draw 10, 50, 100 and 200 ms.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from smallpipe.experiments.padding_models import curves
from smallpipe.experiments.provenance import write_csv

__all__ = ["RTTS_S", "peaks", "plot", "reproduce"]

RTTS_S: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2)


def peaks(table: pl.DataFrame) -> pl.DataFrame:
    """Per RTT and loss model: the largest G and the p where it is reached."""
    rows = []
    for rtt_s in RTTS_S:
        t = table.filter(pl.col("rtt_s") == rtt_s)
        for model in ("droptail", "red", "red_eq8"):
            best = t.sort(f"gain_backlogged_{model}", descending=True).row(0, named=True)
            rows.append({"rtt_s": rtt_s, "losses": model, "peak_gain": best[f"gain_backlogged_{model}"],
                         "peak_p": best["p"]})
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 4's axes: gain ratio against loss probability, one curve per RTT and queue."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for rtt_s in RTTS_S:
        t = table.filter(pl.col("rtt_s") == rtt_s)
        line = ax.plot(t["p"], t["gain_backlogged_red"], label=f"RED, RTT {rtt_s * 1e3:.0f} ms")[0]
        ax.plot(t["p"], t["gain_backlogged_droptail"], "--", color=line.get_color(),
                label=f"DropTail, RTT {rtt_s * 1e3:.0f} ms")
    ax.set_xlabel("packet loss probability p")
    ax.set_ylabel("gain ratio G = E[L] / E[L']")
    ax.set_title("Padding paper, Figure 4 (model), RTO 1 s")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """All four RTTs' curves as CSV and PNG; returns the peaks (the model is exact)."""
    del quick, seed
    table = pl.concat([curves(rtt_s) for rtt_s in RTTS_S])
    write_csv(table, out / "padding-fig4.csv")
    plot(table, out / "padding-fig4.png")
    return peaks(table)
