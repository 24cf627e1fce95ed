//! Ethernet frame → core's [`Packet`] view, and nothing more.
//!
//! The rules for what is not a well-formed TCP/IP frame (also in `docs/middlebox.md`):
//! - not IP (ARP, LLDP, an unknown EtherType): [`Verdict::Unscheduled`], forwarded at once
//!   without the link emulation or the discipline, and counted;
//! - IP that does not parse (truncated header or payload, length fields beyond the frame,
//!   bad version or header length) or whose IPv4 header checksum is wrong: [`Verdict::Drop`]
//!   with a reason, counted; a router would drop them too;
//! - IP fragments, ICMP and other IP protocols: scheduled with ports 0 (the flow is the
//!   host pair and protocol), no sequence numbers; UDP: scheduled with its ports;
//! - IPv6: addresses folded to 32 bits for the discipline's 5-tuple ([`fold_ipv6`]);
//! - the TCP checksum is not checked (the receiving host does that); malformed TCP options
//!   end the option walk, the segment is still scheduled.
//!
//! Nothing here panics on any input: the fuzz target `parse_frame` checks that.

use etherparse::{NetSlice, SlicedPacket, TcpOptionElement, TransportSlice};
use smallpipe_core::packet::Ecn;
use smallpipe_core::{Packet, SackBlock, TcpFlags};

/// What the box does with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// An IP packet for the link emulation and the discipline.
    Scheduled(Packet),
    /// Not IP: forwarded at once, outside the link emulation.
    Unscheduled,
    Drop(DropCause),
}

/// Why a frame was dropped before the discipline saw it. Counted in an array by `as usize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropCause {
    /// Headers that do not parse: truncated, lengths beyond the frame, bad version/IHL.
    Malformed = 0,
    /// IPv4 header checksum does not match.
    BadIpChecksum,
    /// Longer than the box's frame size (the larger interface MTU plus 18 bytes, at most
    /// 9216), or than the outgoing interface's MTU admits (`io::fits_mtu`).
    Oversized,
    /// The frame slab was full.
    SlabFull,
}

impl DropCause {
    pub const COUNT: usize = 4;
    pub const ALL: [DropCause; Self::COUNT] =
        [DropCause::Malformed, DropCause::BadIpChecksum, DropCause::Oversized, DropCause::SlabFull];
    pub fn name(self) -> &'static str {
        match self {
            DropCause::Malformed => "malformed",
            DropCause::BadIpChecksum => "bad_ip_checksum",
            DropCause::Oversized => "oversized",
            DropCause::SlabFull => "slab_full",
        }
    }
}

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

/// IPv6 address → the 32-bit address of core's 5-tuple: the XOR of its four words. Hosts of
/// one /64 that differ only in the interface identifier stay distinct unless their words
/// XOR equal, which a testbed's sequential addresses never do.
pub fn fold_ipv6(addr: [u8; 16]) -> u32 {
    addr.chunks_exact(4).fold(0, |acc, w| acc ^ u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

/// Parse one Ethernet frame.
pub fn parse_frame(frame: &[u8]) -> Verdict {
    let sliced = match SlicedPacket::from_ethernet(frame) {
        Ok(s) => s,
        // An Ethernet header too short to read the EtherType is not IP either way, but it is
        // not a frame at all: drop it.
        Err(_) => return Verdict::Drop(DropCause::Malformed),
    };
    let mut pkt = Packet::default();
    let fragmented;
    match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => {
            let h = ip.header();
            if !ipv4_checksum_ok(h.slice()) {
                return Verdict::Drop(DropCause::BadIpChecksum);
            }
            pkt.flow.src_ip = u32::from_be_bytes(h.source());
            pkt.flow.dst_ip = u32::from_be_bytes(h.destination());
            pkt.flow.proto = h.protocol().0;
            pkt.ip_len_bytes = h.total_len();
            set_tos(&mut pkt, h.slice()[1]);
            fragmented = ip.is_payload_fragmented();
        }
        Some(NetSlice::Ipv6(ip)) => {
            let h = ip.header();
            pkt.flow.src_ip = fold_ipv6(h.source());
            pkt.flow.dst_ip = fold_ipv6(h.destination());
            pkt.flow.proto = ip.payload().ip_number.0;
            // Jumbograms (payload length 0) do not fit a slab slot and never parse this far.
            pkt.ip_len_bytes = h.payload_length().saturating_add(40);
            set_tos(&mut pkt, h.traffic_class());
            fragmented = ip.is_payload_fragmented();
        }
        Some(NetSlice::Arp(_)) | None => return Verdict::Unscheduled,
    }
    if fragmented {
        return Verdict::Scheduled(pkt);
    }
    match &sliced.transport {
        Some(TransportSlice::Tcp(tcp)) => {
            let raw = tcp.slice();
            pkt.flow.src_port = tcp.source_port();
            pkt.flow.dst_port = tcp.destination_port();
            pkt.seq = tcp.sequence_number();
            pkt.ack = tcp.acknowledgment_number();
            pkt.flags = TcpFlags(raw[13]);
            pkt.window = tcp.window_size(); // raw, as on the wire: the box does not track window scale options
            pkt.payload_len = tcp.payload().len() as u16;
            for opt in tcp.options_iterator() {
                match opt {
                    Ok(TcpOptionElement::Timestamp(val, ecr)) => (pkt.ts_val, pkt.ts_ecr) = (val, ecr),
                    Ok(TcpOptionElement::SelectiveAcknowledgement(first, rest)) => {
                        let blocks = std::iter::once(Some(first)).chain(rest).flatten();
                        for (i, (start, end)) in blocks.take(pkt.sack.len()).enumerate() {
                            pkt.sack[i] = SackBlock { start, end };
                            pkt.sack_count = i as u8 + 1;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            debug_assert_eq!(pkt.flow.proto, PROTO_TCP);
        }
        Some(TransportSlice::Udp(udp)) => {
            pkt.flow.src_port = udp.source_port();
            pkt.flow.dst_port = udp.destination_port();
            debug_assert_eq!(pkt.flow.proto, PROTO_UDP);
        }
        Some(TransportSlice::Icmpv4(_)) | Some(TransportSlice::Icmpv6(_)) | None => {}
    }
    Verdict::Scheduled(pkt)
}

/// The IP source address as the box's per-host tables key it (IPv4 as is, IPv6 folded).
pub fn host_key(addr: std::net::IpAddr) -> u32 {
    match addr {
        std::net::IpAddr::V4(a) => u32::from(a),
        std::net::IpAddr::V6(a) => fold_ipv6(a.octets()),
    }
}

/// Write ECN Congestion Experienced into a frame's IP header (the discipline marked the
/// packet instead of dropping it), keeping the IPv4 header checksum valid. Frames the
/// parser scheduled always have a whole IP header, so the indexing holds. One VLAN tag
/// (802.1Q or 802.1ad, as the box puts back on received frames) is stepped over; a frame
/// with two tags is left unmarked.
pub fn set_ce(frame: &mut [u8]) {
    let eth = match frame.get(12..14) {
        Some([0x81, 0x00]) | Some([0x88, 0xa8]) => 18,
        _ => 14,
    };
    match (frame.get(eth - 2..eth), frame.len()) {
        (Some([0x08, 0x00]), n) if n >= eth + 20 => {
            frame[eth + 1] |= 0b11;
            let ihl = usize::from(frame[eth] & 0x0f) * 4;
            frame[eth + 10..eth + 12].copy_from_slice(&[0, 0]);
            let sum = !fold_sum(&frame[eth..eth + ihl]);
            frame[eth + 10..eth + 12].copy_from_slice(&sum.to_be_bytes());
        }
        (Some([0x86, 0xdd]), n) if n >= eth + 40 => frame[eth + 1] |= 0b0011_0000,
        _ => {}
    }
}

/// RFC 1071 one's-complement sum of 16-bit words (a trailing odd byte padded with zero).
fn fold_sum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes.chunks(2).map(|w| u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn set_tos(pkt: &mut Packet, tos: u8) {
    pkt.dscp = tos >> 2;
    pkt.ecn = match tos & 0b11 {
        0 => Ecn::NotEct,
        3 => Ecn::Ce,
        _ => Ecn::Ect,
    };
}

/// RFC 1071: the one's-complement sum of the header, checksum field included, is 0xffff.
fn ipv4_checksum_ok(header: &[u8]) -> bool {
    fold_sum(header) == 0xffff
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;
    use smallpipe_core::FlowKey;

    const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn tcp_frame(payload: &[u8]) -> Vec<u8> {
        let b = PacketBuilder::ethernet2(MAC_A, MAC_B)
            .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
            .tcp(40000, 5001, 1000, 29_200)
            .ack(77)
            .psh()
            .options(&[
                TcpOptionElement::Noop,
                TcpOptionElement::Noop,
                TcpOptionElement::Timestamp(11, 22),
                TcpOptionElement::SelectiveAcknowledgement((100, 200), [Some((300, 400)), None, None]),
            ])
            .unwrap();
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn tcp_over_ipv4_fills_the_view_from_the_wire_fields() {
        let frame = tcp_frame(&[7u8; 100]);
        let Verdict::Scheduled(p) = parse_frame(&frame) else { panic!("not scheduled") };
        // Ethernet header is 14 bytes; the IP datagram is the rest.
        assert_eq!(p.ip_len_bytes as usize, frame.len() - 14);
        assert_eq!(p.flow, FlowKey { src_ip: 0xc612_0001, dst_ip: 0xc612_0002, src_port: 40000, dst_port: 5001, proto: 6 });
        assert_eq!((p.seq, p.ack, p.payload_len), (1000, 77, 100));
        assert_eq!(p.flags.0, TcpFlags::ACK | TcpFlags::PSH);
        assert_eq!(p.window, 29_200);
        assert_eq!((p.ts_val, p.ts_ecr), (11, 22));
        assert_eq!(p.sack_blocks(), &[SackBlock { start: 100, end: 200 }, SackBlock { start: 300, end: 400 }]);
    }

    #[test]
    fn a_flipped_header_bit_fails_the_ipv4_checksum() {
        let mut frame = tcp_frame(b"x");
        frame[14 + 8] ^= 1; // TTL
        assert_eq!(parse_frame(&frame), Verdict::Drop(DropCause::BadIpChecksum));
    }

    #[test]
    fn truncation_anywhere_inside_the_datagram_is_malformed_and_padding_is_not() {
        let frame = tcp_frame(&[1u8; 20]);
        for cut in 14..frame.len() {
            assert_eq!(parse_frame(&frame[..cut]), Verdict::Drop(DropCause::Malformed), "cut at {cut}");
        }
        let mut padded = frame.clone();
        padded.extend_from_slice(&[0; 30]);
        assert!(matches!(parse_frame(&padded), Verdict::Scheduled(p) if p.payload_len == 20));
    }

    #[test]
    fn arp_and_unknown_ethertypes_are_unscheduled() {
        let mut frame = vec![0xffu8; 6];
        frame.extend_from_slice(&MAC_A);
        frame.extend_from_slice(&[0x88, 0xb5]); // local experimental EtherType
        frame.extend_from_slice(&[0; 46]);
        assert_eq!(parse_frame(&frame), Verdict::Unscheduled);
    }

    #[test]
    fn ipv6_udp_is_scheduled_with_folded_addresses_and_ports() {
        let src = [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7];
        let dst = [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
        let b = PacketBuilder::ethernet2(MAC_A, MAC_B).ipv6(src, dst, 64).udp(53, 5353);
        let mut frame = Vec::new();
        b.write(&mut frame, &[0; 10]).unwrap();
        let Verdict::Scheduled(p) = parse_frame(&frame) else { panic!() };
        assert_eq!(p.flow.src_ip, 0x2001_0db8 ^ 7);
        assert_eq!((p.flow.src_port, p.flow.dst_port, p.flow.proto), (53, 5353, 17));
        assert_eq!(p.ip_len_bytes, 40 + 8 + 10);
    }

    #[test]
    fn fragments_are_scheduled_by_host_pair_without_ports() {
        let mut frame = tcp_frame(&[0; 16]);
        frame[14 + 6] |= 0x20; // More Fragments
        // Re-checksum the modified header (RFC 1071) so only the fragmentation differs.
        frame[14 + 10] = 0;
        frame[14 + 11] = 0;
        let sum = !fold_sum(&frame[14..34]);
        frame[14 + 10..14 + 12].copy_from_slice(&sum.to_be_bytes());
        let Verdict::Scheduled(p) = parse_frame(&frame) else { panic!() };
        assert_eq!((p.flow.src_port, p.flow.dst_port, p.flow.proto, p.seq), (0, 0, 6, 0));
    }

    #[test]
    fn a_ce_mark_reparses_as_ce_with_a_valid_checksum() {
        let mut frame = tcp_frame(b"data");
        set_ce(&mut frame);
        // An invalid checksum would make this a Drop(BadIpChecksum).
        assert!(matches!(parse_frame(&frame), Verdict::Scheduled(p) if p.ecn == Ecn::Ce && p.dscp == 0));
    }

    #[test]
    fn a_ce_mark_goes_through_a_vlan_tag() {
        let frame = tcp_frame(b"data");
        let mut tagged = vec![0u8; frame.len() + 4];
        tagged[..frame.len()].copy_from_slice(&frame);
        crate::io::insert_vlan_tag(&mut tagged, frame.len(), 0x8100, 100);
        set_ce(&mut tagged);
        assert!(matches!(parse_frame(&tagged), Verdict::Scheduled(p) if p.ecn == Ecn::Ce && p.dscp == 0));
    }
}
