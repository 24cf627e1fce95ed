"""Matta & Guo (class isolation of short and long flows): the paper's claims on short runs
of the Figure 3 and Figure 7 set-ups (docs/reproductions/class-isolation.md has the full
runs)."""

from __future__ import annotations

import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

import numpy as np
from smallpipe.experiments import isolation_fig3, isolation_fig4, isolation_fig7
from smallpipe.experiments.isolation_common import C_U_BPS


@pytest.fixture(scope="module")
def fig3():
    return isolation_fig3.run(ks=(1, 2, 4), duration_s=120.0, seed=2)


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
    # "Almost perfectly linear" in k: the increments per added C_u agree within 25% and
    # each is at most one C_u of capacity.
    goodput = np.array([_row(fig3, k, "isolation")["long_goodput_mbps"] for k in (1, 2, 4)])
    per_cu = np.diff(goodput) / np.diff([1, 2, 4])
    assert (per_cu > 0).all() and (per_cu <= C_U_BPS / 1e6).all(), per_cu
    assert per_cu.max() / per_cu.min() < 1.25, per_cu


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
    return isolation_fig7.run(schemes=("load_balanced_droptail", "size_droptail"), duration_s=200.0, seed=2)


def test_size_splitting_gives_short_flows_more_goodput_and_no_less_fairness(fig7) -> None:
    lb = fig7.filter(fig7["scheme"] == "load_balanced_droptail").row(0, named=True)
    size = fig7.filter(fig7["scheme"] == "size_droptail").row(0, named=True)
    assert size["short_goodput_kbps"] > lb["short_goodput_kbps"]
    assert size["short_jain"] >= lb["short_jain"] - 0.01
    # Isolation keeps every class's fairness above the paper's 0.8 line.
    assert size["short_jain"] > isolation_fig7.PAPER["isolation_and_red_jain_min"]
    assert size["long_jain"] > isolation_fig7.PAPER["isolation_and_red_jain_min"]
