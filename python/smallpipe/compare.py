"""Compare queue disciplines on one scenario over replications: mean ± 95% CI per metric
and overlaid curves with confidence bands.

Every discipline runs the same scenario over the same seeds; the runs are points of a
sweep over ``link.queue.kind`` × ``seed`` (see :mod:`smallpipe.sweep`), so they run in
parallel, land in a DuckDB store beside the Parquet folders, and a re-run skips the points
already done. The metrics shown depend on the scenario's workload (``docs/compare.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import numpy.typing as npt
import polars as pl

from smallpipe import metrics, store
from smallpipe._smallpipe import __version__
from smallpipe.result import Result
from smallpipe.rundir import replace_atomically
from smallpipe.scenario import Scenario, check_simulable
from smallpipe.stats import mean_ci, paired_t_p, sign_test_p
from smallpipe.sweep import (
    Grid,
    Point,
    ProgressCallback,
    SweepOutcome,
    point_id,
    run_sweep,
    summarize,
)

__all__ = [
    "HANG_THRESHOLD_S",
    "METRICS",
    "CompareError",
    "Comparison",
    "Metric",
    "Plan",
    "compare_point_id",
    "plan_comparison",
    "plot_comparison",
    "run_compare",
    "switch_queue",
    "workload_metrics",
]

KIND_KEY = "link.queue.kind"
SEED_KEY = "seed"

HANG_THRESHOLD_S = 20.0
"""A unit *hangs* when none of its open connections receives data for longer than this
(the TAQ paper's user-perceived hang, §2.3, with its 20 s threshold)."""

SIZED_APPS = frozenset({"transfer", "session", "web", "poisson", "replay"})
"""Apps whose flows have a size, so a completion time."""


class CompareError(ValueError):
    """The comparison asked for is invalid (a discipline or seed listed twice)."""


@dataclass(frozen=True)
class Metric:
    """A compared metric: its label and how a value is shown (``value * scale``, ``spec``)."""

    label: str
    scale: float
    spec: str

    def show(self, value: float) -> str:
        return "n/a" if math.isnan(value) else format(value * self.scale, self.spec)


METRICS: dict[str, Metric] = {
    "goodput_bps": Metric("goodput Mbit/s", 1e-6, ".3f"),
    "utilization": Metric("utilization %", 100.0, ".1f"),
    "loss_rate": Metric("loss %", 100.0, ".2f"),
    "short_term_jain": Metric("per-slice Jain", 1.0, ".3f"),
    "long_term_jain": Metric("long-term Jain", 1.0, ".3f"),
    "fct_median_s": Metric("FCT median s", 1.0, ".3g"),
    "fct_p90_s": Metric("FCT p90 s", 1.0, ".3g"),
    "fct_p99_s": Metric("FCT p99 s", 1.0, ".3g"),
    "unfinished_share": Metric("unfinished %", 100.0, ".1f"),
    "hang_share": Metric(f"hang>{HANG_THRESHOLD_S:g}s %", 100.0, ".1f"),
    "response_median_ms": Metric("response median ms", 1.0, ".1f"),
    "response_p99_ms": Metric("response p99 ms", 1.0, ".1f"),
    "timeouts_per_flow": Metric("timeouts/flow", 1.0, ".2f"),
}
"""Every metric a comparison can show, in display order."""

UNIT_RANGE = ("utilization", "loss_rate", "short_term_jain", "long_term_jain", "unfinished_share", "hang_share")
"""Metrics that are fractions: their intervals are clipped to [0, 1]; the others to [0, ∞)."""


def metric_range(name: str) -> tuple[float, float]:
    """The values metric ``name`` can take; a confidence interval is clipped to it."""
    return (0.0, 1.0) if name in UNIT_RANGE else (0.0, math.inf)


def _apps(scenario: Scenario) -> set[str]:
    return {group["app"] for group in scenario["flows"]}


def _has_sized(scenario: Scenario) -> bool:
    return any(
        group["app"] in SIZED_APPS or (group["app"] == "bulk" and group.get("size_bytes") is not None)
        for group in scenario["flows"]
    )


def workload_metrics(scenario: Scenario) -> list[str]:
    """The metrics that matter for the scenario's workload: link utilisation, loss and
    timeouts always; goodput and Jain indices with bulk flows; FCT quantiles, unfinished
    and hang shares with sized flows; response times with interactive flows."""
    apps = _apps(scenario)
    chosen = {"utilization", "loss_rate", "timeouts_per_flow"}
    if "bulk" in apps:
        chosen |= {"goodput_bps", "short_term_jain", "long_term_jain"}
    if _has_sized(scenario):
        chosen |= {"fct_median_s", "fct_p90_s", "fct_p99_s", "unfinished_share", "hang_share"}
    if "interactive" in apps:
        chosen |= {"response_median_ms", "response_p99_ms"}
    return [name for name in METRICS if name in chosen]


def _queue_of(config: dict[str, Any], kind: str) -> dict[str, Any]:
    """The canonical ``link.queue`` of ``kind`` with its defaults (validated by the core)."""
    probe = {**config, "link": {**config["link"], "queue": {"kind": kind}}}
    return dict(Scenario.from_dict(probe)["link"]["queue"])


def switch_queue(scenario: Scenario, kind: str) -> tuple[Scenario, list[str]]:
    """The scenario with the bottleneck discipline switched to ``kind``.

    Settings of the old discipline that differ from its defaults are kept when the new
    one takes a field of that name (e.g. ``limit_pkts``, so all disciplines get the same
    buffer); the others are dropped, and their names returned so the caller can say so.
    Defaults of the old kind are never carried over (they would override the new
    kind's own defaults).

    Raises:
        ConfigError: ``kind`` is not a discipline, or the switched scenario is invalid.
    """
    config = scenario.to_dict()
    old = config["link"]["queue"]
    if old["kind"] == kind:
        return scenario, []
    old_defaults = _queue_of(config, old["kind"])
    new_fields = _queue_of(config, kind)
    changed = {key: value for key, value in old.items() if key != "kind" and old_defaults.get(key) != value}
    kept = {key: value for key, value in changed.items() if key in new_fields}
    dropped = sorted(set(changed) - set(kept))
    config["link"]["queue"] = {"kind": kind, **kept}
    return Scenario.from_dict(config), [f"link.queue.{key}" for key in dropped]


@dataclass(frozen=True)
class Plan:
    """A validated comparison: the sweep of kinds × seeds over ``base``, and per kind the
    fields :func:`switch_queue` dropped."""

    base: Scenario
    grid: Grid
    dropped: dict[str, list[str]]

    @property
    def kinds(self) -> list[str]:
        return list(self.grid.values[KIND_KEY])


def compare_point_id(scenario: Scenario) -> str:
    """A comparison run's id: :func:`~smallpipe.sweep.point_id` of the scenario and the
    smallpipe version, so that after an upgrade a comparison runs again rather than
    silently reusing runs an older simulator made."""
    return point_id(scenario, runtime=f"simulate|smallpipe {__version__}")


def plan_comparison(
    base: Scenario | Mapping[str, Any],
    kinds: Sequence[str],
    seeds: int | Sequence[int],
    *,
    path: str | PathLike[str] = "scenario.toml",
) -> Plan:
    """Check and expand a comparison of ``kinds`` over ``seeds`` (every scenario is
    validated before any run): a list of seeds, or a count of them, ``n`` meaning the
    scenario's seed and the ``n - 1`` after it (as ``smallpipe compare --seeds n``).
    ``base`` is a :class:`Scenario` or a dict; ``path`` is the scenario file, recorded as
    the grid file.

    Raises:
        ConfigError: a kind is not a discipline, or one the simulator would ignore.
        CompareError: a kind or seed is listed twice, fewer than 2 seeds, or rcp with TCP senders.
    """
    if not isinstance(base, Scenario):
        base = Scenario.from_dict(base)
    if isinstance(seeds, int):
        if seeds < 2:
            raise CompareError(f"seeds = {seeds} is not allowed; expected at least 2 replications (a confidence interval needs two)")
        seeds = range(base["seed"], base["seed"] + seeds)
    listings: tuple[tuple[str, list[Any]], ...] = (("--queue", list(kinds)), ("--seeds", list(seeds)))
    for name, listed in listings:
        repeated = sorted({str(v) for v in listed if listed.count(v) > 1})
        if repeated:
            raise CompareError(f"{name} lists {', '.join(repeated)} more than once")
    transport = base.to_dict().get("transport", "tcp")  # the canonical form leaves out the default
    if "rcp" in kinds and transport != "rcp":
        raise CompareError(
            f'--queue rcp needs RCP senders (transport = "rcp"), but this scenario\'s are '
            f'{transport!r}: TCP ignores the rate an RCP router offers, so rcp would run as a plain FIFO; '
            "compare rcp on a scenario with transport = \"rcp\" (docs/rcp.md)"
        )
    points, dropped = [], {}
    for kind in kinds:
        switched, dropped[kind] = switch_queue(base, kind)
        check_simulable(switched)
        for seed in seeds:
            scenario = switched.with_overrides({SEED_KEY: seed})
            points.append(Point(compare_point_id(scenario), {KIND_KEY: kind, SEED_KEY: seed}, scenario))
    grid = Grid(
        path=Path(path), base=base.to_dict(), values={KIND_KEY: list(kinds), SEED_KEY: list(seeds)}, points=points
    )
    return Plan(base, grid, dropped)


@dataclass(frozen=True)
class Curves:
    """The distributions of one run that the comparison plots."""

    jain_start_s: npt.NDArray[np.float64]
    jain: npt.NDArray[np.float64]
    goodput_bps: npt.NDArray[np.float64]
    fct_s: npt.NDArray[np.float64]
    response_ms: npt.NDArray[np.float64]


def point_metrics(result: Result) -> tuple[dict[str, float], Curves]:
    """Every metric of :data:`METRICS` for one run (NaN where undefined), and its curves."""
    summary = summarize(result)
    flows, units, duration_ns = result.flows, result.units, result.meta["duration_ns"]
    sized = flows.filter(pl.col("size_bytes").is_not_null())
    fct_s = sized.filter(pl.col("end_ns").is_not_null()).select((pl.col("end_ns") - pl.col("start_ns")) / 1e9)
    sized_units = units.filter(pl.col("app").is_in(list(SIZED_APPS)) | pl.col("unit_id").is_in(sized["unit_id"].implode()))
    values: dict[str, Any] = {name: summary.get(name) for name in METRICS}
    values["goodput_bps"] = flows.get_column("bytes_delivered").sum() * 8 / (duration_ns / 1e9)
    values["fct_p90_s"] = fct_s.to_series().quantile(0.9, interpolation="linear") if fct_s.height else None
    values["unfinished_share"] = 1.0 - fct_s.height / sized.height if sized.height else None
    values["hang_share"] = (
        metrics.hang_shares(sized_units, (HANG_THRESHOLD_S,))[HANG_THRESHOLD_S] if sized_units.height else None
    )
    per_slice = metrics.jain_per_slice(result.slices, flows=flows)
    goodput = metrics.goodput_bps(flows, duration_ns).get_column("goodput_bps").drop_nulls()
    curves = Curves(
        jain_start_s=per_slice.get_column("start_ns").to_numpy() / 1e9,
        jain=per_slice.get_column("jain").to_numpy().astype(float),
        goodput_bps=goodput.to_numpy().astype(float),
        fct_s=fct_s.to_series().to_numpy().astype(float),
        response_ms=(result.bursts.get_column("response_ns").drop_nulls() / 1e6).to_numpy().astype(float),
    )
    return {name: math.nan if v is None else float(v) for name, v in values.items()}, curves


@dataclass
class Comparison:
    """The outcome of :func:`run_compare`."""

    scenario_name: str
    metrics: list[str]
    table: pl.DataFrame
    """One row per discipline: ``discipline``, ``seeds`` (runs that finished), and per
    metric ``<name>_mean``, ``<name>_ci95`` (the half-width of the 95% interval) and the
    interval's ends clipped to the metric's range, ``<name>_lo`` and ``<name>_hi``."""
    paired: pl.DataFrame
    """Every other discipline against the first one listed (the baseline), seed by seed:
    see :func:`paired_table`."""
    curves: dict[str, list[Curves]]
    outcome: SweepOutcome
    db: Path
    csv: Path
    paired_csv: Path
    png: Path


def summary_table(per_run: dict[str, dict[int, dict[str, float]]], names: Sequence[str]) -> pl.DataFrame:
    """One row per discipline: the runs' count and, per metric, the mean, the 95% CI
    half-width, and the interval's ends clipped to the metric's range (``_lo``, ``_hi``:
    a share's interval never goes below 0)."""
    rows = []
    for kind, runs in per_run.items():
        row: dict[str, Any] = {"discipline": kind, "seeds": len(runs)}
        for name in names:
            mean, half = mean_ci([run[name] for run in runs.values()])
            low, high = metric_range(name)
            row[f"{name}_mean"], row[f"{name}_ci95"] = mean, half
            row[f"{name}_lo"] = mean if math.isnan(half) else max(low, mean - half)
            row[f"{name}_hi"] = mean if math.isnan(half) else min(high, mean + half)
        rows.append(row)
    schema = {"discipline": pl.String, "seeds": pl.Int64} | {
        f"{name}_{part}": pl.Float64 for name in names for part in ("mean", "ci95", "lo", "hi")
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def paired_table(per_run: dict[str, dict[int, dict[str, float]]], names: Sequence[str], baseline: str) -> pl.DataFrame:
    """Each other discipline against ``baseline`` on the seeds both finished (every
    discipline runs the same seeds, so a seed's difference cancels what the seed alone
    decides): per metric the pairs, the mean difference with its 95% CI half-width, the
    relative change (mean difference over the baseline's mean on those seeds), and the
    two-sided p-values of the paired t-test and of the exact sign test."""
    rows = []
    base = per_run[baseline]
    for kind, runs in per_run.items():
        if kind == baseline:
            continue
        seeds = sorted(set(runs) & set(base))
        for name in names:
            pairs = [(runs[s][name], base[s][name]) for s in seeds]
            pairs = [(x, b) for x, b in pairs if not (math.isnan(x) or math.isnan(b))]
            differences = [x - b for x, b in pairs]
            diff, half = mean_ci(differences)
            base_mean = math.fsum(b for _, b in pairs) / len(pairs) if pairs else math.nan
            rows.append({
                "discipline": kind, "baseline": baseline, "metric": name, "pairs": len(pairs),
                "diff_mean": diff, "diff_ci95": half,
                "relative_change": diff / base_mean if base_mean != 0.0 and not math.isnan(base_mean) else math.nan,
                "t_p": paired_t_p(differences), "sign_p": sign_test_p(differences),
            })
    schema = {"discipline": pl.String, "baseline": pl.String, "metric": pl.String, "pairs": pl.Int64} | {
        column: pl.Float64 for column in ("diff_mean", "diff_ci95", "relative_change", "t_p", "sign_p")
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def run_compare(
    plan: Plan,
    out: str | PathLike[str],
    *,
    workers: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_point: ProgressCallback | None = None,
) -> Comparison:
    """Run (or resume) a planned comparison into ``out``: ``compare.duckdb``,
    ``compare_runs/``, the table ``compare.csv`` and ``compare.png``.

    Raises:
        store.StoreError: ``out/compare.duckdb`` holds a sweep over other keys.
    """
    out = Path(out)
    grid, kinds = plan.grid, plan.kinds
    db = out / "compare.duckdb"
    outcome = run_sweep(grid, db, run_root=out / "compare_runs", workers=workers, on_start=on_start, on_point=on_point)
    ours = {point.point_id: point for point in grid.points}
    finished = store.read_points(db).filter(pl.col("status") == "ok", pl.col("point_id").is_in(list(ours)))
    run_dirs = dict(zip(finished["point_id"], finished["run_dir"], strict=True))
    per_run: dict[str, dict[int, dict[str, float]]] = {kind: {} for kind in kinds}
    curves: dict[str, list[Curves]] = {kind: [] for kind in kinds}
    for point in grid.points:  # in kind, then seed order
        if point.point_id in run_dirs:
            values, run_curves = point_metrics(Result.read(run_dirs[point.point_id]))
            per_run[point.overrides[KIND_KEY]][int(point.overrides[SEED_KEY])] = values
            curves[point.overrides[KIND_KEY]].append(run_curves)
    names = workload_metrics(plan.base)
    table = summary_table(per_run, names)
    paired = paired_table(per_run, names, kinds[0])
    csv = out / "compare.csv"
    replace_atomically(csv, table.write_csv)
    paired_csv = out / "compare_paired.csv"
    replace_atomically(paired_csv, paired.write_csv)
    name = grid.path.stem
    png = out / "compare.png"
    replace_atomically(png, lambda path: plot_comparison(curves, plan.base, name, path))
    return Comparison(name, names, table, paired, curves, outcome, db, csv, paired_csv, png)


def _band(matrix: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per column of ``matrix`` (one row per seed, NaN where a seed has no value): the mean
    and the half-width of its 95% Student-t interval (NaN below two values)."""
    intervals = np.array([mean_ci(column) for column in matrix.T.tolist()]).reshape(-1, 2)
    return intervals[:, 0], intervals[:, 1]


def _plot_band(axes: Any, xs: npt.NDArray[np.float64], matrix: npt.NDArray[np.float64], **line: Any) -> None:
    """The mean over the rows (seeds) of ``matrix`` against ``xs``, and its 95% band
    (clipped to [0, 1]: both the Jain index and a CDF live there)."""
    mean, half = _band(matrix)
    (drawn,) = axes.plot(xs, mean, **line)
    axes.fill_between(xs, np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1), color=drawn.get_color(), alpha=0.2)


def _ecdf_at(values: npt.NDArray[np.float64], xs: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    if values.size == 0:
        return np.full(xs.shape, np.nan)
    return np.searchsorted(np.sort(values), xs, side="right") / values.size


BAND_MIN_VALUES = 10
"""A CDF gets a band over seeds only when every seed has at least this many values;
with fewer (one interactive flow per run, say) the seeds' values are pooled into one CDF."""


def _cdf_panel(
    axes: Any, runs: dict[str, list[npt.NDArray[np.float64]]], *, log_x: bool, xlabel: str, ylabel: str
) -> None:
    """One CDF per discipline on a common grid of x values: the mean over seeds of each
    seed's empirical CDF with its 95% band, or the pooled CDF when seeds have too few
    values for a per-seed CDF to mean much."""
    every = [v for vs in runs.values() for v in vs]
    pooled = np.concatenate(every) if every else np.array([])
    if log_x:
        pooled = pooled[pooled > 0]
    if pooled.size == 0:
        axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes)
        return
    low, high = float(pooled.min()), float(pooled.max())
    xs = np.geomspace(low, high, 300) if log_x and high > low else np.linspace(low, high if high > low else low + 1, 300)
    for kind, seeds in runs.items():
        if seeds and min(v.size for v in seeds) >= BAND_MIN_VALUES:
            _plot_band(axes, xs, np.array([_ecdf_at(v, xs) for v in seeds]), label=kind)
        else:
            pooled_kind = np.concatenate(seeds) if seeds else np.array([])
            axes.plot(xs, _ecdf_at(pooled_kind, xs), label=f"{kind} (seeds pooled)")
    axes.set(xlabel=xlabel, ylabel=ylabel, ylim=(0.0, 1.02))
    if log_x:
        axes.set_xscale("log")


def plot_comparison(curves: dict[str, list[Curves]], scenario: Scenario, name: str, path: str | PathLike[str]) -> Path:
    """Overlaid curves, one colour per discipline, mean over seeds with 95% bands: the
    per-slice Jain index over time (bulk), the CDFs of per-flow goodput, of FCT (sized
    flows) and of interactive response times, as the workload has them."""
    path = Path(path)
    apps = _apps(scenario)
    panels = []
    if "bulk" in apps:
        panels.append("jain")
    panels.append("goodput")
    if _has_sized(scenario):
        panels.append("fct")
    if "interactive" in apps:
        panels.append("response")
    figure, axes_row = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.4), layout="constrained", squeeze=False)
    for axes, panel in zip(axes_row[0], panels, strict=True):
        if panel == "jain":
            for kind, runs in curves.items():
                if not runs:
                    continue
                width = max(run.jain.size for run in runs)
                matrix = np.full((len(runs), width), np.nan)
                for row, run in enumerate(runs):
                    matrix[row, : run.jain.size] = run.jain
                starts = max((run.jain_start_s for run in runs), key=len)
                ends = np.append(starts[1:], scenario["duration_s"])
                _plot_band(axes, (starts + ends) / 2, matrix, label=kind, marker="o", markersize=3)
            axes.set(xlabel="time (s), slice centres", ylabel="Jain index per slice", ylim=(0.0, 1.05),
                     title=f"Per-slice Jain index ({scenario['slice_s']:g} s slices)")
        elif panel == "goodput":
            _cdf_panel(axes, {k: [r.goodput_bps / 1e3 for r in rs] for k, rs in curves.items()},
                       log_x=False, xlabel="per-flow goodput (kbit/s)", ylabel="fraction of flows")
            axes.set_title("Per-flow goodput, CDF")
        elif panel == "fct":
            _cdf_panel(axes, {k: [r.fct_s for r in rs] for k, rs in curves.items()},
                       log_x=True, xlabel="flow completion time (s)", ylabel="fraction of finished flows")
            axes.set_title("Flow completion time, CDF")
        else:
            _cdf_panel(axes, {k: [r.response_ms for r in rs] for k, rs in curves.items()},
                       log_x=True, xlabel="response time (ms)", ylabel="fraction of responses")
            axes.set_title("Response time, CDF")
        axes.grid(alpha=0.3)
    # One legend for every panel, below them: inside a panel it would sit on a curve.
    labelled = {label: handle for axes in axes_row[0] for handle, label in zip(*axes.get_legend_handles_labels(),
                                                                                strict=True)}
    if labelled:
        figure.legend(list(labelled.values()), list(labelled), loc="outside lower center", fontsize="small",
                      ncols=min(len(labelled), 4))
    seeds = max((len(runs) for runs in curves.values()), default=0)
    figure.suptitle(f"{name}: {', '.join(curves)}, {seeds} seeds (mean, 95% CI band)")
    figure.savefig(path, dpi=110, format="png")  # path may be a temporary name
    plt.close(figure)
    return path
