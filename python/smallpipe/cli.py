"""The ``smallpipe`` command line: run scenarios, benchmark the simulator."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
import textwrap
import time
import tomllib
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer
from rich.console import Console
from rich.table import Table

from smallpipe import metrics
from smallpipe._smallpipe import ConfigError, SimulationError, __version__
from smallpipe.errors import (
    EXIT_USER_ERROR,
    check_database,
    check_output_dir,
    check_writable_dir,
    fail,
    printing_notes,
    rescue_folder,
    show_error,
)
from smallpipe.measured import MeasuredRuns
from smallpipe.presets import bench_dumbbell
from smallpipe.progress import PLAIN_EVERY_S, SimulationProgress, eta_s
from smallpipe.result import (
    Interrupted,
    Result,
    keeping_results,
    overriding,
    reporting_progress,
    simulate,
)
from smallpipe.rundir import OutputExists, claim_output_directory, new_run_directory
from smallpipe.scenario import Scenario, check_simulable
from smallpipe.summary import cut_short_notes, setup_rows, udp_rows, workload_rows

__all__ = ["app"]

app = typer.Typer(
    help="smallpipe: fair, predictable TCP on thin, crowded links.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Help texts say "[default: ...]" and "[grid]": print them as written, not as markup.
    rich_markup_mode=None,
)
console = Console()
error_console = Console(stderr=True, soft_wrap=True)

EXIT_CONFIG_ERROR = EXIT_USER_ERROR
"""Exit code for an invalid scenario or any other user error (as for a usage error)."""
EXIT_SIMULATION_ERROR = 1
EXIT_INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""


def parse_override(assignment: str) -> tuple[str, Any]:
    """Parse ``key=value`` from ``--set``: the value is read as a TOML value
    (``2e6``, ``true``, ``[0.0, 1.0]``, ``"sack"``), or taken as a bare string
    when it is not one (``tcp.recovery=sack``)."""
    key, separator, text = assignment.partition("=")
    if not separator or not key:
        raise typer.BadParameter(f"expected key=value, got {assignment!r}", param_hint="--set")
    try:
        value = tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        value = text
    return key.strip(), value


def _run_with_status(scenario: Scenario, message: str) -> Result:
    """Simulate behind a spinner; turn errors into a message and an exit code."""
    try:
        with console.status(message):
            return simulate(scenario)
    except ConfigError as error:  # found at set-up, e.g. a malformed replayed log
        fail("invalid scenario:", str(error))
    except SimulationError as error:
        show_error("simulation failed:", str(error))
        raise typer.Exit(EXIT_SIMULATION_ERROR) from None


def print_unwrapped(table: Table) -> None:
    """Print a table whose cells never wrap: wider than the terminal when it must be, rather
    than folding a number over two lines or cutting it short."""
    from rich.measure import Measurement

    natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
    width = console.width
    console.width = max(width, natural)  # print(width=...) cannot exceed the console's width
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


def summary_table(result: Result) -> Table:
    """The headline numbers of a run, as a Rich table: the setup, the link, and the
    metrics of the scenario's workload (see :mod:`smallpipe.summary`)."""
    meta = result.meta
    duration_s = meta["duration_ns"] / 1e9
    bottleneck = result.links.filter(pl.col("name") == "bottleneck")
    wall_seconds = meta["wall_seconds"]

    on_testbed = meta.get("runtime") == "testbed"
    title = "smallpipe testbed (Linux TCP)" if on_testbed else "smallpipe run"
    if meta.get("partial"):
        title += " (PARTIAL: interrupted)"
    # The settings are prose: a caption, which wraps; the numbers never do.
    caption = "\n".join(f"{name}: {value}" for name, value in setup_rows(result.scenario))
    table = Table(title=title, caption=caption, caption_justify="left", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right", no_wrap=True)
    if meta.get("partial"):
        planned_s = result.scenario["duration_s"]
        simulated = f"{duration_s:g} of {planned_s:g} s (stopped by Ctrl-C)"
    else:
        simulated = f"{duration_s:g} s"
    link_rows = [
        ("duration" if on_testbed else "simulated duration", simulated),
        ("bottleneck utilization", f"{metrics.utilization(result.links):.1%}"),
        ("bottleneck loss rate", f"{bottleneck.get_column('loss_rate')[0]:.2%}"),
    ]
    streamed = meta.get("streamed")
    if streamed:  # the rows are on disk: the online summary
        fct = [streamed[f"fct_{q}_s"] for q in ("p50", "p99")]
        rows = [
            ("flows", f"{streamed['flows']} ({meta['flows_opened']} opened, in {streamed['parts']} parts)"),
            *link_rows,
            ("flows finished", f"{streamed['finished']}"),
            ("completion time (FCT, to 12%)", "n/a" if fct[0] is None else f"p50 {fct[0]:.3g} s, p99 {fct[1]:.3g} s"),
            ("timeouts", f"{streamed['timeouts']}"),
            *udp_rows(result),
            ("wall time", f"{wall_seconds:.2f} s"),
        ]
    else:
        rows = [
            ("flows", f"{result.flows.height}"),
            *link_rows,
            *workload_rows(result),
            ("timeouts", f"{result.flows.get_column('timeouts').sum()}"),
            *udp_rows(result),
            ("wall time", f"{wall_seconds:.2f} s"),
        ]
    if not on_testbed:  # the testbed runs in real time: its packet rate says nothing of speed
        rows.append(
            ("packets per wall second", f"{meta['packets'] / wall_seconds:,.0f}" if wall_seconds > 0 else "n/a")
        )
    # A narrow console wraps a long name, never a number.
    table.columns[1].min_width = max(len(value) for _, value in rows)
    for name, value in rows:
        table.add_row(name, value)
    return table


def _load_scenario(scenario_path: Path, seed: int | None, overrides: list[str] | None) -> Scenario:
    """The scenario file with ``--seed`` and ``--set`` applied; exits with a message if invalid."""
    changes = dict(parse_override(assignment) for assignment in overrides or [])
    if seed is not None:
        changes["seed"] = seed
    try:
        with printing_notes():
            return Scenario.from_toml(scenario_path, changes)  # --set first: the file is checked as changed
    except ConfigError as error:
        fail("invalid scenario", f"{scenario_path}: {error}")
    except FileNotFoundError as error:
        fail("error:", str(error))


def _trace_overrides(
    flows: str | None, links: bool, interval_s: float | None, events: bool, pcap: bool,
    pcap_hosts: list[str] | None = None,
) -> list[str]:
    """`run`'s trace flags as ``--set`` assignments into the scenario's ``[trace]`` table."""
    changes: list[str] = []
    if flows is not None:
        if flows.strip() == "all":
            changes.append("trace.all_flows=true")
        else:
            ids = [part.strip() for part in flows.split(",")]
            if not all(part.isdigit() for part in ids):
                raise typer.BadParameter(
                    f"expected comma-separated connection ids or 'all', got {flows!r}", param_hint="--trace-flows"
                )
            changes.append(f"trace.flows=[{', '.join(ids)}]")
    if links:
        changes.append("trace.links=true")
    if interval_s is not None:
        changes.append(f"trace.interval_s={interval_s!r}")
    if events:
        changes.append("trace.events=true")
    if pcap:
        changes.append('trace.pcap="departures"')
    if pcap_hosts:
        changes.append(f"trace.pcap_hosts={json.dumps(pcap_hosts)}")
    return changes


DEFAULT_SERIES_FLOWS = 8
"""Connections whose senders `run` samples by default (``--series-flows``)."""


def _default_series(scenario: Scenario, series_flows: int) -> list[str]:
    """What `run` records unless told not to: the bottleneck series (``trace.links``) and,
    when every group's connections last the whole run (bulk, transfer, interactive), the
    first ``series_flows`` connections' series and delays. Workloads that open connections
    as they go (web, sessions, Poisson, replay) get the bottleneck series only: sampling
    connections stops the simulator from freeing finished ones, whose memory would then
    grow with the run. None for a streamed run (``[output]``) or ``series_flows`` 0."""
    config = scenario.to_dict()
    if series_flows == 0 or config.get("output"):
        return []
    # Light whatever the length: at most DEFAULT_SERIES_SAMPLES samples per series, so a long
    # run's series (and an interrupted one's tables) stay small. A [trace] table keeps its own.
    interval_s = max(DEFAULT_SERIES_INTERVAL_S, config["duration_s"] / DEFAULT_SERIES_SAMPLES)
    links = ["trace.links=true"] + ([] if config.get("trace") or interval_s == DEFAULT_SERIES_INTERVAL_S
                                    else [f"trace.interval_s={interval_s!r}"])
    if any(group["app"] not in LASTING_APPS for group in config["flows"]):
        return links
    return [*links, "trace.flow_delays=true", f"trace.first_flows={series_flows}"]


DEFAULT_SERIES_INTERVAL_S = 0.1
"""The default series' sampling interval (`[trace] interval_s`'s default) on runs up to
``DEFAULT_SERIES_SAMPLES`` times it; longer runs sample less often."""
DEFAULT_SERIES_SAMPLES = 10_000


LASTING_APPS = ("bulk", "transfer", "interactive")
"""Apps whose connections are opened once per unit (the others open one after another)."""


def _print_estimate(scenario: Scenario, *, runs: int = 1, parallel: int = 1, what: str = "run") -> Result | None:
    """Print `plan`'s estimate (wall time, disk, memory; from a pilot of ``scenario`` of at
    most a second) in one line before the work starts. Returns the pilot's result when it
    finished the whole run (a single run may use it instead of running again). A scenario
    the pilot cannot run gets no line: the work that follows reports the error."""
    from smallpipe.plan import PilotInterrupted, estimate_work

    try:
        estimate = estimate_work(scenario, runs=runs, parallel=parallel)
    except PilotInterrupted:
        error_console.print("interrupted while estimating: nothing ran", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (ConfigError, SimulationError):
        return None
    error_console.print(estimate.line(what), markup=False, highlight=False, soft_wrap=True)
    return estimate.plan.pilot.result if estimate.plan.pilot is not None else None


def _show_and_write(result: Result, out_dir: Path, name: str) -> None:
    """What `run` and `testbed` end with: the summary table, the tables and run.png
    (titled ``name``, the scenario). An interrupted run gets no plot: drawing takes
    longer than writing the tables, and Ctrl-C asked to stop now."""
    print_unwrapped(summary_table(result))
    for note in cut_short_notes(result):
        error_console.print(f"note: {note}", markup=False)
    try:
        result.write(out_dir)
        if not result.meta.get("partial") and result.stream_dir is None:  # run.png would read every row
            # Imported here: matplotlib takes a second to load, which an interrupted run skips.
            from smallpipe.plots import plot_run

            plot_run(result, out_dir / "run.png", name=name)
    except OSError as error:  # a full disk, a folder gone: keep the work elsewhere
        rescued = rescue_folder(out_dir.name)
        if rescued is not None:
            try:
                result.write(rescued)
            except OSError:
                rescued = None
        kept = f"the results are kept in {rescued}" if rescued else "no other folder took them: they are lost"
        fail("error:", f"writing {out_dir} failed ({error.strerror or error}); {kept}")
    console.print(f"results written to [bold]{out_dir}[/]")


def variant_name(changes: dict[str, Any]) -> str:
    """A folder name for a variant: its overrides, ``tcp.overhead_max_ms=0,seed=2``, with
    characters a file name cannot hold replaced."""
    text = ",".join(f"{key}={json.dumps(value) if not isinstance(value, str) else value}"
                    for key, value in sorted(changes.items()))
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", text)[:200]


def _claim_output(out: Path | None, force: bool, default: Callable[[], Path]) -> Path:
    """The folder a command writes to (``out``, else ``default()``), checked before any work:
    it must be empty unless ``force``, and writable."""
    try:
        out_dir = claim_output_directory(out, force=force) if out is not None else default()
    except OutputExists as error:
        fail("error:", str(error))
    except OSError as error:
        fail("error:", f"cannot create the results folder ({error}); pass --out a writable directory")
    check_writable_dir(out_dir, "--out")
    return out_dir


SeedOption = Annotated[int | None, typer.Option(help="Override the scenario's seed.")]
OverridesOption = Annotated[
    list[str] | None,
    typer.Option("--set", metavar="KEY=VALUE", help="Override a field, e.g. --set link.rate_bps=2e6."),
]
"""The options `run` and `testbed` share: both load a scenario with `_load_scenario`."""


@app.command()
def run(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO.toml", help="Scenario file.")],
    out: Annotated[
        Path | None,
        typer.Option(help="Output directory [default: a new results/<scenario stem>-<date>-<time>/ per run]."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Write into --out even if it holds files already.")] = False,
    seed: SeedOption = None,
    overrides: OverridesOption = None,
    trace_flows: Annotated[
        str | None,
        typer.Option(
            metavar="IDS|all",
            help="Sample these connections' senders (cwnd, ssthresh, srtt, RTO, in flight): "
            "comma-separated ids or 'all'; writes flow_series.parquet.",
        ),
    ] = None,
    trace_links: Annotated[
        bool, typer.Option(help="Per-interval bottleneck counters and backlog; writes link_series.parquet.")
    ] = False,
    trace_interval: Annotated[
        float | None, typer.Option(metavar="SECONDS", help="Sampling interval of the time series [default: 0.1].")
    ] = None,
    events: Annotated[
        bool, typer.Option(help="Every enqueue, dequeue and drop at the bottleneck; writes events.parquet.")
    ] = False,
    pcap: Annotated[
        bool, typer.Option(help="Capture both bottleneck directions as they leave the queue; writes bottleneck.pcap.")
    ] = False,
    pcap_host: Annotated[
        list[str] | None,
        typer.Option(
            metavar="HOST",
            help="Capture this end host as on its interface (sender<u> or receiver<u>, u a unit; "
            "repeatable); writes HOST.pcap.",
        ),
    ] = None,
    series_flows: Annotated[
        int,
        typer.Option(
            min=0, max=10_000, metavar="N",
            help="Record the bottleneck's time series and the first N connections' series and delays "
            "(link_series, flow_series, flow_delays; 0: none). Streamed runs record none.",
        ),
    ] = DEFAULT_SERIES_FLOWS,
) -> None:
    """Run a scenario, print a summary, write the results and run.png.

    Ctrl-C stops the run within a second: the tables so far are written, flagged
    partial (meta.json), and the exit code is 130."""
    if out is not None:
        check_output_dir(out)
    trace = _trace_overrides(trace_flows, trace_links, trace_interval, events, pcap, pcap_host)
    scenario = _load_scenario(scenario_path, seed, [*(overrides or []), *trace])
    if series := _default_series(scenario, series_flows):
        scenario = _load_scenario(scenario_path, seed, [*(overrides or []), *trace, *series])
    try:  # what the simulator would ignore, refused before the folder is made
        check_simulable(scenario)
    except ConfigError as error:
        fail("invalid scenario", f"{scenario_path}: {error}")
    out_dir = _claim_output(out, force, lambda: new_run_directory(Path("results"), scenario_path.stem))
    interrupted = False
    piloted = _print_estimate(scenario)
    streamed = bool(scenario.to_dict().get("output"))
    try:
        if piloted is not None and not streamed:  # the pilot ran it all: the same run, deterministic
            result = piloted
        else:
            with SimulationProgress(error_console, f"simulating {scenario_path.name}") as progress, \
                    reporting_progress(progress.start):
                result = simulate(scenario, stream_dir=out_dir)
    except Interrupted as stop:
        result, interrupted = stop.result, True
    except ConfigError as error:  # found at set-up, e.g. a malformed replayed log
        fail("invalid scenario:", str(error))
    except SimulationError as error:
        show_error("simulation failed:", str(error))
        raise typer.Exit(EXIT_SIMULATION_ERROR) from None
    _show_and_write(result, out_dir, scenario_path.stem)
    if interrupted:
        error_console.print(
            f"interrupted: the tables cover the first {result.meta['stopped_at_ns'] / 1e9:g} s "
            f"(meta.json: partial = true)",
            markup=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED)


@app.command()
def plot(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="Folders written by `smallpipe run`.")],
    out: Annotated[
        Path | None,
        typer.Option(help="PNG to write [default: RUN_DIR/run.png for one run; overlay.png here for several]."),
    ] = None,
) -> None:
    """Redraw a run's run.png from its tables, or overlay several runs' bottleneck queue,
    queueing delay and throughput over time (one colour per run)."""
    from smallpipe.plots import plot_run, plot_runs

    runs = []
    for run_dir in run_dirs:
        try:
            runs.append((run_dir.name, Result.read(run_dir)))
        except FileNotFoundError as error:
            fail("error:", f"{run_dir}: {error}")
    path = out if out is not None else (run_dirs[0] / "run.png" if len(runs) == 1 else Path("overlay.png"))
    if path.is_dir():
        fail("error:", f"--out {path} is a directory; expected the path of a PNG file")
    check_writable_dir(path.parent, f"--out {path}: the folder")
    try:
        if len(runs) == 1:
            plot_run(runs[0][1], path, name=runs[0][0])
        else:
            plot_runs(runs, path)
    except ValueError as error:
        fail("error:", str(error))
    except OSError as error:
        fail("error:", f"writing {path} failed ({error.strerror or error})")
    console.print(f"plot written to [bold]{path}[/]")


@app.command()
def plan(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO.toml", help="Scenario file.")],
    seed: SeedOption = None,
    overrides: OverridesOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
    series_flows: Annotated[
        int, typer.Option(min=0, max=10_000, metavar="N", help="As `run --series-flows` (the series `run` records).")
    ] = DEFAULT_SERIES_FLOWS,
) -> None:
    """Say what `run` would do, before doing it: the scenario as simulated (--set applied
    first), the estimated memory, wall time and disk, and what would be refused.

    Wall time and disk are extrapolated from a pilot: the run itself, stopped after about
    a second (the pace of its first seconds; a run that speeds up or slows down later
    differs). Exit 2 when the run would be refused."""
    from smallpipe.plan import PILOT_WALL_S, human_bytes, human_seconds, plan_run

    changes = dict(parse_override(assignment) for assignment in overrides or [])
    if seed is not None:
        changes["seed"] = seed
    try:
        with printing_notes():
            try:  # what `run` adds; a scenario refused as it stands is planned (and refused) without
                series = _default_series(Scenario.from_toml(scenario_path, changes), series_flows)
            except ConfigError:
                series = []
            planned = plan_run(scenario_path, changes | dict(parse_override(change) for change in series))
    except ConfigError as error:
        fail("invalid scenario", f"{scenario_path}: {error}")
    except FileNotFoundError as error:
        fail("error:", str(error))
    wall_s, disk_bytes, pilot = planned.wall_s, planned.disk_bytes, planned.pilot
    if as_json:
        typer.echo(json.dumps({
            "scenario": planned.config, "memory_bytes": planned.memory.total_bytes, "wall_s": wall_s,
            "disk_bytes": disk_bytes, "refused": planned.refusal,
            "pilot": None if pilot is None else {"simulated_s": pilot.simulated_s, "wall_s": pilot.wall_s,
                                                 "finished": pilot.finished},
        }))
    else:
        typer.echo(json.dumps(planned.config, indent=2))
        memory = (f"{human_bytes(planned.memory.total_bytes)} "
                  f"({planned.memory.units:,} units, {planned.memory.slice_rows:.3g} flow-slice rows)")
        rows = [("estimated memory", memory)]
        if pilot is not None and pilot.finished:
            rows.append(("wall time", f"{human_seconds(pilot.wall_s)} (the whole run, as the pilot)"))
        elif pilot is not None:
            pace = f"a pilot simulated {pilot.simulated_s:.3g} of {planned.duration_s:g} s in {pilot.wall_s:.2g} s"
            rows.append(("wall time", f"about {human_seconds(wall_s or math.inf)} ({pace})"))
        if disk_bytes is not None:
            rows.append(("disk", f"about {human_bytes(disk_bytes)} of tables"))
        rows.append(("refused", planned.refusal or "no"))
        for name, value in rows:
            typer.echo(f"{name}: {value}")
        if pilot is None and planned.refusal is None:
            typer.echo(f"(no pilot: it runs the scenario for up to {PILOT_WALL_S:g} s)")
    if planned.refusal is not None:
        raise typer.Exit(EXIT_CONFIG_ERROR)


@app.command()
def testbed(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO.toml", help="Scenario file.")],
    out: Annotated[
        Path | None, typer.Option(help="Output directory [default: results/<scenario stem>-testbed/].")
    ] = None,
    force: Annotated[bool, typer.Option(help="Write into the output directory even if it holds files already.")] = False,
    seed: SeedOption = None,
    overrides: OverridesOption = None,
    cc: Annotated[
        str | None,
        typer.Option(help="Congestion control of every sender without its group's own flows[].tcp.congestion: reno, cubic or bbr [default: the scenario's tcp.congestion]."),
    ] = None,
    linux_tcp: Annotated[
        bool, typer.Option(help="Keep Linux's RACK, tail loss probes and F-RTO (default: off, as in the RFCs; "
                          "RACK stays on from Linux 6.17).")
    ] = False,
) -> None:
    """Run a scenario on real Linux TCP in network namespaces through smallpipe-box (root).

    Never writes into a folder that holds files unless --force. Ctrl-C ends the run early:
    the tables measured so far are written, flagged partial (meta.json), and the exit code is 130."""
    from smallpipe.testbed import TestbedError, run_testbed

    scenario = _load_scenario(scenario_path, seed, overrides)
    out_dir = out if out is not None else Path("results") / f"{scenario_path.stem}-testbed"
    check_output_dir(out_dir)
    out_dir = _claim_output(out_dir, force, lambda: out_dir)
    interrupted = False
    try:
        with console.status(f"running {scenario_path.name} on the testbed…"):
            result = run_testbed(scenario, congestion_control=cc, rfc=not linux_tcp, out=out_dir / "raw")
    except Interrupted as stop:
        result, interrupted = stop.result, True
    except KeyboardInterrupt:  # before the traffic started: nothing measured yet
        error_console.print(f"interrupted before the run began; its set-up is in {out_dir / 'raw'}", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except ConfigError as error:
        fail("not runnable on the testbed", f"{scenario_path}: {error}")
    except TestbedError as error:
        show_error("testbed failed:", str(error))
        raise typer.Exit(EXIT_SIMULATION_ERROR) from None
    _show_and_write(result, out_dir, f"{scenario_path.stem} (testbed)")
    if interrupted:
        error_console.print(
            f"interrupted: the tables cover the first {result.meta['stopped_at_ns'] / 1e9:.3g} s "
            "(meta.json: partial = true)",
            markup=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED)


@app.command()
def bench(
    flows: Annotated[int, typer.Option(help="Number of bulk flows.")] = 200,
    rate_bps: Annotated[int, typer.Option(help="Bottleneck rate.")] = 2_000_000,
    duration_s: Annotated[float, typer.Option(help="Simulated time.")] = 1000.0,
    queue: Annotated[str, typer.Option(help="Bottleneck discipline (a `kind`, with its defaults).")] = "droptail",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON line instead of a table.")] = False,
    fifo_hops: Annotated[str, typer.Option(help="The scenario's fifo_hops: events or computed.")] = "events",
) -> None:
    """Time the simulator on the TAQ paper's Figure 2 scenario (DropTail unless --queue)."""
    try:
        scenario = bench_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=duration_s, queue=queue,
                                  fifo_hops=fifo_hops)
    except ConfigError as error:
        fail("invalid benchmark parameters:", str(error))
    result = _run_with_status(scenario, f"simulating {flows} flows for {duration_s:g} s…")
    meta = result.meta
    wall_seconds = meta["wall_seconds"]
    bottleneck_packets = int(result.links.filter(pl.col("name") == "bottleneck")["tx_pkts"].sum())
    report = {
        "flows": flows,
        "rate_bps": rate_bps,
        "queue": queue,
        "fifo_hops": fifo_hops,
        "duration_s": meta["duration_ns"] / 1e9,
        "events": meta["events"],
        "packets": meta["packets"],
        "wall_seconds": wall_seconds,
        "packets_per_second": meta["packets"] / wall_seconds,
        "bottleneck_packets": bottleneck_packets,
        "bottleneck_packets_per_second": bottleneck_packets / wall_seconds,
        "events_per_second": meta["events"] / wall_seconds,
        "simulated_seconds_per_second": meta["duration_ns"] / 1e9 / wall_seconds,
        "version": __version__,
    }
    if as_json:
        typer.echo(json.dumps(report))
        return
    table = Table(title=f"smallpipe bench: {flows} flows, {rate_bps / 1e6:g} Mbit/s, {queue}, {duration_s:g} s")
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_row("wall time", f"{wall_seconds:.2f} s")
    table.add_row("simulated packets per wall second", f"{report['packets_per_second']:,.0f}")
    table.add_row("bottleneck packets per wall second", f"{report['bottleneck_packets_per_second']:,.0f}")
    table.add_row("events per wall second", f"{report['events_per_second']:,.0f}")
    table.add_row("simulated seconds per wall second", f"{report['simulated_seconds_per_second']:,.1f}")
    console.print(table)


def _cell(value: Any) -> str:
    """A table cell: a float to 3 significant digits, "—" where there is no value (a
    figure's column that does not apply to a row), never "None" or "nan"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _durations(low_s: float, high_s: float) -> str:
    """A measured range in one unit: ``45–66 s``, ``3–18 min``, ``5 h 22 min–5 h 50 min``."""
    if high_s < 600:
        low, high = f"{low_s:.0f}", f"{high_s:.0f} s"
    elif high_s < 2 * 3600:
        low, high = f"{low_s / 60:.0f}", f"{high_s / 60:.0f} min"
    else:
        low, high = (f"{s // 3600:.0f} h {s % 3600 / 60:.0f} min" for s in (low_s, high_s))
    return high if low == high.split()[0] or f"{low} " + " ".join(high.split()[1:]) == high else f"{low}–{high}"


def _list_reproductions() -> None:
    """`reproduce list`: per figure its name, the wall time of a full run (class and the
    pages' measured range), whether it needs root, and what it reproduces in full."""
    from smallpipe.experiments import (
        REPRODUCTIONS,
        WALL_TIMES_S,
        description,
        needs_root,
        time_class,
    )

    width = max(60, min(console.width, 110))
    typer.echo("Wall time of a full run (--quick is shorter), as measured on a 2-core machine, quiet to "
               "shared; root: the testbed's network namespaces need it.\n")
    for name in REPRODUCTIONS:
        low, high = WALL_TIMES_S[name]
        root = "root: yes (network namespaces)" if needs_root(name) else "root: no"
        typer.echo(f"{name} · {time_class(high)} ({_durations(low, high)}) · {root}")
        typer.echo(textwrap.fill(description(name), width=width, initial_indent="    ", subsequent_indent="    "))


@app.command()
def reproduce(
    figure: Annotated[str, typer.Argument(help="A figure name; `smallpipe reproduce list` lists them.")],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Directory for the table (CSV) and the plot (PNG) "
            "[default: results/reproductions/, with --quick results/reproductions/quick/; "
            "a variant (--set) in variants/<its overrides>/ below it]."
        ),
    ] = None,
    quick: Annotated[bool, typer.Option(help="Shorter runs (as the test suite uses).")] = False,
    force: Annotated[bool, typer.Option(help="Replace the figure's files in the output directory.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of every run.")] = 1,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Override a field in every run of the figure (a variant, to test one cause at a time), "
            "e.g. --set tcp.overhead_max_ms=0. The CSV records it.",
        ),
    ] = None,
) -> None:
    """Reproduce a figure of the papers; prints our numbers (docs/reproductions/ has the paper's beside them).

    Never replaces the figure's files without --force. Ctrl-C keeps the runs that ended in
    <figure>-partial-<date>/ (meta.json: partial = true) and exits 130."""
    from smallpipe.experiments import REPRODUCTIONS

    if figure == "list":
        _list_reproductions()
        return
    if not 0 <= seed < 2**64:
        fail("invalid option", f"--seed {seed} is not allowed; expected a whole number from 0 to {2**64 - 1}")
    if figure not in REPRODUCTIONS:
        fail("unknown figure", f"{figure!r}; expected one of: {', '.join(REPRODUCTIONS)}")
    changes = dict(parse_override(assignment) for assignment in overrides or [])
    if out is None:  # a quick run never overwrites the full reproduction's files, a variant the baseline's
        out = Path("results/reproductions") / ("quick" if quick else "")
        if changes:
            out = out / "variants" / variant_name(changes)
    check_output_dir(out)
    check_writable_dir(out)  # existing files are checked by name below
    # Checkpoints (``*.points.jsonl``) are how a long figure resumes: they go in, not in the way.
    mine = [p for p in sorted(out.iterdir()) if p.name.startswith((f"{figure}.", f"{figure}-"))]
    checkpoints = [p for p in mine if p.name.endswith(".points.jsonl")]
    if (earlier := [p.name for p in mine if p not in checkpoints]) and not force:
        fail("error:", f"{out} holds {figure}'s results already ({', '.join(earlier)}); pass --force to "
             "replace them, or --out another folder")
    staging = Path(tempfile.mkdtemp(prefix=f".{figure}-", dir=out))  # moved into out once complete
    for checkpoint in checkpoints:
        shutil.copy2(checkpoint, staging / checkpoint.name)
    measured = MeasuredRuns()
    label = f"reproducing {figure}{' (quick)' if quick else ''}"
    from smallpipe.plots import stamping_figures

    stamp = stamping_figures(f"variant: {variant_name(changes)}") if changes else contextlib.nullcontext()
    try:
        with printing_notes(), overriding(changes), keeping_results(measured.add), stamp, SimulationProgress(
            error_console, label, show_after_s=0.0, count_runs=True
        ) as progress, reporting_progress(progress.start):
            table = REPRODUCTIONS[figure].reproduce(staging, quick=quick, seed=seed)
    except ConfigError as error:
        shutil.rmtree(staging, ignore_errors=True)
        fail("invalid override", f"for {figure}: {error}")
    except OSError as error:  # the figure's own write failed (a full disk): keep its runs
        shutil.rmtree(staging, ignore_errors=True)
        rescued = rescue_folder(f"{figure}-partial")
        if rescued is not None:
            try:
                shutil.rmtree(rescued)
                measured.write(rescued, {"figure": figure, "quick": quick, "seed": seed, "overrides": changes})
            except OSError:
                rescued = None
        where = f"its {len(measured.runs)} runs are kept in {rescued}" if rescued else "no other folder took its runs"
        fail("error:", f"{figure}: writing into {out} failed ({error.strerror or error}); {where}")
    except KeyboardInterrupt:
        kept = new_run_directory(out, f"{figure}-partial")
        kept.rmdir()
        about = {"figure": figure, "quick": quick, "seed": seed, "overrides": changes}
        measured.write(kept, about)
        for checkpoint in staging.glob("*.points.jsonl"):
            os.replace(checkpoint, out / checkpoint.name)
        shutil.rmtree(staging, ignore_errors=True)
        error_console.print(
            f"interrupted: {figure} wrote no table; its {len(measured.runs)} runs so far (the last one stopped "
            f"early if it was running) are kept in {kept} (meta.json: partial = true)",
            markup=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    made = sorted(staging.iterdir())
    if (clashes := [m.name for m in made if (out / m.name).exists()]) and not force:
        kept = new_run_directory(out, figure)  # a name the check above could not foresee
        kept.rmdir()
        os.replace(staging, kept)
        fail("error:", f"{out} holds {', '.join(clashes)} already; not replaced (pass --force): this "
             f"reproduction's files are kept in {kept}")
    for path in made:
        target = out / path.name
        if target.is_dir():
            shutil.rmtree(target)  # --force, or nothing there
        os.replace(path, target)
    staging.rmdir()
    shown = Table(title=figure)
    for column in table.columns:
        shown.add_column(column, justify="right", no_wrap=True)
    for row in table.iter_rows():
        shown.add_row(*(_cell(v) for v in row))
    print_unwrapped(shown)
    console.print(f"written to [bold]{out}[/]")


@app.command()
def version() -> None:
    """Print the smallpipe version."""
    typer.echo(__version__)


class SweepBackend(str, Enum):
    local = "local"
    ray = "ray"


@app.command()
def sweep(
    grid_path: Annotated[Path, typer.Argument(metavar="GRID.toml", help="Grid file: a base scenario and [grid].")],
    db: Annotated[
        Path | None, typer.Option(help="Results database [default: results/<grid stem>.duckdb].")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(min=0, help="Worker processes [default: CPU count]; 0 runs in this process."),
    ] = None,
    parquet_dir: Annotated[
        Path | None, typer.Option(help="Per-point Parquet folders [default: <db stem>_runs/ beside the db].")
    ] = None,
    retry_errors: Annotated[bool, typer.Option(help="Re-run points recorded as errors.")] = False,
    backend: Annotated[
        SweepBackend, typer.Option(help="Run points on local processes or as Ray tasks.")
    ] = SweepBackend.local,
    address: Annotated[
        str | None,
        typer.Option(help="Ray cluster to join (HOST:PORT of `ray start --head`) [default: a Ray instance on this machine]."),
    ] = None,
) -> None:
    """Run the Cartesian product of a grid into DuckDB; re-run the same command to resume."""
    from concurrent.futures.process import BrokenProcessPool

    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from smallpipe.store import StoreError
    from smallpipe.sweep import GridError, load_grid, run_sweep

    if address is not None and backend is not SweepBackend.ray:
        error_console.print(
            f"[bold red]error:[/] --address {escape(address)} is not allowed with --backend {backend.value}; "
            "it names a Ray cluster (--backend ray)"
        )
        raise typer.Exit(EXIT_CONFIG_ERROR)
    if workers == 0 and backend is SweepBackend.ray:
        error_console.print(
            "[bold red]error:[/] --workers 0 (run in this process) is not allowed with --backend ray; expected at least 1"
        )
        raise typer.Exit(EXIT_CONFIG_ERROR)
    checked_at = [time.monotonic()]

    def planning(checked: int, total: int) -> None:  # a large grid takes a while to check
        if time.monotonic() - checked_at[0] >= PLAIN_EVERY_S:
            checked_at[0] = time.monotonic()
            error_console.print(f"sweep {grid_path.name}: checked {checked:,} of {total:,} points", markup=False,
                                highlight=False)

    try:
        with printing_notes():
            grid = load_grid(grid_path, on_progress=planning)
    except (GridError, FileNotFoundError) as error:
        fail("invalid grid:", str(error))
    except KeyboardInterrupt:
        error_console.print(f"interrupted while checking the grid of {grid_path.name}: nothing ran", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if grid.runtime == "testbed":
        if backend is SweepBackend.ray:
            fail("error:", f"{grid_path}: runtime = \"testbed\" is not allowed with --backend ray; "
                 "testbed points run one at a time on this machine (expected --backend local)")
        if workers not in (None, 0, 1):
            error_console.print(f"note: --workers {workers} ignored: testbed points run one at a time "
                                "(real time, quiet cores)", markup=False)
    runner = None
    if backend is SweepBackend.ray:
        from smallpipe.sweep_ray import RayUnavailableError, import_ray, ray_runner

        try:
            import_ray()  # fail before the store is touched
        except RayUnavailableError as error:
            error_console.print(f"[bold red]error:[/] {escape(str(error))}")
            raise typer.Exit(EXIT_CONFIG_ERROR) from None
        runner = ray_runner(address=address, workers=workers)
    db_path = db if db is not None else Path("results") / f"{grid_path.stem}.duckdb"
    check_database(db_path, "--db", writable=True)
    if parquet_dir is not None:
        check_output_dir(parquet_dir, "--parquet-dir")
    cores = os.cpu_count() or 1
    if grid.runtime == "testbed":
        real_s = sum(float(p.scenario["duration_s"]) for p in grid.points)
        error_console.print(f"estimate for {len(grid.points):,} points: about {real_s:g} s wall "
                            "(the testbed runs in real time, one point at a time)", markup=False, highlight=False)
    elif grid.points:
        _print_estimate(grid.points[0].scenario, runs=len(grid.points),
                        parallel=workers or (cores if workers is None else 1), what="point")
    if workers is not None and workers > cores:
        error_console.print(
            f"warning: --workers {workers} is more than the {cores} cores here; "
            "the extra workers only share the cores (and their memory)",
            markup=False,
        )
    counts = {"ok": 0, "error": 0}
    plain = not error_console.is_terminal  # logs and pipes get a line every few seconds
    started_s = last_line_s = time.monotonic()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ok {task.fields[ok]} · errors {task.fields[error]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=error_console,
    )
    task = progress.add_task(f"sweep {grid_path.name}", total=None, ok=0, error=0)

    def on_start(total: int) -> None:
        progress.update(task, total=total)
        if plain:
            error_console.print(f"sweep {grid_path.name}: {total} points to run", markup=False, highlight=False)

    def on_point(record: dict[str, Any]) -> None:
        nonlocal last_line_s
        counts[record["status"]] += 1
        progress.update(task, advance=1, ok=counts["ok"], error=counts["error"])
        if record["status"] == "error":
            progress.console.print(f"[red]point {record['point_id']} failed:[/] {escape(record['error'])}")
        now_s = time.monotonic()
        total = progress.tasks[0].total
        done = counts["ok"] + counts["error"]
        if plain and (now_s - last_line_s >= PLAIN_EVERY_S or done == total):
            last_line_s = now_s
            left = eta_s(now_s - started_s, done, total or done)
            error_console.print(
                f"sweep {grid_path.name}: {done} of {total} points (ok {counts['ok']}, errors {counts['error']}), "
                f"{now_s - started_s:.0f} s wall, ETA {'?' if left is None else f'{left:.0f} s'}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    try:
        with progress:
            outcome = run_sweep(
                grid,
                db_path,
                run_root=parquet_dir,
                workers=workers,
                retry_errors=retry_errors,
                on_start=on_start,
                on_point=on_point,
                runner=runner,
            )
    except StoreError as error:
        fail("error:", str(error))
    except OSError as error:  # a full disk: the points that finished are in the store
        fail("error:", f"a write failed ({error.strerror or error}); the points that finished are kept in "
             f"{db_path}: free space and run the same command to resume")
    except BrokenProcessPool as error:
        error_console.print(f"[bold red]sweep stopped:[/] {escape(str(error))}")
        raise typer.Exit(EXIT_SIMULATION_ERROR) from None
    except KeyboardInterrupt:
        error_console.print(
            f"[yellow]interrupted[/] after {counts['ok'] + counts['error']} points; "
            "finished points are in the database: run the same command to resume"
        )
        raise typer.Exit(130) from None
    console.print(
        f"{outcome.total} points: {outcome.ok} ran ok, {outcome.error} failed, "
        f"{outcome.skipped_ok} already done, {outcome.skipped_error} earlier errors skipped"
        f"{' (--retry-errors to re-run them)' if outcome.skipped_error else ''}; "
        f"{outcome.wall_seconds:.1f} s wall. Results: [bold]{db_path}[/]"
    )
    if outcome.error or outcome.skipped_error:
        raise typer.Exit(EXIT_SIMULATION_ERROR)


@app.command()
def report(
    db: Annotated[
        Path,
        typer.Argument(metavar="DB|RUN_DIR", help="Results database written by `smallpipe sweep`, or a run folder."),
    ],
    out: Annotated[
        Path | None, typer.Option(help="HTML file [default: DB with .html; RUN_DIR/report.html].")
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace the HTML file if it exists.")] = False,
) -> None:
    """Render a self-contained HTML report (tables and plots) of a sweep's results, or of
    one run folder (its links, figure over time, per-flow delay and loss with histograms)."""
    import duckdb

    from smallpipe.report import write_report
    from smallpipe.store import StoreError

    if db.is_dir():
        return _report_run(db, out, force)
    out_path = out if out is not None else db.with_suffix(".html")
    check_database(db, "DB", writable=False)
    if out_path.is_dir():
        fail("error:", f"--out {out_path} is a directory; expected the path of an HTML file")
    if out_path.exists() and not force:
        fail("error:", f"--out {out_path} exists (an earlier report?); pass --force to replace it")
    check_output_dir(out_path.parent, f"--out {out_path}: the folder")
    check_writable_dir(out_path.parent, f"--out {out_path}: the folder")
    try:
        with console.status(f"rendering {db}…"):
            write_report(db, out_path)
    except (FileNotFoundError, StoreError) as error:
        fail("error:", str(error))
    except duckdb.Error as error:
        fail("error:", f"DB {db} cannot be read ({str(error).splitlines()[0]}); expected a whole database "
             "written by `smallpipe sweep` (a truncated copy? re-copy it, or re-run the sweep)")
    except OSError as error:
        fail("error:", f"writing --out {out_path} failed ({error.strerror or error})")
    console.print(f"report written to [bold]{out_path}[/]")



def _report_run(run_dir: Path, out: Path | None, force: bool) -> None:
    """`report` of a run folder (see run_report.py)."""
    from smallpipe.run_report import write_run_report

    if not (run_dir / "meta.json").is_file():
        fail("error:", f"RUN_DIR {run_dir} holds no meta.json; expected a folder written by `smallpipe run` "
             "(or a sweep's DuckDB file)")
    out_path = out if out is not None else run_dir / "report.html"
    if out_path.is_dir():
        fail("error:", f"--out {out_path} is a directory; expected the path of an HTML file")
    if out_path.exists() and not force:
        fail("error:", f"--out {out_path} exists (an earlier report?); pass --force to replace it")
    check_writable_dir(out_path.parent, f"--out {out_path}: the folder")
    try:
        with console.status(f"rendering {run_dir}…"):
            write_run_report(run_dir, out_path)
    except FileNotFoundError as error:
        fail("error:", str(error))
    except OSError as error:
        fail("error:", f"writing --out {out_path} failed ({error.strerror or error})")
    console.print(f"report written to [bold]{out_path}[/]")


def _interval(metric: Any, row: dict[str, Any], name: str) -> str:
    """``mean ± half-width``, or ``mean [lo, hi]`` where the interval is clipped to the
    metric's range (a share's interval that would go below 0)."""
    mean, half, low, high = (row[f"{name}_{part}"] for part in ("mean", "ci95", "lo", "hi"))
    if math.isnan(half) or (math.isclose(mean - low, half) and math.isclose(high - mean, half)):
        return f"{metric.show(mean)} ± {metric.show(half)}"
    return f"{metric.show(mean)} [{metric.show(low)}, {metric.show(high)}]"


def _difference(metric: Any, row: dict[str, Any]) -> str:
    """A paired difference: ``+0.012 ± 0.004 (+3.1%; p 0.02 / 0.12)``."""
    diff, half = row["diff_mean"], row["diff_ci95"]
    sign = "+" if diff > 0 else ""
    relative = "n/a" if math.isnan(row["relative_change"]) else f"{row['relative_change']:+.1%}"
    p_values = " / ".join("n/a" if math.isnan(p) else f"{p:.2g}" for p in (row["t_p"], row["sign_p"]))
    return f"{sign}{metric.show(diff)} ± {metric.show(half)} ({relative}; p {p_values})"


@app.command()
def compare(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO.toml", help="Scenario file.")],
    queue: Annotated[
        str, typer.Option(help="Disciplines to compare, comma-separated `kind`s, e.g. droptail,fq_codel,taq.")
    ],
    seeds: Annotated[
        int, typer.Option(min=2, help="Replications per discipline: seeds s, s+1, … from the scenario's seed.")
    ] = 10,
    workers: Annotated[
        int | None,
        typer.Option(min=0, help="Worker processes [default: CPU count]; 0 runs in this process."),
    ] = None,
    overrides: OverridesOption = None,
    out: Annotated[
        Path | None, typer.Option(help="Output directory [default: results/compare-<scenario stem>/].")
    ] = None,
    force: Annotated[
        bool, typer.Option(help="Write into an output directory that holds another comparison (its table is replaced).")
    ] = False,
) -> None:
    """Run every discipline over seeds in parallel; print mean ± 95% CI per metric, plot
    overlaid curves. Resumable: re-run the same command to finish an interrupted one."""
    from concurrent.futures.process import BrokenProcessPool

    from rich.markup import escape
    from rich.measure import Measurement
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from smallpipe.compare import METRICS, CompareError, plan_comparison, run_compare
    from smallpipe.store import StoreError

    kinds = [kind.strip() for kind in queue.split(",")]
    if not all(kinds):
        error_console.print(f"[bold red]invalid --queue[/] {escape(queue)!r}: expected comma-separated kinds")
        raise typer.Exit(EXIT_CONFIG_ERROR)
    base = _load_scenario(scenario_path, None, overrides)
    first_seed = base["seed"]
    try:
        plan = plan_comparison(base, kinds, range(first_seed, first_seed + seeds), path=scenario_path)
    except (ConfigError, CompareError) as error:
        error_console.print(f"[bold red]cannot compare:[/] {escape(str(error))}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    for kind, fields in plan.dropped.items():
        if fields:
            console.print(f"note: {kind} does not take {', '.join(fields)}; dropped for it", markup=False)
    out_dir = out if out is not None else Path("results") / f"compare-{scenario_path.stem}"
    check_output_dir(out_dir)
    check_writable_dir(out_dir)
    # A comparison resumes in its folder, and another one's table there can be made again from
    # the runs it keeps; not one an older smallpipe made (its runs are not this version's).
    asked = {"scenario": base.to_dict(), "queue": kinds, "seeds": list(range(first_seed, first_seed + seeds)),
             "version": __version__}
    record = out_dir / "compare.json"
    try:
        earlier = json.loads(record.read_text()) if record.exists() else None
    except (OSError, ValueError):
        earlier = {"version": "unknown (compare.json unreadable)"}
    if earlier is not None and earlier.get("version") != __version__ and not force:
        fail("error:", f"{out_dir} holds a comparison made by smallpipe {earlier.get('version')} (this is "
             f"{__version__}, whose runs it would not reuse); pass --force to replace its table, or --out another folder")
    record.write_text(json.dumps(asked, indent=2) + "\n")
    _print_estimate(plan.grid.points[0].scenario, runs=len(plan.grid.points),
                    parallel=workers or ((os.cpu_count() or 1) if workers is None else 1))
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=error_console,
    )
    task = progress.add_task(f"compare {scenario_path.name}", total=None)
    try:
        with progress:
            comparison = run_compare(
                plan, out_dir, workers=workers,
                on_start=lambda n: progress.update(task, total=n),
                on_point=lambda _: progress.update(task, advance=1),
            )
    except StoreError as error:
        error_console.print(f"[bold red]error:[/] {escape(str(error))}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    except OSError as error:  # a full disk: the runs that finished are in the store
        fail("error:", f"writing into {out_dir} failed ({error.strerror or error}); the runs that finished are "
             f"kept in {out_dir / 'compare.duckdb'}: free space and run the same command to finish")
    except BrokenProcessPool as error:
        error_console.print(f"[bold red]compare stopped:[/] {escape(str(error))}")
        raise typer.Exit(EXIT_SIMULATION_ERROR) from None
    except KeyboardInterrupt:
        error_console.print("[yellow]interrupted[/]; finished runs are kept: run the same command to resume")
        raise typer.Exit(130) from None
    table = Table(title=f"{scenario_path.name}: mean ± 95% CI over {seeds} seeds")
    table.add_column("discipline", no_wrap=True)
    table.add_column("runs", justify="right", no_wrap=True)
    for name in comparison.metrics:
        table.add_column(METRICS[name].label, justify="right", no_wrap=True)
    for row in comparison.table.iter_rows(named=True):
        cells = [_interval(METRICS[name], row, name) for name in comparison.metrics]
        table.add_row(row["discipline"], str(row["seeds"]), *cells)
    # As wide as it needs: a terminal folds a long line, but Rich never splits a number.
    natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
    Console(width=max(console.width, natural)).print(table)
    if comparison.paired.height:
        baseline = comparison.paired["baseline"][0]
        paired = Table(title=f"paired over the same seeds, against {baseline}: mean difference ± 95% CI "
                             "(relative change; p of the paired t-test / of the sign test)")
        paired.add_column("metric", no_wrap=True)
        others = list(dict.fromkeys(comparison.paired["discipline"].to_list()))
        for kind in others:
            paired.add_column(f"{kind} − {baseline}", justify="right", no_wrap=True)
        for name in comparison.metrics:
            rows = {r["discipline"]: r for r in comparison.paired.filter(pl.col("metric") == name).iter_rows(named=True)}
            paired.add_row(METRICS[name].label, *(_difference(METRICS[name], rows[kind]) for kind in others))
        natural = Measurement.get(console, console.options.update_width(10_000), paired).maximum
        Console(width=max(console.width, natural)).print(paired)
    outcome = comparison.outcome
    console.print(
        f"{outcome.total} runs: {outcome.ok} ran, {outcome.skipped_ok} already done, {outcome.error} failed; "
        f"{outcome.wall_seconds:.1f} s wall. Table {comparison.csv}, paired {comparison.paired_csv}, curves {comparison.png}, "
        f"runs {comparison.db} (smallpipe report {comparison.db})",
        markup=False, soft_wrap=True,
    )
    for failed, message in outcome.errors:
        error_console.print(f"run {failed} failed: {message}", markup=False)
    if outcome.error or outcome.skipped_error:
        raise typer.Exit(EXIT_SIMULATION_ERROR)
