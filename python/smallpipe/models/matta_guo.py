"""Matta & Guo's discrete-time control models of aggregate and individual (isolated) flow
control, Section 2, Eqs. (1)-(7).

Source: Matta & Guo, "Differentiated Predictive Fair Service for TCP Flows"
(papers/class-isolation-short-long-flows.md). Each flow ``i`` sets its window ``w_i`` by a
PID-like rule on the error between a buffer target and the packets outstanding; the
acknowledgment (service) rate is a constant ``C`` per step.

- Aggregate control, Eq. (1): ``q^k = q^{k−1} + Σ_i w_i^{k−1} − C`` and
  ``w_i^k = w_i^{k−1} + α_i(B − q^k) + β_i[(B − q^k) − (B − q^{k−1})]``: every flow
  reacts to the shared queue ``q``.
- Individual control, Eq. (5): the same per flow (or class) ``i`` with its own queue
  ``q_i``, target ``B_i`` and service ``C_i``.

Stability. Summing Eq. (1) over the flows, the errors ``e = q − B`` and ``s = Σw − C``
obey ``(e, s)^k = M·(e, s)^{k−1}`` with ``M = [[1, 1], [−A, 1 − A − Bβ]]``,
``A = Σα_i``, ``Bβ = Σβ_i``; its characteristic polynomial is
``λ² − (2 − A − Bβ)·λ + (1 − Bβ)``. By the Jury test both roots lie inside the unit circle
iff ``A > 0``, ``0 < Bβ < 2`` and ``A + 2·Bβ < 4``. With ``α_i = α``, ``β_i = β`` the last
is the paper's Eq. (2), ``α + 2β < 4/N``; with ``N = 1`` it is Eq. (6),
``α_i + 2β_i < 4``. (The paper states only that condition; the other two exclude a
non-positive gain and ``Bβ ≥ 2``.) The differences ``w_i − w_j`` are not controlled at all
under aggregate control: with equal gains they never change, hence the unfair
equilibrium of Eq. (4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "Trajectory",
    "aggregate_eigenvalues",
    "aggregate_equilibrium",
    "aggregate_stable",
    "individual_equilibrium",
    "individual_stable",
    "paper_aggregate_condition",
    "paper_individual_condition",
    "rounding_gain",
    "simulate_aggregate",
    "simulate_individual",
]


@dataclass(frozen=True)
class Trajectory:
    """Windows ``w[k, i]`` and queues ``q[k, ·]`` at steps ``k = 0 .. steps`` (one queue
    column under aggregate control, one per flow under individual control)."""

    w: npt.NDArray[np.float64]
    q: npt.NDArray[np.float64]


def _vector(name: str, value: npt.ArrayLike, n: int | None = None) -> npt.NDArray[np.float64]:
    array = np.atleast_1d(np.asarray(value, dtype=float))
    if n is not None and array.shape == (1,):
        array = np.full(n, array[0])
    if array.ndim != 1 or (n is not None and array.shape[0] != n) or not np.all(np.isfinite(array)):
        expected = f"{n} finite values (one per flow) or one for all" if n else "finite values"
        raise ValueError(f"{name}={value!r}: expected {expected}")
    return array


def simulate_aggregate(
    alpha: npt.ArrayLike, beta: npt.ArrayLike, buffer_pkts: float, service_pkts: float,
    w0: npt.ArrayLike, q0: float, steps: int,
) -> Trajectory:
    """Iterate Eq. (1) from windows ``w0`` and queue ``q0`` for ``steps`` steps.

    Raises:
        ValueError: a per-flow parameter has the wrong length or is not finite, or ``steps < 1``.
    """
    w = _vector("w0", w0)
    n = w.shape[0]
    a, b = _vector("alpha", alpha, n), _vector("beta", beta, n)
    if steps < 1:
        raise ValueError(f"steps={steps}: expected at least 1")
    ws, qs = [w.copy()], [float(q0)]
    for _ in range(steps):
        q_prev = qs[-1]
        q = q_prev + w.sum() - service_pkts
        w = w + a * (buffer_pkts - q) + b * ((buffer_pkts - q) - (buffer_pkts - q_prev))
        ws.append(w.copy())
        qs.append(q)
    return Trajectory(np.array(ws), np.array(qs)[:, None])


def simulate_individual(
    alpha: npt.ArrayLike, beta: npt.ArrayLike, buffer_pkts: npt.ArrayLike, service_pkts: npt.ArrayLike,
    w0: npt.ArrayLike, q0: npt.ArrayLike, steps: int,
) -> Trajectory:
    """Iterate Eq. (5): each flow ``i`` against its own queue, target ``B_i`` and service ``C_i``.

    Raises:
        ValueError: as :func:`simulate_aggregate`.
    """
    w = _vector("w0", w0)
    n = w.shape[0]
    a, b = _vector("alpha", alpha, n), _vector("beta", beta, n)
    target, service, q = _vector("buffer_pkts", buffer_pkts, n), _vector("service_pkts", service_pkts, n), _vector(
        "q0", q0, n)
    if steps < 1:
        raise ValueError(f"steps={steps}: expected at least 1")
    ws, qs = [w.copy()], [q.copy()]
    for _ in range(steps):
        q_prev = q
        q = q_prev + w - service
        w = w + a * (target - q) + b * ((target - q) - (target - q_prev))
        ws.append(w.copy())
        qs.append(q.copy())
    return Trajectory(np.array(ws), np.array(qs))


def aggregate_eigenvalues(alpha: npt.ArrayLike, beta: npt.ArrayLike) -> npt.NDArray[np.complex128]:
    """Roots of ``λ² − (2 − A − Bβ)λ + (1 − Bβ)`` with ``A = Σα_i``, ``Bβ = Σβ_i``: the modes
    of the total window and the queue under aggregate control (one flow: individual control)."""
    a_sum, b_sum = float(np.sum(alpha)), float(np.sum(beta))
    return np.roots([1.0, -(2.0 - a_sum - b_sum), 1.0 - b_sum]).astype(complex)


def aggregate_stable(alpha: npt.ArrayLike, beta: npt.ArrayLike) -> bool:
    """Jury's conditions for :func:`aggregate_eigenvalues` inside the unit circle:
    ``A > 0``, ``0 < Bβ < 2``, ``A + 2·Bβ < 4``."""
    a_sum, b_sum = float(np.sum(alpha)), float(np.sum(beta))
    return a_sum > 0.0 and 0.0 < b_sum < 2.0 and a_sum + 2.0 * b_sum < 4.0


def paper_aggregate_condition(alpha: float, beta: float, flows: int) -> bool:
    """Eq. (2): ``α + 2β < 4/N`` (``α``, ``β`` the largest of the flows' gains)."""
    return alpha + 2.0 * beta < 4.0 / flows


def paper_individual_condition(alpha: float, beta: float) -> bool:
    """Eq. (6): ``α_i + 2β_i < 4``."""
    return alpha + 2.0 * beta < 4.0


def individual_stable(alpha: float, beta: float) -> bool:
    """Jury's conditions for one isolated flow: ``α > 0``, ``0 < β < 2``, ``α + 2β < 4``."""
    return aggregate_stable([alpha], [beta])


def rounding_gain(alpha: npt.ArrayLike, beta: npt.ArrayLike, *, steps: int = 10_000) -> float:
    """``Σ_k |h_k|``: the ℓ1 norm of the queue's response ``h`` to a one-packet error in the
    queue the flows read, under aggregate control (Eq. (1) summed, as
    :func:`aggregate_eigenvalues`). Senders that round windows to whole packets and carry
    the rest read ``q − D`` with ``D`` in ``[0, R)`` (``R`` carries), so after the transient
    the queue stays within ``½·R·rounding_gain`` of its mean; infinite when not stable.

    Raises:
        ValueError: ``steps`` below 1.
    """
    if steps < 1:
        raise ValueError(f"steps={steps}: expected at least 1")
    if not aggregate_stable(alpha, beta):
        return math.inf
    a_sum, b_sum = float(np.sum(alpha)), float(np.sum(beta))
    # Errors e = q − B (true queue) and s = Σw − C; the flows read y = e + d, d_0 = 1.
    e, s, y_prev, total = 0.0, 0.0, 0.0, 1.0  # the 1: the read error is in the queue itself
    for k in range(steps):
        e += s
        y = e + (1.0 if k == 0 else 0.0)
        s -= a_sum * y + b_sum * (y - y_prev)
        y_prev = y
        total += abs(e)
    return total


def aggregate_equilibrium(w0: npt.ArrayLike, buffer_pkts: float, service_pkts: float) -> tuple[npt.NDArray[np.float64], float]:
    """Eq. (3)-(4), equal gains: ``q_s = B`` and ``(w_i)_s = w_i^0 + (C − Σ_j w_j^0)/N``
    (fair, ``C/N`` each, only if all ``w_i^0`` are equal)."""
    w = _vector("w0", w0)
    return w + (service_pkts - w.sum()) / w.shape[0], float(buffer_pkts)


def individual_equilibrium(buffer_pkts: npt.ArrayLike, service_pkts: npt.ArrayLike) -> tuple[
        npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Eq. (7): ``(w_i)_s = C_i`` and ``(q_i)_s = B_i``, whatever the initial state."""
    return _vector("service_pkts", service_pkts), _vector("buffer_pkts", buffer_pkts)
