"""Parameter sweeps: the Cartesian product of a grid of overrides, run on local
processes (or another :data:`Runner`, e.g. Ray tasks: :mod:`smallpipe.sweep_ray`) into a
DuckDB results store, resumable.

A grid file (TOML) names a base scenario and, under ``[grid]``, lists of values for
dotted override paths (the keys :meth:`Scenario.with_overrides` takes)::

    base = "dumbbell.toml"            # relative to the grid file; or an inline [base] table

    [grid]
    "link.queue.limit_pkts" = [25, 50, 100]
    "flows.0.count" = [20, 50, 100]
    seed = [1, 2, 3]

Every point of the product is validated (a :class:`Scenario` is built) before any run,
and gets a stable id: a hash of its canonical scenario JSON, so a re-run, even of a
reordered or extended grid, recognises the points already done. ``runtime = "testbed"``
(and optionally ``congestion_control = "reno" | "cubic" | "bbr"``) at the top of the grid
file runs every point on real Linux TCP (:func:`smallpipe.testbed.run_testbed`), one at a
time. See ``docs/sweeps.md``.
"""

from __future__ import annotations

import copy
import ctypes
import datetime as dt
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import sys
import time
import tomllib
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe import metrics, store
from smallpipe._smallpipe import ConfigError, __version__
from smallpipe.result import Result, simulate
from smallpipe.scenario import Scenario, apply_overrides

#: Sub-folder of the run root where a point's Parquet files are written before the
#: folder is renamed into place; whatever a killed sweep left there is cleared on resume.
STAGING_DIR = ".staging"

__all__ = ["Grid", "GridError", "Point", "Runner", "SweepOutcome", "load_grid", "run_sweep", "summarize"]


class GridError(ValueError):
    """The grid file is invalid; the message names the key and value at fault."""


@dataclass(frozen=True)
class Point:
    """One point of the grid: its overrides (key -> value, in grid order) and scenario."""

    point_id: str
    overrides: dict[str, Any]
    scenario: Scenario


@dataclass(frozen=True)
class Grid:
    """A validated grid: the keys and their values in file order, and every point."""

    path: Path
    base: dict[str, Any]
    values: dict[str, list[Any]]
    points: list[Point]
    runtime: str = "simulate"
    """``simulate`` or ``testbed`` (real Linux TCP, one point at a time)."""
    congestion_control: str | None = None
    """With the testbed: every sender's Linux congestion control [the scenario's ``tcp.congestion``]."""

    @property
    def sql_types(self) -> dict[str, str]:
        """The DuckDB column type of each swept key (non-scalar values are stored as JSON text)."""
        return {key: _sql_type(values) for key, values in self.values.items()}


RUNTIMES = ("simulate", "testbed")
TESTBED_CONGESTION_CONTROLS = ("reno", "cubic", "bbr")


def point_id(scenario: Scenario, runtime: str = "simulate", congestion_control: str | None = None) -> str:
    """The stable id of a scenario: 16 hex digits of the SHA-256 of its canonical JSON
    (sorted keys), so equal scenarios share an id whatever the grid order. A testbed run
    of it (and its congestion control) gets an id of its own: it is another measurement."""
    canonical = json.dumps(scenario.to_dict(), sort_keys=True, separators=(",", ":"))
    if runtime != "simulate":
        canonical += f"|{runtime}|{congestion_control or ''}"
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _flatten_grid(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"link": {"rate_bps": [..]}}`` -> ``{"link.rate_bps": [..]}``: unquoted dotted TOML
    keys become nested tables, quoted ones stay flat; both mean the same path."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten_grid(value, f"{path}."))
        else:
            flat[path] = value
    return flat


def _sql_type(values: Sequence[Any]) -> str:
    if all(isinstance(v, bool) for v in values):
        return "BOOLEAN"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "BIGINT"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "DOUBLE"
    if all(isinstance(v, str) for v in values):
        return "VARCHAR"
    return "JSON"


def _column_value(value: Any, sql_type: str) -> Any:
    if sql_type == "JSON":
        return json.dumps(value)
    if sql_type == "DOUBLE":
        return float(value)
    return value


def _describe(overrides: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{key} = {json.dumps(value)}" for key, value in overrides.items()) + "}"


MAX_GRID_POINTS = 100_000
"""The most points one grid file expands to: every point is validated and held before the
first one runs, about 1.1 ms and 10 kB each on this 2-core machine (2000 points: 2.2 s),
so 100 000 take about two minutes and a GB; a larger sweep is several grid files."""

PLANNING_EVERY_POINTS = 1000
"""How often :func:`load_grid` reports its progress."""


def load_grid(path: str | PathLike[str], on_progress: Callable[[int, int], None] | None = None) -> Grid:
    """Read a grid file, expand the product and validate every point's scenario, calling
    ``on_progress(checked, total)`` every 1000 points.

    Raises:
        FileNotFoundError: the grid file or its base scenario file does not exist.
        GridError: bad TOML, no or two bases, a grid value that is not a non-empty list
            of distinct values, more than :data:`MAX_GRID_POINTS` points, or a point whose
            scenario is invalid (the message gives the point's overrides and the core's
            field error).
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            spec = tomllib.load(file)
    except FileNotFoundError:
        raise FileNotFoundError(f"grid file not found: {path}") from None
    except tomllib.TOMLDecodeError as error:
        raise GridError(f"{path}: not valid TOML ({error})") from None

    unknown = set(spec) - {"base", "grid", "runtime", "congestion_control"}
    if unknown:
        raise GridError(
            f"{path}: unknown top-level entries {sorted(unknown)}; expected `base`, `[grid]`, "
            "and optionally `runtime` and `congestion_control`"
        )
    runtime = spec.get("runtime", "simulate")
    if runtime not in RUNTIMES:
        raise GridError(f"{path}: runtime = {json.dumps(runtime)} is not allowed; expected one of {', '.join(RUNTIMES)}")
    congestion_control = spec.get("congestion_control")
    if congestion_control is not None and (runtime != "testbed" or congestion_control not in TESTBED_CONGESTION_CONTROLS):
        raise GridError(
            f"{path}: congestion_control = {json.dumps(congestion_control)} is not allowed; expected one of "
            f"{', '.join(TESTBED_CONGESTION_CONTROLS)}, with runtime = \"testbed\" (the simulator's is tcp.congestion)"
        )
    base_spec = spec.get("base")
    if isinstance(base_spec, str):
        base_path = (path.parent / base_spec).resolve()
        # Read as a scenario file, so paths inside it (a replayed log) resolve beside it.
        try:
            base = Scenario.from_toml(base_path).to_dict()
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: base scenario file not found: {base_path}") from None
        except ConfigError as error:
            raise GridError(f"{path}: base scenario {base_path}: {error}") from None
    elif isinstance(base_spec, dict):
        base = base_spec
    else:
        raise GridError(
            f"{path}: base = {base_spec!r} is not allowed; expected a scenario file path "
            '(base = "scenario.toml") or an inline [base] table'
        )
    try:
        Scenario.from_dict(base)
    except ConfigError as error:
        raise GridError(f"{path}: the base scenario is invalid: {error}") from None

    grid_spec = spec.get("grid")
    if not isinstance(grid_spec, dict) or not grid_spec:
        raise GridError(f"{path}: [grid] is missing or empty; expected at least one key = [values]")
    values: dict[str, list[Any]] = {}
    for key, listed in _flatten_grid(grid_spec).items():
        if not isinstance(listed, list):
            raise GridError(f"grid.{key} = {json.dumps(listed)} is not allowed; expected a list of values, e.g. [{json.dumps(listed)}]")
        if not listed:
            raise GridError(f"grid.{key} = [] is not allowed; expected a non-empty list of values")
        encoded = [json.dumps(v, sort_keys=True) for v in listed]
        duplicates = sorted({e for e in encoded if encoded.count(e) > 1})
        if duplicates:
            raise GridError(f"grid.{key} lists {', '.join(duplicates)} more than once")
        values[key] = listed

    total = math.prod(len(listed) for listed in values.values())
    if total > MAX_GRID_POINTS:
        sizes = " x ".join(f"{len(listed)} {key}" for key, listed in values.items())
        raise GridError(
            f"{path}: [grid] is {total:,} points ({sizes}), which is not allowed; expected at most "
            f"{MAX_GRID_POINTS:,} points per grid file (each is checked and held before the first runs, "
            "about 1 ms and 10 kB): split the sweep into several grid files"
        )
    points: list[Point] = []
    seen: dict[str, dict[str, Any]] = {}
    for combination in itertools.product(*values.values()):
        if on_progress is not None and points and len(points) % PLANNING_EVERY_POINTS == 0:
            on_progress(len(points), total)
        overrides = dict(zip(values, combination, strict=True))
        config = copy.deepcopy(base)
        try:
            apply_overrides(config, overrides)  # a `kind` switch drops the old kind's keys, with a note
            scenario = Scenario.from_dict(config)
        except ConfigError as error:
            raise GridError(f"grid point {_describe(overrides)}: {error}") from None
        if runtime == "testbed":
            _check_testbed_point(scenario, congestion_control, overrides)
        pid = point_id(scenario, runtime, congestion_control)
        if pid in seen:
            raise GridError(
                f"grid points {_describe(seen[pid])} and {_describe(overrides)} give the same scenario; "
                "remove one of the equivalent values"
            )
        seen[pid] = overrides
        points.append(Point(pid, overrides, scenario))
    return Grid(path=path, base=base, values=values, points=points, runtime=runtime,
                congestion_control=congestion_control)


def _check_testbed_point(scenario: Scenario, congestion_control: str | None, overrides: dict[str, Any]) -> None:
    """Refuse, before any run, a point the testbed cannot honour (the knob it names)."""
    from smallpipe.testbed.knobs import linux_settings

    try:
        linux_settings(scenario, congestion_control)
    except ConfigError as error:
        raise GridError(f"grid point {_describe(overrides)}: not runnable on the testbed: {error}") from None


def _finite(value: Any) -> Any:
    """A float that is NaN or infinite becomes None (NULL in the database)."""
    if value is None:
        return None
    value = float(value) if isinstance(value, float) else value
    return None if isinstance(value, float) and not math.isfinite(value) else value


def summarize(result: Result) -> dict[str, Any]:
    """The headline metrics of a run, one value per :data:`store.SUMMARY_COLUMNS` entry."""
    flows, meta = result.flows, result.meta
    duration_ns = meta["duration_ns"]
    bottleneck = result.links.filter(pl.col("name") == "bottleneck")
    per_slice = metrics.jain_per_slice(result.slices, flows=flows)
    weighted_zero = per_slice.select(
        (pl.col("zero_share") * pl.col("n_flows")).sum() / pl.col("n_flows").sum()
    ).item() if per_slice.height else None
    sized = flows.filter(pl.col("size_bytes").is_not_null())
    fct_s = sized.filter(pl.col("end_ns").is_not_null()).select((pl.col("end_ns") - pl.col("start_ns")) / 1e9).to_series()
    response_ms = result.bursts.get_column("response_ns").drop_nulls() / 1e6
    goodput = metrics.goodput_bps(flows, duration_ns).get_column("goodput_bps").drop_nulls()
    has_flows = flows.height > 0
    all_udp = metrics.udp_summary(result.udp_flows.with_columns(app=pl.lit("udp")))  # every source as one kind
    udp = all_udp.row(0, named=True) if all_udp.height else {"sources": 0, "loss_rate": None, "delay_mean_ms": None}

    def quantile(series: pl.Series, q: float) -> float | None:
        return series.quantile(q, interpolation="linear") if series.len() else None

    summary = {
        "flows": flows.height,
        "utilization": bottleneck.get_column("utilization")[0],
        "loss_rate": bottleneck.get_column("loss_rate")[0],
        "drops": bottleneck.get_column("dropped_pkts")[0],
        "mean_queue_delay_ms": bottleneck.get_column("mean_queue_delay_ms")[0],
        "long_term_jain": metrics.long_term_jain(flows, duration_ns=duration_ns) if goodput.len() else None,
        "short_term_jain": per_slice.get_column("jain").mean() if per_slice.height else None,
        "zero_share": weighted_zero,
        "top40_share": per_slice.get_column("top40_share").mean() if per_slice.height else None,
        "slice_s": meta["slice_ns"] / 1e9,
        "mean_goodput_bps": goodput.mean() if goodput.len() else None,
        "timeouts_per_flow": flows.get_column("timeouts").mean() if has_flows else None,
        "syn_timeouts_per_flow": flows.get_column("syn_timeouts").mean() if has_flows else None,
        "retransmits_per_flow": flows.get_column("retransmits").mean() if has_flows else None,
        "sized_flows": sized.height,
        "finished_flows": fct_s.len(),
        "fct_mean_s": fct_s.mean() if fct_s.len() else None,
        "fct_median_s": quantile(fct_s, 0.5),
        "fct_p99_s": quantile(fct_s, 0.99),
        "bursts": result.bursts.height,
        "response_median_ms": quantile(response_ms, 0.5),
        "response_p99_ms": quantile(response_ms, 0.99),
        "udp_sources": udp["sources"],
        "udp_loss_rate": udp["loss_rate"],
        "udp_delay_mean_ms": udp["delay_mean_ms"],
        "events": meta["events"],
        "packets": meta["packets"],
        "sim_wall_seconds": meta["wall_seconds"],
    }
    assert set(summary) == set(store.SUMMARY_COLUMNS), "summary and store.SUMMARY_COLUMNS disagree"
    return {name: _finite(value) for name, value in summary.items()}


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def publish_point(run_root: Path, pid: str, write: Callable[[Path], Any]) -> Path:
    """Have ``write`` fill a staging folder, then rename it to ``run_root/pid`` (returned),
    so a point's folder is either complete or absent."""
    final = run_root / pid
    # Staged one level deeper than the finished points, so a writer killed mid-write
    # leaves nothing the views' ``*/table.parquet`` glob can pick up.
    staging = run_root / STAGING_DIR / f"{pid}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    write(staging)
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    return final


def run_point(pid: str, scenario_json: str, run_root: str, runtime: str = "simulate",
              congestion_control: str | None = None) -> dict[str, Any]:
    """Run one point (in a worker process, or this one for the testbed): simulate or run it
    on the testbed, write its Parquet folder ``run_root/pid/``, summarise. Never raises for
    a failing run: the error is returned."""
    started_at, clock = _utc_now(), time.perf_counter()
    record: dict[str, Any] = {"point_id": pid, "started_at": started_at, "summary": None, "run_dir": None}
    try:
        scenario = Scenario.from_dict(json.loads(scenario_json))
        if runtime == "testbed":
            from smallpipe.testbed import run_testbed

            result = run_testbed(scenario, congestion_control=congestion_control)
        else:
            result = simulate(scenario)
        summary = summarize(result)
        final = publish_point(Path(run_root), pid, result.write)
        record.update(status="ok", error=None, summary=summary, run_dir=str(final))
    except Exception as error:  # noqa: BLE001  (a simulator panic arrives as SimulationError)
        record.update(status="error", error=f"{type(error).__name__}: {error}")
    record.update(finished_at=_utc_now(), wall_seconds=time.perf_counter() - clock)
    return record


@dataclass
class SweepOutcome:
    """What one invocation of a sweep did."""

    total: int
    skipped_ok: int = 0
    skipped_error: int = 0
    ran: int = 0
    ok: int = 0
    error: int = 0
    wall_seconds: float = 0.0
    errors: list[tuple[dict[str, Any], str]] = field(default_factory=list)


ProgressCallback = Callable[[dict[str, Any]], None]
#: Runs the points and hands each batch of finished records to the callback (which
#: writes them to the store): another backend than the local pool, e.g.
#: :func:`smallpipe.sweep_ray.ray_runner`.
Runner = Callable[[list[Point], Path, Callable[[list[dict[str, Any]]], None]], None]


def run_sweep(
    grid: Grid,
    db: str | PathLike[str],
    *,
    run_root: str | PathLike[str] | None = None,
    workers: int | None = None,
    retry_errors: bool = False,
    on_start: Callable[[int], None] | None = None,
    on_point: ProgressCallback | None = None,
    runner: Runner | None = None,
) -> SweepOutcome:
    """Run the points of ``grid`` not yet in ``db`` and record each as it finishes.

    Arguments:
        grid: from :func:`load_grid`.
        db: the DuckDB file (created if needed).
        run_root: where each point's Parquet folder goes [default: ``<db stem>_runs/``
            beside the database].
        workers: worker processes [default: ``os.cpu_count()``]; 0 runs the points in
            this process (for debugging; a crash in the simulator then ends the sweep).
        retry_errors: re-run points recorded as ``'error'`` (skipped otherwise).
        on_start: called with the number of points to run.
        on_point: called with each finished point's record.
        runner: runs the points instead of the local processes (``workers`` is then
            the runner's business). A testbed grid (``runtime = "testbed"``) ignores both:
            its points run one at a time in this process.

    Raises:
        store.StoreError: ``db`` holds a sweep over other keys.
    """
    clock = time.perf_counter()
    db = Path(db)
    root = Path(run_root) if run_root is not None else default_run_root(db)
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / STAGING_DIR, ignore_errors=True)
    types = grid.sql_types
    store.init_store(db, keys=types, values=grid.values, grid_file=str(grid.path), base=grid.base, run_root=root)
    done = store.finished_ids(db, include_errors=not retry_errors)
    outcome = SweepOutcome(total=len(grid.points))
    todo = []
    for point in grid.points:
        status = done.get(point.point_id)
        if status == "ok":
            outcome.skipped_ok += 1
        elif status == "error":
            outcome.skipped_error += 1
        else:
            todo.append(point)
    if on_start is not None:
        on_start(len(todo))
    by_id = {point.point_id: point for point in todo}

    def record(results: list[dict[str, Any]]) -> None:
        for result in results:
            point = by_id[result["point_id"]]
            result["values"] = {key: _column_value(point.overrides[key], types[key]) for key in grid.values}
            result.update(
                overrides=json.dumps(point.overrides),
                version=__version__,
                scenario=json.dumps(point.scenario.to_dict(), sort_keys=True),
                attempts=None,
            )
        store.record_points(db, results, list(grid.values))
        for result in results:
            outcome.ran += 1
            if result["status"] == "ok":
                outcome.ok += 1
            else:
                outcome.error += 1
                outcome.errors.append((by_id[result["point_id"]].overrides, result["error"]))
            if on_point is not None:
                on_point(result)

    try:
        # In this process, one at a time: on request, and always on the testbed, whose runs
        # are real time and need quiet cores.
        if runner is None and workers != 0 and grid.runtime != "testbed" and called_at_script_top_level():
            warnings.warn(
                "running the points in this process, one at a time: called at a script's top level, worker "
                "processes would run the script again (they are spawned). For parallel runs, put the call "
                "under `if __name__ == \"__main__\":`",
                RuntimeWarning,
                stacklevel=3,
            )
            workers = 0
        if grid.runtime == "testbed" or (runner is None and workers == 0):
            for point in todo:
                record([run_point(point.point_id, point.scenario.to_json(), str(root), grid.runtime,
                                  grid.congestion_control)])
        elif runner is not None:
            runner(todo, root, record)
        else:
            _run_in_pool(todo, root, workers or os.cpu_count() or 1, record)
    finally:
        if outcome.ran or outcome.skipped_ok:
            store.create_views(db, root)
        outcome.wall_seconds = time.perf_counter() - clock
    return outcome


def _run_in_pool(
    todo: list[Point], root: Path, workers: int, record: Callable[[list[dict[str, Any]]], None]
) -> None:
    """Run ``todo`` on ``workers`` processes, at most two points per worker in flight so
    that an interrupt loses little and a crashed worker takes few points with it.
    Points that finish together are recorded in one write.

    Workers are started with ``spawn`` (no fork of a process holding Polars' and
    DuckDB's threads). When a worker dies (a crash in the simulator), the points in
    flight are recorded as errors and a new pool runs the rest. A pool that dies before
    finishing any point records nothing (workers that cannot start at all would
    otherwise mark every point as failed) and is replaced once; if the new one dies the
    same way, the sweep stops with an error naming the points in flight.
    """
    pending = list(reversed(todo))
    context = multiprocessing.get_context("spawn")
    barren_breaks = 0
    while pending:
        executor = ProcessPoolExecutor(
            max_workers=min(workers, len(pending)),
            mp_context=context,
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        )
        in_flight: dict[Future[dict[str, Any]], Point] = {}
        broken: BrokenProcessPool | None = None
        finished_here = 0
        try:
            while (pending and broken is None) or in_flight:
                while pending and broken is None and len(in_flight) < 2 * workers:
                    point = pending.pop()
                    future = executor.submit(run_point, point.point_id, point.scenario.to_json(), str(root))
                    in_flight[future] = point
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                results, lost = [], []
                for future in done:
                    point = in_flight.pop(future)
                    try:
                        results.append(future.result())
                    except BrokenProcessPool as error:
                        broken = error
                        lost.append(point)
                finished_here += len(results)
                if broken is not None and finished_here == 0:
                    lost += in_flight.values()
                    if barren_breaks >= 1:
                        names = ", ".join(f"{p.point_id} {_describe(p.overrides)}" for p in lost)
                        raise BrokenProcessPool(f"worker processes die before finishing any point; in flight: {names}")
                    pending += reversed(lost)
                    in_flight.clear()
                    break
                results += [
                    {
                        "point_id": point.point_id, "status": "error",
                        "error": f"worker process died while running this point or another one beside it ({broken}); "
                        "re-run with --retry-errors (and --workers 1 to find the culprit)",
                        "started_at": None, "finished_at": _utc_now(), "wall_seconds": None,
                        "summary": None, "run_dir": None,
                    }
                    for point in lost
                ]
                if results:
                    record(results)
        except BaseException:
            # Ctrl-C, dead workers or a failed write: stop now, without waiting for running points.
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        executor.shutdown(wait=broken is None, cancel_futures=True)
        barren_breaks = barren_breaks + 1 if broken is not None and finished_here == 0 else 0


def called_at_script_top_level() -> bool:
    """Whether a script's top-level code (``__main__``, run as a file), outside an
    ``if __name__ == "__main__":`` block, is on the call stack: a spawned worker imports
    that file again, and would run the sweep again itself."""
    import ast

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:
        return False  # interactive or ``python -c``: nothing re-runs the calling code
    frame: Any = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return False
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return False
    guards = [node for node in tree.body
              if isinstance(node, ast.If) and {"__name__", "__main__"} <= set(re.findall(r"\w+", ast.unparse(node.test)))]
    return not any(node.lineno <= frame.f_lineno <= (node.end_lineno or node.lineno) for node in guards)


PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal this process gets when its parent dies (linux/prctl.h)."""


def die_with_parent(parent_pid: int) -> None:
    """Worker initializer: the kernel sends this worker SIGKILL when the process that
    started it dies, even when that one is killed with SIGKILL and cleans up nothing, so
    no worker keeps running a point nobody will record. Linux only (prctl); elsewhere a
    no-op."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def default_run_root(db: str | PathLike[str]) -> Path:
    """``results/NAME.duckdb`` -> ``results/NAME_runs/``."""
    db = Path(db)
    return db.with_name(f"{db.stem}_runs")
