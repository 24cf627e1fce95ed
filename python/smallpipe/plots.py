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
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from smallpipe import metrics
from smallpipe.result import Result
from smallpipe.summary import SIZED_APPS, discipline

__all__ = [
    "bottleneck_series",
    "flow_goodput_series",
    "plot_fairness_vs_fair_share",
    "plot_run",
    "plot_runs",
    "run_figure",
    "runs_figure",
    "stamping_figures",
]

BOTTLENECK = "bottleneck"
"""The forward (data) direction of the bottleneck: the link the series panels show."""


def bottleneck_series(result: Result) -> pl.DataFrame:
    """The forward bottleneck's ``link_series`` per interval: ``time_s`` (the interval's
    end), ``backlog_pkts`` (at that time), ``queue_delay_ms`` (mean of the packets dequeued
    in it; null when none was), ``throughput_mbps`` (bytes dequeued over the interval),
    ``dropped_pkts`` and ``marked_pkts``. Empty when the run recorded no link series."""
    rows = result.link_series.filter(pl.col("link") == BOTTLENECK).sort("time_ns")
    interval_ns = pl.col("time_ns").diff().fill_null(pl.col("time_ns"))
    return rows.select(
        (pl.col("time_ns") / 1e9).alias("time_s"),
        "backlog_pkts",
        pl.when(pl.col("dequeued_pkts") > 0)
        .then(pl.col("queue_delay_ns_sum") / pl.col("dequeued_pkts") / 1e6)
        .alias("queue_delay_ms"),
        (pl.col("dequeued_bytes") * 8e3 / interval_ns).alias("throughput_mbps"),
        "dropped_pkts",
        "marked_pkts",
    )


def flow_goodput_series(result: Result) -> pl.DataFrame:
    """Per sampled connection and interval: ``flow_id``, ``time_s`` (the interval's end) and
    ``goodput_mbps`` (bytes newly acknowledged over the interval), with ``cwnd_bytes`` and
    ``srtt_ms`` at that time. Empty when the run sampled no sender."""
    rows = result.flow_series.sort("flow_id", "time_ns")
    return rows.select(
        "flow_id",
        (pl.col("time_ns") / 1e9).alias("time_s"),
        (pl.col("bytes_acked").diff().over("flow_id") * 8e3 / pl.col("time_ns").diff().over("flow_id")).alias(
            "goodput_mbps"
        ),
        "cwnd_bytes",
        (pl.col("srtt_ns") / 1e6).alias("srtt_ms"),
    ).drop_nulls("goodput_mbps")


def _draw_series(axes: Any, result: Result, label: str | None = None, drops: bool = True) -> None:
    """Queue length, queueing delay and throughput of the bottleneck over time on three
    axes (one line each, labelled ``label`` when several runs share the axes); with
    ``drops``, the drops and ECN marks per interval on the queue panel's right axis."""
    queue_axes, delay_axes, rate_axes = axes
    link = bottleneck_series(result)
    time_s = link.get_column("time_s").to_numpy()
    (line,) = queue_axes.plot(time_s, link.get_column("backlog_pkts").to_numpy(), label=label, linewidth=1)
    delay = link.get_column("queue_delay_ms").to_numpy()
    delay_axes.plot(time_s, delay, color=line.get_color(), label=label, linewidth=1)
    rate = link.get_column("throughput_mbps").to_numpy()
    rate_axes.plot(time_s, rate, color=line.get_color(), linewidth=1, label=label)
    interval_s = _interval_s(result)
    if drops:
        counts = queue_axes.twinx()
        counts.plot(time_s, link.get_column("dropped_pkts").to_numpy(), color="firebrick", linewidth=0.6,
                    alpha=0.7, label="drops")
        per = f"per {interval_s * 1e3:g} ms"
        if link.get_column("marked_pkts").sum() > 0:
            counts.plot(time_s, link.get_column("marked_pkts").to_numpy(), color="darkorange", linewidth=0.6,
                        alpha=0.7, label="ECN marks")
            # The axis title names the colours: a legend would sit on the data.
            counts.set_ylabel(f"drops (red), ECN marks (orange) (packets {per})", color="firebrick")
        else:
            counts.set_ylabel(f"drops (red; packets {per})", color="firebrick")
        most = link.select(pl.max_horizontal(pl.col("dropped_pkts").max(), pl.col("marked_pkts").max())).item()
        counts.set_ylim(0, max(1, most or 0) * 1.05)  # no drops: an axis of whole packets, not of 0.05
    queue_axes.set(xlabel="time (s)", ylabel="queue length (packets)", title="Bottleneck queue")
    delay_axes.set(xlabel="time (s)", ylabel="queueing delay (ms)",
                   title=f"Queueing delay (mean per {interval_s * 1e3:g} ms)")
    rate_axes.set(xlabel="time (s)", ylabel="throughput (Mbit/s)", title="Bottleneck throughput")


def _series_limits(axes: Any) -> None:
    """The series panels' y axes from 0, once every run is drawn (a limit set earlier would
    stop the axes growing to a later run's data). An empty queue gets an axis of whole
    packets, not of 0.05 of one; a run without queueing delay an axis of 0 to 1 ms."""
    queue_axes, delay_axes, _ = axes
    for a in axes:
        a.set_ylim(bottom=0)
    queue_axes.set_ylim(top=max(1.0, queue_axes.get_ylim()[1]))
    if not any((np.nan_to_num(np.asarray(line.get_ydata(), dtype=float)) > 0).any() for line in delay_axes.get_lines()):
        delay_axes.set_ylim(top=1.0)


def _interval_s(result: Result) -> float:
    return float((result.scenario.to_dict().get("trace") or {}).get("interval_s", 0.1))


def _draw_flow_goodput(axes: Any, result: Result) -> None:
    """Each sampled connection's goodput over time, averaged over 1 s (a flow of a few
    packets per interval would otherwise jump between zero and one packet's rate)."""
    window = max(1, round(1.0 / _interval_s(result)))
    flows = flow_goodput_series(result)
    for (flow_id,), rows in flows.group_by("flow_id", maintain_order=True):
        smooth = rows.get_column("goodput_mbps").rolling_mean(window, min_samples=1) * 1e3
        axes.plot(rows.get_column("time_s").to_numpy(), smooth.to_numpy(), linewidth=0.9, label=f"flow {flow_id}")
    axes.set(xlabel="time (s)", ylabel="goodput (kbit/s, 1 s mean)", title="Per-flow goodput over time")
    axes.set_ylim(bottom=0)
    if flows.height:
        axes.legend(fontsize="x-small", ncols=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def plot_run(result: Result, path: str | PathLike[str], *, name: str = "run") -> Path:
    """:func:`run_figure` written as a PNG to ``path``; returns ``path``."""
    path = Path(path)
    figure = run_figure(result, name=name)
    try:
        figure.savefig(path, dpi=120)
    finally:
        plt.close(figure)
    return path


def run_figure(result: Result, *, name: str = "run") -> Figure:
    """With time series (``link_series``, recorded by `smallpipe run` by default) a first
    row of the bottleneck's queue length, queueing delay and throughput over time, with
    each sampled connection's goodput. Then per-slice Jain index over time and the CDF of
    per-flow goodput, and for interactive flows the CDF of response times, for sized
    transfers their completion time against size and the CDF of each user's longest hang.
    Titled with ``name`` (the scenario) and the discipline. A run of one flow has no
    fairness or goodput-spread panel (its Jain index is 1 by definition).
    """
    per_slice = metrics.jain_per_slice(result.slices, flows=result.flows)
    goodput = (
        metrics.goodput_bps(result.flows, result.meta["duration_ns"]).get_column("goodput_bps").drop_nulls()
    )

    response_s = result.bursts.get_column("response_ns").drop_nulls().to_numpy() / 1e9
    sized = result.flows.filter(
        pl.col("app").is_in(SIZED_APPS), pl.col("size_bytes").is_not_null(), pl.col("end_ns").is_not_null()
    )
    hangs_s = result.units.filter(pl.col("app").is_in(SIZED_APPS)).get_column("longest_hang_ns").to_numpy() / 1e9
    panels = [panel for panel, data in (("response", response_s.size), ("fct", sized.height), ("hang", hangs_s.size)) if data]
    series = not result.link_series.filter(pl.col("link") == BOTTLENECK).is_empty()
    if not result.flow_series.is_empty():
        panels.insert(0, "flow_goodput")
    # Fairness across flows and the spread of their goodput need two flows: with one, the
    # Jain index is 1 by definition and the CDF a single step.
    several = result.flows.height > 1
    if several or not (series or panels):
        panels[:0] = ["fairness", "goodput"]
    columns = max(len(panels), 3 if series else 0)
    rows = int(series) + int(bool(panels))
    figure, grid = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), layout="constrained",
                                squeeze=False)
    if series:
        _draw_series(grid[0][:3], result)
        _series_limits(grid[0][:3])
        for unused in grid[0][3:]:
            unused.set_axis_off()
    axes = grid[-1] if panels else []
    for unused in axes[len(panels):]:
        unused.set_axis_off()
    one_flow = "" if several else " · one flow: no fairness or goodput-spread panels"
    figure.suptitle(f"{name} · {discipline(result.scenario)}{one_flow}")
    for panel, panel_axes in zip(panels, axes, strict=False):
        if panel == "flow_goodput":
            _draw_flow_goodput(panel_axes, result)
        elif panel == "fairness":
            starts_s = per_slice.get_column("start_ns").to_numpy() / 1e9
            run_end_s = result.meta["duration_ns"] / 1e9
            panel_axes.stairs(per_slice.get_column("jain").to_numpy(), [*starts_s, run_end_s], baseline=None)
            panel_axes.set(xlabel="time (s)", ylabel="Jain index per slice", ylim=(0.0, 1.05),
                           title="Short-term fairness")
        elif panel == "goodput":
            if goodput.len() > 0:
                panel_axes.ecdf(goodput.to_numpy() / 1e3)
            panel_axes.set(xlabel="goodput (kbit/s)", ylabel="fraction of flows", title="Per-flow goodput")
        elif panel == "response":
            panel_axes.ecdf(response_s)
            panel_axes.set(xlabel="response time (s)", ylabel="fraction of bursts", title="Interactive response")
        elif panel == "hang":
            panel_axes.ecdf(hangs_s)
            panel_axes.set(xlabel="longest hang (s)", ylabel="fraction of users", title="User-perceived hangs")
        else:
            fct_s = (sized.get_column("end_ns") - sized.get_column("start_ns")).to_numpy() / 1e9
            panel_axes.scatter(sized.get_column("size_bytes").to_numpy(), fct_s, s=6)
            panel_axes.set(xscale="log", yscale="log", xlabel="size (bytes)", ylabel="FCT (s)", title="Completion time")
    return figure


def plot_runs(results: list[tuple[str, Result]], path: str | PathLike[str]) -> Path:
    """:func:`runs_figure` written as a PNG to ``path``; returns ``path``.

    Raises:
        ValueError: a run has no time series (see :func:`runs_figure`).
    """
    path = Path(path)
    figure = runs_figure(results)
    try:
        figure.savefig(path, dpi=120)
    finally:
        plt.close(figure)
    return path


def runs_figure(results: list[tuple[str, Result]]) -> Figure:
    """Several runs' bottleneck series overlaid, one colour per run (labelled with its
    name): queue length, queueing delay and throughput over time, each axis spanning
    every run's data.

    Raises:
        ValueError: a run has no time series (run before they were recorded by default,
            or with ``--series-flows 0``).
    """
    missing = [name for name, r in results if r.link_series.filter(pl.col("link") == BOTTLENECK).is_empty()]
    if missing:
        raise ValueError(f"no bottleneck time series in {', '.join(missing)} (link_series.parquet); "
                         "re-run with `smallpipe run` (it records them unless --series-flows 0) or --trace-links")
    figure, axes = plt.subplots(1, 3, figsize=(15, 4), layout="constrained")
    for name, result in results:
        _draw_series(axes, result, label=f"{name} · {discipline(result.scenario)}", drops=False)
    _series_limits(axes)
    axes[2].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.suptitle(" vs ".join(name for name, _ in results))
    return figure


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
