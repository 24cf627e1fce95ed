"""benches/ns2/thesis.tcl and thesis_ns2.py: one run of the thesis's Figure 5.1 set-up in ns-2
2.35, held to slow start's arithmetic and to smallpipe's ``"ns2"`` stack on the same seed.
Seconds; skipped when Debian's `ns` is not installed."""

import importlib.util
import random
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("ns") is None,
                                reason="ns-2 is not installed (`apt-get install ns2`; scripts/test.sh does it)")


def load(name):
    path = ROOT / "benches" / "ns2" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def measuring_flow(protocol, tmp_path, seed=100_000):
    thesis_ns2 = load("thesis_ns2")
    rtt_s = 0.040
    start_s = 250 * rtt_s + random.Random(seed).uniform(0, rtt_s)
    trace = tmp_path / "measure.tr"
    thesis_ns2.run_ns(thesis_ns2.ns2_params(protocol, seed, 20, measure_start_s=start_s, trace=trace,
                                            duration_s=start_s + 30), tmp_path)
    return thesis_ns2, thesis_ns2.measuring_fct_s(trace, start_s, 500)


def test_ns2_measuring_flow_is_no_faster_than_its_path(tmp_path):
    _, fcts = measuring_flow("fq", tmp_path)
    assert len(fcts) == 500
    assert fcts == sorted(fcts)
    serialization_s = 1000 * 8 / 10e6
    # The header-only first packet's round trip (40 ms), then the first data packet's way to
    # the receiver (20 ms and two serializations); each later packet at least one
    # serialization after the one before it.
    assert fcts[0] >= 0.060
    assert fcts[-1] - fcts[0] >= 499 * serialization_s - 1e-9


def test_ns2_stack_over_droptail_matches_ns2(tmp_path):
    from smallpipe.experiments import thesis_fig51
    from smallpipe.result import simulate

    thesis_ns2, theirs = measuring_flow("tcp", tmp_path)
    sc = thesis_fig51.scenario(100_000, "tcp").with_overrides(thesis_ns2.smallpipe_overrides("tcp", 20))
    ours = simulate(sc).progress.sort("packets")
    assert ours["packets"].to_list() == list(range(1, 501))
    worst = max(abs(a - b / 1e9) for a, b in zip(theirs, ours["fct_ns"].to_list(), strict=True))
    # Same agent rules and the same DropTail queue: the FCTs agree to well under one
    # packet's serialization (0.8 ms) at every size.
    assert worst < 0.4e-3, worst
