"""TAQ paper, Figure 3: the DropTail buffer needed to restore short-term fairness.

What the paper reports (Section 2.4): large buffers buy fairness at the price of delay;
"at 1000 bytes a packet, with 800 TCP connections competing at a bottleneck link of 2Mbps
capacity, the maximum queueing delay necessary to achieve fairness is 32 seconds" (8000
packets, 10 per flow). The figure itself (buffer needed against flows, 20 s slices) is
not in our copy of the paper, so its threshold for "fair" is unknown.

Our choice, documented in docs/reproductions/taq.md: the Figure 2 dumbbell (200 ms RTT,
NewReno, no delayed ACKs) at 2 Mbit/s with 1000-byte packets, N = 100 to 800 bulk flows,
DropTail buffers of 0.5 to 15 packets per flow; "fair" means a mean 20 s Jain index of at
least 0.9 once the start-up (the first 300 s) is over.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import taq_dumbbell
from smallpipe.result import simulate

__all__ = ["FAIR_JAIN", "FLOWS", "PAPER", "PER_FLOW_BUFFER_PKTS", "needed", "plot", "reproduce", "run"]

RATE_BPS = 2_000_000
PACKET_SIZE_BYTES = 1000
FLOWS: tuple[int, ...] = (100, 200, 400, 800)
PER_FLOW_BUFFER_PKTS: tuple[float, ...] = (0.5, 1, 2, 3, 5, 7, 10, 15)
FAIR_JAIN = 0.9
"""Our threshold for "fairness restored" (the paper does not state one)."""
WARMUP_S = 300.0

PAPER = {"flows": 800, "queueing_delay_s": 32.0}
"""The one number the paper's text gives for Figure 3."""


def run(
    *,
    flows: Sequence[int] = FLOWS,
    per_flow_buffer_pkts: Sequence[float] = PER_FLOW_BUFFER_PKTS,
    duration_s: float = 3000.0,
    seed: int = 1,
) -> pl.DataFrame:
    """One run per (flows, buffer). Returns flows, buffer_pkts, max_queue_delay_s (a full
    buffer's drain time), short_term_jain (mean over 20 s slices after the warm-up),
    queue_delay_p99_s, utilization."""
    rows = []
    for n in flows:
        for per_flow in per_flow_buffer_pkts:
            buffer_pkts = max(1, round(n * per_flow))
            scenario = taq_dumbbell(
                flows=n, rate_bps=RATE_BPS, duration_s=duration_s, seed=seed,
                buffer_pkts=buffer_pkts, packet_size_bytes=PACKET_SIZE_BYTES,
            )
            result = simulate(scenario)
            per_slice = metrics.jain_per_slice(result.slices, flows=result.flows).filter(
                pl.col("start_ns") >= WARMUP_S * 1e9
            )
            link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
            rows.append({
                "flows": n,
                "buffer_pkts": buffer_pkts,
                "max_queue_delay_s": buffer_pkts * PACKET_SIZE_BYTES * 8 / RATE_BPS,
                "short_term_jain": per_slice["jain"].mean(),
                "queue_delay_p99_s": link["queue_delay_p99_ms"] / 1e3,
                "utilization": link["utilization"],
            })
    return pl.DataFrame(rows)


def needed(table: pl.DataFrame) -> pl.DataFrame:
    """Per flow count: the smallest buffer of the grid whose Jain index reaches
    :data:`FAIR_JAIN` (null when none does), and the best index reached with its buffer."""
    best = table.sort("short_term_jain", descending=True).group_by("flows").first()
    fair = table.filter(pl.col("short_term_jain") >= FAIR_JAIN).sort("buffer_pkts").group_by("flows").first()
    return (
        best.select("flows", best_jain="short_term_jain", best_buffer_pkts="buffer_pkts")
        .join(fair.select("flows", needed_buffer_pkts="buffer_pkts", needed_delay_s="max_queue_delay_s"), on="flows", how="left")
        .sort("flows")
    )


def plot(table: pl.DataFrame, path: Path) -> None:
    """Jain index against the buffer's drain time, one line per flow count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (n,), group in table.sort("buffer_pkts").group_by("flows", maintain_order=True):
        ax.plot(group["max_queue_delay_s"], group["short_term_jain"], marker="o", label=f"{n} flows")
    ax.axhline(FAIR_JAIN, color="grey", linestyle=":", label=f"threshold {FAIR_JAIN}")
    ax.axvline(PAPER["queueing_delay_s"], color="red", linestyle="--", label="paper: 32 s for 800 flows")
    ax.set_xscale("log")
    ax.set_xlabel("DropTail buffer, as its drain time at 2 Mbit/s (s)")
    ax.set_ylabel("Jain index, 20 s slices")
    ax.set_ylim(0, 1.02)
    ax.set_title("TAQ Figure 3: buffer needed for short-term fairness (1000-byte packets)")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The grid (3000 s runs; 1000 s with ``quick``), written as CSV and PNG; returns
    the buffer needed per flow count."""
    table = run(duration_s=1000.0 if quick else 3000.0, seed=seed)
    write_csv(table, out / "taq-fig3.csv")
    plot(table, out / "taq-fig3.png")
    return needed(table)
