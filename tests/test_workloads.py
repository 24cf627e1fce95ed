"""Workloads from Python: the synthetic Squid log, replay from a scenario file, units."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe import Scenario, simulate
from smallpipe.workloads import squidlog, write_synthetic_access_log


def test_surge_sizes_have_the_lognormal_median_and_the_tail_mass() -> None:
    sizes = squidlog.surge_sizes(np.random.default_rng(3), 200_000)
    # Median of the lognormal body: e^9.357 = 11 580 bytes.
    assert np.median(sizes) == pytest.approx(math.exp(9.357), rel=0.02)
    # P(lognormal >= 133 000) = P(Z >= (ln 133000 − 9.357) / 1.318) = 0.032.
    assert (sizes >= 133_000).mean() == pytest.approx(0.032, abs=0.003)


def test_replay_scenario_resolves_the_log_beside_the_toml(tmp_path: Path) -> None:
    lines = write_synthetic_access_log(tmp_path / "proxy.log", clients=3, duration_s=60, requests_per_client_per_s=0.2)
    (tmp_path / "replay.toml").write_text(
        'duration_s = 120.0\nslice_s = 10.0\n[link]\nrate_bps = 10_000_000\n'
        '[[flows]]\napp = "replay"\nlog_path = "proxy.log"\nreplay = "logged"\nrtt_ms = 50.0\n'
    )
    result = simulate(Scenario.from_toml(tmp_path / "replay.toml"))
    assert result.flows.height == lines
    assert result.units.height == 3
    assert result.units["connections"].sum() == lines
    assert result.meta["skipped_log_lines"] == 0


def test_units_table_counts_connections_and_bytes_of_web_users() -> None:
    result = simulate({
        "duration_s": 60.0, "slice_s": 10.0, "link": {"rate_bps": 5_000_000},
        "flows": [{"app": "web", "count": 5, "connections": 4, "objects_per_page": 6,
                   "size": {"dist": "exponential", "mean": 8000}, "think_s": 2.0, "rtt_ms": 100.0}],
    })
    per_unit = result.flows.group_by("unit_id").agg(n=pl.len(), bytes=pl.col("bytes_delivered").sum()).sort("unit_id")
    assert per_unit["n"].to_list() == result.units.sort("unit_id")["connections"].to_list()
    assert per_unit["bytes"].to_list() == result.units.sort("unit_id")["bytes_delivered"].to_list()
    assert (result.units["pages_done"] > 0).all()



def test_a_sweep_over_a_replay_base_finds_the_log_beside_the_base(tmp_path: Path) -> None:
    from smallpipe.sweep import load_grid

    (tmp_path / "scenarios").mkdir()
    write_synthetic_access_log(tmp_path / "scenarios" / "proxy.log", clients=2, duration_s=30, requests_per_client_per_s=0.2)
    (tmp_path / "scenarios" / "replay.toml").write_text(
        'duration_s = 60.0\nslice_s = 10.0\n[[flows]]\napp = "replay"\nlog_path = "proxy.log"\nrtt_ms = 50.0\n'
    )
    (tmp_path / "grid.toml").write_text('base = "scenarios/replay.toml"\n[grid]\nseed = [1, 2]\n')
    grid = load_grid(tmp_path / "grid.toml")
    assert len(grid.points) == 2
    log_path = Path(grid.points[0].scenario["flows"][0]["log_path"])
    assert log_path == (tmp_path / "scenarios" / "proxy.log").resolve()
