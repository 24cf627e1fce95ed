#!/usr/bin/env python3
"""Matta & Guo's figures in ns-2 2.35 ("ns version 2, TCP-reno"), through matta_guo.tcl, one
CSV row per run with the columns of ``smallpipe reproduce isolation-figN``
(smallpipe.experiments.isolation_common.measure) so the two sit side by side.

    python3 benches/ns2/matta_guo.py fig3 --ks 1 2 3 4 --out fig3.csv       # pipes, sharing
    python3 benches/ns2/matta_guo.py fig5 --out fig5.csv                    # buffer ratios
    python3 benches/ns2/matta_guo.py fig7 --queues DropTail RED --out fig7.csv
    ... --variant ""                                                        # TCP-tahoe

Class isolation is not in ns-2. Its "two separate pipes" are modelled as two separate
bottleneck links of the split capacity and buffer (short sessions and three telnets on
C_u, B_u; long sessions and three telnets on k C_u, k B_u), each with its own reverse link
(smallpipe's ``pipes`` sends both classes' ACKs over path 1's reverse). Sharing is one link
of (1 + k) C_u, (1 + k) B_u. Figure 7's load balancing is two 5 Mbit/s paths, each
connection (session or web) on one picked at random.

The TCP is ns-2's one-way agent (``Agent/TCP/Reno``; ``--variant ""`` is ``Agent/TCP``,
Tahoe) with a ``TCPSink``, set as the page reads the paper (isolation_common.MATTA_TCP):
576-byte packets, ``window_`` 128, ``windowInit_`` 1, ``tcpTick_`` 0.5 s, ``minrto_`` 1 s,
no header-only first packet and window growth from the first ACK (``syn_`` and
``delay_growth_`` off, as ns-2 of 2000: a 10-packet connection sends 1, 2, 4, 3 packets,
footnote 5). Telnet is ns-2's
``Application/Telnet`` with exponential gaps of mean 0.5 s and 64-byte packets.
"""

from __future__ import annotations

import argparse
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ns2_side import Ns2Error, jain, ns_binary

HERE = Path(__file__).resolve().parent
PACKET_BYTES = 576
MSS_BYTES = PACKET_BYTES - 40
C_U_BPS = 2_500_000
B_U_PKTS = 50
LONG_PKTS, SHORT_PKTS = 1000, 10
WARMUP_S = 20.0
"""Start-up left out of every metric: the first 20 s slice, as the reproduction."""
VARIANTS = ("Reno", "Newreno", "")
"""ns-2's one-way agents: Agent/TCP/Reno (the paper's), Agent/TCP/Newreno, Agent/TCP (Tahoe)."""
RED_TABLE3 = (20, 245, 0.002, 0.002, "false")
"""Table 3's RED: thresholds 20/245 packets, max_p 0.2 %, w_q 0.002 (the page's), not gentle."""


def tcl_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "{" + " ".join(tcl_value(x) for x in v) + "}"
    return "{}" if v == "" else str(v)


def run_ns2(params: dict[str, Any], web: list[tuple[float, int]]) -> str:
    with tempfile.TemporaryDirectory(prefix="ns2-matta-") as tmp:
        ptcl, arrivals = Path(tmp) / "params.tcl", Path(tmp) / "web.txt"
        ptcl.write_text("".join(f"set p({k}) {tcl_value(v)}\n" for k, v in params.items()))
        arrivals.write_text("".join(f"{t!r} {n}\n" for t, n in web))
        done = subprocess.run([ns_binary(), str(HERE / "matta_guo.tcl"), str(ptcl), str(arrivals)],
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Ns2Error(f"ns failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def base_params(*, variant: str, duration_s: float, seed: int, paths: list[tuple[int, float, int]],
                groups: list[tuple[int, int, int]], telnet: list[tuple[int, int, int, float]],
                sender_delay_ms: float, receiver_delay_ms: float, access_rate_bps: int,
                queue: str = "DropTail", red: tuple = RED_TABLE3, access_queue_pkts: int = 4000,
                slice_s: float = 20.0, ns235_start: bool = False) -> dict[str, Any]:
    if variant not in VARIANTS:
        raise ValueError(f"variant: {variant!r} is not allowed; expected one of {list(VARIANTS)}")
    if queue not in ("DropTail", "RED"):
        raise ValueError(f"queue: {queue!r} is not allowed; expected DropTail or RED")
    return {
        "seed": seed + 1, "duration_s": duration_s, "slice_s": slice_s, "start_spread_s": 5.0,
        "variant": variant, "packet_bytes": PACKET_BYTES, "window_pkts": 128, "iw_pkts": 1, "tick_s": 0.5,
        "minrto_s": 1.0, "queue": queue, "red": list(red), "paths": [list(x) for x in paths],
        "groups": [list(x) for x in groups], "telnet": [list(x) for x in telnet], "web_path": -1,
        "access_rate_bps": access_rate_bps, "access_queue_pkts": access_queue_pkts,
        "sender_delay_ms": sender_delay_ms, "receiver_delay_ms": receiver_delay_ms,
        "ns235_start": int(ns235_start),
    }


def parse(stdout: str) -> dict[str, Any]:
    conns: list[tuple[int, int, int, float, float, int, int]] = []
    slices: dict[tuple[int, int], dict[int, int]] = {}
    paths: dict[int, tuple[int, int, int, int]] = {}
    web = wall = None
    for line in stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "conn":
            conns.append((int(f[1]), int(f[2]), int(f[3]), float(f[4]), float(f[5]), int(f[6]), int(f[7])))
        elif f[0] == "slice":
            slices.setdefault((int(f[2]), int(f[3])), {})[int(f[1])] = int(f[4])
        elif f[0] == "path":
            paths[int(f[1])] = (int(f[2]), int(f[3]), int(f[4]), int(f[5]))
        elif f[0] == "web":
            web = (int(f[1]), int(f[2]))
        elif f[0] == "wall":
            wall = (float(f[1]), float(f[2]))
        else:
            raise Ns2Error(f"ns printed a line the driver does not know: {line!r}")
    if wall is None or not paths:
        raise Ns2Error(f"ns ended without its results:\n{stdout[-2000:]}")
    return {"conns": conns, "slices": slices, "paths": paths, "web": web, "wall": wall}


def class_metrics(out: dict[str, Any], group: int, sessions: int, duration_s: float, slice_s: float) -> dict[str, float]:
    """As isolation_common.class_metrics: per-session goodput per slice (those covering the
    first 20 s skipped), Jain across sessions, mean and lowest over slices; per connection,
    size over completion time of the connections started after 20 s and finished."""
    n_slices = round(duration_s / slice_s)
    skip = math.ceil(WARMUP_S / slice_s - 1e-9)
    cumulative = [[out["slices"][(group, i)].get(k, 0) for i in range(sessions)] for k in range(n_slices)]
    per_slice = [[b - a for a, b in zip(cumulative[k - 1], cumulative[k], strict=True)] for k in range(skip, n_slices)]
    jains = [j for row in per_slice if (j := jain([float(x) for x in row])) is not None]
    conns = [c for c in out["conns"] if c[0] == group]
    later = [c for c in conns if c[3] >= WARMUP_S]
    conn_goodput = [c[5] * MSS_BYTES * 8 / (c[4] - c[3]) for c in later]
    return {
        "jain": sum(jains) / len(jains) if jains else math.nan,
        "jain_min": min(jains) if jains else math.nan,
        "conn_jain": jain(conn_goodput) or math.nan if conn_goodput else math.nan,
        "goodput_bps": sum(sum(r) for r in per_slice) / len(per_slice) * MSS_BYTES * 8 / slice_s,
        "timeouts_per_conn": sum(c[6] for c in conns) / len(conns) if conns else math.nan,
        "conns_done": len(conns),
    }


def measure(out: dict[str, Any], sessions: int, duration_s: float, rates_bps: list[int],
            goodput_unit: str, slice_s: float = 20.0) -> dict[str, Any]:
    scale, suffix = (1e6, "mbps") if goodput_unit == "mbps" else (1e3, "kbps")
    row: dict[str, Any] = {}
    for group, name in ((0, "long"), (1, "short")):
        m = class_metrics(out, group, sessions, duration_s, slice_s)
        row[f"{name}_jain"] = m["jain"]
        row[f"{name}_jain_min"] = m["jain_min"]
        row[f"{name}_conn_jain"] = m["conn_jain"]
        row[f"{name}_goodput_{suffix}"] = m["goodput_bps"] / scale
        row[f"{name}_timeouts_per_conn"] = m["timeouts_per_conn"]
        row[f"{name}_conns_done"] = m["conns_done"]
    paths = out["paths"]
    departed_bytes = sum(b for *_, b in paths.values())
    row["utilization"] = departed_bytes * 8 / (sum(rates_bps) * duration_s)
    row["loss_rate"] = sum(x for _, _, x, _ in paths.values()) / max(1, sum(a for a, *_ in paths.values()))
    for j, (a, _, x, b) in sorted(paths.items()):
        row[f"path{j + 1}_loss"] = x / max(1, a)
        row[f"path{j + 1}_utilization"] = b * 8 / (rates_bps[j] * duration_s)
    return row


def pipe_sizes_run(*, scheme: str, short_units: float, long_units: float, short_buf_units: float,
                   long_buf_units: float, sessions: int, variant: str, duration_s: float, seed: int) -> dict[str, Any]:
    """Figures 3-5's dumbbell (40 ms bottleneck, 5 ms access links, access at 4 C_u)."""
    short_buf = max(1, round(short_buf_units * B_U_PKTS))
    long_buf = max(1, round(long_buf_units * B_U_PKTS))
    if scheme == "pipes":
        paths = [(round(short_units * C_U_BPS), 40.0, short_buf), (round(long_units * C_U_BPS), 40.0, long_buf)]
        groups = [(sessions, LONG_PKTS, 1), (sessions, SHORT_PKTS, 0)]
        telnet = [(3, 0, 64, 0.5), (3, 1, 64, 0.5)]
    elif scheme == "sharing":
        paths = [(round((short_units + long_units) * C_U_BPS), 40.0, short_buf + long_buf)]
        groups = [(sessions, LONG_PKTS, 0), (sessions, SHORT_PKTS, 0)]
        telnet = [(6, 0, 64, 0.5)]
    else:
        raise ValueError(f"scheme: {scheme!r} is not allowed; expected pipes or sharing")
    params = base_params(variant=variant, duration_s=duration_s, seed=seed, paths=paths, groups=groups,
                         telnet=telnet, sender_delay_ms=5.0, receiver_delay_ms=5.0, access_rate_bps=4 * C_U_BPS)
    started = time.perf_counter()
    out = parse(run_ns2(params, []))
    row = {"scheme": scheme, **measure(out, sessions, duration_s, [p[0] for p in paths], "mbps")}
    row["ns2_wall_s"] = round(time.perf_counter() - started, 2)
    return row


def bounded_pareto_pkts(rng: random.Random, low: float = 4.0, high: float = 2e5, shape: float = 1.2) -> int:
    """One draw of Table 3's bounded Pareto (inverse transform), rounded to whole packets."""
    u = rng.random()
    return round(low / (1.0 - u * (1.0 - (low / high) ** shape)) ** (1.0 / shape))


def fig7_run(*, queue: str, variant: str, duration_s: float, seed: int, red: tuple = RED_TABLE3,
             slice_s: float = 20.0, ns235_start: bool = False) -> dict[str, Any]:
    """Figure 7's diamond with load balancing: two 5 Mbit/s paths of 250 packets, RTT 220 ms
    (100 ms path, 5 ms receiver access, 5 ms sender access), access at 15 Mbit/s; 10 long and
    10 short sessions and 200/2.4 web connections per s (bounded Pareto sizes), each
    connection on a random path."""
    rng = random.Random(seed)
    web, t = [], 0.0
    while True:
        t += rng.expovariate(200 / 2.4)
        if t >= duration_s:
            break
        web.append((t, bounded_pareto_pkts(rng)))
    paths = [(5_000_000, 100.0, 250), (5_000_000, 100.0, 250)]
    params = base_params(variant=variant, duration_s=duration_s, seed=seed, paths=paths,
                         groups=[(10, LONG_PKTS, -1), (10, SHORT_PKTS, -1)], telnet=[], sender_delay_ms=5.0,
                         receiver_delay_ms=5.0, access_rate_bps=15_000_000, queue=queue, red=red,
                         slice_s=slice_s, ns235_start=ns235_start)
    started = time.perf_counter()
    out = parse(run_ns2(params, web))
    row = {"scheme": f"load_balanced_{queue.lower()}",
           **measure(out, 10, duration_s, [p[0] for p in paths], "kbps", slice_s), "slice_s": slice_s}
    row["web_conns"], row["web_conns_done"] = out["web"]
    row["ns2_wall_s"] = round(time.perf_counter() - started, 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figure", choices=("fig3", "fig4", "fig5", "fig7"))
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 3, 4], help="Figures 3-4: long pipe ratios")
    parser.add_argument("--buffer-ratios", type=float, nargs="+", default=[0.2, 0.5, 1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--queues", nargs="+", choices=("DropTail", "RED"), default=["DropTail", "RED"])
    parser.add_argument("--max-p", type=float, nargs="+", default=[0.002], help="Figure 7's RED max_p values")
    parser.add_argument("--variant", choices=VARIANTS, default="Reno", help='"" is Tahoe (Agent/TCP)')
    parser.add_argument("--duration-s", type=float)
    parser.add_argument("--ns235-start", action="store_true",
                        help="Figure 7: ns-2.35's own start (syn_, delay_growth_ on), as smallpipe's ns2 stack")
    parser.add_argument("--slice-s", type=float, default=20.0, help="Figure 7: the fairness slice (the paper: 20 s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import polars as pl
    from smallpipe.experiments.provenance import write_csv

    rows = []
    for seed in args.seeds:
        extra = {"simulator": "ns-2", "variant": args.variant or "Tahoe", "seed": seed}
        if args.figure in ("fig3", "fig4"):
            duration = args.duration_s or 400.0
            for k in args.ks:
                for scheme in ("pipes", "sharing"):
                    r = pipe_sizes_run(scheme=scheme, short_units=1, long_units=k, short_buf_units=1,
                                       long_buf_units=k, sessions=30 if args.figure == "fig3" else 60,
                                       variant=args.variant, duration_s=duration, seed=seed)
                    rows.append({"k": k, **r, **extra, "duration_s": duration})
                    print(rows[-1], flush=True)
        elif args.figure == "fig5":
            duration = args.duration_s or 400.0
            for ratio in args.buffer_ratios:
                for scheme in ("pipes", "sharing"):
                    r = pipe_sizes_run(scheme=scheme, short_units=1, long_units=4, short_buf_units=ratio,
                                       long_buf_units=4 * ratio, sessions=30, variant=args.variant,
                                       duration_s=duration, seed=seed)
                    rows.append({"buffer_ratio": ratio, **r, **extra, "duration_s": duration})
                    print(rows[-1], flush=True)
        else:
            duration = args.duration_s or 1000.0
            for queue in args.queues:
                for max_p in (args.max_p if queue == "RED" else [None]):
                    red = RED_TABLE3 if max_p is None else (20, 245, max_p, 0.002, "false")
                    r = fig7_run(queue=queue, variant=args.variant, duration_s=duration, seed=seed, red=red,
                                 slice_s=args.slice_s, ns235_start=args.ns235_start)
                    rows.append({**r, "max_p": max_p, **extra, "duration_s": duration, "ns235_start": args.ns235_start})
                    print(rows[-1], flush=True)
    write_csv(pl.DataFrame(rows), args.out)


if __name__ == "__main__":
    main()
