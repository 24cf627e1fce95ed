//! RTT estimation and the retransmission timeout (RFC 6298; Jacobson & Karels 1988), or
//! Linux's (`tcp_rtt_estimator`, `tcp_set_rto` in net/ipv4/tcp_input.c).

use super::compact::Opt64;
use smallpipe_core::Duration;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt_ns: Opt64<u64>,
    rttvar_ns: u64,
    /// RTO before backoff.
    rto_base: Duration,
    /// Exponential backoff shift (RFC 6298 5.5); reset by the next valid sample.
    backoff: u32,
    /// Here, unlike the lower bound and the clock granularity (passed in from `TcpParams`),
    /// because `rto` is read where the parameters are not at hand (the trace).
    max_rto: Duration,
}

/// Linux's variance state for `rto_rule = "linux"`, kept by the caller with its other rarely
/// used state (the estimator stays small). Linux's RTO is SRTT + `rttvar_ns`, where
/// `rttvar_ns` never falls below `min_rto`, jumps at once to the largest deviation seen in
/// the current RTT and decays towards it by a quarter of the gap once per RTT.
#[derive(Debug, Clone, Default)]
pub struct LinuxVar {
    /// Four times the mean deviation (RFC 6298's 4·RTTVAR), but a sample below SRTT raises
    /// it with gain 1/32 instead of 1/4.
    mdev_ns: u64,
    /// The largest `mdev_ns` in the current RTT, and at least `min_rto`.
    mdev_max_ns: u64,
    rttvar_ns: u64,
    /// The current RTT ends when an ACK passes this offset (the highest sent at its start).
    rtt_seq: u64,
}

/// A sample for Linux's estimator: its state, the ACK's cumulative offset and the highest
/// offset sent (they mark Linux's RTT boundaries).
pub struct LinuxSample<'a> {
    pub var: &'a mut LinuxVar,
    pub acked: u64,
    pub sent_max: u64,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator { srtt_ns: Opt64::NONE, rttvar_ns: 0, rto_base: initial_rto, backoff: 0, max_rto }
    }

    /// RFC 6298's RTO before backoff for the current SRTT and RTTVAR, `min_rto` as the lower bound.
    fn base_ns(&self, srtt: u64, min_rto: Duration, granularity: Duration) -> u64 {
        (srtt + granularity.as_nanos().max(4 * self.rttvar_ns)).max(min_rto.as_nanos()).min(self.max_rto.as_nanos())
    }

    /// RFC 6298 (2.2)/(2.3): fold in a measurement R and collapse the backoff; the RTO is
    /// at least `min_rto`, and its variance term at least the clock `granularity` G. With
    /// `linux`, Linux's `tcp_rtt_estimator` and `tcp_set_rto` instead (G unused).
    pub fn sample(&mut self, r: Duration, min_rto: Duration, granularity: Duration, linux: Option<LinuxSample>) {
        let r = r.as_nanos();
        let min_rto_ns = min_rto.as_nanos();
        // Linux's variance term, or None for RFC 6298's.
        let linux_var_ns = match (self.srtt_ns.get(), linux) {
            (None, Some(LinuxSample { var: l, sent_max, .. })) => {
                // As RFC 6298 (2.2), with min_rto folded into the variance term.
                self.srtt_ns = Opt64::some(r);
                l.mdev_ns = 2 * r;
                l.rttvar_ns = l.mdev_ns.max(min_rto_ns);
                l.mdev_max_ns = l.rttvar_ns;
                l.rtt_seq = sent_max;
                Some(l.rttvar_ns)
            }
            (Some(srtt), Some(LinuxSample { var: l, acked, sent_max })) => {
                let err = r as i64 - srtt as i64;
                self.srtt_ns = Opt64::some((srtt as i64 + (err >> 3)) as u64);
                let mut step = err.abs() - (l.mdev_ns >> 2) as i64;
                if err < 0 && step > 0 {
                    step >>= 3; // a falling RTT raises the deviation with gain 1/32
                }
                l.mdev_ns = (l.mdev_ns as i64 + step) as u64;
                if l.mdev_ns > l.mdev_max_ns {
                    l.mdev_max_ns = l.mdev_ns;
                    l.rttvar_ns = l.rttvar_ns.max(l.mdev_max_ns);
                }
                if acked > l.rtt_seq {
                    // One RTT is over: decay towards its largest deviation, start the next.
                    if l.mdev_max_ns < l.rttvar_ns {
                        l.rttvar_ns -= (l.rttvar_ns - l.mdev_max_ns) >> 2;
                    }
                    l.rtt_seq = sent_max;
                    l.mdev_max_ns = min_rto_ns;
                }
                Some(l.rttvar_ns)
            }
            (None, None) => {
                self.srtt_ns = Opt64::some(r);
                self.rttvar_ns = r / 2;
                None
            }
            (Some(srtt), None) => {
                // RTTVAR <- (1 - 1/4) RTTVAR + 1/4 |SRTT - R'|; SRTT <- (1 - 1/8) SRTT + 1/8 R'
                self.rttvar_ns = (3 * self.rttvar_ns + srtt.abs_diff(r)) / 4;
                self.srtt_ns = Opt64::some((7 * srtt + r) / 8);
                None
            }
        };
        let srtt = self.srtt_ns.get().unwrap_or(r);
        self.rto_base = Duration(match linux_var_ns {
            Some(var) => (srtt + var).min(self.max_rto.as_nanos()),
            None => self.base_ns(srtt, min_rto, granularity),
        });
        self.backoff = 0;
    }

    /// The timeout to arm now: the base RTO doubled once per backoff, at most `max_rto`.
    pub fn rto(&self) -> Duration {
        let shifted = self.rto_base.as_nanos().saturating_mul(1u64 << self.backoff.min(40));
        Duration(shifted.min(self.max_rto.as_nanos()))
    }

    /// Doublings of the RTO since the last valid sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// As [`RttEstimator::rto`] with `min_rto` as the lower bound instead of the configured
    /// one (before any sample: the initial RTO).
    pub fn rto_with_min(&self, min_rto: Duration, granularity: Duration) -> Duration {
        let Some(srtt) = self.srtt_ns.get() else { return self.rto() };
        let base = self.base_ns(srtt, min_rto, granularity);
        Duration(base.saturating_mul(1u64 << self.backoff.min(40)).min(self.max_rto.as_nanos()))
    }

    /// RFC 6298 (5.5): the timer expired; double the RTO.
    pub fn back_off(&mut self) {
        self.backoff += 1;
    }

    /// ns-2's Sack1 on a partial ACK (tcp-sack1.cc:225 `t_backoff_ = 1`) and FullTcp on any
    /// new ACK (tcp-full.cc:1355): the backoff collapses without a sample.
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// RFC 6298 (5.7): a SYN timed out, so data starts with an RTO of 3 s (or the RTO in
    /// use, if larger), even when the handshake gave an RTT sample. SRTT and RTTVAR stay:
    /// the next sample recomputes the RTO by (2.3).
    pub fn reinit_after_syn_timeout(&mut self) {
        self.rto_base = self.rto_base.max(Duration::from_secs(3)).min(self.max_rto);
        self.backoff = 0;
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt_ns.get().map(Duration)
    }

    /// A sample folded in by another estimator (`rto_rule = "ns2"`, `rtt_ns2.rs`): its SRTT
    /// and RTO before backoff; the backoff collapses as on any valid sample.
    pub fn set_from(&mut self, srtt: Duration, rto_base: Duration) {
        self.srtt_ns = Opt64::some(srtt.as_nanos());
        self.rto_base = rto_base.min(self.max_rto);
        self.backoff = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// A sample with min RTO 200 ms and G = 1 ms.
    fn sample(e: &mut RttEstimator, r: Duration) {
        e.sample(r, Duration::from_millis(200), Duration::from_millis(1), None);
    }

    #[test]
    fn first_sample_gives_srtt_plus_four_halves() {
        // RFC 6298 (2.2): SRTT = R, RTTVAR = R/2, RTO = R + 4 R/2 = 3R.
        let mut e = est();
        sample(&mut e, Duration::from_millis(100));
        assert_eq!(e.rto(), Duration::from_millis(300));
    }

    #[test]
    fn second_sample_follows_the_ewma() {
        let mut e = est();
        sample(&mut e, Duration::from_millis(100));
        sample(&mut e, Duration::from_millis(200));
        // RTTVAR = 3/4*50 + 1/4*100 = 62.5; SRTT = 7/8*100 + 1/8*200 = 112.5; RTO = 112.5+250.
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(362_500));
    }

    #[test]
    fn min_rto_and_backoff_and_cap() {
        let mut e = est();
        sample(&mut e, Duration::from_millis(10));
        assert_eq!(e.rto(), Duration::from_millis(200), "min RTO applies");
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), Duration::from_millis(800));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60), "max RTO caps the backoff");
        sample(&mut e, Duration::from_millis(10));
        assert_eq!(e.rto(), Duration::from_millis(200), "a valid sample collapses the backoff");
    }

    /// An estimator with Linux's state beside it, as the endpoint keeps them.
    struct Linux(RttEstimator, LinuxVar);

    impl Linux {
        fn new() -> Self {
            Linux(est(), LinuxVar::default())
        }
        fn sample(&mut self, r_ms: u64, min_rto: Duration, acked: u64, sent_max: u64) {
            let linux = Some(LinuxSample { var: &mut self.1, acked, sent_max });
            self.0.sample(Duration::from_millis(r_ms), min_rto, Duration::from_millis(1), linux);
        }
        /// The variance term: RTO minus SRTT.
        fn var_ns(&self) -> u64 {
            self.0.rto().as_nanos() - self.0.srtt().unwrap().as_nanos()
        }
    }

    #[test]
    fn linux_rto_adds_the_minimum_to_srtt_where_rfc_6298_takes_the_larger() {
        // Samples 400 ms then 420 ms: RTTVAR = 3/4·200 + 1/4·20 = 155 ms, SRTT = 7/8·400 +
        // 1/8·420 = 402.5 ms. Min RTO 1 s: RFC 6298 max(1 s, 402.5 + 620) = 1022.5 ms; Linux
        // 402.5 + max(620, 1000) = 1402.5 ms. Then 40 samples of 400 ms: RTTVAR decays to
        // under 1 ms and SRTT to 400 ms, so RFC 6298 gives the 1 s floor and Linux 1.4 s.
        let (min_rto, g) = (Duration::from_secs(1), Duration::from_millis(1));
        let (mut rfc, mut linux) = (est(), Linux::new());
        for (k, r) in [400, 420].into_iter().enumerate() {
            rfc.sample(Duration::from_millis(r), min_rto, g, None);
            linux.sample(r, min_rto, 1 + k as u64, 10 + k as u64);
        }
        assert_eq!((rfc.rto(), linux.0.rto()), (Duration::from_micros(1_022_500), Duration::from_micros(1_402_500)));
        for k in 0..40 {
            rfc.sample(Duration::from_millis(400), min_rto, g, None);
            linux.sample(400, min_rto, 11 + k, 20 + k);
        }
        assert_eq!(rfc.rto(), Duration::from_secs(1));
        let l = linux.0.rto().as_nanos();
        assert!((1_400_000_000..1_400_100_000).contains(&l), "{l}");
        linux.0.back_off();
        assert_eq!(linux.0.rto().as_nanos(), 2 * l, "backoff doubles it as RFC 6298 (5.5)");
    }

    #[test]
    fn linux_keeps_the_largest_deviation_for_the_rtt_then_decays_a_quarter_of_the_gap() {
        // tcp_rtt_estimator by hand, min RTO 1 s, mdev = 4 × mean deviation. 400 ms, highest
        // sent 10: mdev 800, rttvar = max(800, 1000) = 1000. 420: mdev = 800 + 20 - 800/4 =
        // 620. 1000 (SRTT 402.5): mdev = 620 + 597.5 - 155 = 1062.5 > mdev_max 1000, so
        // rttvar = 1062.5 ms. 300 (below SRTT): mdev falls to 974.0625 but rttvar holds, and
        // it still holds at the ACK past 10 that ends the RTT (mdev_max 1062.5 = rttvar; the
        // next RTT's mdev_max starts at 1000). At the end of that RTT rttvar decays by
        // (1062.5 - 1000)/4 = 15.625 to 1046.875 ms.
        let min_rto = Duration::from_secs(1);
        let mut e = Linux::new();
        e.sample(400, min_rto, 1, 10);
        assert_eq!(e.0.rto(), Duration::from_millis(1400));
        e.sample(420, min_rto, 5, 12);
        e.sample(1000, min_rto, 8, 14);
        assert_eq!(e.var_ns(), 1_062_500_000);
        assert_eq!(e.0.srtt(), Some(Duration(477_187_500)), "402.5 + 597.5/8");
        e.sample(300, min_rto, 9, 14);
        assert_eq!(e.var_ns(), 1_062_500_000, "held within the RTT (RFC 6298's 4·RTTVAR: 974.06)");
        e.sample(400, min_rto, 11, 20);
        assert_eq!(e.var_ns(), 1_062_500_000, "the RTT that saw the peak ends: no decay");
        e.sample(400, min_rto, 21, 30);
        assert_eq!(e.var_ns(), 1_046_875_000, "a quarter of the gap to rto_min");
    }

    #[test]
    fn linux_raises_the_deviation_slowly_when_the_rtt_falls() {
        // Min RTO 10 ms. 400 ms then 100 ms: SRTT = 400 - 300/8 = 362.5 ms. RFC 6298: RTTVAR
        // = 3/4·200 + 1/4·300 = 225, RTO = 362.5 + 900 = 1262.5 ms. Linux: |err| - mdev/4 =
        // 300 - 200 = 100 ms, times 1/8 for a falling RTT: mdev = 812.5, RTO = 1175 ms.
        let (min_rto, g) = (Duration::from_millis(10), Duration::from_millis(1));
        let (mut rfc, mut linux) = (est(), Linux::new());
        for (k, r) in [400, 100].into_iter().enumerate() {
            rfc.sample(Duration::from_millis(r), min_rto, g, None);
            linux.sample(r, min_rto, 1 + k as u64, 10);
        }
        assert_eq!((rfc.rto(), linux.0.rto()), (Duration::from_micros(1_262_500), Duration::from_millis(1175)));
    }

    #[test]
    fn syn_timeout_sets_three_seconds_with_or_without_a_sample() {
        // RFC 6298 (5.7): "re-initialized to 3 seconds", whatever the handshake measured.
        let mut e = est();
        e.back_off();
        e.reinit_after_syn_timeout();
        assert_eq!(e.rto(), Duration::from_secs(3), "no sample, backoff dropped");
        let mut e = est();
        sample(&mut e, Duration::from_millis(100));
        e.reinit_after_syn_timeout();
        assert_eq!(e.rto(), Duration::from_secs(3), "a 100 ms sample (RTO 300 ms) does not skip it");
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)), "SRTT kept for the next sample");
    }
}
