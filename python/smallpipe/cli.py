"""The ``smallpipe`` command line: run scenarios, benchmark the simulator."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer
from rich.console import Console
from rich.table import Table

from smallpipe import metrics
from smallpipe._smallpipe import ConfigError, SimulationError, __version__
from smallpipe.plots import plot_run
from smallpipe.presets import taq_dumbbell
from smallpipe.result import Result, overriding, simulate
from smallpipe.scenario import Scenario

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

EXIT_CONFIG_ERROR = 2
"""Exit code for an invalid scenario (as for a usage error)."""
EXIT_SIMULATION_ERROR = 1


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
    except SimulationError as error:
        error_console.print(f"[bold red]simulation failed:[/] {error}")
        raise typer.Exit(EXIT_SIMULATION_ERROR) from None


def _format_or_na(value: float | None, spec: str) -> str:
    """``format(value, spec)``, or ``n/a`` for a missing value (e.g. no slice carried data)."""
    return "n/a" if value is None or math.isnan(value) else format(value, spec)


def summary_table(result: Result) -> Table:
    """The headline numbers of a run, as a Rich table."""
    meta = result.meta
    duration_s = meta["duration_ns"] / 1e9
    bottleneck = result.links.filter(pl.col("name") == "bottleneck")
    per_slice = metrics.jain_per_slice(result.slices, flows=result.flows)
    zero_byte_share = per_slice.select(
        (pl.col("zero_share") * pl.col("n_flows")).sum() / pl.col("n_flows").sum()
    ).item()
    wall_seconds = meta["wall_seconds"]

    on_testbed = meta.get("runtime") == "testbed"
    table = Table(title="smallpipe testbed (Linux TCP)" if on_testbed else "smallpipe run", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    rows = [
        ("flows", f"{result.flows.height}"),
        ("duration" if on_testbed else "simulated duration", f"{duration_s:g} s"),
        ("bottleneck utilization", f"{metrics.utilization(result.links):.1%}"),
        ("bottleneck loss rate", f"{bottleneck.get_column('loss_rate')[0]:.2%}"),
        (
            "long-term Jain index",
            f"{metrics.long_term_jain(result.flows, duration_ns=meta['duration_ns']):.3f}",
        ),
        (
            f"mean per-slice Jain ({meta['slice_ns'] / 1e9:g} s slices)",
            _format_or_na(per_slice.select(pl.col("jain").mean()).item(), ".3f"),
        ),
        (
            "zero-byte flow-slices",
            _format_or_na(zero_byte_share, ".1%"),
        ),
        ("timeouts", f"{result.flows.get_column('timeouts').sum()}"),
        ("wall time", f"{wall_seconds:.2f} s"),
    ]
    if not on_testbed:  # the testbed runs in real time: its packet rate says nothing of speed
        rows.append(
            ("packets per wall second", f"{meta['packets'] / wall_seconds:,.0f}" if wall_seconds > 0 else "n/a")
        )
    for row in rows:
        table.add_row(*row)
    return table


def _load_scenario(scenario_path: Path, seed: int | None, overrides: list[str] | None) -> Scenario:
    """The scenario file with ``--seed`` and ``--set`` applied; exits with a message if invalid."""
    changes = dict(parse_override(assignment) for assignment in overrides or [])
    if seed is not None:
        changes["seed"] = seed
    try:
        return Scenario.from_toml(scenario_path).with_overrides(changes)
    except ConfigError as error:
        error_console.print(f"[bold red]invalid scenario[/] {scenario_path}: {error}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    except FileNotFoundError as error:
        error_console.print(f"[bold red]error:[/] {error}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None


def _trace_overrides(
    flows: str | None, links: bool, interval_s: float | None, events: bool, pcap: bool
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
    return changes


def _show_and_write(result: Result, out_dir: Path) -> None:
    """What `run` and `testbed` end with: the summary table, the tables and run.png."""
    console.print(summary_table(result))
    result.write(out_dir)
    plot_run(result, out_dir / "run.png")
    console.print(f"results written to [bold]{out_dir}[/]")


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
        Path | None, typer.Option(help="Output directory [default: results/<scenario stem>/].")
    ] = None,
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
) -> None:
    """Run a scenario, print a summary, write the results and run.png."""
    trace = _trace_overrides(trace_flows, trace_links, trace_interval, events, pcap)
    scenario = _load_scenario(scenario_path, seed, [*(overrides or []), *trace])
    result = _run_with_status(scenario, f"simulating {scenario_path.name}…")
    _show_and_write(result, out if out is not None else Path("results") / scenario_path.stem)


@app.command()
def testbed(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO.toml", help="Scenario file.")],
    out: Annotated[
        Path | None, typer.Option(help="Output directory [default: results/<scenario stem>-testbed/].")
    ] = None,
    seed: SeedOption = None,
    overrides: OverridesOption = None,
    cc: Annotated[
        str | None,
        typer.Option(help="Congestion control of every sender: reno, cubic or bbr [default: the scenario's tcp.congestion]."),
    ] = None,
    linux_tcp: Annotated[
        bool, typer.Option(help="Keep Linux's RACK, tail loss probes and F-RTO (default: off, as in the RFCs).")
    ] = False,
) -> None:
    """Run a scenario on real Linux TCP in network namespaces through smallpipe-box (root)."""
    from smallpipe.testbed import TestbedError, run_testbed

    scenario = _load_scenario(scenario_path, seed, overrides)
    out_dir = out if out is not None else Path("results") / f"{scenario_path.stem}-testbed"
    try:
        with console.status(f"running {scenario_path.name} on the testbed…"):
            result = run_testbed(scenario, congestion_control=cc, rfc=not linux_tcp, out=out_dir / "raw")
    except ConfigError as error:
        error_console.print(f"[bold red]not runnable on the testbed[/] {scenario_path}: {error}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    except TestbedError as error:
        error_console.print(f"[bold red]testbed failed:[/] {error}")
        raise typer.Exit(EXIT_SIMULATION_ERROR) from None
    _show_and_write(result, out_dir)


@app.command()
def bench(
    flows: Annotated[int, typer.Option(help="Number of bulk flows.")] = 200,
    rate_bps: Annotated[int, typer.Option(help="Bottleneck rate.")] = 2_000_000,
    duration_s: Annotated[float, typer.Option(help="Simulated time.")] = 1000.0,
    queue: Annotated[str, typer.Option(help="Bottleneck discipline (a `kind`, with its defaults).")] = "droptail",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON line instead of a table.")] = False,
) -> None:
    """Time the simulator on the TAQ paper's Figure 2 scenario (DropTail unless --queue)."""
    try:
        scenario = taq_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=duration_s, queue={"kind": queue})
    except ConfigError as error:
        error_console.print(f"[bold red]invalid benchmark parameters:[/] {error}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    meta = _run_with_status(scenario, f"simulating {flows} flows for {duration_s:g} s…").meta
    wall_seconds = meta["wall_seconds"]
    report = {
        "flows": flows,
        "rate_bps": rate_bps,
        "queue": queue,
        "duration_s": meta["duration_ns"] / 1e9,
        "events": meta["events"],
        "packets": meta["packets"],
        "wall_seconds": wall_seconds,
        "packets_per_second": meta["packets"] / wall_seconds,
        "events_per_second": meta["events"] / wall_seconds,
        "simulated_seconds_per_second": meta["duration_ns"] / 1e9 / wall_seconds,
        "version": __version__,
    }
    if as_json:
        typer.echo(json.dumps(report))
        return
    table = Table(title=f"smallpipe bench: {flows} flows, {rate_bps / 1e6:g} Mbit/s, {queue}, {duration_s:g} s")
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    table.add_row("wall time", f"{wall_seconds:.2f} s")
    table.add_row("simulated packets per wall second", f"{report['packets_per_second']:,.0f}")
    table.add_row("events per wall second", f"{report['events_per_second']:,.0f}")
    table.add_row("simulated seconds per wall second", f"{report['simulated_seconds_per_second']:,.1f}")
    console.print(table)


@app.command()
def reproduce(
    figure: Annotated[str, typer.Argument(help="A figure name; `smallpipe reproduce list` lists them.")],
    out: Annotated[Path, typer.Option(help="Directory for the table (CSV) and the plot (PNG).")] = Path(
        "results/reproductions"
    ),
    quick: Annotated[bool, typer.Option(help="Shorter runs (as the test suite uses).")] = False,
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
    """Reproduce a figure of the papers; prints our numbers (docs/reproductions/ has the paper's beside them)."""
    from smallpipe.experiments import REPRODUCTIONS

    if figure == "list":
        for name, module in REPRODUCTIONS.items():
            typer.echo(f"{name}: {(module.__doc__ or '').strip().splitlines()[0]}")
        return
    if figure not in REPRODUCTIONS:
        error_console.print(f"[bold red]unknown figure[/] {figure!r}; expected one of: {', '.join(REPRODUCTIONS)}")
        raise typer.Exit(EXIT_CONFIG_ERROR)
    changes = dict(parse_override(assignment) for assignment in overrides or [])
    out.mkdir(parents=True, exist_ok=True)
    try:
        with overriding(changes), console.status(f"reproducing {figure}{' (quick)' if quick else ''}…"):
            table = REPRODUCTIONS[figure].reproduce(out, quick=quick, seed=seed)
    except ConfigError as error:
        error_console.print(f"[bold red]invalid override[/] for {figure}: {error}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    shown = Table(title=figure)
    for column in table.columns:
        shown.add_column(column, justify="right", overflow="fold")
    for row in table.iter_rows():
        shown.add_row(*(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row))
    console.print(shown)
    console.print(f"written to [bold]{out}[/]")


@app.command()
def version() -> None:
    """Print the smallpipe version."""
    typer.echo(__version__)


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

    try:
        grid = load_grid(grid_path)
    except (GridError, FileNotFoundError) as error:
        error_console.print(f"[bold red]invalid grid:[/] {escape(str(error))}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    db_path = db if db is not None else Path("results") / f"{grid_path.stem}.duckdb"
    counts = {"ok": 0, "error": 0}
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

    def on_point(record: dict[str, Any]) -> None:
        counts[record["status"]] += 1
        progress.update(task, advance=1, ok=counts["ok"], error=counts["error"])
        if record["status"] == "error":
            progress.console.print(f"[red]point {record['point_id']} failed:[/] {escape(record['error'])}")

    try:
        with progress:
            outcome = run_sweep(
                grid,
                db_path,
                run_root=parquet_dir,
                workers=workers,
                retry_errors=retry_errors,
                on_start=lambda n: progress.update(task, total=n),
                on_point=on_point,
            )
    except StoreError as error:
        error_console.print(f"[bold red]error:[/] {escape(str(error))}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
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
    db: Annotated[Path, typer.Argument(metavar="DB", help="Results database written by `smallpipe sweep`.")],
    out: Annotated[Path | None, typer.Option(help="HTML file [default: DB with .html].")] = None,
) -> None:
    """Render a self-contained HTML report (tables and plots) of a sweep's results."""
    from rich.markup import escape

    from smallpipe.report import write_report
    from smallpipe.store import StoreError

    out_path = out if out is not None else db.with_suffix(".html")
    try:
        with console.status(f"rendering {db}…"):
            write_report(db, out_path)
    except (FileNotFoundError, StoreError) as error:
        error_console.print(f"[bold red]error:[/] {escape(str(error))}")
        raise typer.Exit(EXIT_CONFIG_ERROR) from None
    console.print(f"report written to [bold]{out_path}[/]")
