"""The `"ns2"` stack's FullTcp receiver (`tcp.ack_rule = "ns2_full"`) held to ns-2 2.35's
`Agent/TCP/FullTcp` (benches/ns2/fulltcp.tcl) on the padding paper's idle path: RTT 12 ms,
1 Gbit/s, three telnet clients writing 500-byte bursts (under `segsize_` 536) at exponential
gaps of mean 1 s. FullTcp acknowledges less than a segment's bytes only at its delayed-ACK
timer's next tick, a multiple of `interval_` (100 ms) on the simulation clock (tcp-full.cc
need_send, 1439-1447; the timer, 1566-1570). Skipped when Debian's `ns` is not installed."""

import math
import statistics

import polars as pl
import pytest
from ns2_drivers import load, requires_ns
from smallpipe import ConfigError
from smallpipe.experiments import padding_fig5
from smallpipe.result import simulate

pytestmark = requires_ns

RTT_S = 0.012
INTERVAL_S = 0.1  # ns-default.tcl:1225, Agent/TCP/FullTcp interval_
# 1 Gbit/s links: a 540-byte packet takes 4.3 us per hop, so an ACK lands within 0.1 ms of
# the tick plus half an RTT.
TICK_TOLERANCE_S = 1e-4
FULLTCP = {"tcp.stack": "ns2", "tcp.recovery": "reno", "tcp.min_rto_ms": 1000.0, "tcp.packet_size_bytes": 576,
           "tcp.ack_rule": "ns2_full", "tcp.delayed_ack": True}


def tick_ack_s(sent_s: float) -> float:
    """When a burst sent at ``sent_s`` is acknowledged at the sender: its data arrives half
    an RTT later, the ACK leaves at the first tick after that and takes half an RTT back."""
    return math.ceil((sent_s + RTT_S / 2) / INTERVAL_S) * INTERVAL_S + RTT_S / 2


def ns2_bursts() -> list[tuple[float, float]]:
    pad = load("padding")
    out = pad.run_ns2(pad.params(groups=[("interactive", 3, 500, 1.0, 1.0)], rate_bps=1e9, delay_ms=0.5,
                                 rtt_ms=RTT_S * 1e3, duration_s=60.0, seed=1))
    # A client's first burst waits for the handshake (one more RTT): left out.
    firsts = {c: min(w for _, c2, w, _ in out["resp"] if c2 == c) for _, c, _, _ in out["resp"]}
    return [(w, d) for _, c, w, d in out["resp"] if w > firsts[c]]


def smallpipe_bursts(overrides: dict[str, object]) -> list[tuple[float, float]]:
    sc = padding_fig5.scenario("interactive", 0.0, flows=3, duration_s=60.0, seed=1).with_overrides(overrides)
    # The handshake's burst left out, as ns-2's.
    b = simulate(sc).bursts.drop_nulls("acked_ns").filter(pl.col("sent_ns") > pl.col("sent_ns").min().over("flow_id"))
    return [(s / 1e9, a / 1e9) for s, a in zip(b["first_sent_ns"], b["acked_ns"], strict=True)]


def test_fulltcp_acknowledges_a_sub_segment_burst_at_the_next_delayed_ack_tick_as_ns2():
    ns2, ours = ns2_bursts(), smallpipe_bursts(FULLTCP)
    assert len(ns2) > 100 and len(ours) > 100
    for sent, acked in ns2 + ours:
        arrived = sent + RTT_S / 2
        if abs(arrived - round(arrived / INTERVAL_S) * INTERVAL_S) < TICK_TOLERANCE_S:
            continue  # arrives within the packets' transmission times of a tick: either tick
        assert acked == pytest.approx(tick_ack_s(sent), abs=TICK_TOLERANCE_S)
    # The mean response, an RTT plus a wait spread evenly over [0, interval_): the two
    # simulators draw different write times, so their means differ by sampling alone, at
    # most 4 standard errors of a difference of two uniform means.
    sd = INTERVAL_S / math.sqrt(12)
    tolerance = 4 * sd * math.sqrt(1 / len(ns2) + 1 / len(ours))
    mean_ns2 = statistics.mean(a - s for s, a in ns2)
    mean_ours = statistics.mean(a - s for s, a in ours)
    assert mean_ours == pytest.approx(mean_ns2, abs=tolerance)
    assert mean_ns2 == pytest.approx(RTT_S + INTERVAL_S / 2, abs=4 * sd / math.sqrt(len(ns2)))


def test_the_one_way_ns2_stack_acknowledges_the_same_burst_one_round_trip_after_its_send():
    # TCPSink (the ns2 stack's default receiver, no delayed ACK) acknowledges every segment:
    # the rule above is FullTcp's alone.
    ours = smallpipe_bursts({k: v for k, v in FULLTCP.items() if k not in ("tcp.ack_rule", "tcp.delayed_ack")})
    assert len(ours) > 100
    for sent, acked in ours:
        assert acked - sent == pytest.approx(RTT_S, abs=TICK_TOLERANCE_S)


def test_ns2_full_needs_the_delayed_ack_timer():
    with pytest.raises(ConfigError, match="ack_rule.*ns2_full.*delayed_ack = true"):
        padding_fig5.scenario("interactive", 0.0, flows=1, duration_s=1.0, seed=1).with_overrides(
            {**FULLTCP, "tcp.delayed_ack": False})
