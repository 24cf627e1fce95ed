"""Metrics against hand-computed values and Jain's index's defining properties."""

import math

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from smallpipe import metrics
from smallpipe.result import FLOWS_SCHEMA, LINKS_SCHEMA, SLICES_SCHEMA

S = 1_000_000_000  # one second in ns

# ------------------------------------------------------------------- jain()


@pytest.mark.parametrize(
    ("shares", "expected"),
    [
        ([5, 5, 5, 5], 1.0),
        ([1, 0, 0, 0], 1 / 4),  # one flow hogs the link: the 1/n worst case
        ([7, 0, 0, 0, 0, 0, 0, 0, 0, 0], 1 / 10),
        ([1, 2, 3], 36 / 42),  # 6² / (3 · 14)
        ([3, 1], 0.8),  # 4² / (2 · 10)
        ([1, 1, 0, 0], 0.5),  # half the flows starved
    ],
)
def test_jain_by_hand(shares, expected):
    assert metrics.jain(shares) == pytest.approx(expected, rel=1e-12)


def test_jain_of_nothing_delivered_is_nan():
    assert math.isnan(metrics.jain([0, 0, 0]))


def test_jain_rejects_empty_and_negative():
    with pytest.raises(ValueError):
        metrics.jain([])
    with pytest.raises(ValueError):
        metrics.jain([1.0, -1.0])


# Shares are zero or normal-sized (scaling subnormal floats is not exact).
share = st.one_of(st.just(0.0), st.floats(min_value=1e-100, max_value=1e12))
shares_strategy = st.lists(share, min_size=1, max_size=50).filter(lambda xs: sum(xs) > 0)


@given(shares_strategy)
def test_jain_is_between_one_over_n_and_one(shares):
    index = metrics.jain(shares)
    assert 1 / len(shares) - 1e-9 <= index <= 1 + 1e-9


@given(shares_strategy, st.floats(min_value=1e-6, max_value=1e6))
def test_jain_is_scale_invariant(shares, scale):
    assert metrics.jain([x * scale for x in shares]) == pytest.approx(metrics.jain(shares), rel=1e-9)


# ---------------------------------------------------------- jain_per_slice()


def slices_frame(bytes_by_flow, slice_ns):
    """Dense slices table from {flow_id: [bytes per slice]}."""
    rows = [
        {"flow_id": flow_id, "slice": k, "start_ns": k * slice_ns, "bytes": b}
        for flow_id, per_slice in bytes_by_flow.items()
        for k, b in enumerate(per_slice)
    ]
    return pl.DataFrame(rows, schema=SLICES_SCHEMA)


def flows_frame(rows):
    """Flows table from partial rows (missing columns are null)."""
    return pl.DataFrame(rows, schema=FLOWS_SCHEMA)


# 3 flows, 4 native slices of 10 s.
SLICES = slices_frame({0: [100, 100, 0, 0], 1: [100, 0, 300, 100], 2: [0, 0, 0, 100]}, 10 * S)


def test_jain_per_slice_native_by_hand():
    per_slice = metrics.jain_per_slice(SLICES)
    assert per_slice.get_column("slice").to_list() == [0, 1, 2, 3]
    assert per_slice.get_column("start_ns").to_list() == [0, 10 * S, 20 * S, 30 * S]
    # slice 0: [100,100,0] → 200²/(3·20000); slice 1: [100,0,0] → 1/3; slice 2 → 1/3; slice 3 → 2/3
    assert per_slice.get_column("jain").to_list() == pytest.approx([2 / 3, 1 / 3, 1 / 3, 2 / 3])
    assert per_slice.get_column("n_flows").to_list() == [3, 3, 3, 3]
    assert per_slice.get_column("zero_share").to_list() == pytest.approx([1 / 3, 2 / 3, 2 / 3, 1 / 3])


def test_jain_per_slice_rebins_to_coarser_slices():
    per_slice = metrics.jain_per_slice(SLICES, slice_ns=20 * S)
    assert per_slice.get_column("start_ns").to_list() == [0, 20 * S]
    # [200, 100, 0] → 300²/(3·50000) = 0.6; [0, 400, 100] → 500²/(3·170000) = 25/51
    assert per_slice.get_column("jain").to_list() == pytest.approx([0.6, 25 / 51])
    assert per_slice.get_column("zero_share").to_list() == pytest.approx([1 / 3, 1 / 3])


def test_jain_per_slice_rejects_a_slice_that_is_not_a_multiple():
    with pytest.raises(ValueError):
        metrics.jain_per_slice(SLICES, slice_ns=15 * S)


def test_jain_per_slice_counts_only_active_flows():
    flows = flows_frame(
        [
            {"flow_id": 0, "start_ns": 0, "end_ns": 20 * S},  # finished exactly at slice 2's start
            {"flow_id": 1, "start_ns": 0, "end_ns": None},
            {"flow_id": 2, "start_ns": 25 * S, "end_ns": None},  # starts inside slice 2
        ]
    )
    per_slice = metrics.jain_per_slice(SLICES, flows=flows)
    # slice 0: flows 0,1 [100,100]; slice 1: flows 0,1 [100,0];
    # slice 2: flows 1,2 [300,0]; slice 3: flows 1,2 [100,100]
    assert per_slice.get_column("n_flows").to_list() == [2, 2, 2, 2]
    assert per_slice.get_column("jain").to_list() == pytest.approx([1.0, 0.5, 0.5, 1.0])
    assert per_slice.get_column("zero_share").to_list() == pytest.approx([0.0, 0.5, 0.5, 0.0])


def test_jain_per_slice_top40_share():
    # 5 flows: the top ceil(0.4·5) = 2 flows carry 50 + 30 of 100 bytes.
    per_slice = metrics.jain_per_slice(slices_frame({0: [10], 1: [50], 2: [0], 3: [30], 4: [10]}, 20 * S))
    assert per_slice.get_column("top40_share").to_list() == pytest.approx([0.8])
    assert per_slice.get_column("zero_share").to_list() == pytest.approx([0.2])
    # 15 flows: the top ceil(6.0) = 6 (not 7) flows; 6 flows of 10 bytes among 15 → 6/15.
    fifteen = metrics.jain_per_slice(slices_frame({k: [10] for k in range(15)}, 20 * S))
    assert fifteen.get_column("top40_share").to_list() == pytest.approx([0.4])


def test_jain_per_slice_idle_slice_has_null_index():
    per_slice = metrics.jain_per_slice(slices_frame({0: [0, 5], 1: [0, 5]}, 10 * S))
    assert per_slice.get_column("jain").to_list() == [None, pytest.approx(1.0)]
    assert per_slice.get_column("top40_share").to_list()[0] is None


# ---------------------------------------------- long-term fairness, goodput, links

FLOWS = flows_frame(
    [
        {"flow_id": 0, "start_ns": 0, "end_ns": 1 * S, "bytes_delivered": 100, "size_bytes": 100},
        {"flow_id": 1, "start_ns": 0, "end_ns": None, "bytes_delivered": 200},
    ]
)


def test_long_term_jain_over_bytes_by_hand():
    assert metrics.long_term_jain(FLOWS) == pytest.approx(300**2 / (2 * (100**2 + 200**2)))


def test_long_term_jain_over_goodput_accounts_for_lifetimes():
    # 100 B in 1 s and 200 B in 2 s: both 800 bit/s.
    assert metrics.long_term_jain(FLOWS, duration_ns=2 * S) == pytest.approx(1.0)


def test_goodput_per_flow_by_hand():
    flows = pl.concat(
        [FLOWS, flows_frame([{"flow_id": 2, "start_ns": 2 * S, "end_ns": None, "bytes_delivered": 0}])]
    )
    goodput = metrics.goodput_bps(flows, 2 * S)
    assert goodput.get_column("goodput_bps").to_list() == [pytest.approx(800.0), pytest.approx(800.0), None]


def test_utilization_reads_the_named_link():
    links = pl.DataFrame(
        [{"name": "bottleneck", "utilization": 0.95}, {"name": "bottleneck_reverse", "utilization": 0.1}],
        schema=LINKS_SCHEMA,
    )
    assert metrics.utilization(links) == pytest.approx(0.95)
    assert metrics.utilization(links, "bottleneck_reverse") == pytest.approx(0.1)
    with pytest.raises(KeyError):
        metrics.utilization(links, "access")


# ------------------------------------------------------------------ fct_summary()


def test_fct_summary_by_bucket():
    flows = flows_frame(
        [
            {"flow_id": 0, "size_bytes": 500, "start_ns": 0, "end_ns": S // 2},
            {"flow_id": 1, "size_bytes": 5_000, "start_ns": 0, "end_ns": 1 * S},
            {"flow_id": 2, "size_bytes": 9_999, "start_ns": 1 * S, "end_ns": 3 * S},
            {"flow_id": 3, "size_bytes": 1_000, "start_ns": 0, "end_ns": 3 * S},
            {"flow_id": 4, "size_bytes": 5_000, "start_ns": 0, "end_ns": None},
            {"flow_id": 5, "size_bytes": None, "start_ns": 0, "end_ns": None},  # bulk: ignored
            {"flow_id": 6, "size_bytes": 20_000_000, "start_ns": 0, "end_ns": 40 * S},
        ]
    )
    summary = metrics.fct_summary(flows)
    assert summary.get_column("size_lo_bytes").to_list() == [0, 1_000, 10_000_000]
    assert summary.get_column("size_hi_bytes").to_list() == [1_000, 10_000, None]
    assert summary.get_column("flows").to_list() == [1, 4, 1]
    assert summary.get_column("unfinished").to_list() == [0, 1, 0]
    middle = summary.row(1, named=True)
    # finished FCTs in [1000, 10000): 1, 2, 3 s; linear interpolation at q·(n−1)
    assert middle["fct_median_s"] == pytest.approx(2.0)
    assert middle["fct_p10_s"] == pytest.approx(1.2)
    assert middle["fct_p90_s"] == pytest.approx(2.8)
    assert middle["fct_p99_s"] == pytest.approx(2.98)
    assert middle["fct_max_s"] == pytest.approx(3.0)
    assert summary.row(2, named=True)["fct_median_s"] == pytest.approx(40.0)


def test_fct_summary_rejects_unsorted_edges():
    with pytest.raises(ValueError):
        metrics.fct_summary(FLOWS, [0, 100, 10])
