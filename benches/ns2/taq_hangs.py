"""TAQ §2.3's hangs against ns-2, users read as long-lived connections: U users, each C bulk
NewReno connections (flows C·u … C·u + C − 1), over the Figure 2 dumbbell (1 Mbit/s, 200 ms
RTT, 500-byte packets, a 50-packet DropTail buffer), every connection starting at a uniform
time in the first 10 s, 600 s in all. A user's hang is its longest run of 1 s slices after
the first 10 s in which none of its connections' cumulative ACKs moved.

The same flows (start times drawn here from the seed) run three ways:

- ns-2 2.35: one-way `Agent/TCP/Newreno` + `TCPSink`, ns-2's defaults (benches/ns2/ns2_side.py);
- smallpipe with `tcp.stack = "ns2"` (the same agents; no random send delay, as ns-2);
- smallpipe with the page's TCP (`presets.NS2_TCP`: NewReno, IW 2, min RTO 200 ms, no
  delayed ACKs) and its default random send delay of one packet time.

    python3 benches/ns2/taq_hangs.py --users 200 400 --connections 4 2 --seeds 1 2 3 --out hangs.csv
    python3 benches/ns2/taq_hangs.py --users 400 --sides ns-2 --ns2-overhead-s 0.004 --out hangs-overhead.csv

Writes a row per (simulator, users, connections, seed): the share of users whose longest
hang exceeds 20 s and 60 s, the median longest hang, loss rate and utilization."""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import sys
from pathlib import Path

import smallpipe
from smallpipe._smallpipe import __version__
from smallpipe.presets import NS2_TCP, TAQ_PACKET_SIZE_BYTES, TAQ_RTT_MS
from smallpipe.provenance import source_commit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ns2_side import run as ns2_run

RATE_BPS = 1_000_000
BUFFER_PKTS = 50
DURATION_S = 600.0
START_UP_S = 10.0
SLICE_S = 1.0
SIDES = ("ns-2", "smallpipe ns2", "smallpipe")


def starts(flows: int, seed: int) -> list[float]:
    draw = random.Random(seed)
    return [draw.uniform(0.0, START_UP_S) for _ in range(flows)]


def longest_hangs(per_flow_slices: list[list[int]], connections: int) -> list[int]:
    """`per_flow_slices[k][i]`: what flow i received in slice k. The longest run of slices in
    which none of a user's connections received anything, per user."""
    users = len(per_flow_slices[0]) // connections
    longest = [0] * users
    run = [0] * users
    for row in per_flow_slices:
        for u in range(users):
            silent = not any(row[u * connections + c] for c in range(connections))
            run[u] = run[u] + 1 if silent else 0
            longest[u] = max(longest[u], run[u])
    return longest


def ns2_side(users: int, connections: int, seed: int, overhead_s: float) -> tuple[list[int], float, float]:
    flows = users * connections
    spec = {
        "name": f"taq-hangs users={users} connections={connections}", "seed": seed, "rate_bps": RATE_BPS,
        "access_rate_bps": 1e8, "bottleneck_delay_ms": 1.0, "queue_pkts": BUFFER_PKTS, "loss": 0.0,
        "drop_data": [], "trace": False, "warmup_s": START_UP_S, "duration_s": DURATION_S - START_UP_S,
        "flows": [{"start_s": s, "rtt_ms": TAQ_RTT_MS, "size_pkts": None} for s in starts(flows, seed)],
        "tcp": {"packet_bytes": TAQ_PACKET_SIZE_BYTES},
        "ns2": {"variant": "Newreno", "sink": "TCPSink", "slice_s": SLICE_S, "overhead_s": overhead_s},
    }
    r = ns2_run(spec)
    return longest_hangs(r["slice_acked_pkts"], connections), r["loss_rate"], r["utilization"]


def smallpipe_side(users: int, connections: int, seed: int, stack_ns2: bool) -> tuple[list[int], float, float]:
    flows = users * connections
    tcp = {"stack": "ns2"} if stack_ns2 else dict(NS2_TCP)
    tcp["packet_size_bytes"] = TAQ_PACKET_SIZE_BYTES
    sc = smallpipe.Scenario.from_dict({
        "seed": seed, "duration_s": DURATION_S, "slice_s": SLICE_S,
        "link": {"rate_bps": RATE_BPS, "delay_ms": 1.0, "queue": {"kind": "droptail", "limit_pkts": BUFFER_PKTS}},
        "tcp": tcp,
        "flows": [{"app": "bulk", "count": 1, "rtt_ms": TAQ_RTT_MS, "start_s": s} for s in starts(flows, seed)],
    })
    r = smallpipe.simulate(sc)
    first = int(START_UP_S / SLICE_S)
    table = [[0] * flows for _ in range(int(DURATION_S / SLICE_S) - first)]
    for flow, k, nbytes in zip(r.slices["flow_id"], r.slices["slice"], r.slices["bytes"]):
        if first <= k < first + len(table):
            table[k - first][flow] = nbytes
    bottleneck = r.links.filter(r.links["name"] == "bottleneck").row(0, named=True)
    loss = bottleneck["dropped_pkts"] / bottleneck["arrived_pkts"]
    return longest_hangs(table, connections), loss, bottleneck["utilization"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, nargs="+", default=[200, 400])
    ap.add_argument("--connections", type=int, nargs="+", default=[4])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--ns2-overhead-s", type=float, default=0.0,
                    help="the ns-2 agents' overhead_, a uniform random delay up to this before each send [0]")
    ap.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    for name, values in (("--users", args.users), ("--connections", args.connections)):
        bad = [v for v in values if v < 1]
        if bad:
            sys.exit(f"{name}: {bad[0]} is not allowed: at least 1")
    provenance = {"smallpipe_version": __version__, "smallpipe_commit": source_commit()}
    sides = {"ns-2": lambda u, c, s: ns2_side(u, c, s, args.ns2_overhead_s),
             "smallpipe ns2": lambda u, c, s: smallpipe_side(u, c, s, True),
             "smallpipe": lambda u, c, s: smallpipe_side(u, c, s, False)}
    sides = {k: v for k, v in sides.items() if k in args.sides}
    rows = []
    for users in args.users:
        for connections in args.connections:
            for seed in args.seeds:
                for side, run in sides.items():
                    longest, loss, utilization = run(users, connections, seed)
                    row = {"simulator": side, "ns2_overhead_s": args.ns2_overhead_s if side == "ns-2" else None,
                           "users": users, "connections": connections, "seed": seed,
                           "hang_over_20s_share": sum(h > 20 for h in longest) / users,
                           "hang_over_60s_share": sum(h > 60 for h in longest) / users,
                           "median_longest_hang_s": statistics.median(longest) * SLICE_S,
                           "loss_rate": loss, "utilization": utilization, **provenance}
                    print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()
                           if k not in provenance}, flush=True)
                    rows.append(row)
                    with args.out.open("w", newline="") as f:  # rewritten per row: a partial run keeps its rows
                        w = csv.DictWriter(f, fieldnames=list(rows[0]))
                        w.writeheader()
                        w.writerows(rows)


if __name__ == "__main__":
    main()
