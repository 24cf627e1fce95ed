#!/usr/bin/env python3
"""The thesis's Figure 5.2 at scale: each protocol in its own process (one core each),
flow rows streamed to Parquet parts, with wall time, peak resident memory and flows per
point recorded.

    python benches/fig52_scale.py --flows 1e6 --jobs 2 --out docs/reproductions/thesis/scale
    python benches/fig52_scale.py --flows 1e8 --jobs 1 --protocols tcp   # the thesis's scale
    python benches/fig52_scale.py --flows 1e6 --jobs 1 --protocols tcp --fifo-hops computed

``--flows`` is the number of flows each protocol's run starts: the simulated time is
flows / arrival rate (10 800 flows/s at 2.4 Gbit/s, from the link, the load and the mean
size), of which the first second (warm-up) and the last three (drain) are not counted. Writes ``thesis-fig5.2-scale.csv`` (the
summary table of ``smallpipe reproduce thesis-fig5.2``, with the flows behind each point),
``thesis-fig5.2-scale.png`` and ``resources.json`` (per protocol: flows started, wall
seconds, peak RSS, simulated seconds; and apart, the peak RSS when the simulation ended and
the rows kept for the summary, so the simulator's memory is told from the summary's).

A protocol at 10^8 flows runs for about an hour, so each one's summary and resources are
kept in ``OUT/protocols/`` as soon as it ends. A protocol already there with the same
flows, rate and ``--fifo-hops`` is not run again, and the table and plot cover every such
protocol in ``OUT/protocols/``: protocols run one command at a time add up to one figure,
and an interrupted command loses only the protocols still running.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl
from smallpipe.experiments import thesis_fig52 as fig
from smallpipe.experiments.provenance import source_commit, write_csv
from smallpipe.experiments.thesis_fig51 import PACKET_SIZE_BYTES
from smallpipe.result import simulate

WARMUP_S = 1.0
DRAIN_S = 3.0


def arrival_rate_per_s(rate_bps: float) -> float:
    """Flows per second of the Poisson process: the offered load over the mean flow size on the wire."""
    return fig.LOAD * rate_bps / (fig.MEAN_PKTS * PACKET_SIZE_BYTES * 8)


def peak_rss_mib() -> float:
    """This process's peak resident size so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(protocol: str, flows: float, rate_bps: int, fifo_hops: str, stream_dir: Path, out: Path) -> None:
    """One protocol's run: its summary rows to ``out`` (Parquet), its resources on stdout,
    with the peak resident size at the end of the simulation apart from the whole run's."""
    duration_s = flows / arrival_rate_per_s(rate_bps)
    started = time.monotonic()
    sc = fig.scenario(1, protocol, rate_bps=rate_bps, duration_s=duration_s,
                      stream_flows_every=fig.STREAM_FLOWS_EVERY, fifo_hops=fifo_hops)
    result = simulate(sc, stream_dir=stream_dir / protocol)
    simulated_wall_s = time.monotonic() - started
    peak_sim_mib = peak_rss_mib()
    rows = fig.counted_flows(result.scan("flows"), protocol, duration_s=duration_s, warmup_s=WARMUP_S, drain_s=DRAIN_S)
    fig.summary(rows).write_parquet(out)
    wall_s = time.monotonic() - started
    started_flows = pl.scan_parquet(stream_dir / protocol / "flows" / "*.parquet").select(pl.len()).collect().item()
    print(json.dumps({
        "protocol": protocol,
        "flows_started": started_flows,
        "simulated_s": duration_s,
        "fifo_hops": fifo_hops,
        "wall_s": round(wall_s, 1),
        "simulation_wall_s": round(simulated_wall_s, 1),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "peak_rss_simulation_mib": round(peak_sim_mib, 1),
        "counted_rows": rows.height,
        "counted_rows_mib": round(rows.estimated_size("mb"), 1),
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flows", type=float, default=1e6, help="flows started per protocol [1e6]")
    parser.add_argument("--rate-bps", type=int, default=fig.RATE_BPS)
    parser.add_argument("--protocols", nargs="+", default=list(fig.WITH_RCP))
    parser.add_argument("--jobs", type=int, default=2, help="protocols run at once, one process each [2]")
    parser.add_argument("--out", type=Path, default=Path("results/fig52-scale"))
    parser.add_argument("--fifo-hops", choices=("events", "computed"), default="events",
                        help="the scenarios' fifo_hops (docs/scenario.md) [events]")
    parser.add_argument("--child", nargs=3, metavar=("PROTOCOL", "STREAM_DIR", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        protocol, stream_dir, out = args.child
        child(protocol, args.flows, args.rate_bps, args.fifo_hops, Path(stream_dir), Path(out))
        return
    least = (WARMUP_S + DRAIN_S + 1) * arrival_rate_per_s(args.rate_bps)
    if args.flows < least:
        raise SystemExit(f"--flows: {args.flows:g} is not allowed; expected at least {least:.0f} (one counted "
                         f"second besides the {WARMUP_S:g} s warm-up and {DRAIN_S:g} s drain)")
    unknown = set(args.protocols) - set(fig.WITH_RCP)
    if unknown:
        raise SystemExit(f"--protocols: {sorted(unknown)} not known; expected some of {list(fig.WITH_RCP)}")
    kept = args.out / "protocols"
    kept.mkdir(parents=True, exist_ok=True)
    set_up = {"flows_per_protocol": args.flows, "rate_bps": args.rate_bps, "fifo_hops": args.fifo_hops}

    def kept_stats(stats_file: Path) -> dict[str, object] | None:
        """A kept protocol's resources if it was run with this set-up."""
        stats: dict[str, object] = json.loads(stats_file.read_text())
        return stats if all(stats.get(k) == v for k, v in set_up.items()) else None

    def one(protocol: str) -> None:
        stats_file = kept / f"{protocol}.json"
        if stats_file.exists() and kept_stats(stats_file):
            print(f"{protocol}: kept from an earlier run ({stats_file})", flush=True)
            return
        with tempfile.TemporaryDirectory(prefix=f"fig52-scale-{protocol}-") as tmp:
            rows = Path(tmp) / "summary.parquet"
            done = subprocess.run(
                [sys.executable, __file__, "--flows", str(args.flows), "--rate-bps", str(args.rate_bps),
                 "--fifo-hops", args.fifo_hops, "--child", protocol, str(Path(tmp) / "parts"), str(rows)],
                check=True, capture_output=True, text=True)
            # The child summarized its own protocol (summary groups by protocol), so only
            # its table comes back, not 3·10^7 rows per protocol at 10^8 flows.
            write_csv(pl.read_parquet(rows), kept / f"{protocol}.csv")
        stats = {**json.loads(done.stdout.strip().splitlines()[-1]), **set_up, "smallpipe_commit": source_commit()}
        stats_file.write_text(json.dumps(stats, indent=1) + "\n")  # last: it marks the protocol done
        print(json.dumps(stats), flush=True)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(one, args.protocols))
    runs = {f.stem: stats for f in sorted(kept.glob("*.json")) if (stats := kept_stats(f))}
    # Each protocol's rows keep the commit that ran it.
    table = pl.concat([pl.read_csv(kept / f"{p}.csv") for p in runs]).sort("protocol", "size_lo_pkts")
    table.write_csv(args.out / "thesis-fig5.2-scale.csv")
    fig.plot(table, args.out / "thesis-fig5.2-scale.png", rate_bps=args.rate_bps,
             title=f"Thesis Fig. 5.2: {args.rate_bps / 1e9:g} Gbit/s, {args.flows:.0e} flows per protocol")
    (args.out / "resources.json").write_text(json.dumps({**set_up, "runs": list(runs.values())}, indent=1) + "\n")
    print(table)


if __name__ == "__main__":
    main()
