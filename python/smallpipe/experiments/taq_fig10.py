"""TAQ paper, Figure 10: download time against flow length for short flows among long ones.

What the paper reports (Section 5.3): 32 short flows of variable length join 50 long flows on
a 1 Mbit/s bottleneck (20 kbit/s fair share). Under TAQ the short flows' download times are
predictable and "vary roughly linearly with the number of packets of the flow"; they vary
more "once the flow blurs the boundary of a short flow".

Set-up (choices where the paper is silent): the Figure 2 dumbbell (200 ms RTT, 500-byte
packets, NewReno, IW 2, one RTT = 50 packets of buffer); 50 bulk flows start in the first
second; the 32 short flows are 2, 4, ..., 64 packets long (460 payload bytes each) and start
uniformly between 60 s and 240 s, once the long flows are in steady state; runs of 400 s.
Download time is the connection's time from its first SYN to its last byte. The full run
repeats the experiment over four seeds (128 short flows) to steady the fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import NS2_TCP, taq_dumbbell
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["DISCIPLINES", "SHORT_PACKETS", "fit", "plot", "reproduce", "run"]

LONG_FLOWS = 50
RATE_BPS = 1_000_000
SHORT_PACKETS: tuple[int, ...] = tuple(range(2, 65, 2))
PAYLOAD_BYTES = NS2_TCP["packet_size_bytes"] - 40
SHORT_START_S = (60.0, 240.0)
DISCIPLINES: tuple[str, ...] = ("droptail", "taq", "red", "sfq", "fq", "fq_codel", "host_fq")


def scenario(kind: str, *, duration_s: float, seed: int) -> Scenario:
    base = taq_dumbbell(flows=LONG_FLOWS, rate_bps=RATE_BPS, duration_s=duration_s, seed=seed, queue={"kind": kind})
    short = [{"app": "transfer", "count": 1, "size_bytes": packets * PAYLOAD_BYTES, "rtt_ms": 200.0,
              "start_s": list(SHORT_START_S)} for packets in SHORT_PACKETS]
    return base.with_overrides({"flows": [*base["flows"], *short]})


def fit(objects: pl.DataFrame) -> dict[str, float]:
    """Least-squares line of download time on packets, its R², and how far the points stray
    from it (median and worst absolute residual), over finished short flows."""
    x = objects["packets"].to_numpy().astype(float)
    y = objects["download_s"].to_numpy()
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    r2 = 1.0 - float((residual**2).sum()) / float(((y - y.mean()) ** 2).sum())
    return {"slope_s_per_pkt": float(slope), "intercept_s": float(intercept), "r2": r2,
            "residual_median_s": float(np.median(np.abs(residual))), "residual_max_s": float(np.abs(residual).max())}


def run(*, disciplines: Sequence[str] = DISCIPLINES, seeds: Sequence[int] = (1,),
        duration_s: float = 400.0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Returns (per short flow: discipline, seed, packets, download_s, timeouts; per discipline: the fit)."""
    parts = []
    for kind in disciplines:
        for seed in seeds:
            flows = simulate(scenario(kind, duration_s=duration_s, seed=seed)).flows
            short = flows.filter(pl.col("size_bytes").is_not_null())
            parts.append(short.select(
                pl.lit(kind).alias("discipline"), pl.lit(seed).alias("seed"),
                packets=(pl.col("size_bytes") // PAYLOAD_BYTES),
                download_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9,
                timeouts=pl.col("timeouts") + pl.col("syn_timeouts"),
            ))
    objects = pl.concat(parts)
    rows = []
    for (kind,), group in objects.group_by("discipline", maintain_order=True):
        done = group.filter(pl.col("download_s").is_not_null())
        small = done.filter(pl.col("packets") <= 16)
        rows.append({"discipline": kind, "short_flows": group.height, "unfinished": group.height - done.height,
                     **fit(done),
                     "median_s": done["download_s"].median(), "max_s": done["download_s"].max(),
                     "max_s_upto_16_pkts": small["download_s"].max(),
                     "share_with_timeout": (group["timeouts"] > 0).mean()})
    return objects, pl.DataFrame(rows)


def plot(objects: pl.DataFrame, summary: pl.DataFrame, path: Path) -> None:
    """Download time against packets: DropTail and TAQ side by side, with their fitted lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in ("droptail", "taq", "fq_codel", "host_fq") if k in summary["discipline"].to_list()]
    fig, axes = plt.subplots(1, len(kinds), figsize=(3.6 * len(kinds), 3.8), sharey=True, squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        points = objects.filter(pl.col("discipline") == kind, pl.col("download_s").is_not_null())
        line = summary.filter(pl.col("discipline") == kind).row(0, named=True)
        ax.scatter(points["packets"], points["download_s"], s=8)
        xs = np.array([0, max(SHORT_PACKETS)])
        ax.plot(xs, line["slope_s_per_pkt"] * xs + line["intercept_s"], color="grey",
                label=f"fit, R² = {line['r2']:.2f}")
        ax.set_title(kind)
        ax.set_xlabel("flow length (packets)")
        ax.legend(fontsize=7, loc="upper left")
    axes[0][0].set_ylabel("download time (s)")
    fig.suptitle("TAQ Figure 10: 32 short flows among 50 long flows, 1 Mbit/s")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Four seeds from ``seed`` (one with ``quick``), written as CSV and PNG."""
    objects, summary = run(seeds=(seed,) if quick else tuple(range(seed, seed + 4)))
    write_csv(summary, out / "taq-fig10.csv")
    write_csv(objects, out / "taq-fig10-flows.csv")
    plot(objects, summary, out / "taq-fig10.png")
    return summary
