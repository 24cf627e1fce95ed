"""Size-aware paper (Tokuda et al.): the Section 3 analysis through Python, and the quick
Figure 5 reproduction against it."""

from __future__ import annotations

import itertools
import math

import pytest
from smallpipe.models import size_aware


def test_lossless_transfer_takes_log2_rounds() -> None:
    # No loss, w1 = 1, b = 1: 2^n − 1 packets in n rounds of slow start.
    for n in (1, 4, 8):
        d = 2**n - 1
        assert size_aware.transfer_time_s(d, 0.0, rtt_s=0.1) == pytest.approx(n * 0.1, rel=1e-12)


def test_one_packet_pays_p_times_t0() -> None:
    # One packet: one RTT, plus T0 when it is lost (no duplicate ACKs possible).
    assert size_aware.transfer_time_s(1, 0.1, rtt_s=0.2, t0_s=3.0) == pytest.approx(0.2 + 0.1 * 3.0)


def test_zero_prefix_spares_short_transfers() -> None:
    # Figure 7's loss pattern: nothing lost for 20 packets, 0.03 afterwards.
    fig7 = [0.0] * 20 + [0.03]
    assert size_aware.throughput_pkts_per_rtt(20, fig7, rtt_s=0.2) == pytest.approx(20 / math.log2(21))
    assert size_aware.throughput_pkts_per_rtt(1000, fig7, rtt_s=0.2) > size_aware.throughput_pkts_per_rtt(
        1000, 0.03, rtt_s=0.2
    )


def test_drop_curve_forms() -> None:
    ends, probs = size_aware.drop_curve(4.0, 1000, thresholds=3, rtt_s=0.022)
    assert ends == [10, 100, 1000]
    assert probs[0] == 0.0 and probs[1] > 0.0
    ends, probs = size_aware.drop_curve(4.0, 200, rtt_s=0.022)
    assert ends == list(range(1, 201))
    assert all(b >= a for a, b in itertools.pairwise(probs))
    with pytest.raises(ValueError):
        size_aware.transfer_time_s(10, 1.5, rtt_s=0.1)


# Analysis / simulation over every size and p in the full runs of size-aware.md (1000
# transfers per size, seed 1), rounded outward to two decimals.
FIG5_RATIO = (0.85, 1.12)
FIG7_RATIO = (0.83, 1.27)
SAMPLING_SIGMAS = 3.0
"""Margin for the tests' smaller samples: three standard errors of the simulated mean time."""


def assert_ratio_in_page_range(row, page_range) -> None:
    ratio = row["analysis_pkts_per_rtt"] / row["sim_pkts_per_rtt"]
    margin = SAMPLING_SIGMAS * row["sim_rel_stderr"]
    assert page_range[0] * (1 - margin) <= ratio <= page_range[1] * (1 + margin), (ratio, row)


def test_figure5_quick_simulation_follows_the_analysis() -> None:
    from smallpipe.experiments import size_aware_fig5

    table = size_aware_fig5.run(losses=(0.005, 0.01), sizes=(1, 10, 100, 500), per_size=300, seed=2)
    for row in table.iter_rows(named=True):
        assert_ratio_in_page_range(row, FIG5_RATIO)
    sim = table.filter(table["p"] == 0.01)["sim_pkts_per_rtt"].to_list()
    assert sim[-1] > 10 * sim[0]  # the unfairness of Figure 2


def test_figure7_quick_simulation_follows_the_analysis() -> None:
    from smallpipe.experiments import size_aware_fig7

    table = size_aware_fig7.run(sizes=(10, 20, 100, 1000), per_size=300, seed=2)
    rows = {r["size_pkts"]: r for r in table.iter_rows(named=True)}
    # Up to 20 packets nothing is dropped: pure slow start, ceil(log2(d+1)) rounds in the
    # simulator (whole rounds), log2(d+1) in the analysis.
    assert rows[20]["sim_pkts_per_rtt"] == pytest.approx(20 / math.ceil(math.log2(21)), rel=0.02)
    for d in (100, 1000):
        assert_ratio_in_page_range(rows[d], FIG7_RATIO)
        # The 20-packet grace helps: more than with 0.03 throughout.
        assert rows[d]["sim_pkts_per_rtt"] > rows[d]["analysis_const_pkts_per_rtt"]


def short_flows(queue: dict[str, object]) -> tuple[float, int, int]:
    """8 bulk flows and Poisson 3-packet transfers (5/s) on a 3 Mbit/s, 100-packet link,
    40 ms RTT, 60 s: the 3-packet transfers' mean time (ns) and timeouts after the first
    5 s, and the link's size-policy drops."""
    import polars as pl
    from smallpipe.result import simulate
    from smallpipe.scenario import Scenario

    result = simulate(Scenario(
        seed=3, duration_s=60.0, slice_s=60.0,
        link={"rate_bps": 3e6, "delay_ms": 1.0, "queue": queue},
        tcp={"packet_size_bytes": 512, "recovery": "reno", "initial_window_pkts": 1, "delayed_ack": False,
             "timestamps": False, "min_rto_ms": 1000.0, "initial_rto_ms": 1000.0},
        flows=[{"count": 8, "app": "bulk", "rtt_ms": 40.0, "start_s": [0.0, 1.0]},
               {"count": 20, "app": "poisson", "size_bytes": 3 * 472, "rate_per_s": 5.0, "rtt_ms": 40.0}],
    ))
    short = result.flows.filter(pl.col("app") == "poisson", pl.col("end_ns").is_not_null(), pl.col("start_ns") > 5e9)
    policy = result.links.filter(pl.col("name") == "bottleneck")["drop_size_policy"][0]
    return float((short["end_ns"] - short["start_ns"]).mean()), int(short["timeouts"].sum()), int(policy)


def test_method_spares_short_transfers_beside_bulk_flows() -> None:
    """The paper's claim in miniature (Section 5): next to long-lived flows, short
    transfers finish sooner and time out less under size-aware dropping than under
    TailDrop, because the long flows' later packets are the ones dropped."""
    tail_fct, tail_timeouts, tail_policy = short_flows({"kind": "droptail", "limit_pkts": 100})
    sa_fct, sa_timeouts, sa_policy = short_flows({"kind": "size_aware", "rtt_an_ns": 40_000_000})
    assert tail_policy == 0 and sa_policy > 0
    assert sa_fct < 0.75 * tail_fct, (sa_fct, tail_fct)
    assert sa_timeouts < tail_timeouts, (sa_timeouts, tail_timeouts)


def test_figure14_analysis_three_thresholds_are_enough() -> None:
    """The paper's Figure 14 (analysis side): fairness rises with the number of log-spaced
    thresholds and is "sufficiently good" from 3 on."""
    from smallpipe.experiments.size_aware_fig14 import analysis_fairness

    one, three, five = (analysis_fairness(n, 2.0) for n in (1, 3, 5))
    assert one < three <= five + 1e-9
    assert three > 0.95
