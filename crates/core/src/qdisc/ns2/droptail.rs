//! ns-2 2.35 DropTail (`queue/drop-tail.cc`, defaults from `tcl/lib/ns-default.tcl`).
//!
//! Rules (line numbers are ns-2.35's `drop-tail.cc`):
//! - Limit (l. 91-93): an arrival is refused when `waiting + 1 >= limit_`, so at most
//!   `limit_ − 1` packets wait besides the one on the wire; with `queue_in_bytes_`, when
//!   `waiting bytes + size >= limit_·mean_pktsize_`. Every packet passes through the queue,
//!   an idle link's too (`queue.cc` l. 132), so `limit_ = 1` refuses everything.
//! - `drop_front_` (l. 95-98): the arrival is queued and the head is dropped instead (one
//!   head only, so in byte mode a large arrival replacing a small head grows the bytes
//!   queued past the limit).
//! - `summarystats_` only prints the time-averaged queue, which the links table reports.
//!
//! Knobs: `limit_pkts` is `limit_` (required; `limit_bytes` has no ns-2 counterpart), and
//! the table `ns2`: `queue_in_bytes` (false), `mean_pkt_size_bytes` (500), `drop_front`
//! (false).

use crate::error::ConfigError;
use crate::packet::Packet;
use crate::qdisc::{Cx, Qdisc};
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// ns-2-only DropTail knobs (`link.queue.ns2`), ns-2's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ns2DropTailKnobs {
    /// ns-2 `queue_in_bytes_`: the limit is `limit_pkts·mean_pkt_size_bytes` bytes.
    pub queue_in_bytes: bool,
    /// ns-2 `mean_pktsize_`, bytes.
    pub mean_pkt_size_bytes: u32,
    /// ns-2 `drop_front_`: drop the head instead of the arrival.
    pub drop_front: bool,
}

impl Default for Ns2DropTailKnobs {
    fn default() -> Self {
        Ns2DropTailKnobs { queue_in_bytes: false, mean_pkt_size_bytes: 500, drop_front: false }
    }
}

impl Ns2DropTailKnobs {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    pub fn build(&self, limit_pkts: Option<u32>, limit_bytes: Option<u64>) -> Result<Ns2DropTail, ConfigError> {
        if let Some(b) = limit_bytes {
            return Err(ConfigError::new(
                "limit_bytes",
                b,
                "unset with variant = \"ns2\" (ns-2's limit is limit_pkts, in bytes via ns2.queue_in_bytes)",
            ));
        }
        let limit = match limit_pkts {
            Some(l) if l >= 1 => l,
            l => return Err(ConfigError::new("limit_pkts", format!("{l:?}"), "at least 1 packet (ns-2 limit_)")),
        };
        if self.mean_pkt_size_bytes == 0 {
            return Err(ConfigError::new("ns2.mean_pkt_size_bytes", 0, "at least 1 byte"));
        }
        Ok(Ns2DropTail {
            limit_pkts: limit as usize,
            limit_bytes: self.queue_in_bytes.then_some(u64::from(limit) * u64::from(self.mean_pkt_size_bytes)),
            drop_front: self.drop_front,
            queue: VecDeque::new(),
            backlog_bytes: 0,
        })
    }
}

#[derive(Debug)]
pub struct Ns2DropTail {
    limit_pkts: usize,
    /// `limit_·mean_pktsize_` when the queue is in bytes.
    limit_bytes: Option<u64>,
    drop_front: bool,
    queue: VecDeque<Packet>,
    backlog_bytes: u64,
}

impl Ns2DropTail {
    /// ns-2's overflow test for an arrival of `size_bytes` (`drop-tail.cc` l. 92-93).
    fn overflows(&self, size_bytes: u64) -> bool {
        match self.limit_bytes {
            Some(limit) => self.backlog_bytes + size_bytes >= limit,
            None => self.queue.len() + 1 >= self.limit_pkts,
        }
    }
}

impl Qdisc for Ns2DropTail {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        if !self.overflows(pkt.len_bytes()) {
            self.backlog_bytes += pkt.len_bytes();
            self.queue.push_back(pkt);
        } else if self.drop_front {
            self.queue.push_back(pkt);
            let head = self.queue.pop_front().expect("just queued");
            self.backlog_bytes = self.backlog_bytes + pkt.len_bytes() - head.len_bytes();
            cx.drop(head, DropReason::Overlimit);
        } else {
            cx.drop(pkt, DropReason::Overlimit);
        }
    }

    fn dequeue(&mut self, _cx: &mut Cx) -> Option<Packet> {
        let pkt = self.queue.pop_front()?;
        self.backlog_bytes -= pkt.len_bytes();
        Some(pkt)
    }

    fn len_pkts(&self) -> usize {
        self.queue.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }
    fn empty_dequeue_is_noop(&self) -> bool {
        true
    }
    fn passes_through(&self, pkt: &Packet) -> bool {
        // ns-2 queues the packet and hands it straight to the idle link, unless it overflows.
        self.queue.is_empty() && !self.overflows(pkt.len_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::pkt;
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use crate::time::Instant;
    use proptest::prelude::*;

    fn droptail(limit: u32, knobs: Ns2DropTailKnobs) -> Accounted<Ns2DropTail> {
        Accounted::new(knobs.build(Some(limit), None).unwrap(), Rng::new(0, 0))
    }

    #[test]
    fn limit_counts_the_waiting_packets_and_one_more() {
        // ns-2 `limit_ 50` (drop-tail.cc: drop when length + 1 >= limit_): 49 wait.
        let mut q = droptail(50, Ns2DropTailKnobs::default());
        for i in 0..60u16 {
            q.enqueue(pkt(1, 2, i, 500), Instant(0));
        }
        assert_eq!(q.len_pkts(), 49);
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 11);
        // limit_ 1: nothing is ever queued, an idle link's packet neither.
        let q1 = droptail(1, Ns2DropTailKnobs::default());
        assert!(!q1.inner().passes_through(&pkt(1, 2, 1, 40)));
    }

    #[test]
    fn bytes_mode_limit_is_limit_times_mean_size_exclusive() {
        // limit_ 10, mean 500: 5000 bytes; 1000-byte packets: 4 fit (4000 + 1000 >= 5000 refuses the 5th).
        let knobs = Ns2DropTailKnobs { queue_in_bytes: true, ..Ns2DropTailKnobs::default() };
        let mut q = droptail(10, knobs);
        for i in 0..8u16 {
            q.enqueue(pkt(1, 2, i, 1000), Instant(0));
        }
        assert_eq!((q.len_pkts(), q.backlog_bytes()), (4, 4000));
    }

    #[test]
    fn drop_front_drops_the_head() {
        let knobs = Ns2DropTailKnobs { drop_front: true, ..Ns2DropTailKnobs::default() };
        let mut q = droptail(3, knobs);
        for port in 1..=4u16 {
            q.enqueue(pkt(1, 2, port, 100 * port), Instant(0));
        }
        // Two wait (limit 3); the 3rd arrival pushes out port 1, the 4th port 2.
        assert_eq!(q.last_drops()[0].0.flow.src_port, 2);
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 2);
        assert_eq!(q.dequeue(Instant(1)).unwrap().flow.src_port, 3);
        assert_eq!(q.dequeue(Instant(1)).unwrap().flow.src_port, 4);
        q.check().unwrap();
    }

    #[test]
    fn rejects_a_byte_limit_and_no_limit() {
        let k = Ns2DropTailKnobs::default();
        assert_eq!(k.build(Some(10), Some(1000)).unwrap_err().field, "limit_bytes");
        assert_eq!(k.build(None, None).unwrap_err().field, "limit_pkts");
        assert_eq!(k.build(Some(0), None).unwrap_err().field, "limit_pkts");
    }

    proptest! {
        #[test]
        fn conservation_and_limit(limit in 1u32..40, bytes in any::<bool>(), front in any::<bool>(),
                                  ops in prop::collection::vec((any::<bool>(), 40u16..1500), 1..300)) {
            let knobs = Ns2DropTailKnobs { queue_in_bytes: bytes, drop_front: front, ..Ns2DropTailKnobs::default() };
            let mut q = droptail(limit, knobs);
            for (i, (enq, len)) in ops.into_iter().enumerate() {
                if enq { q.enqueue(pkt(1, 2, i as u16, len), Instant(i as u64)); } else { q.dequeue(Instant(i as u64)); }
                prop_assert!(q.check().is_ok(), "{:?}", q.check());
                if !bytes {
                    prop_assert!(q.len_pkts() < limit as usize);
                } else if !front {
                    // An admitted arrival leaves the bytes below limit·500. (drop_front
                    // swaps head for arrival and may grow the bytes past it, as ns-2 does.)
                    prop_assert!(q.backlog_bytes() < u64::from(limit) * 500);
                }
            }
        }
    }
}
