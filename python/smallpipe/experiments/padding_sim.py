"""Simulation set-up shared by the padding/diversity paper's simulated figures: interactive
flows (telnet: one small burst per exponential gap of mean 1 s, Section III-D) under each
endpoint approach, their bursts' response times measured from the write to the
acknowledgement, and as the paper does from the first send (of the marked packet).

The approaches are TCP options of the simulator (docs/tcp.md, "Endpoint remedies"):
``interactive`` (none), ``backlogged`` (``tcp.fully_backlogged``), ``padding``
(``tcp.padding_dummies = 3`` of 20 bytes), ``diversity`` (``tcp.diversity_copies = 2``),
``min_rto_prime`` (``tcp.min_rto_prime_ms = 500``), ``thin`` (Linux's
``tcp.thin_linear_timeouts``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from smallpipe import metrics
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["APPROACHES", "BURST_BYTES", "PACKET_BYTES", "mean_response_s", "plot_per_queue", "response_means_s",
           "tcp_for"]

PACKET_BYTES = 1500
BURST_BYTES = 500  # a telnet/game burst that fits one packet (Fig. 9 uses 540-byte packets)
APPROACHES: dict[str, dict[str, Any]] = {
    "interactive": {},
    "backlogged": {"fully_backlogged": True},
    "padding": {"padding_dummies": 3, "padding_dummy_bytes": 20},
    "diversity": {"diversity_copies": 2},
    "min_rto_prime": {"min_rto_prime_ms": 500.0},
    "thin": {"thin_linear_timeouts": True},
}


def tcp_for(approach: str) -> dict[str, Any]:
    """The TCP section for ``approach``: RTO floor 1 s as the paper, no delayed ACKs (the
    diversity receiver needs them off; the model's ``b = 1``)."""
    return {"packet_size_bytes": PACKET_BYTES, "delayed_ack": False, "min_rto_ms": 1000.0,
            **APPROACHES[approach]}


def mean_response_s(scenario: Scenario, *, warmup_s: float) -> tuple[float | None, int]:
    """Mean response time (s) of the bursts written after ``warmup_s`` that were
    acknowledged, and how many there were."""
    means = response_means_s(simulate(scenario).bursts, warmup_s=warmup_s)
    return means["write_to_ack_s"], means["bursts"]


def response_means_s(bursts: pl.DataFrame, *, warmup_s: float) -> dict[str, Any]:
    """Over the bursts written after ``warmup_s`` and acknowledged: how many, the mean
    write-to-acknowledgement time (s) and the paper's metric, the mean time from the first
    send of the burst's first byte to its acknowledgement (``send_to_ack_s``): for a
    fully-backlogged flow the paper times a marked packet from its send, not from when the
    application had it (Section III-D). ``None`` when no burst qualifies."""
    done = bursts.filter(pl.col("sent_ns") >= int(warmup_s * 1e9)).drop_nulls("response_ns")
    if done.height == 0:
        return {"bursts": 0, "write_to_ack_s": None, "send_to_ack_s": None}
    return {"bursts": done.height, "write_to_ack_s": metrics.to_float(done["response_ns"].mean()) / 1e9,
            "send_to_ack_s": metrics.to_float((done["acked_ns"] - done["first_sent_ns"]).mean()) / 1e9}


def plot_per_queue(table: pl.DataFrame, path: Path, *, x: str, xlabel: str, panel: str, title: str) -> None:
    """One panel per ``queue`` of ``table``: ``mean_response_s`` against ``x`` per approach,
    log y; ``panel`` is formatted with the queue's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queues = table["queue"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(1, len(queues), figsize=(5 * len(queues), 4), squeeze=False)
    for ax, queue in zip(axes[0], queues, strict=True):
        for approach in table["approach"].unique(maintain_order=True):
            t = table.filter(pl.col("queue") == queue, pl.col("approach") == approach).sort(x)
            ax.plot(t[x], t["mean_response_s"], "o-", label=approach)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean response time (s)")
        ax.set_title(panel.format(queue=queue))
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
