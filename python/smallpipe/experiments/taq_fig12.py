"""TAQ paper, Figure 12 in simulation: download time by object size for a replayed web log at
1 Mbit/s, TAQ with admission control against DropTail (and the other disciplines).

What the paper reports (Section 5.5, on its testbed): clients replay a 2-hour peak-load access
log, each fetching its objects as soon as possible over up to four connections; a client not
admitted keeps retrying, and that waiting time counts in the download time. TAQ with admission
control cuts the download time of short objects by about 5x in the median and in the worst
case, and of large objects by 2x in the median and 1.6x in the worst case; CDFs per 10 KB
object-size bucket.

Set-up (choices where the paper is silent or which we cannot copy): the synthetic log of
:mod:`smallpipe.experiments.taq_fig1` (SURGE sizes, Poisson requests at 0.05/s per client),
50 clients over 1200 s of log, replayed as fast as possible (4 connections per client) over
1 Mbit/s with one RTT (50 packets) of buffer, RTTs uniform in 150–300 ms, the ns-2 TCP
defaults of Figure 2; simulated for 1800 s so that the log can drain. A refused SYN is
retried by TCP's SYN timer (1, 3, 7, ... s), and the download time runs from the connection's
first SYN to its last byte, so the waiting time of a refused connection is included.
Objects still unfinished at the end count as taking longer than any finished one. The paper's
clients "constantly retry till admission"; our replay client does not ask again for an object
whose connection failed, so we raise TCP's SYN retries from 6 (about 2 minutes) to 20 (about
15 minutes) for every discipline. Objects whose connection gave up anyway are counted in
``gave_up``, and ``max_finished_s`` gives the worst case over the finished objects.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.taq_fig1 import replay_scenario
from smallpipe.result import simulate
from smallpipe.workloads import write_synthetic_access_log

__all__ = ["BUCKET_EDGES_BYTES", "QUEUES", "plot", "reproduce", "run"]

RATE_BPS = 1_000_000
BUFFER_PKTS = 50
BUCKET_EDGES_BYTES: tuple[int, ...] = (0, 10_000, 20_000, 30_000, 50_000, 100_000)
"""10 KB buckets as in the paper up to 30 KB, then wider ones for the sparse tail."""
QUEUES: dict[str, dict] = {
    "droptail": {"kind": "droptail"},
    "taq+ac": {"kind": "taq", "admission_control": True},
    "taq": {"kind": "taq"},
    "red": {"kind": "red"},
    "sfq": {"kind": "sfq"},
    "fq_codel": {"kind": "fq_codel"},
    "host_fq": {"kind": "host_fq"},
}
SYN_RETRIES = 20
"""The simulator's largest: with the SYN timer capped at 60 s, a client keeps retrying for about
15 minutes, our stand-in for the paper's clients that "constantly retry till admission"."""
PAPER = {"short_median_gain": 5.0, "short_max_gain": 5.0, "large_median_gain": 2.0, "large_max_gain": 1.6}


def _quantile(sorted_times: np.ndarray, q: float) -> float:
    """The lower empirical ``q``-quantile (an actual sample, so +inf when it is an unfinished object)."""
    return float(sorted_times[min(sorted_times.size - 1, int(np.ceil(q * sorted_times.size)) - 1)])


def run(*, queues: Sequence[str] = tuple(QUEUES), clients: int = 50, log_s: float = 1200.0,
        duration_s: float = 1800.0, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Returns (per object: queue, size, download_s or null when unfinished; per queue and bucket:
    objects, unfinished, median, p90 and max download time, with unfinished objects counted as
    infinitely slow, so a median or max is null (infinite) when too many are unfinished)."""
    parts, links = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "access.log"
        write_synthetic_access_log(log, clients=clients, duration_s=log_s, requests_per_client_per_s=0.05, seed=seed)
        for name in queues:
            scenario = replay_scenario(log, duration_s=duration_s, seed=seed, rate_bps=RATE_BPS,
                                       buffer_pkts=BUFFER_PKTS, queue=QUEUES[name])
            result = simulate(scenario.with_overrides({"tcp.syn_retries": SYN_RETRIES}))
            links[name] = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
            links[name]["last_end_s"] = result.flows["end_ns"].max() / 1e9
            parts.append(result.flows.select(
                pl.lit(name).alias("queue"), "size_bytes",
                download_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9,
                syn_timeouts="syn_timeouts",
            ))
    objects = pl.concat(parts)
    edges = np.asarray(BUCKET_EDGES_BYTES)
    objects = objects.with_columns(size_lo_bytes=edges[np.searchsorted(edges, objects["size_bytes"].to_numpy(),
                                                                        side="right") - 1])
    rows = []
    for (name, lo), group in objects.group_by("queue", "size_lo_bytes", maintain_order=True):
        # Unfinished objects are +inf: they sort last and make a quantile infinite when they reach it.
        times = np.sort(group["download_s"].fill_null(np.inf).to_numpy())
        link = links[name]
        rows.append({"queue": name, "size_lo_bytes": int(lo), "objects": group.height,
                     "unfinished": int(group["download_s"].is_null().sum()),
                     "gave_up": int((group["download_s"].is_null() & (group["syn_timeouts"] > 0)).sum()),
                     "median_s": _quantile(times, 0.5), "p90_s": _quantile(times, 0.9), "max_s": float(times[-1]),
                     "max_finished_s": group["download_s"].max(),
                     "share_with_syn_timeout": float((group["syn_timeouts"] > 0).mean()),
                     "loss_rate": link["loss_rate"], "admission_drops": link.get("drop_admission"),
                     "utilization": link["utilization"], "last_end_s": link["last_end_s"]})
    summary = pl.DataFrame(rows).sort("queue", "size_lo_bytes")
    return objects, summary


def plot(objects: pl.DataFrame, path: Path) -> None:
    """CDF of download time per size bucket: DropTail (dashed) against TAQ with admission control."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buckets = [0, 10_000, 20_000, 100_000]
    fig, axes = plt.subplots(1, len(buckets), figsize=(4 * len(buckets), 3.8), sharey=True)
    for ax, lo in zip(axes, buckets, strict=True):
        for name, style in (("droptail", "--"), ("taq+ac", "-"), ("fq_codel", ":"), ("host_fq", "-.")):
            group = objects.filter(pl.col("queue") == name, pl.col("size_lo_bytes") == lo)
            if group.height == 0:
                continue
            times = np.sort(group["download_s"].fill_null(np.inf).to_numpy())
            ax.plot(times, np.arange(1, times.size + 1) / times.size, linestyle=style, label=name)
        hi = BUCKET_EDGES_BYTES[BUCKET_EDGES_BYTES.index(lo) + 1] if lo != BUCKET_EDGES_BYTES[-1] else None
        ax.set_title(f"{lo // 1000}–{hi // 1000} KB" if hi else f"≥ {lo // 1000} KB")
        ax.set_xscale("log")
        ax.set_xlabel("download time (s)")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("CDF over objects")
    fig.suptitle("TAQ Figure 12 in simulation: replayed log, 1 Mbit/s")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """50 clients over a 1200 s log (25 clients, 600 s with ``quick``), written as CSV and PNG."""
    if quick:
        objects, summary = run(clients=25, log_s=600.0, duration_s=900.0, seed=seed)
    else:
        objects, summary = run(seed=seed)
    write_csv(summary, out / "taq-fig12.csv")
    plot(objects, out / "taq-fig12.png")
    return summary
