"""benches/validation/diagnose.py linux-late: its classifier of late sends against a sender
whose send times follow Linux's pacing rule, built here from the rule itself
(tcp_update_skb_after_send: each skb moves the next departure on by its length at the
pacing rate, 120% of cwnd per SRTT, less up to half of that when the sender was late)."""

import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "diagnose", Path(__file__).resolve().parents[1] / "benches" / "validation" / "diagnose.py")
diagnose = importlib.util.module_from_spec(spec)
spec.loader.exec_module(diagnose)

MSS = 448
ISN = 1000
SRTT_S = 0.45


def tx(t, seg):
    return ("tx", t, ISN + 1 + seg * MSS, MSS, False)


def ack(t, seg):
    return ("ack", t, ISN + 1 + seg * MSS, [])


def test_paced_late_sends_are_half_then_one_pacing_interval():
    # A paced sender fills its window, so cwnd is what is in flight after each late send:
    # 4 after segment 4 (segments 1-4), 5 after segment 5 (its window grew by one).
    def interval_s(cwnd):
        return SRTT_S / (1.2 * cwnd)  # one segment at 1.2 * cwnd per SRTT

    t4 = 10.0 + interval_s(4) / 2  # the sender was idle when segment 3 went: half an interval
    t5 = t4 + interval_s(5)  # segment 4 went on time: a whole one
    events = [tx(0.0, 0), tx(0.0, 1), tx(0.0, 2),  # before the warm-up ends
              ack(10.0, 1), tx(10.0, 3),  # segment 3 goes on the ACK of segment 0
              tx(t4, 4), tx(t5, 5)]
    rows = diagnose.late_releases(events, 9.0, lambda t: SRTT_S)
    assert [(r[0], r[1]) for r in rows] == [("no ACK of new data", "on an ACK"), ("no ACK of new data", "later")]
    assert rows[0][2] == pytest.approx(0.5)
    assert rows[1][2] == pytest.approx(1.0)


def test_ack_of_new_data_since_the_previous_send_is_reported():
    events = [tx(0.0, 0), tx(0.0, 1), ack(10.0, 1), tx(10.0, 2), ack(10.01, 2), tx(10.06, 3)]
    rows = diagnose.late_releases(events, 9.0, lambda t: SRTT_S)
    assert [(r[0], r[1]) for r in rows] == [("an ACK of new data", "on an ACK")]


def test_first_held_counts_the_segments_before_the_first_wait():
    # 10 segments on ACKs (two per ACK), then an ACK after which the 11th waits 20 ms
    events = []
    for i in range(5):
        events += [ack(0.1 * i, i), tx(0.1 * i, 2 * i), tx(0.1 * i, 2 * i + 1)]
    events += [ack(0.5, 5), tx(0.52, 10)]
    assert diagnose.first_held(events) == 10
    # a retransmission first: no answer
    assert diagnose.first_held([tx(0.0, 0), tx(0.0, 1), ack(0.2, 0), tx(1.2, 0)]) is None
