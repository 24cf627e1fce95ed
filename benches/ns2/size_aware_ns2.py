#!/usr/bin/env python3
"""Tokuda et al.'s Section 5 baselines (Table 4, Figure 11, Table 5: TailDrop and RED under
SURGE sessions) in ns-2 2.35, beside smallpipe with the ``"ns2"`` stack and ns-2 disciplines
and with its defaults. The size-aware method is not in ns-2. Writes a CSV with the columns
of size-aware-table4.csv and a ``side`` column.

    python3 benches/ns2/size_aware_ns2.py --taus-ms 1 10 100 --duration-s 300 --out table4.csv
    python3 benches/ns2/size_aware_ns2.py --figure12 --out fig12.csv

``--sides`` runs some sides only, e.g. ``--sides "smallpipe ns2"`` after a change to the ns2
stack alone (ns-2 needs smallpipe's default run for its users, so it runs that too);
``splice_side.py`` puts them into the committed CSV.

``--figure12`` runs Figure 12's baselines instead (Section 6.1: τ = 5 ms, the users split over
access delays 10-105 ms, RTTs 40-230 ms, all in one run, `size_aware_fig12`'s set-up): in ns-2
every user keeps its own RTT (sessions.tcl's ``rtt_by_user``), and each side's index per
access delay is taken at the committed size-aware-fig12.csv's common targets, as there.

smallpipe's default run of ``size_aware_table4.scenario`` (1350 users, 30 Mbit/s, τ, a
100-packet buffer, 512-byte packets, Reno, IW 1, 1 s minimum and initial RTO, no receiver
window limit) draws every user's transfers and think times; ns-2 (sessions.tcl) runs the
same users closed-loop: each user sends its transfers in the same order, one at a time,
and waits the same think time after each one ends, so its load follows ns-2's transfer
times. ns-2's agent is Agent/TCP/Reno with a TCPSink, windowInit_ 1, window_ 100 000,
minrto_ 1 s, rtxcur_init_ 1 s, packetSize_ 472, ns-2's defaults otherwise; RED is Table 2
(thresh_ 25, maxthresh_ 75, q_weight_ 0.002, linterm_ 10, not gentle, packet mode).
smallpipe's ``"ns2"`` side runs the scenario with ``tcp.stack = "ns2"`` (the scenario's
Reno, IW, RTOs and window set again after it) and ``link.queue.variant = "ns2"``.

The index is ``modified_fairness_index`` at the size-aware method's mean target from the
committed size-aware-table4.csv (the same target for every side), over transfers started
after the warm-up, each timed from its first data packet to its last ACK (ns-2: its
`advance` to `done` less the header-only first packet's round trip, one propagation RTT).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import polars as pl
from smallpipe import metrics
from smallpipe.experiments import size_aware_fig12 as fig12
from smallpipe.experiments import size_aware_table4 as t4
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import simulate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COMMITTED = ROOT / "docs" / "reproductions" / "size-aware" / "size-aware-table4.csv"
COMMITTED_FIG12 = ROOT / "docs" / "reproductions" / "size-aware" / "size-aware-fig12.csv"
NS2_QUEUE = {"droptail": ("DropTail", ""), "red": (
    "RED", "thresh_ 25 maxthresh_ 75 q_weight_ 0.002 linterm_ 10 gentle_ false bytes_ false queue_in_bytes_ false")}
NS2_TCP = "windowInit_ 1 window_ 100000 minrto_ 1.0 rtxcur_init_ 1.0"
SIDES = ("smallpipe default", "smallpipe ns2", "ns-2")


def sessions_file(flows: pl.DataFrame, path: Path, rtt_by_user: bool) -> None:
    """A line per user: (with ``rtt_by_user``, its RTT,) its first start, then each transfer's
    size and the think time after it."""
    with path.open("w") as f:
        for (unit,), user in flows.sort("start_ns").group_by("unit_id", maintain_order=True):
            starts, ends = user["start_ns"].to_list(), user["end_ns"].to_list()
            sizes = [-(-b // t4.MSS_BYTES) for b in user["size_bytes"].to_list()]
            rtt = [f"{user['rtt_ms'][0]:g}"] if rtt_by_user else []
            fields = [str(unit), *rtt, f"{starts[0] / 1e9:.9f}", str(sizes[0])]
            for k in range(1, len(starts)):
                if ends[k - 1] is None:
                    break
                fields += [f"{(starts[k] - ends[k - 1]) / 1e9:.9f}", str(sizes[k])]
            f.write(" ".join(fields) + "\n")


def ns2_run(flows: pl.DataFrame, method: str, config: dict, duration_s: float, tmp: Path) -> tuple[pl.DataFrame, dict]:
    """ns-2's transfers (each with its user's RTT) and its bottleneck's utilization and loss.
    Users of several RTTs (several flow groups) each keep their own."""
    link, group = config["link"], config["flows"][0]
    rtt_by_user = len(config["flows"]) > 1
    queue, queue_config = NS2_QUEUE[method]
    sessions, fct_out, params = tmp / "sessions.txt", tmp / "fct.txt", tmp / "params.tcl"
    sessions_file(flows, sessions, rtt_by_user)
    p = {
        "seed": 2, "rate_bps": float(link["rate_bps"]), "access_rate_bps": float(link["access_rate_bps"]),
        "bottleneck_delay_ms": float(link["delay_ms"]), "receiver_delay_ms": float(link["receiver_delay_ms"]),
        "rtt_ms": float(group["rtt_ms"]), "queue_pkts": int(link["queue"]["limit_pkts"]),
        "packet_bytes": t4.PACKET_BYTES, "variant": "Reno", "sink": "TCPSink", "duration_s": duration_s,
        "queue": queue, "queue_config": f"{{{queue_config}}}", "tcp_config": f"{{{NS2_TCP}}}", "fct_out": str(fct_out),
        "rtt_by_user": int(rtt_by_user),
    }
    params.write_text("".join(f"set p({k}) {v}\n" for k, v in p.items()))
    done = subprocess.run(["ns", str(HERE / "sessions.tcl"), str(params), str(sessions)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ns failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    out = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.strip()}
    arrived, departed, dropped, queued = (int(x) for x in out["queue"])
    if arrived != departed + dropped + queued:
        raise SystemExit(f"ns-2's bottleneck counts do not add up: {out['queue']}")
    rows = pl.read_csv(fct_out, separator=" ", has_header=False, new_columns=["start_s", "packets", "fct_s", "unit_id"])
    users = flows.group_by("unit_id").agg(pl.col("rtt_ms").first(), pl.col("group").first())
    rows = rows.join(users, on="unit_id", how="left")
    rtt_s = pl.col("rtt_ms") / 1000
    # From the first data packet (one round trip after the header-only first packet) to done.
    transfers = rows.filter(pl.col("fct_s") >= 0).select(
        start_ns=((pl.col("start_s") + rtt_s) * 1e9).cast(pl.Int64),
        end_ns=((pl.col("start_s") + pl.col("fct_s")) * 1e9).cast(pl.Int64),
        size_bytes=pl.col("packets") * t4.MSS_BYTES, rtt_ms=pl.col("rtt_ms"), group=pl.col("group"))
    link_stats = {"utilization": departed * t4.PACKET_BYTES * 8 / (float(link["rate_bps"]) * duration_s),
                  "loss_rate": dropped / arrived, "unfinished": rows.filter(pl.col("fct_s") < 0).height,
                  "wall_s": float(out["wall"][0])}
    return transfers.filter(pl.col("start_ns") >= t4.WARMUP_S * 1e9 + rtt_s * 1e9), link_stats


def row(side: str, method: str, tau: float, flows: pl.DataFrame, stats: dict, targets: dict) -> dict:
    target, low = targets[tau]
    return {"side": side, "tau_ms": tau, "method": method, "connections": flows.height,
            "fairness": metrics.modified_fairness_index(flows, mss_bytes=t4.MSS_BYTES, iw_pkts=1,
                                                        target_pkts_per_rtt=target),
            "fairness_by_size_bin": t4.fairness_by_size_bin(flows, target),
            "utilization": stats["utilization"], "loss_rate": stats["loss_rate"], "target_pkts_per_rtt": target,
            "paper_fairness": t4.PAPER["fairness"][method][tau], "paper_utilization": t4.PAPER["utilization"][method][tau],
            "fairness_low_th_target": metrics.modified_fairness_index(flows, mss_bytes=t4.MSS_BYTES, iw_pkts=1,
                                                                      target_pkts_per_rtt=low),
            "low_th_target_pkts_per_rtt": low}


def ns2_side(sc):
    """The scenario with ns-2's agents and queues: the ``"ns2"`` stack, the scenario's Reno, IW,
    RTOs and window set again after it, and each discipline's ns-2 variant."""
    tcp = sc.to_dict()["tcp"]
    return sc.with_overrides({"tcp.stack": "ns2", **{f"tcp.{k}": tcp[k] for k in (
        "recovery", "initial_window_pkts", "min_rto_ms", "initial_rto_ms", "rwnd_bytes")},
        "link.queue.variant": "ns2"})


def figure12(duration_s: float, seed: int, out: Path, sides: list[str]) -> None:
    """Figure 12's TailDrop and RED on ``sides``, the index per access delay."""
    committed = pl.read_csv(COMMITTED_FIG12)
    targets = {column: committed[f"{column}_target_pkts_per_rtt"][0] for column in fig12.TARGETS}
    rtts = [fig12.rtt_of_access_ms(a) for a in fig12.ACCESS_DELAYS_MS]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ns2-size-aware-fig12-") as tmp:
        for method in NS2_QUEUE:
            sc = t4.scenario(method, fig12.TAU_MS, quick=False, seed=seed, rtts_ms=rtts).with_overrides(
                {"duration_s": duration_s})
            runs = []
            if "smallpipe default" in sides or "ns-2" in sides:
                ours = simulate(sc)
            if "smallpipe default" in sides:
                runs.append(("smallpipe default", t4.data_flows(ours), smallpipe_stats(ours)))
            if "smallpipe ns2" in sides:
                theirs_sp = simulate(ns2_side(sc))
                runs.append(("smallpipe ns2", t4.data_flows(theirs_sp), smallpipe_stats(theirs_sp)))
            if "ns-2" in sides:
                runs.append(("ns-2", *ns2_run(ours.flows, method, sc.to_dict(), duration_s, Path(tmp))))
            for side, flows, side_stats in runs:
                for g, (access, rtt) in enumerate(zip(fig12.ACCESS_DELAYS_MS, rtts, strict=True)):
                    group = flows.filter(pl.col("group") == g)
                    rows.append({"side": side, "method": method, "access_ms": access, "rtt_ms": rtt,
                                 "connections": group.height,
                                 **{column: metrics.modified_fairness_index(group, mss_bytes=t4.MSS_BYTES, iw_pkts=1,
                                                                            target_pkts_per_rtt=target)
                                    for column, target in targets.items()},
                                 **{f"{column}_target_pkts_per_rtt": t for column, t in targets.items()},
                                 "utilization": side_stats["utilization"], "loss_rate": side_stats["loss_rate"]})
                print(side, method, side_stats, flush=True)
    table = pl.DataFrame(rows).with_columns(duration_s=pl.lit(duration_s), seed=pl.lit(seed))
    write_csv(table, out)  # with the smallpipe commit that made it
    with pl.Config(tbl_rows=100):
        print(table.group_by("side", "method", maintain_order=True).agg(
            pl.col("fairness").mean(), pl.col("fairness").min().alias("lowest"), pl.col("fairness").max().alias("highest"),
            pl.col("fairness_low_th_target").mean(), pl.col("utilization").first()))


def smallpipe_stats(result) -> dict:
    b = result.links.filter(pl.col("name") == "bottleneck")
    return {"utilization": b["utilization"][0], "loss_rate": b["loss_rate"][0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--taus-ms", type=float, nargs="+", default=list(t4.TAUS_MS))
    parser.add_argument("--methods", nargs="+", default=list(NS2_QUEUE), choices=list(NS2_QUEUE))
    parser.add_argument("--duration-s", type=float, default=300.0, help="[300; the reproduction's full run is 600]")
    parser.add_argument("--users", type=int, default=t4.USERS, help=f"[{t4.USERS}]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--figure12", action="store_true", help="Figure 12's baselines instead of Table 4's")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES), help="[all three]")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.figure12:
        figure12(args.duration_s, args.seed, args.out, args.sides)
        return
    committed = pl.read_csv(COMMITTED).filter(pl.col("method") == "size_aware")
    targets = {tau: (committed.filter(pl.col("tau_ms") == tau)["target_pkts_per_rtt"][0],
                     committed.filter(pl.col("tau_ms") == tau)["low_th_target_pkts_per_rtt"][0])
               for tau in args.taus_ms}
    rows = []
    with tempfile.TemporaryDirectory(prefix="ns2-size-aware-") as tmp:
        for tau in args.taus_ms:
            for method in args.methods:
                sc = t4.scenario(method, tau, quick=False, seed=args.seed).with_overrides(
                    {"duration_s": args.duration_s, "flows.0.count": args.users})
                config = sc.to_dict()
                if "smallpipe default" in args.sides or "ns-2" in args.sides:
                    ours = simulate(sc)
                if "smallpipe default" in args.sides:
                    rows.append(row("smallpipe default", method, tau, t4.data_flows(ours), smallpipe_stats(ours),
                                    targets))
                if "smallpipe ns2" in args.sides:
                    theirs_sp = simulate(ns2_side(sc))
                    rows.append(row("smallpipe ns2", method, tau, t4.data_flows(theirs_sp),
                                    smallpipe_stats(theirs_sp), targets))
                if "ns-2" in args.sides:
                    transfers, stats = ns2_run(ours.flows, method, config, args.duration_s, Path(tmp))
                    rows.append(row("ns-2", method, tau, transfers, stats, targets))
                print(rows[-len(args.sides):], flush=True)
    table = pl.DataFrame(rows).with_columns(duration_s=pl.lit(args.duration_s), users=pl.lit(args.users))
    write_csv(table, args.out)  # with the smallpipe commit that made it
    with pl.Config(tbl_rows=100, tbl_cols=20):
        print(table.select("side", "tau_ms", "method", "connections", "fairness", "utilization", "loss_rate"))


if __name__ == "__main__":
    main()
