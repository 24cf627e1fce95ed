//! CUBIC congestion control (RFC 9438), the window growth Linux uses by default.
//!
//! Source: RFC 9438 §4 (Xu, Ha, Rhee, Goel, Eggert 2023; obsoletes RFC 8312).
//!
//! Principles: in congestion avoidance the window follows a cubic function of the time
//! since the last congestion event, W_cubic(t) = C·(t − K)³ + W_max (§4.2), concave up to
//! the window at the last loss (W_max) and convex beyond it, so it is independent of the
//! RTT; a Reno estimate W_est (§4.3) keeps it at least as fast as Reno where Reno does
//! well (short RTT, small window). A loss multiplies the window by β_cubic = 0.7 (§4.6).
//!
//! Trade-offs and limits: the endpoint keeps slow start, fast retransmit and recovery
//! (RFC 5681/6582/6675) shared with Reno; CUBIC only decides ssthresh on a congestion
//! event and the growth outside recovery. Growth per ACK is scaled by the segments it
//! acknowledges (as Linux does), so delayed ACKs do not halve it. HyStart++ (RFC 9406,
//! `hystart.rs`) may end the first slow start before any loss; W_max then starts at the
//! window where it ended, with K = 0 (§4.10). Not modelled: spurious-loss undo (§4.9),
//! ECN, and the epoch shift Linux applies after an idle period (here any slow-start
//! stretch, the idle restart included, ends the congestion-avoidance stage and the next
//! one starts a new epoch).
//!
//! Windows are bytes (`f64` for the fractional parts of the formulas, which are stated
//! in segments: C is in segments per s³); time is the `Instant` passed in.

use smallpipe_core::{Duration, Instant};

/// C (§4.1): segments per s³.
pub const C: f64 = 0.4;
/// β_cubic (§4.1): the window kept on a congestion event.
pub const BETA: f64 = 0.7;
/// α_cubic (§4.3): the additive increase (segments per RTT) that, with β_cubic, gives
/// the same average window as Reno's AIMD(1, 0.5).
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// K (§4.2, Figure 2): seconds the cubic takes to grow from `cwnd_epoch` to `w_max`
/// (both in segments); 0 when the epoch starts at or above W_max.
pub fn k_seconds(w_max_segs: f64, cwnd_epoch_segs: f64) -> f64 {
    ((w_max_segs - cwnd_epoch_segs).max(0.0) / C).cbrt()
}

/// W_cubic(t) (§4.2, Figure 1), segments.
pub fn w_cubic_segs(t_s: f64, k_s: f64, w_max_segs: f64) -> f64 {
    C * (t_s - k_s).powi(3) + w_max_segs
}

/// The current congestion-avoidance stage (§4.1 t_epoch, cwnd_epoch, K, W_est).
#[derive(Debug, Clone, Copy)]
struct Epoch {
    start: Instant,
    k_s: f64,
    /// The Reno-friendly estimate, bytes.
    w_est: f64,
}

#[derive(Debug, Clone)]
pub struct Cubic {
    /// §4.7: on by default; the RFC says to turn it off for a lone flow.
    fast_convergence: bool,
    /// Window just before the last reduction (after fast convergence), bytes; `None`
    /// until the first congestion event.
    w_max: Option<f64>,
    /// cwnd when ssthresh was last set (§4.6 cwnd_prior), bytes: W_est reaching it
    /// switches α_cubic to 1 (§4.3).
    cwnd_prior: f64,
    /// The last reduction was a timeout: the next epoch starts with K = 0 (§4.8).
    after_timeout: bool,
    epoch: Option<Epoch>,
    /// Growth below one byte carried to the next ACK.
    carry: f64,
}

impl Cubic {
    pub fn new(fast_convergence: bool) -> Self {
        Cubic { fast_convergence, w_max: None, cwnd_prior: 0.0, after_timeout: false, epoch: None, carry: 0.0 }
    }

    /// W_max in bytes, once a congestion event has set it.
    pub fn w_max_bytes(&self) -> Option<f64> {
        self.w_max
    }

    /// K of the current epoch, seconds.
    pub fn k(&self) -> Option<Duration> {
        self.epoch.map(|e| Duration((e.k_s * 1e9).round() as u64))
    }

    /// cwnd after a new ACK (outside recovery) that acknowledged `acked` data bytes.
    pub fn on_ack(&mut self, cwnd: u64, ssthresh: u64, acked: u64, now: Instant, srtt: Duration, mss: u64) -> u64 {
        if cwnd < ssthresh {
            // §4.10: standard slow start, which ends any congestion-avoidance stage.
            self.end_epoch();
            return cwnd + acked.min(mss); // RFC 5681 (2)
        }
        let mss_f = mss as f64;
        let cwnd_f = cwnd as f64;
        let epoch = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(cwnd_f, now, mss_f),
        };
        let w_max = self.w_max.unwrap_or(cwnd_f);
        let t_s = now.saturating_since(epoch.start).as_secs_f64();
        // §4.3: W_est += α·segments_acked/cwnd (segments); α = 1 once W_est reaches cwnd_prior.
        let alpha = if epoch.w_est >= self.cwnd_prior { 1.0 } else { ALPHA };
        let w_est = epoch.w_est + alpha * acked as f64 * mss_f / cwnd_f;
        self.epoch = Some(Epoch { w_est, ..epoch });
        let w_max_segs = w_max / mss_f;
        if w_cubic_segs(t_s, epoch.k_s, w_max_segs) * mss_f < w_est {
            // Reno-friendly region: cwnd = W_est (never lowered: W_est can trail a cwnd
            // that grew toward W_cubic(t + RTT)).
            self.carry = 0.0;
            return cwnd.max(w_est as u64);
        }
        // §4.4/§4.5: grow by (target − cwnd)/cwnd per segment acknowledged, with target =
        // W_cubic(t + RTT) kept within [cwnd, 1.5·cwnd].
        let target = (w_cubic_segs(t_s + srtt.as_secs_f64(), epoch.k_s, w_max_segs) * mss_f).clamp(cwnd_f, 1.5 * cwnd_f);
        let growth = (target - cwnd_f) / cwnd_f * acked as f64 + self.carry;
        self.carry = growth.fract();
        cwnd + growth as u64
    }

    /// Slow start (standard or HyStart++'s) ends the congestion-avoidance stage.
    pub fn end_epoch(&mut self) {
        self.epoch = None;
    }

    fn start_epoch(&mut self, cwnd: f64, now: Instant, mss: f64) -> Epoch {
        let k_s = match self.w_max {
            // §4.8 after a timeout, §4.10 before any loss: W_max = cwnd_epoch, K = 0.
            Some(w_max) if !self.after_timeout => k_seconds(w_max / mss, cwnd / mss),
            _ => {
                self.w_max = Some(cwnd);
                self.after_timeout = false;
                0.0
            }
        };
        self.carry = 0.0;
        Epoch { start: now, k_s, w_est: cwnd }
    }

    /// A loss detected by duplicate ACKs or SACK (§4.6, §4.7): updates W_max and returns
    /// the new ssthresh, bytes: β of `base`, the window the sender decreases from
    /// (FlightSize in the RFC, cwnd in Linux's `cubictcp_recalc_ssthresh`).
    pub fn on_congestion(&mut self, cwnd: u64, base: u64, mss: u64) -> u64 {
        let cwnd_f = cwnd as f64;
        self.w_max = Some(match self.w_max {
            Some(w_max) if self.fast_convergence && cwnd_f < w_max => cwnd_f * (1.0 + BETA) / 2.0,
            _ => cwnd_f,
        });
        self.after_timeout = false;
        self.reduce(cwnd_f, base, mss)
    }

    /// A retransmission timeout (§4.8): ssthresh as for a loss; the next epoch restarts
    /// from its own window with K = 0.
    pub fn on_timeout(&mut self, cwnd: u64, base: u64, mss: u64) -> u64 {
        self.after_timeout = true;
        self.reduce(cwnd as f64, base, mss)
    }

    fn reduce(&mut self, cwnd: f64, base: u64, mss: u64) -> u64 {
        self.cwnd_prior = cwnd;
        self.epoch = None;
        ((base as f64 * BETA) as u64).max(2 * mss)
    }
}
