"""Matta & Guo, Figure 7: foreground short and long sessions with web background traffic on
the diamond of Figure 6, the edge splitting flows over two 5 Mbit/s paths by load
balancing (with DropTail or RED queues), by size (an oracle, 75 packets) or by lifetime
(32 packets).

Set-up (Table 3): 10 sessions of 1000-packet and 10 of 10-packet connections; 200 web
sessions with exponential gaps of mean 2.4 s between connections whose sizes follow a
bounded Pareto on [4, 2·10^5] packets with shape 1.2; 576-byte packets, a 128-packet
window, 238 packets of bandwidth-delay product per path (a 220 ms RTT), 250-packet path
buffers, RED 20/245 packets with max_p 0.002, access links at 3 C.

What the paper reports (Section 4.4): size- and lifetime-based splitting reach fairness
comparable to RED; RED buys fairness at the cost of short goodput; size splitting gives
short connections both high fairness and high goodput; with DropTail and load balancing
long connections get a much higher goodput but their fairness can be as low as 0.2, while
RED and isolation keep every fairness above 0.8.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from smallpipe.experiments.isolation_common import (
    LONG_PKTS,
    MATTA_TCP,
    MSS_BYTES,
    PACKET_BYTES,
    SHORT_PKTS,
    class_metrics,
)
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate

__all__ = ["PAPER", "SCHEMES", "bounded_pareto_pkts", "plot", "reproduce", "run", "scenario"]

SCHEMES: tuple[str, ...] = (
    "load_balanced_droptail", "load_balanced_red", "size_droptail", "lifetime_droptail", "load_balanced_rio",
)
"""The paper's four schemes, and RIO (not in the paper): load balancing, each path a RIO
queue whose in-packets are every connection's first 32 packets, marked by the edge."""

PAPER = {"long_droptail_jain_min": 0.2, "isolation_and_red_jain_min": 0.8}
"""Read from the text of Section 4.4: DropTail long fairness "as low as 20%"; RED and
isolation "all above 80%"."""

PATH_RATE_BPS = 5_000_000
RTT_MS = 220.0
"""238 packets × 576 bytes × 8 / 5 Mbit/s = 0.219 s."""


def bounded_pareto_pkts(n: int, *, low: float = 4.0, high: float = 2e5, shape: float = 1.2, seed: int = 1) -> np.ndarray:
    """``n`` draws (packets, rounded) of the bounded Pareto by inverse transform:
    ``F(x) = (1 − (L/x)^a) / (1 − (L/H)^a)`` on ``[L, H]``."""
    u = np.random.default_rng(seed).uniform(size=n)
    x = low / (1.0 - u * (1.0 - (low / high) ** shape)) ** (1.0 / shape)
    rounded: np.ndarray = np.rint(x)
    return rounded


def scenario(scheme: str, *, duration_s: float, seed: int, web_samples: int = 20_000) -> dict[str, Any]:
    routing, aqm = scheme.rsplit("_", 1)
    if aqm == "red":
        queue: dict[str, Any] = {"kind": "red", "limit_pkts": 250, "mode": "packets", "min_th_pkts": 20.0,
                                 "max_th_pkts": 245.0, "max_p": 0.002, "w_q": 0.002, "gentle": False,
                                 "mean_pkt_size_bytes": PACKET_BYTES}
    elif aqm == "rio":
        # In-packets on the paper's RED curve; out-packets on a harsher one (ours).
        queue = {"kind": "rio", "limit_pkts": 250, "mode": "packets", "w_q": 0.002, "gentle": False,
                 "mean_pkt_size_bytes": PACKET_BYTES,
                 "in": {"min_th_pkts": 20.0, "max_th_pkts": 245.0, "max_p": 0.002},
                 "out": {"min_th_pkts": 10.0, "max_th_pkts": 120.0, "max_p": 0.02}}
    else:
        queue = {"kind": "droptail", "limit_pkts": 250}
    edge: dict[str, Any] = {"mark": "none"}
    if routing == "size":
        edge = {"mark": "size_oracle", "threshold_bytes": 75 * MSS_BYTES}
    elif aqm == "rio":
        edge = {"mark": "first_n", "in_pkts": 32}
    web_sizes = (bounded_pareto_pkts(web_samples, seed=seed) * MSS_BYTES).tolist()
    session = {"app": "session", "count": 10, "rtt_ms": RTT_MS, "start_s": [0.0, 5.0], "think_s": 0.0}
    return {
        "seed": seed,
        "duration_s": duration_s,
        "slice_s": 20.0,
        "link": {"rate_bps": PATH_RATE_BPS, "delay_ms": 100.0, "receiver_delay_ms": 5.0,
                 "access_rate_bps": 3 * PATH_RATE_BPS, "queue": queue},
        "tcp": MATTA_TCP,
        "edge": edge,
        "topology": {"kind": "diamond", "routing": routing, "lifetime_pkts": 32},
        "flows": [
            {**session, "size_bytes": LONG_PKTS * MSS_BYTES},
            {**session, "size_bytes": SHORT_PKTS * MSS_BYTES},
            {"app": "poisson", "count": 200, "rate_per_s": 200 / 2.4, "rtt_ms": RTT_MS,
             "size": {"dist": "empirical", "values": web_sizes}},
        ],
    }


def run(*, schemes: Sequence[str] = SCHEMES, duration_s: float = 1000.0, seed: int = 1) -> pl.DataFrame:
    rows = []
    for scheme in schemes:
        result = simulate(scenario(scheme, duration_s=duration_s, seed=seed))
        links = {r["name"]: r for r in result.links.iter_rows(named=True)}
        row: dict[str, Any] = {"scheme": scheme}
        for group, name in ((0, "long"), (1, "short")):
            m = class_metrics(result, group)
            row[f"{name}_jain"] = m["jain"]
            row[f"{name}_jain_min"] = m["jain_min"]
            row[f"{name}_conn_jain"] = m["conn_jain"]
            row[f"{name}_goodput_kbps"] = m["goodput_bps"] / 1e3
            conns = result.flows.filter(pl.col("group") == group)
            row[f"{name}_timeouts_per_conn"] = float(conns.select(pl.col("timeouts").mean()).item() or 0.0)
        web = result.flows.filter(pl.col("group") == 2)
        row["web_conns"] = web.height
        row["path1_utilization"] = links["bottleneck"]["utilization"]
        row["path2_utilization"] = links["bottleneck_path2"]["utilization"]
        row["path1_loss"] = links["bottleneck"]["loss_rate"]
        row["path2_loss"] = links["bottleneck_path2"]["loss_rate"]
        # RED's probabilistic drops against buffer-full ones, both paths (RIO files its drops
        # under another counter, so its row leaves these empty).
        paths = ("bottleneck", "bottleneck_path2")
        row["early_drops"] = None if scheme.endswith("rio") else sum(links[p]["drop_early"] for p in paths)
        row["forced_drops"] = None if scheme.endswith("rio") else sum(links[p]["drop_overlimit"] for p in paths)
        rows.append(row)
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 7's four panels as bars per scheme."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(15, 3.8))
    panels = [("short_jain", "(a) short fairness"), ("short_goodput_kbps", "(b) short goodput (kbit/s)"),
              ("long_jain", "(c) long fairness"), ("long_goodput_kbps", "(d) long goodput (kbit/s)")]
    labels = [s.replace("load_balanced", "load bal.").replace("_", "\n") for s in table["scheme"]]
    for ax, (col, title) in zip(axes, panels, strict=True):
        ax.bar(range(table.height), table[col], color=[f"C{i}" for i in range(table.height)])
        ax.set_xticks(range(table.height), labels, fontsize=7)
        ax.set_title(title, fontsize=9)
        if col.endswith("jain"):
            ax.set_ylim(0, 1.02)
    fig.suptitle("Matta & Guo Figure 7: web background on the diamond")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The five schemes over 1000 s; ``quick``: 200 s."""
    table = run(duration_s=200.0 if quick else 1000.0, seed=seed)
    write_csv(table, out / "isolation-fig7.csv")
    plot(table, out / "isolation-fig7.png")
    return table
