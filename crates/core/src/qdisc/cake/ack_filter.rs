//! CAKE's ACK filter (Linux `cake_ack_filter`): when a TCP ACK joins a flow queue, a pure
//! ACK already queued for the same connection that the new one makes redundant is dropped.
//! On an asymmetric link the reverse direction fills with ACKs; each cumulative ACK carries
//! everything the older ones said, so sending only the newest saves capacity.
//!
//! A queued packet is eligible when it is (conservative rules, all of them):
//! - the same 5-tuple (a hashed queue may hold other connections) and TCP;
//! - a pure ACK: no payload, flags exactly ACK (ECE/CWR aside), no SYN/FIN/RST/PSH/URG;
//! - not newer than the trigger: its cumulative ACK and its timestamps (if it carries them)
//!   are not after the trigger's;
//! - no SACK news: every block it SACKs is covered by the trigger's blocks (and it is not a
//!   D-SACK), and the trigger says more — more SACKed bytes or a higher cumulative ACK.
//!
//! In the default mode an ACK is dropped only when two eligible ones are queued (the older is
//! dropped), and an eligible ACK whose ECE/CWR flags differ from a later one is kept (the flag
//! change is information). `aggressive` also drops a single eligible ACK if it sits right
//! before the trigger with the same ECE/CWR flags.
//!
//! The packet view carries SACK blocks and timestamps but not other TCP options; a box
//! would refuse to drop ACKs with unknown options, which pure ACKs of an established
//! connection do not carry.

use super::super::parts::{FlowQueues, NIL};
use crate::packet::{Packet, SackBlock, TcpFlags};
use serde::{Deserialize, Serialize};

/// The `ack_filter` knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AckFilter {
    #[default]
    Off,
    On,
    Aggressive,
}

const PROTO_TCP: u8 = 6;
const ECN_FLAGS: u8 = TcpFlags::ECE | TcpFlags::CWR;

/// Sequence-space `a` after `b` (RFC 1982 serial arithmetic).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Whether `check` (queued) is a pure ACK whose flags and timestamps let the trigger
/// replace it (Linux `cake_tcph_may_drop` on the view's fields).
fn may_drop(check: &Packet, trigger: &Packet) -> bool {
    if check.flags.0 & !ECN_FLAGS != TcpFlags::ACK || check.payload_len != 0 {
        return false;
    }
    let has_ts = check.ts_val != 0 || check.ts_ecr != 0;
    !(has_ts && (after(check.ts_val, trigger.ts_val) || after(check.ts_ecr, trigger.ts_ecr)))
}

/// Compare the SACK information of `a` (queued) and `b` (trigger), Linux
/// `cake_tcph_sack_compare`: −1 if `a` says something `b` does not (a block `b` does not
/// cover, a D-SACK, or blocks where `b` has none), 1 if `b` SACKs strictly more bytes, else 0.
fn sack_compare(a: &Packet, b: &Packet) -> i32 {
    match (a.sack_blocks().is_empty(), b.sack_blocks().is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        (false, false) => {}
    }
    let covers = |outer: &SackBlock, inner: &SackBlock| !after(outer.start, inner.start) && !after(inner.end, outer.end);
    let mut bytes_a = 0u32;
    for block in a.sack_blocks() {
        if after(a.ack, block.start) {
            return -1; // D-SACK: always worth delivering
        }
        bytes_a = bytes_a.wrapping_add(block.end.wrapping_sub(block.start));
        if !b.sack_blocks().iter().any(|outer| covers(outer, block)) {
            return -1;
        }
    }
    let bytes_b = b.sack_blocks().iter().fold(0u32, |s, x| s.wrapping_add(x.end.wrapping_sub(x.start)));
    i32::from(bytes_b > bytes_a)
}

/// The slot of a queued ACK in queue `q` that its tail (the packet just enqueued) makes
/// redundant, if any.
pub(super) fn find_redundant_ack(queues: &FlowQueues, q: u32, aggressive: bool) -> Option<u32> {
    let first = queues.first_slot(q);
    if first == NIL || queues.next_slot(first) == NIL {
        return None; // nothing queued before the trigger
    }
    let mut tail = first;
    while queues.next_slot(tail) != NIL {
        tail = queues.next_slot(tail);
    }
    let trigger = queues.packet(tail);
    if trigger.flow.proto != PROTO_TCP || trigger.flags.0 & (TcpFlags::ACK | TcpFlags::SYN) != TcpFlags::ACK {
        return None;
    }
    let (mut eligible, mut eligible_flags, mut found) = (None::<u32>, 0u8, 0u32);
    let mut before_trigger = NIL;
    let mut slot = first;
    while slot != tail {
        let check = queues.packet(slot);
        before_trigger = slot;
        let next = queues.next_slot(slot);
        if check.flow != trigger.flow {
            slot = next;
            continue;
        }
        // An ECE/CWR change after the eligible ACK: dropping it would lose that change.
        if eligible.is_some() && check.flags.0 & ECN_FLAGS != eligible_flags {
            eligible = None;
            found -= 1;
        }
        let sack = sack_compare(check, trigger);
        let redundant = may_drop(check, trigger)
            && !after(check.ack, trigger.ack)
            && !(sack < 0 || (check.ack == trigger.ack && sack == 0));
        if redundant {
            if eligible.is_none() {
                eligible = Some(slot);
                eligible_flags = check.flags.0 & ECN_FLAGS;
            }
            found += 1;
            if found > 1 {
                return eligible;
            }
        }
        slot = next;
    }
    let adjacent = eligible == Some(before_trigger) && eligible_flags == trigger.flags.0 & ECN_FLAGS;
    if aggressive && adjacent {
        return eligible;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowKey;

    const FLOW: FlowKey = FlowKey { src_ip: 1, dst_ip: 2, src_port: 80, dst_port: 5000, proto: PROTO_TCP };

    fn ack(n: u32) -> Packet {
        Packet { flow: FLOW, ip_len_bytes: 52, ack: n, flags: TcpFlags(TcpFlags::ACK), ts_val: n, ts_ecr: 7, ..Packet::default() }
    }

    fn with_sack(mut p: Packet, blocks: &[(u32, u32)]) -> Packet {
        for (i, &(start, end)) in blocks.iter().enumerate() {
            p.sack[i] = SackBlock { start, end };
        }
        p.sack_count = blocks.len() as u8;
        p
    }

    /// Queue `pkts` in one queue; the ACK filter's pick, as an index into `pkts`.
    fn pick(pkts: &[Packet], aggressive: bool) -> Option<usize> {
        let mut q = FlowQueues::by_bytes(1);
        for p in pkts {
            q.push_back(0, *p);
        }
        let mut slots = vec![];
        let mut s = q.first_slot(0);
        while s != NIL {
            slots.push(s);
            s = q.next_slot(s);
        }
        find_redundant_ack(&q, 0, aggressive).map(|s| slots.iter().position(|&x| x == s).unwrap())
    }

    #[test]
    fn two_older_pure_acks_the_oldest_goes() {
        assert_eq!(pick(&[ack(100), ack(200), ack(300)], false), Some(0));
        // One older ACK: only aggressive mode drops it.
        assert_eq!(pick(&[ack(100), ack(200)], false), None);
        assert_eq!(pick(&[ack(100), ack(200)], true), Some(0));
    }

    #[test]
    fn acks_carrying_anything_new_are_kept() {
        // Data, flags other than ACK, a newer cumulative ACK, a newer timestamp, another flow.
        let mut data = ack(100);
        data.payload_len = 1000;
        let mut psh = ack(100);
        psh.flags = TcpFlags(TcpFlags::ACK | TcpFlags::PSH);
        let mut fin = ack(100);
        fin.flags = TcpFlags(TcpFlags::ACK | TcpFlags::FIN);
        let newer = ack(400);
        let mut later_ts = ack(100);
        later_ts.ts_val = 999;
        let mut other = ack(100);
        other.flow.src_port = 81;
        for queued in [data, psh, fin, newer, later_ts, other] {
            assert_eq!(pick(&[queued, queued, ack(300)], true), None, "{queued:?}");
        }
    }

    #[test]
    fn sack_news_protects_an_ack() {
        // Same cumulative ACK, same SACK block: the trigger adds nothing, keep both.
        let a = with_sack(ack(100), &[(200, 300)]);
        assert_eq!(pick(&[a, a, a], false), None);
        // Trigger SACKs a superset: the older ones are redundant.
        let t = with_sack(ack(100), &[(200, 400)]);
        assert_eq!(pick(&[a, a, t], false), Some(0));
        // A queued block the trigger does not cover: keep.
        let b = with_sack(ack(100), &[(500, 600)]);
        assert_eq!(pick(&[b, b, t], true), None);
        // A D-SACK (block below the cumulative ACK) is always kept.
        let d = with_sack(ack(100), &[(50, 80)]);
        assert_eq!(pick(&[d, d, with_sack(ack(300), &[(50, 80)])], true), None);
        // SACKs queued, none on the trigger: the trigger's cumulative ACK must cover them,
        // but the rule compares blocks, so they are kept.
        assert_eq!(pick(&[a, a, ack(500)], true), None);
    }

    #[test]
    fn an_ecn_flag_change_is_information() {
        let mut ece = ack(200);
        ece.flags = TcpFlags(TcpFlags::ACK | TcpFlags::ECE);
        // ack(100) then an ECE ACK: the first eligible is forgotten at the flag change, so
        // only one eligible (the ECE one) remains: conservative mode keeps both.
        assert_eq!(pick(&[ack(100), ece, ack(300)], false), None);
        // Aggressive: the ECE ACK is adjacent but its flags differ from the trigger's.
        assert_eq!(pick(&[ack(100), ece, ack(300)], true), None);
        // The trigger itself may carry ECE: it is just newer.
        let mut t = ack(300);
        t.flags = TcpFlags(TcpFlags::ACK | TcpFlags::ECE);
        assert_eq!(pick(&[ack(100), ack(200), t], false), Some(0));
    }

    #[test]
    fn only_an_ack_triggers() {
        let mut syn = ack(300);
        syn.flags = TcpFlags(TcpFlags::SYN | TcpFlags::ACK);
        assert_eq!(pick(&[ack(100), ack(200), syn], true), None);
        let mut udp = ack(300);
        udp.flow.proto = 17;
        assert_eq!(pick(&[ack(100), ack(200), udp], true), None);
    }
}
