"""Thesis ("short flows: FCT with RED, FQ and RCP"), Figure 5.1, DropTail baseline: flow
completion time of a measuring flow against 4 infinite background flows.

Set-up (its §4.2 and Chapter 5): 10 Mbit/s links, 10 ms access latency, 10 ms bottleneck
(RTT 40 ms), 4 background flows of infinite size starting at about 0, TCP Reno with an
initial window of 2 and DropTail. The measuring flow starts after 250 RTTs plus a random
offset; the time at which its k-th packet and all before it have arrived is the FCT of a
k-packet flow (1 KB packets). Reported: median and 99th-percentile FCT against flow size,
and CDFs at 12 and 133 packets (the median and 90th-percentile KB per host of the web).

Choices where the thesis is silent (docs/reproductions/thesis.md): DropTail limit 50
packets (ns-2's default), 1000-byte packets on the wire (960 payload bytes, no
timestamps), minimum RTO 200 ms (ns-2's), no delayed ACKs, a measuring flow of 500
packets, a random offset uniform in one RTT, one run per seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from smallpipe import metrics
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["SIZES_PKTS", "reproduce", "run"]

SIZES_PKTS = (1, 2, 4, 8, 12, 16, 32, 64, 133, 256, 500)
RTT_MS = 40.0
MSS_BYTES = 960


def scenario(seed: int, *, iw_pkts: int = 2) -> Scenario:
    start = 250 * RTT_MS / 1000
    return Scenario(
        seed=seed, duration_s=start + 30.0, slice_s=1.0,
        link={"rate_bps": 10_000_000, "delay_ms": 10.0, "access_rate_bps": 10_000_000,
              "queue": {"kind": "droptail", "limit_pkts": 50}},
        tcp={"packet_size_bytes": 1000, "recovery": "reno", "delayed_ack": False, "timestamps": False,
             "initial_window_pkts": iw_pkts, "min_rto_ms": 200.0},
        flows=[
            {"app": "bulk", "count": 4, "rtt_ms": RTT_MS, "start_s": [0.0, 0.01]},
            {"app": "transfer", "size_bytes": 500 * MSS_BYTES, "rtt_ms": RTT_MS, "record_progress": True,
             "start_s": [start, start + RTT_MS / 1000]},
        ],
    )


def run(*, runs: int = 300, seed: int = 1) -> pl.DataFrame:
    """k-packet FCTs over `runs` seeds: one row per (run, k)."""
    frames = []
    for i in range(runs):
        result = simulate(scenario(seed * 100_000 + i))
        frames.append(result.progress.select("packets", fct_s=pl.col("fct_ns") / 1e9).with_columns(run=pl.lit(i)))
    return pl.concat(frames)


def summary(fcts: pl.DataFrame) -> pl.DataFrame:
    return (
        fcts.filter(pl.col("packets").is_in(SIZES_PKTS))
        .group_by("packets")
        .agg(
            runs=pl.len(),
            median_s=pl.col("fct_s").median(),
            p99_s=pl.col("fct_s").quantile(0.99, interpolation="linear"),
        )
        .with_columns(
            slow_start_bound_s=metrics.slow_start_bound_s(
                pl.col("packets") * MSS_BYTES, pl.lit(RTT_MS / 1000), mss_bytes=MSS_BYTES, iw_pkts=2
            )
        )
        .sort("packets")
    )


def plot(fcts: pl.DataFrame, table: pl.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(table["packets"], table["median_s"], marker="o", label="median")
    left.plot(table["packets"], table["p99_s"], marker="s", label="99th percentile")
    left.plot(table["packets"], table["slow_start_bound_s"], linestyle=":", color="grey", label="slow-start bound")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("flow size (packets of 1 KB)")
    left.set_ylabel("FCT (s)")
    left.legend()
    for k in (12, 133):
        values = np.sort(fcts.filter(pl.col("packets") == k)["fct_s"].to_numpy())
        right.plot(values, np.arange(1, values.size + 1) / values.size, label=f"{k} packets")
    right.set_xscale("log")
    right.set_xlabel("FCT (s)")
    right.set_ylabel("CDF")
    right.legend()
    fig.suptitle("Thesis Fig. 5.1 baseline: TCP Reno IW 2, DropTail, 4 elephants, 10 Mbit/s, 40 ms")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    fcts = run(runs=60 if quick else 300, seed=seed)
    table = summary(fcts)
    table.write_csv(out / "thesis-fig5.1.csv")
    plot(fcts, table, out / "thesis-fig5.1.png")
    return table
