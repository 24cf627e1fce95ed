"""TAQ Figure 6 in ns-2 2.35: the share of flow-epochs in which a sender sent 0, 1 or 2 data
packets, against the idealized model (`smallpipe.models.taq_full`, W_max = 6, three backoff
stages) at the run's loss rate, on `smallpipe reproduce taq-fig6`'s set-up
(python/smallpipe/experiments/taq_fig6.py): bulk flows with propagation RTTs uniform in
100–300 ms, 500-byte packets, a DropTail buffer of one 200 ms RTT, 0.25, 0.5 and 1 Mbit/s
with N = rate / fair share flows, 400 ms epochs after the first 20 s, 600 s. The paper
ran ns-2 with SACK: `Agent/TCP/Sack1` + `TCPSink/Sack1` (and `Newreno` with `--variant`).
It "also ran simulations under RED and SFQ": `--queue RED` or `SFQ` puts ns-2's own queue,
at its defaults (RED's automatic thresholds, SFQ's 16 buckets), on the bottleneck.

    python3 benches/ns2/taq_fig6.py --seed 1 --out fig6.csv
    python3 benches/ns2/taq_fig6.py --seed 1 --queue RED --out fig6-red.csv

Writes the columns of smallpipe's taq-fig6.csv that ns-2 can give (rate_bps,
fair_share_bps, flows, loss_rate, flow_epochs, and sim_/model_/ratio_/diff_ for sent_0,
sent_1, sent_2), the agent and the commit of the scripts that ran it. A sender's packets in
an epoch are its `ndatapack_` growth (retransmissions included), as smallpipe's
`segments_sent` counts them."""

from __future__ import annotations

import argparse
import csv
import itertools
import random
import sys
from pathlib import Path

from smallpipe._smallpipe import __version__
from smallpipe.experiments.taq_fig6 import (
    BACKOFF_STAGES,
    EPOCH_S,
    FAIR_SHARES_BPS,
    RATES_BPS,
    RTT_MS,
    W_MAX,
    WARMUP_S,
)
from smallpipe.models import taq_full
from smallpipe.presets import TAQ_PACKET_SIZE_BYTES, TAQ_RTT_MS
from smallpipe.provenance import source_commit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ns2_side import run

SINKS = {"Sack1": "TCPSink/Sack1", "Newreno": "TCPSink"}
QUEUES = ("DropTail", "RED", "SFQ")


def row(rate_bps: int, share_bps: int, duration_s: float, seed: int, variant: str, queue: str) -> dict:
    flows = max(2, round(rate_bps / share_bps))
    draw = random.Random(seed)
    # One RTT of buffer, as taq_dumbbell sizes it: the 200 ms propagation RTT at the rate.
    buffer_pkts = max(1, round(rate_bps * TAQ_RTT_MS / 1e3 / (TAQ_PACKET_SIZE_BYTES * 8)))
    spec = {
        "name": f"taq-fig6 rate={rate_bps} share={share_bps}", "seed": seed, "rate_bps": rate_bps,
        "access_rate_bps": 1e8, "bottleneck_delay_ms": 1.0, "queue_pkts": buffer_pkts, "loss": 0.0,
        "drop_data": [], "trace": False, "warmup_s": WARMUP_S, "duration_s": duration_s - WARMUP_S,
        "flows": [{"start_s": draw.uniform(0.0, 1.0), "rtt_ms": draw.uniform(*RTT_MS), "size_pkts": None}
                  for _ in range(flows)],
        "tcp": {"packet_bytes": TAQ_PACKET_SIZE_BYTES},
        "ns2": {"variant": variant, "sink": SINKS[variant], "slice_s": EPOCH_S, "queue": queue},
    }
    r = run(spec)
    counts = [0, 0, 0]
    epochs = 0
    for per_flow in r["slice_sent_pkts"]:
        for sent in per_flow:
            epochs += 1
            if sent < 3:
                counts[sent] += 1
    model = taq_full.stationary_distribution(r["loss_rate"], W_MAX, BACKOFF_STAGES)
    out = {"rate_bps": rate_bps, "fair_share_bps": share_bps, "flows": flows, "buffer_pkts": buffer_pkts,
           "loss_rate": r["loss_rate"], "flow_epochs": epochs}
    for k in range(3):
        sim, predicted = counts[k] / epochs, model.packets_sent(k)
        out |= {f"sim_sent_{k}": sim, f"model_sent_{k}": predicted,
                f"ratio_sent_{k}": sim / predicted if predicted > 0 else None, f"diff_sent_{k}": sim - predicted}
    return out | {"variant": variant, "queue": queue, "seed": seed, "duration_s": duration_s, "ns2_run_s": r["run_s"],
                  "smallpipe_version": __version__, "smallpipe_commit": source_commit()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", type=int, nargs="+", default=list(RATES_BPS))
    ap.add_argument("--fair-shares", type=int, nargs="+", default=list(FAIR_SHARES_BPS))
    ap.add_argument("--variant", choices=sorted(SINKS), default="Sack1")
    ap.add_argument("--queue", choices=QUEUES, default="DropTail", help="the bottleneck's ns-2 queue [DropTail]")
    ap.add_argument("--duration-s", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.duration_s <= WARMUP_S + EPOCH_S:
        sys.exit(f"--duration-s: {args.duration_s} is not allowed: more than the {WARMUP_S:g} s warm-up")
    rows = []
    for rate, share in itertools.product(args.rates, args.fair_shares):
        rows.append(row(rate, share, args.duration_s, args.seed, args.variant, args.queue))
        print({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}, flush=True)
        with args.out.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
