//! Linux's TCP pacing (`pacing = "linux"`; net/ipv4/tcp_output.c, tcp_update_skb_after_send,
//! and tcp_input.c, tcp_update_pacing_rate): each data segment may leave no sooner than its
//! length at the pacing rate after the one before, the rate being 200% (while cwnd is below
//! half of ssthresh) or 120% of max(cwnd, flight) per smoothed RTT. A sender late on its
//! schedule gets up to half a segment's interval back, and the first 10 data segments are
//! not paced.
//!
//! Linux paces socket buffers, not segments: its TCP builds GSO buffers even with the
//! offloads off, of `tcp_tso_autosize` segments (at least `tcp_min_tso_segs` = 2), which
//! `tcp_write_xmit` cuts to min(cwnd − in flight, max(cwnd / 2, 1)) segments
//! (`tcp_cwnd_test`, `tcp_mss_split_point`). Such a buffer leaves back to back and the next
//! one waits for the whole buffer's length at the pacing rate.
//!
//! BBR (`cc/bbr.rs`) sets the pacing rate itself and sizes the buffers (`bbr_tso_segs`).

use smallpipe_core::{Duration, Instant};

/// Data segments sent before pacing starts (Linux: `tp->data_segs_out >= 10`).
const UNPACED_SEGMENTS: u64 = 10;
/// Segments of one socket buffer at these rates (Linux's `tcp_min_tso_segs`).
pub(super) const BUFFER_SEGMENTS: u64 = 2;

/// The pacing rate of a segment.
#[derive(Debug, Clone, Copy)]
pub(super) enum PacingRate {
    /// Linux's `tcp_update_pacing_rate`: 200% (in slow start, below half of ssthresh) or
    /// 120% of `window` (max(cwnd, flight), bytes) per smoothed RTT; none before an RTT sample.
    Window { window: u64, slow_start: bool, srtt: Option<Duration> },
    /// Set by the congestion controller (BBR's `sk_pacing_rate`), payload bytes per second.
    BytesPerSecond(u64),
}

#[derive(Debug, Clone, Default)]
pub(super) struct Pacer {
    /// Earliest departure of the next data segment (Linux's `tcp_wstamp_ns`).
    next: Option<Instant>,
    data_segments: u64,
    /// Set while a send waits for `next`.
    pub timer: Option<Instant>,
    /// Segments the buffer being sent still takes, back to back.
    buffer_left: u64,
    /// Whether the buffer being sent is paced (it ends at or after the 10th segment).
    buffer_paced: bool,
}

impl Pacer {
    /// Whether a data segment must wait; if so, arms the timer for when it may go. The
    /// segments of the buffer being sent never wait.
    pub fn holds(&mut self, now: Instant) -> bool {
        match self.next {
            Some(next) if next > now && self.buffer_left == 0 => {
                self.timer = Some(next);
                true
            }
            _ => false,
        }
    }

    /// Earliest departure of the next data segment (Linux's `tcp_wstamp_ns`).
    pub fn next_departure(&self) -> Option<Instant> {
        self.next
    }

    /// Whether the next data segment starts a buffer (and so `on_send` needs its size).
    pub fn starts_buffer(&self) -> bool {
        self.buffer_left == 0
    }

    /// Records a data segment of `len` bytes sent at `now` at `rate`. `buffer`, given when
    /// the segment starts a buffer (`starts_buffer`), is cwnd less what is in flight before
    /// it, cwnd, and the segments a buffer may hold at most: they size that buffer.
    pub fn on_send(&mut self, now: Instant, len: u64, rate: PacingRate, buffer: Option<(u64, u64, u64)>) {
        let starts_buffer = self.starts_buffer();
        if starts_buffer {
            let (room_segments, cwnd_segments, most) = buffer.expect("the sizes of a buffer the segment starts");
            let segments = most.min(room_segments).min((cwnd_segments / 2).max(1)).max(1);
            self.buffer_left = segments;
            self.buffer_paced = self.data_segments + segments >= UNPACED_SEGMENTS;
        }
        self.buffer_left -= 1;
        self.data_segments += 1;
        let prior = self.next.unwrap_or(now);
        let start = if starts_buffer { prior.max(now) } else { prior };
        let len_ns = match rate {
            PacingRate::Window { window, slow_start, srtt: Some(srtt) } if window > 0 => {
                let ratio_pct: u128 = if slow_start { 200 } else { 120 };
                Some((len as u128 * srtt.0 as u128 * 100 / (ratio_pct * window as u128)) as u64)
            }
            PacingRate::BytesPerSecond(rate) if rate > 0 => Some((len as u128 * 1_000_000_000 / rate as u128) as u64),
            _ => None,
        };
        let paced = match len_ns {
            Some(len_ns) if self.buffer_paced => {
                // Late on the schedule: up to half of the buffer's first interval back.
                let late = if starts_buffer { now.saturating_since(prior).0 } else { 0 };
                len_ns - (len_ns / 2).min(late)
            }
            _ => 0,
        };
        self.next = Some(start + Duration(paced));
    }
}
