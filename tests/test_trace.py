"""The opt-in ``[trace]`` outputs through `smallpipe run`: the pcap read back by tshark, the
time series against the queue's own limits and counters."""

import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

from smallpipe.cli import app
from smallpipe.result import Result

runner = CliRunner()

LIMIT_PKTS = 20
MSS_BYTES = 1500 - 40 - 12  # timestamps on (the default)
# Four bulk flows through a 20-packet drop-tail with 1% wire loss: queue drops, link losses,
# SACK blocks and timeouts all happen in 10 s.
SCENARIO = f"""
duration_s = 10.0
slice_s = 1.0

[link]
rate_bps = 1_000_000
loss = 0.01
queue = {{ kind = "droptail", limit_pkts = {LIMIT_PKTS} }}

[[flows]]
count = 4
app = "bulk"
rtt_ms = [40.0, 120.0]
"""


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("trace")
    scenario = tmp / "small.toml"
    scenario.write_text(SCENARIO)
    out = tmp / "run"
    args = ["run", str(scenario), "--out", str(out), "--pcap", "--events", "--trace-links", "--trace-flows", "all",
            "--trace-interval", "0.05", "--set", "trace.pcap_snaplen=1514"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def test_run_writes_the_trace_files(traced_run: Path) -> None:
    for name in ("flow_series.parquet", "link_series.parquet", "events.parquet", "bottleneck.pcap"):
        assert (traced_run / name).is_file(), name
    back = Result.read(traced_run)
    assert back.meta["trace_truncated"] == []
    assert back.pcap is not None and back.pcap == (traced_run / "bottleneck.pcap").read_bytes()
    assert back.flow_series.get_column("flow_id").unique().sort().to_list() == [0, 1, 2, 3]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (scripts/test.sh installs it)")
def test_pcap_opens_in_tshark_every_packet_tcp_with_good_checksums(traced_run: Path) -> None:
    """tshark, with checksum validation on, decodes every record as TCP with good IPv4 and
    TCP checksums, and there is one record per packet the two bottleneck directions sent.
    (Whole frames are kept here: tshark cannot verify a TCP checksum over a cut payload.)"""
    pcap = traced_run / "bottleneck.pcap"
    fields = ["tcp.srcport", "ip.checksum.status", "tcp.checksum.status", "frame.len", "frame.cap_len"]
    out = subprocess.run(
        ["tshark", "-n", "-r", str(pcap), "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
         "-T", "fields", *[arg for f in fields for arg in ("-e", f)]],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.splitlines()
    links = pl.read_parquet(traced_run / "links.parquet")
    sent = links.filter(pl.col("name").is_in(["bottleneck", "bottleneck_reverse"])).get_column("tx_pkts").sum()
    assert len(out) == sent > 1000
    rows = [line.split("\t") for line in out]
    assert all(r[0].isdigit() for r in rows), "a record tshark did not decode as TCP"
    assert {r[1] for r in rows} == {"1"}, "IPv4 checksum status other than good"
    assert {r[2] for r in rows} == {"1"}, "TCP checksum status other than good"
    # Full-size data segments: 1500 IP bytes in a 1514-byte Ethernet frame.
    assert max(int(r[3]) for r in rows) == 1514
    assert all(r[3] == r[4] for r in rows)


def test_time_series_respect_the_queue(traced_run: Path) -> None:
    """Backlog never above the 20-packet limit; per-interval drops add up to the link's
    drops; the backlog follows enqueued − dequeued − dropped; cwnd never below one MSS."""
    series = pl.read_parquet(traced_run / "link_series.parquet")
    links = pl.read_parquet(traced_run / "links.parquet")
    for name in ("bottleneck", "bottleneck_reverse"):
        rows = series.filter(pl.col("link") == name).sort("time_ns")
        assert rows.height == 200  # 10 s every 50 ms, the last at the end
        assert rows.get_column("backlog_pkts").max() <= LIMIT_PKTS
        link = links.filter(pl.col("name") == name).row(0, named=True)
        assert rows.get_column("dropped_pkts").sum() == link["dropped_pkts"]
        assert rows.get_column("drop_link_loss").sum() == link["drop_link_loss"]
        in_queue = rows["dropped_pkts"] - rows["drop_link_loss"]
        change = (rows["enqueued_pkts"] - rows["dequeued_pkts"] - in_queue).cum_sum()
        assert change.to_list() == rows["backlog_pkts"].to_list()
    forward = links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    assert forward["drop_overlimit"] > 0 and forward["drop_link_loss"] > 0
    flows = pl.read_parquet(traced_run / "flow_series.parquet")
    assert flows.get_column("cwnd_bytes").min() >= MSS_BYTES


def test_event_trace_counts_every_drop_with_its_reason(traced_run: Path) -> None:
    events = pl.read_parquet(traced_run / "events.parquet")
    links = pl.read_parquet(traced_run / "links.parquet")
    forward = links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    drops = events.filter((pl.col("link") == "bottleneck") & (pl.col("event") == "drop"))
    by_reason = dict(drops.group_by("reason").len().iter_rows())
    assert by_reason == {r: forward[f"drop_{r}"] for r in ("overlimit", "link_loss")}


def test_bad_trace_flags_exit_2(tmp_path: Path) -> None:
    scenario = tmp_path / "small.toml"
    scenario.write_text(SCENARIO)
    result = runner.invoke(app, ["run", str(scenario), "--out", str(tmp_path / "o"), "--trace-flows", "x"])
    assert result.exit_code == 2
    result = runner.invoke(app, ["run", str(scenario), "--out", str(tmp_path / "o"), "--trace-links",
                                 "--trace-interval", "0"])
    assert result.exit_code == 2
    assert "trace.interval_s" in result.output
