"""benches/validation/diagnose.py's readers of a sender's events, on events scripted by hand:
linux-late's classifier of late sends against a sender whose send times follow Linux's
pacing rule, built here from the rule itself (tcp_update_skb_after_send: each skb moves the
next departure on by its length at the pacing rate, 120% of cwnd per SRTT, less up to half
of that when the sender was late), and linux-recoveries' episode finder (one fast recovery,
then one recovery by an RTO)."""

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
    """Everything below segment `seg` acknowledged."""
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


def test_a_fast_recovery_and_a_recovery_by_rto_are_found_with_their_flight():
    events = [tx(0.01 * i, i) for i in range(8)]
    events += [ack(0.3, 2), tx(0.3, 8), tx(0.3, 9)]
    events += [ack(0.35, 2), ack(0.36, 2)]  # duplicates: segment 2 is lost
    events += [tx(0.4, 2)]  # fast retransmit: 10 sent, 2 acknowledged, so 8 in flight
    events += [tx(0.45, 10)]  # new data during recovery
    events += [ack(0.7, 10)]  # the recovery point (10) reached: 11 sent, so 1 in flight
    events += [tx(0.8, 11)]
    events += [tx(2.5, 10)]  # 1.8 s without progress: an RTO resends the head, 2 in flight
    events += [ack(2.8, 12)]
    episodes, new = diagnose.recovery_episodes(events, 0.0)
    assert new == 12
    assert [(e["kind"], e["entry_flight"], e["exit_flight"], e["resent"], e["new"]) for e in episodes] == [
        ("fast", 8.0, 1.0, 1, 1), ("RTO", 2.0, 0.0, 1, 0)]
    assert [round(e["end_s"] - e["start_s"], 3) for e in episodes] == [0.3, 0.3]
    # The warm-up leaves out the recovery that began before it.
    assert [e["kind"] for e in diagnose.recovery_episodes(events, 1.0)[0]] == ["RTO"]


def test_drop_independence_counts_drops_after_drops_and_spurious_resends():
    def sent(t, seg, dropped):
        return ("tx", t, ISN + 1 + seg * MSS, MSS, dropped)

    # Segments 0-4, 1 and 2 dropped back to back; 1 resent (lost before: not spurious),
    # 3 resent although it got through (spurious); segment 0 went before the warm-up.
    events = [sent(0.5, 0, False), sent(1.0, 1, True), sent(1.0, 2, True), sent(1.0, 3, False),
              sent(1.0, 4, False), sent(1.2, 1, False), sent(1.3, 3, False)]
    n, p_drop, p_after_drop, spurious = diagnose.drop_independence(events, 1.0)
    assert n == 6
    assert p_drop == 2 / 6
    assert p_after_drop == 1 / 2  # after 1 (dropped) came 2 (dropped); after 2 came 3 (not)
    assert spurious == 1


def test_box_transits_tell_copies_of_a_segment_apart_by_ip_id():
    # One flow: segments 0 and 1 sent, 1 dropped in the box; 1 resent (a new IP ID) and
    # delivered. Matching on sequence numbers alone would count the original as delivered.
    # The packets carry the fields box_transits reads, as dpkt's IP and TCP objects name them.
    from types import SimpleNamespace

    def seg(seq, ip_id, t):
        tcp = SimpleNamespace(sport=80, dport=5000, seq=ISN + 1 + seq * MSS, off=5)
        return t, SimpleNamespace(src=b"\xc6\x13\x00\x01", dst=b"\xc6\x12\x00\x01", id=ip_id, hl=5,
                                  len=40 + MSS, data=tcp)

    b_in = [seg(0, 7, 1.0), seg(1, 8, 1.1), seg(1, 9, 2.0)]
    a_out = [seg(0, 7, 1.2), seg(1, 9, 2.3)]
    transits = diagnose.box_transits({"b_in": b_in, "a_out": a_out})
    assert [(t_in, t_out, resend) for _, t_in, t_out, resend in transits] == [
        (1.0, 1.2, False), (1.1, None, False), (2.0, 2.3, True)]


def test_matrix_set_compares_both_runs_with_the_recorded_linux_runs_and_writes_them(tmp_path, capsys):
    # Reno's Bernoulli section, one seed: smallpipe without and with a knob, each against the
    # Linux runs recorded in docs/validation. The Linux column is read from the runs file
    # here, independently of the matrix's code; the simulated loss rate is held to the box's
    # drop probability p, which sets it whatever the TCP does (binomial noise over thousands
    # of segments is well inside ±20%).
    import csv
    import json
    from argparse import Namespace

    runs = Path(diagnose.HERE.parents[1] / "docs" / "validation" / "linux_matrix_reno_runs.jsonl")
    linux = {r["name"]: r for r in map(json.loads, runs.read_text().splitlines()) if r["simulator"] == "linux"}
    out = tmp_path / "rows.csv"
    args = Namespace(only="bernoulli", seeds=1, many_s=60.0, bernoulli_s=120.0, web_s=120.0, fig11_s=200.0,
                     congestion=["reno"], set=["tcp.sack_rearms_rto=true"], csv=str(out))
    diagnose.matrix_set(args)
    rows = list(csv.DictReader(out.open()))
    without = [r for r in rows if r["overrides"] == ""]
    with_knob = [r for r in rows if r["overrides"] == "tcp.sack_rearms_rto=true"]
    assert len(without) == len(with_knob) == len(rows) / 2 > 0
    assert [r["metric"] for r in without] == [r["metric"] for r in with_knob]
    assert {"smallpipe_version", "smallpipe_commit"} <= set(rows[0])
    for r in rows:
        if r["metric"].endswith(": loss rate"):
            p = float(r["metric"].split()[2].rstrip(":"))
            assert float(r["linux"]) == pytest.approx(linux[f"bernoulli p={p} seed=1"]["loss_rate"])
            assert float(r["smallpipe"]) == pytest.approx(p, rel=0.2)
    printed = capsys.readouterr().out
    for label, group in (("without", without), ("with", with_knob)):
        told = [r for r in group if r["verdict"] in ("pass", "FAIL")]
        within = sum(r["verdict"] == "pass" for r in told)
        assert f"reno {label}: {within} of {len(told)} rows within" in printed
