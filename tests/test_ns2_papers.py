"""benches/ns2's Matta & Guo and padding-paper drivers (matta_guo.tcl, fulltcp.tcl), on short
ns-2 runs checked against numbers that follow from the set-up: a 10-packet connection's
slow-start rounds, FullTcp's delayed-ACK tick, a marked packet's round trip. Skipped when
Debian's `ns` is not installed."""

import math

import pytest
from ns2_drivers import load, requires_ns

pytestmark = requires_ns



def test_back_to_back_ten_packet_connections_take_four_round_trips_each():
    # IW 1, no delayed ACKs, a window that never binds, no loss: a 10-packet connection sends
    # 1, 2, 4, 3 packets (the paper's footnote 5), so it lasts four RTTs plus the time the
    # last round's packets take to leave the access and bottleneck links.
    mg = load("matta_guo")
    rtt_s, rate_bps = 0.1, 100e6
    params = mg.base_params(variant="Reno", duration_s=20.0, seed=1, paths=[(int(rate_bps), 40.0, 1000)],
                            groups=[(3, 10, 0)], telnet=[], sender_delay_ms=5.0, receiver_delay_ms=5.0,
                            access_rate_bps=int(rate_bps))
    out = mg.parse(mg.run_ns2(params, []))
    serialization_s = 576 * 8 / rate_bps
    for _, _, _, start, end, pkts, timeouts in out["conns"]:
        assert pkts == 10 and timeouts == 0
        assert 4 * rtt_s <= end - start <= 4 * rtt_s + 10 * serialization_s + 1e-3
    # Each session's acknowledged packets at the last slice: its finished connections and
    # the one in progress (between 0 and 9 of its packets).
    last = max(out["slices"][(0, 0)])  # the slice ending at 20 s
    for i in range(3):
        done = sum(1 for c in out["conns"] if c[1] == i and c[4] <= 20.0)
        assert 10 * done <= out["slices"][(0, i)][last] <= 10 * done + 9
    assert out["paths"][0][2] == 0  # nothing dropped


def test_a_sub_segment_burst_waits_for_fulltcps_delayed_ack_tick():
    # FullTcp's receiver ACKs once segsize_ bytes are unacknowledged (tcp-full.cc need_send),
    # else on its delayed-ACK timer, which fires on multiples of interval_ (100 ms). A
    # 500-byte burst under segsize_ 536 is acknowledged at the first tick after it arrives;
    # with segsize_ 500 it is a full segment and acknowledged at once, one RTT after the write.
    pad = load("padding")
    rtt_s = 0.012
    for segsize in (536, 500):
        out = pad.run_ns2(pad.params(groups=[("interactive", 3, 500, 1.0, 1.0)], rate_bps=1e9, delay_ms=0.5,
                                     rtt_ms=rtt_s * 1e3, duration_s=30.0, seed=1, segsize=segsize))
        # A client's first burst waits for the handshake (one more RTT): left out.
        firsts = {c: min(w for g, c2, w, _ in out["resp"] if c2 == c) for _, c, _, _ in out["resp"]}
        bursts = [(w, d) for _, c, w, d in out["resp"] if w > firsts[c]]
        assert len(bursts) > 50
        for w, d in bursts:
            if segsize == 500:
                assert d - w == pytest.approx(rtt_s, abs=1e-4)
            else:
                tick = math.ceil((w + rtt_s / 2) / 0.1) * 0.1  # the data arrives half an RTT after the write
                assert d == pytest.approx(tick + rtt_s / 2, abs=1e-4)


def test_a_marked_packet_of_a_backlogged_flow_is_acknowledged_one_round_trip_after_its_send():
    # Without loss on a 1 Gbit/s path the 20-packet window_ never fills the link: a full
    # segment is acknowledged at once (segsize_ bytes arrived), one RTT after its send, and
    # the poll's resolution is 0.1 ms or 2% of the wait.
    pad = load("padding")
    out = pad.run_ns2(pad.params(groups=[("backlogged", 2, 500, 0.5, 1.0)], rate_bps=1e9, delay_ms=0.5,
                                 rtt_ms=12.0, duration_s=20.0, seed=1))
    marks = [m for m in out["mark"] if m[2] > 2.5]  # after the handshakes (starts within 2 s)
    assert len(marks) > 30
    for _, _, marked, sent, acked in marks:
        assert marked <= sent <= marked + 0.013  # the next new packet leaves within an RTT
        assert acked - sent == pytest.approx(0.012, abs=0.0012)
    assert out["queue"][2] == 0
