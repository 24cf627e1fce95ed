"""The Linux side of the cross-validation: a spec (``specs.py``) as the same smallpipe scenario
``sp_side.py`` builds, run on real Linux TCP through ``smallpipe.testbed.run_testbed`` (the
middlebox emulates the bottleneck), and reduced to the same result dict.

Alignment: the scenario is ``sp_side``'s except ``tcp.overhead_max_ms`` (the simulator's
random processing delay, off there; real hosts have their own jitter and the testbed refuses
the knob) and ``tcp.ack_first_data`` (set there to match ns-3; Linux's quick-ACK mode
acknowledges the first segments at once by itself, and the testbed refuses the knob). Linux runs ``reno`` with the RFC switches of docs/testbed.md (no TLP, F-RTO; RACK cannot be switched off from Linux 6.17).
What Linux cannot switch off (PRR, undo, its RTO formula, adaptive delayed ACKs) stays and is
the first suspect for any row outside its tolerance (docs/validation.md).

Measured over [warm-up, end] like the simulators: the bottleneck's arrivals, drops and backlog
integral from the box's per-slice counters (:func:`smallpipe.testbed.link_window`), timeouts
from the senders' ``TCP_INFO`` at the warm-up's slice end, bytes from the slices. Download
times have half the unit's RTT taken off: the testbed's client sends a request after the
handshake, which the simulator's sender-initiated connections do not (docs/testbed.md).
"""

import json
import tempfile
import time
from pathlib import Path

import polars as pl
import smallpipe
import sp_side
from smallpipe.testbed import link_window, run_testbed


def scenario(spec, duration_s):
    sc, mss = sp_side.scenario(spec, duration_s)
    d = sc.to_dict()
    d["tcp"].pop("overhead_max_ms", None)
    d["tcp"].pop("ack_first_data", None)
    return smallpipe.Scenario.from_dict(d), mss


def _download_s(start_ns, end_ns, rtt_ms):
    """Connect to last byte, less the request's half RTT; None when unfinished."""
    return None if end_ns is None else (end_ns - start_ns) / 1e9 - rtt_ms / 2e3


def timeouts_after(flows, info, sender_handshake, warm_s):
    """Each connection's timeouts after the warm-up, as smallpipe counts them (its data
    sender's RTOs, plus its handshake's when that lies in the window), in ``flows``' order.

    A connection sampled by the warm-up's end: its sender's ``tcpi_total_rto`` less the
    count at its last sample by then (``info``). Any other: its sender's count less the
    SYN-ACK's timeouts (``sender_handshake``, the count at accept), plus the client's SYN
    timeouts (``flows.syn_timeouts``). The handshake's packet that crosses the bottleneck
    is the SYN-ACK here and the SYN in smallpipe (whose senders open), and its loss always
    fires the client's SYN timer but the listener's only when that beats the client's
    retried SYN: Linux answers the retry and re-arms the request's timer (tcp_check_req)."""
    before = (info.filter(pl.col("time_ns") <= int(warm_s * 1e9)).sort("time_ns").group_by("flow_id")
              .agg(pl.col("total_rto").last()))
    at_warm = dict(zip(before["flow_id"], before["total_rto"]))
    out = []
    for f, total, syn in zip(flows["flow_id"], flows["timeouts"], flows["syn_timeouts"]):
        if f in at_warm:
            out.append((total or 0) - at_warm[f])
        else:
            out.append((total or 0) - (sender_handshake.get(f) or 0) + (syn or 0))
    return out


def run(spec, congestion_control="reno", overrides=None):
    """`overrides`: scenario overrides, the same as the smallpipe side's (the Linux matrix's
    ``tcp.stack = "linux"``)."""
    warm, end = spec["warmup_s"], spec["warmup_s"] + spec["duration_s"]
    sc, mss = scenario(spec, end)
    sc = sc.with_overrides(overrides or {})
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="smallpipe-validation-") as tmp:
        r = run_testbed(sc, congestion_control=congestion_control, out=tmp)
        window = link_window(tmp, warm, end)
        info = pl.read_parquet(Path(tmp) / "tcp_info.parquet")
        senders = json.loads((Path(tmp) / "server.json").read_text())["flows"]
    wall = time.perf_counter() - t0
    flows = r.flows.sort("flow_id")
    handshake = {f["flow_id"]: f["handshake_timeouts"] for f in senders}
    timeouts = timeouts_after(flows, info, handshake, warm)
    # The testbed numbers connections in the order they open; spec flow i is unit i (one
    # connection each), so per-flow lists are indexed by unit.
    sl = (r.slices.filter(pl.col("start_ns") >= int(warm * 1e9)).join(flows.select("flow_id", "unit_id"), on="flow_id")
          .group_by("unit_id").agg(pl.col("bytes").sum()))
    per_unit = dict(zip(sl["unit_id"], sl["bytes"]))
    by_unit = {u: (s, e, rtt) for u, s, e, rtt in flows.select("unit_id", "start_ns", "end_ns", "rtt_ms").iter_rows()}
    objects = [[size, start / 1e9, _download_s(start, end, rtt), rtt]
               for size, start, end, rtt in flows.filter(pl.col("size_bytes").is_not_null())
               .select("size_bytes", "start_ns", "end_ns", "rtt_ms").iter_rows()]
    return {
        "name": spec["name"],
        "simulator": "linux",
        "wall_s": round(wall, 3),
        "mss": mss,
        "window_s": [window["start_s"], window["end_s"]],
        "arrivals": window["arrived_pkts"],
        "drops": window["dropped_pkts"],
        "loss_rate": window["loss_rate"],
        "mean_queue_pkts": window["mean_backlog_pkts"],
        "timeouts": timeouts,
        "rx_bytes": [per_unit.get(i, 0) for i in range(sp_side.flow_count(spec, r))],
        "fct_s": [_download_s(*by_unit[i]) if i in by_unit else None for i in range(len(spec["flows"]))],
        "objects": objects,
        # The data senders' namespace (the servers'): Linux counts probes per namespace.
        "loss_probes": r.meta["loss_probe_counters"]["servers"]["TcpExtTCPLossProbes"],
        "loss_probe_recoveries": r.meta["loss_probe_counters"]["servers"]["TcpExtTCPLossProbeRecovery"],
        "connections": r.flows.height,
        "jain_20s": sp_side.jain_20s(r, warm, end),
        "box": r.meta.get("box"),
        "failed_connections": r.meta.get("failed_connections"),
    }
