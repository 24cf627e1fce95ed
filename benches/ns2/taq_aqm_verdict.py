"""TAQ §2.4 ("RED and SFQ have similar aggregate behavior" to DropTail in the sub-packet
regime) settled against ns-2: the Figure 2 set-up (1 Mbit/s, 500-byte packets, a one-RTT
buffer of 50 packets, N = 1 Mbit/s / fair share NewReno flows) under DropTail, RED and SFQ,

- in ns-2 2.35 with its own queues and defaults (the CSVs of ``taq_fig2.py --queues``),
- in smallpipe with each discipline's ns-2 variant (``link.queue.variant = "ns2"``),
- in smallpipe with its default disciplines (``smallpipe reproduce taq-fig2-aqm``'s),

and prints the mean 20 s Jain index per fair share and queue over the seeds, as a markdown
table, and writes every run to one CSV.

    python3 benches/ns2/taq_fig2.py --duration-s 1000 --queues DropTail RED SFQ --seed 1 --out ns2-s1.csv
    python3 benches/ns2/taq_aqm_verdict.py --ns2-csv ns2-s*.csv --out verdict.csv [--set tcp.stack=ns2]
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import polars as pl
from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.taq_aqm import fairness_row
from smallpipe.presets import taq_dumbbell
from smallpipe.result import simulate

KINDS = {"DropTail": "droptail", "RED": "red", "SFQ": "sfq"}
RATE_BPS = 1_000_000


def smallpipe_rows(fair_share_bps: int, queue: str, duration_s: float, seed: int,
                   overrides: dict[str, str]) -> list[dict]:
    rows = []
    for side, extra in (("smallpipe ns2 variant", {"variant": "ns2"}), ("smallpipe default", {})):
        flows = round(RATE_BPS / fair_share_bps)
        scenario = taq_dumbbell(flows=flows, rate_bps=RATE_BPS, duration_s=duration_s, seed=seed,
                                queue={"kind": KINDS[queue], **extra})
        if overrides:
            scenario = scenario.with_overrides(overrides)
        r = fairness_row(simulate(scenario))
        rows.append({"side": side, "fair_share_bps": fair_share_bps, "flows": flows, "queue": queue, "seed": seed,
                     "short_term_jain": r["short_term_jain"], "zero_share": r["zero_share"],
                     "loss_rate": r["loss_rate"], "timeouts_per_flow": r["timeouts_per_flow"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ns2-csv", type=Path, nargs="+", required=True, help="taq_fig2.py outputs (one per seed)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an override of the smallpipe runs, e.g. tcp.stack=ns2")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.set)
    rows: list[dict] = []
    for path in args.ns2_csv:
        with path.open() as f:
            for r in csv.DictReader(f):
                if r["queue"] not in KINDS:
                    continue
                share, seed, duration = int(r["fair_share_bps"]), int(r["seed"]), float(r["duration_s"])
                rows.append({"side": "ns-2", "fair_share_bps": share, "flows": int(r["flows"]), "queue": r["queue"],
                             "seed": seed, "short_term_jain": float(r["short_term_jain"]),
                             "zero_share": float(r["zero_share"]), "loss_rate": float(r["loss_rate"]),
                             "timeouts_per_flow": float(r["timeouts_per_flow"])})
                rows += smallpipe_rows(share, r["queue"], duration, seed, overrides)
                print(rows[-3:], flush=True)
    write_csv(pl.DataFrame(rows), args.out)  # with the smallpipe commit that made it
    sides = ("ns-2", "smallpipe ns2 variant", "smallpipe default")
    print("| fair share (kbit/s) | flows | " + " | ".join(f"{q} {s}" for q in KINDS for s in sides) + " |")
    for share in sorted({r["fair_share_bps"] for r in rows}):
        cells = []
        for q in KINDS:
            for s in sides:
                xs = [r["short_term_jain"] for r in rows if (r["fair_share_bps"], r["queue"], r["side"]) == (share, q, s)]
                cells.append(f"{statistics.mean(xs):.2f}" if xs else "")
        print(f"| {share // 1000} | {round(RATE_BPS / share)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
