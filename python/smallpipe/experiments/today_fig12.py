"""TAQ paper, Figure 12 in simulation on today's TCP: does TAQ's admission control still cut
web download times over DropTail when the clients run Linux CUBIC or Linux BBR (v1)?

Set-up: the runs of :func:`smallpipe.experiments.taq_fig12.run` (a synthetic 1200 s access
log replayed over 1 Mbit/s with one RTT of buffer, 2 clients x 4 connections at the paper's
scale and 50 x 4 at the stress scale, SYN retries raised to 20) for DropTail, TAQ and TAQ with
admission control at its defaults, once as they are (ns-2-like NewReno) and once under each
of ``tcp.stack = "linux"`` with ``tcp.congestion = "cubic"`` and ``"bbr"``, applied as
``smallpipe reproduce --set`` does: the stack then decides every knob it names (docs/tcp.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments import taq_fig12
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import overriding

__all__ = ["QUEUES", "TCPS", "plot", "reproduce", "run"]

QUEUES: tuple[str, ...] = ("droptail", "taq", "taq+ac")
TCPS: dict[str, Mapping[str, Any]] = {
    "paper": {},
    "linux-cubic": {"tcp.stack": "linux", "tcp.congestion": "cubic"},
    "linux-bbr": {"tcp.stack": "linux", "tcp.congestion": "bbr"},
}
"""Each TCP's overrides of the replay scenario ("paper": none, the ns-2-like NewReno)."""


def run(*, tcps: Sequence[str] = tuple(TCPS), queues: Sequence[str] = QUEUES, log_s: float = 1200.0,
        duration_s: float = 1800.0, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`taq_fig12.run`'s per-run rows (with DropTail's time over each queue's) and its
    per-bucket rows, once per TCP, each with a ``tcp`` column first."""
    runs, buckets = [], []
    for name in tcps:
        if name not in TCPS:
            raise ValueError(f"tcps: {name!r} is not a TCP of this figure; expected one of {', '.join(TCPS)}")
        with overriding(TCPS[name]):
            _, per_bucket, per_run = taq_fig12.run(queues=queues, log_s=log_s, duration_s=duration_s, seed=seed)
        runs.append(per_run.select(pl.lit(name).alias("tcp"), pl.all()))
        buckets.append(per_bucket.select(pl.lit(name).alias("tcp"), pl.all()))
    return pl.concat(runs), pl.concat(buckets)


def plot(runs: pl.DataFrame, path: Path) -> None:
    """Per scale: DropTail's median download time of short (0-10 KB) objects over each
    queue's, bars per queue, grouped by TCP (above 1: faster than DropTail)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scales = list(dict.fromkeys(runs["scale"]))
    tcps = list(dict.fromkeys(runs["tcp"]))
    kinds = [k for k in dict.fromkeys(runs["queue"]) if k != "droptail"]
    fig, axes = plt.subplots(1, len(scales), figsize=(5.5 * len(scales), 4), squeeze=False)
    width = 0.8 / max(1, len(kinds))
    for ax, scale in zip(axes[0], scales, strict=True):
        for offset, kind in enumerate(kinds):
            rows = runs.filter(pl.col("scale") == scale, pl.col("queue") == kind)
            values = [rows.filter(pl.col("tcp") == t)["short_median_gain"].mean() for t in tcps]
            ax.bar([i + (offset - (len(kinds) - 1) / 2) * width for i in range(len(tcps))], values, width=width,
                   label=kind)
        ax.axhline(1.0, color="grey", linestyle=":")
        ax.set_xticks(range(len(tcps)), tcps)
        ax.set_yscale("log")
        ax.set_title(f"{scale} scale: short objects, DropTail median / queue's")
        ax.legend(fontsize=7)
    fig.suptitle("TAQ Figure 12 (simulation) on today's TCP, 1 Mbit/s")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """A 1200 s log simulated for 1800 s (quick: 600 s and 900 s), written as today-fig12.csv
    (per run), today-fig12-buckets.csv and a PNG."""
    log_s, duration_s = (600.0, 900.0) if quick else (1200.0, 1800.0)
    runs, buckets = run(log_s=log_s, duration_s=duration_s, seed=seed)
    write_csv(runs, out / "today-fig12.csv")
    write_csv(buckets, out / "today-fig12-buckets.csv")
    plot(runs, out / "today-fig12.png")
    return runs.select("tcp", "scale", "queue", "mean_s", "loss_rate", *taq_fig12.PAPER)
