"""TAQ paper, Figure 1 in spirit: download time against object size for a replayed proxy
log over a congested 2 Mbit/s link, per log-sized bucket: p10, p90, min, max and mean.

The paper's Figure 1 comes from a real 2-hour Squid log of a campus in Kerala (221
clients, 1.5 GB over a 2 Mbit/s link); its finding is that download times vary by over two
orders of magnitude at every object size. We do not have that log: we replay a synthetic
one made by :func:`smallpipe.workloads.write_synthetic_access_log` (SURGE object sizes,
Poisson requests), each client fetching as fast as it can over at most 4 connections (the
TAQ paper's §5.5 client), with the ns-2 TCP defaults used for Figure 2 and one RTT of
DropTail buffer. The download time of an object is its connection's completion time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import NS2_TCP
from smallpipe.result import simulate
from smallpipe.scenario import Scenario
from smallpipe.workloads import write_synthetic_access_log

__all__ = ["BUCKET_EDGES_BYTES", "replay_scenario", "reproduce", "run"]

BUCKET_EDGES_BYTES = (0, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)


def replay_scenario(
    log: Path, *, duration_s: float, seed: int, rate_bps: int = 2_000_000, buffer_pkts: int = 100,
    queue: dict[str, Any] | None = None,
) -> Scenario:
    """A replay of ``log`` (each client as fast as its 4 connections allow) over a
    ``rate_bps`` bottleneck with ``buffer_pkts`` of buffer (one RTT: 100 packets at 2 Mbit/s)
    and ``queue`` (a ``[link.queue]`` table, DropTail by default), RTTs uniform in 150–300 ms."""
    return Scenario(
        seed=seed, duration_s=duration_s, slice_s=min(20.0, duration_s),
        link={"rate_bps": rate_bps, "delay_ms": 1.0,
              "queue": {"kind": "droptail", **(queue or {}), "limit_pkts": buffer_pkts}},
        tcp=NS2_TCP,
        flows=[{"app": "replay", "log_path": str(log), "replay": "asap", "connections": 4,
                "rtt_ms": [150.0, 300.0]}],
    )


def run(*, clients: int = 100, duration_s: float = 1200.0, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Returns (per-object download times, per-bucket summary)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "access.log"
        write_synthetic_access_log(log, clients=clients, duration_s=duration_s, requests_per_client_per_s=0.05, seed=seed)
        result = simulate(replay_scenario(log, duration_s=duration_s, seed=seed))
    objects = result.flows.filter(pl.col("end_ns").is_not_null()).select(
        "size_bytes", download_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9
    )
    edges = np.asarray(BUCKET_EDGES_BYTES)
    bucket = np.searchsorted(edges, objects["size_bytes"].to_numpy(), side="right") - 1
    summary = (
        objects.with_columns(bucket=bucket, size_lo_bytes=edges[bucket])
        .group_by("bucket", "size_lo_bytes")
        .agg(
            objects=pl.len(),
            min_s=pl.col("download_s").min(),
            p10_s=pl.col("download_s").quantile(0.1, interpolation="linear"),
            mean_s=pl.col("download_s").mean(),
            p90_s=pl.col("download_s").quantile(0.9, interpolation="linear"),
            max_s=pl.col("download_s").max(),
        )
        .with_columns(spread_max_over_min=pl.col("max_s") / pl.col("min_s"), spread_p90_over_p10=pl.col("p90_s") / pl.col("p10_s"))
        .sort("bucket")
        .drop("bucket")
    )
    return objects, summary


def plot(objects: pl.DataFrame, summary: pl.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(objects["size_bytes"], objects["download_s"], s=3, alpha=0.25, color="grey", label="objects")
    x = summary["size_lo_bytes"].to_numpy().clip(min=300) * 1.7
    for column, style in [("min_s", "v"), ("p10_s", "_"), ("mean_s", "o"), ("p90_s", "_"), ("max_s", "^")]:
        ax.plot(x, summary[column], marker=style, linestyle="-", label=column.removesuffix("_s"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("object size (bytes)")
    ax.set_ylabel("download time (s)")
    ax.set_title("TAQ Fig. 1 in spirit: replayed log, 2 Mbit/s DropTail")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    objects, summary = run(clients=50 if quick else 100, duration_s=600.0 if quick else 1200.0, seed=seed)
    write_csv(summary, out / "taq-fig1.csv")
    plot(objects, summary, out / "taq-fig1.png")
    return summary
