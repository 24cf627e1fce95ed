"""The simulator's UDP sources seen from Python: the ``udp_flows`` table, its summary, the
run's printed summary and a sweep's store. Checked against closed forms of the dumbbell and
the table's accounting invariant, not against the code's own output."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from smallpipe import metrics, simulate
from smallpipe.cli import app
from smallpipe.result import UDP_FLOWS_SCHEMA, Result
from typer.testing import CliRunner

LONE_CBR = {
    "duration_s": 60,
    "link": {"rate_bps": 1_000_000},
    "flows": [{"app": "udp_cbr", "packet_size_bytes": 500, "rate_bps": 200_000, "rtt_ms": 100}],
}

CROWDED = {
    "duration_s": 30,
    "link": {"rate_bps": 1_000_000, "queue": {"kind": "droptail", "limit_pkts": 20}},
    "flows": [
        {"app": "bulk", "count": 6},
        {"app": "udp_cbr", "count": 2, "packet_size_bytes": 200, "rate_bps": 64_000},
        {"app": "udp_pareto", "count": 2, "packet_size_bytes": 576, "rate_bps": 200_000},
    ],
}


def test_a_lone_cbr_source_sends_its_schedule_and_arrives_after_the_paths_fixed_delay() -> None:
    """500 B every 20 ms for 60 s: 3000 datagrams, the first at 0 s. Alone on the link none
    waits in a queue, so each one-way delay is the path's: half the 100 ms RTT, 4 ms on the
    1 Mbit/s bottleneck, 0.04 ms on each of the two 100 Mbit/s access links, and the
    sender's processing jitter, uniform up to one 1500-byte bottleneck packet time (12 ms):
    a mean of 60.08 ms (the sample mean's deviation is 0.06 ms) and at most 66.08 ms."""
    result = simulate(LONE_CBR)
    assert result.flows.height == 0, "a UDP source is not a TCP connection"
    row = result.udp_flows.row(0, named=True)
    assert (row["app"], row["packets_sent"], row["bytes_sent"]) == ("udp_cbr", 3000, 1_500_000)
    assert row["packets_dropped"] == 0
    fixed_ms = 50 + 4 + 2 * 0.04
    mean_ms = row["delay_sum_ns"] / row["packets_delivered"] / 1e6
    assert mean_ms == pytest.approx(fixed_ms + 6, abs=0.3)
    assert fixed_ms <= row["delay_max_ns"] / 1e6 <= fixed_ms + 12 + 0.001


def test_every_sources_datagrams_are_delivered_dropped_or_in_flight_and_the_summary_adds_them() -> None:
    result = simulate(CROWDED)
    udp = result.udp_flows
    assert udp.height == 4 and udp.schema == UDP_FLOWS_SCHEMA
    fates = udp.select(pl.col("packets_delivered") + pl.col("packets_dropped") + pl.col("packets_in_flight"))
    assert fates.to_series().to_list() == udp.get_column("packets_sent").to_list()
    # The bytes a unit delivered (the units table) are its source's.
    units = result.units.join(udp.select("unit_id", "bytes_delivered"), on="unit_id", suffix="_udp")
    assert (units.get_column("bytes_delivered") == units.get_column("bytes_delivered_udp")).all()
    # A 20-packet DropTail queue full of bulk TCP drops some of them.
    assert udp.get_column("packets_dropped").sum() > 0

    summary = metrics.udp_summary(udp)
    assert summary.get_column("app").to_list() == ["udp_cbr", "udp_pareto"]
    for kind in summary.iter_rows(named=True):
        rows = udp.filter(pl.col("app") == kind["app"])
        delivered, dropped = rows.get_column("packets_delivered").sum(), rows.get_column("packets_dropped").sum()
        assert kind["sources"] == 2
        assert kind["loss_rate"] == pytest.approx(dropped / (delivered + dropped))
        assert kind["delay_mean_ms"] == pytest.approx(rows.get_column("delay_sum_ns").sum() / delivered / 1e6)
        # No datagram waits longer than the path allows: a full 20-packet queue of 1500-byte
        # packets (240 ms at 1 Mbit/s) on top of at most 66 ms of path and jitter per packet.
        assert kind["delay_max_ms"] <= 100 / 2 + 21 * 12 + 12 + 1


def test_a_run_without_udp_sources_has_an_empty_typed_table() -> None:
    result = simulate({"duration_s": 5, "flows": [{"app": "bulk", "count": 2}]})
    assert result.udp_flows.height == 0 and result.udp_flows.schema == UDP_FLOWS_SCHEMA
    assert metrics.udp_summary(result.udp_flows).height == 0


def test_the_table_survives_a_write_and_an_older_run_folder_reads_as_empty(tmp_path: Path) -> None:
    result = simulate(CROWDED | {"duration_s": 5})
    back = Result.read(result.write(tmp_path / "run"))
    assert back.udp_flows.equals(result.udp_flows)
    (tmp_path / "run" / "udp_flows.parquet").unlink()  # as written before the table existed
    assert Result.read(tmp_path / "run").udp_flows.height == 0


def test_smallpipe_run_prints_each_kind_of_source(tmp_path: Path) -> None:
    scenario = tmp_path / "udp.toml"
    scenario.write_text(
        "duration_s = 10\n[[flows]]\napp = \"bulk\"\ncount = 2\n"
        "[[flows]]\napp = \"udp_cbr\"\npacket_size_bytes = 200\nrate_bps = 100000\n"
    )
    out = CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path / "run")])
    assert out.exit_code == 0, out.output
    for line in ("udp_cbr sources", "udp_cbr datagrams", "udp_cbr loss rate", "udp_cbr one-way delay"):
        assert line in out.output


GRID = """
[base]
seed = 1
duration_s = 10.0

[base.link]
rate_bps = 1_000_000
queue = { kind = "droptail", limit_pkts = 20 }

[[base.flows]]
app = "bulk"
count = 4

[[base.flows]]
app = "udp_cbr"
packet_size_bytes = 200
rate_bps = 100_000

[grid]
seed = [1, 2]
"""


def test_a_sweeps_summary_and_view_hold_the_udp_sources(tmp_path: Path) -> None:
    from smallpipe.sweep import load_grid, run_sweep

    (tmp_path / "grid.toml").write_text(GRID)
    db = tmp_path / "s.duckdb"
    outcome = run_sweep(load_grid(tmp_path / "grid.toml"), db, run_root=tmp_path / "runs", workers=0)
    assert (outcome.ok, outcome.error) == (2, 0)
    with duckdb.connect(str(db), read_only=True) as connection:
        joined = connection.sql(
            "SELECT s.point_id, s.udp_sources, s.udp_loss_rate, "
            "sum(u.packets_dropped) / sum(u.packets_delivered + u.packets_dropped) AS loss "
            "FROM summary s JOIN udp_flows u USING (point_id) GROUP BY ALL"
        ).pl()
    assert joined.height == 2
    assert joined.get_column("udp_sources").to_list() == [1, 1]
    for row in joined.iter_rows(named=True):
        assert row["udp_loss_rate"] == pytest.approx(row["loss"])


def test_a_sweep_store_made_before_the_udp_columns_gains_them(tmp_path: Path) -> None:
    from smallpipe import store

    db = tmp_path / "old.duckdb"
    old_columns = {name: kind for name, kind in store.SUMMARY_COLUMNS.items() if not name.startswith("udp_")}
    with duckdb.connect(str(db)) as connection:
        columns = "".join(f", {name} {sql_type}" for name, (sql_type, _) in old_columns.items())
        connection.execute(f"CREATE TABLE summary (point_id VARCHAR PRIMARY KEY{columns})")
    store.init_store(db, keys={"seed": "BIGINT"}, values={"seed": [1]}, grid_file="grid.toml", base={}, run_root=tmp_path)
    with duckdb.connect(str(db), read_only=True) as connection:
        names = {row[0] for row in connection.execute("DESCRIBE summary").fetchall()}
    assert {"udp_sources", "udp_loss_rate", "udp_delay_mean_ms"} <= names
