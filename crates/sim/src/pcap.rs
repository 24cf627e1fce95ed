//! Ethernet/IPv4/TCP frames built from the wire-visible packet view, and a bounded
//! in-memory pcap of them (nanosecond timestamps), so Wireshark and tcptrace read what
//! crossed the bottleneck or an end host's interface. Payload is zeros, cut at the snap
//! length; lengths, the advertised window and checksums are those of the whole packet.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use crate::udp::PROTO_UDP;
use smallpipe_core::packet::Ecn;
use smallpipe_core::Packet;

pub const ETHERNET_HEADER_BYTES: usize = 14;
const IPV4_HEADER_BYTES: usize = 20;
const TCP_HEADER_BYTES: usize = 20;
const UDP_HEADER_BYTES: usize = 8;
/// The TCP data offset field counts 32-bit words: at most 15, so 40 bytes of options.
const MAX_TCP_OPTION_BYTES: usize = 40;
const NOP: u8 = 1;
const OPT_TIMESTAMPS: u8 = 8;
const OPT_SACK: u8 = 5;
const TTL: u8 = 64;

/// RFC 1071: the 16-bit one's-complement sum of `data` (an odd last byte padded with zero)
/// added to `initial`, not yet complemented.
fn ones_complement_sum(data: &[u8], initial: u32) -> u32 {
    let mut sum = initial;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// RFC 1071 checksum: the complement of the folded one's-complement sum.
pub fn internet_checksum(data: &[u8], initial: u32) -> u16 {
    let mut sum = ones_complement_sum(data, initial);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A locally administered MAC derived from an IPv4 address (02:00:a.b.c.d).
fn mac(ip: u32) -> [u8; 6] {
    let b = ip.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// The TCP options the packet view carries, laid out as Linux does (NOP NOP before each),
/// in at most `room` bytes (a multiple of 4).
fn tcp_options(pkt: &Packet, room: usize) -> Vec<u8> {
    let mut opts = Vec::with_capacity(room);
    if (pkt.ts_val != 0 || pkt.ts_ecr != 0) && opts.len() + 12 <= room {
        opts.extend_from_slice(&[NOP, NOP, OPT_TIMESTAMPS, 10]);
        opts.extend_from_slice(&pkt.ts_val.to_be_bytes());
        opts.extend_from_slice(&pkt.ts_ecr.to_be_bytes());
    }
    let blocks = pkt.sack_blocks();
    if !blocks.is_empty() && opts.len() + 4 + 8 * blocks.len() <= room {
        opts.extend_from_slice(&[NOP, NOP, OPT_SACK, 2 + 8 * blocks.len() as u8]);
        for b in blocks {
            opts.extend_from_slice(&b.start.to_be_bytes());
            opts.extend_from_slice(&b.end.to_be_bytes());
        }
    }
    opts.resize(room, NOP); // the simulator counted these bytes; they carry nothing it models
    opts
}

/// The whole Ethernet frame of `pkt` (payload as zeros) with correct IPv4 and TCP (or UDP)
/// checksums. The TCP header takes the option bytes the packet's length leaves beside its
/// payload (rounded down to 32-bit words, at most 40); any remainder counts as payload.
pub fn frame(pkt: &Packet) -> Vec<u8> {
    let udp = pkt.flow.proto == PROTO_UDP;
    let transport_header = if udp { UDP_HEADER_BYTES } else { TCP_HEADER_BYTES };
    let ip_len = (pkt.ip_len_bytes as usize).max(IPV4_HEADER_BYTES + transport_header);
    let transport_len = ip_len - IPV4_HEADER_BYTES;
    let mut f = Vec::with_capacity(ETHERNET_HEADER_BYTES + ip_len);
    f.extend_from_slice(&mac(pkt.flow.dst_ip));
    f.extend_from_slice(&mac(pkt.flow.src_ip));
    f.extend_from_slice(&0x0800u16.to_be_bytes());

    let ip_start = f.len();
    let ecn = match pkt.ecn {
        Ecn::NotEct => 0,
        Ecn::Ect => 2, // ECT(0)
        Ecn::Ce => 3,
    };
    f.push(0x45);
    f.push((pkt.dscp << 2) | ecn);
    f.extend_from_slice(&(ip_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0]); // id 0, don't fragment
    f.push(TTL);
    f.push(pkt.flow.proto);
    f.extend_from_slice(&[0, 0]); // checksum, below
    f.extend_from_slice(&pkt.flow.src_ip.to_be_bytes());
    f.extend_from_slice(&pkt.flow.dst_ip.to_be_bytes());
    let ip_sum = internet_checksum(&f[ip_start..], 0);
    f[ip_start + 10..ip_start + 12].copy_from_slice(&ip_sum.to_be_bytes());
    // Pseudo-header (RFC 793 §3.1, RFC 768): addresses, zero, protocol, transport length.
    let pseudo = ones_complement_sum(&f[ip_start + 12..ip_start + 20], u32::from(pkt.flow.proto) + transport_len as u32);

    let tcp_start = f.len();
    if udp {
        f.extend_from_slice(&pkt.flow.src_port.to_be_bytes());
        f.extend_from_slice(&pkt.flow.dst_port.to_be_bytes());
        f.extend_from_slice(&(transport_len as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]); // checksum, below
        f.resize(ETHERNET_HEADER_BYTES + ip_len, 0);
        // RFC 768: a computed zero is sent as all ones (zero means "no checksum").
        let sum = match internet_checksum(&f[tcp_start..], pseudo) {
            0 => 0xffff,
            s => s,
        };
        f[tcp_start + 6..tcp_start + 8].copy_from_slice(&sum.to_be_bytes());
        return f;
    }
    let beside_payload = transport_len - TCP_HEADER_BYTES;
    let option_room = beside_payload.saturating_sub(pkt.payload_len as usize).min(MAX_TCP_OPTION_BYTES) / 4 * 4;
    let tcp_header_len = TCP_HEADER_BYTES + option_room;
    f.extend_from_slice(&pkt.flow.src_port.to_be_bytes());
    f.extend_from_slice(&pkt.flow.dst_port.to_be_bytes());
    f.extend_from_slice(&pkt.seq.to_be_bytes());
    f.extend_from_slice(&pkt.ack.to_be_bytes());
    f.push(((tcp_header_len / 4) as u8) << 4);
    f.push(pkt.flags.0);
    f.extend_from_slice(&pkt.window.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0]); // checksum (below), urgent pointer
    f.extend(tcp_options(pkt, option_room));
    f.resize(ETHERNET_HEADER_BYTES + ip_len, 0);
    let tcp_sum = internet_checksum(&f[tcp_start..], pseudo);
    f[tcp_start + 16..tcp_start + 18].copy_from_slice(&tcp_sum.to_be_bytes());
    f
}

/// A pcap file being built in memory, bounded: once the next record would pass
/// `max_bytes` nothing more is written and `truncated` is set.
pub struct PcapBuffer {
    writer: PcapWriter<Vec<u8>>,
    snaplen: u32,
    max_bytes: u64,
    len_bytes: u64,
    pub packets: u64,
    pub truncated: bool,
}

const MAX_FRAME_BYTES: u32 = ETHERNET_HEADER_BYTES as u32 + u16::MAX as u32;
/// Bytes of the pcap file header and of each record's header.
const FILE_HEADER_BYTES: u64 = 24;
const RECORD_HEADER_BYTES: u64 = 16;

impl PcapBuffer {
    pub fn new(snaplen: u32, max_bytes: u64) -> Self {
        // The file's snap length is the largest frame, so readers that insist on
        // orig_len <= snaplen accept it; each record is cut at `snaplen` here.
        let header = PcapHeader {
            snaplen: MAX_FRAME_BYTES,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(Vec::new(), header).expect("writing to a Vec cannot fail");
        PcapBuffer { writer, snaplen, max_bytes, len_bytes: FILE_HEADER_BYTES, packets: 0, truncated: false }
    }

    pub fn record(&mut self, pkt: &Packet, time_ns: u64) {
        if self.truncated {
            return;
        }
        let frame = frame(pkt);
        let caplen = frame.len().min(self.snaplen as usize);
        let size = self.len_bytes + RECORD_HEADER_BYTES + caplen as u64;
        if size > self.max_bytes {
            self.truncated = true;
            return;
        }
        let ts = std::time::Duration::from_nanos(time_ns);
        self.writer
            .write_packet(&PcapPacket::new(ts, frame.len() as u32, &frame[..caplen]))
            .expect("a record within the snap length writes to a Vec");
        self.len_bytes = size;
        self.packets += 1;
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.writer.into_writer()
    }
}

/// Smallest `max_pcap_bytes`: the file header and one record.
pub const MIN_PCAP_BYTES: u64 = FILE_HEADER_BYTES + RECORD_HEADER_BYTES + 128;

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{Ipv4Header, TcpHeader, TcpOptionElement};
    use smallpipe_core::packet::SackBlock;
    use smallpipe_core::{FlowKey, TcpFlags};

    /// RFC 1071 §3's worked example: the words 0001 f203 f4f5 f6f7 sum to ddf2 (after the
    /// end-around carry), whose complement 220d is the checksum.
    #[test]
    fn checksum_matches_rfc_1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet_checksum(&data, 0), !0xddf2);
        // An odd length pads with a zero byte: 0xab00 alone.
        assert_eq!(internet_checksum(&[0xab], 0), !0xab00);
    }

    fn data_packet() -> Packet {
        let mut p = Packet {
            flow: FlowKey { src_ip: 0xC612_0001, dst_ip: 0xC613_0001, src_port: 1024, dst_port: 80, proto: 6 },
            seq: 0xdead_beef,
            ack: 0x0102_0304,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            ecn: Ecn::Ect,
            dscp: 10,
            payload_len: 1448,
            window: 29_200,
            ts_val: 123_456,
            ts_ecr: 654_321,
            ..Packet::default()
        };
        p.ip_len_bytes = 40 + 12 + 1448;
        p
    }

    /// etherparse, an independent parser, reads back every field and recomputes both
    /// checksums over the same bytes.
    #[test]
    fn etherparse_reads_back_headers_and_checksums() {
        let mut ack = Packet {
            flow: data_packet().flow.reversed(),
            seq: 7,
            ack: 99,
            flags: TcpFlags(TcpFlags::ACK),
            window: 8_000,
            ts_val: 5,
            ts_ecr: 6,
            sack_count: 2,
            ..Packet::default()
        };
        ack.sack[0] = SackBlock { start: 1000, end: 2000 };
        ack.sack[1] = SackBlock { start: 3000, end: 4000 };
        ack.ip_len_bytes = 40 + 12 + 4 + 16;
        let syn = Packet { flags: TcpFlags(TcpFlags::SYN), payload_len: 0, ip_len_bytes: 40, ts_val: 0, ts_ecr: 0, ..data_packet() };
        for pkt in [data_packet(), ack, syn] {
            let f = frame(&pkt);
            assert_eq!(f.len(), ETHERNET_HEADER_BYTES + pkt.ip_len_bytes as usize);
            assert_eq!(&f[12..14], &[0x08, 0x00]);
            let (ip, rest) = Ipv4Header::from_slice(&f[ETHERNET_HEADER_BYTES..]).unwrap();
            assert_eq!(ip.header_checksum, ip.calc_header_checksum());
            assert_eq!(u32::from_be_bytes(ip.source), pkt.flow.src_ip);
            assert_eq!(u32::from_be_bytes(ip.destination), pkt.flow.dst_ip);
            assert_eq!(ip.total_len, pkt.ip_len_bytes);
            assert_eq!((ip.dscp.value(), ip.ecn.value()), (pkt.dscp, if pkt.ecn == Ecn::Ect { 2 } else { 0 }));
            let (tcp, payload) = TcpHeader::from_slice(rest).unwrap();
            assert_eq!(payload.len(), pkt.payload_len as usize);
            assert_eq!(tcp.checksum, tcp.calc_checksum_ipv4(&ip, payload).unwrap());
            assert_eq!((tcp.source_port, tcp.destination_port), (pkt.flow.src_port, pkt.flow.dst_port));
            assert_eq!((tcp.sequence_number, tcp.acknowledgment_number), (pkt.seq, pkt.ack));
            assert_eq!(tcp.window_size, pkt.window);
            assert_eq!((tcp.syn, tcp.ack, tcp.psh, tcp.fin), (pkt.flags.syn(), pkt.flags.ack(),
                pkt.flags.has(TcpFlags::PSH), pkt.flags.fin()));
            let opts: Vec<_> = tcp.options_iterator().map(|o| o.unwrap()).collect();
            if pkt.ts_val != 0 {
                assert!(opts.contains(&TcpOptionElement::Timestamp(pkt.ts_val, pkt.ts_ecr)), "{opts:?}");
            }
            if pkt.sack_count > 0 {
                let blocks = opts.iter().find_map(|o| match o {
                    TcpOptionElement::SelectiveAcknowledgement(first, rest) => Some((*first, *rest)),
                    _ => None,
                });
                let (first, rest) = blocks.expect("a SACK option");
                assert_eq!((first, rest[0]), ((1000, 2000), Some((3000, 4000))));
            }
        }
    }

    /// A UDP datagram (the `udp` apps' packets) is framed as UDP: etherparse reads its ports
    /// and length back and recomputes the checksum over the zero payload; a datagram
    /// shorter than a TCP header keeps its own length.
    #[test]
    fn udp_datagrams_are_framed_as_udp() {
        use etherparse::UdpHeader;
        for ip_len_bytes in [28u16, 36, 200, 1500] {
            let pkt = Packet {
                flow: FlowKey { src_ip: 0xC612_0001, dst_ip: 0xC613_0001, src_port: 5000, dst_port: 5001, proto: 17 },
                ip_len_bytes,
                ..Packet::default()
            };
            let f = frame(&pkt);
            assert_eq!(f.len(), ETHERNET_HEADER_BYTES + ip_len_bytes as usize);
            let (ip, rest) = Ipv4Header::from_slice(&f[ETHERNET_HEADER_BYTES..]).unwrap();
            assert_eq!((ip.total_len, ip.header_checksum), (ip_len_bytes, ip.calc_header_checksum()));
            let (udp, payload) = UdpHeader::from_slice(rest).unwrap();
            assert_eq!((udp.source_port, udp.destination_port, udp.length), (5000, 5001, ip_len_bytes - 20));
            assert_eq!(udp.checksum, udp.calc_checksum_ipv4(&ip, payload).unwrap());
        }
    }

    /// The file is capped: records stop (and `truncated` is set) before the buffer would
    /// pass `max_bytes`; each record keeps the packet's full length as its original length.
    #[test]
    fn pcap_buffer_is_bounded_and_truncates_to_the_snap_length() {
        let per_record = RECORD_HEADER_BYTES + 96;
        let mut b = PcapBuffer::new(96, FILE_HEADER_BYTES + 3 * per_record + 10);
        for t in 0..10 {
            b.record(&data_packet(), t * 1000);
        }
        assert_eq!(b.packets, 3);
        assert!(b.truncated);
        let bytes = b.into_bytes();
        assert_eq!(bytes.len() as u64, FILE_HEADER_BYTES + 3 * per_record);
        let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
        let first = r.next_packet().unwrap().unwrap();
        assert_eq!(first.data.len(), 96);
        assert_eq!(first.orig_len as usize, ETHERNET_HEADER_BYTES + 1500);
    }
}
