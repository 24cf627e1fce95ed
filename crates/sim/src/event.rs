//! The event queue: events pop ordered by (time, insertion sequence). Equal times pop in
//! insertion order, which is what makes a seed fix the run bit for bit.
//!
//! Components keep at most one pending event each (a link its head-of-line event, an
//! endpoint its earliest timer), so the queue grows with the number of components, not of
//! packets. Stale timer events are skipped by generation, not removed (O(1) "cancel").
//!
//! Every key (time, sequence) is unique. A discrete-event simulation never schedules
//! before the event it is handling and a newer event has a larger sequence number, so every
//! key pushed is larger than the last one popped: keys are monotone (but for events pushed
//! at the time of an event of `push_after_ties` being handled, which sort before it; they
//! fall in its window, where the heap orders any keys). The queue uses that as
//! a radix heap does (Ahuja, Mehlhorn, Orlin and Tarjan, 1990), with digits of `DIGIT_BITS`
//! bits as a hierarchical timing wheel has, and only down to windows of 2^WINDOW_NS_BITS ns:
//! the events in the window of the last event popped sit in a 4-ary heap; every later one
//! sits in the bucket of the digit where its time first differs from that last time (and of
//! its value there), and moves to a lower digit or into the heap only when the heap runs
//! dry. Thousands of far-off timers (RTOs of finished flows) then cost an O(1) push and a
//! few moves instead of deepening every sift of the heap, while events close together are
//! ordered by the heap. The order is the total order of (time, sequence), exactly a plain
//! binary heap's.

use smallpipe_core::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A link finished serializing the packet it was sending.
    TxDone { link: u32 },
    /// The packet at the head of a link's propagation pipe arrives at the far end.
    Arrive { link: u32 },
    /// An endpoint's earliest timer; ignored unless `gen` is still current.
    Timer { endpoint: u32, gen: u32 },
    /// An interactive application writes a burst on this (sender) endpoint.
    App { endpoint: u32 },
    /// A workload unit acts: starts, ends a think time, or sees a Poisson arrival.
    Unit { unit: u32 },
    /// The `[trace]` time series take a sample.
    TraceSample,
}

/// Windows of 2^16 ns (65.5 µs): the heap holds the events of the current window only.
/// Measured (instructions, callgrind; docs/performance.md): against 2^20 ns, the Figure 5.2
/// scenario (thousands of events per millisecond) runs 11% fewer, and the 2 Mbit/s TAQ
/// dumbbell (an event every 150 µs) 3% more; 2^14 and 2^18 were each worse in one of them.
const WINDOW_NS_BITS: u32 = 16;
const WINDOW_MASK: u64 = (1 << WINDOW_NS_BITS) - 1;
/// In the heap an event's key is its time within the window and its sequence number in one
/// `u64` (the window's higher time bits are those of `last_ns`, common to all): one compare
/// and 24-byte entries instead of a `u128` key. Sequence numbers must stay below 2^47
/// (1.4·10^14 events, some years of simulation at today's pace).
const SEQ_BITS: u32 = 64 - WINDOW_NS_BITS;
/// Set in the sequence number of an event pushed with `push_after_ties`: above every
/// sequence number `push` gives (those stay below 2^47).
const AFTER_TIES: u64 = 1 << (SEQ_BITS - 1);
/// Time bits above the window are split in digits of `DIGIT_BITS`, each level with a
/// bucket per digit value (a hierarchical timing wheel): an event moves down at most once
/// per level, `LEVELS` times in all, where one bucket per bit moved it once per bit.
const DIGIT_BITS: u32 = 6;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = (64 - WINDOW_NS_BITS).div_ceil(DIGIT_BITS) as usize;

/// An event of the current window and its key, `time & WINDOW_MASK` above the sequence.
#[derive(Debug, Clone, Copy)]
struct Near(u64, Event);

/// An event beyond the current window.
#[derive(Debug, Clone, Copy)]
struct Later {
    at_ns: u64,
    seq: u64,
    event: Event,
}

impl Later {
    /// The event as the heap holds it, once its window is the current one.
    #[inline(always)]
    fn near(self) -> Near {
        Near((self.at_ns & WINDOW_MASK) << SEQ_BITS | self.seq, self.event)
    }
}

/// Children per node of the near heap. Four halve the depth of a binary heap and a node's
/// children share a cache line; a pop moves fewer entries.
const ARITY: usize = 4;

/// A min-heap of the window's events by key, `ARITY` children per node.
#[derive(Debug, Default)]
struct NearHeap(Vec<Near>);

impl NearHeap {
    fn push(&mut self, near: Near) {
        let v = &mut self.0;
        let mut i = v.len();
        v.push(near);
        // Sift the hole up: parents larger than the new key move down into it.
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if v[parent].0 < near.0 {
                break;
            }
            v[i] = v[parent];
            i = parent;
        }
        v[i] = near;
    }

    fn pop(&mut self) -> Option<Near> {
        let v = &mut self.0;
        let last = v.pop()?;
        let Some(&top) = v.first() else { return Some(last) };
        // Sift the hole at the root down: the smallest child moves up while it is smaller
        // than the last entry, which then fills the hole.
        let n = v.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let mut m = first;
            for c in first + 1..(first + ARITY).min(n) {
                if v[c].0 < v[m].0 {
                    m = c;
                }
            }
            if v[m].0 > last.0 {
                break;
            }
            v[i] = v[m];
            i = m;
        }
        v[i] = last;
        Some(top)
    }

    fn peek(&self) -> Option<&Near> {
        self.0.first()
    }

    /// The second smallest entry: the smallest of the root's children.
    fn second(&self) -> Option<&Near> {
        self.0.get(1..(1 + ARITY).min(self.0.len()))?.iter().min_by_key(|n| n.0)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Debug)]
pub struct EventQueue {
    /// The events in the window of `last_ns`: all earlier than any in `buckets`.
    near: NearHeap,
    /// `buckets[level * DIGITS + d]`: events whose time's highest bit differing from
    /// `last_ns` lies in digit `level` (bits `WINDOW_NS_BITS + DIGIT_BITS * level` and up)
    /// and whose own digit there is `d`.
    buckets: Vec<Vec<Later>>,
    /// Bit `d` of `digits_nonempty[level]` set iff that bucket is not empty.
    digits_nonempty: [u64; LEVELS],
    /// Bit `level` set iff `digits_nonempty[level]` is not zero.
    levels_nonempty: u32,
    /// The time of the event last popped (or the earliest found when the heap was refilled).
    last_ns: u64,
    next_seq: u64,
    popped: u64,
    /// Times the heap was refilled from a bucket (a new window began).
    refills: u64,
    /// An empty bucket, swapped with the one being refilled from.
    spare: Vec<Later>,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { near: NearHeap::default(), buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
                     digits_nonempty: [0; LEVELS], levels_nonempty: 0, last_ns: 0, next_seq: 0, popped: 0, refills: 0, spare: Vec::new() }
    }
}

impl EventQueue {
    /// `at` must not precede the last event popped (causality). Not inlined into its many
    /// callers; `file` is inlined here and in the refill loop instead (one call per push).
    #[inline(never)]
    pub fn push(&mut self, at: Instant, event: Event) {
        self.push_with_flags(at, event, 0);
    }

    /// As `push`, but the event pops after every event of its time pushed with `push`, even
    /// a later one (among themselves these keep insertion order): for an event scheduled
    /// long before the moment the event-by-event model schedules it (a chained hop's
    /// arrival, `crate::link`), which there comes after the events of its time scheduled
    /// in between (an endpoint's timers).
    pub fn push_after_ties(&mut self, at: Instant, event: Event) {
        self.push_with_flags(at, event, AFTER_TIES);
    }

    #[inline(always)]
    fn push_with_flags(&mut self, at: Instant, event: Event, flags: u64) {
        let at_ns = at.as_nanos();
        assert!(at_ns >= self.last_ns, "event at {at:?} scheduled before the event being handled at {:?}",
                Instant(self.last_ns));
        assert!(self.next_seq < AFTER_TIES, "more than 2^{} events", SEQ_BITS - 1);
        self.file(Later { at_ns, seq: self.next_seq | flags, event });
        self.next_seq += 1;
    }

    /// The smallest (time, sequence).
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, Event)> {
        self.refill();
        let Near(key, event) = self.near.pop()?;
        self.last_ns = self.time_of(key);
        self.popped += 1;
        Some((Instant(self.last_ns), event))
    }

    /// The time of the next event (may refill the heap, hence `&mut`; the order stays).
    #[inline]
    pub fn peek_time(&mut self) -> Option<Instant> {
        self.refill();
        self.near.peek().map(|&Near(key, _)| Instant(self.time_of(key)))
    }

    /// The next two events of the current window, as far as the heap knows now (without
    /// refilling it; an event pushed later may still come first): hints for prefetching.
    #[inline]
    pub fn upcoming(&self) -> (Option<Event>, Option<Event>) {
        (self.near.peek().map(|n| n.1), self.near.second().map(|n| n.1))
    }

    /// Times a new window began (the heap was refilled): `window` then holds new events.
    pub fn refills(&self) -> u64 {
        self.refills
    }

    /// The events of the current window still to pop, in no particular order.
    pub fn window(&self) -> impl Iterator<Item = Event> + '_ {
        self.near.0.iter().map(|n| n.1)
    }

    /// Events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// The time of a key of the heap: the window's bits are `last_ns`'s.
    fn time_of(&self, key: u64) -> u64 {
        self.last_ns & !WINDOW_MASK | key >> SEQ_BITS
    }

    #[inline(always)]
    fn file(&mut self, later: Later) {
        let differing = later.at_ns ^ self.last_ns;
        if differing >> WINDOW_NS_BITS == 0 {
            self.near.push(later.near());
            return;
        }
        let level = (63 - differing.leading_zeros() - WINDOW_NS_BITS) / DIGIT_BITS;
        let digit = (later.at_ns >> (WINDOW_NS_BITS + DIGIT_BITS * level)) as usize & (DIGITS - 1);
        self.buckets[level as usize * DIGITS + digit].push(later);
        self.digits_nonempty[level as usize] |= 1 << digit;
        self.levels_nonempty |= 1 << level;
    }

    #[inline]
    fn refill(&mut self) {
        if self.near.is_empty() && self.levels_nonempty != 0 {
            self.refill_from_buckets();
        }
    }

    /// With the heap empty, the lowest non-empty bucket (lowest level, then lowest digit)
    /// holds the earliest events: they move into the heap (same window) or to lower levels.
    /// Every other bucket stays right for the new `last_ns`, which agrees with the old one
    /// above this digit.
    #[inline(never)]
    fn refill_from_buckets(&mut self) {
        let level = self.levels_nonempty.trailing_zeros() as usize;
        let digit = self.digits_nonempty[level].trailing_zeros() as usize;
        self.digits_nonempty[level] &= !(1 << digit);
        if self.digits_nonempty[level] == 0 {
            self.levels_nonempty &= !(1 << level);
        }
        self.refills += 1;
        if level == 0 {
            // A bucket of the lowest level is one window: its events all go into the heap,
            // and its start is as good a `last_ns` as its earliest time (only the bits
            // above the window are read until the next pop sets it).
            let bucket = &mut self.buckets[digit];
            self.last_ns = bucket[0].at_ns & !WINDOW_MASK;
            for later in bucket.iter() {
                self.near.push(later.near());
            }
            bucket.clear();
            return;
        }
        // The bucket is swapped with `spare` (both allocations are kept) and its events are
        // re-filed from there: none of them goes back into this bucket.
        std::mem::swap(&mut self.spare, &mut self.buckets[level * DIGITS + digit]);
        // The earliest time becomes `last_ns`: the events of its window go into the heap.
        self.last_ns = self.spare.iter().map(|l| l.at_ns).min().expect("non-empty bucket");
        for i in 0..self.spare.len() {
            let later = self.spare[i];
            self.file(later);
        }
        self.spare.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Instant(5), Event::App { endpoint: 2 });
        q.push(Instant(3), Event::App { endpoint: 9 });
        q.push(Instant(5), Event::App { endpoint: 1 });
        q.push(Instant(5), Event::TxDone { link: 0 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![
            (Instant(3), Event::App { endpoint: 9 }),
            (Instant(5), Event::App { endpoint: 2 }),
            (Instant(5), Event::App { endpoint: 1 }),
            (Instant(5), Event::TxDone { link: 0 }),
        ]);
        assert_eq!(q.events_processed(), 4);
    }

    /// An event pushed after the ties pops after every plain one of its time, also those
    /// pushed later and those pushed while it is being handled; among themselves such
    /// events keep insertion order.
    #[test]
    fn after_ties_pops_after_the_plain_events_of_its_time() {
        let mut q = EventQueue::default();
        q.push_after_ties(Instant(5), Event::Unit { unit: 0 });
        q.push_after_ties(Instant(5), Event::Unit { unit: 1 });
        q.push(Instant(5), Event::Unit { unit: 2 });
        q.push(Instant(6), Event::Unit { unit: 3 });
        q.push(Instant(5), Event::Unit { unit: 4 });
        let mut order = Vec::new();
        while let Some((t, Event::Unit { unit })) = q.pop() {
            order.push((t.as_nanos(), unit));
            if unit == 0 {
                q.push(Instant(5), Event::Unit { unit: 5 });
            }
        }
        assert_eq!(order, [(5, 2), (5, 4), (5, 0), (5, 5), (5, 1), (6, 3)]);
    }

    #[test]
    fn first_event_at_time_zero_and_far_future() {
        let mut q = EventQueue::default();
        q.push(Instant(0), Event::Unit { unit: 0 });
        q.push(Instant(u64::MAX), Event::Unit { unit: 1 });
        q.push(Instant(0), Event::Unit { unit: 2 });
        assert_eq!(q.peek_time(), Some(Instant(0)));
        assert_eq!(q.pop(), Some((Instant(0), Event::Unit { unit: 0 })));
        assert_eq!(q.pop(), Some((Instant(0), Event::Unit { unit: 2 })));
        q.push(Instant(0), Event::Unit { unit: 3 });
        assert_eq!(q.pop(), Some((Instant(0), Event::Unit { unit: 3 })));
        assert_eq!(q.pop(), Some((Instant(u64::MAX), Event::Unit { unit: 1 })));
        assert_eq!(q.pop(), None);
        assert_eq!(q.peek_time(), None);
    }

    #[test]
    #[should_panic(expected = "scheduled before the event being handled")]
    fn scheduling_into_the_past_is_refused() {
        let mut q = EventQueue::default();
        q.push(Instant(10), Event::Unit { unit: 0 });
        q.pop();
        q.push(Instant(9), Event::Unit { unit: 1 });
    }

    /// One step of a simulation: pop the next event, or push one `delay` after the time
    /// of the last event popped (a simulation cannot schedule into the past).
    #[derive(Debug, Clone)]
    enum Op {
        Pop,
        Push { delay: u64, after_ties: bool },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Pop),
            // Many exact ties (delay 0 and few distinct small delays) and some far-off timers.
            2 => any::<bool>().prop_map(|after_ties| Op::Push { delay: 0, after_ties }),
            4 => (0u64..4, any::<bool>()).prop_map(|(delay, after_ties)| Op::Push { delay, after_ties }),
            2 => (0u64..1 << 20).prop_map(|delay| Op::Push { delay, after_ties: false }),
            1 => (0u64..1 << 40).prop_map(|delay| Op::Push { delay, after_ties: false }),
        ]
    }

    /// Pops both queues once and compares; the simulated time moves to the event popped.
    /// The prefetch hints are checked on the way: `upcoming` names the next two events
    /// whenever the heap holds them, and after a refill `window` holds exactly the earliest
    /// events still queued.
    fn pop_both(q: &mut EventQueue, reference: &mut BinaryHeap<Reverse<(u64, bool, u64)>>, now: &mut u64)
                -> Result<(), TestCaseError> {
        let unit = |&Reverse((_, _, s)): &Reverse<(u64, bool, u64)>| Event::Unit { unit: s as u32 };
        let (next, after) = q.upcoming();
        let mut ahead = reference.clone();
        let (first, second) = (ahead.pop(), ahead.pop());
        if next.is_some() {
            prop_assert_eq!(next, first.as_ref().map(unit));
        }
        if after.is_some() {
            prop_assert_eq!(after, second.as_ref().map(unit));
        }
        let refills = q.refills();
        let want = reference.pop().map(|Reverse((t, _, s))| (Instant(t), Event::Unit { unit: s as u32 }));
        prop_assert_eq!(q.peek_time(), want.map(|(t, _)| t));
        prop_assert_eq!(q.pop(), want);
        if q.refills() != refills {
            let mut window: Vec<Event> = q.window().collect();
            let mut earliest: Vec<Event> = reference.clone().into_sorted_vec().iter().rev().take(window.len())
                .map(unit).collect();
            let id = |e: &Event| match e { Event::Unit { unit } => *unit, _ => u32::MAX };
            window.sort_by_key(id);
            earliest.sort_by_key(id);
            prop_assert_eq!(window, earliest);
        }
        if let Some((t, _)) = want {
            *now = t.as_nanos();
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The reference is the queue this one replaced: a binary heap of (time, sequence),
        /// with `push_after_ties` between the two: (time, after ties, sequence).
        #[test]
        fn pops_exactly_as_a_binary_heap_of_time_and_sequence(
            start in 0u64..1 << 50, ops in prop::collection::vec(op(), 0..600)
        ) {
            let mut q = EventQueue::default();
            let mut reference = BinaryHeap::new();
            let (mut now, mut seq) = (start, 0u64);
            for op in ops {
                match op {
                    Op::Pop => pop_both(&mut q, &mut reference, &mut now)?,
                    Op::Push { delay, after_ties } => {
                        let event = Event::Unit { unit: seq as u32 };
                        if after_ties {
                            q.push_after_ties(Instant(now + delay), event);
                        } else {
                            q.push(Instant(now + delay), event);
                        }
                        reference.push(Reverse((now + delay, after_ties, seq)));
                        seq += 1;
                    }
                }
            }
            while !reference.is_empty() {
                pop_both(&mut q, &mut reference, &mut now)?;
            }
            prop_assert_eq!(q.pop(), None);
        }
    }
}
