"""Phase effects (Floyd & Jacobson 1991): with DropTail and deterministic timing, which
flow loses depends on sub-millisecond alignments. The senders' random processing delay
(on by default, uniform in [0, one bottleneck packet time]) must keep long-term fairness
from swinging with sub-millisecond shifts of the senders' access delays."""

from __future__ import annotations

import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe import Scenario, metrics, simulate

SHIFTS_MS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def long_term_jain(shift_ms: float, overhead_max_ms: float | None) -> float:
    """Ten bulk flows over 1 Mbit/s (Figure 2 set-up); sender i's one-way access delay is
    shifted by i/9 · shift_ms."""
    n = 10
    tcp = {"packet_size_bytes": 500, "recovery": "newreno", "delayed_ack": False, "timestamps": False}
    if overhead_max_ms is not None:
        tcp["overhead_max_ms"] = overhead_max_ms
    sc = Scenario.from_dict({
        "seed": 1, "duration_s": 300.0, "slice_s": 300.0,
        "link": {"rate_bps": 1_000_000, "delay_ms": 1.0, "queue": {"kind": "droptail", "limit_pkts": 50}},
        "tcp": tcp,
        "flows": [{"app": "bulk", "rtt_ms": 200.0 + 2 * shift_ms * i / (n - 1), "start_s": 0.0} for i in range(n)],
    })
    return metrics.long_term_jain(simulate(sc).flows)


def test_default_processing_delay_keeps_fairness_steady_across_submillisecond_shifts() -> None:
    values = [long_term_jain(s, None) for s in SHIFTS_MS]
    assert max(values) - min(values) <= 0.02, values
    assert min(values) >= 0.97, values


def test_processing_delay_is_uniform_over_one_bottleneck_packet_time() -> None:
    """The delay itself, seen end to end: single-packet bursts on an idle path take the
    fixed round trip plus the data packet's processing delay (ACKs have none), so every
    response lies in [base, base + overhead_max] and, the draws being uniform, they spread
    over nearly all of it with a mean near the middle. Switched off, the spread is zero.
    FIFO order per sender is checked on the link itself (crates/sim/src/link.rs)."""
    rate_bps, access_bps, rtt_s = 1_000_000, 100_000_000, 0.2
    sc = Scenario.from_dict({
        "seed": 5, "duration_s": 600.0, "slice_s": 60.0,
        "link": {"rate_bps": rate_bps, "delay_ms": 1.0, "access_rate_bps": access_bps},
        "tcp": {"packet_size_bytes": 500, "delayed_ack": False, "timestamps": False},
        "flows": [{"app": "interactive", "rtt_ms": rtt_s * 1000, "burst_bytes": 100, "mean_gap_s": 1.0}],
    })
    overhead_s = 500 * 8 / rate_bps  # default: one bottleneck transmission of a full packet
    data_bits, ack_bits = (100 + 40) * 8, 40 * 8
    base_s = rtt_s + (data_bits + ack_bits) / rate_bps + 2 * (data_bits + ack_bits) / access_bps
    responses = [r * 1e-9 for r in simulate(sc).bursts["response_ns"].drop_nulls().to_list()]
    assert len(responses) > 400
    extra = [r - base_s for r in responses]
    assert min(extra) >= -1e-6 and max(extra) <= overhead_s + 1e-6, (min(extra), max(extra))
    # n uniform draws leave a gap of more than 10% at either end with probability ~2·0.9^n.
    assert max(extra) - min(extra) >= 0.9 * overhead_s, (min(extra), max(extra))
    # Mean J/2, standard error J/sqrt(12 n) < 0.015 J for n > 400.
    assert sum(extra) / len(extra) == pytest.approx(overhead_s / 2, abs=0.06 * overhead_s)
