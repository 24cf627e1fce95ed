//! The scenario's `[trace]` table: what `crate::trace` records and its bounds. A leaf
//! module, so the scenario's configuration does not depend on the recorder.

use crate::pcap::MIN_PCAP_BYTES;
use serde::{Deserialize, Serialize};
use smallpipe_core::ConfigError;

/// Where the pcap sees the bottleneck's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PcapPoint {
    /// As each packet finishes serialization onto the link (what the far end receives,
    /// before link loss): one record per counted transmission.
    Departures,
    /// As each packet is offered to the queue, including those it drops.
    Arrivals,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Sampling interval of the time series, seconds.
    #[serde(default = "d_interval")]
    pub interval_s: f64,
    /// Connections (0-based, in opening order) whose senders are sampled.
    #[serde(default)]
    pub flows: Vec<u32>,
    /// Sample every open connection's sender (bounded by `max_rows`).
    #[serde(default)]
    pub all_flows: bool,
    /// Also sample the first this many connections the run opens (`smallpipe run` records
    /// the first 8 by default); unlike `flows`, ids never opened are not an error to report.
    #[serde(default)]
    pub first_flows: u32,
    /// Per bottleneck direction and interval: packets enqueued, dequeued, dropped by
    /// reason, and the backlog at the interval's end.
    #[serde(default)]
    pub links: bool,
    /// Every enqueue, dequeue and drop (with its reason) at the bottleneck queues.
    #[serde(default)]
    pub events: bool,
    /// Per traced flow (`flows` or `all_flows`), FlowMonitor-style: RTT samples, queueing
    /// delay and jitter at the bottleneck, packets lost there (`crate::flow_delays`).
    #[serde(default)]
    pub flow_delays: bool,
    /// A pcap of both bottleneck directions (and the diamond's path 2), taken at this point.
    #[serde(default)]
    pub pcap: Option<PcapPoint>,
    /// End hosts (`sender<u>`, `receiver<u>`: unit `u`'s two hosts) each captured in a pcap of
    /// its own, as on the host's interface: what it hands to its access link and what that
    /// link delivers to it. Left out of the canonical scenario when empty, so a traced
    /// scenario's id is what it was before the field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pcap_hosts: Vec<String>,
    /// Bytes of each frame kept in the pcaps (headers come first; payload is zeros).
    #[serde(default = "d_snaplen")]
    pub pcap_snaplen: u32,
    /// Most rows of each table; later rows are not recorded and the table is flagged.
    #[serde(default = "d_max_rows")]
    pub max_rows: u64,
    /// Largest pcap (each of them), bytes; later packets are not written and the pcap is flagged.
    #[serde(default = "d_max_pcap_bytes")]
    pub max_pcap_bytes: u64,
}

fn d_interval() -> f64 {
    0.1
}
fn d_snaplen() -> u32 {
    128
}
fn d_max_rows() -> u64 {
    1_000_000
}
fn d_max_pcap_bytes() -> u64 {
    64 << 20
}

const MAX_ROWS: u64 = 10_000_000;
const MAX_PCAP_BYTES: u64 = 1 << 30;
/// Ethernet, IPv4 and TCP headers without options: the least a frame must keep.
const MIN_SNAPLEN: u32 = 54;
/// Most end hosts captured (`pcap_hosts`): with `max_pcap_bytes` it bounds the memory.
pub const MAX_PCAP_HOSTS: usize = 16;
const PCAP_HOSTS_ALLOWED: &str = "at most 16 distinct host names, each sender<u> or receiver<u> (u: a unit, 0-based)";

/// Which of a unit's two hosts a `pcap_hosts` name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostSide {
    Sender,
    Receiver,
}

/// `sender<u>` or `receiver<u>` (the names of the unit's access links, without `_up`/`_down`).
pub fn parse_host(name: &str) -> Option<(HostSide, u32)> {
    let (side, unit) = if let Some(u) = name.strip_prefix("sender") {
        (HostSide::Sender, u)
    } else {
        (HostSide::Receiver, name.strip_prefix("receiver")?)
    };
    // Digits only, no sign or leading zero: one spelling per host, so one file name each.
    let canonical = !unit.is_empty() && unit.bytes().all(|b| b.is_ascii_digit()) && (unit == "0" || !unit.starts_with('0'));
    Some((side, unit.parse().ok().filter(|_| canonical)?))
}
const MAX_SAMPLES: f64 = 1e6;
const MAX_FIRST_FLOWS: u32 = 10_000;

impl TraceConfig {
    pub fn validate(&self, duration_s: f64) -> Result<(), ConfigError> {
        let bad = |field: &str, value: &dyn ToString, allowed: &str| Err(ConfigError::new(field, value.to_string(), allowed));
        if !(self.interval_s.is_finite() && self.interval_s > 0.0 && self.interval_s <= duration_s) {
            return bad("interval_s", &self.interval_s, "a number of seconds in (0, duration_s]");
        }
        if duration_s / self.interval_s > MAX_SAMPLES {
            return bad("interval_s", &self.interval_s, "at most 1e6 samples per run (duration_s / interval_s)");
        }
        if !(MIN_SNAPLEN..=65_535).contains(&self.pcap_snaplen) {
            return bad("pcap_snaplen", &self.pcap_snaplen, "bytes in [54, 65535] (54: Ethernet, IPv4 and TCP headers)");
        }
        if self.pcap_hosts.len() > MAX_PCAP_HOSTS {
            return bad("pcap_hosts", &format!("{} hosts", self.pcap_hosts.len()), PCAP_HOSTS_ALLOWED);
        }
        for (i, h) in self.pcap_hosts.iter().enumerate() {
            if parse_host(h).is_none() || self.pcap_hosts[..i].contains(h) {
                return bad("pcap_hosts", &format!("{h:?}"), PCAP_HOSTS_ALLOWED);
            }
        }
        if self.first_flows > MAX_FIRST_FLOWS {
            return bad("first_flows", &self.first_flows, "a connection count in [0, 10000] (all_flows samples every one)");
        }
        if !(1..=MAX_ROWS).contains(&self.max_rows) {
            return bad("max_rows", &self.max_rows, "a row count in [1, 10000000]");
        }
        if !(MIN_PCAP_BYTES..=MAX_PCAP_BYTES).contains(&self.max_pcap_bytes) {
            return bad("max_pcap_bytes", &self.max_pcap_bytes, &format!("bytes in [{MIN_PCAP_BYTES}, {MAX_PCAP_BYTES}]"));
        }
        Ok(())
    }

    /// The connections sampled by name: `flows` and the first `first_flows`.
    pub(crate) fn named_flows(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..self.first_flows).chain(self.flows.iter().copied()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Whether only the links' counters are read (`links`): nothing keyed by connection,
    /// so connections may be recycled.
    pub(crate) fn reads_links_only(&self) -> bool {
        self.named_flows().is_empty() && !self.all_flows && !self.flow_delays && !self.events && self.pcap.is_none()
            && self.pcap_hosts.is_empty()
    }

        pub(crate) fn samples(&self) -> bool {
        self.links || self.all_flows || !self.flows.is_empty() || self.first_flows > 0
    }
}
