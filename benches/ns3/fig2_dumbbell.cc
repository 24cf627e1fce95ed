// C++ port of smallpipe's benches/ns3/fig2_dumbbell.py (TAQ paper Figure 2,
// DropTail dumbbell) for a system ns-3 (written against Debian's ns-3 3.37).
//
// Same scenario, same command-line options and the same single JSON line on
// stdout as the Python script, so that the speed of this ns-3 build can be
// compared with the PyPI ns-3 3.44 wheel used by the script.  Progress goes to
// stderr.
//
//   S_i --(access rate, d_s)--> R1 --(C, d_b)--> R2 --(access rate, d_r)--> D_i
//
// Differences forced by ns-3 3.37:
//   * the strong end-system model is set with Ipv4::WeakEsModel=false
//     (3.44 calls it Ipv4::StrongEndSystemModel=true; same code path);
//   * TcpTxBuffer::NextSeg is wrapped to refuse an empty segment (see
//     below), without which 3.37 crashes at N=10;
//   * "version" in the JSON line is "3.37".

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/nix-vector-helper.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

// ns-3 3.37 bug (later releases no longer do this): when exactly one receiver
// window of data is outstanding, TcpTxBuffer::NextSeg offers a zero-length
// segment of new data, and the send path then dereferences a null TcpTxItem
// (a segfault, as Debian's build has no asserts).  With window scaling off the
// 65535-byte window binds at N=10, so the run crashes.  This definition takes
// the place of the library's (which libns3-internet calls through the PLT),
// calls the original and treats a zero-length segment as nothing to send.
bool
ns3::TcpTxBuffer::NextSeg(SequenceNumber32* seq, SequenceNumber32* seqHigh, bool isRecovery) const
{
    using NextSegFn = bool (*)(const TcpTxBuffer*, SequenceNumber32*, SequenceNumber32*, bool);
    static const auto original = reinterpret_cast<NextSegFn>(
        dlsym(RTLD_NEXT, "_ZNK3ns311TcpTxBuffer7NextSegEPNS_14SequenceNumberIjiEES3_b"));
    NS_ABORT_MSG_IF(!original, "TcpTxBuffer::NextSeg not found in libns3-internet");
    return original(this, seq, seqHigh, isRecovery) && *seqHigh != *seq;
}

namespace
{

// ---- command line (same flags and defaults as the Python script) ----------

struct Args
{
    int flows = 200;
    double rateBps = 2e6;
    double simSeconds = 1000.0;
    double senderDelayMs = 49.0;
    double bottleneckDelayMs = 1.0;
    double receiverDelayMs = 50.0;
    double accessRateBps = 100e6;
    int packetBytes = 500;
    int queuePackets = -1; // -1: BDP in packets
    int otherQueue = 1000;
    int initialCwnd = 4;
    double minRtoS = 1.0;
    bool weakEsModel = false;
    std::string routing = "global";
    long long seed = 1;
};

const char* const kUsage =
    "usage: fig2_dumbbell [--flows|-N N] [--rate-bps|-C BPS] [--sim-seconds|-T S]\n"
    "  [--sender-delay-ms MS] [--bottleneck-delay-ms MS] [--receiver-delay-ms MS]\n"
    "  [--access-rate-bps BPS] [--packet-bytes B] [--queue-packets P] [--other-queue P]\n"
    "  [--initial-cwnd SEG] [--min-rto-s S] [--weak-es-model] [--routing global|nix]\n"
    "  [--seed S]\n";

[[noreturn]] void
UsageError(const std::string& msg)
{
    std::cerr << kUsage << "error: " << msg << "\n";
    std::exit(2);
}

// Parses "NAME VALUE" or "NAME=VALUE" into *out; the whole VALUE must be used.
template <typename T>
void
ParseValue(const std::string& name, const std::string& text, T* out)
{
    std::istringstream in(text);
    in >> *out;
    if (in.fail() || !in.eof())
    {
        UsageError("bad value for " + name + ": '" + text + "'");
    }
}

Args
ParseArgs(int argc, char** argv)
{
    Args a;
    // Options that take a value.
    const std::map<std::string, std::function<void(const std::string&, const std::string&)>>
        setters = {
            {"--flows", [&](auto& n, auto& v) { ParseValue(n, v, &a.flows); }},
            {"--rate-bps", [&](auto& n, auto& v) { ParseValue(n, v, &a.rateBps); }},
            {"--sim-seconds", [&](auto& n, auto& v) { ParseValue(n, v, &a.simSeconds); }},
            {"--sender-delay-ms", [&](auto& n, auto& v) { ParseValue(n, v, &a.senderDelayMs); }},
            {"--bottleneck-delay-ms",
             [&](auto& n, auto& v) { ParseValue(n, v, &a.bottleneckDelayMs); }},
            {"--receiver-delay-ms",
             [&](auto& n, auto& v) { ParseValue(n, v, &a.receiverDelayMs); }},
            {"--access-rate-bps", [&](auto& n, auto& v) { ParseValue(n, v, &a.accessRateBps); }},
            {"--packet-bytes", [&](auto& n, auto& v) { ParseValue(n, v, &a.packetBytes); }},
            {"--queue-packets", [&](auto& n, auto& v) { ParseValue(n, v, &a.queuePackets); }},
            {"--other-queue", [&](auto& n, auto& v) { ParseValue(n, v, &a.otherQueue); }},
            {"--initial-cwnd", [&](auto& n, auto& v) { ParseValue(n, v, &a.initialCwnd); }},
            {"--min-rto-s", [&](auto& n, auto& v) { ParseValue(n, v, &a.minRtoS); }},
            {"--routing", [&](auto&, auto& v) { a.routing = v; }},
            {"--seed", [&](auto& n, auto& v) { ParseValue(n, v, &a.seed); }},
        };
    // Short aliases, as the Python script has them.
    const std::map<std::string, std::string> aliases = {
        {"-N", "--flows"}, {"-C", "--rate-bps"}, {"-T", "--sim-seconds"}};
    for (int i = 1; i < argc; ++i)
    {
        std::string name = argv[i];
        std::string value;
        bool hasValue = false;
        if (auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos)
        {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            hasValue = true;
        }
        if (name == "-h" || name == "--help")
        {
            std::cout << kUsage;
            std::exit(0);
        }
        if (name == "--weak-es-model" && !hasValue)
        {
            a.weakEsModel = true;
            continue;
        }
        const auto alias = aliases.find(name);
        auto setter = setters.find(alias == aliases.end() ? name : alias->second);
        if (setter == setters.end())
        {
            UsageError("unknown option " + name);
        }
        if (!hasValue)
        {
            if (i + 1 >= argc)
            {
                UsageError("missing value for " + name);
            }
            value = argv[++i];
        }
        setter->second(name, value);
    }
    if (a.routing != "global" && a.routing != "nix")
    {
        UsageError("--routing must be global or nix");
    }
    if (a.flows < 1 || a.rateBps <= 0 || a.simSeconds <= 0)
    {
        UsageError("flows, rate and duration must be positive");
    }
    return a;
}

// ---- start times: the same numbers as Python's random.Random(seed) --------

// MT19937 seeded the way CPython seeds it from an int (init_by_array over the
// 32-bit words of |seed|), with random() built from two draws (53 bits).
class PyRandom
{
  public:
    explicit PyRandom(long long seed)
    {
        unsigned long long s = seed < 0 ? -static_cast<unsigned long long>(seed) : seed;
        std::vector<uint32_t> key;
        do
        {
            key.push_back(static_cast<uint32_t>(s));
            s >>= 32;
        } while (s != 0);

        m_mt[0] = 19650218U;
        for (uint32_t i = 1; i < kN; ++i)
        {
            m_mt[i] = 1812433253U * (m_mt[i - 1] ^ (m_mt[i - 1] >> 30)) + i;
        }
        uint32_t i = 1;
        uint32_t j = 0;
        for (size_t k = std::max<size_t>(kN, key.size()); k > 0; --k)
        {
            m_mt[i] = (m_mt[i] ^ ((m_mt[i - 1] ^ (m_mt[i - 1] >> 30)) * 1664525U)) + key[j] + j;
            if (++i >= kN)
            {
                m_mt[0] = m_mt[kN - 1];
                i = 1;
            }
            if (++j >= key.size())
            {
                j = 0;
            }
        }
        for (uint32_t k = kN - 1; k > 0; --k)
        {
            m_mt[i] = (m_mt[i] ^ ((m_mt[i - 1] ^ (m_mt[i - 1] >> 30)) * 1566083941U)) - i;
            if (++i >= kN)
            {
                m_mt[0] = m_mt[kN - 1];
                i = 1;
            }
        }
        m_mt[0] = 0x80000000U;
    }

    double Uniform(double lo, double hi)
    {
        uint32_t a = Next() >> 5;
        uint32_t b = Next() >> 6;
        return lo + (hi - lo) * ((a * 67108864.0 + b) * (1.0 / 9007199254740992.0));
    }

  private:
    static constexpr uint32_t kN = 624;
    static constexpr uint32_t kM = 397;

    uint32_t Next()
    {
        if (m_index >= kN)
        {
            for (uint32_t k = 0; k < kN; ++k)
            {
                uint32_t y = (m_mt[k] & 0x80000000U) | (m_mt[(k + 1) % kN] & 0x7fffffffU);
                m_mt[k] = m_mt[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1U) ? 0x9908b0dfU : 0U);
            }
            m_index = 0;
        }
        uint32_t y = m_mt[m_index++];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680U;
        y ^= (y << 15) & 0xefc60000U;
        y ^= y >> 18;
        return y;
    }

    uint32_t m_mt[kN];
    uint32_t m_index = kN;
};

// ---- counters, fed by trace callbacks --------------------------------------

uint64_t g_txPackets = 0;   // PhyTxEnd on every p2p device
uint64_t g_bnTxPackets = 0; // PhyTxEnd on the bottleneck R1->R2 device
uint64_t g_bnTxBytes = 0;   // frame bytes (incl. 2-byte PPP header) on R1->R2
uint64_t g_bnDrops = 0;     // tail drops at the bottleneck (TcDrop on R1)
uint64_t g_otherDrops = 0;  // any other drop, anywhere

void
OnTx(Ptr<const Packet>)
{
    ++g_txPackets;
}

void
OnBnTx(Ptr<const Packet> p)
{
    ++g_txPackets;
    ++g_bnTxPackets;
    g_bnTxBytes += p->GetSize();
}

void
OnBnDrop(Ptr<const Packet>)
{
    ++g_bnDrops;
}

void
OnOtherDrop(Ptr<const Packet>)
{
    ++g_otherDrops;
}

void
HookDevice(Ptr<NetDevice> dev, bool bottleneck)
{
    dev->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(bottleneck ? &OnBnTx : &OnTx));
    // Device-level drops are never expected; count them so a surprise shows.
    dev->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&OnOtherDrop));
    dev->TraceConnectWithoutContext("PhyTxDrop", MakeCallback(&OnOtherDrop));
    dev->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnOtherDrop));
}

// Without a queue disc the p2p device queue is flow-controlled: when it is
// full, the node's TrafficControlLayer discards the arriving packet ("TcDrop").
// Only R1's bottleneck queue can fill, so R1's TC drops are bottleneck drops.
void
HookTrafficControl(Ptr<Node> node, bool isR1)
{
    Ptr<TrafficControlLayer> tc = node->GetObject<TrafficControlLayer>();
    NS_ABORT_MSG_IF(!tc, "no TrafficControlLayer on node");
    bool ok = tc->TraceConnectWithoutContext("TcDrop",
                                             MakeCallback(isR1 ? &OnBnDrop : &OnOtherDrop));
    NS_ABORT_MSG_IF(!ok, "cannot connect TrafficControlLayer::TcDrop");
}

// ---- JSON output formatted like Python's json.dumps -------------------------

// Python float repr for the values printed here: shortest round-trip digits,
// always with a decimal point.
std::string
PyFloat(double x)
{
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::fixed);
    std::string s(buf, res.ptr);
    if (s.find('.') == std::string::npos)
    {
        s += ".0";
    }
    return s;
}

double
RoundTo(double x, int digits)
{
    double scale = std::pow(10.0, digits);
    return std::nearbyint(x * scale) / scale;
}

} // namespace

int
main(int argc, char** argv)
{
    const Args args = ParseArgs(argc, argv);
    const int n = args.flows;
    const double rate = args.rateBps;
    const double simT = args.simSeconds;
    const uint32_t seg = args.packetBytes - 40; // 20 B IPv4 + 20 B TCP, no options
    const double rttProp =
        2.0 * (args.senderDelayMs + args.bottleneckDelayMs + args.receiverDelayMs) / 1000.0;
    // lrint/llrint round half to even, like Python's round().
    const uint32_t qlim =
        args.queuePackets >= 0
            ? args.queuePackets
            : std::max(1L, std::lrint(rate * rttProp / (args.packetBytes * 8)));

    // ---- global defaults -----------------------------------------------------
    RngSeedManager::SetSeed(args.seed);
    RngSeedManager::SetRun(1);
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", StringValue("ns3::TcpClassicRecovery"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(seg));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(args.initialCwnd));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(args.minRtoS)));
    // Strong end-system model: routers do not scan all 201 interfaces for every
    // forwarded packet.  ns-3 3.37 spells it WeakEsModel=false.
    Config::SetDefault("ns3::Ipv4::WeakEsModel", BooleanValue(args.weakEsModel));
    Config::SetDefault("ns3::DropTailQueue<Packet>::MaxSize",
                       StringValue(std::to_string(args.otherQueue) + "p"));

    // ---- nodes ---------------------------------------------------------------
    NodeContainer senders;
    senders.Create(n);
    NodeContainer receivers;
    receivers.Create(n);
    NodeContainer routers;
    routers.Create(2);
    Ptr<Node> r1 = routers.Get(0);
    Ptr<Node> r2 = routers.Get(1);
    InternetStackHelper stack;
    if (args.routing == "nix")
    {
        stack.SetRoutingHelper(Ipv4NixVectorHelper());
    }
    stack.Install(senders);
    stack.Install(receivers);
    stack.Install(routers);

    // ---- links ---------------------------------------------------------------
    auto p2pHelper = [](double rateBps, double delayMs) {
        PointToPointHelper h;
        h.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(rateBps))));
        h.SetChannelAttribute("Delay",
                              TimeValue(MicroSeconds(std::llrint(delayMs * 1000))));
        return h;
    };
    PointToPointHelper sendLink = p2pHelper(args.accessRateBps, args.senderDelayMs);
    PointToPointHelper recvLink = p2pHelper(args.accessRateBps, args.receiverDelayMs);
    PointToPointHelper bnLink = p2pHelper(rate, args.bottleneckDelayMs);

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    TrafficControlHelper tch;
    std::vector<std::pair<Ptr<NetDevice>, bool>> allDevs; // (device, is bottleneck egress)
    std::vector<Ipv4Address> sinkAddrs;

    auto connect = [&](PointToPointHelper& helper, Ptr<Node> a, Ptr<Node> b) {
        NetDeviceContainer devs = helper.Install(a, b);
        Ipv4InterfaceContainer ifaces = addr.Assign(devs);
        addr.NewNetwork();
        // Assign() installs the default root queue disc; remove it so the
        // device DropTailQueue is the only queue on each hop.
        tch.Uninstall(devs);
        return std::make_pair(devs, ifaces);
    };

    for (int i = 0; i < n; ++i)
    {
        auto [devs, ifaces] = connect(sendLink, senders.Get(i), r1);
        allDevs.emplace_back(devs.Get(0), false);
        allDevs.emplace_back(devs.Get(1), false);
    }
    {
        auto [devs, ifaces] = connect(bnLink, r1, r2);
        // R1 -> R2: the one DropTail bottleneck queue.
        DynamicCast<PointToPointNetDevice>(devs.Get(0))
            ->GetQueue()
            ->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, qlim));
        allDevs.emplace_back(devs.Get(0), true);
        allDevs.emplace_back(devs.Get(1), false);
    }
    for (int i = 0; i < n; ++i)
    {
        auto [devs, ifaces] = connect(recvLink, receivers.Get(i), r2);
        sinkAddrs.push_back(ifaces.GetAddress(0));
        allDevs.emplace_back(devs.Get(0), false);
        allDevs.emplace_back(devs.Get(1), false);
    }
    for (auto& [dev, isBn] : allDevs)
    {
        HookDevice(dev, isBn);
    }
    const NodeContainer allNodes = NodeContainer::GetGlobal(); // senders, receivers, routers
    for (NodeContainer::Iterator it = allNodes.Begin(); it != allNodes.End(); ++it)
    {
        HookTrafficControl(*it, *it == r1);
    }
    if (args.routing == "global")
    {
        Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    }

    // ---- applications --------------------------------------------------------
    const uint16_t port = 5000;
    PyRandom rng(args.seed);
    std::vector<Ptr<PacketSink>> sinks;
    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                InetSocketAddress(Ipv4Address::GetAny(), port));
    for (int i = 0; i < n; ++i)
    {
        ApplicationContainer sapps = sinkHelper.Install(receivers.Get(i));
        sapps.Start(Seconds(0.0));
        sinks.push_back(DynamicCast<PacketSink>(sapps.Get(0)));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sinkAddrs[i], port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(seg));
        ApplicationContainer bapps = bulk.Install(senders.Get(i));
        bapps.Start(Seconds(rng.Uniform(0.0, 1.0)));
        bapps.Stop(Seconds(simT));
    }

    // ---- run -----------------------------------------------------------------
    Simulator::Stop(Seconds(simT));
    std::fprintf(stderr,
                 "[ns-3] N=%d C=%g bit/s T=%g s queue=%u p RTT_prop=%g ms; running...\n",
                 n, rate, simT, qlim, rttProp * 1000);
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t events = Simulator::GetEventCount();

    const uint64_t bnIpBytes = g_bnTxBytes - 2 * g_bnTxPackets; // strip the PPP header
    uint64_t rxPayload = 0;
    for (const auto& s : sinks)
    {
        rxPayload += s->GetTotalRx();
    }
    auto perWall = [wall](double count) {
        return wall > 0 ? PyFloat(RoundTo(count / wall, 1)) : std::string("null");
    };

    std::ostringstream js;
    js << "{\"simulator\": \"ns-3\", \"version\": \"3.37\""
       << ", \"flows\": " << n << ", \"rate_bps\": " << PyFloat(rate)
       << ", \"sim_seconds\": " << PyFloat(simT) << ", \"packets\": " << g_txPackets
       << ", \"wall_seconds\": " << PyFloat(RoundTo(wall, 3))
       << ", \"packets_per_wall_second\": " << perWall(g_txPackets)
       << ", \"bottleneck_packets\": " << g_bnTxPackets
       << ", \"bottleneck_packets_per_wall_second\": " << perWall(g_bnTxPackets)
       << ", \"events_per_wall_second\": " << perWall(events)
       << ", \"bottleneck_utilization\": " << PyFloat(RoundTo(bnIpBytes * 8 / (rate * simT), 4))
       << ", \"goodput_utilization\": " << PyFloat(RoundTo(rxPayload * 8 / (rate * simT), 4))
       << ", \"bottleneck_queue_packets\": " << qlim
       << ", \"bottleneck_drops\": " << g_bnDrops << ", \"other_drops\": " << g_otherDrops
       << ", \"events\": " << events << "}";
    Simulator::Destroy();
    std::cout << js.str() << std::endl;
    if (g_otherDrops)
    {
        std::cerr << "warning: packets were dropped outside the bottleneck queue\n";
    }
    return 0;
}
