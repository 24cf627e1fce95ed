"""Size-aware paper (Tokuda et al.), Figure 14: the modified fairness index against the
number of thresholds n of the simplified method (Section 6.2: one drop probability per
log-spaced interval up to M = 1000 packets), against the per-packet method.

Set-up: the Section 5 network at τ = 1 ms (:mod:`smallpipe.experiments.size_aware_table4`:
30 Mbit/s, 100-packet buffer, 1350 SURGE sessions, 512-byte packets), log-spaced
thresholds, with the paper's Table 3 parameters and with our lower queue thresholds
(10/30 packets) under which the target settles instead of drifting to its ceiling. Each
run's index uses that run's own mean target. The analysis' side (the paper plots one
too) is Jain's index of the analysis' throughput over the ideal for transfer sizes on a
log grid from 1 to 1000 packets, at the same target and RTT_an.

What the paper reports: fairness improves with n and is "sufficiently good" from 3
thresholds on; the "optimum" placement (not reproduced: the paper omits its algorithm)
helps only for small n.
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
    fairness_rows,
    rtt_ms,
    scenario,
)
from smallpipe.models import size_aware as analysis
from smallpipe.result import simulate

__all__ = ["THRESHOLDS", "analysis_fairness", "plot", "reproduce", "run", "with_analysis"]

THRESHOLDS: tuple[int, ...] = (1, 2, 3, 5, 10, 0)
"""Numbers of thresholds; 0 stands for the per-packet method."""

VARIANTS: dict[str, dict[str, Any]] = {"table3": {}, "low_th": LOW_THRESHOLDS}


def analysis_fairness(thresholds: int, target_pkts_per_rtt: float, *, rtt_s: float = rtt_ms(1.0) / 1e3) -> float:
    """The analysis' side of Figure 14: Jain's index of ``f(d)/g(d)`` — the analysis'
    throughput of a ``d``-packet transfer under the method's curve over its ideal — for
    ``d`` on a log grid of 31 points from 1 to 1000 packets (0 thresholds = per packet)."""
    ends, probs = analysis.drop_curve(target_pkts_per_rtt, 1000, thresholds=thresholds, rtt_s=rtt_s)
    curve = np.repeat(probs, np.diff([0, *ends])).tolist()
    sizes = sorted({round(x) for x in np.logspace(0, 3, 31)})
    ratios = [analysis.throughput_pkts_per_rtt(d, curve[:d], rtt_s=rtt_s)
              / analysis.ideal_pkts_per_rtt(d, target_pkts_per_rtt, rtt_s=rtt_s) for d in sizes]
    return metrics.jain(np.array(ratios))


def with_analysis(table: pl.DataFrame) -> pl.DataFrame:
    """Add ``analysis_fairness`` at each run's own mean target."""
    return table.with_columns(analysis_fairness=pl.Series([
        analysis_fairness(n, t) for n, t in zip(table["thresholds"], table["target_pkts_per_rtt"], strict=True)
    ]))


def run(*, thresholds: Sequence[int] = THRESHOLDS, quick: bool = True, seed: int = 1) -> pl.DataFrame:
    """Rows: variant, thresholds (0 = per packet), fairness, target_pkts_per_rtt, utilization, loss_rate."""
    rows = []
    for variant, overrides in VARIANTS.items():
        for n in thresholds:
            result = simulate(scenario("size_aware", 1.0, quick=quick, seed=seed, thresholds=n,
                                       queue_overrides=overrides))
            links = result.links.filter(pl.col("name") == "bottleneck")
            target = float(links["size_aware_mean_target_pkts_per_rtt"][0])
            row = fairness_rows({"size_aware": result}, 1.0, target)[0]
            rows.append({"variant": variant, "thresholds": n, "fairness": row["fairness"],
                         "target_pkts_per_rtt": target, "utilization": row["utilization"],
                         "loss_rate": row["loss_rate"]})
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 14's axes: index against n, the per-packet method as a horizontal line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for variant, label in (("table3", "Table 3 parameters"), ("low_th", "thresholds 10/30")):
        t = table.filter(pl.col("variant") == variant)
        steps = t.filter(pl.col("thresholds") > 0).sort("thresholds")
        (line,) = ax.plot(steps["thresholds"], steps["fairness"], "o-", label=f"simulation, {label}")
        if "analysis_fairness" in t.columns:
            ax.plot(steps["thresholds"], steps["analysis_fairness"], "s--", color=line.get_color(),
                    label=f"analysis, {label}")
        per_packet = t.filter(pl.col("thresholds") == 0)["fairness"]
        if per_packet.len():
            ax.axhline(per_packet[0], color=line.get_color(), linestyle=":", label=f"per packet (sim), {label}")
    ax.set_xlabel("number of thresholds n")
    ax.set_ylabel("modified fairness index")
    ax.set_title("Size-aware Figure 14 (τ = 1 ms)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Both parameter sets, every n (600 s runs; 120 s with ``quick``), as CSV and PNG."""
    table = with_analysis(run(quick=quick, seed=seed))
    write_csv(table, out / "size-aware-fig14.csv")
    plot(table, out / "size-aware-fig14.png")
    return table
