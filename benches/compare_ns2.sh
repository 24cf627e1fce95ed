#!/usr/bin/env bash
# Speed of smallpipe against ns-2 2.35 (Debian's `ns2`), in one run on one machine:
# 1. the `smallpipe bench` dumbbell (TAQ Figure 2, DropTail, 2 Mbit/s, 200 ms RTT, 100-packet
#    buffer, 500-byte packets, flows starting in [0, 1] s) for each N in FLOWS, ns-2 with its
#    one-way NewReno and a TCPSink (benches/ns2/bench_dumbbell.py);
# 2. with CHURN set to a number of flows (e.g. CHURN=1e5), the thesis's Figure 5.2 link
#    (2.4 Gbit/s, Poisson arrivals of Pareto flows at 90% load, TCP over DropTail), ns-2
#    replaying smallpipe's own arrivals with agents reused from a pool (benches/ns2/churn.py).
# Each side's bottleneck packet count is printed beside its rate: they must agree for the
# ratio to mean anything. smallpipe is the median of three runs, ns-2's simulation time
# the median of three (the churn: one run each). CPU (default 1) pins both to one core
# with taskset when it exists; SMALLPIPE names the smallpipe command (default: smallpipe);
# FIFO_HOPS=computed runs smallpipe's dumbbell with `fifo_hops = "computed"` (default: events).
set -euo pipefail
cd "$(dirname "$0")/.."
FLOWS=${FLOWS:-"10 200"}; RATE=${RATE:-2000000}; T=${T:-1000}; CPU=${CPU:-1}; CHURN=${CHURN:-}; FIFO_HOPS=${FIFO_HOPS:-events}
read -r -a SP <<< "${SMALLPIPE:-smallpipe}"
command -v ns >/dev/null || { echo "ns-2's ns is missing: apt-get install ns2" >&2; exit 2; }
PIN=(); if command -v taskset >/dev/null; then PIN=(taskset -c "$CPU"); fi
for N in $FLOWS; do
  ours=$(for i in 1 2 3; do "${PIN[@]}" "${SP[@]}" bench --flows "$N" --rate-bps "$RATE" --duration-s "$T" --fifo-hops "$FIFO_HOPS" --json; done \
    | python3 -c 'import sys, json; runs = sorted((json.loads(l) for l in sys.stdin), key=lambda r: r["bottleneck_packets_per_second"]); print(json.dumps(runs[1]))')
  theirs=$("${PIN[@]}" python3 benches/ns2/bench_dumbbell.py -N "$N" -C "$RATE" -T "$T" --runs 3)
  echo "$ours"; echo "$theirs"
  python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours, theirs = (json.loads(a) for a in sys.argv[1:])
print(json.dumps({
    "scenario": "dumbbell", "flows": ours["flows"], "fifo_hops": ours["fifo_hops"],
    "smallpipe_bottleneck_packets": ours["bottleneck_packets"],
    "ns2_bottleneck_packets": theirs["bottleneck_packets"],
    "smallpipe_bottleneck_packets_per_wall_second": round(ours["bottleneck_packets_per_second"]),
    "ns2_bottleneck_packets_per_wall_second": round(theirs["bottleneck_packets_per_wall_second"]),
    "speedup": round(ours["bottleneck_packets_per_second"] / theirs["bottleneck_packets_per_wall_second"], 2),
}))
PY
done
if [ -n "$CHURN" ]; then
  "${PIN[@]}" python3 benches/ns2/churn.py --flows "$CHURN"
fi
