"""Sweeps as Ray tasks: same store, same results as the local backend, resumable.

Needs Ray (``pip install 'smallpipe[ray]'``); skipped without it. The tests start a Ray
instance of 2 CPUs in this process and stop it at the end.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import polars as pl
import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")
ray = pytest.importorskip("ray", reason="Ray not installed (pip install 'smallpipe[ray]')")

from smallpipe import store
from smallpipe.cli import app
from smallpipe.sweep import load_grid, run_sweep
from smallpipe.sweep_ray import ray_runner
from typer.testing import CliRunner

# Six points of a few bulk flows over a 2 Mbit/s DropTail link, 10 simulated seconds each.
GRID = """
[base]
seed = 1
duration_s = 10.0
slice_s = 5.0

[base.link]
rate_bps = 2_000_000
delay_ms = 1.0
queue = { kind = "droptail", limit_pkts = 20 }

[[base.flows]]
count = 4
app = "bulk"
rtt_ms = [20.0, 60.0]
start_s = [0.0, 1.0]

[grid]
"flows.0.count" = [2, 4, 8]
seed = [1, 2]
"""

# Columns that legitimately differ between two runs of the same point.
TIMING = ["started_at", "finished_at", "wall_seconds", "sim_wall_seconds", "run_dir"]


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU Ray instance owned by this process (its temp dir short: Ray's socket paths
    must fit in 107 bytes); yields its address for other drivers to join."""
    temp_dir = tempfile.mkdtemp(prefix="spray-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def local_points(tmp_path_factory):
    """The grid run by the default backend (local processes)."""
    folder = tmp_path_factory.mktemp("local")
    grid_path = folder / "grid.toml"
    grid_path.write_text(GRID)
    db = folder / "local.duckdb"
    outcome = run_sweep(load_grid(grid_path), db, workers=2)
    assert (outcome.ok, outcome.error) == (6, 0)
    return db


def comparable(db: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every point column and metric but the timings, and every per-flow row, in a fixed order."""
    points = store.read_points(db).drop(TIMING).sort("point_id")
    with duckdb.connect(str(db), read_only=True) as connection:
        flows = connection.sql("SELECT * FROM flows ORDER BY point_id, flow_id").pl()
    return points, flows


def test_ray_backend_on_a_cluster_gives_the_local_results_and_resumes(tmp_path, cluster, local_points):
    grid_path = tmp_path / "grid.toml"
    grid_path.write_text(GRID)
    db = tmp_path / "ray.duckdb"
    command = [sys.executable, "-c", "from smallpipe.cli import app; app()", "sweep", str(grid_path),
               "--db", str(db), "--backend", "ray", "--address", cluster]
    first = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "6 ran ok" in first.stdout

    points, flows = comparable(db)
    expected_points, expected_flows = comparable(local_points)
    assert points.height == 6 and points["status"].to_list() == ["ok"] * 6
    assert flows.height == expected_flows.height > 0
    assert points.equals(expected_points, null_equal=True)
    assert flows.equals(expected_flows, null_equal=True)
    # The Parquet folders are under this sweep's own run root, written by this process.
    assert all(Path(d).parent == tmp_path / "ray_runs" for d in store.read_points(db)["run_dir"])

    finished_at = store.read_points(db)["finished_at"]
    again = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "0 ran ok" in again.stdout and "6 already done" in again.stdout
    assert store.read_points(db)["finished_at"].equals(finished_at)


def test_interrupted_ray_sweep_keeps_finished_points_and_resumes(tmp_path, cluster, local_points):
    grid_path = tmp_path / "grid.toml"
    grid_path.write_text(GRID)
    grid = load_grid(grid_path)
    db = tmp_path / "ray.duckdb"

    def interrupt(_record):
        raise KeyboardInterrupt  # as Ctrl-C right after the first write

    with pytest.raises(KeyboardInterrupt):
        run_sweep(grid, db, runner=ray_runner(), on_point=interrupt)
    kept = store.read_points(db)
    assert 1 <= kept.height < 6 and kept["status"].to_list() == ["ok"] * kept.height

    resumed = run_sweep(grid, db, runner=ray_runner())
    assert (resumed.skipped_ok, resumed.ran, resumed.error) == (kept.height, 6 - kept.height, 0)
    points, flows = comparable(db)
    expected_points, expected_flows = comparable(local_points)
    assert points.equals(expected_points, null_equal=True)
    assert flows.equals(expected_flows, null_equal=True)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--address", "auto"], "--address auto is not allowed with --backend local"),
        (["--backend", "ray", "--workers", "0"], "--workers 0 (run in this process) is not allowed with --backend ray"),
    ],
)
def test_options_that_do_not_fit_the_backend_are_refused(tmp_path, options, message):
    grid_path = tmp_path / "grid.toml"
    grid_path.write_text(GRID)
    result = CliRunner().invoke(app, ["sweep", str(grid_path), "--db", str(tmp_path / "x.duckdb"), *options])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "x.duckdb").exists()
