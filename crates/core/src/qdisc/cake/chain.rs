//! CAKE's flow chains: every tin keeps three lists of flow queues — new (sparse), old
//! (bulk) and decaying (empty, AQM state not yet at rest) — and a flow moves between them
//! in O(1) (Linux `list_move_tail` on `flowchain`). Intrusive doubly linked lists over
//! queue indices; a queue is on at most one list.

use super::super::parts::NIL;

/// Which of a tin's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chain {
    New = 0,
    Old = 1,
    Decaying = 2,
}

#[derive(Debug)]
pub(super) struct FlowChains {
    prev: Vec<u32>,
    next: Vec<u32>,
    /// The list each queue is on (`NIL`: none), as `tin * 3 + chain`.
    on: Vec<u32>,
    /// Head and tail of each list.
    ends: Vec<(u32, u32)>,
}

impl FlowChains {
    pub fn new(queues: usize, tins: usize) -> Self {
        FlowChains { prev: vec![NIL; queues], next: vec![NIL; queues], on: vec![NIL; queues], ends: vec![(NIL, NIL); tins * 3] }
    }

    fn list(tin: usize, chain: Chain) -> usize {
        tin * 3 + chain as usize
    }

    pub fn first(&self, tin: usize, chain: Chain) -> Option<u32> {
        let head = self.ends[Self::list(tin, chain)].0;
        (head != NIL).then_some(head)
    }

    /// Take `f` off its list, if it is on one.
    pub fn remove(&mut self, f: u32) {
        let l = self.on[f as usize];
        if l == NIL {
            return;
        }
        let (p, n) = (self.prev[f as usize], self.next[f as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.ends[l as usize].0 = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.ends[l as usize].1 = p;
        }
        self.on[f as usize] = NIL;
    }

    /// Move `f` to the tail of `tin`'s `chain` (from wherever it was).
    pub fn move_tail(&mut self, f: u32, tin: usize, chain: Chain) {
        self.remove(f);
        let l = Self::list(tin, chain);
        let tail = self.ends[l].1;
        self.prev[f as usize] = tail;
        self.next[f as usize] = NIL;
        if tail != NIL {
            self.next[tail as usize] = f;
        } else {
            self.ends[l].0 = f;
        }
        self.ends[l].1 = f;
        self.on[f as usize] = l as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_keep_every_list_in_order() {
        let mut c = FlowChains::new(6, 2);
        for f in 0..4 {
            c.move_tail(f, 0, Chain::New);
        }
        c.move_tail(5, 1, Chain::Old);
        c.move_tail(1, 0, Chain::Old);
        c.move_tail(0, 0, Chain::Old);
        assert_eq!(c.first(0, Chain::New), Some(2));
        c.remove(2);
        assert_eq!(c.first(0, Chain::New), Some(3));
        c.remove(3);
        assert_eq!(c.first(0, Chain::New), None);
        assert_eq!(c.first(0, Chain::Old), Some(1));
        c.remove(1);
        assert_eq!(c.first(0, Chain::Old), Some(0));
        assert_eq!(c.first(1, Chain::Old), Some(5));
        c.remove(4); // on no list: nothing happens
        assert_eq!(c.first(0, Chain::Decaying), None);
    }
}
