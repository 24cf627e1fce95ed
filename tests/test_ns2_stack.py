"""`tcp.stack = "ns2"` held to ns-2 2.35 itself, segment by segment: one bulk flow with
scripted drops runs in ns-2 (benches/ns2/ns2_side.py, one-way Agent/TCP/* and a TCPSink) and
in smallpipe under the ns2 stack, and every data segment the sender hands to its link must
be the same packet at the same time in both. Skipped when Debian's `ns` is not installed.

The set-up puts the slow link first: the sender's access link is 1 Mbit/s and the shared
link 100 Mbit/s. ns-2's ErrorModel drops at the head of the shared link before its queue
(benches/ns2/README.md), smallpipe's `drop_nth` as the packet leaves it, so a drop frees
the link 0.04 ms apart instead of one 4 ms transmission apart behind a queue.

Tolerance, derived: both simulators are deterministic and model the same links, so the
sequence of segments must be identical; ns-2's trace prints times to 1 µs, hence
|t_ns2 − t_smallpipe| ≤ 1 µs (plus float rounding). The last 0.1 s are left out: ns-2 stops
at the end time with packets in its scheduler that smallpipe's run may still trace."""

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("ns") is None,
                                reason="ns-2 is not installed (`apt-get install ns2`; scripts/test.sh does it)")

PACKET_BYTES = 500
MSS = PACKET_BYTES - 40
DURATION_S = 10.0
TIME_TOLERANCE_S = 1.5e-6


def _ns2_side():
    path = ROOT / "benches" / "ns2" / "ns2_side.py"
    spec = importlib.util.spec_from_file_location("ns2_side", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ns2_side"] = module
    spec.loader.exec_module(module)
    return module


def ns2_segments(variant, sink, drops):
    spec = {
        "name": "t", "seed": 1, "rate_bps": 1e8, "access_rate_bps": 1e6, "bottleneck_delay_ms": 1.0,
        "queue_pkts": 1000, "loss": 0.0, "drop_data": drops, "trace": True, "warmup_s": 0.0,
        "duration_s": DURATION_S, "flows": [{"start_s": 0.0, "rtt_ms": 200.0, "size_pkts": None}],
        "tcp": {"packet_bytes": PACKET_BYTES}, "ns2": {"variant": variant, "sink": sink},
    }
    r = _ns2_side().run(spec)
    # ns-2 numbers data packets from 1 (0 is the header-only first packet).
    return [(t, seq) for t, seq, payload in r["trace"]["tx"] if payload > 0], r["timeouts"][0]


def smallpipe_segments(recovery, delayed_ack, drops):
    import smallpipe

    def scenario(drop_nth):
        return smallpipe.Scenario.from_dict({
            "seed": 1, "duration_s": DURATION_S,
            "link": {"rate_bps": 1e8, "delay_ms": 1.0, "access_rate_bps": 1e6, "receiver_delay_ms": 0.0,
                     "drop_nth": drop_nth, "queue": {"kind": "droptail", "limit_pkts": 1000}},
            "tcp": {"stack": "ns2", "packet_size_bytes": PACKET_BYTES, "recovery": recovery, "delayed_ack": delayed_ack},
            "flows": [{"app": "bulk", "count": 1, "rtt_ms": 200.0, "start_s": 0.0}],
            "trace_conn": 0,
        })

    def sent(result):
        t = result.trace.filter(result.trace["sent"])
        return list(zip(t["time_ns"].to_list(), t["seq"].to_list(), t["payload_len"].to_list()))

    # drop_nth counts every packet onto the link, the SYN too: data packet k follows the
    # packets sent before the first data segment.
    lead = next(i for i, (_, _, n) in enumerate(sent(smallpipe.simulate(scenario([])))) if n > 0)
    r = smallpipe.simulate(scenario([k + lead for k in drops]))
    segments = [(ns / 1e9, (seq - 1) // MSS + 1) for ns, seq, n in sent(r) if n > 0]
    return segments, r.flows["timeouts"][0]


CASES = [
    # (ns-2 agent, smallpipe recovery, 1-based data packets lost, timeouts ns-2 must take)
    ("Newreno", "newreno", [20], 0),
    ("Newreno", "newreno", [10, 30, 31, 50], 0),
    ("Newreno", "newreno", [20, 22, 25], 1),  # three holes in a window: a partial-ACK timeout
    ("Newreno", "newreno", [60, 61, 62, 63, 64, 65], 1),  # six in a row, and the retransmissions
    ("Reno", "reno", [20], 0),
    ("Reno", "reno", [20, 22, 25], 1),
    ("Reno", "reno", [60, 61, 62, 63, 64, 65], 1),
    # The 40th data packet is 20's fast retransmission, the 41st the timeout's: a repeated
    # timeout, after which ns-2 slows down again to ssthresh_ 2 (TcpAgent::timeout)
    ("Reno", "reno", [20, 40, 41], 2),
    ("Newreno", "newreno", [20, 40, 41], 2),
]


def assert_same_segments(ns2, ours):
    end = DURATION_S - 0.1
    ns2 = [s for s in ns2 if s[0] < end]
    ours = [s for s in ours if s[0] < end]
    assert [seq for _, seq in ours] == [seq for _, seq in ns2]
    worst = max(abs(a[0] - b[0]) for a, b in zip(ns2, ours))
    assert worst <= TIME_TOLERANCE_S, worst


@pytest.mark.parametrize("variant, recovery, drops, timeouts", CASES)
def test_tcpsink_segments_match_ns2(variant, recovery, drops, timeouts):
    ns2, ns2_timeouts = ns2_segments(variant, "TCPSink", drops)
    # The case is what it says in ns-2 itself: the drops cost that many timeouts there.
    assert ns2_timeouts == timeouts
    ours, our_timeouts = smallpipe_segments(recovery, False, drops)
    assert_same_segments(ns2, ours)
    assert our_timeouts == ns2_timeouts


SACK1_CASES = [
    # (1-based data packets lost, timeouts ns-2's Sack1 must take)
    ([20], 0),
    ([10, 30, 31, 50], 0),
    ([20, 22, 25], 0),  # three holes in a window: Sack1 resends each once, no timeout
    ([60, 61, 62, 63, 64, 65], 0),
    ([20, 40], 1),  # the 40th data packet is 20's fast retransmission
    ([20, 40, 41], 2),  # ... and the 41st the timeout's: a repeated timeout
    (list(range(30, 46)), 1),  # sixteen in a row: pipe_ runs dry, then go-back-N
]


@pytest.mark.parametrize("drops, timeouts", SACK1_CASES)
def test_sack1_segments_match_ns2(drops, timeouts):
    # `recovery = "sack"` under the ns2 stack is Agent/TCP/Sack1 with a TCPSink/Sack1.
    ns2, ns2_timeouts = ns2_segments("Sack1", "TCPSink/Sack1", drops)
    assert ns2_timeouts == timeouts
    ours, our_timeouts = smallpipe_segments("sack", False, drops)
    assert_same_segments(ns2, ours)
    assert our_timeouts == ns2_timeouts


@pytest.mark.parametrize("drops, timeouts", [([], 0), ([20], 0), ([20, 22, 25], 1), ([60, 61, 62, 63, 64, 65], 1)])
def test_delack_segments_match_ns2(drops, timeouts):
    ns2, ns2_timeouts = ns2_segments("Newreno", "TCPSink/DelAck", drops)
    assert ns2_timeouts == timeouts
    ours, our_timeouts = smallpipe_segments("newreno", True, drops)
    assert_same_segments(ns2, ours)
    assert our_timeouts == ns2_timeouts
