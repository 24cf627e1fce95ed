"""Trace-driven links on the testbed: a saturating TCP download through ``smallpipe-box``
sending by a mahimahi trace gets the trace's capacity, as the simulator does
(``docs/links.md``).

Needs root, ``ip netns`` and the two binaries (skips otherwise, as ``test_testbed.py``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from smallpipe import Scenario, simulate
from smallpipe.testbed import run_testbed
from smallpipe.testbed.runner import TestbedError, box_config, find_binary
from smallpipe.testbed.tables import link_window
from test_testbed import needs_testbed

TRACES = Path(__file__).resolve().parent.parent / "examples" / "traces"
TRACE = TRACES / "square-0.5-2mbit.trace"
OPPORTUNITY_BYTES = 1500


def _opportunities_ms(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def _trace_bytes(times_ms: list[int], start_ns: int, end_ns: int) -> int:
    """Bytes the looping trace can carry in (start, end], counted from the file alone."""
    period_ns = times_ms[-1] * 1_000_000
    count = 0
    for loop in range(start_ns // period_ns, end_ns // period_ns + 1):
        count += sum(1 for ms in times_ms if start_ns < loop * period_ns + ms * 1_000_000 <= end_ns)
    return count * OPPORTUNITY_BYTES


def _scenario(duration_s: float) -> Scenario:
    return Scenario(seed=1, duration_s=duration_s, slice_s=1.0,
                    link={"trace": str(TRACE), "delay_ms": 5.0, "queue": {"kind": "droptail", "limit_pkts": 100}},
                    tcp={"min_rto_ms": 200.0}, flows=[{"app": "bulk", "count": 4, "rtt_ms": 60.0}])


def test_the_box_config_carries_traces_loss_models_and_framing(tmp_path) -> None:
    model = {"kind": "gilbert_elliott", "p": 0.01, "r": 0.25, "h": 0.0, "k": 1.0}
    scenario = Scenario(seed=1, duration_s=5.0,
                        link={"trace": str(TRACE), "reverse_trace": str(TRACES / "constant-1mbit.trace"),
                              "loss_model": model, "framing": "atm", "overhead_bytes": 8},
                        flows=[{"app": "bulk", "count": 1, "rtt_ms": 60.0}])
    config = box_config(scenario, [])
    down, up = config["b_to_a"], config["a_to_b"]
    assert down["trace"] == str(TRACE) and "rate_bps" not in down
    assert up["trace"] == str(TRACES / "constant-1mbit.trace") and "rate_bps" not in up
    assert down["loss_model"] == model and "loss" not in down and up["loss"] == 0.0
    assert all(d["framing"] == "atm" and d["overhead_bytes"] == 8 for d in (up, down))
    # The box reads it as the simulator does: the traces' capacities become the rates.
    try:
        box = find_binary("smallpipe-box")
    except TestbedError as error:
        pytest.skip(str(error))
    (tmp_path / "box.json").write_text(json.dumps(config))
    check = subprocess.run([str(box), "check", str(tmp_path / "box.json")], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    assert "rate 1254000 bit/s" in check.stdout and "rate 1000000 bit/s" in check.stdout, check.stdout


@needs_testbed
def test_a_saturating_download_through_a_traced_box_gets_the_trace_capacity(tmp_path) -> None:
    duration_s = 24.0
    scenario = _scenario(duration_s)
    run_testbed(scenario, out=tmp_path)
    config = json.loads((tmp_path / "box_config.json").read_text())
    assert config["b_to_a"]["trace"] == str(TRACE) and "rate_bps" not in config["b_to_a"]
    # Past slow start; the box's samples are on its own clock, the trace's time base.
    window = link_window(tmp_path, 4.0, duration_s)
    origin_ns = json.loads((tmp_path / "box" / "box.json").read_text())["clock_start_monotonic_ns"]
    t0_ns = json.loads((tmp_path / "plan.json").read_text())["t0_ns"]
    start_ns = round(window["start_s"] * 1e9) + t0_ns - origin_ns
    end_ns = round(window["end_s"] * 1e9) + t0_ns - origin_ns
    want = _trace_bytes(_opportunities_ms(TRACE), start_ns, end_ns)
    box_share = window["tx_bytes"] / want
    assert abs(box_share - 1.0) < 0.01, f"box sent {window['tx_bytes']} B, the trace carries {want} B in its window"
    # The simulator on the same scenario, over the whole run (start-up included).
    sim = simulate(scenario).links.row(0, named=True)
    sim_share = sim["tx_bytes"] / _trace_bytes(_opportunities_ms(TRACE), 0, round(duration_s * 1e9))
    assert abs(sim_share - 1.0) < 0.01, f"simulator sent {sim_share:.4f} of the trace's capacity"
    # Bytes per second relative to what the trace offers in each one's window (the square
    # wave's rate depends on where a window starts): within 1% of each other.
    assert abs(box_share / sim_share - 1.0) < 0.01, f"box {box_share:.4f}, simulator {sim_share:.4f} of the trace"
