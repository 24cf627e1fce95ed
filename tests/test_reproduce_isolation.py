"""Matta & Guo (class isolation of short and long flows): the paper's claims on short runs
of the Figure 3 and Figure 7 set-ups (docs/reproductions/class-isolation.md has the full
runs)."""

from __future__ import annotations

import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

import numpy as np
from smallpipe.experiments import isolation_fig3, isolation_fig4, isolation_fig7
from smallpipe.experiments.isolation_common import C_U_BPS

LINEAR_KS = (1, 2, 3, 4)
LINEAR_MAX_RESIDUAL = 0.1
""""Almost perfectly linear" read as: every point within a tenth of one step (the slope per
added C_u) of the least-squares line through k = 1..4 (class-isolation.md, Figure 3)."""


def linear_residual(ks, goodput):
    """(slope per unit of k, largest |residual| of the least-squares line over the slope)."""
    slope, intercept = np.polyfit(ks, goodput, 1)
    return slope, float(np.abs(goodput - (slope * np.asarray(ks) + intercept)).max() / slope)


@pytest.fixture(scope="module")
def fig3():
    return isolation_fig3.run(ks=LINEAR_KS, duration_s=120.0, seed=2)


def _row(table, k, scheme):
    return table.filter((table["k"] == k) & (table["scheme"] == scheme)).row(0, named=True)


def test_isolated_short_flows_are_fair_and_rarely_time_out(fig3) -> None:
    # Section 4.2.1: the short pipe gives each short connection 3.5 packets per RTT, more
    # than the 2.5 a 10-packet slow start can use, so isolated short flows are close to 1.
    iso, share = _row(fig3, 1, "isolation"), _row(fig3, 1, "sharing")
    assert iso["short_jain"] > isolation_fig3.PAPER["short_isolation_jain_min"]
    assert iso["short_timeouts_per_conn"] < share["short_timeouts_per_conn"] / 3
    # Mixed with long flows in a 2 C_u pipe, short flows get less goodput than alone in C_u.
    assert share["short_goodput_mbps"] < iso["short_goodput_mbps"]


def test_isolated_long_goodput_grows_with_the_long_pipe(fig3) -> None:
    # Section 4.2.1: class goodput "almost perfectly linear" in k. Each added C_u adds at
    # most one C_u of capacity (2.5 Mbit/s), and the points lie on a line.
    goodput = np.array([_row(fig3, k, "isolation")["long_goodput_mbps"] for k in LINEAR_KS])
    slope, residual = linear_residual(LINEAR_KS, goodput)
    assert 0 < slope <= C_U_BPS / 1e6, goodput
    assert residual < LINEAR_MAX_RESIDUAL, (goodput, residual)
    # The criterion can fail: the short class's goodput under sharing, squeezed by the
    # long flows, grows concavely with k (0.97, 1.23, 1.46, 1.59 Mbit/s at 120 s, seed 2).
    squeezed = np.array([_row(fig3, k, "sharing")["short_goodput_mbps"] for k in LINEAR_KS])
    assert linear_residual(LINEAR_KS, squeezed)[1] > LINEAR_MAX_RESIDUAL, squeezed


def test_small_pipe_sharing_makes_short_connections_unfair() -> None:
    # Section 4.2.2: mixed with long flows in a 2 C_u pipe (k = 1, N = 60), short
    # connections' fairness falls below 0.8 (read per connection: size over completion
    # time); isolated, in their own C_u, they stay well above it.
    table = isolation_fig4.run(ks=(1,), duration_s=120.0, seed=2)
    share, iso = _row(table, 1, "sharing"), _row(table, 1, "isolation")
    assert share["short_conn_jain"] < isolation_fig4.PAPER["short_sharing_jain_k1_max"]
    assert iso["short_conn_jain"] > share["short_conn_jain"] + 0.05


@pytest.fixture(scope="module")
def fig7():
    return isolation_fig7.run(schemes=("load_balanced_droptail", "load_balanced_red", "size_droptail"),
                              duration_s=200.0, seed=2)


def _scheme(table, scheme):
    return table.filter(table["scheme"] == scheme).row(0, named=True)


def test_size_splitting_gives_short_flows_more_goodput_and_no_less_fairness(fig7) -> None:
    lb, size = _scheme(fig7, "load_balanced_droptail"), _scheme(fig7, "size_droptail")
    assert size["short_goodput_kbps"] > lb["short_goodput_kbps"]
    assert size["short_jain"] >= lb["short_jain"] - 0.01
    # Isolation keeps every class's fairness above the paper's 0.8 line.
    assert size["short_jain"] > isolation_fig7.PAPER["isolation_and_red_jain_min"]
    assert size["long_jain"] > isolation_fig7.PAPER["isolation_and_red_jain_min"]


def test_droptail_long_fairness_is_not_as_low_as_the_papers(fig7) -> None:
    # Not reproduced (class-isolation.md, Figure 7 diagnosis): the paper's DropTail long
    # fairness is "as low as 20%" over 20 s intervals; our lowest 20 s slice stays above
    # twice that (0.41 in the full run, 0.33-0.63 over seeds 1-4), and our mean is below
    # size splitting's.
    lb, size = _scheme(fig7, "load_balanced_droptail"), _scheme(fig7, "size_droptail")
    assert lb["long_jain_min"] > 2 * isolation_fig7.PAPER["long_droptail_jain_min"], lb
    assert lb["long_jain"] < size["long_jain"], (lb, size)


def test_red_with_table_3_max_p_is_droptail(fig7) -> None:
    # Not reproduced (class-isolation.md): with Table 3's max_p of 0.2 % RED's early drops
    # are under 5 % of its buffer-full drops, and its long fairness is DropTail's within 0.05
    # (the page's tolerance; full run: 0.767 both). With max_p 0.1 it is 0.90.
    red, lb = _scheme(fig7, "load_balanced_red"), _scheme(fig7, "load_balanced_droptail")
    assert 0 < red["early_drops"] < 0.05 * red["forced_drops"], red
    assert red["long_jain"] == pytest.approx(lb["long_jain"], abs=0.05)
