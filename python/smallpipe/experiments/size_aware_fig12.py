"""Size-aware paper (Tokuda et al.), Figure 12: the modified fairness index against the
propagation delay of the sender's access link, connections of many RTTs sharing router A,
for TailDrop, RED and the size-aware method with RTT_an = 40, 135 and 230 ms (Section 6.1).

Set-up (Section 6.1, else Section 5 as :mod:`smallpipe.experiments.size_aware_table4`
builds it): bottleneck delay τ = 5 ms; the sender access links' delay varies from 10 to
105 ms in 5 ms steps, so the connections' propagation RTTs are 40 to 230 ms in 10 ms steps,
all in one run; RTT_an is the smallest (40 ms), the mean (135 ms) or the largest (230 ms)
of them. One point per access delay: the index over the connections of that delay.

Ours: the users of Table 4's runs (1350: 67 per access delay, 1340 in all), 300 s runs
(quick: 120 s), connections started in the first 20 s left out. RTTs come from the access
delay as ``2·(a + 5 + 5)`` ms. The method runs twice per RTT_an: with Table 3's queue
thresholds (25/75 packets), under which its target drifts to its ceiling and it acts like
TailDrop (Table 4 on docs/reproductions/size-aware.md), and with Table 4's 10/30 variant.
As Table 4 indexes every discipline at the method's target, each flow's ideal uses one
common target: ``fairness`` the mean target of the Table 3 run at RTT_an = 135 ms,
``fairness_low_th_target`` that of the 10/30 run at 135 ms.

What the paper reports: the method is fairer than TailDrop and RED at every access delay
and whatever RTT_an, so it is insensitive to RTT_an (the figure gives no table).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.size_aware_table4 import (
    LOW_THRESHOLDS,
    MSS_BYTES,
    data_flows,
    mean_target,
    scenario,
)
from smallpipe.result import Result, simulate

__all__ = ["ACCESS_DELAYS_MS", "METHODS", "RTT_ANS_MS", "TAU_MS", "plot", "reproduce", "rtt_of_access_ms", "run"]

TAU_MS = 5.0
ACCESS_DELAYS_MS: tuple[float, ...] = tuple(float(a) for a in range(10, 106, 5))
RTT_ANS_MS: tuple[float, ...] = (40.0, 135.0, 230.0)
COMMON_TARGET_RTT_AN_MS = 135.0
"""The run whose mean target every curve's ideal uses."""
FULL_S, QUICK_S = 300.0, 120.0


def rtt_of_access_ms(access_ms: float) -> float:
    """Propagation RTT of a connection whose sender link has delay ``access_ms``: 2·(a + τ + 5 ms)."""
    return 2.0 * (access_ms + TAU_MS + 5.0)


METHODS: dict[str, dict[str, Any]] = {
    "droptail": {},
    "red": {},
    **{f"size_aware_{rtt:g}": {"rtt_an_ns": int(rtt * 1e6)} for rtt in RTT_ANS_MS},
    **{f"size_aware_low_th_{rtt:g}": {"rtt_an_ns": int(rtt * 1e6)} | LOW_THRESHOLDS for rtt in RTT_ANS_MS},
}
"""Run name → queue overrides: the method's RTT_an, and for ``low_th`` our lower queue
thresholds (10/30 packets, Table 4's variant)."""
TARGETS = {"fairness": f"size_aware_{COMMON_TARGET_RTT_AN_MS:g}",
           "fairness_low_th_target": f"size_aware_low_th_{COMMON_TARGET_RTT_AN_MS:g}"}
"""Index column → the run whose mean target its ideal uses."""


def run(*, access_delays_ms: Sequence[float] = ACCESS_DELAYS_MS, quick: bool = True, seed: int = 1) -> pl.DataFrame:
    """Rows: method, access_ms, rtt_ms, connections, fairness (at the Table 3 method's target),
    fairness_low_th_target (at the low-threshold method's), target_pkts_per_rtt (the run's own
    mean target; null for TailDrop and RED), utilization, loss_rate."""
    rtts = [rtt_of_access_ms(a) for a in access_delays_ms]
    results: dict[str, Result] = {}
    for name, overrides in METHODS.items():
        method = "size_aware" if name.startswith("size_aware") else name
        sc = scenario(method, TAU_MS, quick=quick, seed=seed, queue_overrides=overrides, rtts_ms=rtts)
        results[name] = simulate(sc.with_overrides({"duration_s": QUICK_S if quick else FULL_S}))
    targets = {column: mean_target(results[name]) for column, name in TARGETS.items()}
    rows = []
    for name, result in results.items():
        flows = data_flows(result)
        bottleneck = result.links.filter(pl.col("name") == "bottleneck")
        for g, (a, rtt) in enumerate(zip(access_delays_ms, rtts, strict=True)):
            group = flows.filter(pl.col("group") == g)
            rows.append({
                "method": name, "access_ms": a, "rtt_ms": rtt, "connections": group.height,
                **{column: metrics.modified_fairness_index(group, mss_bytes=MSS_BYTES, iw_pkts=1,
                                                           target_pkts_per_rtt=target)
                   for column, target in targets.items()},
                "target_pkts_per_rtt": mean_target(result) if name.startswith("size_aware") else None,
                **{f"{column}_target_pkts_per_rtt": target for column, target in targets.items()},
                "utilization": bottleneck["utilization"][0], "loss_rate": bottleneck["loss_rate"][0],
            })
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 12's axes: fairness index against the access link's delay, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, (column, variant) in zip(axes, (("fairness", "size_aware_"), ("fairness_low_th_target", "size_aware_low_th_")),
                                     strict=True):
        labels = {"droptail": "Taildrop", "red": "RED",
                  **{f"{variant}{rtt:g}": f"Our method {rtt:g} [ms]" for rtt in RTT_ANS_MS}}
        for name, label in labels.items():
            t = table.filter(pl.col("method") == name).sort("access_ms")
            ax.plot(t["access_ms"], t[column], "o-", label=label)
        target = metrics.to_float(table[f"{column}_target_pkts_per_rtt"][0])
        which = "Table 3 parameters" if column == "fairness" else "queue thresholds 10/30"
        ax.set_title(f"{which}, index at target {target:.1f} pkts/RTT")
        ax.set_xlabel("propagation delay of the sender's access link (ms)")
        ax.set_xticks(np.arange(10, 106, 15))
        ax.legend(fontsize=8)
    axes[0].set_ylabel("modified fairness index")
    axes[0].set_ylim(0.0, 1.0)
    fig.suptitle(f"Size-aware Figure 12: connections of RTT 40–230 ms, τ = {TAU_MS:g} ms")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Eight runs of 300 s (120 s with ``quick``), as CSV and PNG."""
    table = run(quick=quick, seed=seed)
    write_csv(table, out / "size-aware-fig12.csv")
    plot(table, out / "size-aware-fig12.png")
    return table
