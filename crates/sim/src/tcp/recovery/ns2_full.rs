//! `fast_recovery = "ns2_full"` (Reno only): the sender of ns-2 2.35's two-way
//! `Agent/TCP/FullTcp` (tcp-full.cc, tcp-full.h; lines at ns-2.35's `f95482f`) at
//! ns-default.tcl's defaults (`reno_fastrecov_` true :1229, `bugFix_` true :939,
//! `tcprexmtthresh_` 3 :1219, `open_cwnd_on_pack_` true :1231, `nodelay_` false :1221,
//! `ecn_` 0 :933). It shares the `"ns2"` rules (ssthresh, RTO, growth) and differs from the
//! one-way Reno agent (`recovery/ns2.rs`) in these:
//!
//! - the fast retransmit sets `cwnd_ = ssthresh_ + dupacks_` in whole packets (tcp-full.cc:2586)
//!   and each further duplicate ACK adds a packet to `cwnd_` itself (`extra_ack`,
//!   tcp-full.h:211), so a timeout in recovery halves the inflated window;
//! - any new ACK leaves `cwnd_` at `ssthresh_` if it is above (`pack_action`, tcp-full.cc:804,
//!   for partial and full ACKs alike), then opens it as any new ACK (:2301, `open_cwnd_on_pack_`);
//! - `dupack_action` (:2546) retransmits when `highest_ack_ > recover_` or when the last
//!   window action was a fast retransmit (`last_cwnd_action_ == CWND_ACTION_DUPACK`), so a
//!   second loss in the window is retransmitted fast again; after a timeout only past
//!   `recover_`. It sets `fastrecov_` even when it does not retransmit, and then duplicate
//!   ACKs past the threshold still inflate `cwnd_` and send (:2193-2200), until a new ACK;
//! - no limited transmit: the first two duplicate ACKs send nothing (:2187-2203);
//! - every new ACK ends the timer's backoff (`newack`, tcp-full.cc:1349-1356, `t_backoff_ = 1`
//!   outside the RTT-sample branch), after re-arming the timer with the backed-off RTO
//!   (:1303); the one-way agents end it only with an RTT sample (tcp.cc:1389-1397);
//! - Nagle (`nodelay_` false): new data shorter than a segment goes only when nothing is
//!   outstanding (`foutput`, :1050-1067).

use super::*;

/// FullTcp's `fastrecov_` and whether `last_cwnd_action_` is `CWND_ACTION_DUPACK`.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::tcp) struct FullTcp {
    fastrecov: bool,
    last_action_fast_retransmit: bool,
}

impl Endpoint {
    fn fulltcp(&self) -> FullTcp {
        self.queues.as_ref().map_or_else(FullTcp::default, |q| q.fulltcp)
    }

    /// `dupack_action`'s test (tcp-full.cc:2549-2556 with `bug_fix_` true, `ecn_` false).
    pub(in crate::tcp) fn fulltcp_may_fast_retransmit(&self) -> bool {
        self.snd_una > self.recover_mark || self.fulltcp().last_action_fast_retransmit
    }

    /// The `tcprexmtthresh_`-th duplicate ACK: `fastrecov_` is set whether or not it retransmits.
    pub(in crate::tcp) fn fulltcp_at_threshold(&mut self) {
        self.queues_mut().fulltcp.fastrecov = true;
    }

    /// The fast retransmit's window: `cwnd_ = ssthresh_ + dupacks_` (tcp-full.cc:2586).
    pub(in crate::tcp) fn fulltcp_enter_recovery(&mut self, p: &TcpParams) {
        self.cwnd = self.ssthresh + self.dupacks as u64 * p.mss;
        let q = self.queues_mut();
        q.fulltcp.last_action_fast_retransmit = true;
        q.fulltcp.fastrecov = true;
    }

    /// A duplicate ACK past the threshold outside fast recovery (after a timeout, where
    /// `dupack_action` did not retransmit): `extra_ack` inflates and `send_much` sends.
    pub(in crate::tcp) fn fulltcp_extra_ack(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if self.fulltcp().fastrecov && self.dupacks > p.recovery.dupthresh {
            self.cwnd += p.mss;
            self.try_send(now, p, out);
        }
    }

    /// A new ACK (`pack_action`/`ack_action`, then `opencwnd`): an inflated window falls to
    /// `ssthresh_`, recovery ends, and the window opens for this ACK.
    pub(in crate::tcp) fn fulltcp_new_ack(&mut self, ack: u64, acked_data: u64, rtt: Option<Duration>, now: Instant,
                                          p: &TcpParams) {
        if self.fulltcp().fastrecov && self.cwnd > self.ssthresh {
            self.cwnd = self.ssthresh;
        }
        self.queues_mut().fulltcp.fastrecov = false;
        self.recovery = None;
        self.dupacks = 0;
        if acked_data > 0 {
            self.grow_window(ack, acked_data, rtt, now, p);
        }
    }

    /// FullTcp's sender silly-window avoidance (`foutput`, tcp-full.cc:1050-1067, `nodelay_`
    /// false): a new segment of `len` < `maxseg_` bytes waits while anything is
    /// unacknowledged (`quiet` is `highest_ack_ == maxseq_`); retransmissions always go.
    /// The send buffer is always emptied by such a segment here (the window never cuts a
    /// segment short), and `wnd_ * maxseg_ / 2` (the other way out) is never below `maxseg_`.
    pub(in crate::tcp) fn fulltcp_nagle_holds(&self, len: u64, p: &TcpParams) -> bool {
        len > 0 && len < p.mss && self.snd_nxt >= self.snd_max && self.snd_una < self.snd_max
    }

    /// `newack` (tcp-full.cc:1349-1356): the backoff ends on any new ACK, sample or not; the
    /// caller has re-armed the timer first, with the backed-off RTO, as :1303 does.
    pub(in crate::tcp) fn fulltcp_end_backoff(&mut self) {
        self.rtt.reset_backoff();
    }

    /// `timeout_action` (tcp-full.cc:2591): `last_cwnd_action_` becomes a timeout and
    /// `fastrecov_` is cleared.
    pub(in crate::tcp) fn fulltcp_on_timeout(&mut self) {
        if let Some(q) = self.queues.as_deref_mut() {
            q.fulltcp = FullTcp::default();
        }
    }
}
