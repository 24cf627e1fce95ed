"""The papers on today's TCP (docs/reproductions/today.md): short runs of `today-mixed`,
`today-taq`, `today-hangs`, `today-fig12`, `today-thesis`, `today-padding` and
`today-isolation` checked against invariants and independent expectations, not pasted numbers."""

from __future__ import annotations

import pytest
from smallpipe.experiments import (
    today_fig12,
    today_hangs,
    today_isolation,
    today_mixed,
    today_padding,
    today_taq,
    today_thesis,
)
from smallpipe.presets import TAQ_PACKET_SIZE_BYTES, taq_dumbbell
from smallpipe.result import Result, keeping_results
from smallpipe.scenario import stack_defaults

# A full 500-byte segment carries 500 - 40 (IP + TCP) - 12 (timestamps, on under Linux) bytes,
# so the 1 Mbit/s bottleneck delivers at most this much payload.
LINUX_PAYLOAD_BPS = today_mixed.RATE_BPS * (TAQ_PACKET_SIZE_BYTES - 52) / TAQ_PACKET_SIZE_BYTES
LINUX_INIT_CWND = 10  # Linux TCP_INIT_CWND (RFC 6928)

COLUMNS = ["mix", "discipline", "n_flows", "seed", "tcp", "flows", "goodput_bps", "share", "goodput_per_flow_bps",
           "timeouts_per_flow", "retransmit_rate", "short_term_jain", "long_term_jain", "utilization", "loss_rate",
           "queue_delay_p50_ms"]


@pytest.fixture(scope="module")
def mixed():
    return today_mixed.run(mixes=("cubic+bbr",), disciplines=("droptail", "fq"), flows=(10,), duration_s=100.0,
                           seeds=(2,))


def test_mixed_table_schema_and_groups(mixed):
    assert mixed.columns == COLUMNS
    for kind in ("droptail", "fq"):
        rows = {r["tcp"]: r for r in mixed.filter(discipline=kind).iter_rows(named=True)}
        assert list(rows) == ["cubic", "bbr", "all"]
        assert rows["cubic"]["flows"] == rows["bbr"]["flows"] == 5
        # The groups partition the flows: their bytes make the whole.
        assert rows["cubic"]["share"] + rows["bbr"]["share"] == pytest.approx(1.0)
        assert rows["cubic"]["goodput_bps"] + rows["bbr"]["goodput_bps"] == pytest.approx(rows["all"]["goodput_bps"])
        for name in ("cubic", "bbr", "all"):
            assert 0 < rows[name]["short_term_jain"] <= 1


def test_mixed_goodput_fills_but_never_exceeds_the_link(mixed):
    for total in mixed.filter(tcp="all")["goodput_bps"]:
        assert 0.9 * LINUX_PAYLOAD_BPS <= total <= LINUX_PAYLOAD_BPS
    # BBR is present and active: its half moves data under either discipline.
    assert all(g > 0.05 * LINUX_PAYLOAD_BPS for g in mixed.filter(tcp="bbr")["goodput_bps"])


def test_per_flow_fair_queuing_splits_the_link_in_halves(mixed):
    # FQ serves every backlogged flow in turn: five flows of each kind get half the bytes each,
    # whatever their congestion control.
    for share in mixed.filter(discipline="fq", tcp="bbr")["share"]:
        assert share == pytest.approx(0.5, abs=0.05)


def test_mixed_scenario_gives_each_group_its_congestion_control():
    scenario = today_mixed.mixed_scenario(mix="cubic+bbr", flows=7, discipline="cake", duration_s=10.0, seed=1)
    assert scenario["tcp"]["stack"] == "linux"
    assert scenario["tcp"]["initial_window_pkts"] == LINUX_INIT_CWND
    assert [(g["count"], g["tcp"]["congestion"]) for g in scenario["flows"]] == [(3, "cubic"), (4, "bbr")]
    assert scenario["link"]["queue"]["kind"] == "cake"
    paper = today_mixed.mixed_scenario(mix="paper", flows=7, discipline="red", duration_s=10.0, seed=1)
    assert paper == taq_dumbbell(flows=7, rate_bps=today_mixed.RATE_BPS, duration_s=10.0, seed=1, queue={"kind": "red"})


def test_mixed_scenario_errors_name_the_field():
    with pytest.raises(ValueError, match=r"^mix: 'vegas' is not a mix; expected one of paper, cubic"):
        today_mixed.mixed_scenario(mix="vegas", flows=10, discipline="fq", duration_s=1.0, seed=1)
    with pytest.raises(ValueError, match=r"^flows: 1 is too few; expected at least 2"):
        today_mixed.mixed_scenario(mix="cubic", flows=1, discipline="fq", duration_s=1.0, seed=1)


def test_today_taq_runs_each_tcp_it_names():
    seen: list[Result] = []
    with keeping_results(seen.append):
        table = today_taq.run(tcps=("paper", "linux-bbr"), disciplines=("droptail",), fair_shares_bps=(100_000,),
                              duration_s=30.0)
    assert table["tcp"].to_list() == ["paper", "linux-bbr"]
    assert table.columns[:3] == ["tcp", "discipline", "rate_bps"]
    paper, bbr = (r.scenario["tcp"] for r in seen)
    assert paper == taq_dumbbell(flows=10, rate_bps=1_000_000, duration_s=30.0)["tcp"]
    # The stack decides its knobs: the preset's ns-2 initial window of 2 gives way to Linux's.
    assert (bbr["stack"], bbr["congestion"], bbr["initial_window_pkts"]) == ("linux", "bbr", LINUX_INIT_CWND)
    assert all(u > 0.9 for u in table["utilization"])
    with pytest.raises(ValueError, match=r"^tcps: 'vegas' is not a TCP of this figure"):
        today_taq.run(tcps=("vegas",))


def test_today_padding_gives_linux_its_rto_floor_and_loss_probe():
    seen: list[Result] = []
    with keeping_results(seen.append):
        table = today_padding.run(tcps=("paper", "linux-cubic"), bulk_flows=(2,), queues=("red",), duration_s=25.0)
    assert table.columns[:3] == ["tcp", "queue", "approach"]
    assert table.height == 2 * 4  # two TCPs, Figure 8's four approaches
    # The knobs in force: the stack's defaults under the scenario's own values.
    by_tcp = {stack: stack_defaults(stack) | r.scenario["tcp"]
              for r in seen for stack in [r.scenario["tcp"].get("stack", "rfc")]}
    assert by_tcp["rfc"]["min_rto_ms"] == 1000.0 and not by_tcp["rfc"].get("tail_loss_probe", False)  # the paper's RTO floor
    assert by_tcp["linux"]["min_rto_ms"] == 200.0 and by_tcp["linux"]["tail_loss_probe"]  # Linux TCP_RTO_MIN, TLP
    probes = {r.scenario["tcp"].get("stack", "rfc"): 0 for r in seen}
    for r in seen:
        probes[r.scenario["tcp"].get("stack", "rfc")] += int(r.flows["loss_probes"].sum())
    assert probes["rfc"] == 0  # no TLP in the RFC stack
    assert all(r.scenario["tcp"].get("delayed_ack") is False for r in seen)  # diversity's receiver needs them off


def test_today_thesis_runs_the_linux_protocols_with_iw10():
    seen: list[Result] = []
    tiny = {"rate_bps": 10_000_000, "duration_s": 2.0, "warmup_s": 0.2, "drain_s": 1.0}
    with keeping_results(seen.append):
        table = today_thesis.run(tcps=("paper", "linux-bbr"), setup=tiny)
    assert set(table.filter(tcp="paper")["protocol"]) == {"tcp", "iw10", "red", "fq", "rcp"}
    assert set(table.filter(tcp="linux-bbr")["protocol"]) == set(today_thesis.LINUX_PROTOCOLS)
    linux = [r.scenario["tcp"] for r in seen if r.scenario["tcp"].get("stack", "rfc") == "linux"]
    assert len(linux) == 3 and all(t["initial_window_pkts"] == LINUX_INIT_CWND and t["congestion"] == "bbr"
                                   for t in linux)
    known = table.drop_nulls("p99_s")
    assert (known["median_s"] <= known["p99_s"]).all()


def test_today_hangs_shares_are_shares_of_users_per_tcp():
    seen: list[Result] = []
    with keeping_results(seen.append):
        table = today_hangs.run(tcps=("paper", "linux-cubic"), disciplines=("droptail",), users_list=(20,),
                                duration_s=40.0)
    assert table["tcp"].to_list() == ["paper", "linux-cubic"]
    # A hang over 60 s is also one over 20 s: the longer threshold's share is never larger.
    assert all(0 <= a <= b <= 1 for a, b in zip(table["share_hang_over_60s"], table["share_hang_over_20s"],
                                                strict=True))
    stacks = [r.scenario["tcp"].get("stack", "rfc") for r in seen]
    assert stacks == ["rfc", "linux"]
    assert seen[1].scenario["tcp"]["initial_window_pkts"] == LINUX_INIT_CWND


def test_today_fig12_gains_are_droptails_time_over_each_queues():
    runs, buckets = today_fig12.run(tcps=("linux-cubic",), queues=("droptail", "taq+ac"), log_s=100.0,
                                    duration_s=200.0)
    assert set(runs["tcp"]) == set(buckets["tcp"]) == {"linux-cubic"}
    # DropTail over itself is 1 by definition; the other rows are the same ratio of two buckets.
    assert runs.filter(queue="droptail")["short_median_gain"].to_list() == [1.0, 1.0]
    for scale in ("paper", "stress"):
        short = buckets.filter(scale=scale, size_lo_bytes=0)
        ratio = short.filter(queue="droptail")["median_s"][0] / short.filter(queue="taq+ac")["median_s"][0]
        assert runs.filter(scale=scale, queue="taq+ac")["short_median_gain"][0] == pytest.approx(ratio)


def test_today_isolation_runs_both_figures_sessions_per_tcp():
    seen: list[Result] = []
    with keeping_results(seen.append):
        table = today_isolation.run(tcps=("linux-cubic",), ks=(1,), duration_s=20.0)
    assert table["figure"].unique().sort().to_list() == [3, 4]
    # Each class (long, short) has the figure's sessions: 30 each in Figure 3, 60 in Figure 4.
    sessions = {tuple(g["count"] for g in r.scenario["flows"] if g["app"] == "session") for r in seen}
    assert sessions == {(30, 30), (60, 60)}
    assert all(r.scenario["tcp"]["stack"] == "linux" for r in seen)
    assert (table["utilization"] <= 1.0).all() and (table["loss_rate"] >= 0).all()
