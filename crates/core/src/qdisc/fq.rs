//! FQ: fair queueing by deficit round robin over per-flow queues, with one shared buffer
//! and longest-queue drop, as used in the FCT thesis (`papers/`
//! short-flows-fct-red-fq-rcp, Section 4.1).
//!
//! Source: the thesis' ns-2 patch: "distributing [flows] across 1000 queues", "runtime
//! logarithmic in the number of queues that currently contain packets", and "we bound the
//! total number of packets queued by the queue size limit – if a packet is enqueued while
//! the queue is full, the last packet in the longest queue is dropped". The scheduler
//! here is Deficit Round Robin (M. Shreedhar and G. Varghese, SIGCOMM 1995), which gives
//! the same long-run byte fairness with O(1) work per packet.
//!
//! Principles:
//! - Classification: `hashed` (default) puts a flow in one of `buckets` queues by a salted
//!   5-tuple hash (colliding flows share a queue); `exact` gives every 5-tuple its own
//!   queue from a table of `flow_table_capacity` entries. When that table is full a new
//!   5-tuple takes the entry that has been idle (empty and unscheduled) longest; if none
//!   is idle it shares an entry chosen by hash, so a flood of new 5-tuples cannot grow
//!   the state past the capacity.
//! - Scheduling: active queues are served in round robin; a queue sends while its deficit
//!   is positive, then gets `quantum_bytes` more and goes to the back. A queue that becomes
//!   active starts with one quantum. Over any window, two continuously backlogged flows
//!   receive bytes that differ by less than `quantum + 2·max_packet`.
//! - Buffer: `limit_pkts` packets shared by all queues; on overflow the last packet of the
//!   longest queue (in packets) is dropped — possibly the arrival itself, if its queue is
//!   the longest. A flow with fewer packets queued than every other flow never loses one.
//!
//! Knobs: `limit_pkts` (50 packets, ns-2's default queue limit), `classifier` (`hashed`),
//! `buckets` (1000, the thesis), `flow_table_capacity` (1024 entries, `exact` only),
//! `quantum_bytes` (1500 bytes).
//!
//! Complexity (n = queues, L = limit): enqueue O(1) amortised (hash or table lookup, list
//! append, and on overflow an O(1) longest-queue lookup: queues are kept in lists by their
//! length in packets, as Linux SFQ does — better than the thesis' O(log n), and never an
//! O(n) scan). Dequeue O(1) amortised when `quantum_bytes` is at least the largest packet
//! (every rotation is followed by a packet); with a smaller quantum at most
//! ⌈max_packet/quantum⌉ rotations per packet. Memory: per queue a list head, depth-index
//! links and a deficit, plus one packet arena of at most L+1 packets. The queues, the
//! longest-queue index and the round are the shared part `parts::drr` (as for SFQ, HostFQ
//! and FQ-CoDel).
//!
//! Drops: all are `flow_limit` (longest-queue push-out); FQ never refuses an arrival for
//! any other reason.
//!
//! Counters ([`Qdisc::counters`]): `flows` (queues in the round now, a level) and
//! `flow_evictions` (idle entries evicted from the exact table, a total; 0 when hashed).
//!
//! Trade-offs and limits: longest is measured in packets, consistent with a packet limit;
//! a flow of small packets (ACKs) can be "longest" while holding few bytes. No AQM within
//! queues (see FQ-CoDel for that). `flow_table_len` is the number of queues in use
//! (hashed: `buckets`, allocated up front; exact: table entries).

use super::parts::hash::{bucket, flow_hash};
use super::parts::{BoundedTable, DrrRound, FlowQueues};
use super::ns2::{Ns2DrrKnobs, QueueVariant};
use super::{only_with_ns2, AnyQdisc, Cx, Qdisc, QdiscCounter};
use crate::error::ConfigError;
use crate::packet::{FlowKey, Packet};
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};

/// How FQ maps packets to queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FqClassifier {
    /// Salted hash of the 5-tuple into `buckets` queues (the thesis' design).
    #[default]
    Hashed,
    /// One queue per 5-tuple, from a bounded table with idle eviction.
    Exact,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqConfig {
    /// Shared buffer, packets.
    pub limit_pkts: u32,
    pub classifier: FqClassifier,
    /// Queues for the `hashed` classifier.
    pub buckets: u32,
    /// Per-flow entries for the `exact` classifier.
    pub flow_table_capacity: u32,
    /// Bytes a queue may send per round.
    pub quantum_bytes: u32,
    /// `ns2`: ns-2 2.35's DRR (`super::ns2::drr`), which uses only the `ns2` knobs.
    #[serde(skip_serializing_if = "QueueVariant::is_default")]
    pub variant: QueueVariant,
    /// Knobs of the ns-2 variant only.
    #[serde(skip_serializing_if = "Ns2DrrKnobs::is_default")]
    pub ns2: Ns2DrrKnobs,
}

impl Default for FqConfig {
    fn default() -> Self {
        FqConfig {
            limit_pkts: 50,
            classifier: FqClassifier::Hashed,
            buckets: 1000,
            flow_table_capacity: 1024,
            quantum_bytes: 1500,
            variant: QueueVariant::Default,
            ns2: Ns2DrrKnobs::default(),
        }
    }
}

impl FqConfig {
    /// Either variant, as the discipline set dispatches it.
    pub fn build_any(&self) -> Result<AnyQdisc, ConfigError> {
        match self.variant {
            QueueVariant::Default if !self.ns2.is_default() => Err(only_with_ns2()),
            QueueVariant::Default => self.build().map(AnyQdisc::Fq),
            QueueVariant::Ns2 => self.ns2.build().map(AnyQdisc::Ns2Drr),
        }
    }

    pub fn build(&self) -> Result<Fq, ConfigError> {
        if self.limit_pkts == 0 {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet"));
        }
        if self.buckets == 0 || self.buckets > 1 << 24 {
            return Err(ConfigError::new("buckets", self.buckets, "1 to 16777216 queues"));
        }
        if self.flow_table_capacity == 0 || self.flow_table_capacity > 1 << 24 {
            return Err(ConfigError::new("flow_table_capacity", self.flow_table_capacity, "1 to 16777216 entries"));
        }
        if self.quantum_bytes == 0 {
            return Err(ConfigError::new("quantum_bytes", 0, "at least 1 byte"));
        }
        let n = match self.classifier {
            FqClassifier::Hashed => self.buckets,
            FqClassifier::Exact => self.flow_table_capacity,
        } as usize;
        Ok(Fq {
            cfg: self.clone(),
            queues: FlowQueues::by_pkts(n),
            table: (self.classifier == FqClassifier::Exact).then(|| BoundedTable::new(self.flow_table_capacity)),
            drr: DrrRound::new(n),
            salt: None,
        })
    }
}

#[derive(Debug)]
pub struct Fq {
    cfg: FqConfig,
    queues: FlowQueues,
    table: Option<BoundedTable<FlowKey>>,
    /// A queue stays scheduled when push-outs empty it, until the round reaches it.
    drr: DrrRound,
    salt: Option<u64>,
}

impl Fq {
    /// Entries evicted from the exact table so far.
    pub fn evictions(&self) -> u64 {
        self.table.as_ref().map_or(0, |t| t.evictions())
    }

    fn classify(&mut self, key: &FlowKey, cx: &mut Cx) -> u32 {
        let salt = *self.salt.get_or_insert_with(|| cx.rng.next_u64());
        let h = flow_hash(key, salt);
        match &mut self.table {
            None => bucket(h, self.cfg.buckets),
            Some(t) => {
                // A new or evicted entry was idle: empty and off the round, nothing to reset.
                let i = t.lookup(*key, h).index();
                t.set_busy(i);
                i
            }
        }
    }

    /// Queue `i` left the round: its exact-table entry may be evicted.
    fn unscheduled(table: &mut Option<BoundedTable<FlowKey>>, i: u32) {
        if let Some(t) = table {
            t.set_idle(i);
        }
    }
}

impl Qdisc for Fq {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let i = self.classify(&pkt.flow, cx);
        self.queues.push_back(i, pkt);
        if !self.drr.is_scheduled(i) {
            self.drr.schedule(i, self.cfg.quantum_bytes as i64);
        }
        if self.queues.len_pkts() > self.cfg.limit_pkts as usize {
            let v = self.queues.fattest().expect("over the limit means something is queued");
            let dropped = self.queues.pop_back(v).expect("longest is non-empty");
            cx.drop(dropped, DropReason::FlowLimit);
        }
    }

    fn dequeue(&mut self, _cx: &mut Cx) -> Option<Packet> {
        let (queues, table) = (&self.queues, &mut self.table);
        let i = self.drr.next_nonempty(
            self.cfg.quantum_bytes as i64,
            |i| queues.is_empty(i),
            |i| Self::unscheduled(table, i),
        )?;
        let pkt = self.queues.pop_front(i).expect("next_nonempty gives a non-empty queue");
        self.drr.charge(i, pkt.len_bytes());
        if self.queues.is_empty(i) {
            self.drr.remove_head();
            Self::unscheduled(&mut self.table, i);
        }
        Some(pkt)
    }

    fn len_pkts(&self) -> usize {
        self.queues.len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.queues.backlog_bytes()
    }
    fn flow_table_len(&self) -> usize {
        self.table.as_ref().map_or(self.cfg.buckets as usize, |t| t.len())
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        out.extend([
            QdiscCounter::level("flows", self.drr.scheduled_len() as u64),
            QdiscCounter::total("flow_evictions", self.evictions()),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{self, max_window_unfairness, pkt};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use crate::time::Instant;
    use proptest::prelude::*;

    fn exact(limit: u32, quantum: u32) -> Accounted<Fq> {
        let cfg = FqConfig { limit_pkts: limit, classifier: FqClassifier::Exact, quantum_bytes: quantum, ..FqConfig::default() };
        Accounted::new(cfg.build().unwrap(), Rng::new(2, 0))
    }

    #[test]
    fn drr_alternates_by_quantum_when_one_flow_has_three_times_the_packets() {
        // Quantum 1500, 500-byte packets: 3 packets per turn. A has 12, B has 4.
        let mut q = exact(100, 1500);
        for _ in 0..12 {
            q.enqueue(pkt(1, 9, 1, 500), Instant(0));
        }
        for _ in 0..4 {
            q.enqueue(pkt(2, 9, 1, 500), Instant(0));
        }
        let order: String = std::iter::from_fn(|| q.dequeue(Instant(1)))
            .map(|p| if p.flow.src_ip == 1 { 'A' } else { 'B' })
            .collect();
        assert_eq!(order, "AAABBBAAABAAAAAA");
    }

    #[test]
    fn overflow_drops_the_last_packet_of_the_longest_queue() {
        let mut q = exact(5, 1500);
        for seq in 0..4 {
            let mut p = pkt(1, 9, 1, 1000);
            p.seq = seq;
            q.enqueue(p, Instant(0));
        }
        q.enqueue(pkt(2, 9, 1, 100), Instant(0)); // 5: full
        q.enqueue(pkt(3, 9, 1, 100), Instant(0)); // 6th: A's seq 3 goes
        let (v, r) = q.last_drops()[0];
        assert_eq!((v.flow.src_ip, v.seq, r), (1, 3, DropReason::FlowLimit));
        // The thesis' property: a flow with fewer queued packets than any other never
        // loses one. B and C have 1 each, A has 3: an arrival for B drops from A.
        q.enqueue(pkt(2, 9, 1, 100), Instant(0));
        assert_eq!(q.last_drops()[0].0.flow.src_ip, 1);
        // When the arrival's own queue is the longest, the arrival itself is dropped.
        let mut q = exact(3, 1500);
        for _ in 0..3 {
            q.enqueue(pkt(1, 9, 1, 100), Instant(0));
        }
        let mut p = pkt(1, 9, 1, 100);
        p.seq = 77;
        q.enqueue(p, Instant(0));
        assert_eq!(q.last_drops()[0].0.seq, 77);
    }

    #[test]
    fn exact_table_evicts_idle_entries_and_never_grows_past_capacity() {
        let cfg = FqConfig { limit_pkts: 10, classifier: FqClassifier::Exact, flow_table_capacity: 16, ..FqConfig::default() };
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(2, 0));
        for src in 0..5000u32 {
            q.enqueue(pkt(src, 9, 1, 100), Instant(src as u64));
            q.dequeue(Instant(src as u64));
            assert!(q.inner().flow_table_len() <= 16);
        }
        assert_eq!(q.inner().evictions(), 5000 - 16);
        // Each packet left at once, and a queue that a dequeue empties leaves the round.
        let counters: Vec<(&str, u64)> = q.counters().iter().map(|c| (c.name, c.value)).collect();
        assert_eq!(counters, [("flows", 0), ("flow_evictions", 5000 - 16)]);
    }

    #[test]
    fn hashed_mode_shares_queues_between_colliding_flows() {
        let cfg = FqConfig { buckets: 1, ..FqConfig::default() };
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(2, 0));
        for src in 0..3 {
            q.enqueue(pkt(src, 9, 1, 100), Instant(0));
        }
        // One bucket: plain FIFO.
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(Instant(1))).map(|p| p.flow.src_ip).collect();
        assert_eq!(order, vec![0, 1, 2]);
        assert_eq!(q.inner().flow_table_len(), 1);
    }

    #[test]
    fn drr_fairness_bound_with_backlogged_flows() {
        let mut q = exact(100_000, 1500);
        let mut rng = Rng::new(6, 6);
        let k = 6;
        for _ in 0..500 {
            for src in 0..k {
                q.enqueue(pkt(src, 9, 1, 40 + rng.below_inclusive(1460) as u16), Instant(0));
            }
        }
        let served: Vec<(usize, u64)> =
            (0..2500).map(|_| q.dequeue(Instant(1)).unwrap()).map(|p| (p.flow.src_ip as usize, p.len_bytes())).collect();
        assert!(max_window_unfairness(&served, k as usize) < 1500 + 2 * 1500);
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let bad = |c: FqConfig| c.build().unwrap_err().field;
        assert_eq!(bad(FqConfig { limit_pkts: 0, ..FqConfig::default() }), "limit_pkts");
        assert_eq!(bad(FqConfig { buckets: 0, ..FqConfig::default() }), "buckets");
        assert_eq!(bad(FqConfig { flow_table_capacity: 0, ..FqConfig::default() }), "flow_table_capacity");
        assert_eq!(bad(FqConfig { quantum_bytes: 0, ..FqConfig::default() }), "quantum_bytes");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// DRR bound: quantum + 2·max_packet (derivation in `testkit::max_window_unfairness`
        /// and the docs page), for k backlogged flows and random packet sizes.
        #[test]
        fn drr_fairness_bound_property(k in 2usize..8, seed in any::<u64>(), quantum in 1500u32..4000) {
            let mut q = exact(100_000, quantum);
            let flows: Vec<Packet> = (0..k as u32).map(|s| pkt(s, 9, 1, 0)).collect();
            testkit::drr_fairness(&mut q, &flows, |p| p.flow.src_ip as usize, k, seed, 300, quantum as u64 + 2 * 1500)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_limits_and_table_bound(
            limit in 1u32..200,
            is_exact in any::<bool>(),
            cap in 1u32..64,
            quantum in prop_oneof![Just(100u32), Just(1500u32)],
            ops in testkit::ops(2000),
        ) {
            let classifier = if is_exact { FqClassifier::Exact } else { FqClassifier::Hashed };
            let cfg = FqConfig { limit_pkts: limit, classifier, buckets: 32, flow_table_capacity: cap, quantum_bytes: quantum, ..FqConfig::default() };
            let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(3, 0));
            let table_cap = if is_exact { cap } else { 32 } as usize;
            testkit::run_ops(&mut q, &ops, limit as usize, table_cap)?;
        }
    }
}
