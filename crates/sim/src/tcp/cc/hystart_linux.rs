//! Linux CUBIC's own HyStart (`cubic_hystart`; net/ipv4/tcp_cubic.c, `hystart_update` and
//! `cubictcp_acked`, with `hystart_detect` = ACK train | delay): in the initial slow start,
//! once cwnd reaches 16 segments, the sender sets ssthresh = cwnd, ending slow start, when
//!
//! - *ACK train*: ACKs keep coming at most 2 ms apart (`hystart_ack_delta_us`) for longer
//!   than the minimum RTT (half of it for a sender that does not pace) since the round
//!   began, or
//! - *delay*: the least of a round's first 8 RTT samples exceeds the minimum RTT by an
//!   eighth of it, kept within [4, 16] ms.
//!
//! A round starts at the first ACK beyond the `snd_nxt` of the last round's start. Unlike
//! RFC 9406's HyStart++ (`hystart.rs`) there is no conservative slow start: the exit is at
//! once, and happens at most once until a timeout resets it (`bictcp_reset` in CA_Loss).

use smallpipe_core::{Duration, Instant};

/// `hystart_low_window`: HyStart acts from this cwnd on, segments.
pub const LOW_WINDOW_SEGMENTS: u64 = 16;
/// `hystart_ack_delta_us`: the largest gap between two ACKs of one train.
pub const ACK_DELTA: Duration = Duration::from_millis(2);
/// `HYSTART_MIN_SAMPLES`: RTT samples of a round before its minimum is compared.
pub const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`: bounds of the delay threshold.
pub const DELAY_MIN: Duration = Duration::from_millis(4);
pub const DELAY_MAX: Duration = Duration::from_millis(16);
/// `cubictcp_acked`: samples this soon after a congestion-avoidance epoch began are dropped.
pub const AFTER_RECOVERY: Duration = Duration::from_secs(1);

/// The delay threshold: the minimum RTT over 8 (`delay_min >> 3`) within [4, 16] ms.
pub fn delay_thresh(delay_min: Duration) -> Duration {
    Duration(delay_min.as_nanos() / 8).clamp(DELAY_MIN, DELAY_MAX)
}

/// `struct bictcp`'s HyStart fields.
#[derive(Debug, Clone, Default)]
pub struct LinuxHyStart {
    /// Beginning of the current round, and the last ACK of the current train.
    round_start: Instant,
    last_ack: Instant,
    /// `snd_nxt` when the round began: an ACK beyond it starts the next.
    end_seq: u64,
    /// Least RTT sample of the round, and how many it has seen (up to `MIN_SAMPLES`).
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
    /// Least RTT sample of the connection (`delay_min`).
    delay_min: Option<Duration>,
    /// Slow start was ended: no more until a timeout resets it.
    found: bool,
}

/// One ACK of new data as HyStart sees it.
#[derive(Debug, Clone, Copy)]
pub struct AckSample {
    pub now: Instant,
    /// `snd_una` after the ACK and `snd_nxt` when it arrived.
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub rtt: Duration,
    pub cwnd_segments: u64,
    /// cwnd < ssthresh.
    pub slow_start: bool,
    /// The sender paces (`sk_pacing_status` set): the train may last the full minimum RTT.
    pub paced: bool,
    /// `hystart_ack_delay`: what GSO and pacing may add to a train, min(1 ms, 4 GSO
    /// buffers at the pacing rate).
    pub ack_delay: Duration,
}

impl LinuxHyStart {
    /// `bictcp_hystart_reset`: a new round from `now`, ending at `snd_nxt`.
    pub fn reset_round(&mut self, now: Instant, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = snd_nxt;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// `bictcp_reset` after a timeout: HyStart may act again in the next slow start.
    pub fn on_timeout(&mut self, now: Instant, snd_nxt: u64) {
        self.found = false;
        self.reset_round(now, snd_nxt);
    }

    /// `cubictcp_acked`: folds in the ACK's RTT sample (unless `just_recovered`, within
    /// `AFTER_RECOVERY` of a congestion-avoidance epoch's start) and, in slow start, runs
    /// `hystart_update`. True when slow start must end now (ssthresh = cwnd).
    pub fn on_ack(&mut self, a: AckSample, just_recovered: bool) -> bool {
        if just_recovered {
            return false;
        }
        let delay = a.rtt.max(Duration::from_micros(1));
        let delay_min = *self.delay_min.get_or_insert(delay);
        let delay_min = if delay < delay_min { delay } else { delay_min };
        self.delay_min = Some(delay_min);
        if self.found || !a.slow_start {
            return false;
        }
        if a.snd_una > self.end_seq {
            self.reset_round(a.now, a.snd_nxt);
        }
        if a.cwnd_segments < LOW_WINDOW_SEGMENTS {
            return false;
        }
        if a.now.saturating_since(self.last_ack) <= ACK_DELTA {
            self.last_ack = a.now;
            let threshold = delay_min + a.ack_delay;
            let threshold = if a.paced { threshold } else { Duration(threshold.as_nanos() / 2) };
            if a.now.saturating_since(self.round_start) > threshold {
                self.found = true;
            }
        }
        let curr = self.curr_rtt.map_or(delay, |c| c.min(delay));
        self.curr_rtt = Some(curr);
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if curr > delay_min + delay_thresh(delay_min) {
            self.found = true;
        }
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn at(us: u64) -> Instant {
        Instant(us * 1_000)
    }

    fn sample(now_us: u64, rtt: Duration, cwnd_segments: u64) -> AckSample {
        AckSample { now: at(now_us), snd_una: 1, snd_nxt: 1_000_000, rtt, cwnd_segments, slow_start: true, paced: false,
                    ack_delay: Duration::ZERO }
    }

    #[test]
    fn the_delay_threshold_is_an_eighth_of_the_minimum_rtt_within_4_and_16_ms() {
        assert_eq!(delay_thresh(ms(100)), Duration::from_micros(12_500));
        assert_eq!(delay_thresh(ms(20)), ms(4));
        assert_eq!(delay_thresh(ms(400)), ms(16));
    }

    #[test]
    fn a_round_whose_first_eight_samples_all_exceed_the_minimum_by_the_threshold_ends_slow_start() {
        // delay_min 100 ms from an earlier round, threshold 12.5 ms; ACKs 10 ms apart, so no
        // train. tcp_cubic.c compares the round's minimum from its ninth sample on.
        for (rtt, ends) in [(ms(113), true), (ms(112), false)] {
            let mut h = LinuxHyStart::default();
            h.reset_round(at(0), 1_000_000);
            h.on_ack(sample(0, ms(100), 20), false);
            h.reset_round(at(0), 1_000_000);
            for k in 1..=8 {
                assert!(!h.on_ack(sample(k * 10_000, rtt, 20), false), "sample {k}");
            }
            assert_eq!(h.on_ack(sample(90_000, rtt, 20), false), ends, "{rtt:?} against 100 + 12.5 ms");
        }
    }

    #[test]
    fn an_ack_train_longer_than_half_the_minimum_rtt_ends_slow_start_of_an_unpaced_sender() {
        // delay_min 100 ms: unpaced, the train must last over 50 ms, ACKs at most 2 ms apart.
        let mut h = LinuxHyStart::default();
        h.reset_round(at(0), 1_000_000);
        let mut found_at = None;
        for k in 0..=60u64 {
            if h.on_ack(sample(k * 1_000, ms(100), 20), false) {
                found_at = Some(k);
                break;
            }
        }
        assert_eq!(found_at, Some(51), "the first ACK more than 50 ms after the round began");
        // A paced sender's train must last the whole 100 ms.
        let mut h = LinuxHyStart::default();
        h.reset_round(at(0), 1_000_000);
        let paced = |k: u64| AckSample { paced: true, ..sample(k * 1_000, ms(100), 20) };
        assert!((0..=100).all(|k| !h.on_ack(paced(k), false)));
        assert!(h.on_ack(paced(101), false));
    }

    #[test]
    fn below_sixteen_segments_or_once_found_nothing_happens_until_a_timeout() {
        let mut h = LinuxHyStart::default();
        h.reset_round(at(0), 1_000_000);
        assert!((0..=80).all(|k| !h.on_ack(sample(k * 1_000, ms(100), 15), false)), "cwnd 15 segments");
        let train = |h: &mut LinuxHyStart, from_us: u64| (0..=60).find(|k| h.on_ack(sample(from_us + k * 1_000, ms(100), 16), false));
        h.reset_round(at(100_000), 1_000_000);
        assert_eq!(train(&mut h, 100_000), Some(51));
        assert!(!h.on_ack(sample(152_000, ms(100), 16), false), "found: once only");
        h.on_timeout(at(200_000), 2_000_000);
        assert_eq!(train(&mut h, 200_000), Some(51), "again after the timeout");
    }
}
