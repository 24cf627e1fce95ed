"""Sweeps on the testbed (``runtime = "testbed"`` in the grid file): validation before any
run, ids of their own, and a two-point sweep on real Linux TCP into the same store (root
with ``ip netns`` and the testbed binaries, else skipped; about 20 s)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from smallpipe.sweep import GridError, load_grid, point_id, run_sweep
from test_testbed import needs_testbed

BASE = """
[base]
seed = 1
duration_s = 6.0
slice_s = 2.0

[base.link]
rate_bps = 2_000_000
delay_ms = 5.0
queue = { kind = "droptail", limit_pkts = 30 }

[[base.flows]]
app = "bulk"
count = 2
rtt_ms = 40.0
"""


def _grid(tmp_path: Path, head: str, grid: str = '"link.queue.kind" = ["droptail", "taq"]') -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(f"{head}\n{BASE}\n[grid]\n{grid}\n")
    return path


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ('runtime = "ns3"', 'runtime = "ns3" is not allowed; expected one of simulate, testbed'),
        ('congestion_control = "cubic"',
         'congestion_control = "cubic" is not allowed; expected one of reno, cubic, bbr, with runtime = "testbed"'),
        ('runtime = "testbed"\ncongestion_control = "vegas"', 'congestion_control = "vegas" is not allowed'),
    ],
)
def test_a_bad_runtime_or_congestion_control_is_refused_naming_it(tmp_path, head, message):
    with pytest.raises(GridError, match=message.replace("(", r"\(")):
        load_grid(_grid(tmp_path, head))


def test_a_point_linux_cannot_honour_is_refused_before_any_run(tmp_path):
    # Linux's Reno always has limited transmit: the testbed refuses to turn it off.
    path = _grid(tmp_path, 'runtime = "testbed"', '"tcp.limited_transmit" = [true, false]')
    with pytest.raises(GridError, match=r"grid point \{tcp.limited_transmit = false\}: not runnable on the testbed: "
                                        r"tcp.limited_transmit"):
        load_grid(path)
    assert load_grid(_grid(tmp_path, "", '"tcp.limited_transmit" = [true, false]')).runtime == "simulate"


def test_the_testbed_run_of_a_scenario_has_an_id_of_its_own(tmp_path):
    simulated = load_grid(_grid(tmp_path, ""))
    on_linux = load_grid(_grid(tmp_path, 'runtime = "testbed"'))
    on_cubic = load_grid(_grid(tmp_path, 'runtime = "testbed"\ncongestion_control = "cubic"'))
    ids = [{p.point_id for p in g.points} for g in (simulated, on_linux, on_cubic)]
    assert all(len(i) == 2 for i in ids)
    assert not (ids[0] & ids[1]) and not (ids[1] & ids[2]) and not (ids[0] & ids[2])
    # The simulator's ids are the ones every earlier sweep has.
    assert ids[0] == {point_id(p.scenario) for p in simulated.points}


@needs_testbed
def test_a_testbed_sweep_fills_the_store_and_resumes(tmp_path):
    grid = load_grid(_grid(tmp_path, 'runtime = "testbed"'))
    db = tmp_path / "tb.duckdb"
    first = run_sweep(grid, db, workers=4)
    assert (first.ran, first.ok, first.error) == (2, 2, 0), first.errors
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT utilization, loss_rate FROM summary").fetchall()
    runtimes = {json.loads(p.read_text())["runtime"] for p in (tmp_path / "tb_runs").glob("*/meta.json")}
    assert len(rows) == 2
    # Two bulk flows keep a 2 Mbit/s link busy after slow start; at most the link's rate.
    assert all(0.5 < u <= 1.01 for u, _ in rows), rows
    assert runtimes == {"testbed"}
    again = run_sweep(grid, db)
    assert (again.ran, again.skipped_ok) == (0, 2)
