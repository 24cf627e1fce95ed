//! Undo of a spurious retransmission timeout by timestamps, as Linux does (`rto_undo`;
//! net/ipv4/tcp_input.c, `tcp_enter_loss`, `tcp_process_loss`, `tcp_try_undo_loss`,
//! `tcp_packet_delayed`): RFC 3522's Eifel detection with RFC 4015's response. When an ACK
//! after a timeout advances `snd_una` and echoes a timestamp older than the timeout's first
//! retransmission, it was sent for an original transmission: the segments were delayed,
//! not lost. The sender then restores cwnd and ssthresh as they were before the timeout,
//! leaves the Loss state, and goes on with new data instead of resending the window.
//!
//! Not modelled: DSACK-based undo (our receivers send no DSACK), F-RTO, and undo of a fast
//! retransmit (`tcp_try_undo_recovery`, `tcp_try_undo_partial`).

use crate::tcp::{ts_now, Endpoint, Instant, Packet, TcpParams};

/// What a timeout may have to undo (Linux's `prior_cwnd`, `prior_ssthresh`, `retrans_stamp`).
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::tcp) struct Undo {
    prior: Option<(u64, u64)>,
    /// Timestamp (TSval) of the timeout's first retransmission.
    retrans_stamp: Option<u32>,
    /// Timeouts undone (Linux's TcpExtTCPLossUndo).
    pub(in crate::tcp) undone: u32,
}

impl Endpoint {
    /// `tcp_enter_loss`, before ssthresh is cut: keeps cwnd and `tcp_current_ssthresh`
    /// (outside recovery max(ssthresh, 3/4 cwnd)) for a possible undo. A timeout in fast
    /// recovery keeps nothing: Linux's undo marker then dates from the recovery.
    pub(in crate::tcp) fn undo_on_rto(&mut self) {
        let prior = (self.recovery.is_none()).then(|| (self.cwnd, self.ssthresh.max(self.cwnd / 4 * 3)));
        let undone = self.queues.as_deref().map_or(0, |q| q.undo.undone);
        self.queues_mut().undo = Undo { prior, retrans_stamp: None, undone };
    }

    /// The timeout's first retransmission went out at `now`.
    pub(in crate::tcp) fn undo_note_retransmission(&mut self, now: Instant) {
        let undo = &mut self.queues_mut().undo;
        if undo.prior.is_some() && undo.retrans_stamp.is_none() {
            undo.retrans_stamp = Some(ts_now(now));
        }
    }

    /// `tcp_try_undo_loss` on an ACK that advanced `snd_una` from the Loss state (`in_loss`):
    /// undoes the timeout if the ACK echoes a timestamp from before its first retransmission.
    pub(in crate::tcp) fn undo_spurious_rto(&mut self, seg: &Packet, in_loss: bool, p: &TcpParams) {
        if !in_loss || !p.timers.timestamps || seg.ts_ecr == 0 {
            return;
        }
        let Some(q) = self.queues.as_deref_mut() else { return };
        let (Some((prior_cwnd, prior_ssthresh)), Some(stamp)) = (q.undo.prior, q.undo.retrans_stamp) else { return };
        if (seg.ts_ecr.wrapping_sub(stamp) as i32) >= 0 {
            return; // echoes the retransmission or later: the loss may be real
        }
        q.undo = Undo { undone: q.undo.undone + 1, ..Undo::default() };
        q.rack.undo_loss_marks();
        // tcp_undo_cwnd_reduction: Reno's and CUBIC's undo_cwnd is max(cwnd, prior_cwnd);
        // BBR's keeps cwnd and restarts its full-pipe test (bbr_undo_cwnd).
        match self.queues.as_deref_mut().and_then(|q| q.bbr.as_deref_mut()) {
            Some(bbr) => bbr.undo(),
            None => self.cwnd = self.cwnd.max(prior_cwnd),
        }
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
        self.recover_mark = self.snd_una; // CA_Open
        self.rto_una = crate::tcp::Opt64::NONE;
        self.snd_nxt = self.snd_max; // nothing is marked lost any more: no go-back-N
    }

    /// Timeouts undone as spurious.
    pub fn rto_undos(&self) -> u64 {
        self.queues.as_deref().map_or(0, |q| q.undo.undone.into())
    }
}
