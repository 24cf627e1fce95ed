//! The scenario schema, defined once here and validated here: every error names the field
//! path, the bad value and what is allowed. Python passes TOML/JSON through unchanged.

use serde::{Deserialize, Serialize};
use crate::checks::check;
pub use crate::tcp::config::*;
use crate::trace_config::TraceConfig;
use crate::workload::Dist;
use smallpipe_core::link::{DeliveryTrace, Framing, FramingKind, LossModelConfig};
use smallpipe_core::{ConfigError, QdiscConfig, Rng};

/// Units per run (flows, sessions, users, host pairs, log clients). Memory, not addresses
/// (`sim::units::unit_addresses` has 8 million), sets it: a unit costs about 12 KB (hosts, four
/// access links with their queues, routes: docs/performance.md), so 10^6 units take about
/// 12 GB, three times the 4 GB a run should fit in; the memory guard (guard.py) refuses
/// sooner on a smaller machine. Host pairs of a Poisson group carry any number of flows.
pub const MAX_UNITS: usize = 1_000_000;

/// A whole simulation: topology, TCP knobs, and flow groups.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seed of every random stream of the run.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// Simulated time, seconds.
    #[serde(default = "d_duration")]
    pub duration_s: f64,
    /// Length of the per-flow delivered-bytes slices, seconds.
    #[serde(default = "d_slice")]
    pub slice_s: f64,
    #[serde(default)]
    pub link: LinkConfig,
    /// `[tcp]`; its stack's defaults are filled in by `Scenario::from_json`.
    #[serde(default, serialize_with = "TcpConfig::serialize_canonical")]
    pub tcp: TcpConfig,
    /// How the senders' edge marks the DSCP of their packets (default: no marking).
    #[serde(default)]
    pub edge: EdgeConfig,
    /// Dumbbell (default) or the two-path diamond of Matta & Guo's Figure 6.
    #[serde(default)]
    pub topology: TopologyConfig,
    pub flows: Vec<FlowGroup>,
    /// Connection (0-based, in opening order) whose sender is traced: every packet it emits
    /// and every change of its cwnd or ssthresh (`Results::trace`), for validation scripts.
    #[serde(default)]
    pub trace_conn: Option<u32>,
    /// Record every open connection's sender state (cwnd, RTO backoff, in a timeout) and,
    /// with a TAQ bottleneck, TAQ's inferred state of it, at each slice's end
    /// (`Results::sender_epochs`).
    #[serde(default)]
    pub record_sender_epochs: bool,
    /// Which end hosts carry the flows: TCP (default) or RCP (`docs/rcp.md`), which needs
    /// an RCP router (`link.queue.kind = "rcp"`) on the bottleneck.
    #[serde(default, skip_serializing_if = "Transport::is_tcp")]
    pub transport: Transport,
    /// How DropTail links move packets: one event per transmission end and one per arrival
    /// (default), or departures computed when a packet is offered and only its arrival
    /// scheduled (`crate::link`); results differ only in the order of events of equal time.
    #[serde(default, skip_serializing_if = "FifoHops::is_events")]
    pub fifo_hops: FifoHops,
    /// Opt-in time series, event trace and pcap (`crate::trace`); absent, nothing is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// How per-flow rows leave the run; absent, they are all returned at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputConfig>,
}

/// `[output]`: streaming of per-flow rows.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Hand the rows of finished (recycled) connections out during the run, in batches of
    /// at least this many flows (Python writes each batch as a Parquet part), so a run of
    /// 10^8 flows never holds its rows at once.
    pub stream_flows_every: u64,
}

/// Upper bound of `output.stream_flows_every`: parts of more than 10^7 rows would hold as
/// much in memory as streaming is meant to avoid.
const STREAM_FLOWS_MAX: u64 = 10_000_000;

/// The end hosts' transport protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// The RFC TCP of `tcp/` with the `tcp` knobs.
    #[default]
    Tcp,
    /// RCP senders (`rcp.rs`) pacing at the rate the routers advertise; the receivers stay
    /// TCP and echo the rate. Uses the `tcp` knobs for packet size and timers.
    Rcp,
}

impl Transport {
    fn is_tcp(&self) -> bool {
        *self == Transport::Tcp
    }
}

/// How the simulator runs a link whose discipline is DropTail (`Scenario::fifo_hops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FifoHops {
    /// Every transmission ends in an event that takes the next packet from the queue.
    #[default]
    Events,
    /// A FIFO's departures follow from its arrivals (`max(offered, previous departure) +
    /// size / rate`): the link schedules only the arrival at the far end and performs the
    /// queue's dequeues lazily, at their exact times. Links that something observes between
    /// events (traced links, a bottleneck direction whose other side reads its departures,
    /// lossy links with jitter) keep their events. A lossless bottleneck direction is also
    /// chained to the access links after it where they can never drop: its arrival at the
    /// far router is no event (`Simulator::may_chain_hop`).
    Computed,
}

impl FifoHops {
    fn is_events(&self) -> bool {
        *self == FifoHops::Events
    }
}

/// The edge's DSCP marking rule, applied to every packet a data sender emits (SYN, data,
/// retransmissions, FIN; not the receivers' ACKs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeMark {
    /// No marking: DSCP 0.
    #[default]
    None,
    /// An oracle: a connection whose transfer size is at most `threshold_bytes` is marked
    /// `dscp` (the sender knows the size; a real edge would not). Unsized connections
    /// (unlimited bulk, interactive) are not marked.
    SizeOracle,
    /// The first `in_pkts` packets of every connection are marked `dscp` (counted by the
    /// edge, as RIO's and lifetime classification's "first N packets").
    FirstN,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeConfig {
    #[serde(default)]
    pub mark: EdgeMark,
    /// `size_oracle`: the largest transfer, bytes, marked short.
    #[serde(default)]
    pub threshold_bytes: Option<u64>,
    /// `first_n`: packets per connection marked.
    #[serde(default)]
    pub in_pkts: Option<u32>,
    /// The codepoint set on marked packets (AF11 = 10).
    #[serde(default = "d_dscp")]
    pub dscp: u8,
}

/// How the diamond's edge (the left router) spreads data packets over its two paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Per flow, by a salted hash of the 5-tuple: each path with probability 1/2.
    LoadBalanced,
    /// Packets marked `edge.dscp` (short flows, by the `size_oracle` edge mark) take path
    /// 1, the others path 2.
    Size,
    /// A flow's first `lifetime_pkts` packets take path 1, the rest path 2 (a moved flow
    /// can be reordered: its packets on path 2 may overtake those queued on path 1).
    Lifetime,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DiamondConfig {
    #[serde(default = "d_routing")]
    pub routing: Routing,
    /// `lifetime`: packets of a flow routed on path 1 before it moves to path 2.
    #[serde(default = "d_lifetime_pkts")]
    pub lifetime_pkts: u32,
    /// Discipline of path 2 (path 1 uses `link.queue`); unset = the same as path 1.
    #[serde(default)]
    pub path2_queue: Option<QdiscConfig>,
    /// Rate of path 2, bit/s; unset = `link.rate_bps` (path 1's).
    #[serde(default)]
    pub path2_rate_bps: Option<f64>,
}

/// The topology between the senders' and the receivers' access links.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant)] // read once at set-up, never on the hot path
pub enum TopologyConfig {
    /// One bottleneck (`link`) each way.
    #[default]
    Dumbbell,
    /// Two forward paths from the edge, each a link like `link` (rate, delay), path 1 with
    /// `link.queue` and path 2 with `path2_queue`; ACKs return over `link`'s reverse side.
    Diamond(DiamondConfig),
}

/// The dumbbell: per-flow access links into a shared bottleneck.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Bottleneck rate, bit/s (both directions).
    #[serde(default = "d_rate")]
    pub rate_bps: f64,
    /// One-way propagation delay of the bottleneck, ms.
    #[serde(default = "d_delay")]
    pub delay_ms: f64,
    /// Rate of every access link, bit/s.
    #[serde(default = "d_access_rate")]
    pub access_rate_bps: f64,
    /// One-way delay of each receiver's access link, ms; senders' access delays are set so
    /// each flow's base RTT is its `rtt_ms`.
    #[serde(default)]
    pub receiver_delay_ms: f64,
    /// Bernoulli loss probability on the bottleneck, data (forward) direction.
    #[serde(default)]
    pub loss: f64,
    /// Bernoulli loss probability on the bottleneck, ACK (reverse) direction.
    #[serde(default)]
    pub reverse_loss: f64,
    /// A delivery trace (mahimahi's format, `docs/links.md`) the bottleneck sends by in
    /// place of `rate_bps`, both directions unless `reverse_trace` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// A delivery trace for the reverse (ACK) direction only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_trace: Option<String>,
    /// Bursty loss on the bottleneck's forward direction, in place of `loss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_model: Option<LossModelConfig>,
    /// Bursty loss on the reverse direction, in place of `reverse_loss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_loss_model: Option<LossModelConfig>,
    /// Bytes added to each packet's IP length in the bottleneck's rate accounting (both
    /// directions), may be negative.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub overhead_bytes: i32,
    /// Minimum packet unit of that accounting, bytes.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub mpu_bytes: u32,
    /// Link-layer framing of that accounting: "none", "atm" (48 bytes per 53-byte cell) or
    /// "ptm" (64b/65b).
    #[serde(default, skip_serializing_if = "FramingKind::is_none")]
    pub framing: FramingKind,
    /// 1-based arrival indices of packets the bottleneck loses in the forward direction
    /// (every packet counts: SYN, data, ACKs), for validation scripts.
    #[serde(default)]
    pub drop_nth: Vec<u64>,
    /// The same for the reverse direction.
    #[serde(default)]
    pub reverse_drop_nth: Vec<u64>,
    /// Discipline of the bottleneck's forward egress.
    #[serde(default)]
    pub queue: QdiscConfig,
    /// Discipline of the bottleneck's reverse egress (ACKs).
    #[serde(default = "d_big_queue")]
    pub reverse_queue: QdiscConfig,
}


/// A fixed value or a `[min, max]` range drawn uniformly per flow.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Spread {
    Fixed(f64),
    Uniform([f64; 2]),
}

impl Spread {
    pub fn bounds(self) -> (f64, f64) {
        match self {
            Spread::Fixed(v) => (v, v),
            Spread::Uniform([a, b]) => (a, b),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AppKind {
    /// Long-lived: sends `size_bytes`, or forever when unset.
    Bulk,
    /// One fixed-size transfer of `size_bytes`.
    Transfer,
    /// Single-packet bursts of `burst_bytes` with exponential gaps of mean `mean_gap_s`.
    Interactive,
    /// Back-to-back connections of `size` on one host pair, `think_s` apart.
    Session,
    /// A web user: pages of `objects_per_page` objects of `size`, fetched over at most
    /// `connections` parallel connections (one per object), `think_s` between pages.
    Web,
    /// Poisson arrivals of connections of `size` at `load` × the bottleneck rate (or
    /// `rate_per_s`), spread over `count` host pairs.
    Poisson,
    /// Replay of a Squid `access.log` (`log_path`): one unit per client, one connection
    /// per request, at the logged time or as fast as possible over `connections`.
    Replay,
    /// UDP sources of ns-2's `Application/Traffic/*` (`crate::udp`): CBR, exponential and
    /// Pareto on/off, one datagram stream per unit.
    #[serde(rename = "udp_cbr")]
    UdpCbr,
    #[serde(rename = "udp_expoo")]
    UdpExpoo,
    #[serde(rename = "udp_pareto")]
    UdpPareto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayMode {
    /// Each request starts at its logged time (relative to the first).
    Logged,
    /// Each client fetches its requests in order, as fast as its pool allows (TAQ §5.5).
    Asap,
}

impl AppKind {
    pub fn name(self) -> &'static str {
        match self {
            AppKind::Bulk => "bulk",
            AppKind::Transfer => "transfer",
            AppKind::Interactive => "interactive",
            AppKind::Session => "session",
            AppKind::Web => "web",
            AppKind::Poisson => "poisson",
            AppKind::Replay => "replay",
            AppKind::UdpCbr => "udp_cbr",
            AppKind::UdpExpoo => "udp_expoo",
            AppKind::UdpPareto => "udp_pareto",
        }
    }

    /// The UDP source kind of a UDP app.
    pub fn udp(self) -> Option<crate::udp::UdpKind> {
        use crate::udp::UdpKind;
        match self {
            AppKind::UdpCbr => Some(UdpKind::Cbr),
            AppKind::UdpExpoo => Some(UdpKind::Expoo),
            AppKind::UdpPareto => Some(UdpKind::Pareto),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GapFrom {
    /// The next burst is written `gap` after the previous one was written.
    Send,
    /// The next burst is written `gap` after the previous one was acknowledged.
    Response,
}

/// `count` units, each a sender and a receiver host of its own: a flow (bulk, transfer,
/// interactive), a session, a web user, or a host pair of a Poisson arrival process.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowGroup {
    #[serde(default = "d_count")]
    pub count: u32,
    pub app: AppKind,
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Transfer sizes in bytes drawn per connection (session, web, poisson); exclusive
    /// with `size_bytes`.
    #[serde(default)]
    pub size: Option<Dist>,
    /// Session: seconds between one connection's end and the next one's start; web:
    /// between the end of a page and the next page.
    #[serde(default = "d_think")]
    pub think_s: Dist,
    /// Web: objects per page.
    #[serde(default = "d_objects")]
    pub objects_per_page: Dist,
    /// Web: parallel connections per user (the TAQ paper's flow pool: 4).
    #[serde(default = "d_connections")]
    pub connections: u32,
    /// Poisson: offered load as a fraction of the bottleneck rate (uses the mean of `size`).
    #[serde(default)]
    pub load: Option<f64>,
    /// Poisson: arrivals per second in all (instead of `load`).
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    /// Replay: path of a Squid native access.log.
    #[serde(default)]
    pub log_path: Option<String>,
    #[serde(default = "d_replay")]
    pub replay: ReplayMode,
    /// Replay: skip and count malformed lines instead of rejecting the log.
    #[serde(default)]
    pub skip_malformed: bool,
    /// Transfer and bulk: record when each MSS-sized packet's worth of data arrived in
    /// order (the thesis's measuring flow: the k-th packet's time is a k-packet FCT).
    #[serde(default)]
    pub record_progress: bool,
    /// Poisson: one arrival in `marker_every`, on average, is a marker flow whose size is
    /// drawn from `marker_size` instead (the thesis's measuring flows of chosen lengths,
    /// so the tail of the size range gets enough samples). Unset: no markers.
    #[serde(default)]
    pub marker_every: Option<u32>,
    /// Poisson: the markers' size, bytes (e.g. `{ dist = "empirical", values = [...] }`).
    #[serde(default)]
    pub marker_size: Option<Dist>,
    /// Base (propagation) round-trip time, ms.
    #[serde(default = "d_rtt")]
    pub rtt_ms: Spread,
    /// Start time, s.
    #[serde(default = "d_start")]
    pub start_s: Spread,
    /// Interactive: bytes per burst (at most one MSS). Unset: one MSS.
    #[serde(default)]
    pub burst_bytes: Option<u32>,
    /// Interactive: mean gap between bursts, s.
    #[serde(default = "d_gap")]
    pub mean_gap_s: f64,
    #[serde(default = "d_gap_from")]
    pub gap_from: GapFrom,
    /// Mark every packet this group's senders emit with this DSCP, overriding the `[edge]`
    /// rule (e.g. to put background telnet flows in a chosen class).
    #[serde(default)]
    pub dscp: Option<u8>,
    /// `[flows.tcp]`: keys of `[tcp]` whose values this group's endpoints (both ends of its
    /// connections) take instead of the scenario's, so one run can mix TCP variants. Kept
    /// as given (the canonical form lists only the overrides); `Scenario::group_tcp` gives
    /// the merged, validated table. Unset: the scenario's `[tcp]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<serde_json::Map<String, serde_json::Value>>,
    /// UDP apps (`crate::udp`), ns-2's names with units: `packetSize_` (the whole IP
    /// packet), `rate_` (while on), `interval_` (CBR, instead of the rate), `burst_time_`,
    /// `idle_time_` (means, on/off) and `shape_` (Pareto). Unset: ns-2's defaults. Left out
    /// of the canonical form when unset, so scenarios without UDP keep theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_size_bytes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_time_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_time_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
}

fn d_seed() -> u64 { 1 }
fn d_duration() -> f64 { 60.0 }
fn d_slice() -> f64 { 1.0 }
fn d_rate() -> f64 { 1e6 }
fn is_zero_i32(v: &i32) -> bool { *v == 0 }
fn is_zero_u32(v: &u32) -> bool { *v == 0 }
fn d_delay() -> f64 { 1.0 }
fn d_access_rate() -> f64 { 1e8 }
fn d_big_queue() -> QdiscConfig {
    QdiscConfig::DropTail(smallpipe_core::qdisc::DropTailConfig::packets(1000))
}
fn d_count() -> u32 { 1 }
fn d_rtt() -> Spread { Spread::Fixed(100.0) }
fn d_start() -> Spread { Spread::Fixed(0.0) }
fn d_gap() -> f64 { 1.0 }
fn d_gap_from() -> GapFrom { GapFrom::Response }
fn d_think() -> Dist { Dist::Fixed(0.0) }
fn d_objects() -> Dist { Dist::Fixed(1.0) }
fn d_connections() -> u32 { 4 }
fn d_replay() -> ReplayMode { ReplayMode::Asap }
fn d_dscp() -> u8 { 10 }
fn d_routing() -> Routing { Routing::LoadBalanced }
fn d_lifetime_pkts() -> u32 { 32 }

impl Default for LinkConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults deserialize")
    }
}
impl Default for EdgeConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults deserialize")
    }
}




impl Scenario {
    /// Parses and checks a scenario, reporting the field path of any type or unknown-field
    /// error; the knobs `[tcp]` leaves out take its stack's defaults.
    pub fn from_json(text: &str) -> Result<Scenario, ConfigError> {
        let mut value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| serde_error("scenario".into(), &e.to_string()))?;
        if let Some(serde_json::Value::Object(tcp)) = value.get_mut("tcp") {
            Stack::fill_defaults(tcp);
        }
        let rate_given = value.get("link").and_then(|l| l.get("rate_bps")).is_some();
        let mut scenario: Scenario = serde_path_to_error::deserialize(value).map_err(|e| {
            let field = e.path().to_string();
            let (field, msg) = field_inside_queue(text, &field).unwrap_or((field, e.into_inner().to_string()));
            serde_error(if field == "." { "scenario".into() } else { field }, &msg)
        })?;
        scenario.validate()?;
        scenario.link.resolve_trace_rate(rate_given).map_err(|e| e.within("link"))?;
        scenario.resolve_queue_links();
        Ok(scenario)
    }

    /// The bottleneck disciplines' `link_rate_bps`/`link_delay_ns` set as the simulator sets
    /// them (`set_link`), so that the canonical form records the link a queue feeds rather
    /// than the discipline's defaults (a RED run once reported 10 Mbit/s on a 1 Mbit/s link).
    fn resolve_queue_links(&mut self) {
        let (rate_bps, delay_ns) = (self.link.rate_bps as u64, (self.link.delay_ms * 1e6).round() as u64);
        self.link.queue.set_link(rate_bps, delay_ns);
        self.link.reverse_queue.set_link(rate_bps, delay_ns);
        if let TopologyConfig::Diamond(d) = &mut self.topology {
            let rate2_bps = d.path2_rate_bps.map_or(rate_bps, |r| r as u64);
            if let Some(q) = &mut d.path2_queue {
                q.set_link(rate2_bps, delay_ns);
            }
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a scenario always serializes")
    }

    /// The TCP knobs of group `i`'s endpoints: `[tcp]` with the group's `[flows.tcp]` keys
    /// over it, checked as `[tcp]` is; errors name `flows[i].tcp.<key>`.
    pub fn group_tcp(&self, i: usize) -> Result<TcpConfig, ConfigError> {
        let Some(overrides) = &self.flows[i].tcp else { return Ok(self.tcp.clone()) };
        let field = format!("flows[{i}].tcp");
        let merged = self.tcp.merged_with(overrides);
        let tcp: TcpConfig = serde_path_to_error::deserialize(serde_json::Value::Object(merged)).map_err(|e| {
            let path = e.path().to_string();
            serde_error(if path == "." { field.clone() } else { format!("{field}.{path}") }, &e.into_inner().to_string())
        })?;
        tcp.validate().map_err(|e| e.within(&field))?;
        Ok(tcp)
    }

    /// Range checks of every field, in declaration order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(self.duration_s.is_finite() && self.duration_s > 0.0 && self.duration_s <= 1e7,
            "duration_s", self.duration_s, "a number of seconds in (0, 1e7]")?;
        check(self.slice_s.is_finite() && self.slice_s > 0.0 && self.slice_s <= self.duration_s,
            "slice_s", self.slice_s, "a number of seconds in (0, duration_s]")?;
        check(self.duration_s / self.slice_s <= 1e6, "slice_s", self.slice_s,
            "at most 1e6 slices per run (duration_s / slice_s)")?;
        self.link.validate().map_err(|e| e.within("link"))?;
        self.tcp.validate().map_err(|e| e.within("tcp"))?;
        self.edge.validate().map_err(|e| e.within("edge"))?;
        if let TopologyConfig::Diamond(d) = &self.topology {
            d.validate(&self.edge).map_err(|e| e.within("topology"))?;
            check(self.link.trace.is_none(), "topology.kind", "diamond",
                "\"dumbbell\" with link.trace (path 2 has no trace of its own)")?;
        }
        check(!self.flows.is_empty(), "flows", "[]", "at least one [[flows]] group")?;
        let min_rtt_ms = 2.0 * (self.link.delay_ms + self.link.receiver_delay_ms);
        for (i, g) in self.flows.iter().enumerate() {
            let mss = self.group_tcp(i)?.mss_bytes();
            g.validate(min_rtt_ms, mss).map_err(|e| e.within(&format!("flows[{i}]")))?;
        }
        // Checked here, not when the units are built: a run that would stop at the last unit
        // has allocated hundreds of MB first. A replayed log's clients are counted at set-up.
        let units: u64 = self.flows.iter().filter(|g| g.app != AppKind::Replay).map(|g| u64::from(g.count)).sum();
        check(units <= MAX_UNITS as u64, "flows", format!("{units} units in all"),
            &format!("at most {MAX_UNITS} units per run (the sum of every group's count)"))?;
        if let Some(o) = &self.output {
            check((1..=STREAM_FLOWS_MAX).contains(&o.stream_flows_every), "output.stream_flows_every",
                o.stream_flows_every, &format!("a number of flows per part from 1 to {STREAM_FLOWS_MAX}"))?;
        }
        if self.transport == Transport::Rcp {
            check(matches!(self.link.queue, QdiscConfig::Rcp(_)), "transport", "rcp",
                "\"tcp\", or \"rcp\" with an RCP router (link.queue.kind = \"rcp\")")?;
            for (i, g) in self.flows.iter().enumerate() {
                check(g.app != AppKind::Interactive, &format!("flows[{i}].app"), "interactive",
                    "a sized or bulk application with transport = \"rcp\" (RCP senders have no bursts)")?;
            }
        }
        if let Some(t) = &self.trace {
            t.validate(self.duration_s).map_err(|e| e.within("trace"))?;
        }
        Ok(())
    }
}

/// The highest link rate: 1 Tbit/s. Rates become whole bit/s (`u64`) and serialization
/// times whole nanoseconds; past this a packet takes no time at all.
const MAX_RATE_BPS: f64 = 1e12;
const RATE_RANGE: &str = "a whole number of bit/s from 1000 to 1e12 (1 Tbit/s)";
/// The longest delay or RTT: the longest run (`duration_s` <= 1e7 s), in ms; a longer one
/// would overflow the nanosecond clock or never deliver a packet.
const MAX_DELAY_MS: f64 = 1e10;
const DELAY_RANGE: &str = "a number of ms from 0 to 1e10 (the longest run, 1e7 s)";
/// The longest RTT: both directions of the longest bottleneck and receiver delays.
const MAX_RTT_MS: f64 = 4.0 * MAX_DELAY_MS;

fn whole_rate(bps: f64) -> bool {
    bps.is_finite() && (1000.0..=MAX_RATE_BPS).contains(&bps) && bps.fract() == 0.0
}

fn delay_in_range(ms: f64) -> bool {
    ms.is_finite() && (0.0..=MAX_DELAY_MS).contains(&ms)
}

impl LinkConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        check(whole_rate(self.rate_bps), "rate_bps", self.rate_bps, RATE_RANGE)?;
        check(delay_in_range(self.delay_ms), "delay_ms", self.delay_ms, DELAY_RANGE)?;
        check(whole_rate(self.access_rate_bps), "access_rate_bps", self.access_rate_bps, RATE_RANGE)?;
        check(delay_in_range(self.receiver_delay_ms), "receiver_delay_ms", self.receiver_delay_ms, DELAY_RANGE)?;
        check((0.0..1.0).contains(&self.loss), "loss", self.loss, "a probability in [0, 1)")?;
        check((0.0..1.0).contains(&self.reverse_loss), "reverse_loss", self.reverse_loss, "a probability in [0, 1)")?;
        for (field, model, bernoulli, other) in [("loss_model", &self.loss_model, self.loss, "loss"),
                                                   ("reverse_loss_model", &self.reverse_loss_model, self.reverse_loss, "reverse_loss")] {
            if let Some(m) = model {
                m.build().map_err(|e| e.within(field))?;
                check(bernoulli == 0.0, other, bernoulli, &format!("0 (unset) when {field} is set: one loss model per direction"))?;
            }
        }
        for (field, path) in [("trace", &self.trace), ("reverse_trace", &self.reverse_trace)] {
            if let Some(p) = path {
                DeliveryTrace::load(field, p)?;
            }
        }
        self.framing()?;
        check(!self.drop_nth.contains(&0), "drop_nth", 0, "1-based packet indices")?;
        check(!self.reverse_drop_nth.contains(&0), "reverse_drop_nth", 0, "1-based packet indices")?;
        self.queue.build().map_err(|e| e.within("queue"))?;
        self.reverse_queue.build().map_err(|e| e.within("reverse_queue"))?;
        Ok(())
    }
}

impl LinkConfig {
    /// The bottleneck's per-packet wire accounting (both directions).
    pub fn framing(&self) -> Result<Framing, ConfigError> {
        Framing::new(self.overhead_bytes, self.mpu_bytes, self.framing)
    }

    /// The rate a traced bottleneck stands for (its trace's capacity, to the bit/s): what
    /// its disciplines are sized for and its utilization is measured against.
    pub fn trace_rate_bps(trace: &DeliveryTrace) -> f64 {
        trace.mean_rate_bps().round().max(1000.0)
    }

    /// With a `trace`, `rate_bps` becomes the trace's capacity (so the canonical form and
    /// the link tables carry it); a rate set by hand is refused unless it is that one (the
    /// canonical form read back).
    fn resolve_trace_rate(&mut self, rate_given: bool) -> Result<(), ConfigError> {
        let Some(path) = &self.trace else { return Ok(()) };
        let rate = Self::trace_rate_bps(&DeliveryTrace::load("trace", path)?);
        check(!rate_given || self.rate_bps == rate, "rate_bps", self.rate_bps,
            &format!("unset when link.trace is set: the trace sets the rate (its capacity, {rate} bit/s)"))?;
        self.rate_bps = rate;
        Ok(())
    }
}

impl EdgeConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        check(self.dscp <= 63, "dscp", self.dscp, "a DSCP value 0 to 63")?;
        match self.mark {
            EdgeMark::None => {}
            EdgeMark::SizeOracle => check(self.threshold_bytes.is_some(), "threshold_bytes", "unset",
                "a size in bytes for mark = \"size_oracle\"")?,
            EdgeMark::FirstN => check(self.in_pkts.is_some_and(|n| n >= 1), "in_pkts",
                format!("{:?}", self.in_pkts), "at least 1 packet for mark = \"first_n\"")?,
        }
        Ok(())
    }
}

impl DiamondConfig {
    fn validate(&self, edge: &EdgeConfig) -> Result<(), ConfigError> {
        check(self.routing != Routing::Size || edge.mark == EdgeMark::SizeOracle, "routing", "size",
            "routing = \"size\" only with edge.mark = \"size_oracle\" (it routes on the edge's mark)")?;
        check(self.lifetime_pkts >= 1, "lifetime_pkts", self.lifetime_pkts, "at least 1 packet")?;
        if let Some(r) = self.path2_rate_bps {
            check(whole_rate(r), "path2_rate_bps", r, &format!("{RATE_RANGE}, or unset"))?;
        }
        if let Some(q) = &self.path2_queue {
            q.build().map_err(|e| e.within("path2_queue"))?;
        }
        Ok(())
    }
}


impl FlowGroup {
    /// The mean transfer size, bytes, markers included (`None` when unsized or of infinite
    /// mean), so a Poisson `load` is the load actually offered.
    pub fn mean_size_bytes(&self) -> Option<f64> {
        let base = self.size.as_ref().map_or(self.size_bytes.map(|b| b as f64), |d| d.mean())?;
        match (self.marker_every, &self.marker_size) {
            (Some(every), Some(marker)) => {
                let share = 1.0 / every as f64;
                Some((1.0 - share) * base + share * marker.mean()?)
            }
            _ => Some(base),
        }
    }

    /// A UDP group's source (`None` for TCP apps), validated.
    pub fn udp_source(&self) -> Result<Option<crate::udp::UdpSource>, ConfigError> {
        let Some(kind) = self.app.udp() else { return Ok(None) };
        crate::udp::UdpSource::from_fields(kind, self.packet_size_bytes, self.rate_bps, self.interval_s,
            self.burst_time_s, self.idle_time_s, self.shape).map(Some)
    }

    /// One connection's size, bytes: a marker's (one time in `marker_every`) or `size`'s.
    /// Panics for an unsized group (validation requires a size where this is called).
    pub fn draw_size(&self, rng: &mut Rng) -> u64 {
        if let (Some(every), Some(marker)) = (self.marker_every, &self.marker_size) {
            if rng.chance(1.0 / every as f64) {
                return marker.sample_bytes(rng);
            }
        }
        match (&self.size, self.size_bytes) {
            (Some(d), _) => d.sample_bytes(rng),
            (None, Some(b)) => b,
            (None, None) => unreachable!("validated: sized apps have a size"),
        }
    }

    fn validate(&self, min_rtt_ms: f64, mss: u32) -> Result<(), ConfigError> {
        check((1..=MAX_UNITS as u32).contains(&self.count), "count", self.count, &format!("1 to {MAX_UNITS} units"))?;
        check(self.size_bytes != Some(0), "size_bytes", 0, "a positive size, or unset")?;
        check(!(self.size_bytes.is_some() && self.size.is_some()), "size", "set with size_bytes",
            "either size_bytes or size, not both")?;
        let sized = self.size_bytes.is_some() || self.size.is_some();
        match self.app {
            AppKind::Replay => {
                check(!sized, "size", "set", "no size for app = \"replay\" (the log gives the sizes)")?;
                check(self.count == 1, "count", self.count, "1 for app = \"replay\" (the log's clients are the units)")?;
                let path = self.log_path.as_deref().unwrap_or("");
                check(!path.is_empty(), "log_path", "unset", "the path of a Squid access.log for app = \"replay\"")?;
                check(std::path::Path::new(path).is_file(), "log_path", path, "a readable file")?;
            }
            AppKind::Transfer | AppKind::Session | AppKind::Web | AppKind::Poisson => check(sized, "size_bytes", "unset",
                &format!("a size (size_bytes, or a size distribution) for app = \"{}\"", self.app.name()))?,
            AppKind::Bulk | AppKind::Interactive => check(self.size.is_none(), "size", "a distribution",
                "size_bytes (a number) for bulk and interactive flows")?,
            AppKind::UdpCbr | AppKind::UdpExpoo | AppKind::UdpPareto => {
                check(!sized, "size", "set", &format!("no size for app = \"{}\" (it sends for the whole run)", self.app.name()))?;
                check(self.tcp.is_none(), "tcp", "set", &format!("no [flows.tcp] for app = \"{}\"", self.app.name()))?;
                self.udp_source()?;
            }
        }
        if self.app.udp().is_none() {
            let udp_fields = [("packet_size_bytes", self.packet_size_bytes.is_some()), ("rate_bps", self.rate_bps.is_some()),
                ("interval_s", self.interval_s.is_some()), ("burst_time_s", self.burst_time_s.is_some()),
                ("idle_time_s", self.idle_time_s.is_some()), ("shape", self.shape.is_some())];
            if let Some((field, _)) = udp_fields.iter().find(|(_, set)| *set) {
                check(false, field, "set", "only for app = \"udp_cbr\", \"udp_expoo\" or \"udp_pareto\" (TCP apps take [tcp].packet_size_bytes)")?;
            }
        }
        if let Some(d) = &self.size {
            d.validate("size", 1.0)?;
        }
        self.think_s.validate("think_s", 0.0)?;
        self.objects_per_page.validate("objects_per_page", 1.0)?;
        check((1..=1000).contains(&self.connections), "connections", self.connections, "1 to 1000 parallel connections")?;
        check(!self.record_progress || matches!(self.app, AppKind::Transfer | AppKind::Bulk), "record_progress", true,
            "true only for app = \"transfer\" or \"bulk\"")?;
        if self.app == AppKind::Poisson {
            check(self.load.is_some() != self.rate_per_s.is_some(), "load",
                format!("load {:?}, rate_per_s {:?}", self.load, self.rate_per_s), "exactly one of load, rate_per_s")?;
            if let Some(l) = self.load {
                check(l.is_finite() && l > 0.0 && l <= 10.0, "load", l, "a load in (0, 10] (fraction of the bottleneck rate)")?;
                check(self.mean_size_bytes().is_some(), "size", "a distribution without a finite mean", "a size with a finite mean to set load")?;
            }
            if let Some(r) = self.rate_per_s {
                check(r.is_finite() && r > 0.0, "rate_per_s", r, "a positive arrival rate")?;
            }
        }
        check(self.marker_every.is_none() || self.app == AppKind::Poisson, "marker_every", self.app.name(),
            "markers only for app = \"poisson\"")?;
        check(self.marker_every.is_some() == self.marker_size.is_some(), "marker_size",
            format!("marker_every {:?}, marker_size {}", self.marker_every, if self.marker_size.is_some() { "set" } else { "unset" }),
            "both marker_every and marker_size, or neither")?;
        if let Some(every) = self.marker_every {
            check(every >= 1, "marker_every", every, "1 or more (one arrival in marker_every is a marker)")?;
        }
        if let Some(d) = &self.marker_size {
            d.validate("marker_size", 1.0)?;
        }
        let (lo, hi) = self.rtt_ms.bounds();
        check(lo.is_finite() && hi.is_finite() && lo <= hi && lo >= min_rtt_ms && lo > 0.0 && hi <= MAX_RTT_MS, "rtt_ms",
            format!("{:?}", self.rtt_ms.bounds()),
            &format!("a positive RTT or [min, max] range, at least 2 x (link.delay_ms + link.receiver_delay_ms) = {min_rtt_ms} ms \
                      and at most {MAX_RTT_MS:e} ms"))?;
        let (lo, hi) = self.start_s.bounds();
        check(lo.is_finite() && hi.is_finite() && lo >= 0.0 && lo <= hi, "start_s",
            format!("{:?}", self.start_s.bounds()), "a time >= 0 s or a [min, max] range")?;
        if let Some(b) = self.burst_bytes {
            check(b >= 1 && b <= mss, "burst_bytes", b, &format!("1 to one MSS ({mss} bytes)"))?;
        }
        check(self.mean_gap_s.is_finite() && self.mean_gap_s > 0.0, "mean_gap_s", self.mean_gap_s, "a positive number of seconds")?;
        if let Some(d) = self.dscp {
            check(d <= 63, "dscp", d, "a DSCP value 0 to 63, or unset")?;
        }
        Ok(())
    }
}

/// serde's error path stops at a tagged enum: for an error at a discipline's table (`link.queue`)
/// or a loss model's (`link.loss_model`), the path of the field inside it and the error there,
/// found by parsing the table's knobs as its `kind`'s own. Path and message come from that one parse, so they name the same error
/// when the table holds several.
fn field_inside_queue(text: &str, field: &str) -> Option<(String, String)> {
    let root: serde_json::Value = serde_json::from_str(text).ok()?;
    let mut node = &root;
    for segment in field.split('.') {
        let mut parts = segment.split('[');
        node = node.get(parts.next()?)?;
        for index in parts {
            node = node.get(index.strip_suffix(']')?.parse::<usize>().ok()?)?;
        }
    }
    let mut knobs = node.as_object()?.clone();
    let kind = knobs.remove("kind")?;
    let kind = kind.as_str()?;
    let knobs = serde_json::Value::Object(knobs);
    let (inner, msg) = QdiscConfig::locate_error(kind, knobs.clone()).or_else(|| LossModelConfig::locate_error(kind, knobs))?;
    Some((if inner == "." { field.to_string() } else { format!("{field}.{inner}") }, msg))
}

/// Turns serde's message into field / value / allowed.
fn serde_error(field: String, msg: &str) -> ConfigError {
    // serde_json appends " at line L column C"; the field path says more.
    let msg = msg.split(" at line ").next().unwrap_or(msg);
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        // serde_path_to_error's path usually ends in the unknown field's name already; inside
        // a tagged enum (`link.queue`) it stops at the enum, so the name is appended.
        let (name, expected) = rest.split_once("`, expected ").unwrap_or((rest.trim_end_matches('`'), "a known field"));
        let path = if field == "scenario" {
            name.to_string()
        } else if field == name || field.ends_with(&format!(".{name}")) {
            field
        } else {
            format!("{field}.{name}")
        };
        return ConfigError::new(path, "an unknown field", expected);
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.trim_end_matches('`');
        let path = if field == "scenario" { name.to_string() } else { format!("{field}.{name}") };
        return ConfigError::new(path, "missing", "a value (this field has no default)");
    }
    for prefix in ["invalid type: ", "invalid value: ", "unknown variant ", "invalid length "] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            if let Some((value, expected)) = rest.split_once(", expected ") {
                let value = match prefix {
                    "invalid length " => format!("a list of {value}"),
                    "unknown variant " => value.trim_matches('`').to_string(),
                    _ => plain_value(value),
                };
                return ConfigError::new(field, value, plain_expected(expected));
            }
        }
    }
    ConfigError::new(field, "this value", plain_expected(msg))
}

/// serde's rendering of a rejected value (``integer `5` ``, `map`) in the TOML user's words.
fn plain_value(value: &str) -> String {
    for prefix in ["integer ", "floating point ", "boolean ", "character "] {
        if let Some(v) = value.strip_prefix(prefix) {
            return v.trim_matches('`').to_string();
        }
    }
    match value {
        "map" => "a table".into(),
        "sequence" => "a list".into(),
        "unit value" | "null" | "Option value" => "no value (null)".into(),
        _ => value.strip_prefix("string ").unwrap_or(value).to_string(),
    }
}

/// serde's "expected" in the user's words: no Rust type names (`u32`, `struct LinkConfig`).
fn plain_expected(expected: &str) -> String {
    let whole = |max: &str| format!("a whole number from 0 to {max}");
    match expected {
        "u8" => whole("255"),
        "u16" => whole("65535"),
        "u32" => whole("4294967295"),
        "u64" => whole("18446744073709551615"),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a sequence" => "a list".into(),
        "a map" => "a table".into(),
        "variant identifier" => "a name in quotes".into(),
        _ if expected.starts_with("struct ") => "a table".into(),
        _ if expected.starts_with("internally tagged enum ") => "a table with a `kind` key".into(),
        _ if expected.starts_with("an array of length ") => {
            format!("a list of {} values", expected.trim_start_matches("an array of length "))
        }
        _ if expected.ends_with("untagged enum Spread") => "a number, or a [min, max] list of two numbers".into(),
        _ if expected.ends_with("untagged enum Dist") => {
            "a number, or a distribution table such as { dist = \"exponential\", mean = 1.0 }".into()
        }
        _ if expected.contains("enum ") => "a value of one of the forms docs/scenario.md lists".into(),
        _ => expected.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> ConfigError {
        Scenario::from_json(json).unwrap_err()
    }

    const MIN: &str = r#"{"flows":[{"app":"bulk"}]}"#;

    #[test]
    fn stream_flows_every_is_checked_and_absent_by_default() {
        let e = err(r#"{"output":{"stream_flows_every":0},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("output.stream_flows_every", "0"));
        assert!(e.allowed.contains("1 to 10000000"), "{}", e.allowed);
        let e = err(r#"{"output":{"stream_flows_every":10000001},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "output.stream_flows_every");
        // Absent, the canonical form has no `output` (scenario hashes stay as they were).
        assert!(!Scenario::from_json(MIN).unwrap().to_json().contains("output"));
        let sc = Scenario::from_json(r#"{"output":{"stream_flows_every":5},"flows":[{"app":"bulk"}]}"#).unwrap();
        assert_eq!(sc.output.map(|o| o.stream_flows_every), Some(5));
    }

    /// `fifo_hops` takes "events" or "computed"; the default is left out of the canonical
    /// form, so scenario hashes stay as they were.
    #[test]
    fn fifo_hops_is_checked_and_absent_by_default() {
        let e = err(r#"{"fifo_hops":"lazy","flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "fifo_hops");
        assert!(e.value.contains("lazy"), "{}", e.value);
        assert!(e.allowed.contains("events") && e.allowed.contains("computed"), "{}", e.allowed);
        assert!(!Scenario::from_json(MIN).unwrap().to_json().contains("fifo_hops"));
        let sc = Scenario::from_json(r#"{"fifo_hops":"computed","flows":[{"app":"bulk"}]}"#).unwrap();
        assert_eq!(sc.fifo_hops, FifoHops::Computed);
        assert!(sc.to_json().contains(r#""fifo_hops":"computed""#));
    }

    #[test]
    fn defaults_fill_in() {
        let s = Scenario::from_json(MIN).unwrap();
        assert_eq!(s.tcp.packet_size_bytes, 1500);
        assert_eq!(s.tcp.mss_bytes(), 1448);
        assert_eq!(s.flows[0].count, 1);
    }

    #[test]
    fn growth_rules_need_reno_without_hystart_and_the_ns3_dupack_rule_needs_sack() {
        let e = err(r#"{"tcp":{"cwnd_growth":"linux","congestion":"cubic"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.cwnd_growth", "linux"));
        let e = err(r#"{"tcp":{"cwnd_growth":"byte_counting","hystart":true},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.cwnd_growth", "byte_counting"));
        let e = err(r#"{"tcp":{"dupack_rule":"ns3","recovery":"newreno"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.dupack_rule");
        let e = err(r#"{"tcp":{"recovery_rto":"first_partial","recovery":"newreno"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.recovery_rto");
        let e = err(r#"{"tcp":{"disorder_ack":"ns3_timer","recovery":"newreno"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.disorder_ack", "ns3_timer"));
        let e = err(r#"{"tcp":{"recovery_partial_ack":"ns3","recovery":"reno"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.recovery_partial_ack", "ns3"));
        let e = err(r#"{"tcp":{"recovery_pipe":"ns3","recovery":"newreno"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.recovery_pipe", "ns3"));
        let e = err(r#"{"tcp":{"abc_limit_pkts":0},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.abc_limit_pkts");
        let ok = r#"{"tcp":{"cwnd_growth":"linux","dupack_rule":"ns3"},"flows":[{"app":"bulk"}]}"#;
        assert!(Scenario::from_json(ok).is_ok());
    }

    #[test]
    fn rack_needs_sack_and_rfc6675_pipe_and_stays_out_of_the_default_json() {
        let e = err(r#"{"tcp":{"loss_detection":"rack","recovery":"newreno"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.loss_detection", "rack"));
        assert!(e.allowed.contains("recovery = \"sack\""), "{e}");
        let e = err(r#"{"tcp":{"loss_detection":"rack","recovery":"sack","recovery_pipe":"ns3"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.loss_detection");
        let ok = Scenario::from_json(r#"{"tcp":{"loss_detection":"rack","recovery":"sack"},"flows":[{"app":"bulk"}]}"#);
        assert!(ok.unwrap().to_json().contains(r#""loss_detection":"rack""#));
        assert!(!Scenario::from_json(MIN).unwrap().to_json().contains("loss_detection"));
    }

    #[test]
    fn ssthresh_from_is_a_knob_of_both_senders() {
        for congestion in ["reno", "cubic"] {
            let json = format!(r#"{{"tcp":{{"congestion":"{congestion}","ssthresh_from":"cwnd"}},"flows":[{{"app":"bulk"}}]}}"#);
            assert!(Scenario::from_json(&json).is_ok(), "{congestion}");
        }
        let e = err(r#"{"tcp":{"ssthresh_from":"half"},"flows":[{"app":"bulk"}]}"#).to_string();
        assert!(e.contains("ssthresh_from") && e.contains("half") && e.contains("flight_size"), "{e}");
    }

    #[test]
    fn linux_rto_refuses_a_differentiated_minimum() {
        let e = err(r#"{"tcp":{"rto_rule":"linux","min_rto_prime_ms":200},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.rto_rule", "linux"));
        assert!(Scenario::from_json(r#"{"tcp":{"rto_rule":"linux"},"flows":[{"app":"bulk"}]}"#).is_ok());
    }

    #[test]
    fn errors_name_field_value_and_allowed() {
        let e = err(r#"{"link":{"rate_bps":-5},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "link.rate_bps");
        assert_eq!(e.value, "-5");
        assert!(e.allowed.contains("from 1000 to 1e12"), "{e}");

        let e = err(r#"{"flows":[{"app":"bulk"},{"app":"transfer"}]}"#);
        assert_eq!(e.field, "flows[1].size_bytes");

        let e = err(r#"{"flows":[{"app":"web","size":{"dist":"pareto","mean":1000,"shape":0.9}}]}"#);
        assert_eq!(e.field, "flows[0].size");
        assert!(e.allowed.contains("shape > 1"), "{e}");

        let e = err(r#"{"flows":[{"app":"poisson","size_bytes":1000}]}"#);
        assert_eq!(e.field, "flows[0].load");

        let e = err(r#"{"link":{"queue":{"kind":"droptail","limit_pkts":0}},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "link.queue.limit_pkts");
    }

    #[test]
    fn type_errors_and_unknown_fields_carry_the_path() {
        let e = err(r#"{"tcp":{"recovery":"vegas"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.recovery");
        assert!(e.value.contains("vegas"), "{e}");
        assert!(e.allowed.contains("newreno"), "{e}");

        let e = err(r#"{"tcp":{"congestion":"bbr"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.congestion");
        assert!(e.value.contains("bbr"), "{e}");
        assert!(e.allowed.contains("reno") && e.allowed.contains("cubic"), "{e}");

        let e = err(r#"{"tcp":{"mss":5},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.mss");
        assert!(e.allowed.contains("packet_size_bytes"), "{e}");

        // Inside the tagged discipline enum the path stops at the enum; the name is added.
        let e = err(r#"{"link":{"queue":{"kind":"sfq","limit_packets":5}},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "link.queue.limit_packets");
        assert!(e.allowed.contains("limit_pkts"), "{e}");

        // A bad value inside it is located by parsing the table as its kind's own knobs.
        let e = err(r#"{"link":{"queue":{"kind":"taq","active_flows":"all"}},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("link.queue.active_flows", "all"));
        assert!(e.allowed.contains("seen_in_window"), "{e}");
        let e = err(r#"{"link":{"queue":{"kind":"red","max_p":"high"}},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "link.queue.max_p");
        let e = err(r#"{"link":{"queue":{"kind":"fq","quantum_bytes":-1}},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("link.queue.quantum_bytes", "-1"));
        // Two errors in one table: the field named is the one the message is about.
        let e = err(r#"{"link":{"queue":{"kind":"taq","limit_bytes":1,"active_flows":"all"}},"flows":[{"app":"bulk"}]}"#);
        let named = [("link.queue.limit_bytes", "an unknown field"), ("link.queue.active_flows", "all")];
        assert!(named.contains(&(e.field.as_str(), e.value.as_str())), "{e}");

        let e = err(r#"{"seed":1}"#);
        assert_eq!(e.field, "flows");
    }

    #[test]
    fn copied_retransmissions_need_copies() {
        let e = err(r#"{"tcp":{"diversity_copy_retransmissions":true},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.diversity_copy_retransmissions", "true"));
        assert!(e.allowed.contains("diversity_copies is 2 or more"), "{e}");
        let ok = r#"{"tcp":{"diversity_copy_retransmissions":true,"diversity_copies":2},"flows":[{"app":"bulk"}]}"#;
        assert!(Scenario::from_json(ok).is_ok());
    }

    #[test]
    fn smart_framing_needs_an_mss_of_four_bytes() {
        // 40 header bytes + 12 of timestamps: a 55-byte packet leaves a 3-byte MSS, which
        // cannot be cut into TCP-SF's 4 segments; 56 bytes can.
        let e = err(r#"{"tcp":{"smart_framing":true,"packet_size_bytes":55,"padding_dummy_bytes":1},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.smart_framing", "true"));
        assert!(e.allowed.contains("MSS of 3 bytes"), "{e}");
        let ok = r#"{"tcp":{"smart_framing":true,"packet_size_bytes":56,"padding_dummy_bytes":1},"flows":[{"app":"bulk"}]}"#;
        assert!(Scenario::from_json(ok).is_ok());
    }

    #[test]
    fn type_errors_use_toml_words_not_rust_types() {
        let rust_names = ["u8", "u32", "u64", "f64", "struct ", "enum ", "Spread", "Dist", "LinkConfig"];
        for (json, field) in [
            (r#"{"tcp":{"initial_window_pkts":1.5},"flows":[{"app":"bulk"}]}"#, "tcp.initial_window_pkts"),
            (r#"{"link":5,"flows":[{"app":"bulk"}]}"#, "link"),
            (r#"{"link":{"rate_bps":"fast"},"flows":[{"app":"bulk"}]}"#, "link.rate_bps"),
            (r#"{"flows":[{"app":"bulk","rtt_ms":"x"}]}"#, "flows[0].rtt_ms"),
            (r#"{"flows":[{"app":"web","size":"x"}]}"#, "flows[0].size"),
            (r#"{"flows":[{"app":"bulk","count":-1}]}"#, "flows[0].count"),
            (r#"{"flows":[{"app":"bulk","rtt_ms":[1,2,3]}]}"#, "flows[0].rtt_ms"),
            (r#"{"edge":{"dscp":300},"flows":[{"app":"bulk"}]}"#, "edge.dscp"),
        ] {
            let e = err(json);
            assert_eq!(e.field, field, "{e}");
            for name in rust_names {
                assert!(!e.to_string().contains(name), "{name} in {e}");
            }
        }
        let e = err(r#"{"flows":[{"app":"bulk","count":-1}]}"#);
        assert_eq!((e.value.as_str(), e.allowed.as_str()), ("-1", "a whole number from 0 to 4294967295"));
    }

    #[test]
    fn units_are_limited_in_all_before_any_is_built() {
        let e = err(r#"{"flows":[{"app":"bulk","count":1000001}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("flows[0].count", "1000001"));
        let e = err(r#"{"flows":[{"app":"bulk","count":1000000},{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("flows", "1000001 units in all"));
        assert!(Scenario::from_json(r#"{"flows":[{"app":"bulk","count":999999},{"app":"bulk"}]}"#).is_ok());
    }

    #[test]
    fn rtt_must_cover_the_fixed_path_delays() {
        let e = err(r#"{"link":{"delay_ms":60},"flows":[{"app":"bulk","rtt_ms":100}]}"#);
        assert_eq!(e.field, "flows[0].rtt_ms");
        assert!(e.allowed.contains("120"), "{e}");
    }

    #[test]
    fn edge_and_diamond_are_validated() {
        let e = err(r#"{"edge":{"mark":"size_oracle"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "edge.threshold_bytes");
        let e = err(r#"{"edge":{"mark":"first_n","in_pkts":0},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "edge.in_pkts");
        let e = err(r#"{"topology":{"kind":"diamond","routing":"size"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "topology.routing");
        let e = err(r#"{"topology":{"kind":"diamond","path2_queue":{"kind":"droptail","limit_pkts":0}},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "topology.path2_queue.limit_pkts");
        let e = err(r#"{"topology":{"kind":"diamond","path2_rate_bps":10.5},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "topology.path2_rate_bps");
        let e = err(r#"{"topology":{"kind":"ring"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "topology.kind");
        let e = err(r#"{"flows":[{"app":"bulk","dscp":64}]}"#);
        assert_eq!(e.field, "flows[0].dscp");
        let ok = r#"{"edge":{"mark":"size_oracle","threshold_bytes":10000},"topology":{"kind":"diamond","routing":"size"},"flows":[{"app":"bulk"}]}"#;
        let s = Scenario::from_json(ok).unwrap();
        assert_eq!(Scenario::from_json(&s.to_json()).unwrap(), s);
    }

    #[test]
    fn group_tcp_tables_override_tcp_and_are_checked_with_the_group_index() {
        let e = err(r#"{"flows":[{"app":"bulk"},{"app":"bulk"},{"app":"bulk","tcp":{"initial_window_pkts":0}}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("flows[2].tcp.initial_window_pkts", "0"));
        assert!(e.allowed.contains("1 to 100"), "{e}");
        let e = err(r#"{"flows":[{"app":"bulk","tcp":{"mss":500}}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("flows[0].tcp.mss", "an unknown field"));
        assert!(e.allowed.contains("packet_size_bytes"), "{e}");
        let e = err(r#"{"flows":[{"app":"bulk","tcp":{"recovery":"vegas"}}]}"#);
        assert_eq!(e.field, "flows[0].tcp.recovery");
        let e = err(r#"{"flows":[{"app":"bulk","tcp":5}]}"#);
        assert_eq!((e.field.as_str(), e.allowed.as_str()), ("flows[0].tcp", "a table"));
        // Checked merged: the group's own packet size bounds what depends on it (MSS 536).
        let e = err(r#"{"flows":[{"app":"interactive","burst_bytes":1000,"tcp":{"packet_size_bytes":576,"timestamps":false}}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("flows[0].burst_bytes", "1000"));
        assert!(e.allowed.contains("536"), "{e}");
        // ... and a rule across keys sees the scenario's value of the other key.
        let e = err(r#"{"tcp":{"recovery":"newreno"},"flows":[{"app":"bulk","tcp":{"dupack_rule":"ns3"}}]}"#);
        assert_eq!(e.field, "flows[0].tcp.dupack_rule");
        let s = Scenario::from_json(r#"{"tcp":{"min_rto_ms":200},"flows":[{"app":"bulk","tcp":{"initial_window_pkts":10}},{"app":"bulk"}]}"#).unwrap();
        let (g0, g1) = (s.group_tcp(0).unwrap(), s.group_tcp(1).unwrap());
        assert_eq!((g0.initial_window_pkts, g0.min_rto_ms), (10, 200.0));
        assert_eq!(g1, s.tcp);
        // The canonical form keeps only the overrides, and none where there are none.
        let json = s.to_json();
        assert_eq!(json.matches("\"tcp\":").count(), 2, "{json}");
        assert_eq!(Scenario::from_json(&json).unwrap(), s);
    }

    #[test]
    fn canonical_json_round_trips() {
        let s = Scenario::from_json(MIN).unwrap();
        assert_eq!(Scenario::from_json(&s.to_json()).unwrap(), s);
    }

    fn tcp_of(json: &str) -> TcpConfig {
        Scenario::from_json(json).unwrap().tcp
    }

    #[test]
    fn a_stack_sets_the_defaults_of_its_knobs_and_an_explicit_knob_wins() {
        let linux = tcp_of(r#"{"tcp":{"stack":"linux"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((linux.congestion, linux.recovery, linux.loss_detection), (Congestion::Cubic, Recovery::Sack, LossDetection::Rack));
        assert_eq!((linux.min_rto_ms, linux.initial_window_pkts, linux.rto_rule), (200.0, 10, RtoRule::Linux));
        assert_eq!((linux.dsack, linux.recovery_undo, linux.frto, linux.rack_dsack_reo_wnd), (true, true, true, true));
        // CUBIC grows the window itself: Linux's Reno growth only under Reno.
        assert_eq!(linux.cwnd_growth, CwndGrowth::PerAck);
        let reno = tcp_of(r#"{"tcp":{"stack":"linux","congestion":"reno","min_rto_ms":300},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((reno.cwnd_growth, reno.min_rto_ms, reno.pacing), (CwndGrowth::Linux, 300.0, Pacing::Linux));
        let ns3 = tcp_of(r#"{"tcp":{"stack":"ns3"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((ns3.dupack_rule, ns3.recovery_pipe, ns3.fast_retransmit_rto), (DupackRule::Ns3, RecoveryPipe::Ns3, FastRetransmitRto::Keep));
        assert_eq!((ns3.ack_first_data, ns3.overhead_max_ms, ns3.min_rto_ms), (true, Some(0.0), 1000.0));
        // A knob the stack leaves alone keeps its own default; "rfc" is every knob's own.
        assert_eq!(ns3.initial_window_pkts, TcpConfig::default().initial_window_pkts);
        assert_eq!(tcp_of(r#"{"tcp":{"stack":"rfc"},"flows":[{"app":"bulk"}]}"#), TcpConfig::default());
        let e = err(r#"{"tcp":{"stack":"bsd"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("tcp.stack", "bsd"));
        assert!(e.allowed.contains("rfc") && e.allowed.contains("linux"), "{e}");
        // A stack's rule refused with another knob is reported at that knob, as when set by hand.
        let e = err(r#"{"tcp":{"stack":"linux","recovery":"newreno"},"flows":[{"app":"bulk"}]}"#);
        assert_eq!(e.field, "tcp.recovery_pacing");
    }

    #[test]
    fn the_canonical_form_keeps_the_stack_and_every_knob_set_against_it() {
        // Under "rfc" the form is as before stacks existed (the stack and the later knobs left out).
        let rfc = Scenario::from_json(MIN).unwrap().to_json();
        for key in ["\"stack\"", "\"loss_detection\"", "\"pacing\"", "\"rtt_samples\""] {
            assert!(!rfc.contains(key), "{key} in {rfc}");
        }
        // Under another stack a knob set back to its RFC value must survive the round trip.
        let json = r#"{"tcp":{"stack":"linux","loss_detection":"dupthresh","pacing":"none","rtt_samples":"timed"},"flows":[{"app":"bulk"}]}"#;
        let s = Scenario::from_json(json).unwrap();
        assert_eq!(s.tcp.loss_detection, LossDetection::Dupthresh);
        let again = Scenario::from_json(&s.to_json()).unwrap();
        assert_eq!(again, s);
        assert_eq!((again.tcp.stack, again.tcp.pacing, again.tcp.rtt_samples), (Stack::Linux, Pacing::None, RttSamples::Timed));
        // F-RTO and the D-SACK reordering window are RACK's: without it the stack leaves them off.
        assert_eq!((again.tcp.dsack, again.tcp.frto, again.tcp.rack_dsack_reo_wnd), (true, false, false));
    }

    #[test]
    fn a_group_naming_a_stack_takes_it_for_every_knob_a_stack_decides() {
        let s = Scenario::from_json(
            r#"{"tcp":{"min_rto_ms":300,"packet_size_bytes":576},"flows":[{"app":"bulk","tcp":{"stack":"linux","initial_window_pkts":4}},{"app":"bulk"}]}"#,
        ).unwrap();
        let (g0, g1) = (s.group_tcp(0).unwrap(), s.group_tcp(1).unwrap());
        // The group's stack over the scenario's stack knobs, its own key over the stack.
        assert_eq!((g0.stack, g0.min_rto_ms, g0.initial_window_pkts, g0.congestion), (Stack::Linux, 200.0, 4, Congestion::Cubic));
        // A knob no stack decides comes from [tcp].
        assert_eq!(g0.packet_size_bytes, 576);
        assert_eq!(g1, s.tcp);
        let back = Scenario::from_json(r#"{"tcp":{"stack":"linux"},"flows":[{"app":"bulk","tcp":{"stack":"rfc"}}]}"#).unwrap();
        let g = back.group_tcp(0).unwrap();
        assert_eq!((g.stack, g.congestion, g.min_rto_ms), (Stack::Rfc, Congestion::Reno, 1000.0));
    }

    #[test]
    fn a_group_naming_a_congestion_control_takes_the_stacks_knobs_for_it() {
        // Linux's stack turns CUBIC's HyStart on for CUBIC (tcp_cubic.c) and its own Reno
        // growth on for Reno: a BBR or Reno group under it gets the stack's value for its own.
        let s = Scenario::from_json(
            r#"{"tcp":{"stack":"linux"},"flows":[{"app":"bulk","tcp":{"congestion":"bbr"}},{"app":"bulk","tcp":{"congestion":"reno"}},{"app":"bulk"}]}"#,
        ).unwrap();
        let (bbr, reno, cubic) = (s.group_tcp(0).unwrap(), s.group_tcp(1).unwrap(), s.group_tcp(2).unwrap());
        assert_eq!((bbr.congestion, bbr.cubic_hystart, bbr.cwnd_growth), (Congestion::Bbr, false, CwndGrowth::PerAck));
        assert_eq!((reno.congestion, reno.cubic_hystart, reno.cwnd_growth), (Congestion::Reno, false, CwndGrowth::Linux));
        assert_eq!((cubic.cubic_hystart, cubic.cwnd_growth), (true, CwndGrowth::PerAck));
        // A Reno [tcp] and a CUBIC group: the stack's HyStart for the group.
        let g = Scenario::from_json(r#"{"tcp":{"stack":"linux","congestion":"reno"},"flows":[{"app":"bulk","tcp":{"congestion":"cubic"}}]}"#)
            .unwrap().group_tcp(0).unwrap();
        assert_eq!((g.congestion, g.cwnd_growth, g.cubic_hystart), (Congestion::Cubic, CwndGrowth::PerAck, true));
        // A knob [tcp] set against its stack is kept, and checked for the group.
        let e = err(r#"{"tcp":{"stack":"linux","congestion":"reno","cwnd_growth":"byte_counting"},"flows":[{"app":"bulk","tcp":{"congestion":"cubic"}}]}"#);
        assert_eq!(e.field, "flows[0].tcp.cwnd_growth");
    }

    #[test]
    fn the_canonical_form_records_the_link_a_discipline_feeds() {
        // 1 Mbit/s and 1 ms, not RED's defaults of 10 Mbit/s and 10 ms.
        let s = Scenario::from_json(
            r#"{"link":{"rate_bps":1000000,"delay_ms":1.0,"queue":{"kind":"red"}},"flows":[{"app":"bulk"}]}"#,
        )
        .unwrap();
        let QdiscConfig::Red(red) = &s.link.queue else { panic!("a RED queue") };
        assert_eq!((red.link_rate_bps, red.link_delay_ns), (1_000_000, 1_000_000));
        // A path-2 queue of its own feeds path 2's rate.
        let s = Scenario::from_json(
            r#"{"link":{"rate_bps":2000000},"topology":{"kind":"diamond","path2_rate_bps":3000000,
                "path2_queue":{"kind":"rcp"}},"flows":[{"app":"bulk"}]}"#,
        )
        .unwrap();
        let TopologyConfig::Diamond(d) = &s.topology else { panic!("a diamond") };
        let Some(QdiscConfig::Rcp(rcp)) = &d.path2_queue else { panic!("an RCP path 2") };
        assert_eq!(rcp.link_rate_bps, 3_000_000);
    }

    #[test]
    fn rates_and_delays_past_the_clock_are_refused_by_name() {
        for (json, field) in [
            (r#"{"link":{"rate_bps":1e30},"flows":[{"app":"bulk"}]}"#, "link.rate_bps"),
            (r#"{"link":{"access_rate_bps":2e12},"flows":[{"app":"bulk"}]}"#, "link.access_rate_bps"),
            (r#"{"link":{"delay_ms":1e13},"flows":[{"app":"bulk","rtt_ms":3e13}]}"#, "link.delay_ms"),
            (r#"{"link":{"receiver_delay_ms":2e10},"flows":[{"app":"bulk"}]}"#, "link.receiver_delay_ms"),
            (r#"{"flows":[{"app":"bulk","rtt_ms":[100,5e10]}]}"#, "flows[0].rtt_ms"),
        ] {
            let e = err(json);
            assert_eq!(e.field, field, "{json}");
            assert!(e.allowed.contains("1e") || e.allowed.contains("4e10"), "{e}");
        }
        assert!(Scenario::from_json(r#"{"link":{"rate_bps":1e12,"delay_ms":1e10},"flows":[{"app":"bulk","rtt_ms":2e10}]}"#).is_ok());
    }
}
