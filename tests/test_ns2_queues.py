"""ns-2 2.35 queue variants (``link.queue.variant = "ns2"``): RED's automatic parameters
against what a live ns-2 prints, and each variant through the command line."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

from smallpipe import _smallpipe
from smallpipe.cli import app

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benches" / "ns2" / "queue_params.tcl"
runner = CliRunner()


def ns2_lines() -> list[dict[str, str]]:
    """``ns benches/ns2/queue_params.tcl``, one dict of its ``key=value`` fields per line."""
    ns = shutil.which("ns")
    if ns is None:
        pytest.skip("ns-2 (`ns`) is not installed: apt-get install ns2")
    out = subprocess.run([ns, str(SCRIPT)], capture_output=True, text=True, timeout=60, check=True).stdout
    return [{"queue": line.split()[0], **dict(re.findall(r"(\w+)=(\S+)", line))} for line in out.splitlines() if "=" in line]


def test_red_automatic_parameters_equal_ns2s():
    reds = [line for line in ns2_lines() if line["queue"] == "red"]
    assert len(reds) == 3
    for line in reds:
        rate, delay_ns = int(line["rate_bps"]), round(float(line["delay_s"]) * 1e9)
        ours = _smallpipe.red_params(json.dumps({"kind": "red", "variant": "ns2"}), rate, delay_ns)
        assert ours["min_th_pkts"] == pytest.approx(float(line["thresh"]), rel=1e-12), line
        assert ours["max_th_pkts"] == pytest.approx(float(line["maxthresh"]), rel=1e-12), line
        assert ours["min_th"] == pytest.approx(float(line["thresh_queue"]), rel=1e-12), line
        assert ours["max_th"] == pytest.approx(float(line["maxthresh_queue"]), rel=1e-12), line
        assert ours["w_q"] == pytest.approx(float(line["q_weight"]), rel=1e-12), line
        assert ours["max_p"] == pytest.approx(float(line["max_p"]), rel=1e-12), line
        assert ours["byte_mode"] is (line["bytes"] == "1" and line["queue_in_bytes"] == "1")


def run(tmp_path: Path, kind: str, variant: str) -> tuple[dict[str, object], int, int]:
    """10 s of examples/dumbbell.toml (100 flows on 1 Mbit/s, limit_pkts = 50) with the
    bottleneck's discipline set: its links row, and the most packets and bytes it held at
    any 10 ms sample."""
    out = tmp_path / f"{kind}-{variant}"
    args = ["run", str(ROOT / "examples" / "dumbbell.toml"), "--out", str(out), "--set", "duration_s=10",
            "--set", "slice_s=5", "--set", f"link.queue.kind={kind}", "--set", f"link.queue.variant={variant}",
            "--set", "trace.links=true", "--set", "trace.interval_s=0.01"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    link = pl.read_parquet(out / "links.parquet").filter(pl.col("name") == "bottleneck").row(0, named=True)
    series = pl.read_parquet(out / "link_series.parquet").filter(pl.col("link") == "bottleneck")
    return link, int(series["backlog_pkts"].max()), int(series["backlog_bytes"].max())  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["droptail", "red", "sfq", "fq"])
def test_each_variant_runs_from_the_command_line(tmp_path, kind):
    link, most_pkts, most_bytes = run(tmp_path, kind, "ns2")
    assert link["dropped_pkts"] > 0 and link["utilization"] > 0.9, link
    if kind == "droptail":  # ns-2 drops at length + 1 >= limit_ (50): 49 wait at most
        assert most_pkts == 49 and link["drop_overlimit"] == link["dropped_pkts"], (most_pkts, link)
    if kind == "sfq":  # maxqueue_ 40 whatever limit_pkts says (ns-2's SFQ does not read limit_)
        assert most_pkts <= 40, most_pkts
    if kind == "fq":  # DRR: blimit_ 25 000 bytes, pushed out from the fattest bucket
        assert 20_000 < most_bytes <= 25_000 and link["drop_flow_limit"] == link["dropped_pkts"], (most_bytes, link)
    if kind == "red":  # byte mode: refused once 50·500 bytes wait, so under one packet more
        assert most_bytes < 25_000 + 1500 and link["drop_early"] > 0, (most_bytes, link)


@pytest.mark.parametrize("kind", ["droptail", "sfq"])
def test_our_default_variants_hold_the_50_packets_of_limit_pkts(tmp_path, kind):
    """The same set-up with our disciplines: 50 packets wait (DropTail), more than ns-2's
    SFQ's 40 (Linux SFQ's buffer is limit_pkts)."""
    most_pkts = run(tmp_path, kind, "default")[1]
    assert most_pkts == 50 if kind == "droptail" else most_pkts > 40, most_pkts


def test_ns2_knobs_without_the_variant_are_refused(tmp_path):
    args = ["run", str(ROOT / "examples" / "dumbbell.toml"), "--out", str(tmp_path / "x"),
            "--set", "link.queue.kind=sfq", "--set", "link.queue.ns2.buckets=8"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "link.queue.ns2" in result.output and "variant" in result.output, result.output
