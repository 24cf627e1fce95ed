#!/usr/bin/env python3
"""Speed on churn: the thesis's Figure 5.2 link (2.4 Gbit/s, 100 ms RTT, Poisson arrivals
of Pareto flows at 90% load, TCP with IW 2 over a one-BDP DropTail buffer) in smallpipe and
in ns-2 2.35, back to back, with the same flows.

    python3 benches/ns2/churn.py --flows 1e5 [--rate-bps 2400000000]

smallpipe runs ``thesis_fig52.scenario(1, "tcp")`` for ``flows`` / arrival rate simulated
seconds (as benches/fig52_scale.py does); its flow table (start, host pair, size) is then
replayed in ns-2 (churn.tcl) on the same 1000 host pairs, so both sides carry the same
offered load and their bottleneck packet counts can be compared. ns-2's TCP is its
one-way Reno (the scenario's ``recovery = "reno"``) with a TCPSink, windowInit_ = the
scenario's initial window, window_ = its receiver window in packets, packetSize_ = its
MSS; everything else keeps ns-2's defaults. Prints one JSON line per simulator and one
with the ratio of bottleneck packets per wall second.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
import time
from pathlib import Path

import polars as pl
from smallpipe.experiments import thesis_fig52 as fig
from smallpipe.experiments.thesis_fig51 import MSS_BYTES, PACKET_SIZE_BYTES
from smallpipe.result import simulate

HERE = Path(__file__).resolve().parent


def arrival_rate_per_s(rate_bps: float) -> float:
    """Flows per second: the offered load over the mean flow size on the wire (fig52_scale.py)."""
    return fig.LOAD * rate_bps / (fig.MEAN_PKTS * PACKET_SIZE_BYTES * 8)


def most_open_per_pair(flows: pl.DataFrame, duration_s: float, pairs: int) -> list[int]:
    """Per host pair, the most flows open at once in smallpipe's run: the pool ns-2 gets
    for that pair before its run, so that making agents (milliseconds each in ns-2's Tcl)
    is set-up, as a pooled script would have it, and not simulation."""
    end_ns = int(duration_s * 1e9)
    events = pl.concat([
        flows.select(pl.col("unit_id"), pl.col("start_ns").alias("t"), pl.lit(1).alias("d")),
        flows.select(pl.col("unit_id"), pl.col("end_ns").fill_null(end_ns).alias("t"), pl.lit(-1).alias("d")),
    ]).sort("unit_id", "t", "d")
    most = (events.with_columns(pl.col("d").cum_sum().over("unit_id").alias("open"))
            .group_by("unit_id").agg(pl.col("open").max()))
    per_pair = dict(zip(most["unit_id"], most["open"]))
    return [int(per_pair.get(i, 0)) for i in range(pairs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flows", type=float, default=1e5, help="flows started (about) [1e5]")
    parser.add_argument("--rate-bps", type=int, default=fig.RATE_BPS)
    parser.add_argument("--scheduler", choices=("Calendar", "Heap", "List"), default="Calendar",
                        help="ns-2's event scheduler [Calendar, its default]")
    args = parser.parse_args()
    if args.flows < 1000:
        raise SystemExit(f"--flows: {args.flows:g} is not allowed; expected at least 1000")
    duration_s = args.flows / arrival_rate_per_s(args.rate_bps)
    sc = fig.scenario(1, "tcp", rate_bps=args.rate_bps, duration_s=duration_s)
    config = sc.to_dict()
    started = time.perf_counter()
    result = simulate(sc)
    ours_process_s = time.perf_counter() - started
    wall_s = result.meta["wall_seconds"]
    links = result.links
    ours_packets = int(links.filter(pl.col("name") == "bottleneck")["tx_pkts"].item())
    flows = result.flows.sort("start_ns")
    ours = {
        "simulator": "smallpipe", "flows_started": flows.height,
        "flows_finished": int(flows["end_ns"].is_not_null().sum()), "simulated_s": duration_s,
        "bottleneck_packets": ours_packets, "wall_s": round(wall_s, 2), "process_s": round(ours_process_s, 2),
        "bottleneck_packets_per_wall_second": round(ours_packets / wall_s),
    }
    print(json.dumps(ours), flush=True)

    link = config["link"]
    group = config["flows"][0]
    pairs = int(group["count"])
    rwnd_pkts = config["tcp"]["rwnd_bytes"] // PACKET_SIZE_BYTES
    prealloc = most_open_per_pair(flows, duration_s, pairs)
    with tempfile.TemporaryDirectory(prefix="ns2-churn-") as tmp:
        arrivals = Path(tmp) / "arrivals.txt"
        with arrivals.open("w") as f:
            for start_ns, unit, size in zip(flows["start_ns"], flows["unit_id"], flows["size_bytes"]):
                f.write(f"{start_ns / 1e9:.9f} {unit} {math.ceil(size / MSS_BYTES)}\n")
        params = Path(tmp) / "params.tcl"
        p = {
            "seed": 2, "rate_bps": float(link["rate_bps"]), "access_rate_bps": float(link["access_rate_bps"]),
            "bottleneck_delay_ms": float(link["delay_ms"]), "receiver_delay_ms": float(link["receiver_delay_ms"]),
            "rtt_ms": float(group["rtt_ms"]), "queue_pkts": int(link["queue"]["limit_pkts"]), "pairs": pairs,
            "packet_bytes": PACKET_SIZE_BYTES, "iw_pkts": int(config["tcp"]["initial_window_pkts"]),
            "window_pkts": int(rwnd_pkts), "prealloc": "{" + " ".join(map(str, prealloc)) + "}", "variant": "Reno", "sink": "TCPSink", "duration_s": duration_s, "scheduler": args.scheduler,
        }
        params.write_text("".join(f"set p({k}) {v}\n" for k, v in p.items()))
        started = time.perf_counter()
        done = subprocess.run(["ns", str(HERE / "churn.tcl"), str(params), str(arrivals)],
                              capture_output=True, text=True, check=False)
        process_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ns failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.strip()}
    arrived, departed, dropped, queued = (int(x) for x in rows["queue"])
    if arrived != departed + dropped + queued:
        raise SystemExit(f"ns-2's bottleneck counts do not add up: {rows['queue']}")
    started_flows, finished, agents_before, agents_in_run = (int(x) for x in rows["flows"][:4])
    build_s, run_s = (float(x) for x in rows["wall"])
    theirs = {
        "simulator": "ns-2 2.35", "scheduler": args.scheduler, "flows_started": started_flows, "flows_finished": finished, "agents_before_run": agents_before,
        "agents_in_run": agents_in_run,
        "bottleneck_packets": departed, "bottleneck_drops": dropped, "build_s": build_s, "run_s": run_s,
        "process_s": round(process_s, 2), "bottleneck_packets_per_wall_second": round(departed / run_s),
    }
    print(json.dumps(theirs), flush=True)
    print(json.dumps({
        "scenario": "churn", "flows": flows.height,
        "packets_ratio": round(ours_packets / departed, 4),
        "speedup": round(ours["bottleneck_packets_per_wall_second"] / theirs["bottleneck_packets_per_wall_second"], 2),
    }))


if __name__ == "__main__":
    main()
