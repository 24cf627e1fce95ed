//! `rto_rule = "ns2"`: ns-2 2.35's retransmission timeout (`TcpAgent::rtt_update`,
//! `rtt_timeout`, `rtt_backoff` in tcp/tcp.cc), which keeps SRTT and RTTVAR in whole clock
//! ticks (`tcpTick_`, here `clock_granularity_ms`) as fixed-point integers: SRTT with
//! `T_SRTT_BITS` = 3 fraction bits, RTTVAR with `T_RTTVAR_BITS` = 2, and the RTO is
//! SRTT + 2^`rttvar_exp_` (= 4) · RTTVAR ticks, truncated to a tick.

use smallpipe_core::Duration;

/// ns-default.tcl's `T_SRTT_BITS`, `T_RTTVAR_BITS` and `rttvar_exp_`.
const SRTT_BITS: u32 = 3;
const RTTVAR_BITS: u32 = 2;
const RTTVAR_EXP: u32 = 2;
/// tcp.cc:627: from a backoff factor above 8 on, ns-2 drops SRTT (`t_srtt_ = 0`), so the next
/// sample starts the estimator afresh. Our backoff counts doublings: 2^4 = 16 > 8.
const CLOBBER_BACKOFFS: u32 = 4;

/// ns-2's estimator state in ticks: `t_srtt_` (8·SRTT) and `t_rttvar_` (4·RTTVAR); 0 before
/// the first sample.
#[derive(Debug, Clone, Default)]
pub struct Ns2Rtt {
    srtt_x8: i64,
    rttvar_x4: i64,
}

impl Ns2Rtt {
    /// Folds in a sample `r` of a segment sent at `sent_ns` (simulation time) with `backoffs`
    /// doublings of the timer since the last sample, and returns the RTO before backoff:
    /// ns-2's `t_rtxcur_`, at least `min_rto` (tcp.cc:545, `rfc2988_` on) and 2 ticks (:560).
    pub fn sample(&mut self, r: Duration, sent_ns: u64, backoffs: u32, tick: Duration, min_rto: Duration) -> Duration {
        let tick_ns = tick.as_nanos().max(1);
        // tcp.cc:584: the sample counts the tick boundaries crossed since the send (the
        // agent's clock phase `boot_time_` is taken as 0 here, ns-2 draws it per agent),
        // at least 1.
        let ticks = (((r.as_nanos() + sent_ns % tick_ns) / tick_ns) as i64).max(1);
        if backoffs >= CLOBBER_BACKOFFS {
            self.srtt_x8 = 0;
        }
        if self.srtt_x8 != 0 {
            // a1 = 7/8 a0 + 1/8 m; var1 = 3/4 var0 + 1/4 |m - a0|, in the fixed point.
            let delta = ticks - (self.srtt_x8 >> SRTT_BITS);
            self.srtt_x8 = (self.srtt_x8 + delta).max(1);
            self.rttvar_x4 = (self.rttvar_x4 + delta.abs() - (self.rttvar_x4 >> RTTVAR_BITS)).max(1);
        } else {
            self.srtt_x8 = ticks << SRTT_BITS;
            self.rttvar_x4 = ticks << (RTTVAR_BITS - 1); // RTTVAR = R / 2
        }
        let rto_ticks = ((self.rttvar_x4 << (RTTVAR_EXP + SRTT_BITS - RTTVAR_BITS)) + self.srtt_x8) >> SRTT_BITS;
        Duration(((rto_ticks as u64) * tick_ns).max(min_rto.as_nanos()).max(2 * tick_ns))
    }

    /// SRTT in simulation time (ns-2's `srtt_` as it traces it), None before a sample.
    pub fn srtt(&self, tick: Duration) -> Option<Duration> {
        (self.srtt_x8 > 0).then(|| Duration((self.srtt_x8 as u64 * tick.as_nanos()) >> SRTT_BITS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration(10_000_000);
    const MIN_RTO: Duration = Duration(200_000_000);

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn the_first_sample_gives_three_rtts_whole_ticks() {
        // 104 ms sent on a tick boundary: 10 ticks; SRTT 10, RTTVAR 5, RTO 10 + 4·5 = 30 ticks.
        let mut e = Ns2Rtt::default();
        assert_eq!(e.sample(ms(104), 0, 0, TICK, MIN_RTO), ms(300));
        assert_eq!(e.srtt(TICK), Some(ms(100)));
        // The same 104 ms sent 7 ms past a boundary crosses 11 boundaries: RTO 33 ticks.
        let mut e = Ns2Rtt::default();
        assert_eq!(e.sample(ms(104), 7_000_000, 0, TICK, MIN_RTO), ms(330));
    }

    #[test]
    fn later_samples_follow_the_integer_ewma() {
        // Hand-worked from tcp.cc:591-607: after 10 ticks, t_srtt_ = 80, t_rttvar_ = 20.
        // Sample 18: delta = 18 - 10 = 8, t_srtt_ = 88; t_rttvar_ = 20 + 8 - 5 = 23.
        // RTO = (23 << 3 + 88) >> 3 = (184 + 88) >> 3 = 34 ticks.
        let mut e = Ns2Rtt::default();
        e.sample(ms(100), 0, 0, TICK, MIN_RTO);
        assert_eq!(e.sample(ms(180), 0, 0, TICK, MIN_RTO), ms(340));
        // Sample 10: delta = 10 - 11 = -1, t_srtt_ = 87; t_rttvar_ = 23 + 1 - 5 = 19;
        // RTO = (152 + 87) >> 3 = 29 ticks.
        assert_eq!(e.sample(ms(100), 0, 0, TICK, MIN_RTO), ms(290));
    }

    #[test]
    fn short_rtts_are_held_to_the_minimum_rto() {
        // 1 tick (a sample under one tick counts as one): RTO 3 ticks, below minrto_.
        let mut e = Ns2Rtt::default();
        assert_eq!(e.sample(ms(2), 0, 0, TICK, MIN_RTO), MIN_RTO);
        let mut e = Ns2Rtt::default();
        assert_eq!(e.sample(ms(2), 0, 0, TICK, ms(1)), ms(30));
    }

    #[test]
    fn a_fourth_backoff_restarts_the_estimator() {
        let mut e = Ns2Rtt::default();
        e.sample(ms(100), 0, 0, TICK, MIN_RTO);
        e.sample(ms(500), 0, 0, TICK, MIN_RTO);
        // Three doublings keep the history; four start afresh from the sample: 3 × 100 ms.
        let mut kept = e.clone();
        assert_ne!(kept.sample(ms(100), 0, 3, TICK, MIN_RTO), ms(300));
        assert_eq!(e.sample(ms(100), 0, 4, TICK, MIN_RTO), ms(300));
    }
}
