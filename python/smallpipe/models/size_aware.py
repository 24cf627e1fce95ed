"""TCP throughput with per-packet loss probabilities, and the size-aware drop curves.

Source: K. Tokuda, G. Hasegawa, M. Murata, "Analysis and Improvement of Fairness among
TCP Connections transmitting Differently Sized Data", Section 3 (analysis), Section 4
(drop probabilities from a target throughput) and Section 6.2 (n thresholds). The
computation is in Rust (``smallpipe_core::models::size_aware_analysis``, the same code
the ``size_aware`` queue discipline uses); this module names the arguments and units.

Notation (the paper's): ``d`` packets to send; ``p[i-1]`` the probability that the i-th
transmitted packet is lost (retransmissions count; the last value repeats for later
packets); ``b`` packets per ACK; ``w1`` the initial window; ``W_max`` the largest window;
``T0`` the first retransmission timeout. The transfer is an initial slow start until the
first loss (after Cardwell et al.), then congestion-avoidance epochs each ending in a
loss indication, a timeout with probability ``Q_i`` (after Padhye et al.).

Limits: expected values pushed through non-linear steps, no connection set-up (the
paper's ns-2 TCP has none), constant ``T0`` with backoff capped at ``64·T0``.
docs/size_aware.md lists the choices made where the paper's equations are garbled.
"""

from __future__ import annotations

from collections.abc import Sequence

from smallpipe import _smallpipe

__all__ = ["drop_curve", "ideal_pkts_per_rtt", "throughput_pkts_per_rtt", "transfer_time_s"]


def transfer_time_s(
    d: int,
    p: float | Sequence[float],
    *,
    rtt_s: float,
    t0_s: float = 1.0,
    b: float = 1.0,
    w1_pkts: float = 1.0,
    w_max_pkts: float | None = None,
) -> float:
    """Expected seconds to transfer ``d`` packets; ``p`` a constant or per-packet list."""
    probs = [float(p)] if isinstance(p, (int, float)) else [float(x) for x in p]
    return _smallpipe.size_aware_transfer_time_s(
        d, probs, rtt_s=rtt_s, t0_s=t0_s, b=b, w1_pkts=w1_pkts, w_max_pkts=w_max_pkts
    )


def throughput_pkts_per_rtt(d: int, p: float | Sequence[float], *, rtt_s: float, **tcp: float | None) -> float:
    """Throughput of a ``d``-packet transfer in packets per RTT (``d·RTT / time``)."""
    t = transfer_time_s(d, p, rtt_s=rtt_s, **tcp)  # type: ignore[arg-type]
    return d * rtt_s / t if t > 0 else 0.0


def ideal_pkts_per_rtt(d: int, target_pkts_per_rtt: float, *, rtt_s: float, **tcp: float | None) -> float:
    """The ideal of the paper's Figure 9(b): loss-free throughput of ``d`` packets, capped at the target."""
    return min(throughput_pkts_per_rtt(d, 0.0, rtt_s=rtt_s, **tcp), target_pkts_per_rtt)


def drop_curve(
    target_pkts_per_rtt: float,
    m_pkts: int = 1000,
    *,
    thresholds: int = 0,
    max_p: float = 0.5,
    rtt_s: float,
    t0_s: float = 1.0,
    b: float = 1.0,
    w1_pkts: float = 1.0,
    w_max_pkts: float | None = None,
) -> tuple[list[int], list[float]]:
    """Drop probabilities the ``size_aware`` discipline uses at ``target_pkts_per_rtt``.

    Returns ``(ends, probs)``: ``probs[j]`` applies to packets after ``ends[j-1]`` up to
    ``ends[j]`` (``ends = 1..m_pkts`` in the per-packet form, ``thresholds = 0``).
    """
    return _smallpipe.size_aware_drop_curve(
        target_pkts_per_rtt,
        m_pkts,
        thresholds=thresholds,
        max_p=max_p,
        rtt_s=rtt_s,
        t0_s=t0_s,
        b=b,
        w1_pkts=w1_pkts,
        w_max_pkts=w_max_pkts,
    )
