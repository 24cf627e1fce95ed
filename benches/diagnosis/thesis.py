#!/usr/bin/env python3
"""Diagnosis runs of docs/reproductions/thesis.md: each missed claim, one cause at a time.

    python3 benches/diagnosis/thesis.py fig52-gap              # Figure 5.2: FQ's share of the TCP-RCP gap, every cause
    python3 benches/diagnosis/thesis.py fig52-gap --only rcp-alpha-0.1 --seed 2

``fig52-gap`` runs the Figure 5.2 link (2.4 Gbit/s, 100 ms) for ``--duration-s`` simulated
seconds (default 20, flows counted from 1 s to duration - 3 s) under each cause of
:data:`CAUSES`, running only the protocols the cause changes; the others are the baseline's
run of the same seed (every protocol sees the same flows). Each (cause, protocol, seed,
duration) summary is cached under ``--cache`` so causes can run as separate processes and
the table is assembled from what is there. Every run is seed 1 unless ``--seed`` says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl
from smallpipe.experiments import thesis_fig52
from smallpipe.experiments.thesis_fig51 import PACKET_SIZE_BYTES
from smallpipe.models import fct_bounds
from smallpipe.result import overriding

WINDOW_PROTOCOLS = ("tcp", "iw10", "fq")
CAUSES: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    "baseline": ("as committed: BDP buffer, IW 2/10, no delayed ACK, RCP α = β = 1, T = 10 ms", {},
                 (*WINDOW_PROTOCOLS, "rcp")),
    "rcp-alpha-0.1": ("RCP α = 0.1, β = 1 (the RCP scripts' Pareto runs)", {"link.queue.alpha": 0.1}, ("rcp",)),
    "rcp-alpha-0.4": ("RCP α = 0.4, β = 1 (the RCP scripts' example)", {"link.queue.alpha": 0.4}, ("rcp",)),
    "rcp-interval-rtt": ("RCP control interval T = d = 100 ms", {"link.queue.interval_ms": 100.0}, ("rcp",)),
    "buffer-bdp-10": ("buffer 3 000 packets (BDP/10)", {"link.queue.limit_pkts": 3000}, WINDOW_PROTOCOLS),
    "buffer-bdp-100": ("buffer 300 packets (BDP/100)", {"link.queue.limit_pkts": 300}, WINDOW_PROTOCOLS),
    "buffer-50": ("buffer 50 packets for every protocol (ns-2's default, as Figure 5.1's)",
                  {"link.queue.limit_pkts": 50}, (*WINDOW_PROTOCOLS, "rcp")),
    "delayed-ack": ("delayed ACKs (every second packet, 200 ms timer)", {"tcp.delayed_ack": True},
                    WINDOW_PROTOCOLS),
    "fq-iw2": ("FQ behind IW 2 TCP", {"tcp.initial_window_pkts": 2}, ("fq",)),
}
"""Name: (what it changes, the overrides, the protocols it changes)."""
ROWS = ((13, 13), (133, 133), (325, 550), (825, 1075))
"""The sizes the thesis gives shares at: 13, 133, about 500 and about 1000 packets."""
THESIS_P99_SHARE = {13: 0.75, 133: 0.75, 325: 0.85, 825: 0.88}
"""The thesis's p99 shares at the rows of :data:`ROWS` (§5.1)."""


def loss_free_median_share(packets: int) -> float:
    """FQ's share of the median gap if TCP and FQ never lose or queue (slow start's FCT at
    IW 2 and IW 10) and RCP is ideal (1.5 RTT + the flow at the link's whole rate)."""
    rtt_s, rate_bps = thesis_fig52.RTT_MS / 1000, thesis_fig52.RATE_BPS
    tcp, fq = (fct_bounds.slow_start_fct_s(packets, rtt_s, rate_bps, PACKET_SIZE_BYTES, iw) for iw in (2, 10))
    rcp = fct_bounds.processor_sharing_fct_s(packets, rtt_s, rate_bps, PACKET_SIZE_BYTES)
    return (tcp - fq) / (tcp - rcp)


def _summary(cause: str, protocol: str, seed: int, duration_s: float, cache: Path) -> pl.DataFrame:
    path = cache / f"{cause}-{protocol}-seed{seed}-{duration_s:g}s.csv"
    if path.exists():
        return pl.read_csv(path)
    overrides = CAUSES[cause][1]
    with overriding(overrides):
        fcts = thesis_fig52.run(protocols=(protocol,), duration_s=duration_s, warmup_s=1.0, drain_s=3.0, seed=seed)
    table = thesis_fig52.summary(fcts)
    cache.mkdir(parents=True, exist_ok=True)
    table.write_csv(path)
    return table


def fig52_gap(seed: int, duration_s: float, cache: Path, only: list[str] | None) -> None:
    """Per cause: median and p99 (s) of tcp, iw10, fq and rcp at :data:`ROWS`, and FQ's share
    of the TCP-RCP gap there, (tcp - fq) / (tcp - rcp)."""
    print("loss-free median share (slow start vs ideal RCP): "
          + ", ".join(f"{k} pkts {loss_free_median_share(k):.0%}" for k in (13, 133, 500, 1000)))
    causes = only or list(CAUSES)
    for cause in causes:  # the runs each cause changes first, so parallel processes share the baseline's
        for protocol in CAUSES[cause][2]:
            _summary(cause, protocol, seed, duration_s, cache)
    for cause in causes:
        what, _, changed = CAUSES[cause]
        tables = [_summary(cause if p in changed else "baseline", p, seed, duration_s, cache)
                  for p in (*WINDOW_PROTOCOLS, "rcp")]
        table = pl.concat(tables).filter(
            pl.struct("size_lo_pkts", "size_hi_pkts").is_in([{"size_lo_pkts": lo, "size_hi_pkts": hi}
                                                             for lo, hi in ROWS]))
        print(f"\n{cause}: {what} (seed {seed}, {duration_s:g} s)")
        shares = {c: thesis_fig52.gap_closed(table, c) for c in ("median_s", "p99_s")}
        for lo, hi in ROWS:
            at = table.filter(pl.col("size_lo_pkts") == lo, pl.col("size_hi_pkts") == hi)
            by = {r["protocol"]: r for r in at.iter_rows(named=True)}
            share = {c: s.filter(pl.col("size_lo_pkts") == lo)["gap_closed"][0] for c, s in shares.items()}
            cells = "  ".join(f"{p} {_s(by[p]['median_s'], '.3f')}/{_s(by[p]['p99_s'], '.3f')}"
                              f"{f' ({u} unfinished)' if (u := by[p]['unfinished']) else ''}"
                              for p in (*WINDOW_PROTOCOLS, "rcp"))
            print(f"  {lo:4d}-{hi:<4d} flows {by['tcp']['flows']:6d}  median/p99: {cells}  "
                  f"FQ closes: median {_s(share['median_s'], '.0%')} p99 {_s(share['p99_s'], '.0%')}  "
                  f"(the thesis's p99 share needs a tcp p99 of {_s(_tcp_p99_needed(by, THESIS_P99_SHARE[lo]), '.2f')} s)",
                  flush=True)


def _tcp_p99_needed(by: dict[str, dict[str, Any]], share: float) -> float | None:
    """The TCP p99 at which FQ's measured p99 closes ``share`` of the gap to RCP's measured
    p99: tcp = (fq - share * rcp) / (1 - share); None if either is unknown."""
    fq, rcp = by["fq"]["p99_s"], by["rcp"]["p99_s"]
    return None if fq is None or rcp is None else (fq - share * rcp) / (1 - share)


def _s(value: float | None, spec: str) -> str:
    """``value`` formatted, or "unknown" (a quantile that lands on an unfinished flow)."""
    return "unknown" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["fig52-gap"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration-s", type=float, default=20.0)
    parser.add_argument("--only", nargs="+", choices=sorted(CAUSES))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/smallpipe-diagnosis-thesis"))
    args = parser.parse_args()
    fig52_gap(args.seed, args.duration_s, args.cache, args.only)


if __name__ == "__main__":
    main()
