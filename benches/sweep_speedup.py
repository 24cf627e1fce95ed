"""Wall time of one 8-point sweep on the local backend and on Ray, with 1 and 2 workers.

    python benches/sweep_speedup.py          # needs pip install 'smallpipe[ray]'

Each configuration runs the whole sweep into a fresh database; its wall time includes
starting the workers (and, for Ray, a local Ray instance of that many CPUs). For the Ray
runs each point's wall and CPU time (``time.process_time`` in the task) are printed too,
so a machine shared with other work shows up as wall time well above CPU time. The
metrics of every configuration are checked to be identical.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from smallpipe import store
from smallpipe.sweep import load_grid, run_sweep
from smallpipe.sweep_ray import ray_runner

# 8 points of 50 bulk flows on a 50 Mbit/s DropTail link for 300 simulated seconds
# (about 2 s of simulation each on this machine).
GRID = """
[base]
seed = 1
duration_s = 300.0
slice_s = 10.0

[base.link]
rate_bps = 50_000_000
delay_ms = 1.0
queue = { kind = "droptail", limit_pkts = 100 }

[[base.flows]]
count = 50
app = "bulk"
rtt_ms = [20.0, 100.0]
start_s = [0.0, 1.0]

[grid]
"link.queue.limit_pkts" = [50, 200]
seed = [1, 2, 3, 4]
"""

TIMING = ["started_at", "finished_at", "wall_seconds", "sim_wall_seconds", "run_dir", "attempts"]


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="sweep-speedup-"))
    grid_path = folder / "grid.toml"
    grid_path.write_text(GRID)
    grid = load_grid(grid_path)
    results = {}
    for backend in ("local", "ray"):
        for workers in (1, 2):
            db = folder / f"{backend}{workers}.duckdb"
            cpu: list[float] = []
            runner = ray_runner(workers=workers) if backend == "ray" else None
            load = os.getloadavg()[0]
            clock = time.perf_counter()
            outcome = run_sweep(grid, db, workers=workers, runner=runner,
                                on_point=lambda r, cpu=cpu: cpu.append(r.get("cpu_seconds", float("nan"))))
            wall = time.perf_counter() - clock
            assert outcome.ok == len(grid.points), outcome.errors
            points = store.read_points(db)
            results[(backend, workers)] = (wall, points)
            per_point = points["wall_seconds"].to_list()
            print(f"{backend} backend, {workers} worker(s): {wall:.1f} s wall for {outcome.ok} points "
                  f"(1-min load average before: {load:.1f}); per point wall {statistics.median(per_point):.2f} s median "
                  f"[{min(per_point):.2f}, {max(per_point):.2f}]"
                  + (f", CPU {statistics.median(cpu):.2f} s median [{min(cpu):.2f}, {max(cpu):.2f}]" if backend == "ray" else ""))
    reference = results[("local", 1)][1].drop(TIMING).sort("point_id")
    for key, (_, points) in results.items():
        assert points.drop(TIMING).sort("point_id").equals(reference, null_equal=True), f"{key} differs"
    print("every configuration gave identical metrics")
    for backend in ("local", "ray"):
        one, two = results[(backend, 1)][0], results[(backend, 2)][0]
        print(f"{backend}: speed-up with 2 workers {one / two:.2f}x")


if __name__ == "__main__":
    main()
