//! Frame memory: a fixed number of fixed-size slots, allocated once. A frame waiting in a
//! queue or in the pipe holds one slot; its packet view carries the slot number
//! (`Packet::runtime_handle`). When every slot is taken the next frame is dropped and
//! counted, so no traffic pattern can grow the box's memory.

use crate::io::FRAME_CAP;

pub struct Slab {
    data: Vec<u8>,
    lens: Vec<u16>,
    free: Vec<u32>,
}

impl Slab {
    pub fn with_capacity(slots: u32) -> Self {
        Slab {
            data: vec![0; slots as usize * FRAME_CAP],
            lens: vec![0; slots as usize],
            // Popped from the end: slot 0 first.
            free: (0..slots).rev().collect(),
        }
    }

    /// Copy `frame` into a free slot; `None` when the slab is full.
    pub fn insert(&mut self, frame: &[u8]) -> Option<u32> {
        debug_assert!(frame.len() <= FRAME_CAP);
        let slot = self.free.pop()?;
        let at = slot as usize * FRAME_CAP;
        self.data[at..at + frame.len()].copy_from_slice(frame);
        self.lens[slot as usize] = frame.len() as u16;
        Some(slot)
    }

    pub fn get(&self, slot: u32) -> &[u8] {
        let at = slot as usize * FRAME_CAP;
        &self.data[at..at + self.lens[slot as usize] as usize]
    }

    pub fn get_mut(&mut self, slot: u32) -> &mut [u8] {
        let at = slot as usize * FRAME_CAP;
        &mut self.data[at..at + self.lens[slot as usize] as usize]
    }

    pub fn release(&mut self, slot: u32) {
        debug_assert!(!self.free.contains(&slot), "slot {slot} released twice");
        self.free.push(slot);
    }

    pub fn in_use(&self) -> usize {
        self.lens.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_slab_refuses_and_a_released_slot_is_reused() {
        let mut s = Slab::with_capacity(2);
        let a = s.insert(b"first").unwrap();
        let b = s.insert(b"second").unwrap();
        assert_eq!(s.insert(b"third"), None);
        assert_eq!((s.get(a), s.get(b)), (&b"first"[..], &b"second"[..]));
        s.release(a);
        let c = s.insert(b"3rd").unwrap();
        assert_eq!(c, a);
        assert_eq!(s.get(c), b"3rd");
        assert_eq!(s.in_use(), 2);
    }
}
