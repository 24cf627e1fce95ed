//! Frame memory: a fixed number of fixed-size slots, allocated once. A frame waiting in a
//! queue or in the pipe holds one slot; its packet view carries the slot number
//! (`Packet::runtime_handle`). When every slot is taken the next frame is dropped and
//! counted, so no traffic pattern can grow the box's memory: it is slots × slot bytes
//! (the frame size the interfaces' MTUs ask for, `io::frame_bytes_for_mtus`).

pub struct Slab {
    /// Bytes of one slot: the longest frame it holds.
    slot_bytes: usize,
    data: Vec<u8>,
    lens: Vec<u16>,
    free: Vec<u32>,
}

impl Slab {
    pub fn with_capacity(slots: u32, slot_bytes: usize) -> Self {
        Slab {
            slot_bytes,
            data: vec![0; slots as usize * slot_bytes],
            lens: vec![0; slots as usize],
            // Popped from the end: slot 0 first.
            free: (0..slots).rev().collect(),
        }
    }

    /// Copy `frame` into a free slot; `None` when the slab is full.
    pub fn insert(&mut self, frame: &[u8]) -> Option<u32> {
        debug_assert!(frame.len() <= self.slot_bytes && frame.len() <= usize::from(u16::MAX));
        let slot = self.free.pop()?;
        let at = slot as usize * self.slot_bytes;
        self.data[at..at + frame.len()].copy_from_slice(frame);
        self.lens[slot as usize] = frame.len() as u16;
        Some(slot)
    }

    pub fn get(&self, slot: u32) -> &[u8] {
        let at = slot as usize * self.slot_bytes;
        &self.data[at..at + self.lens[slot as usize] as usize]
    }

    pub fn get_mut(&mut self, slot: u32) -> &mut [u8] {
        let at = slot as usize * self.slot_bytes;
        &mut self.data[at..at + self.lens[slot as usize] as usize]
    }

    pub fn release(&mut self, slot: u32) {
        debug_assert!(!self.free.contains(&slot), "slot {slot} released twice");
        self.free.push(slot);
    }

    /// Bytes of one slot.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Bytes of frame memory: slots × slot bytes.
    pub fn memory_bytes(&self) -> usize {
        self.data.len()
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
        let mut s = Slab::with_capacity(2, 1518);
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

    #[test]
    fn a_jumbo_frame_parses_and_keeps_its_bytes_in_a_slot_sized_for_mtu_9000() {
        use crate::io::{fits_mtu, frame_bytes_for_mtus};
        use crate::parse::{parse_frame, Verdict};
        // A 9000-byte IPv4 packet (20 B IP header, 20 B TCP header, 8960 B of payload) in a
        // 9014-byte Ethernet frame.
        let payload: Vec<u8> = (0..8960u32).map(|i| i as u8).collect();
        let mut frame = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([198, 18, 0, 1], [198, 18, 1, 1], 64)
            .tcp(40000, 80, 1, 65535)
            .write(&mut frame, &payload)
            .unwrap();
        assert_eq!(frame.len(), 9014);
        let Verdict::Scheduled(p) = parse_frame(&frame) else { panic!("not scheduled") };
        assert_eq!((p.ip_len_bytes, p.payload_len), (9000, 8960));
        assert!(fits_mtu(&frame, 9000) && !fits_mtu(&frame, 1500));
        let slot_bytes = frame_bytes_for_mtus([9000, 1500]);
        let mut s = Slab::with_capacity(4, slot_bytes);
        assert_eq!(s.memory_bytes(), 4 * 9018);
        let a = s.insert(&frame).unwrap();
        let b = s.insert(&frame[..100]).unwrap();
        // The neighbouring slot does not overlap a full one.
        assert_eq!((s.get(a), s.get(b)), (&frame[..], &frame[..100]));
    }
}
