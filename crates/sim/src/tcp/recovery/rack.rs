//! RFC 8985 RACK loss detection (`loss_detection = "rack"`, SACK only), as Linux runs it
//! (net/ipv4/tcp_recovery.c; always on since Linux 6.17): a segment is lost once a segment
//! sent after it has been delivered and an RTT plus a reordering window has passed since
//! it was sent. No duplicate-ACK count is needed, and a lost retransmission is found the
//! same way as a lost first transmission. With `rack_dsack_reo_wnd` the reordering window
//! grows with D-SACKs as Linux's `tcp_rack_update_reo_wnd` does (docs/tcp.md).

use crate::tcp::sack::RangeSet;
use crate::tcp::recovery::CongState;
use crate::tcp::{Endpoint, Packet, TcpParams};
use smallpipe_core::{Duration, Instant};
use std::collections::VecDeque;

/// What one run of RACK_detect_loss marked lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::tcp) struct LossMarks {
    pub any: bool,
    /// A retransmission believed in flight was marked (Linux's `FLAG_LOST_RETRANS`).
    pub retransmission: bool,
    /// Segments marked (the growth of Linux's `tp->lost`).
    pub segments: u64,
}

/// One sent data segment not yet cumulatively acknowledged.
#[derive(Debug, Clone, Copy)]
struct Sent {
    start: u64,
    end: u64,
    /// Time of its last (re)transmission.
    xmit: Instant,
    /// Place of that transmission in the sender's order of sends.
    order: u64,
    /// Ever retransmitted: its delivery may be the original's (RFC 8985 §6.1 ambiguity).
    retransmitted: bool,
    /// Its latest retransmission is believed in flight (Linux TCPCB_SACKED_RETRANS).
    rexmit_out: bool,
    lost: bool,
    /// Cumulatively acknowledged or wholly SACKed.
    delivered: bool,
    /// Segments delivered when it was last sent (Linux's `tx.delivered`, a rate sample's
    /// `prior_delivered`).
    prior_delivered: u64,
}

impl Sent {
    /// Marked lost and not resent since: RACK has nothing more to say about it.
    fn awaiting_resend(&self) -> bool {
        self.lost && !self.rexmit_out
    }
}

/// The sender's RACK state: per-segment send times and the RFC 8985 variables.
#[derive(Debug, Clone, Default)]
pub(in crate::tcp) struct Rack {
    segs: VecDeque<Sent>,
    /// Sends so far (data segments), to order those of one instant.
    sends: u64,
    /// RACK.xmit_ts with RACK.end_seq as its tie-break: the send order of the most recently
    /// sent segment known delivered (see `sent_after`).
    newest: Option<u64>,
    /// RACK.rtt: the RTT of that segment; `None` until a delivery.
    rtt: Option<Duration>,
    /// RACK.min_RTT: the least RTT of a never-retransmitted delivered segment.
    min_rtt: Option<Duration>,
    /// RACK.fack: the highest end of a delivered segment.
    fack: u64,
    reordering_seen: bool,
    /// The reordering timer.
    pub timer: Option<Instant>,
    /// Segments delivered so far (Linux's `tp->delivered`).
    delivered: u64,
    /// Linux's `rack.reo_wnd_steps`: reo_wnd is this many min_RTT/4 (`rack_dsack_reo_wnd`).
    reo_wnd_steps: ReoWndSteps,
    /// Recoveries a grown window still persists for (`rack.reo_wnd_persist`).
    reo_wnd_persist: u8,
    /// A D-SACK that reordering may explain arrived (`rack.dsack_seen`).
    pub dsack_seen: bool,
    /// `delivered` when the window last grew (`rack.last_delivered`): once per round.
    last_delivered: u64,
}

/// reo_wnd in steps of min_RTT/4: 1 until a D-SACK grows it, at most 0xFF (a `u8`, as Linux).
#[derive(Debug, Clone, Copy)]
struct ReoWndSteps(u8);

impl Default for ReoWndSteps {
    fn default() -> Self {
        ReoWndSteps(1)
    }
}

/// What one ACK newly delivered, as RACK saw it.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::tcp) struct Delivery {
    /// RACK.rtt was updated (RFC 8985 §6.2 step 2).
    pub rtt_updated: bool,
    /// `prior_delivered` of the most recently sent segment it delivered (Linux's rate sample).
    pub prior_delivered: Option<u64>,
    /// The least end of a never-retransmitted segment it delivered (for F-RTO's
    /// `FLAG_ORIG_SACK_ACKED`).
    pub original_end: Option<u64>,
}

// RFC 8985's RACK_sent_after compares send times and, for equal times, sequence numbers.
// The simulator's clock gives every send of one event the same instant, and a fast
// retransmit can follow new data in one event: by sequence it would count as sent first and
// be marked lost while in flight. The order of sends is what a fine enough clock shows.

impl Rack {
    /// The last (re)transmission of the oldest segment not cumulatively acknowledged
    /// (Linux's `tcp_skb_timestamp_us(tcp_rtx_queue_head(sk))`).
    pub fn head_xmit(&self) -> Option<Instant> {
        self.segs.front().map(|s| s.xmit)
    }

    /// Records the (re)transmission of data `[start, end)` at `now`.
    pub fn on_send(&mut self, start: u64, end: u64, now: Instant, retransmission: bool) {
        self.sends += 1;
        let order = self.sends;
        if !retransmission {
            let s = Sent { start, end, xmit: now, order, retransmitted: false, rexmit_out: false, lost: false,
                delivered: false, prior_delivered: self.delivered };
            self.segs.push_back(s);
            return;
        }
        for s in self.segs.iter_mut().filter(|s| s.start < end && s.end > start && !s.delivered) {
            s.xmit = now;
            s.order = order;
            s.retransmitted = true;
            s.rexmit_out = true;
            s.prior_delivered = self.delivered;
        }
    }

    /// RFC 8985 §6.2 steps 2 and 3 for what the cumulative `ack` and the scoreboard newly
    /// deliver; forgets what `ack` passed.
    pub fn on_ack(&mut self, ack: u64, scoreboard: &RangeSet, now: Instant) -> Delivery {
        let mut newest: Option<(u64, Duration)> = None;
        let mut delivery = Delivery::default();
        let mut newest_sent = 0;
        for s in self.segs.iter_mut().filter(|s| !s.delivered) {
            if !(s.end <= ack || scoreboard.covers(s.start, s.end)) {
                continue;
            }
            s.delivered = true;
            self.delivered += 1;
            if s.order > newest_sent {
                newest_sent = s.order;
                delivery.prior_delivered = Some(s.prior_delivered);
            }
            if !s.retransmitted {
                delivery.original_end = Some(delivery.original_end.map_or(s.end, |e| e.min(s.end)));
            }
            if s.end > self.fack {
                self.fack = s.end;
            } else if !s.retransmitted {
                self.reordering_seen = true; // a never-resent segment arrived after a later one
            }
            let rtt = now.saturating_since(s.xmit);
            if s.retransmitted {
                // Linux's test for an ambiguous delivery (no timestamps used): an RTT below
                // the least ever seen means the original arrived, not this retransmission.
                if self.min_rtt.is_none_or(|m| rtt < m) {
                    continue;
                }
            } else if self.min_rtt.is_none_or(|m| rtt < m) {
                self.min_rtt = Some(rtt);
            }
            if newest.is_none_or(|(order, _)| s.order > order) {
                newest = Some((s.order, rtt));
            }
        }
        while self.segs.front().is_some_and(|s| s.end <= ack) {
            self.segs.pop_front();
        }
        if let Some((order, rtt)) = newest {
            self.rtt = Some(rtt);
            self.newest = self.newest.max(Some(order));
            delivery.rtt_updated = true;
        }
        delivery
    }

    /// A never-retransmitted segment was delivered below a later one (Linux's `reord_seen`).
    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }

    /// Linux's `tcp_rack_update_reo_wnd`, on an ACK that delivered the segments of
    /// `prior_delivered` (`None`: nothing): a D-SACK seen since the window last grew, and
    /// a round after that growth, grows it by a step; once 16 recoveries passed without
    /// one (`reo_wnd_persist`), it is back at one step.
    pub fn update_reo_wnd(&mut self, prior_delivered: Option<u64>) {
        let Some(prior_delivered) = prior_delivered else { return };
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false; // sent before the last growth: not a round later
        }
        if self.dsack_seen {
            self.reo_wnd_steps.0 = self.reo_wnd_steps.0.saturating_add(1);
            self.dsack_seen = false;
            self.last_delivered = self.delivered;
            self.reo_wnd_persist = crate::tcp::recovery::undo::RACK_RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = ReoWndSteps::default();
        }
    }

    /// A recovery ended without an undo (`tcp_try_undo_recovery`): one fewer to persist.
    pub fn recovery_without_undo(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
    }

    /// A recovery was undone by D-SACKs (`tcp_try_undo_dsack`): one more to persist.
    pub fn dsack_undo(&mut self) {
        self.reo_wnd_persist = (self.reo_wnd_persist + 1).min(crate::tcp::recovery::undo::RACK_RECOVERY_THRESH);
    }

    /// RFC 8985 §6.2 step 4 as Linux's `tcp_rack_reo_wnd`: none while no reordering was seen
    /// and recovery is on or DupThresh segments are SACKed; else min_RTT/4 times the steps
    /// D-SACKs grew it to (one without `rack_dsack_reo_wnd`), at most SRTT.
    fn reo_wnd(&self, in_recovery: bool, dupthresh: u32, srtt: Option<Duration>) -> Duration {
        let sacked = self.segs.iter().filter(|s| s.delivered).count() as u64;
        if !self.reordering_seen && (in_recovery || sacked >= dupthresh as u64) {
            return Duration::ZERO;
        }
        let window = Duration(self.min_rtt.unwrap_or(Duration::ZERO).0 / 4 * self.reo_wnd_steps.0 as u64);
        srtt.map_or(window, |s| window.min(s))
    }

    /// RFC 8985 §6.2 step 5 (RACK_detect_loss): marks lost each segment sent before RACK's
    /// whose RTT plus reordering window has passed; arms the timer for the latest deadline
    /// still to come, as the RFC and Linux do. `in_recovery`: fast recovery or after an RTO
    /// (Linux's `icsk_ca_state >= TCP_CA_Recovery`).
    pub fn detect_loss(&mut self, now: Instant, in_recovery: bool, dupthresh: u32, srtt: Option<Duration>)
        -> LossMarks {
        self.timer = None;
        let mut marks = LossMarks::default();
        let (Some(rtt), Some(newest)) = (self.rtt, self.newest) else { return marks };
        let wait = rtt + self.reo_wnd(in_recovery, dupthresh, srtt);
        let mut latest: Option<Instant> = None;
        for s in self.segs.iter_mut().filter(|s| !s.delivered && !s.awaiting_resend() && s.order < newest) {
            let deadline = s.xmit + wait;
            if deadline <= now {
                s.lost = true;
                marks.any = true;
                marks.segments += 1;
                marks.retransmission |= s.rexmit_out;
                s.rexmit_out = false; // a lost retransmission leaves the pipe
            } else {
                latest = latest.max(Some(deadline));
            }
        }
        self.timer = latest;
        marks
    }

    /// Start of the first segment marked lost and not resent since.
    pub fn first_lost(&self) -> Option<(u64, u64)> {
        self.segs.iter().find(|s| s.awaiting_resend() && !s.delivered).map(|s| (s.start, s.end))
    }

    /// Linux's packets in flight, in bytes: undelivered segments not marked lost, plus
    /// retransmissions believed in flight.
    pub fn in_flight(&self) -> u64 {
        self.segs.iter().filter(|s| !s.delivered).map(|s| (s.end - s.start) * (!s.lost as u64 + s.rexmit_out as u64)).sum()
    }

    /// A retransmission timeout, as Linux's `tcp_enter_loss`: everything undelivered is lost
    /// and no retransmission is in flight any more.
    pub fn on_rto(&mut self) {
        for s in self.segs.iter_mut().filter(|s| !s.delivered) {
            s.lost = true;
            s.rexmit_out = false;
        }
        self.timer = None;
    }

    /// An undone timeout: what it marked lost is not (`tcp_undo_cwnd_reduction`'s unmark).
    pub fn undo_loss_marks(&mut self) {
        for s in self.segs.iter_mut().filter(|s| !s.delivered) {
            s.lost = false;
        }
    }
}

impl Endpoint {
    /// RACK's marks over the segments not yet delivered; arms or clears its timer.
    pub(in crate::tcp) fn rack_detect_loss(&mut self, now: Instant, p: &TcpParams) -> LossMarks {
        let in_recovery = matches!(self.cong_state(), CongState::Recovery | CongState::Loss);
        let srtt = self.rtt.srtt();
        let rack = &mut self.queues_mut().rack;
        let marks = rack.detect_loss(now, in_recovery, p.recovery.dupthresh, srtt);
        rack.timer = rack.timer.map(|at| p.timers.fire_at(now, at));
        marks
    }

    /// RACK marked a segment lost: in recovery, resend within the recovery's window; else
    /// perhaps start one.
    pub(in crate::tcp) fn rack_respond(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>, marks: LossMarks) {
        if self.recovery.is_some() {
            self.try_send(now, p, out);
        } else if self.rack_starts_recovery(marks, self.snd_una) && self.rack_first_lost().is_some() {
            self.enter_fast_recovery(now, p, out);
        }
    }

    /// Whether RACK's `marks` start fast recovery once `snd_una` is `una`. Linux's
    /// tcp_fastretrans_alert: on any mark once the last recovery is over; after an RTO only on
    /// a resent segment lost again (FLAG_LOST_RETRANS in CA_Loss).
    pub(in crate::tcp) fn rack_starts_recovery(&self, marks: LossMarks, una: u64) -> bool {
        let after_rto = self.recovery.is_none() && una < self.recover_mark;
        marks.any && self.recovery.is_none() && una < self.snd_max && self.can_send_data()
            && (una >= self.recover_mark || (marks.retransmission && after_rto))
    }

    pub(in crate::tcp) fn rack_first_lost(&self) -> Option<(u64, u64)> {
        self.queues.as_deref().and_then(|q| q.rack.first_lost())
    }

    /// The first un-SACKed segment of what RACK marked lost.
    pub(in crate::tcp) fn rack_lost_segment(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        let (hole, _) = self.rack_first_lost().and_then(|(s, e)| self.scoreboard.first_gap(s, e))?;
        Some(self.segment_at(hole, p))
    }

}
