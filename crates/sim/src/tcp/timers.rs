//! The endpoint's timers: the retransmission timer (RFC 6298) with its backoff and the
//! thin-stream and minRTO' remedies, the delayed ACK, RACK's reordering timer and the pacer.

use super::*;

impl Endpoint {
    pub fn on_timer(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if self.delack_at.get().is_some_and(|t| t <= now) {
            self.delack_at = Opt64::NONE;
            self.send_ack(now, p, out);
        }
        if self.queues.as_deref().and_then(|q| q.rack.timer).is_some_and(|t| t <= now) {
            // RFC 8985 §6.3: the reordering timer expired; look for losses again. Linux's
            // tcp_rack_reo_timeout starts fast recovery on any mark, also after an RTO.
            let marks = self.rack_detect_loss(now, p);
            if marks.any {
                self.rack_respond(now, p, out, LossMarks { retransmission: true, ..marks });
            }
        }
        if self.queues.as_deref().and_then(|q| q.tlp.pto_at).is_some_and(|t| t <= now) {
            self.on_pto(now, p, out); // before an RTO due at the same time, as Linux's one timer
        }
        if self.rto_at.get().is_some_and(|t| t <= now) {
            self.rto_at = Opt64::NONE;
            self.on_rto(now, p, out);
        }
        if self.queues.as_deref().and_then(|q| q.pacer.timer).is_some_and(|t| t <= now) {
            self.queues_mut().pacer.timer = None;
            self.try_send(now, p, out);
        }
    }

    /// With pacing, whether the next data segment must wait (arming the pacing timer).
    pub(super) fn paced_out(&mut self, now: Instant, p: &TcpParams) -> bool {
        p.send.pacing && self.queues_mut().pacer.holds(now)
    }

    #[inline]
    pub(super) fn arm_rto(&mut self, now: Instant, p: &TcpParams) {
        self.rto_at = Opt64::some(now + self.data_rto(p));
        self.rto_armed_at = now;
    }

    /// The RTO for data: RFC 6298's, or with the differentiated minRTO′ while the used
    /// window (what is in flight or written and allowed out) is at most the fraction of the
    /// window, the window counted as at least 4 segments.
    pub(super) fn data_rto(&self, p: &TcpParams) -> Duration {
        let used = self.flight_size().max(self.send_end().saturating_sub(self.snd_una).min(self.cwnd));
        match p.timers.min_rto_prime {
            Some((min_rto, fraction)) if used as f64 <= fraction * self.cwnd.max(4 * p.mss) as f64 => {
                self.rtt.rto_with_min(min_rto, p.timers.granularity)
            }
            _ => self.rtt.rto(),
        }
    }

    pub(super) fn end_backoff(&mut self, now: Instant) {
        if let Some(since) = self.backoff_since.take() {
            self.stats.backoff_ns += now.saturating_since(since).as_nanos();
        }
    }

    /// `backoff_ns` with a still-open timeout episode counted up to `end`.
    pub fn backoff_ns_until(&self, end: Instant) -> u64 {
        self.stats.backoff_ns + self.backoff_since.get().map_or(0, |since| end.saturating_since(since).as_nanos())
    }

    pub(super) fn on_rto(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if self.snd_una >= self.snd_max {
            return; // everything was acknowledged meanwhile
        }
        self.rto_retries += 1;
        // Linux tcp_retransmit_timer: a thin stream (fewer than 4 segments out) keeps the
        // base RTO for its first TCP_THIN_LINEAR_RETRIES = 6 timeouts.
        let linear = p.timers.thin_linear_timeouts && self.state == State::Established
            && self.queues.as_ref().map_or(0, |q| q.segment_ends.len()) < 4
            && self.rto_retries <= 6;
        if !linear {
            self.rtt.back_off();
        }
        self.timed = None;
        self.backoff_since.get_or_insert(self.rto_armed_at);
        match self.state {
            State::SynSent | State::SynReceived if self.snd_una == 0 => {
                if u32::from(self.syn_tries) >= p.timers.syn_retries {
                    self.state = State::Closed;
                    self.failed = true;
                    self.end_backoff(now);
                    return;
                }
                self.syn_tries += 1;
                self.stats.syn_timeouts += 1;
                self.send_segment(0, 0, false, now, p, out);
                self.rto_at = Opt64::some(now + self.rtt.rto());
            }
            _ => {
                self.stats.timeouts += 1;
                if self.rto_una.get() == Some(self.snd_una) {
                    self.stats.timeouts_repeated += 1;
                } else if self.recovery.is_some() {
                    self.stats.timeouts_in_recovery += 1;
                } else if self.dupacks > 0 {
                    self.stats.timeouts_after_dupacks += 1;
                }
                // RFC 5681 (4); a repeated RTO of the same segment keeps ssthresh. Every ns-2
                // agent (Reno, NewReno and Sack1 all end in TcpAgent::timeout) halves the
                // one-packet window again, to ssthresh_ 2 (tcp.cc:1913 slowdown, :1296
                // halfwin, :1329 floor 2): ns-2's ssthresh rule, on every timeout.
                let new_recovery = self.recovery.is_none() && self.snd_una >= self.recover_mark;
                let ns2_slowdown = p.cc.ssthresh_from == SsthreshFrom::Ns2 || p.ns2_sack1();
                if self.rto_una.get() != Some(self.snd_una) || ns2_slowdown {
                    if p.recovery.rto_undo || p.recovery.frto {
                        self.undo_on_rto(p);
                    }
                    let base = self.decrease_base(p);
                    if p.bbr() {
                        self.bbr_save_cwnd(p); // bbr_ssthresh: ssthresh stays
                    } else {
                        self.ssthresh = self.cc.ssthresh_on_timeout(self.cwnd, base, p.mss);
                    }
                }
                if let Some(bbr) = self.queues.as_deref_mut().and_then(|q| q.bbr.as_deref_mut()) {
                    bbr.on_timeout(); // bbr_set_state(TCP_CA_Loss)
                }
                self.cc.on_timeout_reset(now, self.snd_max);
                self.rto_una = Opt64::some(self.snd_una);
                self.hystart = None; // RFC 9406 §4.2: only the initial slow start
                self.cwnd = p.mss;
                self.ca_acked = 0;
                self.recovery = None;
                self.dupacks = 0;
                self.fulltcp_on_timeout();
                if let Some(q) = self.queues.as_deref_mut() {
                    q.copy_acks.clear(); // the timeout is the reaction to any lost copy
                    q.recovery_rexmits = RangeSet::default(); // ns-3's SetSentListLost clears `m_retrans`
                    q.rack.on_rto();
                }
                self.tlp_on_rto();
                self.recover_mark = self.snd_max; // RFC 6582 `recover`, RFC 6675 §5.1 RecoveryPoint
                self.snd_nxt = self.snd_una;
                if p.ns2_sack1() {
                    self.sack1_on_rto();
                }
                if p.recovery.frto {
                    self.frto_on_rto(new_recovery, p);
                }
                self.try_send(now, p, out);
                self.rto_at = Opt64::some(now + self.data_rto(p));
            }
        }
    }
}
