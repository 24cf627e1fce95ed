//! RTT estimation and the retransmission timeout (RFC 6298; Jacobson & Karels 1988).

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
    /// Linux's bound: RTO = SRTT + max(4·RTTVAR, min_rto) instead of RFC 6298's
    /// max(min_rto, SRTT + max(G, 4·RTTVAR)).
    linux: bool,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator { srtt_ns: Opt64::NONE, rttvar_ns: 0, rto_base: initial_rto, backoff: 0, max_rto, linux: false }
    }

    /// Linux's RTO (`tcp_set_rto`: its variance term never falls below `rto_min`).
    pub fn linux_rto(mut self, on: bool) -> Self {
        self.linux = on;
        self
    }

    /// The RTO before backoff for the current SRTT and RTTVAR, `min_rto` as the lower bound.
    fn base_ns(&self, srtt: u64, min_rto: Duration, granularity: Duration) -> u64 {
        let rto = if self.linux {
            srtt + (4 * self.rttvar_ns).max(min_rto.as_nanos())
        } else {
            (srtt + granularity.as_nanos().max(4 * self.rttvar_ns)).max(min_rto.as_nanos())
        };
        rto.min(self.max_rto.as_nanos())
    }

    /// RFC 6298 (2.2)/(2.3): fold in a measurement R and collapse the backoff; the RTO is
    /// at least `min_rto`, and its variance term at least the clock `granularity` G.
    pub fn sample(&mut self, r: Duration, min_rto: Duration, granularity: Duration) {
        let r = r.as_nanos();
        match self.srtt_ns.get() {
            None => {
                self.srtt_ns = Opt64::some(r);
                self.rttvar_ns = r / 2;
            }
            Some(srtt) => {
                // RTTVAR <- (1 - 1/4) RTTVAR + 1/4 |SRTT - R'|; SRTT <- (1 - 1/8) SRTT + 1/8 R'
                self.rttvar_ns = (3 * self.rttvar_ns + srtt.abs_diff(r)) / 4;
                self.srtt_ns = Opt64::some((7 * srtt + r) / 8);
            }
        }
        let srtt = self.srtt_ns.get().unwrap_or(r);
        self.rto_base = Duration(self.base_ns(srtt, min_rto, granularity));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// A sample with min RTO 200 ms and G = 1 ms.
    fn sample(e: &mut RttEstimator, r: Duration) {
        e.sample(r, Duration::from_millis(200), Duration::from_millis(1));
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

    #[test]
    fn linux_rto_adds_the_minimum_to_srtt_where_rfc_6298_takes_the_larger() {
        // Samples 400 ms then 420 ms: RTTVAR = 3/4·200 + 1/4·20 = 155 ms, SRTT = 7/8·400 +
        // 1/8·420 = 402.5 ms. Min RTO 1 s: RFC 6298 max(1 s, 402.5 + 620) = 1022.5 ms; Linux
        // 402.5 + max(620, 1000) = 1402.5 ms. Then 40 samples of 400 ms: RTTVAR decays to
        // under 1 ms and SRTT to 400 ms, so RFC 6298 gives the 1 s floor and Linux 1.4 s.
        let (min_rto, g) = (Duration::from_secs(1), Duration::from_millis(1));
        let mut rfc = RttEstimator::new(Duration::from_secs(1), Duration::from_secs(60));
        let mut linux = rfc.clone().linux_rto(true);
        for e in [&mut rfc, &mut linux] {
            e.sample(Duration::from_millis(400), min_rto, g);
            e.sample(Duration::from_millis(420), min_rto, g);
        }
        assert_eq!((rfc.rto(), linux.rto()), (Duration::from_micros(1_022_500), Duration::from_micros(1_402_500)));
        for e in [&mut rfc, &mut linux] {
            for _ in 0..40 {
                e.sample(Duration::from_millis(400), min_rto, g);
            }
        }
        assert_eq!(rfc.rto(), Duration::from_secs(1));
        let l = linux.rto().as_nanos();
        assert!((1_400_000_000..1_400_100_000).contains(&l), "{l}");
        linux.back_off();
        assert_eq!(linux.rto().as_nanos(), 2 * l, "backoff doubles it as RFC 6298 (5.5)");
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
