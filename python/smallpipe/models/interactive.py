"""Response time of an interactive (application-limited) TCP flow.

Source: "interactive-flows-padding-diversity" (papers/), Section III-A, Eqs. (1)-(3).

An interactive flow (telnet, games) sends single-packet bursts separated by more than
a third of the RTO, so a lost packet never gets three duplicate ACKs: every loss is
repaired by a retransmission timeout, and the timer doubles on each consecutive loss.
Losses are independent with probability ``p`` (one packet per round).

Derivation:

- Eq. (1): the packet fails exactly ``i`` times, then gets through:
  ``P_h(i) = p^i · (1 − p)``.
- Eq. (2): the ``k``-th failure costs ``2^k · RTO`` of waiting, so after ``i`` failures
  the response time is ``L(i) = Σ_{k=0}^{i−1} 2^k · RTO + RTT = (2^i − 1) · RTO + RTT``.
- Eq. (3): for ``p < 0.5``,
  ``E[L] = Σ_i P_h(i) · L(i)
  = RTT + RTO · (1−p) · (Σ (2p)^i − Σ p^i)
  = RTT + RTO · (1−p) · (1/(1−2p) − 1/(1−p))
  = (p / (1 − 2p)) · RTO + RTT``.
  For ``p ≥ 0.5`` the doubling outruns the vanishing probability and ``E[L]`` diverges.

The model has no cap on the backoff (real stacks cap the RTO, e.g. at 60 s) and takes
the RTO as fixed between bursts.
"""

from __future__ import annotations

__all__ = ["response_time_distribution", "response_time_interactive"]


def _check(p: float, rto_s: float, rtt_s: float) -> None:
    if not 0.0 <= p < 1.0:
        raise ValueError(f"loss probability p={p} must be in [0, 1)")
    if rto_s <= 0.0 or rtt_s < 0.0:
        raise ValueError(f"need rto_s > 0 and rtt_s >= 0, got rto_s={rto_s}, rtt_s={rtt_s}")


def response_time_interactive(p: float, rto_s: float, rtt_s: float) -> float:
    """Mean response time ``E[L] = p/(1−2p) · RTO + RTT`` in seconds, Eq. (3).

    Raises:
        ValueError: ``p ≥ 0.5`` (the mean is infinite) or arguments out of range.
    """
    _check(p, rto_s, rtt_s)
    if p >= 0.5:
        raise ValueError(f"the mean response time is infinite for p={p} >= 0.5")
    return p / (1.0 - 2.0 * p) * rto_s + rtt_s


def response_time_distribution(p: float, rto_s: float, rtt_s: float, i: int) -> tuple[float, float]:
    """The ``i``-th atom of the response-time distribution, Eqs. (1)-(2).

    Returns:
        ``(L(i), P_h(i))``: after ``i`` failed attempts the response time is
        ``L(i) = (2^i − 1) · RTO + RTT`` seconds, with probability
        ``P_h(i) = p^i · (1 − p)``.
    """
    _check(p, rto_s, rtt_s)
    if i < 0:
        raise ValueError(f"the number of failed attempts i={i} must be >= 0")
    return (2**i - 1) * rto_s + rtt_s, p**i * (1.0 - p)
