"""benches/dumbbell_cost.py: the cost of an event on the TAQ dumbbell against N."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benches" / "dumbbell_cost.py"


@pytest.mark.parametrize(("args", "field"), [(["--flows", "10", "0"], "--flows: 0"), (["--runs", "0"], "--runs: 0")])
def test_bad_arguments_name_the_field_and_the_value(args: list[str], field: str) -> None:
    run = subprocess.run([sys.executable, str(BENCH), *args], check=False, capture_output=True, text=True)
    assert run.returncode != 0
    assert field in run.stderr and "not allowed" in run.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("cargo") is None,
                    reason="needs valgrind and cargo (apt-get install valgrind)")
def test_instructions_per_event_do_not_grow_with_the_flows(tmp_path: Path) -> None:
    # docs/performance.md: every event does the same work whatever N (an arrival, a TCP
    # step, a queue offer); what grows with N is the state the events touch, hence the
    # cache misses. Twenty times the flows may not cost 5% more instructions per event (an
    # O(N) scan per event would), and must cost more misses.
    out = tmp_path / "cost.csv"
    subprocess.run([sys.executable, str(BENCH), "--flows", "10", "200", "--runs", "1", "--duration-s", "20",
                    "--cachegrind-duration-s", "200", "--out", str(out)], check=True, capture_output=True)
    small, large = ({k: float(v) for k, v in row.items() if k != "fifo_hops"} for row in csv.DictReader(out.open()))
    assert large["instructions_per_event"] / small["instructions_per_event"] < 1.05
    assert large["l1d_misses_per_event"] > small["l1d_misses_per_event"]
