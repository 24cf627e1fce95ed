"""Simulated TCP against closed-form models derived independently of the simulator."""

from __future__ import annotations

import math

import polars as pl
import pytest

smallpipe = pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe import Scenario, simulate
from smallpipe.models import interactive, padhye

MSS_BYTES = 1500 - 52  # 1500-byte packets, 40 header bytes + 12 of timestamps


@pytest.mark.parametrize("p", [0.01, 0.03, 0.05])
def test_bulk_throughput_matches_padhye_full_model(p: float) -> None:
    """Padhye et al. 1998, full model, within ±30%.

    NewReno without SACK and without delayed ACKs (b = 1). Limited transmit is off: it
    postdates the model (RFC 3042, 2001) and avoids exactly the small-window timeouts the
    model counts. The link is fast, so the RTT is the 100 ms propagation RTT and T0 is the
    1 s minimum RTO.
    """
    duration_s = 3000.0
    sc = Scenario.from_dict({
        "seed": 11, "duration_s": duration_s, "slice_s": 100.0,
        "link": {"rate_bps": 10_000_000, "delay_ms": 10.0, "loss": p},
        "tcp": {"recovery": "newreno", "delayed_ack": False, "limited_transmit": False,
                "min_rto_ms": 1000.0, "packet_size_bytes": 1500},
        "flows": [{"app": "bulk", "rtt_ms": 100.0}],
    })
    flow = simulate(sc).flows.row(0, named=True)
    measured_pps = flow["bytes_delivered"] / MSS_BYTES / duration_s
    model_pps = padhye.throughput_full_pps(p, rtt_s=0.1, t0_s=1.0, wm_pkts=65535 / MSS_BYTES, b=1)
    assert measured_pps == pytest.approx(model_pps, rel=0.30)
    assert flow["timeouts"] > 0 and flow["fast_retransmits"] > 0


@pytest.mark.parametrize("p", [0.05, 0.1, 0.2])
def test_interactive_response_time_matches_eq3(p: float) -> None:
    """Eq. 3 of the interactive-flows paper: E[L] = p/(1−2p)·RTO + RTT, within ±10%.

    Single-packet bursts, loss on the data direction only, timestamps on so every burst
    starts from the base RTO (1 s minimum). 60 flows × 600 s give about 20 000 bursts: at
    p = 0.2 the standard deviation of L is about 1.5 RTO, so the standard error of the
    mean is near 0.011 s, a quarter of the 10% tolerance.
    """
    rtt_s, rto_s = 0.1, 1.0
    sc = Scenario.from_dict({
        "seed": 7, "duration_s": 600.0, "slice_s": 60.0,
        "link": {"rate_bps": 10_000_000, "delay_ms": 10.0, "loss": p},
        "tcp": {"delayed_ack": False, "timestamps": True, "min_rto_ms": 1000.0},
        "flows": [{"app": "interactive", "count": 60, "rtt_ms": rtt_s * 1000, "burst_bytes": 100,
                   "mean_gap_s": 1.0, "gap_from": "response", "start_s": [0.0, 1.0]}],
    })
    bursts = simulate(sc).bursts.filter(pl.col("response_ns").is_not_null())
    assert bursts.height > 15_000
    # One serialization of a 152-byte packet and its 52-byte ACK on each of the three links
    # is part of the round trip too.
    mean_s = bursts["response_ns"].mean() * 1e-9
    expected = interactive.response_time_interactive(p, rto_s, rtt_s)
    assert mean_s == pytest.approx(expected, rel=0.10)


def test_interactive_response_times_take_the_backoff_ladder_values() -> None:
    """Each response time is (2^i − 1)·RTO + RTT for i losses in a row (Eq. 2)."""
    sc = Scenario.from_dict({
        "seed": 3, "duration_s": 300.0, "slice_s": 60.0,
        "link": {"rate_bps": 10_000_000, "delay_ms": 10.0, "loss": 0.2},
        "tcp": {"delayed_ack": False, "min_rto_ms": 1000.0},
        "flows": [{"app": "interactive", "count": 10, "rtt_ms": 100.0, "burst_bytes": 100}],
    })
    responses = simulate(sc).bursts["response_ns"].drop_nulls().to_list()
    rungs = {round(math.log2((r * 1e-9 - 0.1) / 1.0 + 1)) for r in responses}
    assert {0, 1, 2} <= rungs
    for r in responses:
        i = round(math.log2(max(r * 1e-9 - 0.1, 0.0) + 1))
        assert r * 1e-9 == pytest.approx((2**i - 1) * 1.0 + 0.1, abs=0.005)
