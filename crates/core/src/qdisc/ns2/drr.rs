//! ns-2 2.35 DRR (`queue/drr.cc`, defaults from `tcl/lib/ns-default.tcl`): the project's
//! `fq` with `variant = "ns2"`.
//!
//! Rules (line numbers are ns-2.35's `drr.cc`):
//! - Classification (l. 306-315, l. 171): bucket = hash(source address) mod `buckets_`;
//!   with `mask_` the address's low 4 bits and high bits are cleared first (`& 0xfff0`).
//!   Ports and the destination are not hashed: all flows of one host share a bucket.
//! - Buffer (l. 195-210): `blimit_` bytes in all, no packet limit (`limit_pkts` is not
//!   used, as ns-2's `limit_` is not). The arrival is queued first; then, while the bytes
//!   queued exceed `blimit_`, the head packet of the bucket holding the most bytes is
//!   dropped (the first such bucket from the one being served, in round order), which
//!   may be the arrival's own bucket.
//! - Service (l. 213-252): the bucket being served gets `quantum_` bytes added when its
//!   turn starts, sends head packets while its deficit covers them, and keeps the rest of
//!   its deficit for its next turn; a bucket that empties loses its deficit; one that
//!   becomes active joins the end of the round with a deficit of 0 (l. 189-194). A bucket
//!   emptied by a drop keeps its turn flag (l. 206-209), so if it had started its turn it
//!   gets no quantum at its next one until that turn has passed.
//!
//! Counters: `flows` (buckets in the round now, a level).
//!
//! Knobs: the table `ns2`: `buckets` (10), `blimit_bytes` (25 000), `quantum_bytes` (250),
//! `mask` (false). Drops: all `flow_limit` (longest-bucket push-out).

use super::ns2_bucket;
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::qdisc::{Cx, Qdisc, QdiscCounter};
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// drr.cc's "large prime", `(2 << 23) − 1`.
const PRIME: i32 = (2 << 23) - 1;

/// ns-2-only DRR knobs (`link.queue.ns2` on `fq`), ns-2's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ns2DrrKnobs {
    /// ns-2 `buckets_`.
    pub buckets: u32,
    /// ns-2 `blimit_`: the whole buffer, bytes.
    pub blimit_bytes: u64,
    /// ns-2 `quantum_`: bytes a bucket may send per turn.
    pub quantum_bytes: u32,
    /// ns-2 `mask_`: hash the source address with its low 4 bits cleared.
    pub mask: bool,
}

impl Default for Ns2DrrKnobs {
    fn default() -> Self {
        Ns2DrrKnobs { buckets: 10, blimit_bytes: 25_000, quantum_bytes: 250, mask: false }
    }
}

impl Ns2DrrKnobs {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    pub fn build(&self) -> Result<Ns2Drr, ConfigError> {
        if self.buckets == 0 || self.buckets > 65_536 {
            return Err(ConfigError::new("ns2.buckets", self.buckets, "1 to 65536 buckets"));
        }
        if self.blimit_bytes == 0 {
            return Err(ConfigError::new("ns2.blimit_bytes", 0, "at least 1 byte"));
        }
        if self.quantum_bytes == 0 {
            return Err(ConfigError::new("ns2.quantum_bytes", 0, "at least 1 byte"));
        }
        let n = self.buckets as usize;
        Ok(Ns2Drr {
            knobs: self.clone(),
            queues: vec![VecDeque::new(); n],
            bytes: vec![0; n],
            deficit: vec![0; n],
            turn: vec![false; n],
            round: VecDeque::new(),
            pkts: 0,
            backlog_bytes: 0,
        })
    }
}

#[derive(Debug)]
pub struct Ns2Drr {
    knobs: Ns2DrrKnobs,
    queues: Vec<VecDeque<Packet>>,
    /// Bytes queued per bucket (ns-2 `bcount`).
    bytes: Vec<u64>,
    deficit: Vec<u64>,
    /// The bucket's turn has started (its quantum was added).
    turn: Vec<bool>,
    /// Active buckets, the one being served (ns-2 `curr`) at the front.
    round: VecDeque<u32>,
    pkts: usize,
    backlog_bytes: u64,
}

impl Ns2Drr {
    /// The bucket of a packet: ns-2 hashes the source address only.
    pub fn bucket_of(&self, pkt: &Packet) -> usize {
        let mut a = pkt.flow.src_ip as i32;
        if self.knobs.mask {
            a &= 0xfff0;
        }
        ns2_bucket(a, PRIME, 1, self.knobs.buckets)
    }

    /// Bytes waiting in bucket `b`.
    pub fn bucket_bytes(&self, b: usize) -> u64 {
        self.bytes[b]
    }

    /// The bucket holding the most bytes, the first in round order from the front.
    fn fattest(&self) -> (usize, u32) {
        let mut best = (0, self.round[0]);
        for (i, &b) in self.round.iter().enumerate() {
            if self.bytes[b as usize] > self.bytes[best.1 as usize] {
                best = (i, b);
            }
        }
        best
    }
}

impl Qdisc for Ns2Drr {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let b = self.bucket_of(&pkt);
        self.queues[b].push_back(pkt);
        self.bytes[b] += pkt.len_bytes();
        self.pkts += 1;
        self.backlog_bytes += pkt.len_bytes();
        if self.queues[b].len() == 1 {
            self.round.push_back(b as u32);
            self.deficit[b] = 0;
        }
        while self.backlog_bytes > self.knobs.blimit_bytes {
            let (i, v) = self.fattest();
            let head = self.queues[v as usize].pop_front().expect("active buckets hold packets");
            self.bytes[v as usize] -= head.len_bytes();
            self.pkts -= 1;
            self.backlog_bytes -= head.len_bytes();
            cx.drop(head, DropReason::FlowLimit);
            if self.queues[v as usize].is_empty() {
                self.round.remove(i);
            }
        }
    }

    fn dequeue(&mut self, _cx: &mut Cx) -> Option<Packet> {
        loop {
            let b = *self.round.front()? as usize;
            if !self.turn[b] {
                self.deficit[b] += u64::from(self.knobs.quantum_bytes);
                self.turn[b] = true;
            }
            let size = self.queues[b].front().expect("active buckets hold packets").len_bytes();
            if self.deficit[b] >= size {
                self.deficit[b] -= size;
                let pkt = self.queues[b].pop_front().expect("checked");
                self.bytes[b] -= size;
                self.pkts -= 1;
                self.backlog_bytes -= size;
                if self.queues[b].is_empty() {
                    self.turn[b] = false;
                    self.deficit[b] = 0;
                    self.round.pop_front();
                }
                return Some(pkt);
            }
            self.turn[b] = false;
            self.round.rotate_left(1);
        }
    }

    fn len_pkts(&self) -> usize {
        self.pkts
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }
    fn flow_table_len(&self) -> usize {
        self.queues.len()
    }
    fn empty_dequeue_is_noop(&self) -> bool {
        true
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        out.push(QdiscCounter::level("flows", self.round.len() as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{self, pkt};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use crate::time::Instant;
    use proptest::prelude::*;

    fn drr(knobs: Ns2DrrKnobs) -> Accounted<Ns2Drr> {
        Accounted::new(knobs.build().unwrap(), Rng::new(0, 0))
    }

    #[test]
    fn overflow_drops_the_head_of_the_fattest_bucket() {
        // blimit 3000: host 1 queues 2×1000 (ports 1, 2), host 2 queues 1×500, then host 2
        // sends 1000: 3500 > 3000 → host 1 holds the most bytes (2000 vs 1500): its head
        // (port 1) is dropped.
        let mut q = drr(Ns2DrrKnobs { blimit_bytes: 3000, ..Ns2DrrKnobs::default() });
        q.enqueue(pkt(1, 9, 1, 1000), Instant(0));
        q.enqueue(pkt(1, 9, 2, 1000), Instant(0));
        q.enqueue(pkt(2, 9, 3, 500), Instant(0));
        q.enqueue(pkt(2, 9, 4, 1000), Instant(0));
        assert_eq!(q.last_drops().len(), 1);
        assert_eq!(q.last_drops()[0].0.flow.src_port, 1);
        assert_eq!(q.last_drops()[0].1, DropReason::FlowLimit);
        assert_eq!(q.backlog_bytes(), 2500);
    }

    #[test]
    fn quantum_250_sends_a_1000_byte_packet_every_fourth_turn() {
        // Two hosts, host 1 with 1000-byte packets, host 2 with 250-byte ones, quantum 250:
        // host 1 needs 4 turns per packet, host 2 sends one per turn: 4 of host 2's per
        // one of host 1's, equal bytes.
        let mut q = drr(Ns2DrrKnobs::default());
        for _ in 0..5 {
            q.enqueue(pkt(1, 9, 1, 1000), Instant(0));
        }
        for _ in 0..20 {
            q.enqueue(pkt(2, 9, 1, 250), Instant(0));
        }
        assert_eq!(q.counters(), [QdiscCounter::level("flows", 2)]);
        let first: Vec<u32> = (0..10).map(|_| q.dequeue(Instant(0)).unwrap().flow.src_ip).collect();
        assert_eq!(first, [2, 2, 2, 1, 2, 2, 2, 2, 1, 2]);
        // The round holds exactly the buckets with packets: none once drained, then the one
        // host that sends again.
        while q.dequeue(Instant(0)).is_some() {}
        assert_eq!(q.counters(), [QdiscCounter::level("flows", 0)]);
        q.enqueue(pkt(2, 9, 1, 250), Instant(0));
        assert_eq!(q.counters(), [QdiscCounter::level("flows", 1)]);
    }

    proptest! {
        /// Conservation, the byte limit, and the drop rule: every drop is the head of a
        /// bucket that held at least as many bytes as any other at that moment.
        #[test]
        fn conservation_and_the_byte_limit(buckets in 1u32..12, blimit in 1500u64..20_000, ops in testkit::ops(400)) {
            let mut q = drr(Ns2DrrKnobs { buckets, blimit_bytes: blimit, ..Ns2DrrKnobs::default() });
            for op in &ops {
                if let testkit::Op::Enq { src_ip, dst_ip, src_port, len, .. } = *op {
                    let p = pkt(src_ip, dst_ip, src_port, len);
                    let before: Vec<u64> = (0..buckets as usize).map(|b| q.inner().bucket_bytes(b)).collect();
                    q.enqueue(p, Instant(0));
                    if let Some((d, _)) = q.last_drops().first() {
                        let mut with_arrival = before.clone();
                        with_arrival[q.inner().bucket_of(&p)] += p.len_bytes();
                        let most = *with_arrival.iter().max().unwrap();
                        prop_assert_eq!(with_arrival[q.inner().bucket_of(d)], most);
                    }
                } else if let testkit::Op::Deq = op {
                    q.dequeue(Instant(0));
                }
                prop_assert!(q.check().is_ok(), "{:?}", q.check());
                prop_assert!(q.backlog_bytes() <= blimit);
            }
            testkit::run_ops(&mut q, &ops, (blimit / 40) as usize, buckets as usize)?;
        }
    }
}
