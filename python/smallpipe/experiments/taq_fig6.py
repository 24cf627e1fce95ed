"""TAQ paper, Figure 6: the idealized model's stationary distribution against the
simulated state occupancy of flows, at bottlenecks up to 1 Mbit/s.

What the paper reports (Section 3.1.2): ns-2, TCP SACK, a buffer of one RTT, bottlenecks
up to 1 Mbit/s; "0 sent" (all ``b`` states), "1 sent" (all ``S1`` states) and "2 sent"
(all ``S2`` states) against the loss rate, with ``W_max = 6``; "simulation results agree
well with our model, especially for p > 0.05". It gives the figure, not its numbers.

We run the Figure 2 dumbbell (:func:`smallpipe.presets.taq_dumbbell`: bulk flows,
500-byte packets, one 200 ms RTT of DropTail buffer) with propagation RTTs drawn from
100-300 ms, SACK and ``record_sender_epochs``, at 0.25, 0.5 and 1 Mbit/s with as many
flows as the fair shares below give, so the loss rate spans the paper's range. An epoch is 400 ms, the
loaded RTT of this set-up (Section 2.3: "about 3 packets per RTT at a 400 ms loaded
RTT"). Per run, over the flow-epochs after a 20 s warm-up, from each sender's own state:

- ``sim_sent_0/1/2``: the fraction of flow-epochs in which it sent 0, 1, 2 segments;
- ``sim_timeout``: the fraction in which it was in a retransmission timeout at the epoch's end;
- ``sim_backed_off``: the fraction in which its retransmission timer was backed off
  (``rto_backoff ≥ 1``: a timeout since its last RTT sample).

Beside them, :mod:`smallpipe.models.taq_full` (``W_max = 6``, three backoff stages as in
Figure 5) at the run's measured bottleneck loss rate: ``model_sent_0/1/2``,
``model_timeout`` (``b`` and ``S1`` states) and ``model_backed_off`` (every stage-``k ≥ 1``
state), and per class ``ratio_*`` (simulated / model) and ``diff_*`` (simulated − model).

The same runs with the TAQ queue score TAQ's wire-side inference against the senders'
own state: per flow-epoch the sender is *silent in a timeout* (in a timeout, nothing
sent), *recovering from a timeout* (in a timeout, sending) or *in its window* (not in a
timeout); TAQ's states map to these as timeout/extended silence, timeout recovery, and
the rest. ``taq_match`` is the fraction of flow-epochs (that TAQ tracks) where the two agree;
``taq_timeout_recall`` the fraction of the senders' timeout epochs TAQ puts in a timeout
state; ``taq_timeout_precision`` the fraction of TAQ's timeout epochs that are the senders'.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.models import taq_full
from smallpipe.presets import taq_dumbbell
from smallpipe.result import Result, simulate

__all__ = ["EPOCH_S", "FAIR_SHARES_BPS", "RATES_BPS", "RTT_MS", "epoch_classes", "occupancy_row", "plot", "reproduce",
           "run", "taq_agreement"]

RATES_BPS: tuple[int, ...] = (250_000, 500_000, 1_000_000)
FAIR_SHARES_BPS: tuple[int, ...] = (5_000, 10_000, 20_000, 40_000)
RTT_MS: tuple[float, float] = (100.0, 300.0)
"""Propagation RTTs drawn uniformly ("flows having variable RTTs"), 200 ms on average."""
EPOCH_S = 0.4
"""The loaded RTT of the Figure 2 set-up (200 ms propagation plus about one RTT of queue)."""
WARMUP_S = 20.0
W_MAX = 6
BACKOFF_STAGES = 3

_TAQ_CLASS = {
    "timeout_silence": "silent",
    "extended_silence": "silent",
    "timeout_recovery": "recovering",
}


def epoch_classes(result: Result, warmup_s: float = WARMUP_S) -> pl.DataFrame:
    """The run's sender epochs after ``warmup_s``, with the sender's class (``sender_class``:
    silent / recovering / window) and TAQ's (``taq_class``, null where TAQ has no state)."""
    slice_s = result.meta["slice_ns"] / 1e9
    epochs = result.sender_epochs.filter(pl.col("slice") * slice_s >= warmup_s)
    sender = (
        pl.when(~pl.col("in_timeout")).then(pl.lit("window"))
        .when(pl.col("segments_sent") == 0).then(pl.lit("silent"))
        .otherwise(pl.lit("recovering"))
    )
    taq = pl.col("taq_state").replace_strict(_TAQ_CLASS, default="window", return_dtype=pl.String)
    return epochs.with_columns(
        sender_class=sender, taq_class=pl.when(pl.col("taq_state").is_null()).then(None).otherwise(taq)
    )


def _compare(row: dict[str, Any], name: str, sim: float, model: float) -> None:
    row[f"sim_{name}"] = sim
    row[f"model_{name}"] = model
    row[f"ratio_{name}"] = sim / model if model > 0 else None
    row[f"diff_{name}"] = sim - model


def occupancy_row(result: Result) -> dict[str, Any]:
    """Simulated occupancy by packets sent, in a timeout and with a backed-off timer, the
    loss rate, and the model at that loss rate (ratio and difference per class)."""
    epochs = epoch_classes(result)
    n = epochs.height
    loss = float(result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)["loss_rate"])
    model = taq_full.stationary_distribution(loss, W_MAX, BACKOFF_STAGES)
    row: dict[str, Any] = {"loss_rate": loss, "flow_epochs": n}
    for k in range(3):
        _compare(row, f"sent_{k}", epochs.filter(pl.col("segments_sent") == k).height / n, model.packets_sent(k))
    _compare(row, "timeout", metrics.to_float(epochs["in_timeout"].mean()), model.timeout_probability)
    backed_off = sum(model.stage_probability(k) for k in range(1, BACKOFF_STAGES + 1))
    _compare(row, "backed_off", epochs.filter(pl.col("rto_backoff") > 0).height / n, backed_off)
    return row


def taq_agreement(result: Result) -> dict[str, Any]:
    """How often TAQ's inferred class matches the senders' own (flow-epochs TAQ tracks)."""
    epochs = epoch_classes(result).filter(pl.col("taq_class").is_not_null())
    sender_timeout = pl.col("sender_class") != "window"
    taq_timeout = pl.col("taq_class") != "window"
    both = epochs.filter(sender_timeout & taq_timeout).height
    return {
        "taq_flow_epochs": epochs.height,
        "taq_match": epochs.filter(pl.col("sender_class") == pl.col("taq_class")).height / max(epochs.height, 1),
        "taq_timeout_recall": both / max(epochs.filter(sender_timeout).height, 1),
        "taq_timeout_precision": both / max(epochs.filter(taq_timeout).height, 1),
    }


def run(
    *,
    rates_bps: Sequence[int] = RATES_BPS,
    fair_shares_bps: Sequence[int] = FAIR_SHARES_BPS,
    duration_s: float = 600.0,
    seed: int = 1,
) -> pl.DataFrame:
    """One DropTail and one TAQ run per (rate, fair share), N = rate / fair share flows.

    Returns one row per (rate, fair share): the DropTail run's :func:`occupancy_row` and
    the TAQ run's :func:`taq_agreement`.
    """
    rows = []
    for rate_bps, share in itertools.product(rates_bps, fair_shares_bps):
        flows = max(2, round(rate_bps / share))
        row: dict[str, Any] = {"rate_bps": rate_bps, "fair_share_bps": share, "flows": flows}
        for kind in ("droptail", "taq"):
            scenario = taq_dumbbell(
                flows=flows, rate_bps=rate_bps, duration_s=duration_s, seed=seed, slice_s=EPOCH_S,
                queue={"kind": kind},
            ).with_overrides({"tcp.recovery": "sack", "flows.0.rtt_ms": list(RTT_MS), "record_sender_epochs": True})
            result = simulate(scenario)
            row |= occupancy_row(result) if kind == "droptail" else taq_agreement(result)
        rows.append(row)
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 6's axes: probability against loss rate, model curves and simulated points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    losses = np.linspace(0.005, 0.45, 90)
    model = [taq_full.stationary_distribution(float(p), W_MAX, BACKOFF_STAGES) for p in losses]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    markers = {250_000: "o", 500_000: "s", 1_000_000: "^"}
    for k, color in zip(range(3), ("C0", "C1", "C2"), strict=True):
        ax.plot(losses, [m.packets_sent(k) for m in model], color=color, label=f"model, {k} sent")
        for (rate,), group in table.group_by("rate_bps", maintain_order=True):
            ax.scatter(group["loss_rate"], group[f"sim_sent_{k}"], color=color, marker=markers.get(rate, "x"),
                       label=f"sim {rate / 1e6:g} Mbit/s" if k == 0 else None)
    ax.set_xlabel("loss rate p")
    ax.set_ylabel("fraction of flow-epochs")
    ax.set_title("TAQ Figure 6: full model (W_max = 6, 3 backoff stages) vs simulation")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The figure's runs (600 s each; 120 s with ``quick``), written as CSV and PNG."""
    table = run(duration_s=120.0 if quick else 600.0, seed=seed)
    write_csv(table, out / "taq-fig6.csv")
    plot(table, out / "taq-fig6.png")
    return table
