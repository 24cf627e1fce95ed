#!/usr/bin/env python3
"""ns-3 baseline for the TAQ paper Figure 2 scenario (DropTail dumbbell).

Runs the scenario in ns-3 (PyPI package ``ns3``, cppyy bindings) and prints
ONE JSON line on stdout with the wall-clock time of ``Simulator::Run()`` and
the number of simulated packet transmissions, so that smallpipe's speed can
be compared with ns-3 on the same workload.  Everything else (progress,
warnings from cling) goes to stderr.

Topology (all links point-to-point, full duplex):

    S_i --(100 Mbit/s, d_s)--> R1 --(C, d_b)--> R2 --(100 Mbit/s, d_r)--> D_i
    i = 1..N;  defaults d_s = 49 ms, d_b = 1 ms, d_r = 50 ms  => RTT_prop = 200 ms

Queueing (documented choice): the traffic-control layer (qdiscs) is removed
from every device, so each packet sits in exactly one queue per hop: the
PointToPointNetDevice's own DropTailQueue.  The bottleneck queue (R1's device
towards R2) gets limit = BDP in 500-byte packets = C * RTT_prop / (500*8)
(100 packets at 2 Mbit/s); every other device queue gets a large limit
(``--other-queue``, 1000 p) so that no loss can happen anywhere else.  The
p2p device queue is flow-controlled: when it is full the device stops its
NetDeviceQueue and the traffic-control layer discards the arriving packet
(TrafficControlLayer "TcDrop" trace) -- i.e. a plain tail drop at a full queue
of `limit` packets.  A packet being serialised has left the queue (as in
ns-2), so at most limit+1 packets are at the bottleneck.  Drops are counted
(bottleneck vs. anywhere else) and reported, so "drops happen only at the
bottleneck" is checked, not assumed.

TCP: NewReno with classic (RFC 6582) fast recovery, SACK off, timestamps off,
window scaling off (so IP+TCP headers are exactly 40 bytes), no delayed ACKs
(DelAckCount = 1), segment size 460 B (=> 500 B IP packets; the p2p device
adds a 2-byte PPP header, so 502 B per frame on the wire), initial cwnd 4
segments, min RTO 1 s.  N BulkSend (unlimited) sources, each starting at a
uniform random time in [0, 1] s, PacketSink on each receiver.

Measured:
  * packets: total PhyTxEnd events on ALL point-to-point devices in both
    directions (one per packet per hop, data and ACKs).  Counted by a C++
    callback compiled with cppyy, so Python is not on the per-packet path.
  * wall_seconds: wall-clock time of Simulator::Run() only.
  * bottleneck_utilization: IP-layer bytes (500 B per data packet, PPP header
    excluded) that finished transmission on R1->R2, * 8 / (C * T).
  * goodput_utilization: TCP payload bytes received by all sinks * 8 / (C*T).
  * events: Simulator::GetEventCount() after the run.

Usage:  python3 fig2_dumbbell.py [--flows 200] [--rate-bps 2e6] [--sim-seconds 1000]
"""

import argparse
import json
import random
import sys
import time

NS3_VERSION = "3.44"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--flows", "-N", type=int, default=200, help="number of sender/receiver pairs [200]")
    p.add_argument("--rate-bps", "-C", type=float, default=2e6, help="bottleneck rate in bit/s [2e6]")
    p.add_argument("--sim-seconds", "-T", type=float, default=1000.0, help="simulated duration in s [1000]")
    p.add_argument("--sender-delay-ms", type=float, default=49.0, help="sender access one-way delay [49]")
    p.add_argument("--bottleneck-delay-ms", type=float, default=1.0, help="bottleneck one-way delay [1]")
    p.add_argument("--receiver-delay-ms", type=float, default=50.0, help="receiver access one-way delay [50]")
    p.add_argument("--access-rate-bps", type=float, default=100e6, help="access link rate in bit/s [100e6]")
    p.add_argument("--packet-bytes", type=int, default=500, help="IP packet size of a full data segment [500]")
    p.add_argument("--queue-packets", type=int, default=None,
                   help="bottleneck DropTail limit in packets [BDP = C*RTT_prop/(packet_bytes*8)]")
    p.add_argument("--other-queue", type=int, default=1000, help="limit of all other device queues, packets [1000]")
    p.add_argument("--initial-cwnd", type=int, default=4, help="initial cwnd in segments [4]")
    p.add_argument("--min-rto-s", type=float, default=1.0, help="minimum RTO in s [1]")
    p.add_argument("--weak-es-model", action="store_true",
                   help="keep ns-3's default weak end-system model (Ipv4::StrongEndSystemModel=false) (slow on the 201-interface routers; "
                        "see README) [off: strong ES model]")
    p.add_argument("--routing", choices=["global", "nix"], default="global",
                   help="ns-3 routing: Ipv4GlobalRouting or Nix-vector routing [global]")
    p.add_argument("--seed", type=int, default=1, help="seed for start times and ns-3 RNG [1]")
    args = p.parse_args(argv)
    if args.flows < 1 or args.rate_bps <= 0 or args.sim_seconds <= 0:
        p.error("flows, rate and duration must be positive")
    return args


def import_ns3():
    """Import the ns-3 bindings of the PyPI ``ns3`` wheel (``from ns import ns``)."""
    try:
        import ns3  # noqa: F401  (the wheel's package; ``ns`` is a shim over ``ns3.ns``)
    except ImportError:
        sys.exit("error: ns-3 Python bindings not found. Install them with:\n"
                 "    pip install ns3==3.44.post0\n"
                 "(pip builds cppyy/CPyCppyy from source, so a C++ compiler is needed; "
                 "the first import takes ~10 s while cling parses the ns-3 headers)")
    try:
        from ns import ns
    except Exception as e:  # cppyy/cling failures surface here
        sys.exit(f"error: ns-3 is installed but failed to load: {type(e).__name__}: {e}")
    return ns


# C++ helpers, JIT-compiled by cling.  Per-packet trace callbacks must not
# call into Python (that would dominate the run time), so counting happens in
# C++ and Python only reads the totals afterwards.
CPP_COUNTERS = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
namespace smallpipe_bench {
using namespace ns3;
static uint64_t g_txPackets = 0;      // PhyTxEnd on every p2p device
static uint64_t g_bnTxPackets = 0;    // PhyTxEnd on the bottleneck R1->R2 device
static uint64_t g_bnTxBytes = 0;      // frame bytes (incl. PPP header) on R1->R2
static uint64_t g_bnDrops = 0;        // tail drops at the bottleneck (see HookTc)
static uint64_t g_otherDrops = 0;     // any other drop, anywhere
static void OnTx(Ptr<const Packet>) { ++g_txPackets; }
static void OnBnTx(Ptr<const Packet> p) { ++g_txPackets; ++g_bnTxPackets; g_bnTxBytes += p->GetSize(); }
static void OnBnDrop(Ptr<const Packet>) { ++g_bnDrops; }
static void OnOtherDrop(Ptr<const Packet>) { ++g_otherDrops; }
void Hook(Ptr<NetDevice> dev, bool bottleneck)
{
    if (bottleneck) {
        dev->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnBnTx));
    } else {
        dev->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnTx));
    }
    // Device-level drops (queue overflow despite flow control, PHY drops) are
    // never expected here; they are counted as "other" so a surprise shows up.
    dev->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&OnOtherDrop));
    dev->TraceConnectWithoutContext("PhyTxDrop", MakeCallback(&OnOtherDrop));
    dev->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnOtherDrop));
}
void SetQueueLimit(Ptr<NetDevice> dev, uint32_t packets)
{
    Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(dev);
    NS_ABORT_MSG_IF(!p2p, "not a PointToPointNetDevice");
    p2p->GetQueue()->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, packets));
}
// With no queue disc, the p2p device's queue is flow-controlled: the device
// "stops" its NetDeviceQueue as soon as the DropTailQueue is full, and the
// traffic-control layer then discards the arriving packet (its "TcDrop" trace)
// instead of handing it to the device.  That is exactly a tail drop at the
// full device queue, but it is reported by the node's TrafficControlLayer,
// not by the device.  On R1 the only queue that can fill is the bottleneck
// (the others drain at 100 Mbit/s and hold up to 1000 packets), so R1's TC
// drops are counted as bottleneck drops; TC drops on any other node are
// counted as "other".
void HookTc(Ptr<Node> node, bool isR1)
{
    Ptr<Object> tc = node->GetObject<Object>(TypeId::LookupByName("ns3::TrafficControlLayer"));
    NS_ABORT_MSG_IF(!tc, "no TrafficControlLayer on node");
    bool ok = isR1 ? tc->TraceConnectWithoutContext("TcDrop", MakeCallback(&OnBnDrop))
                   : tc->TraceConnectWithoutContext("TcDrop", MakeCallback(&OnOtherDrop));
    NS_ABORT_MSG_IF(!ok, "cannot connect TrafficControlLayer::TcDrop");
}
uint64_t TxPackets() { return g_txPackets; }
uint64_t BnTxPackets() { return g_bnTxPackets; }
uint64_t BnTxBytes() { return g_bnTxBytes; }
uint64_t BnDrops() { return g_bnDrops; }
uint64_t OtherDrops() { return g_otherDrops; }
}  // namespace smallpipe_bench
"""


def main(argv=None):
    args = parse_args(argv)
    t_import = time.perf_counter()
    ns = import_ns3()
    cppyy = ns.cppyy
    cppyy.cppdef(CPP_COUNTERS)
    cb = cppyy.gbl.smallpipe_bench
    print(f"[ns-3] bindings loaded in {time.perf_counter() - t_import:.1f} s", file=sys.stderr)

    N = args.flows
    C = args.rate_bps
    T = args.sim_seconds
    seg = args.packet_bytes - 40  # 20 B IPv4 + 20 B TCP, no options
    rtt_prop = 2.0 * (args.sender_delay_ms + args.bottleneck_delay_ms + args.receiver_delay_ms) / 1000.0
    qlim = args.queue_packets
    if qlim is None:
        qlim = max(1, int(round(C * rtt_prop / (args.packet_bytes * 8))))

    # ---- global defaults -------------------------------------------------
    ns.RngSeedManager.SetSeed(args.seed)
    ns.RngSeedManager.SetRun(1)
    sd = ns.Config.SetDefault
    sd("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpNewReno"))
    sd("ns3::TcpL4Protocol::RecoveryType", ns.StringValue("ns3::TcpClassicRecovery"))
    sd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(seg))
    sd("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    sd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(args.initial_cwnd))
    sd("ns3::TcpSocketBase::Sack", ns.BooleanValue(False))
    sd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    sd("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(False))
    sd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(args.min_rto_s)))
    # ns-3's default "weak end-system model" makes every router check, for
    # every forwarded packet, the addresses of ALL its interfaces (201 on R1
    # and R2) to decide whether the packet is for itself: ~45% of the run time
    # at N=200.  No packet here is addressed to a router, so switching to the
    # strong ES model changes no simulated event, only the cost.
    # (Attribute of ns3::Ipv4; WeakEsModel is deprecated since 3.41.)
    sd("ns3::Ipv4::StrongEndSystemModel", ns.BooleanValue(not args.weak_es_model))
    sd("ns3::DropTailQueue<Packet>::MaxSize", ns.StringValue(f"{args.other_queue}p"))

    # ---- nodes -----------------------------------------------------------
    senders = ns.NodeContainer()
    senders.Create(N)
    receivers = ns.NodeContainer()
    receivers.Create(N)
    routers = ns.NodeContainer()
    routers.Create(2)
    r1, r2 = routers.Get(0), routers.Get(1)
    stack = ns.InternetStackHelper()
    if args.routing == "nix":
        nix = ns.Ipv4NixVectorHelper()
        stack.SetRoutingHelper(nix)
    stack.Install(senders)
    stack.Install(receivers)
    stack.Install(routers)

    # ---- links -----------------------------------------------------------
    def p2p_helper(rate_bps, delay_ms):
        h = ns.PointToPointHelper()
        h.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(rate_bps))))
        h.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(int(round(delay_ms * 1000)))))
        return h

    send_link = p2p_helper(args.access_rate_bps, args.sender_delay_ms)
    recv_link = p2p_helper(args.access_rate_bps, args.receiver_delay_ms)
    bn_link = p2p_helper(C, args.bottleneck_delay_ms)

    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    tch = ns.TrafficControlHelper()
    all_devs = []  # (device, is_bottleneck_egress)
    sink_addrs = []

    def connect(helper, a, b):
        devs = helper.Install(a, b)
        ifaces = addr.Assign(devs)
        addr.NewNetwork()
        # Ipv4AddressHelper::Assign installs the default root qdisc (FqCoDel);
        # remove it so the device DropTailQueue is the only queue on each hop.
        tch.Uninstall(devs)
        return devs, ifaces

    for i in range(N):
        devs, _ = connect(send_link, senders.Get(i), r1)
        all_devs += [(devs.Get(0), False), (devs.Get(1), False)]
    devs, _ = connect(bn_link, r1, r2)
    cb.SetQueueLimit(devs.Get(0), qlim)  # R1 -> R2: the one DropTail bottleneck queue
    all_devs += [(devs.Get(0), True), (devs.Get(1), False)]
    for i in range(N):
        devs, ifaces = connect(recv_link, receivers.Get(i), r2)
        sink_addrs.append(ifaces.GetAddress(0))
        all_devs += [(devs.Get(0), False), (devs.Get(1), False)]
    for dev, is_bn in all_devs:
        cb.Hook(dev, is_bn)
    for node in [senders.Get(i) for i in range(N)] + [receivers.Get(i) for i in range(N)] + [r1, r2]:
        cb.HookTc(node, node.GetId() == r1.GetId())
    if args.routing == "global":
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # ---- applications ----------------------------------------------------
    port = 5000
    rng = random.Random(args.seed)
    sinks = []
    keep = []
    sink_helper = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
    for i in range(N):
        sapps = sink_helper.Install(receivers.Get(i))
        sapps.Start(ns.Seconds(0.0))
        sinks.append(sapps.Get(0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(sink_addrs[i], port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(seg))
        bapps = bulk.Install(senders.Get(i))
        bapps.Start(ns.Seconds(rng.uniform(0.0, 1.0)))
        bapps.Stop(ns.Seconds(T))
        keep.append(bapps)

    # ---- run -------------------------------------------------------------
    ns.Simulator.Stop(ns.Seconds(T))
    print(f"[ns-3] N={N} C={C:g} bit/s T={T:g} s queue={qlim} p RTT_prop={rtt_prop * 1000:g} ms; running...",
          file=sys.stderr)
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    events = int(ns.Simulator.GetEventCount())

    packets = int(cb.TxPackets())
    bn_pkts = int(cb.BnTxPackets())
    bn_ip_bytes = int(cb.BnTxBytes()) - 2 * bn_pkts  # strip the 2-byte PPP header
    rx_payload = sum(int(ns.DynamicCast[ns.PacketSink](s).GetTotalRx()) for s in sinks)
    result = {
        "simulator": "ns-3",
        "version": NS3_VERSION,
        "flows": N,
        "rate_bps": C,
        "sim_seconds": T,
        "packets": packets,
        "wall_seconds": round(wall, 3),
        "packets_per_wall_second": round(packets / wall, 1) if wall > 0 else None,
        "bottleneck_packets": bn_pkts,
        "bottleneck_packets_per_wall_second": round(bn_pkts / wall, 1) if wall > 0 else None,
        "events_per_wall_second": round(events / wall, 1) if wall > 0 else None,
        "bottleneck_utilization": round(bn_ip_bytes * 8 / (C * T), 4),
        # extras (sanity checks)
        "goodput_utilization": round(rx_payload * 8 / (C * T), 4),
        "bottleneck_queue_packets": qlim,
        "bottleneck_drops": int(cb.BnDrops()),
        "other_drops": int(cb.OtherDrops()),
        "events": events,
    }
    ns.Simulator.Destroy()
    print(json.dumps(result), flush=True)
    if result["other_drops"]:
        print("warning: packets were dropped outside the bottleneck queue", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
