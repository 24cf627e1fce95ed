#!/usr/bin/env python3
"""Memory of Figure 5.2's summary at 10^8 flows, without the 70-minute simulation: synthetic
flow parts shaped like the 10^8-flow `tcp` run (95.7 M flows over 9 259 s, Pareto sizes of
mean 25 packets and shape 1.2, parts of 100 000 rows; only the columns
`thesis_fig52.counted_flows` reads), then, in a fresh process per way of keeping the rows,
the peak resident size after reading the counted rows and after summarizing them.

    python benches/fig52_summary_memory.py                  # ~1 min, ~0.9 GB of temporary Parquet

``as_before`` keeps the rows as `counted_flows` did before 2026-11-23 (an Int64 length and
a string protocol); ``narrow`` is `counted_flows` today. The two tables must be equal.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from smallpipe.experiments import thesis_fig52 as fig

FLOWS = 95_698_678  # the 10^8 run's flows started (docs/reproductions/thesis/scale-1e8)
DURATION_S = 9259.26
WARMUP_S, DRAIN_S = 1.0, 3.0


def write_parts(d: Path, flows: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    scale_pkts = fig.MEAN_PKTS * (fig.PARETO_SHAPE - 1) / fig.PARETO_SHAPE
    for k, start in enumerate(range(0, flows, fig.STREAM_FLOWS_EVERY)):
        n = min(fig.STREAM_FLOWS_EVERY, flows - start)
        pkts = np.ceil(scale_pkts * (1 - rng.random(n)) ** (-1 / fig.PARETO_SHAPE))
        start_ns = np.sort(rng.random(n) * DURATION_S * 1e9).astype(np.int64)
        fct_ns = (0.2e9 + pkts * 1e7 * rng.random(n)).astype(np.int64)
        pl.DataFrame({"start_ns": start_ns, "end_ns": start_ns + fct_ns,
                      "size_bytes": (pkts * fig.MSS_BYTES).astype(np.int64)}).write_parquet(d / f"part-{k:05d}.parquet")


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(parts: Path, way: str, table_out: Path) -> dict[str, object]:
    flows = pl.scan_parquet(parts / "*.parquet")
    if way == "as_before":
        packets = (pl.col("size_bytes") + fig.MSS_BYTES - 1) // fig.MSS_BYTES
        rows = flows.filter(pl.col("start_ns") >= WARMUP_S * 1e9, pl.col("start_ns") <= (DURATION_S - DRAIN_S) * 1e9).select(
            protocol=pl.lit("tcp"), packets=packets.cast(pl.Int64), fct_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9,
        ).filter(pl.col("packets").is_in([*fig.SMALL_PKTS, *fig.MARKER_PKTS])).collect()
    else:
        rows = fig.counted_flows(flows, "tcp", duration_s=DURATION_S, warmup_s=WARMUP_S, drain_s=DRAIN_S)
    after_rows = peak_mib()
    fig.summary(rows).write_parquet(table_out)
    return {"way": way, "rows": rows.height, "rows_mib": round(rows.estimated_size("mb"), 1),
            "peak_after_rows_mib": round(after_rows, 1), "peak_after_summary_mib": round(peak_mib(), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flows", type=int, default=FLOWS)
    parser.add_argument("--child", nargs=3, metavar=("PARTS", "WAY", "TABLE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        parts, way, table = args.child
        print(json.dumps(measure(Path(parts), way, Path(table))))
        return
    with tempfile.TemporaryDirectory(prefix="fig52-summary-") as tmp:
        parts = Path(tmp) / "parts"
        parts.mkdir()
        write_parts(parts, args.flows)
        tables = {}
        for way in ("as_before", "narrow"):
            tables[way] = Path(tmp) / f"{way}.parquet"
            done = subprocess.run([sys.executable, __file__, "--child", str(parts), way, str(tables[way])],
                                  check=True, capture_output=True, text=True)
            print(done.stdout.strip(), flush=True)
        same = pl.read_parquet(tables["as_before"]).equals(pl.read_parquet(tables["narrow"]))
        print(f"tables equal: {same}")
        if not same:
            raise SystemExit("the two ways gave different tables")


if __name__ == "__main__":
    main()
