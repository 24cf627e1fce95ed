//! Linux's TCP pacing (`pacing = "linux"`; net/ipv4/tcp_output.c, tcp_update_skb_after_send,
//! and tcp_input.c, tcp_update_pacing_rate): each data segment may leave no sooner than its
//! length at the pacing rate after the one before, the rate being 200% (while cwnd is below
//! half of ssthresh) or 120% of max(cwnd, flight) per smoothed RTT. A sender late on its
//! schedule gets up to half a segment's interval back, and the first 10 data segments are
//! not paced.

use smallpipe_core::{Duration, Instant};

/// Data segments sent before pacing starts (Linux: `tp->data_segs_out >= 10`).
const UNPACED_SEGMENTS: u64 = 10;

#[derive(Debug, Clone, Default)]
pub(super) struct Pacer {
    /// Earliest departure of the next data segment (Linux's `tcp_wstamp_ns`).
    next: Option<Instant>,
    data_segments: u64,
    /// Set while a send waits for `next`.
    pub timer: Option<Instant>,
}

impl Pacer {
    /// Whether a data segment must wait; if so, arms the timer for when it may go.
    pub fn holds(&mut self, now: Instant) -> bool {
        match self.next {
            Some(next) if next > now => {
                self.timer = Some(next);
                true
            }
            _ => false,
        }
    }

    /// Records a data segment of `len` bytes sent at `now`; `window` is max(cwnd, flight)
    /// in bytes and `slow_start` whether cwnd < ssthresh / 2.
    pub fn on_send(&mut self, now: Instant, len: u64, window: u64, slow_start: bool, srtt: Option<Duration>) {
        self.data_segments += 1;
        let prior = self.next.unwrap_or(now);
        let start = prior.max(now);
        let late = start.saturating_since(prior);
        let paced = match srtt {
            Some(srtt) if self.data_segments >= UNPACED_SEGMENTS && window > 0 => {
                let ratio_pct: u128 = if slow_start { 200 } else { 120 };
                let len_ns = (len as u128 * srtt.0 as u128 * 100 / (ratio_pct * window as u128)) as u64;
                len_ns - (len_ns / 2).min(late.0)
            }
            _ => 0,
        };
        self.next = Some(start + Duration(paced));
    }
}
