"""Every user error exits 2 with a message naming the field or file, the value and what is
allowed, before any work is done; never a traceback. Also the memory guard and the
switching of a discipline's kind (issue 12)."""

import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

import duckdb
from smallpipe import Scenario, simulate
from smallpipe.cli import app, summary_table
from smallpipe.errors import OverrideNote
from smallpipe.guard import LIMIT_ENV, SLICE_ROW_BYTES, estimate_memory

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DUMBBELL = str(EXAMPLES / "dumbbell.toml")
runner = CliRunner()
RUST_NAMES = re.compile(r"\b(u8|u16|u32|u64|f64|struct \w+|enum \w+)\b")


def user_error(args, **kwargs):
    """Run the CLI; check exit 2, no traceback, no Rust type name; return the one-line message."""
    result = runner.invoke(app, args, **kwargs)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert not RUST_NAMES.search(result.output), result.output
    return " ".join(result.output.split())


@pytest.fixture
def replay(tmp_path):
    """A replay scenario whose log (beside it) holds ``text`` (bytes)."""

    def write(content: bytes) -> Path:
        (tmp_path / "access.log").write_bytes(content)
        text = (EXAMPLES / "replay.toml").read_text()
        scenario = tmp_path / "replay.toml"
        scenario.write_text(re.sub(r'log_path = ".*"', 'log_path = "access.log"', text))
        return scenario

    return write


GOOD_LINE = b"1700000000.113 767 10.1.0.19 TCP_MISS/200 11542 GET http://e.org/0 - DIRECT/1.2.3.4 text/html\n"


@pytest.mark.parametrize(
    ("bad_line", "shown"),
    [
        (b"garbage line here\n", 'line 2: "garbage line here" (3 fields)'),
        (b"nan 5 10.1.0.3 TCP_MISS/200 9 GET http://e.org/1 - DIRECT/- -\n", 'line 2: time "nan"'),
        (b"1700000001 5 10.1.0.3 TCP_MISS/200 lots GET http://e.org/1 - DIRECT/- -\n", 'line 2: bytes "lots"'),
    ],
)
def test_malformed_squid_log_line(replay, tmp_path, bad_line, shown):
    scenario = replay(GOOD_LINE + bad_line)
    message = user_error(["run", str(scenario), "--out", str(tmp_path / "out")])
    assert f"flows[0].log_path: {tmp_path / 'access.log'}: {shown} is not allowed" in message
    assert "skip_malformed = true" in message


def test_binary_squid_log(replay, tmp_path):
    scenario = replay(GOOD_LINE + bytes(range(256)))
    message = user_error(["run", str(scenario), "--out", str(tmp_path / "out")])
    assert f"flows[0].log_path: {tmp_path / 'access.log'} is not allowed; expected a readable UTF-8 file" in message


def test_out_is_a_file_is_refused_before_simulating(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("keep me")
    started = time.perf_counter()
    message = user_error(["run", DUMBBELL, "--out", str(target)])
    # The example simulates for seconds; a refusal before simulating takes far less.
    assert time.perf_counter() - started < 1.0
    assert f"--out {target} is a file; expected a directory" in message
    assert target.read_text() == "keep me"


def test_run_given_a_directory():
    message = user_error(["run", str(EXAMPLES)])
    assert f"{EXAMPLES} (a directory) is not allowed; expected a scenario .toml file" in message


def test_binary_toml(tmp_path):
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\x9c\x00\xff garbage")
    message = user_error(["run", str(binary)])
    assert f"{binary} (not text: byte 0x9c at offset 0) is not allowed; expected a UTF-8 TOML file" in message


def test_sweep_db_is_a_directory(tmp_path):
    message = user_error(["sweep", str(EXAMPLES / "sweep.toml"), "--db", str(tmp_path)])
    assert f"--db {tmp_path} is a directory; expected a DuckDB database file" in message


def test_sweep_db_read_only(tmp_path):
    db = tmp_path / "ro.duckdb"
    duckdb.connect(str(db)).close()
    db.chmod(0o444)
    message = user_error(["sweep", str(EXAMPLES / "sweep.toml"), "--db", str(db)])
    assert f"--db {db} is read-only; expected a writable DuckDB file" in message


def test_sweep_db_not_duckdb(tmp_path):
    db = tmp_path / "text.duckdb"
    db.write_text("not a database, and longer than twelve bytes")
    message = user_error(["sweep", str(EXAMPLES / "sweep.toml"), "--db", str(db)])
    assert f"--db {db} is not a DuckDB database" in message


def test_report_on_a_foreign_duckdb(tmp_path):
    db = tmp_path / "other.duckdb"
    with duckdb.connect(str(db)) as connection:
        connection.execute("CREATE TABLE t (x INTEGER)")
    message = user_error(["report", str(db)])
    assert f"{db} has no sweep table: not a smallpipe sweep database" in message


def test_reproduce_negative_seed(tmp_path):
    message = user_error(["reproduce", "taq-fig2", "--quick", "--seed", "-1", "--out", str(tmp_path)])
    assert "--seed -1 is not allowed; expected a whole number from 0 to 18446744073709551615" in message
    assert not any(tmp_path.iterdir())


def test_run_negative_seed():
    message = user_error(["run", DUMBBELL, "--seed", "-1"])
    assert "seed: -1 is not allowed; expected a whole number from 0 to 18446744073709551615" in message


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        ([1_000_001], "flows[0].count: 1000001 is not allowed; expected 1 to 1000000 units"),
        ([1_000_000, 1], "flows: 1000001 units in all is not allowed; expected at most 1000000 units per run"),
    ],
)
def test_unit_limit_is_checked_up_front(tmp_path, count, shown):
    groups = "".join(f'[[flows]]\ncount = {n}\napp = "bulk"\n' for n in count)
    scenario = tmp_path / "many.toml"
    scenario.write_text(f"duration_s = 1.0\n{groups}")
    started = time.perf_counter()
    message = user_error(["run", str(scenario), "--out", str(tmp_path / "out")])
    assert time.perf_counter() - started < 1.0
    assert shown in message


def test_docs_state_the_validators_unit_limit():
    docs = (Path(__file__).resolve().parent.parent / "docs" / "scenario.md").read_text()
    assert "1 000 000 in all per run" in docs
    limit = {"app": "bulk", "count": 1_000_000}
    with pytest.MonkeyPatch.context() as env:  # the memory guard would refuse it on a small machine
        env.setenv(LIMIT_ENV, "1000GB")
        Scenario(flows=[limit], duration_s=1.0)  # the limit itself is allowed


@pytest.mark.parametrize(
    ("assignment", "shown"),
    [
        ("link.rate_bps=nan", "link.rate_bps: nan is not a number; expected a whole number of bit/s from 1000 to 1e12 (1 Tbit/s)"),
        ("link.delay_ms=inf", "link.delay_ms: inf is not a number; expected a number of ms from 0 to 1e10 (the longest run, 1e7 s)"),
        ("flows.0.rtt_ms=[100.0, -inf]", "flows[0].rtt_ms: -inf is not a number; expected a positive RTT"),
        ("flows.0.count=nan", "flows[0].count: nan is not a number; expected 1 to 1000000 units"),
    ],
)
def test_nan_and_infinity_are_named(assignment, shown):
    assert shown in user_error(["run", DUMBBELL, "--set", assignment])


@pytest.mark.parametrize(
    ("assignment", "shown"),
    [
        ("flows.0.count=1.5", "flows[0].count: 1.5 is not allowed; expected 1 to 1000000 units"),  # the field's own range
        ("link=5", "link: 5 is not allowed; expected a table"),
        ("link.rate_bps=fast", 'link.rate_bps: "fast" is not allowed; expected a number'),
        ("flows.0.rtt_ms=[1, 2, 3]", "flows[0].rtt_ms: [1, 2, 3] is not allowed; expected a number, or a [min, max]"),
        ("tcp.delayed_ack=1", "tcp.delayed_ack: 1 is not allowed; expected true or false"),
        ("seed=1979-05-27", 'seed: "1979-05-27" is not allowed; expected a whole number'),
    ],
)
def test_type_errors_in_toml_words(assignment, shown):
    assert shown in user_error(["run", DUMBBELL, "--set", assignment])


def test_messages_are_printed_verbatim_not_as_markup():
    message = user_error(["run", DUMBBELL, "--set", "flows.0.rtt_ms=-1"])
    assert "a positive RTT or [min, max] range" in message
    message = user_error(["run", DUMBBELL, "--set", "flows=[]"])
    assert "at least one [[flows]] group" in message


# The two runaway runs: 12.6 GB and 11 GB within a minute on a 24 GB machine.
RUNAWAYS = [
    (["--set", "duration_s=100", "--set", "slice_s=0.0001"], 100 * 1_000_000),
    (
        ["--set", "duration_s=1e7", "--set", "slice_s=10", "--set", "link.rate_bps=1000", "--set", "flows.0.count=1000"],
        1000 * 1_000_000,
    ),
]


@pytest.mark.parametrize(("overrides", "flow_slices"), RUNAWAYS)
def test_memory_guard_refuses_runaway_runs_at_once(monkeypatch, overrides, flow_slices):
    monkeypatch.setenv("SMALLPIPE_MEMORY_LIMIT", "8GB")
    started = time.perf_counter()
    message = user_error(["run", DUMBBELL, *overrides])
    assert time.perf_counter() - started < 0.5
    # flows x slices rows at the measured bytes per row, independently of the guard's sum.
    assert flow_slices * SLICE_ROW_BYTES > 8e9
    assert f"make {flow_slices:.3g} flow-slice rows" in message
    assert "expected a run of at most 8 GB (SMALLPIPE_MEMORY_LIMIT=8GB" in message
    assert "raise slice_s to at least" in message or "shorten duration_s" in message


def test_memory_limit_default_is_half_the_ram_and_named(monkeypatch):
    monkeypatch.delenv("SMALLPIPE_MEMORY_LIMIT", raising=False)
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    message = user_error(["run", DUMBBELL, *RUNAWAYS[1][0]])
    assert f"at most {ram / 2 / 1e9:.3g} GB (50% of the physical RAM, the default" in message
    assert "SMALLPIPE_MEMORY_LIMIT" in message


def test_bad_memory_limit_is_a_user_error(monkeypatch):
    monkeypatch.setenv("SMALLPIPE_MEMORY_LIMIT", "lots")
    message = user_error(["run", DUMBBELL])
    assert "SMALLPIPE_MEMORY_LIMIT: 'lots' is not allowed; expected a size such as 8GB" in message


def _peak_rss_bytes(slice_s: float, out: Path) -> int:
    """Peak RSS of `smallpipe run` on the dumbbell (100 flows, 120 s) with this slice."""
    script = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    )
    smallpipe = Path(sys.executable).parent / "smallpipe"
    command = [str(smallpipe), "run", DUMBBELL, "--set", f"slice_s={slice_s}", "--out", str(out)]
    done = subprocess.run([sys.executable, "-c", script, *command], check=True, capture_output=True, text=True)
    return int(done.stdout.strip())


@pytest.mark.slow
def test_estimate_tracks_measured_memory_per_slice_row(tmp_path):
    """Two runs differing only in slice count: the measured growth of peak RSS per added
    flow-slice row is the guard's per-row cost within 35%."""
    small = _peak_rss_bytes(0.02, tmp_path / "small")  # 6 000 slices
    large = _peak_rss_bytes(0.005, tmp_path / "large")  # 24 000 slices
    added_rows = 100 * (24_000 - 6_000)
    measured_per_row = (large - small) / added_rows
    assert 0.65 * SLICE_ROW_BYTES < measured_per_row < 1.35 * SLICE_ROW_BYTES, measured_per_row
    scenario = Scenario.from_toml(DUMBBELL).with_overrides({"slice_s": 0.005})
    assert estimate_memory(scenario.to_dict()).slice_rows == 100 * 24_000


# Switching a discipline's kind: the old kind's other keys are dropped with a note.
def test_switching_kind_in_the_cli(tmp_path):
    result = runner.invoke(
        app,
        ["run", DUMBBELL, "--set", "link.queue.kind=fq_codel", "--set", "duration_s=2", "--set", "slice_s=1",
         "--set", "flows.0.count=5", "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    # droptail's limit_pkts = 50 is a key fq_codel takes too (kept); limit_bytes is unset (dropped silently).
    assert "unknown field" not in result.output
    assert (tmp_path / "flows.parquet").exists()


def test_switching_kind_drops_keys_with_a_note_in_with_overrides():
    base = Scenario(flows=[{"app": "bulk"}], link={"queue": {"kind": "red", "min_th_pkts": 5, "max_th_pkts": 15}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        switched = base.with_overrides({"link.queue.kind": "fq_codel"})
    # One note, naming what the user chose (RED's defaults, e.g. max_p, are not listed).
    assert [str(w.message) for w in caught if w.category is OverrideNote] == [
        'link.queue.kind = "fq_codel": dropped red\'s min_th_pkts = 5.0, max_th_pkts = 15.0 (fq_codel does not take them)'
    ]
    queue = switched["link"]["queue"]
    assert queue["kind"] == "fq_codel" and "min_th_pkts" not in queue
    # Every key left is one fq_codel has by default: nothing of RED survived.
    assert set(queue) == set(Scenario(flows=[{"app": "bulk"}], link={"queue": {"kind": "fq_codel"}})["link"]["queue"])


def test_switching_kind_keeps_keys_the_user_sets():
    base = Scenario(flows=[{"app": "bulk"}], link={"queue": {"kind": "droptail", "limit_pkts": 50}})
    switched = base.with_overrides({"link.queue.kind": "fq_codel", "link.queue.limit_pkts": 77})
    assert switched["link"]["queue"]["limit_pkts"] == 77
    with pytest.raises(Exception, match="link.queue.limit_bytess"):
        base.with_overrides({"link.queue.kind": "fq_codel", "link.queue.limit_bytess": 5})


def test_switching_kind_in_a_sweep_over_a_base_file(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(
        'duration_s = 2.0\nslice_s = 1.0\n[link.queue]\nkind = "red"\nmin_th_pkts = 5\nmax_th_pkts = 15\n'
        '[[flows]]\napp = "bulk"\ncount = 2\n'
    )
    grid = tmp_path / "grid.toml"
    grid.write_text('base = "base.toml"\n[grid]\n"link.queue.kind" = ["red", "fq_codel"]\n')
    result = runner.invoke(app, ["sweep", str(grid), "--db", str(tmp_path / "s.duckdb"), "--workers", "0"])
    assert result.exit_code == 0, result.output
    assert result.output.count("dropped red's min_th_pkts = 5.0, max_th_pkts = 15.0") == 1  # once, not per point


def test_wide_tables_keep_numbers_whole(monkeypatch):
    """A reproduction's table with more columns than 80 characters hold: every number is
    printed whole on one line (not folded as `0.032` / `2`, not cut to `0.0…`)."""
    import io

    from rich.table import Table
    from smallpipe import cli

    monkeypatch.setattr(cli, "console", Console(file=io.StringIO(), width=80, color_system=None))
    values = [f"{0.03221 * (i + 1):.4g}" for i in range(14)]
    table = Table(title="figure")
    for i in range(len(values)):
        table.add_column(f"metric_{i}", justify="right", no_wrap=True)
    table.add_row(*values)
    cli.print_unwrapped(table)
    text = cli.console.file.getvalue()
    row = next(line for line in text.splitlines() if values[0] in line)
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == values
    assert cli.console.width == 80  # restored


def test_summary_table_values_never_wrap():
    result = simulate(Scenario(duration_s=2.0, flows=[{"app": "bulk", "count": 3}]))
    table = summary_table(result)
    # The numbers (the setup rows' prose may be cut on a console this narrow; `run` prints
    # the table at its natural width, see print_unwrapped).
    values = [str(cell) for cell in table.columns[1]._cells if re.fullmatch(r"[-+0-9.,%]+( s| B/s| kbit/s)?", str(cell))]
    assert len(values) >= 5
    console = Console(width=44, record=True, color_system=None)
    console.print(table)
    text = console.export_text()
    for value in values:
        assert any(value in line for line in text.splitlines()), (value, text)
    # Every metric's name is shown too.
    for label in (str(cell) for cell in table.columns[0]._cells):
        assert label[:10] in text, (label, text)


def test_a_warning_that_is_not_a_note_is_shown_once_and_the_block_ends():
    """`printing_notes` passes other warnings on (the testbed warns that Linux keeps RACK on).
    It once showed them while still recording, so each one was recorded again, read again,
    and the list grew until the machine ran out of memory. In a child process with 1 GiB
    of address space and 60 s, so that a regression fails rather than takes the machine."""
    code = """
import resource, warnings
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from smallpipe.errors import OverrideNote, printing_notes
with printing_notes():
    warnings.warn("Linux keeps RACK on", UserWarning)
    warnings.warn(OverrideNote("a note"))
    warnings.warn(OverrideNote("a note"))
print("block ended")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "block ended"
    assert done.stderr.count("UserWarning: Linux keeps RACK on") == 1
    assert done.stderr.count("note: a note") == 1
