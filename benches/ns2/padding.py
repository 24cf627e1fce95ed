#!/usr/bin/env python3
"""The padding paper's simulated figures in ns-2 2.35 with ``Agent/TCP/FullTcp``, as the
paper ran them ("ns-2's TCP/FullTcpAgent"), through fulltcp.tcl; one CSV row per point with
the columns of ``smallpipe reproduce padding-figN`` where they mean the same.

    python3 benches/ns2/padding.py fig5b --out fig5b.csv     # random loss, G
    python3 benches/ns2/padding.py fig5a --out fig5a.csv     # cross traffic, G
    python3 benches/ns2/padding.py fig9 --out fig9.csv       # clients at 1.5 Mbit/s, RED
    python3 benches/ns2/padding.py fig12a --out fig12a.csv   # TCP in a byte DropTail
    ... --delack-s 0.1 --segsize 536                          # FullTcp's receiver (defaults)

FullTcp keeps ns-2.35's defaults (ns-default.tcl) but ``minrto_`` (1 s, the paper's):
Reno without SACK, ``window_`` 20, ``segsize_`` 536 (576-byte packets), and a receiver
that ACKs once ``segsperack_`` (1) x ``segsize_`` bytes have arrived unacknowledged
(tcp-full.cc ``need_send``), else at the next tick of its delayed-ACK timer
(``interval_`` 100 ms, on multiples of 100 ms). A 500-byte burst is below 536 bytes, so its
ACK waits for that tick; the backlogged flow's full segments are ACKed at once.

The backlogged flow is the paper's: an FTP whose packets are marked at exponential gaps
(mean 1 s), each timed from its send to the first cumulative ACK past it (``send_s``), and
from the mark to that ACK (``mark_s``, the analogue of smallpipe's write -> ACK).
Diversity is emulated (fulltcp.tcl): the burst is written on two connections, done when
either has it acknowledged; each connection repairs its own copy.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ns2_side import Ns2Error, ns_binary

HERE = Path(__file__).resolve().parent
WARMUP_S = 20.0
BURST_BYTES = 500
KINDS = ("interactive", "diversity", "backlogged", "bulk", "scripted", "transfer")


def tcl_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "{" + " ".join(tcl_value(x) for x in v) + "}"
    return str(v)


def run_ns2(params: dict[str, Any], trace: bool = False) -> dict[str, Any]:
    """One run of fulltcp.tcl. With ``trace``, ``out["segments"]`` lists the first
    connection's packets onto its access link: (time s, seqno, payload bytes, tcp flags)."""
    with tempfile.TemporaryDirectory(prefix="ns2-padding-") as tmp:
        ptcl = Path(tmp) / "params.tcl"
        ptcl.write_text("".join(f"set p({k}) {tcl_value(v)}\n" for k, v in params.items())
                        + (f"set p(trace_dir) {{{tmp}}}\n" if trace else ""))
        done = subprocess.run([ns_binary(), str(HERE / "fulltcp.tcl"), str(ptcl)],
                              capture_output=True, text=True, check=False)
        segments = (Path(tmp) / "segments.tr").read_text() if trace and done.returncode == 0 else ""
    if done.returncode != 0:
        raise Ns2Error(f"ns failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    out: dict[str, Any] = {"resp": [], "mark": [], "tx": {}, "timeouts": {}, "segments": []}
    for line in segments.splitlines():
        # + time from to type size flags fid src dst seqno uid; FullTcp's header is 40 bytes
        f = line.split()
        if f[0] == "+" and f[4] == "tcp":
            out["segments"].append((float(f[1]), int(f[10]), int(f[5]) - 40, f[6]))
    for line in done.stdout.splitlines():
        f = line.split()
        if f[0] == "resp":
            out["resp"].append((int(f[1]), int(f[2]), float(f[3]), float(f[4])))
        elif f[0] == "mark":
            out["mark"].append((int(f[1]), int(f[2]), float(f[3]), float(f[4]), float(f[5])))
        elif f[0] == "queue":
            out["queue"] = tuple(int(x) for x in f[1:4])
        elif f[0] == "tx":
            out["tx"][int(f[1])] = (int(f[2]), int(f[3]))
        elif f[0] == "timeouts":
            out["timeouts"][int(f[1])] = int(f[2])
        elif f[0] == "wall":
            out["wall"] = (float(f[1]), float(f[2]))
        else:
            raise Ns2Error(f"ns printed a line the driver does not know: {line!r}")
    if "wall" not in out:
        raise Ns2Error(f"ns ended without its results:\n{done.stdout[-2000:]}")
    return out


def params(*, groups: list[tuple[str, int, int, float, float]], rate_bps: float, delay_ms: float, rtt_ms: float,
           duration_s: float, seed: int, queue: str = "DropTail", queue_limit: int = 10_000,
           queue_in_bytes: bool = False, mean_pktsize: int = 500, red: Any = "defaults", loss: float = 0.0,
           segsize: int = 536, delack_s: float = 0.1, window_pkts: int = 20, start_spread_s: float = 2.0,
           access_rate_bps: float | None = None, drop_pkts: list[int] | None = None,
           write_times: list[float] | None = None) -> dict[str, Any]:
    """fulltcp.tcl's ``p`` array. ``drop_pkts``: packets the bottleneck drops, counted from 0
    over all it carries towards the receivers (handshakes included); not with ``loss``.
    ``write_times``: when a ``scripted`` group writes, seconds."""
    for g in groups:
        if g[0] not in KINDS:
            raise ValueError(f"groups: kind {g[0]!r} is not allowed; expected one of {list(KINDS)}")
    scripted = any(g[0] == "scripted" for g in groups)
    if scripted != bool(write_times):
        raise ValueError(f"write_times: {write_times!r} is not allowed; expected a list of times exactly when a "
                         "group is scripted")
    if drop_pkts and loss:
        raise ValueError(f"drop_pkts: {drop_pkts} is not allowed with loss {loss}; expected one of them")
    if drop_pkts and any(k < 0 for k in drop_pkts):
        raise ValueError(f"drop_pkts: {drop_pkts} is not allowed; expected packet numbers >= 0")
    return {
        "seed": seed + 1, "duration_s": duration_s, "start_spread_s": start_spread_s,
        "groups": [list(g) for g in groups], "drop_pkts": sorted(drop_pkts or []),
        "write_times": [repr(float(t)) for t in write_times or []],
        "rate_bps": rate_bps, "delay_ms": delay_ms,
        "access_rate_bps": max(1e9, 10 * rate_bps) if access_rate_bps is None else access_rate_bps,
        "sender_delay_ms": rtt_ms / 2 - delay_ms, "receiver_delay_ms": 0.0, "queue": queue,
        "queue_limit": queue_limit, "queue_in_bytes": "true" if queue_in_bytes else "false",
        "mean_pktsize_bytes": mean_pktsize, "red": red, "loss": loss, "minrto_s": 1.0,
        "window_pkts": window_pkts, "segsize_bytes": segsize, "delack_s": delack_s,
    }


def response(out: dict[str, Any], group: int) -> dict[str, Any]:
    """Bursts written (marks made) after the warm-up: how many, mean and tail response."""
    if any(g == group for g, *_ in out["mark"]):
        marks = [m for m in out["mark"] if m[0] == group and m[2] >= WARMUP_S]
        send = [a - s for _, _, _, s, a in marks]
        mark = [a - m for _, _, m, _, a in marks]
        return {"bursts": len(marks), "mark_s": statistics.mean(mark), "send_s": statistics.mean(send),
                "p99_s": sorted(send)[int(0.99 * (len(send) - 1))], "over_1s": sum(x > 1 for x in send) / len(send)}
    resp = sorted(d - w for g, _, w, d in out["resp"] if g == group and w >= WARMUP_S)
    if not resp:
        return {"bursts": 0, "mark_s": math.nan, "send_s": math.nan, "p99_s": math.nan, "over_1s": math.nan}
    mean = statistics.mean(resp)
    return {"bursts": len(resp), "mark_s": mean, "send_s": mean, "p99_s": resp[int(0.99 * (len(resp) - 1))],
            "p90_s": resp[int(0.9 * (len(resp) - 1))], "over_1s": sum(x > 1 for x in resp) / len(resp)}


def loss_rate(out: dict[str, Any]) -> float:
    arrived, _, dropped = out["queue"]
    return dropped / arrived if arrived else 0.0


def fig5b(losses: list[float], clients: int, duration_s: float, seed: int, tcp: dict[str, Any]) -> list[dict]:
    """Random loss p on a 1 Gbit/s link (RTT 12 ms): interactive, backlogged and Approach I
    (minRTO' 500 ms) clients, each approach in its own run."""
    from smallpipe.experiments.padding_fig5 import model_s

    rows = []
    for p in losses:
        got = {}
        for approach, kind, minrto in (("interactive", "interactive", 1.0), ("backlogged", "backlogged", 1.0),
                                       ("min_rto_prime", "interactive", 0.5)):
            out = run_ns2(params(groups=[(kind, clients, BURST_BYTES, 1.0, minrto)], rate_bps=1e9, delay_ms=0.5,
                                 rtt_ms=12.0, duration_s=duration_s, seed=seed, loss=p, **tcp))
            got[approach] = response(out, 0)
        base = got["interactive"]
        for approach, r in got.items():
            model = model_s(approach, p)
            rows.append({"p": p, "approach": approach, "bursts": r["bursts"], "sim_s": r["mark_s"], "model_s": model,
                         "sim_over_model": r["mark_s"] / model, "gain_sim": base["mark_s"] / r["mark_s"],
                         "gain_model": model_s("interactive", p) / model, "send_sim_s": r["send_s"],
                         "gain_send_sim": base["send_s"] / r["send_s"], "seed": seed})
            print(rows[-1], flush=True)
    return rows


FIG9_RED = (5, 15, 0.1, 0.002, "false", "false")
"""Figures 5(a), 8, 9's RED as smallpipe runs it: 5/15 packets, max_p 0.1, w_q 0.002, not
gentle, packet mode (74 packets of room)."""


def fig9_queue(queue: str) -> dict[str, Any]:
    if queue == "droptail":  # 40 kB counted in bytes
        return {"queue": "DropTail", "queue_in_bytes": True, "mean_pktsize": 1000, "queue_limit": 40}
    if queue == "red":
        return {"queue": "RED", "queue_limit": 74, "red": FIG9_RED}
    if queue == "red_gentle":
        return {"queue": "RED", "queue_limit": 74, "red": (*FIG9_RED[:4], "true", "false")}
    raise ValueError(f"queue: {queue!r} is not allowed; expected droptail, red or red_gentle")


def fig5a(queues: list[str], bulk_flows: list[int], duration_s: float, seed: int, tcp: dict[str, Any]) -> list[dict]:
    """5 Mbit/s, RTT 12 ms, 40 kB: bulk FTPs set the loss; 5 clients interactive, or 5
    backlogged (marked packets), each in its own run."""
    from smallpipe.experiments.padding_fig5a import model_gain

    rows = []
    for queue in queues:
        for n in bulk_flows:
            got, losses = {}, {}
            for kind in ("interactive", "backlogged"):
                out = run_ns2(params(groups=[("bulk", n, 0, 1.0, 1.0), (kind, 5, BURST_BYTES, 1.0, 1.0)], rate_bps=5e6,
                                     delay_ms=1.0, rtt_ms=12.0, duration_s=duration_s, seed=seed,
                                     **fig9_queue(queue), **tcp))
                got[kind], losses[kind] = response(out, 1), loss_rate(out)
            i, b = got["interactive"], got["backlogged"]
            rows.append({"queue": queue, "bulk_flows": n, "loss_rate": losses["interactive"],
                         "interactive_bursts": i["bursts"], "interactive_write_to_ack_s": i["mark_s"],
                         "interactive_send_to_ack_s": i["send_s"], "backlogged_bursts": b["bursts"],
                         "backlogged_write_to_ack_s": b["mark_s"], "backlogged_send_to_ack_s": b["send_s"],
                         "gain_write": i["mark_s"] / b["mark_s"], "gain_send": i["send_s"] / b["send_s"],
                         "gain_model": model_gain(queue, losses["interactive"]) if losses["interactive"] > 0 else 1.0,
                         "seed": seed})
            print(rows[-1], flush=True)
    return rows


def fig9(queues: list[str], approaches: list[str], clients: list[int], duration_s: float, seed: int,
         tcp: dict[str, Any]) -> list[dict]:
    """1.5 Mbit/s, RTT 12 ms, N clients all interactive or all diversity (emulated)."""
    rows = []
    for queue in queues:
        for approach in approaches:
            for n in clients:
                out = run_ns2(params(groups=[(approach, n, BURST_BYTES, 1.0, 1.0)], rate_bps=1.5e6, delay_ms=1.0,
                                     rtt_ms=12.0, duration_s=duration_s, seed=seed, **fig9_queue(queue), **tcp))
                r = response(out, 0)
                sent = out["queue"][1]
                rows.append({"queue": queue, "approach": approach, "clients": n, "bursts": r["bursts"],
                             "mean_response_s": r["send_s"], "p99_response_s": r["p99_s"],
                             "loss_rate": loss_rate(out), "departed_pkts": sent, "seed": seed})
                print(rows[-1], flush=True)
    return rows


def fig12a(bulk_flows: list[int], duration_s: float, seed: int, tcp: dict[str, Any]) -> list[dict]:
    """Figure 12(a)'s TCP rows: 5 Mbit/s, RTT 12 ms, a 40 kB DropTail counted in bytes, bulk
    FTPs and 10 telnet clients writing 1448-byte bursts. TCP-SF is not in ns-2."""
    rows = []
    for n in bulk_flows:
        out = run_ns2(params(groups=[("bulk", n, 0, 1.0, 1.0), ("interactive", 10, 1448, 1.0, 1.0)], rate_bps=5e6,
                             delay_ms=1.0, rtt_ms=12.0, duration_s=duration_s, seed=seed, queue="DropTail",
                             queue_in_bytes=True, mean_pktsize=1000, queue_limit=40, **tcp))
        r = response(out, 1)
        sent, resent = out["tx"][1]
        rows.append({"queue": "droptail", "variant": "tcp", "bulk_flows": n, "loss_rate": loss_rate(out),
                     "bursts": r["bursts"], "mean_response_s": r["send_s"], "p90_response_s": r.get("p90_s"),
                     "p99_response_s": r["p99_s"], "over_1s": r["over_1s"],
                     "p_s": resent / sent if sent else math.nan, "seed": seed})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figure", choices=("fig5b", "fig5a", "fig9", "fig12a"))
    parser.add_argument("--losses", type=float, nargs="+", default=[0.01, 0.02, 0.035, 0.05, 0.1])
    parser.add_argument("--bulk-flows", type=int, nargs="+", default=[2, 5, 10, 20, 40])
    parser.add_argument("--clients", type=int, nargs="+", default=[200, 300, 400])
    parser.add_argument("--queues", nargs="+", default=["red", "droptail"])
    parser.add_argument("--approaches", nargs="+", default=["interactive", "diversity"])
    parser.add_argument("--segsize", type=int, default=536, help="FullTcp's segsize_, both ends (ns-2: 536)")
    parser.add_argument("--delack-s", type=float, default=0.1, help="FullTcp's interval_ (ns-2: 0.1)")
    parser.add_argument("--window-pkts", type=int, default=20, help="window_ (ns-2: 20)")
    parser.add_argument("--duration-s", type=float, default=200.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import polars as pl
    from smallpipe.experiments.provenance import write_csv

    tcp = {"segsize": args.segsize, "delack_s": args.delack_s, "window_pkts": args.window_pkts}
    rows: list[dict] = []
    started = time.perf_counter()
    for seed in args.seeds:
        if args.figure == "fig5b":
            rows += fig5b(args.losses, 10, args.duration_s, seed, tcp)
        elif args.figure == "fig5a":
            rows += fig5a(args.queues, args.bulk_flows, args.duration_s, seed, tcp)
        elif args.figure == "fig9":
            rows += fig9(args.queues, args.approaches, args.clients, args.duration_s, seed, tcp)
        else:
            rows += fig12a(args.bulk_flows, args.duration_s, seed, tcp)
    table = pl.DataFrame(rows).with_columns(simulator=pl.lit("ns-2 FullTcp"), segsize=pl.lit(args.segsize),
                                            delack_s=pl.lit(args.delack_s), window_pkts=pl.lit(args.window_pkts))
    write_csv(table, args.out)
    print(f"{len(rows)} rows in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
