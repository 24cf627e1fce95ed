"""Size-aware paper (Tokuda et al.), Figures 2 and 5: throughput of a TCP transfer
against its size under random loss, simulation against the paper's Section 3 analysis.

Set-up (Section 2): a sender and a receiver each 50 ms from a router over 100 Mbit/s
links (200 ms RTT), 1460-byte segments, windows unlimited, TCP Reno, no delayed ACKs,
initial window 1; the sender-side link loses each packet with probability ``p``. The
paper's Figure 5 uses p = 0.005 and 0.01 and averages 1000 transfers per size.

Ours: the transfers of one run overlap in time, over their own 100 Mbit/s access links
and one shared 10 Gbit/s loss-injecting hop (``link.loss``: it drops SYNs too, so transfers whose
handshake lost a packet are left out — the paper's ns-2 TCP had no handshake), and the
transfer time is the flow's time minus the one RTT of its handshake. The analysis is
``smallpipe.models.size_aware.throughput_pkts_per_rtt`` with T0 = the simulator's 1 s
minimum RTO; beside it, as in the paper, Cardwell et al.'s latency model
(:mod:`smallpipe.models.cardwell`, no handshake), and Padhye's steady state for reference.

What the paper reports: small transfers get far less throughput than large ones; the
throughput peaks around 500 packets (p = 0.005) and 200 packets (p = 0.01) because the
initial slow start overshoots, and its analysis follows the simulation there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.models import cardwell, padhye
from smallpipe.models import size_aware as analysis
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["PAPER", "SIZES_PKTS", "clean_transfers", "group_throughput", "plot", "plot_panels", "reproduce", "run", "scenario",
           "simulated_throughput"]

SIZES_PKTS: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)
RTT_MS = 200.0
PACKET_BYTES = 1500
MSS_BYTES = 1460
T0_S = 1.0

PAPER = {"peak_pkts": {0.005: 500, 0.01: 200}}
"""Where the paper's Figure 5 throughput peaks (read from its text, Section 3.3)."""


def scenario(p: float, *, sizes: Sequence[int], per_size: int, seed: int,
             queue: dict[str, Any] | None = None) -> Scenario:
    """One run: ``per_size`` transfers of each size over a link losing packets with ``p``
    (or dropping them as ``queue`` decides, when given)."""
    groups = [
        {"count": per_size, "app": "transfer", "size_bytes": d * MSS_BYTES, "rtt_ms": RTT_MS, "start_s": [0.0, 20.0]}
        for d in sizes
    ]
    return Scenario(
        seed=seed,
        duration_s=400.0,
        slice_s=400.0,
        # Each transfer has its own 100 Mbit/s access links; the shared loss-injecting hop is
        # 10 Gbit/s so the concurrent transfers of one run never queue behind each other.
        link={"rate_bps": 10e9, "access_rate_bps": 100e6, "delay_ms": 1.0, "loss": p,
              "queue": queue or {"kind": "droptail", "limit_pkts": 10_000}},
        tcp={"packet_size_bytes": PACKET_BYTES, "recovery": "reno", "initial_window_pkts": 1,
             "delayed_ack": False, "timestamps": False, "rwnd_bytes": 1 << 30, "min_rto_ms": T0_S * 1e3,
             "initial_rto_ms": T0_S * 1e3},
        flows=groups,
    )


def simulated_throughput(d: int, data_s: pl.Series, rtt_s: float) -> dict[str, float | None]:
    """``sim_pkts_per_rtt``: d·RTT / E[T], the quantity the analysis computes (not the mean
    of ratios), from the transfers' times ``data_s``; ``sim_rel_stderr``: the standard error
    of that mean time relative to it (std / mean / √n), the sampling noise of the estimate."""
    n = data_s.len()
    if n == 0:
        return {"sim_pkts_per_rtt": None, "sim_rel_stderr": None}
    mean_s = metrics.to_float(data_s.mean())
    stderr = metrics.to_float(data_s.std()) / mean_s / n**0.5 if n > 1 else None
    return {"sim_pkts_per_rtt": d * rtt_s / mean_s, "sim_rel_stderr": stderr}


def clean_transfers(flows: pl.DataFrame) -> pl.DataFrame:
    """The finished transfers whose handshake lost nothing (the paper's ns-2 TCP has none)."""
    return flows.filter(pl.col("end_ns").is_not_null(), pl.col("syn_timeouts") == 0)


def group_throughput(done: pl.DataFrame, group: int, d: int, rtt_s: float) -> dict[str, float | None]:
    """``transfers`` and :func:`simulated_throughput` of flow group ``group`` (``d`` packets each)."""
    grp = done.filter(pl.col("group") == group)
    # The flow's time less the handshake's RTT, plus the half RTT the last ACK takes
    # back: the analysis counts rounds of the ACK clock, send to ACK.
    data_s = (grp["end_ns"] - grp["start_ns"]) / 1e9 - rtt_s / 2
    return {"transfers": grp.height, **simulated_throughput(d, data_s, rtt_s)}


def run(*, losses: Sequence[float] = (0.005, 0.01), sizes: Sequence[int] = SIZES_PKTS,
        per_size: int = 1000, seed: int = 1) -> pl.DataFrame:
    """Rows: p, size_pkts, transfers (finished, handshake clean), sim_pkts_per_rtt,
    sim_rel_stderr, analysis_pkts_per_rtt, cardwell_pkts_per_rtt, padhye_pkts_per_rtt."""
    rows = []
    rtt_s = RTT_MS / 1e3
    for p in losses:
        flows = simulate(scenario(p, sizes=sizes, per_size=per_size, seed=seed)).flows
        done = clean_transfers(flows)
        steady = padhye.throughput_full_pps(p, rtt_s=rtt_s, t0_s=T0_S, b=1.0) * rtt_s
        for g, d in enumerate(sizes):
            rows.append({
                "p": p,
                "size_pkts": d,
                **group_throughput(done, g, d, rtt_s),
                "analysis_pkts_per_rtt": analysis.throughput_pkts_per_rtt(d, p, rtt_s=rtt_s, t0_s=T0_S),
                "cardwell_pkts_per_rtt": cardwell.throughput_pkts_per_rtt(d, p, rtt_s=rtt_s, t0_s=T0_S,
                                                                          handshake=False),
                "padhye_pkts_per_rtt": steady,
            })
    return pl.DataFrame(rows)


def plot_panels(table: pl.DataFrame, path: Path, *, panel: str, title: Callable[[Any], str], suptitle: str) -> None:
    """One panel per value of column ``panel``: simulated throughput (packets per RTT) against
    transfer size, log x, beside the §3 analysis, Cardwell et al.'s model and Padhye's steady state."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = table[panel].unique().sort().to_list()
    fig, axes = plt.subplots(1, len(values), figsize=(5 * len(values), 4), squeeze=False)
    for ax, value in zip(axes[0], values, strict=True):
        t = table.filter(pl.col(panel) == value).sort("size_pkts")
        ax.plot(t["size_pkts"], t["sim_pkts_per_rtt"], "o-", label="simulation (smallpipe)")
        ax.plot(t["size_pkts"], t["analysis_pkts_per_rtt"], "s--", label="analysis (§3)")
        ax.plot(t["size_pkts"], t["cardwell_pkts_per_rtt"], "^:", label="Cardwell et al. [4]")
        ax.plot(t["size_pkts"], t["padhye_pkts_per_rtt"], ":", color="grey", label="Padhye steady state")
        ax.set_xscale("log")
        ax.set_xlabel("transfer size (packets)")
        ax.set_ylabel("throughput (packets per RTT)")
        ax.set_title(title(value))
        ax.legend(fontsize=8)
    fig.suptitle(suptitle)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 5's axes, one panel per loss rate."""
    plot_panels(table, path, panel="p", title=lambda p: f"p = {p}",
                suptitle="Size-aware paper, Figures 2/5: throughput vs transfer size under random loss")


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Both loss rates, 1000 transfers per size (100 with ``quick``), as CSV and PNG."""
    table = run(per_size=100 if quick else 1000, seed=seed)
    write_csv(table, out / "size-aware-fig5.csv")
    plot(table, out / "size-aware-fig5.png")
    return table
