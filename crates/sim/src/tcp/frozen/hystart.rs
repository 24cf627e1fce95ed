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
