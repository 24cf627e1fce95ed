//! Loss recovery, one file per algorithm, each with the same hooks (enter, on a duplicate
//! ACK in recovery, on a partial ACK, on the full ACK): RFC 5681 Reno (`reno.rs`), RFC 6582
//! NewReno (`newreno.rs`), RFC 6675 SACK recovery with its pipe and NextSeg (`sack.rs`), and
//! the parts SACK recovery may use, RFC 6937 PRR (`prr.rs`), RFC 8985 RACK's loss marks
//! (`rack.rs`) and its tail loss probes (`tlp.rs`); ns-2's Reno/NewReno window (`ns2.rs`) and
//! its Sack1 agent (`ns2_sack1.rs`, which handles its ACKs itself). This file holds the
//! congestion state and the dispatch.

mod newreno;
mod ns2;
pub(super) mod ns2_full;
pub(super) mod ns2_sack1;
pub(super) mod prr;
pub(super) mod rack;
mod reno;
mod sack;
pub(super) mod tlp;
pub(super) mod undo;

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

    pub(super) fn on_dupack(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.dupacks += 1;
        if self.recovery.is_some() {
            if p.recovery.algorithm != Recovery::Sack {
                self.reno_inflate(p);
                if p.recovery.ns2 && !p.recovery.fulltcp {
                    self.ns2_dupack_in_recovery(p);
                }
            }
            self.try_send(now, p, out);
            return;
        }
        // RFC 6675 §5 (2): a dupack that leaves `snd_una` lost starts recovery early.
        let lost = if p.recovery.rack {
            self.rack_first_lost().is_some() // no duplicate-ACK count: RACK's marks alone
        } else {
            self.dupacks >= p.recovery.dupthresh || (p.sack() && self.is_lost(self.snd_una, p))
        };
        if p.recovery.fulltcp && self.dupacks > p.recovery.dupthresh {
            self.fulltcp_extra_ack(now, p, out);
        } else if lost {
            if p.recovery.fulltcp {
                self.fulltcp_at_threshold();
            }
            let enter = match p.recovery.algorithm {
                _ if p.recovery.fulltcp => self.fulltcp_may_fast_retransmit(),
                // ns-2 (tcp-reno.cc, tcp-newreno.cc `dupack_action`, `bugfix_ack_` off): only
                // past `recover`, or when nothing but the SYN was acknowledged (`bugfix_ss_`).
                _ if p.recovery.ns2 => self.snd_una > self.recover_mark || self.snd_una <= 1,
                Recovery::Reno => true,
                Recovery::Newreno => self.newreno_may_enter(p),
                Recovery::Sack => self.sack_may_enter(),
            };
            if enter {
                self.enter_fast_recovery(now, p, out);
            }
        } else if p.recovery.fulltcp {
            // FullTcp has no limited transmit: a duplicate ACK below the threshold sends nothing.
        } else if p.recovery.limited_transmit && p.recovery.ns2 {
            self.ns2_send_one(now, p, out);
        } else if p.recovery.limited_transmit && self.snd_nxt == self.snd_max {
            // RFC 3042: one previously unsent segment per dupack, FlightSize <= cwnd + 2 SMSS.
            self.send_new(self.cwnd + 2 * p.mss, 1, now, p, out);
        }
    }

    /// The ACK that reaches `recover` ends the episode.
    pub(in crate::tcp) fn on_full_ack(&mut self, p: &TcpParams) {
        match p.recovery.algorithm {
            Recovery::Sack => self.sack_on_full_ack(p),
            Recovery::Reno | Recovery::Newreno => self.reno_on_full_ack(p),
        }
        self.recovery = None;
        self.dupacks = 0;
    }

    /// An ACK of new data (`acked` bytes) below `recover`.
    pub(in crate::tcp) fn on_partial_ack(&mut self, r: FastRecovery, acked: u64, now: Instant, p: &TcpParams,
                                         out: &mut Vec<Packet>) {
        match p.recovery.algorithm {
            Recovery::Reno => self.reno_on_partial_ack(),
            Recovery::Newreno => self.newreno_on_partial_ack(r, acked, now, p, out),
            Recovery::Sack => self.sack_on_partial_ack(r, now, p),
        }
    }

    /// Fast retransmit: what every algorithm does on entering recovery (the count, the
    /// end of slow start, ssthresh, `recover`), then the algorithm's own entry.
    pub(super) fn enter_fast_recovery(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.stats.fast_retransmits += 1;
        self.hystart = None; // RFC 9406 §4.2: a loss ends slow start and CSS
        // RACK leaving RTO recovery: FlightSize still counts what the RTO gave up on, so
        // halve cwnd instead, as Linux's tcp_init_cwnd_reduction always does.
        let base = if p.recovery.rack && self.cong_state() == CongState::Loss { self.cwnd } else { self.decrease_base(p) };
        let prior_cwnd = self.cwnd;
        if p.recovery.recovery_undo {
            self.undo_on_recovery(self.cwnd, self.ssthresh);
        }
        if p.bbr() {
            self.bbr_save_cwnd(p); // bbr_ssthresh: ssthresh stays
        } else {
            self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd, base, p.mss);
        }
        self.recover_mark = self.snd_max;
        self.ca_acked = 0;
        self.recovery = Some(FastRecovery { high_rxt: self.snd_una, first_partial: true });
        match p.recovery.algorithm {
            Recovery::Sack => self.sack_enter(now, p, out),
            Recovery::Reno | Recovery::Newreno => {
                self.reno_enter(now, p, out);
                if p.recovery.fulltcp {
                    self.fulltcp_enter_recovery(p);
                } else if p.recovery.ns2 {
                    self.ns2_enter_recovery(prior_cwnd, p);
                }
            }
        }
        if p.recovery.fast_retransmit_rto == FastRetransmitRto::Restart {
            self.arm_rto(now, p);
        }
    }

    /// Retransmits the segment at `snd_una`.
    pub(super) fn retransmit_una(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let (off, len, fin) = self.segment_at(self.snd_una, p);
        self.send_segment(off, len, fin, now, p, out);
        if let Some(r) = &mut self.recovery {
            r.high_rxt = r.high_rxt.max(off + len + fin as u64);
        }
    }
}
