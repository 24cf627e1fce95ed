//! Loss recovery: fast retransmit and fast recovery (RFC 5681 §3.2, RFC 6582), SACK
//! recovery (RFC 6675: IsLost, SetPipe, NextSeg), PRR (RFC 6937) and RACK's loss marks
//! (RFC 8985, `rack.rs`); PRR's state and cwnd in `prr.rs`.

mod ns2;
pub(super) mod prr;
pub(super) mod rack;

use super::*;

/// The sender's loss-recovery state, named as Linux's `icsk_ca_state` and ns-3's
/// `TcpCongState_t` (Linux's CWR, for ECN, has no counterpart here). Derived from the
/// recovery episode, `recover` and the duplicate-ACK count, so it cannot drift from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CongState {
    /// No loss suspected.
    Open,
    /// Duplicate ACKs seen, too few (or no lost segment yet) for fast retransmit.
    Disorder,
    /// Fast recovery (RFC 5681 §3.2, RFC 6582, RFC 6675), until an ACK reaches `recover`.
    Recovery,
    /// After a retransmission timeout, until `snd_una` passes what was sent before it
    /// (RFC 6582's `recover`, RFC 6675's RecoveryPoint; Linux's CA_Loss). A Reno sender that
    /// left fast recovery on a partial ACK is also below `recover` and reports this.
    Loss,
}

impl Endpoint {
    pub fn cong_state(&self) -> CongState {
        if self.recovery.is_some() {
            CongState::Recovery
        } else if self.snd_una < self.recover_mark {
            CongState::Loss
        } else if self.dupacks > 0 {
            CongState::Disorder
        } else {
            CongState::Open
        }
    }

    /// RACK's marks over the segments not yet delivered; arms or clears its timer.
    pub(super) fn rack_detect_loss(&mut self, now: Instant, p: &TcpParams) -> LossMarks {
        let in_recovery = matches!(self.cong_state(), CongState::Recovery | CongState::Loss);
        let srtt = self.rtt.srtt();
        self.queues_mut().rack.detect_loss(now, in_recovery, p.dupthresh, srtt)
    }

    /// RACK marked a segment lost: in recovery, resend within the recovery's window; else
    /// perhaps start one.
    pub(super) fn rack_respond(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>, marks: LossMarks) {
        if self.recovery.is_some() {
            self.try_send(now, p, out);
        } else if self.rack_starts_recovery(marks, self.snd_una) && self.rack_first_lost().is_some() {
            self.enter_fast_recovery(now, p, out);
        }
    }

    /// Whether RACK's `marks` start fast recovery once `snd_una` is `una`. Linux's
    /// tcp_fastretrans_alert: on any mark once the last recovery is over; after an RTO only on
    /// a resent segment lost again (FLAG_LOST_RETRANS in CA_Loss).
    pub(super) fn rack_starts_recovery(&self, marks: LossMarks, una: u64) -> bool {
        let after_rto = self.recovery.is_none() && una < self.recover_mark;
        marks.any && self.recovery.is_none() && una < self.snd_max && self.can_send_data()
            && (una >= self.recover_mark || (marks.retransmission && after_rto))
    }

    pub(super) fn rack_first_lost(&self) -> Option<(u64, u64)> {
        self.queues.as_deref().and_then(|q| q.rack.first_lost())
    }

    pub(super) fn on_dupack(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.dupacks += 1;
        if self.recovery.is_some() {
            if p.recovery != Recovery::Sack {
                self.cwnd += p.mss; // RFC 5681 step 4: inflate
                if p.ns2_recovery {
                    self.ns2_dupack_in_recovery(p);
                }
            }
            self.try_send(now, p, out);
            return;
        }
        // RFC 6675 §5 (2): a dupack that leaves `snd_una` lost starts recovery early.
        let lost = if p.rack {
            self.rack_first_lost().is_some() // no duplicate-ACK count: RACK's marks alone
        } else {
            self.dupacks >= p.dupthresh || (p.sack() && self.is_lost(self.snd_una, p))
        };
        if lost {
            let enter = match p.recovery {
                // ns-2 (tcp-reno.cc, tcp-newreno.cc `dupack_action`, `bugfix_ack_` off): only
                // past `recover`, or when nothing but the SYN was acknowledged (`bugfix_ss_`).
                _ if p.ns2_recovery => self.snd_una > self.recover_mark || self.snd_una <= 1,
                Recovery::Reno => true,
                // RFC 6582 §3.2 step 2: a new episode only past `recover`, or by the ACK heuristic.
                Recovery::Newreno => {
                    self.snd_una > self.recover_mark
                        || (self.cwnd > p.mss && self.snd_una - self.prev_highest_ack <= 4 * p.mss)
                }
                // RFC 6675 §5.1: none until HighACK reaches the RecoveryPoint of the last one.
                Recovery::Sack => self.snd_una >= self.recover_mark,
            };
            if enter {
                self.enter_fast_recovery(now, p, out);
            }
        } else if p.limited_transmit && p.ns2_recovery {
            self.ns2_send_one(now, p, out);
        } else if p.limited_transmit && self.snd_nxt == self.snd_max {
            // RFC 3042: one previously unsent segment per dupack, FlightSize <= cwnd + 2 SMSS.
            self.send_new(self.cwnd + 2 * p.mss, 1, now, p, out);
        }
    }

    /// The ACK that reaches `recover` ends the episode (RFC 6582 §3.2 step 3, option 1:
    /// cwnd = min(ssthresh, FlightSize + SMSS); RFC 6675: cwnd = ssthresh).
    pub(in crate::tcp) fn on_full_ack(&mut self, p: &TcpParams) {
        self.cwnd = match p.recovery {
            Recovery::Sack => self.ssthresh,
            _ => self.ssthresh.min(self.flight_size().max(p.mss) + p.mss),
        };
        self.recovery = None;
        self.dupacks = 0;
    }

    /// An ACK of new data below `recover` (`acked` bytes): Reno leaves recovery (RFC 5681
    /// §3.2 step 6); NewReno retransmits the next hole and deflates (RFC 6582 §3.2 step 3);
    /// SACK recovery goes on by the scoreboard. The timer restarts on the first partial ACK
    /// only, for NewReno and with `recovery_rto = "first_partial"`.
    pub(in crate::tcp) fn on_partial_ack(&mut self, mut r: FastRecovery, acked: u64, now: Instant, p: &TcpParams,
                                         out: &mut Vec<Packet>) {
        match p.recovery {
            Recovery::Reno => {
                self.cwnd = self.ssthresh;
                self.recovery = None;
                self.dupacks = 0;
            }
            Recovery::Newreno => {
                self.retransmit_una(now, p, out);
                self.cwnd = self.cwnd.saturating_sub(acked) + if acked >= p.mss { p.mss } else { 0 };
                self.cwnd = self.cwnd.max(p.mss);
                if p.ns2_recovery {
                    self.ns2_partial_ack(acked, p);
                }
                if r.first_partial {
                    r.first_partial = false;
                    self.arm_rto(now, p);
                }
                self.recovery = Some(r);
            }
            Recovery::Sack if p.first_partial_rto && r.first_partial => {
                r.first_partial = false;
                self.recovery = Some(r);
                self.arm_rto(now, p);
            }
            Recovery::Sack => {}
        }
    }

    pub(super) fn enter_fast_recovery(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.stats.fast_retransmits += 1;
        self.hystart = None; // RFC 9406 §4.2: a loss ends slow start and CSS
        // RACK leaving RTO recovery: FlightSize still counts what the RTO gave up on, so
        // halve cwnd instead, as Linux's tcp_init_cwnd_reduction always does.
        let base = if p.rack && self.cong_state() == CongState::Loss { self.cwnd } else { self.decrease_base(p) };
        let prior_cwnd = self.cwnd;
        self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd, base, p.mss);
        self.recover_mark = self.snd_max;
        self.ca_acked = 0;
        self.recovery = Some(FastRecovery { high_rxt: self.snd_una, first_partial: true });
        match p.recovery {
            Recovery::Sack if p.prr => {
                let prior_cwnd = self.cwnd;
                let q = self.queues_mut();
                q.prr = Prr { delivered: q.prr.this_ack, out: 0, prior_cwnd, ..q.prr };
                self.prr_set_cwnd(p);
                // Forced, as Linux does, but paced as Linux's tcp_xmit_retransmit_queue is:
                // a held one goes when the pacing timer calls sack_send.
                if !self.paced_out(now, p) {
                    self.retransmit_first_lost(now, p, out);
                }
                self.sack_send(now, p, out);
            }
            Recovery::Sack => {
                self.cwnd = self.ssthresh;
                self.retransmit_first_lost(now, p, out);
                self.sack_send(now, p, out);
            }
            _ => {
                self.retransmit_una(now, p, out);
                self.cwnd = self.ssthresh + p.dupthresh as u64 * p.mss;
                if p.ns2_recovery {
                    self.ns2_enter_recovery(prior_cwnd, p);
                }
            }
        }
        if p.fast_retransmit_rto == FastRetransmitRto::Restart {
            self.arm_rto(now, p);
        }
    }

    /// The fast retransmit: the first segment RACK marked lost, or the one at `snd_una`.
    pub(super) fn retransmit_first_lost(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        match self.rack_lost_segment(p) {
            Some(seg) => self.send_next_seg(seg, now, p, out),
            None => self.retransmit_una(now, p, out),
        }
    }

    /// The first un-SACKed segment of what RACK marked lost.
    pub(super) fn rack_lost_segment(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        let (hole, _) = self.rack_first_lost().and_then(|(s, e)| self.scoreboard.first_gap(s, e))?;
        Some(self.segment_at(hole, p))
    }

    /// Retransmits the segment at `snd_una`.
    pub(super) fn retransmit_una(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let (off, len, fin) = self.segment_at(self.snd_una, p);
        self.send_segment(off, len, fin, now, p, out);
        if let Some(r) = &mut self.recovery {
            r.high_rxt = r.high_rxt.max(off + len + fin as u64);
        }
    }

    /// RFC 6675 IsLost: DupThresh SACKed segments, or more than (DupThresh-1)*SMSS SACKed
    /// bytes, above `offset`.
    pub(super) fn is_lost(&self, offset: u64, p: &TcpParams) -> bool {
        let (bytes, segments) = self.scoreboard.above(offset + 1, p.mss);
        bytes > (p.dupthresh as u64 - 1) * p.mss || segments >= p.dupthresh as u64
    }

    /// RFC 6675 SetPipe: bytes believed in the network.
    pub(super) fn pipe(&self, p: &TcpParams) -> u64 {
        if p.rack {
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
        if p.recovery_pipe == RecoveryPipe::Ns3 {
            pipe += self.sacked_rexmit_bytes();
        }
        pipe
    }

    /// ns-3's `BytesInFlight` = sent − SACKed − lost + retransmitted: `Update` marks a
    /// retransmitted segment SACKed without clearing its `m_retrans`, so it counts once more
    /// than RFC 6675's SetPipe, which skips every SACKed octet.
    pub(super) fn sacked_rexmit_bytes(&self) -> u64 {
        let Some(q) = self.queues.as_deref() else { return 0 };
        let sacked = self.scoreboard.ranges();
        q.recovery_rexmits.ranges().iter()
            .flat_map(|&(rs, re)| sacked.iter().map(move |&(s, e)| re.min(e).saturating_sub(rs.max(s))))
            .sum()
    }

    /// RFC 6675 NextSeg rules 1-3: a lost hole, else new data, else a rescue of an
    /// un-SACKed hole below the highest SACKed byte.
    pub(super) fn next_seg(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        if p.rack {
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
    pub(super) fn next_new_seg(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        if self.snd_max >= self.send_end() {
            return None;
        }
        let (off, len, fin) = self.segment_at(self.snd_max, p);
        (off + len - self.snd_una <= p.rwnd).then_some((off, len, fin))
    }

    pub(super) fn sack_send(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if p.prr {
            self.prr_set_cwnd(p);
        }
        while self.cwnd >= self.pipe(p) + p.mss && !self.paced_out(now, p) {
            let Some(seg) = self.next_seg(p) else { break };
            self.send_next_seg(seg, now, p, out);
        }
    }

    /// Sends a segment NextSeg chose: HighRxt or HighData move (RFC 6675 (C.2), (C.3)).
    pub(super) fn send_next_seg(&mut self, (off, len, fin): (u64, u64, bool), now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
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
