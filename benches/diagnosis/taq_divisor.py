"""Who counts in TAQ's fair share: the 300 s point of docs/taq.md on Linux and in the simulator.

    sudo python3 benches/diagnosis/taq_divisor.py --out DIR             # Linux (root) and simulator
    python3 benches/diagnosis/taq_divisor.py --out DIR --no-linux        # simulator only

1 Mbit/s, 20 reno flows (50 kbit/s each), the Figure 2/8 dumbbell, 300 s, 20 s slices. TAQ's
``active_flows`` rules (docs/taq.md, "Who counts in the fair share"): ``non_silent``,
``non_silent_or_queued`` and ``seen_in_window``, and ``reclassify`` (``reclassify_waiting`` with
``non_silent``). Linux runs seed 1 (about 6 minutes each, quiet cores only); the simulator
seeds 1-3.

For each run: timeouts per flow in the first 60 s and in 60-300 s (Linux: each sender's
``TCP_INFO`` ``total_rto`` at the last sample at or before 60 s and at the end; simulator: the
flows table's ``timeouts`` of a 60 s and a 300 s run), TAQ's own view after 60 s (mean over the
20 s samples of ``queue_states``: silent flows, packets queued below / above fair share) and, on
Linux, the share of ``TCP_INFO`` samples after 60 s in the Loss state (an RTO's recovery).
Writes ``DIR/taq-divisor.csv`` and prints it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe import simulate
from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import taq_dumbbell

RATE_BPS, FLOWS, DURATION_S, SPLIT_S, SLICE_S = 1_000_000, 20, 300.0, 60.0, 20.0
VARIANTS: dict[str, dict[str, Any]] = {
    "non_silent": {"kind": "taq", "active_flows": "non_silent"},
    "non_silent_or_queued": {"kind": "taq", "active_flows": "non_silent_or_queued"},
    "seen_in_window": {"kind": "taq", "active_flows": "seen_in_window"},
    "reclassify": {"kind": "taq", "active_flows": "non_silent", "reclassify_waiting": True},
}
SILENT = ("flows_timeout_silence", "flows_extended_silence", "flows_idle_silence")
TCP_CA_LOSS = 4


def scenario(variant: str, seed: int, duration_s: float = DURATION_S) -> Any:
    return taq_dumbbell(flows=FLOWS, rate_bps=RATE_BPS, duration_s=duration_s, seed=seed, slice_s=SLICE_S,
                        queue=VARIANTS[variant])


def taq_view(queue_states: pl.DataFrame) -> dict[str, float]:
    """Mean of TAQ's samples after the first minute on the data direction."""
    late = queue_states.filter(pl.col("link") == "bottleneck", pl.col("time_ns") > SPLIT_S * 1e9)
    return {
        "silent_flows": late.select(pl.sum_horizontal(SILENT).mean()).item(),
        "queued_below": late["queued_below_fair_share"].mean(),
        "queued_above": late["queued_above_fair_share"].mean(),
    }


def linux_row(variant: str, out: Path) -> dict[str, Any]:
    from smallpipe.testbed import run_testbed

    workdir = out / f"linux-{variant}"
    result = run_testbed(scenario(variant, 1), congestion_control="reno", out=workdir)
    info = pl.read_parquet(workdir / "tcp_info.parquet")
    at_split = info.filter(pl.col("time_ns") <= SPLIT_S * 1e9 + 1e6).group_by("flow_id").agg(
        pl.col("total_rto").sort_by("time_ns").last().alias("rto_split"))
    at_end = info.group_by("flow_id").agg(pl.col("total_rto").sort_by("time_ns").last().alias("rto_end"))
    both = at_end.join(at_split, on="flow_id", how="left").fill_null(0)
    late = info.filter(pl.col("time_ns") > SPLIT_S * 1e9)
    return {
        "runtime": "linux", "variant": variant, "seed": 1,
        "timeouts_per_flow_0_60s": both["rto_split"].sum() / FLOWS,
        "timeouts_per_flow_60_300s": (both["rto_end"] - both["rto_split"]).sum() / FLOWS,
        **taq_view(result.queue_states),
        "loss_state_share": (late["ca_state"] == TCP_CA_LOSS).mean(),
        "box_lateness_p99_ns": ((result.meta.get("box") or {}).get("lateness_ns") or {}).get("p99"),
    }


def simulator_row(variant: str, seed: int) -> dict[str, Any]:
    first = simulate(scenario(variant, seed, SPLIT_S)).flows["timeouts"].sum()
    whole = simulate(scenario(variant, seed))
    return {
        "runtime": "simulator", "variant": variant, "seed": seed,
        "timeouts_per_flow_0_60s": first / FLOWS,
        "timeouts_per_flow_60_300s": (whole.flows["timeouts"].sum() - first) / FLOWS,
        **taq_view(whole.queue_states),
        "loss_state_share": None, "box_lateness_p99_ns": None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-linux", action="store_true", help="simulator only (no root needed)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [simulator_row(v, s) for v in args.variants for s in (1, 2, 3)]
    if not args.no_linux:
        if os.geteuid() != 0:
            raise SystemExit("the Linux runs need root (network namespaces); use --no-linux for the simulator only")
        rows += [linux_row(v, args.out) for v in args.variants]
    table = pl.DataFrame(rows).with_columns(pl.lit(RATE_BPS).alias("rate_bps"), pl.lit(FLOWS).alias("flows"),
                                            pl.lit(DURATION_S).alias("duration_s"))
    write_csv(table, args.out / "taq-divisor.csv")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2):
        print(table.drop("rate_bps", "flows", "duration_s"))


if __name__ == "__main__":
    main()
