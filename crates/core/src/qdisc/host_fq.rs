//! HostFQ: per-host fair queueing, then per-flow fair queueing within each host, in the
//! manner of CAKE's host isolation.
//!
//! Source: T. Høiland-Jørgensen, D. Täht, J. Morton, "Piece of CAKE: A Comprehensive Queue
//! Management Solution for Home Gateways", IEEE LANMAN 2018, Section III-B (flow isolation
//! modes: `srchost`, `dsthost`, `triple-isolate`), and Linux `net/sched/sch_cake.c`. On a
//! shared uplink, fairness between 5-tuples rewards the host that opens the most
//! connections; fairness between hosts first removes that incentive.
//!
//! Principles (`host_key`):
//! - `src` / `dst`: two-level deficit round robin. Active hosts (keyed by source or
//!   destination address) take turns with `quantum_bytes` per round; within its turn a
//!   host serves its own active flows (exact 5-tuples) by DRR with the same quantum. A host
//!   with 10 connections gets the same bytes as a host with 1.
//! - `both` (CAKE's triple-isolate, the default): one DRR over flows, where a flow's
//!   quantum is `quantum_bytes / max(bulk flows of its source host, bulk flows of its
//!   destination host)`, as CAKE scales its flow quantum by the host load. Each source host
//!   and each destination host then gets about one quantum per round, whichever side has
//!   the many flows. As in CAKE (`srchost_bulk_flow_count`, `dsthost_bulk_flow_count`), a
//!   host's load counts only its *bulk* flows: those that used up a quantum and still had
//!   packets. A sparse flow (a DNS query, an ACK-sized request, the first packet of a
//!   connection) does not shrink the quantum of its host's bulk flows.
//! - Overflow (`limit_pkts`): drop the last packet of the fattest flow of the fattest host
//!   (by packets queued), `flow_limit`. In `both` mode, where hosts are not a scheduling
//!   level, the fattest flow overall.
//!
//! Knobs: `limit_pkts` (1000 packets; CAKE sizes its buffer in bytes from the rate, this
//! is our choice for a packet-limited thin link), `host_key` (`both`, CAKE's default),
//! `quantum_bytes` (1514 bytes), `flow_table_capacity` (1024 entries, CAKE's queue count),
//! `host_table_capacity` (1024 entries per table, CAKE's host table size).
//!
//! Bounded state: flows and hosts live in exact tables of fixed capacity; a new key takes
//! the entry idle longest (no packets, not scheduled), or, when all are busy, shares an
//! entry chosen by hash (a flood of 5-tuples degrades to hashed sharing, it does not grow
//! the tables). A shared flow entry keeps the host of its first packet.
//!
//! Complexity: enqueue O(1) amortised (table lookups, list appends). Dequeue in `src`/`dst`
//! modes O(1) amortised when `quantum_bytes` is at least the largest packet. In `both`
//! mode a flow's quantum shrinks with its hosts' load, so a packet can take up to about
//! `load·max_packet/quantum_bytes` flow rotations — bounded by the flow table capacity,
//! as in CAKE. Overflow: the fattest host is found in O(1) (length-bucketed lists); its
//! fattest flow by a scan of that host's active flows, O(flows of that host); in `both`
//! mode the fattest flow overall in O(1). Memory: fixed tables plus one packet arena of at
//! most `limit_pkts`+1 packets. The flow queues, the fattest-flow index and the round over
//! hosts are the shared part `parts::drr`; the per-host flow rounds (whose quantum varies
//! in `both` mode) are HostFQ's own.
//!
//! Counters ([`Qdisc::counters`]): `hosts` (hosts in the round now; 1 in `both` mode, where
//! the round is over flows), `flows_tracked` (flow-table entries now), `bulk_flows` (flows
//! that used up a quantum with packets left, now: the sum of the host loads; 0 unless
//! `both`), levels; `flow_evictions` and `host_evictions` (entries evicted from the flow
//! table and the host tables), totals.
//!
//! Trade-offs and limits: no AQM inside the flow queues (a backlogged flow holds its share
//! of the buffer); triple-isolate is CAKE's approximation: it balances the heavier side of
//! each flow, not a joint optimum. Host identity is the IP address (no NAT lookup).

use super::parts::hash::{flow_hash, host_hash};
use super::parts::{BoundedTable, DepthIndex, DrrRound, FlowQueues, Slot};
use super::{Cx, Qdisc, QdiscCounter};
use crate::error::ConfigError;
use crate::packet::{FlowKey, Packet};
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Which hosts HostFQ makes fair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostKey {
    /// Fairness between source addresses (the internal hosts of an uplink).
    Src,
    /// Fairness between destination addresses (the internal hosts of a downlink).
    Dst,
    /// CAKE triple-isolate: fairness between source hosts and between destination hosts.
    #[default]
    Both,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostFqConfig {
    /// Shared buffer, packets.
    pub limit_pkts: u32,
    pub host_key: HostKey,
    /// Bytes per round, for hosts and for flows.
    pub quantum_bytes: u32,
    /// Exact 5-tuple entries.
    pub flow_table_capacity: u32,
    /// Entries per host table (one table for `src`/`dst`, two for `both`).
    pub host_table_capacity: u32,
}

impl Default for HostFqConfig {
    fn default() -> Self {
        HostFqConfig {
            limit_pkts: 1000,
            host_key: HostKey::Both,
            quantum_bytes: 1514,
            flow_table_capacity: 1024,
            host_table_capacity: 1024,
        }
    }
}

impl HostFqConfig {
    pub fn build(&self) -> Result<HostFq, ConfigError> {
        if self.limit_pkts == 0 {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet"));
        }
        if self.quantum_bytes == 0 {
            return Err(ConfigError::new("quantum_bytes", 0, "at least 1 byte"));
        }
        if self.flow_table_capacity == 0 || self.flow_table_capacity > 1 << 24 {
            return Err(ConfigError::new("flow_table_capacity", self.flow_table_capacity, "1 to 16777216 entries"));
        }
        if self.host_table_capacity == 0 || self.host_table_capacity > 1 << 24 {
            return Err(ConfigError::new("host_table_capacity", self.host_table_capacity, "1 to 16777216 entries"));
        }
        let (nf, nh) = (self.flow_table_capacity as usize, self.host_table_capacity as usize);
        let both = self.host_key == HostKey::Both;
        let drr_hosts = if both { 1 } else { nh };
        let load = || LoadTable { table: BoundedTable::new(self.host_table_capacity), flows: vec![0; nh], bulk: vec![0; nh] };
        Ok(HostFq {
            cfg: self.clone(),
            flows: vec![HFlow::default(); nf],
            queues: FlowQueues::by_pkts(nf),
            flow_table: BoundedTable::new(self.flow_table_capacity),
            hosts: (0..drr_hosts).map(|_| Host::default()).collect(),
            host_table: (!both).then(|| BoundedTable::new(self.host_table_capacity)),
            loads: both.then(|| [load(), load()]),
            host_round: DrrRound::new(drr_hosts),
            host_depth: DepthIndex::new(drr_hosts),
            salt: None,
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct HFlow {
    /// Deficit in its host's flow round (the quantum varies with the host load).
    deficit: i64,
    /// DRR host (valid while scheduled).
    host: u32,
    /// Load-table entries of its source and destination hosts (`both` mode).
    src: u32,
    dst: u32,
    scheduled: bool,
    /// Counted in its hosts' loads: it used up a quantum with packets left (`both` mode).
    bulk: bool,
}
const _: () = assert!(std::mem::size_of::<HFlow>() <= 64);

#[derive(Debug, Default)]
struct Host {
    /// Its scheduled flows, next to serve at the front.
    flows: VecDeque<u32>,
}

/// Flow counts per host address (`both` mode): `flows` (scheduled) keeps an entry busy,
/// `bulk` is the host load of CAKE's quantum rule.
#[derive(Debug)]
struct LoadTable {
    table: BoundedTable<u32>,
    flows: Vec<u32>,
    bulk: Vec<u32>,
}

impl LoadTable {
    fn join(&mut self, ip: u32, salt: u64) -> u32 {
        let slot = self.table.lookup(ip, host_hash(ip, salt));
        let i = slot.index();
        if let Slot::New(_) = slot {
            self.flows[i as usize] = 0;
            self.bulk[i as usize] = 0;
        }
        self.table.set_busy(i);
        self.flows[i as usize] += 1;
        i
    }
    fn leave(&mut self, i: u32) {
        self.flows[i as usize] -= 1;
        if self.flows[i as usize] == 0 {
            self.table.set_idle(i);
        }
    }
}

#[derive(Debug)]
pub struct HostFq {
    cfg: HostFqConfig,
    flows: Vec<HFlow>,
    /// The flows' packets; the fattest flow overall (`both` mode) by packets.
    queues: FlowQueues,
    flow_table: BoundedTable<FlowKey>,
    hosts: Vec<Host>,
    host_table: Option<BoundedTable<u32>>,
    loads: Option<[LoadTable; 2]>,
    /// The round over hosts (one host in `both` mode).
    host_round: DrrRound,
    host_depth: DepthIndex,
    salt: Option<u64>,
}

impl HostFq {
    /// Sum of the capacities of the flow and host tables (the bound on `flow_table_len`).
    pub fn table_capacity(&self) -> usize {
        let hosts = self.host_table.as_ref().map_or(0, |t| t.capacity() as usize)
            + self.loads.as_ref().map_or(0, |l| 2 * l[0].table.capacity() as usize);
        self.flow_table.capacity() as usize + hosts
    }

    fn flow_quantum(&self, f: u32) -> i64 {
        let q = self.cfg.quantum_bytes as i64;
        match &self.loads {
            None => q,
            Some([src, dst]) => {
                let fl = &self.flows[f as usize];
                let load = src.bulk[fl.src as usize].max(dst.bulk[fl.dst as usize]).max(1);
                (q / load as i64).max(1)
            }
        }
    }

    /// A flow gets its first packet: schedule it under its host (and the host if needed).
    fn activate(&mut self, f: u32, key: &FlowKey, salt: u64) {
        let h = match (&mut self.host_table, &mut self.loads) {
            (Some(t), _) => {
                let ip = if self.cfg.host_key == HostKey::Src { key.src_ip } else { key.dst_ip };
                // A new or evicted entry was idle: off the round, so it joins with a quantum.
                let i = t.lookup(ip, host_hash(ip, salt)).index();
                t.set_busy(i);
                i
            }
            (None, Some([src, dst])) => {
                self.flows[f as usize].src = src.join(key.src_ip, salt);
                self.flows[f as usize].dst = dst.join(key.dst_ip, salt);
                0
            }
            (None, None) => unreachable!("one of the host tables exists"),
        };
        if !self.host_round.is_scheduled(h) {
            self.host_round.schedule(h, self.cfg.quantum_bytes as i64);
        }
        self.hosts[h as usize].flows.push_back(f);
        let q = self.flow_quantum(f);
        let fl = &mut self.flows[f as usize];
        fl.scheduled = true;
        fl.host = h;
        fl.deficit = q;
    }

    /// A flow left its host's list (empty): release it and its load entries.
    fn deactivate(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        fl.scheduled = false;
        if let Some([src, dst]) = &mut self.loads {
            if fl.bulk {
                src.bulk[fl.src as usize] -= 1;
                dst.bulk[fl.dst as usize] -= 1;
            }
            src.leave(fl.src);
            dst.leave(fl.dst);
        }
        fl.bulk = false;
        self.flow_table.set_idle(f);
    }

    /// The head host has no flows left: off the round, and its entry may be evicted.
    fn unschedule_host(&mut self, h: u32) {
        self.host_round.remove_head();
        if let Some(t) = &mut self.host_table {
            t.set_idle(h);
        }
    }

    /// The flow to push a packet out of: fattest flow of the fattest host.
    fn victim(&self) -> u32 {
        if self.host_table.is_none() {
            return self.queues.fattest().expect("something is queued");
        }
        let h = self.host_depth.longest().expect("something is queued");
        *self.hosts[h as usize]
            .flows
            .iter()
            .max_by_key(|&&f| self.queues.pkts(f))
            .expect("a host with packets has flows")
    }
}

impl Qdisc for HostFq {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let salt = *self.salt.get_or_insert_with(|| cx.rng.next_u64());
        let slot = self.flow_table.lookup(pkt.flow, flow_hash(&pkt.flow, salt));
        let f = slot.index();
        if let Slot::New(_) = slot {
            self.flows[f as usize] = HFlow::default();
        }
        self.flow_table.set_busy(f);
        if !self.flows[f as usize].scheduled {
            self.activate(f, &pkt.flow, salt);
        }
        self.queues.push_back(f, pkt);
        self.host_depth.inc(self.flows[f as usize].host);
        if self.queues.len_pkts() > self.cfg.limit_pkts as usize {
            let v = self.victim();
            let dropped = self.queues.pop_back(v).expect("victim is non-empty");
            self.host_depth.dec(self.flows[v as usize].host);
            cx.drop(dropped, DropReason::FlowLimit);
        }
    }

    fn dequeue(&mut self, _cx: &mut Cx) -> Option<Packet> {
        let quantum = self.cfg.quantum_bytes as i64;
        'round: loop {
            let (h, _) = self.host_round.head()?;
            let Some(&f) = self.hosts[h as usize].flows.front() else {
                self.unschedule_host(h);
                continue;
            };
            if self.queues.is_empty(f) {
                // Emptied by push-outs while waiting.
                self.hosts[h as usize].flows.pop_front();
                self.deactivate(f);
                continue;
            }
            // Checked after the flow's emptiness: a host whose last flow was emptied by
            // push-outs leaves the round without another quantum.
            if self.host_round.spent(h) {
                self.host_round.rotate_head(quantum);
                continue;
            }
            // Rotate the host's spent flows; a flow rotation leaves the host's state as it
            // is, so only the next flow's emptiness needs checking again (in `both` mode a
            // packet can take many rotations).
            let mut f = f;
            while self.flows[f as usize].deficit <= 0 {
                // Out of quantum with packets left: a bulk flow from now on (CAKE).
                let fl = &mut self.flows[f as usize];
                if let (Some([src, dst]), false) = (&mut self.loads, fl.bulk) {
                    fl.bulk = true;
                    src.bulk[fl.src as usize] += 1;
                    dst.bulk[fl.dst as usize] += 1;
                }
                let q = self.flow_quantum(f);
                self.flows[f as usize].deficit += q;
                let flows = &mut self.hosts[h as usize].flows;
                flows.rotate_left(1);
                f = *flows.front().expect("the rotated flow is still listed");
                if self.queues.is_empty(f) {
                    continue 'round;
                }
            }
            let pkt = self.queues.pop_front(f).expect("checked non-empty");
            self.flows[f as usize].deficit -= pkt.len_bytes() as i64;
            self.host_round.charge(h, pkt.len_bytes());
            self.host_depth.dec(h);
            if self.queues.is_empty(f) {
                self.hosts[h as usize].flows.pop_front();
                self.deactivate(f);
                if self.hosts[h as usize].flows.is_empty() {
                    self.unschedule_host(h);
                }
            }
            return Some(pkt);
        }
    }

    fn len_pkts(&self) -> usize {
        self.queues.len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.queues.backlog_bytes()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        let bulk = self.loads.as_ref().map_or(0, |[src, _]| src.bulk.iter().map(|&b| b as u64).sum());
        let host_evictions = self.host_table.as_ref().map_or(0, |t| t.evictions())
            + self.loads.as_ref().map_or(0, |l| l[0].table.evictions() + l[1].table.evictions());
        out.extend([
            QdiscCounter::level("hosts", self.host_round.scheduled_len() as u64),
            QdiscCounter::level("flows_tracked", self.flow_table.len() as u64),
            QdiscCounter::level("bulk_flows", bulk),
            QdiscCounter::total("flow_evictions", self.flow_table.evictions()),
            QdiscCounter::total("host_evictions", host_evictions),
        ]);
    }
    fn flow_table_len(&self) -> usize {
        self.flow_table.len()
            + self.host_table.as_ref().map_or(0, |t| t.len())
            + self.loads.as_ref().map_or(0, |l| l[0].table.len() + l[1].table.len())
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

    fn host_fq(host_key: HostKey, limit: u32, quantum: u32) -> Accounted<HostFq> {
        let cfg = HostFqConfig { limit_pkts: limit, host_key, quantum_bytes: quantum, ..HostFqConfig::default() };
        Accounted::new(cfg.build().unwrap(), Rng::new(31, 0))
    }

    /// Host A (10.0.0.1) with flows a1..a3 (ports 1..3), host B (10.0.0.2) with b1, all
    /// to server 9; 1000-byte packets, 4 of each flow, enqueued a1 a2 a3 b1 round by round.
    fn three_to_one(q: &mut Accounted<HostFq>) {
        for _ in 0..4 {
            for port in 1..=3 {
                q.enqueue(pkt(1, 9, port, 1000), Instant(0));
            }
            q.enqueue(pkt(2, 9, 1, 1000), Instant(0));
        }
    }

    fn name(p: &Packet) -> String {
        format!("{}{}", if p.flow.src_ip == 1 { 'a' } else { 'b' }, p.flow.src_port)
    }

    #[test]
    fn src_mode_shares_between_hosts_then_between_flows() {
        // Quantum = packet size: each host turn and each flow turn is one packet. Hosts
        // alternate A, B; within A the flows rotate a1, a2, a3.
        let mut q = host_fq(HostKey::Src, 100, 1000);
        three_to_one(&mut q);
        let order: Vec<String> = (0..8).map(|_| name(&q.dequeue(Instant(1)).unwrap())).collect();
        assert_eq!(order, ["a1", "b1", "a2", "b1", "a3", "b1", "a1", "b1"]);
    }

    #[test]
    fn dst_mode_with_one_server_is_plain_flow_fairness() {
        let mut q = host_fq(HostKey::Dst, 100, 1000);
        three_to_one(&mut q);
        let order: Vec<String> = (0..8).map(|_| name(&q.dequeue(Instant(1)).unwrap())).collect();
        assert_eq!(order, ["a1", "a2", "a3", "b1", "a1", "a2", "a3", "b1"]);
    }

    #[test]
    fn triple_isolate_gives_each_source_host_half() {
        // A: 3 flows to server X (9); B: 1 flow to server Y (8). In the first round no
        // flow is bulk yet, so each starts with a full 1500 bytes and sends two packets:
        // a1 a1 a2 a2 a3 a3 b1 b1 (CAKE's sparse start). From then on all four are bulk:
        // A's flows have load max(3, 3) = 3 → quantum 1500/3 = 500 each; B's flow load 1
        // → 1500. Each host gets 1500 bytes per round, so the byte difference stays within
        // a round's worth.
        let mut q = host_fq(HostKey::Both, 100_000, 1500);
        for _ in 0..1000 {
            for port in 1..=3 {
                q.enqueue(pkt(1, 9, port, 1000), Instant(0));
            }
            q.enqueue(pkt(2, 8, 1, 1000), Instant(0));
        }
        let first: Vec<String> = (0..8).map(|_| name(&q.dequeue(Instant(1)).unwrap())).collect();
        assert_eq!(first, ["a1", "a1", "a2", "a2", "a3", "a3", "b1", "b1"]);
        let (mut a, mut b) = (0i64, 0i64);
        // B holds 998 packets: stop before it runs out.
        for _ in 0..1900 {
            let p = q.dequeue(Instant(1)).unwrap();
            if p.flow.src_ip == 1 { a += 1000 } else { b += 1000 }
            assert!((a - b).abs() <= 2 * (1500 + 1000), "a={a} b={b}");
        }
    }

    #[test]
    fn triple_isolate_counts_only_bulk_flows_in_a_hosts_load() {
        // CAKE: a host's load is its bulk flow count (flows that used up a quantum with
        // packets left); sparse flows do not shrink the quantum. Host A: bulk a1 (10 ×
        // 1000 bytes) and three one-packet flows a2..a4 (100 bytes); host B: b1 (10 ×
        // 1000 bytes) to another server. Quantum 1500. Every load is 0 at activation, so
        // each flow starts with 1500 bytes: a1 sends two packets (1500 → 500 → −500), then
        // is bulk with load 1 and gets another 1500; a2..a4 send their packet and leave;
        // b1 sends two, then a1 again. Counting the three sparse flows (load 4 while they
        // are queued) would refill a1 with 375 bytes, leaving it at −125, and b1 would
        // send a third packet before a1.
        let mut q = host_fq(HostKey::Both, 1000, 1500);
        for _ in 0..10 {
            q.enqueue(pkt(1, 9, 1, 1000), Instant(0));
        }
        for port in 2..=4 {
            q.enqueue(pkt(1, 9, port, 100), Instant(0));
        }
        for _ in 0..10 {
            q.enqueue(pkt(2, 8, 1, 1000), Instant(0));
        }
        let order: Vec<String> = (0..8).map(|_| name(&q.dequeue(Instant(1)).unwrap())).collect();
        assert_eq!(order, ["a1", "a1", "a2", "a3", "a4", "b1", "b1", "a1"]);
        let (src, dst) = (&q.inner().loads.as_ref().unwrap()[0], &q.inner().loads.as_ref().unwrap()[1]);
        assert_eq!(src.bulk.iter().sum::<u32>(), 2);
        assert_eq!(dst.bulk.iter().sum::<u32>(), 2);
        // a1 and b1 are bulk; a2..a4 have left (6 flows were tracked, none evicted).
        let c = |name: &str| q.counters().iter().find(|c| c.name == name).unwrap().value;
        assert_eq!((c("bulk_flows"), c("hosts"), c("flow_evictions"), c("host_evictions")), (2, 1, 0, 0));
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow_of_the_fattest_host() {
        // Host A: a1 ×2, a2 ×2 (4 packets); host B: b1 ×3 — the fattest flow overall, but
        // B is not the fattest host. Limit 7; an arrival from a third host C overflows.
        let mut q = host_fq(HostKey::Src, 7, 1500);
        for _ in 0..2 {
            q.enqueue(pkt(1, 9, 1, 500), Instant(0));
            q.enqueue(pkt(1, 9, 2, 500), Instant(0));
        }
        for _ in 0..3 {
            q.enqueue(pkt(2, 9, 1, 500), Instant(0));
        }
        q.enqueue(pkt(3, 9, 1, 500), Instant(0));
        let (v, r) = q.last_drops()[0];
        assert_eq!((v.flow.src_ip, r), (1, DropReason::FlowLimit));
        // Hosts A, B, C all hold packets; four flows (a1, a2, b1, c1) are tracked.
        let c = |name: &str| q.counters().iter().find(|c| c.name == name).unwrap().value;
        assert_eq!((c("hosts"), c("flows_tracked"), c("bulk_flows")), (3, 4, 0));
        // In both mode the fattest flow overall (b1) loses its last packet.
        let mut q = host_fq(HostKey::Both, 7, 1500);
        for _ in 0..2 {
            q.enqueue(pkt(1, 9, 1, 500), Instant(0));
            q.enqueue(pkt(1, 9, 2, 500), Instant(0));
        }
        for _ in 0..3 {
            q.enqueue(pkt(2, 9, 1, 500), Instant(0));
        }
        q.enqueue(pkt(3, 9, 1, 500), Instant(0));
        assert_eq!(q.last_drops()[0].0.flow.src_ip, 2);
    }

    #[test]
    fn host_level_drr_fairness_bound() {
        // 4 hosts with 1–3 backlogged flows each and random sizes: over every window two
        // hosts' bytes differ by less than quantum + 2·max_packet.
        let mut q = host_fq(HostKey::Src, 100_000, 1500);
        let mut rng = Rng::new(12, 12);
        for _ in 0..600 {
            for host in 0..4u32 {
                for port in 0..=(host % 3) as u16 {
                    q.enqueue(pkt(host, 9, port, 40 + rng.below_inclusive(1460) as u16), Instant(0));
                }
            }
        }
        let served: Vec<(usize, u64)> =
            (0..1500).map(|_| q.dequeue(Instant(1)).unwrap()).map(|p| (p.flow.src_ip as usize, p.len_bytes())).collect();
        assert!(max_window_unfairness(&served, 4) < 1500 + 2 * 1500);
    }

    #[test]
    fn tables_stay_bounded_under_a_flood_of_new_hosts_and_flows() {
        let cfg = HostFqConfig { limit_pkts: 50, flow_table_capacity: 32, host_table_capacity: 8, ..HostFqConfig::default() };
        for host_key in [HostKey::Src, HostKey::Dst, HostKey::Both] {
            let mut q = Accounted::new(HostFqConfig { host_key, ..cfg.clone() }.build().unwrap(), Rng::new(1, 1));
            let cap = q.inner().table_capacity();
            for i in 0..5000u32 {
                q.enqueue(pkt(i, i.wrapping_mul(7), i as u16, 100), Instant(i as u64));
                if i % 3 == 0 {
                    q.dequeue(Instant(i as u64));
                }
                assert!(q.inner().flow_table_len() <= cap);
            }
            q.check().unwrap();
        }
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let bad = |c: HostFqConfig| c.build().unwrap_err().field;
        assert_eq!(bad(HostFqConfig { limit_pkts: 0, ..HostFqConfig::default() }), "limit_pkts");
        assert_eq!(bad(HostFqConfig { quantum_bytes: 0, ..HostFqConfig::default() }), "quantum_bytes");
        assert_eq!(bad(HostFqConfig { host_table_capacity: 0, ..HostFqConfig::default() }), "host_table_capacity");
        let c: HostFqConfig = serde_json::from_str(r#"{"host_key": "src"}"#).unwrap();
        assert_eq!(c.host_key, HostKey::Src);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Host-level DRR bound (quantum + 2·max_packet between any two hosts), hosts with
        /// 1–3 flows each, keyed by source or by destination.
        #[test]
        fn host_drr_fairness_bound_property(hosts in 2u32..6, seed in any::<u64>(), by_dst in any::<bool>()) {
            let key = if by_dst { HostKey::Dst } else { HostKey::Src };
            let mut q = host_fq(key, 100_000, 1514);
            let flows: Vec<Packet> = (0..hosts)
                .flat_map(|h| (0..=(h % 3) as u16).map(move |port| if by_dst { pkt(50, h, port, 0) } else { pkt(h, 50, port, 0) }))
                .collect();
            let class = move |p: &Packet| (if by_dst { p.flow.dst_ip } else { p.flow.src_ip }) as usize;
            testkit::drr_fairness(&mut q, &flows, class, hosts as usize, seed, 300, 1514 + 2 * 1500)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_limits_and_table_bound(
            limit in 1u32..200,
            mode in 0u8..3,
            flow_cap in 1u32..64,
            host_cap in 1u32..16,
            quantum in prop_oneof![Just(300u32), Just(1514u32)],
            ops in testkit::ops(2000),
        ) {
            let host_key = [HostKey::Src, HostKey::Dst, HostKey::Both][mode as usize];
            let cfg = HostFqConfig { limit_pkts: limit, host_key, quantum_bytes: quantum, flow_table_capacity: flow_cap, host_table_capacity: host_cap };
            let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(3, 0));
            let cap = q.inner().table_capacity();
            testkit::run_ops(&mut q, &ops, limit as usize, cap)?;
        }
    }
}
