"""Parameter sweeps into DuckDB: grid validation, stable ids, errors, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

import smallpipe
from smallpipe import metrics, store
from smallpipe import sweep as sweep_module
from smallpipe.cli import app
from smallpipe.sweep import STAGING_DIR, GridError, load_grid, run_sweep

runner = CliRunner()

# A few bulk flows over a 50 Mbit/s DropTail bottleneck for 50 simulated seconds: about
# 0.15 s of simulation per point (1 M packets), slow enough to kill a 24-point sweep
# half-way (4-5 s on two cores).
BASE_TOML = """
[base]
seed = 1
duration_s = 50.0
slice_s = 10.0

[base.link]
rate_bps = 50_000_000
delay_ms = 1.0
queue = { kind = "droptail", limit_pkts = 20 }

[base.tcp]
packet_size_bytes = 1500
recovery = "sack"

[[base.flows]]
count = 4
app = "bulk"
rtt_ms = [20.0, 60.0]
start_s = [0.0, 1.0]
"""

GRID_24 = BASE_TOML + """
[grid]
"link.queue.limit_pkts" = [20, 100]
"flows.0.count" = [4, 8, 16]
seed = [1, 2, 3, 4]
"""

SMALL_BASE = BASE_TOML.replace("duration_s = 50.0", "duration_s = 10.0").replace("slice_s = 10.0", "slice_s = 5.0").replace("50_000_000", "2_000_000")


def write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from smallpipe.cli import app; app()", *args]


def ok_count(db: Path) -> int:
    """Points recorded 'ok' so far; 0 while the file or table does not exist yet."""
    try:
        connection = duckdb.connect(str(db), read_only=True)
    except (duckdb.IOException, duckdb.CatalogException):
        return -1  # locked by the writer for a moment, or not created yet
    try:
        return connection.execute("SELECT count(*) FROM points WHERE status = 'ok'").fetchone()[0]
    except duckdb.CatalogException:
        return 0
    finally:
        connection.close()


def read(db: Path, query: str) -> pl.DataFrame:
    with duckdb.connect(str(db), read_only=True) as connection:
        return connection.sql(query).pl()


# ---------------------------------------------------------------- grid files


def test_grid_expands_the_product_in_order(tmp_path):
    grid = load_grid(write(tmp_path, GRID_24))
    assert list(grid.values) == ["link.queue.limit_pkts", "flows.0.count", "seed"]
    assert len(grid.points) == 2 * 3 * 4
    assert len({p.point_id for p in grid.points}) == 24
    first, last = grid.points[0], grid.points[-1]
    assert first.overrides == {"link.queue.limit_pkts": 20, "flows.0.count": 4, "seed": 1}
    assert last.overrides == {"link.queue.limit_pkts": 100, "flows.0.count": 16, "seed": 4}
    assert last.scenario["link"]["queue"]["limit_pkts"] == 100
    assert last.scenario["flows"][0]["count"] == 16
    assert last.scenario["seed"] == 4
    assert grid.sql_types == {"link.queue.limit_pkts": "BIGINT", "flows.0.count": "BIGINT", "seed": "BIGINT"}


def test_point_ids_do_not_depend_on_grid_order_or_key_spelling(tmp_path):
    reordered = BASE_TOML + """
[grid]
seed = [4, 3, 2, 1]
flows = { 0 = { count = [16, 8, 4] } }
link.queue.limit_pkts = [100, 20]
"""
    a = load_grid(write(tmp_path, GRID_24, "a.toml"))
    b = load_grid(write(tmp_path, reordered, "b.toml"))
    assert list(b.values) == ["seed", "flows.0.count", "link.queue.limit_pkts"]
    ids_a = {p.point_id: p.overrides for p in a.points}
    ids_b = {p.point_id: p.overrides for p in b.points}
    assert ids_a == ids_b  # same ids, and each id maps to the same overrides
    # An equal scenario built another way has the same id; a different one does not.
    base = smallpipe.Scenario.from_dict(a.base)
    same = base.with_overrides({"seed": 3, "flows.0.count": 8, "link.queue.limit_pkts": 100})
    other = base.with_overrides({"seed": 5, "flows.0.count": 8, "link.queue.limit_pkts": 100})
    assert ids_a[sweep_module.point_id(same)] == {"link.queue.limit_pkts": 100, "flows.0.count": 8, "seed": 3}
    assert sweep_module.point_id(other) not in ids_a


def test_base_file_is_relative_to_the_grid_file(tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "base.toml").write_text(SMALL_BASE.replace("[base]\n", "").replace("[[base.", "[[").replace("[base.", "["))
    (tmp_path / "grids").mkdir()
    grid = load_grid(write(tmp_path / "grids", 'base = "../scenarios/base.toml"\n[grid]\nseed = [1, 2]\n'))
    assert [p.scenario["seed"] for p in grid.points] == [1, 2]
    assert grid.points[0].scenario["link"]["rate_bps"] == 2_000_000


@pytest.mark.parametrize(
    ("grid_text", "expected"),
    [
        ('[grid]\n"link.nope" = [1, 2]\n', ["link.nope", "unknown field"]),
        ('[grid]\n"flows.0.count" = []\n', ["grid.flows.0.count", "non-empty list"]),
        ('[grid]\n"flows.0.count" = 8\n', ["grid.flows.0.count = 8", "list of values"]),
        ('[grid]\n"flows.3.count" = [1]\n', ["flows.3.count", "index below 1"]),
        ('[grid]\n"link.queue.limit_pkts" = [10, 0]\n', ["link.queue.limit_pkts = 0", "at least 1 packet"]),
        ('[grid]\n"tcp.recovery" = ["sack", "cubic"]\n', ["tcp.recovery", "cubic"]),
        ('[grid]\nseed = [1, 2, 1]\n', ["grid.seed", "1 more than once"]),
        ('[grid]\n"link.rate_bps" = [1000000, 1e6]\n', ["give the same scenario", "1000000", "1000000.0"]),
        ("", ["[grid] is missing or empty"]),
    ],
)
def test_bad_grids_are_rejected_naming_key_and_value(tmp_path, grid_text, expected):
    path = write(tmp_path, SMALL_BASE + grid_text)
    with pytest.raises(GridError) as caught:
        load_grid(path)
    for fragment in expected:
        assert fragment in str(caught.value)
    # The CLI reports it before any run: exit 2, no database created.
    db = tmp_path / "out.duckdb"
    result = runner.invoke(app, ["sweep", str(path), "--db", str(db), "--workers", "0"])
    assert result.exit_code == 2, result.output
    assert expected[0] in result.output
    assert not db.exists()


def test_missing_base_is_rejected(tmp_path):
    with pytest.raises(GridError, match="base"):
        load_grid(write(tmp_path, "[grid]\nseed = [1]\n"))
    with pytest.raises(FileNotFoundError, match="nowhere.toml"):
        load_grid(write(tmp_path, 'base = "nowhere.toml"\n[grid]\nseed = [1]\n'))


# ---------------------------------------------------------------- running


@pytest.fixture
def counted_simulate(monkeypatch):
    """Patch the sweep's simulate (points then run in-process, workers=0): count the calls
    and fail the points whose seed is in ``failing``."""
    state = {"calls": 0, "failing": set()}
    real = sweep_module.simulate

    def fake(scenario):
        state["calls"] += 1
        if scenario["seed"] in state["failing"]:
            raise smallpipe.SimulationError(f"injected failure for seed {scenario['seed']}")
        return real(scenario)

    monkeypatch.setattr(sweep_module, "simulate", fake)
    return state


def test_failing_point_is_recorded_and_resume_skips_finished_points(tmp_path, counted_simulate):
    path = write(tmp_path, SMALL_BASE + '[grid]\n"flows.0.count" = [2, 4]\nseed = [1, 2, 3]\n')
    db = tmp_path / "r.duckdb"
    grid = load_grid(path)
    counted_simulate["failing"] = {2}

    first = run_sweep(grid, db, workers=0)
    assert counted_simulate["calls"] == 6
    assert (first.ran, first.ok, first.error) == (6, 4, 2)
    points = read(db, 'SELECT "flows.0.count" AS n, seed, status, error, attempts FROM points ORDER BY n, seed')
    assert points.height == 6
    failed = points.filter(pl.col("status") == "error")
    assert failed.get_column("seed").to_list() == [2, 2]
    assert all("injected failure for seed 2" in e for e in failed.get_column("error"))
    assert points.filter(pl.col("status") == "ok").get_column("error").null_count() == 4
    assert read(db, "SELECT count(*) AS n FROM summary").item() == 4  # no summary for errors

    again = run_sweep(grid, db, workers=0)
    assert counted_simulate["calls"] == 6  # nothing re-ran: ok and errored points skipped
    assert (again.ran, again.skipped_ok, again.skipped_error) == (0, 4, 2)

    counted_simulate["failing"] = set()
    retried = run_sweep(grid, db, workers=0, retry_errors=True)
    assert counted_simulate["calls"] == 8  # only the two errored points
    assert (retried.ran, retried.ok, retried.skipped_ok) == (2, 2, 4)
    points = read(db, "SELECT seed, status, attempts FROM points ORDER BY seed")
    assert set(points.get_column("status")) == {"ok"}
    assert points.filter(pl.col("seed") == 2).get_column("attempts").to_list() == [2, 2]
    assert points.filter(pl.col("seed") != 2).get_column("attempts").to_list() == [1, 1, 1, 1]


def test_run_time_error_in_a_worker_is_recorded_and_the_sweep_goes_on(tmp_path):
    # A replayed log is read when the run starts, not when the scenario is validated: a
    # malformed one is a real error raised inside a worker process.
    line = "1700000001 5 10.1.0.{client} TCP_MISS/200 {size} GET http://e.org/{k} - DIRECT/- -\n"
    good = "".join(line.format(client=1 + k % 2, size=3000, k=k) for k in range(6))
    for name, text in (("a.log", good), ("bad.log", good + "garbage line\n"), ("c.log", good)):
        (tmp_path / name).write_text(text)
    base = f"""
[base]
seed = 1
duration_s = 10.0
slice_s = 5.0

[base.link]
rate_bps = 2_000_000
delay_ms = 1.0

[[base.flows]]
app = "replay"
log_path = "{tmp_path / 'a.log'}"
rtt_ms = 40.0

[grid]
"flows.0.log_path" = ["{tmp_path / 'a.log'}", "{tmp_path / 'bad.log'}", "{tmp_path / 'c.log'}"]
"""
    path = write(tmp_path, base)
    db = tmp_path / "e.duckdb"
    result = subprocess.run(cli("sweep", str(path), "--db", str(db), "--workers", "2"), check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    points = read(db, 'SELECT "flows.0.log_path" AS log, status, error FROM points ORDER BY log')
    assert [Path(p).name for p in points.get_column("log")] == ["a.log", "bad.log", "c.log"]
    assert points.get_column("status").to_list() == ["ok", "error", "ok"]
    assert 'line 7: "garbage line"' in points.get_column("error")[1]
    assert read(db, "SELECT count(*) AS n FROM summary").get_column("n").to_list() == [2]


def test_a_database_holds_one_set_of_keys(tmp_path):
    db = tmp_path / "k.duckdb"
    run_sweep(load_grid(write(tmp_path, SMALL_BASE + "[grid]\nseed = [1]\n", "a.toml")), db, workers=0)
    other = load_grid(write(tmp_path, SMALL_BASE + '[grid]\n"flows.0.count" = [2]\n', "b.toml"))
    with pytest.raises(store.StoreError, match="flows.0.count"):
        run_sweep(other, db, workers=0)
    # Extending the same keys is fine: only the new values run.
    extended = run_sweep(load_grid(write(tmp_path, SMALL_BASE + "[grid]\nseed = [1, 2]\n", "c.toml")), db, workers=0)
    assert (extended.skipped_ok, extended.ran) == (1, 1)


def test_a_half_written_point_left_by_a_killed_worker_is_never_read(tmp_path):
    # A worker killed mid-write leaves a truncated Parquet file in the staging folder;
    # the views must not read it and the resumed sweep must clear it.
    grid = load_grid(write(tmp_path, SMALL_BASE + "[grid]\nseed = [1, 2]\n"))
    db, root = tmp_path / "h.duckdb", tmp_path / "h_runs"
    stale = root / STAGING_DIR / f"{grid.points[0].point_id}-99999"
    stale.mkdir(parents=True)
    (stale / "flows.parquet").write_bytes(b"PAR1")
    outcome = run_sweep(grid, db, run_root=root, workers=0)
    assert (outcome.ok, outcome.error) == (2, 0)
    assert not stale.exists()
    assert read(db, "SELECT count(DISTINCT point_id) AS n FROM flows").item() == 2
    # A kill during a later write: the views made then still read only finished points.
    stale.mkdir(parents=True)
    (stale / "flows.parquet").write_bytes(b"PAR1")
    store.create_views(db, root)
    assert read(db, "SELECT count(DISTINCT point_id) AS n FROM flows").item() == 2


def test_kill_9_half_way_then_resume_gives_the_uninterrupted_results(tmp_path):
    grid_path = write(tmp_path, GRID_24)
    db_a, db_b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"

    started = time.perf_counter()
    full = subprocess.run(cli("sweep", str(grid_path), "--db", str(db_a), "--workers", "2"), check=False, capture_output=True, text=True, timeout=300)
    uninterrupted_s = time.perf_counter() - started
    assert full.returncode == 0, full.stderr
    assert ok_count(db_a) == 24

    command = cli("sweep", str(grid_path), "--db", str(db_b), "--workers", "2")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while ok_count(db_b) < 8:
        assert process.poll() is None, "the sweep ended before 8 points were recorded"
        assert time.monotonic() < deadline, "no 8 points within 120 s"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the sweep and its workers, as kill -9 would
    process.wait(timeout=30)
    before = read(db_b, "SELECT point_id, started_at, finished_at FROM points WHERE status = 'ok'")
    assert 8 <= before.height < 24, f"{before.height} points at the kill (uninterrupted run: {uninterrupted_s:.1f} s)"

    resumed = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{before.height} already done" in " ".join(resumed.stdout.split())
    after = read(db_b, "SELECT point_id, started_at, finished_at, attempts, status FROM points")
    assert after.height == 24 and set(after.get_column("status")) == {"ok"}
    assert set(after.get_column("attempts")) == {1}
    # The points finished before the kill were not run again.
    assert before.join(after, on="point_id").filter(pl.col("started_at") != pl.col("started_at_right")).height == 0

    # Same points, same metrics as the uninterrupted sweep (deterministic per seed);
    # only the wall time of the simulation differs.
    columns = 'p.point_id, "link.queue.limit_pkts", "flows.0.count", seed, s.* EXCLUDE (point_id, sim_wall_seconds)'
    query = f"SELECT {columns} FROM points p JOIN summary s USING (point_id) ORDER BY p.point_id"
    a, b = read(db_a, query), read(db_b, query)
    assert a.height == 24
    assert a.equals(b)

    # The summary agrees with values known without the sweep: the swept flow count,
    # and a direct run of one point.
    assert a.filter(pl.col("flows") != pl.col("flows.0.count")).height == 0
    grid = load_grid(grid_path)
    point = next(p for p in grid.points if p.overrides == {"link.queue.limit_pkts": 100, "flows.0.count": 8, "seed": 3})
    direct = smallpipe.simulate(point.scenario)
    row = a.filter(pl.col("point_id") == point.point_id).row(0, named=True)
    assert row["utilization"] == metrics.utilization(direct.links)
    assert row["timeouts_per_flow"] == direct.flows["timeouts"].mean()
    assert row["packets"] == direct.meta["packets"]

    # The per-flow Parquet files are reachable through the view, one row per flow.
    per_point = read(db_b, "SELECT point_id, count(*) AS n FROM flows GROUP BY point_id")
    expected = a.select("point_id", pl.col("flows").alias("n"))
    assert per_point.sort("point_id").equals(expected.sort("point_id").cast({"n": pl.Int64}))
    bytes_in_view = read(db_b, f"SELECT sum(bytes_delivered) AS b FROM flows WHERE point_id = '{point.point_id}'").item()
    assert bytes_in_view == direct.flows["bytes_delivered"].sum()


def test_overrides_column_round_trips(tmp_path):
    db = tmp_path / "o.duckdb"
    grid = load_grid(write(tmp_path, SMALL_BASE + '[grid]\n"tcp.recovery" = ["reno", "sack"]\n"flows.0.rtt_ms" = [[20.0, 40.0], 80.0]\n'))
    run_sweep(grid, db, workers=0)
    types = read(db, "SELECT key, sql_type FROM sweep ORDER BY position")
    assert types.rows() == [("tcp.recovery", "VARCHAR"), ("flows.0.rtt_ms", "JSON")]
    rows = read(db, 'SELECT "tcp.recovery" AS r, "flows.0.rtt_ms" AS rtt, overrides, scenario FROM points ORDER BY r, rtt')
    assert rows.get_column("r").to_list() == ["reno", "reno", "sack", "sack"]
    for row in rows.iter_rows(named=True):
        overrides = json.loads(row["overrides"])
        assert json.loads(row["rtt"]) == overrides["flows.0.rtt_ms"]
        assert json.loads(row["scenario"])["tcp"]["recovery"] == row["r"]
