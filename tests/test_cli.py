"""The smallpipe command line, end to end through the native core."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

import smallpipe
from smallpipe.cli import app, parse_override

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
runner = CliRunner()


def test_version():
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.output.strip() == smallpipe.__version__


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("link.rate_bps=2e6", ("link.rate_bps", 2e6)),
        ("link.rate_bps=2_000_000", ("link.rate_bps", 2_000_000)),
        ("tcp.recovery=sack", ("tcp.recovery", "sack")),
        ('tcp.recovery="reno"', ("tcp.recovery", "reno")),
        ("tcp.delayed_ack=true", ("tcp.delayed_ack", True)),
        ("flows.0.start_s=[0.0, 2.5]", ("flows.0.start_s", [0.0, 2.5])),
    ],
)
def test_parse_override(assignment, expected):
    assert parse_override(assignment) == expected


def test_run_writes_results_and_plot(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["run", str(EXAMPLES / "dumbbell.toml"), "--out", str(out), "--set", "duration_s=20", "--seed", "9"],
    )
    assert result.exit_code == 0, result.output
    assert "Jain" in result.output
    for name in (
        "flows.parquet",
        "slices.parquet",
        "links.parquet",
        "bursts.parquet",
        "meta.json",
        "run.png",
    ):
        assert (out / name).is_file(), name
    meta = json.loads((out / "meta.json").read_text())
    assert meta["seed"] == 9
    assert meta["duration_ns"] == 20_000_000_000
    assert (out / "run.png").read_bytes().startswith(b"\x89PNG")


def test_run_default_output_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", str(EXAMPLES / "dumbbell.toml"), "--set", "duration_s=20"])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "results").iterdir()  # a new directory per run: results/dumbbell-<date>-<time>
    assert run_dir.name.startswith("dumbbell-")
    assert (run_dir / "flows.parquet").is_file()


def test_run_invalid_field_exits_2_without_traceback(tmp_path):
    result = runner.invoke(
        app, ["run", str(EXAMPLES / "dumbbell.toml"), "--out", str(tmp_path), "--set", "link.rate_bps=-5"]
    )
    assert result.exit_code == 2
    assert "link.rate_bps" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "flows.parquet").exists()


def test_run_broken_toml_exits_2(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("seed = \n")
    result = runner.invoke(app, ["run", str(broken)])
    assert result.exit_code == 2
    assert "line 1" in result.output
    assert "Traceback" not in result.output


def test_run_missing_file_exits_2(tmp_path):
    result = runner.invoke(app, ["run", str(tmp_path / "absent.toml")])
    assert result.exit_code == 2
    assert "absent.toml" in result.output


def test_bench_json():
    result = runner.invoke(
        app, ["bench", "--flows", "10", "--rate-bps", "200000", "--duration-s", "5", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["flows"] == 10
    assert report["duration_s"] == pytest.approx(5.0)
    assert report["packets"] > 0 and report["events"] > 0
    assert report["packets_per_second"] == pytest.approx(report["packets"] / report["wall_seconds"])
    assert report["simulated_seconds_per_second"] == pytest.approx(5.0 / report["wall_seconds"])
    # The bottleneck cannot carry more than its rate allows: 200 kbit/s for 5 s in 500-byte
    # packets is 250 packets (one more may finish serializing right at the end).
    assert 0 < report["bottleneck_packets"] <= 251
    assert report["bottleneck_packets_per_second"] == pytest.approx(report["bottleneck_packets"] / report["wall_seconds"])


def test_bench_runs_any_discipline_and_names_a_bad_one():
    result = runner.invoke(
        app, ["bench", "--flows", "10", "--rate-bps", "200000", "--duration-s", "5", "--queue", "taq", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["queue"] == "taq"
    bad = runner.invoke(app, ["bench", "--duration-s", "5", "--queue", "tac"])
    assert bad.exit_code == 2
    assert "link.queue.kind" in bad.output and "tac" in bad.output and "taq" in bad.output


def test_bench_table():
    result = runner.invoke(app, ["bench", "--flows", "5", "--rate-bps", "100000", "--duration-s", "2"])
    assert result.exit_code == 0, result.output
    assert "packets per wall second" in result.output


def test_plot_fairness_vs_fair_share_writes_a_png(tmp_path):
    import polars as pl
    from smallpipe.plots import plot_fairness_vs_fair_share

    runs = pl.DataFrame(
        {
            "rate_bps": [1e6, 1e6, 2e6, 2e6],
            "fair_share_bps": [5e3, 25e3, 10e3, 50e3],
            "long_term_jain": [0.95, 0.99, 0.97, 0.99],
            "short_term_jain": [0.4, 0.8, 0.5, 0.9],
        }
    )
    path = plot_fairness_vs_fair_share(runs, tmp_path / "fig2.png", reference=runs.head(2))
    assert path.read_bytes().startswith(b"\x89PNG")
