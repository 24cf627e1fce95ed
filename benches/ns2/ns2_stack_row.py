"""ns-2 vs smallpipe's `tcp.stack = "ns2"` on benches/ns2's dumbbell: N bulk flows (RTT 200 ms,
500-byte packets) over 1 Mbit/s with a 50-packet DropTail queue, measured over
[20 s, 20 s + DURATION]. Needs `ns` and an importable smallpipe.

    python3 benches/ns2/ns2_stack_row.py N Newreno|Reno|Sack1 [--duration-s 100]
    python3 benches/ns2/ns2_stack_row.py 50 Newreno --rtt-jitter-ms 10 --seeds 1 2 3
    python3 benches/ns2/ns2_stack_row.py 1 Newreno --loss 0.02 --seeds 1 2 3 4 5

Without `--rtt-jitter-ms` the flows start 0.1 s apart with equal RTTs, and neither simulator
draws a random number: one run. With it, flow i starts at a uniform time in [0, 2 s] and has
an RTT of 200 ms plus a uniform draw in [0, J] ms, both drawn here from the seed, so both
simulators run the same flows, once per seed. With `--loss P` each data packet is lost on
the bottleneck with probability P, drawn by each simulator from its own generator (the same
rate, not the same packets).

Prints, per run and simulator: bottleneck drops and loss rate, mean queue, timeouts (total
and per flow), goodput, Jain's index of the flows' goodput (docs/validation.md, "ns-2")."""

import argparse
import importlib.util
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECOVERY = {"Newreno": "newreno", "Reno": "reno", "Sack1": "sack"}


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def jain(x):
    return sum(x) ** 2 / (len(x) * sum(v * v for v in x)) if any(x) else 0.0


def flows(n, jitter_ms, seed):
    if jitter_ms is None:
        return [{"start_s": 0.1 * i, "rtt_ms": 200.0, "size_pkts": None} for i in range(n)]
    draw = random.Random(seed)
    return [{"start_s": draw.uniform(0.0, 2.0), "rtt_ms": 200.0 + draw.uniform(0.0, jitter_ms), "size_pkts": None}
            for _ in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("flows", type=int)
    ap.add_argument("variant", choices=sorted(RECOVERY))
    ap.add_argument("--duration-s", type=float, default=100.0)
    ap.add_argument("--rtt-jitter-ms", type=float, default=None)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--loss", type=float, default=0.0,
                    help="Bernoulli loss on the bottleneck's data direction (ns-2's ErrorModel; link.loss)")
    args = ap.parse_args()
    if args.flows < 1:
        sys.exit(f"flows: {args.flows} is not allowed: at least 1")
    if not 0 <= args.loss < 1:
        sys.exit(f"--loss: {args.loss} is not allowed: a probability in [0, 1)")
    if args.rtt_jitter_ms is not None and not 0 <= args.rtt_jitter_ms <= 100:
        sys.exit(f"--rtt-jitter-ms: {args.rtt_jitter_ms} is not allowed: between 0 and 100")
    n, recovery = args.flows, RECOVERY[args.variant]
    ns2 = load("ns2_side", ROOT / "benches" / "ns2" / "ns2_side.py")
    sp = load("sp_side", ROOT / "benches" / "validation" / "sp_side.py")
    for seed in args.seeds:
        spec = {
            "name": "row", "seed": seed, "rate_bps": 1e6, "access_rate_bps": 1e8, "bottleneck_delay_ms": 1.0,
            "queue_pkts": 50, "loss": args.loss, "drop_data": [], "trace": False, "warmup_s": 20.0,
            "duration_s": args.duration_s, "flows": flows(n, args.rtt_jitter_ms, seed),
            # sp_side's aligned settings; the ns2 stack below replaces every one it decides.
            "tcp": {"packet_bytes": 500, "timestamps": False, "sack": recovery == "sack", "iw": 2,
                    "delayed_ack": False, "min_rto_s": 0.2, "initial_rto_s": 3.0},
            "ns2": {"variant": args.variant},
        }
        runs = {"ns-2": ns2.run(spec), "smallpipe ns2": sp.run(spec, {"tcp.stack": "ns2", "tcp.recovery": recovery})}
        for name, r in runs.items():
            timeouts = sum(r["timeouts"])
            print(f"seed {seed}  {name:14s} drops {r['drops']}  loss {r['loss_rate'] * 100:.2f}%"
                  f"  queue {r['mean_queue_pkts']:.1f} pkts  timeouts {timeouts} ({timeouts / n:.2f}/flow)"
                  f"  goodput {sum(r['rx_bytes']) * 8 / spec['duration_s'] / 1e3:.1f} kbit/s"
                  f"  Jain {jain(r['rx_bytes']):.3f}", flush=True)


if __name__ == "__main__":
    main()
