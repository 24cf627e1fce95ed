"""Steady-state throughput of a bulk TCP Reno flow with fast retransmit and timeouts.

Source: J. Padhye, V. Firoiu, D. Towsley, J. Kurose, "Modeling TCP Throughput: A
Simple Model and its Empirical Validation", ACM SIGCOMM 1998. Equation numbers below
are those of that paper.

Notation (the paper's):

- ``p``: probability that a packet is lost, given that no packet of its round was
  lost before it (losses in a round are correlated: once one is lost, the rest of
  the round is too);
- ``b``: packets acknowledged per ACK (2 with delayed ACKs, 1 without);
- ``RTT``: round-trip time, ``T0``: the base retransmission timeout;
- ``Wm``: the receiver's maximum window in packets.

The flow alternates triple-duplicate-ACK periods (TDPs) with timeout sequences. A
TDP carries on average ``E[Y] = (1−p)/p + E[W]`` packets in ``E[A] = RTT·(E[X]+1)``
seconds; a loss indication is a timeout with probability ``Q``; a timeout sequence
carries ``E[R] = 1/(1−p)`` packets in ``E[Z_TO] = T0·f(p)/(1−p)`` seconds. Hence

    B = (E[Y] + Q·E[R]) / (E[A] + Q·E[Z_TO])          packets per second.

Limits: derived for Reno with losses correlated within a round and a timer backoff
capped at 64·T0. In the small packet regime ``p`` is large, ``Q̂ → 1`` and flows live
mostly in timeouts; :mod:`smallpipe.models.taq_markov` models that regime directly.
"""

from __future__ import annotations

import math

__all__ = [
    "backoff_factor",
    "expected_window_pkts",
    "throughput_approx_pps",
    "throughput_full_pps",
    "timeout_probability",
]


def _check_loss(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"loss probability p={p} must be in (0, 1)")


def expected_window_pkts(p: float, *, b: float) -> float:
    """Mean window at the end of a TDP when the receiver window is unlimited, Eq. (13).

    ``E[Wu] = (2+b)/(3b) + sqrt( 8(1−p)/(3bp) + ((2+b)/(3b))² )``.
    """
    _check_loss(p)
    a = (2.0 + b) / (3.0 * b)
    return a + math.sqrt(8.0 * (1.0 - p) / (3.0 * b * p) + a * a)


def timeout_probability(w: float, p: float) -> float:
    """``Q̂(w)``: probability that a loss in a window of ``w`` packets ends in a timeout, Eq. (24).

    ``Q̂(w) = min(1, (1−(1−p)³)·(1 + (1−p)³·(1−(1−p)^(w−3))) / (1−(1−p)^w))``;
    ``Q̂(w) = 1`` for ``w ≤ 3`` (fewer than three packets can follow the loss, so no
    triple duplicate ACK).
    """
    _check_loss(p)
    if w <= 3.0:
        return 1.0
    q = 1.0 - p
    value = (1.0 - q**3) * (1.0 + q**3 * (1.0 - q ** (w - 3.0))) / (1.0 - q**w)
    return min(1.0, float(value))


def backoff_factor(p: float) -> float:
    """``f(p) = 1 + p + 2p² + 4p³ + 8p⁴ + 16p⁵ + 32p⁶``, Eq. (28).

    ``T0·f(p)/(1−p)`` is the mean duration of a timeout sequence, with the timer
    doubling on each further loss up to ``64·T0``.
    """
    return 1.0 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6


def throughput_full_pps(p: float, *, rtt_s: float, t0_s: float, wm_pkts: float = math.inf, b: float) -> float:
    """The full model ``B(p)`` in packets per second, Eq. (32) (Eq. (30) when ``Wm`` is not reached).

    If ``E[Wu] < Wm`` (window limited by congestion only), Eq. (30)::

        B = [(1−p)/p + E[Wu] + Q̂(E[Wu])/(1−p)]
            / [RTT·(b·E[Wu]/2 + 1) + Q̂(E[Wu])·T0·f(p)/(1−p)]

    otherwise (window pinned at ``Wm``; a TDP then has ``b·Wm/8 + (1−p)/(p·Wm) + 1``
    rounds)::

        B = [(1−p)/p + Wm + Q̂(Wm)/(1−p)]
            / [RTT·(b·Wm/8 + (1−p)/(p·Wm) + 2) + Q̂(Wm)·T0·f(p)/(1−p)]

    As ``p → 0`` with finite ``Wm`` this tends to ``Wm/RTT``.
    """
    _check_loss(p)
    w_unlimited = expected_window_pkts(p, b=b)
    timeout_duration = t0_s * backoff_factor(p) / (1.0 - p)
    if w_unlimited < wm_pkts:
        q_hat = timeout_probability(w_unlimited, p)
        packets = (1.0 - p) / p + w_unlimited + q_hat / (1.0 - p)
        seconds = rtt_s * (b * w_unlimited / 2.0 + 1.0) + q_hat * timeout_duration
    else:
        q_hat = timeout_probability(wm_pkts, p)
        packets = (1.0 - p) / p + wm_pkts + q_hat / (1.0 - p)
        rounds = b * wm_pkts / 8.0 + (1.0 - p) / (p * wm_pkts) + 2.0
        seconds = rtt_s * rounds + q_hat * timeout_duration
    return packets / seconds


def throughput_approx_pps(
    p: float, *, rtt_s: float, t0_s: float, wm_pkts: float = math.inf, b: float
) -> float:
    """The approximate model in packets per second, Eq. (33).

    ``B(p) ≈ min( Wm/RTT, 1 / (RTT·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1+32p²)) )``.

    It keeps the leading terms of Eq. (32): ``E[W] ≈ sqrt(8/(3bp))``,
    ``Q̂ ≈ min(1, 3/E[W])`` and ``f(p) ≈ 1 + 32p²``.
    """
    _check_loss(p)
    congestion_limited = 1.0 / (
        rtt_s * math.sqrt(2.0 * b * p / 3.0)
        + t0_s * min(1.0, 3.0 * math.sqrt(3.0 * b * p / 8.0)) * p * (1.0 + 32.0 * p * p)
    )
    return min(wm_pkts / rtt_s, congestion_limited)
