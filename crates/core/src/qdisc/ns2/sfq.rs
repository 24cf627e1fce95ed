//! ns-2 2.35 SFQ (`queue/sfq.cc`, defaults from `tcl/lib/ns-default.tcl`).
//!
//! Rules (line numbers are ns-2.35's `sfq.cc`):
//! - Classification (l. 234-242, l. 211): bucket = hash(source + destination address)
//!   mod `buckets_`; ports are not hashed, so all flows between two hosts share a bucket,
//!   and the hash is fixed (no perturbation).
//! - Admission (l. 214-224): with `used` the arrival's bucket's packets and `left =
//!   maxqueue_ − queued`, the arrival is dropped if `used ≥ ⌊left/2⌋`, or `left < buckets_`
//!   and `used > ⌊maxqueue_/buckets_⌋`, or `left ≤ 0`. Only the arrival is ever dropped;
//!   nothing is pushed out.
//! - Service (l. 180-200): one packet per active bucket in round robin, whatever its size
//!   (no quantum, no deficit); a bucket that becomes active joins the end of the round.
//! - Buffer: `maxqueue_` (40) packets in all. ns-2's `queue-limit` sets `limit_`, which
//!   SFQ does not read, so `limit_pkts` is not used either: the buffer is `ns2.maxqueue_pkts`.
//!
//! Knobs: the table `ns2`: `buckets` (16, ns-2 `buckets_`), `maxqueue_pkts` (40, ns-2
//! `maxqueue_`). Drops: `overlimit` when the buffer is full (`left ≤ 0`), `flow_limit`
//! when the bucket's share refuses the arrival.

use super::ns2_bucket;
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::qdisc::{Cx, Qdisc};
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// sfq.cc's "large prime", `(2 << 19) − 1`.
const PRIME: i32 = (2 << 19) - 1;

/// ns-2-only SFQ knobs (`link.queue.ns2`), ns-2's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ns2SfqKnobs {
    /// ns-2 `buckets_`.
    pub buckets: u32,
    /// ns-2 `maxqueue_`: the whole buffer, packets.
    pub maxqueue_pkts: u32,
}

impl Default for Ns2SfqKnobs {
    fn default() -> Self {
        Ns2SfqKnobs { buckets: 16, maxqueue_pkts: 40 }
    }
}

impl Ns2SfqKnobs {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    pub fn build(&self) -> Result<Ns2Sfq, ConfigError> {
        if self.buckets == 0 || self.buckets > 65_536 {
            return Err(ConfigError::new("ns2.buckets", self.buckets, "1 to 65536 buckets"));
        }
        if self.maxqueue_pkts == 0 {
            return Err(ConfigError::new("ns2.maxqueue_pkts", 0, "at least 1 packet"));
        }
        Ok(Ns2Sfq {
            buckets: vec![VecDeque::new(); self.buckets as usize],
            active: VecDeque::new(),
            maxqueue: self.maxqueue_pkts as i64,
            fairshare: (self.maxqueue_pkts / self.buckets) as usize,
            occupied: 0,
            backlog_bytes: 0,
        })
    }
}

#[derive(Debug)]
pub struct Ns2Sfq {
    buckets: Vec<VecDeque<Packet>>,
    /// The round: the bucket served next at the front; exactly the non-empty buckets.
    active: VecDeque<u32>,
    maxqueue: i64,
    /// ns-2 `fairshare = maxqueue_ / buckets_`.
    fairshare: usize,
    occupied: usize,
    backlog_bytes: u64,
}

impl Ns2Sfq {
    /// The bucket of a packet: ns-2 hashes the source plus the destination address.
    pub fn bucket_of(&self, pkt: &Packet) -> usize {
        let k = (pkt.flow.src_ip as i32).wrapping_add(pkt.flow.dst_ip as i32);
        ns2_bucket(k, PRIME, 0, self.buckets.len() as u32)
    }

    /// Packets waiting in bucket `b`.
    pub fn bucket_len(&self, b: usize) -> usize {
        self.buckets[b].len()
    }
}

impl Qdisc for Ns2Sfq {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let b = self.bucket_of(&pkt);
        let used = self.buckets[b].len();
        let left = self.maxqueue - self.occupied as i64;
        if left <= 0 {
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        if used as i64 >= left >> 1 || (left < self.buckets.len() as i64 && used > self.fairshare) {
            cx.drop(pkt, DropReason::FlowLimit);
            return;
        }
        self.buckets[b].push_back(pkt);
        self.occupied += 1;
        self.backlog_bytes += pkt.len_bytes();
        if used == 0 {
            self.active.push_back(b as u32);
        }
    }

    fn dequeue(&mut self, _cx: &mut Cx) -> Option<Packet> {
        let b = self.active.pop_front()?;
        let pkt = self.buckets[b as usize].pop_front().expect("active buckets hold packets");
        if !self.buckets[b as usize].is_empty() {
            self.active.push_back(b);
        }
        self.occupied -= 1;
        self.backlog_bytes -= pkt.len_bytes();
        Some(pkt)
    }

    fn len_pkts(&self) -> usize {
        self.occupied
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }
    fn flow_table_len(&self) -> usize {
        self.buckets.len()
    }
    fn empty_dequeue_is_noop(&self) -> bool {
        true
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

    fn sfq(buckets: u32, maxqueue: u32) -> Accounted<Ns2Sfq> {
        Accounted::new(Ns2SfqKnobs { buckets, maxqueue_pkts: maxqueue }.build().unwrap(), Rng::new(0, 0))
    }

    #[test]
    fn one_flow_gets_at_most_half_of_what_is_left() {
        // Defaults: 40 packets, 16 buckets. One flow alone: admitted while used < ⌊(40 −
        // used)/2⌋: used = 0..13 (13 < ⌊27/2⌋ = 13 fails) → 13 packets.
        let mut q = sfq(16, 40);
        for i in 0..30u16 {
            q.enqueue(pkt(1, 2, i, 500), Instant(0));
        }
        assert_eq!(q.len_pkts(), 13);
        assert_eq!(q.stats().dropped(DropReason::FlowLimit), 17);
        // Ports do not matter: another port of the same host pair shares the bucket.
        q.enqueue(pkt(1, 2, 999, 500), Instant(0));
        assert_eq!(q.last_drops().len(), 1);
    }

    #[test]
    fn round_robin_serves_one_packet_per_bucket_whatever_its_size() {
        let mut q = sfq(16, 40);
        let a = pkt(1, 2, 1, 1500);
        let b = pkt(1, 3, 1, 40);
        assert_ne!(q.inner().bucket_of(&a), q.inner().bucket_of(&b));
        for _ in 0..4 {
            q.enqueue(a, Instant(0));
            q.enqueue(b, Instant(0));
        }
        let order: Vec<u64> = (0..8).map(|_| q.dequeue(Instant(0)).unwrap().len_bytes()).collect();
        assert_eq!(order, [1500, 40, 1500, 40, 1500, 40, 1500, 40]);
    }

    proptest! {
        /// Conservation, the buffer, and the admission rule re-derived from sfq.cc's text
        /// for every arrival: dropped exactly when the rule says.
        #[test]
        fn admission_rule_and_conservation(buckets in 1u32..20, maxqueue in 1u32..80, ops in testkit::ops(400)) {
            let mut q = sfq(buckets, maxqueue);
            for op in &ops {
                if let testkit::Op::Enq { src_ip, dst_ip, src_port, len, .. } = *op {
                    let p = pkt(src_ip, dst_ip, src_port, len);
                    let used = q.inner().bucket_len(q.inner().bucket_of(&p)) as i64;
                    let left = maxqueue as i64 - q.len_pkts() as i64;
                    let refused = used >= left / 2 || (left < buckets as i64 && used > (maxqueue / buckets) as i64) || left <= 0;
                    q.enqueue(p, Instant(0));
                    prop_assert_eq!(q.last_drops().len(), refused as usize);
                } else if let testkit::Op::Deq = op {
                    q.dequeue(Instant(0));
                }
                prop_assert!(q.check().is_ok(), "{:?}", q.check());
                prop_assert!(q.len_pkts() <= maxqueue as usize);
            }
            testkit::run_ops(&mut q, &ops, maxqueue as usize, buckets as usize)?;
        }
    }
}
