"""Matta & Guo's control models (Eqs. 1-7) against the recurrences iterated by hand and the
eigenvalues of their state matrices computed with numpy."""

import numpy as np
import pytest
from smallpipe.models import matta_guo

B, C = 20.0, 10.0


def _iterate_aggregate(alpha, beta, w0, q0, steps):
    """Eq. (1) written out plainly: one shared queue."""
    w, q_prev = np.array(w0, dtype=float), float(q0)
    with np.errstate(over="ignore", invalid="ignore"):  # the unstable cases overflow
        for _ in range(steps):
            q = q_prev + w.sum() - C
            w = w + np.asarray(alpha) * (B - q) + np.asarray(beta) * ((B - q) - (B - q_prev))
            q_prev = q
    return w, q_prev


def _full_state_matrix(alpha, beta):
    """Deviations (w_1..w_N, q^{k−1}) → (w_1..w_N, q^k) of Eq. (1): q' = q + Σw,
    w' = w − (α+β)·q' + β·q."""
    a, b = np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float)
    n = a.shape[0]
    m = np.zeros((n + 1, n + 1))
    m[:n, :n] = np.eye(n) - np.outer(a + b, np.ones(n))
    m[:n, n] = -a
    m[n, :n] = 1.0
    m[n, n] = 1.0
    return m


@pytest.mark.parametrize("n", [1, 2, 5, 10])
@pytest.mark.parametrize("beta", [0.0, 0.02, 0.1])
def test_eq2_boundary_separates_convergence_from_divergence(n, beta):
    if beta * n >= 2:
        pytest.skip("outside 0 < Nβ < 2")
    edge = 4 / n - 2 * beta  # Eq. (2): α < edge
    for alpha, converges in [(0.8 * edge, True), (1.1 * edge, False)]:
        assert matta_guo.paper_aggregate_condition(alpha, beta, n) is converges
        w0 = np.linspace(0.5, 1.5, n)
        w, q = _iterate_aggregate([alpha] * n, [beta] * n, w0, 0.0, 3000)
        if beta == 0.0:
            # β = 0 puts both modes on the unit circle (product of roots 1 − Nβ = 1): no decay.
            assert not matta_guo.aggregate_stable([alpha] * n, [beta] * n)
            continue
        if converges:
            assert q == pytest.approx(B, abs=1e-6) and w.sum() == pytest.approx(C, abs=1e-6)
            assert matta_guo.aggregate_stable([alpha] * n, [beta] * n)
        else:
            assert not abs(q - B) <= 1e3  # diverged (possibly to overflow)
            assert not matta_guo.aggregate_stable([alpha] * n, [beta] * n)


@pytest.mark.parametrize(("alpha", "beta"), [([0.1, 0.3, 0.05], [0.01, 0.2, 0.1]), ([0.5, 0.5], [0.6, 0.1]),
                                             ([1.0], [0.3])])
def test_reduced_eigenvalues_are_the_full_systems(alpha, beta):
    full = list(np.linalg.eigvals(_full_state_matrix(alpha, beta)))
    for root in matta_guo.aggregate_eigenvalues(alpha, beta):
        k = int(np.argmin([abs(x - root) for x in full]))
        assert abs(full.pop(k) - root) < 1e-9
    # What is left: one unit mode per flow beyond the first (the uncontrolled differences).
    assert len(full) == len(alpha) - 1
    assert all(abs(x - 1) < 1e-9 for x in full)
    spectral = max(abs(r) for r in matta_guo.aggregate_eigenvalues(alpha, beta))
    assert bool(spectral < 1) is matta_guo.aggregate_stable(alpha, beta)


def test_unequal_start_converges_to_the_unfair_state_of_eq4():
    # Hand: w0 = (1, 3), C = 10 → each gains (10 − 4)/2 = 3: (4, 6), not the fair (5, 5).
    traj = matta_guo.simulate_aggregate(0.1, 0.05, B, C, [1.0, 3.0], 0.0, 2000)
    np.testing.assert_allclose(traj.w[-1], [4.0, 6.0], atol=1e-9)
    assert traj.q[-1, 0] == pytest.approx(B, abs=1e-9)
    w_s, q_s = matta_guo.aggregate_equilibrium([1.0, 3.0], B, C)
    np.testing.assert_allclose(w_s, [4.0, 6.0])
    assert q_s == B


def test_isolation_keeps_a_well_tuned_class_stable_beside_an_aggressive_one():
    # Class 0: α + 2β = 4.6 > 4 (Eq. 6 violated); class 1: 0.9 < 4. Targets B_i, C_i differ.
    alpha, beta = [3.0, 0.5], [0.8, 0.2]
    assert not matta_guo.paper_individual_condition(3.0, 0.8)
    assert matta_guo.paper_individual_condition(0.5, 0.2)
    traj = matta_guo.simulate_individual(alpha, beta, [12.0, 8.0], [6.0, 4.0], [1.0, 1.0], [0.0, 0.0], 500)
    assert abs(traj.q[-1, 0]) > 1e6
    # Eq. (7): the stable class reaches w = C_i, q = B_i whatever it started from.
    w_s, q_s = matta_guo.individual_equilibrium([12.0, 8.0], [6.0, 4.0])
    assert traj.w[-1, 1] == pytest.approx(w_s[1], abs=1e-9)
    assert traj.q[-1, 1] == pytest.approx(q_s[1], abs=1e-9)
    # Sharing one queue, the aggressive flow drags the other along: Σα + 2Σβ = 5.5 > 4.
    shared = matta_guo.simulate_aggregate(alpha, beta, 20.0, 10.0, [1.0, 1.0], 0.0, 500)
    assert abs(shared.q[-1, 0]) > 1e6 and abs(shared.w[-1, 1]) > 1e6


def test_individual_condition_is_eq2_with_one_flow():
    for alpha, beta in [(1.0, 1.4), (1.0, 1.6), (3.5, 0.2), (3.5, 0.3)]:
        assert matta_guo.paper_individual_condition(alpha, beta) is matta_guo.paper_aggregate_condition(alpha, beta, 1)
        spectral = max(abs(r) for r in matta_guo.aggregate_eigenvalues([alpha], [beta]))
        assert bool(spectral < 1) is matta_guo.individual_stable(alpha, beta)
        assert matta_guo.individual_stable(alpha, beta) is matta_guo.paper_individual_condition(alpha, beta)


def test_rejects_mismatched_gains():
    with pytest.raises(ValueError, match="alpha"):
        matta_guo.simulate_aggregate([0.1, 0.2, 0.3], 0.1, B, C, [1.0, 2.0], 0.0, 10)



@pytest.mark.parametrize(("alpha", "beta"), [([0.22] * 10, [0.05] * 10), ([0.05] * 8, [0.02] * 8), ([0.5, 0.5], [0.6, 0.1])])
def test_rounding_gain_is_the_l1_norm_of_the_full_systems_impulse_response(alpha, beta):
    # Independently, per flow: the flows read q + 1 at step 0 only (true queue 0), so
    # w^0 = −(α+β); step 1 charges β against that read of 1; then the (N+1)-state matrix.
    a, b = np.asarray(alpha), np.asarray(beta)
    w0 = -(a + b)
    q1 = w0.sum()
    w1 = w0 - (a + b) * q1 + b * 1.0
    state, m = np.concatenate([w1, [q1]]), _full_state_matrix(alpha, beta)
    total = 1.0 + abs(q1)  # the true queue is 1 below what was read at step 0, then q^1, q^2, ...
    for _ in range(20_000):
        state = m @ state
        total += abs(state[-1])
    assert matta_guo.rounding_gain(alpha, beta, steps=20_001) == pytest.approx(total, rel=1e-9)


def test_rounding_gain_grows_without_bound_towards_the_eq2_edge():
    gains = [matta_guo.rounding_gain([4 * m / 10 - 0.1] * 10, [0.05] * 10) for m in (0.5, 0.8, 0.95, 0.99)]
    assert gains == sorted(gains) and gains[-1] > 5 * gains[0]
    assert matta_guo.rounding_gain([0.32] * 10, [0.05] * 10) == float("inf")  # beyond the edge
