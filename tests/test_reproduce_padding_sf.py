"""TCP Smart Framing in simulation (padding/diversity paper, Section IV-E): the Figure 11
state machine measured against its formulas, and Figure 12's set-up on a short run.

Under random loss p on every data packet, a 1-SMSS burst that TCP-SF sends as four
segments enters fast retransmit with p(1−p)³ and times out with 1 − (1−p)⁴ − p(1−p)³
(the paper's Figure 11); plain TCP's one segment times out with p. The tolerances are
three binomial standard errors for the bursts counted."""

import math

import polars as pl
import pytest
from smallpipe.experiments import padding_fig12
from smallpipe.models.padding_diversity import tcp_sf_transitions

P = 0.1


@pytest.fixture(scope="module")
def states() -> pl.DataFrame:
    return padding_fig12.run_state_machine(losses=(P,), duration_s=1000.0, seed=2)


def _three_sigma(q: float, n: int) -> float:
    return 3 * math.sqrt(q * (1 - q) / n)


def test_tcp_sf_sends_nearly_every_burst_as_four_segments(states):
    # Gaps of mean 10 s: a burst finds the window restarted at 1 SMSS unless its gap was
    # under the 1 s RTO, which an exponential gap is with 1 − e^(−1/10) = 9.5 %.
    sf = states.filter(pl.col("variant") == "tcp_sf").row(0, named=True)
    assert 4 - 3 * 0.095 - 0.1 <= sf["segments_per_burst"] <= 4
    tcp = states.filter(pl.col("variant") == "tcp").row(0, named=True)
    assert tcp["segments_per_burst"] == pytest.approx(1.0, abs=0.01)


def test_fast_retransmit_and_timeout_follow_figure_11(states):
    sf = states.filter(pl.col("variant") == "tcp_sf").row(0, named=True)
    model = tcp_sf_transitions(P)
    n = sf["bursts"]
    assert n > 700
    assert sf["p_fr_measured"] == pytest.approx(model["FR"], abs=_three_sigma(model["FR"], n))
    assert sf["p_to_measured"] == pytest.approx(model["TO"], abs=_three_sigma(model["TO"], n))


def test_plain_tcp_times_out_with_p_and_less_often_than_tcp_sf(states):
    tcp = states.filter(pl.col("variant") == "tcp").row(0, named=True)
    sf = states.filter(pl.col("variant") == "tcp_sf").row(0, named=True)
    assert tcp["p_fr_measured"] == 0.0, "one segment per burst: never three duplicate ACKs"
    assert tcp["p_to_measured"] == pytest.approx(P, abs=_three_sigma(P, tcp["bursts"]))
    assert sf["p_to_measured"] > tcp["p_to_measured"] + _three_sigma(P, tcp["bursts"])


def test_figure_12_short_run_counts_what_it_says():
    table, profiles = padding_fig12.run(bulk_flows=(10,), queues=("droptail",), duration_s=60.0, seed=2)
    assert table["variant"].to_list() == ["tcp", "tcp_sf"]
    for row in table.iter_rows(named=True):
        r = profiles[(row["queue"], row["variant"], row["bulk_flows"])]
        assert r.len() == row["bursts"] > 100
        assert row["p50_response_s"] <= row["p90_response_s"] <= row["p99_response_s"]
        # 12 ms of propagation is the floor of every response time.
        assert r.min() >= 0.012
    tcp, sf = table.iter_rows(named=True)
    assert tcp["segments_per_burst"] == pytest.approx(1.0, abs=0.01)
    assert 1.0 < sf["segments_per_burst"] <= 4.0


def test_figure_10_smaller_segments_lose_less_in_a_byte_droptail():
    # A byte-counting DropTail refuses a packet when fewer free bytes remain than its size,
    # so the fuller the buffer the more only the larger packets are refused: the 1024-byte
    # telnet flows must lose more than the 128-byte ones and more than the cross traffic,
    # whose segments are smaller on average.
    from smallpipe.experiments import padding_fig10

    table = padding_fig10.run(cross_flows=(55,), duration_s=60.0, seed=2)
    loss = dict(zip(table["segment_bytes"], table["loss_rate"], strict=True))
    cross = table.filter(pl.col("segment_bytes") == "cross").row(0, named=True)
    assert cross["mean_segment_bytes"] < 1024
    assert loss["1024"] > 2 * loss["128"]
    assert loss["1024"] > loss["cross"] > 0
