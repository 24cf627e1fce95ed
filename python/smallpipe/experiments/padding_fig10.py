"""Padding/diversity paper, Figure 10: the loss rate telnet flows see against their
segment size (128, 256, 512 and 1024 bytes) in a DropTail queue counting bytes.

Set-up (Section IV-D): telnet flows of each segment size through a byte-mode DropTail;
the load is set by Pareto and http cross traffic of 576-byte mean segments. Ours: the
Section III-D bottleneck (5 Mbit/s, round-trip propagation 12 ms, 40 kB), 5 telnet clients
per size (gaps of mean 1 s from the previous acknowledgement), MSS 1024 bytes (timestamps
off) so every burst is one segment. The cross traffic is N TCP senders of their own
576-byte MSS (a ``[flows.tcp]`` packet size) writing 576-byte messages with exponential
gaps of mean 50 ms from the previous write (a Poisson stream per sender, not Pareto
on/off, not http); writes a full window holds back leave as 576-byte segments still, and
the table gives the cross traffic's measured mean segment size. A flow's loss rate is its
resends over its sends.

What the paper reports: flows with smaller segments see "significantly lower" loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["CROSS_FLOWS", "SEGMENT_BYTES", "plot", "reproduce", "run", "scenario"]

SEGMENT_BYTES: tuple[int, ...] = (128, 256, 512, 1024)
CROSS_FLOWS: tuple[int, ...] = (50, 55, 60)
CROSS_MESSAGE_BYTES = 576
CLIENTS = 5
HEADER_BYTES = 40


def scenario(cross: int, *, duration_s: float, seed: int) -> Scenario:
    """5 telnet clients per segment size and ``cross`` Poisson senders of 576-byte segments."""
    telnet = [{"count": CLIENTS, "app": "interactive", "rtt_ms": 12.0, "start_s": [0.0, 2.0], "burst_bytes": size,
               "mean_gap_s": 1.0} for size in SEGMENT_BYTES]
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=duration_s,
        link={"rate_bps": 5e6, "delay_ms": 1.0, "queue": {"kind": "droptail", "limit_bytes": 40_000}},
        tcp={"packet_size_bytes": max(SEGMENT_BYTES) + HEADER_BYTES, "timestamps": False, "delayed_ack": False,
             "min_rto_ms": 1000.0},
        flows=[*telnet, {"count": cross, "app": "interactive", "rtt_ms": 12.0, "start_s": [0.0, 2.0],
                         "burst_bytes": CROSS_MESSAGE_BYTES, "mean_gap_s": 0.05, "gap_from": "send",
                         "tcp": {"packet_size_bytes": CROSS_MESSAGE_BYTES + HEADER_BYTES}}],
    )


def run(*, cross_flows: Sequence[int] = CROSS_FLOWS, duration_s: float = 200.0, seed: int = 1) -> pl.DataFrame:
    """Rows: cross_flows, segment_bytes (the cross traffic's row: ``cross``), the
    bottleneck's loss rate, the group's mean segment size (bytes delivered per first
    transmission), its segments sent and its loss rate."""
    rows = []
    for n in cross_flows:
        result = simulate(scenario(n, duration_s=duration_s, seed=seed))
        link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
        groups = result.flows.group_by("group").agg(pl.col("segments_sent").sum(), pl.col("retransmits").sum(),
                                                     pl.col("bytes_delivered").sum(), pl.len().alias("senders"))
        for g in groups.sort("group").iter_rows(named=True):
            # Less each sender's SYN: interactive senders never close.
            sends = g["segments_sent"] - g["senders"]
            is_cross = g["group"] == len(SEGMENT_BYTES)
            rows.append({"cross_flows": n, "segment_bytes": "cross" if is_cross else str(SEGMENT_BYTES[g["group"]]),
                         "bottleneck_loss_rate": link["loss_rate"],
                         "mean_segment_bytes": g["bytes_delivered"] / (sends - g["retransmits"]),
                         "segments_sent": sends, "loss_rate": g["retransmits"] / sends})
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 10's point: loss rate against segment size, one line per cross-traffic level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    telnet = table.filter(pl.col("segment_bytes") != "cross")
    for n in telnet["cross_flows"].unique(maintain_order=True):
        t = telnet.filter(pl.col("cross_flows") == n)
        loss = t["bottleneck_loss_rate"][0]
        ax.plot(t["segment_bytes"].cast(pl.Int64), t["loss_rate"], "o-", label=f"{n} cross senders ({loss:.1%} loss)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("telnet segment size (bytes)")
    ax.set_ylabel("loss rate of the telnet flows")
    ax.set_title("Padding paper, Figure 10: byte-mode DropTail, 5 Mbit/s, 40 kB")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Three cross-traffic levels, 200 s each (quick: 55 cross senders, 60 s)."""
    table = run(cross_flows=(55,), duration_s=60.0, seed=seed) if quick else run(seed=seed)
    write_csv(table, out / "padding-fig10.csv")
    plot(table, out / "padding-fig10.png")
    return table
