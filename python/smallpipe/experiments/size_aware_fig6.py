"""Size-aware paper (Tokuda et al.), Figure 6: throughput against transfer size when the
window is capped at W_max = 32 or 64 packets, p = 0.01 — simulation against the Section 3
analysis and against Cardwell et al.'s latency model ("the analysis in [4]").

Set-up as Figure 5 (:mod:`smallpipe.experiments.size_aware_fig5`: 200 ms RTT, 1460-byte
segments, Reno, initial window 1, no delayed ACKs, T0 = 1 s, Bernoulli loss on a shared
hop, transfers whose handshake lost a packet left out), with the receiver window
``rwnd_bytes = W_max · 1460`` so the flight never exceeds W_max packets. Both models get
``w_max_pkts = W_max`` and no handshake (the paper's ns-2 TCP has none; our simulated times
have the handshake's RTT removed, as for Figure 5). Padhye's steady state with the same
W_max is drawn for reference.

What the paper reports: with the window capped the throughput no longer peaks after slow
start as in Figure 5 (the maximum falls), and its analysis again follows the simulation
better than Cardwell et al.'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.size_aware_fig5 import (
    MSS_BYTES,
    RTT_MS,
    SIZES_PKTS,
    T0_S,
    clean_transfers,
    group_throughput,
    plot_panels,
    scenario,
)
from smallpipe.models import cardwell, padhye
from smallpipe.models import size_aware as analysis
from smallpipe.result import simulate

__all__ = ["FIG6_P", "W_MAX_PKTS", "plot", "reproduce", "run"]

W_MAX_PKTS: tuple[int, ...] = (32, 64)
FIG6_P = 0.01


def run(*, w_max: Sequence[int] = W_MAX_PKTS, sizes: Sequence[int] = SIZES_PKTS, per_size: int = 1000,
        seed: int = 1) -> pl.DataFrame:
    """Rows: w_max_pkts, size_pkts, transfers, sim_pkts_per_rtt, sim_rel_stderr,
    analysis_pkts_per_rtt, cardwell_pkts_per_rtt, padhye_pkts_per_rtt, and the two models
    over the simulation."""
    rows = []
    rtt_s = RTT_MS / 1e3
    for w in w_max:
        sc = scenario(FIG6_P, sizes=sizes, per_size=per_size, seed=seed).with_overrides(
            {"tcp.rwnd_bytes": w * MSS_BYTES})
        done = clean_transfers(simulate(sc).flows)
        steady = padhye.throughput_full_pps(FIG6_P, rtt_s=rtt_s, t0_s=T0_S, wm_pkts=float(w), b=1.0) * rtt_s
        for g, d in enumerate(sizes):
            row = {"w_max_pkts": w, "size_pkts": d, **group_throughput(done, g, d, rtt_s)}
            analysis_pkts = analysis.throughput_pkts_per_rtt(d, FIG6_P, rtt_s=rtt_s, t0_s=T0_S, w_max_pkts=float(w))
            cardwell_pkts = cardwell.throughput_pkts_per_rtt(
                d, FIG6_P, rtt_s=rtt_s, t0_s=T0_S, w_max_pkts=float(w), handshake=False)
            row["analysis_pkts_per_rtt"] = analysis_pkts
            row["cardwell_pkts_per_rtt"] = cardwell_pkts
            row["padhye_pkts_per_rtt"] = steady
            sim = row["sim_pkts_per_rtt"]
            row["analysis_over_sim"] = analysis_pkts / sim if sim else None
            row["cardwell_over_sim"] = cardwell_pkts / sim if sim else None
            rows.append(row)
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 6's panels (a) W_max = 32, (b) 64."""
    plot_panels(table, path, panel="w_max_pkts", title=lambda w: f"W_max = {w} packets, p = {FIG6_P}",
                suptitle="Size-aware Figure 6: effect of the maximum window")


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Both W_max, 1000 transfers per size (100 with ``quick``), as CSV and PNG."""
    table = run(per_size=100 if quick else 1000, seed=seed)
    write_csv(table, out / "size-aware-fig6.csv")
    plot(table, out / "size-aware-fig6.png")
    return table
