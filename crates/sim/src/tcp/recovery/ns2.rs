//! `fast_recovery = "ns2"`: ns-2 2.35's Reno and NewReno fast recovery window
//! (tcp-reno.cc, tcp-newreno.cc). ns-2 keeps the inflation apart from the window: `cwnd_`
//! is halved at the fast retransmit (tcp.cc `slowdown`, not rounded to whole packets) and
//! `dupwnd_` counts the inflation, starting at `numdupacks_`. The sender may have
//! `cwnd_ + dupwnd_` out. On leaving recovery `dupwnd_` is dropped and `cwnd_` is the
//! window, whatever is in flight (`exit_recovery_fix_` 0: no RFC 6582 FlightSize bound),
//! and it grows on that same ACK as on any new ACK (`recv_newack_helper`).
//!
//! Here `cwnd` holds ns-2's `cwnd_ + dupwnd_` during recovery, and `ns2_dupwnd` the second
//! term, so the rest of the sender reads the inflated window as it does for RFC 5681.

use super::*;

/// tcp-newreno.cc:300-302: with three or more duplicate ACKs counted (partial ACKs do not
/// reset the count, only a new ACK outside recovery does), an ACK sends at most 2 segments.
const NEWRENO_BURST_PKTS: usize = 2;

impl Endpoint {
    /// The most segments one ACK may send (`send_much`'s `maxburst`): ns-2's NewReno in
    /// recovery, or after a timeout once three duplicate ACKs came; else no bound
    /// (`maxburst_` 0).
    pub(in crate::tcp) fn ns2_burst_limit(&self, p: &TcpParams) -> usize {
        if p.recovery.ns2 && p.recovery.algorithm == Recovery::Newreno && self.dupacks >= p.recovery.dupthresh {
            NEWRENO_BURST_PKTS
        } else {
            usize::MAX
        }
    }

    /// ns-2's limited transmit (`singledup_`, tcp.cc:1596 `send_one`): on the first and
    /// second duplicate ACK, the segment at `snd_nxt` if what is out stays within cwnd plus
    /// the duplicate ACKs counted; unlike RFC 3042 also a segment sent before, after a
    /// timeout went back.
    pub(in crate::tcp) fn ns2_send_one(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.send_new(self.cwnd + self.dupacks as u64 * p.mss, 1, now, p, out);
    }

    /// ns-2's `windowd()` (tcp-reno.cc:60), what a decrease halves: the window without the
    /// inflation when a timeout ends recovery (`RenoTcpAgent::timeout` zeroes `dupwnd_`).
    pub(in crate::tcp) fn ns2_uninflated_cwnd(&self) -> u64 {
        let dupwnd = if self.recovery.is_some() { self.queues.as_ref().map_or(0, |q| q.ns2_dupwnd) } else { 0 };
        self.cwnd.saturating_sub(dupwnd)
    }

    /// The fast retransmit: `cwnd_` = min(cwnd_, window_) / 2 (tcp.cc:1266, 1309), inflated
    /// by the duplicate-ACK threshold (tcp-newreno.cc:174, tcp-reno.cc).
    pub(in crate::tcp) fn ns2_enter_recovery(&mut self, prior_cwnd: u64, p: &TcpParams) {
        let dupwnd = p.recovery.dupthresh as u64 * p.mss;
        self.queues_mut().ns2_dupwnd = dupwnd;
        self.cwnd = (prior_cwnd.min(p.rwnd) / 2).max(p.mss) + dupwnd;
    }

    /// A further duplicate ACK in recovery: `++dupwnd_` (the caller inflates `cwnd`).
    pub(in crate::tcp) fn ns2_dupack_in_recovery(&mut self, p: &TcpParams) {
        self.queues_mut().ns2_dupwnd += p.mss;
    }

    /// NewReno's partial ACK of `acked` bytes with `partial_window_deflation_` on
    /// (tcp-newreno.cc:64-79): the inflation absorbs all of the deflation but one packet,
    /// and what it cannot absorb comes off `cwnd_`, leaving `dupwnd_` one packet. The
    /// caller has already set the total (`cwnd_ + dupwnd_`) as RFC 6582 does.
    pub(in crate::tcp) fn ns2_partial_ack(&mut self, acked: u64, p: &TcpParams) {
        let q = self.queues_mut();
        q.ns2_dupwnd = if q.ns2_dupwnd > acked { q.ns2_dupwnd + p.mss - acked } else { p.mss };
    }

    /// Leaving recovery on `ack`: the window is `cwnd_` alone, grown by this ACK
    /// (tcp-newreno.cc:229-242, tcp-reno.cc:`dupwnd_ = 0` before `recv_newack_helper`).
    pub(in crate::tcp) fn ns2_exit_recovery(&mut self, ack: u64, acked_data: u64, now: Instant, p: &TcpParams) {
        let dupwnd = std::mem::take(&mut self.queues_mut().ns2_dupwnd);
        self.cwnd = self.cwnd.saturating_sub(dupwnd).max(p.mss);
        self.recovery = None;
        self.dupacks = 0;
        self.grow_window(ack, acked_data, None, now, p);
    }
}
