"""The testbed reproductions and the Linux side of the validation, end to end on short runs:
they check the code paths (bounds any run must satisfy), not Linux's numbers, which need
quiet cores (scripts/testbed-measurements.sh). Skipped unless root with ``ip netns`` and the
testbed binaries; about 45 s in all.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from smallpipe.experiments import (
    PAGES,
    REPRODUCTIONS,
    TESTBED,
    page_of,
    taq_testbed_fig11,
    taq_testbed_fig12,
)
from test_testbed import needs_testbed

VALIDATION = Path(__file__).resolve().parents[1] / "benches" / "validation"


def test_testbed_figures_have_a_page_of_their_own():
    # "taq" is also a prefix of "taq-testbed-…": the longest prefix must win.
    assert page_of("taq-testbed-fig11") == "taq-testbed"
    assert page_of("taq-testbed-fig12") == "taq-testbed"
    assert page_of("taq-fig12") == "taq"
    assert TESTBED <= set(REPRODUCTIONS)
    assert PAGES["taq-testbed"] == "taq-testbed"


@pytest.mark.parametrize("module", [taq_testbed_fig11, taq_testbed_fig12])
def test_an_unknown_scale_is_refused_before_any_run(module, tmp_path):
    # Raised before the first testbed run, so it needs no root.
    with pytest.raises(ValueError, match="scale: 'hour' is not a scale; expected full, session"):
        module.reproduce(tmp_path, scale="hour")


def test_fig11_resumes_from_its_checkpoint_and_reruns_only_what_is_missing(tmp_path, monkeypatch):
    # No testbed: run_point is replaced by a stand-in that counts its calls, and the first
    # call of `run` is interrupted after three points (as Ctrl-C after three runs would).
    calls: list[tuple[str, str, int, int]] = []

    def fake_point(*, discipline, rate_bps, fair_share_bps, congestion_control, duration_s, slice_s, seed):
        if len(calls) == 3 and not resumed:
            raise KeyboardInterrupt
        calls.append((discipline, congestion_control, rate_bps, fair_share_bps))
        return {"discipline": discipline, "congestion_control": congestion_control, "rate_bps": rate_bps,
                "fair_share_bps": fair_share_bps, "duration_s": duration_s, "short_term_jain": fair_share_bps / 1e5}

    monkeypatch.setattr(taq_testbed_fig11, "run_point", fake_point)
    grid = {"disciplines": ("taq", "droptail"), "rates_bps": (600_000,), "fair_shares_bps": (10_000, 30_000, 100_000),
            "congestion_controls": ("reno",), "duration_s": 60.0}
    checkpoint = tmp_path / "points.jsonl"
    resumed = False
    with pytest.raises(KeyboardInterrupt):
        taq_testbed_fig11.run(**grid, checkpoint=checkpoint)
    assert len(checkpoint.read_text().splitlines()) == 3
    resumed = True
    table = taq_testbed_fig11.run(**grid, checkpoint=checkpoint)
    assert len(calls) == 6, "the three points of the checkpoint are not run again"
    assert table.height == 6 and len(set(calls)) == 6
    assert table["fair_share_bps"].to_list() == [10_000, 30_000, 100_000] * 2
    # Another seed or duration is another run: nothing of the checkpoint is reused.
    taq_testbed_fig11.run(**{**grid, "duration_s": 30.0}, checkpoint=checkpoint)
    assert len(calls) == 12


@needs_testbed
@pytest.mark.parametrize(("discipline", "rate_bps", "fair_share_bps"), [("taq", 600_000, 100_000),
                                                                        ("droptail", 1_000_000, 50_000)])
def test_fig11_point_has_jain_within_its_bounds_and_no_more_than_the_link(discipline, rate_bps, fair_share_bps):
    row = taq_testbed_fig11.run_point(discipline=discipline, rate_bps=rate_bps, fair_share_bps=fair_share_bps,
                                      congestion_control="reno", duration_s=5.0, slice_s=1.0)
    n = rate_bps // fair_share_bps
    assert row["flows"] == n
    # Jain's index of n shares lies in [1/n, 1] (Jain, Chiu and Hawe 1984).
    assert 1 / n - 1e-9 <= row["short_term_jain"] <= 1 + 1e-9
    assert 1 / n - 1e-9 <= row["long_term_jain"] <= 1 + 1e-9
    # The box cannot send faster than the link (1% for the run's edges).
    assert 0 < row["utilization"] <= 1.01
    assert row["failed_connections"] == 0


def test_fig11_tables_put_each_point_on_a_row_and_the_simulator_in_parentheses():
    import polars as pl

    rows = [("taq", 600_000, 10_000, 0.8031, 24.28, 0.939), ("droptail", 600_000, 10_000, 0.5824, 16.37, 0.7712),
            ("taq", 1_000_000, 100_000, 0.8852, 3.1, 1.0)]
    table = pl.DataFrame([{"discipline": d, "congestion_control": "reno", "rate_bps": r, "fair_share_bps": f,
                           "flows": r // f, "short_term_jain": j, "timeouts_per_flow": t, "sim_short_term_jain": s}
                          for d, r, f, j, t, s in rows])
    text = taq_testbed_fig11.markdown(table)
    assert "| reno, 600 kbit/s | 10 kbit/s (60 flows) | 0.803 (0.939) | 0.582 (0.771) |" in text
    assert "| reno, 1 Mbit/s | 100 kbit/s (10 flows) | 0.885 (1.000) | — |" in text
    # No simulator column for timeouts in this table: Linux's number alone.
    assert "| reno, 600 kbit/s | 10 kbit/s (60 flows) | 24.28 | 16.37 |" in text


def test_fig12_stress_scale_replays_with_the_stress_clients_into_files_of_its_own(tmp_path, monkeypatch):
    # No testbed: the simulator stands in for run_testbed, over a 60 s log.
    import smallpipe.testbed
    from smallpipe import simulate

    monkeypatch.setattr(smallpipe.testbed, "run_testbed", lambda scenario, congestion_control: simulate(scenario))
    monkeypatch.setitem(taq_testbed_fig12.SCALES, "stress", (60.0, 90.0))
    runs = taq_testbed_fig12.reproduce(tmp_path, scale="stress")
    assert runs["scale"].to_list() == ["stress", "stress"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "taq-testbed-fig12-stress-runs.csv", "taq-testbed-fig12-stress-tables.md", "taq-testbed-fig12-stress.csv",
        "taq-testbed-fig12-stress.png"]


LOG = [  # (seconds, client, bytes): two clients, a handful of objects with distinct sizes
    (0.0, "10.0.0.1", 3000), (0.1, "10.0.0.2", 9000), (0.5, "10.0.0.1", 500),
    (1.0, "10.0.0.2", 20000), (1.2, "10.0.0.1", 1200), (1.5, "10.0.0.1", 7000),
]


@needs_testbed
def test_fig12_replay_fetches_every_object_whole_and_no_faster_than_two_round_trips(tmp_path):
    log = tmp_path / "access.log"
    log.write_text("".join(f"{1.7e9 + t:.3f} 5 {c} TCP_MISS/200 {b} GET http://x/{i} - DIRECT/198.18.255.1 text/html\n"
                           for i, (t, c, b) in enumerate(LOG)))
    objects, buckets, runs = taq_testbed_fig12.run(log=log, duration_s=8.0)
    assert runs["queue"].to_list() == ["droptail", "taq+ac"]
    for queue in ("droptail", "taq+ac"):
        got = objects.filter(objects["queue"] == queue)
        assert sorted(got["size_bytes"]) == sorted(b for _, _, b in LOG)
        assert got["end_ns"].null_count() == 0, "every object completes"
        assert (got["bytes_delivered"] == got["size_bytes"]).all()
        # Requested at its logged time (the clients, units in order of first appearance, start
        # at 0; 10 µs for the float epoch times of the log).
        logged = {b: t for t, _, b in LOG}
        for size, unit, requested_ns, wanted_ns, time_s in got.select(
                "size_bytes", "unit_id", "requested_ns", "wanted_ns", "time_s").iter_rows():
            assert unit == (0 if size in (3000, 500, 1200, 7000) else 1)
            assert abs(requested_ns - logged[size] * 1e9) < 1e4
            assert wanted_ns <= requested_ns
            # SYN, SYN-ACK, request and data each cross the path once: two base RTTs at least
            # (RTTs are drawn in [150, 300] ms).
            assert time_s >= 2 * 0.150
        assert buckets.filter(buckets["queue"] == queue)["objects"].sum() == len(LOG)


@needs_testbed
def test_linux_side_reports_the_window_after_the_warmup_within_the_links_bounds():
    sys.path.insert(0, str(VALIDATION))
    try:
        import linux_side
        import specs
    finally:
        sys.path.remove(str(VALIDATION))
    spec = specs.many(10, 1, warmup_s=2.0, duration_s=4.0)
    r = linux_side.run(spec)
    start_s, end_s = r["window_s"]
    # Samples every 1 s slice: the window starts at most a slice after the warm-up.
    assert 2.0 <= start_s <= 3.0 + 1e-6 and end_s <= 6.0 + 1e-6 and end_s - start_s >= 2.0
    assert 0 <= r["drops"] <= r["arrivals"] and r["loss_rate"] == pytest.approx(r["drops"] / r["arrivals"])
    # A mean of waiting packets cannot exceed the 50-packet DropTail limit.
    assert 0 <= r["mean_queue_pkts"] <= spec["queue_pkts"]
    # Bytes read after the warm-up fit through 1 Mbit/s in the time since (plus one window of
    # 64 KiB per flow that may have been in flight at the warm-up).
    assert sum(r["rx_bytes"]) * 8 <= spec["rate_bps"] * spec["duration_s"] + 10 * 65535 * 8
    assert len(r["timeouts"]) == 10 and min(r["timeouts"]) >= 0
