#!/usr/bin/env python3
"""The thesis's Figure 5.2 (Poisson arrivals of Pareto flows at 90% load, 100 ms RTT, a
one-product buffer) in ns-2 2.35 at a reduced link rate, beside smallpipe with the ``"ns2"``
stack and ns-2 disciplines and with its defaults, on the same flows. Writes a CSV with the
columns of thesis-fig5.2.csv and a ``side`` column.

    python3 benches/ns2/thesis_fig52_ns2.py --rate-bps 240000000 --duration-s 20 --out fig52.csv

smallpipe's default run of ``thesis_fig52.scenario`` draws the flows (start, host pair, size);
ns-2 (churn.tcl) replays that table on the same 1000 host pairs with its one-way
Agent/TCP/Reno and TCPSink (windowInit_ the protocol's IW, window_ the scenario's receiver
window of two products, packetSize_ 960, ns-2's defaults otherwise) over DropTail or RED
(ns-2's automatic parameters, limit_ one product of packets, its byte mode), so all sides
carry the same flows. The smallpipe ``"ns2"`` side runs the same scenario with
``tcp.stack = "ns2"`` (Reno, the IW and the receiver window set again after it) and
``link.queue.variant = "ns2"``. ns-2's FCT, which ends when the last ACK reaches the sender, is taken half an RTT earlier,
when the last packet reached the receiver, as smallpipe's. Flows counted as the reproduction counts them: started after
``--warmup-s`` and at least ``--drain-s`` before the end.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import tempfile
from pathlib import Path

import polars as pl
from smallpipe.experiments import thesis_fig52 as fig
from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.thesis_fig51 import MSS_BYTES, PACKET_SIZE_BYTES, PROTOCOLS
from smallpipe.result import simulate

HERE = Path(__file__).resolve().parent
NS2_QUEUE = {"tcp": "DropTail", "iw10": "DropTail", "red": "RED"}
SIDES = ("smallpipe default", "smallpipe ns2", "ns-2")


def counted(fcts: pl.DataFrame, protocol: str, duration_s: float, warmup_s: float, drain_s: float) -> pl.DataFrame:
    return fcts.filter(pl.col("start_s") >= warmup_s, pl.col("start_s") <= duration_s - drain_s).select(
        protocol=pl.lit(protocol), packets=pl.col("packets"), fct_s=pl.col("fct_s"))


def smallpipe_fcts(flows: pl.DataFrame) -> pl.DataFrame:
    return flows.select(start_s=pl.col("start_ns") / 1e9,
                        packets=((pl.col("size_bytes") + MSS_BYTES - 1) // MSS_BYTES).cast(pl.Int64),
                        fct_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9)


def ns2_fcts(flows: pl.DataFrame, protocol: str, config: dict, duration_s: float, tmp: Path) -> tuple[pl.DataFrame, str]:
    link, group = config["link"], config["flows"][0]
    arrivals, fct_out, params = tmp / "arrivals.txt", tmp / "fct.txt", tmp / "params.tcl"
    with arrivals.open("w") as f:
        for start_ns, unit, size in zip(flows["start_ns"], flows["unit_id"], flows["size_bytes"], strict=True):
            f.write(f"{start_ns / 1e9:.9f} {unit} {math.ceil(size / MSS_BYTES)}\n")
    p = {
        "seed": 2, "rate_bps": float(link["rate_bps"]), "access_rate_bps": float(link["access_rate_bps"]),
        "bottleneck_delay_ms": float(link["delay_ms"]), "receiver_delay_ms": float(link["receiver_delay_ms"]),
        "rtt_ms": float(group["rtt_ms"]), "queue_pkts": int(link["queue"]["limit_pkts"]), "pairs": int(group["count"]),
        "packet_bytes": PACKET_SIZE_BYTES, "iw_pkts": PROTOCOLS[protocol][0],
        "window_pkts": int(config["tcp"]["rwnd_bytes"]) // PACKET_SIZE_BYTES, "prealloc": "{}", "variant": "Reno",
        "sink": "TCPSink", "duration_s": duration_s, "scheduler": "Calendar", "queue": NS2_QUEUE[protocol],
        "fct_out": str(fct_out),
    }
    params.write_text("".join(f"set p({k}) {v}\n" for k, v in p.items()))
    done = subprocess.run(["ns", str(HERE / "churn.tcl"), str(params), str(arrivals)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ns failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    rows = pl.read_csv(fct_out, separator=" ", has_header=False, new_columns=["start_s", "packets", "fct_s"])
    # ns-2's agent is done when the last ACK reaches the sender; smallpipe's FCT ends when
    # the last packet reaches the receiver: half an RTT earlier (the ACKs' path never queues).
    ack_path_s = float(group["rtt_ms"]) / 2000
    fct = pl.when(pl.col("fct_s") < 0).then(None).otherwise(pl.col("fct_s") - ack_path_s)
    return rows.with_columns(fct.alias("fct_s")), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate-bps", type=int, default=240_000_000, help="[240 Mbit/s: a tenth of the thesis's]")
    parser.add_argument("--duration-s", type=float, default=20.0)
    parser.add_argument("--warmup-s", type=float, default=1.0)
    parser.add_argument("--drain-s", type=float, default=3.0)
    parser.add_argument("--protocols", nargs="+", default=list(NS2_QUEUE), choices=list(NS2_QUEUE))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES),
                        help="run these sides only, e.g. 'smallpipe ns2' after a change to the ns2 stack alone "
                             "(splice_side.py puts them into the committed CSV) [all three]")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    frames = []
    with tempfile.TemporaryDirectory(prefix="ns2-fig52-") as tmp_name:
        for protocol in args.protocols:
            sc = fig.scenario(args.seed, protocol, rate_bps=args.rate_bps, duration_s=args.duration_s)
            config = sc.to_dict()
            if "smallpipe default" in args.sides or "ns-2" in args.sides:  # ns-2 replays its flows
                flows = simulate(sc).flows.sort("start_ns")
            if "smallpipe default" in args.sides:
                frames.append(counted(smallpipe_fcts(flows), protocol, args.duration_s, args.warmup_s, args.drain_s)
                              .with_columns(side=pl.lit("smallpipe default")))
            if "smallpipe ns2" in args.sides:
                ns2_sc = sc.with_overrides({"tcp.stack": "ns2", "tcp.recovery": "reno",
                                            "tcp.initial_window_pkts": PROTOCOLS[protocol][0],
                                            "tcp.rwnd_bytes": config["tcp"]["rwnd_bytes"],
                                            "link.queue.variant": "ns2"})
                frames.append(counted(smallpipe_fcts(simulate(ns2_sc).flows), protocol, args.duration_s,
                                      args.warmup_s, args.drain_s).with_columns(side=pl.lit("smallpipe ns2")))
            if "ns-2" in args.sides:
                theirs, stdout = ns2_fcts(flows, protocol, config, args.duration_s, Path(tmp_name))
                frames.append(counted(theirs, protocol, args.duration_s, args.warmup_s, args.drain_s)
                              .with_columns(side=pl.lit("ns-2")))
                print(protocol, stdout.strip().replace("\n", "; "), flush=True)
    fcts = pl.concat(frames)
    table = pl.concat([fig.summary(part.drop("side")).select(pl.lit(side).alias("side"), pl.all())
                       for (side,), part in fcts.group_by("side", maintain_order=True)])
    table = table.with_columns(rate_bps=pl.lit(args.rate_bps), duration_s=pl.lit(args.duration_s))
    write_csv(table, args.out)  # with the smallpipe commit that made it
    with pl.Config(tbl_rows=200, tbl_cols=20):
        print(table)


if __name__ == "__main__":
    main()
