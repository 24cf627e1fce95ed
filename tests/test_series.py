"""Issue 40 items 1 and 2, issue 39's estimate: `smallpipe run` records time series and
per-flow delays by default without changing the run, run.png, `plot` and `report RUN_DIR`
draw them, and `run`, `sweep` and `compare` print the plan's estimate before they work."""

import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe.cli import app
from smallpipe.plots import bottleneck_series, flow_goodput_series
from smallpipe.result import FLOW_DELAY_COLUMNS, FLOWS_SCHEMA, Result

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DUMBBELL = str(EXAMPLES / "dumbbell.toml")
SHORT = ["--set", "duration_s=30", "--set", "flows.0.count=12"]
runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The dumbbell (12 flows, 30 s) run with the default series, and without (--series-flows 0)."""
    root = tmp_path_factory.mktemp("series")
    out = {}
    for name, extra in (("series", []), ("plain", ["--series-flows", "0"])):
        out[name] = root / name
        result = runner.invoke(app, ["run", DUMBBELL, *SHORT, *extra, "--out", str(out[name])])
        assert result.exit_code == 0, result.output
    return out


def test_run_records_the_series_and_delays_by_default_and_not_with_zero(runs):
    for table in ("link_series", "flow_series", "flow_delays", "flow_delay_hist"):
        assert (runs["series"] / f"{table}.parquet").is_file(), table
        assert not (runs["plain"] / f"{table}.parquet").exists(), table
    r = Result.read(runs["series"])
    assert sorted(r.flow_series["flow_id"].unique().to_list()) == list(range(8)), "the first 8 connections"
    assert r.flow_delays["flow_id"].to_list() == list(range(8))
    assert set(FLOW_DELAY_COLUMNS) <= set(r.flows.columns)
    assert r.flows.filter(pl.col("flow_id") >= 8)["rtt_samples"].null_count() == 4


def test_the_series_do_not_change_the_run(runs):
    """The flows and links tables of a run with series are those of the run without,
    column for column (the delay columns come in addition)."""
    series, plain = Result.read(runs["series"]), Result.read(runs["plain"])
    assert series.flows.select(FLOWS_SCHEMA.names()).equals(plain.flows)
    assert series.links.equals(plain.links)
    assert series.slices.equals(plain.slices)


def test_series_add_up_to_the_links_table(runs):
    """Per-interval drops add up to the link's drops; the intervals' delays, weighted by
    departures, give its mean queueing delay; the mean throughput over the run is its
    utilization times its rate (a packet in service at the end aside)."""
    r = Result.read(runs["series"])
    link = r.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    rows = r.link_series.filter(pl.col("link") == "bottleneck")
    assert rows["dropped_pkts"].sum() == link["dropped_pkts"]
    mean_ms = rows["queue_delay_ns_sum"].sum() / rows["dequeued_pkts"].sum() / 1e6
    assert mean_ms == pytest.approx(link["mean_queue_delay_ms"], rel=1e-9)
    series = bottleneck_series(r)
    duration_s = r.meta["duration_ns"] / 1e9
    assert series["time_s"].max() == pytest.approx(duration_s)
    mean_mbps = (series["throughput_mbps"] * series["time_s"].diff().fill_null(series["time_s"][0])).sum() / duration_s
    extra_bytes = (mean_mbps - link["utilization"] * link["rate_bps"] / 1e6) * duration_s * 1e6 / 8
    assert round(extra_bytes, 3) in (0, 500), "dequeued at most one 500-byte packet not yet sent"


def test_per_flow_goodput_series_adds_up_to_the_acknowledged_bytes(runs):
    r = Result.read(runs["series"])
    goodput = flow_goodput_series(r)
    for flow_id in range(8):
        rows = goodput.filter(pl.col("flow_id") == flow_id)
        acked = r.flow_series.filter(pl.col("flow_id") == flow_id)["bytes_acked"]
        dt_s = rows["time_s"].diff().fill_null(rows["time_s"][0] - r.flow_series.filter(
            pl.col("flow_id") == flow_id)["time_ns"].min() / 1e9)
        assert (rows["goodput_mbps"] * dt_s).sum() * 1e6 / 8 == pytest.approx(acked.max() - acked.min(), rel=1e-9)
        assert acked.max() <= r.flows.filter(pl.col("flow_id") == flow_id)["bytes_delivered"][0]


def test_the_dumbbells_flows_see_the_full_droptail(runs):
    """100 … here 12 flows keep the 50-packet DropTail full: a 500-byte packet waits up to
    50 · 500 · 8 / 1 Mbit/s = 200 ms, so each flow's p99 queueing delay is that (to the
    histogram's 9%) and its RTT samples exceed the 200 ms propagation RTT plus most of it."""
    r = Result.read(runs["series"])
    sampled = r.flows.filter(pl.col("rtt_samples").is_not_null())
    full_ms = 50 * 500 * 8 / 1e6 * 1e3
    for row in sampled.iter_rows(named=True):
        assert 0.93 * full_ms <= row["queue_delay_p99_ms"] <= 1.1 * full_ms, row
        assert row["rtt_p99_ms"] > 200 + 0.9 * full_ms, row
        assert row["rtt_min_ms"] >= 200, row
        assert 0 < row["loss_rate"] < 1 and row["jitter_ms"] > 0, row


def test_plot_redraws_one_run_and_overlays_two(runs, tmp_path):
    one = tmp_path / "one.png"
    result = runner.invoke(app, ["plot", str(runs["series"]), "--out", str(one)])
    assert result.exit_code == 0, result.output
    assert one.read_bytes().startswith(b"\x89PNG")
    both = tmp_path / "both.png"
    second = tmp_path / "red"
    assert runner.invoke(app, ["run", DUMBBELL, *SHORT, "--set", "link.queue.kind=red", "--out", str(second)]).exit_code == 0
    result = runner.invoke(app, ["plot", str(runs["series"]), str(second), "--out", str(both)])
    assert result.exit_code == 0, result.output
    assert both.read_bytes().startswith(b"\x89PNG")


def test_plot_of_a_run_without_series_says_how_to_get_them(runs, tmp_path):
    result = runner.invoke(app, ["plot", str(runs["plain"]), str(runs["series"]), "--out", str(tmp_path / "x.png")])
    assert result.exit_code == 2
    assert "no bottleneck time series in plain" in result.output and "--series-flows 0" in result.output
    result = runner.invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 2 and "meta.json" in result.output


def test_report_of_a_run_folder(runs, tmp_path):
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(runs["series"]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.count("data:image/png;base64,") == 2, "the run's figure and the delay histograms"
    assert "Per-flow delay and loss" in page and "queue_delay_p99_ms" in page and "jitter_ms" in page
    again = runner.invoke(app, ["report", str(runs["series"]), "--out", str(out)])
    assert again.exit_code == 2 and "--force" in again.output
    plain = runner.invoke(app, ["report", str(runs["plain"]), "--out", str(tmp_path / "p.html")])
    assert plain.exit_code == 0 and "recorded no per-flow delays" in (tmp_path / "p.html").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = runner.invoke(app, ["report", str(empty)])
    assert refused.exit_code == 2 and "no meta.json" in refused.output


_ESTIMATE = re.compile(r"estimate( for ([\d,]+) (runs|points), (\d+) at a time)?: about [\d.]+ (ms|s|min|h) wall, "
                       r"[\d.]+ (B|kB|MB|GB) of tables, [\d.]+ (B|kB|MB|GB) of memory")


def test_run_prints_the_estimate_first(tmp_path):
    result = runner.invoke(app, ["run", DUMBBELL, *SHORT, "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert _ESTIMATE.match(first), first
    assert "the whole run" in first, "30 s of 12 flows take well under the 1 s pilot"


def test_compare_and_sweep_print_the_estimate_before_running(tmp_path):
    result = runner.invoke(app, ["compare", DUMBBELL, *SHORT, "--queue", "droptail,red", "--seeds", "2",
                                 "--workers", "1", "--out", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("estimate"))
    match = _ESTIMATE.match(line)
    assert match and match[2] == "4" and match[4] == "1", line
    assert result.output.index("estimate") < result.output.index("4 runs: 4 ran")
    grid = tmp_path / "grid.toml"
    grid.write_text(f'base = {json.dumps(DUMBBELL)}\n[grid]\nslice_s = [5]\nduration_s = [10, 20]\n"flows.0.count" = [5]\n'
                    "seed = [1, 2, 3]\n")
    result = runner.invoke(app, ["sweep", str(grid), "--db", str(tmp_path / "s.duckdb"), "--workers", "2"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("estimate"))
    match = _ESTIMATE.match(line)
    assert match and match[2] == "6" and match[3] == "points" and match[4] == "2", line


def test_the_estimate_extrapolates_a_run_longer_than_its_pilot():
    """A pilot stopped part way scales wall time and the tables that grow with time by the
    simulated time left: duration / simulated (an independent division, not the code's)."""
    from smallpipe.plan import estimate_work
    from smallpipe.scenario import Scenario

    scenario = Scenario.from_toml(DUMBBELL, {"duration_s": 20_000})
    estimate = estimate_work(scenario, runs=3, parallel=2)
    pilot = estimate.plan.pilot
    assert pilot is not None and not pilot.finished and pilot.result is None
    scale = 20_000 / pilot.simulated_s
    assert estimate.wall_s == pytest.approx(2 * pilot.wall_s * scale)
    per_run = ("units", "links", "queue_delays", "link_counters", "udp_flows")  # one row per unit, link, bucket, source
    grows = sum(size for table, size in pilot.table_bytes.items() if table not in per_run)
    fixed = sum(pilot.table_bytes.get(t, 0) for t in per_run)
    assert estimate.disk_bytes == pytest.approx(3 * (grows * scale + fixed))


def test_a_web_run_records_the_link_series_only(tmp_path):
    """Web users open connections one after another: sampling them would keep every finished
    connection's state to the end, so `run` records the bottleneck's series alone."""
    out = tmp_path / "web"
    result = runner.invoke(app, ["run", str(EXAMPLES / "dumbbell.toml"), "--set", "duration_s=30",
                                 "--set", 'flows.0.app="web"', "--set", "flows.0.size_bytes=20000",
                                 "--set", "flows.0.count=5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "link_series.parquet").is_file() and (out / "run.png").is_file()
    assert not (out / "flow_series.parquet").exists() and not (out / "flow_delays.parquet").exists()


def test_a_long_runs_default_series_sample_less_often(tmp_path):
    """At most DEFAULT_SERIES_SAMPLES samples per series: a 3000 s run samples every 0.3 s,
    not every 0.1 s, so each link direction has about 10 000 rows, not 30 000."""
    from smallpipe.cli import DEFAULT_SERIES_SAMPLES
    out = tmp_path / "long"
    result = runner.invoke(app, ["run", DUMBBELL, "--set", "duration_s=3000", "--set", "flows.0.count=2",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    scenario = json.loads((out / "scenario.json").read_text())
    assert scenario["trace"]["interval_s"] == pytest.approx(3000 / DEFAULT_SERIES_SAMPLES)
    links = pl.read_parquet(out / "link_series.parquet")
    per_direction = links.group_by("link").len()["len"].max()
    assert DEFAULT_SERIES_SAMPLES <= per_direction <= DEFAULT_SERIES_SAMPLES + 2
