//! HyStart++ (RFC 9406): leaves the initial slow start on a rise in delay, before losses.
//!
//! Source: RFC 9406 §4 (Balasubramanian, Huang, Olson 2023).
//!
//! Principles: per round (one window of data acknowledged) the sender keeps the minimum
//! RTT sample. Once a round has N_RTT_SAMPLE samples and its minimum exceeds the last
//! round's by RttThresh (1/8 of it, within [4, 16] ms), the queue is taken to be building:
//! Conservative Slow Start (CSS) grows the window at a quarter of slow start's rate. If the
//! minimum falls back below the one that started CSS the exit was spurious and slow start
//! resumes; after CSS_ROUNDS rounds in CSS, ssthresh = cwnd and congestion avoidance begins.
//!
//! Trade-offs and limits: only the initial slow start uses it (§4.2: later slow starts
//! have an ssthresh from a loss); a loss or RTO ends it for good, the normal loss response
//! setting ssthresh. Growth per ACK is limited to L = 8 segments (the sender is not paced).
//! A round begins at the first ACK after the last one ended, recording `snd_max` then (so
//! it includes what the ACK that ended the last round released: a round is one flight),
//! and ends at the ACK that covers it; the round in which CSS began counts as the first of
//! its CSS_ROUNDS. CSS growth is whole bytes (the remainder of the division by 4 is dropped).

use smallpipe_core::Duration;

/// §4.3: RTT samples a round needs before its minimum is compared.
pub const N_RTT_SAMPLE: u32 = 8;
/// §4.3: bounds of RttThresh.
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// §4.3: RttThresh is lastRoundMinRTT divided by this.
pub const MIN_RTT_DIVISOR: u64 = 8;
/// §4.3: CSS grows the window this many times slower than slow start.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// §4.3: rounds in CSS before congestion avoidance.
pub const CSS_ROUNDS: u32 = 5;
/// §4.2: most segments one ACK may add to the window when the sender does not pace.
pub const L_SEGMENTS: u64 = 8;

/// RttThresh (§4.2): lastRoundMinRTT / 8 kept within [MIN_RTT_THRESH, MAX_RTT_THRESH].
pub fn rtt_thresh(last_round_min_rtt: Duration) -> Duration {
    Duration(last_round_min_rtt.as_nanos() / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
}

#[derive(Debug, Clone, Copy)]
struct Css {
    /// cssBaselineMinRtt: the round minimum that started CSS.
    baseline_min_rtt: Duration,
    /// Rounds ended while in CSS.
    rounds: u32,
}

/// What one ACK in slow start does to the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// Bytes to add to cwnd.
    pub bytes: u64,
    /// CSS_ROUNDS rounds of CSS are over: set ssthresh = cwnd (after adding `bytes`).
    pub css_done: bool,
}

/// The state of §4.2 (`None` stands for the RFC's infinity).
#[derive(Debug, Clone, Default)]
pub struct HyStart {
    /// `snd_max` when the current round began (at its first ACK, before the segments that
    /// ACK releases); `None` between rounds.
    window_end: Option<u64>,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    css: Option<Css>,
}

impl HyStart {
    /// In Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.css.is_some()
    }

    /// A new ACK in slow start that acknowledged `acked` data bytes up to `ack`, with the
    /// RTT sample it gave (if any); `snd_max` is what the sender has sent so far.
    pub fn on_ack(&mut self, ack: u64, snd_max: u64, rtt: Option<Duration>, acked: u64, mss: u64) -> Growth {
        let window_end = *self.window_end.get_or_insert(snd_max);
        let limited = acked.min(L_SEGMENTS * mss);
        let bytes = if self.in_css() { limited / CSS_GROWTH_DIVISOR } else { limited };
        if let Some(rtt) = rtt {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        if self.rtt_sample_count >= N_RTT_SAMPLE {
            match (self.css, self.current_round_min_rtt, self.last_round_min_rtt) {
                (None, Some(current), Some(last)) if current >= last + rtt_thresh(last) => {
                    self.css = Some(Css { baseline_min_rtt: current, rounds: 0 });
                }
                (Some(css), Some(current), _) if current < css.baseline_min_rtt => self.css = None,
                _ => {}
            }
        }
        let mut css_done = false;
        if ack >= window_end {
            if let Some(css) = &mut self.css {
                css.rounds += 1;
                css_done = css.rounds >= CSS_ROUNDS;
            }
            self.last_round_min_rtt = self.current_round_min_rtt.take();
            self.rtt_sample_count = 0;
            self.window_end = None;
        }
        Growth { bytes, css_done }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    /// Segments in the first round (RFC 6928's initial window).
    const IW: u64 = 10;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Slow start ACK by ACK: one ACK per segment, each sampling `rtt(i)` (i from 1) and
    /// releasing two new segments, so a round of n ACKs is followed by one of 2n.
    #[derive(Clone)]
    struct Script {
        h: HyStart,
        una: u64,
        snd_max: u64,
    }

    impl Script {
        fn new() -> Self {
            Script { h: HyStart::default(), una: 0, snd_max: IW * MSS }
        }

        /// The ACKs of one flight; the growth of each.
        fn round(&mut self, rtt: impl Fn(u64) -> Duration) -> Vec<Growth> {
            let window_end = self.snd_max;
            let mut growth = Vec::new();
            for i in 1..=(window_end - self.una) / MSS {
                growth.push(self.h.on_ack(self.una + i * MSS, self.snd_max, Some(rtt(i)), MSS, MSS));
                assert_eq!(self.h.window_end.is_some(), self.una + i * MSS < window_end, "round ends with the flight");
                self.snd_max += 2 * MSS;
            }
            self.una = window_end;
            growth
        }
    }

    #[test]
    fn rtt_thresh_is_an_eighth_of_the_last_minimum_within_4_and_16_ms() {
        assert_eq!(rtt_thresh(ms(20)), ms(4)); // 2.5 ms, raised to the floor
        assert_eq!(rtt_thresh(ms(200)), ms(16)); // 25 ms, cut to the ceiling
        assert_eq!(rtt_thresh(ms(80)), ms(10)); // 80 / 8
        assert_eq!(rtt_thresh(ms(32)), ms(4)); // exactly the floor
        assert_eq!(rtt_thresh(ms(128)), ms(16)); // exactly the ceiling
    }

    #[test]
    fn constant_rtt_keeps_slow_start_one_segment_per_segment_acked() {
        let mut s = Script::new();
        for _ in 0..8 {
            let g = s.round(|_| ms(100));
            // RFC 5681 (2): each ACK of one segment adds one segment, so the window doubles.
            assert!(g.iter().all(|g| *g == Growth { bytes: MSS, css_done: false }));
            assert!(!s.h.in_css());
        }
    }

    #[test]
    fn the_first_ack_starts_the_first_round_and_growth_is_limited_to_l_segments() {
        let mut h = HyStart::default();
        assert_eq!(h.on_ack(20 * MSS, 30 * MSS, None, 20 * MSS, MSS).bytes, L_SEGMENTS * MSS);
        assert_eq!(h.window_end, Some(30 * MSS), "the first round ends at the ACK of 30 segments");
    }

    #[test]
    fn a_delay_rise_enters_css_at_the_eighth_sample_and_ends_after_five_rounds() {
        let mut s = Script::new();
        s.round(|_| ms(80)); // RttThresh = 80 / 8 = 10 ms
        let g = s.round(|_| ms(89)); // below 80 + 10: slow start goes on
        assert!(!s.h.in_css() && g.iter().all(|g| g.bytes == MSS));
        // Last minimum 89 ms: RttThresh = 11.125 ms, so CSS needs a minimum of 100.125 ms.
        let rise = ms(89) + rtt_thresh(ms(89));
        assert_eq!(rise, Duration::from_micros(100_125));
        let mut below = s.clone();
        let g = s.round(|_| rise);
        assert!(s.h.in_css());
        // Slow-start growth through the 8th ACK (the RFC grows before it checks), then a quarter.
        assert!(g[..8].iter().all(|g| g.bytes == MSS));
        assert!(g[8..].iter().all(|g| g.bytes == MSS / CSS_GROWTH_DIVISOR && !g.css_done));
        // One nanosecond less: no CSS.
        below.round(|_| Duration(rise.as_nanos() - 1));
        assert!(!below.h.in_css());
        // The round that entered CSS was the first of CSS_ROUNDS; the fifth's last ACK ends it.
        for n in 2..=CSS_ROUNDS {
            let g = s.round(|_| rise);
            let (last, rest) = g.split_last().unwrap();
            assert!(rest.iter().all(|g| !g.css_done && g.bytes == MSS / CSS_GROWTH_DIVISOR));
            assert_eq!(last.css_done, n == CSS_ROUNDS, "CSS round {n}");
        }
    }

    #[test]
    fn a_minimum_below_the_css_baseline_resumes_slow_start() {
        let mut s = Script::new();
        s.round(|_| ms(100));
        s.round(|_| ms(120)); // 120 >= 100 + 12.5: CSS, baseline 120 ms
        assert!(s.h.in_css());
        let mut equal = s.clone();
        // 7 samples below the baseline do not count yet (N_RTT_SAMPLE); the 8th makes the
        // round's minimum (119 ms) count: back to slow start.
        let g = s.round(|i| if i <= 7 { ms(119) } else { ms(125) });
        assert!(g[..8].iter().all(|g| g.bytes == MSS / CSS_GROWTH_DIVISOR));
        assert!(g[8..].iter().all(|g| g.bytes == MSS && !g.css_done));
        assert!(!s.h.in_css());
        // A minimum equal to the baseline is not below it: CSS stays.
        equal.round(|_| ms(120));
        assert!(equal.h.in_css());
    }
}
