"""A self-contained HTML report of one run folder (``smallpipe report RUN_DIR``), in the
manner of the sweep report (report.py): one file, PNGs embedded as base64 with their axes'
titles in ``data-axes``, the same style sheet and image counter. Contents: the scenario,
the links table, the run's figure (run.png's panels: time series, fairness, goodput), the
per-flow delay and loss table of the sampled connections (FlowMonitor's columns) and their
RTT and queueing-delay histograms. Table columns are titled with their units."""

from __future__ import annotations

import datetime as dt
import json
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from smallpipe._smallpipe import __version__
from smallpipe.plots import run_figure
from smallpipe.report import _COUNT_IMAGES, _STYLE, Quantity, _e, _format, plot_img
from smallpipe.result import FLOW_DELAY_COLUMNS, Result
from smallpipe.rundir import replace_atomically
from smallpipe.summary import discipline

__all__ = ["delay_histograms_figure", "render_run_report", "write_run_report"]

LINK_COLUMNS = ("name", "rate_bps", "utilization", "loss_rate", "mean_queue_delay_ms", "queue_delay_p99_ms",
                "mean_backlog_pkts", "dropped_pkts")
FLOW_COLUMNS = ("flow_id", "app", "rtt_ms", "bytes_delivered", "retransmits", "timeouts", *FLOW_DELAY_COLUMNS)

COLUMNS: dict[str, Quantity] = {
    "name": Quantity("Link", None),
    "rate_bps": Quantity("Rate", "Mbit/s", 1e-6),
    "utilization": Quantity("Utilization", "%", 100.0),
    "loss_rate": Quantity("Loss", "%", 100.0),
    "mean_queue_delay_ms": Quantity("Mean queueing delay", "ms"),
    "queue_delay_p99_ms": Quantity("p99 queueing delay", "ms"),
    "mean_backlog_pkts": Quantity("Mean backlog", "packets"),
    "dropped_pkts": Quantity("Drops", "packets"),
    "flow_id": Quantity("Flow", None),
    "app": Quantity("App", None),
    "rtt_ms": Quantity("Propagation RTT", "ms"),
    "bytes_delivered": Quantity("Delivered", "kB", 1e-3),
    "retransmits": Quantity("Retransmissions", None),
    "timeouts": Quantity("Timeouts", None),
    "rtt_samples": Quantity("RTT samples", None),
    "rtt_min_ms": Quantity("Min RTT", "ms"),
    "rtt_mean_ms": Quantity("Mean RTT", "ms"),
    "rtt_p99_ms": Quantity("p99 RTT", "ms"),
    "queue_delay_mean_ms": Quantity("Mean queueing delay", "ms"),
    "jitter_ms": Quantity("Jitter", "ms"),
}
"""The tables' column titles and units (the database's value times ``scale``)."""

TEXT_COLUMNS = ("name", "app")

PER_OCTAVE = 8
"""Histogram buckets per doubling (crates/sim/src/flow_delays.rs)."""

_HISTOGRAMS = (("rtt", "RTT samples"), ("queue_delay", "Queueing delay at the bottleneck"))


def delay_histograms_figure(result: Result) -> Figure:
    """Each sampled connection's RTT and queueing-delay histograms: the fraction of its
    samples in each bucket (8 per doubling, empty ones drawn at zero) on a log time axis;
    the first queueing-delay bucket holds the delays under 1 µs."""
    figure, axes = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    hist = result.flow_delay_hist.sort("flow_id", "upper_ns")
    for panel, (metric, title) in zip(axes, _HISTOGRAMS, strict=True):
        rows = hist.filter(pl.col("metric") == metric)
        for (flow_id,), buckets in rows.group_by("flow_id", maintain_order=True):
            index = np.rint(PER_OCTAVE * np.log2(buckets.get_column("upper_ns").to_numpy() / 1e3)).astype(int)
            counts = np.zeros(index.max() - index.min() + 1)
            counts[index - index.min()] = buckets.get_column("count").to_numpy()
            edges_ms = 1e-3 * 2.0 ** (np.arange(index.min() - 1, index.max() + 1) / PER_OCTAVE)
            panel.stairs(counts / counts.sum(), edges_ms, linewidth=1, label=f"flow {flow_id}")
        panel.set(xscale="log", xlabel=f"{'RTT' if metric == 'rtt' else 'queueing delay'} (ms, log scale)",
                  ylabel="fraction of samples" if metric == "rtt" else "fraction of packets", title=title)
        panel.set_ylim(bottom=0)
    if hist.height:
        axes[1].legend(fontsize="x-small", ncols=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure


def _table(frame: pl.DataFrame, columns: tuple[str, ...]) -> list[str]:
    """An HTML table of ``columns`` of ``frame``, titled with units (:data:`COLUMNS`; the
    column's own name in ``data-column``)."""
    shown = [c for c in columns if c in frame.columns]

    def th(column: str) -> str:
        css = ' class="text"' if column in TEXT_COLUMNS else ""
        return f'<th{css} data-column="{_e(column)}">{_e(COLUMNS[column].label)}</th>'

    parts = ['<div class="wide"><table><tr>', *(th(c) for c in shown), "</tr>"]
    for row in frame.select(shown).iter_rows(named=True):
        cells = [f'<td class="text">{_e(_format(row[c]))}</td>' if c in TEXT_COLUMNS
                 else f"<td>{_e(COLUMNS[c].show(row[c]))}</td>" for c in shown]
        parts.append(f"<tr>{''.join(cells)}</tr>")
    parts.append("</table></div>")
    return parts


def render_run_report(run_dir: str | PathLike[str]) -> str:
    """The HTML text of the report of the run folder ``run_dir``.

    Raises:
        FileNotFoundError: ``run_dir`` is not a whole run folder (no ``meta.json``).
    """
    run_dir = Path(run_dir)
    result = Result.read(run_dir)
    name = run_dir.name
    meta: dict[str, Any] = result.meta
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>smallpipe run: {_e(name)}</title>",
        f"<style>{_STYLE}</style>",
        f"<script>{_COUNT_IMAGES}</script>",
        "</head><body>",
        f"<h1>smallpipe run: {_e(name)}</h1>",
        (
            f'<p class="muted">folder {_e(run_dir)} · discipline {_e(discipline(result.scenario))} · '
            f"{meta['duration_ns'] / 1e9:g} s simulated · seed {_e(meta['seed'])}"
            f"{' · partial (interrupted)' if meta.get('partial') else ''} · "
            f"report by smallpipe {_e(__version__)} on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC</p>"
        ),
        "<details><summary>scenario</summary>",
        f"<pre>{_e(json.dumps(result.scenario.to_dict(), indent=2))}</pre></details>",
        "<h2>Links</h2>",
        *_table(result.links, LINK_COLUMNS),
    ]
    if result.stream_dir is None:
        parts += ["<h2>Over time and per flow</h2>", plot_img(run_figure(result, name=name), "the run's figure", dpi=100)]
    else:
        parts.append("<p>A streamed run: its per-flow tables are on disk in parts; no figure drawn.</p>")
    parts.append("<h2>Per-flow delay and loss</h2>")
    if result.flow_delays.is_empty():
        parts.append("<p>This run recorded no per-flow delays (run with <code>smallpipe run</code>, "
                     "which records the first 8 connections' unless <code>--series-flows 0</code>).</p>")
    else:
        sampled = result.flows.filter(pl.col("rtt_samples").is_not_null())
        parts.append(
            f'<p class="muted">{sampled.height} sampled connection{"s" if sampled.height != 1 else ""}. '
            "RTT samples are timed from outside the sender; queueing delay and jitter (FlowMonitor's "
            "mean |Δ delay| of consecutive packets) are at the bottleneck; loss: packets lost there over packets offered.</p>"
        )
        parts += _table(sampled, FLOW_COLUMNS)
        parts.append(plot_img(delay_histograms_figure(result), "per-flow RTT and queueing-delay histograms", dpi=100))
    parts.append('<p class="muted" id="image-status"></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_run_report(run_dir: str | PathLike[str], out: str | PathLike[str]) -> Path:
    """Render the report of the run folder ``run_dir`` to the HTML file ``out``."""
    out = Path(out)
    page = render_run_report(run_dir)
    replace_atomically(out, lambda path: path.write_text(page, encoding="utf-8"))
    return out
