"""Matta & Guo §2 in packet-level simulation (smallpipe.experiments.isolation_matta_guo):
PID senders on FIFOs settle or oscillate on the side of Eq. (2) / Eq. (6) the model puts
them, and the FIFOs do what a tail-drop link does, by hand."""

from __future__ import annotations

import numpy as np
import pytest
from smallpipe.experiments import isolation_matta_guo as mg
from smallpipe.models import matta_guo


@pytest.fixture(scope="module")
def quick():
    cases = [c for c in mg.CASES if not c.name.startswith("equal-") or float(c.name[6:]) in mg.QUICK_MARGINS]
    table, traces = mg.run(cases, steps=200)
    return table, traces


def _row(table, case, control="aggregate", path="all"):
    return table.filter(case=case, control=control, path=path).row(0, named=True)


def test_a_constant_window_above_the_service_fills_the_buffer_then_drops_the_excess():
    # By hand: α = β = 0 keeps w = 25 packets a step against C = 20: the queue gains 5 a step
    # until the 60-packet buffer is reached (55 after 11 steps); from then on the link serves
    # 20 a step, never holds more than 60, and drops what it cannot hold.
    still = mg.FlowClass("still", 1, 0.0, 0.0, 20, 30.0, 60)
    trace = mg.simulate_control([still], isolated=False, steps=30, w0_pkts=[25.0])
    np.testing.assert_array_equal(trace.q[:12, 0], 5 * np.arange(12))
    assert np.all(trace.served[:, 0] == 20) and np.all(trace.sent[:, 0] == 25)
    assert np.all(trace.q[12:, 0] >= 55) and np.all(trace.q[:, 0] <= 60)
    assert trace.dropped[0] > 0
    # Accounting at the end of the last step: sent = served + dropped + backlog.
    final_backlog = 30 * 25 - 30 * 20 - trace.dropped[0]
    assert 55 <= final_backlog <= 60


def test_eq2_sides_in_the_packet_level_run(quick):
    table, _ = quick
    stable, unstable = _row(table, "equal-0.8"), _row(table, "equal-1.2")
    assert stable["model_stable"] and not unstable["model_stable"]
    # Stable: the rounding to whole packets (one carry: the ten equal senders' carries are
    # spread, so they round as one) through the loop's ℓ1 gain, computed from the model.
    bound = matta_guo.rounding_gain([stable["alpha"]] * 10, [stable["beta"]] * 10) / 2
    assert 2 < bound < 6  # (4.7 packets: far below the unstable side's floor)
    assert stable["amplitude_pkts"] <= bound
    # Eq. (3): at equilibrium the queue is at its target and the link fully used.
    assert abs(stable["mean_queue_pkts"] - 40) <= bound
    assert stable["throughput_per_service"] == 1.0 and stable["dropped_pkts"] == 0
    # Unstable: the error grows until the window floor acts, where the queue falls by C = 20
    # in one step: half of 20 less one packet of rounding.
    assert unstable["amplitude_pkts"] >= (20 - 1) / 2


def test_isolation_keeps_the_long_class_stable_beside_short_flows_that_unsettle_a_shared_queue(quick):
    table, traces = quick
    for case in ("long+short-aggressive", "long+short-mild"):
        shared = _row(table, case)
        long = _row(table, case, "isolated", "long")
        # Shared: Σ(α + 2β) over all 16 flows exceeds 4 (Eq. 2 summed); alone, the long
        # class's 0.72 is below 4 (Eq. 6 for the class).
        assert shared["alpha_plus_2beta_sum"] > 4 and not shared["model_stable"]
        assert shared["amplitude_pkts"] >= (20 - 2) / 2  # two classes, two carries
        assert long["alpha_plus_2beta_sum"] == pytest.approx(0.72) and long["model_stable"]
        assert long["amplitude_pkts"] <= matta_guo.rounding_gain([0.05] * 8, [0.02] * 8) / 2
        # Eq. (7): the isolated long class settles at its own target B_i = 20.
        assert abs(traces[f"{case}/isolated"][100:, 0] - 20).max() <= 1
    short_aggressive = _row(table, "long+short-aggressive", "isolated", "short")
    short_mild = _row(table, "long+short-mild", "isolated", "short")
    assert not short_aggressive["model_stable"] and short_aggressive["amplitude_pkts"] >= (10 - 1) / 2
    assert short_mild["model_stable"] and short_mild["amplitude_pkts"] <= short_mild["model_amplitude_at_most_pkts"]


def test_every_row_agrees_with_the_model(quick):
    table, _ = quick
    assert mg.summary(table)["agrees"].all()


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="service_pkts=3"):
        mg.simulate_control([mg.FlowClass("x", 1, 0.1, 0.1, 3, 10.0, 20)], isolated=False, steps=10)
    with pytest.raises(ValueError, match="w0_pkts"):
        mg.simulate_control([mg.LONG], isolated=False, steps=10, w0_pkts=[1.0])
    with pytest.raises(ValueError, match="steps=1"):
        mg.simulate_control([mg.LONG], isolated=False, steps=1)
