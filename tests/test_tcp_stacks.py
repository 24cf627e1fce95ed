"""Named TCP stacks (issue 36, docs/tcp.md "Named stacks"): `tcp.stack` sets the defaults of
the knobs that differ between the RFCs, ns-3 and Linux. A stack must give exactly the run
of the same knobs set one by one (the lists below are docs/tcp.md's table, written out
here, not read from the code), a knob set explicitly must still win, and `smallpipe run`
must say which stack ran and what departs from it."""

from pathlib import Path

import polars as pl
import pytest
import smallpipe
from smallpipe.cli import app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent

# docs/tcp.md's stack table, knob by knob.
LINUX = {
    "tcp.recovery": "sack", "tcp.congestion": "cubic", "tcp.ssthresh_from": "cwnd",
    "tcp.initial_window_pkts": 10, "tcp.min_rto_ms": 200.0, "tcp.rto_rule": "linux",
    "tcp.rtt_samples": "every_ack", "tcp.loss_detection": "rack", "tcp.recovery_pacing": "prr",
    "tcp.recovery_rto": "linux", "tcp.ack_rule": "linux", "tcp.pacing": "linux", "tcp.tail_loss_probe": True,
    "tcp.cubic_hystart": True, "tcp.rto_undo": True, "tcp.timestamps": True,
    "tcp.dsack": True, "tcp.recovery_undo": True, "tcp.frto": True, "tcp.rack_dsack_reo_wnd": True,
    "tcp.syn_timeout_restart": "linux", "tcp.tlp_rto_from_head": True, "tcp.sack_rearms_rto": True,
}
LINUX_RENO = {**LINUX, "tcp.congestion": "reno", "tcp.cwnd_growth": "linux", "tcp.cubic_hystart": False}
NS3 = {
    "tcp.recovery": "sack", "tcp.dupack_rule": "ns3", "tcp.recovery_rto": "first_partial",
    "tcp.disorder_ack": "ns3", "tcp.recovery_partial_ack": "ns3", "tcp.recovery_pipe": "ns3",
    "tcp.fast_retransmit_rto": "keep", "tcp.ack_first_data": True, "tcp.overhead_max_ms": 0.0,
    "tcp.ssthresh_from": "bytes_in_flight", "tcp.recovery_exit": "ns3",
}
# ns-2 2.35's ns-default.tcl (docs/tcp.md): window_ 20 packets of examples/dumbbell.toml's
# 500-byte packets, 460 bytes of payload each.
NS2 = {
    "tcp.recovery": "newreno", "tcp.initial_window_pkts": 2, "tcp.ssthresh_from": "ns2", "tcp.fast_recovery": "ns2",
    "tcp.cwnd_growth": "ns2", "tcp.min_rto_ms": 200.0, "tcp.initial_rto_ms": 3000.0, "tcp.clock_granularity_ms": 10.0,
    "tcp.rto_rule": "ns2", "tcp.ack_rule": "ns2", "tcp.timestamps": False, "tcp.overhead_max_ms": 0.0, "tcp.delayed_ack": False,
    "tcp.delayed_ack_ms": 100.0, "tcp.rwnd_bytes": 20 * 460,
}
NS2_SACK = {**NS2, "tcp.recovery": "sack"}  # fast_recovery = "ns2" with SACK: Agent/TCP/Sack1
CASES = {
    "ns2": ({"tcp.stack": "ns2"}, NS2),
    "ns2+sack": ({"tcp.stack": "ns2", "tcp.recovery": "sack"}, NS2_SACK),
    "linux": ({"tcp.stack": "linux"}, LINUX),
    "linux+reno": ({"tcp.stack": "linux", "tcp.congestion": "reno"}, LINUX_RENO),
    "ns3": ({"tcp.stack": "ns3"}, NS3),
}

# A short, lossy dumbbell: 20 flows over 1 Mbit/s, so recovery, timeouts and every rule run.
SHORT = {"duration_s": 40.0, "slice_s": 10.0, "flows.0.count": 20, "link.queue.limit_pkts": 15}


def _base() -> smallpipe.Scenario:
    return smallpipe.Scenario.from_toml(ROOT / "examples" / "dumbbell.toml").with_overrides(SHORT)


@pytest.mark.parametrize("case", CASES)
def test_a_stack_runs_as_its_knobs_set_one_by_one(case):
    stack_overrides, knobs = CASES[case]
    by_stack = _base().with_overrides(stack_overrides)
    by_hand = _base().with_overrides(knobs)
    tcp_stack, tcp_hand = by_stack.to_dict()["tcp"], by_hand.to_dict()["tcp"]
    assert tcp_stack.pop("stack") == stack_overrides["tcp.stack"]
    assert tcp_stack == tcp_hand
    a, b = smallpipe.simulate(by_stack), smallpipe.simulate(by_hand)
    assert a.flows.height == 20 and a.flows.get_column("retransmits").sum() > 0, "the run must exercise recovery"
    assert a.flows.equals(b.flows) and a.links.equals(b.links) and a.slices.equals(b.slices)


def test_the_stacks_differ_from_the_rfc_default():
    runs = {name: smallpipe.simulate(_base().with_overrides(CASES[name][0])) for name in ("linux", "ns3")}
    rfc = smallpipe.simulate(_base())
    for name, run in runs.items():
        assert not run.flows.select("retransmits", "timeouts").equals(rfc.flows.select("retransmits", "timeouts")), name


def test_switching_the_stack_takes_its_rules_unless_the_same_overrides_set_a_knob():
    chosen = _base().with_overrides({"tcp.min_rto_ms": 300.0, "tcp.clock_granularity_ms": 10.0})
    # The dumbbell file chose NewReno and a 1 s minimum RTO for the RFC TCP; Linux's rules
    # replace every knob a stack decides, the knobs no stack decides stay.
    tcp = chosen.with_overrides({"tcp.stack": "linux"}).to_dict()["tcp"]
    assert (tcp["recovery"], tcp["min_rto_ms"], tcp["initial_window_pkts"], tcp["congestion"]) == ("sack", 200.0, 10, "cubic")
    assert (tcp["clock_granularity_ms"], tcp["packet_size_bytes"], tcp["delayed_ack"]) == (10.0, 500, False)
    kept = chosen.with_overrides({"tcp.stack": "linux", "tcp.min_rto_ms": 300.0}).to_dict()["tcp"]
    assert kept["min_rto_ms"] == 300.0
    # In a file (or one dict), a knob written beside the stack wins over it.
    explicit = smallpipe.Scenario.from_dict({"tcp": {"stack": "linux", "min_rto_ms": 300.0}, "flows": [{"app": "bulk"}]})
    assert explicit.to_dict()["tcp"]["min_rto_ms"] == 300.0
    # Back to rfc: every stack knob returns to its own default.
    back = chosen.with_overrides({"tcp.stack": "linux"}).with_overrides({"tcp.stack": "rfc"}).to_dict()["tcp"]
    assert (back["recovery"], back["min_rto_ms"], back["congestion"]) == ("sack", 1000.0, "reno")
    assert "stack" not in back and back["clock_granularity_ms"] == 10.0


def test_a_flow_group_may_run_another_stack():
    sc = _base().with_overrides({"flows.0.count": 10, "flows.0.tcp": {"stack": "linux"}})
    mixed = sc.to_dict()
    mixed["flows"].append({**mixed["flows"][0], "tcp": None})
    run = smallpipe.simulate(smallpipe.Scenario.from_dict(mixed))
    assert run.flows.height == 20
    # The Linux group (IW 10, min RTO 200 ms) and the RFC group run side by side.
    groups = run.flows.group_by("group").agg(pl.col("timeouts").sum()).sort("group")
    assert groups.height == 2


def test_smallpipe_run_prints_the_stack_and_the_knobs_off_it(tmp_path):
    out = CliRunner().invoke(app, [
        "run", str(ROOT / "examples" / "dumbbell.toml"), "--set", "tcp.stack=linux", "--set", "tcp.min_rto_ms=300",
        "--set", "duration_s=5", "--set", "slice_s=1", "--set", "flows.0.count=5", "--out", str(tmp_path / "run"),
    ])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())  # the summary table wraps long cells
    assert "stack linux: cubic/sack" in text
    departures = text.split("TCP knobs off the stack:")[1].split("results written")[0]
    # The file's own choices (500 B packets, no delayed ACKs) and the override depart.
    assert "min_rto_ms = 300" in departures and "delayed_ack = false" in departures
    assert "packet_size_bytes = 500" in departures
    assert "congestion" not in departures and "recovery" not in departures
