"""The workload issue's reproductions on short runs: the papers' claims, and invariants."""

from __future__ import annotations

import polars as pl
import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe.experiments import taq_fig1, taq_hangs, thesis_fig51  # noqa: E402


def test_taq_hangs_with_200_users_nearly_everyone_hangs_over_20_s() -> None:
    table, units = taq_hangs.run(users_list=(200,), duration_s=600.0, seed=2)
    row = table.row(0, named=True)
    # The paper: all 200 users see a hang over 20 s; allow a few to escape.
    assert row["share_hang_over_20s"] >= 0.9
    assert row["utilization"] > 0.9
    assert units[200].height == 200


def test_taq_fig1_download_times_spread_over_two_orders_of_magnitude() -> None:
    objects, summary = taq_fig1.run(clients=40, duration_s=400.0, seed=2)
    small = summary.filter(summary["size_lo_bytes"] < 100_000)
    assert small.height >= 3
    assert (small["spread_max_over_min"] >= 100).any(), summary
    # Bigger objects take longer on average (bucket means increase).
    means = summary["mean_s"].to_list()
    assert means == sorted(means)


def test_thesis_fct_never_beats_slow_start_and_fq_cuts_the_tail() -> None:
    table = thesis_fig51.summary(thesis_fig51.run(protocols=("tcp", "fq"), runs=30, seed=2))
    assert (table["median_s"] >= table["slow_start_bound_s"]).all()
    assert (table["p99_s"] >= table["median_s"]).all()
    for (protocol,), group in table.group_by("protocol"):
        medians = group.sort("packets")["median_s"].to_list()
        assert medians == sorted(medians), protocol
    # The thesis (§5): FQ protects a mouse's first packets from the elephants' queue, so its
    # tail at 12 packets is far below DropTail's (where a lost SYN or first window costs an RTO).
    p99 = {row["protocol"]: row["p99_s"] for row in table.filter(pl.col("packets") == 12).iter_rows(named=True)}
    assert p99["fq"] < 0.5 * p99["tcp"], p99
