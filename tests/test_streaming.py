"""Streamed per-flow tables (`[output] stream_flows_every`): the parts on disk hold exactly
the rows of the same run kept in memory, the online summary agrees with those rows, and an
interrupted run keeps the parts it wrote."""

from __future__ import annotations

import math

import polars as pl
import pytest
from smallpipe import Scenario
from smallpipe._smallpipe import ConfigError
from smallpipe.cli import app
from smallpipe.result import Interrupted, Result, reporting_progress, simulate
from smallpipe.streaming import FCT_BINS_PER_DECADE, STREAMED_TABLES, streamed_parts
from typer.testing import CliRunner

# Short Poisson flows over 20 host pairs and a few transfers with progress points: many
# connections finish (and are recycled) during the run, some are open at its end.
CONFIG = {
    "duration_s": 6.0,
    "slice_s": 1.0,
    "link": {"rate_bps": 4e6, "queue": {"kind": "fq_codel"}},
    "tcp": {"packet_size_bytes": 500},
    "flows": [
        {"app": "poisson", "count": 20, "rtt_ms": [20, 120], "load": 0.8,
         "size": {"dist": "pareto", "mean": 5000, "shape": 1.5}},
        {"app": "transfer", "count": 3, "rtt_ms": 60, "size_bytes": 30000, "start_s": [0, 2],
         "record_progress": True},
    ],
}
STREAMED = {**CONFIG, "output": {"stream_flows_every": 40}}


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort("flow_id", maintain_order=True)


def test_streamed_parts_hold_the_rows_of_the_run_in_memory(tmp_path):
    whole = simulate(CONFIG)
    streamed = simulate(STREAMED, stream_dir=tmp_path)
    assert whole.flows.height > 200
    meta = streamed.meta["streamed"]
    assert meta["parts"] >= 3, meta
    assert len(streamed_parts(tmp_path, "flows")) == meta["parts"]
    assert streamed.flows.is_empty()  # the rows are on disk, not in memory
    for table in STREAMED_TABLES:
        on_disk = streamed.scan(table).collect()
        assert on_disk.height > 0 or table == "bursts", table  # no interactive flows here
        assert _sorted(on_disk).equals(_sorted(getattr(whole, table))), table
    assert streamed.links.equals(whole.links) and streamed.units.equals(whole.units)
    assert streamed.meta["flows_opened"] == whole.flows.height
    assert streamed.meta["packets_to_closed_flows"] == 0


def test_the_online_summary_agrees_with_the_rows(tmp_path):
    whole = simulate(CONFIG)
    summary = simulate(STREAMED, stream_dir=tmp_path).meta["streamed"]
    finished = whole.flows.filter(pl.col("end_ns").is_not_null())
    assert summary["flows"] == whole.flows.height
    assert summary["finished"] == finished.height
    assert summary["timeouts"] == whole.flows.get_column("timeouts").sum()
    fct_s = ((finished.get_column("end_ns") - finished.get_column("start_ns")) / 1e9).sort()
    width = 10 ** (1 / FCT_BINS_PER_DECADE)
    for q, key in ((0.5, "fct_p50_s"), (0.99, "fct_p99_s")):
        exact = fct_s[math.ceil(q * fct_s.len()) - 1]  # the nearest-rank quantile
        assert exact <= summary[key] * (1 + 1e-9) and summary[key] < exact * width * (1 + 1e-9), (q, exact, summary[key])


def test_an_interrupted_streamed_run_keeps_its_parts(tmp_path):
    def stop_after_4_s(scenario):
        def update(now_ns, end_ns):
            if now_ns >= 4e9:
                raise KeyboardInterrupt

        return update

    with reporting_progress(stop_after_4_s), pytest.raises(Interrupted) as caught:
        simulate(STREAMED, stream_dir=tmp_path)
    part = caught.value.result
    assert part.meta["partial"] is True
    flows = part.scan("flows").collect()
    assert flows.height == part.meta["streamed"]["flows"] > 0
    assert flows.get_column("start_ns").max() < part.meta["stopped_at_ns"]


def test_stream_flows_every_is_validated():
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict({**CONFIG, "output": {"stream_flows_every": 0}})
    assert caught.value.field == "output.stream_flows_every"
    assert "output" not in Scenario.from_dict(CONFIG).to_dict()


def test_run_streams_into_its_directory_and_reads_back_lazily(tmp_path):
    scenario = tmp_path / "streamed.toml"
    scenario.write_text(
        'duration_s = 6.0\nslice_s = 1.0\n[output]\nstream_flows_every = 40\n[link]\nrate_bps = 4e6\n'
        '[tcp]\npacket_size_bytes = 500\n[[flows]]\napp = "poisson"\ncount = 20\nrtt_ms = 50\nload = 0.8\n'
        'size = { dist = "pareto", mean = 5000, shape = 1.5 }\n'
    )
    out = tmp_path / "run"
    invoked = CliRunner().invoke(app, ["run", str(scenario), "--out", str(out)])
    assert invoked.exit_code == 0, invoked.output
    assert "flows finished" in invoked.output
    back = Result.read(out)
    assert len(streamed_parts(out, "flows")) == back.meta["streamed"]["parts"] >= 2
    assert back.scan("flows").collect().height == back.meta["flows_opened"]
    assert not (out / "flows.parquet").exists()


@pytest.mark.slow
def test_thesis_fig52_quick_summary_is_the_same_streamed(tmp_path, monkeypatch):
    """Figure 5.2's quick run read back from streamed parts gives the table of the run held
    in memory (whose CSV `test_reproductions_pinned` pins)."""
    from smallpipe.experiments import thesis_fig52 as fig52

    monkeypatch.setattr(fig52, "STREAM_FLOWS_EVERY", 500)  # several parts of its ~4 000 flows
    in_memory = fig52.summary(fig52.run(seed=1, **fig52.QUICK))
    streamed = fig52.summary(fig52.run(seed=1, **fig52.QUICK, stream_dir=tmp_path))
    assert len(streamed_parts(tmp_path / "tcp", "flows")) >= 2
    assert streamed.equals(in_memory)


@pytest.mark.slow
def test_fig52_scale_summarizes_in_each_child_what_run_and_summary_give(tmp_path):
    """benches/fig52_scale.py summarizes each protocol in its own process and keeps only the
    counted rows' narrow types; its table must be `summary(run(...))` of the same set-up,
    and it must say how much of its peak was the simulation's. A protocol run by an earlier
    command with the same set-up is kept, not run again, and joins the table."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from smallpipe.experiments import thesis_fig52 as fig52

    bench = Path(__file__).resolve().parents[1] / "benches" / "fig52_scale.py"
    flows = 6e4
    def bench_run(*protocols: str) -> str:
        return subprocess.run([sys.executable, str(bench), "--flows", str(flows), "--protocols", *protocols,
                               "--jobs", "1", "--out", str(tmp_path / "out")], check=True, capture_output=True,
                              text=True).stdout

    assert "kept from an earlier run" not in bench_run("tcp")
    assert "tcp: kept from an earlier run" in bench_run("red", "tcp")
    table = pl.read_csv(tmp_path / "out" / "thesis-fig5.2-scale.csv").drop("smallpipe_version", "smallpipe_commit")
    per_s = fig52.LOAD * fig52.RATE_BPS / (fig52.MEAN_PKTS * 1000 * 8)  # 1000-byte packets on the wire
    rows = fig52.run(protocols=("tcp", "red"), duration_s=flows / per_s, warmup_s=1.0, drain_s=3.0,
                     stream_dir=tmp_path / "again")
    assert rows.schema["packets"] == pl.Int16
    expected = fig52.summary(rows)
    assert table.select(expected.columns).equals(expected.cast(table.select(expected.columns).schema))
    runs = json.loads((tmp_path / "out" / "resources.json").read_text())["runs"]
    for r in runs:
        assert 0 < r["peak_rss_simulation_mib"] <= r["peak_rss_mib"]
        assert r["counted_rows"] == rows.filter(pl.col("protocol") == r["protocol"]).height


def test_the_memory_guard_counts_one_batch_of_streamed_rows():
    """Figure 5.2's 10^8 flows (Poisson at 90% of 2.4 Gbit/s, 25-packet mean, ~10^4 s):
    kept in memory their rows alone need 10^8 x CONNECTION_BYTES = 100 GB; streamed, the
    guard counts two batches and the estimate fits the issue's 4 GB."""
    import json

    from smallpipe import _smallpipe
    from smallpipe.guard import CONNECTION_BYTES, estimate_memory

    flows_per_s = 0.9 * 2.4e9 / (8 * 25_000)
    config = {
        "duration_s": 1e8 / flows_per_s,
        "link": {"rate_bps": 2.4e9},
        "flows": [{"app": "poisson", "count": 1000, "rtt_ms": 100, "load": 0.9,
                   "size": {"dist": "pareto", "mean": 25_000, "shape": 1.2}}],
    }

    def estimate(extra):
        return estimate_memory(json.loads(_smallpipe.validate_config(json.dumps({**config, **extra}))))

    kept, streamed = estimate({}), estimate({"output": {"stream_flows_every": 100_000}})
    assert kept.connections == pytest.approx(1e8, rel=0.05)
    assert kept.total_bytes > 1e8 * CONNECTION_BYTES
    assert streamed.total_bytes < 4e9
