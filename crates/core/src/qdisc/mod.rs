//! The queue-discipline contract and the closed set of disciplines.
//!
//! A discipline implements [`Qdisc`]; the simulator and the middlebox only ever call it
//! through [`Accounted`], which keeps the counters so no discipline can skip them (the
//! ns-3 non-virtual-interface idea). Disciplines are selected by a tagged [`QdiscConfig`]
//! and dispatched by `match` in [`AnyQdisc`].

mod accounted;
pub mod cake;
pub mod class_isolation;
pub mod droptail;
pub mod fq;
pub mod fq_codel;
pub mod host_fq;
pub mod ns2;
pub(crate) mod parts;
pub mod rcp;
pub mod red;
pub mod rio;
pub mod sfq;
pub mod size_aware;
pub mod taq;
#[cfg(test)]
pub(crate) mod testkit;

pub use accounted::Accounted;
pub use cake::{AckFilter, Cake, CakeConfig, DiffservMode, FlowMode};
pub use class_isolation::{ClassIsolation, ClassIsolationConfig};
pub use parts::hash::flow_hash;
pub use parts::ShortBy;
pub use droptail::{DropTail, DropTailConfig};
pub use fq::{Fq, FqClassifier, FqConfig};
pub use fq_codel::{FqCodel, FqCodelConfig};
pub use host_fq::{HostFq, HostFqConfig, HostKey};
pub use ns2::{Ns2Drr, Ns2DropTail, Ns2Red, Ns2Sfq, QueueVariant};
pub use rcp::{Rcp, RcpConfig};
pub use red::{Red, RedConfig, RedMode};
pub use rio::{Rio, RioConfig};
pub use sfq::{Sfq, SfqConfig};
pub use size_aware::{SizeAware, SizeAwareConfig};
pub use taq::{Taq, TaqConfig, TaqSnapshot};

use crate::error::ConfigError;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::stats::{DropReason, MarkCounts, MarkReason};
use crate::time::Instant;
use serde::{Deserialize, Serialize};

/// What a discipline is handed on every call: the time, its random stream, where to put
/// the packets it drops (the arriving one, or ones already queued), and the ECN mark
/// counters.
pub struct Cx<'a> {
    pub now: Instant,
    pub rng: &'a mut Rng,
    pub drops: &'a mut Vec<(Packet, DropReason)>,
    pub marks: &'a mut MarkCounts,
}

impl Cx<'_> {
    pub fn drop(&mut self, pkt: Packet, reason: DropReason) {
        self.drops.push((pkt, reason));
    }
    /// Set CE on `pkt` (a congestion signal instead of a drop) and count it.
    pub fn mark(&mut self, pkt: &mut Packet, reason: MarkReason) {
        pkt.ecn = Ecn::Ce;
        self.marks.pkts[reason as usize] += 1;
        self.marks.bytes[reason as usize] += pkt.len_bytes();
    }
}

/// Whether a discipline's counter only grows (a count since the start, a Prometheus
/// counter) or is a level now (queue lengths, flows active, the largest packet so far: a
/// gauge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    Total,
    Level,
}

impl CounterKind {
    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Total => "total",
            CounterKind::Level => "level",
        }
    }
}

/// One of a discipline's own counters, the extra statistics `tc -s qdisc show` prints after
/// the common ones (which are [`crate::stats::QdiscStats`], kept by [`Accounted`]). Named
/// as `tc -s` (or the kernel's `tc_*_xstats` struct) names it where Linux has an
/// equivalent, else in the same style; each discipline's module documentation lists its
/// own. Exact (integers kept by the discipline, not estimates), and a discipline reports
/// a fixed number of them, so reading them costs bounded memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QdiscCounter {
    pub name: &'static str,
    /// The class the counter belongs to (CAKE's tin, TAQ's queue, RIO's in/out), or `None`
    /// for the whole discipline.
    pub class: Option<&'static str>,
    pub value: u64,
    pub kind: CounterKind,
}

impl QdiscCounter {
    /// A count since the start.
    pub fn total(name: &'static str, value: u64) -> Self {
        QdiscCounter { name, class: None, value, kind: CounterKind::Total }
    }
    /// A level now.
    pub fn level(name: &'static str, value: u64) -> Self {
        QdiscCounter { name, class: None, value, kind: CounterKind::Level }
    }
    /// The same counter, of one class.
    pub fn of(self, class: &'static str) -> Self {
        QdiscCounter { class: Some(class), ..self }
    }
}

pub trait Qdisc {
    /// Admit `pkt`, or drop it (or others already queued) into `cx.drops`.
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx);
    /// The next packet to send, if any. May drop packets (AQM after dequeue) into `cx.drops`.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet>;
    /// Optional input from the reverse direction (ACKs) in two-way deployments.
    fn observe_reverse(&mut self, _pkt: &Packet, _now: Instant) {}
    /// Whether `observe_reverse` does anything: a simulator may then skip telling it the
    /// exact time of each reverse departure. False unless the discipline says so.
    fn observes_reverse(&self) -> bool {
        false
    }
    /// Packets queued.
    fn len_pkts(&self) -> usize;
    /// Bytes queued.
    fn backlog_bytes(&self) -> u64;
    /// Entries in per-flow state tables (bounded by the discipline's capacity).
    fn flow_table_len(&self) -> usize {
        0
    }
    /// Whether `dequeue` with nothing queued only returns `None` (no state ages, nothing is
    /// dropped), so that the accounting wrapper may skip the call; a link that goes idle
    /// asks once per packet. False unless the discipline says so.
    fn empty_dequeue_is_noop(&self) -> bool {
        false
    }
    /// Whether `pkt`, offered now, would be queued and handed out by the very next dequeue
    /// with nothing else changed (an empty FIFO within its limits), so that an idle
    /// transmitter may take it without the queue (`Accounted::pass_through`). False unless
    /// the discipline says so.
    fn passes_through(&self, _pkt: &Packet) -> bool {
        false
    }
    /// Append the discipline's own counters ([`QdiscCounter`]) to `out`, always the same
    /// names in the same order. Observation only: reading them changes nothing. None
    /// unless the discipline has internal state worth counting.
    fn counters(&self, _out: &mut Vec<QdiscCounter>) {}
}

/// Selects and parameterises a discipline; `kind` is the tag in TOML/JSON.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    #[serde(rename = "droptail")]
    DropTail(DropTailConfig),
    Red(RedConfig),
    Sfq(SfqConfig),
    Fq(FqConfig),
    FqCodel(FqCodelConfig),
    HostFq(HostFqConfig),
    Cake(CakeConfig),
    ClassIsolation(ClassIsolationConfig),
    Rio(RioConfig),
    SizeAware(SizeAwareConfig),
    Taq(TaqConfig),
    Rcp(RcpConfig),
}

impl Default for QdiscConfig {
    fn default() -> Self {
        QdiscConfig::DropTail(DropTailConfig::default())
    }
}

impl QdiscConfig {
    /// Where, among discipline `kind`'s own knobs, deserializing `knobs` (the table without
    /// `kind`) fails, and serde's message for it: serde's error path stops at a tagged enum,
    /// so a bad value inside `link.queue` would otherwise not name its field. `None` if `kind`
    /// is unknown or the knobs parse.
    pub fn locate_error<'de, D: serde::Deserializer<'de>>(kind: &str, knobs: D) -> Option<(String, String)> {
        fn path<'de, T: Deserialize<'de>, D: serde::Deserializer<'de>>(knobs: D) -> Option<(String, String)> {
            let e = serde_path_to_error::deserialize::<D, T>(knobs).err()?;
            Some((e.path().to_string(), e.into_inner().to_string()))
        }
        match kind {
            "droptail" => path::<DropTailConfig, D>(knobs),
            "red" => path::<RedConfig, D>(knobs),
            "sfq" => path::<SfqConfig, D>(knobs),
            "fq" => path::<FqConfig, D>(knobs),
            "fq_codel" => path::<FqCodelConfig, D>(knobs),
            "host_fq" => path::<HostFqConfig, D>(knobs),
            "cake" => path::<CakeConfig, D>(knobs),
            "class_isolation" => path::<ClassIsolationConfig, D>(knobs),
            "rio" => path::<RioConfig, D>(knobs),
            "size_aware" => path::<SizeAwareConfig, D>(knobs),
            "taq" => path::<TaqConfig, D>(knobs),
            "rcp" => path::<RcpConfig, D>(knobs),
            _ => None,
        }
    }

    pub fn build(&self) -> Result<AnyQdisc, ConfigError> {
        match self {
            QdiscConfig::DropTail(c) => c.build_any(),
            QdiscConfig::Red(c) => c.build_any(),
            QdiscConfig::Sfq(c) => c.build_any(),
            QdiscConfig::Fq(c) => c.build_any(),
            QdiscConfig::FqCodel(c) => c.build().map(AnyQdisc::FqCodel),
            QdiscConfig::HostFq(c) => c.build().map(AnyQdisc::HostFq),
            QdiscConfig::Cake(c) => c.build().map(AnyQdisc::Cake),
            QdiscConfig::ClassIsolation(c) => c.build().map(AnyQdisc::ClassIsolation),
            QdiscConfig::Rio(c) => c.build().map(AnyQdisc::Rio),
            QdiscConfig::SizeAware(c) => c.build().map(AnyQdisc::SizeAware),
            QdiscConfig::Taq(c) => c.build().map(AnyQdisc::Taq),
            QdiscConfig::Rcp(c) => c.build().map(AnyQdisc::Rcp),
        }
    }

    /// Tell the disciplines that need it the link they feed (RED's idle correction and
    /// automatic parameters, the size-aware drop curves): the runtime knows the link, so
    /// the user never has to repeat it.
    pub fn set_link(&mut self, rate_bps: u64, delay_ns: u64) {
        match self {
            QdiscConfig::Red(c) => (c.link_rate_bps, c.link_delay_ns) = (rate_bps, delay_ns),
            QdiscConfig::ClassIsolation(c) => (c.link_rate_bps, c.link_delay_ns) = (rate_bps, delay_ns),
            QdiscConfig::Rio(c) => (c.link_rate_bps, c.link_delay_ns) = (rate_bps, delay_ns),
            QdiscConfig::SizeAware(c) => c.link_rate_bps = rate_bps,
            QdiscConfig::Rcp(c) => c.link_rate_bps = rate_bps,
            QdiscConfig::Cake(c) => c.link_rate_bps = rate_bps,
            QdiscConfig::DropTail(_)
            | QdiscConfig::Sfq(_)
            | QdiscConfig::Fq(_)
            | QdiscConfig::FqCodel(_)
            | QdiscConfig::HostFq(_)
            | QdiscConfig::Taq(_) => {}
        }
    }
}

/// The closed set of disciplines, dispatched by `match` (no `dyn` on the hot path).
/// Variants differ in size (the flow-queueing ones hold their tables' headers inline); there
/// is one per link and it is never moved on the hot path, so no variant is boxed.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyQdisc {
    DropTail(DropTail),
    Red(Red),
    Sfq(Sfq),
    Fq(Fq),
    FqCodel(FqCodel),
    HostFq(HostFq),
    Cake(Cake),
    ClassIsolation(ClassIsolation),
    Rio(Rio),
    SizeAware(SizeAware),
    Taq(Taq),
    Rcp(Rcp),
    Ns2DropTail(Ns2DropTail),
    Ns2Red(Ns2Red),
    Ns2Sfq(Ns2Sfq),
    Ns2Drr(Ns2Drr),
}

/// ns-2-only knobs given without `variant = "ns2"`.
pub(crate) fn only_with_ns2() -> ConfigError {
    ConfigError::new("ns2", "set", "only with variant = \"ns2\" (or leave the ns2 table out)")
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::DropTail($q) => $e,
            AnyQdisc::Red($q) => $e,
            AnyQdisc::Sfq($q) => $e,
            AnyQdisc::Fq($q) => $e,
            AnyQdisc::FqCodel($q) => $e,
            AnyQdisc::HostFq($q) => $e,
            AnyQdisc::Cake($q) => $e,
            AnyQdisc::ClassIsolation($q) => $e,
            AnyQdisc::Rio($q) => $e,
            AnyQdisc::SizeAware($q) => $e,
            AnyQdisc::Taq($q) => $e,
            AnyQdisc::Rcp($q) => $e,
            AnyQdisc::Ns2DropTail($q) => $e,
            AnyQdisc::Ns2Red($q) => $e,
            AnyQdisc::Ns2Sfq($q) => $e,
            AnyQdisc::Ns2Drr($q) => $e,
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
    fn empty_dequeue_is_noop(&self) -> bool {
        dispatch!(self, q => q.empty_dequeue_is_noop())
    }
    fn observes_reverse(&self) -> bool {
        dispatch!(self, q => q.observes_reverse())
    }
    fn passes_through(&self, pkt: &Packet) -> bool {
        dispatch!(self, q => q.passes_through(pkt))
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        dispatch!(self, q => q.counters(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [&str; 12] =
        ["droptail", "red", "sfq", "fq", "fq_codel", "host_fq", "cake", "class_isolation", "rio", "size_aware", "taq", "rcp"];

    #[test]
    fn every_kind_parses_from_its_tag_with_defaults() {
        for kind in KINDS {
            let json = format!("{{\"kind\": \"{kind}\"}}");
            let c: QdiscConfig = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{kind}: {e}"));
            c.build().unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
    }

    /// Every kind's knobs are reparsed to locate an error: none falls back to the bare table.
    #[test]
    fn every_kind_locates_an_error_among_its_knobs() {
        for kind in KINDS {
            let (path, msg) = QdiscConfig::locate_error(kind, serde_json::json!({"bogus": 1})).expect(kind);
            assert_eq!(path, "bogus", "{kind}");
            assert!(msg.starts_with("unknown field `bogus`"), "{kind}: {msg}");
            assert_eq!(QdiscConfig::locate_error(kind, serde_json::json!({})), None, "{kind}");
        }
        assert_eq!(QdiscConfig::locate_error("codel", serde_json::json!({"bogus": 1})), None);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let r: Result<QdiscConfig, _> = serde_json::from_str(r#"{"kind": "sfq", "bogus": 1}"#);
        assert!(r.is_err());
    }
}
