#!/usr/bin/env bash
# Soak of smallpipe-box in the deployed topology of crates/middlebox/tests/deployed.rs
# (three LAN hosts on a bridge, one on VLAN 100, the box, a router, a server; TCP upload and
# download, a 100 KB fetch loop, ICMP and UDP echoes every 200 ms, IPv4 and IPv6), for a
# given time. Run it alone on quiet cores: it measures the box, not the machine.
#
#   scripts/box-soak.sh [DURATION_S [OUTDIR]]      default 3600 s, target/box-soak
#
# Environment (optional): SMALLPIPE_SOAK_QUEUE (taq as the packaged config sets it, fq_codel,
# or a queue's JSON such as a TAQ with a smaller flow_table_capacity; default taq), SMALLPIPE_SOAK_RATE_BPS (each way, default 2000000), SMALLPIPE_SOAK_FIFO
# (1: the box asks for SCHED_FIFO as deployed; 0: --no-fifo; default 1).
#
# Every 10 s it samples the box's RSS (/proc/PID/status VmRSS), departure lateness
# (count/p50/p99/max since the start, from the Prometheus endpoint), the IP bytes departed
# each way and the box's clock against the host's, into OUTDIR/soak.csv; at the end
# OUTDIR/summary.txt gives RSS first/last/max, the delivered rate of every whole minute
# against the set rate, the clock difference, probe loss and RTT quantiles and goodputs.
# The soak itself is the ignored test `soak` of tests/deployed.rs (one topology and one
# traffic mix for the test and the soak); this script builds it, runs it and, on any exit
# (Ctrl-C and kill included), stops it and removes its namespaces (spd-*-soak<PID>).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "box-soak: needs root (network namespaces)" >&2; exit 2; }
DURATION_S=${1:-3600}
case $DURATION_S in
  '' | *[!0-9]*) echo "box-soak: DURATION_S: '$DURATION_S' is not allowed (allowed: whole seconds, 30 to 604800)" >&2; exit 2 ;;
esac
if [ "$DURATION_S" -lt 30 ] || [ "$DURATION_S" -gt 604800 ]; then
  echo "box-soak: DURATION_S: $DURATION_S is not allowed (allowed: whole seconds, 30 to 604800)" >&2; exit 2
fi
OUT=${2:-target/box-soak}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TAG=soak$$

BIN=$(cargo test --release -p smallpipe-middlebox --test deployed --no-run 2>&1 |
      sed -n 's/.*Executable tests\/deployed.rs (\(.*\))$/\1/p' | tail -n 1)
[ -x "$BIN" ] || { echo "box-soak: could not build the test binary of tests/deployed.rs" >&2; exit 1; }

SOAK=""
cleanup() {
  if [ -n "$SOAK" ]; then
    # The test stops its load and its box, writes the summary and removes its namespaces.
    kill -TERM "$SOAK" 2>/dev/null || true
    wait "$SOAK" 2>/dev/null || true
  fi
  # Whatever it could not remove (it was killed with -9, say).
  for n in $(ip netns list | awk '{ print $1 }' | grep -E "^spd-.*-$TAG\$" || true); do
    ip netns del "$n" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

echo "box-soak: $DURATION_S s, results in $OUT"
SMALLPIPE_SOAK_S=$DURATION_S SMALLPIPE_DEPLOYED_TAG=$TAG SMALLPIPE_DEPLOYED_OUT=$OUT \
  "$BIN" --ignored --exact soak --nocapture --test-threads 1 &
SOAK=$!
rc=0
wait "$SOAK" || rc=$?
SOAK=""
exit "$rc"
