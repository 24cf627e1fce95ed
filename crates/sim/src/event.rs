//! The event queue: a binary heap ordered by (time, insertion sequence). Equal times pop in
//! insertion order, which is what makes a seed fix the run bit for bit.
//!
//! Components keep at most one pending event each (a link its head-of-line event, an
//! endpoint its earliest timer), so the heap grows with the number of components, not of
//! packets. Stale timer events are skipped by generation, not removed (O(1) "cancel").

use smallpipe_core::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Instant, u64, Event)>>,
    next_seq: u64,
    popped: u64,
}

impl EventQueue {
    /// O(log n).
    pub fn push(&mut self, at: Instant, event: Event) {
        self.heap.push(Reverse((at, self.next_seq, event)));
        self.next_seq += 1;
    }
    /// O(log n).
    pub fn pop(&mut self) -> Option<(Instant, Event)> {
        let Reverse((t, _, e)) = self.heap.pop()?;
        self.popped += 1;
        Some((t, e))
    }
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }
    /// Events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
