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
