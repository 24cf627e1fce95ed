#!/usr/bin/env python3
"""The ns-2 2.35 side: runs scenario specs (the dicts of benches/validation/specs.py, plus an
optional ``ns2`` table) through ``dumbbell.tcl`` in Debian's ``ns`` and returns what it
measured as dicts shaped like ``ns3_side.py``'s.

    python3 benches/ns2/ns2_side.py SPECS.json            # one JSON line per spec
    python3 benches/ns2/ns2_side.py SPECS.json --csv OUT  # also OUT/<name>.csv, a row per flow

The TCP is ns-2's one-way agent with ns-2's defaults (tcl/lib/ns-default.tcl; README.md
lists those that matter): of the spec's ``tcp`` table only ``packet_bytes`` (the IP length
of a full segment) is used. ``spec["ns2"]`` may set ``variant`` (``Newreno``, ``Reno``,
``Sack1``; default ``Newreno``), ``sink`` (``TCPSink``, ``TCPSink/DelAck``,
``TCPSink/Sack1``, ``TCPSink/Sack1/DelAck``; default: ``TCPSink/Sack1`` for Sack1, else
``TCPSink``), ``window_pkts`` (the agent's ``window_``; default ns-2's 20) and
``slice_s`` (the Jain index's slice; default 20).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VARIANTS = ("Newreno", "Reno", "Sack1")
SINKS = ("TCPSink", "TCPSink/DelAck", "TCPSink/Sack1", "TCPSink/Sack1/DelAck")
QUEUES = ("DropTail", "RED", "SFQ", "DRR")
"""The bottleneck's queue classes, each with ns-2's defaults (ns-default.tcl) and `queue_pkts` as its limit."""
TCPIP_HEADER_BYTES = 40
"""ns-2's ``tcpip_base_hdr_size_`` (ns-default.tcl), added to ``packetSize_`` on the wire."""


class Ns2Error(RuntimeError):
    """ns-2 is missing, refused the script, or printed something the parser does not know."""


def ns_binary() -> str:
    path = shutil.which("ns")
    if path is None:
        raise Ns2Error("ns-2's `ns` is not on PATH; install it with `apt-get install ns2`")
    return path


def tcl_list(items: list[Any]) -> str:
    return "{" + " ".join(tcl_list(x) if isinstance(x, list) else repr(x) if isinstance(x, float) else str(x)
                          for x in items) + "}"


def ns2_options(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's ns-2 table with its defaults filled in; a bad value is an error naming it."""
    opts = dict(spec.get("ns2") or {})
    variant = opts.setdefault("variant", "Newreno")
    if variant not in VARIANTS:
        raise ValueError(f"ns2.variant: {variant!r} is not allowed; expected one of {list(VARIANTS)}")
    sink = opts.setdefault("sink", "TCPSink/Sack1" if variant == "Sack1" else "TCPSink")
    if sink not in SINKS:
        raise ValueError(f"ns2.sink: {sink!r} is not allowed; expected one of {list(SINKS)}")
    if (variant == "Sack1") != sink.startswith("TCPSink/Sack1"):
        raise ValueError(f"ns2.sink: {sink!r} does not fit ns2.variant {variant!r} (Sack1 needs a Sack1 sink)")
    window = opts.setdefault("window_pkts", None)
    if window is not None and (not isinstance(window, int) or window < 1):
        raise ValueError(f"ns2.window_pkts: {window!r} is not allowed; expected a whole number ≥ 1")
    overhead = opts.setdefault("overhead_s", 0.0)
    if not (isinstance(overhead, (int, float)) and overhead >= 0):
        raise ValueError(f"ns2.overhead_s: {overhead!r} is not allowed; expected a number of seconds ≥ 0")
    queue = opts.setdefault("queue", "DropTail")
    if queue not in QUEUES:
        raise ValueError(f"ns2.queue: {queue!r} is not allowed; expected one of {list(QUEUES)}")
    slice_s = opts.setdefault("slice_s", 20.0)
    if not slice_s > 0:
        raise ValueError(f"ns2.slice_s: {slice_s!r} is not allowed; expected a number > 0")
    return opts


def params_tcl(spec: dict[str, Any], opts: dict[str, Any], trace_dir: Path | None) -> str:
    """The ``p`` array that dumbbell.tcl sources."""
    packet = spec["tcp"]["packet_bytes"]
    if packet <= TCPIP_HEADER_BYTES:
        raise ValueError(f"tcp.packet_bytes: {packet} is not allowed; expected more than {TCPIP_HEADER_BYTES}")
    flows = []
    for i, f in enumerate(spec["flows"]):
        sender_ms = f["rtt_ms"] / 2 - spec["bottleneck_delay_ms"] - spec.get("receiver_delay_ms", 0.0)
        if sender_ms < 0:
            raise ValueError(f"flows[{i}].rtt_ms: {f['rtt_ms']} is not allowed; expected at least "
                             f"2 x (bottleneck_delay_ms + receiver_delay_ms)")
        flows.append([float(f["start_s"]), float(f["rtt_ms"]), -1 if f["size_pkts"] is None else int(f["size_pkts"])])
    if spec.get("trace") and spec.get("trace_flow", 0) != 0:
        raise ValueError(f"trace_flow: {spec['trace_flow']} is not allowed; the ns-2 side traces flow 0")
    p = {
        "seed": int(spec["seed"]) + 1,  # ns-2 takes seed 0 to mean "from the clock"
        "rate_bps": float(spec["rate_bps"]),
        "access_rate_bps": float(spec["access_rate_bps"]),
        "bottleneck_delay_ms": float(spec["bottleneck_delay_ms"]),
        "receiver_delay_ms": float(spec.get("receiver_delay_ms", 0.0)),
        "queue_pkts": int(spec["queue_pkts"]),
        "loss": float(spec["loss"]),
        "drop_data": tcl_list(sorted(int(k) for k in spec["drop_data"])),
        "packet_bytes": int(packet),
        "variant": opts["variant"],
        "sink": opts["sink"],
        "queue": opts["queue"],
        "overhead_s": float(opts["overhead_s"]),
        "window_pkts": "" if opts["window_pkts"] is None else int(opts["window_pkts"]),
        "warmup_s": float(spec["warmup_s"]),
        "duration_s": float(spec["duration_s"]),
        "slice_s": float(opts["slice_s"]),
        "trace_dir": "" if trace_dir is None else str(trace_dir),
        "flows": tcl_list(flows),
    }
    if p["loss"] and spec["drop_data"]:
        raise ValueError("loss and drop_data: only one of them may be set on the ns-2 side")
    return "".join(f"set p({k}) {{{v}}}\n" if v == "" else f"set p({k}) {v}\n" for k, v in p.items())


def jain(xs: list[float]) -> float | None:
    """Jain's index of ``xs``; None when nothing moved."""
    total = sum(xs)
    squares = sum(x * x for x in xs)
    return total * total / (len(xs) * squares) if squares else None


def parse_trace(trace_dir: Path, mss: int) -> dict[str, list[list[float]]]:
    """Flow 0's sent segments (time, seqno, payload bytes) and cwnd_/ssthresh_ (packets)."""
    tx = []
    for line in (trace_dir / "segments.tr").read_text().splitlines():
        # + time from to type size flags fid src dst seqno uid
        f = line.split()
        if f[0] == "+" and f[4] == "tcp":
            tx.append([float(f[1]), int(f[10]), int(f[5]) - TCPIP_HEADER_BYTES])
    cwnd, ssthresh = [], []
    for line in (trace_dir / "vars.tr").read_text().splitlines():
        # time src_addr src_port dst_addr dst_port name value
        f = line.split()
        (cwnd if f[5] == "cwnd_" else ssthresh).append([float(f[0]), float(f[6])])
    return {"tx": tx, "cwnd_pkts": cwnd, "ssthresh_pkts": ssthresh}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """One spec through ns-2: bottleneck counters and per-flow results over the measured
    window (after ``warmup_s``, for ``duration_s``)."""
    opts = ns2_options(spec)
    mss = spec["tcp"]["packet_bytes"] - TCPIP_HEADER_BYTES
    with tempfile.TemporaryDirectory(prefix="ns2-side-") as tmp:
        trace_dir = Path(tmp) if spec.get("trace") else None
        params = Path(tmp) / "params.tcl"
        params.write_text(params_tcl(spec, opts, trace_dir))
        started = time.perf_counter()
        done = subprocess.run([ns_binary(), str(HERE / "dumbbell.tcl"), str(params)],
                              capture_output=True, text=True, check=False)
        wall_s = time.perf_counter() - started
        if done.returncode != 0:
            raise Ns2Error(f"ns failed on {spec['name']!r} (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        out = parse_output(done.stdout, spec, mss)
        if trace_dir is not None:
            out["trace"] = parse_trace(trace_dir, mss)
    out["wall_s"] = round(wall_s, 3)
    out["ns2"] = opts
    return out


def parse_output(stdout: str, spec: dict[str, Any], mss: int) -> dict[str, Any]:
    n = len(spec["flows"])
    flows: dict[int, list[str]] = {}
    slices: dict[int, list[int]] = {}
    sent: dict[int, list[int]] = {}
    queue = wall = None
    for line in stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "queue":
            queue = f[1:]
        elif f[0] == "flow":
            flows[int(f[1])] = f[2:]
        elif f[0] == "slice":
            slices.setdefault(int(f[1]), [0] * n)[int(f[2])] = int(f[3])
            sent.setdefault(int(f[1]), [0] * n)[int(f[2])] = int(f[4])
        elif f[0] == "wall":
            wall = f[1:]
        else:
            raise Ns2Error(f"ns printed a line the driver does not know: {line!r}")
    if queue is None or wall is None or len(flows) != n:
        raise Ns2Error(f"ns ended without its results for {spec['name']!r}:\n{stdout[-2000:]}")
    arrived, departed, dropped, queued_start, queued_end = (int(x) for x in queue[:5])
    measured_s = spec["duration_s"]
    acked = [int(flows[i][1]) for i in range(n)]
    return {
        "name": spec["name"],
        "simulator": "ns-2",
        "mss": mss,
        "arrivals": arrived,
        "departures": departed,
        "drops": dropped,
        "queued_at_start": queued_start,
        "queued_at_end": queued_end,
        "loss_rate": dropped / arrived if arrived else 0.0,
        "mean_queue_pkts": float(queue[5]) / measured_s,
        "bottleneck_packets": departed,
        "utilization": departed * spec["tcp"]["packet_bytes"] * 8 / (spec["rate_bps"] * measured_s),
        "timeouts": [int(flows[i][2]) for i in range(n)],
        "retransmitted_pkts": [int(flows[i][3]) for i in range(n)],
        "data_pkts": [int(flows[i][4]) for i in range(n)],
        "rx_bytes": [k * mss for k in acked],
        "goodput_bps": [k * mss * 8 / measured_s for k in acked],
        "jain_per_slice": [jain([float(x) for x in slices[k]]) for k in sorted(slices)],
        "slice_acked_pkts": [slices[k] for k in sorted(slices)],
        "slice_sent_pkts": [sent[k] for k in sorted(sent)],
        "build_s": float(wall[0]),
        "run_s": float(wall[1]),
    }


def write_csv(result: dict[str, Any], path: Path) -> None:
    """A row per flow: goodput, timeouts, retransmitted and data packets, with the
    bottleneck's totals repeated on every row."""
    keys = ("goodput_bps", "timeouts", "retransmitted_pkts", "data_pkts")
    totals = ("arrivals", "departures", "drops", "loss_rate", "mean_queue_pkts")
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "flow", *keys, *totals])
        for i in range(len(result["timeouts"])):
            w.writerow([result["name"], i, *(result[k][i] for k in keys), *(result[k] for k in totals)])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("specs", type=Path, help="a JSON list of specs (benches/validation/specs.py)")
    parser.add_argument("--csv", type=Path, help="also write DIR/<name>.csv per spec")
    args = parser.parse_args(argv)
    specs = json.loads(args.specs.read_text())
    for spec in specs:
        result = run(spec)
        if args.csv is not None:
            args.csv.mkdir(parents=True, exist_ok=True)
            write_csv(result, args.csv / f"{spec['name'].replace(' ', '_').replace('=', '')}.csv")
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (Ns2Error, ValueError) as error:
        sys.exit(f"ns2_side: {error}")
