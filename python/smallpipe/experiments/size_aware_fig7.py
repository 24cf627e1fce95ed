"""Size-aware paper (Tokuda et al.), Figure 7: the Section 3 analysis against simulation
when the loss probability changes with the packet's index in its connection — 0 for the
1st–20th transmitted packets, 0.03 from the 21st on.

Set-up as Figure 5 (:mod:`smallpipe.experiments.size_aware_fig5`: 200 ms RTT, 1460-byte
segments, Reno, initial window 1, no delayed ACKs). The loss pattern is applied by the
``size_aware`` discipline with a fixed curve (``fixed_drop_p``) on the shared hop: it
counts each connection's data packets (retransmissions included, SYNs not) exactly as the
analysis indexes them. ``t_update_ns`` is set far above any timeout so a connection's
count never restarts.

What the paper reports: its analysis "estimates the throughput of the TCP precisely"
with the changing probability (Figure 7); transfers of up to 20 packets see no loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.size_aware_fig5 import (
    RTT_MS,
    SIZES_PKTS,
    T0_S,
    clean_transfers,
    group_throughput,
    scenario,
)
from smallpipe.models import size_aware as analysis
from smallpipe.result import simulate

__all__ = ["FIG7_DROP_P", "plot", "reproduce", "run"]

FIG7_DROP_P: list[float] = [0.0] * 20 + [0.03]
"""Per-packet loss probabilities of Figure 7 (the last value repeats)."""


def run(*, sizes: Sequence[int] = SIZES_PKTS, per_size: int = 1000, seed: int = 1) -> pl.DataFrame:
    """Rows: size_pkts, transfers, sim_pkts_per_rtt, sim_rel_stderr, analysis_pkts_per_rtt,
    analysis_const_pkts_per_rtt (0.03 for every packet, for contrast)."""
    queue = {"kind": "size_aware", "limit_pkts": 10_000, "fixed_drop_p": FIG7_DROP_P,
             "t_update_ns": 10**12}
    flows = simulate(scenario(0.0, sizes=sizes, per_size=per_size, seed=seed, queue=queue)).flows
    done = clean_transfers(flows)
    rtt_s = RTT_MS / 1e3
    rows = []
    for g, d in enumerate(sizes):
        rows.append({
            "size_pkts": d,
            **group_throughput(done, g, d, rtt_s),
            "analysis_pkts_per_rtt": analysis.throughput_pkts_per_rtt(d, FIG7_DROP_P, rtt_s=rtt_s, t0_s=T0_S),
            "analysis_const_pkts_per_rtt": analysis.throughput_pkts_per_rtt(d, 0.03, rtt_s=rtt_s, t0_s=T0_S),
        })
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 7's axes: throughput (packets per RTT) against transfer size, log x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = table.sort("size_pkts")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(t["size_pkts"], t["sim_pkts_per_rtt"], "o-", label="simulation (smallpipe)")
    ax.plot(t["size_pkts"], t["analysis_pkts_per_rtt"], "s--", label="analysis (§3)")
    ax.plot(t["size_pkts"], t["analysis_const_pkts_per_rtt"], ":", color="grey", label="analysis, 0.03 throughout")
    ax.axvline(20, color="lightgrey", linestyle="--")
    ax.set_xscale("log")
    ax.set_xlabel("transfer size (packets)")
    ax.set_ylabel("throughput (packets per RTT)")
    ax.set_title("Size-aware Figure 7: p = 0 for packets 1–20, 0.03 after")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """1000 transfers per size (100 with ``quick``), as CSV and PNG."""
    table = run(per_size=100 if quick else 1000, seed=seed)
    write_csv(table, out / "size-aware-fig7.csv")
    plot(table, out / "size-aware-fig7.png")
    return table
