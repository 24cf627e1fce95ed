//! `recovery = "sack"` with `fast_recovery = "ns2"` (the ns2 stack's SACK): ns-2 2.35's
//! one-way `Agent/TCP/Sack1` (tcp/tcp-sack1.cc) with its `ScoreBoardRQ` (tcp/scoreboard-rq.cc
//! over tcp/rq.cc), at ns-default.tcl's defaults (`partial_ack_` false, `oldCode_` false,
//! `LimTransmitFix_` false, `numdupacks_` 3, `maxburst_` 0, `singledup_` 1). Line numbers
//! are at the ns-2.35 import (`f95482f`), as in docs/tcp.md.
//!
//! Sack1 is not RFC 6675: its scoreboard is cleared on every new ACK outside recovery and
//! on a timeout; a duplicate ACK counts only if it changes the scoreboard; in recovery it
//! sends while `pipe_` < `cwnd_`, where `pipe_` starts at the packets out less 3 and falls
//! by one per ACK (two per partial ACK) and rises by one per packet sent; it retransmits
//! every hole below the highest SACKed packet once, with no DupThresh per hole; and the
//! window stays halved through recovery and after it.
//!
//! ns-2 counts packets; here a packet is a segment and packet counts are bytes / MSS
//! (rounded up: ns-2's agents send only full packets). ns-2's `highest_ack_` is `snd_una`,
//! `maxseq_` is `snd_max`, `t_seqno_` is `snd_nxt`, `recover_` is `recover_mark` and
//! `fastrecov_` is `recovery.is_some()`.

use crate::tcp::{Endpoint, FastRecovery, Instant, Packet, TcpParams};

/// Sack1's state beside the endpoint's (offsets in bytes, counts in packets).
#[derive(Debug, Clone, Default)]
pub(in crate::tcp) struct Sack1 {
    /// `pipe_`: packets believed in flight during fast recovery.
    pipe: i64,
    /// `timeout_`: a timeout came and no new ACK since; duplicate ACKs are then ignored.
    timeout: bool,
    /// `ScoreBoardRQ::sack_min`: `snd_una` at the last `UpdateScoreBoard` (not reset by
    /// `ClearScoreBoard`).
    sack_min: u64,
    /// `ScoreBoardRQ::h_seqno_`: where `GetNextRetran` looks from (0: unset, ns-2's -1).
    h_seqno: u64,
}

impl Endpoint {
    fn sack1(&mut self) -> &mut Sack1 {
        &mut self.queues_mut().ns2_sack1
    }

    /// Packets in `bytes` (ns-2 counts whole packets).
    fn sack1_packets(bytes: u64, p: &TcpParams) -> i64 {
        bytes.div_ceil(p.mss) as i64
    }

    /// `Sack1TcpAgent::recv` (tcp-sack1.cc:95-249) for an ACK whose cumulative part is `ack`.
    pub(in crate::tcp) fn sack1_on_ack(&mut self, seg: &Packet, ack: u64, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let valid = ack >= self.snd_una; // :122
        if self.recovery.is_none() {
            if ack > self.snd_una {
                // :131-141 a new ACK outside recovery: recv_newack_helper (newack, opencwnd),
                // `timeout_` off, the scoreboard cleared; its SACK blocks are not read.
                let ack_rtt = self.ack_rtt(ack, false, now, p);
                self.on_new_ack(ack, seg, ack_rtt, None, None, true, false, now, p, out);
                self.sack1().timeout = false;
                self.sack1_clear_scoreboard();
            } else if ack == self.snd_una && !self.sack1().timeout {
                // :150-166 a duplicate ACK counts only if it changed the scoreboard.
                if self.sack1_update_scoreboard(seg, now) {
                    self.dupacks += 1;
                    if self.dupacks == p.recovery.dupthresh {
                        self.sack1_dupack_action(now, p, out);
                    } else if self.dupacks < p.recovery.dupthresh && p.recovery.limited_transmit {
                        self.sack1_send_one(now, p, out);
                    }
                }
            }
            // :186-188 no sending while duplicate ACKs are counted (send_one did).
            if valid && self.dupacks == 0 {
                self.sack1_send_much(now, p, out);
            }
            return;
        }
        self.sack1().pipe -= 1; // :191 every ACK in recovery
        if ack >= self.recover_mark {
            // :192-203 recovery is over: `recover_` = 0, newack (no opencwnd: cwnd_ stays
            // halved), the scoreboard cleared.
            self.recover_mark = 0;
            self.recovery = None;
            let ack_rtt = self.ack_rtt(ack, false, now, p);
            self.on_new_ack(ack, seg, ack_rtt, None, None, false, false, now, p, out);
            self.sack1().timeout = false;
            self.sack1_clear_scoreboard();
        } else if ack > self.snd_una {
            // :206-231 a partial ACK (`partial_ack_` false): `highest_ack_` moves but not
            // by newack (no growth; no RTT sample either: what was timed lies past
            // `recover_`); pipe_ falls once more; newtimer restarts the timer (on_new_ack
            // does), then `t_backoff_` = 1.
            let ack_rtt = self.ack_rtt(ack, false, now, p);
            self.on_new_ack(ack, seg, ack_rtt, None, None, false, false, now, p, out);
            self.sack1_update_scoreboard(seg, now);
            self.sack1().pipe -= 1;
            self.rtt.reset_backoff();
        } else if !self.sack1().timeout {
            // :232-238 another duplicate ACK: into the scoreboard.
            if self.sack1_update_scoreboard(seg, now) && self.dupacks > 0 {
                self.dupacks += 1;
            }
        }
        if valid {
            self.sack1_send_much(now, p, out); // :240
        }
    }

    /// `dupack_action` (tcp-sack1.cc:274-353, `bug_fix_` on, `ecn_` off): a fast
    /// retransmit only past `recover_` or when only the SYN was acknowledged (`bugfix_ss_`);
    /// else nothing (the duplicate ACKs that follow are counted and ignored).
    fn sack1_dupack_action(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if !(self.snd_una > self.recover_mark || self.snd_una <= 1) {
            return; // :318-325
        }
        self.stats.fast_retransmits += 1;
        // :336 pipe_ = maxseq_ - highest_ack_ - numdupacks(cwnd_): the duplicate ACKs say
        // that many packets left the network (`numdupacksFrac_` -1 leaves numdupacks_ 3).
        let pipe = Self::sack1_packets(self.snd_max - self.snd_una, p) - p.recovery.dupthresh as i64;
        self.sack1().pipe = pipe;
        self.recover_mark = self.snd_max; // :328
        self.arm_rto(now, p); // :338 reset_rtx_timer(1, 0): restart, t_seqno_ stays,
        self.timed = None; // ... and rtt_active_ = 0
        self.recovery = Some(FastRecovery { high_rxt: self.snd_una, first_partial: true }); // :339
        let una = self.snd_una;
        self.sack1_mark_retran(una, p); // :340 MarkRetran(highest_ack_ + 1)
        // :345 slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF), precisionReduce_ on
        // (tcp.cc:1253): ssthresh_ = ⌊min(cwnd_, window_)/2⌋ packets (at least 2), cwnd_ =
        // min(cwnd_, window_)/2 unrounded.
        self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd, self.decrease_base(p), p.mss);
        self.cwnd = (self.cwnd.min(p.rwnd) / 2).max(p.mss);
        self.ca_acked = 0;
        self.sack1_output(una, now, p, out); // :346 output(last_ack_ + 1)
    }

    /// `send_one` (tcp.cc:1576), `singledup_`: on a first or second duplicate ACK the packet
    /// at `t_seqno_`, if within the receiver's window and cwnd_ + the duplicate ACKs.
    fn sack1_send_one(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let (off, len, _) = self.segment_at(self.snd_nxt, p);
        let out_after = off + len - self.snd_una;
        if len > 0 && out_after <= p.rwnd && out_after <= self.cwnd + self.dupacks as u64 * p.mss {
            self.sack1_output(off, now, p, out);
        }
    }

    /// `Sack1TcpAgent::send_much` (tcp-sack1.cc:422-490, `maxburst_` 0, `overhead_` 0): in
    /// recovery while pipe_ < int(cwnd_), else while `t_seqno_` is within the window; each
    /// time the scoreboard's next hole (`GetNextRetran`) if any, else the packet at
    /// `t_seqno_`; a hole or new packet beyond the receiver's window from `highest_ack_`
    /// stops the loop.
    pub(in crate::tcp) fn sack1_send_much(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if !self.can_send_data() {
            return;
        }
        // window(): min(int(cwnd_), window_) packets (tcp.cc:888).
        let win = (self.cwnd / p.mss * p.mss).min(p.rwnd);
        loop {
            let open = match self.recovery {
                Some(_) => self.sack1().pipe < (self.cwnd / p.mss) as i64, // :435
                None => self.snd_nxt + p.mss - self.snd_una <= win,          // :434
            };
            if !open {
                break;
            }
            let off = match self.sack1_next_retran() {
                // :447-453 no hole: the next new packet, within win (recovery: window_).
                None => {
                    let (off, len, _) = self.segment_at(self.snd_nxt, p);
                    let limit = if self.recovery.is_some() { p.rwnd } else { win };
                    if off >= self.send_end() || off + len - self.snd_una > limit {
                        break; // nothing left to send (a FIN alone still goes), or beyond the window
                    }
                    off
                }
                // :459-463 a hole, while `recover_` is set and within window_.
                Some(off) if self.recover_mark > 0 && off + p.mss - self.snd_una <= p.rwnd => {
                    self.sack1_mark_retran(off, p);
                    off
                }
                Some(_) => break,
            };
            self.sack1_output(off, now, p, out); // :465-469
            self.sack1().pipe += 1;
        }
    }

    /// `output(seqno)` (tcp.cc:647): the packet at `off`. ns-2 times the first new packet
    /// while none is timed and never stops timing for a retransmission (only a timeout or a
    /// fast retransmit does, `reset_rtx_timer`), so a retransmission keeps the timed one.
    fn sack1_output(&mut self, off: u64, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let (timed, retransmission) = (self.timed, off < self.snd_max);
        let seg = self.segment_at(off, p);
        self.send_next_seg(seg, now, p, out); // moves `snd_nxt` past it (:466)
        if retransmission {
            self.timed = timed;
        }
    }

    /// `ScoreBoardRQ::UpdateScoreBoard` (scoreboard-rq.cc:72-96) with the ACK's blocks;
    /// whether the scoreboard changed (`CheckUpdate`): the cumulative ACK moved past a
    /// non-empty scoreboard, or a block covered something new.
    fn sack1_update_scoreboard(&mut self, seg: &Packet, now: Instant) -> bool {
        let mut changed = false;
        if self.sack1().sack_min < self.snd_una {
            self.sack1().sack_min = self.snd_una; // :76-83 cleartonxt
            if !self.scoreboard.is_empty() {
                self.scoreboard.discard_below(self.snd_una);
                changed = true;
            }
        }
        for b in seg.sack_blocks() {
            let (s, e) = (self.unwrap_ack(b.start), self.unwrap_ack(b.end));
            if s >= self.snd_una && e <= self.snd_max {
                changed |= self.scoreboard.insert(s, e); // :85-89
            }
        }
        if changed {
            self.note_covered_bursts(self.snd_una, now);
        }
        changed
    }

    /// `ClearScoreBoard` (scoreboard-rq.h): the blocks and `h_seqno_`, not `sack_min`.
    fn sack1_clear_scoreboard(&mut self) {
        self.scoreboard = Default::default();
        self.sack1().h_seqno = 0;
    }

    /// `GetNextRetran` (scoreboard-rq.cc:47-70 over rq.cc:614 `nexthole`): the first hole
    /// at or after max(h_seqno_, sack_min) with a SACKed block above it, and h_seqno_ moves
    /// to it. Every such hole is resent once (no DupThresh per hole, unlike RFC 6675).
    pub(in crate::tcp) fn sack1_next_retran(&mut self) -> Option<u64> {
        let s = self.sack1();
        let from = s.h_seqno.max(s.sack_min);
        let hole = next_hole_below_a_block(self.scoreboard.ranges(), from)?;
        let s = self.sack1();
        s.h_seqno = s.h_seqno.max(hole);
        Some(hole)
    }

    /// `MarkRetran` (scoreboard-rq.h): resent up to the packet at `off`.
    fn sack1_mark_retran(&mut self, off: u64, p: &TcpParams) {
        let s = self.sack1();
        if off >= s.h_seqno {
            s.h_seqno = off + p.mss;
        }
    }

    /// `Sack1TcpAgent::timeout` (tcp-sack1.cc:403-413): out of recovery, duplicate ACKs
    /// ignored until a new ACK, the scoreboard cleared (the go-back-N that follows resends
    /// what the receiver holds). `on_rto` does the rest (TcpAgent::timeout).
    pub(in crate::tcp) fn sack1_on_rto(&mut self) {
        self.sack1().timeout = true;
        self.sack1_clear_scoreboard();
    }

    /// `pipe_`, for tests.
    #[cfg(test)]
    pub(in crate::tcp) fn sack1_pipe(&self) -> i64 {
        self.queues.as_deref().map_or(0, |q| q.ns2_sack1.pipe)
    }
}

/// `nexthole(seq)` as `GetNextRetran` reads it: walking the blocks up from `from`, the
/// first offset not in a block that has a block above it.
fn next_hole_below_a_block(blocks: &[(u64, u64)], from: u64) -> Option<u64> {
    let mut at = from;
    for &(s, e) in blocks {
        if s > at {
            return Some(at);
        }
        at = at.max(e);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::next_hole_below_a_block;
    use crate::tcp::config::{CwndGrowth, FastRecoveryRule, Recovery, SsthreshFrom, TcpConfig};
    use crate::tcp::{Endpoint, Instant, Packet, State, TcpParams};
    use smallpipe_core::FlowKey;

    const KEY: FlowKey = FlowKey { src_ip: 1, dst_ip: 2, src_port: 1000, dst_port: 80, proto: 6 };
    const MSS: u64 = 1000;

    fn t(ms: u64) -> Instant {
        Instant(ms * 1_000_000)
    }

    /// Sack1 (`fast_recovery = "ns2"`, SACK) or RFC 6675 (`"rfc"`), MSS 1000, IW 10,
    /// window_ 20 packets, no limited transmit (so each duplicate ACK's sends are pipe_'s).
    fn params(rule: FastRecoveryRule) -> TcpParams {
        let mut c = TcpConfig::default();
        c.packet_size_bytes = 1040;
        c.timestamps = false;
        c.delayed_ack = false;
        c.recovery = Recovery::Sack;
        c.fast_recovery = rule;
        c.initial_window_pkts = 10;
        c.limited_transmit = false;
        c.rwnd_bytes = 20 * MSS;
        c.ssthresh_from = SsthreshFrom::Ns2;
        c.cwnd_growth = CwndGrowth::Ns2;
        TcpParams::try_from(&c).expect("a valid [tcp] table")
    }

    /// Client and server after a handshake at 0..100 ms; the client has written `segments`
    /// full segments at 100 ms, the first ten of which are returned.
    fn sent_window(p: &TcpParams, segments: u64) -> (Endpoint, Endpoint, Vec<Packet>) {
        let (mut c, mut s) = (Endpoint::client(KEY, 0, p), Endpoint::listener(KEY.reversed(), 0, p));
        let mut out = Vec::new();
        c.connect(t(0), p, &mut out);
        let syn = out.pop().unwrap();
        s.on_segment(&syn, t(50), p, &mut out);
        let syn_ack = out.pop().unwrap();
        c.on_segment(&syn_ack, t(100), p, &mut out);
        let ack = out.pop().unwrap();
        s.on_segment(&ack, t(150), p, &mut out);
        assert_eq!((c.state, s.state), (State::Established, State::Established));
        c.app_write(segments * MSS, false, t(100), p, &mut out);
        assert_eq!(out.len(), 10);
        (c, s, out)
    }

    /// Packet numbers (0-based) of data segments.
    fn pkts(segs: &[Packet]) -> Vec<u64> {
        segs.iter().filter(|x| x.payload_len > 0).map(|x| (x.seq as u64 - 1) / MSS).collect()
    }

    /// The ACKs the server sends for the data packets `arrive` (0-based), in that order.
    fn acks_for(s: &mut Endpoint, p: &TcpParams, data: &[Packet], arrive: &[u64], at: Instant) -> Vec<Packet> {
        let mut acks = Vec::new();
        for &k in arrive {
            let seg = data.iter().find(|x| x.payload_len > 0 && (x.seq as u64 - 1) / MSS == k).unwrap();
            s.on_segment(seg, at, p, &mut acks);
        }
        acks
    }

    #[test]
    fn next_hole_is_the_first_unsacked_offset_with_a_block_above_it() {
        // Packets 21, 23-24 SACKed with 20 and 22 lost (one offset per packet here):
        // nexthole(20) = 20, nexthole(21) = 22 (the end of [21, 22)), nexthole(23) = None
        // (in the last block: fcnt = -1), nexthole(25) = None (above every block).
        let blocks = [(21, 22), (23, 25)];
        assert_eq!(next_hole_below_a_block(&blocks, 20), Some(20));
        assert_eq!(next_hole_below_a_block(&blocks, 21), Some(22));
        assert_eq!(next_hole_below_a_block(&blocks, 22), Some(22));
        assert_eq!(next_hole_below_a_block(&blocks, 23), None);
        assert_eq!(next_hole_below_a_block(&blocks, 25), None);
        assert_eq!(next_hole_below_a_block(&[], 1), None);
    }

    #[test]
    fn pipe_starts_at_the_packets_out_less_three_and_each_dupack_takes_one() {
        // Ten packets out, packet 0 lost, 1-9 SACKed one by one. tcp-sack1.cc:336 at the
        // third duplicate ACK: pipe_ = maxseq_ - highest_ack_ - 3 = 10 - 0 - 3 = 7 and
        // cwnd_ = 10 / 2 = 5 (slowdown). Each later ACK takes one (:191) and send_much sends
        // while pipe_ < 5 (:435), one packet a send: ACKs 4 and 5 leave 6 and 5 (nothing
        // sent), ACKs 6-9 leave 4 and send one new packet each (10, 11, 12, 13).
        let p = params(FastRecoveryRule::Ns2);
        let (mut c, mut s, data) = sent_window(&p, 30);
        let acks = acks_for(&mut s, &p, &data, &[1, 2, 3, 4, 5, 6, 7, 8, 9], t(150));
        let mut sent = Vec::new();
        for a in &acks[..3] {
            c.on_segment(a, t(200), &p, &mut sent);
        }
        assert_eq!(pkts(&sent), vec![0], "the third duplicate ACK retransmits packet 0");
        assert_eq!((c.sack1_pipe(), c.cwnd, c.ssthresh), (7, 5 * MSS, 5 * MSS));
        let mut pipes = Vec::new();
        sent.clear();
        for a in &acks[3..] {
            c.on_segment(a, t(200), &p, &mut sent);
            pipes.push(c.sack1_pipe());
        }
        assert_eq!(pipes, vec![6, 5, 5, 5, 5, 5]);
        assert_eq!(pkts(&sent), vec![10, 11, 12, 13]);
    }

    #[test]
    fn a_duplicate_ack_counts_only_if_it_changes_the_scoreboard() {
        // scoreboard-rq.cc:89 CheckUpdate: the same SACK block twice is one duplicate ACK.
        let p = params(FastRecoveryRule::Ns2);
        let (mut c, mut s, data) = sent_window(&p, 30);
        let acks = acks_for(&mut s, &p, &data, &[1, 2], t(150));
        let mut sent = Vec::new();
        for a in [&acks[0], &acks[0], &acks[0], &acks[1]] {
            c.on_segment(a, t(200), &p, &mut sent);
        }
        assert_eq!((c.dupacks, c.stats.fast_retransmits), (2, 0));
        assert!(sent.is_empty(), "no sending while duplicate ACKs are counted (:187)");
    }

    #[test]
    fn holes_are_resent_once_before_new_data_and_a_partial_ack_takes_two_from_pipe() {
        // Packets 0 and 2 lost, 1 and 3-9 SACKed (eight duplicate ACKs). At the third:
        // retransmit 0, pipe_ = 10 - 0 - 3 = 7, cwnd_ 5. ACK 4 → 6, 5 → 5, 6 → 4: send
        // GetNextRetran's hole 2 (a block above it, no DupThresh per hole); 7 and 8 → 4:
        // no hole left with a block above, new packets 10 and 11.
        let p = params(FastRecoveryRule::Ns2);
        let (mut c, mut s, data) = sent_window(&p, 30);
        let acks = acks_for(&mut s, &p, &data, &[1, 3, 4, 5, 6, 7, 8, 9], t(150));
        let mut sent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut sent);
        }
        assert_eq!(pkts(&sent), vec![0, 2, 10, 11]);
        assert_eq!(c.sack1_pipe(), 5);
        // The retransmitted 0 arrives: a partial ACK up to 2. pipe_ loses one for the ACK
        // (:191) and one for being partial (:223): 3, so two new packets (12, 13) at 300 ms;
        // the timer restarts from this ACK (:224 newtimer).
        let partial = acks_for(&mut s, &p, &sent, &[0], t(250));
        let mut more = Vec::new();
        c.on_segment(&partial[0], t(300), &p, &mut more);
        assert_eq!(pkts(&more), vec![12, 13]);
        assert_eq!(c.sack1_pipe(), 5);
        assert_eq!(c.rto_at.get(), Some(t(300) + c.rtt.rto()));
        // The retransmitted 2 and the new 10, 11 arrive: the ACK reaches recover_ (10
        // packets) and ends recovery with cwnd_ still 5 (newack, no opencwnd: :196).
        let full = acks_for(&mut s, &p, &sent, &[2, 10, 11], t(250));
        let mut after = Vec::new();
        c.on_segment(&full[0], t(300), &p, &mut after);
        assert!(c.recovery.is_none());
        assert_eq!((c.cwnd, c.recover_mark), (5 * MSS, 0), "recover_ = 0 (:194)");
    }

    #[test]
    fn a_timeout_clears_the_scoreboard_and_ignores_duplicate_acks_until_a_new_ack() {
        // tcp-sack1.cc:403-413: out of recovery, timeout_ on, ClearScoreBoard. Duplicate
        // ACKs then neither count nor fill the scoreboard (:144), and go-back-N resends
        // what the receiver holds.
        let p = params(FastRecoveryRule::Ns2);
        let (mut c, mut s, data) = sent_window(&p, 30);
        let acks = acks_for(&mut s, &p, &data, &[1, 2], t(150));
        let mut sent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut sent);
        }
        assert!(!c.scoreboard.is_empty());
        let rto = c.next_deadline().unwrap();
        c.on_timer(rto, &p, &mut sent);
        assert_eq!((c.stats.timeouts, c.dupacks), (1, 0));
        assert!(c.scoreboard.is_empty());
        let late = acks_for(&mut s, &p, &data, &[3, 4, 5], rto);
        for a in &late {
            c.on_segment(a, rto, &p, &mut sent);
        }
        assert_eq!(c.dupacks, 0);
        assert!(c.scoreboard.is_empty());
    }

    #[test]
    fn the_sack1_sink_reports_only_the_blocks_it_remembers_in_8_bytes_each() {
        // Holes at packets 0, 2, 4, 6; 3, 1, 5, 7 arrive in that order, then 0. TCPSink/Sack1
        // (tcp-sink.cc:605-758) keeps the last three blocks reported, newest first: [7], [5],
        // [1] ([3] fell off at [7]'s push). Packet 0 brings the cumulative ACK past 1: no
        // first block, [1] is covered and popped: [7], [5]. RFC 2018 remembers [3] too.
        for (rule, want, option_bytes) in [(FastRecoveryRule::Ns2, vec![7, 5], 0), (FastRecoveryRule::Rfc, vec![7, 5, 3], 4)] {
            let p = params(rule);
            let (_, mut s, data) = sent_window(&p, 30);
            let acks = acks_for(&mut s, &p, &data, &[3, 1, 5, 7, 0], t(150));
            let last = acks.last().unwrap();
            assert_eq!((last.ack as u64 - 1) / MSS, 2);
            let firsts: Vec<u64> = last.sack_blocks().iter().map(|b| (b.start as u64 - 1) / MSS).collect();
            assert_eq!(firsts, want, "{rule:?}");
            assert_eq!(last.ip_len_bytes as u64, 40 + option_bytes + 8 * want.len() as u64, "{rule:?}");
        }
    }
}
