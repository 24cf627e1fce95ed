#!/usr/bin/env python3
"""The ns-3 3.44 side of the cross-validation: runs a list of scenario specs (JSON, see
``specs.py``) in ONE process and prints one JSON result per spec, one per line.

Read as ``python3 ns3_side.py SPECS.json``. The settings that make ns-3 comparable with
smallpipe (and why) are listed in docs/validation.md; the dumbbell and the removal of the
traffic-control layer follow benches/ns3/fig2_dumbbell.py (see its README).

Per-packet work stays in C++ (cling-compiled trace sinks); Python only builds the
topology and reads totals.
"""

import json
import sys
import time

CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/applications-module.h"
#include <set>
#include <vector>
namespace spval {
using namespace ns3;

static double g_warm = 0;
static bool Counting() { return Simulator::Now().GetSeconds() >= g_warm; }

// Bottleneck queue (R1 -> R2 device queue, the packet in service excluded).
static uint64_t g_arrivals = 0, g_drops = 0;
static double g_qIntegral = 0, g_qLastT = 0;
static uint32_t g_qLen = 0;
static void OnEnqueue(Ptr<const Packet>) { if (Counting()) ++g_arrivals; }
static void OnDrop(Ptr<const Packet>) { if (Counting()) { ++g_arrivals; ++g_drops; } }
static void OnQueueLen(uint32_t oldv, uint32_t newv)
{
    double now = Simulator::Now().GetSeconds();
    if (now > g_warm) g_qIntegral += oldv * (now - std::max(g_qLastT, g_warm));
    g_qLastT = now;
    g_qLen = newv;
}
double MeanQueue(double end)
{
    return (g_qIntegral + g_qLen * (end - std::max(g_qLastT, g_warm))) / (end - g_warm);
}
uint64_t Arrivals() { return g_arrivals; }
uint64_t Drops() { return g_drops; }

void HookBottleneck(Ptr<NetDevice> dev, Ptr<Node> r1, uint32_t limit)
{
    Ptr<PointToPointNetDevice> p2p = DynamicCast<PointToPointNetDevice>(dev);
    Ptr<Queue<Packet>> q = p2p->GetQueue();
    q->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, limit));
    q->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnEnqueue));
    q->TraceConnectWithoutContext("Drop", MakeCallback(&OnDrop));
    q->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&OnQueueLen));
    // With no queue disc the device queue is flow-controlled: once full, the traffic-control
    // layer discards the arriving packet (TcDrop). R1's other queues never fill.
    Ptr<Object> tc = r1->GetObject<Object>(TypeId::LookupByName("ns3::TrafficControlLayer"));
    tc->TraceConnectWithoutContext("TcDrop", MakeCallback(&OnDrop));
}

// Drops the listed 1-based data packets (IP length > 100 B) arriving over the bottleneck.
class DataDropModel : public ErrorModel
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("spval::DataDropModel").SetParent<ErrorModel>().AddConstructor<DataDropModel>();
        return tid;
    }
    std::set<uint32_t> drops;
    uint32_t seen = 0;
  private:
    bool DoCorrupt(Ptr<Packet> p) override
    {
        if (p->GetSize() <= 100) return false;
        return drops.count(++seen) > 0;
    }
    void DoReset() override {}
};
void AddDataDrops(Ptr<NetDevice> rxDev, std::vector<uint32_t> idx)
{
    Ptr<DataDropModel> m = CreateObject<DataDropModel>();
    m->drops.insert(idx.begin(), idx.end());
    rxDev->SetAttribute("ReceiveErrorModel", PointerValue(m));
}

// Diagnosis only (run.py --ns3-patch flightsize): NewReno whose ssthresh at a loss is
// max(FlightSize / 2, 2 SMSS) with FlightSize = SND.MAX - SND.UNA (RFC 5681 (4), RFC 6582
// §3.2 step 2, RFC 6675 §5 (4.2)); ns-3 3.44 passes BytesInFlight (pipe) instead.
class FlightSizeNewReno : public TcpNewReno
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("spval::FlightSizeNewReno").SetParent<TcpNewReno>().AddConstructor<FlightSizeNewReno>();
        return tid;
    }
    FlightSizeNewReno() = default;
    FlightSizeNewReno(const FlightSizeNewReno& o) = default;
    std::string GetName() const override { return "FlightSizeNewReno"; }
    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t) override
    {
        uint32_t flight = static_cast<uint32_t>(tcb->m_highTxMark.Get() - tcb->m_lastAckedSeq);
        return std::max(2 * tcb->m_segmentSize, flight / 2);
    }
    Ptr<TcpCongestionOps> Fork() override { return CopyObject<FlightSizeNewReno>(this); }
};
// Diagnosis only (run.py --ns3-patch deflate): also leaves cwnd at ssthresh on the ACK that
// ends fast recovery (RFC 5681 §3.2 step 6, RFC 6582 §3.2 step 3); ns-3 3.44 then also runs
// congestion avoidance for the segments that ACK covers (TcpSocketBase::ProcessAck).
class DeflateNewReno : public FlightSizeNewReno
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("spval::DeflateNewReno").SetParent<FlightSizeNewReno>().AddConstructor<DeflateNewReno>();
        return tid;
    }
    DeflateNewReno() = default;
    DeflateNewReno(const DeflateNewReno& o) = default;
    std::string GetName() const override { return "DeflateNewReno"; }
    void CwndEvent(Ptr<TcpSocketState> tcb, const TcpSocketState::TcpCAEvent_t event) override
    {
        m_exitAck = event == TcpSocketState::CA_EVENT_COMPLETE_CWR;
    }
    void IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override
    {
        if (m_exitAck) {
            m_exitAck = false;
            return;
        }
        TcpNewReno::IncreaseWindow(tcb, segmentsAcked);
    }
    Ptr<TcpCongestionOps> Fork() override { return CopyObject<DeflateNewReno>(this); }
  private:
    bool m_exitAck = false;
};
std::string PatchedNewRenoName(bool deflate)
{
    return deflate ? DeflateNewReno::GetTypeId().GetName() : FlightSizeNewReno::GetTypeId().GetName();
}

// Per-flow senders: RTO expiries (m_rto doubled), and for the traced flow a full trace.
static std::vector<uint64_t> g_timeouts;
static std::vector<double> g_txT, g_cwT, g_ssT;
static std::vector<uint32_t> g_txSeq, g_txLen, g_txFlags, g_cwV, g_ssV;
static void OnRto(uint32_t i, Time oldv, Time newv)
{
    // ReTxTimeout doubles m_rto (RFC 6298 5.5); recomputations from SRTT/RTTVAR do not.
    if (Counting() && oldv.IsStrictlyPositive() && newv.GetNanoSeconds() == 2 * oldv.GetNanoSeconds()) ++g_timeouts[i];
}
static void OnTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    g_txT.push_back(Simulator::Now().GetSeconds());
    g_txSeq.push_back(h.GetSequenceNumber().GetValue());
    g_txLen.push_back(p->GetSize());
    g_txFlags.push_back(h.GetFlags());
}
static void OnCwnd(uint32_t, uint32_t v) { g_cwT.push_back(Simulator::Now().GetSeconds()); g_cwV.push_back(v); }
static void OnSsthresh(uint32_t, uint32_t v) { g_ssT.push_back(Simulator::Now().GetSeconds()); g_ssV.push_back(v); }
// Without SACK the RFC 5681/6582 cwnd is the inflated one: ns-3 keeps it as m_cWndInfl (equal
// to m_cWnd outside recovery), its m_cWnd is ssthresh during recovery.
static void HookSender(Ptr<Application> app, uint32_t i, bool trace, bool inflated)
{
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("RTO", MakeBoundCallback(&OnRto, i));
    if (trace) {
        s->TraceConnectWithoutContext("Tx", MakeCallback(&OnTx));
        s->TraceConnectWithoutContext(inflated ? "CongestionWindowInflated" : "CongestionWindow",
                                      MakeCallback(&OnCwnd));
        s->TraceConnectWithoutContext("SlowStartThreshold", MakeCallback(&OnSsthresh));
    }
}
// The socket exists once the application has started (its SYN is then already sent and
// the initial cwnd/ssthresh set: the trace starts from the first data segment).
void ScheduleHook(Ptr<Application> app, uint32_t i, bool trace, bool inflated, double at)
{
    Simulator::Schedule(Seconds(at), &HookSender, app, i, trace, inflated);
}

// Receivers: in-order bytes at the warm-up and at the end; completion time of sized transfers.
static std::vector<Ptr<PacketSink>> g_sinks;
static std::vector<uint64_t> g_rxWarm, g_size, g_rx;
static std::vector<double> g_done;
static void OnRx(uint32_t i, Ptr<const Packet> p, const Address&)
{
    g_rx[i] += p->GetSize();
    if (g_size[i] && g_done[i] < 0 && g_rx[i] >= g_size[i]) g_done[i] = Simulator::Now().GetSeconds();
}
void AddSink(Ptr<Application> app, uint64_t size)
{
    uint32_t i = g_sinks.size();
    Ptr<PacketSink> s = DynamicCast<PacketSink>(app);
    g_sinks.push_back(s);
    g_size.push_back(size);
    g_rx.push_back(0);
    g_rxWarm.push_back(0);
    g_done.push_back(-1);
    g_timeouts.push_back(0);
    s->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnRx, i));
}
static void SnapshotRx() { for (size_t i = 0; i < g_sinks.size(); ++i) g_rxWarm[i] = g_rx[i]; }

void Reset(double warm)
{
    g_warm = warm;
    g_arrivals = g_drops = 0;
    g_qIntegral = g_qLastT = 0;
    g_qLen = 0;
    g_timeouts.clear();
    for (auto* v : {&g_txT, &g_cwT, &g_ssT}) v->clear();
    for (auto* v : {&g_txSeq, &g_txLen, &g_txFlags, &g_cwV, &g_ssV}) v->clear();
    g_sinks.clear(); g_rxWarm.clear(); g_size.clear(); g_rx.clear(); g_done.clear();
    Simulator::Schedule(Seconds(warm), &SnapshotRx);
}
std::vector<uint64_t> RxInWindow()
{
    std::vector<uint64_t> out;
    for (size_t i = 0; i < g_sinks.size(); ++i) out.push_back(g_rx[i] - g_rxWarm[i]);
    return out;
}
std::vector<double> DoneAt() { return g_done; }
std::vector<uint64_t> Timeouts() { return g_timeouts; }
std::vector<double> TxT() { return g_txT; }
std::vector<uint32_t> TxSeq() { return g_txSeq; }
std::vector<uint32_t> TxLen() { return g_txLen; }
std::vector<uint32_t> TxFlags() { return g_txFlags; }
std::vector<double> CwT() { return g_cwT; }
std::vector<uint32_t> CwV() { return g_cwV; }
std::vector<double> SsT() { return g_ssT; }
std::vector<uint32_t> SsV() { return g_ssV; }
}  // namespace spval
"""


def load_ns3():
    try:
        from ns import ns
    except ImportError:
        sys.exit("error: ns-3 bindings not found; install them with: pip install 'smallpipe[bench]' (ns3==3.44.post0)")
    ns.cppyy.cppdef(CPP)
    return ns


def set_defaults(ns, tcp):
    """TCP settings aligned with smallpipe's (docs/validation.md, 'Settings')."""
    sd = ns.Config.SetDefault
    mss = tcp["packet_bytes"] - 40 - (12 if tcp["timestamps"] else 0)
    patch = tcp.get("ns3_patch")
    cc = str(ns.cppyy.gbl.spval.PatchedNewRenoName(patch == "deflate")) if patch else "ns3::TcpNewReno"
    sd("ns3::TcpL4Protocol::SocketType", ns.StringValue(cc))
    # Classic recovery sets cwnd = ssthresh and, with SACK, sends by RFC 6675's pipe
    # (BytesInFlight): ns-3's default PRR is not what smallpipe implements.
    sd("ns3::TcpL4Protocol::RecoveryType", ns.StringValue("ns3::TcpClassicRecovery"))
    sd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(mss))
    sd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(tcp["iw"]))
    sd("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2 if tcp["delayed_ack"] else 1))
    sd("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.Seconds(0.2)))
    # SYN RTO: ns-3's default ConnTimeout is 3 s (RFC 2988); smallpipe uses RFC 6298's 1 s.
    sd("ns3::TcpSocket::ConnTimeout", ns.TimeValue(ns.Seconds(tcp["initial_rto_s"])))
    sd("ns3::TcpSocket::ConnCount", ns.UintegerValue(6))
    # ns-3 aborts a connection after DataRetries (6) RTOs of one segment; smallpipe never
    # gives up on data. At N = 200 six back-to-back RTOs do happen.
    sd("ns3::TcpSocket::DataRetries", ns.UintegerValue(1_000_000))
    sd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 20))
    sd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 20))
    sd("ns3::TcpSocketBase::Sack", ns.BooleanValue(tcp["sack"]))
    sd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(tcp["timestamps"]))
    # No window scaling: the 65535-byte receive window equals smallpipe's rwnd_bytes.
    sd("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(False))
    sd("ns3::TcpSocketBase::LimitedTransmit", ns.BooleanValue(True))
    sd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(tcp["min_rto_s"])))
    sd("ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.MilliSeconds(1)))
    sd("ns3::Ipv4::StrongEndSystemModel", ns.BooleanValue(True))
    sd("ns3::DropTailQueue<Packet>::MaxSize", ns.StringValue("1000p"))
    return mss


def run(ns, spec):
    cb = ns.cppyy.gbl.spval
    tcp = spec["tcp"]
    ns.RngSeedManager.SetSeed(spec["seed"])
    ns.RngSeedManager.SetRun(1)
    mss = set_defaults(ns, tcp)
    flows = spec["flows"]
    n = len(flows)
    warm = spec["warmup_s"]
    end = warm + spec["duration_s"]
    cb.Reset(warm)

    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    receivers.Create(n)
    routers.Create(2)
    r1, r2 = routers.Get(0), routers.Get(1)
    stack = ns.InternetStackHelper()
    for c in (senders, receivers, routers):
        stack.Install(c)

    def p2p(rate_bps, delay_ms):
        h = ns.PointToPointHelper()
        h.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(round(rate_bps))))
        h.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(round(delay_ms * 1e6))))
        return h

    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    tch = ns.TrafficControlHelper()

    def connect(helper, a, b):
        devs = helper.Install(a, b)
        ifaces = addr.Assign(devs)
        addr.NewNetwork()
        tch.Uninstall(devs)  # no queue disc: the device DropTailQueue is the only queue
        return devs, ifaces

    # The p2p device adds a 2-byte PPP header to every frame; smallpipe serializes IP
    # packets. Scaling every rate by 502/500 gives a 500-byte packet the same serialization
    # time on both sides.
    ppp = (tcp["packet_bytes"] + 2) / tcp["packet_bytes"]
    bn_delay = spec["bottleneck_delay_ms"]
    for i, f in enumerate(flows):
        connect(p2p(spec["access_rate_bps"] * ppp, f["rtt_ms"] / 2 - bn_delay), senders.Get(i), r1)
    bn_devs, _ = connect(p2p(spec["rate_bps"] * ppp, bn_delay), r1, r2)
    cb.HookBottleneck(bn_devs.Get(0), r1, spec["queue_pkts"])
    if spec["loss"] > 0:
        em = ns.CreateObject[ns.RateErrorModel]()
        em.SetAttribute("ErrorRate", ns.DoubleValue(spec["loss"]))
        em.SetAttribute("ErrorUnit", ns.StringValue("ERROR_UNIT_PACKET"))
        bn_devs.Get(1).SetAttribute("ReceiveErrorModel", ns.PointerValue(em))
    if spec["drop_data"]:
        v = ns.cppyy.gbl.std.vector["uint32_t"](spec["drop_data"])
        cb.AddDataDrops(bn_devs.Get(1), v)
    sink_addrs = []
    for i in range(n):
        _, ifaces = connect(p2p(spec["access_rate_bps"] * ppp, 0.0), receivers.Get(i), r2)
        sink_addrs.append(ifaces.GetAddress(0))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    port = 5000
    sink_helper = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                      ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
    keep = []
    for i, f in enumerate(flows):
        sapps = sink_helper.Install(receivers.Get(i))
        sapps.Start(ns.Seconds(0.0))
        size = f["size_pkts"] * mss if f["size_pkts"] else 0
        cb.AddSink(sapps.Get(0), size)
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(sink_addrs[i], port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(size))
        bulk.SetAttribute("SendSize", ns.UintegerValue(mss))
        bapps = bulk.Install(senders.Get(i))
        bapps.Start(ns.NanoSeconds(round(f["start_s"] * 1e9)))
        keep.append((sapps, bapps))
        traced = spec["trace"] and i == spec.get("trace_flow", 0)
        cb.ScheduleHook(bapps.Get(0), i, traced, not tcp["sack"], f["start_s"] + 1e-6)

    ns.Simulator.Stop(ns.Seconds(end))
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    arrivals, drops = int(cb.Arrivals()), int(cb.Drops())
    out = {
        "name": spec["name"],
        "simulator": "ns-3",
        "wall_s": round(wall, 3),
        "mss": mss,
        "arrivals": arrivals,
        "drops": drops,
        "loss_rate": drops / arrivals if arrivals else 0.0,
        "mean_queue_pkts": float(cb.MeanQueue(end)),
        "timeouts": [int(x) for x in cb.Timeouts()],
        "rx_bytes": [int(x) for x in cb.RxInWindow()],
        "fct_s": [None if t < 0 else t - f["start_s"] for t, f in zip(cb.DoneAt(), flows)],
    }
    if spec["trace"]:
        out["trace"] = {
            "tx": [[float(t), int(s), int(ln), int(fl)] for t, s, ln, fl in
                   zip(cb.TxT(), cb.TxSeq(), cb.TxLen(), cb.TxFlags())],
            "cwnd": [[float(t), int(v)] for t, v in zip(cb.CwT(), cb.CwV())],
            "ssthresh": [[float(t), int(v)] for t, v in zip(cb.SsT(), cb.SsV())],
        }
    ns.Simulator.Destroy()
    return out


def main(argv):
    with open(argv[1]) as f:
        specs = json.load(f)
    t = time.perf_counter()
    ns = load_ns3()
    print(f"[ns-3] bindings loaded in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    for spec in specs:
        print(json.dumps(run(ns, spec)), flush=True)
        print(f"[ns-3] {spec['name']} done", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
