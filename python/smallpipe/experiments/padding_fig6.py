"""Padding/diversity paper, Figure 6: the overall loss rate against the number of
fully-backlogged (bulk) flows, with one interactive user behaving and with that user
upgraded to fully backlogged (what one misbehaving user costs the others).

Set-up (Section III-D): a dumbbell, 100 Mbit/s access links, a 10 Mbit/s bottleneck, 2 ms
per link. Ours: bulk flows plus one telnet client (500-byte bursts, exponential gaps of
mean 1 s); ``tcp.fully_backlogged`` makes the telnet client pad (the bulk flows are
backlogged either way); a 40 kB DropTail buffer (the paper's default scenario); RTT
8 ms (four 2 ms links); minRTO 1 s; 100 s per point, loss counted over the whole run.

What the paper reports: no considerable increase of the loss rate when one user upgrades,
at any number of background flows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["BULK_FLOWS", "plot", "reproduce", "run", "scenario"]

BULK_FLOWS: tuple[int, ...] = (2, 5, 10, 20, 40, 80)


def scenario(bulk: int, *, upgraded: bool, duration_s: float, seed: int) -> Scenario:
    """``bulk`` bulk flows and one telnet client, padded when ``upgraded``."""
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=duration_s,
        link={"rate_bps": 10e6, "access_rate_bps": 100e6, "delay_ms": 2.0,
              "queue": {"kind": "droptail", "limit_bytes": 40_000}},
        tcp={"packet_size_bytes": 1500, "delayed_ack": False, "min_rto_ms": 1000.0, "fully_backlogged": upgraded},
        flows=[{"count": bulk, "app": "bulk", "rtt_ms": 8.0, "start_s": [0.0, 1.0]},
               {"count": 1, "app": "interactive", "rtt_ms": 8.0, "start_s": 0.0, "burst_bytes": 500,
                "mean_gap_s": 1.0}],
    )


def run(*, bulk_flows: Sequence[int] = BULK_FLOWS, duration_s: float = 100.0, seed: int = 1) -> pl.DataFrame:
    """Rows: bulk_flows, loss_rate with the user behaving and upgraded, and their ratio."""
    rows = []
    for n in bulk_flows:
        loss = {}
        for upgraded in (False, True):
            links = simulate(scenario(n, upgraded=upgraded, duration_s=duration_s, seed=seed)).links
            loss[upgraded] = links.filter(pl.col("name") == "bottleneck")["loss_rate"].item()
        rows.append({"bulk_flows": n, "loss_rate_interactive": loss[False], "loss_rate_upgraded": loss[True],
                     "upgraded_over_interactive": loss[True] / loss[False] if loss[False] > 0 else None})
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 6's axes: overall loss rate against the number of bulk flows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(table["bulk_flows"], table["loss_rate_interactive"], "o-", label="user interactive")
    ax.plot(table["bulk_flows"], table["loss_rate_upgraded"], "s--", label="user fully backlogged")
    ax.set_xlabel("fully-backlogged (bulk) flows")
    ax.set_ylabel("bottleneck loss rate")
    ax.set_title("Padding paper, Figure 6: 10 Mbit/s, DropTail 40 kB")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Six background sizes, 100 s each (quick: 5 and 20 flows, 20 s)."""
    table = run(bulk_flows=(5, 20), duration_s=20.0, seed=seed) if quick else run(seed=seed)
    write_csv(table, out / "padding-fig6.csv")
    plot(table, out / "padding-fig6.png")
    return table
