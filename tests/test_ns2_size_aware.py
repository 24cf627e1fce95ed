"""benches/ns2/size_aware_ns2.py and sessions.tcl: Tokuda's closed-loop users replayed in
ns-2 2.35, each user on its own RTT as Figure 12 needs. Seconds; skipped when Debian's `ns`
is not installed."""

import polars as pl
from ns2_drivers import load, requires_ns

pytestmark = requires_ns


def test_ns2_users_keep_their_own_round_trip_times(tmp_path):
    from smallpipe.experiments import size_aware_table4 as t4
    from smallpipe.result import simulate

    size_aware_ns2 = load("size_aware_ns2")
    rtts_ms = [40.0, 230.0]
    sc = t4.scenario("droptail", 5.0, quick=True, seed=1, rtts_ms=rtts_ms).with_overrides(
        {"duration_s": 60.0, "flows.0.count": 20, "flows.1.count": 20})
    ours = simulate(sc)
    transfers, stats = size_aware_ns2.ns2_run(ours.flows, "droptail", sc.to_dict(), 60.0, tmp_path)
    assert 0 < stats["utilization"] < 0.5, "40 users cannot load 30 Mbit/s"
    # Timed from the first data packet to its last ACK, a transfer of n packets from IW 1 with
    # no loss takes ceil(log2(n + 1)) round trips of its own user's path (1, 2, 4, ... packets
    # per round), and on this nearly idle link the quickest of each group takes about that.
    bound_s = (transfers["size_bytes"] / t4.MSS_BYTES + 1).log(2).ceil() * transfers["rtt_ms"] / 1e3
    ratio = ((transfers["end_ns"] - transfers["start_ns"]) / 1e9 / bound_s).alias("ratio")
    by_group = transfers.with_columns(ratio).group_by("group").agg(pl.col("ratio").min()).sort("group")
    assert by_group["group"].to_list() == [0, 1], "every group's users finished transfers"
    assert ratio.min() >= 1 - 1e-3
    assert by_group["ratio"].max() < 1.1
