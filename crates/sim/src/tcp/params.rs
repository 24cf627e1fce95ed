//! `TcpParams`: the `[tcp]` knobs converted once to the units and flags the endpoint reads.

use super::config::{
    AckRule, Congestion, CwndGrowth, DisorderAck, DupackRule, FastRetransmitRto, LossDetection, Pacing, PartialAck,
    Recovery, FastRecoveryRule, RecoveryPacing, RecoveryPipe, RecoveryRto, RtoRule, RttSamples, SsthreshFrom, TcpConfig,
};
use smallpipe_core::{ConfigError, Duration};

/// The knobs of `TcpConfig`, converted to the units the endpoint works in.
#[derive(Debug, Clone)]
pub struct TcpParams {
    pub mss: u64,
    pub header_bytes: u32,
    pub initial_window: u64,
    pub recovery: Recovery,
    pub congestion: Congestion,
    pub cubic_fast_convergence: bool,
    pub ssthresh_from: SsthreshFrom,
    pub hystart: bool,
    pub delayed_ack: Option<Duration>,
    pub ack_first_data: bool,
    /// Linux's quick-ACK mode: this many immediate ACKs when it starts (0: `ack_rule = "rfc5681"`).
    pub quick_acks: u8,
    pub limited_transmit: bool,
    pub dupthresh: u32,
    pub dupack_rule: DupackRule,
    /// The timer restarts on the first partial ACK of a recovery only (NewReno, or SACK as ns-3).
    pub first_partial_rto: bool,
    pub disorder_ack: DisorderAck,
    pub recovery_partial_ack: PartialAck,
    pub recovery_pipe: RecoveryPipe,
    pub fast_retransmit_rto: FastRetransmitRto,
    /// Retransmitting the segment at `snd_una` restarts the timer (`recovery_rto = "linux"`).
    pub head_retransmit_rto: bool,
    /// RFC 6937 PRR in SACK recovery (`recovery_pacing = "prr"`).
    pub prr: bool,
    /// RFC 8985 RACK finds lost segments instead of RFC 6675's DupThresh (`loss_detection = "rack"`).
    pub rack: bool,
    /// Linux's pacing of data segments (`pacing = "linux"`).
    pub pacing: bool,
    pub cwnd_growth: CwndGrowth,
    /// RFC 3465's L, bytes.
    pub abc_limit: u64,
    pub rwnd: u64,
    pub min_rto: Duration,
    pub linux_rto: bool,
    /// ns-2's tick arithmetic for the RTO, the tick being `granularity` (`rto_rule = "ns2"`).
    pub ns2_rto: bool,
    /// ns-2's Reno/NewReno recovery window (`fast_recovery = "ns2"`, `recovery/ns2.rs`).
    pub ns2_recovery: bool,
    /// `rtt_samples = "every_ack"`: Linux's sample on every ACK (`rtt_samples.rs`).
    pub rtt_every_ack: bool,
    pub max_rto: Duration,
    pub initial_rto: Duration,
    pub syn_retries: u32,
    pub timestamps: bool,
    pub granularity: Duration,
    pub slow_start_after_idle: bool,
    pub thin_linear_timeouts: bool,
    /// Differentiated minRTO: (minRTO′, fraction of the window).
    pub min_rto_prime: Option<(Duration, f64)>,
    pub padding_dummies: u32,
    pub padding_dummy_bytes: u64,
    pub diversity_copies: u32,
    pub diversity_copy_retransmissions: bool,
    pub fully_backlogged: bool,
    pub smart_framing: bool,
}

impl TryFrom<&TcpConfig> for TcpParams {
    type Error = ConfigError;

    /// The endpoint's view of a `[tcp]` table. A combination the table refuses (a rule
    /// only SACK recovery has, with NewReno; RACK with ns-3's pipe; ...) cannot be built:
    /// the same checks and messages as the scenario's (`TcpConfig::validate`).
    fn try_from(c: &TcpConfig) -> Result<Self, ConfigError> {
        c.validate()?;
        Ok(TcpParams::from_valid(c))
    }
}

impl TcpParams {
    fn from_valid(c: &TcpConfig) -> Self {
        let mss = c.mss_bytes() as u64;
        TcpParams {
            mss,
            header_bytes: c.header_bytes(),
            initial_window: c.initial_window_pkts as u64 * mss,
            recovery: c.recovery,
            congestion: c.congestion,
            cubic_fast_convergence: c.cubic_fast_convergence,
            ssthresh_from: c.ssthresh_from,
            hystart: c.hystart,
            delayed_ack: c.delayed_ack.then(|| Duration::from_millis_f64(c.delayed_ack_ms)),
            ack_first_data: c.ack_first_data,
            // Linux tcp_incr_quickack: rcv_wnd / (2 rcv_mss), at least 2, at most TCP_MAX_QUICKACKS = 16.
            quick_acks: match c.ack_rule {
                AckRule::Rfc5681 => 0,
                AckRule::Linux => (c.rwnd_bytes / (2 * mss)).clamp(2, 16) as u8,
            },
            limited_transmit: c.limited_transmit,
            dupthresh: c.dupack_threshold,
            dupack_rule: c.dupack_rule,
            first_partial_rto: c.recovery == Recovery::Newreno || c.recovery_rto == RecoveryRto::FirstPartial,
            disorder_ack: c.disorder_ack,
            recovery_partial_ack: c.recovery_partial_ack,
            recovery_pipe: c.recovery_pipe,
            fast_retransmit_rto: c.fast_retransmit_rto,
            head_retransmit_rto: c.recovery_rto == RecoveryRto::Linux,
            prr: c.recovery_pacing == RecoveryPacing::Prr,
            rack: c.loss_detection == LossDetection::Rack,
            pacing: c.pacing == Pacing::Linux,
            cwnd_growth: c.cwnd_growth,
            abc_limit: c.abc_limit_pkts as u64 * mss,
            rwnd: c.rwnd_bytes,
            min_rto: Duration::from_millis_f64(c.min_rto_ms),
            linux_rto: c.rto_rule == RtoRule::Linux,
            ns2_rto: c.rto_rule == RtoRule::Ns2,
            ns2_recovery: c.fast_recovery == FastRecoveryRule::Ns2,
            rtt_every_ack: c.rtt_samples == RttSamples::EveryAck,
            max_rto: Duration::from_millis_f64(c.max_rto_ms),
            initial_rto: Duration::from_millis_f64(c.initial_rto_ms),
            syn_retries: c.syn_retries,
            timestamps: c.timestamps,
            granularity: Duration::from_millis_f64(c.clock_granularity_ms),
            slow_start_after_idle: c.slow_start_after_idle,
            thin_linear_timeouts: c.thin_linear_timeouts,
            min_rto_prime: c.min_rto_prime_ms.map(|m| (Duration::from_millis_f64(m), c.min_rto_prime_fraction)),
            padding_dummies: c.padding_dummies,
            padding_dummy_bytes: c.padding_dummy_bytes as u64,
            diversity_copies: c.diversity_copies,
            diversity_copy_retransmissions: c.diversity_copy_retransmissions,
            fully_backlogged: c.fully_backlogged,
            smart_framing: c.smart_framing,
        }
    }
    pub(super) fn sack(&self) -> bool {
        self.recovery == Recovery::Sack
    }
}
