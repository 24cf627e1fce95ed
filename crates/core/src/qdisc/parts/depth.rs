//! The longest queue in O(1): queues are kept in lists by their length in packets, and the
//! greatest non-empty length is tracked (Linux `sch_sfq.c` `dep[]` lists). It works because
//! a length only ever changes by one packet per operation, so the maximum moves by at most
//! one too. Every operation is O(1) time; memory is three `u32` per queue plus one list
//! head per possible length.

use super::NIL;

#[derive(Debug)]
pub(crate) struct DepthIndex {
    depth: Vec<u32>,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// `heads[d]`: first queue of length `d` (index 0 unused: empty queues are unlisted).
    heads: Vec<u32>,
    max: u32,
}

impl DepthIndex {
    pub fn new(queues: usize) -> Self {
        DepthIndex {
            depth: vec![0; queues],
            prev: vec![NIL; queues],
            next: vec![NIL; queues],
            heads: vec![NIL; 2],
            max: 0,
        }
    }

    fn unlink(&mut self, q: u32) {
        let (p, n, d) = (self.prev[q as usize], self.next[q as usize], self.depth[q as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.heads[d as usize] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    fn link(&mut self, q: u32, d: u32) {
        if self.heads.len() <= d as usize {
            self.heads.resize(d as usize + 1, NIL);
        }
        let h = self.heads[d as usize];
        self.prev[q as usize] = NIL;
        self.next[q as usize] = h;
        if h != NIL {
            self.prev[h as usize] = q;
        }
        self.heads[d as usize] = q;
    }

    /// Queue `q` grew by one packet.
    pub fn inc(&mut self, q: u32) {
        let d = self.depth[q as usize];
        if d > 0 {
            self.unlink(q);
        }
        self.depth[q as usize] = d + 1;
        self.link(q, d + 1);
        self.max = self.max.max(d + 1);
    }

    /// Queue `q` shrank by one packet.
    pub fn dec(&mut self, q: u32) {
        let d = self.depth[q as usize];
        debug_assert!(d > 0, "dec of an empty queue");
        self.unlink(q);
        self.depth[q as usize] = d - 1;
        if d > 1 {
            self.link(q, d - 1);
        }
        while self.max > 0 && self.heads[self.max as usize] == NIL {
            self.max -= 1;
        }
    }

    /// A queue of the greatest length (the most recently grown one among ties), or `None`
    /// when all are empty.
    pub fn longest(&self) -> Option<u32> {
        (self.max > 0).then(|| self.heads[self.max as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn longest_matches_a_scan_under_random_changes() {
        let mut rng = Rng::new(3, 0);
        let mut idx = DepthIndex::new(16);
        let mut lens = [0u32; 16];
        for _ in 0..20_000 {
            let q = rng.below_inclusive(15) as usize;
            if lens[q] > 0 && rng.chance(0.5) {
                lens[q] -= 1;
                idx.dec(q as u32);
            } else {
                lens[q] += 1;
                idx.inc(q as u32);
            }
            let max = *lens.iter().max().unwrap();
            match idx.longest() {
                None => assert_eq!(max, 0),
                Some(l) => assert_eq!(lens[l as usize], max),
            }
        }
    }
}
