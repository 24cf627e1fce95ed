//! FQ-CoDel: flow queueing with CoDel on every queue, as RFC 8290 and Linux
//! `net/sched/sch_fq_codel.c`.
//!
//! Source: T. Hoeiland-Joergensen, P. McKenney, D. Taht, J. Gettys, E. Dumazet, "The Flow
//! Queue CoDel Packet Scheduler and Active Queue Management Algorithm", RFC 8290 (2018);
//! defaults from Linux `fq_codel_init`.
//!
//! Principles:
//! - Packets are hashed (salted 5-tuple hash) into `flows` queues.
//! - Deficit round robin with two lists: a queue that becomes active joins the *new* list
//!   with one quantum; new queues are served before *old* ones, so a sparse flow (a fresh
//!   connection, a DNS query, the first packets of a short transfer) gets its packets out
//!   ahead of the backlogged bulk flows. A queue that uses up its quantum moves to the end
//!   of the old list with another quantum; a new queue that empties moves to the old list
//!   (so it cannot starve old queues by re-entering as new); an old queue that empties
//!   leaves the lists.
//! - CoDel (the shared core, [`crate::aqm::codel`]) runs on each queue at dequeue, with
//!   that queue's own state and sojourn times: drops are `early`, ECN-capable packets are
//!   marked instead when `ecn` is on. Its "at most one MTU queued, do not drop" exemption
//!   looks at the whole discipline's backlog, not the flow's (Linux passes
//!   `sch->qstats.backlog`): with many flows of one or two packets each, every flow is
//!   under an MTU while the link holds a long queue, and a per-flow test would exempt
//!   them all.
//! - When the buffer exceeds `limit_pkts` or `memory_limit_bytes`, the fattest queue (most
//!   bytes) loses packets from its head, up to `drop_batch_size` packets or until half of
//!   its backlog is gone (`flow_limit`). Head drop signals the sender sooner. The number
//!   dropped is added to that queue's CoDel `count` (Linux `fq_codel_drop`), so CoDel
//!   starts at a higher drop rate when it next acts on the queue.
//!
//! Knobs (Linux defaults): `limit_pkts` 10240, `flows` 1024, `quantum_bytes` 1514,
//! `target_ns` 5 ms, `interval_ns` 100 ms, `memory_limit_bytes` 32 MiB (IP bytes here;
//! Linux counts buffer truesize), `drop_batch_size` 64, `ecn` true, `mtu_bytes` 1514 (CoDel
//! does not drop while at most one MTU is queued in the whole discipline).
//!
//! Complexity: enqueue O(1); dequeue O(1) amortised plus O(1) per CoDel drop. Overflow
//! scans the per-queue byte backlogs for the fattest, O(flows), as Linux does ("with 1024
//! flows, we scan 4KB of memory"): the backlogs live in their own `Vec<u32>` so the scan
//! is a linear pass over 4 bytes per queue, and each scan drops up to a batch of packets.
//! `flows` is a bounded configuration value (at most 65536), not the number of 5-tuples.
//! Memory: per queue a list head, its byte count, a deficit and CoDel state, plus one
//! packet arena of at most `limit_pkts`+1 packets. `flow_table_len` is `flows` (allocated
//! up front; a flood of 5-tuples only collides). The queues, the byte scan and the new/old
//! lists are the shared part `parts::drr`; the per-queue CoDel state and the batch head
//! drop are FQ-CoDel's.
//!
//! Counters ([`Qdisc::counters`], as Linux `tc -s qdisc` prints `tc_fq_codel_qd_stats`):
//! `maxpacket` (largest packet CoDel has dequeued, bytes; a level), `drop_overlimit`
//! (packets dropped from the fattest queue because the buffer exceeded `limit_pkts` or
//! `memory_limit_bytes`), `drop_overmemory` (of those, the ones dropped while the byte limit
//! was exceeded), `new_flow_count` (times a queue became active and joined the new list),
//! `ecn_mark` (packets CoDel marked CE instead of dropping), `new_flows_len` and
//! `old_flows_len` (queues on each list now) and `memory_used` (bytes queued now; IP
//! bytes, where Linux counts buffer truesize). CoDel's own drops are the `early` drops of
//! the common counters.
//!
//! Trade-offs and limits: hashing means colliding flows share a queue (1024 queues, so
//! with a few hundred flows some collide); the new-flow boost is a heuristic any flow can
//! earn by pausing; the CE-threshold option of Linux is not implemented.

use super::parts::hash::{bucket, flow_hash};
use super::parts::{DrrRound, FlowQueues};
use super::{Cx, Qdisc, QdiscCounter};
use crate::aqm::codel::{codel_dequeue, CodelParams, CodelQueue, CodelStats, CodelVars};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::stats::{DropReason, MarkReason};
use crate::time::Duration;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelConfig {
    /// Buffer capacity, packets.
    pub limit_pkts: u32,
    /// Hashed queues.
    pub flows: u32,
    /// Bytes a queue may send per round.
    pub quantum_bytes: u32,
    /// CoDel target sojourn time, nanoseconds.
    pub target_ns: u64,
    /// CoDel interval, nanoseconds.
    pub interval_ns: u64,
    /// Buffer capacity in queued IP bytes.
    pub memory_limit_bytes: u64,
    /// Most packets dropped from the fattest queue per overflow.
    pub drop_batch_size: u32,
    /// Mark ECN-capable packets instead of dropping them (CoDel decisions only).
    pub ecn: bool,
    /// CoDel never drops while at most this many bytes are queued (all flows together).
    pub mtu_bytes: u32,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            limit_pkts: 10 * 1024,
            flows: 1024,
            quantum_bytes: 1514,
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            memory_limit_bytes: 32 << 20,
            drop_batch_size: 64,
            ecn: true,
            mtu_bytes: 1514,
        }
    }
}

impl FqCodelConfig {
    pub fn build(&self) -> Result<FqCodel, ConfigError> {
        if self.limit_pkts == 0 {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet"));
        }
        if self.flows == 0 || self.flows > 65_536 {
            return Err(ConfigError::new("flows", self.flows, "1 to 65536 queues"));
        }
        if self.quantum_bytes == 0 {
            return Err(ConfigError::new("quantum_bytes", 0, "at least 1 byte"));
        }
        if self.target_ns == 0 {
            return Err(ConfigError::new("target_ns", 0, "at least 1 ns"));
        }
        if self.interval_ns < self.target_ns {
            return Err(ConfigError::new("interval_ns", self.interval_ns, format!("at least target_ns ({})", self.target_ns)));
        }
        if self.memory_limit_bytes == 0 {
            return Err(ConfigError::new("memory_limit_bytes", 0, "at least 1 byte"));
        }
        if self.drop_batch_size == 0 {
            return Err(ConfigError::new("drop_batch_size", 0, "at least 1 packet"));
        }
        let n = self.flows as usize;
        Ok(FqCodel {
            params: CodelParams {
                target: Duration(self.target_ns),
                interval: Duration(self.interval_ns),
                mtu_bytes: self.mtu_bytes as u64,
                ecn: self.ecn,
            },
            cfg: self.clone(),
            codel: vec![CodelVars::default(); n],
            queues: FlowQueues::by_bytes(n),
            drr: DrrRound::new(n),
            salt: None,
            codel_stats: CodelStats::default(),
            overflow_drops: 0,
            overmemory_drops: 0,
            new_flow_count: 0,
        })
    }
}

#[derive(Debug)]
pub struct FqCodel {
    cfg: FqCodelConfig,
    params: CodelParams,
    /// Each queue's CoDel state.
    codel: Vec<CodelVars>,
    /// Fattest by bytes: the per-queue byte counts are scanned on overflow, as Linux.
    queues: FlowQueues,
    /// RFC 8290's new and old lists.
    drr: DrrRound,
    salt: Option<u64>,
    codel_stats: CodelStats,
    overflow_drops: u64,
    /// Of `overflow_drops`, those made while the byte limit was exceeded.
    overmemory_drops: u64,
    new_flow_count: u64,
}

/// One flow's queue as CoDel sees it; drops go to the discipline's drop list. Its
/// `backlog_bytes` is the discipline's, as Linux hands CoDel `sch->qstats.backlog`.
struct FlowQueue<'a> {
    queues: &'a mut FlowQueues,
    i: u32,
    drops: &'a mut Vec<(Packet, DropReason)>,
}

impl CodelQueue for FlowQueue<'_> {
    fn pop(&mut self) -> Option<Packet> {
        self.queues.pop_front(self.i)
    }
    fn backlog_bytes(&self) -> u64 {
        self.queues.backlog_bytes()
    }
    fn drop(&mut self, pkt: Packet) {
        self.drops.push((pkt, DropReason::Early));
    }
}

impl FqCodel {
    pub fn codel_stats(&self) -> &CodelStats {
        &self.codel_stats
    }
    /// Queues that became active (joined the new list) so far.
    pub fn new_flow_count(&self) -> u64 {
        self.new_flow_count
    }
    /// Packets dropped by the fattest-flow rule.
    pub fn overflow_drops(&self) -> u64 {
        self.overflow_drops
    }

    /// Drop from the head of the fattest queue: up to `drop_batch_size` packets, stopping
    /// once half its backlog is gone, and add the number dropped to its CoDel count
    /// (Linux `fq_codel_drop`: "tell codel to increase its signal strength").
    fn drop_from_fattest(&mut self, cx: &mut Cx) {
        let over_memory = self.queues.backlog_bytes() > self.cfg.memory_limit_bytes;
        let fat = self.queues.fattest().expect("the byte scan always names a queue");
        let threshold = self.queues.bytes(fat) / 2;
        let (mut dropped_bytes, mut n) = (0u64, 0u32);
        while let Some(p) = self.queues.pop_front(fat) {
            dropped_bytes += p.len_bytes();
            n += 1;
            self.overflow_drops += 1;
            cx.drop(p, DropReason::FlowLimit);
            if n >= self.cfg.drop_batch_size || dropped_bytes >= threshold {
                break;
            }
        }
        if over_memory {
            self.overmemory_drops += n as u64;
        }
        let codel = &mut self.codel[fat as usize];
        codel.count = codel.count.saturating_add(n);
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let salt = *self.salt.get_or_insert_with(|| cx.rng.next_u64());
        let i = bucket(flow_hash(&pkt.flow, salt), self.cfg.flows);
        self.queues.push_back(i, pkt);
        if !self.drr.is_scheduled(i) {
            self.drr.schedule_new(i, self.cfg.quantum_bytes as i64);
            self.new_flow_count += 1;
        }
        while self.queues.len_pkts() > self.cfg.limit_pkts as usize
            || self.queues.backlog_bytes() > self.cfg.memory_limit_bytes
        {
            self.drop_from_fattest(cx);
        }
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let quantum = self.cfg.quantum_bytes as i64;
        loop {
            // CoDel runs after the deficit check: a queue is found empty only when its
            // turn comes with deficit left (RFC 8290 Section 4.2 order).
            let i = self.drr.next(|_| quantum)?;
            let mut q = FlowQueue { queues: &mut self.queues, i, drops: cx.drops };
            let out = codel_dequeue(&self.params, &mut self.codel[i as usize], &mut self.codel_stats, cx.now, &mut q);
            let Some(mut pkt) = out.pkt else {
                // Empty queue: a new one gets a pass through the old list first, an old one
                // leaves.
                self.drr.retire_head();
                continue;
            };
            if out.mark {
                cx.mark(&mut pkt, MarkReason::Early);
            }
            self.drr.charge(i, pkt.len_bytes());
            return Some(pkt);
        }
    }

    fn len_pkts(&self) -> usize {
        self.queues.len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.queues.backlog_bytes()
    }
    fn flow_table_len(&self) -> usize {
        self.codel.len()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        out.extend([
            QdiscCounter::level("maxpacket", self.codel_stats.maxpacket),
            QdiscCounter::total("drop_overlimit", self.overflow_drops),
            QdiscCounter::total("new_flow_count", self.new_flow_count),
            QdiscCounter::total("ecn_mark", self.codel_stats.ecn_mark),
            QdiscCounter::total("drop_overmemory", self.overmemory_drops),
            QdiscCounter::level("new_flows_len", self.drr.new_len() as u64),
            QdiscCounter::level("old_flows_len", self.drr.old_len() as u64),
            QdiscCounter::level("memory_used", self.queues.backlog_bytes()),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testkit::{self, max_window_unfairness, pkt};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use crate::time::Instant;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn fq_codel(cfg: FqCodelConfig) -> Accounted<FqCodel> {
        Accounted::new(cfg.build().unwrap(), Rng::new(21, 0))
    }

    /// `n` source addresses whose flows hash to distinct queues under `q`'s salt.
    fn distinct_srcs(q: &mut Accounted<FqCodel>, n: usize) -> Vec<u32> {
        q.enqueue(pkt(999, 9, 1, 100), Instant(0));
        q.dequeue(Instant(0));
        let salt = q.inner().salt.unwrap();
        let mut seen = std::collections::HashSet::new();
        (1..u32::MAX)
            .filter(|&s| seen.insert(bucket(flow_hash(&pkt(s, 9, 1, 1).flow, salt), q.inner().cfg.flows)))
            .take(n)
            .collect()
    }

    #[test]
    fn a_new_flows_first_packet_goes_before_an_old_backlogged_flow() {
        let mut q = fq_codel(FqCodelConfig::default());
        let s = distinct_srcs(&mut q, 2);
        let (bulk, sparse) = (s[0], s[1]);
        for _ in 0..20 {
            q.enqueue(pkt(bulk, 9, 1, 1500), Instant(MS));
        }
        // The bulk flow spends its first quantum (one 1500-byte packet leaves it at 14
        // bytes of deficit, a second one ends its turn) and becomes old.
        assert_eq!(q.dequeue(Instant(MS)).unwrap().flow.src_ip, bulk);
        assert_eq!(q.dequeue(Instant(MS)).unwrap().flow.src_ip, bulk);
        // A packet of a new flow arrives: it is served next, ahead of the 18 queued.
        q.enqueue(pkt(sparse, 9, 1, 100), Instant(2 * MS));
        assert_eq!(q.dequeue(Instant(2 * MS)).unwrap().flow.src_ip, sparse);
        assert_eq!(q.dequeue(Instant(2 * MS)).unwrap().flow.src_ip, bulk);
        assert_eq!(q.inner().new_flow_count(), 3); // the probe, bulk, sparse
    }

    #[test]
    fn codel_drops_only_after_a_full_interval_above_target_and_counts_them_early() {
        // One flow, two 1000-byte arrivals per ms, one dequeue per ms: the sojourn of the
        // packet dequeued at t ms is ⌈t/2⌉ ms (see aqm::codel tests), ≥ 5 ms from t = 9,
        // so the first CoDel drop is at t = 109 ms, then at 209 ms (interval/√1).
        let mut q = fq_codel(FqCodelConfig { ecn: false, ..FqCodelConfig::default() });
        let mut drops_at = Vec::new();
        for t in 0..250u64 {
            q.enqueue(pkt(1, 9, 1, 1000), Instant(t * MS));
            q.enqueue(pkt(1, 9, 1, 1000), Instant(t * MS));
            q.dequeue(Instant(t * MS));
            drops_at.extend(q.last_drops().iter().map(|(_, r)| (t, *r)));
        }
        assert_eq!(drops_at, vec![(109, DropReason::Early), (209, DropReason::Early)]);
        assert_eq!(q.inner().codel_stats().drop_count, 2);
    }

    #[test]
    fn codel_acts_on_many_small_flows_because_the_mtu_exemption_is_the_whole_backlog() {
        // 10 flows, quantum = packet size = 1000 bytes, so DRR serves flow t mod 10 at t ms.
        // Each flow holds 2 packets before its pop and 1 after (1000 bytes, under one MTU);
        // all flows together hold 19 000 bytes. A packet waits 20 ms in steady state.
        // Flow f first sees a sojourn ≥ 5 ms at t₀ = f (f ≥ 5) or f + 10 (the first packets
        // waited f and f + 10 ms), so CoDel drops it first at t₀ + 100 ms: once each flow,
        // at 105..=114 ms; the next drops are due an interval later (≥ 205 ms). A per-flow
        // MTU test would never drop.
        let mut q = fq_codel(FqCodelConfig { quantum_bytes: 1000, ecn: false, ..FqCodelConfig::default() });
        let srcs = distinct_srcs(&mut q, 10);
        for &s in &srcs {
            q.enqueue(pkt(s, 9, 1, 1000), Instant(0));
            q.enqueue(pkt(s, 9, 1, 1000), Instant(0));
        }
        let mut drops_at = Vec::new();
        for t in 0..200u64 {
            let p = q.dequeue(Instant(t * MS)).unwrap();
            let f = srcs.iter().position(|&s| s == p.flow.src_ip).unwrap();
            assert_eq!(f as u64, t % 10, "round robin at {t} ms");
            drops_at.extend(q.last_drops().iter().map(|(_, r)| (t, *r)));
            q.enqueue(pkt(srcs[f], 9, 1, 1000), Instant(t * MS));
        }
        let expect: Vec<(u64, DropReason)> = (105..=114).map(|t| (t, DropReason::Early)).collect();
        assert_eq!(drops_at, expect);
    }

    #[test]
    fn an_overflow_batch_adds_its_drops_to_the_fat_flows_codel_count() {
        // Linux fq_codel_drop: the fat flow's CoDel count grows by the packets dropped.
        // 20 packets of 1000 bytes and a limit of 19: half the backlog is 10 packets.
        let mut q = fq_codel(FqCodelConfig { limit_pkts: 19, ..FqCodelConfig::default() });
        let s = distinct_srcs(&mut q, 1)[0];
        for _ in 0..20 {
            q.enqueue(pkt(s, 9, 1, 1000), Instant(MS));
        }
        assert_eq!(q.last_drops().len(), 10);
        let salt = q.inner().salt.unwrap();
        let i = bucket(flow_hash(&pkt(s, 9, 1, 1).flow, salt), q.inner().cfg.flows) as usize;
        assert_eq!(q.inner().codel[i].count, 10);
        // When CoDel first drops in that flow it resumes at count − lastcount = 10, so the
        // second drop follows after interval/√10 = 31.62 ms, not a whole interval. One
        // 1000-byte arrival and one departure per ms from t = 2 ms: the 10 packets left
        // arrived at 1 ms, so the sojourn at t is t − 1 ms until it settles at 10 ms; it
        // reaches target at 6 ms, CoDel drops first at 106 ms and next at 106 + 31.62 →
        // the dequeue at 138 ms (without the rule: at 206 ms).
        let mut drops_at = Vec::new();
        for t in 2..140u64 {
            q.enqueue(pkt(s, 9, 1, 1000), Instant(t * MS));
            q.dequeue(Instant(t * MS));
            drops_at.extend(q.last_drops().iter().map(|_| t));
        }
        assert_eq!(drops_at, vec![106, 138]);
    }

    #[test]
    fn ecn_capable_packets_are_marked_instead() {
        let mut q = fq_codel(FqCodelConfig::default());
        for t in 0..250u64 {
            for _ in 0..2 {
                let mut p = pkt(1, 9, 1, 1000);
                p.ecn = Ecn::Ect;
                q.enqueue(p, Instant(t * MS));
            }
            q.dequeue(Instant(t * MS));
        }
        assert_eq!(q.stats().dropped(DropReason::Early), 0);
        assert_eq!(q.stats().marked(MarkReason::Early), 2); // at 109 and 209 ms
        assert_eq!(counter(&q, "ecn_mark"), 2);
    }

    #[test]
    fn overflow_batch_drops_half_the_fattest_backlog_from_its_head() {
        let mut q = fq_codel(FqCodelConfig { limit_pkts: 30, ..FqCodelConfig::default() });
        let s = distinct_srcs(&mut q, 2);
        for seq in 0..20 {
            let mut p = pkt(s[0], 9, 1, 1000);
            p.seq = seq;
            q.enqueue(p, Instant(0));
        }
        for _ in 0..10 {
            q.enqueue(pkt(s[1], 9, 1, 100), Instant(0));
        }
        q.enqueue(pkt(s[1], 9, 1, 100), Instant(0)); // 31 > 30
        // Fattest: 20 000 bytes; drop from the head until 10 000 bytes are gone: 10 packets.
        let drops = q.last_drops();
        assert_eq!(drops.len(), 10);
        assert!(drops.iter().enumerate().all(|(k, (p, r))| p.seq == k as u32 && *r == DropReason::FlowLimit));
        // The batch is capped by drop_batch_size.
        let mut q = fq_codel(FqCodelConfig { limit_pkts: 300, drop_batch_size: 64, ..FqCodelConfig::default() });
        for _ in 0..301 {
            q.enqueue(pkt(1, 9, 1, 100), Instant(0));
        }
        assert_eq!(q.last_drops().len(), 64);
        // The byte limit triggers the same rule.
        let mut q = fq_codel(FqCodelConfig { memory_limit_bytes: 5000, ..FqCodelConfig::default() });
        for _ in 0..6 {
            q.enqueue(pkt(1, 9, 1, 1000), Instant(0));
        }
        assert_eq!(q.last_drops().len(), 3); // 6000 bytes: drop half (3000)
        assert!(q.backlog_bytes() <= 5000);
    }

    #[test]
    fn drr_fairness_bound_with_backlogged_flows() {
        let mut q = fq_codel(FqCodelConfig { limit_pkts: 100_000, ..FqCodelConfig::default() });
        let srcs = distinct_srcs(&mut q, 5);
        let mut rng = Rng::new(8, 8);
        for _ in 0..400 {
            for &s in &srcs {
                q.enqueue(pkt(s, 9, 1, 40 + rng.below_inclusive(1460) as u16), Instant(MS));
            }
        }
        // Dequeued at the arrival time: sojourn 0, CoDel never drops.
        let served: Vec<(usize, u64)> = (0..1500)
            .map(|_| q.dequeue(Instant(MS)).unwrap())
            .map(|p| (srcs.iter().position(|&s| s == p.flow.src_ip).unwrap(), p.len_bytes()))
            .collect();
        assert!(max_window_unfairness(&served, 5) < 1514 + 2 * 1500);
    }

    fn counter(q: &Accounted<FqCodel>, name: &str) -> u64 {
        q.counters().iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no counter {name}")).value
    }

    #[test]
    fn counters_follow_a_scripted_sequence() {
        let mut q = fq_codel(FqCodelConfig::default());
        let srcs = distinct_srcs(&mut q, 4);
        while q.dequeue(Instant(0)).is_some() {}
        // The probe's queue has left both lists; it was the one activation so far.
        assert_eq!(q.dequeue(Instant(0)), None);
        let names: Vec<&str> = q.counters().iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            ["maxpacket", "drop_overlimit", "new_flow_count", "ecn_mark", "drop_overmemory", "new_flows_len", "old_flows_len", "memory_used"]
        );
        assert_eq!((counter(&q, "new_flow_count"), counter(&q, "new_flows_len"), counter(&q, "old_flows_len")), (1, 0, 0));
        // Three flows become active (two packets each), a fourth stays idle.
        let sizes = [[100u16, 1400], [60, 900], [1200, 40]];
        for (s, lens) in srcs.iter().zip(sizes) {
            for len in lens {
                q.enqueue(pkt(*s, 9, 1, len), Instant(MS));
            }
        }
        let offered: u64 = sizes.iter().flatten().map(|&l| l as u64).sum();
        assert_eq!(counter(&q, "new_flow_count"), 1 + 3);
        assert_eq!((counter(&q, "new_flows_len"), counter(&q, "old_flows_len")), (3, 0));
        assert_eq!(counter(&q, "memory_used"), offered);
        // Drain at the arrival time (sojourn 0: CoDel neither drops nor marks).
        let mut largest = 0;
        while let Some(p) = q.dequeue(Instant(MS)) {
            largest = largest.max(p.len_bytes());
        }
        assert_eq!(counter(&q, "maxpacket"), largest);
        assert_eq!(largest, 1400);
        assert_eq!((counter(&q, "new_flows_len"), counter(&q, "old_flows_len"), counter(&q, "memory_used")), (0, 0, 0));
        // An emptied queue that left the lists becomes active again: one more new flow.
        q.enqueue(pkt(srcs[0], 9, 1, 100), Instant(2 * MS));
        q.enqueue(pkt(srcs[3], 9, 1, 100), Instant(2 * MS));
        assert_eq!(counter(&q, "new_flow_count"), 1 + 3 + 2);
        assert_eq!((counter(&q, "drop_overlimit"), counter(&q, "drop_overmemory"), counter(&q, "ecn_mark")), (0, 0, 0));
    }

    #[test]
    fn overflow_counters_split_the_packet_and_byte_limits() {
        // 20 packets of 1000 bytes, limit 19 packets: half the fattest backlog, 10 packets,
        // all over the packet limit (the byte limit is 32 MiB).
        let mut q = fq_codel(FqCodelConfig { limit_pkts: 19, ..FqCodelConfig::default() });
        for _ in 0..20 {
            q.enqueue(pkt(1, 9, 1, 1000), Instant(MS));
        }
        assert_eq!((counter(&q, "drop_overlimit"), counter(&q, "drop_overmemory")), (10, 0));
        // 6 packets of 1000 bytes over a 5000-byte limit: 3 dropped, all over memory.
        let mut q = fq_codel(FqCodelConfig { memory_limit_bytes: 5000, ..FqCodelConfig::default() });
        for _ in 0..6 {
            q.enqueue(pkt(1, 9, 1, 1000), Instant(0));
        }
        assert_eq!((counter(&q, "drop_overlimit"), counter(&q, "drop_overmemory")), (3, 3));
        assert_eq!(counter(&q, "memory_used"), 3000);
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let bad = |c: FqCodelConfig| c.build().unwrap_err().field;
        assert_eq!(bad(FqCodelConfig { flows: 0, ..FqCodelConfig::default() }), "flows");
        assert_eq!(bad(FqCodelConfig { interval_ns: 1, ..FqCodelConfig::default() }), "interval_ns");
        assert_eq!(bad(FqCodelConfig { drop_batch_size: 0, ..FqCodelConfig::default() }), "drop_batch_size");
        assert_eq!(bad(FqCodelConfig { memory_limit_bytes: 0, ..FqCodelConfig::default() }), "memory_limit_bytes");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn drr_fairness_bound_property(k in 2usize..8, seed in any::<u64>()) {
            let mut q = fq_codel(FqCodelConfig { limit_pkts: 100_000, ..FqCodelConfig::default() });
            let srcs = distinct_srcs(&mut q, k);
            let flows: Vec<Packet> = srcs.iter().map(|&s| pkt(s, 9, 1, 0)).collect();
            let class = |p: &Packet| srcs.iter().position(|&s| s == p.flow.src_ip).unwrap();
            testkit::drr_fairness(&mut q, &flows, class, k, seed, 300, 1514 + 2 * 1500)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_limits_and_table_bound(
            limit in 1u32..200,
            flows in 1u32..64,
            mem in 1500u64..100_000,
            batch in 1u32..70,
            ops in testkit::ops(2000),
        ) {
            let cfg = FqCodelConfig { limit_pkts: limit, flows, memory_limit_bytes: mem, drop_batch_size: batch, ..FqCodelConfig::default() };
            let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(3, 0));
            testkit::run_ops(&mut q, &ops, limit as usize, flows as usize)?;
            prop_assert!(q.backlog_bytes() <= mem);
            // Every fattest-flow drop is a flow_limit drop, every CoDel mark a CE mark.
            prop_assert_eq!(counter(&q, "drop_overlimit"), q.stats().dropped(DropReason::FlowLimit));
            prop_assert!(counter(&q, "drop_overmemory") <= counter(&q, "drop_overlimit"));
            prop_assert_eq!(counter(&q, "ecn_mark"), q.stats().marked(MarkReason::Early));
            prop_assert_eq!(counter(&q, "memory_used"), q.backlog_bytes());
        }
    }
}
