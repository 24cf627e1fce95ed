"""Cardwell, Savage, Anderson (INFOCOM 2000) latency model against values derived by hand."""

from __future__ import annotations

import itertools
import math

import pytest
from smallpipe.models import cardwell, padhye


def test_loss_free_transfer_is_slow_start_plus_handshake() -> None:
    # p → 0: d packets in log_γ(d(γ−1)/w1 + 1) rounds, one more RTT of handshake.
    # γ = 2, w1 = 1: 2^n − 1 packets take n rounds; γ = 1.5, w1 = 4: 4(1.5^n − 1)/0.5
    # (4, 10, 19 packets in 1, 2, 3 rounds).
    rtt_s = 0.1
    for n in (1, 3, 7):
        t = cardwell.latency(2**n - 1, 0.0, rtt_s=rtt_s, b=1.0, w1_pkts=1.0)
        assert t.total_s == pytest.approx((n + 1) * rtt_s, rel=1e-12)
        assert t.first_loss_s == 0.0 and t.congestion_avoidance_s == 0.0
    for n, d in ((1, 4), (2, 10), (3, 19)):
        t = cardwell.latency(d, 0.0, rtt_s=rtt_s, b=2.0, w1_pkts=4.0, handshake=False)
        assert t.total_s == pytest.approx(n * rtt_s, rel=1e-12)
    # The limit is continuous: p = 1e-9 is within a part in a million of p = 0.
    assert cardwell.latency(100, 1e-9, rtt_s=rtt_s).total_s == pytest.approx(
        cardwell.latency(100, 0.0, rtt_s=rtt_s).total_s, rel=1e-6)


def test_window_limited_slow_start() -> None:
    # W_max = 8, γ = 2, w1 = 1, no loss: rounds of 1, 2, 4, 8 packets (15), then 8 a round;
    # 31 packets = 15 + 2·8 take 4 + 2 rounds.
    t = cardwell.latency(31, 0.0, rtt_s=1.0, w_max_pkts=8.0, handshake=False)
    assert t.slow_start_s == pytest.approx(6.0, rel=1e-12)


def test_handshake_pays_backed_off_syn_timeouts() -> None:
    # Eq. 4 against the series it sums: each of SYN and SYN-ACK lost k times waits Ts·(2^k − 1).
    p, ts_s, rtt_s = 0.2, 3.0, 0.05
    series = sum(p**k * (1 - p) * (2**k - 1) * ts_s for k in range(200))
    t = cardwell.latency(1, p, rtt_s=rtt_s, ts_s=ts_s)
    assert t.handshake_s == pytest.approx(rtt_s + 2 * series, rel=1e-9)


def test_one_packet_loss_costs_a_timeout_sequence() -> None:
    # d = 1: slow start is one round; the packet is lost with p, and with one packet in
    # flight no duplicate ACK comes (Q = 1): a timeout sequence of mean T0·f(p)/(1−p) with
    # f(p) = 1 + p + 2p² + … + 32p⁶.
    p, t0_s = 0.1, 1.0
    f = 1 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6
    t = cardwell.latency(1, p, rtt_s=0.2, t0_s=t0_s, handshake=False)
    assert t.first_loss_s == pytest.approx(p * t0_s * f / (1 - p), rel=1e-12)


def test_long_transfer_approaches_padhye() -> None:
    # d large: E[T]/d → 1/B(p), the steady-state rate of the rest of the transfer.
    for p, w_max in ((0.01, math.inf), (0.02, 32.0), (0.005, 64.0)):
        rate_pps = padhye.throughput_full_pps(p, rtt_s=0.2, t0_s=1.0, wm_pkts=w_max, b=1.0)
        d = 10**7
        t = cardwell.latency(d, p, rtt_s=0.2, w_max_pkts=w_max)
        assert d / t.total_s == pytest.approx(rate_pps, rel=1e-3)


def test_latency_grows_with_size_and_loss() -> None:
    sizes = [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 5000]
    losses = [0.0, 0.001, 0.005, 0.01, 0.03, 0.1, 0.2]
    for w_max, b in itertools.product((math.inf, 32.0), (1.0, 2.0)):
        grid = {(d, p): cardwell.latency(d, p, rtt_s=0.2, w_max_pkts=w_max, b=b).total_s
                for d in sizes for p in losses}
        for p in losses:
            assert all(grid[(a, p)] < grid[(c, p)] for a, c in itertools.pairwise(sizes)), (w_max, b, p)
        for d in sizes:
            assert all(grid[(d, a)] < grid[(d, c)] for a, c in itertools.pairwise(losses)), (w_max, b, d)


def test_bad_input_names_the_field() -> None:
    with pytest.raises(ValueError, match="p=1.5"):
        cardwell.latency(10, 1.5, rtt_s=0.1)
    with pytest.raises(ValueError, match="d=0"):
        cardwell.latency(0, 0.1, rtt_s=0.1)
    with pytest.raises(ValueError, match="w1_pkts"):
        cardwell.latency(10, 0.1, rtt_s=0.1, w1_pkts=4.0, w_max_pkts=2.0)
