//! One slab of packets shared by all the queues of a discipline, each queue a doubly
//! linked list of slab indices. Memory is bounded by the discipline's packet limit (plus
//! the one arrival that may be pushed out), whatever the number of flows: a per-flow
//! `VecDeque` would instead keep, per flow, the capacity of its longest-ever backlog.
//! Push back, pop front and pop back are O(1); freed slots are reused (no allocation per
//! packet once the slab has grown to the limit).

use super::NIL;
use crate::packet::Packet;

#[derive(Debug, Clone, Copy)]
struct Node {
    pkt: Packet,
    prev: u32,
    next: u32,
}

/// A FIFO of packets living in an [`Arena`]; also keeps its length and bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PktList {
    head: u32,
    tail: u32,
    pub len: u32,
    pub bytes: u64,
}

impl Default for PktList {
    fn default() -> Self {
        PktList { head: NIL, tail: NIL, len: 0, bytes: 0 }
    }
}

impl PktList {
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[derive(Debug, Default)]
pub(crate) struct Arena {
    nodes: Vec<Node>,
    free: u32,
}

impl Arena {
    pub fn new() -> Self {
        Arena { nodes: Vec::new(), free: NIL }
    }

    pub fn push_back(&mut self, list: &mut PktList, pkt: Packet) {
        let node = Node { pkt, prev: list.tail, next: NIL };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        if list.tail != NIL {
            self.nodes[list.tail as usize].next = i;
        } else {
            list.head = i;
        }
        list.tail = i;
        list.len += 1;
        list.bytes += pkt.len_bytes();
    }

    #[cfg(test)]
    pub fn front<'a>(&'a self, list: &PktList) -> Option<&'a Packet> {
        (list.head != NIL).then(|| &self.nodes[list.head as usize].pkt)
    }

    pub fn pop_front(&mut self, list: &mut PktList) -> Option<Packet> {
        let i = list.head;
        if i == NIL {
            return None;
        }
        let Node { pkt, next, .. } = self.nodes[i as usize];
        list.head = next;
        if next != NIL {
            self.nodes[next as usize].prev = NIL;
        } else {
            list.tail = NIL;
        }
        self.release(i, list, &pkt);
        Some(pkt)
    }

    pub fn pop_back(&mut self, list: &mut PktList) -> Option<Packet> {
        let i = list.tail;
        if i == NIL {
            return None;
        }
        let Node { pkt, prev, .. } = self.nodes[i as usize];
        list.tail = prev;
        if prev != NIL {
            self.nodes[prev as usize].next = NIL;
        } else {
            list.head = NIL;
        }
        self.release(i, list, &pkt);
        Some(pkt)
    }

    /// The slot of `list`'s first packet, `NIL` when empty (to walk a list with
    /// [`Arena::next`] and [`Arena::get`]).
    pub fn first(&self, list: &PktList) -> u32 {
        list.head
    }

    /// The slot after `slot` in its list, `NIL` at the end.
    pub fn next(&self, slot: u32) -> u32 {
        self.nodes[slot as usize].next
    }

    pub fn get(&self, slot: u32) -> &Packet {
        &self.nodes[slot as usize].pkt
    }

    /// Unlink the packet in `slot` (which must be in `list`) from anywhere in the list.
    pub fn remove(&mut self, list: &mut PktList, slot: u32) -> Packet {
        let Node { pkt, prev, next } = self.nodes[slot as usize];
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            list.head = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        } else {
            list.tail = prev;
        }
        self.release(slot, list, &pkt);
        pkt
    }

    fn release(&mut self, i: u32, list: &mut PktList, pkt: &Packet) {
        list.len -= 1;
        list.bytes -= pkt.len_bytes();
        self.nodes[i as usize].next = self.free;
        self.free = i;
    }

    /// Slots ever allocated (the memory high-water mark, in packets).
    #[cfg(test)]
    pub fn capacity_pkts(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(seq: u32, len: u16) -> Packet {
        Packet { seq, ip_len_bytes: len, ..Packet::default() }
    }

    #[test]
    fn lists_are_fifo_and_share_slots() {
        let mut a = Arena::new();
        let (mut x, mut y) = (PktList::default(), PktList::default());
        a.push_back(&mut x, p(1, 100));
        a.push_back(&mut y, p(10, 50));
        a.push_back(&mut x, p(2, 200));
        a.push_back(&mut x, p(3, 300));
        assert_eq!((x.len, x.bytes), (3, 600));
        assert_eq!(a.pop_back(&mut x).unwrap().seq, 3);
        assert_eq!(a.pop_front(&mut x).unwrap().seq, 1);
        assert_eq!(a.front(&x).unwrap().seq, 2);
        assert_eq!(a.pop_front(&mut x).unwrap().seq, 2);
        assert!(a.pop_front(&mut x).is_none() && x.is_empty() && x.bytes == 0);
        // Freed slots are reused: at most 4 packets were ever queued at once.
        a.push_back(&mut x, p(4, 1));
        a.push_back(&mut x, p(5, 1));
        assert_eq!(a.capacity_pkts(), 4);
        assert_eq!(a.pop_front(&mut y).unwrap().seq, 10);
    }

    #[test]
    fn remove_unlinks_from_the_middle_and_either_end() {
        let mut a = Arena::new();
        let mut x = PktList::default();
        for seq in 1..=5 {
            a.push_back(&mut x, p(seq, 10));
        }
        let slots = |a: &Arena, x: &PktList| {
            let mut out = vec![];
            let mut s = a.first(x);
            while s != NIL {
                out.push((s, a.get(s).seq));
                s = a.next(s);
            }
            out
        };
        let all = slots(&a, &x);
        assert_eq!(a.remove(&mut x, all[2].0).seq, 3);
        assert_eq!(a.remove(&mut x, all[0].0).seq, 1);
        assert_eq!(a.remove(&mut x, all[4].0).seq, 5);
        assert_eq!(slots(&a, &x).iter().map(|s| s.1).collect::<Vec<_>>(), [2, 4]);
        assert_eq!((x.len, x.bytes), (2, 20));
        // Both ends still work after the unlinks.
        a.push_back(&mut x, p(6, 10));
        assert_eq!(a.pop_back(&mut x).unwrap().seq, 6);
        assert_eq!(a.pop_front(&mut x).unwrap().seq, 2);
        assert_eq!(a.pop_front(&mut x).unwrap().seq, 4);
        assert!(x.is_empty() && a.pop_back(&mut x).is_none());
    }
}
