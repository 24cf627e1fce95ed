"""Response times of fully-backlogged, padded and diversified interactive TCP flows.

Source: "interactive-flows-padding-diversity" (papers/), Sections III-B, IV-B, IV-C and
IV-E, Eqs. (4)-(14); the plain interactive flow, Eqs. (1)-(3), is
:mod:`smallpipe.models.interactive`.

Every model here is one decision tree (the paper's Figure 2): a data packet is lost with
probability ``p``; its first loss is repaired by fast retransmit with probability
``1 − Q`` (one extra RTT) or by a timeout with probability ``Q``; a retransmission that is
lost again always ends in a timeout, and each timeout doubles the RTO. Summing the tree
(``P_h(i) = p^i (1−p)``, Eq. (1)) gives Eq. (10):

    E[L′] = Q · (p/(1−2p)) · RTO + RTT + p · (1−Q) · ((p/(1−2p)) · RTO + RTT)

(the paper writes ``p/(1−2p)`` as ``(1−p)/(1−2p) − 1``). The approaches differ only in
``Q``, the probability that a loss indication is a timeout:

- fully backlogged, correlated losses (DropTail): Padhye's ``Q̂(E[w])``, Eqs. (4)-(6);
- fully backlogged, random losses (RED): Brosh's ``Q``, Eqs. (7)-(8), with the window
  uniform on ``[0, w_max]`` (the paper does not say which ``w_max`` its figures use; the
  reproductions take ``w_max = 2·E[w]``, so that the uniform window's mean is Eq. (4)'s);
- short-term padding with ``m − 1`` dummy packets: ``Q(m)``, Eq. (11), the probability
  that at most two of the dummies arrive, in Eq. (12) (= Eq. (10) with that ``Q``);
- k-copy diversity has its own tree, Eqs. (13)-(14): the first round fails only if all
  ``k`` copies are lost, later rounds send one copy:
  ``E[L′] = p^(k−1) · (p/(1−2p)) · RTO + RTT``, which is Eq. (3) for ``k = 1``.

The gain ratio ``G = E[L] / E[L′]`` (Section III-B) divides Eq. (3) by any of these.

The TCP Smart Framing state machine (Section IV-E, Figure 11) is
:func:`tcp_sf_transitions`: from the start state ``S`` a message split into four small
segments enters fast retransmit (``FR``) only if the first segment is lost and the three
after it arrive, ``p(S,FR) = p_s (1−p_s)³``; any other loss pattern is a timeout,
``p(S,TO) = 1 − p(S,FR) − (1−p_s)⁴``. Plain TCP sends one packet: ``p(S,TO) = p``.

All means diverge at ``p ≥ 0.5`` (the doubling RTO outruns the geometric tail), as Eq. (3).
"""

from __future__ import annotations

from math import comb

from smallpipe.models import padhye
from smallpipe.models.interactive import response_time_interactive

__all__ = [
    "brosh_timeout_probability",
    "brosh_timeout_probability_uniform",
    "brosh_timeout_probability_window",
    "expected_window_pkts",
    "gain_ratio",
    "padding_timeout_probability",
    "padhye_timeout_probability",
    "response_time_backlogged",
    "response_time_diversity",
    "response_time_padding",
    "response_time_thin_linear",
    "tcp_sf_transitions",
]


def _check(p: float, rto_s: float, rtt_s: float) -> None:
    if not 0.0 <= p < 0.5:
        raise ValueError(f"loss probability p={p} must be in [0, 0.5): the mean response time is infinite above")
    if rto_s <= 0.0 or rtt_s < 0.0:
        raise ValueError(f"need rto_s > 0 and rtt_s >= 0, got rto_s={rto_s}, rtt_s={rtt_s}")


def _check_q(q: float) -> None:
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"timeout probability q={q} must be in [0, 1]")


def expected_window_pkts(p: float, *, b: float = 1.0) -> float:
    """``E[w]``, Eq. (4): Padhye's mean window at a loss indication (``b`` packets per ACK)."""
    return padhye.expected_window_pkts(p, b=b)


def padhye_timeout_probability(p: float, *, b: float = 1.0) -> float:
    """``Q ≈ Q̂(E[w])``, Eqs. (5)-(6): a loss indication is a timeout, losses correlated in a round."""
    return padhye.timeout_probability(expected_window_pkts(p, b=b), p)


def brosh_timeout_probability_window(w: int, p: float) -> float:
    """``Q̂(w)`` for Bernoulli losses, Eq. (7) as the paper prints it (Brosh's upper bound),
    capped at 1; ``Q̂(w) = 1`` for ``w ≤ 3`` (no three packets can follow a loss).

    ``Q̂(w) = Σ_{k=0}^{2} B(w,k) · (1 + (1−p)^k · (−1 + (2−p)^w)) / (1 − (1−p)^w)`` with
    ``B(w,k) = C(w,k) · p^(w−k) · (1−p)^k``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"loss probability p={p} must be in (0, 1)")
    if w < 1:
        raise ValueError(f"window w={w} must be >= 1 packet")
    if w <= 3:
        return 1.0
    q = 1.0 - p
    total = sum(comb(w, k) * p ** (w - k) * q**k * (1.0 + q**k * (-1.0 + (2.0 - p) ** w)) for k in range(3))
    return min(1.0, total / (1.0 - q**w))


def brosh_timeout_probability(p: float, *, w_max: float) -> float:
    """``Q ≈ min(1, (6 + 96p − 32p²) / w_max)``, Eq. (8): Brosh's average of Eq. (7) over a
    window uniform on ``[0, w_max]`` (the ``o(p³)`` term dropped)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"loss probability p={p} must be in [0, 1)")
    if w_max <= 0.0:
        raise ValueError(f"w_max={w_max} must be > 0 packets")
    return min(1.0, (6.0 + 96.0 * p - 32.0 * p * p) / w_max)


def brosh_timeout_probability_uniform(p: float, *, w_max: int) -> float:
    """``Q = Σ_{w=1}^{w_max} Q̂(w) · P[W = w]``, the sum of Eq. (8) before its approximation:
    Eq. (7) averaged over a window uniform on ``{1, …, w_max}``.

    As printed, Eq. (7) tends to ``3/w_max`` as ``p → 0`` (only ``w ≤ 3`` time out) where
    the approximation says ``6/w_max``; the reproductions draw both."""
    if w_max < 1:
        raise ValueError(f"w_max={w_max} must be >= 1 packet")
    return sum(brosh_timeout_probability_window(w, p) for w in range(1, w_max + 1)) / w_max


def padding_timeout_probability(p: float, m: int = 4) -> float:
    """``Q(m)``, Eq. (11): at most two of the ``m − 1`` dummy packets after a lost data
    packet arrive, so fewer than three duplicate ACKs come back."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"loss probability p={p} must be in [0, 1]")
    if m < 1:
        raise ValueError(f"m={m} must be >= 1 (the data packet plus m − 1 dummies)")
    return sum(comb(m - 1, i) * p ** (m - 1 - i) * (1.0 - p) ** i for i in range(min(2, m - 1) + 1))


def response_time_backlogged(p: float, q: float, rto_s: float, rtt_s: float) -> float:
    """``E[L′]``, Eq. (10) (and Eq. (12) with ``q = Q(m)``), in seconds: the Figure 2 tree
    with timeout probability ``q`` for the first loss."""
    _check(p, rto_s, rtt_s)
    _check_q(q)
    backoff_s = p / (1.0 - 2.0 * p) * rto_s
    return q * backoff_s + rtt_s + p * (1.0 - q) * (backoff_s + rtt_s)


def response_time_padding(p: float, rto_s: float, rtt_s: float, m: int = 4) -> float:
    """``E[L′]`` of short-term padding with ``m − 1`` dummies, Eq. (12)."""
    return response_time_backlogged(p, padding_timeout_probability(p, m), rto_s, rtt_s)


def response_time_diversity(p: float, rto_s: float, rtt_s: float, k: int = 2) -> float:
    """``E[L′] = p^(k−1) · (p/(1−2p)) · RTO + RTT``, Eq. (14): each packet sent ``k`` times."""
    _check(p, rto_s, rtt_s)
    if k < 1:
        raise ValueError(f"copies k={k} must be >= 1")
    return p ** (k - 1) * p / (1.0 - 2.0 * p) * rto_s + rtt_s


def response_time_thin_linear(p: float, rto_s: float, rtt_s: float, linear_retries: int = 6) -> float:
    """Mean response time of an interactive flow under Linux's thin-stream linear timeouts
    (not in the paper; its baseline): Eq. (1)'s failures, but the ``k``-th consecutive
    timeout waits ``RTO`` for ``k ≤ linear_retries + 1`` and doubles from there
    (``TCP_THIN_LINEAR_RETRIES = 6``: the timer re-armed after timeouts 1–6 is the base one).

    ``L(i) = RTT + Σ_{k=1}^{i} RTO · 2^max(0, k − 1 − linear_retries)``, summed with
    ``P_h(i) = p^i (1−p)`` until the terms vanish; ``linear_retries = 0`` is Eq. (3).
    """
    _check(p, rto_s, rtt_s)
    if linear_retries < 0:
        raise ValueError(f"linear_retries={linear_retries} must be >= 0")
    total, wait_s, i = rtt_s * (1.0 - p), 0.0, 0
    while True:
        i += 1
        wait_s += rto_s * 2.0 ** max(0, i - 1 - linear_retries)
        term = p**i * (1.0 - p) * (rtt_s + wait_s)
        total += term
        if term < 1e-15 * total:
            return total


def gain_ratio(p: float, response_time_s: float, rto_s: float, rtt_s: float) -> float:
    """``G = E[L] / E[L′]``: the plain interactive flow's mean response time (Eq. (3)) over
    an approach's ``response_time_s``."""
    if response_time_s <= 0.0:
        raise ValueError(f"response_time_s={response_time_s} must be > 0")
    return response_time_interactive(p, rto_s, rtt_s) / response_time_s


def tcp_sf_transitions(p_s: float) -> dict[str, float]:
    """TCP-SF's transitions out of ``S`` (Figure 11) for a message sent as four small
    segments, each lost with ``p_s``: ``FR`` needs the first segment lost and the three
    after it delivered, ``p(S,FR) = p_s(1−p_s)³``; every other loss pattern is ``TO``,
    ``p(S,TO) = 1 − p(S,FR) − (1−p_s)⁴``; no loss stays in ``S``, ``(1−p_s)⁴``.

    Plain TCP's machine has only ``S`` and ``TO``: ``p(S,TO) = p``, its packet's loss
    probability. With ``p_s = p`` (a packet-counting queue) TCP-SF times out more often
    than TCP: ``1 − (1−p)⁴ − p(1−p)³ > p`` for ``0 < p < 1``."""
    if not 0.0 <= p_s <= 1.0:
        raise ValueError(f"small-segment loss probability p_s={p_s} must be in [0, 1]")
    fr = p_s * (1.0 - p_s) ** 3
    ok = (1.0 - p_s) ** 4
    return {"FR": fr, "TO": 1.0 - fr - ok, "S": ok}
