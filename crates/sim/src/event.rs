//! The event queue: events pop ordered by (time, insertion sequence). Equal times pop in
//! insertion order, which is what makes a seed fix the run bit for bit.
//!
//! Components keep at most one pending event each (a link its head-of-line event, an
//! endpoint its earliest timer), so the queue grows with the number of components, not of
//! packets. Stale timer events are skipped by generation, not removed (O(1) "cancel").
//!
//! Every key is `time << 64 | sequence`, unique. A discrete-event simulation never
//! schedules before the event it is handling and a newer event has a larger sequence
//! number, so every key pushed is larger than the last one popped: keys are monotone. The
//! queue uses that as a radix heap does (Ahuja, Mehlhorn, Orlin and Tarjan, 1990), but only
//! down to windows of 2^WINDOW_NS_BITS ns: the events in the window of the last key popped
//! sit in a binary heap; every later one sits in the bucket of the highest bit where its key
//! differs from that last key, and moves to a lower bucket or into the heap only when the
//! heap runs dry. Thousands of far-off timers (RTOs of finished flows) then cost an O(1)
//! push and a few moves instead of deepening every sift of the heap, while events close
//! together are ordered by the heap as before. The order is the total order of
//! (time, sequence), exactly the plain binary heap's.

use smallpipe_core::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

/// Windows of 2^20 ns (1.05 ms): the heap holds the events of the current window only.
/// Other widths were not measured.
const WINDOW_NS_BITS: u32 = 20;
const WINDOW_KEY_BITS: u32 = 64 + WINDOW_NS_BITS;
const BUCKETS: usize = (128 - WINDOW_KEY_BITS) as usize;

/// An event and its key; ordered by the key alone (keys are unique).
#[derive(Debug)]
struct Keyed(u128, Event);

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

#[derive(Debug)]
pub struct EventQueue {
    /// The events in the window of `last`: all smaller than any in `buckets`.
    near: BinaryHeap<Reverse<Keyed>>,
    /// `buckets[b]`: keys whose highest bit differing from `last` is bit `WINDOW_KEY_BITS + b`.
    buckets: Vec<Vec<Keyed>>,
    /// Bit `b` set iff `buckets[b]` is not empty.
    nonempty: u64,
    /// The key of the event last popped (or the smallest found when the heap was refilled).
    last: u128,
    next_seq: u64,
    popped: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { near: BinaryHeap::new(), buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), nonempty: 0,
                     last: 0, next_seq: 0, popped: 0 }
    }
}

impl EventQueue {
    /// `at` must not precede the last event popped (causality).
    pub fn push(&mut self, at: Instant, event: Event) {
        let key = (at.as_nanos() as u128) << 64 | self.next_seq as u128;
        assert!(key >= self.last, "event at {at:?} scheduled before the event being handled at {:?}",
                Instant((self.last >> 64) as u64));
        self.next_seq += 1;
        self.file(Keyed(key, event));
    }

    /// The smallest (time, sequence).
    pub fn pop(&mut self) -> Option<(Instant, Event)> {
        self.refill();
        let Reverse(Keyed(key, event)) = self.near.pop()?;
        self.last = key;
        self.popped += 1;
        Some((Instant((key >> 64) as u64), event))
    }

    /// The time of the next event (may refill the heap, hence `&mut`; the order stays).
    pub fn peek_time(&mut self) -> Option<Instant> {
        self.refill();
        self.near.peek().map(|Reverse(Keyed(key, _))| Instant((key >> 64) as u64))
    }

    /// Events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    fn file(&mut self, keyed: Keyed) {
        let differing = keyed.0 ^ self.last;
        if differing >> WINDOW_KEY_BITS == 0 {
            self.near.push(Reverse(keyed));
        } else {
            let b = (127 - differing.leading_zeros() - WINDOW_KEY_BITS) as usize;
            self.buckets[b].push(keyed);
            self.nonempty |= 1 << b;
        }
    }

    /// With the heap empty, the lowest non-empty bucket's smallest key becomes `last`, and
    /// the bucket's events move into the heap (same window) or to lower buckets.
    fn refill(&mut self) {
        if !self.near.is_empty() || self.nonempty == 0 {
            return;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        self.nonempty &= !(1 << b);
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        self.last = bucket.iter().map(|k| k.0).min().expect("non-empty bucket");
        for keyed in bucket.drain(..) {
            self.file(keyed);
        }
        self.buckets[b] = bucket; // keeps its allocation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        Push { delay: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Pop),
            // Many exact ties (delay 0 and few distinct small delays) and some far-off timers.
            2 => Just(Op::Push { delay: 0 }),
            4 => (0u64..4).prop_map(|delay| Op::Push { delay }),
            2 => (0u64..1 << 20).prop_map(|delay| Op::Push { delay }),
            1 => (0u64..1 << 40).prop_map(|delay| Op::Push { delay }),
        ]
    }

    /// Pops both queues once and compares; the simulated time moves to the event popped.
    fn pop_both(q: &mut EventQueue, reference: &mut BinaryHeap<Reverse<(u64, u64)>>, now: &mut u64)
                -> Result<(), TestCaseError> {
        let want = reference.pop().map(|Reverse((t, s))| (Instant(t), Event::Unit { unit: s as u32 }));
        prop_assert_eq!(q.peek_time(), want.map(|(t, _)| t));
        prop_assert_eq!(q.pop(), want);
        if let Some((t, _)) = want {
            *now = t.as_nanos();
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The reference is the queue this one replaced: a binary heap of (time, sequence).
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
                    Op::Push { delay } => {
                        q.push(Instant(now + delay), Event::Unit { unit: seq as u32 });
                        reference.push(Reverse((now + delay, seq)));
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
