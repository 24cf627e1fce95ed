"""Expected latency of a finite TCP transfer: handshake, initial slow start, first loss,
then Padhye's steady state for the rest.

Source: N. Cardwell, S. Savage, T. Anderson, "Modeling TCP Latency", IEEE INFOCOM 2000.
Equation numbers below are that paper's (read from its text as cited by others; we had no
copy of the paper itself, see docs/models.md). Tokuda et al. call it "the analysis in [4]"
and draw it beside their own in their Figures 5 and 6.

Notation (the paper's):

- ``d``: packets to transfer; ``p``: probability that a packet is lost (the same for SYNs,
  data, every packet of the transfer);
- ``b``: packets per ACK; ``γ = 1 + 1/b`` the slow-start growth per round (2 without
  delayed ACKs, 1.5 with them); ``w1``: the initial window; ``W_max``: the largest window;
- ``RTT``; ``T0``: the base retransmission timeout; ``Ts``: the SYN's first timeout.

The latency is ``E[T] = E[T_h] + E[T_ss] + E[T_loss] + E[T_ca] + E[T_delack]`` (Eq. 25
with the handshake of Eq. 4 in front):

- slow start lasts until the first loss: ``E[d_ss]`` packets (Eq. 5) in ``E[T_ss]``
  (Eq. 15: geometric growth by ``γ`` per round, linear once the window reaches ``W_max``);
- it ends in a loss with probability ``l_ss = 1 − (1−p)^d`` (Eq. 16), which costs a
  timeout sequence (Eqs. 18–19) with Padhye's probability ``Q̂`` (Eq. 17) at the window
  slow start reached (Eq. 11), else one RTT of fast retransmit (Eq. 20);
- the ``d − E[d_ss]`` packets left (Eq. 21) go at Padhye's steady rate ``R`` (Eqs. 22–24,
  :func:`smallpipe.models.padhye.throughput_full_pps`).

Limits: one loss ends slow start and steady state follows at once — the reason Tokuda et
al. give for its error between 100 and 1000 packets, where a transfer still rides the
large window slow start left it. Expected values are pushed through non-linear steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from smallpipe.models import padhye

__all__ = ["Latency", "expected_slow_start_pkts", "latency", "throughput_pkts_per_rtt"]


@dataclass(frozen=True)
class Latency:
    """The terms of Eq. 25, in seconds; ``total_s`` is their sum."""

    handshake_s: float
    slow_start_s: float
    first_loss_s: float
    congestion_avoidance_s: float
    delayed_ack_s: float
    slow_start_pkts: float
    """``E[d_ss]``, Eq. 5 (capped at ``d``)."""

    @property
    def total_s(self) -> float:
        return (self.handshake_s + self.slow_start_s + self.first_loss_s
                + self.congestion_avoidance_s + self.delayed_ack_s)


def _check(d: int, p: float, rtt_s: float, b: float, w1_pkts: float, w_max_pkts: float) -> None:
    if d < 1:
        raise ValueError(f"d={d} packets: a transfer has at least 1")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"loss probability p={p} must be in [0, 1)")
    if rtt_s <= 0.0:
        raise ValueError(f"rtt_s={rtt_s} must be positive")
    if b < 1.0:
        raise ValueError(f"b={b} packets per ACK must be at least 1")
    if not 1.0 <= w1_pkts <= w_max_pkts:
        raise ValueError(f"w1_pkts={w1_pkts} must be at least 1 and at most w_max_pkts={w_max_pkts}")


def expected_slow_start_pkts(d: int, p: float) -> float:
    """``E[d_ss]``, Eq. 5: packets sent in the initial slow start, the first lost one included.

    ``E[d_ss] = (1 − (1−p)^d)·(1−p)/p + 1``. As ``p → 0`` this tends to ``d + 1``: the
    ``+1`` is the lost packet, which a loss-free transfer does not send, so we cap the
    value at ``d`` (our choice; it makes the loss-free limit exact).
    """
    if p == 0.0:
        return float(d)
    q = 1.0 - p
    return min(float(d), (1.0 - q**d) * q / p + 1.0)


def _slow_start_s(d_ss: float, *, rtt_s: float, gamma: float, w1_pkts: float, w_max_pkts: float) -> tuple[float, float]:
    """``(E[T_ss], E[W_ss])``: Eq. 15 and the window slow start would reach, Eq. 11."""
    w_ss = d_ss * (gamma - 1.0) / gamma + w1_pkts / gamma
    if w_ss > w_max_pkts:
        # Geometric rounds up to W_max, then W_max packets a round for the rest.
        rounds = (math.log(w_max_pkts / w1_pkts, gamma) + 1.0
                  + (d_ss - (gamma * w_max_pkts - w1_pkts) / (gamma - 1.0)) / w_max_pkts)
    else:
        rounds = math.log(d_ss * (gamma - 1.0) / w1_pkts + 1.0, gamma)
    return rtt_s * rounds, w_ss


def latency(
    d: int,
    p: float,
    *,
    rtt_s: float,
    t0_s: float = 1.0,
    b: float = 1.0,
    w1_pkts: float = 1.0,
    w_max_pkts: float = math.inf,
    handshake: bool = True,
    ts_s: float = 3.0,
    delayed_ack_s: float = 0.0,
) -> Latency:
    """Expected latency of a ``d``-packet transfer, Eq. 25, term by term.

    ``handshake=False`` leaves out Eq. 4 (Tokuda et al.'s ns-2 TCP has no handshake);
    ``delayed_ack_s`` is ``E[T_delack]``, the receiver's delay of the ACK of a lone first
    segment (0 without delayed ACKs; about 0.1 s for BSD stacks in the paper).
    """
    _check(d, p, rtt_s, b, w1_pkts, w_max_pkts)
    if handshake and p >= 0.5:
        raise ValueError(f"p={p}: the handshake term (Eq. 4) needs p < 0.5")
    gamma = 1.0 + 1.0 / b
    q = 1.0 - p
    # Eq. 4: one RTT, plus for the SYN and for the SYN-ACK the timeouts of a packet lost k
    # times, Ts·(2^k − 1), weighted p^k·(1−p): Ts·((1−p)/(1−2p) − 1) each.
    handshake_s = rtt_s + ts_s * (2.0 * q / (1.0 - 2.0 * p) - 2.0) if handshake else 0.0
    d_ss = expected_slow_start_pkts(d, p)
    slow_start_s, w_ss = _slow_start_s(d_ss, rtt_s=rtt_s, gamma=gamma, w1_pkts=w1_pkts, w_max_pkts=w_max_pkts)
    first_loss_s = 0.0
    congestion_avoidance_s = 0.0
    if p > 0.0:
        l_ss = 1.0 - q**d  # Eq. 16
        q_hat = padhye.timeout_probability(min(w_ss, w_max_pkts), p)  # Eq. 17
        timeout_s = padhye.backoff_factor(p) * t0_s / q  # Eqs. 18, 19
        first_loss_s = l_ss * (q_hat * timeout_s + (1.0 - q_hat) * rtt_s)  # Eq. 20
        d_ca = d - d_ss  # Eq. 21
        if d_ca > 0.0:
            rate_pps = padhye.throughput_full_pps(p, rtt_s=rtt_s, t0_s=t0_s, wm_pkts=w_max_pkts, b=b)  # Eqs. 22, 23
            congestion_avoidance_s = d_ca / rate_pps  # Eq. 24
    return Latency(handshake_s, slow_start_s, first_loss_s, congestion_avoidance_s, delayed_ack_s, d_ss)


def throughput_pkts_per_rtt(d: int, p: float, *, rtt_s: float, **tcp: float | bool) -> float:
    """``d·RTT / E[T]``: the quantity Tokuda et al. plot (packets per RTT) from :func:`latency`."""
    return d * rtt_s / latency(d, p, rtt_s=rtt_s, **tcp).total_s  # type: ignore[arg-type]
