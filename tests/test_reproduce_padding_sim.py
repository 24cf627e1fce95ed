"""The padding/diversity paper's simulated claims on short runs (seed 2): the overhead of
padding and diversity on the bottleneck is the bytes they add (Section IV-D: 3 × 60 bytes
per 540-byte packet; k = 2 copies), and both beat the plain interactive flow under random
loss (Figure 8), and one user upgrading to fully backlogged barely moves the loss among
many bulk flows (Figure 6); a backlogged burst is SACKed one RTT after its send unless
lost itself, whatever holds its cumulative ACK back."""

import math

import polars as pl
import pytest
from smallpipe.experiments import padding_fig5, padding_fig6, padding_fig9
from smallpipe.experiments.padding_sim import mean_response_s, response_means_s
from smallpipe.result import simulate


@pytest.fixture(scope="module")
def light_load() -> pl.DataFrame:
    return padding_fig9.run(clients=(100,), queues=("red",), approaches=("interactive", "padding", "diversity"),
                            duration_s=40.0, seed=2)


def test_light_load_loses_nothing(light_load):
    assert (light_load["loss_rate"] == 0.0).all()


def test_padding_and_diversity_add_exactly_their_bytes(light_load):
    # Same bursts at the same times (no loss, same seed): the bottleneck carries
    # (540 + 3·60)/540 = 4/3 as many bytes with padding and 2× with diversity.
    util = dict(zip(light_load["approach"], light_load["utilization"], strict=True))
    assert util["padding"] / util["interactive"] == pytest.approx((540 + 3 * 60) / 540, rel=0.02)
    assert util["diversity"] / util["interactive"] == pytest.approx(2.0, rel=0.02)


def test_interactive_load_is_clients_times_one_packet_per_gap(light_load):
    # 100 clients, one 540-byte packet per (1 s gap + ~15 ms response): 0.284 of 1.5 Mbit/s;
    # the run's first 0-2 s start stagger and handshakes lower it a little.
    util = light_load.filter(pl.col("approach") == "interactive")["utilization"].item()
    assert util == pytest.approx(100 * 540 * 8 / 1.015 / 1.5e6, rel=0.08)


def test_padding_and_diversity_beat_interactive_under_random_loss():
    rows = []
    for approach in ("interactive", "padding", "diversity"):
        mean_s, n = mean_response_s(
            padding_fig5.scenario(approach, 0.1, flows=4, duration_s=60.0, seed=2), warmup_s=padding_fig5.WARMUP_S)
        assert n > 100
        rows.append(mean_s)
    interactive_s, padding_s, diversity_s = rows
    assert padding_s < interactive_s
    assert diversity_s < interactive_s


def test_one_user_upgrading_hardly_moves_the_loss_among_twenty_bulk_flows():
    # Figure 6: "no considerable increase in packet loss rate" when one user upgrades;
    # with 20 bulk flows one more greedy flow is 1 in 21 (the page: 2-8 % from 10 flows on).
    table = padding_fig6.run(bulk_flows=(20,), duration_s=20.0, seed=2)
    assert table["upgraded_over_interactive"].item() == pytest.approx(1.0, abs=0.15)


def test_first_send_is_the_write_for_interactive_bursts_and_later_for_backlogged_ones():
    # No Nagle and an open window: an interactive burst leaves when written, so the paper's
    # send → ACK equals write → ACK. A fully-backlogged burst may find the window full of
    # dummies: it leaves at or after its write and before its acknowledgement.
    for approach in ("interactive", "backlogged"):
        bursts = simulate(padding_fig5.scenario(approach, 0.05, flows=4, duration_s=30.0, seed=2)).bursts
        done = bursts.drop_nulls("acked_ns")
        assert done["first_sent_ns"].null_count() == 0
        assert (done["sent_ns"] <= done["first_sent_ns"]).all()
        assert (done["first_sent_ns"] < done["acked_ns"]).all()
        waited = (done["first_sent_ns"] > done["sent_ns"]).sum()
        means = response_means_s(bursts, warmup_s=5.0)
        if approach == "interactive":
            assert waited == 0
            assert means["send_to_ack_s"] == means["write_to_ack_s"]
        else:
            assert waited > 0
            assert means["send_to_ack_s"] < means["write_to_ack_s"]


def test_a_backlogged_burst_is_covered_one_rtt_after_its_send_unless_it_is_lost_itself():
    # Loss hits data packets only and the 1 Gbit/s link has no queue, so a burst that
    # arrives is covered by the SACK block of the ACK it triggers (RFC 2018 §4: the first
    # block reports the segment that triggered the ACK) one RTT (12 ms) after its send; a
    # lost one needs a resend, at least another RTT. So the share covered later than 18 ms
    # is the chance p that its segment was lost (a binomial, within three standard
    # errors), while a cumulative ACK, which waits for every earlier hole, comes that late
    # for most bursts.
    p = 0.05
    bursts = simulate(padding_fig5.scenario("backlogged", p, flows=10, duration_s=100.0, seed=2)).bursts
    done = bursts.filter(pl.col("sent_ns") >= 5_000_000_000).drop_nulls("acked_ns")
    assert done.height > 500
    assert ((done["first_sent_ns"] <= done["covered_ns"]) & (done["covered_ns"] <= done["acked_ns"])).all()
    rtt_ns = int(padding_fig5.RTT_MS * 1e6)
    assert (done["covered_ns"] - done["first_sent_ns"]).min() >= rtt_ns
    late_cover = ((done["covered_ns"] - done["first_sent_ns"]) > 1.5 * rtt_ns).mean()
    late_ack = ((done["acked_ns"] - done["first_sent_ns"]) > 1.5 * rtt_ns).mean()
    assert late_cover == pytest.approx(p, abs=3 * math.sqrt(p * (1 - p) / done.height))
    assert late_ack > 5 * p
