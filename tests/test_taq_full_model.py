"""The TAQ paper's full idealized model (§3.1, Figure 5) against independently derived values."""

import numpy as np
import pytest
from smallpipe.models import taq_full


@pytest.mark.parametrize("p", [0.0, 0.02, 0.1, 0.3, 0.49, 0.8, 1.0])
@pytest.mark.parametrize(("w_max", "stages"), [(2, 1), (6, 3), (9, 5)])
def test_probability_is_conserved(p, w_max, stages):
    chain = taq_full.build_chain(p, w_max, stages)
    assert np.all(chain.matrix >= -1e-15)
    np.testing.assert_allclose(chain.matrix.sum(axis=1), 1.0, atol=1e-12)
    pi = taq_full.stationary_distribution(p, w_max, stages)
    values = np.array(list(pi.probabilities.values()))
    assert np.all(values >= -1e-12)
    assert values.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(values @ chain.matrix, values, atol=1e-12)


def test_without_loss_the_window_sits_at_w_max():
    for w_max in (2, 6, 10):
        pi = taq_full.stationary_distribution(0.0, w_max)
        assert pi.probabilities[f"S{w_max}"] == pytest.approx(1.0)
        assert pi.timeout_probability == pytest.approx(0.0, abs=1e-12)


def test_small_loss_timeouts_grow_as_78_p_squared():
    # To first order the flow sits at S6. A timeout there needs two losses (C(6,2)·p²)
    # or a lost fast retransmission (6p·p); or one loss halves it to S3 (6p), where any
    # of its 3 packets lost (3p) times out: 39p² per epoch, each timeout costing two
    # timeout epochs (b1.1, S1^1).
    p = 1e-4
    pi = taq_full.stationary_distribution(p)
    assert pi.timeout_probability / p**2 == pytest.approx(78.0, rel=0.01)


@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_total_loss_cycles_through_the_last_stage(stages):
    # p = 1: every retransmission is lost, so the flow loops through the capped
    # stage: 2^K − 1 idle epochs, then one retransmission.
    pi = taq_full.stationary_distribution(1.0, 6, stages)
    assert pi.packets_sent(0) == pytest.approx((2**stages - 1) / 2**stages)
    assert pi.packets_sent(1) == pytest.approx(1 / 2**stages)
    assert pi.timeout_probability == pytest.approx(1.0)


@pytest.mark.parametrize("p", [0.05, 0.1, 0.3])
def test_two_state_window_chain_solved_by_hand(p):
    # W_max = 2, one stage. States S2, S2^1, b1.1, S1^1; with a = (1−p)², q = 1 − a:
    #   π_S1 = π_b, π_S2^1 = (1−p)·π_b, π_S2 = a·(π_S2 + π_S2^1) ⇒ π_S2 = a(1−p)/q·π_b,
    #   Σπ = 1 ⇒ π_b = 1 / (2 + (1−p)/q).
    a = (1 - p) ** 2
    q = 1 - a
    b = 1 / (2 + (1 - p) / q)
    expected = {"b1.1": b, "S1^1": b, "S2^1": (1 - p) * b, "S2": a * (1 - p) / q * b}
    pi = taq_full.stationary_distribution(p, w_max=2, max_backoff_stage=1).probabilities
    assert set(pi) == set(expected)
    for state, value in expected.items():
        assert pi[state] == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(("p", "stages"), [(0.2, 4), (0.4, 3), (0.6, 2)])
def test_idle_epochs_per_timeout_follow_the_backoff_doubling(p, stages):
    # From a fresh timeout (b1.1) until the retransmission gets through: stage k idles
    # 2^k − 1 epochs and is reached with p^(k−1); past the cap each failure idles 2^K − 1 again.
    expected = sum(p ** (k - 1) * (2**k - 1) for k in range(1, stages)) + p ** (stages - 1) * (
        2**stages - 1
    ) / (1 - p)
    chain = taq_full.build_chain(p, 6, stages)
    transient = [i for i, s in enumerate(chain.states) if s.startswith(("b", "S1^"))]
    q = chain.matrix[np.ix_(transient, transient)]
    visits = np.linalg.inv(np.eye(len(transient)) - q)
    start = transient.index(chain.states.index("b1.1"))
    idle = [k for k, i in enumerate(transient) if chain.packets_sent[i] == 0]
    assert visits[start, idle].sum() == pytest.approx(expected, rel=1e-10)


def _sample_path_aggregates(p, w_max, stages, epochs, seed):
    """The model's rules written as a sender, one epoch at a time (not from the matrix)."""
    rng = np.random.default_rng(seed)
    cwnd, stage, idle_left, retransmitting = w_max, 0, 0, False
    sent = np.zeros(w_max + 1)
    for _ in range(epochs):
        if idle_left:
            sent[0] += 1
            idle_left -= 1
            retransmitting = idle_left == 0
            continue
        if retransmitting:
            sent[1] += 1
            retransmitting = False
            if rng.random() < p:
                stage = min(stage + 1, stages)
                idle_left = 2**stage - 1
            else:
                cwnd = 2
            continue
        sent[cwnd] += 1
        losses = int((rng.random(cwnd) < p).sum())
        if losses == 0:
            cwnd, stage = min(cwnd + 1, w_max), 0
        elif losses == 1 and cwnd >= 4 and rng.random() >= p:
            cwnd = cwnd // 2
        else:
            stage = min(stage + 1, stages)
            idle_left = 2**stage - 1
    return sent / epochs


def test_stationary_aggregates_match_a_simulated_sender():
    p, w_max, stages = 0.12, 6, 3
    simulated = _sample_path_aggregates(p, w_max, stages, 200_000, seed=7)
    pi = taq_full.stationary_distribution(p, w_max, stages)
    for packets in range(w_max + 1):
        assert pi.packets_sent(packets) == pytest.approx(simulated[packets], abs=0.006)


def test_tipping_point_is_near_the_papers_ten_percent():
    # §3.2: beyond about 10% loss the timeout probability rises rapidly.
    tip = taq_full.tipping_point()
    assert 0.04 < tip < 0.12
    low, high = taq_full.timeout_probability_curve([0.02, 0.2])
    assert low < 0.1 and high > 0.5
    half = taq_full.loss_at_timeout_probability(0.5)
    assert taq_full.stationary_distribution(half).timeout_probability == pytest.approx(0.5, abs=1e-9)


def test_more_backoff_stages_mean_more_idle_time():
    # A longer timer cap can only lengthen silences.
    idle = [taq_full.stationary_distribution(0.2, 6, k).packets_sent(0) for k in (1, 2, 3, 5)]
    assert idle == sorted(idle)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"p": -0.1}, "p=-0.1"), ({"p": 1.5}, "p=1.5"), ({"p": 0.1, "w_max": 1}, "w_max=1"),
     ({"p": 0.1, "max_backoff_stage": 0}, "max_backoff_stage=0")],
)
def test_rejects_bad_input_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        taq_full.build_chain(**kwargs)
