"""The smallpipe side of the cross-validation: a spec (``specs.py``) as a smallpipe scenario,
run, and reduced to the same result dict as ``ns3_side.py`` produces."""

import time

import polars as pl
import smallpipe
from smallpipe import metrics

JAIN_SLICE_S = 20.0
"""The TAQ paper's short-term fairness slice (Figures 8 and 11)."""


def scenario(spec, duration_s, drop_nth=()):
    if spec.get("fig11"):
        from smallpipe.experiments.taq_testbed_fig11 import point_scenario

        sc = point_scenario(discipline=spec["fig11"]["discipline"], rate_bps=spec["rate_bps"],
                            fair_share_bps=spec["fig11"]["fair_share_bps"], duration_s=duration_s, seed=spec["seed"])
        tcp = sc["tcp"]
        return sc, tcp["packet_size_bytes"] - 40 - (12 if tcp["timestamps"] else 0)
    tcp = spec["tcp"]
    mss = tcp["packet_bytes"] - 40 - (12 if tcp["timestamps"] else 0)
    flows = []
    for f in spec["flows"]:
        g = {"app": "bulk" if f["size_pkts"] is None else "transfer", "count": 1,
             "rtt_ms": f["rtt_ms"], "start_s": f["start_s"]}
        if f["size_pkts"] is not None:
            g["size_bytes"] = f["size_pkts"] * mss
        flows.append(g)
    if spec.get("web"):
        flows.append(dict(spec["web"]))
    sc = {
        "seed": spec["seed"],
        "duration_s": duration_s,
        "slice_s": 1.0 if spec["warmup_s"] == int(spec["warmup_s"]) else duration_s,
        "link": {
            "rate_bps": spec["rate_bps"], "delay_ms": spec["bottleneck_delay_ms"],
            "access_rate_bps": spec["access_rate_bps"], "receiver_delay_ms": 0.0,
            "loss": spec["loss"], "drop_nth": list(drop_nth),
            "queue": {"kind": "droptail", "limit_pkts": spec["queue_pkts"]},
        },
        "tcp": {
            "packet_size_bytes": tcp["packet_bytes"],
            "recovery": "sack" if tcp["sack"] else "newreno",
            "initial_window_pkts": tcp["iw"],
            "delayed_ack": tcp["delayed_ack"], "delayed_ack_ms": 200.0,
            # ns-3's TcpSocketBase ACKs the first data segment after the handshake at once
            # (hard-wired, no attribute): do the same.
            "ack_first_data": True,
            "limited_transmit": True,
            "min_rto_ms": tcp["min_rto_s"] * 1000, "initial_rto_ms": tcp["initial_rto_s"] * 1000,
            "syn_retries": 6,
            "timestamps": tcp["timestamps"],
            "clock_granularity_ms": 1.0,
            "rwnd_bytes": 65535,
            # ns-3 has no random processing delay: turn ours off.
            "overhead_max_ms": 0.0,
        },
        "flows": flows,
    }
    if spec["trace"]:
        sc["trace_conn"] = spec.get("trace_flow", 0)
    return smallpipe.Scenario.from_dict(sc), mss


def forward_indices(spec):
    """``drop_data`` counts data packets arriving over the bottleneck; smallpipe's
    ``link.drop_nth`` counts every forward packet. With one flow the forward packets are its
    sender's, in send order: map through a drop-free traced run (the handshake's packets
    come first and no other packet without data follows)."""
    if not spec["drop_data"]:
        return []
    sc, _ = scenario(dict(spec, trace=True), 5.0)
    trace = smallpipe.simulate(sc).trace
    non_data = trace.filter(trace["sent"])["payload_len"].to_list().index(next(
        n for n in trace.filter(trace["sent"])["payload_len"].to_list() if n > 0))
    return [i + non_data for i in spec["drop_data"]]


def objects(r):
    """Every sized connection: [size_bytes, start_s, download_s or None if unfinished, rtt_ms]."""
    f = r.flows.filter(pl.col("size_bytes").is_not_null())
    return [[size, start / 1e9, None if end is None else (end - start) / 1e9, rtt]
            for size, start, end, rtt in f.select("size_bytes", "start_ns", "end_ns", "rtt_ms").iter_rows()]


def flow_count(spec, result):
    """How many flows the per-flow lists cover: the spec's, or a Figure 11 point's bulk flows."""
    return result.flows.height if spec.get("fig11") else len(spec["flows"])


def jain_20s(result, warm_s, end_s):
    """Mean Jain index over the 20 s slices that start at or after max(warm-up, 20 s) and end by
    ``end_s``: the short-term fairness of TAQ Figures 8 and 11, the first slice left out as
    start-up. Flows count in a slice they were alive for; None when no slice fits."""
    slice_ns = round(JAIN_SLICE_S * 1e9)
    per_slice = metrics.jain_per_slice(result.slices, slice_ns=slice_ns, flows=result.flows)
    kept = per_slice.filter(pl.col("start_ns") >= round(max(warm_s, JAIN_SLICE_S) * 1e9),
                            pl.col("start_ns") + slice_ns <= round(end_s * 1e9), pl.col("jain").is_not_null())
    return kept["jain"].mean() if kept.height else None


def timeouts_after(flows, prefix_flows):
    """Each connection's timeouts (data and SYN) after the warm-up, in ``flows``' order: its
    count in the whole run less its count in the prefix run (which stopped at the warm-up).
    A connection the prefix never opened (a web pool opens them all along) keeps its whole
    count; matched by ``flow_id``, not by position, because the prefix has fewer rows."""
    def totals(f):
        return [a + b for a, b in zip(f["timeouts"], f["syn_timeouts"])]

    if prefix_flows is None:
        return totals(flows)
    before = dict(zip(prefix_flows["flow_id"], totals(prefix_flows)))
    return [t - before.get(f, 0) for f, t in zip(flows["flow_id"], totals(flows))]


def run(spec, overrides=None):
    """`overrides`: scenario overrides on top of the aligned settings (diagnose.py's --set)."""
    warm, end = spec["warmup_s"], spec["warmup_s"] + spec["duration_s"]
    drops = forward_indices(spec)
    t0 = time.perf_counter()
    sc, mss = scenario(spec, end, drops)
    r = smallpipe.simulate(sc.with_overrides(overrides or {}))
    # Counters over [warm, end]: the same seed gives the same run up to `warm`, so a run
    # that stops there is the prefix to subtract.
    prefix = smallpipe.simulate(scenario(spec, warm, drops)[0].with_overrides(overrides or {})) if warm > 0 else None
    wall = time.perf_counter() - t0

    def bn(res):
        row = res.links.filter(res.links["name"] == "bottleneck").row(0, named=True)
        return row["arrived_pkts"], row["dropped_pkts"], row["mean_backlog_pkts"]

    arr, drp, q = bn(r)
    timeouts = timeouts_after(r.flows, None if prefix is None else prefix.flows)
    if prefix is not None:
        arr0, drp0, q0 = bn(prefix)
        arr, drp, q = arr - arr0, drp - drp0, (q * end - q0 * warm) / (end - warm)
    sl = r.slices.filter(r.slices["start_ns"] >= int(warm * 1e9)).group_by("flow_id").agg(
        pl.col("bytes").sum())
    per_flow = dict(zip(sl["flow_id"], sl["bytes"]))
    out = {
        "name": spec["name"],
        "simulator": "smallpipe",
        "wall_s": round(wall, 3),
        "mss": mss,
        "arrivals": arr,
        "drops": drp,
        "loss_rate": drp / arr if arr else 0.0,
        "mean_queue_pkts": q,
        "timeouts": timeouts,
        "rx_bytes": [per_flow.get(i, 0) for i in range(flow_count(spec, r))],
        "fct_s": [None if e is None else (e - s) / 1e9 for e, s in zip(r.flows["end_ns"], r.flows["start_ns"])],
        "objects": objects(r),
        # Tail-loss probes of the whole run (Linux's are namespace counters read before and after).
        "loss_probes": int(r.flows["loss_probes"].sum()),
        "connections": r.flows.height,
        "jain_20s": jain_20s(r, warm, end),
    }
    if spec["trace"]:
        t = r.trace
        sent = t.filter(t["sent"])
        out["trace"] = {
            "tx": [[ns / 1e9, s, n, f] for ns, s, n, f in
                   zip(sent["time_ns"], sent["seq"], sent["payload_len"], sent["flags"])],
            "cwnd": [[ns / 1e9, v] for ns, v in zip(t["time_ns"], t["cwnd_bytes"])],
            "ssthresh": [[ns / 1e9, v] for ns, v in zip(t["time_ns"], t["ssthresh_bytes"])],
        }
    return out
