#!/usr/bin/env python3
"""TAQ Figure 2 in ns-2 2.35: the fairness of DropTail against the per-flow fair share, with
ns-2's one-way TCP agents as the paper ran them, one CSV row per run with the columns of
``smallpipe reproduce taq-fig2`` (smallpipe.experiments.taq_fig2) plus the agent.

    python3 benches/ns2/taq_fig2.py --out ns2-taq-fig2.csv                     # 1 Mbit/s, 1000 s
    python3 benches/ns2/taq_fig2.py --rates 500000 1000000 2000000 --duration-s 10000 \\
        --variants Newreno Reno Sack1 --sinks TCPSink TCPSink/DelAck --out full.csv

The set-up is the preset's (``taq_dumbbell``: 200 ms RTT, 1 ms bottleneck, a buffer of
rate x 200 ms / 4000 bit, 500-byte packets, starts uniform in [0, 1] s); N = rate / fair
share. Short-term numbers are over 20 s slices but the first (start-up), as taq_aqm does;
a slice's share of a flow is its ACKed packets in that slice.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import polars as pl
from smallpipe.experiments.provenance import write_csv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dumbbell import spec as bench_spec
from ns2_side import QUEUES, SINKS, VARIANTS, jain, run

FAIR_SHARES_BPS = (5_000, 10_000, 20_000, 30_000, 50_000, 100_000)


def slice_numbers(acked: list[int]) -> tuple[float | None, float, float | None]:
    """One slice's Jain index, share of flows with nothing, and share of the top 40%."""
    total = sum(acked)
    top = sorted(acked, reverse=True)[: math.ceil(0.4 * len(acked))]
    return jain([float(x) for x in acked]), sum(1 for x in acked if x == 0) / len(acked), \
        (sum(top) / total if total else None)


def mean(xs: list[float | None]) -> float | None:
    kept = [x for x in xs if x is not None]
    return sum(kept) / len(kept) if kept else None


def row(rate_bps: int, fair_share_bps: int, duration_s: float, variant: str, sink: str, seed: int,
        queue: str = "DropTail", window_pkts: int | None = None, overhead_s: float = 0.0) -> dict:
    flows = round(rate_bps / fair_share_bps)
    s = bench_spec(flows, rate_bps, duration_s, variant, seed)
    s["name"] = f"taq-fig2 rate={rate_bps} share={fair_share_bps} {variant} {sink}"
    s["ns2"] = {"variant": variant, "sink": sink, "slice_s": 20.0, "queue": queue, "window_pkts": window_pkts,
                "overhead_s": overhead_s}
    r = run(s)
    slices = r["slice_acked_pkts"]
    per_slice = [slice_numbers(a) for a in (slices[1:] if len(slices) > 1 else slices)]
    return {
        "rate_bps": rate_bps, "fair_share_bps": fair_share_bps, "flows": flows, "variant": variant, "sink": sink,
        "queue": queue, "window_pkts": window_pkts, "overhead_s": overhead_s,
        "long_term_jain": jain([float(x) for x in r["rx_bytes"]]),
        "short_term_jain": mean([j for j, _, _ in per_slice]),
        "zero_share": mean([z for _, z, _ in per_slice]),
        "top40_share": mean([t for _, _, t in per_slice]),
        "utilization": r["utilization"], "loss_rate": r["loss_rate"],
        "timeouts_per_flow": sum(r["timeouts"]) / flows, "mean_queue_pkts": r["mean_queue_pkts"],
        "queue_pkts": s["queue_pkts"], "duration_s": duration_s, "seed": seed, "ns2_run_s": r["run_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--fair-shares", type=int, nargs="+", default=list(FAIR_SHARES_BPS))
    parser.add_argument("--duration-s", type=float, default=1000.0)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=["Newreno"])
    parser.add_argument("--sinks", nargs="+", choices=("TCPSink", "TCPSink/DelAck"), default=["TCPSink"],
                        help="the sink; with Sack1 its Sack1 form (TCPSink/Sack1, TCPSink/Sack1/DelAck)")
    parser.add_argument("--queues", nargs="+", choices=QUEUES, default=["DropTail"],
                        help="the bottleneck's ns-2 queue, with ns-2's defaults (TAQ §2.4 compares RED and SFQ)")
    parser.add_argument("--window-pkts", type=int, help="the agents' window_ (ns-2's default: 20)")
    parser.add_argument("--overhead-s", type=float, default=0.0,
                        help="the agents' overhead_: a random delay up to this before each send (ns-2's default: 0)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = []
    for rate in args.rates:
        for share in args.fair_shares:
            for variant in args.variants:
                for sink in args.sinks:
                    if variant == "Sack1":
                        sink = sink.replace("TCPSink", "TCPSink/Sack1")
                    assert sink in SINKS
                    for queue in args.queues:
                        rows.append(row(rate, share, args.duration_s, variant, sink, args.seed, queue,
                                        args.window_pkts, args.overhead_s))
                        print(rows[-1], flush=True)
    write_csv(pl.DataFrame(rows), args.out)  # with the smallpipe commit that made it


if __name__ == "__main__":
    main()
