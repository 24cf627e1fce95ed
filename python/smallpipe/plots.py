"""Figures of runs and reproductions (matplotlib, Agg backend: files only, no windows)."""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import polars as pl

from smallpipe import metrics
from smallpipe.result import Result

__all__ = ["plot_fairness_vs_fair_share", "plot_run"]


def plot_run(result: Result, path: str | PathLike[str]) -> Path:
    """Two panels: per-slice Jain index over time, and the CDF of per-flow goodput.

    Writes a PNG to ``path`` and returns it.
    """
    path = Path(path)
    per_slice = metrics.jain_per_slice(result.slices, flows=result.flows)
    goodput = (
        metrics.goodput_bps(result.flows, result.meta["duration_ns"]).get_column("goodput_bps").drop_nulls()
    )

    figure, (fairness_axes, goodput_axes) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    starts_s = per_slice.get_column("start_ns").to_numpy() / 1e9
    run_end_s = result.meta["duration_ns"] / 1e9
    fairness_axes.stairs(per_slice.get_column("jain").to_numpy(), [*starts_s, run_end_s], baseline=None)
    fairness_axes.set(
        xlabel="time (s)", ylabel="Jain index per slice", ylim=(0.0, 1.05), title="Short-term fairness"
    )
    if goodput.len() > 0:
        goodput_axes.ecdf(goodput.to_numpy() / 1e3)
    goodput_axes.set(xlabel="goodput (kbit/s)", ylabel="fraction of flows", title="Per-flow goodput")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_fairness_vs_fair_share(
    runs: pl.DataFrame,
    path: str | PathLike[str],
    *,
    reference: pl.DataFrame | None = None,
) -> Path:
    """The TAQ paper's Figure 2: long- and short-term Jain index against the fair share.

    Arguments:
        runs: one row per run with ``rate_bps``, ``fair_share_bps`` (``rate_bps`` /
            number of flows), ``long_term_jain`` and ``short_term_jain`` (mean
            per-slice index). One pair of lines per bottleneck rate.
        path: the PNG to write.
        reference: the paper's points, same columns, drawn as hollow markers.
    """
    path = Path(path)
    figure, axes = plt.subplots(figsize=(6, 4), layout="constrained")
    for (rate_bps,), group in runs.sort("fair_share_bps").group_by("rate_bps", maintain_order=True):
        fair_share_kbps = group.get_column("fair_share_bps").to_numpy() / 1e3
        label = f"{rate_bps / 1e6:g} Mbit/s"
        (line,) = axes.plot(
            fair_share_kbps, group.get_column("long_term_jain").to_numpy(), label=f"{label} long-term"
        )
        axes.plot(
            fair_share_kbps,
            group.get_column("short_term_jain").to_numpy(),
            linestyle="--",
            color=line.get_color(),
            label=f"{label} short-term",
        )
    if reference is not None:
        reference_kbps = reference.get_column("fair_share_bps").to_numpy() / 1e3
        for column, marker in (("long_term_jain", "o"), ("short_term_jain", "s")):
            axes.scatter(
                reference_kbps,
                reference.get_column(column).to_numpy(),
                marker=marker,
                facecolors="none",
                edgecolors="black",
                label=f"paper, {column.replace('_', ' ')}",
            )
    axes.set(xscale="log", xlabel="ideal per-flow fair share (kbit/s)", ylabel="Jain index", ylim=(0.0, 1.05))
    axes.legend(fontsize="small")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
