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

use super::hystart_linux::{self, AckSample, LinuxHyStart};
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
    /// Linux's own HyStart (`cubic_hystart`).
    hystart: Option<LinuxHyStart>,
}

impl Cubic {
    pub fn new(fast_convergence: bool, linux_hystart: bool) -> Self {
        let hystart = linux_hystart.then(LinuxHyStart::default);
        Cubic { fast_convergence, w_max: None, cwnd_prior: 0.0, after_timeout: false, epoch: None, carry: 0.0, hystart }
    }

    /// `cubictcp_acked` with Linux's HyStart on: whether slow start must end on this ACK.
    /// Samples within a second of a congestion-avoidance epoch's start are left out.
    pub fn pkts_acked(&mut self, sample: AckSample) -> bool {
        let just_recovered = self.epoch.is_some_and(|e| sample.now.saturating_since(e.start) < hystart_linux::AFTER_RECOVERY);
        self.hystart.as_mut().is_some_and(|h| h.on_ack(sample, just_recovered))
    }

    /// A timeout resets Linux's HyStart (`bictcp_reset`, `bictcp_hystart_reset`).
    pub fn hystart_on_timeout(&mut self, now: Instant, snd_nxt: u64) {
        if let Some(h) = self.hystart.as_mut() {
            h.on_timeout(now, snd_nxt);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn secs(s: f64) -> Instant {
        Instant((s * 1e9).round() as u64)
    }

    /// One round trip of ACKs, one per MSS of the window, spread evenly over `rtt_s` from
    /// `t_s`: the window as a sender with every segment acknowledged sees it. Returns cwnd.
    fn round(c: &mut Cubic, cwnd: u64, ssthresh: u64, t_s: f64, rtt_s: f64) -> u64 {
        let acks = cwnd / MSS;
        let mut w = cwnd;
        for i in 0..acks {
            let now = secs(t_s + rtt_s * i as f64 / acks as f64);
            w = c.on_ack(w, ssthresh, MSS, now, Duration((rtt_s * 1e9) as u64), MSS);
        }
        w
    }

    #[test]
    fn k_and_w_cubic_are_the_rfc_formulas() {
        // W_max = 100 segments, cwnd_epoch = β·W_max: K = cbrt(100 × 0.3 / 0.4) = cbrt(75) s.
        let k = k_seconds(100.0, 70.0);
        assert!((k - 4.2172).abs() < 1e-4, "K = {k}");
        assert!((w_cubic_segs(0.0, k, 100.0) - 70.0).abs() < 1e-9, "starts at β·W_max");
        assert!((w_cubic_segs(k, k, 100.0) - 100.0).abs() < 1e-12, "back at W_max after K");
        // One second past K: W_max + C·1³.
        assert!((w_cubic_segs(k + 1.0, k, 100.0) - 100.4).abs() < 1e-9);
        assert_eq!(k_seconds(100.0, 120.0), 0.0, "an epoch above W_max has K = 0");
        assert!((ALPHA - 0.9 / 1.7).abs() < 1e-12);
    }

    #[test]
    fn a_decrease_keeps_beta_of_its_base_and_at_least_two_segments() {
        // W_max comes from cwnd whatever the base (§4.6), here 4 segments of a 10-segment cwnd.
        let mut c = Cubic::new(true, false);
        assert_eq!(c.on_congestion(10 * MSS, 4 * MSS, MSS), 2_800);
        assert_eq!(c.w_max_bytes(), Some(10_000.0));
        assert_eq!(Cubic::new(true, false).on_timeout(10 * MSS, 10 * MSS, MSS), 7_000);
        assert_eq!(Cubic::new(true, false).on_timeout(2 * MSS, 2 * MSS, MSS), 2 * MSS);
    }

    #[test]
    fn a_loss_keeps_beta_of_the_flight_and_the_window_regrows_along_w_cubic() {
        let mut c = Cubic::new(true, false);
        let ssthresh = c.on_congestion(100 * MSS, 100 * MSS, MSS);
        assert_eq!(ssthresh, 70 * MSS, "β_cubic × FlightSize");
        assert_eq!(c.w_max_bytes(), Some(100.0 * MSS as f64));
        // Recovery ends with cwnd = ssthresh; 100 ms rounds from t = 0.
        let (rtt, mut w) = (0.1, ssthresh);
        let k = (100.0f64 * 0.3 / 0.4).cbrt();
        // Up to K + 1 s: the Reno estimate, 70 + 5.3·t segments until it reaches 100 at
        // 5.7 s, stays below W_cubic until about 5.9 s.
        let mut t = 0.0;
        while t < k + 1.0 {
            w = round(&mut c, w, ssthresh, t, rtt);
            t += rtt;
            // Each ACK moves cwnd toward target = W_cubic(t + RTT) (§4.4, §4.5), so after the
            // round ending at t it lies between W_cubic(t) and W_cubic(t + RTT), give or take
            // one segment (Figure 1 written out: C = 0.4, W_max = 100).
            let w_cubic = |t: f64| 0.4 * (t - k).powi(3) + 100.0;
            let segs = w as f64 / MSS as f64;
            assert!(segs >= w_cubic(t) - 1.0 && segs <= w_cubic(t + rtt) + 1.0,
                "t = {t:.1} s: cwnd {segs:.2} vs W_cubic {:.2}..{:.2}", w_cubic(t), w_cubic(t + rtt));
        }
        assert!((c.k().unwrap().as_secs_f64() - k).abs() < 1e-6);
    }

    #[test]
    fn the_window_is_back_at_w_max_after_k() {
        let mut c = Cubic::new(true, false);
        let ssthresh = c.on_congestion(100 * MSS, 100 * MSS, MSS);
        let (rtt, k) = (0.1, 75f64.cbrt());
        let (mut w, mut t) = (ssthresh, 0.0);
        while t + rtt <= k {
            w = round(&mut c, w, ssthresh, t, rtt);
            t += rtt;
        }
        let segs = w as f64 / MSS as f64;
        assert!((segs - 100.0).abs() <= 1.0, "cwnd {segs:.2} segments at t = {t:.2} s, K = {k:.3} s");
    }

    #[test]
    fn fast_convergence_lowers_w_max_below_a_falling_saturation_point() {
        let mut fc = Cubic::new(true, false);
        fc.on_congestion(100 * MSS, 100 * MSS, MSS);
        fc.on_congestion(90 * MSS, 90 * MSS, MSS);
        // W_max = cwnd·(1 + β)/2 = 90 × 0.85.
        assert_eq!(fc.w_max_bytes(), Some(76.5 * MSS as f64));
        fc.on_congestion(95 * MSS, 95 * MSS, MSS);
        assert_eq!(fc.w_max_bytes(), Some(95.0 * MSS as f64), "above W_max: remembered as is");
        let mut plain = Cubic::new(false, false);
        plain.on_congestion(100 * MSS, 100 * MSS, MSS);
        plain.on_congestion(90 * MSS, 90 * MSS, MSS);
        assert_eq!(plain.w_max_bytes(), Some(90.0 * MSS as f64));
    }

    #[test]
    fn short_rtt_small_window_follows_the_reno_estimate() {
        // W_max = 10 segments, 10 ms RTT: K = cbrt(7.5) = 1.96 s, almost 200 rounds,
        // while AIMD(α_cubic, β) regains the 3 segments in 3 / 0.53 ≈ 6 rounds. By round
        // 12 the switch to α = 1 at cwnd_prior shows: 16.2 segments against 13.4 without.
        let mut c = Cubic::new(true, false);
        let ssthresh = c.on_congestion(10 * MSS, 10 * MSS, MSS);
        let (rtt, mut w) = (0.01, ssthresh);
        let k = 7.5f64.cbrt();
        for n in 1..=12 {
            w = round(&mut c, w, ssthresh, (n - 1) as f64 * rtt, rtt);
            // Reno-friendly estimate: +α_cubic segments per RTT up to cwnd_prior (10), then +1.
            let alpha: f64 = 3.0 * 0.3 / 1.7;
            let rounds_to_prior = (3.0 / alpha).ceil();
            let w_est = if (n as f64) <= rounds_to_prior { 7.0 + alpha * n as f64 } else { 7.0 + alpha * rounds_to_prior + (n as f64 - rounds_to_prior) };
            let segs = w as f64 / MSS as f64;
            assert!((segs - w_est).abs() <= 1.0, "round {n}: cwnd {segs:.2} vs W_est {w_est:.2}");
            let w_cubic = 0.4 * (n as f64 * rtt - k).powi(3) + 10.0;
            assert!(segs > w_cubic, "round {n}: W_cubic {w_cubic:.2} is below, Reno-friendly region");
        }
    }

    #[test]
    fn after_a_timeout_the_next_epoch_starts_at_its_own_window_with_k_zero() {
        let mut c = Cubic::new(true, false);
        c.on_congestion(100 * MSS, 100 * MSS, MSS);
        let ssthresh = c.on_timeout(90 * MSS, 80 * MSS, MSS);
        assert_eq!(ssthresh, 56 * MSS, "β_cubic × FlightSize, as for a loss (§4.8)");
        // Slow start from one segment (the endpoint sets cwnd = 1 MSS): no epoch yet.
        let w = c.on_ack(MSS, ssthresh, MSS, secs(1.0), Duration::from_millis(100), MSS);
        assert_eq!(w, 2 * MSS);
        assert!(c.k().is_none());
        // Congestion avoidance begins at 60 segments: W_max = 60 segments and K = 0.
        c.on_ack(60 * MSS, ssthresh, MSS, secs(2.0), Duration::from_millis(100), MSS);
        assert_eq!(c.k(), Some(Duration::ZERO));
        assert_eq!(c.w_max_bytes(), Some(60.0 * MSS as f64));
        // t seconds on the window follows the convex half: W_cubic(t) = 60 + 0.4·t³.
        let mut w = 60 * MSS;
        let mut t = 0.0;
        while t < 4.0 {
            w = round(&mut c, w, ssthresh, 2.0 + t, 0.1);
            t += 0.1;
        }
        let segs = w as f64 / MSS as f64;
        let w_cubic = 60.0 + 0.4 * 4f64.powi(3);
        assert!((segs - w_cubic).abs() <= 1.0, "cwnd {segs:.2} vs W_cubic(4 s) = {w_cubic:.2}");
    }
}
