//! The flow-queue part the four fair-queueing disciplines (SFQ, FQ, HostFQ, FQ-CoDel)
//! compose, as Linux `sch_fq_codel.c` and `sch_cake.c` share their flow-queue logic:
//!
//! - [`FlowQueues`]: per-queue FIFOs in one packet arena, the totals (packets, bytes), and
//!   the fattest-queue index for the overflow drop — by packets in O(1) (SFQ, FQ, HostFQ)
//!   or by bytes with a linear scan of a dense `u32` array (FQ-CoDel, as Linux).
//! - [`DrrRound`]: the deficit round robin of M. Shreedhar and G. Varghese ("Efficient
//!   Fair Queuing using Deficit Round Robin", SIGCOMM 1995) over queue indices, with the
//!   new/old lists of RFC 8290 Section 4.2 (a discipline that never uses the new list has
//!   the classic single round).
//!
//! What stays in each discipline: classification (SFQ's hashing and perturbation, FQ's
//! exact flows, HostFQ's host keying), when an empty queue leaves the round, and any
//! per-queue AQM (CoDel). Memory: both parts are sized once by the number of queues; the
//! arena is bounded by the discipline's packet limit (plus the one arrival pushed out).

use super::{Arena, DepthIndex, PktList};
use crate::packet::Packet;
use std::collections::VecDeque;

/// Which queue counts as the longest for the overflow drop.
#[derive(Debug)]
enum Fattest {
    /// Most packets, O(1) (Linux `sch_sfq.c` `dep[]`).
    Pkts(DepthIndex),
    /// Most bytes, by a scan of the per-queue byte counts kept in their own array (Linux
    /// `fq_codel_drop`: "with 1024 flows, we scan 4KB of memory").
    Bytes(Vec<u32>),
}

/// `n` packet FIFOs sharing one arena, with exact totals and a fattest-queue index.
#[derive(Debug)]
pub(crate) struct FlowQueues {
    lists: Vec<PktList>,
    arena: Arena,
    fattest: Fattest,
    len: usize,
    bytes: u64,
}

impl FlowQueues {
    /// `n` queues whose longest is measured in packets.
    pub fn by_pkts(n: usize) -> Self {
        Self::with(n, Fattest::Pkts(DepthIndex::new(n)))
    }

    /// `n` queues whose fattest is measured in bytes.
    pub fn by_bytes(n: usize) -> Self {
        Self::with(n, Fattest::Bytes(vec![0; n]))
    }

    fn with(n: usize, fattest: Fattest) -> Self {
        FlowQueues { lists: vec![PktList::default(); n], arena: Arena::new(), fattest, len: 0, bytes: 0 }
    }

    /// Packets queued in all queues.
    pub fn len_pkts(&self) -> usize {
        self.len
    }
    /// Bytes queued in all queues.
    pub fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    /// Packets in queue `q`.
    pub fn pkts(&self, q: u32) -> u32 {
        self.lists[q as usize].len
    }
    /// Bytes in queue `q`.
    pub fn bytes(&self, q: u32) -> u64 {
        self.lists[q as usize].bytes
    }
    pub fn is_empty(&self, q: u32) -> bool {
        self.lists[q as usize].is_empty()
    }

    pub fn push_back(&mut self, q: u32, pkt: Packet) {
        self.arena.push_back(&mut self.lists[q as usize], pkt);
        match &mut self.fattest {
            Fattest::Pkts(d) => d.inc(q),
            Fattest::Bytes(b) => b[q as usize] += pkt.ip_len_bytes as u32,
        }
        self.len += 1;
        self.bytes += pkt.len_bytes();
    }

    pub fn pop_front(&mut self, q: u32) -> Option<Packet> {
        let pkt = self.arena.pop_front(&mut self.lists[q as usize])?;
        self.removed(q, &pkt);
        Some(pkt)
    }

    pub fn pop_back(&mut self, q: u32) -> Option<Packet> {
        let pkt = self.arena.pop_back(&mut self.lists[q as usize])?;
        self.removed(q, &pkt);
        Some(pkt)
    }

    /// The slot of queue `q`'s first packet (`NIL` when empty); walk on with
    /// [`FlowQueues::next_slot`], read with [`FlowQueues::packet`].
    pub fn first_slot(&self, q: u32) -> u32 {
        self.arena.first(&self.lists[q as usize])
    }
    pub fn next_slot(&self, slot: u32) -> u32 {
        self.arena.next(slot)
    }
    pub fn packet(&self, slot: u32) -> &Packet {
        self.arena.get(slot)
    }

    /// Take the packet in `slot` out of queue `q`, wherever it is in the queue.
    pub fn remove(&mut self, q: u32, slot: u32) -> Packet {
        let pkt = self.arena.remove(&mut self.lists[q as usize], slot);
        self.removed(q, &pkt);
        pkt
    }

    fn removed(&mut self, q: u32, pkt: &Packet) {
        match &mut self.fattest {
            Fattest::Pkts(d) => d.dec(q),
            Fattest::Bytes(b) => b[q as usize] -= pkt.ip_len_bytes as u32,
        }
        self.len -= 1;
        self.bytes -= pkt.len_bytes();
    }

    /// The queue to drop from on overflow. By packets: one of the most packets (the most
    /// recently grown among ties), `None` when all are empty. By bytes: the first queue of
    /// the most bytes (queue 0 when all are empty, as Linux's scan).
    pub fn fattest(&self) -> Option<u32> {
        match &self.fattest {
            Fattest::Pkts(d) => d.longest(),
            Fattest::Bytes(b) => {
                let (mut fat, mut max) = (0u32, 0u32);
                for (i, &x) in b.iter().enumerate() {
                    if x > max {
                        (fat, max) = (i as u32, x);
                    }
                }
                Some(fat)
            }
        }
    }

    /// Packets ever held at once (the arena's high-water mark).
    #[cfg(test)]
    pub fn capacity_pkts(&self) -> usize {
        self.arena.capacity_pkts()
    }
}

/// Which list of the round a queue is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    None,
    New,
    Old,
}

/// Deficit round robin over queue indices `0..n`. A scheduled queue is on the new or the
/// old list with a deficit in bytes; the head of the new list is served before the old.
/// A queue sends while its deficit is positive (so the deficit goes negative by less than
/// one packet), then gets another quantum and goes to the back of the old list. Over `R`
/// rounds of a continuously backlogged queue with quantum `Q`, the bytes sent lie in
/// `[R·Q, R·Q + max_packet)` (the deficit is carried over).
#[derive(Debug)]
pub(crate) struct DrrRound {
    new: VecDeque<u32>,
    old: VecDeque<u32>,
    /// Per queue, together: one cache line serves the list check and the deficit.
    state: Vec<Sched>,
}

#[derive(Debug, Clone, Copy)]
struct Sched {
    deficit: i64,
    on: On,
}

impl DrrRound {
    pub fn new(n: usize) -> Self {
        DrrRound { new: VecDeque::new(), old: VecDeque::new(), state: vec![Sched { deficit: 0, on: On::None }; n] }
    }

    pub fn is_scheduled(&self, q: u32) -> bool {
        self.state[q as usize].on != On::None
    }
    /// Queues on the new list (RFC 8290's `new_flows`).
    pub fn new_len(&self) -> usize {
        self.new.len()
    }
    /// Queues on the old list.
    pub fn old_len(&self) -> usize {
        self.old.len()
    }
    /// Queues on either list.
    pub fn scheduled_len(&self) -> usize {
        self.new.len() + self.old.len()
    }

    /// Put an unscheduled queue at the back of the old list (the classic single round) with
    /// `quantum` bytes of deficit.
    pub fn schedule(&mut self, q: u32, quantum: i64) {
        self.join(q, quantum, On::Old);
    }

    /// Put an unscheduled queue at the back of the new list (RFC 8290: served before the
    /// old list) with `quantum` bytes of deficit.
    pub fn schedule_new(&mut self, q: u32, quantum: i64) {
        self.join(q, quantum, On::New);
    }

    fn join(&mut self, q: u32, quantum: i64, list: On) {
        debug_assert!(!self.is_scheduled(q), "queue {q} is already scheduled");
        self.state[q as usize].on = list;
        self.state[q as usize].deficit = quantum;
        if list == On::New { &mut self.new } else { &mut self.old }.push_back(q);
    }

    /// The head of the round (new list first) and whether it is on the new list.
    pub fn head(&self) -> Option<(u32, bool)> {
        match self.new.front() {
            Some(&q) => Some((q, true)),
            None => self.old.front().map(|&q| (q, false)),
        }
    }

    fn pop_head(&mut self) -> Option<u32> {
        let (q, from_new) = self.head()?;
        if from_new { &mut self.new } else { &mut self.old }.pop_front();
        Some(q)
    }

    /// Queue `q` has used up its deficit.
    pub fn spent(&self, q: u32) -> bool {
        self.state[q as usize].deficit <= 0
    }

    /// The head has used up its deficit: give it `quantum` more and move it to the back of
    /// the old list.
    pub fn rotate_head(&mut self, quantum: i64) {
        let Some(q) = self.pop_head() else { return };
        self.state[q as usize].deficit += quantum;
        self.state[q as usize].on = On::Old;
        self.old.push_back(q);
    }

    /// The queue to serve: rotates heads whose deficit is spent (`quantum_of` gives each
    /// its quantum) until the head has deficit left. `None` when nothing is scheduled.
    pub fn next(&mut self, mut quantum_of: impl FnMut(u32) -> i64) -> Option<u32> {
        loop {
            let (q, _) = self.head()?;
            if !self.spent(q) {
                return Some(q);
            }
            self.rotate_head(quantum_of(q));
        }
    }

    /// As [`DrrRound::next`], but first takes off the round every head for which `empty`
    /// holds (emptied while waiting, e.g. by push-outs), handing it to `left`.
    pub fn next_nonempty(
        &mut self,
        quantum: i64,
        empty: impl Fn(u32) -> bool,
        mut left: impl FnMut(u32),
    ) -> Option<u32> {
        loop {
            let (q, _) = self.head()?;
            if empty(q) {
                self.remove_head();
                left(q);
            } else if self.spent(q) {
                self.rotate_head(quantum);
            } else {
                return Some(q);
            }
        }
    }

    /// The head sent `bytes`.
    pub fn charge(&mut self, q: u32, bytes: u64) {
        self.state[q as usize].deficit -= bytes as i64;
    }

    /// Take the head off the round.
    pub fn remove_head(&mut self) -> Option<u32> {
        let q = self.pop_head()?;
        self.state[q as usize].on = On::None;
        Some(q)
    }

    /// The head found empty, RFC 8290 rule: a new queue moves to the back of the old list
    /// if that list is non-empty (so it cannot starve old queues by re-entering as new),
    /// otherwise, like an old queue, it leaves the round. Returns whether it left.
    pub fn retire_head(&mut self) -> bool {
        let Some((q, from_new)) = self.head() else { return false };
        self.pop_head();
        if from_new && !self.old.is_empty() {
            self.state[q as usize].on = On::Old;
            self.old.push_back(q);
            false
        } else {
            self.state[q as usize].on = On::None;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(seq: u32, len: u16) -> Packet {
        Packet { seq, ip_len_bytes: len, ..Packet::default() }
    }

    #[test]
    fn byte_shares_are_proportional_to_the_quantum_over_a_long_backlog() {
        // Quanta 500, 1000, 2500 bytes; every queue backlogged with 300-byte packets. After
        // R rounds queue i has sent b_i ∈ [R·Q_i, R·Q_i + 300) (deficit carried over), so
        // b_i / Σb → Q_i / ΣQ = 1/8, 2/8, 5/8, within 300/(R·Q_i) relative.
        let quanta = [500i64, 1000, 2500];
        let mut queues = FlowQueues::by_pkts(3);
        let mut drr = DrrRound::new(3);
        for (q, &quantum) in quanta.iter().enumerate() {
            for seq in 0..20_000 {
                queues.push_back(q as u32, p(seq, 300));
            }
            drr.schedule(q as u32, quantum);
        }
        let mut sent = [0u64; 3];
        let mut rounds = 0;
        // Queue 2 is last in the round: a round ends when its turn does. Count 400.
        while rounds < 400 {
            let q = drr.next(|q| quanta[q as usize]).unwrap();
            let pkt = queues.pop_front(q).unwrap();
            drr.charge(q, pkt.len_bytes());
            sent[q as usize] += pkt.len_bytes();
            if q == 2 && drr.state[2].deficit <= 0 {
                rounds += 1;
            }
        }
        for (q, &quantum) in quanta.iter().enumerate() {
            let r = 400 * quantum as u64;
            assert!(sent[q] >= r && sent[q] < r + 300, "queue {q}: {} vs {r}", sent[q]);
        }
        let total: u64 = sent.iter().sum();
        let share = sent[2] as f64 / total as f64;
        assert!((share - 5.0 / 8.0).abs() < 0.001, "{share}");
    }

    #[test]
    fn new_queues_go_first_and_an_emptied_new_queue_moves_to_the_old_list() {
        let mut drr = DrrRound::new(3);
        drr.schedule(0, 1000);
        drr.schedule_new(1, 1000);
        assert_eq!(drr.head(), Some((1, true)));
        // Spent new queue: to the back of the old list with another quantum.
        drr.charge(1, 1500);
        assert_eq!(drr.next(|_| 1000), Some(0));
        assert_eq!(drr.state[1].deficit, 500);
        // An emptied new queue with old queues waiting goes to the old list, not away.
        drr.schedule_new(2, 1000);
        assert!(!drr.retire_head());
        assert!(drr.is_scheduled(2));
        assert_eq!((drr.old.iter().copied().collect::<Vec<_>>(), drr.scheduled_len()), (vec![0, 1, 2], 3));
        // Old queues that empty leave.
        assert!(drr.retire_head() && !drr.is_scheduled(0));
    }

    #[test]
    fn next_nonempty_removes_empty_heads_and_hands_them_back() {
        let mut queues = FlowQueues::by_pkts(3);
        let mut drr = DrrRound::new(3);
        for q in 0..3 {
            queues.push_back(q, p(q, 100));
            drr.schedule(q, 1000);
        }
        // Queues 0 and 1 are emptied while waiting (push-outs).
        queues.pop_back(0);
        queues.pop_back(1);
        let mut left = Vec::new();
        assert_eq!(drr.next_nonempty(1000, |q| queues.is_empty(q), |q| left.push(q)), Some(2));
        assert_eq!(left, vec![0, 1]);
        assert!(!drr.is_scheduled(0) && !drr.is_scheduled(1) && drr.scheduled_len() == 1);
        assert_eq!(drr.remove_head(), Some(2));
        assert_eq!(drr.next_nonempty(1000, |_| false, |_| {}), None);
    }

    #[test]
    fn the_fattest_queue_is_the_one_with_the_largest_backlog() {
        // By packets: queue 1 has 3 small packets, queue 0 two large ones.
        let mut by_pkts = FlowQueues::by_pkts(4);
        // By bytes: the opposite answer for the same packets.
        let mut by_bytes = FlowQueues::by_bytes(4);
        assert_eq!((by_pkts.fattest(), by_bytes.fattest()), (None, Some(0)));
        for q in [&mut by_pkts, &mut by_bytes] {
            for (queue, len) in [(0, 1500), (1, 64), (1, 64), (0, 1500), (1, 64), (3, 40)] {
                q.push_back(queue, p(0, len));
            }
            assert_eq!((q.len_pkts(), q.backlog_bytes()), (6, 3232));
            assert_eq!((q.pkts(1), q.bytes(1)), (3, 192));
        }
        assert_eq!(by_pkts.fattest(), Some(1));
        assert_eq!(by_bytes.fattest(), Some(0));
        // Draining the fattest moves the answer to the next largest.
        by_pkts.pop_back(1);
        by_pkts.pop_back(1);
        assert_eq!(by_pkts.fattest(), Some(0));
        by_bytes.pop_front(0);
        by_bytes.pop_front(0);
        assert_eq!(by_bytes.fattest(), Some(1));
        assert!(by_bytes.is_empty(0) && by_bytes.pop_front(0).is_none());
        assert_eq!((by_bytes.len_pkts(), by_bytes.backlog_bytes()), (4, 232));
        // The arena reuses slots: six packets were the most ever held.
        assert_eq!(by_bytes.capacity_pkts(), 6);
    }
}
