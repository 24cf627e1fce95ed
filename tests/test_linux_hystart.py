"""Linux CUBIC's HyStart (`tcp.cubic_hystart`, docs/tcp.md): on a 10 Mbit/s, 100 ms path with a
1000-packet buffer, slow start must end on the delay rule before the first loss, and no
earlier than the queue it needs: the minimum RTT exceeded by an eighth of it (12.5 ms, within
tcp_cubic.c's [4, 16] ms), so cwnd > BDP + 12.5 ms x C."""

import polars as pl
import smallpipe

RATE_BPS, RTT_MS, MSS = 10e6, 100.0, 1448  # the linux stack's MSS with timestamps at 1500 bytes


def _run(cubic_hystart: bool) -> smallpipe.Result:
    return smallpipe.simulate(smallpipe.Scenario.from_dict({
        "duration_s": 10.0, "trace_conn": 0,
        "link": {"rate_bps": RATE_BPS, "queue": {"kind": "droptail", "limit_pkts": 1000}},
        "tcp": {"stack": "linux", "cubic_hystart": cubic_hystart, "rwnd_bytes": 8_000_000},
        "flows": [{"app": "bulk", "rtt_ms": RTT_MS}],
    }))


def test_slow_start_ends_on_the_delay_rule_before_the_first_loss():
    trace = _run(True).trace.filter(pl.col("sent") & (pl.col("payload_len") > 0))
    exit_row = trace.filter(pl.col("ssthresh_bytes") < 8_000_000).row(0, named=True)
    before = trace.filter(pl.col("time_ns") < exit_row["time_ns"])
    assert before["seq"].is_sorted() and before["seq"].n_unique() == before.height, "no retransmission before the exit"
    bdp_pkts = RATE_BPS * RTT_MS / 1e3 / 8 / (MSS + 52)
    queue_pkts = 12.5e-3 * RATE_BPS / 8 / (MSS + 52)
    assert exit_row["ssthresh_bytes"] / MSS > bdp_pkts + queue_pkts
    assert exit_row["ssthresh_bytes"] / MSS < bdp_pkts + 1000, "before the buffer overflows"


def test_without_it_slow_start_runs_into_the_buffer():
    trace = _run(False).trace.filter(pl.col("sent") & (pl.col("payload_len") > 0))
    first_cut = trace.filter(pl.col("ssthresh_bytes") < 8_000_000).row(0, named=True)
    before = trace.filter(pl.col("time_ns") < first_cut["time_ns"])
    assert before["seq"].n_unique() == before.height
    with_it = _run(True).trace.filter(pl.col("ssthresh_bytes") < 8_000_000).row(0, named=True)
    assert first_cut["time_ns"] > with_it["time_ns"], "a loss ends slow start later than HyStart does"
