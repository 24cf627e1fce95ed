"""Padding/diversity paper, Figure 5(a): the gain ratio G = E[L]/E[L′] of the
fully-backlogged flow over the interactive one in simulation, the loss set by cross
traffic, RED and DropTail, against the model.

Set-up (Section III-D's default scenario): 5 Mbit/s, round-trip propagation 12 ms, a
40 kB buffer (RED with ns-2's defaults), cross traffic of http, ftp and UDP. Ours: Figure
8's runs (:func:`smallpipe.experiments.padding_fig8.scenario`: N bulk TCP flows set the
loss, 5 telnet clients interactive or fully backlogged), G at each N from both response
times: write → ACK (``gain_write``) and the paper's send of the marked packet → ACK
(``gain_send``, from the bursts' ``first_sent_ns``). The model's G is Eq. (3) over
Eq. (10) at the bottleneck's loss rate of the interactive run, RTO 1 s, RTT 12 ms, with
Padhye's Q for DropTail and Brosh's Q (Eq. 7 summed, w_max = 2·E[w]) for RED, as
Figures 4 and 5(b).

What the paper reports: the curves have the model's shape (G rises, then falls), RED's
gains are larger than DropTail's, and the model is off because queueing makes the
effective RTT vary with the loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments.padding_fig8 import BULK_FLOWS, WARMUP_S, scenario
from smallpipe.experiments.padding_sim import response_means_s
from smallpipe.experiments.provenance import write_csv
from smallpipe.models import padding_diversity as m
from smallpipe.result import simulate

__all__ = ["model_gain", "plot", "reproduce", "run"]

RTO_S = 1.0
RTT_S = 0.012


def model_gain(queue: str, p: float) -> float:
    """Eq. (3) over Eq. (10) at loss ``p``: Padhye's Q (DropTail) or Brosh's (RED)."""
    if queue == "droptail":
        q = m.padhye_timeout_probability(p)
    else:
        q = m.brosh_timeout_probability_uniform(p, w_max=max(1, round(2 * m.expected_window_pkts(p))))
    return m.gain_ratio(p, m.response_time_backlogged(p, q, RTO_S, RTT_S), RTO_S, RTT_S)


def run(*, bulk_flows: Sequence[int] = BULK_FLOWS, queues: Sequence[str] = ("red", "droptail"),
        duration_s: float = 200.0, seed: int = 1) -> pl.DataFrame:
    """Rows: queue, bulk_flows, loss_rate (bottleneck, interactive run), the bursts and
    both mean response times of each approach, gain_write, gain_send, gain_model."""
    rows = []
    for queue in queues:
        for n in bulk_flows:
            row: dict[str, Any] = {"queue": queue, "bulk_flows": n}
            for approach in ("interactive", "backlogged"):
                result = simulate(scenario(approach, queue, n, duration_s=duration_s, seed=seed))
                if approach == "interactive":
                    row["loss_rate"] = result.links.filter(pl.col("name") == "bottleneck")["loss_rate"].item()
                means = response_means_s(result.bursts, warmup_s=WARMUP_S)
                row |= {f"{approach}_{k}": v for k, v in means.items()}
            for metric in ("write", "send"):
                a, b = row[f"interactive_{metric}_to_ack_s"], row[f"backlogged_{metric}_to_ack_s"]
                row[f"gain_{metric}"] = None if a is None or b is None else a / b
            row["gain_model"] = model_gain(queue, row["loss_rate"]) if row["loss_rate"] > 0 else 1.0
            rows.append(row)
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 5(a)'s axes: G against the bottleneck loss rate, per queue; both metrics and
    the model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for i, queue in enumerate(table["queue"].unique(maintain_order=True)):
        t = table.filter(pl.col("queue") == queue).sort("loss_rate")
        ax.plot(t["loss_rate"], t["gain_send"], "o-", color=f"C{i}", label=f"{queue}: simulation, send → ACK")
        ax.plot(t["loss_rate"], t["gain_write"], "s:", color=f"C{i}", label=f"{queue}: simulation, write → ACK")
        ax.plot(t["loss_rate"], t["gain_model"], "--", color=f"C{i}", label=f"{queue}: model")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_yscale("log")
    ax.set_xlabel("bottleneck loss rate (cross traffic)")
    ax.set_ylabel("gain ratio G of the backlogged flow")
    ax.set_title("Padding paper, Figure 5(a): 5 Mbit/s, RTT 12 ms, 40 kB")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Figure 8's five cross-traffic levels, both queues, 200 s each (quick: 10 bulk
    flows, RED, 40 s)."""
    if quick:
        table = run(bulk_flows=(10,), queues=("red",), duration_s=40.0, seed=seed)
    else:
        table = run(seed=seed)
    write_csv(table, out / "padding-fig5a.csv")
    plot(table, out / "padding-fig5a.png")
    return table
