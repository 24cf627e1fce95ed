"""Padding/diversity paper, Figure 8: mean response time of each approach against the
loss rate, the loss set by the intensity of cross traffic, RED and DropTail.

Set-up (Section III-D's default scenario): a 5 Mbit/s bottleneck, round-trip propagation
12 ms, a 40 kB buffer (RED with ns-2's defaults); cross traffic of http, ftp and low-rate
UDP, more or less of it. Ours: the cross traffic is N bulk TCP flows (N sets the loss);
5 telnet clients use the approach (500-byte bursts, gaps of mean 1 s from the previous
acknowledgement); ``[tcp]`` is shared, so the bulk flows carry the option too, which
changes nothing for them (they are backlogged already, send full segments and never write
bursts) except minRTO′ (unused: their window is full). The loss rate is the bottleneck's.

What the paper reports: with RED, padding and diversity beat the fully-backlogged flow,
which degrades at higher loss (inherited backed-off RTOs); with DropTail too, and padding
beats diversity there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.padding_fig9 import QUEUES
from smallpipe.experiments.padding_sim import BURST_BYTES, plot_per_queue, tcp_for
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["BULK_FLOWS", "plot", "reproduce", "run", "scenario"]

BULK_FLOWS: tuple[int, ...] = (2, 5, 10, 20, 40)
SHOWN = ("interactive", "backlogged", "padding", "diversity")
WARMUP_S = 20.0


def scenario(approach: str, queue: str, bulk: int, *, duration_s: float, seed: int) -> Scenario:
    """``bulk`` bulk flows and 5 telnet clients using ``approach`` through 5 Mbit/s."""
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=duration_s,
        link={"rate_bps": 5e6, "delay_ms": 1.0, "queue": QUEUES[queue]},
        tcp=tcp_for(approach),
        flows=[{"count": bulk, "app": "bulk", "rtt_ms": 12.0, "start_s": [0.0, 2.0]},
               {"count": 5, "app": "interactive", "rtt_ms": 12.0, "start_s": [0.0, 2.0],
                "burst_bytes": BURST_BYTES, "mean_gap_s": 1.0}],
    )


def run(*, bulk_flows: Sequence[int] = BULK_FLOWS, queues: Sequence[str] = ("red", "droptail"),
        duration_s: float = 200.0, seed: int = 1) -> pl.DataFrame:
    """Rows: queue, approach, bulk_flows, loss_rate (bottleneck), bursts, mean_response_s."""
    rows = []
    for queue in queues:
        for approach in SHOWN:
            for n in bulk_flows:
                result = simulate(scenario(approach, queue, n, duration_s=duration_s, seed=seed))
                done = result.bursts.filter(pl.col("sent_ns") >= int(WARMUP_S * 1e9)).drop_nulls("response_ns")
                link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
                rows.append({"queue": queue, "approach": approach, "bulk_flows": n, "loss_rate": link["loss_rate"],
                             "bursts": done.height, "mean_response_s": metrics.to_float(done["response_ns"].mean()) / 1e9
                             if done.height else None})
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 8's axes: mean response time against the bottleneck's loss rate, per queue."""
    plot_per_queue(table, path, x="loss_rate", xlabel="bottleneck loss rate", panel="{queue}, 5 Mbit/s, RTT 12 ms",
                   title="Padding paper, Figure 8: latency against loss (cross traffic)")


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Five cross-traffic levels, both queues, 200 s each (quick: 10 bulk flows, RED, 40 s)."""
    if quick:
        table = run(bulk_flows=(10,), queues=("red",), duration_s=40.0, seed=seed)
    else:
        table = run(seed=seed)
    write_csv(table, out / "padding-fig8.csv")
    plot(table, out / "padding-fig8.png")
    return table
