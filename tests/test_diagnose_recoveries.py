"""benches/validation/diagnose.py linux-recoveries: its episode finder on a sender's events
scripted by hand (one fast recovery, then one recovery by an RTO)."""

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "diagnose", Path(__file__).resolve().parents[1] / "benches" / "validation" / "diagnose.py")
diagnose = importlib.util.module_from_spec(spec)
spec.loader.exec_module(diagnose)

MSS = 448
ISN = 1000


def tx(t, seg):
    return ("tx", t, ISN + 1 + seg * MSS, MSS, False)


def ack(t, seg):
    """Everything below segment `seg` acknowledged."""
    return ("ack", t, ISN + 1 + seg * MSS, [])


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
