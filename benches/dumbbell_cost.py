"""Where the time of an event goes on the TAQ Figure 2 dumbbell as the number of flows grows:
wall time, instructions and first-level data-cache misses per event, for each N.

    python benches/dumbbell_cost.py                         # N = 10 50 100 200 400
    python benches/dumbbell_cost.py --flows 10 200 --runs 9 --fifo-hops events

The scenario is `smallpipe bench`'s (2 Mbit/s DropTail bottleneck, 100-packet buffer,
200 ms RTT, bulk NewReno flows), which `benches/compare_ns3.sh` runs against ns-3.

- Wall time per event: the median over ``--runs`` runs of the simulation's own wall time
  (`meta["wall_seconds"]`, as `smallpipe bench` reports it) over its events, for
  ``--duration-s`` simulated seconds. Run it on quiet cores.
- Instructions and L1 data misses per event: one run of the simulator alone
  (`crates/sim/examples/run_scenario`, built here in release) under Valgrind's
  `cachegrind` with its cache model (32 KiB 8-way L1, as this machine's) for
  ``--cachegrind-duration-s`` simulated seconds. Counts, not times: they do not depend on
  what else runs. Needs `valgrind` (`apt-get install valgrind`).

Prints one JSON line per N and writes them to ``--out`` as CSV.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from smallpipe import simulate
from smallpipe.presets import bench_dumbbell

ROOT = Path(__file__).resolve().parents[1]
RATE_BPS = 2_000_000


def scenario(flows: int, duration_s: float, fifo_hops: str):
    return bench_dumbbell(flows=flows, rate_bps=RATE_BPS, duration_s=duration_s, fifo_hops=fifo_hops)


def wall_ns_per_event(flows: int, duration_s: float, fifo_hops: str, runs: int) -> tuple[float, int]:
    sc = scenario(flows, duration_s, fifo_hops)
    samples, events = [], 0
    for _ in range(runs):
        meta = simulate(sc).meta
        events = meta["events"]
        samples.append(meta["wall_seconds"] * 1e9 / events)
    return statistics.median(samples), events


def build_run_scenario() -> Path:
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "smallpipe-sim", "--example", "run_scenario"],
                   cwd=ROOT, check=True)
    target = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT,
                                       check=True, capture_output=True, text=True).stdout)["target_directory"]
    return Path(target) / "release" / "examples" / "run_scenario"


def cachegrind_per_event(binary: Path, flows: int, duration_s: float, fifo_hops: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scenario.json"
        path.write_text(scenario(flows, duration_s, fifo_hops).to_json())
        run = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--D1=32768,8,64",
                              "--cachegrind-out-file=/dev/null", str(binary), str(path)],
                             check=True, capture_output=True, text=True)
    events = int(re.search(r"^events (\d+)", run.stdout, re.MULTILINE).group(1))

    def count(label: str) -> int:
        return int(re.search(label + r":\s+([\d,]+)", run.stderr).group(1).replace(",", ""))

    return {"cachegrind_events": events,
            "instructions_per_event": count("I +refs") / events,
            "l1d_misses_per_event": count("D1 +misses") / events}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, nargs="+", default=[10, 50, 100, 200, 400])
    ap.add_argument("--duration-s", type=float, default=1000.0, help="simulated time of the timed runs [1000]")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per N; the median counts [5]")
    ap.add_argument("--cachegrind-duration-s", type=float, default=200.0,
                    help="simulated time of the cachegrind run [200]")
    ap.add_argument("--fifo-hops", choices=["events", "computed"], default="computed")
    ap.add_argument("--out", type=Path, default=Path("dumbbell-cost.csv"))
    args = ap.parse_args()
    bad = [n for n in args.flows if n < 1]
    if bad:
        sys.exit(f"--flows: {bad[0]} is not allowed: each N must be at least 1")
    if args.runs < 1:
        sys.exit(f"--runs: {args.runs} is not allowed: at least 1")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind not found: `apt-get install valgrind` (cachegrind counts the instructions and misses)")
    binary = build_run_scenario()
    rows = []
    for n in args.flows:
        ns, events = wall_ns_per_event(n, args.duration_s, args.fifo_hops, args.runs)
        row = {"flows": n, "fifo_hops": args.fifo_hops, "events": events, "wall_ns_per_event": round(ns, 1),
               **cachegrind_per_event(binary, n, args.cachegrind_duration_s, args.fifo_hops)}
        row["instructions_per_event"] = round(row["instructions_per_event"])
        row["l1d_misses_per_event"] = round(row["l1d_misses_per_event"], 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
        with args.out.open("w", newline="") as f:  # rewritten after each N: a partial run keeps its rows
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
