"""The workload issue's reproductions on short runs: the papers' claims, and invariants."""

from __future__ import annotations

import polars as pl
import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe import metrics
from smallpipe.experiments import (
    taq_aqm,
    taq_fig1,
    taq_fig3,
    taq_hangs,
    thesis_fig51,
    thesis_fig52,
    thesis_fig53,
    thesis_fig54,
)
from smallpipe.presets import taq_dumbbell
from smallpipe.result import simulate


def test_taq_hangs_200_users_all_hang_over_20_s_and_400_users_more_than_the_papers_half_over_60_s() -> None:
    table, units = taq_hangs.run(users_list=(200, 400), duration_s=600.0, seed=2)
    at = {row["users"]: row for row in table.iter_rows(named=True)}
    # The paper: all 200 users see a hang over 20 s; allow a few to escape.
    assert at[200]["share_hang_over_20s"] >= 0.9
    assert at[200]["utilization"] > 0.9
    assert units[200].height == 200
    # The paper: "almost 50%" of 400 users hang over a minute. Our web-user model does not
    # reproduce it (docs/reproductions/taq.md, Diagnosis): 0.81-0.83 on seeds 1-2, pinned at
    # 0.82 +- 0.1 so that a change of behaviour (or a model that reaches the paper) shows.
    assert abs(at[400]["share_hang_over_60s"] - 0.82) < 0.1, at[400]


def test_taq_fig1_download_times_spread_over_two_orders_of_magnitude() -> None:
    # The paper (§2.1): "download times for objects vary by over two orders of magnitude",
    # "most web pages and objects reside in the size region where variation is high". On the
    # page's set-up (100 clients, 1200 s; a smaller log has too few objects per bucket for a
    # max/min of 100 to be measurable), max/min is at least 100 in each bucket from 1 KB to
    # 30 KB, which holds about 70% of the objects (seeds 1-3: 130-505).
    _objects, summary = taq_fig1.run(seed=2)
    body = summary.filter((pl.col("size_lo_bytes") >= 1_000) & (pl.col("size_lo_bytes") < 30_000))
    assert body.height == 3
    assert body["objects"].sum() > 0.6 * summary["objects"].sum()
    assert (body["spread_max_over_min"] >= 100).all(), summary
    # Bigger objects take longer on average (bucket means increase).
    means = summary["mean_s"].to_list()
    assert means == sorted(means)


def test_thesis_red_and_fq_make_small_flows_consistent() -> None:
    table = thesis_fig51.summary(thesis_fig51.run(protocols=("tcp", "red", "fq"), runs=30, seed=2))
    # Chapter 3's lower bound: no flow beats slow start, (1 + log2(k / IW)) RTT.
    assert (table["median_s"] >= table["slow_start_bound_s"]).all()
    p99 = {(row["protocol"], row["packets"]): row["p99_s"] for row in table.iter_rows(named=True)}
    # The thesis (Chapter 5, Figure 5.1): "both RED and Fair Queueing provide significantly more
    # consistency at small flow sizes". Read as (thesis.md): at 12 packets each p99 is at most
    # half of standard TCP's.
    for protocol in ("red", "fq"):
        assert p99[protocol, 12] < 0.5 * p99["tcp", 12], p99
    # The thesis (§5.3) says RED's p99 "is never better than Fair Queueing"; we measure the
    # reverse from 64 packets up at 10 Mbit/s (thesis.md, Figure 5.4 diagnosis), asserted as
    # measured with the page's margin: RED's p99 at most 0.9 of FQ's.
    assert p99["red", 133] < 0.9 * p99["fq", 133], p99


def test_thesis_mice_alone_fill_the_link_in_proportion_to_their_slow_start_rounds() -> None:
    # One generator of back-to-back 32-packet flows on an idle link: a flow takes the
    # handshake plus 3 rounds with IW 10 (10 + 20 + 2) and plus 5 with IW 2 (2+4+8+16+2),
    # so IW 10 carries about 6/4 = 1.5 times as much. (The thesis, §5.2, says a larger initial
    # window alone makes no appreciable difference; thesis.md diagnoses that.)
    table = thesis_fig53.summary(thesis_fig53.run(protocols=("tcp", "iw10"), generators=(1,), runs=2, seed=3))
    median = {row["protocol"]: row["median"] for row in table.iter_rows(named=True)}
    assert median["iw10"] / median["tcp"] == pytest.approx(1.5, rel=0.15), median


def test_thesis_mice_with_many_generators_droptail_is_most_utilised() -> None:
    # The thesis (§5.2): "Fair Queueing has the highest utilization in this simulation" and,
    # as generators are added, "RED slowly begins to utilize the link more fully". We do not
    # reproduce it (thesis.md, Figure 5.3 diagnosis): at 32 generators DropTail with IW 2 is
    # the most utilised. Asserted as measured, with the page's margin of half the measured
    # gap (0.05 of the link).
    table = thesis_fig53.summary(thesis_fig53.run(generators=(32,), runs=2, seed=3))
    median = {row["protocol"]: row["median"] for row in table.iter_rows(named=True)}
    assert median["tcp"] > median["fq"] + 0.05, median
    assert median["tcp"] > median["red"] + 0.05, median


def test_thesis_uncongested_fct_is_the_slow_start_round_count() -> None:
    # At 100 Mbit/s and 200 ms the pipe is still filling after 250 RTTs (see thesis.md), so
    # a k-packet FCT is the handshake, the rounds r with IW (2^r - 1) >= k, and half an RTT
    # for the last packet: (r + 1/2) RTT.
    table = thesis_fig54.run(settings=((100_000_000, 90.0),), protocols=("tcp", "iw10"), runs=1, seed=3)
    rtt_s = 0.2
    for protocol, iw in (("tcp", 2), ("iw10", 10)):
        for k in (12, 133):
            rounds = next(r for r in range(1, 20) if iw * (2**r - 1) >= k)
            got = table.filter(pl.col("protocol") == protocol, pl.col("packets") == k)["median_s"][0]
            assert got == pytest.approx((rounds + 0.5) * rtt_s, rel=0.03), (protocol, k, got)


def test_thesis_rcp_finishes_short_flows_in_one_and_a_half_rtt() -> None:
    # The thesis (§5.3): "After one RTT, RCP knows what its fair share rate is and can send at
    # that rate". On Figure 5.2's link (here a tenth of its rate), a 13-packet RCP flow takes
    # the handshake, half an RTT for the last packet and 13 packets at its rate: 1.5 RTT and
    # a little. TCP with IW 2 takes the handshake and the 3 rounds with 2 (2^r - 1) >= 13,
    # and half an RTT: 3.5 RTT. Medians within 10% and 3%.
    table = thesis_fig52.summary(thesis_fig52.run(protocols=("tcp", "rcp"), **thesis_fig52.QUICK))
    median = {row["protocol"]: row["median_s"] for row in table.filter(pl.col("size_lo_pkts") == 13).iter_rows(named=True)}
    assert median["rcp"] == pytest.approx(1.5 * 0.1, rel=0.1), median
    assert median["tcp"] == pytest.approx(3.5 * 0.1, rel=0.03), median


def test_taq_red_behaves_like_droptail_in_the_sub_packet_regime() -> None:
    # The TAQ paper, §2.4: RED has DropTail's aggregate behaviour at 10 kbit/s per flow.
    table = taq_aqm.run(disciplines=("droptail", "red"), fair_shares_bps=(10_000,), duration_s=1000.0, seed=2)
    jain = dict(zip(table["discipline"], table["short_term_jain"], strict=True))
    assert jain["droptail"] < 0.8, jain  # the regime is unfair to begin with (Figure 2)
    assert abs(jain["red"] - jain["droptail"]) < 0.05, jain


def test_taq_bigger_droptail_buffers_buy_short_term_fairness() -> None:
    # The TAQ paper, Figure 3: fairness comes back as the buffer grows (at a cost in delay).
    table = taq_fig3.run(flows=(100,), per_flow_buffer_pkts=(0.5, 3), duration_s=800.0, seed=2)
    small, large = table.sort("buffer_pkts")["short_term_jain"].to_list()
    assert large > small + 0.15, (small, large)
    delays = table.sort("buffer_pkts")["queue_delay_p99_s"].to_list()
    # A full DropTail queue delays by its drain time: 50 and 300 packets of 1000 B at 2 Mbit/s.
    assert delays == pytest.approx([0.2, 1.2], rel=0.02)


def test_taq_fig3_800_flows_at_the_papers_8000_packets_are_fair_only_over_slices_longer_than_the_rtt() -> None:
    # The paper: 800 flows, 2 Mbit/s, 1000-byte packets, 32 s (8000 packets) of DropTail buffer
    # "achieve fairness". Its RTT is then about 32 s, longer than a 20 s slice, and a flow's
    # window arrives as a burst per RTT. docs/reproductions/taq.md (Diagnosis of Figure 3):
    # 20 s index 0.67 +- 0.1 (no TCP variant reaches 0.9), 60 s index 0.90 +- 0.05.
    result = simulate(taq_dumbbell(flows=800, rate_bps=2_000_000, duration_s=1200.0, seed=2, buffer_pkts=8000,
                                   packet_size_bytes=1000))
    jain = {}
    for slice_s in (20, 60):
        per_slice = metrics.jain_per_slice(result.slices, slice_ns=slice_s * 10**9, flows=result.flows)
        jain[slice_s] = per_slice.filter(pl.col("start_ns") >= taq_fig3.WARMUP_S * 1e9)["jain"].mean()
    assert abs(jain[20] - 0.67) < 0.1, jain
    assert abs(jain[60] - 0.90) < 0.05, jain
