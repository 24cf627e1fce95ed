//! The event queue: events pop ordered by (time, insertion sequence). Equal times pop in
//! insertion order, which is what makes a seed fix the run bit for bit.
//!
//! Components keep at most one pending event each (a link its head-of-line event, an
//! endpoint its earliest timer), so the queue grows with the number of components, not of
//! packets. Stale timer events are skipped by generation, not removed (O(1) "cancel").
//!
//! It is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) over the 128-bit key
//! `time << 64 | sequence`. A discrete-event simulation never schedules before the event it
//! is handling, and a newer event has a larger sequence number, so every key pushed is
//! larger than the last key popped: the monotonicity a radix heap needs. Keys are unique,
//! so the order is the total order of (time, sequence), exactly the binary heap's. An entry
//! sits in the bucket of the highest bit where it differs from the last key popped; each
//! redistribution moves it to a lower bucket, so it moves at most 128 times, in practice a
//! few (far-off timers), and pushes and most pops touch one `Vec` end instead of sifting
//! through a heap of thousands.

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

const KEY_BITS: usize = 128;

#[derive(Debug)]
pub struct EventQueue {
    /// The smallest key and its event, once found; it is always `last`.
    top: Option<Event>,
    /// `buckets[b]`: keys whose highest bit differing from `last` is bit `b`.
    buckets: Vec<Vec<(u128, Event)>>,
    /// Bit `b` set iff `buckets[b]` is not empty.
    nonempty: u128,
    /// The key of the event last popped or now on top.
    last: u128,
    next_seq: u64,
    popped: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { top: None, buckets: vec![Vec::new(); KEY_BITS], nonempty: 0, last: 0, next_seq: 0, popped: 0 }
    }
}

impl EventQueue {
    /// O(1). `at` must not precede the last event popped (causality).
    pub fn push(&mut self, at: Instant, event: Event) {
        let key = (at.as_nanos() as u128) << 64 | self.next_seq as u128;
        // Keys are unique, so equality is only the first event, at time 0, in an empty queue.
        assert!(key >= self.last, "event at {at:?} scheduled before the event being handled at {:?}", Instant((self.last >> 64) as u64));
        self.next_seq += 1;
        if key == self.last {
            self.top = Some(event); // the very first event, at time 0
        } else {
            self.file(key, event);
        }
    }

    /// Amortized O(log of the time span): the smallest (time, sequence).
    pub fn pop(&mut self) -> Option<(Instant, Event)> {
        self.settle();
        let e = self.top.take()?;
        self.popped += 1;
        Some((Instant((self.last >> 64) as u64), e))
    }

    /// The time of the next event (finds it, hence `&mut`; the order does not change).
    pub fn peek_time(&mut self) -> Option<Instant> {
        self.settle();
        self.top.map(|_| Instant((self.last >> 64) as u64))
    }

    /// Events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    fn file(&mut self, key: u128, event: Event) {
        let b = KEY_BITS - 1 - (key ^ self.last).leading_zeros() as usize;
        self.buckets[b].push((key, event));
        self.nonempty |= 1 << b;
    }

    /// If nothing is on top, takes the lowest non-empty bucket: its smallest key becomes
    /// `last` and goes on top, the others move to lower buckets (they now share more high
    /// bits with `last`).
    fn settle(&mut self) {
        if self.top.is_some() || self.nonempty == 0 {
            return;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        self.nonempty &= !(1 << b);
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        let (i, _) = bucket.iter().enumerate().min_by_key(|(_, (k, _))| *k).expect("non-empty bucket");
        let (key, event) = bucket.swap_remove(i);
        self.last = key;
        self.top = Some(event);
        for (k, e) in bucket.drain(..) {
            self.file(k, e);
        }
        self.buckets[b] = bucket; // keeps its allocation
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
