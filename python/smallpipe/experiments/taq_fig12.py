"""TAQ paper, Figure 12 in simulation: download time by object size for a replayed web log at
1 Mbit/s, TAQ with admission control (under each reading of Section 4.3) against DropTail and
TAQ without it.

What the paper reports (Section 5.5, on its testbed): two clients replay a 2-hour peak-load
access log, each fetching its objects as soon as possible over up to four connections; a client
not admitted keeps retrying, and that waiting time counts in the download time. TAQ with
admission control cuts the download time of short objects by about 5x in the median and in the
worst case, and of large objects by 2x in the median and 1.6x in the worst case; CDFs per 10 KB
object-size bucket.

Set-up (choices where the paper is silent or which we cannot copy): the synthetic log of
:mod:`smallpipe.experiments.taq_fig1` (SURGE sizes, Poisson requests) over 1200 s, at two
scales with the same total request rate (2.5 requests/s): the paper's, 2 clients x 4
connections, and a stress of 50 clients x 4. The log is replayed as fast as possible over
1 Mbit/s with one RTT (50 packets) of buffer, RTTs uniform in 150-300 ms, the ns-2 TCP defaults
of Figure 2, simulated for 1800 s. An object's time runs from when its client wanted it (its
logged time, or when the client opened its connection if that was earlier: the replay fetches
ahead of the log) to its last byte: the wait in the client behind its four connections and the
wait for admission (SYN timeouts) both count. Unfinished objects count as slower than any
finished one. The paper's clients "constantly retry till admission"; our replay client does not
ask again for an object whose connection failed, so TCP's SYN retries are raised from 6 to 20
(about 15 minutes) for every discipline; ``gave_up`` counts objects whose connection gave up.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.taq_fig1 import replay_scenario
from smallpipe.result import Result, simulate
from smallpipe.scenario import Scenario
from smallpipe.workloads import write_synthetic_access_log

__all__ = ["BUCKET_EDGES_BYTES", "PAPER", "QUEUES", "SCALES", "markdown", "plot", "reproduce", "run"]

RATE_BPS = 1_000_000
BUFFER_PKTS = 50
LOG_REQUESTS_PER_S = 2.5
"""Requests per second of the whole log (50 clients at 0.05/s, the Figure 1 log)."""
BUCKET_EDGES_BYTES: tuple[int, ...] = (0, 10_000, 20_000, 30_000, 50_000, 100_000)
"""10 KB buckets as in the paper up to 30 KB, then wider ones for the sparse tail."""
SHORT, LARGE = 0, 100_000
"""The buckets the paper's short and large objects are compared in (0-10 KB, >= 100 KB)."""
SCALES: dict[str, int] = {"paper": 2, "stress": 50}
"""Clients per scale, each with four connections."""
_AC = {"kind": "taq", "admission_control": True}
QUEUES: dict[str, dict[str, Any]] = {
    "droptail": {"kind": "droptail"},
    "taq": {"kind": "taq"},
    # Admission control at its defaults (the reading of Section 4.3 argued in docs/taq.md),
    # then one knob changed at a time, then the reading before these knobs existed.
    "taq+ac": _AC,
    "taq+ac all_waiting": {**_AC, "t_wait_policy": "all_waiting"},
    "taq+ac while_active": {**_AC, "pool_lifetime": "while_active"},
    "taq+ac no_new_flow_limit": {**_AC, "new_flow_limit_conns": 0},
    "taq+ac no_conservative_start": {**_AC, "conservative_start": False},
    "taq+ac protect_first_syn": {**_AC, "protect_first_syn": True},
    "taq+ac proxy": {**_AC, "admission_hold_syns": 1024},
    "taq+ac old_reading": {**_AC, "t_wait_policy": "all_waiting", "new_flow_limit_conns": 0,
                           "conservative_start": False},
}
SYN_RETRIES = 20
"""The simulator's largest: with the SYN timer capped at 60 s, a client keeps retrying for about
15 minutes, our stand-in for the paper's clients that "constantly retry till admission"."""
PAPER = {"short_median_gain": 5.0, "short_max_gain": 5.0, "large_median_gain": 2.0, "large_max_gain": 1.6}
"""DropTail's time over TAQ+AC's (Section 5.5)."""


def _quantile(sorted_times: np.ndarray, q: float) -> float:
    """The lower empirical ``q``-quantile (an actual sample, so +inf when it is an unfinished object)."""
    return float(sorted_times[min(sorted_times.size - 1, int(np.ceil(q * sorted_times.size)) - 1)])


def _one(log: Path, scale: str, name: str, duration_s: float, seed: int,
         execute: Callable[[Scenario], Result]) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per-object times of one run and its link-level row."""
    scenario = replay_scenario(log, duration_s=duration_s, seed=seed, rate_bps=RATE_BPS,
                               buffer_pkts=BUFFER_PKTS, queue=QUEUES[name])
    result = execute(scenario.with_overrides({"tcp.syn_retries": SYN_RETRIES}))
    link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    objects = result.flows.select(
        pl.lit(scale).alias("scale"), pl.lit(name).alias("queue"), "unit_id", "size_bytes", "bytes_delivered",
        "syn_timeouts", "requested_ns",
        wanted_ns=pl.min_horizontal("requested_ns", "start_ns"), end_ns="end_ns",
    ).with_columns(time_s=(pl.col("end_ns") - pl.col("wanted_ns")) / 1e9)
    return objects, link


def run(*, scales: Sequence[str] = tuple(SCALES), queues: Sequence[str] = tuple(QUEUES), log_s: float = 1200.0,
        duration_s: float = 1800.0, seed: int = 1, execute: Callable[[Scenario], Result] = simulate,
        log: Path | None = None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """``execute`` runs a scenario (the simulator; the testbed's reproduction passes
    :func:`smallpipe.testbed.run_testbed`); ``log`` is replayed at every scale instead of the
    synthetic log (``log_s`` is then unused). Returns (per object; per scale, queue and size bucket: objects, unfinished, median, p90,
    max and mean time with unfinished objects infinitely slow; per scale and queue: mean time
    per object, client makespans, the share of objects with 0/1/2/>=3 SYN timeouts, loss rate,
    admission drops, and DropTail's time over this queue's for the paper's four claims)."""
    parts, runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in scales:
            clients = SCALES[scale]
            replayed = log
            if replayed is None:
                replayed = Path(tmp) / f"{scale}.log"
                write_synthetic_access_log(replayed, clients=clients, duration_s=log_s,
                                           requests_per_client_per_s=LOG_REQUESTS_PER_S / clients, seed=seed)
            for name in queues:
                objects, link = _one(replayed, scale, name, duration_s, seed, execute)
                parts.append(objects)
                t = objects["time_s"].fill_null(np.inf).to_numpy()
                per_client = objects.group_by("unit_id").agg(
                    makespan_s=(pl.col("end_ns").max() - pl.col("wanted_ns").min()) / 1e9,
                    unfinished=pl.col("end_ns").is_null().any())
                makespans = np.where(per_client["unfinished"].to_numpy(), np.inf,
                                     per_client["makespan_s"].fill_null(np.inf).to_numpy())
                syn = objects["syn_timeouts"]
                runs.append({"scale": scale, "queue": name, "objects": objects.height,
                             "unfinished": int(objects["end_ns"].is_null().sum()),
                             "gave_up": int((objects["end_ns"].is_null() & (syn > 0)).sum()),
                             "mean_s": metrics.to_float(t.mean()), "makespan_mean_s": metrics.to_float(makespans.mean()),
                             "makespan_max_s": metrics.to_float(makespans.max()),
                             "syn0": metrics.to_float((syn == 0).mean()), "syn1": metrics.to_float((syn == 1).mean()),
                             "syn2": metrics.to_float((syn == 2).mean()), "syn3plus": metrics.to_float((syn >= 3).mean()),
                             "loss_rate": link["loss_rate"], "admission_drops": link.get("drop_admission"),
                             "utilization": link["utilization"]})
    objects = pl.concat(parts)
    edges = np.asarray(BUCKET_EDGES_BYTES)
    objects = objects.with_columns(size_lo_bytes=edges[np.searchsorted(edges, objects["size_bytes"].to_numpy(),
                                                                        side="right") - 1])
    rows = []
    for (scale, name, lo), group in objects.group_by("scale", "queue", "size_lo_bytes", maintain_order=True):
        # Unfinished objects are +inf: they sort last and make a quantile infinite when they reach it.
        times = np.sort(group["time_s"].fill_null(np.inf).to_numpy())
        rows.append({"scale": scale, "queue": name, "size_lo_bytes": int(lo), "objects": group.height,
                     "unfinished": int(group["time_s"].is_null().sum()),
                     "median_s": _quantile(times, 0.5), "p90_s": _quantile(times, 0.9), "max_s": float(times[-1]),
                     "mean_s": float(times.mean())})
    buckets = pl.DataFrame(rows).sort("scale", "queue", "size_lo_bytes")
    return objects, buckets, _with_gains(pl.DataFrame(runs), buckets)


def _with_gains(runs: pl.DataFrame, buckets: pl.DataFrame) -> pl.DataFrame:
    """DropTail's time over each queue's, for the paper's four claims (> 1: faster than DropTail)."""
    def stat(scale: str, queue: str, lo: int, col: str) -> float:
        row = buckets.filter(pl.col("scale") == scale, pl.col("queue") == queue, pl.col("size_lo_bytes") == lo)
        return float(row[col][0]) if row.height else float("nan")

    gains: dict[str, list[float]] = {k: [] for k in PAPER}
    for scale, queue in runs.select("scale", "queue").iter_rows():
        for key, lo, col in (("short_median_gain", SHORT, "median_s"), ("short_max_gain", SHORT, "max_s"),
                             ("large_median_gain", LARGE, "median_s"), ("large_max_gain", LARGE, "max_s")):
            gains[key].append(stat(scale, "droptail", lo, col) / stat(scale, queue, lo, col))
    return runs.with_columns(**{k: pl.Series(v, dtype=pl.Float64) for k, v in gains.items()})


def _s(x: float) -> str:
    if not np.isfinite(x):
        return "∞"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def markdown(buckets: pl.DataFrame, runs: pl.DataFrame) -> str:
    """The page's tables, from the CSVs: per scale, per bucket median / p90 / max, then per run."""
    out = []
    for scale in buckets["scale"].unique(maintain_order=True):
        b = buckets.filter(pl.col("scale") == scale)
        queues = b["queue"].unique(maintain_order=True).to_list()
        out.append(f"**{scale}** ({SCALES.get(scale, '?')} clients × 4 connections): median / p90 / max, s\n")
        out.append("| bucket | objects | " + " | ".join(queues) + " |")
        out.append("|---|---|" + "---|" * len(queues))
        for lo in b["size_lo_bytes"].unique(maintain_order=True):
            cells = []
            for q in queues:
                r = b.filter(pl.col("queue") == q, pl.col("size_lo_bytes") == lo)
                cells.append(" / ".join(_s(r[c][0]) for c in ("median_s", "p90_s", "max_s")) if r.height else "")
            n = b.filter(pl.col("size_lo_bytes") == lo)["objects"][0]
            label = f"≥ {lo // 1000} KB" if lo == BUCKET_EDGES_BYTES[-1] else \
                f"{lo // 1000}–{BUCKET_EDGES_BYTES[BUCKET_EDGES_BYTES.index(lo) + 1] // 1000} KB"
            out.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
        out.append("")
    out.append("| scale | queue | mean per object, s | makespan mean / max, s | SYN timeouts 0 / 1 / 2 / ≥3 "
               "| loss | admission drops | short median / max gain | large median / max gain |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for row in runs.iter_rows(named=True):
        syn = " / ".join(f"{100 * row[k]:.0f}%" for k in ("syn0", "syn1", "syn2", "syn3plus"))
        out.append(f"| {row['scale']} | {row['queue']} | {_s(row['mean_s'])} | {_s(row['makespan_mean_s'])} / "
                   f"{_s(row['makespan_max_s'])} | {syn} | {row['loss_rate']:.3f} | {row['admission_drops']} | "
                   f"{row['short_median_gain']:.2f} / {row['short_max_gain']:.2f} | "
                   f"{row['large_median_gain']:.2f} / {row['large_max_gain']:.2f} |")
    return "\n".join(out) + "\n"


def plot(objects: pl.DataFrame, path: Path, title: str = "TAQ Figure 12 in simulation: replayed log, 1 Mbit/s") -> None:
    """CDF of per-object time per size bucket and scale: DropTail (dashed), TAQ, TAQ+AC."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buckets = [0, 10_000, 20_000, 100_000]
    scales = objects["scale"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(len(scales), len(buckets), figsize=(4 * len(buckets), 3.6 * len(scales)),
                             sharey=True, squeeze=False)
    for row, scale in zip(axes, scales, strict=True):
        for ax, lo in zip(row, buckets, strict=True):
            for name, style in (("droptail", "--"), ("taq", ":"), ("taq+ac", "-"), ("taq+ac proxy", "-.")):
                group = objects.filter(pl.col("scale") == scale, pl.col("queue") == name, pl.col("size_lo_bytes") == lo)
                if group.height == 0:
                    continue
                times = np.sort(group["time_s"].fill_null(np.inf).to_numpy())
                ax.plot(times, np.arange(1, times.size + 1) / times.size, linestyle=style, label=name)
            hi = BUCKET_EDGES_BYTES[BUCKET_EDGES_BYTES.index(lo) + 1] if lo != BUCKET_EDGES_BYTES[-1] else None
            ax.set_title(f"{scale}: " + (f"{lo // 1000}–{hi // 1000} KB" if hi else f"≥ {lo // 1000} KB"))
            ax.set_xscale("log")
            ax.set_xlabel("time from wanted to done (s)")
            ax.legend(fontsize=7)
        row[0].set_ylabel("CDF over objects")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Both scales over a 1200 s log (600 s with ``quick``); writes taq-fig12.csv (buckets),
    taq-fig12-runs.csv (per run), taq-fig12-tables.md (the page's tables) and a PNG."""
    log_s, duration_s = (600.0, 900.0) if quick else (1200.0, 1800.0)
    objects, buckets, runs = run(log_s=log_s, duration_s=duration_s, seed=seed)
    write_csv(buckets, out / "taq-fig12.csv")
    write_csv(runs, out / "taq-fig12-runs.csv")
    (out / "taq-fig12-tables.md").write_text(markdown(buckets, runs))
    plot(objects, out / "taq-fig12.png")
    return runs.select("scale", "queue", "mean_s", "loss_rate", *PAPER)
