//! RFC 8985 §7 tail loss probes, as Linux sends them (`tail_loss_probe`, SACK only): when
//! a flight's last segments are lost no ACK comes back to reveal it, and only the RTO would
//! repair it. A probe timeout (PTO) of about two RTTs sends one segment, new data if there
//! is any, else the last segment again; its ACK's SACK block lets RACK or DupThresh find
//! the lost tail and start fast recovery instead. Linux: `tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe` (net/ipv4/tcp_output.c), `tcp_process_tlp_ack` (tcp_input.c).

use crate::tcp::recovery::CongState;
use crate::tcp::{Duration, Endpoint, Instant, Packet, TcpParams};

/// Linux's TCP_TIMEOUT_MIN_US: what a PTO adds to 2·SRTT when several segments are out.
const TIMEOUT_MIN: Duration = Duration::from_millis(2);
/// Linux's TCP_TIMEOUT_INIT: the PTO before any RTT sample.
const TIMEOUT_INIT: Duration = Duration::from_secs(1);

/// The probe timer and the episode it opened.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::tcp) struct Tlp {
    /// When the probe timer fires (Linux's ICSK_TIME_LOSS_PROBE).
    pub(in crate::tcp) pto_at: Option<Instant>,
    /// `snd_nxt` when the probe went out (Linux's `tlp_high_seq`): one probe per episode.
    high_seq: Option<u64>,
    /// The probe was a retransmission, not new data (Linux's `tlp_retrans`).
    retrans: bool,
    /// Probes sent (Linux's TcpExtTCPLossProbes), and of them those whose ACK showed they
    /// repaired a loss (TcpExtTCPLossProbeRecovery). Here, not in `EndpointStats`, to keep
    /// an active flow within 1 KiB.
    pub(in crate::tcp) probes: u32,
    pub(in crate::tcp) recoveries: u32,
}

impl Endpoint {
    /// tcp_schedule_loss_probe: after new data went out or an ACK of new data, a sender in
    /// the Open state with data in flight arms the PTO: 2·SRTT, plus the minimum RTO when a
    /// single segment is out (its ACK may be delayed) or 2 ms otherwise, no later than the
    /// RTO. With one segment counted as at most SMSS in flight. `after_send` (new data went
    /// out) with `tlp_rto_from_head`: no later than the RTO from the head's last send, as
    /// Linux's `tcp_write_xmit` schedules it, when that is still ahead (`tcp_rto_delta_us`).
    pub(in crate::tcp) fn tlp_schedule(&mut self, after_send: bool, now: Instant, p: &TcpParams) {
        let armed = self.can_send_data() && self.snd_una < self.snd_max && self.cong_state() == CongState::Open;
        let head_rto_at = self.queues.as_deref().and_then(|q| q.rack.head_xmit())
            .filter(|_| after_send && p.recovery.tlp_rto_from_head)
            .map(|sent| sent + self.data_rto(p))
            .filter(|&at| at > now)
            .map(|at| p.timers.fire_at(now, at));
        let rto_at = head_rto_at.or(self.rto_at.get()).filter(|_| armed);
        let pto_at = rto_at.map(|rto_at| {
            let timeout = match self.rtt.srtt() {
                Some(srtt) => srtt + srtt + if self.flight_size() <= p.mss { p.timers.min_rto } else { TIMEOUT_MIN },
                None => TIMEOUT_INIT,
            };
            p.timers.fire_at(now, now + timeout).min(rto_at) // the RTO timer's, already on the wheel
        });
        if pto_at.is_some() || self.queues.is_some() {
            self.queues_mut().tlp.pto_at = pto_at;
        }
    }

    /// tcp_send_loss_probe: one segment, whatever cwnd says; new data if the receive window
    /// allows it, else the last segment sent. No probe while one is unanswered, or once the
    /// sender left the Open state: the RTO stays as it was. A probe restarts the RTO.
    pub(in crate::tcp) fn on_pto(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let tlp = self.queues_mut().tlp;
        self.queues_mut().tlp.pto_at = None;
        if tlp.high_seq.is_some() || self.cong_state() != CongState::Open || self.snd_una >= self.snd_max {
            return;
        }
        let sent_before = self.snd_max;
        let new_data = self.snd_nxt == self.snd_max && self.next_new_seg(p).is_some();
        if new_data {
            self.send_new(u64::MAX, 1, now, p, out);
            if self.snd_max == sent_before {
                return; // held by the pacer: Linux rearms the RTO without a probe
            }
        } else {
            let data_end = self.snd_max.min(1 + self.app_written);
            let start = data_end.saturating_sub(p.mss).max(self.snd_una);
            let (off, len, fin) = self.segment_at(start, p);
            self.send_segment(off, len, fin, now, p, out);
        }
        let high_seq = Some(self.snd_nxt.max(self.snd_max));
        self.queues_mut().tlp = Tlp { pto_at: None, high_seq, retrans: !new_data, probes: tlp.probes + 1, ..tlp };
        self.arm_rto(now, p);
    }

    /// tcp_process_tlp_ack, before the cumulative part of an ACK moves `snd_una`: whether the
    /// probe repaired a loss, which the sender answers as Linux's CWR does (ssthresh as for a
    /// loss, cwnd = ssthresh, no growth on this ACK). A probe of new data that is acknowledged,
    /// or a retransmitted probe answered by a pure duplicate ACK (the original had arrived;
    /// Linux's DSACK case, which our receivers signal only so), ends the episode without it.
    pub(in crate::tcp) fn tlp_on_ack(&mut self, ack: u64, duplicate_only: bool, p: &TcpParams) -> bool {
        let Some(q) = self.queues.as_deref_mut() else { return false };
        let Some(high_seq) = q.tlp.high_seq.filter(|&h| ack >= h) else { return false };
        if !q.tlp.retrans || (ack == high_seq && duplicate_only) {
            q.tlp.high_seq = None;
            return false;
        }
        if ack == high_seq {
            return false; // Linux waits for an ACK beyond the probe
        }
        q.tlp.high_seq = None;
        q.tlp.recoveries += 1;
        let base = self.decrease_base(p);
        if p.bbr() {
            self.bbr_save_cwnd(p); // bbr_ssthresh: ssthresh stays
        } else {
            self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd, base, p.mss);
        }
        // BBR: Linux's tcp_end_cwnd_reduction leaves cwnd to a `cong_control` controller.
        if !p.bbr() {
            self.cwnd = self.ssthresh;
        }
        true
    }

    /// `snd_nxt` when the unanswered probe went out (Linux's `tlp_high_seq`).
    pub(in crate::tcp) fn tlp_high_seq(&self) -> Option<u64> {
        self.queues.as_deref().and_then(|q| q.tlp.high_seq)
    }

    /// An RTO ends the probe episode.
    pub(in crate::tcp) fn tlp_on_rto(&mut self) {
        if let Some(q) = self.queues.as_deref_mut() {
            q.tlp = Tlp { probes: q.tlp.probes, recoveries: q.tlp.recoveries, ..Tlp::default() };
        }
    }

    /// Tail loss probes sent, and how many of them repaired a loss.
    pub fn loss_probes(&self) -> (u64, u64) {
        self.queues.as_deref().map_or((0, 0), |q| (q.tlp.probes.into(), q.tlp.recoveries.into()))
    }
}
