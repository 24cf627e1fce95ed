#!/usr/bin/env bash
# Speed of smallpipe against ns-3 3.44 on the TAQ Figure 2 DropTail dumbbell (bulk flows,
# 2 Mbit/s, 200 ms propagation RTT, 100-packet buffer), run back to back on the same
# machine for each number of flows in FLOWS (default "10 200": is the speed-up flat in N?).
# Needs `pip install 'smallpipe[bench]'` (ns3). Prints one JSON line per simulator and N
# (smallpipe: the median of three runs), then a line with the ratios: all packet
# transmissions, bottleneck packets and events per wall second. FIFO_HOPS=computed runs
# smallpipe with `fifo_hops = "computed"` (docs/scenario.md; default: events).
# NS3 names the ns-3 builds to run, in turn (default "wheel"): "wheel" is the PyPI ns3 3.44
# (benches/ns3/fig2_dumbbell.py), "debian" Debian's ns-3 3.37 (`apt-get install
# libns3-dev`) running the same scenario from C++ (benches/ns3/fig2_dumbbell.cc, built here
# with make); each gets its own line of ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
FLOWS=${FLOWS:-"10 200"}; RATE=${RATE:-2000000}; T=${T:-1000}; FIFO_HOPS=${FIFO_HOPS:-events}
NS3=${NS3:-wheel}
for build in $NS3; do
  case $build in
    wheel) ;;
    debian) make -s -C benches/ns3 fig2_dumbbell ;;
    *) echo "NS3: unknown ns-3 build '$build' (allowed: wheel, debian)" >&2; exit 2 ;;
  esac
done
for N in $FLOWS; do
  ours=$(for i in 1 2 3; do smallpipe bench --flows "$N" --rate-bps "$RATE" --duration-s "$T" --fifo-hops "$FIFO_HOPS" --json; done \
    | python3 -c 'import sys, json; runs = sorted((json.loads(l) for l in sys.stdin), key=lambda r: r["packets_per_second"]); print(json.dumps(runs[1]))')
  echo "$ours"
  # Same scenario in ns-3: smallpipe's preset uses IW 2 and a 200 ms minimum RTO (ns-2's
  # defaults), a 99 ms sender access delay and a 0 ms receiver access delay.
  for build in $NS3; do
    if [ "$build" = wheel ]; then run=(python3 benches/ns3/fig2_dumbbell.py); else run=(benches/ns3/fig2_dumbbell); fi
    theirs=$("${run[@]}" -N "$N" -C "$RATE" -T "$T" --initial-cwnd 2 --min-rto-s 0.2 \
      --sender-delay-ms 99 --receiver-delay-ms 0 2>/dev/null | tail -n 1)
    echo "$theirs"
    python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours, theirs = (json.loads(a) for a in sys.argv[1:])
print(json.dumps({
    "flows": ours["flows"],
    "ns3": theirs["version"],
    "speedup_packets_per_wall_second": round(ours["packets_per_second"] / theirs["packets_per_wall_second"], 1),
    "speedup_bottleneck_packets_per_wall_second":
        round(ours["bottleneck_packets_per_second"] / theirs["bottleneck_packets_per_wall_second"], 1),
    "speedup_events_per_wall_second": round(ours["events_per_second"] / theirs["events_per_wall_second"], 1),
}))
PY
  done
done
