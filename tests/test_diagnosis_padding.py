"""benches/diagnosis/padding.py's `padding-model` burst classifier on a short run (seed 2,
p = 0.1, 10 padded clients for 100 s), checked against the loss rule it reads: each data
segment is lost with p on its own, so the share of bursts whose data was lost on its first
send is p, and the share of those whose three dummies all arrived is (1 − p)³; the share
sent behind an earlier burst's dummy hole is the first-order estimate of the bench's
`hole_at_send_share`, and a burst held by such a hole is covered by SACK one RTT after its
send."""

import importlib.util
import math
from pathlib import Path

import polars as pl
import pytest
from smallpipe.experiments import padding_fig5
from smallpipe.result import simulate

ROOT = Path(__file__).resolve().parents[1]
P = 0.1


def _bench():
    spec = importlib.util.spec_from_file_location("padding_diagnosis", ROOT / "benches/diagnosis/padding.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def classified():
    bench = _bench()
    sc = padding_fig5.scenario("padding", P, flows=10, duration_s=100.0, seed=2)
    r = simulate(sc.with_overrides({"trace.events": True}))
    return bench, bench.classify_padding_bursts(r)


def _within_3_se(share: float, expected: float, n: int) -> bool:
    return abs(share - expected) <= 3 * math.sqrt(expected * (1 - expected) / n)


def test_data_lost_on_first_send_with_probability_p(classified):
    bench, t = classified
    lost = t.filter(pl.col("cause").is_in(bench.CAUSES[3:]))
    assert t.height > 500
    assert _within_3_se(lost.height / t.height, P, t.height), lost.height / t.height


def test_all_three_dummies_arrive_behind_a_lost_data_segment_with_1_minus_q(classified):
    bench, t = classified
    lost = t.filter(pl.col("cause").is_in(bench.CAUSES[3:]))
    three = lost.filter(pl.col("cause").is_in(bench.CAUSES[3:5]))
    expected = 1 - bench.m.padding_timeout_probability(P)  # (1 − p)³, Eq. (11)
    assert _within_3_se(three.height / lost.height, expected, lost.height), three.height / lost.height


def test_bursts_behind_a_dummy_hole_match_the_first_order_share(classified):
    bench, t = classified
    expected = bench.hole_at_send_share(P, padding_fig5.RTO_S, padding_fig5.RTT_MS / 1e3)
    assert _within_3_se(t["hole_at_send"].mean(), expected, t.height), t["hole_at_send"].mean()


def test_a_held_burst_arrived_one_rtt_after_its_send(classified):
    bench, t = classified
    held = t.filter(pl.col("cause") == bench.CAUSES[1])
    assert held.height > 0
    assert held["hole_at_send"].all()
    assert (held["cover_ns"] <= bench.SLOW_NS).all()
    assert (held["response_ns"] > bench.SLOW_NS).all()
