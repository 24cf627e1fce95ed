"""Matta & Guo against ns-2: the points of ``matta_guo.py``'s ns-2 CSVs run in smallpipe,

- with the ns-2 stack (``tcp.stack = "ns2"``: ns-2's one-way agents) set as the page reads
  the paper's TCP-reno, exactly as the ns-2 side (Reno, IW 1, 0.5 s tick, 1 s minimum RTO,
  128-packet window) and ns-2's DropTail / RED (``variant = "ns2"``) on every bottleneck;
- with smallpipe's defaults as the reproduction runs them (``isolation_common.MATTA_TCP``),

and writes the three sides to one CSV with the columns of ``smallpipe reproduce
isolation-figN`` plus ``side``.

    python3 benches/ns2/matta_guo_verdict.py --ns2-csv fig3.csv --out fig3-verdict.csv

``--sides`` runs some sides only (the ns-2 rows are read from ``--ns2-csv`` either way), e.g.
``--sides "smallpipe ns2"`` after a change to the ns2 stack alone; ``splice_side.py`` puts
them into the committed CSV.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl
from smallpipe.experiments import isolation_fig7
from smallpipe.experiments.isolation_common import MSS_BYTES, measure, pipe_scenario
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import overriding

NS2_STACK = {"tcp.stack": "ns2", "tcp.recovery": "reno", "tcp.initial_window_pkts": 1, "tcp.min_rto_ms": 1000.0,
             "tcp.clock_granularity_ms": 500.0, "tcp.rwnd_bytes": 128 * MSS_BYTES, "tcp.packet_size_bytes": 576}
"""The ns-2 side's agents (matta_guo.py), on smallpipe's ns-2 stack."""
SIDES = ("ns-2", "smallpipe ns2", "smallpipe default")


def pipe_row(row: dict[str, Any], *, buffer: bool, ns2: bool) -> dict[str, Any]:
    k = 4 if buffer else int(row["k"])
    ratio = float(row["buffer_ratio"]) if buffer else 1.0
    sc = pipe_scenario(sessions=30 if buffer or row.get("sessions", 30) == 30 else 60, short_capacity_units=1,
                       long_capacity_units=k, short_buffer_units=ratio, long_buffer_units=k * ratio,
                       scheme=row["scheme"], duration_s=float(row["duration_s"]), seed=int(row["seed"]))
    overrides: dict[str, Any] = {}
    if ns2:
        overrides = {**NS2_STACK, "link.queue.variant": "ns2"}
        if row["scheme"] == "pipes":
            overrides["topology.path2_queue.variant"] = "ns2"
    with overriding(overrides):
        return measure(sc, row["scheme"])


def fig7_row(row: dict[str, Any], *, ns2: bool) -> dict[str, Any]:
    scheme = row["scheme"]
    overrides: dict[str, Any] = {}
    if row.get("max_p") is not None and scheme.endswith("red"):
        overrides["link.queue.max_p"] = float(row["max_p"])
    if ns2:
        overrides.update({**NS2_STACK, "link.queue.variant": "ns2"})
    with overriding(overrides):
        table = isolation_fig7.run(schemes=(scheme,), duration_s=float(row["duration_s"]), seed=int(row["seed"]))
    return table.row(0, named=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ns2-csv", type=Path, nargs="+", required=True)
    parser.add_argument("--figure", choices=("fig3", "fig5", "fig7"), required=True)
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES), help="[all three]")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for path in args.ns2_csv:
        for r in pl.read_csv(path).iter_rows(named=True):
            if r["variant"] != "Reno":
                continue
            key = {c: r[c] for c in ("k", "buffer_ratio", "max_p", "seed", "duration_s") if c in r}
            ns2_row = {"side": "ns-2", "scheme": r["scheme"], **key,
                       **{c: v for c, v in r.items() if c.endswith(("_jain", "_jain_min", "_goodput_mbps",
                                                                   "_goodput_kbps", "_timeouts_per_conn",
                                                                   "loss_rate", "utilization", "_loss"))}}
            if "ns-2" in args.sides:
                rows.append(ns2_row)
            for side, ns2 in (("smallpipe ns2", True), ("smallpipe default", False)):
                if side not in args.sides:
                    continue
                got = fig7_row(r, ns2=ns2) if args.figure == "fig7" else pipe_row(r, buffer=args.figure == "fig5", ns2=ns2)
                rows.append({"side": side, **key, **{c: v for c, v in got.items() if c in ns2_row or c == "scheme"}})
            print(rows[-len(args.sides):], flush=True)
    write_csv(pl.DataFrame(rows, infer_schema_length=None), args.out)


if __name__ == "__main__":
    main()
