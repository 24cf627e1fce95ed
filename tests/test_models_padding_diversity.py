"""The padding/diversity paper's Eqs. (4)-(14), the gain ratio and the TCP-SF machine,
against hand-derived points, the decision tree summed term by term, Monte Carlo runs of
the tree and limiting cases."""

from math import comb

import numpy as np
import pytest
from smallpipe.models import interactive
from smallpipe.models import padding_diversity as m


def _tree_mean(p, q, rto_s, rtt_s, terms=400):
    # Eq. (9) term by term: no failure costs one RTT; i >= 1 failures cost (2^i − 1) RTO
    # after a timeout (probability Q), or one RTT of fast retransmit then (2^(i−1) − 1) RTO.
    total = rtt_s * (1 - p)
    for i in range(1, terms):
        latency = rtt_s + q * (2**i - 1) * rto_s + (1 - q) * (rtt_s + (2 ** (i - 1) - 1) * rto_s)
        total += p**i * (1 - p) * latency
    return total


@pytest.mark.parametrize(("p", "q"), [(0.01, 0.2), (0.1, 0.5), (0.3, 0.9), (0.2, 0.0)])
def test_eq10_is_the_decision_tree_summed(p, q):
    assert m.response_time_backlogged(p, q, 1.0, 0.1) == pytest.approx(_tree_mean(p, q, 1.0, 0.1), rel=1e-9)


def test_eq10_by_hand():
    # p = 0.1, Q = 0.5, RTO = 1, RTT = 0.1: backoff p/(1−2p) = 0.125;
    # 0.5·0.125 + 0.1 + 0.1·0.5·(0.125 + 0.1) = 0.0625 + 0.1 + 0.01125.
    assert m.response_time_backlogged(0.1, 0.5, 1.0, 0.1) == pytest.approx(0.17375, rel=1e-12)


def test_backlogged_that_always_times_out_is_the_interactive_flow():
    for p in (0.01, 0.1, 0.3):
        assert m.response_time_backlogged(p, 1.0, 1.0, 0.05) == pytest.approx(
            interactive.response_time_interactive(p, 1.0, 0.05), rel=1e-12)


def test_eq10_matches_monte_carlo_of_the_tree():
    rng = np.random.default_rng(3)
    p, q, rto_s, rtt_s = 0.15, 0.4, 1.0, 0.1
    failures = rng.geometric(1 - p, size=400_000) - 1
    timeout = rng.random(failures.size) < q
    latency = np.where(
        failures == 0,
        rtt_s,
        np.where(timeout, rtt_s + (2.0**failures - 1) * rto_s,
                 2 * rtt_s + (2.0 ** np.maximum(failures - 1, 0) - 1) * rto_s),
    )
    assert latency.mean() == pytest.approx(m.response_time_backlogged(p, q, rto_s, rtt_s), rel=0.02)


def test_eq4_and_eq6_by_hand():
    # p = 0.01, b = 1: E[w] = 1 + sqrt(8·0.99/0.03 + 1) = 1 + sqrt(265) = 17.2788;
    # Q̂(17.2788) = (1−0.99³)(1 + 0.99³(1 − 0.99^14.2788)) / (1 − 0.99^17.2788) = 0.21048.
    assert m.expected_window_pkts(0.01) == pytest.approx(1 + 265**0.5, rel=1e-12)
    assert m.padhye_timeout_probability(0.01) == pytest.approx(0.21048, rel=1e-3)


def test_eq7_by_hand_and_small_windows():
    # w = 4, p = 0.01: B(4,k)·(1 + 0.99^k(1.99⁴ − 1)) summed over k = 0..2 is 9.11205e-3,
    # over 1 − 0.99⁴ = 0.03940399.
    assert m.brosh_timeout_probability_window(4, 0.01) == pytest.approx(9.11205e-3 / 0.03940399, rel=1e-4)
    assert all(m.brosh_timeout_probability_window(w, 0.01) == 1.0 for w in (1, 2, 3))
    assert m.brosh_timeout_probability_window(4, 0.1) == 1.0  # capped


def test_eq8_by_hand_and_its_cap():
    assert m.brosh_timeout_probability(0.01, w_max=10) == pytest.approx((6 + 0.96 - 0.0032) / 10, rel=1e-12)
    assert m.brosh_timeout_probability(0.2, w_max=5) == 1.0


def test_eq7_averaged_tends_to_three_over_w_max():
    # Only w <= 3 time out when losses vanish (the printed Eq. (8) says 6/w_max instead).
    assert m.brosh_timeout_probability_uniform(1e-7, w_max=40) == pytest.approx(3 / 40, rel=1e-3)


@pytest.mark.parametrize("p", [0.0, 0.05, 0.1, 0.3])
def test_eq11_with_three_dummies_is_one_minus_all_three_arriving(p):
    # m = 4: "at most two of three arrive" is the complement of "all three arrive".
    assert m.padding_timeout_probability(p, 4) == pytest.approx(1 - (1 - p) ** 3, abs=1e-15)


def test_eq11_general_m_by_hand():
    # m = 6, p = 0.2: at most two of five dummies arrive.
    expected = sum(comb(5, i) * 0.2 ** (5 - i) * 0.8**i for i in range(3))
    assert expected == pytest.approx(0.05792)
    assert m.padding_timeout_probability(0.2, 6) == pytest.approx(0.05792, rel=1e-12)
    assert m.padding_timeout_probability(0.2, 1) == 1.0  # no dummies: every loss times out


def test_eq12_is_eq10_with_the_padding_q():
    p = 0.1
    assert m.response_time_padding(p, 1.0, 0.1) == pytest.approx(
        m.response_time_backlogged(p, 0.271, 1.0, 0.1), rel=1e-12)


def test_eq14_by_hand_and_k1_is_plain_tcp():
    # k = 2, p = 0.1: 0.1 · 0.125 · 1 + 0.1.
    assert m.response_time_diversity(0.1, 1.0, 0.1, k=2) == pytest.approx(0.1125, rel=1e-12)
    for p in (0.01, 0.2, 0.4):
        assert m.response_time_diversity(p, 1.0, 0.2, k=1) == pytest.approx(
            interactive.response_time_interactive(p, 1.0, 0.2), rel=1e-12)


def test_eq14_matches_monte_carlo_of_eq13():
    rng = np.random.default_rng(5)
    p, k, rto_s, rtt_s = 0.3, 2, 1.0, 0.05
    n = 400_000
    first_round_lost = (rng.random((n, k)) < p).all(axis=1)
    later_failures = rng.geometric(1 - p, size=n) - 1  # single copies after the first timeout
    failures = np.where(first_round_lost, 1 + later_failures, 0)
    latency = (2.0**failures - 1) * rto_s + rtt_s
    assert latency.mean() == pytest.approx(m.response_time_diversity(p, rto_s, rtt_s, k=k), rel=0.02)


def test_everything_tends_to_one_rtt_and_gain_one_without_loss():
    rtt_s = 0.1
    for value in (
        m.response_time_backlogged(0.0, 0.3, 1.0, rtt_s),
        m.response_time_padding(0.0, 1.0, rtt_s),
        m.response_time_diversity(0.0, 1.0, rtt_s, k=3),
    ):
        assert value == pytest.approx(rtt_s, rel=1e-12)
    assert m.gain_ratio(1e-9, m.response_time_padding(1e-9, 1.0, rtt_s), 1.0, rtt_s) == pytest.approx(1.0, rel=1e-6)


def test_gain_ratio_by_hand():
    # p = 0.1, RTO 1, RTT 0.1: E[L] = 0.225, diversity k = 2 gives 0.1125: G = 2.
    assert m.gain_ratio(0.1, m.response_time_diversity(0.1, 1.0, 0.1), 1.0, 0.1) == pytest.approx(2.0, rel=1e-12)


def test_tcp_sf_transitions_by_hand():
    t = m.tcp_sf_transitions(0.1)
    assert t["FR"] == pytest.approx(0.1 * 0.729)
    assert t["S"] == pytest.approx(0.6561)
    assert t["TO"] == pytest.approx(1 - 0.0729 - 0.6561)
    assert sum(t.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("p", [0.01, 0.1, 0.4])
def test_tcp_sf_times_out_more_than_tcp_when_small_segments_lose_as_often(p):
    assert m.tcp_sf_transitions(p)["TO"] > p


def test_bad_input_names_the_value():
    with pytest.raises(ValueError, match="p=0.5"):
        m.response_time_backlogged(0.5, 0.1, 1.0, 0.1)
    with pytest.raises(ValueError, match="k=0"):
        m.response_time_diversity(0.1, 1.0, 0.1, k=0)
    with pytest.raises(ValueError, match="q=1.5"):
        m.response_time_backlogged(0.1, 1.5, 1.0, 0.1)


def test_thin_linear_without_linear_retries_is_eq3():
    for p in (0.01, 0.2, 0.4):
        assert m.response_time_thin_linear(p, 1.0, 0.1, linear_retries=0) == pytest.approx(
            interactive.response_time_interactive(p, 1.0, 0.1), rel=1e-9)


def test_thin_linear_is_one_rto_per_failure_while_linear():
    # Every wait is one RTO for the first 7 timeouts: E = RTT + RTO·Σ i p^i (1−p) = RTT +
    # RTO·p/(1−p), up to the p^8 tail (1e-8 at p = 0.1).
    assert m.response_time_thin_linear(0.1, 1.0, 0.1) == pytest.approx(0.1 + 0.1 / 0.9, rel=1e-6)
