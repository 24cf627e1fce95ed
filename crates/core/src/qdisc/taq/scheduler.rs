//! TAQ's multi-level priority scheduler (Section 4.2).
//!
//! - Level 1, Recovery: retransmissions only, strict priority over levels 2 and 3, split
//!   into three FIFO classes served in order: retransmissions of flows coming out of an
//!   extended silence, then out of a (timeout or idle) silence, then first retransmissions
//!   (fast retransmit, no silence). Capped: it may take at most `recovery_share` of the
//!   bytes sent while the other levels have packets waiting.
//! - Level 2, NewFlow, OverPenalized and BelowFairShare at equal priority: the packet that
//!   has waited longest among their heads goes first, so each gets service in proportion
//!   to its demand (its arrivals). NewFlow is capped at `new_flow_share` in the same way
//!   as Recovery, but against its level-2 peers only: it is never held back for level 3
//!   (the paper: level 3 has "strictly lower priority compared to Level 2"), unless
//!   `new_flow_cap_level_3` extends the cap to AboveFairShare.
//! - Level 3, AboveFairShare: FIFO, served only when levels 1 and 2 have nothing eligible.
//! - Sparse (ours, off unless `sparse_share` > 0): packets without sequence space (UDP,
//!   ICMP, pure ACKs with `protect_pure_acks`) of flows below their fair share. Served
//!   right after Recovery while it has credit, capped at `sparse_share` like Recovery;
//!   out of credit, its head competes in level 2 by arrival like the others.
//!
//! Caps are token buckets in bytes: every byte sent earns a capped queue `share` bytes of
//! credit (at most `cap_burst_bytes`), the queue spends its own bytes, and may send while
//! its credit is positive. They are work-conserving: a capped queue also sends, without
//! spending credit, when nothing else is eligible. Over a busy period a capped queue
//! therefore gets at most `share` of the bytes (plus one burst) while others wait.

use crate::packet::Packet;
use std::collections::VecDeque;

/// The queues of Section 4.2; Recovery is split into its three priority classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaqQueue {
    RecoveryExtended = 0,
    RecoverySilence,
    RecoveryFirst,
    Sparse,
    NewFlow,
    OverPenalized,
    BelowFairShare,
    AboveFairShare,
}

impl TaqQueue {
    pub const COUNT: usize = 8;
    pub const ALL: [TaqQueue; Self::COUNT] = [
        TaqQueue::RecoveryExtended,
        TaqQueue::RecoverySilence,
        TaqQueue::RecoveryFirst,
        TaqQueue::Sparse,
        TaqQueue::NewFlow,
        TaqQueue::OverPenalized,
        TaqQueue::BelowFairShare,
        TaqQueue::AboveFairShare,
    ];
    /// When a victim must be chosen among packets whose drop is predicted to hurt their
    /// flows equally, the queues are searched in this order: lowest priority first, and
    /// NewFlow (which admission may hold back anyway) before OverPenalized. Sparse holds
    /// only packets without sequence space, which `drop_one` ranks by backlog, not order.
    pub const DROP_ORDER: [TaqQueue; Self::COUNT] = [
        TaqQueue::AboveFairShare,
        TaqQueue::BelowFairShare,
        TaqQueue::NewFlow,
        TaqQueue::OverPenalized,
        TaqQueue::Sparse,
        TaqQueue::RecoveryFirst,
        TaqQueue::RecoverySilence,
        TaqQueue::RecoveryExtended,
    ];
    pub fn name(self) -> &'static str {
        match self {
            TaqQueue::RecoveryExtended => "recovery_extended",
            TaqQueue::RecoverySilence => "recovery_silence",
            TaqQueue::RecoveryFirst => "recovery_first",
            TaqQueue::Sparse => "sparse",
            TaqQueue::NewFlow => "new_flow",
            TaqQueue::OverPenalized => "over_penalized",
            TaqQueue::BelowFairShare => "below_fair_share",
            TaqQueue::AboveFairShare => "above_fair_share",
        }
    }
    pub fn is_recovery(self) -> bool {
        (self as usize) < 3
    }
}

/// A queued packet with what the discipline learned on its arrival.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Queued {
    pub pkt: Packet,
    /// Flow-table slot of its flow.
    pub slot: u32,
    pub retx: bool,
}

/// The capped queues' shares of the link's bytes and the credit they may save up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub recovery_share: f64,
    pub new_flow_share: f64,
    pub new_flow_cap_level_3: bool,
    pub sparse_share: f64,
    pub burst_bytes: u32,
}

/// One capped queue's token bucket, in bytes.
#[derive(Debug, Clone, Copy)]
struct Cap {
    share: f64,
    credit: f64,
}

impl Cap {
    fn new(share: f64, burst_bytes: f64) -> Self {
        Cap { share, credit: burst_bytes }
    }
    fn has_credit(&self) -> bool {
        self.credit > 0.0
    }
    /// Every byte sent, by any queue, earns `share` bytes of credit, up to the burst.
    fn earn(&mut self, len: f64, burst_bytes: f64) {
        self.credit = (self.credit + self.share * len).min(burst_bytes);
    }
}

#[derive(Debug)]
pub(crate) struct Scheduler {
    queues: [VecDeque<Queued>; TaqQueue::COUNT],
    recovery: Cap,
    new_flow: Cap,
    sparse: Cap,
    new_flow_cap_level_3: bool,
    burst_bytes: f64,
    len: usize,
    bytes: u64,
}

impl Scheduler {
    pub fn new(caps: Caps) -> Self {
        let burst_bytes = caps.burst_bytes as f64;
        Scheduler {
            queues: Default::default(),
            recovery: Cap::new(caps.recovery_share, burst_bytes),
            new_flow: Cap::new(caps.new_flow_share, burst_bytes),
            sparse: Cap::new(caps.sparse_share, burst_bytes),
            new_flow_cap_level_3: caps.new_flow_cap_level_3,
            burst_bytes,
            len: 0,
            bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn queue_len(&self, q: TaqQueue) -> usize {
        self.queues[q as usize].len()
    }

    pub fn push(&mut self, q: TaqQueue, item: Queued) {
        self.len += 1;
        self.bytes += item.pkt.len_bytes();
        self.queues[q as usize].push_back(item);
    }

    /// The last `n` packets of queue `q`, newest first, with their positions.
    pub fn tail(&self, q: TaqQueue, n: usize) -> impl Iterator<Item = (usize, &Queued)> {
        let d = &self.queues[q as usize];
        (0..d.len()).rev().take(n).map(move |i| (i, &d[i]))
    }

    /// Move every packet of flow `slot` from queue `from` into queue `to`, by arrival time:
    /// each queue is in arrival order (packets join at the tail as they arrive), and stays
    /// so. How many moved. O(length of both queues).
    pub fn promote(&mut self, slot: u32, from: TaqQueue, to: TaqQueue) -> usize {
        let [src, dst] = self.queues.get_disjoint_mut([from as usize, to as usize]).expect("two different queues");
        let mut moved = VecDeque::new();
        src.retain(|it| {
            let mine = it.slot == slot;
            if mine {
                moved.push_back(*it);
            }
            !mine
        });
        let n = moved.len();
        let mut merged = VecDeque::with_capacity(dst.len() + n);
        while let (Some(a), Some(b)) = (dst.front(), moved.front()) {
            let next = if b.pkt.arrival < a.pkt.arrival { &mut moved } else { &mut *dst };
            merged.push_back(next.pop_front().expect("non-empty"));
        }
        merged.extend(dst.drain(..));
        merged.append(&mut moved);
        *dst = merged;
        n
    }

    pub fn remove(&mut self, q: TaqQueue, pos: usize) -> Queued {
        let item = self.queues[q as usize].remove(pos).expect("position from tail()");
        self.len -= 1;
        self.bytes -= item.pkt.len_bytes();
        item
    }

    fn head_arrival(&self, q: TaqQueue) -> Option<u64> {
        self.queues[q as usize].front().map(|i| i.pkt.arrival.as_nanos())
    }

    /// Pick and remove the next packet to send.
    pub fn pop(&mut self) -> Option<(TaqQueue, Queued)> {
        use TaqQueue::*;
        let nonempty = |s: &Self, q: TaqQueue| !s.queues[q as usize].is_empty();
        // NewFlow's cap yields to its level-2 peers only (and to level 3 with
        // `new_flow_cap_level_3`); otherwise level 3 waits for all of level 2.
        let level_2_peers = nonempty(self, Sparse) || nonempty(self, OverPenalized) || nonempty(self, BelowFairShare);
        let new_flow_peers = level_2_peers || (self.new_flow_cap_level_3 && nonempty(self, AboveFairShare));
        let levels_2_3 = level_2_peers || nonempty(self, NewFlow) || nonempty(self, AboveFairShare);
        let recovery = [RecoveryExtended, RecoverySilence, RecoveryFirst].into_iter().find(|&q| nonempty(self, q));
        let (q, by_credit) = match recovery {
            Some(r) if self.recovery.has_credit() || !levels_2_3 => (r, self.recovery.has_credit()),
            _ if nonempty(self, Sparse) && self.sparse.has_credit() => (Sparse, true),
            _ => {
                let new_ok = nonempty(self, NewFlow) && (self.new_flow.has_credit() || !new_flow_peers);
                let mut best: Option<(u64, TaqQueue)> = None;
                for q in [Sparse, NewFlow, OverPenalized, BelowFairShare] {
                    if q == NewFlow && !new_ok {
                        continue;
                    }
                    if let Some(t) = self.head_arrival(q) {
                        if best.is_none_or(|(bt, _)| t < bt) {
                            best = Some((t, q));
                        }
                    }
                }
                match best {
                    Some((_, q)) => (q, q == NewFlow && self.new_flow.has_credit()),
                    None if nonempty(self, AboveFairShare) => (AboveFairShare, false),
                    // Only Recovery holds packets and has no credit: serve it anyway.
                    None => (recovery?, false),
                }
            }
        };
        let item = self.queues[q as usize].pop_front().expect("chosen queue is non-empty");
        let len = item.pkt.len_bytes() as f64;
        if by_credit {
            let cap = match q {
                Sparse => &mut self.sparse,
                NewFlow => &mut self.new_flow,
                _ => &mut self.recovery,
            };
            cap.credit -= len;
        }
        for cap in [&mut self.recovery, &mut self.new_flow, &mut self.sparse] {
            cap.earn(len, self.burst_bytes);
        }
        self.len -= 1;
        self.bytes -= item.pkt.len_bytes();
        Some((q, item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::pkt;
    use crate::time::Instant;

    fn caps(recovery_share: f64, new_flow_share: f64, new_flow_cap_level_3: bool, sparse_share: f64, burst_bytes: u32) -> Caps {
        Caps { recovery_share, new_flow_share, new_flow_cap_level_3, sparse_share, burst_bytes }
    }

    fn item(src: u32, arrival: u64, len: u16) -> Queued {
        let mut p = pkt(src, 9, 1, len);
        p.arrival = Instant(arrival);
        Queued { pkt: p, slot: src, retx: false }
    }

    #[test]
    fn recovery_classes_go_first_in_silence_order() {
        let mut s = Scheduler::new(caps(1.0, 1.0, false, 0.0, 100_000));
        s.push(TaqQueue::AboveFairShare, item(7, 0, 100));
        s.push(TaqQueue::BelowFairShare, item(6, 1, 100));
        s.push(TaqQueue::RecoveryFirst, item(3, 2, 100));
        s.push(TaqQueue::RecoverySilence, item(2, 3, 100));
        s.push(TaqQueue::RecoveryExtended, item(1, 4, 100));
        let order: Vec<u32> = std::iter::from_fn(|| s.pop()).map(|(_, i)| i.pkt.flow.src_ip).collect();
        assert_eq!(order, vec![1, 2, 3, 6, 7]);
        assert_eq!((s.len(), s.bytes()), (0, 0));
    }

    #[test]
    fn level_two_is_fifo_across_its_queues_and_level_three_waits() {
        let mut s = Scheduler::new(caps(0.5, 1.0, false, 0.0, 100_000));
        s.push(TaqQueue::AboveFairShare, item(9, 0, 100));
        s.push(TaqQueue::BelowFairShare, item(1, 30, 100));
        s.push(TaqQueue::OverPenalized, item(2, 10, 100));
        s.push(TaqQueue::NewFlow, item(3, 20, 100));
        s.push(TaqQueue::BelowFairShare, item(4, 40, 100));
        let order: Vec<u32> = std::iter::from_fn(|| s.pop()).map(|(_, i)| i.pkt.flow.src_ip).collect();
        assert_eq!(order, vec![2, 3, 1, 4, 9]);
    }

    #[test]
    fn promote_merges_one_flows_packets_by_arrival_and_moves_nothing_else() {
        let mut s = Scheduler::new(caps(1.0, 1.0, false, 0.0, 100_000));
        for (src, t) in [(5, 0), (6, 1), (5, 2), (6, 3), (5, 4)] {
            s.push(TaqQueue::AboveFairShare, item(src, t, 100));
        }
        s.push(TaqQueue::BelowFairShare, item(7, 5, 100));
        assert_eq!(s.promote(5, TaqQueue::AboveFairShare, TaqQueue::BelowFairShare), 3);
        assert_eq!((s.len(), s.bytes(), s.queue_len(TaqQueue::AboveFairShare)), (6, 600, 2));
        let order: Vec<(u32, u64)> = std::iter::from_fn(|| s.pop()).map(|(_, i)| (i.pkt.flow.src_ip, i.pkt.arrival.as_nanos())).collect();
        // Level 2 first, in arrival order: flow 5's promoted packets arrived before flow 7's;
        // then level 3, flow 6.
        assert_eq!(order, vec![(5, 0), (5, 2), (5, 4), (7, 5), (6, 1), (6, 3)]);
    }

    #[test]
    fn recovery_cap_holds_its_share_while_others_wait_and_is_work_conserving() {
        // Share 0.25: of every 4 packets of equal size, recovery may take 1 once its
        // initial burst (one packet) is spent.
        let mut s = Scheduler::new(caps(0.25, 1.0, false, 0.0, 500));
        for i in 0..400u64 {
            s.push(TaqQueue::RecoveryFirst, item(1, i, 500));
            s.push(TaqQueue::AboveFairShare, item(2, i, 500));
        }
        let mut rec: i32 = 0;
        for _ in 0..400 {
            if s.pop().unwrap().0.is_recovery() {
                rec += 1;
            }
        }
        // 400 sent, 25% ± the one-packet burst.
        assert!((rec - 100).abs() <= 1, "{rec}");
        // Once only recovery remains it is served without waiting for credit.
        while let Some((q, _)) = s.pop() {
            rec += q.is_recovery() as i32;
        }
        assert_eq!(rec, 400);
    }

    #[test]
    fn new_flow_cap_yields_to_level_two_peers_but_not_to_level_three() {
        // Against BelowFairShare (level 2, equal priority): NewFlow gets its 20% of bytes.
        let mut s = Scheduler::new(caps(1.0, 0.2, false, 0.0, 500));
        for i in 0..500u64 {
            s.push(TaqQueue::NewFlow, item(1, i, 500));
            s.push(TaqQueue::BelowFairShare, item(2, 1000 + i, 500));
        }
        let mut new = 0;
        for _ in 0..500 {
            new += (s.pop().unwrap().0 == TaqQueue::NewFlow) as i32;
        }
        assert!((new - 100).abs() <= 1, "{new}");
        // Against AboveFairShare (level 3, strictly lower): all of NewFlow goes first.
        let mut s = Scheduler::new(caps(1.0, 0.2, false, 0.0, 500));
        for i in 0..500u64 {
            s.push(TaqQueue::NewFlow, item(1, 1000 + i, 500));
            s.push(TaqQueue::AboveFairShare, item(2, i, 500));
        }
        let first: Vec<TaqQueue> = (0..500).map(|_| s.pop().unwrap().0).collect();
        assert!(first.iter().all(|&q| q == TaqQueue::NewFlow));
    }

    #[test]
    fn with_new_flow_cap_level_3_new_flow_gets_its_share_against_above_fair_share_too() {
        // The same backlog as above, the cap extended to level 3: NewFlow's 20% of the 500
        // packets sent (its credit starts at one 500-byte burst), AboveFairShare the rest.
        let mut s = Scheduler::new(caps(1.0, 0.2, true, 0.0, 500));
        for i in 0..500u64 {
            s.push(TaqQueue::NewFlow, item(1, 1000 + i, 500));
            s.push(TaqQueue::AboveFairShare, item(2, i, 500));
        }
        let new = (0..500).filter(|_| s.pop().unwrap().0 == TaqQueue::NewFlow).count() as i32;
        assert!((new - 100).abs() <= 1, "{new}");
        // Alone, NewFlow is never held back (work-conserving).
        let mut s = Scheduler::new(caps(1.0, 0.2, true, 0.0, 500));
        for i in 0..10u64 {
            s.push(TaqQueue::NewFlow, item(1, i, 500));
        }
        assert!((0..10).all(|_| s.pop().unwrap().0 == TaqQueue::NewFlow));
    }

    #[test]
    fn sparse_goes_after_recovery_and_before_older_level_two_packets_up_to_its_share() {
        // Each queue backlogged, Sparse's packets the newest: with credit Sparse goes ahead
        // of level 2 (older heads) and of level 3, not of Recovery.
        let mut s = Scheduler::new(caps(1.0, 1.0, false, 0.2, 500));
        s.push(TaqQueue::BelowFairShare, item(1, 0, 500));
        s.push(TaqQueue::NewFlow, item(2, 1, 500));
        s.push(TaqQueue::AboveFairShare, item(3, 2, 500));
        s.push(TaqQueue::RecoveryFirst, item(4, 3, 500));
        s.push(TaqQueue::Sparse, item(5, 4, 100));
        let order: Vec<u32> = std::iter::from_fn(|| s.pop()).map(|(_, i)| i.pkt.flow.src_ip).collect();
        assert_eq!(order, vec![4, 5, 1, 2, 3]);
        // Against an older level-2 backlog Sparse gets its 20% of the bytes sent (plus the
        // one-packet burst it starts with); out of credit it waits its turn by arrival.
        let mut s = Scheduler::new(caps(1.0, 1.0, false, 0.2, 500));
        for i in 0..500u64 {
            s.push(TaqQueue::BelowFairShare, item(1, i, 500));
            s.push(TaqQueue::Sparse, item(2, 1000 + i, 500));
        }
        let sparse = (0..500).filter(|_| s.pop().unwrap().0 == TaqQueue::Sparse).count() as i32;
        assert!((sparse - 100).abs() <= 1, "{sparse}");
    }
}
