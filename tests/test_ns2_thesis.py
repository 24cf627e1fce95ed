"""benches/ns2/thesis.tcl and thesis_ns2.py: one run of the thesis's Figure 5.1 set-up in ns-2
2.35, held to slow start's arithmetic and to smallpipe's ``"ns2"`` stack on the same seed.
Seconds; skipped when Debian's `ns` is not installed."""

import random

import pytest
from ns2_drivers import load, requires_ns

pytestmark = requires_ns



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


@pytest.mark.parametrize("protocol", ["tcp", "iw10"])
def test_ns2_generator_stays_under_its_slow_start_ceiling(protocol, tmp_path):
    from smallpipe.experiments import thesis_fig53
    from smallpipe.models import fct_bounds

    thesis_ns2 = load("thesis_ns2")
    out = thesis_ns2.run_ns(thesis_ns2.ns2_params(protocol, 100_000, 20, mode="generators", background=1,
                                                  duration_s=40.5), tmp_path)
    done = [int(fields[4]) for fields in out if fields[0] == "second"]
    assert len(done) == 20
    # One generator restarts its 32-packet flow only when the last is done: at most
    # 32 packets per loss-free slow-start FCT (handshake and rounds), and on an idle link
    # it should come near that.
    fct_s = fct_bounds.slow_start_fct_s(32, 0.040, 10e6, 1000, thesis_ns2.IW_PKTS[protocol])
    ceiling = thesis_fig53.utilization_ceiling(1, fct_s)
    per_second = sorted(n * 32 / 1250 for n in done)
    assert per_second[-1] <= ceiling + 32 / 1250  # a flow more or less at a second's edge
    assert per_second[len(per_second) // 2] >= 0.8 * ceiling
