"""The Linux matrix harness (benches/validation/matrix.py, issue 38 item 3), without root: the
scenario each congestion control runs on both sides, the run counts, the tolerance
classification against hand-made numbers, the 20 s Jain index of hand-made slices, the
rendering, and the parsing of ``nstat -a`` output (the testbed's tail-loss-probe counters)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

from smallpipe.testbed import linux_settings
from smallpipe.testbed.netns import LOSS_PROBE_COUNTERS, NetnsError, parse_nstat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches" / "validation"))
import linux_side
import matrix
import render
import run
import sp_side
import specs

# Linux's defaults the stack switch must bring to both sides (include/net/tcp.h, sysctl docs).
TCP_INIT_CWND = 10
TCP_RTO_MIN_MS = 200
TCP_EARLY_RETRANS_TLP = "3"  # net.ipv4.tcp_early_retrans: 3 = TLP on (Linux's default)
TCP_RECOVERY_RACK = "1"  # net.ipv4.tcp_recovery: RACK loss detection


def _one_of_each(seed=1):
    return [specs.many(10, seed, duration_s=20.0), specs.bernoulli(0.05, seed, 20.0), specs.web(seed, duration_s=20.0),
            specs.fig11("taq", 50_000, seed, 40.0)]


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_both_sides_run_one_scenario_under_linuxs_stack_with_the_congestion_control(cc):
    for spec in _one_of_each():
        end = spec["warmup_s"] + spec["duration_s"]
        ours = sp_side.scenario(spec, end)[0].with_overrides(matrix.smallpipe_overrides(cc))
        theirs = linux_side.scenario(spec, end)[0].with_overrides(matrix.overrides(cc))
        # One knob apart: the testbed's senders have no simulated send delay (it refuses the
        # knob), and the simulated ones send at once too, not up to a packet time late as
        # the Linux stack's default would have them.
        assert (ours["tcp"]["overhead_max_ms"], theirs["tcp"]["overhead_max_ms"]) == (0.0, None)
        mine, other = ours.to_dict(), theirs.to_dict()
        mine["tcp"].pop("overhead_max_ms")
        other["tcp"].pop("overhead_max_ms")
        assert mine == other, spec["name"]
        tcp = ours["tcp"]
        assert (tcp["stack"], tcp["congestion"]) == ("linux", cc)
        assert tcp["initial_window_pkts"] == TCP_INIT_CWND and tcp["min_rto_ms"] == TCP_RTO_MIN_MS
        assert tcp["tail_loss_probe"] and tcp["loss_detection"] == "rack"
        # The testbed's Reno and CUBIC senders do not pace; BBR does on both sides.
        assert tcp["pacing"] == ("linux" if cc == "bbr" else "none")
        settings = linux_settings(theirs)  # refuses what Linux cannot honour
        assert set(settings.congestion_control) == {cc}
        assert settings.sysctls["net.ipv4.tcp_early_retrans"] == TCP_EARLY_RETRANS_TLP
        assert settings.sysctls["net.ipv4.tcp_recovery"] == TCP_RECOVERY_RACK
        # The namespaces' default stays reno: BBR's init at the handshake would pace the others.
        assert settings.sysctls["net.ipv4.tcp_congestion_control"] == "reno"


def test_fig11_points_are_taq_testbed_fig11s_scenarios():
    from smallpipe.experiments.taq_testbed_fig11 import point_scenario

    for d in specs.FIG11_DISCIPLINES:
        for share in specs.FIG11_FAIR_SHARES_BPS:
            spec = specs.fig11(d, share, 2, 60.0)
            built = sp_side.scenario(spec, 60.0)[0]
            expected = point_scenario(discipline=d, rate_bps=1_000_000, fair_share_bps=share, duration_s=60.0, seed=2)
            assert built.to_dict() == expected.to_dict()
            # N = rate / fair share: 100 flows at 10 kbit/s, 20 at 50 kbit/s.
            assert sum(g["count"] for g in built["flows"]) == 1_000_000 // share


def test_build_counts_and_testbed_time_per_congestion_control():
    spec_list = matrix.build(matrix.SECTIONS, 3, 60.0, 120.0, 120.0, 200.0)
    # Per seed: N = 10, 50, 100; four loss rates; one web pool; 4 disciplines x 2 fair shares.
    assert len(spec_list) == 3 * (3 + 4 + 1 + 8)
    # many 9 x (10 + 60), Bernoulli 12 x (10 + 120), web 3 x (10 + 120), fig11 24 x 200.
    assert matrix.wall_estimate_s(spec_list) == 9 * 70 + 12 * 130 + 3 * 130 + 24 * 200
    assert len({s["name"] for s in spec_list}) == len(spec_list)
    assert [s["name"] for s in matrix.build(("fig11",), 1, 60.0, 120.0, 120.0, 60.0)][:2] == [
        "fig11 taq share=10k seed=1", "fig11 taq share=50k seed=1"]


def test_unknown_congestion_control_is_refused_by_name():
    with pytest.raises(ValueError, match="congestion: 'vegas' is not one of reno, cubic, bbr"):
        matrix.overrides("vegas")


def test_command_line_keeps_the_linux_column_and_refuses_mixed_flags():
    with pytest.raises(SystemExit):
        run.main(["--congestion", "cubic"])  # the matrix needs --linux
    with pytest.raises(SystemExit):
        run.main(["--linux", "--only", "fig11"])  # fig11 is a matrix section
    with pytest.raises(SystemExit):
        run.main(["--linux", "--congestion", "bbr", "--only", "scripted"])


@pytest.mark.parametrize(("kind", "smallpipe", "linux", "verdict"), [
    ("loss_rate", 0.10, 0.12, "pass"),  # +20%: on the bound
    ("loss_rate", 0.10, 0.0799, "FAIL"),  # -20.1%
    ("loss_rate", 0.0, 0.0, "pass"),
    ("loss_rate", 0.0, 0.01, "FAIL"),
    ("queue_pkts", 40.0, 43.0, "pass"),  # 3 packets
    ("queue_pkts", 40.0, 36.9, "FAIL"),
    ("jain", 0.90, 0.85, "pass"),
    ("jain", 0.90, 0.959, "FAIL"),
    ("timeouts", 4.0, 5.0, "pass"),  # +25%
    ("timeouts", 4.0, 2.99, "FAIL"),
    ("fct_median", 2.0, 2.4, "pass"),
    ("fct_median", 2.0, float("inf"), "FAIL"),  # an unfinished object at the median
    ("jain", None, 0.9, "FAIL"),  # no slice to measure
    ("tlp", 1.0, 7.0, "report"),
    ("goodput", 100.0, 10.0, "report"),
])
def test_classification_against_the_issues_tolerances(kind, smallpipe, linux, verdict):
    assert matrix.classify(kind, smallpipe, linux) == verdict


def _result(loss_rate, queue, timeouts, probes, jain, rx_bytes):
    return {"loss_rate": loss_rate, "mean_queue_pkts": queue, "timeouts": timeouts, "loss_probes": probes,
            "connections": len(timeouts), "jain_20s": jain, "rx_bytes": rx_bytes, "objects": []}


def test_many_rows_average_the_seeds_and_count_probes_per_flow():
    spec_list = [specs.many(10, s, duration_s=100.0) for s in (1, 2)]
    results = {
        spec_list[0]["name"]: (_result(0.10, 40.0, [1] * 10, 20, 0.90, [12_500] * 10),
                               _result(0.13, 44.0, [2] * 10, 50, 0.80, [12_500] * 10)),
        spec_list[1]["name"]: (_result(0.20, 30.0, [3] * 10, 40, 0.94, [12_500] * 10),
                               _result(0.22, 30.0, [3] * 10, 70, 0.96, [25_000] * 10)),
    }
    rows = {r["metric"]: r for r in matrix.compare("cubic", results, spec_list)}
    loss = rows["N = 10: bottleneck loss rate"]
    assert (loss["smallpipe"], loss["linux"]) == pytest.approx((0.15, 0.175))  # +16.7%
    assert loss["verdict"] == "pass" and loss["congestion"] == "cubic"
    queue = rows["N = 10: mean queue"]
    assert (queue["smallpipe"], queue["linux"], queue["verdict"]) == (35.0, 37.0, "pass")
    timeouts = rows["N = 10: timeouts per flow"]
    assert (timeouts["smallpipe"], timeouts["linux"], timeouts["verdict"]) == (2.0, 2.5, "pass")  # +25%
    probes = rows["N = 10: tail-loss probes per flow (whole run)"]
    assert (probes["smallpipe"], probes["linux"], probes["verdict"]) == (3.0, 6.0, "report")
    jain = rows["N = 10: 20 s Jain index"]
    assert (jain["smallpipe"], jain["linux"]) == pytest.approx((0.92, 0.88))
    assert jain["verdict"] == "pass"
    # 10 x 12 500 bytes in 100 s = 10 kbit/s; Linux's second seed twice that.
    goodput = rows["N = 10: goodput"]
    assert (goodput["smallpipe"], goodput["linux"]) == pytest.approx((10.0, 15.0))


def _slices(bytes_per_flow_per_second):
    """1 s slices over 70 s; ``bytes_per_flow_per_second(flow, t)``."""
    rows = [(f, t, t * 1_000_000_000, bytes_per_flow_per_second(f, t)) for f in (0, 1) for t in range(70)]
    return pl.DataFrame(rows, schema=["flow_id", "slice", "start_ns", "bytes"], orient="row")


def test_jain_20s_keeps_whole_slices_after_the_warmup_and_the_first():
    # Equal shares during [20, 60) s, one flow alone before and after: only two whole 20 s
    # slices fit [max(10, 20), 70) s, and they are fair.
    def equal_inside(flow, t):
        return 100 if 20 <= t < 60 or flow == 0 else 0

    flows = pl.DataFrame({"flow_id": [0, 1], "start_ns": [0, 0], "end_ns": [None, None]},
                         schema={"flow_id": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64})
    assert sp_side.jain_20s(SimpleNamespace(slices=_slices(equal_inside), flows=flows), 10.0, 70.0) == pytest.approx(1.0)

    # Flow 1 gets twice flow 0's bytes: J = (1 + 2)^2 / (2 (1 + 4)) = 0.9.
    def twice(flow, t):
        return 100 * (flow + 1)

    assert sp_side.jain_20s(SimpleNamespace(slices=_slices(twice), flows=flows), 10.0, 70.0) == pytest.approx(0.9)
    # Ending at 39 s leaves no whole slice after the first.
    assert sp_side.jain_20s(SimpleNamespace(slices=_slices(twice), flows=flows), 10.0, 39.0) is None


def test_render_marks_rows_outside_and_counts_each_congestion_control(tmp_path):
    spec_list = [specs.many(10, 1, duration_s=100.0)]
    results = {spec_list[0]["name"]: (_result(0.10, 40.0, [2] * 10, 0, 0.90, [1] * 10),
                                      _result(0.15, 41.0, [2] * 10, 3, 0.91, [1] * 10))}
    rows = matrix.compare("bbr", results, spec_list)
    with open(tmp_path / "linux_matrix_bbr_summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (tmp_path / "linux_matrix_bbr_meta.json").write_text(json.dumps({"runs": 1, "wall_s": 110.0}))
    doc = tmp_path / "page.md"
    render.render_matrix(tmp_path, doc)
    text = doc.read_text()
    # Loss +50% is outside; queue (+1 packet), timeouts (equal) and Jain (+0.01) are within.
    assert "| bbr | many | N = 10: bottleneck loss rate | 0.1 | 0.15 | ±20% | **outside** |" in text
    assert "| bbr | many | N = 10: mean queue | 40 packets | 41 packets | ±3 packets | within |" in text
    assert "bbr: 3 of 4 rows within tolerance (1 scenarios, 110.0 s of wall time)." in text
    render.render_matrix(tmp_path, doc)  # idempotent: the markers stay, the table is replaced
    assert doc.read_text() == text


def _fake_sides(monkeypatch, loss_rate):
    """Both sides replaced by hand-made results (no testbed): smallpipe's loss ``loss_rate``,
    Linux's 1.5 times it."""
    def result(spec, linux):
        n = 10 if spec["name"].startswith("many") else 1
        return {"name": spec["name"], "simulator": "linux" if linux else "smallpipe",
                **_result(loss_rate * (1.5 if linux else 1.0), 40.0, [1] * n, 0, 0.9, [125_000] * n)}

    monkeypatch.setitem(sys.modules, "sp_side", SimpleNamespace(run=lambda spec, sets: result(spec, False)))
    monkeypatch.setitem(sys.modules, "linux_side",
                        SimpleNamespace(run=lambda spec, congestion_control, overrides: result(spec, True)))


def test_a_section_run_later_adds_to_the_matrix_and_a_rerun_replaces_only_itself(tmp_path, monkeypatch):
    stamp = {"smallpipe_version": "0.1.0", "smallpipe_commit": "a" * 40}
    many = [specs.many(10, s, duration_s=20.0) for s in (1, 2)]
    bernoulli = [specs.bernoulli(0.05, 1, 20.0)]
    _fake_sides(monkeypatch, 0.10)
    matrix.run_matrix(tmp_path, ["reno"], many, stamp)
    _fake_sides(monkeypatch, 0.20)
    matrix.run_matrix(tmp_path, ["reno"], bernoulli, stamp | {"smallpipe_commit": "b" * 40})

    rows = render.matrix_rows(tmp_path)
    assert [r["section"] for r in rows] == ["many"] * 6 + ["bernoulli"] * 4
    loss = {r["metric"]: float(r["smallpipe"]) for r in rows if "loss rate" in r["metric"]}
    assert loss == pytest.approx({"N = 10: bottleneck loss rate": 0.10, "p = 0.05: loss rate": 0.20})
    assert {r["smallpipe_commit"][0] for r in rows} == {"a", "b"}  # each row keeps the code that made it
    names = [json.loads(line)["name"] for line in (tmp_path / "linux_matrix_reno_runs.jsonl").read_text().splitlines()]
    assert names == [s["name"] for s in many for _ in (0, 1)] + [bernoulli[0]["name"]] * 2
    meta = json.loads((tmp_path / "linux_matrix_reno_meta.json").read_text())
    assert {k: v["runs"] for k, v in meta["sections"].items()} == {"many": 2, "bernoulli": 1}
    assert meta["runs"] == 3 and not list(tmp_path.glob("*.partial.jsonl"))

    # Re-running many replaces its rows and runs and leaves bernoulli's.
    _fake_sides(monkeypatch, 0.30)
    matrix.run_matrix(tmp_path, ["reno"], many[:1], stamp)
    rows = render.matrix_rows(tmp_path)
    loss = {r["metric"]: float(r["smallpipe"]) for r in rows if "loss rate" in r["metric"]}
    assert loss == pytest.approx({"N = 10: bottleneck loss rate": 0.30, "p = 0.05: loss rate": 0.20})
    names = [json.loads(line)["name"] for line in (tmp_path / "linux_matrix_reno_runs.jsonl").read_text().splitlines()]
    assert names == [bernoulli[0]["name"]] * 2 + [many[0]["name"]] * 2
    meta = json.loads((tmp_path / "linux_matrix_reno_meta.json").read_text())
    assert list(meta["sections"]) == ["many", "bernoulli"] and meta["runs"] == 2


def test_reusing_the_linux_runs_reruns_only_smallpipe_and_keeps_the_record_of_linuxs_run(tmp_path, monkeypatch):
    stamp = {"smallpipe_version": "0.1.0", "smallpipe_commit": "a" * 40}
    web = [specs.web(s, duration_s=20.0) for s in (1, 2)]
    args = {"seeds": 2, "web_s": 20.0}
    _fake_sides(monkeypatch, 0.10)
    matrix.run_matrix(tmp_path, ["cubic"], web, stamp, args)
    measured = json.loads((tmp_path / "linux_matrix_cubic_meta.json").read_text())["sections"]["web"]

    def no_testbed(spec, congestion_control, overrides):
        raise AssertionError("the testbed ran")

    monkeypatch.setattr(sys.modules["linux_side"], "run", no_testbed)
    monkeypatch.setitem(sys.modules, "sp_side", SimpleNamespace(
        run=lambda spec, sets: {"name": spec["name"], "simulator": "smallpipe",
                                **_result(0.30, 40.0, [1], 0, 0.9, [125_000])}))
    new_stamp = stamp | {"smallpipe_commit": "b" * 40}
    for _ in (1, 2):  # twice: the second reuse still names the run that measured Linux
        matrix.run_matrix(tmp_path, ["cubic"], web, new_stamp, args, reuse_linux=True)
    loss = {r["metric"]: (float(r["smallpipe"]), float(r["linux"])) for r in render.matrix_rows(tmp_path)
            if "loss rate" in r["metric"]}
    assert loss == {"web pool: bottleneck loss rate": pytest.approx((0.30, 0.15))}
    meta = json.loads((tmp_path / "linux_matrix_cubic_meta.json").read_text())["sections"]["web"]
    assert meta["smallpipe_commit"] == "b" * 40 and meta["linux_measured_by"] == measured
    assert meta["wall_s"] == measured["wall_s"] and "smallpipe_rerun_wall_s" in meta

    with pytest.raises(ValueError, match=r"--web-s 30.0 differs from the 20.0 .* allowed: 20.0"):
        matrix.run_matrix(tmp_path, ["cubic"], web, new_stamp, args | {"web_s": 30.0}, reuse_linux=True)
    with pytest.raises(ValueError, match=r"no Linux run of web seed=3"):
        matrix.run_matrix(tmp_path, ["cubic"], [specs.web(3, duration_s=20.0)], new_stamp, args, reuse_linux=True)


def test_a_stopped_run_resumes_from_its_partial_file_and_runs_only_the_rest(tmp_path, monkeypatch):
    stamp = {"smallpipe_version": "0.1.0", "smallpipe_commit": "a" * 40}
    many = [specs.many(10, s, duration_s=20.0) for s in (1, 2, 3)]
    _fake_sides(monkeypatch, 0.10)
    fake_linux = sys.modules["linux_side"].run
    ran = []

    def stops_at_the_third(spec, congestion_control, overrides):
        if len(ran) == 2:
            raise KeyboardInterrupt  # the session stops during the third pair
        ran.append(spec["name"])
        return fake_linux(spec, congestion_control, overrides)

    monkeypatch.setattr(sys.modules["linux_side"], "run", stops_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        matrix.run_matrix(tmp_path, ["reno"], many, stamp)
    partial = tmp_path / "linux_matrix_reno_runs.partial.jsonl"
    with partial.open("a") as f:
        f.write('{"name": "many N=10 seed=3", "simul')  # a line the stop cut
    assert not (tmp_path / "linux_matrix_reno_runs.jsonl").exists()

    # Another commit, or other run lengths, may not resume it: their pairs are not this run's.
    with pytest.raises(ValueError, match=r"smallpipe_commit a+; allowed: b+"):
        matrix.run_matrix(tmp_path, ["reno"], many, stamp | {"smallpipe_commit": "b" * 40}, resume=True)
    longer = [specs.many(10, s, duration_s=30.0) for s in (1, 2, 3)]
    with pytest.raises(ValueError, match=r"specs_digest other run lengths"):
        matrix.run_matrix(tmp_path, ["reno"], longer, stamp, resume=True)

    ran.clear()
    monkeypatch.setattr(sys.modules["linux_side"], "run", lambda spec, congestion_control, overrides: (
        ran.append(spec["name"]) or fake_linux(spec, congestion_control, overrides)))
    matrix.run_matrix(tmp_path, ["reno"], many, stamp, resume=True)
    assert ran == [many[2]["name"]]  # the two finished pairs were kept
    names = [json.loads(line)["name"] for line in (tmp_path / "linux_matrix_reno_runs.jsonl").read_text().splitlines()]
    assert names == [s["name"] for s in many for _ in (0, 1)]
    meta = json.loads((tmp_path / "linux_matrix_reno_meta.json").read_text())
    assert meta["sections"]["many"]["runs"] == 3 and not partial.exists()


def test_resume_refuses_a_partial_file_without_its_header(tmp_path):
    stamp = {"smallpipe_version": "0.1.0", "smallpipe_commit": "a" * 40}
    (tmp_path / "linux_matrix_reno_runs.partial.jsonl").write_text('{"name": "many N=10 seed=1"}\n')
    with pytest.raises(ValueError, match=r"no `partial_of` header line"):
        matrix.run_matrix(tmp_path, ["reno"], [specs.many(10, 1, duration_s=20.0)], stamp, resume=True)


def test_timeouts_after_the_warmup_count_connections_the_prefix_never_opened():
    """A web pool opens connections all along: one the warm-up's prefix run never saw keeps its
    whole count, and the rest lose what they had by the warm-up, matched by flow id."""
    full = pl.DataFrame({"flow_id": [0, 1, 2, 3], "timeouts": [2, 1, 3, 0], "syn_timeouts": [1, 0, 1, 1]})
    prefix = pl.DataFrame({"flow_id": [1, 0], "timeouts": [1, 1], "syn_timeouts": [0, 1]})
    assert sp_side.timeouts_after(full, prefix) == [1, 0, 4, 1]
    assert sp_side.timeouts_after(full, None) == [3, 1, 4, 1]


def test_linuxs_timeouts_count_the_clients_syn_timer_not_the_listeners_for_a_connection_opened_later():
    """Flow 0 is sampled by the warm-up (its count then is subtracted); flows 1 and 2 open
    after it: their SYN-ACK timeouts (in tcpi_total_rto from accept) give way to the
    client's SYN timeouts, which flow 2 has although its listener's timer never fired."""
    flows = pl.DataFrame({"flow_id": [0, 1, 2], "timeouts": [5, 3, 1], "syn_timeouts": [1, 1, 1]})
    info = pl.DataFrame({"flow_id": [0, 0, 1], "time_ns": [5 * 10**9, 10 * 10**9, 11 * 10**9],
                         "total_rto": [1, 2, 1]})
    assert linux_side.timeouts_after(flows, info, {0: 1, 1: 1, 2: 0}, 10.0) == [3, 3, 2]


def test_the_web_pools_timeouts_cover_every_connection_of_the_run():
    out = sp_side.run(specs.web(1, duration_s=30.0), matrix.overrides("reno"))
    assert len(out["timeouts"]) == out["connections"] > 60  # ~6 per unit by the 10 s warm-up
    assert min(out["timeouts"]) >= 0


def test_a_meta_file_from_before_sections_gives_its_record_to_the_sections_it_ran():
    old = {"congestion": "bbr", "runs": 9, "wall_s": 644.0, "overrides": {}, "args": {"only": ["many"]},
           "smallpipe_commit": "8dc4c7f"}
    assert matrix._sections_meta(old) == {"many": {"runs": 9, "wall_s": 644.0, "args": {"only": ["many"]},
                                                   "smallpipe_commit": "8dc4c7f"}}


NSTAT_SAMPLE = """\
#kernel
IpInReceives                    69674              0.0
IpInHdrErrors                   0                  0.0
TcpActiveOpens                  412                0.0
TcpExtTCPTimeouts               6                  0.0
TcpExtTCPLossProbes             16                 0.0
TcpExtTCPLossProbeRecovery      2                  0.0
IpExtInOctets                   1407244804         0.0
"""
"""The shape of `nstat -asz` on Linux 6.x (iproute2): a #kernel line, then name, absolute value, rate."""


def test_nstat_parsing_reads_the_loss_probe_counters():
    counters = parse_nstat(NSTAT_SAMPLE)
    assert {name: counters[name] for name in LOSS_PROBE_COUNTERS} == {"TcpExtTCPLossProbes": 16,
                                                                       "TcpExtTCPLossProbeRecovery": 2}
    assert counters["IpExtInOctets"] == 1_407_244_804
    assert len(counters) == 7


def test_nstat_parsing_names_a_line_it_cannot_read():
    with pytest.raises(NetnsError, match="'TcpExtTCPLossProbes  sixteen  0.0' is not a counter line"):
        parse_nstat("#kernel\nTcpExtTCPLossProbes  sixteen  0.0\n")


def test_the_pages_matrix_is_what_render_writes_from_the_committed_results(tmp_path):
    docs = Path(__file__).resolve().parent.parent / "docs"
    page = docs / "validation.md"
    doc = tmp_path / "validation.md"
    doc.write_text(page.read_text())
    render.render_matrix(docs / "validation", doc)  # the committed linux_matrix_<cc>_summary.csv
    assert doc.read_text() == page.read_text()
    # Without any, the table is the placeholder.
    render.render_matrix(tmp_path, doc)
    assert f"| *{render.NOT_MEASURED}* |" in doc.read_text()
