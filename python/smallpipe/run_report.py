"""A self-contained HTML report of one run folder (``smallpipe report RUN_DIR``), in the
manner of the sweep report (report.py): one file, PNGs embedded as base64, the same style
sheet and image counter. Contents: the scenario, the links table, the run's figure
(run.png's panels: time series, fairness, goodput), the per-flow delay and loss table of
the sampled connections (FlowMonitor's columns) and their RTT and queueing-delay
histograms."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import tempfile
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from smallpipe._smallpipe import __version__
from smallpipe.report import _COUNT_IMAGES, _STYLE, _e, _format
from smallpipe.result import FLOW_DELAY_COLUMNS, Result
from smallpipe.rundir import replace_atomically
from smallpipe.summary import discipline

__all__ = ["plot_delay_histograms", "render_run_report", "write_run_report"]

LINK_COLUMNS = ("name", "rate_bps", "utilization", "loss_rate", "mean_queue_delay_ms", "queue_delay_p99_ms",
                "mean_backlog_pkts", "dropped_pkts")
FLOW_COLUMNS = ("flow_id", "app", "rtt_ms", "bytes_delivered", "retransmits", "timeouts", *FLOW_DELAY_COLUMNS)

PER_OCTAVE = 8
"""Histogram buckets per doubling (crates/sim/src/flow_delays.rs)."""

_HISTOGRAMS = (("rtt", "RTT samples"), ("queue_delay", "Queueing delay at the bottleneck"))


def plot_delay_histograms(result: Result) -> bytes:
    """A PNG of each sampled connection's RTT and queueing-delay histograms: the fraction
    of its samples in each bucket (8 per doubling, empty ones drawn at zero) on a log time
    axis; the first queueing-delay bucket holds the delays under 1 µs."""
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
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


def _run_figure(result: Result, name: str) -> bytes:
    """run.png's figure, drawn afresh (plot_run writes a file: a temporary one)."""
    from smallpipe.plots import plot_run

    with tempfile.TemporaryDirectory(prefix="smallpipe-report-") as tmp:
        return plot_run(result, Path(tmp) / "run.png", name=name).read_bytes()


def _table(frame: pl.DataFrame, columns: tuple[str, ...]) -> list[str]:
    shown = [c for c in columns if c in frame.columns]
    parts = ["<table><tr>", *(f'<th class="text">{_e(c)}</th>' if c in ("name", "app") else f"<th>{_e(c)}</th>"
                              for c in shown), "</tr>"]
    for row in frame.select(shown).iter_rows(named=True):
        cells = [f'<td class="text">{_e(row[c])}</td>' if c in ("name", "app") else f"<td>{_e(_format(row[c]))}</td>"
                 for c in shown]
        parts.append(f"<tr>{''.join(cells)}</tr>")
    parts.append("</table>")
    return parts


def _img(png: bytes, alt: str) -> str:
    return f'<img class="plot" alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


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
        parts += ["<h2>Over time and per flow</h2>", _img(_run_figure(result, name), "the run's figure")]
    else:
        parts.append("<p>A streamed run: its per-flow tables are on disk in parts; no figure drawn.</p>")
    parts.append("<h2>Per-flow delay and loss</h2>")
    if result.flow_delays.is_empty():
        parts.append("<p>This run recorded no per-flow delays (run with <code>smallpipe run</code>, "
                     "which records the first 8 connections' unless <code>--series-flows 0</code>).</p>")
    else:
        sampled = result.flows.filter(pl.col("rtt_samples").is_not_null())
        parts.append(
            f'<p class="muted">{sampled.height} sampled connections. Delays in ms: RTT samples timed '
            "from outside the sender; queueing delay and jitter (FlowMonitor's mean |Δ delay| of "
            "consecutive packets) at the bottleneck; loss_rate: packets lost there over packets offered.</p>"
        )
        parts += _table(sampled, FLOW_COLUMNS)
        parts.append(_img(plot_delay_histograms(result), "per-flow RTT and queueing-delay histograms"))
    parts.append('<p class="muted" id="image-status"></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_run_report(run_dir: str | PathLike[str], out: str | PathLike[str]) -> Path:
    """Render the report of the run folder ``run_dir`` to the HTML file ``out``."""
    out = Path(out)
    page = render_run_report(run_dir)
    replace_atomically(out, lambda path: path.write_text(page, encoding="utf-8"))
    return out
