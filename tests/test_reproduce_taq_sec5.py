"""TAQ Section 5 reproductions (Figures 8, 9, 10, the §2.3 hangs with TAQ, Figure 12): the
paper's claims that hold in our full runs, and invariants, on short runs with a seed other
than the documented one. Expected values come from the paper or from arithmetic, never
from our own output."""

from __future__ import annotations

import math

import polars as pl
import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe import metrics
from smallpipe.experiments import (
    taq_fig8,
    taq_fig9,
    taq_fig10,
    taq_fig12,
    taq_hangs_queues,
)
from smallpipe.presets import taq_dumbbell
from smallpipe.result import simulate

# Figure 8 -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fig8():
    # The Figure 8 dumbbell at 1 Mbit/s (taq_aqm.run's runs), per 20 s slice, first skipped.
    runs = {}
    for kind in ("droptail", "taq"):
        for share in (5_000, 50_000):
            result = simulate(taq_dumbbell(flows=1_000_000 // share, rate_bps=1_000_000, duration_s=1000.0, seed=2,
                                           queue={"kind": kind}))
            per_slice = metrics.jain_per_slice(result.slices, flows=result.flows).filter(pl.col("slice") > 0)
            runs[(kind, share)] = (per_slice["jain"], result.links.filter(pl.col("name") == "bottleneck"))
    return runs


def _taq_minus_droptail(fig8, share: int) -> tuple[float, float]:
    """TAQ's mean 20 s index minus DropTail's, and twice the standard error of that difference."""
    (taq, _), (dt, _) = fig8[("taq", share)], fig8[("droptail", share)]
    se = math.hypot(taq.std() / math.sqrt(taq.len()), dt.std() / math.sqrt(dt.len()))
    return taq.mean() - dt.mean(), 2 * se


def test_fig8_taq_raises_short_term_fairness_deep_in_the_small_packet_regime(fig8) -> None:
    # Paper §5.1: "TAQ improves fairness characteristics ... in comparison to DT"; it gives no
    # number, so "higher" means beyond the noise: more than two standard errors of the difference.
    gain, noise = _taq_minus_droptail(fig8, 5_000)
    assert gain > noise, (gain, noise)


def test_fig8_taq_is_fair_at_a_large_fair_share_and_keeps_the_link_busy(fig8) -> None:
    # "higher than 0.8 in many cases"; "the link utilization is close to 1". DropTail is fair
    # here too (Figure 2), so the index alone does not single TAQ out: TAQ must also be above
    # DropTail beyond the noise, as "across the entire spectrum" says (page: 0.998 against
    # 0.987 on this run, two standard errors 0.001).
    taq, _ = fig8[("taq", 50_000)]
    assert taq.mean() > taq_fig8.PAPER["jain_often_above"]
    gain, noise = _taq_minus_droptail(fig8, 50_000)
    assert gain > noise, (gain, noise)
    assert min(fig8[("taq", share)][1]["utilization"][0] for share in (5_000, 50_000)) > 0.95


# Figure 9 -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fig9():
    return taq_fig9.run(disciplines=("droptail", "taq"), duration_s=120.0, seed=2)


def test_fig9_every_flow_is_in_exactly_one_class_per_epoch(fig9) -> None:
    _, evolutions = fig9
    for evolution in evolutions.values():
        totals = evolution.select(pl.sum_horizontal(metrics.EVOLUTION_STATES).alias("n"))["n"]
        assert (totals == taq_fig9.FLOWS).all()


def test_fig9_stalled_flows_never_fall_below_the_link_capacity_floor(fig9) -> None:
    _, evolutions = fig9
    floor = taq_fig9.stalled_lower_bound(flows=180, rate_bps=600_000, epoch_s=0.4)
    assert floor == pytest.approx(180 - 2 * 600_000 * 0.4 / 4000)
    for (_, epoch_s), evolution in evolutions.items():
        if epoch_s == taq_fig9.EPOCH_S:
            assert evolution["stalled"].min() >= floor


def test_fig9_taq_leaves_fewer_flows_stalled_than_droptail(fig9) -> None:
    # The paper's direction (stalled flows "nearly zero" under TAQ, many under DT); the
    # "nearly zero" itself is impossible here (see the floor above).
    summary, _ = fig9
    long_epoch = summary.filter(pl.col("epoch_s") > taq_fig9.EPOCH_S)
    stalled = dict(zip(long_epoch["discipline"], long_epoch["stalled_mean"], strict=True))
    assert stalled["taq"] < stalled["droptail"]


# Figure 10 ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fig10():
    return taq_fig10.run(disciplines=("droptail", "taq"), seeds=(5,), duration_s=400.0)


def test_fig10_short_flow_download_time_grows_about_linearly_at_the_fair_share_under_taq(fig10) -> None:
    _, summary = fig10
    taq = summary.filter(pl.col("discipline") == "taq").row(0, named=True)
    droptail = summary.filter(pl.col("discipline") == "droptail").row(0, named=True)
    # At the 20 kbit/s fair share a 500-byte packet takes 4000 bit / 20 kbit/s = 0.2 s.
    fair_slope_s = 4000 / 20_000
    assert 0.5 * fair_slope_s < taq["slope_s_per_pkt"] < 1.5 * fair_slope_s
    assert taq["r2"] > 0.5
    assert taq["r2"] > droptail["r2"], "TAQ's download times are more predictable than DropTail's"
    assert taq["unfinished"] == 0


def test_fig10_fit_recovers_a_known_line() -> None:
    objects = pl.DataFrame({"packets": [1, 2, 3, 4], "download_s": [0.5, 0.7, 0.9, 1.1]})
    line = taq_fig10.fit(objects)
    assert line["slope_s_per_pkt"] == pytest.approx(0.2)
    assert line["intercept_s"] == pytest.approx(0.3)
    assert line["r2"] == pytest.approx(1.0)


def test_fig10_short_flows_are_the_papers_32() -> None:
    scenario = taq_fig10.scenario("taq", duration_s=10.0, seed=1)
    transfers = [g for g in scenario["flows"] if g["app"] == "transfer"]
    bulk = [g for g in scenario["flows"] if g["app"] == "bulk"]
    assert sum(g["count"] for g in transfers) == 32
    assert sum(g["count"] for g in bulk) == 50
    assert scenario["link"]["rate_bps"] / 50 == 20_000, "the paper's 20 kbit/s fair share"


# Section 2.3 hangs with TAQ --------------------------------------------------------------

@pytest.fixture(scope="module")
def hangs():
    return taq_hangs_queues.run(disciplines=("droptail", "taq"), users_list=(200,), duration_s=300.0, seed=2)


def test_hangs_taq_leaves_fewer_users_hanging_over_a_minute_than_droptail(hangs) -> None:
    # TAQ's purpose (§3–§5): fewer repeated timeouts, so fewer long user-perceived hangs.
    table, _ = hangs
    over_60 = dict(zip(table["discipline"], table["share_hang_over_60s"], strict=True))
    assert over_60["taq"] < over_60["droptail"]


def test_hangs_share_over_a_minute_never_exceeds_share_over_20_s(hangs) -> None:
    table, units = hangs
    assert (table["share_hang_over_60s"] <= table["share_hang_over_20s"]).all()
    assert all(u.height == 200 for u in units.values())


# Figure 12 ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fig12():
    # The quick run's log (600 s) at both scales, four queues: about 5 s.
    return taq_fig12.run(queues=("droptail", "taq", "taq+ac", "taq+ac old_reading"), log_s=600.0,
                         duration_s=900.0, seed=1)


def _run(fig12, scale: str, queue: str) -> dict:
    return fig12[2].filter(pl.col("scale") == scale, pl.col("queue") == queue).row(0, named=True)


def test_fig12_object_time_counts_the_wait_in_the_client(fig12) -> None:
    objects, buckets, runs = fig12
    done = objects.filter(pl.col("end_ns").is_not_null())
    assert (done["time_s"] > 0).all()
    # 50 clients x 4 connections: most objects wait for a connection after their logged time.
    stress = done.filter(pl.col("scale") == "stress", pl.col("queue") == "droptail")
    assert stress["time_s"].mean() > 5 * ((stress["end_ns"] - stress["wanted_ns"]).min() / 1e9)
    per_run = buckets.group_by("scale", "queue").agg(pl.col("objects").sum())
    assert per_run.group_by("scale").agg(pl.col("objects").n_unique())["objects"].to_list() == [1, 1]
    shares = runs.select(pl.sum_horizontal("syn0", "syn1", "syn2", "syn3plus"))
    assert ((shares.to_series() - 1.0).abs() < 1e-9).all()
    assert (runs["unfinished"] == 0).all(), "every refused client gets in (T_wait)"


def test_fig12_paper_scale_stays_under_the_threshold_so_admission_changes_little(fig12) -> None:
    # 2 clients x 4 connections on 1 Mbit/s: 125 kbit/s per connection, loss under the 0.09
    # threshold, so admission control refuses few SYNs and TAQ+AC tracks TAQ (docs/reproductions/taq.md:
    # within 25% on the short-object median; the paper's 5x does not appear at its own scale).
    for q in ("droptail", "taq", "taq+ac"):
        assert _run(fig12, "paper", q)["loss_rate"] < 0.09
    ac, taq = _run(fig12, "paper", "taq+ac"), _run(fig12, "paper", "taq")
    assert ac["admission_drops"] < 0.1 * ac["objects"]
    assert abs(ac["short_median_gain"] / taq["short_median_gain"] - 1) < 0.25
    assert ac["short_median_gain"] < 2.0


def test_fig12_stress_one_pool_per_t_wait_holds_loss_at_the_threshold(fig12) -> None:
    # With one pool per T_wait and the NewFlow limit, admission holds the loss near its
    # 0.09 threshold (page: 0.09 +- 0.04); read as every waiting pool per T_wait, it does not
    # (loss above 0.25, as high as TAQ without admission control).
    ac, old, taq = (_run(fig12, "stress", q) for q in ("taq+ac", "taq+ac old_reading", "taq"))
    assert abs(ac["loss_rate"] - 0.09) < 0.04
    assert old["loss_rate"] > 0.25 and taq["loss_rate"] > 0.25


def test_fig12_stress_admission_buys_the_median_with_the_tail(fig12) -> None:
    # Page tolerances: short-object median at least 1.5x and large at least 2x faster than
    # DropTail (paper: 5x and 2x), but the short-object worst case slower (paper: 5x faster)
    # and the mean per object higher; the old reading is slower than DropTail in the median.
    ac, old, dt = (_run(fig12, "stress", q) for q in ("taq+ac", "taq+ac old_reading", "droptail"))
    assert ac["short_median_gain"] >= 1.5 and ac["large_median_gain"] >= 2.0
    assert ac["short_max_gain"] < 1.0
    assert ac["mean_s"] > dt["mean_s"]
    assert old["short_median_gain"] < 1.0
