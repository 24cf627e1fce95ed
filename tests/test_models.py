"""Analytical models against hand-computed values and the papers' limits."""

import math

import numpy as np
import pytest
from smallpipe.models import interactive, padhye, taq_markov

# ---------------------------------------------------------------- Padhye et al. 1998

# Worked example: p = 0.02, b = 1, RTT = 0.1 s, T0 = 0.5 s (values computed by hand
# with 30-digit arithmetic, from the paper's equations):
#   E[Wu] = 1 + sqrt(8·0.98/0.06 + 1) = 1 + sqrt(131.6667)          = 12.4746096520
#   Q̂(E[Wu]) = (1−0.98³)(1 + 0.98³(1 − 0.98^9.4746)) / (1 − 0.98^12.4746) = 0.3072671610
#   f(0.02) = 1 + .02 + 2·.0004 + 4·8e-6 + 8·1.6e-7 + 16·3.2e-9 + 32·6.4e-11 = 1.020833333248
#   B = (49 + 12.47461 + 0.30727/0.98) / (0.1·(12.47461/2 + 1) + 0.30727·0.5·f/0.98)
#     = 61.78815 / 0.88377                                          = 69.9146438848 pkt/s
P, B_ACK, RTT_S, T0_S = 0.02, 1, 0.1, 0.5


def test_padhye_expected_window_by_hand():
    assert padhye.expected_window_pkts(P, b=B_ACK) == pytest.approx(12.4746096520390, rel=1e-12)


def test_padhye_timeout_probability_by_hand():
    assert padhye.timeout_probability(12.4746096520390, P) == pytest.approx(0.307267160963571, rel=1e-10)
    assert padhye.timeout_probability(8, P) == pytest.approx(0.429692080430622, rel=1e-12)


def test_padhye_timeout_probability_is_one_for_tiny_windows():
    # With three or fewer packets in flight no triple duplicate ACK can arrive.
    for w in (1, 2, 3):
        assert padhye.timeout_probability(w, 0.01) == 1.0


def test_padhye_backoff_factor_by_hand():
    assert padhye.backoff_factor(P) == pytest.approx(1.020833333248, rel=1e-12)
    assert padhye.backoff_factor(0.5) == 1 + 0.5 + 0.5 + 0.5 + 0.5 + 0.5 + 0.5


def test_padhye_full_model_by_hand():
    b = padhye.throughput_full_pps(P, rtt_s=RTT_S, t0_s=T0_S, b=B_ACK)
    assert b == pytest.approx(69.9146438847987, rel=1e-10)


def test_padhye_full_model_window_limited_by_hand():
    # Wm = 8 < E[Wu]: Q̂(8) = 0.4296920804; a TDP has 1·8/8 + 0.98/(0.02·8) + 2 = 9.125
    # rounds, so B = (49 + 8 + 0.42969/0.98) / (0.9125 + 0.42969·0.5·f/0.98) = 50.5487674909.
    b = padhye.throughput_full_pps(P, rtt_s=RTT_S, t0_s=T0_S, wm_pkts=8, b=B_ACK)
    assert b == pytest.approx(50.5487674908950, rel=1e-10)


def test_padhye_approximate_model_by_hand():
    # 1 / (0.1·sqrt(2·0.02/3) + 0.5·min(1, 3·sqrt(3·0.02/8))·0.02·(1 + 32·0.0004))
    # = 1 / (0.0115470054 + 0.0026313316) = 70.5301335460
    assert padhye.throughput_approx_pps(P, rtt_s=RTT_S, t0_s=T0_S, b=B_ACK) == pytest.approx(
        70.530133545985, rel=1e-10
    )
    # The receiver window caps it: Wm/RTT = 5 / 0.1.
    assert padhye.throughput_approx_pps(P, rtt_s=RTT_S, t0_s=T0_S, wm_pkts=5, b=B_ACK) == 50.0


def test_padhye_full_model_is_the_ratio_of_its_parts():
    # B = (E[Y] + Q·E[R]) / (E[A] + Q·E[Z_TO]), assembled from the paper's pieces.
    p, b, rtt, t0 = 0.05, 2, 0.3, 1.2
    w = padhye.expected_window_pkts(p, b=b)
    q = padhye.timeout_probability(w, p)
    e_y, e_a = (1 - p) / p + w, rtt * (b * w / 2 + 1)
    e_r, e_z = 1 / (1 - p), t0 * padhye.backoff_factor(p) / (1 - p)
    assert padhye.throughput_full_pps(p, rtt_s=rtt, t0_s=t0, b=b) == pytest.approx(
        (e_y + q * e_r) / (e_a + q * e_z), rel=1e-12
    )


def test_padhye_tends_to_the_receiver_window_limit_as_loss_vanishes():
    wm, rtt = 12, 0.2
    b = padhye.throughput_full_pps(1e-7, rtt_s=rtt, t0_s=1.0, wm_pkts=wm, b=2)
    assert b == pytest.approx(wm / rtt, rel=1e-3)


@pytest.mark.parametrize("p", [1e-4, 1e-3, 0.005, 0.01, 0.02])
def test_padhye_approximate_agrees_with_full_at_small_loss(p):
    full = padhye.throughput_full_pps(p, rtt_s=0.2, t0_s=1.0, b=2)
    approx = padhye.throughput_approx_pps(p, rtt_s=0.2, t0_s=1.0, b=2)
    assert approx == pytest.approx(full, rel=0.03)


def test_padhye_reduces_to_square_root_law_without_timeouts():
    # For small p and T0 = 0 the approximate model is 1/(RTT·sqrt(2bp/3)).
    p, rtt = 1e-4, 0.1
    assert padhye.throughput_approx_pps(p, rtt_s=rtt, t0_s=0.0, b=1) == pytest.approx(
        1 / (rtt * math.sqrt(2 * p / 3)), rel=1e-12
    )


def test_padhye_rejects_impossible_loss():
    for p in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            padhye.throughput_full_pps(p, rtt_s=0.1, t0_s=1.0, b=1)


# ---------------------------------------------- interactive flows, Eqs. (1)-(3)


@pytest.mark.parametrize(
    ("p", "rto_s", "rtt_s", "expected_s"),
    [
        (0.0, 1.0, 0.2, 0.2),
        (0.1, 1.0, 0.2, 0.1 / 0.8 + 0.2),  # 0.325
        (0.25, 2.0, 0.1, 1.1),  # 0.25/0.5 · 2 + 0.1
    ],
)
def test_interactive_mean_response_time_by_hand(p, rto_s, rtt_s, expected_s):
    assert interactive.response_time_interactive(p, rto_s, rtt_s) == pytest.approx(expected_s, rel=1e-12)


def test_interactive_mean_response_time_diverges_at_half():
    with pytest.raises(ValueError):
        interactive.response_time_interactive(0.5, 1.0, 0.1)
    with pytest.raises(ValueError):
        interactive.response_time_interactive(0.7, 1.0, 0.1)


def test_interactive_distribution_atoms_by_hand():
    # Three failures: wait 1 + 2 + 4 RTOs, then one RTT; probability 0.1³ · 0.9.
    latency_s, probability = interactive.response_time_distribution(0.1, 1.0, 0.2, 3)
    assert latency_s == pytest.approx(7.2)
    assert probability == pytest.approx(0.0009)
    assert interactive.response_time_distribution(0.1, 1.0, 0.2, 0) == pytest.approx((0.2, 0.9))


def test_interactive_distribution_mean_is_eq3():
    p, rto_s, rtt_s = 0.2, 1.5, 0.3
    atoms = [interactive.response_time_distribution(p, rto_s, rtt_s, i) for i in range(200)]
    assert sum(prob for _, prob in atoms) == pytest.approx(1.0, rel=1e-12)
    mean = sum(latency * prob for latency, prob in atoms)
    assert mean == pytest.approx(interactive.response_time_interactive(p, rto_s, rtt_s), rel=1e-9)


def test_interactive_distribution_matches_monte_carlo():
    # Simulate the retransmission process directly: each attempt fails with p, the
    # k-th wait is 2^k RTO.
    rng = np.random.default_rng(7)
    p, rto_s, rtt_s = 0.15, 1.0, 0.1
    failures = rng.geometric(1 - p, size=200_000) - 1
    latencies = (2.0**failures - 1) * rto_s + rtt_s
    assert latencies.mean() == pytest.approx(interactive.response_time_interactive(p, rto_s, rtt_s), rel=0.02)


# ---------------------------------------------- TAQ partial Markov model, Section 3.1


def _probability(matrix, source, target):
    return matrix[taq_markov.STATES.index(source), taq_markov.STATES.index(target)]


def test_taq_transition_probabilities_follow_eqs_1_to_3_and_9_10():
    p = 0.1
    m = taq_markov.transition_matrix(p)
    assert _probability(m, "S2", "S3") == pytest.approx(0.9**2)  # Eq. (1)
    assert _probability(m, "S3", "b*") == pytest.approx(1 - 0.9**3)  # no fast retransmit below 4
    assert _probability(m, "S5", "S2") == pytest.approx(5 * 0.1 * 0.9**4 * 0.9)  # Eq. (2)
    assert _probability(m, "S6", "S3") == pytest.approx(6 * 0.1 * 0.9**6)
    assert _probability(m, "S6", "S6") == pytest.approx(0.9**6)  # capped at W_max
    assert _probability(m, "S4", "b0") == pytest.approx(1 - 0.9**4 - 4 * 0.1 * 0.9**4)  # Eq. (3)
    assert _probability(m, "b0", "S1") == 1.0
    assert _probability(m, "b*", "S1") == pytest.approx(0.8)  # Eq. (9)
    assert _probability(m, "b*", "b*") == pytest.approx(0.2)  # Eq. (10)
    assert _probability(m, "S1", "S2") == pytest.approx(0.9)
    assert _probability(m, "S1", "b*") == pytest.approx(0.1)
    np.testing.assert_allclose(m.sum(axis=1), 1.0)


@pytest.mark.parametrize("p", [0.01, 0.05, 0.1, 0.2, 0.3, 0.45])
def test_taq_stationary_distribution_balances_the_flows(p):
    pi = taq_markov.stationary_distribution(p).probabilities
    q = 1 - p
    assert sum(pi.values()) == pytest.approx(1.0)
    assert all(value >= 0 for value in pi.values())
    # Balance written from the paper's equations, state by state (inflow = outflow).
    to_b0 = sum(pi[f"S{n}"] * (1 - q**n - n * p * q**n) for n in (4, 5, 6))
    assert pi["b0"] == pytest.approx(to_b0)
    assert pi["S1"] == pytest.approx(pi["b0"] + (1 - 2 * p) * pi["b*"])
    into_b_star = pi["S1"] * p + pi["S2"] * (1 - q**2) + pi["S3"] * (1 - q**3)
    assert pi["b*"] * (1 - 2 * p) == pytest.approx(into_b_star)
    into_s2 = pi["S1"] * q + pi["S4"] * 4 * p * q**4 + pi["S5"] * 5 * p * q**5
    assert pi["S2"] == pytest.approx(into_s2)
    assert pi["S3"] == pytest.approx(pi["S2"] * q**2 + pi["S6"] * 6 * p * q**6)
    assert pi["S6"] * (1 - q**6) == pytest.approx(pi["S5"] * q**5)


def test_taq_expected_idle_time_is_eq8():
    # Eq. (8): Σ_i (2^(i+1) − 1) p^i (1−p) = 1/(1−2p); the chain's mean stay in b* is
    # 1 / (1 − P(b* → b*)).
    for p in (0.05, 0.2, 0.4):
        series = sum((2 ** (i + 1) - 1) * p**i * (1 - p) for i in range(400))
        assert series == pytest.approx(1 / (1 - 2 * p), rel=1e-9)
        stay = 1 / (1 - _probability(taq_markov.transition_matrix(p), "b*", "b*"))
        assert stay == pytest.approx(series, rel=1e-9)


def test_taq_chain_without_loss_sits_at_max_window():
    pi = taq_markov.stationary_distribution(0.0)
    assert pi.probabilities["S6"] == pytest.approx(1.0)
    assert pi.timeout_probability == pytest.approx(0.0, abs=1e-12)


def test_taq_stationary_distribution_matches_a_simulated_chain():
    p = 0.15
    matrix = taq_markov.transition_matrix(p)
    rng = np.random.default_rng(3)
    steps = 200_000
    cumulative = matrix.cumsum(axis=1)
    draws = rng.random(steps)
    state, visits = 5, np.zeros(len(taq_markov.STATES))
    for u in draws:
        state = min(int(np.searchsorted(cumulative[state], u, side="right")), len(taq_markov.STATES) - 1)
        visits[state] += 1
    expected = taq_markov.stationary_distribution(p).probabilities
    for k, name in enumerate(taq_markov.STATES):
        assert visits[k] / steps == pytest.approx(expected[name], abs=0.01)


def test_taq_timeout_probability_grows_with_loss():
    losses = [0.01, 0.05, 0.1, 0.15, 0.2, 0.3]
    timeouts = [taq_markov.stationary_distribution(p).timeout_probability for p in losses]
    assert timeouts == sorted(timeouts)
    # Section 3.2: beyond ~10% loss a large fraction of flows sits in timeouts.
    assert timeouts[0] < 0.05
    assert timeouts[-1] > 0.3


def test_taq_rejects_loss_at_or_above_half():
    with pytest.raises(ValueError):
        taq_markov.transition_matrix(0.5)
