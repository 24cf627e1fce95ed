//! SFQ (Stochastic Fairness Queueing), as Linux `net/sched/sch_sfq.c`.
//!
//! Source: P. McKenney, "Stochastic Fairness Queuing", IEEE INFOCOM 1990; the Linux
//! implementation (Kuznetsov; Dumazet) for the data layout and the push-out rule.
//!
//! Principles: flows are hashed (salted 5-tuple hash) into `divisor` buckets; a bucket
//! that holds packets is bound to one of `flows` slots, each a FIFO. Active slots are
//! served round robin with a deficit ("allot") of `quantum_bytes` per turn (DRR), so each
//! gets about the same bytes per round. When the buffer is full the tail packet of the
//! longest slot is pushed out, so a fat flow pays for the overflow, not the arrival.
//! Flows that collide share a slot; the hash salt is redrawn every `perturb_s` seconds so
//! collisions do not last (queued packets are re-hashed, as Linux `sfq_rehash` does).
//!
//! Knobs (defaults from Linux `sfq_init`, except `perturb_s`):
//! - `limit_pkts` (127 packets): the whole buffer.
//! - `flows` (128 slots): flows that can hold packets at once; an arrival needing a new
//!   slot when all are busy is dropped (`overlimit`).
//! - `divisor` (1024 buckets): hash table size.
//! - `depth_pkts` (127 packets): per-slot limit; an arrival to a full slot is dropped
//!   (`flow_limit`).
//! - `quantum_bytes` (1514 bytes, one Ethernet MTU): bytes per slot per round.
//! - `perturb_s` (10 s; 0 = never). Linux defaults to 0 now; 10 s is the classic setting
//!   (McKenney; tc-sfq examples) and what this project asks for.
//!
//! Drops: push-out from the longest slot and the per-slot depth are `flow_limit`; no free
//! slot is `overlimit`. When every slot holds exactly one packet the slot next in round
//! robin loses its packet (Linux does the same).
//!
//! Complexity: enqueue and dequeue O(1) amortised; the longest slot is found in O(1) by
//! keeping slots in lists by length (Linux `dep[]`); a perturbation re-hashes the queued
//! packets, O(limit) once per `perturb_s`. Memory: `divisor` `u32`; per slot a bucket, a
//! list head, depth-index links and a deficit; one packet arena bounded by `limit_pkts`.
//! `flow_table_len` is the number of slots in use (at most `flows`).
//!
//! The slot queues, the longest-slot index and the round (the deficit is Linux's `allot`)
//! are the shared part `parts::drr`; the hashing, slot binding and perturbation are SFQ's.
//!
//! Counters ([`Qdisc::counters`]; Linux `tc -s` prints none of its own for SFQ):
//! `perturbations` (times the hash salt was redrawn, a total) and `flows` (slots active
//! now, a level).
//!
//! Trade-offs and limits: hashing makes fairness stochastic (collisions share a slot until
//! the next perturbation); a DRR round costs one `quantum` per slot so small packets are
//! not favoured; no AQM within a slot.

use super::parts::hash::{bucket, flow_hash};
use super::parts::{DrrRound, FlowQueues, NIL};
use super::ns2::{Ns2SfqKnobs, QueueVariant};
use super::{only_with_ns2, AnyQdisc, Cx, Qdisc, QdiscCounter};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::time::{Duration, Instant};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SfqConfig {
    /// Buffer capacity, packets.
    pub limit_pkts: u32,
    /// Slots (flows holding packets at once).
    pub flows: u32,
    /// Hash buckets.
    pub divisor: u32,
    /// Per-slot capacity, packets.
    pub depth_pkts: u32,
    /// Bytes a slot may send per round.
    pub quantum_bytes: u32,
    /// Seconds between hash perturbations; 0 = never.
    pub perturb_s: u64,
    /// `ns2`: ns-2 2.35's SFQ (`super::ns2::sfq`), which uses only the `ns2` knobs.
    #[serde(skip_serializing_if = "QueueVariant::is_default")]
    pub variant: QueueVariant,
    /// Knobs of the ns-2 variant only.
    #[serde(skip_serializing_if = "Ns2SfqKnobs::is_default")]
    pub ns2: Ns2SfqKnobs,
}

impl Default for SfqConfig {
    fn default() -> Self {
        SfqConfig { limit_pkts: 127, flows: 128, divisor: 1024, depth_pkts: 127, quantum_bytes: 1514, perturb_s: 10,
                    variant: QueueVariant::Default, ns2: Ns2SfqKnobs::default() }
    }
}

impl SfqConfig {
    /// Either variant, as the discipline set dispatches it.
    pub fn build_any(&self) -> Result<AnyQdisc, ConfigError> {
        match self.variant {
            QueueVariant::Default if !self.ns2.is_default() => Err(only_with_ns2()),
            QueueVariant::Default => self.build().map(AnyQdisc::Sfq),
            QueueVariant::Ns2 => self.ns2.build().map(AnyQdisc::Ns2Sfq),
        }
    }

    pub fn build(&self) -> Result<Sfq, ConfigError> {
        if self.limit_pkts == 0 {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet"));
        }
        if self.flows == 0 || self.flows > 65_536 {
            return Err(ConfigError::new("flows", self.flows, "1 to 65536 slots"));
        }
        if self.divisor == 0 || self.divisor > 65_536 {
            return Err(ConfigError::new("divisor", self.divisor, "1 to 65536 buckets"));
        }
        if self.depth_pkts == 0 {
            return Err(ConfigError::new("depth_pkts", 0, "at least 1 packet"));
        }
        if self.quantum_bytes == 0 {
            return Err(ConfigError::new("quantum_bytes", 0, "at least 1 byte"));
        }
        let n = self.flows as usize;
        Ok(Sfq {
            cfg: self.clone(),
            ht: vec![NIL; self.divisor as usize],
            slot_bucket: vec![NIL; n],
            free: (0..self.flows).rev().collect(),
            slots: FlowQueues::by_pkts(n),
            ring: DrrRound::new(n),
            salt: None,
            next_perturb: None,
            perturbations: 0,
        })
    }
}

#[derive(Debug)]
pub struct Sfq {
    cfg: SfqConfig,
    /// Bucket → slot, or NIL.
    ht: Vec<u32>,
    /// Slot → the hash bucket bound to it, or NIL.
    slot_bucket: Vec<u32>,
    free: Vec<u32>,
    slots: FlowQueues,
    /// Active slots (exactly the non-empty ones); the deficit is Linux's `allot`.
    ring: DrrRound,
    salt: Option<u64>,
    next_perturb: Option<Instant>,
    perturbations: u64,
}

impl Sfq {
    /// Hash perturbations so far.
    pub fn perturbations(&self) -> u64 {
        self.perturbations
    }

    /// The bucket a packet hashes to under the current salt (tests pick colliding flows).
    pub fn bucket_of(&self, pkt: &Packet) -> Option<u32> {
        self.salt.map(|s| bucket(flow_hash(&pkt.flow, s), self.cfg.divisor))
    }

    fn maybe_perturb(&mut self, cx: &mut Cx) {
        if self.salt.is_none() {
            self.salt = Some(cx.rng.next_u64());
            if self.cfg.perturb_s > 0 {
                self.next_perturb = Some(cx.now + Duration::from_secs(self.cfg.perturb_s));
            }
        }
        let Some(due) = self.next_perturb else { return };
        if cx.now < due {
            return;
        }
        self.salt = Some(cx.rng.next_u64());
        self.next_perturb = Some(cx.now + Duration::from_secs(self.cfg.perturb_s));
        self.perturbations += 1;
        // Re-hash what is queued, slot by slot in service order (per-flow order is kept).
        let mut queued = Vec::with_capacity(self.slots.len_pkts());
        while let Some(x) = self.ring.remove_head() {
            while let Some(p) = self.slots.pop_front(x) {
                queued.push(p);
            }
            self.release_slot(x);
        }
        for p in queued {
            self.insert(p, cx);
        }
    }

    /// Put `pkt` in its slot (without the total-limit check). Drops the arrival if no slot
    /// is free or its slot is at depth.
    fn insert(&mut self, pkt: Packet, cx: &mut Cx) -> Option<u32> {
        let b = bucket(flow_hash(&pkt.flow, self.salt.unwrap_or(0)), self.cfg.divisor);
        let mut x = self.ht[b as usize];
        if x == NIL {
            let Some(free) = self.free.pop() else {
                cx.drop(pkt, DropReason::Overlimit);
                return None;
            };
            x = free;
            self.ht[b as usize] = x;
            self.slot_bucket[x as usize] = b;
        }
        if self.slots.pkts(x) >= self.cfg.depth_pkts {
            cx.drop(pkt, DropReason::FlowLimit);
            return None;
        }
        self.slots.push_back(x, pkt);
        if self.slots.pkts(x) == 1 {
            // A new flow joins at the end of the round with a full quantum.
            self.ring.schedule(x, self.cfg.quantum_bytes as i64);
        }
        Some(x)
    }

    /// Unbind an empty slot (already off the round) from its bucket.
    fn release_slot(&mut self, x: u32) {
        let b = std::mem::replace(&mut self.slot_bucket[x as usize], NIL);
        self.ht[b as usize] = NIL;
        self.free.push(x);
    }

    /// Push out one packet: the tail of the longest slot, or, when all slots hold a single
    /// packet, the packet of the slot next in round robin (Linux `sfq_drop`).
    fn push_out(&mut self, cx: &mut Cx) {
        let Some(x) = self.slots.fattest() else { return };
        let victim = if self.slots.pkts(x) > 1 {
            x
        } else {
            let head = self.ring.remove_head().expect("a queued packet implies an active slot");
            self.release_slot(head);
            head
        };
        let pkt = self.slots.pop_back(victim).expect("non-empty");
        cx.drop(pkt, DropReason::FlowLimit);
    }
}

impl Qdisc for Sfq {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        self.maybe_perturb(cx);
        if self.insert(pkt, cx).is_some() && self.slots.len_pkts() > self.cfg.limit_pkts as usize {
            self.push_out(cx);
        }
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.maybe_perturb(cx);
        let quantum = self.cfg.quantum_bytes as i64;
        let x = self.ring.next(|_| quantum)?;
        let pkt = self.slots.pop_front(x).expect("active slots are non-empty");
        self.ring.charge(x, pkt.len_bytes());
        if self.slots.is_empty(x) {
            self.ring.remove_head();
            self.release_slot(x);
        }
        Some(pkt)
    }

    fn len_pkts(&self) -> usize {
        self.slots.len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.slots.backlog_bytes()
    }
    fn flow_table_len(&self) -> usize {
        self.ring.scheduled_len()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        out.extend([
            QdiscCounter::total("perturbations", self.perturbations),
            QdiscCounter::level("flows", self.ring.scheduled_len() as u64),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{self, max_window_unfairness, pkt};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use proptest::prelude::*;

    fn sfq(cfg: SfqConfig) -> Accounted<Sfq> {
        Accounted::new(cfg.build().unwrap(), Rng::new(11, 0))
    }

    /// Distinct source ports whose flows land in distinct buckets under `q`'s salt.
    fn distinct_ports(q: &Accounted<Sfq>, n: usize) -> Vec<u16> {
        let mut seen = std::collections::HashSet::new();
        (1..u16::MAX)
            .filter(|&port| seen.insert(q.inner().bucket_of(&pkt(1, 2, port, 100)).unwrap()))
            .take(n)
            .collect()
    }

    #[test]
    fn round_robin_by_quantum_between_two_flows() {
        // Quantum 3000 bytes, 1000-byte packets: each turn serves 3 packets (the allot
        // goes 3000 → 2000 → 1000 → 0, then the turn ends). Flow A has 3× B's packets.
        let mut q = sfq(SfqConfig { quantum_bytes: 3000, perturb_s: 0, ..SfqConfig::default() });
        q.enqueue(pkt(9, 9, 9, 100), Instant(0));
        q.dequeue(Instant(0)); // draw the salt
        let ports = distinct_ports(&q, 2);
        let (a, b) = (ports[0], ports[1]);
        for _ in 0..18 {
            q.enqueue(pkt(1, 2, a, 1000), Instant(1));
        }
        for _ in 0..6 {
            q.enqueue(pkt(1, 2, b, 1000), Instant(1));
        }
        let order: String = std::iter::from_fn(|| q.dequeue(Instant(2)))
            .map(|p| if p.flow.src_port == a { 'A' } else { 'B' })
            .collect();
        assert_eq!(order, "AAABBBAAABBBAAAAAAAAAAAA");
    }

    #[test]
    fn overflow_pushes_out_the_tail_of_the_longest_slot() {
        let mut q = sfq(SfqConfig { limit_pkts: 6, perturb_s: 0, ..SfqConfig::default() });
        q.enqueue(pkt(9, 9, 9, 100), Instant(0));
        q.dequeue(Instant(0));
        let ports = distinct_ports(&q, 2);
        let (fat, thin) = (ports[0], ports[1]);
        for seq in 0..5 {
            let mut p = pkt(1, 2, fat, 1000);
            p.seq = seq;
            q.enqueue(p, Instant(1));
        }
        q.enqueue(pkt(1, 2, thin, 100), Instant(2)); // 6 packets: full, no drop
        assert!(q.last_drops().is_empty());
        q.enqueue(pkt(1, 2, thin, 100), Instant(3)); // 7th: the fat flow's last packet goes
        assert_eq!(q.last_drops().len(), 1);
        let (victim, reason) = q.last_drops()[0];
        assert_eq!((victim.flow.src_port, victim.seq, reason), (fat, 4, DropReason::FlowLimit));
        assert_eq!(q.len_pkts(), 6);
    }

    #[test]
    fn a_newly_active_slot_joins_the_round_behind_every_active_slot_as_linux() {
        // Linux sfq_enqueue links a new slot after `tail` (the slot before the one being
        // served) and makes it the tail: it is served after every active slot, and the
        // slot in mid-turn finishes its turn first. Quantum 3000, 1000-byte packets: three
        // packets per turn. A (9) and B (6) are backlogged; C (3) arrives after A's
        // second packet: A finishes its turn, then B, then C, then A again.
        let mut q = sfq(SfqConfig { quantum_bytes: 3000, perturb_s: 0, ..SfqConfig::default() });
        q.enqueue(pkt(9, 9, 9, 100), Instant(0));
        q.dequeue(Instant(0));
        let ports = distinct_ports(&q, 3);
        let name = |p: Packet| ['A', 'B', 'C'][ports.iter().position(|&x| x == p.flow.src_port).unwrap()];
        (0..9).for_each(|_| q.enqueue(pkt(1, 2, ports[0], 1000), Instant(1)));
        (0..6).for_each(|_| q.enqueue(pkt(1, 2, ports[1], 1000), Instant(1)));
        let mut order: String = (0..2).map(|_| name(q.dequeue(Instant(2)).unwrap())).collect();
        (0..3).for_each(|_| q.enqueue(pkt(1, 2, ports[2], 1000), Instant(3)));
        order.extend(std::iter::from_fn(|| q.dequeue(Instant(4))).map(name));
        assert_eq!(order, "AAABBBCCCAAABBBAAA");
    }

    #[test]
    fn push_out_takes_the_tail_of_the_slot_that_reached_the_greatest_depth_last() {
        // Linux sfq_drop takes dep[cur_depth].next, the slot most recently linked at the
        // greatest depth, and drops its tail (no headdrop). Two slots at depth 3, limit 6:
        // an arrival in a third slot pushes out the last packet of whichever reached 3 last.
        for (last, first) in [(1usize, 0usize), (0, 1)] {
            let mut q = sfq(SfqConfig { limit_pkts: 6, perturb_s: 0, ..SfqConfig::default() });
            q.enqueue(pkt(9, 9, 9, 100), Instant(0));
            q.dequeue(Instant(0));
            let ports = distinct_ports(&q, 3);
            for seq in 0..3 {
                for k in [first, last] {
                    let mut p = pkt(1, 2, ports[k], 1000);
                    p.seq = seq;
                    q.enqueue(p, Instant(1));
                }
            }
            q.enqueue(pkt(1, 2, ports[2], 1000), Instant(2));
            let (victim, reason) = q.last_drops()[0];
            assert_eq!((victim.flow.src_port, victim.seq, reason), (ports[last], 2, DropReason::FlowLimit));
        }
    }

    #[test]
    fn per_slot_depth_and_slot_exhaustion() {
        let mut q = sfq(SfqConfig { flows: 2, depth_pkts: 2, perturb_s: 0, ..SfqConfig::default() });
        q.enqueue(pkt(9, 9, 9, 100), Instant(0));
        q.dequeue(Instant(0));
        let ports = distinct_ports(&q, 3);
        for _ in 0..3 {
            q.enqueue(pkt(1, 2, ports[0], 100), Instant(1));
        }
        assert_eq!(q.stats().dropped(DropReason::FlowLimit), 1, "third packet exceeds depth 2");
        q.enqueue(pkt(1, 2, ports[1], 100), Instant(1));
        q.enqueue(pkt(1, 2, ports[2], 100), Instant(1));
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 1, "no third slot");
        assert_eq!(q.inner().flow_table_len(), 2);
    }

    #[test]
    fn perturbation_redraws_the_salt_and_keeps_every_packet() {
        let mut q = sfq(SfqConfig { perturb_s: 1, limit_pkts: 1000, depth_pkts: 1000, ..SfqConfig::default() });
        for port in 0..50u16 {
            for seq in 0..4 {
                let mut p = pkt(1, 2, port, 500);
                p.seq = seq;
                q.enqueue(p, Instant(0));
            }
        }
        let before = q.inner().bucket_of(&pkt(1, 2, 7, 1)).unwrap();
        // Dequeue after 1 s: the salt changes; with 1024 buckets a given flow keeps its
        // bucket with probability 1/1024, so check several flows.
        q.dequeue(Instant(1_000_000_000));
        assert_eq!(q.inner().perturbations(), 1);
        // 50 ports in up to 50 slots; 199 packets left in them, so every flow's slot is
        // still active (a slot is active exactly while it holds packets).
        let slots: std::collections::HashSet<u32> = (0..50u16).map(|p| q.inner().bucket_of(&pkt(1, 2, p, 1)).unwrap()).collect();
        let counters: Vec<(&str, u64)> = q.counters().iter().map(|c| (c.name, c.value)).collect();
        assert_eq!(counters, [("perturbations", 1), ("flows", slots.len() as u64)]);
        let moved = (0..50u16).filter(|&p| q.inner().bucket_of(&pkt(1, 2, p, 1)).unwrap() != before).count();
        assert!(moved > 40);
        // Nothing lost (no slot exhaustion with 50 flows in 128 slots... unless two of the
        // 50 collide, which merges them without loss), and per-flow order is intact.
        assert_eq!(q.len_pkts() + 1, 200);
        let mut last = std::collections::HashMap::new();
        while let Some(p) = q.dequeue(Instant(1_000_000_001)) {
            if let Some(prev) = last.insert(p.flow.src_port, p.seq) {
                assert!(p.seq > prev, "reordered within a flow");
            }
        }
        q.check().unwrap();
    }

    #[test]
    fn drr_fairness_bound_with_backlogged_flows() {
        // 5 permanently backlogged flows with random sizes; over every window the bytes of
        // any two differ by less than quantum + 2·max_packet (DRR bound, see testkit).
        let mut q = sfq(SfqConfig { limit_pkts: 10_000, depth_pkts: 10_000, perturb_s: 0, ..SfqConfig::default() });
        q.enqueue(pkt(9, 9, 9, 100), Instant(0));
        q.dequeue(Instant(0));
        let ports = distinct_ports(&q, 5);
        let mut rng = Rng::new(4, 4);
        for _ in 0..400 {
            for &port in &ports {
                q.enqueue(pkt(1, 2, port, 40 + rng.below_inclusive(1460) as u16), Instant(1));
            }
        }
        let served: Vec<(usize, u64)> = (0..1500)
            .map(|_| q.dequeue(Instant(2)).unwrap())
            .map(|p| (ports.iter().position(|&x| x == p.flow.src_port).unwrap(), p.len_bytes()))
            .collect();
        assert!(max_window_unfairness(&served, 5) < 1514 + 2 * 1500);
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let bad = |c: SfqConfig| c.build().unwrap_err().field;
        assert_eq!(bad(SfqConfig { limit_pkts: 0, ..SfqConfig::default() }), "limit_pkts");
        assert_eq!(bad(SfqConfig { flows: 0, ..SfqConfig::default() }), "flows");
        assert_eq!(bad(SfqConfig { divisor: 70_000, ..SfqConfig::default() }), "divisor");
        assert_eq!(bad(SfqConfig { quantum_bytes: 0, ..SfqConfig::default() }), "quantum_bytes");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn drr_fairness_bound_property(k in 2usize..8, seed in any::<u64>()) {
            let mut q = sfq(SfqConfig { limit_pkts: 10_000, depth_pkts: 10_000, perturb_s: 0, ..SfqConfig::default() });
            q.enqueue(pkt(9, 9, 9, 100), Instant(0));
            q.dequeue(Instant(0));
            let ports = distinct_ports(&q, k);
            let flows: Vec<Packet> = ports.iter().map(|&p| pkt(1, 2, p, 0)).collect();
            let class = |p: &Packet| ports.iter().position(|&x| x == p.flow.src_port).unwrap();
            testkit::drr_fairness(&mut q, &flows, class, k, seed, 300, 1514 + 2 * 1500)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_limits_and_table_bound(
            limit in 1u32..200,
            flows in 1u32..64,
            depth in 1u32..50,
            perturb in 0u64..2,
            ops in testkit::ops(2000),
        ) {
            let cfg = SfqConfig { limit_pkts: limit, flows, depth_pkts: depth, divisor: 256, perturb_s: perturb, ..SfqConfig::default() };
            let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(3, 0));
            testkit::run_ops(&mut q, &ops, limit as usize, flows as usize)?;
        }
    }
}
