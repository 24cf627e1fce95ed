#!/usr/bin/env bash
# Speed of smallpipe against ns-3 3.44 on the TAQ Figure 2 DropTail scenario (200 bulk
# flows, 2 Mbit/s, 200 ms propagation RTT, 100-packet buffer, 1000 simulated seconds),
# run back to back on the same machine. Needs `pip install 'smallpipe[bench]'` (ns3).
# Prints one JSON line per simulator (smallpipe: the median of three runs) and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
FLOWS=${FLOWS:-200}; RATE=${RATE:-2000000}; T=${T:-1000}
best=$(for i in 1 2 3; do smallpipe bench --flows "$FLOWS" --rate-bps "$RATE" --duration-s "$T" --json; done \
  | python3 -c 'import sys, json; runs = sorted((json.loads(l) for l in sys.stdin), key=lambda r: r["packets_per_second"]); print(json.dumps(runs[1]))')
echo "$best"
# Same scenario in ns-3: smallpipe's preset uses IW 2 and a 200 ms minimum RTO (ns-2's
# defaults), a 99 ms sender access delay and a 0 ms receiver access delay.
ns3=$(python3 benches/ns3/fig2_dumbbell.py -N "$FLOWS" -C "$RATE" -T "$T" --initial-cwnd 2 --min-rto-s 0.2 \
  --sender-delay-ms 99 --receiver-delay-ms 0 2>/dev/null | tail -n 1)
echo "$ns3"
python3 - "$best" "$ns3" <<'PY'
import json, sys
ours, theirs = (json.loads(a) for a in sys.argv[1:])
print(json.dumps({"speedup_packets_per_wall_second": ours["packets_per_second"] / theirs["packets_per_wall_second"]}))
PY
