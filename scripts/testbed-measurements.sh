#!/usr/bin/env bash
# Every testbed measurement of the experiments issue, in sequence, on real Linux TCP. Run it
# ALONE on quiet cores (no builds, no other runs): the box's timing and Linux's timers are
# only as good as the machine is idle. Needs root, ip netns, ethtool, cargo and a Python
# with smallpipe installed (PYTHON=/path/to/venv/bin/python, default python3).
#
#   sudo scripts/testbed-measurements.sh [OUTDIR]     about 8 h 40 min (estimates below)
#   sudo SESSION=1 scripts/testbed-measurements.sh    about 1 h: every step at a scale that fits
#                                                     one working session, written to the pages
#   sudo QUICK=1 scripts/testbed-measurements.sh      about 50 min: checks the steps, not Linux
#
# Steps (wall time on an idle 2-core machine, estimated from run lengths plus ~7 s of set-up
# per testbed run; none of them measured yet):
#   1. box accuracy and speed       scripts/box-accuracy.sh OUTDIR/box-accuracy           ~2 min
#   2. TAQ Figure 11 on the testbed 96 runs of 200 s -> docs/reproductions/taq-testbed/   ~5 h 40 min
#   3. TAQ Figure 12 on the testbed 2 runs of 1800 s -> docs/reproductions/taq-testbed/   ~1 h
#   4. validation, Linux column     27 runs (N = 10/50/100, Bernoulli, web pool, 3 seeds)  ~1 h 55 min
#                                   -> docs/validation/linux_*.{csv,jsonl,json}, docs/validation.md
# Each step is bounded (timeout at twice its estimate); the script stops at the first failure,
# and on any exit (Ctrl-C, SIGTERM included) stops its step and removes the step's network
# namespaces. Logs: OUTDIR/<step>.log; OUTDIR/times.csv has each step's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "testbed-measurements: needs root (network namespaces)"; exit 2; }
OUT=${1:-target/testbed-measurements}
QUICK=${QUICK:-0}
SESSION=${SESSION:-0}
PY=${PYTHON:-python3}
"$PY" -c "import smallpipe.testbed" || { echo "testbed-measurements: $PY cannot import smallpipe (set PYTHON)"; exit 2; }
mkdir -p "$OUT"
cargo build --release -q -p smallpipe-middlebox -p smallpipe-trafficgen

SCALE=full; [ "$SESSION" = 1 ] && SCALE=session; [ "$QUICK" = 1 ] && SCALE=quick
FIGS=docs/reproductions/taq-testbed; [ "$QUICK" = 1 ] && FIGS=$OUT/taq-testbed-quick
VAL=docs/validation; VALDOC=docs/validation.md
if [ "$QUICK" = 1 ]; then  # never overwrite the page with a quick run
  VAL=$OUT/validation; VALDOC=$OUT/validation.md
  mkdir -p "$VAL"; cp docs/validation/summary.csv docs/validation/meta.json "$VAL/"; cp docs/validation.md "$VALDOC"
fi

STEP_PID=""
cleanup() {
  [ -n "$STEP_PID" ] || return 0
  local pids; pids=$(pgrep -s "$STEP_PID" 2>/dev/null || true)
  kill -TERM -- "-$STEP_PID" 2>/dev/null || true   # the step's process group: run_testbed cleans up on SIGTERM
  wait "$STEP_PID" 2>/dev/null || true
  # Whatever a killed step left behind: the testbed names its namespaces sp<its pid><4 hex>-*.
  for pid in $pids; do
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^sp${pid}[0-9a-f]{4}-(clients|box|servers)$" || true); do
      ip netns del "$ns" 2>/dev/null || true
    done
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "step,seconds,exit" > "$OUT/times.csv"
# step NAME LIMIT_S COMMAND...: runs COMMAND in a session of its own (setsid: its pid is the
# session and group id, so cleanup finds every process of the step), bounded by LIMIT_S.
step() {
  local name=$1 limit=$2; shift 2
  echo "== $name (limit ${limit} s): $*"
  local t0=$SECONDS rc=0
  setsid timeout --signal=TERM --kill-after=60 "$limit" "$@" > "$OUT/$name.log" 2>&1 &
  STEP_PID=$!
  wait "$STEP_PID" || rc=$?
  STEP_PID=""
  echo "$name,$((SECONDS - t0)),$rc" >> "$OUT/times.csv"
  tail -n 5 "$OUT/$name.log"
  [ "$rc" = 0 ] || { echo "testbed-measurements: $name failed (exit $rc), see $OUT/$name.log"; exit "$rc"; }
}

case $SCALE in
  quick) L1=300; L2=2400; L3=2400; L4=2400 ;;
  session) L1=600; L2=4000; L3=1500; L4=2400 ;;
  *) L1=600; L2=41000; L3=7500; L4=14000 ;;
esac
# FIGURE OUT SCALE: the figure's module at a scale (the CLI's reproduce knows full and quick only).
REPRODUCE='import sys; from pathlib import Path; from smallpipe.experiments import REPRODUCTIONS
print(REPRODUCTIONS[sys.argv[1]].reproduce(Path(sys.argv[2]), seed=1, scale=sys.argv[3]))'
mkdir -p "$FIGS"
step box-accuracy $L1 env QUICK="$QUICK" scripts/box-accuracy.sh "$OUT/box-accuracy"
step taq-testbed-fig11 $L2 env PYTHONUNBUFFERED=1 "$PY" -c "$REPRODUCE" taq-testbed-fig11 "$FIGS" "$SCALE"
step taq-testbed-fig12 $L3 env PYTHONUNBUFFERED=1 "$PY" -c "$REPRODUCE" taq-testbed-fig12 "$FIGS" "$SCALE"
if [ "$QUICK" = 1 ]; then
  step validation-linux $L4 "$PY" benches/validation/run.py --linux --out "$VAL" --doc "$VALDOC" --quick
elif [ "$SESSION" = 1 ]; then
  step validation-linux $L4 "$PY" benches/validation/run.py --linux --out "$VAL" --doc "$VALDOC" --seeds 1 --many-s 60 --bernoulli-s 120 --web-s 120
else
  step validation-linux $L4 "$PY" benches/validation/run.py --linux --out "$VAL" --doc "$VALDOC" --seeds 3 --bernoulli-s 300
fi
column -s, -t "$OUT/times.csv"
echo "done: box accuracy in $OUT/box-accuracy, figures in $FIGS, validation in $VAL ($VALDOC)"
