"""TAQ paper, Section 2.3: user-perceived hangs on DropTail.

Set-up (the paper's words): users each spawn a pool of four TCP connections (a web
session pool) and share a 1 Mbit/s bottleneck; propagation RTT 200 ms; 50 packets of
buffer (one RTT). Reported: with 200 users, *all* users perceive at least one hang longer
than 20 s; with 400 users, almost 50% perceive a hang longer than a minute.

Choices where the paper is silent (documented in docs/reproductions/taq.md): web users
fetch pages of Pareto-many objects (mean 10, shape 1.5) of SURGE sizes (the size-aware
paper's Table 1) over at most 4 parallel connections, with Pareto think times (mean 15 s,
shape 1.5, Table 1); users start uniformly in the first 10 s; 600 simulated seconds;
ns-2's TCP defaults as for Figure 2 (NewReno, IW 2, minimum RTO 200 ms, no timestamps,
no delayed ACKs, 500-byte packets).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import NS2_TCP
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["PAPER", "reproduce", "run", "scenario"]

PAPER = {200: ("hang > 20 s", 20.0, 1.0), 400: ("hang > 60 s", 60.0, 0.5)}
"""users → (claim, threshold in s, share of users the paper reports)."""


def scenario(*, users: int, duration_s: float = 600.0, seed: int = 1, queue: str = "droptail") -> Scenario:
    """The hang set-up with ``users`` web users; ``queue`` is the bottleneck's discipline
    (its documented defaults, 50 packets of buffer)."""
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=10.0,
        link={"rate_bps": 1_000_000, "delay_ms": 1.0, "queue": {"kind": queue, "limit_pkts": 50}},
        tcp=NS2_TCP,
        flows=[{
            "app": "web", "count": users, "connections": 4,
            "objects_per_page": {"dist": "pareto", "mean": 10.0, "shape": 1.5},
            "size": {"dist": "surge"},
            "think_s": {"dist": "pareto", "mean": 15.0, "shape": 1.5},
            "rtt_ms": 200.0, "start_s": [0.0, 10.0],
        }],
    )


def run(
    *, users_list: tuple[int, ...] = (200, 400), duration_s: float = 600.0, seed: int = 1, queue: str = "droptail"
) -> tuple[pl.DataFrame, dict[int, pl.DataFrame]]:
    """One run per user count on the ``queue`` discipline. Returns the summary (hang shares
    at 20 s and 60 s, with context) and each run's units table."""
    rows, units = [], {}
    for users in users_list:
        result = simulate(scenario(users=users, duration_s=duration_s, seed=seed, queue=queue))
        units[users] = result.units
        timeouts = metrics.timeout_summary(result.flows)
        shares = metrics.hang_shares(result.units, (20.0, 60.0))
        claim, threshold, paper_share = PAPER.get(users, ("", 20.0, float("nan")))
        bottleneck = result.links.filter(pl.col("name") == "bottleneck")
        rows.append({
            "discipline": queue,
            "users": users,
            "claim": claim,
            "paper_share": paper_share,
            "our_share": shares[threshold],
            "share_hang_over_20s": shares[20.0],
            "share_hang_over_60s": shares[60.0],
            "median_longest_hang_s": metrics.to_float(result.units["longest_hang_ns"].median()) / 1e9,
            "utilization": bottleneck["utilization"][0],
            "loss_rate": bottleneck["loss_rate"][0],
            "connections": result.flows.height,
            "connections_finished": result.flows["end_ns"].is_not_null().sum(),
            "pages_done": result.units["pages_done"].sum(),
            "share_conns_with_timeout": timeouts["share_with_timeout"],
            "backoff_mean_s": timeouts["backoff_mean_s"],
        })
    return pl.DataFrame(rows), units


def plot(results: dict[int, pl.DataFrame], path: Path) -> None:
    """CDF of each user's longest hang, one line per user count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for users, units in results.items():
        hangs = np.sort(units["longest_hang_ns"].to_numpy() / 1e9)
        ax.plot(hangs, np.arange(1, hangs.size + 1) / hangs.size, label=f"{users} users")
    for threshold in (20, 60):
        ax.axvline(threshold, color="grey", linestyle=":")
    ax.set_xscale("log")
    ax.set_xlabel("longest user-perceived hang (s)")
    ax.set_ylabel("CDF over users")
    ax.set_title("TAQ §2.3: hangs on DropTail, 1 Mbit/s, 4 connections per user")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    table, units = run(duration_s=300.0 if quick else 600.0, seed=seed)
    write_csv(table, out / "taq-hangs.csv")
    plot(units, out / "taq-hangs.png")
    return table
