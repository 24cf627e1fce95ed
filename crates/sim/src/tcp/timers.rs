//! The endpoint's timers: the retransmission timer (RFC 6298) with its backoff and the
//! thin-stream and minRTO' remedies, the delayed ACK, RACK's reordering timer and the pacer.

use super::*;

/// When a Linux `timer_list` armed at `now` to expire at `at` fires, with jiffies of `tick`
/// that stand at `phase` into one at time 0 (kernel/time/timer.c since 4.8). The timeout
/// becomes whole jiffies rounded up (`usecs_to_jiffies`); `calc_wheel_index` picks the
/// level from the jiffies ahead (level n holds up to 63·8^n of them) and `calc_index`
/// rounds the expiry up to the next multiple of the level's 8^n jiffies, so it never fires
/// early and fires at most about 1/8 late. Every timer in a bucket runs in the same tick: long timers of
/// different connections meet on the multiples of 64 and 512 jiffies.
pub fn wheel_fire_at(tick: Duration, phase: Duration, now: Instant, at: Instant) -> Instant {
    let (tick, phase) = (tick.0.max(1), phase.0 % tick.0.max(1));
    let ahead = at.0.saturating_sub(now.0).div_ceil(tick);
    let expires = (now.0 + phase) / tick + ahead;
    // LVL_START(n) = 63 << 3(n-1); LVL_DEPTH 9 for HZ > 100, else 8; the last level takes the rest.
    let depth = if tick >= 10_000_000 { 8 } else { 9 };
    let level = (1..depth).take_while(|&n| ahead >= 63u64 << (3 * (n - 1))).count() as u32;
    let shift = 3 * level;
    Instant((((expires >> shift) + 1) << shift) * tick - phase)
}

impl TimerPolicy {
    /// When a timer armed at `now` for `at` fires: at `at`, or on Linux's timer wheel.
    #[inline]
    pub fn fire_at(&self, now: Instant, at: Instant) -> Instant {
        match self.wheel_tick {
            Some(tick) => wheel_fire_at(tick, self.wheel_phase, now, at),
            None => at,
        }
    }
}

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
        self.rto_at = Opt64::some(p.timers.fire_at(now, now + self.data_rto(p)));
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
                self.rto_at = Opt64::some(p.timers.fire_at(now, now + self.rtt.rto()));
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
                self.rto_at = Opt64::some(p.timers.fire_at(now, now + self.data_rto(p)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HZ_250: Duration = Duration(4_000_000);

    fn s(secs: f64) -> Instant {
        Instant((secs * 1e9).round() as u64)
    }

    #[test]
    fn the_wheel_rounds_up_to_its_levels_granularity() {
        // By hand from calc_wheel_index and calc_index at HZ = 250 (4 ms jiffies), armed at 0:
        // 60 jiffies: level 0, (60 >> 0) + 1 = 61 jiffies = 244 ms.
        assert_eq!(wheel_fire_at(HZ_250, Duration::ZERO, s(0.0), s(0.240)), s(0.244));
        // 63 jiffies = LVL_START(1): level 1, ((63 >> 3) + 1) << 3 = 64 jiffies.
        assert_eq!(wheel_fire_at(HZ_250, Duration::ZERO, s(0.0), s(0.252)), s(0.256));
        // The testbed's first RTO, 1.088 s = 272 jiffies: level 1, (34 + 1) << 3 = 280 = 1.12 s.
        assert_eq!(wheel_fire_at(HZ_250, Duration::ZERO, s(0.0), s(1.088)), s(1.120));
        // Its third backoff, 8.704 s = 2176 jiffies: level 2, (34 + 1) << 6 = 2240 = 8.96 s.
        assert_eq!(wheel_fire_at(HZ_250, Duration::ZERO, s(0.0), s(8.704)), s(8.960));
        // Its fifth, 34.816 s = 8704 jiffies: level 3, (17 + 1) << 9 = 9216 = 36.864 s.
        assert_eq!(wheel_fire_at(HZ_250, Duration::ZERO, s(0.0), s(34.816)), s(36.864));
        // A timeout is whole jiffies rounded up (usecs_to_jiffies): 1 ns past a jiffy is one more.
        assert_eq!(wheel_fire_at(HZ_250, Duration::ZERO, s(0.0), Instant(4_000_001)), s(0.012));
    }

    #[test]
    fn the_jiffies_phase_shifts_the_ticks() {
        // Jiffies 1 ms into a tick at time 0: tick k starts at 4k - 1 ms. Armed at 0 for
        // 240 ms: jiffy 0, 60 ahead, level 0, fires at jiffy 61 = 243 ms.
        assert_eq!(wheel_fire_at(HZ_250, Duration(1_000_000), s(0.0), s(0.240)), s(0.243));
    }

    #[test]
    fn timers_armed_apart_meet_in_one_bucket() {
        // Two connections back off to 8.704 s, 100 ms apart: both land in level 2's bucket
        // ending at jiffy 2240, and fire in the same tick, as the testbed's retransmissions did.
        let first = wheel_fire_at(HZ_250, Duration::ZERO, s(0.0), s(8.704));
        let second = wheel_fire_at(HZ_250, Duration::ZERO, s(0.1), s(8.804));
        assert_eq!((first, second), (s(8.960), s(8.960)));
    }

    proptest! {
        /// Never early; late by less than the level's granularity plus the partial jiffy,
        /// the granularity being at most 8/63 of the jiffies ahead (or one jiffy at level 0).
        #[test]
        fn never_early_and_at_most_an_eighth_late(now in 0u64..100_000_000_000, ahead_ns in 0u64..200_000_000_000,
                                                   hz in prop::sample::select(vec![100u64, 250, 300, 1000]),
                                                   phase_ns in 0u64..10_000_000) {
            let tick = Duration(1_000_000_000 / hz);
            let at = Instant(now + ahead_ns);
            let phase = Duration(phase_ns % tick.0);
            let fire = wheel_fire_at(tick, phase, Instant(now), at);
            prop_assert!(fire >= at);
            let ahead_j = ahead_ns.div_ceil(tick.0);
            let gran_j = (ahead_j * 8 / 63).max(1);
            prop_assert!(fire.0 - at.0 <= (gran_j + 1) * tick.0, "fire {} at {} ahead {} jiffies", fire.0, at.0, ahead_j);
            prop_assert_eq!((fire.0 + phase.0) % tick.0, 0, "on a tick");
        }
    }
}
