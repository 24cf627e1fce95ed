"""Figures of runs and reproductions (matplotlib, Agg backend: files only, no windows)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.figure import Figure

from smallpipe import metrics
from smallpipe.result import Result
from smallpipe.summary import SIZED_APPS, discipline

__all__ = ["plot_fairness_vs_fair_share", "plot_run", "stamping_figures"]


def plot_run(result: Result, path: str | PathLike[str], *, name: str = "run") -> Path:
    """Per-slice Jain index over time and the CDF of per-flow goodput, and for
    interactive flows the CDF of response times, for sized transfers their completion
    time against size and the CDF of each user's longest hang. Titled with ``name`` (the
    scenario) and the discipline.

    Writes a PNG to ``path`` and returns it.
    """
    path = Path(path)
    per_slice = metrics.jain_per_slice(result.slices, flows=result.flows)
    goodput = (
        metrics.goodput_bps(result.flows, result.meta["duration_ns"]).get_column("goodput_bps").drop_nulls()
    )

    response_s = result.bursts.get_column("response_ns").drop_nulls().to_numpy() / 1e9
    sized = result.flows.filter(
        pl.col("app").is_in(SIZED_APPS), pl.col("size_bytes").is_not_null(), pl.col("end_ns").is_not_null()
    )
    hangs_s = result.units.filter(pl.col("app").is_in(SIZED_APPS)).get_column("longest_hang_ns").to_numpy() / 1e9
    extra = [panel for panel, data in (("response", response_s.size), ("fct", sized.height), ("hang", hangs_s.size)) if data]
    figure, axes = plt.subplots(1, 2 + len(extra), figsize=(5 * (2 + len(extra)), 4), layout="constrained")
    fairness_axes, goodput_axes = axes[0], axes[1]
    figure.suptitle(f"{name} · {discipline(result.scenario)}")
    for panel, panel_axes in zip(extra, axes[2:], strict=True):
        if panel == "response":
            panel_axes.ecdf(response_s)
            panel_axes.set(xlabel="response time (s)", ylabel="fraction of bursts", title="Interactive response")
        elif panel == "hang":
            panel_axes.ecdf(hangs_s)
            panel_axes.set(xlabel="longest hang (s)", ylabel="fraction of users", title="User-perceived hangs")
        else:
            fct_s = (sized.get_column("end_ns") - sized.get_column("start_ns")).to_numpy() / 1e9
            panel_axes.scatter(sized.get_column("size_bytes").to_numpy(), fct_s, s=6)
            panel_axes.set(xscale="log", yscale="log", xlabel="size (bytes)", ylabel="FCT (s)", title="Completion time")
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


@contextmanager
def stamping_figures(note: str) -> Iterator[None]:
    """Every figure saved inside the block carries ``note`` in its bottom-left corner: a
    reproduction run as a variant (``--set``) is marked on its plots, whose titles are the
    baseline's, not only in its CSV and folder name."""
    original = Figure.savefig

    def savefig(self: Figure, *args: Any, **kwargs: Any) -> Any:
        if not any(text.get_text() == note for text in self.texts):
            self.text(0.005, 0.005, note, fontsize="small", color="firebrick", ha="left", va="bottom")
        return original(self, *args, **kwargs)

    Figure.savefig = savefig  # type: ignore[method-assign]
    try:
        yield
    finally:
        Figure.savefig = original  # type: ignore[method-assign]
