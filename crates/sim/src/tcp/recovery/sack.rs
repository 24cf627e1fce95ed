//! RFC 6675 SACK loss recovery (`recovery = "sack"`): the scoreboard's IsLost, SetPipe and
//! NextSeg, sending while cwnd − pipe allows, with RFC 6937 PRR (`prr.rs`) setting cwnd when
//! `recovery_pacing = "prr"` and RACK (`rack.rs`) marking losses when `loss_detection = "rack"`.

use crate::tcp::config::RecoveryPipe;
use crate::tcp::recovery::prr::Prr;
use crate::tcp::{Endpoint, FastRecovery, Instant, Packet, State, TcpParams};

impl Endpoint {
    /// §5.1: no new episode until HighACK reaches the RecoveryPoint of the last one.
    pub(super) fn sack_may_enter(&self) -> bool {
        self.snd_una >= self.recover_mark
    }

    /// §5 (4.2)-(4.4): cwnd = ssthresh (or PRR's), retransmit the first lost segment, then
    /// send by pipe.
    pub(super) fn sack_enter(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if p.bbr() {
            // BBR sets cwnd itself (packet conservation) on this ACK, before the ACK's
            // sends, which go by the pipe, the lost segment first (`bbr.rs` in tcp/).
            self.sack_send(now, p, out);
            return;
        }
        if p.recovery.prr {
            let prior_cwnd = self.cwnd;
            let q = self.queues_mut();
            q.prr = Prr { delivered: q.prr.this_ack, out: 0, prior_cwnd, ..q.prr };
            self.prr_set_cwnd(p);
            // Forced, as Linux does, but paced as Linux's tcp_xmit_retransmit_queue is:
            // a held one goes when the pacing timer calls sack_send.
            if !self.paced_out(now, p) {
                self.retransmit_first_lost(now, p, out);
            }
        } else {
            self.cwnd = self.ssthresh;
            self.retransmit_first_lost(now, p, out);
        }
        self.sack_send(now, p, out);
    }

    /// A partial ACK changes nothing but the scoreboard; with `recovery_rto =
    /// "first_partial"` (ns-3) the first one restarts the timer.
    pub(super) fn sack_on_partial_ack(&mut self, mut r: FastRecovery, now: Instant, p: &TcpParams) {
        if p.recovery.first_partial_rto && r.first_partial {
            r.first_partial = false;
            self.recovery = Some(r);
            self.arm_rto(now, p);
        }
    }

    /// §5.1: the ACK that reaches the RecoveryPoint sets cwnd = ssthresh.
    pub(super) fn sack_on_full_ack(&mut self, p: &TcpParams) {
        if !p.bbr() {
            self.cwnd = self.ssthresh; // BBR restores its window itself
        }
    }

    /// The fast retransmit: the first segment RACK marked lost, or the one at `snd_una`.
    pub(in crate::tcp) fn retransmit_first_lost(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        match self.rack_lost_segment(p) {
            Some(seg) => self.send_next_seg(seg, now, p, out),
            None => self.retransmit_una(now, p, out),
        }
    }

    /// RFC 6675 IsLost: DupThresh SACKed segments, or more than (DupThresh-1)*SMSS SACKed
    /// bytes, above `offset`.
    pub(in crate::tcp) fn is_lost(&self, offset: u64, p: &TcpParams) -> bool {
        let (bytes, segments) = self.scoreboard.above(offset + 1, p.mss);
        bytes > (p.recovery.dupthresh as u64 - 1) * p.mss || segments >= p.recovery.dupthresh as u64
    }

    /// RFC 6675 SetPipe: bytes believed in the network.
    pub(in crate::tcp) fn pipe(&self, p: &TcpParams) -> u64 {
        if p.recovery.rack {
            return self.queues.as_deref().map_or(0, |q| q.rack.in_flight());
        }
        let high_rxt = self.recovery.map_or(self.snd_una, |r| r.high_rxt);
        let mut pipe = 0;
        let mut at = self.snd_una;
        while let Some((s, e)) = self.scoreboard.first_gap(at, self.snd_max) {
            let mut chunk = s;
            while chunk < e {
                let len = (e - chunk).min(p.mss);
                if !self.is_lost(chunk, p) {
                    pipe += len;
                }
                if chunk < high_rxt {
                    pipe += len;
                }
                chunk += len;
            }
            at = e;
        }
        if p.recovery.pipe == RecoveryPipe::Ns3 {
            pipe += self.sacked_rexmit_bytes();
        }
        pipe
    }

    /// ns-3's `BytesInFlight` = sent − SACKed − lost + retransmitted: `Update` marks a
    /// retransmitted segment SACKed without clearing its `m_retrans`, so it counts once more
    /// than RFC 6675's SetPipe, which skips every SACKed octet.
    pub(in crate::tcp) fn sacked_rexmit_bytes(&self) -> u64 {
        let Some(q) = self.queues.as_deref() else { return 0 };
        let sacked = self.scoreboard.ranges();
        q.recovery_rexmits.ranges().iter()
            .flat_map(|&(rs, re)| sacked.iter().map(move |&(s, e)| re.min(e).saturating_sub(rs.max(s))))
            .sum()
    }

    /// RFC 6675 NextSeg rules 1-3: a lost hole, else new data, else a rescue of an
    /// un-SACKed hole below the highest SACKed byte.
    pub(in crate::tcp) fn next_seg(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        if p.recovery.rack {
            // Linux's order: what RACK marked lost, then new data; no rescue retransmission.
            return self.rack_lost_segment(p).or_else(|| self.next_new_seg(p));
        }
        let high_rxt = self.recovery.map_or(self.snd_una, |r| r.high_rxt);
        let from = high_rxt.max(self.snd_una);
        let mut at = from;
        let mut rescue = None;
        let high_sacked = self.scoreboard.highest_end().unwrap_or(0);
        while let Some((s, e)) = self.scoreboard.first_gap(at, self.snd_max) {
            if self.is_lost(s, p) {
                return Some(self.segment_at(s, p));
            }
            if rescue.is_none() && s < high_sacked {
                rescue = Some(self.segment_at(s, p));
            }
            at = e; // no byte of a gap is SACKed, so IsLost is the same all through it
            if at >= high_sacked {
                break;
            }
        }
        self.next_new_seg(p).or(rescue)
    }

    /// RFC 6675 NextSeg rule 2: the next unsent segment, if the receive window allows it.
    pub(in crate::tcp) fn next_new_seg(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        if self.snd_max >= self.send_end() {
            return None;
        }
        let (off, len, fin) = self.segment_at(self.snd_max, p);
        (off + len - self.snd_una <= p.rwnd).then_some((off, len, fin))
    }

    pub(in crate::tcp) fn sack_send(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if self.bbr_holds_sends() {
            return;
        }
        if p.recovery.prr && !p.bbr() {
            self.prr_set_cwnd(p);
        }
        while self.cwnd >= self.pipe(p) + p.mss && !self.paced_out(now, p) {
            let Some(seg) = self.next_seg(p) else { break };
            self.send_next_seg(seg, now, p, out);
        }
    }

    /// Sends a segment NextSeg chose: HighRxt or HighData move (RFC 6675 (C.2), (C.3)).
    pub(in crate::tcp) fn send_next_seg(&mut self, (off, len, fin): (u64, u64, bool), now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let retransmission = off < self.snd_max;
        self.send_segment(off, len, fin, now, p, out);
        let end = off + len + fin as u64;
        if let Some(r) = self.recovery.as_mut().filter(|_| retransmission) {
            r.high_rxt = r.high_rxt.max(end);
        }
        self.snd_nxt = self.snd_nxt.max(end);
        if fin {
            self.state = match self.state {
                State::Established => State::FinWait1,
                State::CloseWait => State::LastAck,
                s => s,
            };
        }
    }
}
