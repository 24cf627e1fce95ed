"""The `"ns2"` stack's FullTcp receiver (`tcp.ack_rule = "ns2_full"`) held to ns-2 2.35's
`Agent/TCP/FullTcp` (benches/ns2/fulltcp.tcl) on the padding paper's idle path: RTT 12 ms,
1 Gbit/s, three telnet clients writing 500-byte bursts (under `segsize_` 536) at exponential
gaps of mean 1 s. FullTcp acknowledges less than a segment's bytes only at its delayed-ACK
timer's next tick, a multiple of `interval_` (100 ms) on the simulation clock (tcp-full.cc
need_send, 1439-1447; the timer, 1566-1570).

FullTcp as a whole (`tcp.fast_recovery = "ns2_full"` with that receiver) is then held to it
segment by segment, as tests/test_ns2_stack.py holds the one-way agents: one connection on a
1 Mbit/s access link, a 100 Mbit/s shared link, RTT 200 ms, `segsize_` 536 (576-byte
packets), scripted drops at the shared link, and every data segment the sender puts on its
access link must be the same bytes at the same time in both. Tolerance, derived: both
simulators are deterministic and model the same links, so the segments must be identical;
ns-2's trace prints times to 1 us, hence |t_ns2 - t_smallpipe| <= 1 us plus float rounding.
Skipped when Debian's `ns` is not installed."""

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
           "tcp.ack_rule": "ns2_full", "tcp.delayed_ack": True, "tcp.fast_recovery": "ns2_full"}


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
    one_way = ("tcp.ack_rule", "tcp.delayed_ack", "tcp.fast_recovery")
    ours = smallpipe_bursts({k: v for k, v in FULLTCP.items() if k not in one_way})
    assert len(ours) > 100
    for sent, acked in ours:
        assert acked - sent == pytest.approx(RTT_S, abs=TICK_TOLERANCE_S)


def test_ns2_full_needs_the_delayed_ack_timer():
    with pytest.raises(ConfigError, match="ack_rule.*ns2_full.*delayed_ack = true"):
        padding_fig5.scenario("interactive", 0.0, flows=1, duration_s=1.0, seed=1).with_overrides(
            {**FULLTCP, "tcp.delayed_ack": False})


# The segment-by-segment set-up (as tests/test_ns2_stack.py's): the slow link first.
TRACE_TIME_TOLERANCE_S = 1.5e-6
SEGMENT_BYTES = 536  # segsize_, ns-default.tcl:1218
BURST_BYTES = 500
TRANSFER_BYTES = 5000  # nine full segments and a 176-byte tail


def ns2_packets(kind: str, drops: list[int], duration_s: float, write_times: list[float] | None = None,
                size: int = BURST_BYTES) -> tuple[list[tuple[float, int, int]], int]:
    """ns-2's packets of the connection onto its access link, (time s, seqno, payload bytes),
    with the data packets numbered ``drops`` (from 1) lost, and its timeouts."""
    pad = load("padding")

    def run(drop_pkts: list[int]) -> dict:
        return pad.run_ns2(pad.params(groups=[(kind, 1, size, 1.0, 1.0)], rate_bps=1e8, delay_ms=1.0, rtt_ms=200.0,
                                      duration_s=duration_s, seed=1, start_spread_s=0.0, access_rate_bps=1e6,
                                      drop_pkts=drop_pkts, write_times=write_times), trace=True)

    # The shared link sees this connection's packets only: the k-th data packet follows the
    # handshake's dataless packets.
    lead = next(i for i, (_, _, n, _) in enumerate(run([])["segments"]) if n > 0)
    out = run([lead + k - 1 for k in drops])
    return [(t, seq, n) for t, seq, n, _ in out["segments"]], out["timeouts"][0]


def smallpipe_run(app: dict, drops: list[int], duration_s: float, tcp: dict[str, object] = FULLTCP):
    import smallpipe

    def scenario(drop_nth: list[int]) -> smallpipe.Scenario:
        return smallpipe.Scenario.from_dict({
            "seed": 1, "duration_s": duration_s,
            "link": {"rate_bps": 1e8, "delay_ms": 1.0, "access_rate_bps": 1e6, "receiver_delay_ms": 0.0,
                     "drop_nth": drop_nth, "queue": {"kind": "droptail", "limit_pkts": 10000}},
            "tcp": {k.removeprefix("tcp."): v for k, v in tcp.items()},
            "flows": [{"count": 1, "rtt_ms": 200.0, "start_s": 0.0, **app}], "trace_conn": 0,
        })

    def packets(result) -> list[tuple[float, int, int, int]]:
        t = result.trace.filter(result.trace["sent"])
        return [(ns / 1e9, seq, n, flags) for ns, seq, n, flags
                in zip(t["time_ns"], t["seq"], t["payload_len"], t["flags"], strict=True)]

    # drop_nth counts every packet onto the shared link from 1, the handshake's too.
    lead = next(i for i, (_, _, n, _) in enumerate(packets(simulate(scenario([])))) if n > 0)
    r = simulate(scenario([lead + k for k in drops]))
    return r, packets(r)


def assert_same_data_segments(ns2: list[tuple[float, int, int]], ours: list[tuple[float, int, int, int]],
                              end_s: float) -> None:
    # ns-2 stops at the end time with packets in its scheduler that smallpipe may still trace.
    a = [(t, seq, n) for t, seq, n in ns2 if n > 0 and t < end_s - 0.1]
    b = [(t, seq, n) for t, seq, n, _ in ours if n > 0 and t < end_s - 0.1]
    assert [x[1:] for x in b] == [x[1:] for x in a]
    worst = max(abs(x[0] - y[0]) for x, y in zip(a, b, strict=True))
    assert worst <= TRACE_TIME_TOLERANCE_S, worst


BULK_CASES = [
    # (1-based data packets lost, timeouts ns-2's FullTcp must take)
    ([], 0),  # the handshake (its ACK alone, then data) and slow start
    ([20], 0),  # a fast retransmit
    ([20, 22, 25], 1),  # three in a window: Reno leaves recovery on the first new ACK, a timeout
    ([10, 30, 31, 50], 1),
    ([60, 61, 62, 63, 64, 65], 1),
    # The 40th data packet is 20's fast retransmission, the 41st the timeout's: a repeated
    # timeout (ssthresh_ 2, TcpAgent::timeout's slowdown)
    ([20, 40, 41], 2),
    (list(range(30, 46)), 1),  # sixteen in a row
]


@pytest.mark.parametrize("drops, timeouts", BULK_CASES)
def test_fulltcp_bulk_segments_match_ns2(drops, timeouts):
    duration_s = 10.0
    ns2, ns2_timeouts = ns2_packets("bulk", drops, duration_s)
    assert ns2_timeouts == timeouts  # the case is what it says in ns-2 itself
    r, ours = smallpipe_run({"app": "bulk"}, drops, duration_s)
    assert_same_data_segments(ns2, ours, duration_s)
    assert r.flows["timeouts"][0] == ns2_timeouts
    # The handshake: a SYN, then at the SYN-ACK a pure ACK on its own before the data
    # (tcp-full.cc:1847), the two data segments of windowInit_ 2 behind it.
    lead = [(round(t, 6), n) for t, _, n in ns2[:4]]
    assert lead[0] == (0.0, 0) and lead[1][1] == 0 and lead[2][0] == lead[1][0] and lead[2][1] > 0
    assert [n for _, _, n, _ in ours[:4]] == [n for _, _, n in ns2[:4]]


@pytest.mark.parametrize("drops, timeouts, duration_s", [
    ([], 0, 30.0),
    ([3], 1, 30.0),  # a lone burst lost: no duplicate ACKs, a timeout (minrto_ 1 s)
    ([3, 4], 2, 30.0),  # and its retransmission: the timer backed off, a second timeout
    # The retransmission's ACK ends the backoff (newack, tcp-full.cc:1355): the next burst
    # lost times out after 1 s, not the one-way agents' 2 s (they wait for an RTT sample)
    ([3, 5], 2, 30.0),
    # Six timeouts in a row: from the fourth backoff ns-2 also drops SRTT (tcp.cc:627)
    ([2, 3, 4, 5, 6, 7], 6, 120.0),
])
def test_fulltcp_interactive_bursts_match_ns2(drops, timeouts, duration_s):
    # Our telnet client's 500-byte writes (the next an exponential gap after the last is
    # acknowledged, as fulltcp.tcl's done_data) replayed in ns-2 at the same times.
    app = {"app": "interactive", "burst_bytes": BURST_BYTES, "mean_gap_s": 1.0, "gap_from": "response"}
    r, ours = smallpipe_run(app, drops, duration_s)
    writes = [ns / 1e9 for ns in r.bursts["sent_ns"]]
    assert len(writes) > 15
    ns2, ns2_timeouts = ns2_packets("scripted", drops, duration_s, write_times=writes)
    assert ns2_timeouts == timeouts
    assert_same_data_segments(ns2, ours, duration_s)
    assert r.flows["timeouts"][0] == ns2_timeouts
    # No data waits at the handshake: ns-2 sends two pure ACKs (the second for TF_ACKNOW, tcp-full.cc:1820).
    assert [n for _, _, n in ns2[:3]] == [0, 0, 0] and [n for _, _, n, _ in ours[:3]] == [0, 0, 0]


@pytest.mark.parametrize("drops", [[], [5]])
def test_fulltcp_holds_a_short_tail_until_all_is_acknowledged_and_puts_the_fin_on_it(drops):
    # A 5000-byte write with MSG_EOF: FullTcp's Nagle (nodelay_ false, foutput) holds the
    # 176-byte tail while segments are out, and the FIN rides on it (close_on_empty_).
    duration_s = 8.0
    ns2, _ = ns2_packets("transfer", drops, duration_s, size=TRANSFER_BYTES)
    _, ours = smallpipe_run({"app": "transfer", "size_bytes": TRANSFER_BYTES}, drops, duration_s)
    assert_same_data_segments(ns2, ours, duration_s)
    data = [x for x in ours if x[2] > 0]
    tail = data[-1]
    assert tail[2] == TRANSFER_BYTES % SEGMENT_BYTES and tail[3] & 0x01  # FIN
    # The tail left when the last full segment was acknowledged: at least a round trip
    # after that segment was sent, not right behind it.
    last_full = max(t for t, _, n, _ in data if n == SEGMENT_BYTES)
    assert tail[0] >= last_full + 0.2


def test_the_one_way_ns2_sender_departs_from_fulltcp_after_a_timeout():
    # What the segment tests tell apart: with the one-way Reno agent's rules (limited
    # transmit on the first duplicate ACKs, tcp.cc:1579 send_one) instead of FullTcp's
    # sender, the {20, 22, 25} case leaves ns-2's FullTcp once the timeout's go-back-N
    # draws a duplicate ACK.
    duration_s = 10.0
    ns2, _ = ns2_packets("bulk", [20, 22, 25], duration_s)
    _, ours = smallpipe_run({"app": "bulk"}, [20, 22, 25], duration_s, {**FULLTCP, "tcp.fast_recovery": "ns2"})
    with pytest.raises(AssertionError):
        assert_same_data_segments(ns2, ours, duration_s)
