"""Peak memory against flows: bytes per active flow and per finished flow.

    python benches/memory.py                      # table on stdout, docs/memory.png
    python benches/memory.py --max-flows 100000   # skip the 10^6 runs
    python benches/memory.py --kinds finished,finished_streamed   # only these kinds
    python benches/memory.py --kinds active --max-flows 30000    # bytes per active flow only

Each run is a fresh Python process (``--child KIND N``), so its resident set holds only
that run. Four kinds of run:

- ``active``: Poisson arrivals of flows too large to finish, over 100 host pairs, for
  2 simulated seconds with a 100 ms RTT, on a bottleneck of 50 kbit/s per flow; every
  flow is still open at the end.
- ``active_units``: N bulk flows, each on its own host pair (the reproductions' usual
  shape; at most 65 000 units, the simulator's limit when first measured), same rate
  per flow, 2 s.
- ``finished``: N one-packet flows arriving as a Poisson process over 100 host pairs for
  10 s on a 2 Gbit/s link with a 20 ms RTT; nearly all have finished at the end. Their
  connections are recycled, but their rows stay in memory to the end.
- ``finished_streamed``: the same with ``[output] stream_flows_every = 10000``, run by
  ``smallpipe.simulate(..., stream_dir=...)`` into a temporary directory: the rows leave
  as Parquet parts during the run.
- ``streamed_fixed_rate``: the same streamed flows at a fixed 30 000 per second, for
  N / 30 000 seconds: as many open at once whatever N, so the slope is what a finished
  flow costs (in ``finished_streamed`` more flows are also open at once as N grows).

For each run the child reports three resident sizes (``/proc/self/status``):
``before`` (after imports, before the run), ``sim`` (the highest VmRSS sampled every 2 ms
by a thread while the simulator runs with the GIL released: simulator state plus its
collected result rows) and ``peak`` (VmHWM at the end: also the Python lists and Polars
frames of the results). The slopes of ``sim`` and ``peak`` against flows, by least
squares, are the bytes per flow.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ACTIVE_RATE_PER_FLOW_BPS = 50_000
HOST_PAIRS = 100
KINDS = ("active", "active_units", "finished", "finished_streamed", "streamed_fixed_rate")
FIXED_RATE_PER_S = 30_000
MAX_UNITS = 65_000
"""Largest ``active_units`` run (the simulator's limit when it was first measured)."""
STREAM_FLOWS_EVERY = 10_000


def scenario(kind: str, flows: int) -> dict:
    """The scenario of one run with about ``flows`` flows (exactly, for ``active_units``)."""
    output = {}
    if kind in ("finished", "finished_streamed", "streamed_fixed_rate"):
        duration_s, rtt_ms, rate_bps = 10.0, 20.0, 2e9
        if kind == "streamed_fixed_rate":
            duration_s = flows / FIXED_RATE_PER_S
        if kind != "finished":
            output = {"output": {"stream_flows_every": STREAM_FLOWS_EVERY}}
        group = {"count": HOST_PAIRS, "app": "poisson", "size_bytes": 1000, "rate_per_s": flows / duration_s}
    else:
        duration_s, rtt_ms = 2.0, 100.0
        rate_bps = max(1e7, flows * ACTIVE_RATE_PER_FLOW_BPS)
        if kind == "active":
            # 10^12 bytes never finish in 2 s.
            group = {"count": HOST_PAIRS, "app": "poisson", "size_bytes": 10**12, "rate_per_s": flows / duration_s}
        else:
            group = {"count": flows, "app": "bulk", "start_s": [0.0, 1.0]}
    return {
        "seed": 1,
        "duration_s": duration_s,
        "slice_s": duration_s,
        "link": {"rate_bps": rate_bps, "delay_ms": 1.0, "access_rate_bps": max(1e8, rate_bps),
                 "queue": {"kind": "droptail", "limit_pkts": 1000}},
        "flows": [{**group, "rtt_ms": rtt_ms}],
        **output,
    }


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def child(kind: str, flows: int) -> dict:
    """Run one scenario in this process and measure it (see the module docstring)."""
    import tempfile

    from smallpipe import Scenario, _smallpipe
    from smallpipe.result import Result, simulate

    sc = Scenario.from_dict(scenario(kind, flows))
    before = status_kb("VmRSS")
    sampled = {"max_kb": before, "running": True}

    def sample() -> None:
        while sampled["running"]:
            rss = status_kb("VmRSS")
            if sampled["running"]:
                sampled["max_kb"] = max(sampled["max_kb"], rss)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    clock = time.perf_counter()
    sampler.start()
    if "output" in sc.to_dict():
        with tempfile.TemporaryDirectory() as parts:
            summary = simulate(sc, stream_dir=parts).meta["streamed"]
        sampled["running"] = False
        n_flows, ended = summary["flows"], summary["finished"]
    else:
        native = _smallpipe.simulate(sc.to_json())
        sampled["running"] = False
        flows_table = Result.from_native(native, sc).flows
        n_flows, ended = flows_table.height, int(flows_table.get_column("end_ns").is_not_null().sum())
    wall = time.perf_counter() - clock
    return {
        "kind": kind, "requested": flows, "flows": n_flows, "finished": ended,
        "active": n_flows - ended, "before_kb": before, "sim_kb": sampled["max_kb"],
        "peak_kb": status_kb("VmHWM"), "wall_s": round(wall, 2),
    }


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope and intercept."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, my - slope * mx


def plot(runs: list[dict], fits: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for kind, marker in zip(KINDS, "osd^v", strict=True):
        rows = [r for r in runs if r["kind"] == kind]
        if kind not in fits:
            continue
        x = [r["flows"] for r in rows]
        per_flow = fits[kind]["peak_bytes_per_flow"]
        (line,) = ax.loglog(x, [r["peak_kb"] / 1024 for r in rows], marker=marker,
                            label=f"{kind}: peak ({per_flow:.0f} B/flow)")
        ax.loglog(x, [r["sim_kb"] / 1024 for r in rows], marker=marker, linestyle=":", color=line.get_color(),
                  fillstyle="none", label=f"{kind}: during the run ({fits[kind]['sim_bytes_per_flow']:.0f} B/flow)")
    ax.set_xlabel("flows in the run")
    ax.set_ylabel("resident memory (MiB)")
    ax.set_title("Peak RSS against flows (one process per run)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--max-flows", type=float, default=1e6, help="largest run [default: 1e6]")
    parser.add_argument("--max-active", type=float, default=3e5,
                        help="largest `active` run [default: 3e5; 10^6 takes over 4 minutes on this machine]")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"kinds to run, comma-separated [default: {','.join(KINDS)}]")
    parser.add_argument("--plot", type=Path, default=Path(__file__).parents[1] / "docs" / "memory.png")
    parser.add_argument("--json", type=Path, help="also write the runs and fits here")
    parser.add_argument("--from-json", type=Path, help="report and plot the runs of an earlier --json; run nothing")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    runs = json.loads(args.from_json.read_text())["runs"] if args.from_json else measure(args)
    report(runs, args)


def measure(args: argparse.Namespace) -> list[dict]:
    """Every run, each in its own process."""
    sizes = [n for n in (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000) if n <= args.max_flows]
    runs = []
    for kind in args.kinds.split(","):
        if kind not in KINDS:
            raise SystemExit(f"--kinds: {kind!r} is not a kind; expected some of {', '.join(KINDS)}")
        for n in sizes:
            if kind == "streamed_fixed_rate" and n < FIXED_RATE_PER_S:
                continue  # under a second
            if kind == "active" and n > args.max_active:
                continue
            if kind == "active_units" and n > MAX_UNITS:
                n = MAX_UNITS
                if any(r["kind"] == kind and r["requested"] == n for r in runs):
                    continue
            out = subprocess.run([sys.executable, __file__, "--child", kind, str(n)],
                                 check=True, capture_output=True, text=True)
            run = json.loads(out.stdout)
            runs.append(run)
            print(json.dumps(run), file=sys.stderr, flush=True)
    return runs


def report(runs: list[dict], args: argparse.Namespace) -> None:
    """The table and the fits on stdout, the plot, and the JSON if asked."""
    fits = {}
    for kind in KINDS:
        rows = [r for r in runs if r["kind"] == kind]
        if len(rows) < 2:
            continue
        x = [r["flows"] for r in rows]
        sim_slope, _ = fit(x, [1024 * (r["sim_kb"] - r["before_kb"]) for r in rows])
        peak_slope, _ = fit(x, [1024 * (r["peak_kb"] - r["before_kb"]) for r in rows])
        fits[kind] = {"sim_bytes_per_flow": sim_slope, "peak_bytes_per_flow": peak_slope}

    print("| kind | flows | active at end | finished | wall s | RSS before MiB | during run MiB | peak MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['kind']} | {r['flows']} | {r['active']} | {r['finished']} | {r['wall_s']} | "
              f"{r['before_kb'] / 1024:.0f} | {r['sim_kb'] / 1024:.0f} | {r['peak_kb'] / 1024:.0f} |")
    print()
    for kind, f in fits.items():
        print(f"{kind}: {f['sim_bytes_per_flow']:.0f} B per flow during the run, {f['peak_bytes_per_flow']:.0f} B at the peak")
    plot(runs, fits, args.plot)
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "fits": fits}, indent=2) + "\n")


if __name__ == "__main__":
    main()
