"""TAQ Figure 3 in ns-2 2.35: the DropTail buffer needed to restore short-term fairness, on
`smallpipe reproduce taq-fig3`'s set-up (python/smallpipe/experiments/taq_fig3.py): 2 Mbit/s,
1000-byte packets, 200 ms RTT, N bulk flows started in the first second, DropTail buffers of
a number of packets per flow, the mean Jain index over 20 s slices after the first 300 s.
One-way `Agent/TCP/Newreno` + `TCPSink` at ns-2's defaults (window_ 20, no overhead_).

    python3 benches/ns2/taq_fig3.py --seed 1 --out fig3.csv   # 32 runs of 3000 s
    python3 benches/ns2/taq_fig3.py --flows 800 --per-flow 10 --window-pkts 1000 --out x.csv
    python3 benches/ns2/taq_fig3.py --flows 800 --per-flow 10 --slice-s 60 --out x.csv

Writes the columns of smallpipe's taq-fig3.csv (flows, buffer_pkts, max_queue_delay_s,
short_term_jain, utilization) and loss, timeouts per flow, window_, seed, ns-2's run time and
the commit of the scripts that ran it."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from smallpipe._smallpipe import __version__
from smallpipe.experiments.taq_fig3 import (
    FLOWS,
    PACKET_SIZE_BYTES,
    PER_FLOW_BUFFER_PKTS,
    RATE_BPS,
    WARMUP_S,
)
from smallpipe.provenance import source_commit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dumbbell import spec as bench_spec
from ns2_side import run


def row(flows: int, per_flow: float, duration_s: float, seed: int, window_pkts: int | None, slice_s: float) -> dict:
    buffer_pkts = max(1, round(flows * per_flow))  # as taq_fig3.run rounds it
    s = bench_spec(flows, RATE_BPS, duration_s, "Newreno", seed)
    s.update(name=f"taq-fig3 flows={flows} buffer={buffer_pkts}", queue_pkts=buffer_pkts,
             warmup_s=WARMUP_S, duration_s=duration_s - WARMUP_S)
    s["tcp"] = {"packet_bytes": PACKET_SIZE_BYTES}
    s["ns2"] = {"variant": "Newreno", "sink": "TCPSink", "slice_s": slice_s, "window_pkts": window_pkts}
    r = run(s)
    per_slice = [j for j in r["jain_per_slice"] if j is not None]
    return {
        "flows": flows, "buffer_pkts": buffer_pkts,
        "max_queue_delay_s": buffer_pkts * PACKET_SIZE_BYTES * 8 / RATE_BPS,
        "short_term_jain": sum(per_slice) / len(per_slice) if per_slice else None,
        "utilization": r["utilization"], "loss_rate": r["loss_rate"],
        "timeouts_per_flow": sum(r["timeouts"]) / flows, "window_pkts": window_pkts or 20, "slice_s": slice_s,
        "duration_s": duration_s, "seed": seed, "ns2_run_s": r["run_s"],
        # The driver's own commit: the ns-2 side runs benches/ns2's Tcl at it.
        "smallpipe_version": __version__, "smallpipe_commit": source_commit(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, nargs="+", default=list(FLOWS))
    ap.add_argument("--per-flow", type=float, nargs="+", default=list(PER_FLOW_BUFFER_PKTS),
                    help="buffer in packets per flow")
    ap.add_argument("--duration-s", type=float, default=3000.0)
    ap.add_argument("--window-pkts", type=int, default=None, help="the agents' window_ (ns-2's default 20)")
    ap.add_argument("--slice-s", type=float, default=20.0, help="the Jain index's slice [20, the page's]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.duration_s <= WARMUP_S:
        sys.exit(f"--duration-s: {args.duration_s} is not allowed: more than the {WARMUP_S:g} s warm-up")
    rows = []
    for n in args.flows:
        for per_flow in args.per_flow:
            rows.append(row(n, per_flow, args.duration_s, args.seed, args.window_pkts, args.slice_s))
            print(rows[-1], flush=True)
            with args.out.open("w", newline="") as f:  # rewritten per row: a partial run keeps its rows
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)


if __name__ == "__main__":
    main()
