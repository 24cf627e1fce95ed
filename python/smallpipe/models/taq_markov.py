"""The TAQ paper's partial Markov model of a TCP flow in the small packet regime.

Source: "TAQ: Enhancing Fairness and Performance Predictability in Small Packet
Regimes" (papers/), Section 3.1, Eqs. (1)-(10) and Figure 4 (the partial model),
with ``W_max = 6``.

One step of the chain is one epoch (an RTT). Each packet is lost independently with
probability ``p``. States:

- ``S2 .. S6``: congestion window of ``n`` packets;
- ``S1``: the timeout retransmit state (one packet sent after a timer expiry);
- ``b0``: the first idle epoch of a *simple* timeout (base timer ``T0 = 2·RTT``);
- ``b*``: the aggregated idle state of *repetitive* timeouts (backed-off timer).

Transitions:

- Eq. (1): ``S_n → S_{n+1}`` (``S6 → S6`` at ``W_max``) with ``(1−p)^n``;
- Eq. (2): ``S_n → S_{⌊n/2⌋}`` for ``n = 4, 5, 6`` (one loss, repaired by fast
  retransmit) with ``n·p·(1−p)^(n−1)·(1−p)``; ``S2`` and ``S3`` cannot fast-retransmit;
- Eq. (3): ``S_n → timeout`` with the remaining probability. From ``S4..S6`` the
  timeout is simple: ``S_n → b0 → S1`` (one idle epoch, then the retransmission);
  from ``S2, S3`` the timer may still be backed off: ``S_n → b*``;
- Eqs. (8)-(10): the expected stay in ``b*`` is ``1/(1−2p)`` epochs, so
  ``b* → S1`` with ``1−2p`` and ``b* → b*`` with ``2p``;
- ``S1 → S2`` when the retransmission gets through (``1−p``), else ``S1 → b*`` (``p``).

The model needs ``p < 0.5`` (Eq. (8) diverges at ``p = 0.5``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "STATES",
    "TIMEOUT_STATES",
    "W_MAX",
    "TaqStationary",
    "stationary_distribution",
    "stationary_vector",
    "transition_matrix",
]

W_MAX = 6
"""Largest congestion window of the partial model (Figure 4)."""

STATES: tuple[str, ...] = ("S1", "S2", "S3", "S4", "S5", "S6", "b0", "b*")
"""State names, in the row/column order of :func:`transition_matrix`."""

TIMEOUT_STATES: tuple[str, ...] = ("S1", "b0", "b*")
"""States of a flow that is in a timeout (silent, or retransmitting after one)."""


def transition_matrix(p: float) -> npt.NDArray[np.float64]:
    """The one-epoch transition matrix ``P[i, j] = P(state i → state j)`` over :data:`STATES`.

    Raises:
        ValueError: ``p`` is outside ``[0, 0.5)``.
    """
    if not 0.0 <= p < 0.5:
        raise ValueError(f"loss probability p={p} must be in [0, 0.5) for the TAQ model")
    index = {state: k for k, state in enumerate(STATES)}
    matrix = np.zeros((len(STATES), len(STATES)))

    def add(source: str, target: str, probability: float) -> None:
        matrix[index[source], index[target]] += probability

    for n in range(2, W_MAX + 1):
        source = f"S{n}"
        grow = (1.0 - p) ** n
        add(source, f"S{min(n + 1, W_MAX)}", grow)
        fast_retransmit = n * p * (1.0 - p) ** (n - 1) * (1.0 - p) if n >= 4 else 0.0
        if fast_retransmit:
            add(source, f"S{n // 2}", fast_retransmit)
        add(source, "b0" if n >= 4 else "b*", 1.0 - grow - fast_retransmit)
    add("b0", "S1", 1.0)
    add("b*", "S1", 1.0 - 2.0 * p)
    add("b*", "b*", 2.0 * p)
    add("S1", "S2", 1.0 - p)
    add("S1", "b*", p)
    return matrix


@dataclass(frozen=True)
class TaqStationary:
    """Stationary distribution of the TAQ partial model at loss probability ``p``."""

    p: float
    probabilities: dict[str, float]
    """Long-run fraction of epochs spent in each state of :data:`STATES`."""

    @property
    def timeout_probability(self) -> float:
        """Probability that a flow is in a timeout state (``S1``, ``b0`` or ``b*``) in an epoch."""
        return sum(self.probabilities[state] for state in TIMEOUT_STATES)


def stationary_vector(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``π`` with ``π = π·P`` and ``Σπ = 1`` for a chain with a single recurrent class."""
    size = matrix.shape[0]
    # Balance equations (Pᵀ − I)·π = 0, with one of them (redundant) replaced by Σπ = 1.
    system = matrix.T - np.eye(size)
    system[-1, :] = 1.0
    rhs = np.zeros(size)
    rhs[-1] = 1.0
    return np.asarray(np.linalg.solve(system, rhs), dtype=np.float64)


def stationary_distribution(p: float) -> TaqStationary:
    """Solve ``π = π·P``, ``Σπ = 1`` for the chain of :func:`transition_matrix`.

    The chain has a single recurrent class for every ``p`` in ``[0, 0.5)`` (at
    ``p = 0`` it is ``{S6}``), so the solution is unique.
    """
    pi = stationary_vector(transition_matrix(p))
    return TaqStationary(p=p, probabilities=dict(zip(STATES, (float(x) for x in pi), strict=True)))
