"""Metrics of the workload issue, against values computed by hand."""

from __future__ import annotations

import math

import polars as pl
import pytest
from smallpipe import metrics


def test_flow_evolution_classifies_each_transition() -> None:
    # Flow 1: active, active, silent, silent, active  → maintained, dropped, stalled, arriving
    # Flow 2: starts at epoch 2: silent, active        → arriving (at epoch 3)
    slices = pl.DataFrame({
        "flow_id": [1, 1, 1, 1, 1, 2, 2],
        "slice": [0, 1, 2, 3, 4, 2, 3],
        "start_ns": [0, 1, 2, 3, 4, 2, 3],
        "bytes": [10, 5, 0, 0, 7, 0, 3],
    })
    got = metrics.flow_evolution(slices)
    assert got["slice"].to_list() == [1, 2, 3, 4]
    assert got.select(metrics.EVOLUTION_STATES).rows() == [
        (1, 0, 0, 0),
        (0, 1, 0, 0),
        (0, 0, 1, 1),  # flow 1 stalled, flow 2 arriving
        (0, 0, 1, 0),
    ]


def test_hang_shares_counts_units_strictly_above_each_threshold() -> None:
    units = pl.DataFrame({"longest_hang_ns": [5e9, 20e9, 21e9, 61e9]}).cast(pl.Int64)
    assert metrics.hang_shares(units, (20.0, 60.0)) == {20.0: 0.5, 60.0: 0.25}


def test_fct_is_normalized_by_the_slow_start_bound() -> None:
    flows = pl.DataFrame({
        "size_bytes": [1000, 8000, 2000], "rtt_ms": [100.0, 100.0, 200.0],
        "start_ns": [0, 0, 0], "end_ns": [200_000_000, 800_000_000, None],
    })
    got = metrics.fct_normalized(flows, mss_bytes=1000, iw_pkts=2)
    # 1 packet: bound 1 RTT = 0.1 s → 2.0; 8 packets, IW 2: 1 + log2(4) = 3 RTTs = 0.3 s → 8/3.
    assert got["fct_norm"].to_list() == pytest.approx([2.0, 8 / 3])


def test_modified_fairness_index_is_one_when_every_flow_meets_its_ideal() -> None:
    # 1, 4 and 16 packets at IW 1 need 1, 3 and 5 rounds without loss; a target of 2
    # packets per RTT caps the 16-packet flow's ideal at 2 (so 8 RTTs).
    flows = pl.DataFrame({
        "size_bytes": [1000, 4000, 16000], "rtt_ms": [100.0] * 3,
        "start_ns": [0, 0, 0], "end_ns": [100_000_000, 300_000_000, 800_000_000],
    })
    assert metrics.modified_fairness_index(flows, mss_bytes=1000, iw_pkts=1, target_pkts_per_rtt=2.0) == pytest.approx(1.0)
    # Doubling the 1-packet flow's FCT halves its normalised throughput: x' = (0.5, 1, 1).
    slower = flows.with_columns(end_ns=pl.Series([200_000_000, 300_000_000, 800_000_000]))
    expected = (0.5 + 1 + 1) ** 2 / (3 * (0.25 + 1 + 1))
    assert metrics.modified_fairness_index(slower, mss_bytes=1000, iw_pkts=1, target_pkts_per_rtt=2.0) == pytest.approx(expected)


def test_timeout_summary() -> None:
    flows = pl.DataFrame({
        "timeouts": [0, 2, 0, 1], "syn_timeouts": [0, 0, 1, 0],
        "longest_silence_ns": [1e9, 3e9, 2e9, 10e9], "backoff_ns": [0.0, 7e9, 1e9, 4e9],
    }).cast({"longest_silence_ns": pl.Int64, "backoff_ns": pl.Int64})
    got = metrics.timeout_summary(flows)
    assert got["share_with_timeout"] == 0.75
    assert got["timeouts_per_flow"] == 0.75
    assert got["longest_silence_median_s"] == 2.5
    assert got["longest_silence_max_s"] == 10.0
    assert got["backoff_mean_s"] == 3.0 and got["backoff_max_s"] == 7.0
    assert math.isfinite(got["syn_timeouts_per_flow"])


def test_jain_by_class_long_term_and_per_slice() -> None:
    flows = pl.DataFrame({
        "flow_id": [0, 1, 2, 3], "group": [0, 0, 1, 1], "start_ns": [0, 0, 0, 0],
        "end_ns": [None, None, None, None], "bytes_delivered": [5, 5, 1, 3],
    }).cast({"end_ns": pl.Int64})
    long_term = metrics.jain_by_class(flows)
    # Class 0 equal shares: 1. Class 1 (1, 3): 4² / (2 · 10) = 0.8.
    assert long_term.get_column("jain").to_list() == pytest.approx([1.0, 0.8])
    assert long_term.get_column("n_flows").to_list() == [2, 2]
    slices = pl.DataFrame({
        "flow_id": [0, 0, 1, 1, 2, 2, 3, 3], "slice": [0, 1] * 4, "start_ns": [0, 10] * 4,
        "bytes": [1, 4, 1, 1, 0, 1, 2, 1],
    })
    short = metrics.jain_by_class(flows, slices)
    got = {(row["group"], row["slice"]): row["jain"] for row in short.iter_rows(named=True)}
    assert got[(0, 0)] == pytest.approx(1.0)
    assert got[(0, 1)] == pytest.approx(25 / (2 * 17))
    assert got[(1, 0)] == pytest.approx(0.5)  # one of two flows has everything
    assert got[(1, 1)] == pytest.approx(1.0)


def test_queue_delay_quantiles_are_nearest_rank_over_the_histogram() -> None:
    table = pl.DataFrame({
        "link": ["bottleneck"] * 3 + ["other"],
        "delay_ns": [1_000_000, 2_000_000, 10_000_000, 5],
        "packets": [50, 40, 10, 7],
    })
    got = metrics.queue_delay_quantiles(table, (0.5, 0.51, 0.9, 0.91, 1.0))
    assert got == {0.5: 1.0, 0.51: 2.0, 0.9: 2.0, 0.91: 10.0, 1.0: 10.0}
    with pytest.raises(ValueError, match="no queueing delays"):
        metrics.queue_delay_quantiles(table, link="nowhere")
    with pytest.raises(ValueError, match="quantile"):
        metrics.queue_delay_quantiles(table, (0.0,))
