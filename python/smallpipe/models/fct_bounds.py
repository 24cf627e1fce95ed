"""The thesis's reference lines for flow completion time: TCP slow start's lower bound
and the processor-sharing ideal (after Dukkipati & McKeown, whom the thesis follows).

Source: the short-flows thesis (papers/short-flows-fct-red-fq-rcp.md), Chapter 5: "TCP
Slow Start imposes a fundamental lower bound to FCTs for short flows"; RCP "emulates
processor sharing". The FCT of a ``k``-packet flow is measured from the sender's SYN to
the arrival of its ``k``-th packet (the simulator's ``record_progress``).

- Slow start, no loss, no queueing, no delayed ACKs: one RTT of handshake, then rounds
  of ``IW, 2·IW, 4·IW, …`` packets, one RTT apart; after ``r`` rounds ``IW·(2^r − 1)``
  packets are sent, so the ``k``-th goes in round ``r(k) = ⌈log2(k/IW + 1)⌉`` at position
  ``m = k − IW·(2^{r−1} − 1)`` of its round, and arrives half an RTT plus ``m``
  serialisations at the bottleneck later:
  ``FCT_SS(k) = (r(k) + ½)·RTT + m·S/C``.
- Processor sharing: the handshake RTT, half an RTT of propagation, and the ``k`` packets
  served at the flow's share of the link: ``FCT_PS(k) = 1.5·RTT + k·S/share`` with
  ``share = C·(1 − ρ)`` at offered load ``ρ`` (an M/G/1-PS queue's mean, Figure 5.2's
  set-up) or ``C/(n + 1)`` beside ``n`` infinite flows (Figure 5.1's).
"""

from __future__ import annotations

import math

__all__ = ["processor_sharing_fct_s", "slow_start_fct_s", "slow_start_rounds"]


def _check(name: str, value: float, low: float, allowed: str) -> None:
    if not (math.isfinite(value) and value >= low):
        raise ValueError(f"{name}={value}: expected {allowed}")


def slow_start_rounds(packets: int, iw_pkts: int) -> int:
    """Rounds of slow start until the ``packets``-th packet is sent: ``⌈log2(k/IW + 1)⌉``.

    Raises:
        ValueError: ``packets`` or ``iw_pkts`` below 1.
    """
    _check("packets", packets, 1, "at least 1")
    _check("iw_pkts", iw_pkts, 1, "at least 1")
    rounds, sent = 0, 0
    while sent < packets:  # integer doubling: no floating-point log at powers of two
        sent += iw_pkts << rounds
        rounds += 1
    return rounds


def slow_start_fct_s(packets: int, rtt_s: float, rate_bps: float, packet_size_bytes: int, iw_pkts: int) -> float:
    """``FCT_SS(k) = (r(k) + ½)·RTT + m·S/C``: no loss-free TCP without a larger window
    finishes a ``k``-packet flow sooner.

    Raises:
        ValueError: a non-positive size, RTT or rate, or ``iw_pkts`` below 1.
    """
    _check("rtt_s", rtt_s, 0.0, "a finite RTT ≥ 0 s")
    _check("rate_bps", rate_bps, 1.0, "a finite rate ≥ 1 bit/s")
    _check("packet_size_bytes", packet_size_bytes, 1, "at least 1")
    rounds = slow_start_rounds(packets, iw_pkts)
    position = packets - iw_pkts * ((1 << (rounds - 1)) - 1)
    return (rounds + 0.5) * rtt_s + position * packet_size_bytes * 8 / rate_bps


def processor_sharing_fct_s(packets: int, rtt_s: float, rate_bps: float, packet_size_bytes: int, *,
                            load: float = 0.0, background_flows: int = 0) -> float:
    """``FCT_PS(k) = 1.5·RTT + k·S / (C·(1 − ρ)/(n + 1))``.

    Raises:
        ValueError: ``load`` outside ``[0, 1)``, a negative ``background_flows``, or as
            :func:`slow_start_fct_s`.
    """
    _check("packets", packets, 1, "at least 1")
    _check("rtt_s", rtt_s, 0.0, "a finite RTT ≥ 0 s")
    _check("rate_bps", rate_bps, 1.0, "a finite rate ≥ 1 bit/s")
    _check("packet_size_bytes", packet_size_bytes, 1, "at least 1")
    _check("background_flows", background_flows, 0, "at least 0")
    if not 0.0 <= load < 1.0:
        raise ValueError(f"load={load}: expected an offered load in [0, 1)")
    share_bps = rate_bps * (1.0 - load) / (background_flows + 1)
    return 1.5 * rtt_s + packets * packet_size_bytes * 8 / share_bps
