"""The captures read by a tool that knows nothing of smallpipe: tshark's TCP analysis of the
bottleneck pcap and of the end-host pcaps (``trace.pcap_hosts``) agrees with smallpipe's
own tables and series (docs/scenario.md, "End-host captures")."""

import functools
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None,
                                reason="tshark not installed (scripts/test.sh installs it)")

from smallpipe.cli import app
from smallpipe.result import Result

RWND_BYTES = 30_000
ETHERNET_HEADER_BYTES = 14
SNAPLEN_BYTES = 128  # trace.pcap_snaplen's default
SENDERS = "198.18.0.0/16"  # unit u's sender is 198.18.0.(u+1), its receiver 198.19.0.(u+1)
# Two bulk flows through a 20-packet drop-tail at 1 Mbit/s: each may keep 30 000 bytes in
# flight (20 segments), the pair more than the path's pipe (~10 packets) and the queue, so
# the queue drops and both senders retransmit, fast and by timeout. No delayed ACKs: the
# receiver ACKs each segment as it arrives.
SCENARIO = f"""
duration_s = 10.0
slice_s = 1.0

[link]
rate_bps = 1_000_000
queue = {{ kind = "droptail", limit_pkts = 20 }}

[tcp]
rwnd_bytes = {RWND_BYTES}
delayed_ack = false

[[flows]]
count = 2
app = "bulk"
rtt_ms = [60.0, 100.0]
"""
HOSTS = ("sender0", "receiver0", "sender1", "receiver1")
FLOWS = (0, 1)  # flow f is unit f's only connection (bulk: one per unit), captured at sender{f}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pcap_tools")
    scenario = tmp / "two.toml"
    scenario.write_text(SCENARIO)
    out = tmp / "run"
    args = ["run", str(scenario), "--out", str(out), "--pcap", "--trace-flows", "all", "--trace-interval", "0.05"]
    for host in HOSTS:
        args += ["--pcap-host", host]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


@functools.cache
def tshark(pcap: Path, fields: tuple[str, ...], display_filter: str = "") -> list[list[str]]:
    """One row of `fields` per frame of `pcap` that passes `display_filter` (a field a frame
    lacks is an empty string)."""
    args = ["tshark", "-n", "-r", str(pcap), "-T", "fields", "-E", "occurrence=f"]
    args += [arg for f in fields for arg in ("-e", f)]
    if display_filter:
        args += ["-Y", display_filter]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120).stdout
    return [line.split("\t") for line in out.splitlines()]


def time_ns(epoch: str) -> int:
    """tshark's ``frame.time_epoch`` ("9.123456789") in integer nanoseconds, exactly."""
    seconds, _, fraction = epoch.partition(".")
    return int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0")[:9])


def series(run: Path, flow: int) -> pl.DataFrame:
    return pl.read_parquet(run / "flow_series.parquet").filter(pl.col("flow_id") == flow).sort("time_ns")


def flow_row(run: Path, flow: int) -> dict[str, object]:
    return pl.read_parquet(run / "flows.parquet").filter(pl.col("flow_id") == flow).row(0, named=True)


def test_each_host_has_its_file_and_the_result_reads_them_back(run: Path) -> None:
    back = Result.read(run)
    assert sorted(back.host_pcaps) == sorted(HOSTS)
    for host in HOSTS:
        assert back.host_pcaps[host] == (run / f"{host}.pcap").read_bytes()
    assert back.meta["trace_truncated"] == []


def test_frames_keep_their_real_lengths(run: Path) -> None:
    """Over the bottleneck pcap tshark counts the two directions' transmissions, and their
    frame lengths add up to the links' IP bytes plus 14 bytes of Ethernet header each,
    though only the first 128 bytes of each frame are stored."""
    rows = tshark(run / "bottleneck.pcap", ("frame.len", "frame.cap_len"))
    links = pl.read_parquet(run / "links.parquet").filter(pl.col("name").is_in(["bottleneck", "bottleneck_reverse"]))
    tx_pkts = links["tx_pkts"].sum()
    assert len(rows) == tx_pkts > 1000
    assert sum(int(r[0]) for r in rows) == links["tx_bytes"].sum() + ETHERNET_HEADER_BYTES * tx_pkts
    assert max(int(r[1]) for r in rows) == SNAPLEN_BYTES
    assert all(int(r[1]) == min(int(r[0]), SNAPLEN_BYTES) for r in rows)


def test_conversations_hold_the_senders_segments(run: Path) -> None:
    """`conv,tcp` on a sender's capture: its frames toward the receiver are the segments
    it sent (`segments_sent`: SYN, data and FIN, retransmissions included) and its pure
    ACKs (none here: the handshake's ACK rides on the first data segment)."""
    for flow in FLOWS:
        pcap = run / f"sender{flow}.pcap"
        out = subprocess.run(["tshark", "-n", "-r", str(pcap), "-q", "-z", "conv,tcp"],
                             capture_output=True, text=True, check=True, timeout=120).stdout
        (conv,) = [line.split() for line in out.splitlines() if "<->" in line]
        # A <-> B, then frames and bytes (with a unit) B→A, then A→B; A is the sender.
        assert conv[0].startswith(f"198.18.0.{flow + 1}:"), conv
        to_receiver = int(conv[6])
        pure_acks = tshark(pcap, ("frame.number",),
                           f"ip.src == {SENDERS} and tcp.len == 0 and tcp.flags.syn == 0 and tcp.flags.fin == 0")
        assert to_receiver == flow_row(run, flow)["segments_sent"] + len(pure_acks)


def test_every_segment_advertises_the_receive_window(run: Path) -> None:
    """Wireshark's window (the field times the scale the SYNs negotiated: none, -2) is the
    configured `rwnd_bytes` on every frame of every capture, both directions."""
    for name in ("bottleneck", *HOSTS):
        rows = tshark(run / f"{name}.pcap", ("tcp.window_size", "tcp.window_size_scalefactor", "tcp.flags.syn"))
        assert rows and all(int(r[0]) == RWND_BYTES for r in rows), name
        assert all(r[1] == "-2" for r in rows if r[2] == "0"), f"{name}: a window scale other than none"


def test_retransmissions_are_those_tshark_finds(run: Path) -> None:
    """On a sender's own capture every segment below the highest sent is a retransmission
    (the sender never reorders): tshark flags exactly `retransmits` of them, and
    `fast_retransmits` of those as fast retransmissions (after three duplicate ACKs)."""
    total = 0
    for flow in FLOWS:
        rows = tshark(run / f"sender{flow}.pcap",
                      ("tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
                       "tcp.analysis.spurious_retransmission", "tcp.analysis.out_of_order"),
                      f"ip.src == {SENDERS}")
        flagged = [r for r in rows if any(r)]
        row = flow_row(run, flow)
        assert len(flagged) == row["retransmits"]
        assert sum(1 for r in flagged if r[1]) == row["fast_retransmits"] > 0
        total += len(flagged)
    assert total > 10, "the scenario should retransmit"


def test_goodput_series_is_the_cumulative_ack_on_the_senders_wire(run: Path) -> None:
    """`bytes_acked` at each sample is the highest ACK (tshark's relative number, so past the
    SYN's one) that reached the sender by then, less the SYN."""
    for flow in FLOWS:
        acks = [(time_ns(r[0]), int(r[1])) for r in tshark(run / f"sender{flow}.pcap", ("frame.time_epoch", "tcp.ack"),
                                                           f"not ip.src == {SENDERS}")]
        s = series(run, flow)
        highest, i = 1, 0
        for t, acked in zip(s["time_ns"], s["bytes_acked"], strict=True):
            while i < len(acks) and acks[i][0] <= t:
                highest = max(highest, acks[i][1])
                i += 1
            assert acked == highest - 1, f"flow {flow} at {t} ns"
        assert s["bytes_acked"][-1] > 400_000


def test_srtt_series_is_rfc_6298_over_the_timestamps_on_the_wire(run: Path) -> None:
    """With timestamps (RFC 7323) the sender takes an RTT sample from each ACK that advances
    the cumulative ACK: the arrival's timestamp clock (microseconds + 1, read off the
    capture's arrival time) less the echoed TSecr. RFC 6298 (2.2), (2.3): SRTT is the first
    sample, then SRTT + (R' − SRTT)/8. Recomputed from tshark's fields it is the srtt series
    to 8 ns: the estimator keeps whole nanoseconds, an error of at most 1 ns per update that
    decays by 7/8 at each, 1/(1 − 7/8) = 8 in all."""
    for flow in FLOWS:
        rows = tshark(run / f"sender{flow}.pcap", ("frame.time_epoch", "tcp.ack", "tcp.options.timestamp.tsecr"),
                      f"not ip.src == {SENDERS}")
        samples, highest = [], 0
        for epoch, ack, tsecr in rows:
            if int(ack) > highest:
                highest = int(ack)
                arrival = time_ns(epoch)
                samples.append((arrival, (arrival // 1000 + 1 - int(tsecr)) * 1000))
        s = series(run, flow).drop_nulls("srtt_ns")
        srtt, i = None, 0
        for t, ours in zip(s["time_ns"], s["srtt_ns"], strict=True):
            while i < len(samples) and samples[i][0] <= t:
                r = samples[i][1]
                srtt = r if srtt is None else srtt + (r - srtt) / 8
                i += 1
            assert srtt is not None and abs(ours - srtt) <= 8, f"flow {flow} at {t} ns: {ours} against {srtt}"
        assert s.height > 150


def test_min_rtt_is_one_of_tsharks_ack_rtt_samples(run: Path) -> None:
    """`rtt_min_ms` times one segment at a time (Karn), tshark every ACK's newest acked
    segment: ours are among tshark's (to the nanosecond), so our minimum is one of its
    samples and its minimum is no larger (the handshake left out, as ours leave it)."""
    for flow in FLOWS:
        rows = tshark(run / f"sender{flow}.pcap", ("tcp.analysis.ack_rtt",), "tcp.analysis.ack_rtt and tcp.flags.syn == 0")
        theirs = {time_ns(r[0]) for r in rows}
        ours = round(float(flow_row(run, flow)["rtt_min_ms"]) * 1e6)
        assert ours in theirs
        assert min(theirs) <= ours


def test_bytes_in_flight_agree_outside_sack_recovery(run: Path) -> None:
    """tshark's bytes in flight at a segment the sender sends is its highest sequence sent
    less the last ACK, less what SACK blocks cover. With no SACK block in the last ACK
    (the receiver holds nothing out of order) that is RFC 5681's FlightSize, the series'
    `flight_bytes`: at each sample whose last frame on the sender's wire is a new data
    segment it sent, the two are equal."""
    for flow in FLOWS:
        rows = tshark(run / f"sender{flow}.pcap",
                      ("frame.time_epoch", "ip.src", "tcp.len", "tcp.analysis.bytes_in_flight",
                       "tcp.analysis.retransmission", "tcp.options.sack_le"))
        s = series(run, flow)
        compared, i, last, last_ack_sacks = 0, 0, None, False
        for t, flight in zip(s["time_ns"], s["flight_bytes"], strict=True):
            while i < len(rows) and time_ns(rows[i][0]) <= t:
                last = rows[i]
                if not last[1].startswith("198.18."):
                    last_ack_sacks = bool(last[5])
                i += 1
            new_data = last is not None and last[1].startswith("198.18.") and int(last[2]) > 0 and not last[4]
            if new_data and not last_ack_sacks:
                assert last is not None and int(last[3]) == flight, f"flow {flow} at {t} ns"
                compared += 1
        assert compared > 100
