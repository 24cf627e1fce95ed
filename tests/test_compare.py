"""`smallpipe compare`: disciplines over seeds, Student-t intervals, curves, resuming."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

from smallpipe import ConfigError, store
from smallpipe.cli import app
from smallpipe.compare import (
    CompareError,
    paired_table,
    plan_comparison,
    run_compare,
    summary_table,
    switch_queue,
    workload_metrics,
)
from smallpipe.presets import taq_dumbbell
from smallpipe.scenario import Scenario
from smallpipe.stats import (
    mean_ci,
    paired_t_p,
    sign_test_p,
    t_quantile,
    t_two_sided_probability,
)

runner = CliRunner()

# Student's t 0.975 quantiles from a printed table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
T_975_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 9: 2.262, 29: 2.045, 100: 1.984}


@pytest.mark.parametrize(("dof", "expected"), sorted(T_975_TABLE.items()))
def test_t_quantile_matches_the_printed_table(dof, expected):
    assert t_quantile(0.975, dof) == pytest.approx(expected, abs=6e-4)


def test_t_distribution_closed_forms():
    # ν = 1 is Cauchy: P(|T| <= t) = (2/π) atan t; ν = 2: t / √(2 + t²).
    for t in (0.1, 1.0, 3.0, 30.0):
        assert t_two_sided_probability(t, 1) == pytest.approx(2 / math.pi * math.atan(t), rel=1e-12)
        assert t_two_sided_probability(t, 2) == pytest.approx(t / math.sqrt(2 + t * t), rel=1e-12)
    # Large ν tends to the normal: the 97.5% point is 1.95996.
    assert t_quantile(0.975, 100_000) == pytest.approx(1.959964, abs=1e-4)


def test_t_quantile_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    for dof in (1, 2, 3, 5, 9, 17, 40):
        for p in (0.9, 0.975, 0.995):
            assert t_quantile(p, dof) == pytest.approx(stats.t.ppf(p, dof), rel=1e-9)


def test_mean_ci_of_a_hand_computed_example():
    # 1..5: mean 3, s² = (4 + 1 + 0 + 1 + 4) / 4 = 2.5, half-width t(0.975, 4) · √(2.5 / 5)
    # = 2.776445 · 0.707107 = 1.963243.
    mean, half = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == 3.0
    assert half == pytest.approx(1.963243, abs=1e-6)
    assert mean_ci([2.0, float("nan"), 4.0]) == pytest.approx((3.0, 12.706205 * 1.0), rel=1e-6)
    assert math.isnan(mean_ci([7.0])[1]) and mean_ci([7.0])[0] == 7.0


# ---------------------------------------------------------------- switching disciplines


def test_switch_keeps_set_fields_the_new_kind_takes_and_drops_the_rest():
    base = taq_dumbbell(flows=4, rate_bps=1_000_000, duration_s=5.0)  # droptail, limit_pkts = 50
    fq_codel, dropped = switch_queue(base, "fq_codel")
    expected = base.with_overrides({"link.queue": {"kind": "fq_codel", "limit_pkts": 50}})
    assert fq_codel == expected and dropped == []

    red = base.with_overrides({"link.queue": {"kind": "red", "limit_pkts": 40, "max_p": 0.2}})
    droptail, dropped = switch_queue(red, "droptail")
    assert droptail == base.with_overrides({"link.queue": {"kind": "droptail", "limit_pkts": 40}})
    assert dropped == ["link.queue.max_p"]


def test_switch_does_not_carry_the_old_kinds_defaults():
    # DropTail's default limit (100) must not replace TAQ's own default.
    base = taq_dumbbell(flows=4, rate_bps=1_000_000, duration_s=5.0).with_overrides({"link.queue": {"kind": "droptail"}})
    taq, _ = switch_queue(base, "taq")
    assert taq == base.with_overrides({"link.queue": {"kind": "taq"}})


def test_grid_rejects_repeated_kinds_and_unknown_kinds():
    base = taq_dumbbell(flows=4, rate_bps=1_000_000, duration_s=5.0)
    with pytest.raises(CompareError, match="droptail more than once"):
        plan_comparison(base, ["droptail", "droptail"], [1, 2], path="x.toml")
    with pytest.raises(ConfigError, match="link.queue.kind"):
        plan_comparison(base, ["droptail", "nope"], [1, 2], path="x.toml")
    plan = plan_comparison(base, ["droptail", "taq"], [1, 2, 3], path="x.toml")
    assert len({p.point_id for p in plan.grid.points}) == 6


def test_metrics_follow_the_workload():
    bulk = taq_dumbbell(flows=4, rate_bps=1_000_000, duration_s=5.0)
    assert {"short_term_jain", "goodput_bps"} <= set(workload_metrics(bulk))
    assert "fct_p90_s" not in workload_metrics(bulk)
    interactive = Scenario.from_toml("examples/interactive.toml")
    assert {"response_median_ms", "response_p99_ms"} <= set(workload_metrics(interactive))
    assert "short_term_jain" not in workload_metrics(interactive)
    transfers = bulk.with_overrides({"flows.0.app": "transfer", "flows.0.size_bytes": 20_000})
    assert {"fct_median_s", "fct_p90_s", "fct_p99_s", "hang_share"} <= set(workload_metrics(transfers))


def test_paired_tests_agree_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for n in (2, 3, 5, 10, 30):
        a, b = rng.normal(0.5, 0.1, n), rng.normal(0.55, 0.1, n)
        assert paired_t_p(list(a - b)) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-6)
        k = int((a - b > 0).sum())
        assert sign_test_p(list(a - b)) == pytest.approx(stats.binomtest(k, n).pvalue, rel=1e-9)
    assert (paired_t_p([0.1, 0.1, 0.1]), paired_t_p([0.0, 0.0]), paired_t_p([1.0])) == (0.0, 1.0, pytest.approx(math.nan, nan_ok=True))
    assert sign_test_p([0.0, 1.0, 2.0, 3.0]) == pytest.approx(0.25)  # the tie is left out: 3 of 3 positive


def test_intervals_are_clipped_to_the_metric_range():
    # A share that is 0 on three seeds and 0.2 on one: mean 0.05, half-width
    # t(0.975, 3) · 0.1 / 2 = 0.159, so the unclipped interval would reach −0.109.
    runs = {"droptail": {seed: {"hang_share": v, "goodput_bps": 1e5 * (1 + v)} for seed, v in enumerate([0, 0, 0, 0.2])}}
    row = summary_table(runs, ["hang_share", "goodput_bps"]).row(0, named=True)
    assert row["hang_share_mean"] == pytest.approx(0.05)
    assert row["hang_share_ci95"] == pytest.approx(T_975_TABLE[3] * 0.1 / 2, rel=1e-3)
    assert (row["hang_share_lo"], row["hang_share_hi"]) == (0.0, pytest.approx(0.05 + row["hang_share_ci95"]))
    assert row["goodput_bps_lo"] == pytest.approx(row["goodput_bps_mean"] - row["goodput_bps_ci95"])


def test_paired_differences_use_only_the_seeds_both_finished():
    runs = {
        "droptail": {1: {"loss_rate": 0.10}, 2: {"loss_rate": 0.20}, 3: {"loss_rate": 0.30}},
        "taq": {1: {"loss_rate": 0.05}, 3: {"loss_rate": 0.20}, 4: {"loss_rate": 0.9}},
    }
    row = paired_table(runs, ["loss_rate"], "droptail").row(0, named=True)
    # Seeds 1 and 3: differences −0.05 and −0.10 against a baseline mean of 0.20.
    assert (row["discipline"], row["baseline"], row["pairs"]) == ("taq", "droptail", 2)
    assert row["diff_mean"] == pytest.approx(-0.075)
    assert row["diff_ci95"] == pytest.approx(T_975_TABLE[1] * math.sqrt(0.025**2 * 2) / math.sqrt(2), rel=1e-3)
    assert row["relative_change"] == pytest.approx(-0.075 / 0.20)


# ---------------------------------------------------------------- a real comparison

SEEDS = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def taq_vs_droptail(tmp_path_factory):
    """30 bulk flows on 0.5 Mbit/s (about 2 packets per RTT each), 5 s slices: TAQ's
    regime. Four seeds per discipline, on two worker processes."""
    out = tmp_path_factory.mktemp("compare")
    base = taq_dumbbell(flows=30, rate_bps=500_000, duration_s=60.0, slice_s=5.0)
    return run_compare(plan_comparison(base, ["droptail", "taq"], SEEDS, path="taq-dumbbell.toml"), out, workers=2)


def test_taq_and_droptail_short_term_jain_intervals_do_not_overlap(taq_vs_droptail):
    table = taq_vs_droptail.table.sort("discipline")
    (dt_mean, taq_mean) = table["short_term_jain_mean"].to_list()
    (dt_half, taq_half) = table["short_term_jain_ci95"].to_list()
    assert dt_half > 0 and taq_half > 0
    assert taq_mean - taq_half > dt_mean + dt_half, table


def test_table_intervals_match_an_independent_t_interval(taq_vs_droptail):
    # The per-seed values straight from the store, a textbook interval with t(0.975, 3)
    # from the printed table.
    points = store.read_points(taq_vs_droptail.db)
    for row in taq_vs_droptail.table.iter_rows(named=True):
        values = points.filter(pl.col("link.queue.kind") == row["discipline"])["short_term_jain"].to_numpy()
        assert values.size == len(SEEDS)
        half = T_975_TABLE[3] * values.std(ddof=1) / math.sqrt(values.size)
        assert row["short_term_jain_mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert row["short_term_jain_ci95"] == pytest.approx(half, rel=1e-3)


def test_paired_rows_match_the_per_seed_values_in_the_store(taq_vs_droptail):
    stats = pytest.importorskip("scipy.stats")
    points = store.read_points(taq_vs_droptail.db).sort("seed")
    per_kind = {kind: points.filter(pl.col("link.queue.kind") == kind)["short_term_jain"].to_numpy()
                for kind in ("droptail", "taq")}
    differences = per_kind["taq"] - per_kind["droptail"]
    row = taq_vs_droptail.paired.filter(pl.col("metric") == "short_term_jain").row(0, named=True)
    assert (row["discipline"], row["baseline"], row["pairs"]) == ("taq", "droptail", len(SEEDS))
    assert row["diff_mean"] == pytest.approx(differences.mean(), rel=1e-12)
    assert row["diff_ci95"] == pytest.approx(T_975_TABLE[3] * differences.std(ddof=1) / 2, rel=1e-3)
    assert row["t_p"] == pytest.approx(stats.ttest_rel(per_kind["taq"], per_kind["droptail"]).pvalue, rel=1e-6)
    assert row["relative_change"] == pytest.approx(differences.mean() / per_kind["droptail"].mean())
    # TAQ's per-slice Jain is higher on every seed (the interval test above): the smallest
    # sign-test p with 4 pairs, 2 / 2^4.
    assert row["sign_p"] == pytest.approx(0.125)
    assert pl.read_csv(taq_vs_droptail.paired_csv).height == taq_vs_droptail.paired.height
    for name in taq_vs_droptail.metrics:
        low, high = (taq_vs_droptail.table[f"{name}_{end}"] for end in ("lo", "hi"))
        assert (low >= 0).all() and (high >= low).all(), name
        if name.endswith(("jain", "share")) or name in ("utilization", "loss_rate"):
            assert (high <= 1).all(), name


def test_outputs_exist_with_one_row_per_discipline(taq_vs_droptail):
    comparison = taq_vs_droptail
    for path in (comparison.csv, comparison.png, comparison.db):
        assert path.is_file() and path.stat().st_size > 0
    csv = pl.read_csv(comparison.csv)
    assert csv["discipline"].to_list() == ["droptail", "taq"]
    assert csv["seeds"].to_list() == [4, 4]
    assert {f"{m}_{part}" for m in comparison.metrics for part in ("mean", "ci95")} <= set(csv.columns)
    assert all(len(runs) == len(SEEDS) for runs in comparison.curves.values())


def test_resume_after_interrupt_does_not_recompute_finished_runs(tmp_path):
    base = taq_dumbbell(flows=4, rate_bps=1_000_000, duration_s=5.0)
    plan = plan_comparison(base, ["droptail", "fq_codel"], [1, 2, 3], path="b.toml")
    finished = []

    def interrupt_after_two(record):
        finished.append(record["point_id"])
        if len(finished) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_compare(plan, tmp_path, workers=0, on_point=interrupt_after_two)
    before = store.read_points(tmp_path / "compare.duckdb").select("point_id", "finished_at")
    assert sorted(before["point_id"]) == sorted(finished)

    again = []
    comparison = run_compare(plan, tmp_path, workers=0, on_point=lambda record: again.append(record["point_id"]))
    assert (comparison.outcome.skipped_ok, comparison.outcome.ran) == (2, 4)
    assert not set(again) & set(finished)
    after = store.read_points(tmp_path / "compare.duckdb").select("point_id", "finished_at")
    assert before.join(after, on="point_id", suffix="_after").select(
        (pl.col("finished_at") == pl.col("finished_at_after")).all()
    ).item()
    assert comparison.table["seeds"].to_list() == [3, 3]


# ---------------------------------------------------------------- the command

SCENARIO = """
seed = 3
duration_s = 5.0
slice_s = 1.0
[link]
rate_bps = 1_000_000
queue = { kind = "droptail", limit_pkts = 20 }
[tcp]
packet_size_bytes = 500
[[flows]]
count = 4
app = "bulk"
rtt_ms = 100.0
"""


def test_command_prints_one_row_per_discipline(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    result = runner.invoke(app, ["compare", str(scenario), "--queue", "droptail,fq_codel", "--seeds", "2",
                                 "--workers", "0", "--out", str(out), "--set", "flows.0.count=3"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum(line.startswith("│ droptail ") for line in lines) == 1
    assert sum(line.startswith("│ fq_codel ") for line in lines) == 1
    assert "mean ± 95% CI over 2 seeds" in result.output
    assert "paired over the same seeds, against droptail" in result.output
    assert "fq_codel − droptail" in result.output
    assert (out / "compare.csv").is_file() and (out / "compare.png").is_file()
    points = store.read_points(out / "compare.duckdb")
    assert sorted(points["seed"].unique()) == [3, 4]  # from the scenario's seed on
    flows = np.unique(pl.read_parquet(out / "compare_runs" / points["point_id"][0] / "flows.parquet")["flow_id"])
    assert flows.size == 3  # --set applied


@pytest.mark.parametrize(
    ("queue", "message"),
    [("droptail,droptail", "more than once"), ("droptail,nope", "nope"), ("droptail,", "comma-separated")],
)
def test_command_rejects_bad_disciplines(tmp_path, queue, message):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    result = runner.invoke(app, ["compare", str(scenario), "--queue", queue, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_transfer_metrics_match_the_runs_tables(tmp_path):
    # 40 transfers of 20 kB arriving over 20 s on 0.5 Mbit/s: FCT quantiles, unfinished
    # and hang shares recomputed here from each run's Parquet tables with NumPy.
    base = taq_dumbbell(flows=40, rate_bps=500_000, duration_s=30.0).with_overrides(
        {"flows.0.app": "transfer", "flows.0.size_bytes": 20_000, "flows.0.start_s": [0.0, 20.0]}
    )
    comparison = run_compare(plan_comparison(base, ["droptail", "fq_codel"], [1, 2], path="t.toml"), tmp_path, workers=0)
    assert {"fct_median_s", "fct_p90_s", "fct_p99_s", "unfinished_share", "hang_share"} <= set(comparison.metrics)
    points = store.read_points(comparison.db)
    for row in comparison.table.iter_rows(named=True):
        p90s, unfinished, hangs = [], [], []
        for run_dir in points.filter(pl.col("link.queue.kind") == row["discipline"])["run_dir"]:
            flows = pl.read_parquet(f"{run_dir}/flows.parquet")
            done = flows.filter(pl.col("end_ns").is_not_null())
            p90s.append(np.percentile((done["end_ns"] - done["start_ns"]).to_numpy() / 1e9, 90))
            unfinished.append(1 - done.height / flows.height)
            units = pl.read_parquet(f"{run_dir}/units.parquet")
            hangs.append(np.mean(units["longest_hang_ns"].to_numpy() > 20e9))
        assert row["fct_p90_s_mean"] == pytest.approx(np.mean(p90s), rel=1e-9)
        assert row["unfinished_share_mean"] == pytest.approx(np.mean(unfinished), abs=1e-12)
        assert row["hang_share_mean"] == pytest.approx(np.mean(hangs), abs=1e-12)
        assert 0 < row["fct_median_s_mean"] <= row["fct_p90_s_mean"] <= row["fct_p99_s_mean"]
    assert comparison.png.is_file()
