"""One CUBIC flow against the sawtooth RFC 9438 predicts for it."""

from __future__ import annotations

import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe import Scenario, simulate

RATE_BPS = 20_000_000
PACKET_BYTES = 1500
RTT_S = 0.1


def _run(duration_s: float) -> tuple[dict, dict]:
    sc = Scenario.from_dict({
        "seed": 1, "duration_s": duration_s, "slice_s": 1.0,
        "link": {"rate_bps": RATE_BPS, "delay_ms": 10.0, "queue": {"kind": "droptail", "limit_pkts": 33}},
        # A lone flow: the RFC says to turn fast convergence off (§4.7).
        "tcp": {"congestion": "cubic", "cubic_fast_convergence": False, "rwnd_bytes": 1 << 24,
                "packet_size_bytes": PACKET_BYTES},
        "flows": [{"app": "bulk", "rtt_ms": RTT_S * 1000}],
    })
    result = simulate(sc)
    link = result.links.filter(result.links["name"] == "bottleneck").row(0, named=True)
    return result.flows.row(0, named=True), link


def test_time_between_losses_is_k_for_the_measured_w_max_plus_one_rtt_of_recovery() -> None:
    """RFC 9438 §4.2: after a loss at W_max the window is back at W_max after
    K = cbrt(W_max (1 − β) / C); the queue overflows there again and the loss is repaired
    in one RTT before the next epoch starts, so losses are K + RTT apart.

    W_max is measured: the window at a DropTail overflow is the rate times the longest
    RTT (propagation plus the longest queueing delay seen). The tolerance is one RTT (where
    in its last round trip the overflow falls, and cwnd runs up to one RTT ahead of
    W_cubic(t) through target = W_cubic(t + RTT)) plus one inter-loss time over the number
    counted (the count is whole). Losses are counted from 60 s to 360 s, after slow start,
    as the difference of two runs of the same seed, which are identical up to 60 s.
    """
    early, _ = _run(60.0)
    late, link = _run(360.0)
    assert late["timeouts"] == 0
    losses = late["fast_retransmits"] - early["fast_retransmits"]
    period_s = 300.0 / losses
    rtt_max_s = RTT_S + link["queue_delay_max_ms"] / 1000
    w_max_pkts = RATE_BPS / (8 * PACKET_BYTES) * rtt_max_s
    k_s = (w_max_pkts * (1 - 0.7) / 0.4) ** (1 / 3)
    assert period_s == pytest.approx(k_s + rtt_max_s, abs=rtt_max_s + period_s / losses)
    # Reno would take W_max / 2 round trips, about 11 s, for the same sawtooth.
    assert period_s < 0.6 * (w_max_pkts / 2 * rtt_max_s)
