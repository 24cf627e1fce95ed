"""Long actions: Ctrl-C keeps a partial run, progress is shown (also without a terminal),
sweep workers die with their parent, and runs never overwrite each other's output."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from rich.console import Console
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

from smallpipe import Scenario, _smallpipe
from smallpipe.cli import app
from smallpipe.progress import SimulationProgress
from smallpipe.result import Interrupted, reporting_progress, simulate
from smallpipe.rundir import OutputExists, claim_output_directory, new_run_directory

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
runner = CliRunner()

SMALL = {
    "duration_s": 30.0,
    "slice_s": 2.0,
    "trace_conn": 0,
    "link": {"rate_bps": 300_000, "queue": {"kind": "taq", "limit_pkts": 20}},
    "tcp": {"packet_size_bytes": 500, "delayed_ack": False},
    "flows": [
        {"app": "bulk", "count": 5, "rtt_ms": [100.0, 300.0]},
        {"app": "web", "count": 2, "rtt_ms": 150.0, "size_bytes": 20_000},
        {"app": "interactive", "count": 2, "rtt_ms": 120.0, "burst_bytes": 100, "mean_gap_s": 1.0},
    ],
}


def _without_wall_time(native: dict) -> dict:
    native["meta"].pop("wall_seconds")
    return native


def test_chunks_of_odd_sizes_give_the_same_tables_as_one_chunk():
    config = Scenario.from_dict(SMALL).to_json()
    whole = _without_wall_time(_smallpipe.simulate(config, chunk_events=10**12))
    chunked = _without_wall_time(_smallpipe.simulate(config, chunk_events=7))
    assert whole["meta"]["partial"] is False
    assert len(whole["bursts"]["flow_id"]) > 0 and len(whole["queue_states"]["slice"]) > 0
    assert chunked == whole
    with pytest.raises(ValueError, match="chunk_events"):
        _smallpipe.simulate(config, chunk_events=0)


def test_an_interrupted_run_keeps_the_slices_it_completed():
    """A KeyboardInterrupt between chunks (what Ctrl-C raises) stops the run at about
    12 s; the slices that ended before the stop equal the full run's (causality)."""
    full = simulate(SMALL)

    def stop_after_12_s(scenario):
        def update(now_ns, end_ns):
            if now_ns >= 12e9:
                raise KeyboardInterrupt

        return update

    with reporting_progress(stop_after_12_s), pytest.raises(Interrupted) as caught:
        _run_with_small_chunks()
    part = caught.value.result
    assert part.meta["partial"] is True
    stopped_ns = part.meta["stopped_at_ns"]
    assert part.meta["duration_ns"] == stopped_ns
    assert 12e9 <= stopped_ns < full.meta["duration_ns"]
    complete = stopped_ns // part.meta["slice_ns"]
    assert complete >= 6

    def done_slices(result):
        return result.slices.filter(pl.col("slice") < complete).sort("flow_id", "slice")

    assert done_slices(part).height > 0
    assert done_slices(part).equals(done_slices(full))


def _run_with_small_chunks():
    """`simulate` with chunks of 500 events, so the callback sees 12 s closely."""
    from smallpipe.result import _PROGRESS, Result

    scenario = Scenario.from_dict(SMALL)
    native = _smallpipe.simulate(scenario.to_json(), progress=_PROGRESS.get()(scenario), chunk_events=500)
    result = Result.from_native(native, scenario)
    if result.meta["partial"]:
        raise Interrupted(result)
    return result


def _smallpipe_command() -> list[str]:
    return [str(Path(sys.executable).with_name("smallpipe"))]


def test_sigint_stops_a_long_run_within_a_second_with_partial_tables(tmp_path):
    """The brief's case: a run far too long to finish; plain progress lines appear on
    stderr (not a terminal) every 5 s; SIGINT ends it within a second with exit code 130,
    the tables written and flagged partial."""
    out = tmp_path / "run"
    process = subprocess.Popen(
        [*_smallpipe_command(), "run", str(EXAMPLES / "dumbbell.toml"), "--set", "duration_s=100000", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        estimate = process.stderr.readline()  # plan's estimate, from a pilot of about a second
        assert estimate.startswith("estimate: about "), estimate
        line = process.stderr.readline()  # the first progress line, after 5 s of simulating
        assert "of 100000 s simulated" in line and "ETA" in line, line
        signalled = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        exit_after_s = time.monotonic() - signalled
    finally:
        process.kill()
    stdout, stderr = process.communicate()
    assert process.returncode == 130, stderr
    assert exit_after_s < 1.0, f"exited {exit_after_s:.2f} s after SIGINT"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["partial"] is True
    assert 0 < meta["stopped_at_ns"] == meta["duration_ns"] < 100_000e9
    flows = pl.read_parquet(out / "flows.parquet")
    assert flows.height == 100 and flows.get_column("bytes_delivered").sum() > 0
    assert "PARTIAL" in stdout
    assert f"the tables cover the first {meta['stopped_at_ns'] / 1e9:g} s" in stderr
    assert "Traceback" not in stderr


def test_plain_progress_lines_every_few_seconds_with_eta():
    """Not a terminal: a line when 5 s have passed since the last, with the ETA at the
    speed so far (20 s of 100 in 10 s wall: 40 s left)."""
    now = [0.0]
    console = Console(file=io.StringIO(), force_terminal=False)
    progress = SimulationProgress(console, "simulating x.toml", clock=lambda: now[0])
    update = progress.start(Scenario.from_dict(SMALL))
    for wall_s, simulated_s in [(1.0, 2), (4.9, 9), (10.0, 20), (12.0, 24), (15.5, 31)]:
        now[0] = wall_s
        update(int(simulated_s * 1e9), int(100e9))
    lines = console.file.getvalue().splitlines()
    assert lines == [
        "simulating x.toml: 20.0 of 100 s simulated (20%), 10 s wall, ETA 40 s",
        "simulating x.toml: 31.0 of 100 s simulated (31%), 16 s wall, ETA 34 s",
    ]


def test_reproduce_quick_writes_beside_not_over_the_full_run(tmp_path, monkeypatch):
    """A stand-in figure of two runs: the full and the quick reproduction land in
    different directories, and the progress names each run."""
    written = []

    def reproduce(out, *, quick, seed):
        for _ in range(2):
            simulate({**SMALL, "duration_s": 4.0, "seed": seed})
        table = pl.DataFrame({"quick": [quick]})
        table.write_csv(out / "fig.csv")
        written.append(out)
        return table

    from smallpipe import experiments

    monkeypatch.setitem(experiments.REPRODUCTIONS, "fake-fig", SimpleNamespace(reproduce=reproduce))
    monkeypatch.chdir(tmp_path)
    for args in (["reproduce", "fake-fig"], ["reproduce", "fake-fig", "--quick"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    # Each writes into a folder of its own there, moved into place once the table is complete.
    assert [out.parent for out in written] == [Path("results/reproductions"), Path("results/reproductions/quick")]
    assert not any(out.exists() for out in written)
    assert pl.read_csv(tmp_path / "results/reproductions/fig.csv")["quick"].to_list() == [False]
    assert pl.read_csv(tmp_path / "results/reproductions/quick/fig.csv")["quick"].to_list() == [True]


def test_progress_bar_counts_the_runs_of_a_reproduction():
    console = Console(file=io.StringIO(), force_terminal=True, width=150)
    with (
        SimulationProgress(console, "reproducing fig", show_after_s=0.0, count_runs=True) as progress,
        reporting_progress(progress.start),
    ):
        for _ in range(2):
            _run_with_small_chunks()
    shown = console.file.getvalue()
    assert "reproducing fig · run 2" in shown and "s simulated" in shown


def test_new_run_directories_never_collide(tmp_path):
    at = datetime(2026, 11, 22, 14, 30, 5)
    first, second = (new_run_directory(tmp_path, "dumbbell", at) for _ in range(2))
    assert first.name == "dumbbell-20261122-143005" and second.name == "dumbbell-20261122-143005-2"
    assert first.is_dir() and second.is_dir()


def test_run_refuses_a_non_empty_out_unless_forced(tmp_path):
    (tmp_path / "flows.parquet").write_text("an earlier run")
    with pytest.raises(OutputExists, match="--force"):
        claim_output_directory(tmp_path, force=False)
    assert claim_output_directory(tmp_path, force=True) == tmp_path
    empty = tmp_path / "empty"
    empty.mkdir()
    assert claim_output_directory(empty, force=False) == empty
    refused = runner.invoke(app, ["run", str(EXAMPLES / "dumbbell.toml"), "--out", str(tmp_path)])
    assert refused.exit_code == 2 and "--force" in refused.output
    assert (tmp_path / "flows.parquet").read_text() == "an earlier run"


def test_two_runs_get_two_directories(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        result = runner.invoke(app, ["run", str(EXAMPLES / "dumbbell.toml"), "--set", "duration_s=4", "--set", "slice_s=2"])
        assert result.exit_code == 0, result.output
    runs = sorted((tmp_path / "results").iterdir())
    assert len(runs) == 2 and all(run.name.startswith("dumbbell-") for run in runs)
    assert all((run / "flows.parquet").is_file() for run in runs)


def test_interactive_summary_shows_response_times_not_jain(tmp_path):
    """examples/interactive.toml: p = 0.05 loss, RTO 1 s, RTT 0.1 s. A burst not lost
    is answered in one RTT plus its transmission (0.1 s and ~1 ms), and 95% are not lost, so
    the median is 0.10 s to 0.11 s; the p99 includes at least one RTO, above 1.1 s."""
    result = runner.invoke(app, ["run", str(EXAMPLES / "interactive.toml"), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "Jain" not in result.output
    row = next(line for line in result.output.splitlines() if "response time" in line and "p50" in line)
    values = dict(part.split() for part in row.split("│")[2].strip().removesuffix(" s").split(" s · "))
    assert 0.10 <= float(values["p50"]) <= 0.11
    assert float(values["p99"]) > 1.1
    # The mean against the paper's Eq. 3, p / (1 - 2p) · RTO + RTT = 0.156 s; ~290 bursts
    # of standard deviation ~0.23 s give a standard error of ~0.014 s: three of them.
    mean_row = next(line for line in result.output.splitlines() if "mean response time" in line)
    assert float(mean_row.split("│")[2].split()[0]) == pytest.approx(0.05 / 0.9 * 1.0 + 0.1, abs=0.042)
    assert "droptail" in result.output and "1 Mbit/s" in result.output and "newreno" in result.output


def test_run_plot_has_a_panel_per_workload_metric(tmp_path):
    """Bulk, web and interactive flows: Jain and goodput, plus response CDF, FCT against
    size and hang CDF; each panel is 5 in wide at 120 dpi, so the PNG is 5 · 600 px wide."""
    from smallpipe.plots import plot_run

    png = plot_run(simulate(SMALL), tmp_path / "run.png", name="small").read_bytes()
    assert int.from_bytes(png[16:20], "big") == 5 * 600
    bulk_only = {**SMALL, "flows": SMALL["flows"][:1]}
    png = plot_run(simulate(bulk_only), tmp_path / "bulk.png", name="bulk").read_bytes()
    assert int.from_bytes(png[16:20], "big") == 2 * 600


def test_workers_above_the_core_count_warn(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'base = "{EXAMPLES / "dumbbell.toml"}"\n[grid]\nduration_s = [2.0]\nslice_s = [1.0]\nseed = [1, 2]\n'
    )
    cores = os.cpu_count()
    result = runner.invoke(
        app, ["sweep", str(grid), "--db", str(tmp_path / "s.duckdb"), "--workers", str(cores + 7)]
    )
    assert result.exit_code == 0, result.output
    assert f"--workers {cores + 7} is more than the {cores} cores" in result.output
    # Not a terminal: plain lines, the first with the count, the last at the end.
    assert "sweep grid.toml: 2 points to run" in result.output
    assert "sweep grid.toml: 2 of 2 points (ok 2, errors 0)" in result.output


SWEEP_PARENT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from smallpipe.sweep import load_grid, run_sweep
    grid = load_grid(Path(sys.argv[1]))
    run_sweep(grid, Path(sys.argv[2]), workers=2)
    """
)


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (dead, waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_killing_the_sweep_parent_kills_its_workers(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'base = "{EXAMPLES / "dumbbell.toml"}"\n[grid]\nduration_s = [100000.0]\nseed = [1, 2, 3, 4]\n'
    )
    parent = subprocess.Popen([sys.executable, "-c", SWEEP_PARENT, str(grid), str(tmp_path / "s.duckdb")])
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.5)
            workers = {
                child for child in _children(parent.pid)
                if "spawn_main" in Path(f"/proc/{child}/cmdline").read_text(errors="replace")
            } if parent.poll() is None else set()
        assert len(workers) == 2, "the sweep did not start two workers"
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_running(w) for w in workers):
            time.sleep(0.1)
        alive = [w for w in workers if _running(w)]
    finally:
        parent.kill()
    for w in alive:  # leave nothing behind even when the test fails
        os.kill(w, signal.SIGKILL)
    assert alive == [], f"workers {alive} outlived their parent"


def test_interrupted_survives_pickling():
    """A sweep worker interrupted by Ctrl-C sends the exception to the sweep process."""
    import pickle

    from smallpipe.result import Result

    def stop_at_once(scenario):
        def update(now_ns, end_ns):
            raise KeyboardInterrupt

        return update

    with reporting_progress(stop_at_once), pytest.raises(Interrupted) as caught:
        _run_with_small_chunks()
    copy = pickle.loads(pickle.dumps(caught.value))
    assert isinstance(copy, Interrupted) and isinstance(copy.result, Result)
    assert copy.result.meta == caught.value.result.meta
    assert copy.result.flows.equals(caught.value.result.flows)
