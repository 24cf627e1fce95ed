//! The RED decision core (Random Early Detection).
//!
//! Source: S. Floyd and V. Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1(4), 1993 (Fig. 2 and Section 7); "gentle" RED (Floyd, 2000);
//! automatic parameters as in ns-2 `queue/red.cc` (Floyd, Gummadi, Shenker, "Adaptive RED",
//! 2001), which is what the FCT thesis in `papers/` ran.
//!
//! Principles, on each arrival:
//! - Average queue: `avg ← (1 − w_q)·avg + w_q·q`. After an idle period of length `t` the
//!   average first decays as if `m = ⌊t·C⌋` packets had arrived to an empty queue, `C` the
//!   link capacity in typical packets per second: `avg ← (1 − w_q)^(m+1)·avg + w_q·q`.
//! - Below `min_th`: accept. Between the thresholds: `p_b = max_p·(avg − min_th)/(max_th −
//!   min_th)`. Gentle, between `max_th` and `2·max_th`: `p_b` ramps from `max_p` to 1.
//!   Above (`max_th` without gentle, `2·max_th` with it): forced drop.
//! - Uniform spacing of drops: with `count` packets accepted since the last drop,
//!   `p_a = p_b / (1 − count·p_b)` (the paper), or with ns-2's `wait` option (default)
//!   `p_a = 0` while `count·p_b < 1`, `p_b / (2 − count·p_b)` while `< 2`, else 1, which
//!   makes the gap between drops uniform on `[1/p_b, 2/p_b]` instead of `[1, 1/p_b]`.
//! - Byte mode: the queue and thresholds are in bytes, `count` is counted in mean-size
//!   packets (`count_bytes / mean_pkt_size`), and `p_a` is scaled by `size / mean_pkt_size`
//!   so a small packet is less likely to be dropped than a large one.
//! - ECN: a probabilistic decision on an ECN-capable packet marks it instead, while the
//!   probability is at most `max_p` (ns-2 `use_mark_p`); the gentle region and forced
//!   drops still drop.
//! - When `avg` first crosses `min_th` from below, `count` restarts at 1 and that packet
//!   is accepted (ns-2 `old` flag); no early decision is taken while the instantaneous
//!   queue holds at most one unit (one packet, or one byte in byte mode), as in ns-2.
//!
//! Complexity: O(1) per arrival; `powi` for the idle decay is O(log m).

use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// RED configuration, in the units of the queue it watches (packets or bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct RedParams {
    /// Lower threshold on the average queue (packets, or bytes in byte mode).
    pub min_th: f64,
    /// Upper threshold on the average queue (same unit).
    pub max_th: f64,
    /// Drop probability reached at `max_th`.
    pub max_p: f64,
    /// EWMA weight of the average queue.
    pub w_q: f64,
    pub gentle: bool,
    /// ns-2 `wait_`: wait at least `1/p_b` packets between drops.
    pub wait: bool,
    /// Queue and thresholds in bytes; drop probability scaled by packet size.
    pub byte_mode: bool,
    /// Typical packet size, bytes (byte-mode scaling and the idle-time correction).
    pub mean_pkt_size_bytes: f64,
    /// Link capacity in typical packets per second ("ptc" in ns-2): sets `m` after idle.
    pub pkts_per_sec: f64,
    /// Mark ECN-capable packets instead of dropping them (probabilistic region only).
    pub ecn: bool,
}

/// RED state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RedVars {
    /// Average queue, in the queue's unit.
    pub avg: f64,
    /// Packets accepted since the last early or forced drop.
    pub count: u64,
    /// Bytes accepted since the last early or forced drop.
    pub count_bytes: u64,
    /// `avg` was at or above `min_th` at the previous arrival (ns-2 `old`).
    pub above_min: bool,
    /// When the queue became idle (link free and queue empty), if it is.
    pub idle_since: Option<Instant>,
}

/// RED counters by cause (Linux `red_stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedStats {
    /// Probabilistic drops (between the thresholds, or in the gentle ramp).
    pub prob_drop: u64,
    /// Probabilistic decisions turned into ECN marks.
    pub prob_mark: u64,
    /// Drops because the average was above the forced-drop threshold.
    pub forced_drop: u64,
    /// Drops because the queue itself was full (reported by the discipline).
    pub pdrop: u64,
}

/// What to do with an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedVerdict {
    Accept,
    /// Accept, with the ECN CE codepoint set.
    Mark,
    /// Probabilistic (early) drop.
    EarlyDrop,
    /// The average is above the forced-drop threshold.
    ForcedDrop,
}

impl RedParams {
    /// The initial drop probability `p_b` for an average `avg` (0 below `min_th`, 1 at and
    /// above the forced-drop threshold).
    pub fn p_b(&self, avg: f64) -> f64 {
        let p = if avg < self.min_th {
            0.0
        } else if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        } else {
            1.0
        };
        p.min(1.0)
    }

    /// The actual probability `p_a` for a packet of `size_bytes`, given the packets
    /// (`count`) or bytes (`count_bytes`) accepted since the last drop.
    pub fn p_a(&self, p_b: f64, count: u64, count_bytes: u64, size_bytes: u64) -> f64 {
        let n = if self.byte_mode {
            (count_bytes as f64 / self.mean_pkt_size_bytes).floor()
        } else {
            count as f64
        };
        let x = n * p_b;
        let mut p = if self.wait {
            if x < 1.0 {
                0.0
            } else if x < 2.0 {
                p_b / (2.0 - x)
            } else {
                1.0
            }
        } else if x < 1.0 {
            p_b / (1.0 - x)
        } else {
            1.0
        };
        if self.byte_mode && p < 1.0 {
            p = p * size_bytes as f64 / self.mean_pkt_size_bytes;
        }
        p.min(1.0)
    }

    fn forced(&self, avg: f64) -> bool {
        avg >= if self.gentle { 2.0 * self.max_th } else { self.max_th }
    }

    /// Packets the idle correction pretends were served during `idle`.
    pub fn idle_packets(&self, idle: Duration) -> u64 {
        // Multiply before dividing so round numbers stay exact (2500/s · 0.1 s = 250).
        (self.pkts_per_sec * idle.as_nanos() as f64 / 1e9).floor() as u64
    }
}

/// Only the average-queue step of an arrival seeing `qlen` queued (with the idle-time
/// decay), no decision: RIO keeps its total average current on in-packet arrivals, and
/// size-aware dropping drives its target from this average.
pub fn red_update_avg(p: &RedParams, v: &mut RedVars, now: Instant, qlen: f64) {
    let m = v.idle_since.take().map_or(0, |t| p.idle_packets(now.saturating_since(t)));
    let decay = (1.0 - p.w_q).powi(m.saturating_add(1).min(i32::MAX as u64) as i32);
    v.avg = v.avg * decay + p.w_q * qlen;
}

/// Run RED for one arrival of `size_bytes` while the queue holds `qlen` (in the queue's
/// unit, not counting the arrival). `ect`: the packet is ECN-capable.
#[allow(clippy::too_many_arguments)]
pub fn red_on_arrival(
    p: &RedParams,
    v: &mut RedVars,
    s: &mut RedStats,
    now: Instant,
    qlen: f64,
    size_bytes: u64,
    ect: bool,
    rng: &mut Rng,
) -> RedVerdict {
    red_update_avg(p, v, now, qlen);
    v.count += 1;
    v.count_bytes += size_bytes;

    if v.avg < p.min_th || qlen <= 1.0 {
        v.above_min = false;
        return RedVerdict::Accept;
    }
    if p.forced(v.avg) {
        v.count = 0;
        v.count_bytes = 0;
        s.forced_drop += 1;
        return RedVerdict::ForcedDrop;
    }
    if !v.above_min {
        v.above_min = true;
        v.count = 1;
        v.count_bytes = size_bytes;
        return RedVerdict::Accept;
    }
    let p_b = p.p_b(v.avg);
    let p_a = p.p_a(p_b, v.count, v.count_bytes, size_bytes);
    if rng.uniform() < p_a {
        v.count = 0;
        v.count_bytes = 0;
        if p.ecn && ect && p_b <= p.max_p {
            s.prob_mark += 1;
            return RedVerdict::Mark;
        }
        s.prob_drop += 1;
        return RedVerdict::EarlyDrop;
    }
    RedVerdict::Accept
}

impl RedVars {
    /// The queue emptied and the link goes idle at `at` (the end of the last packet's
    /// transmission).
    pub fn start_idle(&mut self, at: Instant) {
        self.idle_since = Some(at);
    }
    /// The head of a RED FIFO (`queue`, whose bytes `backlog_bytes` counts), at `now`: an
    /// empty queue starts the idle period now, and the last packet leaving starts it when
    /// its transmission at `link_rate_bps` ends, as ns-2's link finds the queue empty then.
    pub fn dequeue_fifo(&mut self, queue: &mut VecDeque<Packet>, backlog_bytes: &mut u64, link_rate_bps: u64,
                        now: Instant) -> Option<Packet> {
        let Some(pkt) = queue.pop_front() else {
            if self.idle_since.is_none() {
                self.start_idle(now);
            }
            return None;
        };
        *backlog_bytes -= pkt.len_bytes();
        if queue.is_empty() {
            self.start_idle(now + Duration::serialization(pkt.len_bytes(), link_rate_bps));
        }
        Some(pkt)
    }
    /// An arrival was dropped because the queue was full: restart the spacing count (ns-2
    /// resets it on every forced drop).
    pub fn on_overflow_drop(&mut self, s: &mut RedStats) {
        self.count = 0;
        self.count_bytes = 0;
        s.pdrop += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(wait: bool, gentle: bool) -> RedParams {
        RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            w_q: 0.002,
            gentle,
            wait,
            byte_mode: false,
            mean_pkt_size_bytes: 500.0,
            pkts_per_sec: 2500.0,
            ecn: false,
        }
    }

    /// Mean gap between drops (packets, the dropped one included) implied by the `p_a`
    /// rule of Floyd & Jacobson (no wait) or ns-2 (wait), for a constant `p_b`:
    /// `E[X] = Σ_n P(X ≥ n)` with `P(X ≥ n+1) = Π_{k≤n} (1 − p_a(k))`. Written here from the
    /// formulas, independently of `RedParams::p_a`.
    fn expected_gap(p_b: f64, wait: bool) -> f64 {
        let pa = |k: f64| -> f64 {
            let x = k * p_b;
            let p = if wait {
                if x < 1.0 { 0.0 } else if x < 2.0 { p_b / (2.0 - x) } else { 1.0 }
            } else if x < 1.0 {
                p_b / (1.0 - x)
            } else {
                1.0
            };
            p.min(1.0)
        };
        let (mut survive, mut mean, mut k) = (1.0, 0.0, 1.0);
        while survive > 1e-15 {
            mean += survive;
            survive *= 1.0 - pa(k);
            k += 1.0;
        }
        mean
    }

    /// Holds `avg` at `q` (a constant queue with avg already equal to it) and counts the
    /// early drops among `n` arrivals.
    fn drop_fraction(p: &RedParams, q: f64, n: u64, seed: u64) -> f64 {
        let mut v = RedVars { avg: q, above_min: true, ..RedVars::default() };
        let mut s = RedStats::default();
        let mut rng = Rng::new(seed, 0);
        let mut drops = 0;
        for i in 0..n {
            v.avg = q; // isolate the spacing rule from the EWMA
            if red_on_arrival(p, &mut v, &mut s, Instant(i), q, 500, false, &mut rng)
                == RedVerdict::EarlyDrop
            {
                drops += 1;
            }
        }
        drops as f64 / n as f64
    }

    #[test]
    fn drop_rate_between_thresholds_matches_the_spacing_rule() {
        // avg = 10 with thresholds 5/15 and max_p 0.1: p_b = 0.1·(10−5)/(15−5) = 0.05.
        for wait in [false, true] {
            let p = params(wait, true);
            assert!((p.p_b(10.0) - 0.05).abs() < 1e-12);
            let n = 200_000;
            let expect = 1.0 / expected_gap(0.05, wait);
            let got = drop_fraction(&p, 10.0, n, 1);
            // Binomial tolerance: 4 standard deviations of a fraction over n trials (the
            // renewal process is more regular than Bernoulli, so this is conservative).
            let tol = 4.0 * (expect * (1.0 - expect) / n as f64).sqrt();
            assert!((got - expect).abs() < tol, "wait={wait}: got {got}, expected {expect} ± {tol}");
        }
        // Sanity of the closed forms: without wait the gap is uniform on 1..=19 (mean 10)
        // for p_b = 0.05, with wait uniform on 20..=39 (mean 29.5).
        assert!((expected_gap(0.05, false) - 10.0).abs() < 1e-9);
        assert!((expected_gap(0.05, true) - 29.5).abs() < 1e-9);
    }

    #[test]
    fn gentle_region_ramps_from_max_p_to_one() {
        let p = params(false, true);
        // avg = 1.5·max_th: p_b = max_p + (1 − max_p)·0.5 = 0.55.
        assert!((p.p_b(22.5) - 0.55).abs() < 1e-12);
        assert!((p.p_b(15.0) - 0.1).abs() < 1e-12);
        // At 2·max_th every arrival is a forced drop; without gentle already at max_th.
        let mut v = RedVars { avg: 30.0, above_min: true, ..RedVars::default() };
        let mut s = RedStats::default();
        let mut rng = Rng::new(0, 0);
        let verdict = red_on_arrival(&p, &mut v, &mut s, Instant(0), 30.0, 500, false, &mut rng);
        assert_eq!(verdict, RedVerdict::ForcedDrop);
        let hard = params(false, false);
        let mut v = RedVars { avg: 15.0, above_min: true, ..RedVars::default() };
        let verdict = red_on_arrival(&hard, &mut v, &mut s, Instant(0), 15.0, 500, false, &mut rng);
        assert_eq!(verdict, RedVerdict::ForcedDrop);
        assert_eq!(s.forced_drop, 2);
    }

    #[test]
    fn gentle_drop_rate_matches_the_ramp() {
        // avg = 16.5 is in the gentle ramp: p_b = 0.1 + 0.9·(16.5 − 15)/15 = 0.19.
        let p = params(true, true);
        assert!((p.p_b(16.5) - 0.19).abs() < 1e-12);
        let n = 100_000;
        let expect = 1.0 / expected_gap(0.19, true);
        let got = drop_fraction(&p, 16.5, n, 2);
        let tol = 4.0 * (expect * (1.0 - expect) / n as f64).sqrt();
        assert!((got - expect).abs() < tol, "got {got}, expected {expect} ± {tol}");
    }

    #[test]
    fn idle_time_decays_the_average_as_m_small_packets() {
        // C = 2500 packets/s; 100 ms idle → m = 250. The arrival sees an empty queue, so
        // avg' = avg·(1 − w)^(m+1) + w·0.
        let p = params(true, true);
        let mut v = RedVars { avg: 12.0, ..RedVars::default() };
        let mut s = RedStats::default();
        let mut rng = Rng::new(0, 0);
        v.start_idle(Instant(1_000_000_000));
        red_on_arrival(&p, &mut v, &mut s, Instant(1_100_000_000), 0.0, 500, false, &mut rng);
        let expect = 12.0 * (1.0f64 - 0.002).powf(251.0);
        assert!((v.avg - expect).abs() < 1e-9, "{} vs {}", v.avg, expect);
        // A busy queue: one EWMA step only.
        v.avg = 12.0;
        red_on_arrival(&p, &mut v, &mut s, Instant(1_200_000_000), 3.0, 500, false, &mut rng);
        assert!((v.avg - (12.0 * 0.998 + 0.002 * 3.0)).abs() < 1e-12);
    }

    #[test]
    fn byte_mode_scales_by_packet_size() {
        let mut p = params(false, true);
        p.byte_mode = true;
        // 10 mean-size packets counted; a 250-byte packet gets half the probability.
        let full = p.p_a(0.05, 0, 5000, 500);
        let half = p.p_a(0.05, 0, 5000, 250);
        assert!((full - 0.05 / (1.0 - 10.0 * 0.05)).abs() < 1e-12);
        assert!((half - full / 2.0).abs() < 1e-12);
    }

    #[test]
    fn ecn_capable_packets_are_marked_not_dropped() {
        let mut p = params(false, true);
        p.ecn = true;
        let mut v = RedVars { avg: 14.0, above_min: true, count: 100, ..RedVars::default() };
        let mut s = RedStats::default();
        let mut rng = Rng::new(0, 0);
        // count·p_b ≥ 1 → p_a = 1: the decision is certain.
        let verdict = red_on_arrival(&p, &mut v, &mut s, Instant(0), 14.0, 500, true, &mut rng);
        assert_eq!(verdict, RedVerdict::Mark);
        v.count = 100;
        let verdict = red_on_arrival(&p, &mut v, &mut s, Instant(0), 14.0, 500, false, &mut rng);
        assert_eq!(verdict, RedVerdict::EarlyDrop);
        assert_eq!((s.prob_mark, s.prob_drop), (1, 1));
    }

    #[test]
    fn first_crossing_of_min_th_is_accepted_and_restarts_count() {
        let p = params(false, true);
        let mut v = RedVars { avg: 14.9, count: 1000, ..RedVars::default() };
        let mut s = RedStats::default();
        let mut rng = Rng::new(0, 0);
        let verdict = red_on_arrival(&p, &mut v, &mut s, Instant(0), 14.9, 500, false, &mut rng);
        assert_eq!(verdict, RedVerdict::Accept);
        assert_eq!(v.count, 1);
    }
}
