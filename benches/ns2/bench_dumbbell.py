#!/usr/bin/env python3
"""ns-2's side of `smallpipe bench`: the same TAQ Figure 2 dumbbell (``bench_dumbbell`` in
python/smallpipe/presets.py) in ns-2 2.35, timed, one JSON line on stdout.

    python3 benches/ns2/bench_dumbbell.py -N 200 -C 2000000 -T 1000 [--runs 3] [--variant Newreno]

The link, buffer, packet size, RTT and start times follow the preset (the buffer is its
one-RTT rule, the starts uniform in [0, 1] s); the TCP is ns-2's one-way agent with its
own defaults (IW 2, window_ 20, minimum RTO 200 ms) and a TCPSink without delayed ACKs,
as the preset's ``NS2_TCP`` reads the paper. ``run_s`` is ns-2's simulation alone (the
Tcl set-up excluded), the median of ``--runs``; ns-2 is deterministic, so the runs differ
only in time.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ns2_side import VARIANTS, run
from smallpipe.presets import NS2_TCP, TAQ_RTT_MS, taq_dumbbell


def spec(flows: int, rate_bps: int, duration_s: float, variant: str, seed: int = 1) -> dict:
    """The preset's dumbbell as an ns2_side spec, its numbers read from the preset itself."""
    sc = taq_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=duration_s, seed=seed)
    link = sc.to_dict()["link"]
    rng = random.Random(seed)
    return {
        "name": f"bench N={flows}", "seed": seed, "rate_bps": rate_bps,
        "access_rate_bps": link.get("access_rate_bps", 1e8), "bottleneck_delay_ms": link["delay_ms"],
        "receiver_delay_ms": link.get("receiver_delay_ms", 0.0), "queue_pkts": link["queue"]["limit_pkts"],
        "loss": 0.0, "drop_data": [], "trace": False, "warmup_s": 0.0, "duration_s": duration_s,
        "flows": [{"start_s": rng.uniform(0.0, 1.0), "rtt_ms": TAQ_RTT_MS, "size_pkts": None} for _ in range(flows)],
        "tcp": {"packet_bytes": NS2_TCP["packet_size_bytes"]},
        "ns2": {"variant": variant, "sink": "TCPSink/Sack1" if variant == "Sack1" else "TCPSink"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-N", "--flows", type=int, default=200)
    parser.add_argument("-C", "--rate-bps", type=int, default=2_000_000)
    parser.add_argument("-T", "--duration-s", type=float, default=1000.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variant", choices=VARIANTS, default="Newreno")
    args = parser.parse_args()
    s = spec(args.flows, args.rate_bps, args.duration_s, args.variant)
    runs = [run(s) for _ in range(args.runs)]
    run_s = statistics.median(r["run_s"] for r in runs)
    r = runs[0]
    print(json.dumps({
        "simulator": "ns-2 2.35", "flows": args.flows, "rate_bps": args.rate_bps, "duration_s": args.duration_s,
        "variant": args.variant, "queue_pkts": s["queue_pkts"], "bottleneck_packets": r["bottleneck_packets"],
        "drops": r["drops"], "loss_rate": r["loss_rate"], "run_s": run_s,
        "process_s": statistics.median(x["wall_s"] for x in runs),
        "bottleneck_packets_per_wall_second": r["bottleneck_packets"] / run_s,
    }))


if __name__ == "__main__":
    main()
