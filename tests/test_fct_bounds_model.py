"""The thesis's FCT reference lines: hand values, and the slow-start bound against the
simulator's own TCP on an empty path."""

import pytest
from smallpipe import simulate
from smallpipe.models import fct_bounds

RTT_S, RATE_BPS, PACKET_BYTES = 0.04, 10_000_000, 1000
SER_S = PACKET_BYTES * 8 / RATE_BPS  # 0.8 ms


@pytest.mark.parametrize(("k", "iw", "rounds"), [(1, 2, 1), (2, 2, 1), (3, 2, 2), (6, 2, 2), (7, 2, 3), (14, 2, 3),
                                                  (15, 2, 4), (10, 10, 1), (11, 10, 2), (30, 10, 2), (31, 10, 3)])
def test_slow_start_rounds_by_hand(k, iw, rounds):
    # IW·(2^r − 1) packets are out after r rounds: 2, 6, 14, 30 at IW 2; 10, 30, 70 at IW 10.
    assert fct_bounds.slow_start_rounds(k, iw) == rounds


def test_slow_start_fct_by_hand():
    # k = 12 at IW 2: rounds of 2, 4, 8; the 12th is 6th of round 3: 3.5 RTT + 6 serialisations.
    assert fct_bounds.slow_start_fct_s(12, RTT_S, RATE_BPS, PACKET_BYTES, 2) == pytest.approx(3.5 * RTT_S + 6 * SER_S)


def test_processor_sharing_by_hand_and_where_it_meets_slow_start():
    # 133 packets, 1 of 5 flows: 1.5 RTT + 133 · 5 · 0.8 ms.
    assert fct_bounds.processor_sharing_fct_s(133, RTT_S, RATE_BPS, PACKET_BYTES, background_flows=4) == pytest.approx(
        1.5 * RTT_S + 133 * 5 * SER_S)
    # At load 0.9 the share is a tenth of the link.
    assert fct_bounds.processor_sharing_fct_s(10, RTT_S, RATE_BPS, PACKET_BYTES, load=0.9) == pytest.approx(
        1.5 * RTT_S + 10 * 10 * SER_S)
    # Alone on the link, a flow that fits in the initial window is slow start's first round.
    for k in range(1, 11):
        ps = fct_bounds.processor_sharing_fct_s(k, RTT_S, RATE_BPS, PACKET_BYTES)
        assert ps == pytest.approx(fct_bounds.slow_start_fct_s(k, RTT_S, RATE_BPS, PACKET_BYTES, 10))


def test_simulated_tcp_on_an_empty_path_sits_just_above_the_bound():
    # 126 packets at IW 2 is six full rounds (2+4+…+64), all within the 64 KB receiver window.
    result = simulate({
        "duration_s": 5, "link": {"rate_bps": RATE_BPS, "delay_ms": 10, "access_rate_bps": 1_000_000_000},
        "tcp": {"initial_window_pkts": 2, "delayed_ack": False, "timestamps": False,
                "packet_size_bytes": PACKET_BYTES, "overhead_max_ms": 0},
        "flows": [{"app": "transfer", "size_bytes": 126 * 960, "rtt_ms": 40, "record_progress": True}],
    })
    progress = result.progress
    assert progress.height == 126
    for k, fct_ns in zip(progress["packets"], progress["fct_ns"], strict=True):
        bound = fct_bounds.slow_start_fct_s(k, RTT_S, RATE_BPS, PACKET_BYTES, 2)
        gap = fct_ns / 1e9 - bound
        # Never faster; slower by at most about one serialisation per round (each round's
        # first packet waits for its ACK's predecessor to be serialised).
        assert 0 <= gap <= fct_bounds.slow_start_rounds(k, 2) * (SER_S + 2e-4), (k, gap)


def test_rejects_bad_input_naming_the_field():
    with pytest.raises(ValueError, match="load=1.0"):
        fct_bounds.processor_sharing_fct_s(1, RTT_S, RATE_BPS, PACKET_BYTES, load=1.0)
    with pytest.raises(ValueError, match="iw_pkts=0"):
        fct_bounds.slow_start_rounds(5, 0)
