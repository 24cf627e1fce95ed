//! Undo of spurious retransmissions, as Linux does (net/ipv4/tcp_input.c):
//!
//! - a timeout (`rto_undo`; `tcp_enter_loss`, `tcp_process_loss`, `tcp_try_undo_loss`,
//!   `tcp_packet_delayed`): RFC 3522's Eifel detection with RFC 4015's response. When an ACK
//!   after a timeout advances `snd_una` and echoes a timestamp older than the timeout's first
//!   retransmission, it was sent for an original transmission: the segments were delayed,
//!   not lost. With `dsack`, also when every retransmission of the timeout was D-SACKed;
//! - a fast recovery (`recovery_undo`; `tcp_try_undo_recovery`, `tcp_try_undo_dsack`): at the
//!   ACK that ends it, if the timestamps show the originals arrived or every retransmission
//!   was D-SACKed, and at any D-SACK that completes the count, in recovery or after it;
//! - F-RTO (`frto`, RFC 5682 §3.1 SACK-enhanced as `tcp_frto = 2`): after a timeout, the
//!   first ACK that advances `snd_una` sends new data instead of resending; an ACK that
//!   then (S)ACKs data sent before the timeout and never retransmitted shows the timeout
//!   was spurious (`FLAG_ORIG_SACK_ACKED`).
//!
//! An undo restores cwnd and ssthresh as they were before the episode
//! (`tcp_undo_cwnd_reduction`) and the sender goes on with new data.
//!
//! Not modelled: `tcp_try_undo_partial` (undo on a partial ACK in recovery).

use crate::tcp::recovery::CongState;
use crate::tcp::{ts_now, Endpoint, Instant, Opt64, Packet, TcpParams};

/// Linux's TCP_RACK_RECOVERY_THRESH: recoveries a grown reordering window persists for.
pub(in crate::tcp) const RACK_RECOVERY_THRESH: u8 = 16;

/// What an episode may have to undo (Linux's `undo_marker`, `prior_cwnd`,
/// `prior_ssthresh`, `retrans_stamp`, `undo_retrans`, `frto`), and the counters.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::tcp) struct Undo {
    /// `snd_una` when the episode began (`undo_marker`): it may still be undone.
    marker: Option<u64>,
    /// cwnd and ssthresh to restore (`prior_cwnd`, `prior_ssthresh`; `None`: 0).
    prior: Option<(u64, u64)>,
    /// Timestamp (TSval) of the episode's first retransmission.
    retrans_stamp: Option<u32>,
    /// Retransmissions of the episode not yet D-SACKed (`undo_retrans`; `None`: −1, none).
    retrans: Option<u32>,
    /// F-RTO is running for the last timeout (`tp->frto`).
    frto: bool,
    /// Segments D-SACKed so far (`dsack_dups`).
    dsack_dups: u64,
    /// Timeouts undone (Linux's TcpExtTCPLossUndo), F-RTO's included.
    pub(in crate::tcp) undone: u32,
    /// Of them, by F-RTO (TcpExtTCPSpuriousRTOs).
    pub(in crate::tcp) spurious_rtos: u32,
    /// Fast recoveries undone (TcpExtTCPFullUndo + TcpExtTCPDSACKUndo).
    pub(in crate::tcp) recoveries: u32,
    /// ACKs with a D-SACK the sender accepted (TcpExtTCPDSACKRecv + TCPDSACKOfoRecv).
    pub(in crate::tcp) dsacks: u32,
}

impl Undo {
    /// `tcp_init_undo`: a new episode, keeping the counters.
    fn begin(self, una: u64, prior: Option<(u64, u64)>) -> Undo {
        Undo { marker: prior.map(|_| una), prior, frto: false, ..self.reset() }
    }

    /// No episode to undo, counters kept.
    fn reset(self) -> Undo {
        Undo {
            dsack_dups: self.dsack_dups, undone: self.undone, spurious_rtos: self.spurious_rtos,
            recoveries: self.recoveries, dsacks: self.dsacks, ..Undo::default()
        }
    }

    /// `tcp_may_undo`: every retransmission D-SACKed, or the echoed timestamp `ts_ecr` (0:
    /// none) older than the first retransmission (`tcp_packet_delayed`).
    fn may_undo(&self, ts_ecr: u32) -> bool {
        let delayed = ts_ecr != 0 && self.retrans_stamp.is_some_and(|stamp| (ts_ecr.wrapping_sub(stamp) as i32) < 0);
        self.marker.is_some() && (self.retrans == Some(0) || delayed)
    }
}

/// Why a timeout is undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LossUndo {
    /// `tcp_may_undo`: timestamps or D-SACKs.
    Evidence,
    /// F-RTO found never-retransmitted data (S)ACKed.
    Frto,
}

impl Endpoint {
    /// `tcp_enter_loss`, before ssthresh is cut: keeps cwnd and `tcp_current_ssthresh`
    /// (outside recovery max(ssthresh, 3/4 cwnd)) for a possible undo. A timeout in fast
    /// recovery keeps the recovery's episode with `recovery_undo` (Linux's undo marker then
    /// dates from the recovery), else nothing.
    pub(in crate::tcp) fn undo_on_rto(&mut self, p: &TcpParams) {
        if self.recovery.is_some() && p.recovery.recovery_undo {
            return;
        }
        let prior = (self.recovery.is_none()).then(|| (self.cwnd, self.ssthresh.max(self.cwnd / 4 * 3)));
        let una = self.snd_una;
        let undo = &mut self.queues_mut().undo;
        *undo = undo.begin(una, prior);
    }

    /// `tcp_enter_loss`'s F-RTO switch, at every timeout: on for a timeout outside recovery
    /// (`new_recovery`) or one that repeats (`icsk_retransmits`).
    pub(in crate::tcp) fn frto_on_rto(&mut self, new_recovery: bool, p: &TcpParams) {
        let frto = p.recovery.frto && (new_recovery || self.rto_retries > 1);
        self.queues_mut().undo.frto = frto;
    }

    /// `tcp_enter_recovery`'s `tcp_init_undo`, with `recovery_undo`: the fast retransmit
    /// starts an episode that may be undone; cwnd and `tcp_current_ssthresh` are kept.
    pub(in crate::tcp) fn undo_on_recovery(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        let una = self.snd_una;
        let undo = &mut self.queues_mut().undo;
        *undo = undo.begin(una, Some((prior_cwnd, prior_ssthresh.max(prior_cwnd / 4 * 3))));
    }

    /// A data segment was retransmitted at `now` (`tcp_retransmit_skb`): counted in
    /// `undo_retrans`, the first one's timestamp kept (`retrans_stamp`).
    pub(in crate::tcp) fn undo_note_retransmission(&mut self, now: Instant) {
        let Some(q) = self.queues.as_deref_mut() else { return };
        let undo = &mut q.undo;
        if undo.marker.is_some() {
            undo.retrans = Some(undo.retrans.unwrap_or(0).saturating_add(1));
            undo.retrans_stamp.get_or_insert(ts_now(now));
        }
    }

    /// `tcp_check_dsack` and `tcp_dsack_seen` on an ACK whose cumulative part is `ack`,
    /// before it moves `snd_una`: whether its first SACK block is a D-SACK the sender
    /// accepts (RFC 2883 §4: below the cumulative ACK, or inside the second block). An
    /// accepted one counts down `undo_retrans` and may grow RACK's reordering window.
    pub(in crate::tcp) fn check_dsack(&mut self, seg: &Packet, ack: u64, p: &TcpParams) -> bool {
        let blocks = seg.sack_blocks();
        let Some(first) = blocks.first() else { return false };
        let (start, end) = (self.unwrap_ack(first.start), self.unwrap_ack(first.end));
        let inside_second = blocks.get(1).is_some_and(|b| {
            let (s, e) = (self.unwrap_ack(b.start), self.unwrap_ack(b.end));
            s <= start && end <= e
        });
        if !(start < ack || inside_second) || start >= end || end - start > p.rwnd {
            return false; // not a D-SACK, or a dubious one (longer than the window)
        }
        let segments = (end - start).div_ceil(p.mss);
        let tlp_dsack = end - start <= p.mss && self.tlp_high_seq() == Some(end);
        let retransmits = self.stats.retransmits;
        let q = self.queues_mut();
        q.undo.dsack_dups += segments;
        if q.undo.dsack_dups > retransmits {
            return false; // more duplicates than retransmissions: the network copied them
        }
        q.undo.dsacks += 1;
        // RACK grows its window for D-SACKs that reordering may explain (not a probe's).
        if p.recovery.rack_dsack_reo_wnd && q.rack.reordering_seen() && !tlp_dsack {
            q.rack.dsack_seen = true;
        }
        // Linux counts a D-SACK below `snd_una` ("already forgotten data") and one of a
        // segment above it that was retransmitted; here any past the episode's start while
        // some of its retransmissions are not yet D-SACKed (docs/tcp.md).
        let in_episode = q.undo.marker.is_some_and(|m| end > m);
        if let Some(r) = q.undo.retrans.as_mut().filter(|r| **r > 0 && in_episode) {
            *r = r.saturating_sub(segments as u32);
        }
        true
    }

    /// `tcp_try_undo_loss` on an ACK that advanced `snd_una` from the Loss state (`in_loss`):
    /// undoes the timeout if the timestamps or D-SACKs show it was spurious.
    pub(in crate::tcp) fn undo_spurious_rto(&mut self, seg: &Packet, in_loss: bool, p: &TcpParams) -> bool {
        if !in_loss {
            return false;
        }
        let ts_ecr = if p.timers.timestamps { seg.ts_ecr } else { 0 };
        if !self.queues.as_deref().is_some_and(|q| q.undo.may_undo(ts_ecr)) {
            return false;
        }
        self.undo_loss(LossUndo::Evidence);
        true
    }

    /// `tcp_process_loss`'s F-RTO steps on an ACK that found the sender in the Loss state,
    /// after `undo_spurious_rto` left it undone: `advanced` (it moved `snd_una`),
    /// `original_acked` (it (S)ACKed data sent before the timeout and never retransmitted:
    /// `FLAG_ORIG_SACK_ACKED`), `data_sacked` (new SACKed data) and `dupack`. Step 2.b sets
    /// `snd_nxt` to `snd_max`, so that the ACK's sends are new data (`frto_send_new`).
    pub(in crate::tcp) fn frto_on_ack(&mut self, advanced: bool, original_acked: bool, data_sacked: bool, dupack: bool,
        p: &TcpParams) {
        if !self.queues.as_deref().is_some_and(|q| q.undo.frto) {
            return;
        }
        if original_acked {
            self.undo_loss(LossUndo::Frto); // step 3.b: not all of the window was lost
            return;
        }
        if self.snd_max > self.recover_mark {
            if data_sacked || dupack {
                self.frto_give_up(); // step 3.a: the loss was real
            }
        } else if advanced && self.snd_una < self.recover_mark {
            // Step 2.b: new data, if there is any and the receive window allows it.
            if self.next_new_seg(p).is_some() {
                self.snd_nxt = self.snd_max;
            } else {
                self.frto_give_up();
            }
        }
    }

    /// F-RTO ends: the conventional go-back-N resend from `snd_una` (`REXMIT_LOST`).
    fn frto_give_up(&mut self) {
        self.queues_mut().undo.frto = false;
        self.snd_nxt = self.snd_una;
    }

    /// F-RTO's step 2.b is under way: new data goes by Linux's in-flight count (what the
    /// timeout did not mark lost), not by go-back-N from `snd_una`.
    pub(in crate::tcp) fn frto_sends_new(&self, p: &TcpParams) -> bool {
        p.recovery.frto && self.snd_nxt >= self.snd_max && self.cong_state() == CongState::Loss
            && self.queues.as_deref().is_some_and(|q| q.undo.frto)
    }

    /// New data while cwnd exceeds what is in flight (`tcp_xmit_recovery`'s `REXMIT_NEW`).
    pub(in crate::tcp) fn frto_send_new(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        while self.cwnd >= self.pipe(p) + p.mss && !self.paced_out(now, p) {
            let Some(seg) = self.next_new_seg(p) else { break };
            self.send_next_seg(seg, now, p, out);
        }
    }

    /// `tcp_try_undo_loss`'s response: `tcp_undo_cwnd_reduction` with the losses unmarked,
    /// then the Open state.
    fn undo_loss(&mut self, why: LossUndo) {
        let q = self.queues_mut();
        q.undo = Undo {
            undone: q.undo.undone + 1,
            spurious_rtos: q.undo.spurious_rtos + (why == LossUndo::Frto) as u32,
            ..q.undo
        };
        q.rack.undo_loss_marks();
        self.undo_cwnd_reduction();
        self.recover_mark = self.snd_una; // CA_Open
        self.rto_una = Opt64::NONE;
        self.snd_nxt = self.snd_max; // nothing is marked lost any more: no go-back-N
    }

    /// `tcp_undo_cwnd_reduction`: Reno's and CUBIC's `undo_cwnd` is max(cwnd, prior_cwnd);
    /// BBR's keeps cwnd and restarts its full-pipe test (`bbr_undo_cwnd`). Ends the episode.
    fn undo_cwnd_reduction(&mut self) {
        let q = self.queues_mut();
        let prior = q.undo.prior;
        q.undo = q.undo.reset();
        let Some((prior_cwnd, prior_ssthresh)) = prior else { return };
        match self.queues.as_deref_mut().and_then(|q| q.bbr.as_deref_mut()) {
            Some(bbr) => bbr.undo(),
            None => self.cwnd = self.cwnd.max(prior_cwnd),
        }
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
    }

    /// `tcp_try_undo_recovery` at the ACK that ends a fast recovery (cwnd already set to
    /// ssthresh): undoes it if `tcp_may_undo`; otherwise a grown RACK window persists for
    /// one recovery fewer.
    pub(in crate::tcp) fn undo_at_recovery_end(&mut self, seg: &Packet, p: &TcpParams) {
        let ts_ecr = if p.timers.timestamps { seg.ts_ecr } else { 0 };
        let Some(q) = self.queues.as_deref_mut() else { return };
        if q.undo.may_undo(ts_ecr) {
            q.undo.recoveries += 1;
            self.undo_cwnd_reduction();
        } else if p.recovery.rack_dsack_reo_wnd {
            q.rack.recovery_without_undo();
        }
    }

    /// `tcp_try_undo_dsack`, in fast recovery or after it (Open, Disorder): every
    /// retransmission of the episode was D-SACKed. A recovery ends (`tcp_try_to_open`); a
    /// loss still in sight starts a new one, as Linux's `tcp_time_to_recover` would.
    pub(in crate::tcp) fn undo_dsack(&mut self, p: &TcpParams) {
        let in_recovery = match self.cong_state() {
            CongState::Recovery => true,
            CongState::Open | CongState::Disorder => false,
            CongState::Loss => return,
        };
        let Some(q) = self.queues.as_deref_mut() else { return };
        if q.undo.marker.is_none() || q.undo.retrans != Some(0) {
            return;
        }
        q.undo.recoveries += 1;
        if p.recovery.rack_dsack_reo_wnd {
            q.rack.dsack_undo();
        }
        self.undo_cwnd_reduction();
        if in_recovery {
            self.recovery = None;
            self.recover_mark = self.snd_una; // Linux's high_seq = snd_nxt, Open or Disorder
        }
    }

    /// Timeouts undone as spurious (F-RTO's included).
    pub fn rto_undos(&self) -> u64 {
        self.queues.as_deref().map_or(0, |q| q.undo.undone.into())
    }

    /// Timeouts F-RTO found spurious.
    pub fn spurious_rtos(&self) -> u64 {
        self.queues.as_deref().map_or(0, |q| q.undo.spurious_rtos.into())
    }

    /// Fast recoveries undone (by timestamps or D-SACKs).
    pub fn recovery_undos(&self) -> u64 {
        self.queues.as_deref().map_or(0, |q| q.undo.recoveries.into())
    }

    /// ACKs whose D-SACK the sender accepted.
    pub fn dsacks_received(&self) -> u64 {
        self.queues.as_deref().map_or(0, |q| q.undo.dsacks.into())
    }
}
