//! A bounded exact-match table (5-tuple or host address → dense slot index) with eviction
//! of idle entries, so that a flood of new keys cannot grow per-flow state without limit.
//!
//! Eviction rule: a new key takes a free slot while the table is below capacity, else the
//! slot that has been idle longest (least recently idle first). An entry is idle when its
//! owner says so ([`BoundedTable::set_idle`]: no packets queued and on no scheduling
//! list). When every slot is busy the key is not inserted and the caller gets a slot
//! chosen by hash, shared with that slot's owner (graceful degradation to hashed queueing,
//! as in Linux `sch_fq` when its flow limit is reached, minus the drop). Lookups are
//! amortised O(1) (FxHash map); eviction is O(1) (intrusive idle list).

use super::NIL;
use rustc_hash::FxHashMap;
use std::hash::Hash;

/// Result of a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The key already owned this slot.
    Existing(u32),
    /// The key was given this slot now (fresh or evicted): reset its per-slot state.
    New(u32),
    /// Table full of busy entries: the key shares this (busy) slot and is not remembered.
    Shared(u32),
}

impl Slot {
    pub fn index(self) -> u32 {
        match self {
            Slot::Existing(i) | Slot::New(i) | Slot::Shared(i) => i,
        }
    }
}

#[derive(Debug)]
pub(crate) struct BoundedTable<K> {
    map: FxHashMap<K, u32>,
    keys: Vec<K>,
    idle_prev: Vec<u32>,
    idle_next: Vec<u32>,
    in_idle: Vec<bool>,
    idle_head: u32,
    idle_tail: u32,
    capacity: u32,
    evictions: u64,
}

impl<K: Copy + Eq + Hash> BoundedTable<K> {
    pub fn new(capacity: u32) -> Self {
        BoundedTable {
            map: FxHashMap::default(),
            keys: Vec::new(),
            idle_prev: Vec::new(),
            idle_next: Vec::new(),
            in_idle: Vec::new(),
            idle_head: NIL,
            idle_tail: NIL,
            capacity,
            evictions: 0,
        }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }
    /// Entries held (never more than the capacity).
    pub fn len(&self) -> usize {
        self.keys.len()
    }
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// The slot `key` owns, without inserting it.
    pub fn get(&self, key: &K) -> Option<u32> {
        self.map.get(key).copied()
    }

    /// Find or insert `key`; `hash` picks the shared slot when the table is full and busy.
    pub fn lookup(&mut self, key: K, hash: u64) -> Slot {
        if let Some(&i) = self.map.get(&key) {
            return Slot::Existing(i);
        }
        if (self.keys.len() as u32) < self.capacity {
            let i = self.keys.len() as u32;
            self.keys.push(key);
            self.idle_prev.push(NIL);
            self.idle_next.push(NIL);
            self.in_idle.push(false);
            self.map.insert(key, i);
            return Slot::New(i);
        }
        if self.idle_head != NIL {
            let i = self.idle_head;
            self.unlink(i);
            self.map.remove(&self.keys[i as usize]);
            self.keys[i as usize] = key;
            self.map.insert(key, i);
            self.evictions += 1;
            return Slot::New(i);
        }
        Slot::Shared(super::hash::bucket(hash, self.capacity))
    }

    /// The slot has packets or is on a scheduling list: not evictable.
    pub fn set_busy(&mut self, i: u32) {
        if self.in_idle[i as usize] {
            self.unlink(i);
        }
    }

    /// The slot has no packets and is on no list: evictable, after older idle slots.
    pub fn set_idle(&mut self, i: u32) {
        if self.in_idle[i as usize] {
            return;
        }
        self.in_idle[i as usize] = true;
        self.idle_prev[i as usize] = self.idle_tail;
        self.idle_next[i as usize] = NIL;
        if self.idle_tail != NIL {
            self.idle_next[self.idle_tail as usize] = i;
        } else {
            self.idle_head = i;
        }
        self.idle_tail = i;
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.idle_prev[i as usize], self.idle_next[i as usize]);
        if p != NIL {
            self.idle_next[p as usize] = n;
        } else {
            self.idle_head = n;
        }
        if n != NIL {
            self.idle_prev[n as usize] = p;
        } else {
            self.idle_tail = p;
        }
        self.in_idle[i as usize] = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_longest_idle_and_shares_when_all_busy() {
        let mut t = BoundedTable::<u32>::new(3);
        assert_eq!(t.lookup(10, 0), Slot::New(0));
        assert_eq!(t.lookup(11, 0), Slot::New(1));
        assert_eq!(t.lookup(12, 0), Slot::New(2));
        assert_eq!(t.lookup(11, 0), Slot::Existing(1));
        // All busy: a fourth key shares a slot and is not remembered.
        assert!(matches!(t.lookup(13, 0), Slot::Shared(_)));
        assert_eq!(t.len(), 3);
        t.set_idle(2);
        t.set_idle(0);
        // Slot 2 has been idle longest: it goes first.
        assert_eq!(t.lookup(13, 0), Slot::New(2));
        assert_eq!(t.lookup(14, 0), Slot::New(0));
        assert!(matches!(t.lookup(12, 0), Slot::Shared(_)));
        assert_eq!(t.evictions(), 2);
        // A busy-again slot is not evicted.
        t.set_idle(1);
        t.set_busy(1);
        assert!(matches!(t.lookup(15, 0), Slot::Shared(_)));
    }
}
