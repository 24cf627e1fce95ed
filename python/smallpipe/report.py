"""A self-contained HTML report of a sweep's results database.

One file, no network: the plots are PNGs embedded as base64 (matplotlib, Agg backend),
the style sheet is inline, and a few lines of inline script only count the images that
decoded (``<body data-images-loaded=N data-images-total=M>``), which the tests read
through a headless browser.

Contents: the grid (keys and values) and base scenario; for every swept key with more
than one value (except ``seed``), one figure with a panel per summary metric against that
key, one line per combination of the other keys' values (seeds averaged, bars the 95%
Student-t interval of the mean over seeds); when the grid has several seeds, the table of
replications (mean ± 95% interval per combination of the other keys); the table of points
with their summary metrics; the points that failed, with their errors.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import json
import math
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import polars as pl

from smallpipe import store
from smallpipe._smallpipe import __version__
from smallpipe.rundir import replace_atomically
from smallpipe.stats import mean_ci

__all__ = ["PLOTTED_METRICS", "TABLE_METRICS", "plot_key", "render_report", "write_report"]

PLOTTED_METRICS: tuple[str, ...] = (
    "utilization",
    "loss_rate",
    "mean_queue_delay_ms",
    "long_term_jain",
    "short_term_jain",
    "zero_share",
    "timeouts_per_flow",
    "retransmits_per_flow",
    "mean_goodput_bps",
    "fct_median_s",
    "fct_p99_s",
    "response_median_ms",
    "response_p99_ms",
)
"""Summary metrics drawn against each swept key (those with no value in any point are left out)."""

TABLE_METRICS: tuple[str, ...] = (
    "flows",
    "utilization",
    "loss_rate",
    "mean_queue_delay_ms",
    "long_term_jain",
    "short_term_jain",
    "zero_share",
    "timeouts_per_flow",
    "fct_median_s",
    "fct_p99_s",
    "response_median_ms",
)
"""Summary metrics shown in the points table (all of them are in the database)."""

SEED_KEY = "seed"
"""Points that differ only in this key are averaged in the plots."""

NUMERIC_TYPES = ("BIGINT", "DOUBLE")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
tr.error td { background: #fde8e8; }
img.plot { max-width: 100%; display: block; margin: 0.5em 0 1.5em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.8em; }
.muted { color: #666; }
"""

_COUNT_IMAGES = """
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.querySelectorAll("img.plot"));
  var loaded = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.dataset.imagesLoaded = String(loaded);
  document.body.dataset.imagesTotal = String(images.length);
  document.getElementById("image-status").textContent = loaded + " of " + images.length + " plots rendered";
});
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _format(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.4g}"
    return str(value)


def _label(key: str, value: Any) -> str:
    return f"{key}={json.dumps(value) if not isinstance(value, str) else value}"


def _decode(value: Any, sql_type: str) -> Any:
    """A key column's value as the grid listed it (JSON columns hold JSON text)."""
    return json.loads(value) if sql_type == "JSON" and value is not None else value


def plot_key(points: pl.DataFrame, key: str, sweep: dict[str, Any], metrics: list[str]) -> bytes:
    """A PNG with one panel per metric against ``key``, one line per combination of the
    other swept keys (``seed`` averaged; error bars: the 95% Student-t interval of the mean
    over seeds, none for a single seed)."""
    types, grid_values = sweep["types"], sweep["keys"]
    others = [k for k, values in grid_values.items() if k not in (key, SEED_KEY) and len(values) > 1]
    numeric_x = types[key] in NUMERIC_TYPES
    x_order = [json.dumps(v, sort_keys=True) for v in grid_values[key]]
    positive = numeric_x and all(v > 0 for v in grid_values[key])
    log_x = positive and max(grid_values[key]) / min(grid_values[key]) >= 20

    columns = 3 if len(metrics) > 4 else len(metrics)
    rows = math.ceil(len(metrics) / columns)
    figure, axes_grid = plt.subplots(
        rows, columns, figsize=(4.2 * columns, 3.0 * rows), layout="constrained", squeeze=False
    )
    if others:
        lines = points.select(others).unique(maintain_order=True).sort(others).iter_rows()
    else:
        lines = iter([()])
    line_keys = list(lines)
    for panel, metric in enumerate(metrics):
        axes = axes_grid[panel // columns][panel % columns]
        for line in line_keys:
            subset = points
            for other, value in zip(others, line, strict=True):
                subset = subset.filter(pl.col(other) == value)
            stats = subset.filter(pl.col(metric).is_not_null()).group_by(key).agg(pl.col(metric).alias("seeds"))
            if stats.height == 0:
                continue
            intervals = [mean_ci(values) for values in stats.get_column("seeds").to_list()]
            stats = stats.with_columns(
                mean=pl.Series([mean for mean, _ in intervals], dtype=pl.Float64),
                half=pl.Series([0.0 if math.isnan(half) else half for _, half in intervals], dtype=pl.Float64),
            )
            if numeric_x:
                stats = stats.sort(key)
                xs = stats.get_column(key).to_list()
            else:
                decoded = [json.dumps(_decode(v, types[key]), sort_keys=True) for v in stats.get_column(key)]
                stats = stats.with_columns(_order=pl.Series([x_order.index(d) for d in decoded])).sort("_order")
                xs = stats.get_column("_order").to_list()
            means = stats.get_column("mean").to_numpy()
            errors = stats.get_column("half").to_numpy()
            label = ", ".join(_label(o, _decode(v, types[o])) for o, v in zip(others, line, strict=True))
            axes.errorbar(xs, means, yerr=errors, marker="o", markersize=4, capsize=3, label=label or None)
        axes.set_title(metric.replace("_", " "), fontsize=10)
        axes.set_xlabel(key, fontsize=9)
        axes.tick_params(labelsize=8)
        axes.grid(alpha=0.3)
        if log_x:
            axes.set_xscale("log")
        if not numeric_x:
            axes.set_xticks(range(len(x_order)), [_format(_decode(v, "JSON")) for v in x_order])
        if panel == 0 and others:
            axes.legend(fontsize=7)
    for panel in range(len(metrics), rows * columns):
        axes_grid[panel // columns][panel % columns].set_visible(False)
    seeds = len(grid_values.get(SEED_KEY, [None]))
    figure.suptitle(
        f"summary metrics against {key}" + (f" (mean over {seeds} seeds, bars: 95% CI)" if seeds > 1 else ""),
        fontsize=11,
    )
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return buffer.getvalue()


def _replications(ok: pl.DataFrame, sweep: dict[str, Any], metrics: list[str]) -> list[str]:
    """The HTML of the replications table: per combination of the keys other than
    ``seed``, the number of ok seeds and each metric's mean ± 95% Student-t half-width
    (also in ``data-mean`` / ``data-ci95``, at full precision)."""
    types = sweep["types"]
    others = [k for k in sweep["keys"] if k != SEED_KEY]
    if others:
        groups = ok.group_by(others).agg(pl.len().alias("_seeds"), *(pl.col(m) for m in metrics)).sort(others)
    else:  # only seeds vary: one row
        groups = ok.select(*(pl.col(m).implode() for m in metrics), _seeds=pl.len())
    parts = [
        "<h2>Replications: mean ± 95% CI over seeds</h2>",
        '<p class="muted">Student-t interval of the mean over the ok seeds of each combination; a single seed gives no interval.</p>',
        '<table id="replications"><tr>',
        *(f"<th><code>{_e(k)}</code></th>" for k in others),
        "<th>seeds</th>",
        *(f"<th>{_e(m)}</th>" for m in metrics),
        "</tr>",
    ]
    for row in groups.iter_rows(named=True):
        cells = [f"<td>{_e(_format(_decode(row[k], types[k])))}</td>" for k in others]
        cells.append(f"<td>{row['_seeds']}</td>")
        for metric in metrics:
            mean, half = mean_ci(row[metric])
            shown = _format(mean) if math.isnan(half) else f"{_format(mean)} ± {_format(half)}"
            cells.append(f'<td data-metric="{_e(metric)}" data-mean="{mean!r}" data-ci95="{half!r}">{_e(shown)}</td>')
        parts.append(f"<tr>{''.join(cells)}</tr>")
    parts.append("</table>")
    return parts


def render_report(db: str | PathLike[str]) -> str:
    """The HTML text of the report of the results database ``db``.

    Raises:
        FileNotFoundError: ``db`` does not exist.
        store.StoreError: ``db`` is not a sweep database.
    """
    db = Path(db)
    sweep = store.read_sweep(db)
    points = store.read_points(db)
    types, grid_values = sweep["types"], sweep["keys"]
    keys = list(grid_values)
    ok = points.filter(pl.col("status") == "ok")
    failed = points.filter(pl.col("status") == "error")
    grid_size = math.prod(len(v) for v in grid_values.values())

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>smallpipe sweep: {_e(Path(sweep['grid_file']).name)}</title>",
        f"<style>{_STYLE}</style>",
        f"<script>{_COUNT_IMAGES}</script>",
        "</head><body>",
        f"<h1>smallpipe sweep: {_e(Path(sweep['grid_file']).name)}</h1>",
        (
            f'<p class="muted">database {_e(db)} · grid file {_e(sweep["grid_file"])} · '
            f"report by smallpipe {_e(__version__)} on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC</p>"
        ),
        (
            f"<p><b>{ok.height}</b> points ok, <b>{failed.height}</b> failed, "
            f"{points.height} in the database; the grid has {grid_size} points.</p>"
        ),
        "<h2>Grid</h2>",
        '<table><tr><th class="text">key</th><th class="text">type</th><th class="text">values</th></tr>',
        *(
            f'<tr><td class="text"><code>{_e(k)}</code></td><td class="text">{_e(types[k])}</td>'
            f'<td class="text">{_e(", ".join(json.dumps(v) for v in grid_values[k]))}</td></tr>'
            for k in keys
        ),
        "</table>",
        "<details><summary>base scenario</summary>",
        f"<pre>{_e(json.dumps(sweep['base'], indent=2))}</pre></details>",
        "<h2>Summary metrics against each swept key</h2>",
    ]

    metrics = [m for m in PLOTTED_METRICS if m in ok.columns and ok.get_column(m).drop_nulls().len() > 0]
    plotted_keys = [k for k in keys if k != SEED_KEY and len(grid_values[k]) > 1]
    if ok.height == 0 or not metrics:
        parts.append("<p>No point has finished yet: nothing to plot.</p>")
    elif not plotted_keys:
        parts.append("<p>Only seeds vary in this grid: see the table of points.</p>")
    else:
        for key in plotted_keys:
            png = base64.b64encode(plot_key(ok, key, sweep, metrics)).decode()
            parts.append(f"<h3><code>{_e(key)}</code></h3>")
            parts.append(f'<img class="plot" alt="summary metrics against {_e(key)}" src="data:image/png;base64,{png}">')
    parts.append('<p class="muted" id="image-status"></p>')

    table_metrics = [m for m in TABLE_METRICS if m in points.columns]
    if len(grid_values.get(SEED_KEY, [])) > 1 and ok.height:
        parts += _replications(ok, sweep, [m for m in table_metrics if ok.get_column(m).drop_nulls().len() > 0])
    parts += [
        "<h2>Points</h2>",
        "<table><tr>",
        '<th class="text">point_id</th>',
        *(f"<th><code>{_e(k)}</code></th>" for k in keys),
        '<th class="text">status</th>',
        *(f"<th>{_e(m)}</th>" for m in table_metrics),
        "<th>wall s</th></tr>",
    ]
    for row in points.iter_rows(named=True):
        css = ' class="error"' if row["status"] != "ok" else ""
        cells = [f'<td class="text"><code>{_e(row["point_id"])}</code></td>']
        cells += [f"<td>{_e(_format(_decode(row[k], types[k])))}</td>" for k in keys]
        cells.append(f'<td class="text">{_e(row["status"])}</td>')
        cells += [f"<td>{_e(_format(row[m]))}</td>" for m in table_metrics]
        cells.append(f"<td>{_e(_format(row['wall_seconds']))}</td>")
        parts.append(f"<tr{css}>{''.join(cells)}</tr>")
    parts.append("</table>")

    parts.append("<h2>Failed points</h2>")
    if failed.height == 0:
        parts.append("<p>None.</p>")
    else:
        parts.append(
            '<table id="failed"><tr><th class="text">point_id</th><th class="text">overrides</th>'
            '<th class="text">error</th></tr>'
        )
        for row in failed.iter_rows(named=True):
            parts.append(
                f'<tr class="error"><td class="text"><code>{_e(row["point_id"])}</code></td>'
                f'<td class="text"><code>{_e(row["overrides"])}</code></td>'
                f'<td class="text">{_e(row["error"])}</td></tr>'
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(db: str | PathLike[str], out: str | PathLike[str]) -> Path:
    """Render the report of ``db`` to the HTML file ``out`` and return its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    page = render_report(db)
    replace_atomically(out, lambda path: path.write_text(page, encoding="utf-8"))
    return out
