//! DropTail (tail drop): a FIFO that drops arrivals when full.
//!
//! Source: the default router queue; the baseline of every paper in `papers/`.
//! Knobs: `limit_pkts` (default 100 packets, or unset) and `limit_bytes` (unset). When both
//! are set the queue is full as soon as either limit would be exceeded.
//! Limits: none beyond its limit; it keeps no per-flow state.

use super::ns2::{Ns2DropTailKnobs, QueueVariant};
use super::{only_with_ns2, AnyQdisc, Cx, Qdisc};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailConfig {
    /// Capacity in packets; `None` for no packet limit.
    #[serde(default = "default_limit_pkts")]
    pub limit_pkts: Option<u32>,
    /// Capacity in bytes (IP length); `None` for no byte limit.
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    /// `ns2`: ns-2 2.35's DropTail (`super::ns2::droptail`).
    #[serde(default, skip_serializing_if = "QueueVariant::is_default")]
    pub variant: QueueVariant,
    /// Knobs of the ns-2 variant only.
    #[serde(default, skip_serializing_if = "Ns2DropTailKnobs::is_default")]
    pub ns2: Ns2DropTailKnobs,
}

fn default_limit_pkts() -> Option<u32> {
    Some(100)
}

impl Default for DropTailConfig {
    fn default() -> Self {
        Self { limit_pkts: default_limit_pkts(), limit_bytes: None, variant: QueueVariant::Default, ns2: Ns2DropTailKnobs::default() }
    }
}

impl DropTailConfig {
    /// A packet-limited DropTail of ours.
    pub fn packets(limit_pkts: u32) -> Self {
        Self { limit_pkts: Some(limit_pkts), ..Self::default() }
    }

    /// Either variant, as the discipline set dispatches it.
    pub fn build_any(&self) -> Result<AnyQdisc, ConfigError> {
        match self.variant {
            QueueVariant::Default => {
                if !self.ns2.is_default() {
                    return Err(only_with_ns2());
                }
                self.build().map(AnyQdisc::DropTail)
            }
            QueueVariant::Ns2 => self.ns2.build(self.limit_pkts, self.limit_bytes).map(AnyQdisc::Ns2DropTail),
        }
    }
}

impl DropTailConfig {
    pub fn build(&self) -> Result<DropTail, ConfigError> {
        if self.limit_pkts == Some(0) {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet, or unset"));
        }
        if self.limit_bytes == Some(0) {
            return Err(ConfigError::new("limit_bytes", 0, "at least 1 byte, or unset"));
        }
        if self.limit_pkts.is_none() && self.limit_bytes.is_none() {
            return Err(ConfigError::new(
                "limit_pkts",
                "unset (with limit_bytes unset)",
                "at least one of limit_pkts, limit_bytes",
            ));
        }
        Ok(DropTail {
            limit_pkts: self.limit_pkts.map_or(usize::MAX, |l| l as usize),
            limit_bytes: self.limit_bytes.unwrap_or(u64::MAX),
            queue: VecDeque::new(),
            backlog_bytes: 0,
        })
    }
}

#[derive(Debug)]
pub struct DropTail {
    limit_pkts: usize,
    limit_bytes: u64,
    queue: VecDeque<Packet>,
    backlog_bytes: u64,
}

impl DropTail {
    /// Whether a queue of `pkts` packets of `bytes` in all is within both limits: an
    /// arrival that leaves it so is never dropped.
    pub fn holds(&self, pkts: usize, bytes: u64) -> bool {
        pkts <= self.limit_pkts && bytes <= self.limit_bytes
    }
}

impl Qdisc for DropTail {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        if self.queue.len() >= self.limit_pkts
            || self.backlog_bytes + pkt.len_bytes() > self.limit_bytes
        {
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        self.backlog_bytes += pkt.len_bytes();
        self.queue.push_back(pkt);
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
        true // a FIFO keeps no state besides its packets
    }
    fn passes_through(&self, pkt: &Packet) -> bool {
        self.queue.is_empty() && self.holds(1, pkt.len_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use crate::time::Instant;
    use crate::FlowKey;
    use proptest::prelude::*;

    fn pkt(src_port: u16, len: u16) -> Packet {
        Packet {
            flow: FlowKey { src_ip: 1, dst_ip: 2, src_port, dst_port: 80, proto: 6 },
            ip_len_bytes: len,
            ..Packet::default()
        }
    }

    fn droptail(limit_pkts: Option<u32>, limit_bytes: Option<u64>) -> Accounted<DropTail> {
        let q = DropTailConfig { limit_pkts, limit_bytes, ..DropTailConfig::default() }.build().unwrap();
        Accounted::new(q, Rng::new(0, 0))
    }

    #[test]
    fn fifo_order_and_tail_drop_at_packet_limit() {
        let mut q = droptail(Some(2), None);
        for port in 1..=3 {
            q.enqueue(pkt(port, 500), Instant(port as u64));
        }
        assert_eq!(q.last_drops().len(), 1);
        assert_eq!(q.last_drops()[0].0.flow.src_port, 3, "the arrival is dropped, not a queued packet");
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 1);
        assert_eq!(q.dequeue(Instant(10)).unwrap().flow.src_port, 1);
        assert_eq!(q.dequeue(Instant(11)).unwrap().flow.src_port, 2);
        assert!(q.dequeue(Instant(12)).is_none());
    }

    #[test]
    fn byte_limit_counts_ip_length() {
        let mut q = droptail(None, Some(1000));
        q.enqueue(pkt(1, 600), Instant(0));
        q.enqueue(pkt(2, 500), Instant(0)); // 1100 > 1000: dropped
        q.enqueue(pkt(3, 400), Instant(0)); // 1000: fits exactly
        assert_eq!(q.len_pkts(), 2);
        assert_eq!(q.backlog_bytes(), 1000);
        assert_eq!(q.stats().dropped_bytes[DropReason::Overlimit as usize], 500);
    }

    #[test]
    fn time_averaged_backlog_is_the_integral() {
        // One packet queued for the first half of a 10 ns run: mean backlog 0.5.
        let mut q = droptail(Some(5), None);
        q.enqueue(pkt(1, 100), Instant(0));
        q.dequeue(Instant(5)).unwrap();
        assert!((q.mean_backlog_pkts(Instant(10)) - 0.5).abs() < 1e-12);
        assert!((q.mean_sojourn_ns() - 5.0).abs() < 1e-12);
    }

    #[test]
    fn rejects_empty_limits_naming_the_field() {
        let e = DropTailConfig { limit_pkts: Some(0), ..DropTailConfig::default() }.build().unwrap_err();
        assert_eq!(e.field, "limit_pkts");
        assert!(DropTailConfig { limit_pkts: None, ..DropTailConfig::default() }.build().is_err());
    }

    proptest! {
        /// Conservation in packets and bytes, the limits, and `holds`, under random arrivals
        /// and departures.
        #[test]
        fn accounting_holds_under_random_traffic(
            limit in 1u32..50,
            limit_bytes in prop::option::of(500u64..20_000),
            ops in prop::collection::vec((any::<bool>(), 40u16..1500, any::<u16>()), 1..400),
        ) {
            let mut q = droptail(Some(limit), limit_bytes);
            for (i, (is_enqueue, len, port)) in ops.into_iter().enumerate() {
                let now = Instant(i as u64 * 1000);
                if is_enqueue {
                    // `holds`: the arrival is kept exactly when the queue it makes is within the limits.
                    let kept = q.inner().holds(q.len_pkts() + 1, q.backlog_bytes() + u64::from(len));
                    q.enqueue(pkt(port, len), now);
                    prop_assert_eq!(q.last_drops().is_empty(), kept);
                } else {
                    q.dequeue(now);
                }
                prop_assert!(q.check().is_ok(), "{:?}", q.check());
                prop_assert!(q.len_pkts() <= limit as usize);
                prop_assert!(q.backlog_bytes() <= limit_bytes.unwrap_or(u64::MAX));
            }
        }
    }
}
