"""A self-contained HTML report of a sweep's results database.

One file, no network: the plots are PNGs embedded as base64 (matplotlib, Agg backend),
the style sheet is inline, and a few lines of inline script only count the images that
decoded (``<body data-images-loaded=N data-images-total=M>``), which the tests read
through a headless browser. Each plot also carries its axes' titles and how its data are
drawn in ``data-axes`` (JSON, read from the matplotlib figure itself), so a test can check
the labels and units without reading pixels.

Contents: the grid (keys and values) and base scenario; for every swept key with more
than one value (except ``seed``), one figure with a panel per summary metric against that
key, one series per combination of the other keys' values (seeds averaged, bars the 95%
Student-t interval of the mean over seeds, clipped to the metric's range): lines over a
numeric key, unconnected points over a categorical one (a discipline, a boolean); when the
grid has several seeds, the table of replications (mean ± 95% interval per combination of
the other keys); the table of points with their summary metrics; the points that failed,
with their errors. Metrics with the same value in every point are listed once, not plotted
or tabled; so are keys with a single value.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.figure import Figure

from smallpipe import store
from smallpipe._smallpipe import __version__
from smallpipe.rundir import replace_atomically
from smallpipe.stats import mean_ci

__all__ = [
    "PLOTTED_METRICS",
    "QUANTITIES",
    "TABLE_METRICS",
    "Quantity",
    "figure_axes",
    "key_figure",
    "key_label",
    "plot_img",
    "render_report",
    "write_report",
]

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
"""Summary metrics drawn against each swept key (those with no value in any point, or the
same value in every point, are left out)."""

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

MISSING = "—"
"""What a cell with no value shows (a metric undefined for the point: no sized flow, say)."""


@dataclass(frozen=True)
class Quantity:
    """How a summary metric is titled and shown: the value in the database times ``scale``
    is shown in ``unit`` (``None``: a count or an index, which has none); a ``fraction``
    lies in [0, 1] in the database, so its confidence interval is clipped there."""

    title: str
    unit: str | None
    scale: float = 1.0
    fraction: bool = False

    @property
    def label(self) -> str:
        return f"{self.title} ({self.unit})" if self.unit else self.title

    def show(self, value: Any) -> str:
        return _format(value * self.scale if isinstance(value, float | int) and not isinstance(value, bool) else value)


QUANTITIES: dict[str, Quantity] = {
    "flows": Quantity("Flows", None),
    "utilization": Quantity("Bottleneck utilization", "%", 100.0, fraction=True),
    "loss_rate": Quantity("Bottleneck loss rate", "%", 100.0, fraction=True),
    "mean_queue_delay_ms": Quantity("Mean queueing delay", "ms"),
    "long_term_jain": Quantity("Long-term Jain index", None, fraction=True),
    "short_term_jain": Quantity("Per-slice Jain index, mean", None, fraction=True),
    "zero_share": Quantity("Flow-slices with no bytes", "%", 100.0, fraction=True),
    "timeouts_per_flow": Quantity("Timeouts per flow", None),
    "retransmits_per_flow": Quantity("Retransmissions per flow", None),
    "mean_goodput_bps": Quantity("Mean per-flow goodput", "kbit/s", 1e-3),
    "fct_median_s": Quantity("Median flow completion time", "s"),
    "fct_p99_s": Quantity("99th-percentile flow completion time", "s"),
    "response_median_ms": Quantity("Median response time", "ms"),
    "response_p99_ms": Quantity("99th-percentile response time", "ms"),
}
"""Every metric the report shows. Goodput switches to Mbit/s when a point reaches 1 Mbit/s
(:func:`_quantity`)."""

KEY_NAMES: dict[str, str] = {
    "link.queue.kind": "Discipline",
    "link.queue.limit_pkts": "Buffer",
    "link.queue.limit_bytes": "Buffer",
    "link.rate_bps": "Bottleneck rate",
    "link.delay_ms": "Bottleneck one-way delay",
    "link.loss": "Random loss probability",
    "tcp.packet_size_bytes": "Packet size",
    "tcp.recovery": "Loss recovery",
    "tcp.min_rto_ms": "Minimum RTO",
    "duration_s": "Simulated time",
    "slice_s": "Fairness slice",
    "seed": "Seed",
}
"""Names of common swept keys on the plots' x axes; other keys keep their own name."""

UNIT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_pkts", "packets"),
    ("_bytes", "bytes"),
    ("_bps", "bit/s"),
    ("_ms", "ms"),
    ("_s", "s"),
)
"""A key's unit, read from its name's suffix (the scenario's fields carry their unit)."""

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; background: #fff; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
div.wide { overflow-x: auto; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; }
td { white-space: nowrap; }
th { background: #f3f3f3; font-weight: 600; } td.text, th.text { text-align: left; }
tr.error td { background: #fde8e8; } td.error { white-space: normal; }
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
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return MISSING
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.4g}"
    return str(value)


def _quantity(metric: str, values: Sequence[float] = ()) -> Quantity:
    """The way ``metric`` is shown; a bit rate in Mbit/s once a value reaches 1 Mbit/s."""
    quantity = QUANTITIES.get(metric, Quantity(metric.replace("_", " "), None))
    if quantity.unit == "kbit/s" and any(v is not None and v >= 1e6 for v in values):
        return Quantity(quantity.title, "Mbit/s", 1e-6, quantity.fraction)
    return quantity


def key_label(key: str) -> str:
    """The x-axis title of a swept key: its name (:data:`KEY_NAMES`, else the key itself)
    and, when its name carries one, its unit: ``link.queue.limit_pkts`` → ``Buffer (packets)``,
    ``tcp.min_rto_ms`` → ``Minimum RTO (ms)``, ``flows.0.count`` → ``Flows in group 0``."""
    unit = next((unit for suffix, unit in UNIT_SUFFIXES if key.endswith(suffix)), None)
    if key in KEY_NAMES:
        name = KEY_NAMES[key]
    elif found := re.fullmatch(r"flows\.(\d+)\.count", key):
        name = f"Flows in group {found.group(1)}"
    else:
        name = key[: -len(next(s for s, u in UNIT_SUFFIXES if u == unit))] if unit else key
    return f"{name} ({unit})" if unit else name


def _decode(value: Any, sql_type: str) -> Any:
    """A key column's value as the grid listed it (JSON columns hold JSON text)."""
    return json.loads(value) if sql_type == "JSON" and value is not None else value


def constant_metrics(points: pl.DataFrame, metrics: Sequence[str]) -> dict[str, Any]:
    """The metrics among ``metrics`` that have one and the same value in every point of
    ``points`` that has one (and at least one point has): their value. A constant is no
    outcome to compare (the flow count of a grid that does not sweep it, a loss of 0)."""
    constant = {}
    for metric in metrics:
        values = points.get_column(metric).drop_nulls()
        if values.len() and values.n_unique() == 1:
            constant[metric] = values[0]
    return constant


def _drawn_connected(axes: Any) -> bool:
    """Whether any series on ``axes`` is drawn as a line through its points."""
    return any(
        line.get_linestyle() not in ("None", "none", "", " ") and len(line.get_xdata()) > 1
        for line in axes.get_lines()
    )


def _is_number(text: str) -> bool:
    try:
        float(text.replace("\N{MINUS SIGN}", "-"))
    except ValueError:
        return False
    return True


def _categorical(axes: Any) -> bool:
    """Whether the x ticks of ``axes`` are labelled with names (a discipline), not numbers."""
    return any(label.get_text() and not _is_number(label.get_text()) for label in axes.get_xticklabels())


def figure_axes(figure: Figure) -> list[dict[str, Any]]:
    """Per visible panel of ``figure`` (a right-hand axis counts as one, titled after its
    host): its ``title``, ``xlabel``, ``ylabel``, the x axis' kind (``categorical`` when its ticks are labelled with names) and whether a series is
    drawn as a line (``connected``), read from the matplotlib objects."""
    panels = []
    for axes in figure.get_axes():
        if not axes.get_visible() or not axes.axison:
            continue
        title, xlabel = axes.get_title(), axes.get_xlabel()
        # A right-hand axis (twinx) shares its host's panel, title and x axis.
        host = next((h for h in axes.get_shared_x_axes().get_siblings(axes)
                     if h is not axes and h.get_position().bounds == axes.get_position().bounds and h.get_title()), None)
        if not title and host is not None:
            title, xlabel = f"{host.get_title()} (right axis)", host.get_xlabel()
        panels.append({
            "title": title,
            "xlabel": xlabel,
            "ylabel": axes.get_ylabel(),
            "x": "categorical" if _categorical(axes) else "numeric",
            "connected": _drawn_connected(axes),
        })
    return panels


def _png(figure: Figure, dpi: int = 90) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def key_figure(points: pl.DataFrame, key: str, sweep: dict[str, Any], metrics: list[str]) -> Figure:
    """A figure with one panel per metric against ``key``, one series per combination of
    the other swept keys (``seed`` averaged; error bars: the 95% Student-t interval of the
    mean over seeds, clipped to the metric's range, none for a single seed). Over a numeric
    key the series are lines; over a categorical one (a discipline, a boolean) unconnected
    points, side by side. The y axes start at zero (every summary metric is non-negative;
    a fraction's axis stops at 100%), so noise in the third decimal is not blown up to
    the panel's height. The legend sits below the panels, off the data."""
    types, grid_values = sweep["types"], sweep["keys"]
    others = [k for k, values in grid_values.items() if k not in (key, SEED_KEY) and len(values) > 1]
    numeric_x = types[key] in NUMERIC_TYPES
    x_order = [json.dumps(v, sort_keys=True) for v in grid_values[key]]
    positive = numeric_x and all(v > 0 for v in grid_values[key])
    log_x = positive and max(grid_values[key]) / min(grid_values[key]) >= 20

    columns = 3 if len(metrics) > 4 else len(metrics)
    rows = math.ceil(len(metrics) / columns)
    figure, axes_grid = plt.subplots(
        rows, columns, figsize=(4.4 * columns, 3.1 * rows + 0.4), layout="constrained", squeeze=False
    )
    if others:
        lines = points.select(others).unique(maintain_order=True).sort(others).iter_rows()
    else:
        lines = iter([()])
    line_keys = list(lines)
    # Categorical x: the series of one category side by side, within ±0.3 of its tick.
    dodge = 0.6 / len(line_keys) if len(line_keys) > 1 else 0.0
    handles: dict[str, Any] = {}
    for panel, metric in enumerate(metrics):
        axes = axes_grid[panel // columns][panel % columns]
        quantity = _quantity(metric, points.get_column(metric).drop_nulls().to_list())
        high = 1.0 if quantity.fraction else math.inf
        peak = 0.0
        for index, line in enumerate(line_keys):
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
                xs = [x + (index - (len(line_keys) - 1) / 2) * dodge for x in stats.get_column("_order").to_list()]
            means = stats.get_column("mean").to_list()
            halves = stats.get_column("half").to_list()
            below = [min(h, m) for m, h in zip(means, halves, strict=True)]  # the metric is ≥ 0
            above = [min(h, max(0.0, high - m)) for m, h in zip(means, halves, strict=True)]
            scale = quantity.scale
            label = ", ".join(_format(_decode(v, types[o])) for o, v in zip(others, line, strict=True))
            drawn = axes.errorbar(
                xs, [m * scale for m in means], yerr=[[b * scale for b in below], [a * scale for a in above]],
                marker="o", markersize=4, capsize=3, linestyle="-" if numeric_x else "none",
                color=f"C{index % 10}", label=label or None,
            )
            handles.setdefault(label, drawn)
            peak = max(peak, *((m + a) * scale for m, a in zip(means, above, strict=True)))
        axes.set_title(quantity.title, fontsize=10)
        axes.set_ylabel(quantity.label, fontsize=8)
        axes.set_xlabel(key_label(key), fontsize=9)
        axes.tick_params(labelsize=8)
        axes.grid(alpha=0.3)
        if log_x:
            axes.set_xscale("log")
        if numeric_x and len(grid_values[key]) <= 8:  # the grid's own values, not 10^1, 10^2
            axes.set_xticks(grid_values[key], [_format(v) for v in grid_values[key]])
            axes.minorticks_off()
        if not numeric_x:
            axes.set_xticks(range(len(x_order)), [_format(_decode(v, "JSON")) for v in x_order])
            axes.set_xlim(-0.5, len(x_order) - 0.5)
        top = 1.1 * peak if peak > 0 else 1.0  # room above the highest bar's cap
        axes.set_ylim(0.0, min(top, 1.05 * quantity.scale) if quantity.fraction else top)
    for panel in range(len(metrics), rows * columns):
        axes_grid[panel // columns][panel % columns].set_visible(False)
    if others and any(handles):
        figure.legend(
            list(handles.values()), list(handles), loc="outside lower center", fontsize=8,
            ncols=min(len(handles), 3), title=", ".join(key_label(o) for o in others), title_fontsize=8,
        )
    seeds = len(grid_values.get(SEED_KEY, [None]))
    figure.suptitle(
        f"Summary metrics against {key_label(key)}"
        + (f" (mean over {seeds} seeds, bars: 95% CI)" if seeds > 1 else ""),
        fontsize=11,
    )
    return figure


def plot_img(figure: Figure, alt: str, dpi: int = 90) -> str:
    """The ``<img>`` of ``figure`` (closed afterwards), with its panels' axis titles in
    ``data-axes`` (:func:`figure_axes`)."""
    try:
        axes = json.dumps(figure_axes(figure))
        png = base64.b64encode(_png(figure, dpi)).decode()
    finally:
        plt.close(figure)
    return f'<img class="plot" alt="{_e(alt)}" data-axes="{_e(axes)}" src="data:image/png;base64,{png}">'


def _constants_note(constant: dict[str, Any]) -> list[str]:
    """The line that names the metrics with one value in every point, with that value."""
    if not constant:
        return []
    named = []
    for metric, value in constant.items():
        quantity = _quantity(metric, [value])
        named.append(" ".join(filter(None, (quantity.title, quantity.show(value), quantity.unit))))
    note = f"The same in every point, so not plotted or tabled: {'; '.join(named)}."
    return [f'<p class="muted" id="constants">{_e(note)}</p>']


def _th(metric: str, values: Sequence[Any] = ()) -> str:
    return f'<th data-metric="{_e(metric)}">{_e(_quantity(metric, values).label)}</th>'


def _with_ci(mean: float, half: float) -> str:
    """``mean ± half`` with the half-width to 2 significant digits and the mean to the same
    decimal place (the digits past it are noise): ``0.9987 ± 0.0015``, ``785.7 ± 1.0``."""
    if half <= 0:
        return _format(mean)
    decimals = min(8, max(0, 1 - math.floor(math.log10(half))))
    return f"{mean:.{decimals}f} ± {half:.{decimals}f}"


def _replications(ok: pl.DataFrame, sweep: dict[str, Any], metrics: list[str], keys: list[str]) -> list[str]:
    """The HTML of the replications table: per combination of ``keys`` (the swept keys
    other than ``seed`` with several values), the number of ok seeds and each metric's mean
    ± 95% Student-t half-width (also in ``data-mean`` / ``data-ci95``, at full precision, in
    the database's units); a metric whose seeds all agree shows its value alone (± 0 says
    nothing), and one whose seeds agree in every combination is left out."""
    types = sweep["types"]
    # A metric no seed changes (the flow count when the grid sets it) is a setting: no column.
    determined = [m for m in metrics if keys and ok.group_by(keys).agg(pl.col(m).drop_nulls().n_unique().alias("n"))
                  .get_column("n").max() == 1]
    metrics = [m for m in metrics if m not in determined]
    if keys:
        groups = ok.group_by(keys).agg(pl.len().alias("_seeds"), *(pl.col(m) for m in metrics)).sort(keys)
    else:  # only seeds vary: one row
        groups = ok.select(*(pl.col(m).implode() for m in metrics), _seeds=pl.len())
    parts = [
        "<h2>Replications: mean ± 95% CI over seeds</h2>",
        ('<p class="muted">Student-t interval of the mean over the ok seeds of each combination; a single seed, '
         "or seeds that all agree, give no interval.</p>"),
        '<div class="wide"><table id="replications"><tr>',
        *(f'<th class="text">{_e(key_label(k))}</th>' for k in keys),
        "<th>Seeds</th>",
        *(_th(m, ok.get_column(m).drop_nulls().to_list()) for m in metrics),
        "</tr>",
    ]
    if determined:
        parts.insert(2, f'<p class="muted" id="determined">The same over the seeds of every combination, so '
                        f"not averaged: {_e(', '.join(_quantity(m).title for m in determined))} (see the points).</p>")
    quantities = {m: _quantity(m, ok.get_column(m).drop_nulls().to_list()) for m in metrics}
    for row in groups.iter_rows(named=True):
        cells = [f'<td class="text">{_e(_format(_decode(row[k], types[k])))}</td>' for k in keys]
        cells.append(f"<td>{row['_seeds']}</td>")
        for metric in metrics:
            values = [v for v in row[metric] if v is not None]
            mean, half = mean_ci(values)
            scale = quantities[metric].scale
            agree = len(set(values)) <= 1
            shown = quantities[metric].show(mean) if math.isnan(half) or agree else _with_ci(mean * scale, half * scale)
            cells.append(f'<td data-metric="{_e(metric)}" data-mean="{mean!r}" data-ci95="{half!r}">{_e(shown)}</td>')
        parts.append(f"<tr>{''.join(cells)}</tr>")
    parts.append("</table></div>")
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
    varied = [k for k in keys if len(grid_values[k]) > 1]  # a single-valued key is in the grid table only
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
        '<table><tr><th class="text">Key</th><th class="text">Type</th><th class="text">Values</th></tr>',
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

    shown = [m for m in dict.fromkeys([*PLOTTED_METRICS, *TABLE_METRICS]) if m in ok.columns]
    constant = constant_metrics(ok, shown) if ok.height > 1 else {}
    metrics = [m for m in PLOTTED_METRICS if m in shown and m not in constant
               and ok.get_column(m).drop_nulls().len() > 0]
    plotted_keys = [k for k in varied if k != SEED_KEY]
    if ok.height == 0 or not metrics:
        parts.append("<p>No point has finished yet: nothing to plot.</p>")
    elif not plotted_keys:
        parts.append("<p>Only seeds vary in this grid: see the table of points.</p>")
    else:
        for key in plotted_keys:
            parts.append(f"<h3><code>{_e(key)}</code></h3>")
            parts.append(plot_img(key_figure(ok, key, sweep, metrics), f"summary metrics against {key}"))
    parts.append('<p class="muted" id="image-status"></p>')
    parts += _constants_note(constant)

    table_metrics = [m for m in TABLE_METRICS if m in points.columns and m not in constant
                     and points.get_column(m).drop_nulls().len() > 0]
    if undefined := [m for m in TABLE_METRICS if m in points.columns and points.get_column(m).drop_nulls().len() == 0]:
        parts.append(f'<p class="muted" id="undefined">Not defined for any point (no such flows), so not tabled: '
                     f"{_e(', '.join(_quantity(m).title for m in undefined))}.</p>")
    group_keys = [k for k in varied if k != SEED_KEY]
    if len(grid_values.get(SEED_KEY, [])) > 1 and ok.height:
        parts += _replications(
            ok, sweep, [m for m in table_metrics if ok.get_column(m).drop_nulls().len() > 0], group_keys
        )
    parts += [
        "<h2>Points</h2>",
        '<div class="wide"><table id="points"><tr>',
        '<th class="text">Point</th>',
        *(f'<th class="text">{_e(key_label(k))}</th>' for k in varied),
        '<th class="text">Status</th>',
        *(_th(m, points.get_column(m).drop_nulls().to_list()) for m in table_metrics),
        "<th>Wall time (s)</th></tr>",
    ]
    quantities = {m: _quantity(m, points.get_column(m).drop_nulls().to_list()) for m in table_metrics}
    for row in points.iter_rows(named=True):
        css = ' class="error"' if row["status"] != "ok" else ""
        cells = [f'<td class="text"><code>{_e(row["point_id"])}</code></td>']
        cells += [f'<td class="text">{_e(_format(_decode(row[k], types[k])))}</td>' for k in varied]
        cells.append(f'<td class="text">{_e(row["status"])}</td>')
        cells += [f"<td>{_e(quantities[m].show(row[m]))}</td>" for m in table_metrics]
        cells.append(f"<td>{_e(_format(row['wall_seconds']))}</td>")
        parts.append(f"<tr{css}>{''.join(cells)}</tr>")
    parts.append("</table></div>")

    parts.append("<h2>Failed points</h2>")
    if failed.height == 0:
        parts.append("<p>No point failed.</p>")
    else:
        parts.append(
            '<table id="failed"><tr><th class="text">Point</th><th class="text">Overrides</th>'
            '<th class="text">Error</th></tr>'
        )
        for row in failed.iter_rows(named=True):
            parts.append(
                f'<tr class="error"><td class="text"><code>{_e(row["point_id"])}</code></td>'
                f'<td class="text"><code>{_e(_format(row["overrides"]))}</code></td>'
                f'<td class="text error">{_e(_format(row["error"]))}</td></tr>'
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
