"""Padding/diversity paper, Figure 9 and the cost side: mean response time against the
number of interactive clients on a 1.5 Mbit/s bottleneck when all of them use one
approach, with the bottleneck's loss rate and utilization (what the approach costs
everyone: the "statistical multiplexing" claim).

Set-up (Section IV-D): 540-byte data packets, three 60-byte dummies for padding (20
bytes of payload + 40 of headers), k = 2 for diversity; RED and DropTail. Ours: RTT 12 ms
(the paper's default scenario), timestamps off (40-byte headers, as the paper's sizes),
a 40 kB buffer (DropTail in bytes; RED with ns-2's defaults: thresholds 5 and 15 packets,
max_p 0.1, w_q 0.002, 74 packets of room), telnet bursts with exponential gaps of mean
1 s from the previous burst's acknowledgement, minRTO 1 s.

What the paper reports: latency departs from its floor above about 350 clients
(interactive), 250 (padding), 175 (diversity); the fully-backlogged approach degrades
"even for a moderate number of connections"; with RED diversity degrades gently.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments.padding_sim import APPROACHES, plot_per_queue
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["CLIENTS", "QUEUES", "plot", "reproduce", "run", "scenario"]

CLIENTS: tuple[int, ...] = (50, 100, 150, 200, 250, 300, 350, 400)
RATE_BPS = 1.5e6
RTT_MS = 12.0
DATA_PACKET_BYTES = 540
HEADER_BYTES = 40
BUFFER_BYTES = 40_000
WARMUP_S = 20.0
QUEUES: dict[str, dict[str, Any]] = {
    "droptail": {"kind": "droptail", "limit_bytes": BUFFER_BYTES},
    "red": {"kind": "red", "limit_pkts": BUFFER_BYTES // DATA_PACKET_BYTES, "mode": "packets",
            "min_th_pkts": 5.0, "max_th_pkts": 15.0, "max_p": 0.1, "w_q": 0.002, "gentle": False,
            "mean_pkt_size_bytes": DATA_PACKET_BYTES},
}
SHOWN = ("interactive", "backlogged", "padding", "diversity")


def scenario(approach: str, queue: str, clients: int, *, duration_s: float, seed: int) -> Scenario:
    """``clients`` telnet clients, all using ``approach``, through the 1.5 Mbit/s bottleneck."""
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=duration_s,
        link={"rate_bps": RATE_BPS, "delay_ms": 1.0, "queue": QUEUES[queue]},
        # 1500-byte full segments so a 500-byte burst is a "small packet" diversity copies.
        tcp={"packet_size_bytes": 1500, "timestamps": False, "delayed_ack": False, "min_rto_ms": 1000.0,
             **APPROACHES[approach]},
        flows=[{"count": clients, "app": "interactive", "rtt_ms": RTT_MS, "start_s": [0.0, 2.0],
                "burst_bytes": DATA_PACKET_BYTES - HEADER_BYTES, "mean_gap_s": 1.0}],
    )


def run(*, clients: Sequence[int] = CLIENTS, queues: Sequence[str] = ("red", "droptail"),
        approaches: Sequence[str] = SHOWN, duration_s: float = 200.0, seed: int = 1) -> pl.DataFrame:
    """Rows: queue, approach, clients, bursts, mean_response_s, p99_response_s (of the
    acknowledged bursts written after the warm-up), unanswered (bursts never
    acknowledged), the bottleneck's loss_rate and utilization."""
    rows = []
    for queue in queues:
        for approach in approaches:
            for n in clients:
                result = simulate(scenario(approach, queue, n, duration_s=duration_s, seed=seed))
                bursts = result.bursts.filter(pl.col("sent_ns") >= int(WARMUP_S * 1e9))
                done = bursts.drop_nulls("response_ns")["response_ns"] / 1e9
                link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
                rows.append({"queue": queue, "approach": approach, "clients": n, "bursts": done.len(),
                             "mean_response_s": done.mean(), "p99_response_s": done.quantile(0.99),
                             "unanswered": bursts.height - done.len(),
                             "loss_rate": link["loss_rate"], "utilization": link["utilization"]})
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 9's axes: mean response time against clients, one panel per queue."""
    plot_per_queue(table, path, x="clients", xlabel="interactive clients", panel="{queue}, C = 1.5 Mbit/s",
                   title="Padding paper, Figure 9: clients vs latency")


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Eight client counts, both queues, 200 s each (quick: 100 and 300 clients, RED, 40 s)."""
    if quick:
        table = run(clients=(100, 300), queues=("red",), duration_s=40.0, seed=seed)
    else:
        table = run(seed=seed)
    write_csv(table, out / "padding-fig9.csv")
    plot(table, out / "padding-fig9.png")
    return table
