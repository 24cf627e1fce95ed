"""The `trace_conn` hook (what benches/validation compares with ns-3), and the harness's
scripted-drop case against ns-3 when the ns-3 bindings are installed."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from smallpipe import Scenario, simulate

ROOT = Path(__file__).resolve().parents[1]


def one_flow(**link):
    return Scenario.from_dict({
        "duration_s": 3, "trace_conn": 0,
        "link": {"rate_bps": 1e6, "queue": {"kind": "droptail", "limit_pkts": 1000}, **link},
        "tcp": {"packet_size_bytes": 500, "overhead_max_ms": 0, "initial_window_pkts": 4},
        "flows": [{"app": "bulk", "rtt_ms": 200}],
    })


def test_trace_starts_with_the_syn_and_an_initial_window_of_four_segments():
    t = simulate(one_flow()).trace
    sent = t.filter(t["sent"])
    mss = 500 - 40 - 12
    assert (sent["seq"][0], sent["flags"][0] & 0x02) == (0, 0x02)  # the SYN, at the ISS
    data = sent.filter(sent["payload_len"] > 0)
    # RFC 3390: four segments at once, seq 1, 1+MSS, ... right after the handshake (one RTT).
    first = data.head(4)
    assert first["seq"].to_list() == [1 + k * mss for k in range(4)]
    assert first["time_ns"].n_unique() == 1 and abs(first["time_ns"][0] / 1e6 - 200) < 5
    assert first["cwnd_bytes"][0] == 4 * mss


def test_a_dropped_segment_halves_the_window_to_flightsize_over_two():
    # Data packet 20 lost (forward packets: the SYN first, then data): fast retransmit.
    t = simulate(one_flow(drop_nth=[21])).trace
    retx = t.filter(t["sent"] & (t["seq"] == 1 + 19 * 448))
    assert retx.height == 2  # sent, then retransmitted once
    at = retx["time_ns"][1]
    before = t.filter((t["time_ns"] < at) & t["sent"])
    flight = before["seq"].max() + 448 - (1 + 19 * 448)  # SND.NXT - SND.UNA at the loss
    after = t.filter(t["time_ns"] == at)
    # RFC 5681 (4) / RFC 6675 §5 (4.2): ssthresh = cwnd = max(FlightSize / 2, 2 SMSS).
    assert after["ssthresh_bytes"][0] == max(flight // 2, 2 * 448)


@pytest.mark.skipif(importlib.util.find_spec("ns") is None, reason="ns-3 bindings not installed (smallpipe[bench])")
def test_scripted_drops_send_as_many_segments_as_ns3(tmp_path):
    doc = tmp_path / "validation.md"
    doc.write_text("<!-- summary -->\n<!-- /summary -->\n<!-- table:scripted -->\n<!-- /table:scripted -->\n")
    subprocess.run([sys.executable, str(ROOT / "benches/validation/run.py"), "--only", "scripted",
                    "--out", str(tmp_path), "--doc", str(doc)], check=True, timeout=300)
    rows = (tmp_path / "summary.csv").read_text().splitlines()
    # The same number of data segments (±1) in the first 30 RTTs despite the drops; the
    # per-segment timing rows are known to differ (docs/validation.md, diagnoses 1 and 5).
    sent = next(r for r in rows if "data segments sent in 30 RTTs" in r)
    assert sent.split(",")[-2] == "pass", sent
