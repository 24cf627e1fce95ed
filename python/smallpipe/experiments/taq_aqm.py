"""TAQ paper, Section 2.4 on the Figure 2 set-up: do other disciplines fix short-term
fairness in the sub-packet regime?

What the paper reports: RED and SFQ "have similar aggregate behavior characteristics" to
DropTail; with one RTT of buffer, flows hold at most a packet or two in the queue, so a
scheduler has little to choose from (Sections 2.4 and 5). It gives no figure for them.

We run DropTail, RED, SFQ, FQ, FQ-CoDel and per-host FQ on the same seeds over the
Figure 2 dumbbell at 1 Mbit/s (500-byte packets, 200 ms RTT, one RTT = 50 packets of
buffer), each with its documented defaults and that buffer as its packet limit.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import taq_dumbbell
from smallpipe.result import Result, simulate

__all__ = ["DISCIPLINES", "FAIR_SHARES_BPS", "RATE_BPS", "fairness_row", "plot", "reproduce", "run"]

RATE_BPS = 1_000_000
FAIR_SHARES_BPS: tuple[int, ...] = (5_000, 10_000, 20_000, 30_000, 50_000, 100_000)
DISCIPLINES: tuple[str, ...] = ("droptail", "red", "sfq", "fq", "fq_codel", "host_fq")


def fairness_row(result: Result) -> dict[str, Any]:
    """A run's fairness and link numbers: the 20 s Jain index, zero-share fraction and top-40%
    share averaged over the slices but the first (start-up; all of them when there is one),
    the long-term index, and the bottleneck's utilization, loss and queue delay."""
    per_slice = metrics.jain_per_slice(result.slices, flows=result.flows)
    if per_slice.height > 1:
        per_slice = per_slice.filter(pl.col("slice") > 0)
    link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    return {
        "short_term_jain": per_slice["jain"].mean(),
        "zero_share": per_slice["zero_share"].mean(),
        "long_term_jain": metrics.long_term_jain(result.flows),
        "utilization": link["utilization"],
        "loss_rate": link["loss_rate"],
        "timeouts_per_flow": result.flows["timeouts"].mean(),
        "queue_delay_p50_ms": link["queue_delay_p50_ms"],
        "queue_delay_p99_ms": link["queue_delay_p99_ms"],
        "top40_share": per_slice["top40_share"].mean(),
    }


def run(
    *,
    disciplines: Sequence[str] = DISCIPLINES,
    fair_shares_bps: Sequence[int] = FAIR_SHARES_BPS,
    rates_bps: Sequence[int] = (RATE_BPS,),
    duration_s: float = 10_000.0,
    seed: int = 1,
) -> pl.DataFrame:
    """One run per (discipline, rate, fair share), N = rate / fair share flows.

    Returns one row per run: discipline, rate_bps, fair_share_bps, flows, short_term_jain (mean over
    20 s slices, the first skipped), zero_share, long_term_jain, utilization, loss_rate,
    timeouts_per_flow, queue_delay_p50_ms, queue_delay_p99_ms, top40_share.
    """
    rows = []
    for kind, rate_bps, share in itertools.product(disciplines, rates_bps, fair_shares_bps):
        flows = max(2, round(rate_bps / share))
        scenario = taq_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=duration_s, seed=seed, queue={"kind": kind})
        result = simulate(scenario)
        rows.append({"discipline": kind, "rate_bps": rate_bps, "fair_share_bps": share, "flows": flows}
                    | fairness_row(result))
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Short-term Jain index against fair share, one line per discipline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (kind,), group in table.sort("fair_share_bps").group_by("discipline", maintain_order=True):
        ax.plot(group["fair_share_bps"] / 1000, group["short_term_jain"], marker="o", label=kind)
    ax.set_xscale("log")
    ax.set_xlabel("ideal per-flow fair share (kbit/s)")
    ax.set_ylabel("Jain index, 20 s slices")
    ax.set_ylim(0, 1.02)
    ax.set_title("Figure 2 set-up, 1 Mbit/s, buffer = 1 RTT: disciplines compared")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The runs (10 000 s each; 1000 s with ``quick``), written as CSV and PNG."""
    table = run(duration_s=1000.0 if quick else 10_000.0, seed=seed)
    write_csv(table, out / "taq-aqm.csv")
    plot(table, out / "taq-aqm.png")
    return table
