#!/usr/bin/env python3
"""Traces behind the diagnoses of docs/validation.md (not part of the tables).

    python3 benches/validation/diagnose.py noload [SIZE]   # FCT per size on an idle path, both sides;
                                                          # the sender of the SIZE-packet transfer traced
    python3 benches/validation/diagnose.py rto N[,N...] [--ns3-patch P] [--measure-s S]
                                              [--set KEY=VALUE ...] [--smallpipe-only]
        # many-flow RTOs by where they fire, in ns-3 (entries into CA_LOSS from CA_RECOVERY,
        # CA_DISORDER or CA_OPEN, repeats, those sooner than the RTO after the last ACK of
        # new data, impossible under RFC 6298 5.3, and those in CA_RECOVERY sooner than the
        # RTO after entering it, impossible if the fast retransmit restarts the timer; its
        # retransmissions by state) and in smallpipe (flows.timeouts_* columns, loss rate and
        # goodput), smallpipe with each --set applied (e.g. tcp.fast_retransmit_rto=keep)
    python3 benches/validation/diagnose.py linux-causes [--bernoulli-s S] [--many-s S] [--seeds K] [--only V ...]
        # smallpipe alone on the Linux column's specs (means over seeds 1..K) with the Linux behaviours
        # suspected for its rows outside: window growth per segment acknowledged
        # (tcp.cwnd_growth = linux; RFC 3465 byte counting beside it), Linux's RTT estimator
        # and RTO (tcp.rto_rule = linux), its timer restart on resending the head
        # (tcp.recovery_rto = linux), its quick-ACK mode (tcp.ack_rule = linux), PRR
        # (tcp.recovery_pacing = prr), all five; RACK (tcp.loss_detection = rack), alone and
        # with the five; the six with Linux's pacing (tcp.pacing = linux); Linux's RTT sample
        # on every ACK (tcp.rtt_samples = every_ack), alone and with the six; --only NAME ...
        # runs those variants alone
    python3 benches/validation/diagnose.py linux-rto PCAPDIR [--set KEY=VALUE ...]
        # every RTO of the data senders after the warm-up in a testbed capture (run_testbed
        # with pcap=True: box.pcapng, tcp_info.parquet) and in smallpipe's run of the same
        # spec (its bottleneck pcap), sorted as `rto` sorts smallpipe's; then each side's sends
        # by when they leave, its lost retransmissions and how they were repaired (resent
        # before the RTO or by it), and when Linux's late new segments leave
        # (needs `pip install dpkt scapy`)
    python3 benches/validation/diagnose.py linux-late PCAPDIR
        # what releases Linux's late new segments (40 ms or more after the last ACK): ACKs of
        # new data by the time since the sender's previous send and whether a send follows;
        # each late segment's gap since the previous send against Linux's pacing interval
        # (the previous skb's segments x SRTT / (1.2 x in flight), halved after an ACK-driven
        # send by tcp_update_skb_after_send's credit), with SRTT from tcp_info; and how many
        # segments each flow sends before the first one held back (needs dpkt and scapy)
    python3 benches/validation/diagnose.py linux-recoveries PCAPDIR --p P [--set KEY=VALUE ...]
                                                  [--compare KEY=VALUE ...]
        # a testbed capture of one Bernoulli flow (specs.bernoulli(P, seed, ...) run with
        # pcap=True) and smallpipe's run of the same spec: new segments, loss recoveries
        # (fast or by an RTO; from the first retransmission to the recovery point), and the
        # median recovery's segments in flight at entry and exit, length, resent and new
        # segments; smallpipe with --set and then with each --compare added
    python3 benches/validation/diagnose.py fig11-growth [--fair-share-bps B] [--seeds K]
        # the TAQ Figure 11 testbed points at B bit/s per flow (default 10 kbit/s; reno, TAQ
        # and DropTail, 600 kbit/s and 1 Mbit/s, 60 s, seeds 1..K) in smallpipe with each
        # window-growth rule, and Linux's growth with its RTO
    python3 benches/validation/diagnose.py box-sojourn PCAPDIR [PCAPDIR ...] [--warm-s S]
        # how long each data segment spent in the testbed box (queue, transmission and the
        # emulated delays; each transmission told apart by its IP ID), the segments it dropped
        # and how many were resends, and each flow's longest stay
    python3 benches/validation/diagnose.py fig11-spurious PCAPDIR [--set KEY=VALUE ...] [--compare KEY=VALUE ...]
        # a testbed capture of one TAQ Figure 11 point (run_testbed with pcap=True) beside
        # smallpipe's run of its scenario with the same congestion control: data segments
        # offered to the bottleneck after the warm-up, the share dropped, deliveries of a
        # segment already delivered (spurious resends that got through), timeouts over the
        # run, the bottleneck's queueing delay (p50 / p99 / max, mean backlog) and the flows
        # in each TAQ state at the slice ends; smallpipe with --set and then with each
        # --compare added (needs dpkt and scapy)
    python3 benches/validation/diagnose.py fig11-knobs --out CSV
        # Figure 11's full set on Linux (TAQ: the rows run after the TAQ fix) beside the
        # simulator with Linux's decrease (tcp.ssthresh_from = cwnd), then also its RTO
        # (tcp.rto_rule = linux), then also its RTT sample on every ACK (tcp.rtt_samples =
        # every_ack): one row per point and knob set, and per discipline the mean Jain gap
        # and the median simulator/Linux ratios of timeouts and loss
    python3 benches/validation/diagnose.py web-spread [--seeds K] [--seconds S] [--linux RUNS.jsonl]
        # the web-pool rows of objects of 100 KB and more: smallpipe's median and p90 over K seeds
        # (how far one seed's dozen objects move them) and the time per byte on both sides,
        # against Linux's recorded run
    python3 benches/validation/diagnose.py web-buckets [--seeds K] [--pool P] [--seconds S]
                                             [--set KEY=VALUE ...] [--linux RUNS.jsonl]
        # every web bucket's median and p90 in smallpipe (with the overrides) over groups of P
        # seeds, as min / median / max across the groups, against Linux's first P seeds pooled
    python3 benches/validation/diagnose.py web-timeouts --dir DIR [--congestion CC] [--seed K] [--set KEY=VALUE ...]
        # the web pool's timeouts per connection opened after the warm-up, the handshake's
        # (Linux: the SYN-ACK's, tcpi_total_rto at accept) and the data's, by object size, on
        # Linux (a testbed run into DIR, as root, or the one already there) and in smallpipe
    python3 benches/validation/diagnose.py timer-wheel --dir DIR [--congestion CC] [--flows N] [--seed K]
                                             [--compare KEY=VALUE ...]
        # the many-flow dumbbell's starved connections: drop shares of first sends and resends
        # entering the bottleneck alone or within 100 us of another connection's, on Linux (a
        # testbed run with the box's capture into DIR, as root, or the one already there) and
        # in smallpipe, without and with each override; the starved Linux connections' resends
    python3 benches/validation/diagnose.py matrix-set --set KEY=VALUE [--only SECTION] [--congestion CC ...]
                                            [--csv PATH]
        # a Linux matrix section's rows with smallpipe run without and with the overrides (on
        # top of the matrix's), against the Linux runs recorded in docs/validation (no testbed),
        # and how many rows are within; --csv writes the rows with the provenance columns
    python3 benches/validation/diagnose.py fct-split RUNS.jsonl [RUNS.jsonl ...]
        # per size, the short transfers that took over 1 s longer than on an idle path (an RTO
        # or a SYN retry: both wait at least 1 s), from run.py's raw results
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import specs

RTO_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/applications-module.h"
namespace spdiag {
using namespace ns3;
static double g_warm = 0;
static std::vector<double> g_lastNewAck;
static std::vector<int> g_state;
uint64_t nRto = 0, nLossEntries = 0, nFromRecovery = 0, nFromDisorder = 0, nEarly = 0, nRecoveryEntries = 0;
uint64_t nEarlyRecovery = 0, nEarlyDisorder = 0, nRetx = 0, nRetxRecovery = 0, nRetxLoss = 0;
static std::vector<SequenceNumber32> g_highEnd;
static std::vector<double> g_recoveryEntry;
uint64_t nSoonAfterEntry = 0;
static bool Counting() { return Simulator::Now().GetSeconds() >= g_warm; }
static void OnAck(uint32_t i, SequenceNumber32 o, SequenceNumber32 n)
{
    if (n > o) g_lastNewAck[i] = Simulator::Now().GetSeconds();
}
static void OnState(uint32_t i, TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n)
{
    g_state[i] = n;
    if (n == TcpSocketState::CA_RECOVERY) g_recoveryEntry[i] = Simulator::Now().GetSeconds();
    if (Counting() && n == TcpSocketState::CA_LOSS) {
        ++nLossEntries;
        if (o == TcpSocketState::CA_RECOVERY) ++nFromRecovery;
        if (o == TcpSocketState::CA_DISORDER) ++nFromDisorder;
    }
    if (Counting() && n == TcpSocketState::CA_RECOVERY) ++nRecoveryEntries;
}
static void OnRto(uint32_t i, Time o, Time n)
{
    // ReTxTimeout doubles m_rto; a timer restarted on every ACK of new data (RFC 6298 5.3)
    // cannot expire sooner than the old RTO after the last one.
    if (!Counting() || !o.IsStrictlyPositive() || n.GetNanoSeconds() != 2 * o.GetNanoSeconds()) return;
    ++nRto;
    // ReTxTimeout doubles m_rto before it enters CA_LOSS: g_state is the state the RTO left.
    if (Simulator::Now().GetSeconds() - g_lastNewAck[i] < o.GetSeconds() - 1e-6) {
        ++nEarly;
        if (g_state[i] == TcpSocketState::CA_RECOVERY) ++nEarlyRecovery;
        if (g_state[i] == TcpSocketState::CA_DISORDER) ++nEarlyDisorder;
    }
    // A timer restarted by the fast retransmit cannot expire sooner than the RTO after it.
    if (g_state[i] == TcpSocketState::CA_RECOVERY && Simulator::Now().GetSeconds() - g_recoveryEntry[i] < o.GetSeconds() - 1e-6)
        ++nSoonAfterEntry;
}
// Data segments starting below the highest end sent so far are retransmissions; counted by
// the congestion state they left in.
static void OnTx(uint32_t i, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() == 0) return;
    SequenceNumber32 end = h.GetSequenceNumber() + p->GetSize();
    if (Counting() && h.GetSequenceNumber() < g_highEnd[i]) {
        ++nRetx;
        if (g_state[i] == TcpSocketState::CA_RECOVERY) ++nRetxRecovery;
        if (g_state[i] == TcpSocketState::CA_LOSS) ++nRetxLoss;
    }
    if (end > g_highEnd[i]) g_highEnd[i] = end;
}
static void Hook(Ptr<Application> app, uint32_t i)
{
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("HighestRxAck", MakeBoundCallback(&OnAck, i));
    s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnState, i));
    s->TraceConnectWithoutContext("RTO", MakeBoundCallback(&OnRto, i));
    s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnTx, i));
    g_highEnd[i] = DynamicCast<TcpSocketBase>(s)->GetTxBuffer()->HeadSequence();
}
void Schedule(Ptr<Application> app, uint32_t i, double at)
{
    if (g_lastNewAck.size() <= i) g_lastNewAck.resize(i + 1, 0);
    if (g_state.size() <= i) g_state.resize(i + 1, TcpSocketState::CA_OPEN);
    if (g_highEnd.size() <= i) g_highEnd.resize(i + 1);
    if (g_recoveryEntry.size() <= i) g_recoveryEntry.resize(i + 1, 0);
    Simulator::Schedule(Seconds(at), &Hook, app, i);
}
void Reset(double warm)
{
    g_warm = warm;
    g_lastNewAck.clear();
    g_state.clear();
    g_highEnd.clear();
    g_recoveryEntry.clear();
    nRto = nLossEntries = nFromRecovery = nFromDisorder = nEarly = nRecoveryEntries = 0;
    nEarlyRecovery = nEarlyDisorder = nRetx = nRetxRecovery = nRetxLoss = nSoonAfterEntry = 0;
}
}
"""


def smallpipe_rtos(spec, overrides):
    """smallpipe's RTOs and fast retransmits over [warm-up, end] of a many-flow spec, by where
    they fired: the run to the warm-up's end is the same run cut short (deterministic)."""
    import polars as pl
    import smallpipe
    import sp_side

    cols = ("timeouts", "timeouts_in_recovery", "timeouts_after_dupacks", "timeouts_repeated", "fast_retransmits",
            "retransmits")
    totals = []
    for end in (spec["warmup_s"], spec["warmup_s"] + spec["duration_s"]):
        sc, _ = sp_side.scenario(spec, end)
        totals.append(smallpipe.simulate(sc.with_overrides(overrides)).flows.select(pl.col(c).sum() for c in cols).row(0))
    return dict(zip(cols, (b - a for a, b in zip(*totals))))


def rto(args):
    overrides = dict(parse_set(kv) for kv in args.set)
    if args.smallpipe_only:
        for n in args.n:
            for seed in range(1, args.seeds + 1):
                print_smallpipe_rtos(n, seed, specs.many(n, seed, duration_s=args.measure_s), overrides)
        return
    import ns3_side

    ns = ns3_side.load_ns3()
    ns.cppyy.cppdef(RTO_CPP)
    d, val = ns.cppyy.gbl.spdiag, ns.cppyy.gbl.spval
    hook = val.ScheduleHook

    def both(app, i, traced, inflated, at):
        hook(app, i, traced, inflated, at)
        d.Schedule(app, i, at + 1e-6)

    val.ScheduleHook = both
    for n in args.n:
        for seed in range(1, args.seeds + 1):
            spec = specs.many(n, seed, duration_s=args.measure_s)
            spec["tcp"]["ns3_patch"] = args.ns3_patch
            d.Reset(spec["warmup_s"])
            r = ns3_side.run(ns, spec)
            print(f"N = {n}, seed {seed}, ns-3 patch {args.ns3_patch}: {sum(r['timeouts']) / n:.2f} timeouts per flow; "
                  f"{int(d.nRto)} RTOs; {int(d.nLossEntries)} entries into CA_LOSS, {int(d.nFromRecovery)} of them "
                  f"from CA_RECOVERY, {int(d.nFromDisorder)} from CA_DISORDER; {int(d.nEarly)} RTOs sooner than the RTO after the last ACK of new data "
                  f"({int(d.nEarlyRecovery)} in CA_RECOVERY, {int(d.nEarlyDisorder)} in CA_DISORDER); "
                  f"{int(d.nRecoveryEntries)} entries into fast recovery; {int(d.nSoonAfterEntry)} RTOs in CA_RECOVERY "
                  f"sooner than the RTO after entering it; {int(d.nRetx)} retransmissions, "
                  f"{int(d.nRetxRecovery)} in CA_RECOVERY, {int(d.nRetxLoss)} in CA_LOSS",
                  flush=True)
            print_smallpipe_rtos(n, seed, spec, overrides)


def parse_set(kv):
    key, _, value = kv.partition("=")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value  # a bare string such as ns3


def print_smallpipe_rtos(n, seed, spec, overrides):
    import sp_side

    sp = smallpipe_rtos(spec, overrides)
    r = sp_side.run(spec, overrides)
    rows = (f"loss rate {r['loss_rate']:.4f}, mean queue {r['mean_queue_pkts']:.1f} packets, "
            f"goodput {sum(r['rx_bytes']) * 8 / spec['duration_s'] / 1e3:.1f} kbit/s")
    print(f"N = {n}, seed {seed}, smallpipe {overrides or ''}: {sp['timeouts'] / n:.2f} timeouts per flow; "
          f"{sp['timeouts']} RTOs; {sp['timeouts_in_recovery']} in fast recovery, {sp['timeouts_after_dupacks']} "
          f"after duplicate ACKs without fast retransmit, {sp['timeouts_repeated']} repeated, "
          f"{sp['timeouts'] - sp['timeouts_in_recovery'] - sp['timeouts_after_dupacks'] - sp['timeouts_repeated']} "
          f"with no duplicate ACK; {sp['fast_retransmits']} entries into fast recovery; {sp['retransmits']} retransmissions; "
          f"{rows}", flush=True)


def noload(args):
    import sp_side

    flows = [{"start_s": 1.0 + 10 * i, "rtt_ms": 200.0, "size_pkts": s} for i, s in enumerate(specs.FCT_SIZES)]
    spec = specs.base("noload", 1, flows=flows, duration_s=10 * len(flows) + 5, trace=True,
                      trace_flow=specs.FCT_SIZES.index(args.size))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([spec], f)
    out = subprocess.run([sys.executable, str(HERE / "ns3_side.py"), f.name], capture_output=True, text=True,
                         check=True).stdout
    results = (("ns-3", json.loads(out.splitlines()[0])), ("smallpipe", sp_side.run(spec)))
    for k, size in enumerate(specs.FCT_SIZES):
        print(f"{size:3d} packets: FCT ns-3 {results[0][1]['fct_s'][k]:.4f} s, smallpipe {results[1][1]['fct_s'][k]:.4f} s")
    for name, r in results:
        print(f"{name}, the {args.size}-packet sender (time s, seq, payload bytes, flags):")
        for t, seq, n, fl in r["trace"]["tx"]:
            print(f"  {t:.4f} {seq} {n} {fl:#04x}")


def fct_split(args):
    # FCT of each size on an idle path (diagnose.py noload; the same on both sides to 0.5 ms).
    idle_s = {1: 0.305, 2: 0.309, 5: 0.510, 10: 0.714, 20: 0.927, 50: 1.336, 100: 1.633}
    for path in args.runs:
        fcts = {}
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if not r["name"].startswith("fct "):
                    continue
                spec = specs.fct(int(r["name"].split("=")[1]), args.reps)
                for flow, t in zip(spec["flows"], r["fct_s"]):
                    if flow["size_pkts"] and t is not None:
                        fcts.setdefault((r["simulator"], flow["size_pkts"]), []).append(t)
        for (sim, size), ts in sorted(fcts.items()):
            slow = sum(t > idle_s[size] + 1.0 for t in ts)
            print(f"{path}: {sim}, {size} packets: {slow} of {len(ts)} over idle + 1 s")


def linux_causes(args):
    from sp_side import run

    growth, rto = {"tcp.cwnd_growth": "linux"}, {"tcp.rto_rule": "linux"}
    head, quick, prr = {"tcp.recovery_rto": "linux"}, {"tcp.ack_rule": "linux"}, {"tcp.recovery_pacing": "prr"}
    rack, every_ack = {"tcp.loss_detection": "rack"}, {"tcp.rtt_samples": "every_ack"}
    all_five = growth | rto | head | quick | prr
    variants = [("as run", {}), ("Linux growth", growth), ("RFC 3465 L = 2", {"tcp.cwnd_growth": "byte_counting"}),
                ("Linux RTO", rto), ("Linux growth + RTO", growth | rto), ("Linux head restart", head),
                ("Linux quick ACKs", quick), ("PRR", prr), ("all five Linux", all_five), ("RACK", rack),
                ("all five + RACK", all_five | rack), ("all six + pacing", all_five | rack | {"tcp.pacing": "linux"}),
                ("RTT on every ACK", every_ack), ("all six + RTT on every ACK", all_five | rack | every_ack)]
    if args.only:
        unknown = set(args.only) - {name for name, _ in variants}
        if unknown:
            raise SystemExit(f"--only: {sorted(unknown)} not known; expected some of {[n for n, _ in variants]}")
        variants = [(name, o) for name, o in variants if name in args.only]
    seeds = range(1, args.seeds + 1)

    def mean(values):
        return sum(values) / len(values)

    for p in specs.LOSS_RATES:
        cells = []
        for name, o in variants:
            goodput = [sum(run(spec, o)["rx_bytes"]) * 8 / spec["duration_s"] / 1e3
                       for spec in (specs.bernoulli(p, s, args.bernoulli_s) for s in seeds)]
            cells.append(f"{name}: {mean(goodput):.1f} kbit/s")
        print(f"p = {p}: " + "; ".join(cells), flush=True)
    for n in (10, 50, 100):
        cells = []
        for name, o in variants:
            rs = [run(specs.many(n, s, duration_s=args.many_s), o) for s in seeds]
            cells.append(f"{name}: loss {mean([r['loss_rate'] for r in rs]):.4f}, "
                         f"queue {mean([r['mean_queue_pkts'] for r in rs]):.1f}, "
                         f"timeouts/flow {mean([sum(r['timeouts']) / n for r in rs]):.2f}")
        print(f"N = {n}: " + " | ".join(cells), flush=True)


def web_spread(args):
    """Is the ≥ 100 KB web row's gap more than which dozen objects one seed draws?"""
    import numpy as np
    import sp_side
    from run import counted_objects, lower_quantile

    def big(objects, spec):
        return counted_objects(objects, spec, 100_000, float("inf"))

    def stats(sample):
        times = [t for _, t in sample]
        per_100kb = [t / size * 1e5 for size, t in sample]
        return {"n": len(sample), "median_s": lower_quantile(times, 0.5), "p90_s": lower_quantile(times, 0.9),
                "median_size_kb": float(np.median([s for s, _ in sample])) / 1e3,
                "median_s_per_100kb": lower_quantile(per_100kb, 0.5)}

    rows = []
    for seed in range(1, args.seeds + 1):
        spec = specs.web(seed, duration_s=args.seconds)
        rows.append(stats(big(sp_side.run(spec)["objects"], spec)))
        print(f"smallpipe seed {seed}: " + ", ".join(f"{k} {v:.3g}" for k, v in rows[-1].items()), flush=True)
    for key in ("median_s", "p90_s", "median_s_per_100kb"):
        v = np.asarray([r[key] for r in rows])
        print(f"smallpipe over {len(v)} seeds, {key}: min {v.min():.3g}, median {np.median(v):.3g}, max {v.max():.3g}")
    for line in Path(args.linux).read_text().splitlines():
        r = json.loads(line)
        if r["name"].startswith("web") and r["simulator"] == "linux":
            seed = int(r["name"].split("seed=")[1])
            linux = stats(big(r["objects"], specs.web(seed, duration_s=args.seconds)))
            print(f"linux seed {seed}: " + ", ".join(f"{k} {v:.3g}" for k, v in linux.items()))


def web_buckets(args):
    """Every web bucket's median and p90 over groups of `--pool` seeds (as run.py --linux
    pools its seeds), with `--set`'s overrides: how far the grouping alone moves them."""
    import itertools

    import numpy as np
    import sp_side
    from run import counted_objects, lower_quantile
    from smallpipe.experiments.taq_fig12 import BUCKET_EDGES_BYTES

    edges = [*BUCKET_EDGES_BYTES, float("inf")]

    def buckets(runs):
        """(median, p90) per bucket of the objects of `runs`, pairs of (result, spec)."""
        out = []
        for lo, hi in itertools.pairwise(edges):
            times = [t for r, spec in runs for _, t in counted_objects(r["objects"], spec, lo, hi)]
            out.append((lower_quantile(times, 0.5), lower_quantile(times, 0.9)))
        return out

    overrides = dict(parse_set(kv) for kv in args.set)
    web_specs = [specs.web(seed, duration_s=args.seconds) for seed in range(1, args.seeds + 1)]
    runs = [(sp_side.run(spec, overrides), spec) for spec in web_specs]
    groups = [buckets(runs[i:i + args.pool]) for i in range(0, len(runs) - args.pool + 1, args.pool)]
    linux = {}
    for line in Path(args.linux).read_text().splitlines():
        r = json.loads(line)
        if r["name"].startswith("web") and r["simulator"] == "linux":
            linux[r["name"]] = r
    pooled = [(linux[spec["name"]], spec) for spec in web_specs[:args.pool] if spec["name"] in linux]
    linux_buckets = buckets(pooled) if pooled else None
    print(f"smallpipe {overrides or ''}: {len(groups)} groups of {args.pool} seeds; Linux: seeds 1-{len(pooled)} pooled")
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        cells = []
        for q, name in ((0, "median"), (1, "p90")):
            v = np.asarray([g[i][q] for g in groups])
            lx = f", Linux {linux_buckets[i][q]:.2f}" if linux_buckets else ""
            cells.append(f"{name} min {v.min():.2f}, median {np.median(v):.2f}, max {v.max():.2f}{lx}")
        label = f"{lo / 1e3:g}-{hi / 1e3:g} KB" if hi != float("inf") else f">= {lo / 1e3:g} KB"
        print(f"{label}: " + "; ".join(cells))


def capture_points(path):
    """(point, time s, IP packet) of each TCP packet of a capture: the testbed box's pcapng
    (its points a_in, b_out, b_in, a_out) or a smallpipe bottleneck pcap (one point)."""
    import dpkt

    def tcp(frame):
        ip = dpkt.ethernet.Ethernet(frame).data
        return ip if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP) else None

    if path.suffix == ".pcapng":
        # dpkt's pcapng reader drops the interface each packet was captured on.
        from scapy.utils import RawPcapNgReader

        for frame, meta in RawPcapNgReader(str(path)):
            if (ip := tcp(frame)) is not None:
                yield meta.ifname.decode(), ((meta.tshigh << 32) | meta.tslow) / meta.tsresol, ip
    else:
        with open(path, "rb") as f:
            for t, frame in dpkt.pcap.Reader(f):
                if (ip := tcp(frame)) is not None:
                    yield "", float(t), ip


def tcp_options(seg):
    """(SACK blocks, TSval) of a segment."""
    import dpkt

    sack, tsval = [], None
    for kind, val in dpkt.tcp.parse_opts(seg.opts):
        if kind == dpkt.tcp.TCP_OPT_SACK:
            sack = [(int.from_bytes(val[i:i + 4], "big"), int.from_bytes(val[i + 4:i + 8], "big"))
                    for i in range(0, len(val), 8)]
        elif kind == dpkt.tcp.TCP_OPT_TIMESTAMP:
            tsval = int.from_bytes(val[:4], "big")
    return sack, tsval


def payload_len(ip):
    """From the IP header: a smallpipe pcap keeps only the first bytes of each frame."""
    return ip.len - 4 * ip.hl - 4 * ip.data.off


def sender_view(sent, delivered, acks):
    """Each data sender's events in its own time order: ("tx", t, seq, len, dropped) and
    ("ack", t, ack, sack blocks). `sent`, `delivered`, `acks`: iterables of (t, IP packet)
    at the point next to the sender, past the bottleneck, and the ACKs as the sender gets
    them; a transmission was dropped if no packet past the bottleneck has its seq and TSval."""
    def key(ip):
        return ip.src, ip.data.sport, ip.dst, ip.data.dport

    got = {key(ip) + (ip.data.seq, tcp_options(ip.data)[1]) for _, ip in delivered if payload_len(ip)}
    flows = {}
    for t, ip in sent:
        if n := payload_len(ip):
            dropped = key(ip) + (ip.data.seq, tcp_options(ip.data)[1]) not in got
            flows.setdefault(key(ip), []).append(("tx", t, ip.data.seq, n, dropped))
    for t, ip in acks:
        seg, flow = ip.data, (ip.dst, ip.data.dport, ip.src, ip.data.sport)
        if flow in flows and not payload_len(ip) and seg.flags & 0x10 and not seg.flags & 0x02:
            flows[flow].append(("ack", t, seg.ack, tcp_options(seg)[0]))
    for events in flows.values():
        events.sort(key=lambda e: e[1])
    return flows


# An RTO resends the lowest unacknowledged segment at least the minimum RTO (1 s here) after
# the last ACK of new data and the last send of that segment; a fast or RACK retransmission
# comes within about an RTT (at most 0.6 s here) of the ACK that triggers it.
RTO_GAP_S = 0.9


def sender_rtos(events, warm_s):
    """One sender's RTOs after `warm_s`, by the state they fire in (as smallpipe's
    flows.timeouts_* columns: repeated = no new data acknowledged since the last RTO; in fast
    recovery; after duplicate ACKs; none), with "after RTO, some acknowledged" for one in
    RTO recovery after new data was acknowledged; each lost retransmission (the state it
    was sent in, how it was resent: "before the RTO" or "by the RTO", or "not resent"); and
    each data segment sent (state, new or resent, when: see `send_timing`, dropped, when its
    burst's first segment went)."""
    isn = next(e[2] for e in events if e[0] == "tx") - 1
    una = smax = 1
    last_progress = head_sent = 0.0
    state, recovery_point, rto_una, dupacks = "open", 0, None, 0
    rtos, lost, sends = [], [], []
    last_ack = last_send = burst_start = None
    pending = {}  # seq -> (state, t) of its lost retransmission awaiting a resend
    for e in events:
        if e[0] == "ack":
            last_ack = e[1]
            ack = (e[2] - isn) % (1 << 32)
            if una < ack <= smax:
                una, last_progress, dupacks = ack, e[1], 0
                if state != "open" and una >= recovery_point:
                    state = "open"
                for seq in [s for s in pending if s < una]:
                    lost.append(pending.pop(seq) + ("not resent",))
            elif ack == una < smax and e[3]:
                dupacks += 1
            continue
        _, t, wire_seq, length, dropped = e
        seq = (wire_seq - isn) % (1 << 32)
        resend = seq < smax
        is_rto = resend and seq == una and t - max(last_progress, head_sent) >= RTO_GAP_S
        if seq in pending:
            lost.append(pending.pop(seq) + ("by the RTO" if is_rto else "before the RTO",))
        if is_rto:
            if t >= warm_s:
                cause = ("repeated" if rto_una == una else "in fast recovery" if state == "recovery"
                         else "after RTO, some acknowledged" if state == "loss"
                         else "after duplicate ACKs" if dupacks else "no duplicate ACK")
                rtos.append((t, cause))
            state, recovery_point, rto_una = "loss", smax, una
        elif resend and state == "open":
            state, recovery_point = "recovery", smax
        timing = send_timing(t, last_ack, last_send)
        if timing != "behind another":
            burst_start = timing
        if t >= warm_s:
            sends.append((state, "resent" if resend else "new", timing, dropped, burst_start))
            if resend and dropped:
                pending[seq] = (state, t)
        last_send = t
        if seq == una:
            head_sent = t
        smax = max(smax, seq + length)
    return rtos, lost, sends


def send_timing(t, last_ack, last_send):
    """A send "behind another" (within 0.1 ms of the sender's previous one: one burst),
    "on an ACK" (within 5 ms of the last ACK), "later" (40 ms or more after it), or "other"."""
    if last_send is not None and t - last_send < 1e-4:
        return "behind another"
    if last_ack is None or t - last_ack < 5e-3:
        return "on an ACK"
    return "later" if t - last_ack >= 0.04 else "other"


def rto_table(name, flows, warm_s):
    from collections import Counter

    causes, fates, sends = Counter(), Counter(), Counter()
    for events in flows.values():
        rtos, lost, sent = sender_rtos(events, warm_s)
        causes.update(c for _, c in rtos)
        fates.update((s, how) for s, _, how in lost)
        sends.update(sent)
    n = sum(causes.values())
    print(f"{name}: {n} RTOs after {warm_s:g} s ({n / len(flows):.2f} per flow): "
          + ", ".join(f"{c} {k}" for c, k in causes.most_common()))
    for kind in ("new", "resent"):
        cells = []
        for when in ("on an ACK", "behind another", "later", "other"):
            k = sum(v for (_, w, tm, _, _), v in sends.items() if (w, tm) == (kind, when))
            dropped = sum(v for (_, w, tm, d, _), v in sends.items() if (w, tm, d) == (kind, when, True))
            cells.append(f"{when} {k} ({dropped / max(k, 1):.1%} dropped)")
        print(f"  {kind} segments sent: " + ", ".join(cells))
    behind = Counter()
    for (_, _, tm, _, first), v in sends.items():
        if tm == "behind another":
            behind[first] += v
    print("  segments behind another, by when their burst began: " + ", ".join(f"{w} {k}" for w, k in behind.most_common()))
    for state in ("recovery", "loss", "open"):
        k = sum(v for (s, w, _, _, _), v in sends.items() if (s, w) == (state, "resent"))
        if k:
            dropped = sum(v for (s, w, _, d, _), v in sends.items() if (s, w, d) == (state, "resent", True))
            print(f"  retransmissions in {state}: {k}, {dropped} dropped")
        row = {how: k for (s, how), k in fates.items() if s == state}
        if row:
            print(f"  lost retransmissions sent in {state}: {sum(row.values())}; "
                  + ", ".join(f"{how} {k}" for how, k in sorted(row.items())))


def late_send_gaps(flows, warm_s):
    """Linux's new segments sent 40 ms or more after the last ACK: how long after the sender's
    previous send, in 10 ms bins (a pacing rate spreads these; a timer stacks them up)."""
    from collections import Counter

    bins = Counter()
    for events in flows.values():
        isn = next(e[2] for e in events if e[0] == "tx") - 1
        last_ack = last_send = None
        smax = 0
        for e in events:
            if e[0] == "ack":
                last_ack = e[1]
                continue
            seq = (e[2] - isn) % (1 << 32)
            if e[1] >= warm_s and seq >= smax and send_timing(e[1], last_ack, last_send) == "later":
                bins[int((e[1] - last_send) * 100)] += 1
            smax, last_send = max(smax, seq + e[3]), e[1]
    return bins


def testbed_senders(d):
    """`sender_view` of a testbed capture directory's box.pcapng. The testbed's data senders
    are the servers, on side b: they send into b_in, the clients' ACKs leave the box at
    b_out (after the box's per-client delay)."""
    by_point = box_points(d)
    return sender_view(by_point["b_in"], by_point["a_out"], by_point["b_out"])


def box_points(d):
    """A testbed capture directory's box.pcapng as {point: [(time s, IP packet)]}."""
    by_point = {}
    for point, t, ip in capture_points(d / "box.pcapng"):
        by_point.setdefault(point, []).append((t, ip))
    return by_point


def box_transits(by_point):
    """Each data segment that entered the testbed box from the servers (b_in): its flow
    (5-tuple), when it entered, when it left towards the clients (a_out) or None if the box
    dropped it (or still held it at the end), and whether it was a resend. A transmission is
    told from its copies by its IP ID, which Linux changes on every send."""
    def key(ip):
        return ip.src, ip.data.sport, ip.dst, ip.data.dport, ip.data.seq, ip.id, payload_len(ip)

    left = {key(ip): t for t, ip in by_point["a_out"] if payload_len(ip)}
    first_seq, smax, transits = {}, {}, []  # per flow: its first sequence number, highest sent
    for t, ip in by_point["b_in"]:
        if n := payload_len(ip):
            k = key(ip)
            flow = k[:4]
            seq = (ip.data.seq - first_seq.setdefault(flow, ip.data.seq)) % (1 << 32)
            transits.append((flow, t, left.get(k), seq < smax.get(flow, 0)))
            smax[flow] = max(smax.get(flow, 0), seq + n)
    return transits


def box_sojourn(args):
    import numpy as np

    for d in map(Path, args.pcapdirs):
        by_point = box_points(d)
        transits = [x for x in box_transits(by_point) if x[1] >= args.warm_s]
        end = max(t for t, _ in by_point["b_in"])
        kept = [x for x in transits if x[2] is not None or x[1] < end - args.tail_s]
        ms = np.array([1e3 * (t_out - t_in) for _, t_in, t_out, _ in kept if t_out is not None])
        dropped = [x for x in kept if x[2] is None]
        per_flow = {}
        for flow, t_in, t_out, _ in kept:
            if t_out is not None:
                per_flow[flow] = max(per_flow.get(flow, 0.0), 1e3 * (t_out - t_in))
        print(f"{d}: {len(kept)} data segments in after {args.warm_s:g} s (the last {args.tail_s:g} s left out), "
              f"{len(dropped)} dropped, {sum(x[3] for x in dropped)} of them resends; time in the box p50 / p99 / max "
              f"{np.percentile(ms, 50):.0f} / {np.percentile(ms, 99):.0f} / {ms.max():.0f} ms; "
              f"{int((ms > args.long_ms).sum())} segments over {args.long_ms:g} ms; each flow's longest: "
              + ", ".join(f"{v:.0f}" for v in sorted(per_flow.values())) + " ms")


def spurious_row(name, sent, delivered, warm_s, timeouts, link, states):
    """One line of `fig11-spurious`: segments are told apart by (sender, port, seq) only, so
    a resend whose first copy was dropped is not a duplicate, and one whose first copy got
    through is."""
    from collections import Counter

    def key(ip):
        return ip.src, ip.data.sport, ip.data.seq

    offered = Counter(key(ip) for t, ip in sent if t >= warm_s and payload_len(ip))
    got = Counter(key(ip) for t, ip in delivered if t >= warm_s and payload_len(ip))
    n_sent, n_got = sum(offered.values()), sum(got.values())
    mean_states = ", ".join(f"{c.removeprefix('flows_')} {states[c].mean():.1f}"
                            for c in states.columns if c.startswith("flows_"))
    print(f"{name}: after {warm_s:g} s {n_sent} data segments offered, {(n_sent - n_got) / n_sent:.3f} dropped, "
          f"{n_got - len(got)} duplicate deliveries; {timeouts} timeouts over the run; queueing delay p50 / p99 / max "
          f"{link['queue_delay_p50_ms']:.0f} / {link['queue_delay_p99_ms']:.0f} / {link['queue_delay_max_ms']:.0f} ms, "
          f"mean backlog {link['mean_backlog_pkts']:.1f} packets; flows per TAQ state at the slice ends: {mean_states}",
          flush=True)


def fig11_spurious(args):
    import polars as pl
    import smallpipe

    d = Path(args.pcapdir)
    scenario = smallpipe.Scenario.from_dict(json.loads((d / "scenario.json").read_text()))
    congestion = json.loads((d / "plan.json").read_text())["congestion_control"][0]
    by_point = box_points(d)
    link = pl.read_csv(d / "box" / "links.csv").filter(pl.col("direction") == "b_to_a").row(0, named=True)
    states = pl.read_csv(d / "box" / "queue_states.csv").filter(pl.col("direction") == "b_to_a")
    info = pl.read_parquet(d / "tcp_info.parquet")
    timeouts = info.group_by("flow_id").agg(pl.col("total_rto").last())["total_rto"].sum()
    spurious_row(f"Linux {congestion}", by_point["b_in"], by_point["a_out"], args.warm_s, timeouts, link, states)
    base = {"tcp.congestion": congestion} | dict(parse_set(kv) for kv in args.set)
    for extra in [None, *args.compare]:
        overrides = base | (dict([parse_set(extra)]) if extra else {})
        runs, result = bottleneck_captures(scenario.with_overrides(overrides))
        bottleneck = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
        spurious_row(f"smallpipe {overrides}", runs["arrivals"], runs["departures"], args.warm_s,
                     result.flows["timeouts"].sum(), bottleneck, result.queue_states)


def testbed_flow_ids(d, flows):
    """The testbed flow id (tcp_info's flow_id) of each of `flows`' keys. A unit's client
    address is 198.18.0.(unit + 1) (its place in the plan's client_addrs)."""
    unit_flow = {f["unit_id"]: f["flow_id"] for f in json.loads((d / "server.json").read_text())["flows"]}
    return {key: unit_flow[key[2][3] - 1] for key in flows}


def linux_rto(args):
    import polars as pl

    d = Path(args.pcapdir)
    flows = testbed_senders(d)
    sc = json.loads((d / "scenario.json").read_text())
    spec = specs.many(len(flows), sc["seed"], duration_s=sc["duration_s"] - args.warm_s, warmup_s=args.warm_s)
    info = pl.read_parquet(d / "tcp_info.parquet")
    warm_slice = info.filter(pl.col("time_ns") <= args.warm_s * 1e9)["slice"].max()
    # A flow still opening at the warm-up's end (a SYN lost) has no sample there: 0 RTOs then.
    per_flow = dict(info.group_by("flow_id").agg(pl.col("total_rto").last() - pl.col("total_rto").filter(
        pl.col("slice") == warm_slice).first().fill_null(0)).iter_rows())
    flow_of = testbed_flow_ids(d, flows)
    same = sum(len(sender_rtos(ev, args.warm_s)[0]) == per_flow[flow_of[key]] for key, ev in flows.items())
    print(f"Linux tcp_info: {sum(per_flow.values())} RTOs after the sample at {warm_slice + 1} s; "
          f"the capture finds each flow's count for {same} of {len(flows)} flows")
    rto_table("Linux capture", flows, args.warm_s)
    bins = late_send_gaps(flows, args.warm_s)
    print("  new segments 40 ms or more after the last ACK, by the time since the sender's previous send: "
          + ", ".join(f"{10 * b}-{10 * b + 10} ms {k}" for b, k in sorted(bins.items()) if k >= 0.02 * sum(bins.values())))
    overrides = dict(parse_set(kv) for kv in args.set)
    rto_table(f"smallpipe {overrides or ''}", smallpipe_senders(spec, overrides), args.warm_s)


def bottleneck_captures(scenario):
    """smallpipe's bottleneck pcaps of `scenario`, one run per point: {"arrivals": [(time s,
    IP packet)], "departures": [...]}, and the second run's result (the two runs differ in
    their trace only)."""
    import smallpipe

    runs, result = {}, None
    for point in ("arrivals", "departures"):
        result = smallpipe.simulate(scenario.with_overrides({"trace": {"pcap": point, "max_pcap_bytes": 1 << 30}}))
        with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
            f.write(result.pcap)
            f.flush()
            runs[point] = [(t, ip) for _, t, ip in capture_points(Path(f.name))]
    return runs, result


def smallpipe_senders(spec, overrides):
    """`sender_view` of smallpipe's run of `spec`, from its bottleneck pcaps. The pcap sees the
    bottleneck, not the senders: they are `access` (the rest of the RTT, all on their side)
    before it and get an ACK that far after it leaves. Bernoulli loss strikes after the
    departure point, so a transmission lost that way counts as delivered here."""
    import sp_side

    access_s = spec["flows"][0]["rtt_ms"] / 2e3 - spec["bottleneck_delay_ms"] / 1e3
    sc_sp, _ = sp_side.scenario(spec, spec["warmup_s"] + spec["duration_s"])
    runs, _ = bottleneck_captures(sc_sp.with_overrides(overrides))
    senders = {ip.src for _, ip in runs["arrivals"] if payload_len(ip)}
    sent = [(t - access_s, ip) for t, ip in runs["arrivals"] if ip.src in senders]
    acks = [(t + spec["bottleneck_delay_ms"] / 1e3 + access_s, ip) for t, ip in runs["departures"] if ip.src not in senders]
    return sender_view(sent, runs["departures"], acks)


def recovery_episodes(events, warm_s):
    """One sender's loss recoveries that start after `warm_s`: each from its first
    retransmission to the ACK that covers everything sent before it (the recovery point),
    with how it began ("fast": a retransmission within RTO_GAP_S of progress; "RTO"), the
    segments in flight (highest sent less cumulatively acknowledged) when it began and when it
    ended, how long it took, what it resent (and of that, what was first sent after it began)
    and the new segments sent meanwhile; and the new segments sent after `warm_s`."""
    isn = next(e[2] for e in events if e[0] == "tx") - 1
    mss = max(e[3] for e in events if e[0] == "tx")
    una = smax = 1
    last_progress = head_sent = 0.0
    episodes, cur, new_after_warm = [], None, 0
    for e in events:
        if e[0] == "ack":
            ack = (e[2] - isn) % (1 << 32)
            if una < ack <= smax:
                una, last_progress = ack, e[1]
                if cur is not None and una >= cur["point"]:
                    cur |= {"end_s": e[1], "exit_flight": (smax - una) / mss}
                    episodes.append(cur)
                    cur = None
            continue
        _, t, wire_seq, length, _ = e
        seq = (wire_seq - isn) % (1 << 32)
        resend = seq < smax
        is_rto = resend and seq == una and t - max(last_progress, head_sent) >= RTO_GAP_S
        if resend and cur is None:
            cur = {"start_s": t, "kind": "RTO" if is_rto else "fast", "entry_flight": (smax - una) / mss,
                   "point": smax, "resent": 0, "resent_beyond_point": 0, "new": 0, "rto_inside": False}
        elif is_rto and cur is not None:
            cur["rto_inside"] = True
        if cur is not None:
            cur["resent" if resend else "new"] += 1
            cur["resent_beyond_point"] += resend and seq >= cur["point"]
        if t >= warm_s and not resend:
            new_after_warm += 1
        if seq == una:
            head_sent = t
        smax = max(smax, seq + length)
    return [ep for ep in episodes if ep["start_s"] >= warm_s], new_after_warm


def episode_table(name, events, warm_s, measured_s):
    import numpy as np

    episodes, new = recovery_episodes(events, warm_s)
    fast = [ep for ep in episodes if ep["kind"] == "fast"]
    for ep in fast:
        ep["length_ms"] = 1e3 * (ep["end_s"] - ep["start_s"])

    def stat(f, key, eps=fast):
        return float(f([ep[key] for ep in eps])) if eps else float("nan")

    print(f"{name}: {new} new segments ({new / measured_s:.1f}/s); {len(episodes)} recoveries "
          f"({len(fast)} fast, {sum(ep['rto_inside'] for ep in fast)} of those with an RTO inside, "
          f"{len(episodes) - len(fast)} by an RTO), one per {new / max(len(episodes), 1):.1f} new segments")
    for label, f in (("median", np.median), ("mean", np.mean)):
        print(f"  fast recoveries, {label}: in flight at entry {stat(f, 'entry_flight'):.2f} and at exit "
              f"{stat(f, 'exit_flight'):.2f} segments, {stat(f, 'length_ms'):.0f} ms, "
              f"{stat(f, 'resent'):.2f} resent ({stat(f, 'resent_beyond_point'):.2f} of data first sent after it began), "
              f"{stat(f, 'new'):.2f} new")
    mid = [ep for ep in fast if 6 <= ep["entry_flight"] < 9]
    print(f"  resent in all {sum(ep['resent'] for ep in episodes)}; per fast recovery with 6-8 in flight at entry "
          f"{stat(np.mean, 'resent', mid):.2f} ({len(mid)} recoveries)")


def drop_independence(events, warm_s):
    """A capture's transmissions after `warm_s` in the order they left: how many, the share
    dropped, the share dropped right after a dropped one (independent losses: the same),
    and the resends whose previous copy got through (spurious). Needs timestamps (the
    TSval tells a resend's delivery from its original's)."""
    import itertools

    isn = next(e[2] for e in events if e[0] == "tx") - 1
    sent = [e for e in events if e[0] == "tx" and e[1] >= warm_s]
    dropped = [e[4] for e in sent]
    after_drop = [b for a, b in itertools.pairwise(dropped) if a]
    last_dropped, spurious = {}, 0
    for e in events:
        if e[0] != "tx":
            continue
        seq = (e[2] - isn) % (1 << 32)
        spurious += e[1] >= warm_s and seq in last_dropped and not last_dropped[seq]
        last_dropped[seq] = e[4]
    return len(sent), sum(dropped) / len(sent), sum(after_drop) / max(len(after_drop), 1), spurious


def linux_recoveries(args):
    d = Path(args.pcapdir)
    flows = testbed_senders(d)
    sc = json.loads((d / "scenario.json").read_text())
    measured_s = sc["duration_s"] - args.warm_s
    spec = specs.bernoulli(args.p, sc["seed"], measured_s)
    (linux,) = flows.values()
    episode_table("Linux capture", linux, args.warm_s, measured_s)
    n, p_drop, p_after_drop, spurious = drop_independence(linux, args.warm_s)
    print(f"  {n} transmissions, {p_drop:.4f} dropped, {p_after_drop:.4f} of those right after a dropped one; "
          f"{spurious} resends whose previous copy got through")
    for kv in [[]] + [[x] for x in args.compare]:
        overrides = dict(parse_set(x) for x in args.set + kv)
        (events,) = smallpipe_senders(spec, overrides).values()
        episode_table(f"smallpipe {overrides or ''}", events, args.warm_s, measured_s)


def ack_release(flows, warm_s):
    """ACKs of new data after `warm_s` by the time since the sender's previous send (under
    20 ms, 20-40 ms, 40 ms or more), and how many of each a send follows within 2 ms."""
    from collections import Counter

    counts, sent = Counter(), Counter()
    for events in flows.values():
        isn = next(e[2] for e in events if e[0] == "tx") - 1
        una, smax, last_send = 1, 1, None
        for i, e in enumerate(events):
            if e[0] == "tx":
                smax, last_send = max(smax, (e[2] - isn) % (1 << 32) + e[3]), e[1]
                continue
            ack = (e[2] - isn) % (1 << 32)
            if not una < ack <= smax:
                continue
            una = ack
            if e[1] < warm_s or last_send is None:
                continue
            since = e[1] - last_send
            band = "under 20 ms" if since < 0.02 else "20-40 ms" if since < 0.04 else "40 ms or more"
            counts[band] += 1
            nxt = next((x for x in events[i + 1:] if x[0] == "tx"), None)
            sent[band] += nxt is not None and nxt[1] - e[1] < 2e-3
    return counts, sent


def late_releases(events, warm_s, srtt_at):
    """One sender's new segments sent 40 ms or more after the last ACK, after `warm_s`: each
    as (what came since the previous send, the previous send's kind, gap since it over
    Linux's pacing interval for it). The interval: the previous burst's segments x SRTT /
    (1.2 x segments in flight after this send), SRTT from `srtt_at(t)` (Linux's rate is
    120% of cwnd per SRTT in congestion avoidance; a full window is in flight after a send)."""
    isn = next(e[2] for e in events if e[0] == "tx") - 1
    mss = max(e[3] for e in events if e[0] == "tx")
    una = smax = 1
    sacked, out = set(), []
    last_ack = last_send = prev = None  # prev: [start, segments, kind]
    opened = False  # an ACK since the previous send acknowledged or SACKed new data
    for e in events:
        if e[0] == "ack":
            ack = (e[2] - isn) % (1 << 32)
            blocks = {s for a, b in e[3] for s in range((a - isn) % (1 << 32), (b - isn) % (1 << 32), mss)}
            advances = una < ack <= smax
            opened |= advances or not blocks <= sacked
            una, sacked, last_ack = ack if advances else una, sacked | blocks, e[1]
            continue
        t, seq = e[1], (e[2] - isn) % (1 << 32)
        if last_send is not None and t - last_send < 1e-4:
            prev[1] += 1
        else:
            timing = send_timing(t, last_ack, last_send)
            if timing == "later" and seq >= smax and t >= warm_s and prev is not None:
                in_flight = (max(smax, seq + e[3]) - una) // mss - len([s for s in sacked if s >= una])
                interval = prev[1] * srtt_at(t) / (1.2 * max(in_flight, 1))
                out.append(("an ACK of new data" if opened else "no ACK of new data", prev[2], (t - prev[0]) / interval))
            prev, opened = [t, 1, timing], False
        last_send, smax = t, max(smax, seq + e[3])
    return out


def first_held(events):
    """Data segments a sender sent before its first new segment that left 5 ms or more
    after an ACK (None if it resent something first)."""
    isn = next(e[2] for e in events if e[0] == "tx") - 1
    sent, smax, last_ack, last_send = 0, 0, None, None
    for e in events:
        if e[0] == "ack":
            last_ack = e[1]
            continue
        seq = (e[2] - isn) % (1 << 32)
        if seq < smax:
            return None
        if sent and send_timing(e[1], last_ack, last_send) not in ("on an ACK", "behind another"):
            return sent
        sent, smax, last_send = sent + 1, seq + e[3], e[1]
    return None


def linux_late(args):
    from collections import Counter

    import numpy as np
    import polars as pl

    d = Path(args.pcapdir)
    flows = testbed_senders(d)
    counts, sent = ack_release(flows, args.warm_s)
    print("ACKs of new data by the time since the sender's previous send: "
          + ", ".join(f"{band} {counts[band]} ({sent[band]} followed by a send within 2 ms)"
                      for band in ("under 20 ms", "20-40 ms", "40 ms or more")))
    held = Counter(first_held(ev) for ev in flows.values())
    resent_first = held.pop(None, 0)
    print("segments sent before the first one held back after an ACK, per flow: "
          + ", ".join(f"{k} segments: {v} flows" for k, v in sorted(held.items()))
          + f"; {resent_first} flows resent a segment first")
    # the sender's SRTT from tcp_info's 1 s samples (as linux-rto, taking both clocks to count from the run's start)
    info = pl.read_parquet(d / "tcp_info.parquet").sort("time_ns")
    flow_of = testbed_flow_ids(d, flows)
    rows = []
    for key, events in flows.items():
        g = info.filter(pl.col("flow_id") == flow_of[key])
        at, srtt = g["time_ns"].to_numpy() / 1e9, g["rtt_us"].to_numpy() / 1e6
        rows += late_releases(events, args.warm_s,
                              lambda t, at=at, srtt=srtt: srtt[min(np.searchsorted(at, t), len(at) - 1)])
    print(f"new segments 40 ms or more after the last ACK: {len(rows)}")
    for (opened, kind), n in Counter((r[0], r[1]) for r in rows).most_common():
        r = np.array([x[2] for x in rows if (x[0], x[1]) == (opened, kind)])
        print(f"  {n} with {opened} since the previous send, which went {kind}: gap / pacing interval "
              f"median {np.median(r):.2f} (IQR {np.percentile(r, 25):.2f}-{np.percentile(r, 75):.2f}), "
              f"within 15% of 0.5 {np.mean(abs(r - 0.5) <= 0.075):.0%}, of 1 {np.mean(abs(r - 1) <= 0.15):.0%}")
    r = np.array([x[2] for x in rows])
    print(f"  all: gap / pacing interval within 15% of 0.5 or 1: {np.mean((abs(r - 0.5) <= 0.075) | (abs(r - 1) <= 0.15)):.1%}; "
          f"in [0.25, 0.65] or [0.75, 1.25]: {np.mean(((r >= 0.25) & (r <= 0.65)) | ((r >= 0.75) & (r <= 1.25))):.1%}")


def fig11_growth(args):
    from smallpipe import simulate
    from smallpipe.experiments import taq_aqm
    from smallpipe.experiments.taq_testbed_fig11 import SLICE_S
    from smallpipe.presets import taq_dumbbell

    variants = [("as run", {}), ("Linux growth", {"tcp.cwnd_growth": "linux"}),
                ("RFC 3465 L = 2", {"tcp.cwnd_growth": "byte_counting"}),
                ("Linux growth + RTO", {"tcp.cwnd_growth": "linux", "tcp.rto_rule": "linux"})]
    share = args.fair_share_bps
    for disc in ("taq", "droptail"):
        for rate in (600_000, 1_000_000):
            cells = []
            for name, o in variants:
                rows = []
                for seed in range(1, args.seeds + 1):
                    sc = taq_dumbbell(flows=rate // share, rate_bps=rate, duration_s=60.0, seed=seed, slice_s=SLICE_S,
                                      queue={"kind": disc}).with_overrides({"tcp.congestion": "reno"} | o)
                    rows.append(taq_aqm.fairness_row(simulate(sc)))
                cells.append(f"{name}: Jain " + " / ".join(f"{r['short_term_jain']:.3f}" for r in rows)
                             + ", loss " + " / ".join(f"{r['loss_rate']:.3f}" for r in rows)
                             + ", timeouts/flow " + " / ".join(f"{r['timeouts_per_flow']:.2f}" for r in rows))
            print(f"{disc}, {rate // 1000} kbit/s, {share // 1000} kbit/s per flow: " + " | ".join(cells), flush=True)


# The Linux behaviours that move the simulator's Figure 11 timeouts, added one at a time.
FIG11_KNOBS = [
    ("rfc", {}),
    ("ssthresh_cwnd", {"tcp.ssthresh_from": "cwnd"}),
    ("ssthresh_cwnd+linux_rto", {"tcp.ssthresh_from": "cwnd", "tcp.rto_rule": "linux"}),
    ("ssthresh_cwnd+linux_rto+every_ack",
     {"tcp.ssthresh_from": "cwnd", "tcp.rto_rule": "linux", "tcp.rtt_samples": "every_ack"}),
]


def fig11_knobs(args):
    """Figure 11's full set on Linux (its TAQ rows those run after the TAQ fix) beside the
    simulator with each set of FIG11_KNOBS: one CSV row per point and set."""
    import polars as pl
    from smallpipe.experiments import taq_testbed_fig11 as fig11
    from smallpipe.experiments.provenance import write_csv

    page = Path(__file__).resolve().parents[2] / "docs" / "reproductions" / "taq-testbed"
    keys = ["discipline", "congestion_control", "rate_bps", "fair_share_bps"]
    linux_cols = [*keys, "flows", "duration_s", "short_term_jain", "utilization", "loss_rate", "timeouts_per_flow"]
    full = pl.read_csv(page / "taq-testbed-fig11.csv").filter(pl.col("discipline") != "taq").select(linux_cols)
    taq = pl.read_csv(page / "taq-testbed-fig11-taq-after-fix.csv").select(linux_cols)
    linux = pl.concat([full, taq]).sort(keys)
    out = []
    for name, overrides in FIG11_KNOBS:
        table = fig11.with_simulator(linux, overrides=overrides).with_columns(pl.lit(name).alias("sim_knobs"))
        out.append(table)
        gaps = table.group_by("discipline", "congestion_control").agg(
            (pl.col("sim_short_term_jain") - pl.col("short_term_jain")).abs().mean().alias("jain_gap"),
            (pl.col("sim_timeouts_per_flow") / pl.col("timeouts_per_flow")).median().alias("timeouts_ratio"),
            (pl.col("sim_loss_rate") / pl.col("loss_rate")).median().alias("loss_ratio")).sort(
            "discipline", "congestion_control")
        print(name, gaps, flush=True)
    write_csv(pl.concat(out), args.out)  # with the smallpipe commit that made it
    print(f"wrote {args.out}")


def web_timeouts(args):
    """The web pool's timeouts per connection split into the handshake's and the data's, by
    object size, on Linux (a testbed run into `--dir`, or the one already there) and in
    smallpipe's Linux stack with the same congestion control; connections opened after the
    warm-up only, so no subtraction is needed."""
    import polars as pl
    import smallpipe
    import sp_side
    from matrix import overrides as stack_overrides
    from matrix import smallpipe_overrides
    from smallpipe.testbed import run_testbed

    spec = specs.web(args.seed, duration_s=args.seconds)
    warm_ns = round(spec["warmup_s"] * 1e9)
    sets = smallpipe_overrides(args.congestion) | dict(parse_set(kv) for kv in args.set)
    d = Path(args.dir)
    if not (d / "server.json").is_file():
        import linux_side

        sc, _ = linux_side.scenario(spec, spec["warmup_s"] + spec["duration_s"])
        run_testbed(sc.with_overrides(stack_overrides(args.congestion)), congestion_control=args.congestion, out=d)
    # The generators' own records: the client's connections, the server's senders by flow id.
    sender = {f["flow_id"]: f for f in json.loads((d / "server.json").read_text())["flows"]}
    if any("handshake_timeouts" not in f for f in sender.values()):
        raise SystemExit(f"{d / 'server.json'} has no handshake_timeouts: a smallpipe-gen from before they were recorded")
    linux = pl.DataFrame([
        {"size_bytes": f["size_bytes"], "handshake": sender[f["flow_id"]]["handshake_timeouts"],
         "data": sender[f["flow_id"]]["info"]["total_rto"] - sender[f["flow_id"]]["handshake_timeouts"]}
        for f in json.loads((d / "client.json").read_text())["flows"]
        if f["start_ns"] >= warm_ns and f["flow_id"] in sender])
    sc, _ = sp_side.scenario(spec, spec["warmup_s"] + spec["duration_s"], sp_side.forward_indices(spec))
    sim = smallpipe.simulate(sc.with_overrides(sets)).flows.filter(pl.col("start_ns") >= warm_ns)
    sim = sim.with_columns(pl.col("syn_timeouts").alias("handshake"), pl.col("timeouts").alias("data"))
    print(f"web seed {args.seed}, {args.congestion}, connections opened after the warm-up; "
          f"timeouts per connection: handshake + data (share with any data timeout)")
    for lo, hi in ((0, 10_000), (10_000, 30_000), (30_000, None), (0, None)):
        label = f"{lo // 1000}-{hi // 1000} KB" if hi else f"{lo // 1000} KB and more" if lo else "all"
        cells = []
        for name, f in (("Linux", linux), ("smallpipe", sim)):
            b = f.filter(pl.col("size_bytes") >= lo, pl.col("size_bytes") < (hi or 1 << 62))
            n = max(b.height, 1)
            cells.append(f"{name} n = {b.height}: {b['handshake'].sum() / n:.3f} + {b['data'].sum() / n:.3f} "
                         f"({(b['data'] > 0).sum() / n:.2f})")
        print(f"  {label:>16}: " + "; ".join(cells))


def entry_fates(arrivals, departures):
    """Each data segment that entered a bottleneck: (flow, time s, whether it left, whether it
    was a resend). A copy left if a departure of its flow and sequence number follows it
    before the next copy enters: the queue is FIFO and drops at entry, and copies of one
    segment enter an RTO or more apart, longer than any queueing delay here. Both sides are
    matched alike (smallpipe's pcap has no IP ID to tell copies apart)."""
    import bisect

    def key(ip):
        return ip.src, ip.data.sport, ip.dst, ip.data.dport, ip.data.seq

    left = {}
    for t, ip in departures:
        if payload_len(ip):
            left.setdefault(key(ip), []).append(t)
    entries, by_key = [], {}
    for t, ip in arrivals:
        if payload_len(ip):
            k = key(ip)
            copies = by_key.setdefault(k, [])
            entries.append([k[:4], t, False, bool(copies)])  # a resend if a copy came before
            copies.append(entries[-1])
    for k, copies in by_key.items():
        times = [c[1] for c in copies]
        for t in left.get(k, []):
            i = bisect.bisect_left(times, t) - 1  # the last copy that entered before it left
            if i >= 0:
                copies[i][2] = True
    return [tuple(e) for e in entries]


def wheel_row(name, fates, warm_s, near_s=100e-6):
    """One side of `timer-wheel`: drop shares of first sends and resends, alone or within
    `near_s` of another connection's segment, after `warm_s`; and the starved connections,
    which it returns."""
    times = [t for _, t, _, _ in fates]
    flows = [f for f, _, _, _ in fates]
    cells, delivered = {}, {}
    for i, (flow, t, ok, resend) in enumerate(fates):
        delivered.setdefault(flow, 0)
        if t < warm_s:
            continue
        delivered[flow] += ok
        j, crowded = i - 1, False
        while j >= 0 and t - times[j] < near_s and not crowded:
            crowded, j = flows[j] != flow, j - 1
        j = i + 1
        while j < len(times) and times[j] - t < near_s and not crowded:
            crowded, j = flows[j] != flow, j + 1
        c = cells.setdefault((resend, crowded), [0, 0])
        c[0] += 1
        c[1] += not ok
    parts = [f"{'resends' if r else 'first sends'} {'crowded' if c else 'alone'} {n} ({d / n:.2f} dropped)"
             for (r, c), (n, d) in sorted(cells.items())]
    starved = [flow for flow, n in delivered.items() if n <= 1]
    print(f"{name}: {'; '.join(parts)}; {len(starved)} of {len(delivered)} connections got at most one segment "
          f"through after {warm_s:g} s", flush=True)
    return starved


def timer_wheel(args):
    """The many-flow dumbbell's starved connections, Linux against smallpipe (docs/validation.md,
    "Linux's timer wheel"): the data segments entering the bottleneck after the warm-up, first
    sends and resends, each alone or within 100 us of another connection's segment ("crowded"),
    with the share the full DropTail queue dropped; and the connections that got at most one
    segment through. Linux: a testbed run of `specs.many` with the box's capture into --dir
    (as root), or the one already there; then the starved connections' resend instants.
    smallpipe: the same spec under the matrix's stack, then with each --compare override."""
    import socket

    import sp_side
    from matrix import overrides as stack_overrides
    from matrix import smallpipe_overrides
    from smallpipe.testbed import run_testbed

    spec = specs.many(args.flows, args.seed, duration_s=args.seconds)
    warm = spec["warmup_s"]
    d = Path(args.dir)
    if not (d / "box.pcapng").is_file():
        import linux_side

        sc, _ = linux_side.scenario(spec, warm + spec["duration_s"])
        run_testbed(sc.with_overrides(stack_overrides(args.congestion)), congestion_control=args.congestion, out=d,
                    pcap=True)
    by_point = box_points(d)
    linux = entry_fates(by_point["b_in"], by_point["a_out"])
    for flow in wheel_row(f"Linux {args.congestion}", linux, warm)[:args.show]:
        resends = [t for f, t, _, r in linux if f == flow and r]
        print(f"  {socket.inet_ntoa(flow[2])}:{flow[3]} resends at " + ", ".join(f"{t:.4f}" for t in resends) + " s")
    sc, _ = sp_side.scenario(spec, warm + spec["duration_s"])
    base = smallpipe_overrides(args.congestion)
    for extra in [None, *args.compare]:
        overrides = base | (dict([parse_set(extra)]) if extra else {})
        runs, _ = bottleneck_captures(sc.with_overrides(overrides))
        wheel_row(f"smallpipe {extra or 'as the matrix'}", entry_fates(runs["arrivals"], runs["departures"]), warm)


def matrix_set(args):
    """The Linux matrix's rows of a section, smallpipe run without and with `--set`'s
    overrides on top of the matrix's, against the Linux runs recorded for it."""
    import matrix
    import sp_side
    from run import provenance

    out = HERE.parents[1] / "docs" / "validation"
    extra = dict(parse_set(kv) for kv in args.set)
    spec_list = matrix.build([args.only], args.seeds, args.many_s, args.bernoulli_s, args.web_s, args.fig11_s)
    rows = []
    for cc in args.congestion:
        linux = matrix.recorded_linux_runs(out, cc, spec_list)
        base = matrix.smallpipe_overrides(cc)
        for label, sets in (("without", base), ("with", base | extra)):
            results = {s["name"]: (sp_side.run(s, sets), linux[s["name"]]) for s in spec_list}
            compared = matrix.compare(cc, results, spec_list)
            for r in compared:
                print(f"{cc} {label} {r['metric']}: {float(r['smallpipe']):.4g} against {float(r['linux']):.4g} "
                      f"({r['verdict']})")
            told = [r for r in compared if r["verdict"] in ("pass", "FAIL")]
            print(f"{cc} {label}: {sum(r['verdict'] == 'pass' for r in told)} of {len(told)} rows within", flush=True)
            overrides = " ".join(args.set) if label == "with" else ""
            rows += [{"overrides": overrides, **r} for r in compared]
    if args.csv:
        import csv

        stamp = provenance()  # git, once: the same code made every row
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]) + list(stamp))
            w.writeheader()
            w.writerows(r | stamp for r in rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("noload")
    a.add_argument("size", type=int, nargs="?", default=10, choices=specs.FCT_SIZES)
    b = sub.add_parser("rto")
    b.add_argument("n", type=lambda s: [int(x) for x in s.split(",")])
    b.add_argument("--seeds", type=int, default=1)
    b.add_argument("--measure-s", type=float, default=60.0)
    b.add_argument("--ns3-patch", choices=("flightsize", "deflate"))
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a smallpipe scenario override, e.g. tcp.dupack_rule=ns3 (repeatable)")
    b.add_argument("--smallpipe-only", action="store_true", help="skip ns-3 (its numbers are on the page)")
    fk = sub.add_parser("fig11-knobs")
    fk.add_argument("--out", type=Path, required=True, help="CSV: every point beside the simulator per knob set")
    lc = sub.add_parser("linux-causes")
    lc.add_argument("--bernoulli-s", type=float, default=120.0, help="as run.py --linux's session runs")
    lc.add_argument("--many-s", type=float, default=60.0)
    lc.add_argument("--seeds", type=int, default=1, help="means over seeds 1..K, as run.py --linux --seeds K")
    lc.add_argument("--only", nargs="+", metavar="VARIANT", help="run these variants alone (their names as printed)")
    w = sub.add_parser("web-spread")
    w.add_argument("--seeds", type=int, default=10)
    w.add_argument("--seconds", type=float, default=120.0, help="as run.py --linux's session runs")
    w.add_argument("--linux", default=str(HERE.parents[1] / "docs" / "validation" / "linux_runs.jsonl"))
    wb = sub.add_parser("web-buckets")
    wb.add_argument("--seeds", type=int, default=30)
    wb.add_argument("--pool", type=int, default=3, help="seeds per group, as run.py --linux --seeds K")
    wb.add_argument("--seconds", type=float, default=120.0, help="as run.py --linux's session runs")
    wb.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a smallpipe override (repeatable)")
    wb.add_argument("--linux", default=str(HERE.parents[1] / "docs" / "validation" / "linux_runs.jsonl"))
    lr = sub.add_parser("linux-rto")
    lr.add_argument("pcapdir", help="a run_testbed(pcap=True) directory of a many-flow spec")
    lr.add_argument("--warm-s", type=float, default=10.0)
    lr.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a smallpipe override (repeatable)")
    ll = sub.add_parser("linux-late")
    ll.add_argument("pcapdir", help="a run_testbed(pcap=True) directory of a many-flow spec")
    ll.add_argument("--warm-s", type=float, default=10.0)
    lv = sub.add_parser("linux-recoveries")
    lv.add_argument("pcapdir", help="a run_testbed(pcap=True) directory of a Bernoulli spec")
    lv.add_argument("--p", type=float, required=True, help="its loss rate")
    lv.add_argument("--warm-s", type=float, default=10.0)
    lv.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a smallpipe override (repeatable)")
    lv.add_argument("--compare", action="append", default=[], metavar="KEY=VALUE",
                    help="also smallpipe with this one override added to --set's (repeatable)")
    fg = sub.add_parser("fig11-growth")
    fg.add_argument("--fair-share-bps", type=int, default=10_000)
    fg.add_argument("--seeds", type=int, default=1, help="seeds 1..K, each shown")
    bs = sub.add_parser("box-sojourn")
    bs.add_argument("pcapdirs", nargs="+", help="run_testbed(pcap=True) directories")
    bs.add_argument("--warm-s", type=float, default=20.0, help="leave out what entered before this")
    bs.add_argument("--tail-s", type=float, default=1.5, help="and segments dropped in the capture's last seconds "
                    "(still in the box, or in flight, when it stopped)")
    bs.add_argument("--long-ms", type=float, default=300.0)
    fs = sub.add_parser("fig11-spurious")
    fs.add_argument("pcapdir", help="a run_testbed(pcap=True) directory of a TAQ Figure 11 point")
    fs.add_argument("--warm-s", type=float, default=20.0, help="leave out what was offered before this")
    fs.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="smallpipe override (repeatable)")
    fs.add_argument("--compare", action="append", default=[], metavar="KEY=VALUE",
                    help="also smallpipe with this one override added to --set's (repeatable)")
    wt = sub.add_parser("web-timeouts")
    wt.add_argument("--congestion", choices=("reno", "cubic", "bbr"), default="reno")
    wt.add_argument("--seed", type=int, default=1)
    wt.add_argument("--seconds", type=float, default=120.0, help="as the Linux matrix's web section")
    wt.add_argument("--dir", required=True, help="the testbed run's directory (run into it when it has none)")
    wt.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a smallpipe override (repeatable)")
    tw = sub.add_parser("timer-wheel")
    tw.add_argument("--congestion", choices=("reno", "cubic", "bbr"), default="reno")
    tw.add_argument("--flows", type=int, default=100)
    tw.add_argument("--seed", type=int, default=2)
    tw.add_argument("--seconds", type=float, default=60.0, help="measured, after specs.many's 10 s warm-up")
    tw.add_argument("--dir", required=True, help="the testbed run's directory (run into it when it has no capture)")
    tw.add_argument("--show", type=int, default=4, help="starved Linux connections whose resends to list")
    tw.add_argument("--compare", action="append", default=[], metavar="KEY=VALUE",
                    help="also smallpipe with this override (repeatable)")
    ms = sub.add_parser("matrix-set")
    ms.add_argument("--congestion", nargs="+", choices=("reno", "cubic", "bbr"), default=["reno", "cubic", "bbr"])
    ms.add_argument("--only", choices=("many", "bernoulli", "web", "fig11"), default="many")
    ms.add_argument("--seeds", type=int, default=3)
    ms.add_argument("--many-s", type=float, default=60.0, help="as the section was recorded")
    ms.add_argument("--bernoulli-s", type=float, default=120.0)
    ms.add_argument("--web-s", type=float, default=120.0)
    ms.add_argument("--fig11-s", type=float, default=200.0)
    ms.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", required=True,
                    help="a smallpipe override beside the matrix's (repeatable)")
    ms.add_argument("--csv", help="also write both runs' rows here (an `overrides` column, empty without)")
    c = sub.add_parser("fct-split")
    c.add_argument("runs", nargs="+")
    c.add_argument("--reps", type=int, default=10, help="run.py's --fct-reps")
    args = ap.parse_args()
    {"rto": rto, "noload": noload, "fct-split": fct_split, "linux-causes": linux_causes,
     "web-spread": web_spread, "web-buckets": web_buckets, "fig11-growth": fig11_growth,
     "linux-rto": linux_rto, "linux-late": linux_late, "linux-recoveries": linux_recoveries,
     "box-sojourn": box_sojourn, "fig11-spurious": fig11_spurious, "fig11-knobs": fig11_knobs,
     "web-timeouts": web_timeouts, "timer-wheel": timer_wheel, "matrix-set": matrix_set}[args.cmd](args)


if __name__ == "__main__":
    main()
