"""The TAQ paper's full idealized Markov model: the partial chain with its timeouts
expanded into exponential-backoff stages (Section 3.1, Figure 5), for any ``W_max``.

Source: "TAQ: Enhancing Fairness and Performance Predictability in Small Packet
Regimes" (papers/), Section 3.1. The paper draws the full model for ``W_max = 6`` and
three backoff stages but omits its transition probabilities ("due to space
constraints"); this module derives them from the same rules the partial model states.

One step is one epoch (an RTT); each packet is lost independently with probability ``p``.

Window states (Eqs. (1)-(3), as in :mod:`smallpipe.models.taq_markov`):

- ``S{n}``, ``n = 2 .. W_max``: congestion window of ``n`` packets, retransmission timer
  not backed off. ``S_n → S_{min(n+1, W_max)}`` with ``(1−p)^n`` (Eq. 1);
  ``S_n → S_{⌊n/2⌋}`` for ``n ≥ 4`` with ``n·p·(1−p)^(n−1)·(1−p)`` (Eq. 2, one loss
  repaired by fast retransmit); otherwise a timeout at stage 1 (Eq. 3).

Timeout states (Section 3.1.1, Eqs. (4)-(10) made explicit instead of aggregated):

- a timeout at *stage* ``k`` has a timer of ``2^k`` epochs (``T0 = 2·RTT`` at ``k = 1``,
  doubled per backoff): ``2^k − 1`` idle epochs ``b{k}.{j}`` (``j = 1 .. 2^k − 1``, 0
  packets sent), then the retransmission epoch ``S1^{k}`` (1 packet sent);
- ``S1^{k} → S2^{k}`` with ``1−p``: the retransmission got through and the window is 2,
  but the timer is still backed off: its ACK carries no RTT sample (Karn's rule), only
  new data sent now can collapse the backoff;
- ``S1^{k} →`` timeout at stage ``min(k+1, K)`` with ``p`` (the retransmission is lost);
- ``S2^{k} → S3`` with ``(1−p)^2`` (new data acknowledged: backoff collapsed, window
  grows), else a timeout at stage ``min(k+1, K)``: the repetitive timeout of §3.1.1.

``K`` (``max_backoff_stage``) caps the timer as a TCP's maximum RTO does: a timeout at
stage ``K`` that fails stays at stage ``K``. Unlike the partial model's ``b*`` (which
needs ``p < 0.5``), the chain is positive recurrent for every ``p`` in ``[0, 1]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from smallpipe.models.taq_markov import stationary_vector

__all__ = [
    "TaqFullChain",
    "TaqFullStationary",
    "build_chain",
    "loss_at_timeout_probability",
    "stationary_distribution",
    "timeout_probability_curve",
    "tipping_point",
]


@dataclass(frozen=True)
class TaqFullChain:
    """The full chain's states, one-epoch transition matrix and packets sent per state."""

    p: float
    w_max: int
    max_backoff_stage: int
    states: tuple[str, ...]
    matrix: npt.NDArray[np.float64]
    """``matrix[i, j] = P(states[i] → states[j])`` in one epoch."""
    packets_sent: tuple[int, ...]
    """Packets the sender transmits in an epoch spent in each state."""
    backoff_stage: tuple[int, ...]
    """Timeout stage of each state (0 for window states without a backed-off timer)."""


def _validate(p: float, w_max: int, max_backoff_stage: int) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"loss probability p={p} must be in [0, 1]")
    if w_max < 2:
        raise ValueError(f"w_max={w_max} must be at least 2 (the window after a timeout recovery)")
    if not 1 <= max_backoff_stage <= 10:
        raise ValueError(f"max_backoff_stage={max_backoff_stage} must be in 1..10 (2^K − 1 idle states per stage)")


def build_chain(p: float, w_max: int = 6, max_backoff_stage: int = 3) -> TaqFullChain:
    """The full model's one-epoch transition matrix at loss probability ``p``.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``, ``w_max < 2`` or ``max_backoff_stage`` outside 1..10.
    """
    _validate(p, w_max, max_backoff_stage)
    big_k = max_backoff_stage
    states: list[str] = []
    sent: list[int] = []
    stage: list[int] = []

    def state(name: str, packets: int, k: int) -> None:
        states.append(name)
        sent.append(packets)
        stage.append(k)

    for n in range(2, w_max + 1):
        state(f"S{n}", n, 0)
    for k in range(1, big_k + 1):
        for j in range(1, 2**k):
            state(f"b{k}.{j}", 0, k)
        state(f"S1^{k}", 1, k)
        state(f"S2^{k}", 2, k)
    index = {name: i for i, name in enumerate(states)}
    matrix = np.zeros((len(states), len(states)))

    def add(source: str, target: str, probability: float) -> None:
        matrix[index[source], index[target]] += probability

    def timeout(source: str, k: int, probability: float) -> None:
        add(source, f"b{min(k, big_k)}.1", probability)

    def grow_target(n: int) -> str:
        return f"S{min(n + 1, w_max)}"

    for n in range(2, w_max + 1):
        source = f"S{n}"
        grow = (1.0 - p) ** n
        fast_retransmit = n * p * (1.0 - p) ** n if n >= 4 else 0.0
        add(source, grow_target(n), grow)
        if n >= 4:
            add(source, f"S{n // 2}", fast_retransmit)
        timeout(source, 1, 1.0 - grow - fast_retransmit)
    for k in range(1, big_k + 1):
        for j in range(1, 2**k - 1):
            add(f"b{k}.{j}", f"b{k}.{j + 1}", 1.0)
        add(f"b{k}.{2**k - 1}", f"S1^{k}", 1.0)
        add(f"S1^{k}", f"S2^{k}", 1.0 - p)
        timeout(f"S1^{k}", k + 1, p)
        both_arrive = (1.0 - p) ** 2
        add(f"S2^{k}", grow_target(2), both_arrive)
        timeout(f"S2^{k}", k + 1, 1.0 - both_arrive)
    return TaqFullChain(p, w_max, big_k, tuple(states), matrix, tuple(sent), tuple(stage))


@dataclass(frozen=True)
class TaqFullStationary:
    """Stationary distribution of the full model at loss probability ``p``."""

    chain: TaqFullChain
    probabilities: dict[str, float]
    """Long-run fraction of epochs spent in each state of ``chain.states``."""

    def packets_sent(self, packets: int) -> float:
        """Fraction of epochs in which the sender transmits exactly ``packets`` packets.

        ``packets_sent(0)`` is the paper's Figure 6 "0 sent" (all ``b`` states),
        ``packets_sent(1)`` its "1 sent" (all ``S1`` states) and ``packets_sent(2)`` its
        "2 sent" (all ``S2`` states).
        """
        return sum(
            self.probabilities[s] for s, n in zip(self.chain.states, self.chain.packets_sent, strict=True) if n == packets
        )

    def stage_probability(self, k: int) -> float:
        """Fraction of epochs in a stage-``k`` timeout episode (its idle epochs, its
        retransmission and the window-2 epoch before the backoff collapses)."""
        return sum(self.probabilities[s] for s, st in zip(self.chain.states, self.chain.backoff_stage, strict=True) if st == k)

    @property
    def timeout_probability(self) -> float:
        """Probability that a flow is in a timeout (idle, or retransmitting after a
        timer expiry) in an epoch: the partial model's ``S1``, ``b0`` and ``b*``."""
        return sum(
            self.probabilities[s] for s in self.chain.states if s.startswith(("b", "S1^"))
        )


def stationary_distribution(p: float, w_max: int = 6, max_backoff_stage: int = 3) -> TaqFullStationary:
    """Solve ``π = π·P``, ``Σπ = 1`` for :func:`build_chain`.

    The chain has one recurrent class for every ``p`` in ``[0, 1]`` (``{S_Wmax}`` at
    ``p = 0``; the stage-``K`` cycle at ``p = 1``), so the solution is unique.
    """
    chain = build_chain(p, w_max, max_backoff_stage)
    pi = stationary_vector(chain.matrix)
    return TaqFullStationary(chain, dict(zip(chain.states, (float(x) for x in pi), strict=True)))


def timeout_probability_curve(
    losses: npt.ArrayLike, w_max: int = 6, max_backoff_stage: int = 3
) -> npt.NDArray[np.float64]:
    """Stationary timeout probability at each loss probability of ``losses`` (§3.2)."""
    return np.array(
        [stationary_distribution(float(p), w_max, max_backoff_stage).timeout_probability for p in np.asarray(losses)]
    )


def tipping_point(w_max: int = 6, max_backoff_stage: int = 3, step: float = 0.001) -> float:
    """The loss probability at which the timeout probability rises fastest (the
    curve's inflection point), on a ``step`` grid over ``(0, 0.5)``.

    §3.2 reads the tipping point off the model as "beyond 10%"; this makes it a number.
    """
    losses = np.arange(step, 0.5, step)
    slope = np.diff(timeout_probability_curve(losses, w_max, max_backoff_stage)) / step
    return float(losses[int(np.argmax(slope))] + step / 2.0)


def loss_at_timeout_probability(target: float, w_max: int = 6, max_backoff_stage: int = 3) -> float:
    """The loss probability at which a flow spends ``target`` of its epochs in timeouts
    (the timeout probability increases with ``p``, so bisection finds it).

    Raises:
        ValueError: ``target`` outside ``(0, 1)``.
    """
    if not 0.0 < target < 1.0:
        raise ValueError(f"target={target} must be in (0, 1)")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if stationary_distribution(mid, w_max, max_backoff_stage).timeout_probability < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0
