"""ns-2 vs smallpipe's `tcp.stack = "ns2"` on benches/ns2's dumbbell: N bulk flows (started
0.1 s apart, RTT 200 ms, 500-byte packets) over 1 Mbit/s with a 50-packet DropTail queue,
measured over [20 s, 120 s]. Needs `ns` and an importable smallpipe.

    python3 benches/ns2/ns2_stack_row.py N Newreno|Reno|Sack1

Prints, per simulator: loss rate, mean queue, timeouts per flow, goodput, Jain's index of
the flows' goodput (docs/validation.md, "ns-2")."""

import importlib.util
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


def main():
    n, variant = int(sys.argv[1]), sys.argv[2]
    recovery = RECOVERY[variant]
    ns2 = load("ns2_side", ROOT / "benches" / "ns2" / "ns2_side.py")
    sp = load("sp_side", ROOT / "benches" / "validation" / "sp_side.py")
    spec = {
        "name": "row", "seed": 1, "rate_bps": 1e6, "access_rate_bps": 1e8, "bottleneck_delay_ms": 1.0,
        "queue_pkts": 50, "loss": 0.0, "drop_data": [], "trace": False, "warmup_s": 20.0, "duration_s": 100.0,
        "flows": [{"start_s": 0.1 * i, "rtt_ms": 200.0, "size_pkts": None} for i in range(n)],
        # sp_side's aligned settings; the ns2 stack below replaces every one it decides.
        "tcp": {"packet_bytes": 500, "timestamps": False, "sack": recovery == "sack", "iw": 2,
                "delayed_ack": False, "min_rto_s": 0.2, "initial_rto_s": 3.0},
        "ns2": {"variant": variant},
    }
    runs = {"ns-2": ns2.run(spec), "smallpipe ns2": sp.run(spec, {"tcp.stack": "ns2", "tcp.recovery": recovery})}
    for name, r in runs.items():
        print(f"{name:14s} loss {r['loss_rate'] * 100:.2f}%  queue {r['mean_queue_pkts']:.1f} pkts"
              f"  timeouts/flow {sum(r['timeouts']) / n:.1f}"
              f"  goodput {sum(r['rx_bytes']) * 8 / spec['duration_s'] / 1e3:.1f} kbit/s  Jain {jain(r['rx_bytes']):.3f}")


if __name__ == "__main__":
    main()
