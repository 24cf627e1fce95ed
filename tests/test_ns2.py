"""benches/ns2: ns-2 2.35 runs through the driver, checked against numbers that follow from
the set-up (packet conservation, the link's rate, the binomial spread of Bernoulli loss,
the one segment a scripted drop costs). Skipped when Debian's `ns` is not installed."""

import collections
import math

import pytest
from ns2_drivers import load, requires_ns

pytestmark = requires_ns



ns2_side = load("ns2_side")


def spec(**kw):
    s = {
        "name": "t", "seed": 1, "rate_bps": 1e6, "access_rate_bps": 1e8, "bottleneck_delay_ms": 1.0,
        "queue_pkts": 1000, "loss": 0.0, "drop_data": [], "trace": False, "warmup_s": 0.0, "duration_s": 10.0,
        "flows": [{"start_s": 0.0, "rtt_ms": 200.0, "size_pkts": None}], "tcp": {"packet_bytes": 500},
    }
    s.update(kw)
    return s


def conserved(r):
    """What arrived at the bottleneck in the window left it, was dropped, or waits."""
    return r["arrivals"] == r["departures"] + r["drops"] + r["queued_at_end"] - r["queued_at_start"]


@pytest.mark.parametrize("variant", ["Reno", "Newreno", "Sack1"])
def test_one_scripted_drop_costs_one_retransmission_and_no_timeout(variant):
    # Data packet 20 is lost in slow start from ns-2's initial window of 2: by then more than
    # three segments follow it in flight, so three duplicate ACKs retransmit it once.
    r = ns2_side.run(spec(drop_data=[20], trace=True, ns2={"variant": variant}))
    sent = collections.Counter(seq for _, seq, payload in r["trace"]["tx"] if payload > 0)
    assert [seq for seq, n in sent.items() if n > 1] == [20]  # data seqnos count from 1
    assert (r["retransmitted_pkts"], r["timeouts"], r["drops"]) == ([1], [0], 1)
    assert conserved(r)
    # The halving: ssthresh_ falls to half the window at the moment of the loss.
    (t_cut, ssthresh), = [x for x in r["trace"]["ssthresh_pkts"] if x[0] > 0]
    cwnd_before = [c for t, c in r["trace"]["cwnd_pkts"] if t < t_cut][-1]
    assert ssthresh == math.floor(cwnd_before / 2)


def five_flows(queue_pkts):
    flows = [{"start_s": 0.1 * i, "rtt_ms": 200.0, "size_pkts": None} for i in range(5)]
    return ns2_side.run(spec(queue_pkts=queue_pkts, flows=flows, warmup_s=5.0, duration_s=40.0, ns2={"slice_s": 20.0}))


def test_windows_that_fit_in_the_pipe_and_buffer_fill_the_link_without_a_loss():
    # Five flows of ns-2's default 20-packet window_: 100 packets, more than the 50-packet
    # BDP (1 Mbit/s x 200 ms / 500 bytes), so the link never idles after the warm-up, and
    # fewer than BDP + 60 buffered, so nothing is dropped.
    r = five_flows(60)
    expected = 1e6 * 40.0 / (500 * 8)
    assert abs(r["departures"] - expected) <= 2
    assert r["drops"] == 0 and conserved(r)
    # Each window beyond the pipe waits in the queue: 100 - 50 packets, give or take the
    # ACK clock's one packet per flow in flight.
    assert abs(r["mean_queue_pkts"] - 50) <= 5
    assert len(r["jain_per_slice"]) == 2 and all(0.2 <= j <= 1.0 for j in r["jain_per_slice"])
    # Goodput cannot exceed what left the bottleneck (payload 460 of each 500 bytes).
    assert sum(r["rx_bytes"]) <= r["departures"] * 460


def test_a_short_buffer_drops_and_the_counts_still_add_up():
    r = five_flows(25)
    expected = 1e6 * 40.0 / (500 * 8)
    assert r["drops"] > 0 and conserved(r)
    # The agents' counts are over the window too: what they sent in it reached the
    # bottleneck in it, give or take a window (20 packets) per flow on the access links.
    # Counted from the start they would be 5 s of sending (125 packets) too many.
    assert abs(sum(r["data_pkts"]) - r["arrivals"]) <= 5 * 20
    assert sum(r["retransmitted_pkts"]) <= r["drops"] + 5 * 20
    assert r["utilization"] <= 1.0 + 1 / expected and r["departures"] <= expected + 1
    assert r["mean_queue_pkts"] <= 25 and r["queued_at_end"] <= 25


def test_bernoulli_loss_rate_is_within_the_binomial_spread():
    p = 0.05
    r = ns2_side.run(spec(loss=p, warmup_s=2.0, duration_s=60.0))
    n = r["arrivals"]
    assert n > 500 and conserved(r)
    assert abs(r["loss_rate"] - p) <= 4 * math.sqrt(p * (1 - p) / n)


def test_bad_options_name_the_field():
    with pytest.raises(ValueError, match=r"ns2\.variant: 'Vegas'"):
        ns2_side.run(spec(ns2={"variant": "Vegas"}))
    with pytest.raises(ValueError, match=r"ns2\.sink: 'TCPSink' does not fit ns2\.variant 'Sack1'"):
        ns2_side.run(spec(ns2={"variant": "Sack1", "sink": "TCPSink"}))
