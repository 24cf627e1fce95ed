#!/usr/bin/env python3
"""The thesis's Figures 5.1 (and 5.4 at 10 Mbit/s, the same set-up) and 5.3 in ns-2 2.35
(thesis.tcl), beside smallpipe on the same set-up with the ``"ns2"`` stack and each
discipline's ns-2 variant, run for run on the same seeds. Writes a CSV with the columns of
the smallpipe reproduction's (thesis-fig5.1.csv, thesis-fig5.3.csv) and a ``side`` column.

    python3 benches/ns2/thesis_ns2.py fig51 --runs 100 --out fig51.csv [--window-pkts 20]
    python3 benches/ns2/thesis_ns2.py fig53 --runs 5 --out fig53.csv [--restart fresh|persistent]

The protocols (thesis §4.3): tcp = Reno IW 2 over DropTail, iw10 = Reno IW 10 over
DropTail, red = IW 10 over RED (ns-2's automatic parameters, its byte mode: 50 × 500 bytes),
fq = IW 10 over ns-2's nearest fair queue, Queue/DRR with 1000 buckets, a 50-packet shared
buffer (blimit_ 50 000 bytes) and a one-packet quantum (the thesis's own "1000 queues" patch
is not public). Every link 10 Mbit/s, 10 ms access latency and bottleneck (RTT 40 ms), a
50-packet bottleneck buffer, 1000-byte packets on the wire (packetSize_ 960), one-way
Agent/TCP/Reno and TCPSink with ns-2's defaults otherwise: window_ 20 unless
``--window-pkts``, minrto_ 0.2 s, rtxcur_init_ 3 s, tcpTick_ 10 ms, no overhead_.

The smallpipe side runs ``thesis_fig51.scenario`` with ``tcp.stack = "ns2"``, the thesis's
Reno and initial window set again after it (the stack resets them to Newreno and 2), the
receiver window of ``--window-pkts`` packets, and ``link.queue.variant = "ns2"`` with the
DRR parameters above for fq.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from smallpipe import metrics
from smallpipe.experiments import thesis_fig51, thesis_fig53
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate

HERE = Path(__file__).resolve().parent
RATE_BPS = 10_000_000
LATENCY_MS = 10.0
BUFFER_PKTS = 50
DRR = {"buckets": 1000, "blimit_bytes": BUFFER_PKTS * thesis_fig51.PACKET_SIZE_BYTES,
       "quantum_bytes": thesis_fig51.PACKET_SIZE_BYTES}
NS2_QUEUE = {"tcp": "DropTail", "iw10": "DropTail", "red": "RED", "fq": "DRR"}
SIDES = ("ns-2", "smallpipe ns2")
IW_PKTS = {protocol: iw for protocol, (iw, _) in thesis_fig51.PROTOCOLS.items()}


def ns2_params(protocol: str, seed: int, window_pkts: int, **extra: Any) -> dict[str, Any]:
    return {"seed": seed, "queue": NS2_QUEUE[protocol], "drr_buckets": DRR["buckets"],
            "drr_blimit_bytes": DRR["blimit_bytes"], "drr_quantum_bytes": DRR["quantum_bytes"],
            "rate_bps": RATE_BPS, "latency_ms": LATENCY_MS, "bottleneck_delay_ms": thesis_fig51.BOTTLENECK_DELAY_MS,
            "queue_pkts": BUFFER_PKTS, "packet_bytes": thesis_fig51.PACKET_SIZE_BYTES, "window_pkts": window_pkts,
            "variant": "Reno", "iw_pkts": IW_PKTS[protocol], "background": 4, "mouse_pkts": thesis_fig53.MOUSE_PKTS,
            "restart": "fresh", "measure_pkts": thesis_fig51.SIZES_PKTS[-1], "measure_start_s": 0.0,
            "trace": "", "warmup_s": thesis_fig53.WARMUP_S, "measure_s": thesis_fig53.MEASURE_S,
            "mode": "elephants", **extra}


def run_ns(params: dict[str, Any], tmp: Path) -> list[list[str]]:
    path = tmp / "params.tcl"
    path.write_text("".join(f"set p({k}) {{{v}}}\n" for k, v in params.items()))
    done = subprocess.run(["ns", str(HERE / "thesis.tcl"), str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ns failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


def measuring_fct_s(trace: Path, start_s: float, packets: int) -> list[float]:
    """FCT of the first k packets, k = 1..packets: the time at which data packet k and every
    earlier one had arrived at the measuring flow's destination, from its start."""
    first: dict[int, float] = {}
    with trace.open() as f:
        for line in f:
            fields = line.split()
            if fields[0] == "r" and fields[4] == "tcp" and int(fields[5]) > 40:
                first.setdefault(int(fields[10]), float(fields[1]))
    fcts, latest = [], 0.0
    for k in range(1, packets + 1):
        if k not in first:
            break
        latest = max(latest, first[k])
        fcts.append(latest - start_s)
    return fcts


def smallpipe_overrides(protocol: str, window_pkts: int) -> dict[str, Any]:
    overrides: dict[str, Any] = {"tcp.stack": "ns2", "tcp.recovery": "reno",
                                 "tcp.initial_window_pkts": IW_PKTS[protocol],
                                 "tcp.rwnd_bytes": window_pkts * thesis_fig51.MSS_BYTES,
                                 "link.queue.variant": "ns2"}
    if protocol == "fq":
        overrides.update({f"link.queue.ns2.{k}": v for k, v in DRR.items()})
    return overrides


def split_overrides(protocol: str, window_pkts: int, part: str) -> dict[str, Any]:
    """Half of :func:`smallpipe_overrides`: the ns-2 ``stack`` (with our disciplines) or the
    ns-2 ``disciplines`` (with our stack, its random send delay included), the window the same."""
    full = smallpipe_overrides(protocol, window_pkts)
    if part == "stack":
        return {k: v for k, v in full.items() if not k.startswith("link.")}
    return {k: v for k, v in full.items() if k.startswith("link.") or k == "tcp.rwnd_bytes"}


def fig51(runs: int, seed: int, window_pkts: int, protocols: list[str], split: bool = False,
          sides: tuple[str, ...] = SIDES) -> pl.DataFrame:
    rtt_s = thesis_fig51.rtt_ms(LATENCY_MS) / 1000
    rows = []
    with tempfile.TemporaryDirectory(prefix="ns2-thesis-") as tmp_name:
        tmp = Path(tmp_name)
        for protocol in protocols:
            for i in range(runs):
                run_seed = seed * 100_000 + i
                if split:
                    for part in ("stack", "disciplines"):
                        sc = thesis_fig51.scenario(run_seed, protocol).with_overrides(
                            split_overrides(protocol, window_pkts, part))
                        progress = simulate(sc).progress
                        rows += [{"side": f"smallpipe ns2 {part} only", "protocol": protocol, "run": i, "packets": k,
                                  "fct_s": ns / 1e9} for k, ns in zip(progress["packets"], progress["fct_ns"], strict=True)]
                    continue
                if "ns-2" in sides:
                    start_s = 250 * rtt_s + random.Random(run_seed).uniform(0, rtt_s)
                    trace = tmp / "measure.tr"
                    run_ns(ns2_params(protocol, run_seed, window_pkts, measure_start_s=start_s, trace=trace,
                                      duration_s=start_s + 30), tmp)
                    for k, fct in enumerate(measuring_fct_s(trace, start_s, thesis_fig51.SIZES_PKTS[-1]), 1):
                        rows.append({"side": "ns-2", "protocol": protocol, "run": i, "packets": k, "fct_s": fct})
                if "smallpipe ns2" in sides:
                    sc = thesis_fig51.scenario(run_seed, protocol).with_overrides(
                        smallpipe_overrides(protocol, window_pkts))
                    progress = simulate(sc).progress
                    rows += [{"side": "smallpipe ns2", "protocol": protocol, "run": i, "packets": k, "fct_s": ns / 1e9}
                             for k, ns in zip(progress["packets"], progress["fct_ns"], strict=True)]
            print(f"{protocol}: {runs} runs", flush=True)
    fcts = pl.DataFrame(rows)
    frames = []
    for (side, protocol), group in fcts.filter(pl.col("packets").is_in(thesis_fig51.SIZES_PKTS)).group_by(
            "side", "protocol", maintain_order=True):
        bound = metrics.slow_start_bound_s(pl.col("packets") * thesis_fig51.MSS_BYTES, pl.lit(rtt_s),
                                           mss_bytes=thesis_fig51.MSS_BYTES, iw_pkts=IW_PKTS[protocol])
        frames.append(group.group_by("packets").agg(
            runs=pl.len(), median_s=pl.col("fct_s").median(),
            p99_s=pl.col("fct_s").quantile(0.99, interpolation="linear"),
        ).with_columns(slow_start_bound_s=bound).select(
            pl.lit(side).alias("side"), pl.lit(protocol).alias("protocol"), pl.all()))
    return pl.concat(frames).sort("side", "protocol", "packets").with_columns(window_pkts=pl.lit(window_pkts))


def fig53(runs: int, seed: int, window_pkts: int, protocols: list[str], generators: list[int],
          restart: str, smallpipe_side: bool, measure: str = "departures", ns2_side: bool = True) -> pl.DataFrame:
    rows = []
    with tempfile.TemporaryDirectory(prefix="ns2-thesis-") as tmp_name:
        tmp = Path(tmp_name)
        for protocol in protocols:
            for n in generators:
                for i in range(runs):
                    run_seed = seed * 100_000 + i
                    out = run_ns(ns2_params(protocol, run_seed, window_pkts, mode="generators", background=n,
                                            restart=restart,
                                            duration_s=thesis_fig53.WARMUP_S + thesis_fig53.MEASURE_S + 0.5),
                                 tmp) if ns2_side else []
                    for fields in out:
                        if fields[0] == "second":
                            util = (int(fields[2]) / thesis_fig51.PACKET_SIZE_BYTES if measure == "departures"
                                    else int(fields[4]) * thesis_fig53.MOUSE_PKTS) / thesis_fig53.PACKETS_PER_SECOND
                            rows.append({"side": "ns-2", "protocol": protocol, "generators": n, "utilization": util})
                    if smallpipe_side:
                        mice = {"app": "session", "count": n, "size_bytes": thesis_fig53.MOUSE_PKTS * thesis_fig51.MSS_BYTES,
                                "think_s": 0.0}
                        sc = thesis_fig51.scenario(run_seed, protocol, background=mice, measuring=False, warmup_rtts=0,
                                                   after_s=thesis_fig53.WARMUP_S + thesis_fig53.MEASURE_S)
                        slices = simulate(sc.with_overrides(smallpipe_overrides(protocol, window_pkts))).slices
                        per_second = (slices.filter(pl.col("slice") >= thesis_fig53.WARMUP_S).group_by("slice")
                                      .agg(u=pl.col("bytes").sum() / thesis_fig51.MSS_BYTES
                                           / thesis_fig53.PACKETS_PER_SECOND))
                        rows += [{"side": "smallpipe ns2", "protocol": protocol, "generators": n, "utilization": u}
                                 for u in per_second["u"]]
                print(f"{protocol}: {runs} runs at {generators}", flush=True)
    samples = pl.DataFrame(rows)
    return (samples.group_by("side", "protocol", "generators").agg(
        samples=pl.len(), median=pl.col("utilization").median(),
        p10=pl.col("utilization").quantile(0.1, interpolation="linear"),
        p90=pl.col("utilization").quantile(0.9, interpolation="linear"),
    ).sort("side", "protocol", "generators").with_columns(window_pkts=pl.lit(window_pkts), restart=pl.lit(restart),
                                                          ns2_measure=pl.lit(measure)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figure", choices=("fig51", "fig53"))
    parser.add_argument("--runs", type=int, default=100, help="runs (seeds) per protocol and point [100]")
    parser.add_argument("--seed", type=int, default=1, help="run i has seed SEED·100000 + i, as smallpipe's [1]")
    parser.add_argument("--window-pkts", type=int, default=20, help="window_ (ns-2's default 20) [20]")
    parser.add_argument("--protocols", nargs="+", default=list(NS2_QUEUE), choices=list(NS2_QUEUE))
    parser.add_argument("--generators", type=int, nargs="+", default=list(thesis_fig53.GENERATORS))
    parser.add_argument("--restart", choices=("fresh", "persistent"), default="fresh",
                        help="fig53: a generator's next flow on a reset agent (fresh slow start) or the same one")
    parser.add_argument("--measure", choices=("departures", "completions"), default="departures",
                        help="fig53, ns-2's utilization: the bottleneck's departed bytes (retransmissions "
                             "included), or 32 packets per flow done in the second (data delivered once)")
    parser.add_argument("--split", action="store_true",
                        help="fig51: smallpipe alone, with the ns-2 stack only and with the ns-2 disciplines only")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES),
                        help="fig51 and fig53 without --split: run these sides only, e.g. 'smallpipe ns2' after a "
                             "change to the ns2 stack alone (splice_side.py puts them into the committed CSV) [both]")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit(f"--runs: {args.runs} is not allowed; expected at least 1")
    if args.figure == "fig51":
        table = fig51(args.runs, args.seed, args.window_pkts, args.protocols, args.split, tuple(args.sides))
    else:
        # smallpipe restarts a session's flow on a new connection only: the persistent
        # reading is ns-2's alone.
        table = fig53(args.runs, args.seed, args.window_pkts, args.protocols, args.generators, args.restart,
                      smallpipe_side=args.restart == "fresh" and "smallpipe ns2" in args.sides,
                      measure=args.measure, ns2_side="ns-2" in args.sides)
    write_csv(table, args.out)  # with the smallpipe commit that made it
    with pl.Config(tbl_rows=200, tbl_cols=20):
        print(table)


if __name__ == "__main__":
    main()
