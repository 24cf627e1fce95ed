//! RFC 6937 Proportional Rate Reduction as Linux's `tcp_cwnd_reduction`
//! (`recovery_pacing = "prr"`): during SACK recovery, cwnd follows what the receiver got.

use crate::tcp::{Endpoint, TcpParams};

/// RFC 6937 state of the current SACK recovery (`recovery_pacing = "prr"`), bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::tcp) struct Prr {
    /// Delivered (cumulatively acknowledged or newly SACKed) since the recovery began.
    pub(in crate::tcp) delivered: u64,
    /// Sent since the recovery began.
    pub(in crate::tcp) out: u64,
    /// cwnd when it began (Linux's `prior_cwnd`, RFC 6937's RecoverFS).
    pub(in crate::tcp) prior_cwnd: u64,
    /// Delivered by the ACK being processed; 0 once it has set cwnd.
    pub(in crate::tcp) this_ack: u64,
    /// The ACK being processed may take the slow-start reduction bound (RFC 6937bis
    /// SafeACK, Linux's `FLAG_SND_UNA_ADVANCED && !newly_lost`): with RACK, it advanced
    /// `snd_una` and RACK marked nothing lost on it; with DupThresh, every ACK.
    pub(in crate::tcp) safe_ack: bool,
}

impl Endpoint {
    /// RFC 6937 DeliveredData of this ACK: the change in `snd_una` plus the change in
    /// SACKed bytes (`sacked_before` them), added up while in recovery.
    pub(in crate::tcp) fn prr_count_delivered(&mut self, ack: u64, sacked_before: u64, p: &TcpParams) {
        let delivered = (ack.saturating_sub(self.snd_una) + self.scoreboard.above(ack.max(self.snd_una), p.mss).0)
            .saturating_sub(sacked_before);
        let in_recovery = self.recovery.is_some();
        let prr = &mut self.queues_mut().prr;
        prr.this_ack = delivered;
        if in_recovery {
            prr.delivered += delivered;
        }
    }

    /// RFC 6937 PRR as Linux's `tcp_cwnd_reduction`, once per ACK that delivered data:
    /// cwnd = pipe + what may be sent now. Linux counts whole segments, hence the rounding.
    pub(in crate::tcp) fn prr_set_cwnd(&mut self, p: &TcpParams) {
        let pipe = self.pipe(p);
        let ssthresh = self.ssthresh;
        let Some(q) = self.queues.as_deref_mut() else { return };
        let prr = &mut q.prr;
        if prr.this_ack == 0 {
            return;
        }
        let sndcnt = if pipe > ssthresh {
            // Proportional: ceil(ssthresh · delivered / prior_cwnd) segments in all.
            ((ssthresh * prr.delivered).div_ceil(prr.prior_cwnd.max(1) * p.mss) * p.mss).saturating_sub(prr.out)
        } else {
            // Towards ssthresh: what was delivered (conservative reduction bound), one segment
            // more on a safe ACK (slow-start reduction bound).
            let bonus = if prr.safe_ack { p.mss } else { 0 };
            (ssthresh - pipe).min(prr.delivered.saturating_sub(prr.out).max(prr.this_ack) + bonus)
        };
        // The fast retransmit always goes out.
        let sndcnt = if prr.out == 0 { sndcnt.max(p.mss) } else { sndcnt };
        prr.this_ack = 0;
        self.cwnd = pipe + sndcnt;
    }
}
