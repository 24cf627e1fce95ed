//! The wire-visible packet view: exactly what a box on the wire can read from an IPv4/TCP
//! header, plus the time the packet reached the queue. No simulator internals.

use crate::time::Instant;
use std::num::NonZeroU32;

/// The 5-tuple of a packet (IPv4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct FlowKey {
    pub src_ip: u32,
    pub dst_ip: u32,
    pub src_port: u16,
    pub dst_port: u16,
    /// IP protocol number (6 = TCP).
    pub proto: u8,
}

impl FlowKey {
    /// The same connection seen from the other direction.
    pub fn reversed(self) -> FlowKey {
        FlowKey {
            src_ip: self.dst_ip,
            dst_ip: self.src_ip,
            src_port: self.dst_port,
            dst_port: self.src_port,
            proto: self.proto,
        }
    }
}

/// TCP header flags, as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    /// ECN-Echo and Congestion Window Reduced (RFC 3168).
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
    pub fn syn(self) -> bool {
        self.has(Self::SYN)
    }
    pub fn fin(self) -> bool {
        self.has(Self::FIN)
    }
    pub fn ack(self) -> bool {
        self.has(Self::ACK)
    }
}

/// One SACK block (RFC 2018): `[start, end)` in sequence space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct SackBlock {
    pub start: u32,
    pub end: u32,
}

/// The most SACK blocks a segment carries alongside the timestamps option (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// ECN codepoint of the IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect,
    Ce,
}

/// What a queue discipline may read of a packet. `Copy`, no heap: queues hold these by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Packet {
    pub flow: FlowKey,
    /// Total IP datagram length on the wire, headers included.
    pub ip_len_bytes: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub ecn: Ecn,
    /// DiffServ codepoint of the IP header (RFC 2474, 6 bits; 0 = default forwarding), set
    /// by an edge router's marker and read by class-based disciplines (RIO, class isolation).
    pub dscp: u8,
    /// TCP payload length (SYN and FIN occupy sequence space but carry no payload).
    pub payload_len: u16,
    pub sack_count: u8,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// The TCP header's window field as sent: the receive window the sender of this segment
    /// advertises, in bytes (no window scaling is modelled, so it is never scaled). Zero on a
    /// reset and on non-TCP packets.
    pub window: u16,
    /// Timestamps option (RFC 7323); zero when absent.
    pub ts_val: u32,
    pub ts_ecr: u32,
    /// RCP's rate field (Dukkipati et al.), kbit/s: a sender writes the rate it asks for,
    /// each RCP router lowers it to its own rate, the receiver echoes it on its ACKs. `None`:
    /// no RCP header (every TCP packet). Kilobits in 32 bits (up to 4 Tbit/s) keep the field
    /// at 4 bytes.
    pub rcp_rate_kbps: Option<NonZeroU32>,
    /// When the packet reached the queue that holds it (set by [`crate::Accounted`]).
    pub arrival: Instant,
    /// Opaque to disciplines, which must never read it: the runtime's handle on the bytes
    /// behind this view (the middlebox's frame-slab slot), carried through the queue so a
    /// dequeued view can be mapped back to its frame. The simulator puts the sending
    /// endpoint there, which spares a hash lookup on delivery (`addressee` in `smallpipe-sim`).
    pub runtime_handle: u32,
}

impl Packet {
    pub fn len_bytes(&self) -> u64 {
        self.ip_len_bytes as u64
    }
    /// Sequence space the segment occupies: payload plus one for SYN and one for FIN.
    pub fn seq_len(&self) -> u32 {
        self.payload_len as u32 + self.flags.syn() as u32 + self.flags.fin() as u32
    }
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_count as usize]
    }
}
