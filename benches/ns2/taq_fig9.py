"""TAQ Figure 9's flow evolution in ns-2 2.35, on `smallpipe reproduce taq-fig9`'s set-up
(python/smallpipe/experiments/taq_fig9.py): 180 bulk flows started in the first second over
600 kbit/s, 200 ms RTT, 500-byte packets, a one-RTT buffer of 30 packets, 600 s. Each flow is
classed per epoch (0.4 s, the loaded RTT, and 1.2 s) as maintained, dropped, arriving or
stalled from whether its cumulative ACK moved in this epoch and the last (TAQ §5.2), after
the first 20 s. ns-2 has no TAQ: its queues DropTail, RED and SFQ at their defaults are the
baselines. One-way `Agent/TCP/Newreno` + `TCPSink`.

    python3 benches/ns2/taq_fig9.py --seed 1 --out fig9.csv

Writes the columns of smallpipe's taq-fig9.csv that ns-2 can give (discipline, epoch_s,
epochs, the four means, stalled_lower_bound, utilization, loss_rate, timeouts_per_flow) and
the commit of the scripts that ran it."""

from __future__ import annotations

import argparse
import csv
import itertools
import sys
from pathlib import Path

from smallpipe._smallpipe import __version__
from smallpipe.experiments.taq_fig9 import (
    EPOCH_S,
    FLOWS,
    LONG_EPOCH_FACTOR,
    RATE_BPS,
    WARMUP_S,
    stalled_lower_bound,
)
from smallpipe.provenance import source_commit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dumbbell import spec as bench_spec
from ns2_side import run

BUFFER_PKTS = 30
STATES = ("maintained", "dropped", "arriving", "stalled")


def evolution(slices: list[list[int]], factor: int) -> list[dict[str, int]]:
    """Per pair of consecutive epochs of `factor` slices, the flows in each state."""
    epochs = [[sum(col) for col in zip(*slices[k:k + factor])] for k in range(0, len(slices) - factor + 1, factor)]
    counts = []
    for before, now in itertools.pairwise(epochs):
        c = dict.fromkeys(STATES, 0)
        for b, a in zip(before, now):
            c["maintained" if b and a else "dropped" if b else "arriving" if a else "stalled"] += 1
        counts.append(c)
    return counts


def rows(queue: str, duration_s: float, seed: int) -> list[dict]:
    s = bench_spec(FLOWS, RATE_BPS, duration_s, "Newreno", seed)
    s.update(name=f"taq-fig9 {queue}", queue_pkts=BUFFER_PKTS, warmup_s=WARMUP_S, duration_s=duration_s - WARMUP_S)
    s["ns2"] = {"variant": "Newreno", "sink": "TCPSink", "slice_s": EPOCH_S, "queue": queue}
    r = run(s)
    out = []
    for factor in (1, LONG_EPOCH_FACTOR):
        epoch_s = EPOCH_S * factor
        counts = evolution(r["slice_acked_pkts"], factor)
        out.append({
            "discipline": queue, "epoch_s": epoch_s, "epochs": len(counts),
            **{f"{state}_mean": sum(c[state] for c in counts) / len(counts) for state in STATES},
            "stalled_lower_bound": stalled_lower_bound(flows=FLOWS, rate_bps=RATE_BPS, epoch_s=epoch_s),
            "utilization": r["utilization"], "loss_rate": r["loss_rate"],
            "timeouts_per_flow": sum(r["timeouts"]) / FLOWS, "seed": seed, "ns2_run_s": r["run_s"],
            "smallpipe_version": __version__, "smallpipe_commit": source_commit(),
        })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queues", nargs="+", choices=("DropTail", "RED", "SFQ"), default=["DropTail", "RED", "SFQ"])
    ap.add_argument("--duration-s", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.duration_s <= WARMUP_S + 2 * EPOCH_S * LONG_EPOCH_FACTOR:
        sys.exit(f"--duration-s: {args.duration_s} is not allowed: more than the {WARMUP_S:g} s warm-up "
                 "and two long epochs")
    table = []
    for queue in args.queues:
        table += rows(queue, args.duration_s, args.seed)
        for row in table[-2:]:
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
        with args.out.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(table)


if __name__ == "__main__":
    main()
