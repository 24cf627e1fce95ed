//! The queue-discipline contract and the closed set of disciplines.
//!
//! A discipline implements [`Qdisc`]; the simulator and the middlebox only ever call it
//! through [`Accounted`], which keeps the counters so no discipline can skip them (the
//! ns-3 non-virtual-interface idea). Disciplines are selected by a tagged [`QdiscConfig`]
//! and dispatched by `match` in [`AnyQdisc`].

mod accounted;
pub mod droptail;

pub use accounted::Accounted;
pub use droptail::{DropTail, DropTailConfig};

use crate::error::ConfigError;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::stats::DropReason;
use crate::time::Instant;
use serde::{Deserialize, Serialize};

/// What a discipline is handed on every call: the time, its random stream, and where to
/// put the packets it drops (the arriving one, or ones already queued).
pub struct Cx<'a> {
    pub now: Instant,
    pub rng: &'a mut Rng,
    pub drops: &'a mut Vec<(Packet, DropReason)>,
}

impl Cx<'_> {
    pub fn drop(&mut self, pkt: Packet, reason: DropReason) {
        self.drops.push((pkt, reason));
    }
}

pub trait Qdisc {
    /// Admit `pkt`, or drop it (or others already queued) into `cx.drops`.
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx);
    /// The next packet to send, if any. May drop packets (AQM after dequeue) into `cx.drops`.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet>;
    /// Optional input from the reverse direction (ACKs) in two-way deployments.
    fn observe_reverse(&mut self, _pkt: &Packet, _now: Instant) {}
    /// Packets queued.
    fn len_pkts(&self) -> usize;
    /// Bytes queued.
    fn backlog_bytes(&self) -> u64;
    /// Entries in per-flow state tables (bounded by the discipline's capacity).
    fn flow_table_len(&self) -> usize {
        0
    }
}

/// Selects and parameterises a discipline; `kind` is the tag in TOML/JSON.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    #[serde(rename = "droptail")]
    DropTail(DropTailConfig),
}

impl Default for QdiscConfig {
    fn default() -> Self {
        QdiscConfig::DropTail(DropTailConfig::default())
    }
}

impl QdiscConfig {
    pub fn build(&self) -> Result<AnyQdisc, ConfigError> {
        match self {
            QdiscConfig::DropTail(c) => c.build().map(AnyQdisc::DropTail),
        }
    }
}

/// The closed set of disciplines, dispatched by `match` (no `dyn` on the hot path).
#[derive(Debug)]
pub enum AnyQdisc {
    DropTail(DropTail),
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::DropTail($q) => $e,
        }
    };
}

impl Qdisc for AnyQdisc {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        dispatch!(self, q => q.enqueue(pkt, cx))
    }
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(cx))
    }
    fn observe_reverse(&mut self, pkt: &Packet, now: Instant) {
        dispatch!(self, q => q.observe_reverse(pkt, now))
    }
    fn len_pkts(&self) -> usize {
        dispatch!(self, q => q.len_pkts())
    }
    fn backlog_bytes(&self) -> u64 {
        dispatch!(self, q => q.backlog_bytes())
    }
    fn flow_table_len(&self) -> usize {
        dispatch!(self, q => q.flow_table_len())
    }
}
