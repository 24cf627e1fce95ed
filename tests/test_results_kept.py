"""Nothing lost, nothing silent (issue 39): a run records what it simulated and where it
came from, never replaces a result without --force, checks that it can write before it
simulates, keeps its work when a write fails, and says when its output was cut short."""

import errno
import json
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

import smallpipe
from smallpipe import Result, Scenario, simulate
from smallpipe.cli import app
from test_testbed import needs_testbed

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DUMBBELL = str(EXAMPLES / "dumbbell.toml")
SHORT = ["--set", "duration_s=2", "--set", "slice_s=1", "--set", "flows.0.count=5"]
runner = CliRunner()


def invoke(args):
    result = runner.invoke(app, args)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def test_a_red_run_records_the_link_it_ran_on(tmp_path):
    # The dumbbell is 1 Mbit/s with a 1 ms delay; RED's defaults are 10 Mbit/s and 10 ms.
    out = tmp_path / "red"
    result = invoke(["run", DUMBBELL, "--set", "link.queue.kind=red", *SHORT, "--out", str(out)])
    assert result.exit_code == 0, result.output
    queue = json.loads((out / "scenario.json").read_text())["link"]["queue"]
    assert (queue["link_rate_bps"], queue["link_delay_ns"]) == (1_000_000, 1_000_000)
    shown = " ".join(result.output.split())
    assert "link_rate_bps 1000000," in shown and "link_delay_ns 1000000" in shown
    assert "10000000" not in shown


def test_meta_json_records_version_commit_command_host_kernel_and_scenario(tmp_path):
    out = tmp_path / "run"
    assert invoke(["run", DUMBBELL, *SHORT, "--out", str(out)]).exit_code == 0
    meta = json.loads((out / "meta.json").read_text())
    origin = meta["provenance"]
    assert origin["version"] == smallpipe.__version__
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown", origin["commit"])
    assert {"command_line", "host", "kernel", "python"} <= set(origin)
    assert meta["scenario"] == json.loads((out / "scenario.json").read_text())
    assert meta["scenario"]["duration_s"] == 2.0 and meta["scenario"]["flows"][0]["count"] == 5
    back = Result.read(out)
    assert "scenario" not in back.meta and back.meta["provenance"] == origin


_KINDS = ["droptail", "red", "sfq", "fq_codel", "taq", "rio"]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(_KINDS),
    count=st.integers(1, 12),
    rate_bps=st.integers(200, 5_000).map(lambda k: k * 1000),
    delay_ms=st.floats(0.5, 20.0),
    seed=st.integers(0, 2**32),
    duration_s=st.floats(0.5, 3.0),
)
def test_what_meta_json_records_re_simulates_to_the_same_results(
    tmp_path_factory, kind, count, rate_bps, delay_ms, seed, duration_s
):
    out = tmp_path_factory.mktemp("prop") / "run"
    args = ["run", DUMBBELL, "--out", str(out), "--seed", str(seed), "--set", f"link.queue.kind={kind}",
            "--set", f"flows.0.count={count}", "--set", f"link.rate_bps={rate_bps}",
            "--set", f"link.delay_ms={delay_ms!r}", "--set", f"duration_s={duration_s!r}",
            "--set", f"slice_s={duration_s!r}"]
    assert invoke(args).exit_code == 0
    recorded = json.loads((out / "meta.json").read_text())["scenario"]
    again = simulate(Scenario.from_dict(recorded))
    first = Result.read(out)
    for table in ("flows", "slices", "links"):
        assert getattr(again, table).equals(getattr(first, table)), table


def test_testbed_never_replaces_an_earlier_result_without_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    earlier = tmp_path / "results" / "dumbbell-testbed"
    earlier.mkdir(parents=True)
    (earlier / "meta.json").write_text("{}")
    result = invoke(["testbed", DUMBBELL, "--set", "duration_s=20"])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "results/dumbbell-testbed holds files already" in message and "--force" in message
    assert (earlier / "meta.json").read_text() == "{}"


def test_an_unwritable_out_is_refused_before_simulating(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("smallpipe.cli.simulate", lambda *a, **k: calls.append(a))
    result = invoke(["run", DUMBBELL, "--out", "/proc/x"])
    assert result.exit_code == 2
    assert "--out /proc/x is not writable" in " ".join(result.output.split())
    assert calls == [], "refused before simulating"


def test_a_full_disk_keeps_the_run_in_a_named_folder(tmp_path, monkeypatch):
    out = tmp_path / "full"
    real = pl.DataFrame.write_parquet

    def full_disk(frame, path, *args, **kwargs):
        if Path(path).parent == out:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(frame, path, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full_disk)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "rescue"))
    (tmp_path / "rescue").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    result = invoke(["run", DUMBBELL, *SHORT, "--out", str(out)])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert f"writing {out} failed (No space left on device)" in message
    (kept,) = re.findall(r"kept in (\S+)", message)
    rescued = Result.read(kept)
    assert rescued.flows.height == 5 and rescued.meta["seed"] == 1
    # Nothing half-written is left to be mistaken for a run: no 0-byte table, no meta.json.
    assert not list(out.glob("*.parquet")) and not (out / "meta.json").exists()
    with pytest.raises(FileNotFoundError, match="holds no meta.json"):
        Result.read(out)


def test_a_pcap_cut_at_its_cap_and_flows_never_opened_are_said(tmp_path):
    out = tmp_path / "cut"
    result = invoke(["run", DUMBBELL, *SHORT, "--pcap", "--set", "trace.max_pcap_bytes=2000",
                     "--trace-flows", "1,5000", "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "the pcap stopped at trace.max_pcap_bytes = 2000 bytes" in said
    assert "traced connections [5000] were never opened (the run opened 5" in said
    meta = json.loads((out / "meta.json").read_text())
    assert meta["trace_truncated"] == ["pcap"] and meta["trace_flows_never_opened"] == [5000]
    assert (out / "bottleneck.pcap").stat().st_size <= 2000


def test_a_host_pcap_cut_at_its_cap_is_said_by_its_name(tmp_path):
    """Each host's pcap has its own cap: a 2000-byte cap cuts the sender's (it sends for
    the whole run) and the note names its file."""
    out = tmp_path / "cut"
    result = invoke(["run", DUMBBELL, *SHORT, "--pcap-host", "sender0", "--set", "trace.max_pcap_bytes=2000",
                     "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "sender0.pcap stopped at trace.max_pcap_bytes = 2000 bytes" in said
    assert json.loads((out / "meta.json").read_text())["trace_truncated"] == ["sender0"]
    assert 0 < (out / "sender0.pcap").stat().st_size <= 2000
    assert not (out / "bottleneck.pcap").exists()


# --- reproduce: variants by name, no silent replacing, Ctrl-C keeps the runs ---------------

SMALL = {"duration_s": 2.0, "slice_s": 1.0, "link": {"rate_bps": 1_000_000},
         "flows": [{"count": 3, "app": "bulk", "rtt_ms": 100.0}]}


def _fake_figure(monkeypatch, reproduce):
    from types import SimpleNamespace

    from smallpipe import experiments

    monkeypatch.setitem(experiments.REPRODUCTIONS, "fake-fig", SimpleNamespace(reproduce=reproduce))


def test_reproduce_names_a_variant_by_its_overrides_and_never_replaces_unasked(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    notes = []

    def reproduce(out, *, quick, seed):
        result = simulate({**SMALL, "seed": seed})
        table = pl.DataFrame({"flows": [result.flows.height], "rate": [result.scenario["link"]["rate_bps"]]})
        table.write_csv(out / "fake-fig.csv")
        figure, axes = plt.subplots()
        axes.set_title("fake figure")
        figure.savefig(out / "fake-fig.png")
        notes.append([text.get_text() for text in figure.texts])
        plt.close(figure)
        return table

    _fake_figure(monkeypatch, reproduce)
    monkeypatch.chdir(tmp_path)
    assert invoke(["reproduce", "fake-fig"]).exit_code == 0
    variant = invoke(["reproduce", "fake-fig", "--set", "link.rate_bps=2e6"])
    assert variant.exit_code == 0, variant.output
    base, varied = (pl.read_csv(tmp_path / "results/reproductions" / d / "fake-fig.csv")
                    for d in ("", "variants/link.rate_bps=2000000.0"))
    assert (base["rate"][0], varied["rate"][0]) == (1_000_000, 2_000_000)
    assert notes == [[], ["variant: link.rate_bps=2000000.0"]], "the variant's plot is marked, the baseline's not"
    again = invoke(["reproduce", "fake-fig"])
    assert again.exit_code == 2
    assert "holds fake-fig's results already (fake-fig.csv, fake-fig.png); pass --force" in " ".join(again.output.split())
    assert invoke(["reproduce", "fake-fig", "--force"]).exit_code == 0
    assert not list((tmp_path / "results/reproductions").glob(".fake-fig-*")), "no staging folder left"


def test_ctrl_c_in_reproduce_keeps_the_runs_measured_marked_partial(tmp_path, monkeypatch):
    import os
    import signal

    from smallpipe.result import reporting_progress

    def sigint_once_running(scenario):
        # A real SIGINT, sent from the second run itself once it has simulated something,
        # so that when it is not honoured the cause cannot be the wall clock.
        def update(now_ns, end_ns):
            if now_ns > 0:
                os.kill(os.getpid(), signal.SIGINT)
        return update

    def reproduce(out, *, quick, seed):
        simulate({**SMALL, "seed": seed})
        with reporting_progress(sigint_once_running):
            simulate({**SMALL, "duration_s": 100_000.0, "slice_s": 100.0, "seed": seed,
                      "flows": [{"count": 50, "app": "bulk", "rtt_ms": 100.0}]})
        raise AssertionError("the second run should have been interrupted")

    _fake_figure(monkeypatch, reproduce)
    # A shell without job control starts background commands with SIGINT ignored, and
    # Python then leaves it ignored: the suite run as `.ci/run &` never sees this SIGINT.
    # Ctrl-C reaches a command in a terminal's foreground, which has Python's handler.
    ignored_or_not = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = invoke(["reproduce", "fake-fig", "--out", str(tmp_path)])
    finally:
        signal.signal(signal.SIGINT, ignored_or_not)
    assert result.exit_code == 130, result.output
    (kept,) = tmp_path.glob("fake-fig-partial-*")
    assert f"kept in {kept}" in " ".join(result.output.split())
    meta = json.loads((kept / "meta.json").read_text())
    assert meta["partial"] is True and meta["figure"] == "fake-fig" and meta["runs"] == 2
    runs = pl.read_parquet(kept / "runs.parquet")
    assert runs["partial"].to_list() == [False, True]
    flows = pl.read_parquet(kept / "flows.parquet")
    assert flows.group_by("run").len().sort("run")["len"].to_list() == [3, 50]
    stopped = json.loads(runs["meta_json"][1])
    assert 0 < stopped["stopped_at_ns"] < 100_000e9
    assert not list(tmp_path.glob(".fake-fig-*")) and not (tmp_path / "fake-fig.csv").exists()


# --- compare, report ------------------------------------------------------------------------


def test_compare_refuses_rcp_with_tcp_senders(tmp_path):
    result = invoke(["compare", DUMBBELL, "--queue", "droptail,rcp", "--seeds", "2", "--out", str(tmp_path)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert '--queue rcp needs RCP senders (transport = "rcp")' in said and "'tcp'" in said


def test_compare_point_ids_change_with_the_version(monkeypatch):
    from smallpipe import compare

    base = Scenario.from_toml(DUMBBELL)
    now = compare.plan_comparison(base, ["droptail"], 2).grid.points
    monkeypatch.setattr(compare, "__version__", "99.0.0")
    upgraded = compare.plan_comparison(base, ["droptail"], 2).grid.points
    assert {p.point_id for p in now}.isdisjoint(p.point_id for p in upgraded)


def test_compare_never_replaces_an_older_versions_table(tmp_path):
    out = tmp_path / "cmp"
    out.mkdir()
    (out / "compare.json").write_text(json.dumps({"queue": ["red"], "version": "0.0.1"}))
    result = invoke(["compare", DUMBBELL, "--queue", "droptail,sfq", "--seeds", "2", "--out", str(out)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"holds a comparison made by smallpipe 0.0.1 (this is {smallpipe.__version__}" in said
    assert "pass --force" in said


@pytest.fixture(scope="module")
def sweep_db(tmp_path_factory):
    from smallpipe.compare import plan_comparison, run_compare

    out = tmp_path_factory.mktemp("db")
    plan = plan_comparison(Scenario.from_dict({**SMALL, "seed": 1}), ["droptail"], 2)
    run_compare(plan, out, workers=0)
    return out / "compare.duckdb"


def test_report_refuses_a_directory_an_existing_file_and_a_truncated_database(tmp_path, sweep_db):
    folder = tmp_path / "dir"
    folder.mkdir()
    said = " ".join(invoke(["report", str(sweep_db), "--out", str(folder)]).output.split())
    assert f"--out {folder} is a directory; expected the path of an HTML file" in said
    page = tmp_path / "r.html"
    assert invoke(["report", str(sweep_db), "--out", str(page)]).exit_code == 0
    again = invoke(["report", str(sweep_db), "--out", str(page)])
    assert again.exit_code == 2 and "exists (an earlier report?); pass --force" in " ".join(again.output.split())
    assert invoke(["report", str(sweep_db), "--out", str(page), "--force"]).exit_code == 0
    cut = tmp_path / "cut.duckdb"
    data = sweep_db.read_bytes()
    cut.write_bytes(data[: len(data) // 3])
    result = invoke(["report", str(cut), "--out", str(tmp_path / "c.html")])
    assert result.exit_code == 2
    assert f"DB {cut} cannot be read" in " ".join(result.output.split())


# --- settings the simulator would ignore ------------------------------------------------------


@pytest.mark.parametrize(
    ("sets", "words"),
    [
        (["link.queue.kind=red", "link.queue.ecn=true"], ["link.queue.ecn: true", "has no ECN yet"]),
        (["link.queue.kind=class_isolation"], ["link.queue.classify", "nothing marked", "long class"]),
    ],
)
def test_settings_the_simulator_would_ignore_are_refused(tmp_path, sets, words):
    args = ["run", DUMBBELL, "--out", str(tmp_path / "o")]
    for assignment in sets:
        args += ["--set", assignment]
    result = invoke(args)
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert all(word in said for word in words), said
    assert not (tmp_path / "o").exists(), "refused before the folder was made"


def test_fq_codel_keeps_its_default_ecn_and_a_marked_isolation_runs():
    simulate({**SMALL, "link": {"rate_bps": 1_000_000, "queue": {"kind": "fq_codel"}}})
    simulate(Scenario.from_toml(EXAMPLES / "isolation.toml").with_overrides({"duration_s": 1.0, "slice_s": 1.0}))


# --- the Python API takes what the CLI takes ---------------------------------------------------


def test_plan_comparison_takes_a_count_or_a_list_and_a_dict():
    from smallpipe.compare import CompareError, plan_comparison

    by_count = plan_comparison({**SMALL, "seed": 4}, ["droptail", "red"], 3)
    by_list = plan_comparison(Scenario.from_dict({**SMALL, "seed": 4}), ["droptail", "red"], [4, 5, 6])
    assert [p.point_id for p in by_count.grid.points] == [p.point_id for p in by_list.grid.points]
    assert by_count.grid.values["seed"] == [4, 5, 6]
    with pytest.raises(CompareError, match="seeds = 1 is not allowed"):
        plan_comparison(SMALL, ["droptail"], 1)


def test_estimate_memory_takes_a_scenario_or_a_dict():
    from smallpipe.guard import estimate_memory

    scenario = Scenario.from_toml(DUMBBELL)
    assert estimate_memory(scenario) == estimate_memory(scenario.to_dict())


def test_run_compare_at_a_scripts_top_level_runs_and_says_how_to_run_in_parallel(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(
        "from smallpipe.compare import plan_comparison, run_compare\n"
        f"plan = plan_comparison({SMALL!r}, ['droptail', 'red'], 2)\n"
        f"comparison = run_compare(plan, {str(tmp_path / 'out')!r}, workers=2)\n"
        "print('runs', comparison.outcome.ok)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "runs 4" in done.stdout
    assert 'put the call under `if __name__ == "__main__":`' in done.stderr
    # Under the guard: no warning (the workers run it).
    guarded = script.read_text().replace("\n", "\n    ").replace("from", "if __name__ == '__main__':\n    from", 1)
    script.write_text(guarded.replace(str(tmp_path / "out"), str(tmp_path / "out2")))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "runs 4" in done.stdout and "__main__" not in done.stderr


# --- smallpipe plan ------------------------------------------------------------------------------

HUGE = """seed = 1
duration_s = 1e6
slice_s = 10.0
[[flows]]
count = 100000
app = "bulk"
"""


def test_set_applies_before_the_memory_guard_and_plan_says_what_it_would_refuse(tmp_path):
    huge = tmp_path / "huge.toml"
    huge.write_text(HUGE)
    refused = invoke(["plan", str(huge), "--json"])
    assert refused.exit_code == 2
    said = json.loads(refused.output.splitlines()[0])
    assert said["refused"].startswith("memory guard: slice_s: 10") and said["pilot"] is None
    assert said["memory_bytes"] > 1e12  # 1e10 flow-slice rows
    fits = ["--set", "duration_s=2", "--set", "slice_s=1", "--set", "flows.0.count=10"]
    assert invoke(["plan", str(huge), *fits]).exit_code == 0
    run = invoke(["run", str(huge), *fits, "--out", str(tmp_path / "o")])
    assert run.exit_code == 0, run.output
    assert json.loads((tmp_path / "o/meta.json").read_text())["scenario"]["flows"][0]["count"] == 10


def test_plan_extrapolates_wall_time_and_disk_within_a_factor_of_the_real_run(tmp_path):
    long = ["--set", "duration_s=2400"]  # about 2 s of wall time here: longer than the 1 s pilot
    planned = invoke(["plan", DUMBBELL, *long, "--json"])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.output)
    assert plan["refused"] is None and plan["scenario"]["duration_s"] == 2400.0
    out = tmp_path / "o"
    assert invoke(["run", DUMBBELL, *long, "--out", str(out)]).exit_code == 0
    wall_s = json.loads((out / "meta.json").read_text())["wall_seconds"]
    disk = sum(path.stat().st_size for path in out.glob("*.parquet"))
    if not plan["pilot"]["finished"]:
        assert 0.5 < plan["wall_s"] / wall_s < 2.0, (plan, wall_s)
    assert 0.5 < plan["disk_bytes"] / disk < 2.0, (plan["disk_bytes"], disk)


# --- numbers read one way everywhere ----------------------------------------------------------


def test_a_whole_number_written_2e1_is_whole_in_a_file_and_in_set(tmp_path):
    by_set = Scenario.from_toml(DUMBBELL, {"flows.0.count": 2e1, "link.rate_bps": 2e6})
    assert by_set["flows"][0]["count"] == 20 and by_set["link"]["rate_bps"] == 2_000_000
    written = tmp_path / "s.toml"
    written.write_text('duration_s = 1e1\nseed = 3e0\n[[flows]]\ncount = 2e1\napp = "bulk"\n')
    from_file = Scenario.from_toml(written)
    assert (from_file["flows"][0]["count"], from_file["seed"]) == (20, 3)
    with pytest.raises(smallpipe.ConfigError, match=r"flows\[0\]\.count: 2\.5 is not allowed; expected 1 to 1000000 units"):
        Scenario.from_toml(DUMBBELL, {"flows.0.count": 2.5})


def test_one_range_is_printed_for_count_whatever_the_value():
    said = set()
    for bad in (0, -1, 2.5, 2_000_000):
        with pytest.raises(smallpipe.ConfigError) as caught:
            Scenario.from_toml(DUMBBELL, {"flows.0.count": bad})
        said.add(caught.value.allowed)
    assert said == {"1 to 1000000 units"}


# --- Ctrl-C on the testbed --------------------------------------------------------------------


@needs_testbed
def test_ctrl_c_on_the_testbed_keeps_what_was_measured(tmp_path):
    """A 30 s run of two bulk flows, Ctrl-C (SIGINT to the whole process group, as a terminal
    sends it) 9 s after the command starts: exit 130 within seconds, the tables cover the time
    run, and two bulk flows filled the 2 Mbit/s link over it (but never more)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    scenario = tmp_path / "tb.toml"
    scenario.write_text('duration_s = 30.0\nslice_s = 1.0\n[link]\nrate_bps = 2000000\ndelay_ms = 5.0\n'
                        '[[flows]]\napp = "bulk"\ncount = 2\nrtt_ms = 60.0\n')
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-c", "from smallpipe.cli import app; app()", "testbed", str(scenario), "--out", str(out)]
    process = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    time.sleep(9.0)
    os.killpg(process.pid, signal.SIGINT)
    interrupted = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert time.monotonic() - interrupted < 20.0
    assert "interrupted: the tables cover the first" in stderr
    meta = json.loads((out / "meta.json").read_text())
    stopped_s = meta["stopped_at_ns"] / 1e9
    assert meta["partial"] is True and 1.0 < stopped_s < 9.0 and meta["duration_ns"] == meta["stopped_at_ns"]
    delivered = pl.read_parquet(out / "flows.parquet")["bytes_delivered"].sum()
    capacity_bytes = 2_000_000 / 8 * stopped_s
    assert 0.5 * capacity_bytes < delivered <= capacity_bytes
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert f"sp{process.pid}" not in listing, "the namespaces are removed"


def test_a_full_disk_in_reproduce_keeps_the_runs_measured(tmp_path, monkeypatch):
    def reproduce(out, *, quick, seed):
        simulate({**SMALL, "seed": seed})
        raise OSError(errno.ENOSPC, "No space left on device")  # as the figure writes its CSV

    _fake_figure(monkeypatch, reproduce)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "rescue"))
    (tmp_path / "rescue").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    result = invoke(["reproduce", "fake-fig", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "fake-fig: writing into" in said and "(No space left on device)" in said
    (kept,) = re.findall(r"kept in (\S+)", said)
    assert pl.read_parquet(Path(kept) / "flows.parquet").height == 3
    assert json.loads((Path(kept) / "meta.json").read_text())["partial"] is True


def test_a_skipped_log_line_is_said_in_the_summary(tmp_path):
    log = tmp_path / "access.log"
    good = "1700000000.113 767 10.1.0.19 TCP_MISS/200 11542 GET http://e.org/0 - DIRECT/1.2.3.4 text/html\n"
    log.write_text(good + "this line is not a squid line\n" + good.replace("000.113", "001.113"))
    scenario = tmp_path / "replay.toml"
    text = (EXAMPLES / "replay.toml").read_text()
    scenario.write_text(re.sub(r'log_path = ".*"', 'log_path = "access.log"\nskip_malformed = true', text))
    out = tmp_path / "o"
    result = invoke(["run", str(scenario), "--set", "duration_s=5", "--set", "slice_s=1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 malformed log lines skipped (skip_malformed; meta.json skipped_log_lines)" in " ".join(result.output.split())
    assert json.loads((out / "meta.json").read_text())["skipped_log_lines"] == 1


def _small_tmpfs(path: Path, size: str) -> bool:
    import os
    import subprocess

    if os.geteuid() != 0:
        return False
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, check=False)
    return done.returncode == 0


def test_a_really_full_disk_keeps_the_run_in_a_named_folder(tmp_path, monkeypatch):
    import subprocess
    import tempfile

    disk = tmp_path / "disk"
    if not _small_tmpfs(disk, "24k"):
        pytest.skip("needs root to mount a 24 KiB tmpfs")
    try:
        monkeypatch.setenv("TMPDIR", str(tmp_path))
        monkeypatch.setattr(tempfile, "tempdir", None)
        result = invoke(["run", DUMBBELL, "--set", "duration_s=20", "--set", "slice_s=1", "--out", str(disk / "o")])
        assert result.exit_code == 2
        said = " ".join(result.output.split())
        assert f"writing {disk / 'o'} failed (No space left on device)" in said
        (kept,) = re.findall(r"kept in (\S+)", said)
        assert Result.read(kept).slices.height > 0
        assert not (disk / "o" / "meta.json").exists() and not list((disk / "o").glob(".*.tmp"))
    finally:
        subprocess.run(["umount", str(disk)], check=True)


# --- sweeps: a stated size, and progress while checking ------------------------------------


def test_a_grid_past_the_stated_size_is_refused_before_any_point_is_checked(tmp_path):
    grid = tmp_path / "huge.toml"
    grid.write_text(f'base = "{DUMBBELL}"\n[grid]\nseed = {list(range(1000))}\n'
                    f'"flows.0.count" = {list(range(1, 101))}\n"link.queue.limit_pkts" = [10, 20]\n')
    result = invoke(["sweep", str(grid), "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "[grid] is 200,000 points (1000 seed x 100 flows.0.count x 2 link.queue.limit_pkts)" in said
    assert "expected at most 100,000 points per grid file" in said
    assert not (tmp_path / "s.duckdb").exists()


def test_checking_a_grid_reports_its_progress(tmp_path):
    from smallpipe.sweep import load_grid

    grid = tmp_path / "g.toml"
    grid.write_text(f'base = "{DUMBBELL}"\n[grid]\nseed = {list(range(1001))}\n')
    seen = []
    assert len(load_grid(grid, on_progress=lambda done, total: seen.append((done, total))).points) == 1001
    assert seen == [(1000, 1001)]
