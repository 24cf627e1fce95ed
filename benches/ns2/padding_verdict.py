"""Figure 5(b) of the padding paper against ns-2: the points of ``padding.py fig5b``'s ns-2
CSV (FullTcp) run in smallpipe with the ns-2 stack (one-way agents: ``tcp.stack = "ns2"``,
Reno as FullTcp, 576-byte packets as FullTcp's ``segsize_`` 536, the paper's 1 s minimum
RTO), the same with FullTcp's receiver (``tcp.ack_rule = "ns2_full"``, ``delayed_ack``), and with
FullTcp's sender as well (``tcp.fast_recovery = "ns2_full"``), beside
the reproduction's own CSV (smallpipe's defaults), one CSV with ``side``.

    python3 benches/ns2/padding_verdict.py --ns2-csv fig5b.csv --default-csv padding-fig5.csv \\
        --default-send-csv padding-fig5-send-to-ack.csv --out v.csv

Approach I (``min_rto_prime_ms``) needs RFC 6298's RTO rule and is not run on the ns-2
stack (whose rule is ns-2's).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl
from smallpipe.experiments import padding_fig5
from smallpipe.experiments.padding_sim import response_means_s
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate

NS2_STACK = {"tcp.stack": "ns2", "tcp.recovery": "reno", "tcp.min_rto_ms": 1000.0, "tcp.packet_size_bytes": 576}
# The same with FullTcp's receiver: a segment's bytes ACKed at once, less at the next tick of
# the 100 ms delayed-ACK timer (docs/tcp.md, `ack_rule = "ns2_full"`).
NS2_FULL = {**NS2_STACK, "tcp.ack_rule": "ns2_full", "tcp.delayed_ack": True}
# And FullTcp's sender too (docs/tcp.md, `fast_recovery = "ns2_full"`): FullTcp as a whole.
NS2_FULLTCP = {**NS2_FULL, "tcp.fast_recovery": "ns2_full"}
SIDES = {"smallpipe ns2": NS2_STACK, "smallpipe ns2 FullTcp receiver": NS2_FULL, "smallpipe ns2 FullTcp": NS2_FULLTCP}


def smallpipe_ns2(approach: str, p: float, seed: int, overrides: dict[str, Any]) -> dict[str, Any]:
    sc = padding_fig5.scenario(approach, p, flows=10, duration_s=200.0, seed=seed).with_overrides(overrides)
    return response_means_s(simulate(sc).bursts, warmup_s=padding_fig5.WARMUP_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ns2-csv", type=Path, required=True)
    parser.add_argument("--default-csv", type=Path, required=True, help="docs/.../padding-fig5.csv")
    parser.add_argument("--default-send-csv", type=Path, required=True, help="docs/.../padding-fig5-send-to-ack.csv")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    ns2 = pl.read_csv(args.ns2_csv)
    default = pl.read_csv(args.default_csv).join(
        pl.read_csv(args.default_send_csv).select("p", "approach", "send_sim_s", "gain_send_sim"),
        on=["p", "approach"], how="left")
    rows: list[dict[str, Any]] = []
    for p in sorted(set(ns2["p"].to_list())):
        got = {side: {a: smallpipe_ns2(a, p, 1, o) for a in ("interactive", "backlogged")}
               for side, o in SIDES.items()}
        for approach in ("interactive", "backlogged", "min_rto_prime"):
            n = ns2.filter((pl.col("p") == p) & (pl.col("approach") == approach)).row(0, named=True)
            rows.append({"side": "ns-2 FullTcp", "p": p, "approach": approach, "mean_s": n["sim_s"],
                         "send_mean_s": n["send_sim_s"], "gain": n["gain_sim"], "gain_send": n["gain_send_sim"],
                         "gain_model": n["gain_model"]})
            for side, side_got in got.items():
                if approach not in side_got:
                    continue
                g, base = side_got[approach], side_got["interactive"]
                rows.append({"side": side, "p": p, "approach": approach, "mean_s": g["write_to_ack_s"],
                             "send_mean_s": g["send_to_ack_s"], "gain": base["write_to_ack_s"] / g["write_to_ack_s"],
                             "gain_send": base["send_to_ack_s"] / g["send_to_ack_s"], "gain_model": n["gain_model"]})
            d = default.filter((pl.col("p") == p) & (pl.col("approach") == approach))
            if d.height:
                d0 = d.row(0, named=True)
                rows.append({"side": "smallpipe default", "p": p, "approach": approach, "mean_s": d0["sim_s"],
                             "send_mean_s": d0["send_sim_s"], "gain": d0["gain_sim"],
                             "gain_send": d0["gain_send_sim"],
                             "gain_model": d0["gain_model"]})
        print(rows[-13:], flush=True)
    write_csv(pl.DataFrame(rows, infer_schema_length=None), args.out)


if __name__ == "__main__":
    main()
