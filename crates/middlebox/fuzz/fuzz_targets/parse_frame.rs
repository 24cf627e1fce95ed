//! Any byte string, as a frame: the parser must return a verdict without panicking, and a
//! scheduled frame must stay scheduled, as the same packet, after the box marks it CE
//! (the mark rewrites the IPv4 checksum, which a wrong rewrite would break).
#![no_main]

use libfuzzer_sys::fuzz_target;
use smallpipe_core::packet::Ecn;
use smallpipe_middlebox::parse::{parse_frame, set_ce, Verdict};

fuzz_target!(|data: &[u8]| {
    if let Verdict::Scheduled(p) = parse_frame(data) {
        assert!(p.sack_count as usize <= p.sack.len());
        let mut marked = data.to_vec();
        set_ce(&mut marked);
        let Verdict::Scheduled(q) = parse_frame(&marked) else { panic!("a CE mark made the frame unparseable") };
        assert_eq!((q.flow, q.seq, q.ack, q.ip_len_bytes, q.dscp), (p.flow, p.seq, p.ack, p.ip_len_bytes, p.dscp));
        let untagged_ip = matches!(data.get(12..14), Some([0x08, 0x00]) | Some([0x86, 0xdd]));
        assert!(!untagged_ip || q.ecn == Ecn::Ce, "an untagged IP frame was not marked");
    }
});
