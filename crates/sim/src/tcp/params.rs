//! `TcpParams`: the `[tcp]` knobs converted once, by `try_from`, into the typed policy the
//! endpoint reads, one part per concern: loss recovery, congestion control, timers, ACKs,
//! sending, and the papers' endpoint remedies.

use super::config::{
    AckRule, Congestion, CwndGrowth, DisorderAck, DupackRule, FastRetransmitRto, LossDetection, Pacing, PartialAck,
    FastRecoveryRule, Recovery, RecoveryExit, RecoveryPacing, RecoveryPipe, RecoveryRto, RtoRule, RttSamples, SsthreshFrom, SynTimeoutRestart, TcpConfig,
};
use smallpipe_core::{ConfigError, Duration};

/// The endpoint's policy. Built only from a valid `[tcp]` table, so a combination the table
/// refuses (a rule only SACK recovery has, with NewReno; RACK with ns-3's pipe; ...) is never
/// built: the same checks and messages as the scenario's (`TcpConfig::validate`).
#[derive(Debug, Clone)]
pub struct TcpParams {
    pub mss: u64,
    pub header_bytes: u32,
    pub initial_window: u64,
    pub rwnd: u64,
    pub recovery: RecoveryPolicy,
    pub cc: CcPolicy,
    pub timers: TimerPolicy,
    pub acks: AckPolicy,
    pub send: SendPolicy,
    pub remedies: Remedies,
}

/// Fast retransmit and loss recovery (`recovery/`).
#[derive(Debug, Clone)]
pub struct RecoveryPolicy {
    /// Reno, NewReno or SACK recovery (`recovery/reno.rs`, `newreno.rs`, `sack.rs`).
    pub algorithm: Recovery,
    pub dupthresh: u32,
    pub limited_transmit: bool,
    pub dupack_rule: DupackRule,
    pub disorder_ack: DisorderAck,
    pub partial_ack: PartialAck,
    pub pipe: RecoveryPipe,
    /// RFC 6937 PRR in SACK recovery (`recovery_pacing = "prr"`).
    pub prr: bool,
    /// RFC 8985 RACK finds lost segments instead of RFC 6675's DupThresh (`loss_detection = "rack"`).
    pub rack: bool,
    pub exit: RecoveryExit,
    /// RFC 8985 §7 tail loss probes (`recovery/tlp.rs`).
    pub tail_loss_probe: bool,
    /// A probe after new data is capped by the RTO from the head's last send (`tlp.rs`).
    pub tlp_rto_from_head: bool,
    /// A SACK-only ACK timed from a segment older than the head's last send re-arms the RTO.
    pub sack_rearms_rto: bool,
    /// Undo of a spurious timeout by timestamps or D-SACKs (`recovery/undo.rs`).
    pub rto_undo: bool,
    /// RFC 2883 D-SACK blocks sent and read (`dsack`).
    pub dsack: bool,
    /// Undo of a fast recovery by D-SACKs or timestamps (`recovery/undo.rs`).
    pub recovery_undo: bool,
    /// RFC 5682 F-RTO as Linux's `tcp_frto = 2` (`recovery/undo.rs`).
    pub frto: bool,
    /// RACK's reordering window grows with D-SACKs (`recovery/rack.rs`).
    pub rack_dsack_reo_wnd: bool,
    pub fast_retransmit_rto: FastRetransmitRto,
    /// The timer restarts on the first partial ACK of a recovery only (NewReno, or SACK as ns-3).
    pub first_partial_rto: bool,
    /// Retransmitting the segment at `snd_una` restarts the timer (`recovery_rto = "linux"`).
    pub head_retransmit_rto: bool,
    /// ns-2's Reno/NewReno recovery window (`fast_recovery = "ns2"`, `recovery/ns2.rs`), or
    /// with SACK its Sack1 agent (`recovery/ns2_sack1.rs`).
    pub ns2: bool,
    /// ns-2's FullTcp sender on top of `ns2` (`fast_recovery = "ns2_full"`, `recovery/ns2_full.rs`).
    pub fulltcp: bool,
}

/// Who sets ssthresh and grows cwnd (`cc/`).
#[derive(Debug, Clone)]
pub struct CcPolicy {
    pub congestion: Congestion,
    pub cubic_fast_convergence: bool,
    pub ssthresh_from: SsthreshFrom,
    pub hystart: bool,
    /// Linux CUBIC's HyStart (`cc/hystart_linux.rs`).
    pub cubic_hystart: bool,
    pub cwnd_growth: CwndGrowth,
    /// RFC 3465's L, bytes.
    pub abc_limit: u64,
}

/// The retransmission timer and the RTT samples it is computed from (`timers.rs`, `rtt.rs`).
#[derive(Debug, Clone)]
pub struct TimerPolicy {
    pub min_rto: Duration,
    pub linux_rto: bool,
    /// ns-2's tick arithmetic for the RTO, the tick being `granularity` (`rto_rule = "ns2"`, `rtt_ns2.rs`).
    pub ns2_rto: bool,
    /// `rtt_samples = "every_ack"`: Linux's sample on every ACK (`rtt_samples.rs`).
    pub rtt_every_ack: bool,
    pub max_rto: Duration,
    pub initial_rto: Duration,
    pub syn_retries: u32,
    pub granularity: Duration,
    pub timestamps: bool,
    /// `syn_timeout_restart = "linux"`.
    pub linux_syn_restart: bool,
    pub thin_linear_timeouts: bool,
    /// `timer_wheel_hz`'s jiffy, when the timers run on Linux's wheel.
    pub wheel_tick: Option<Duration>,
    /// Where the jiffies clock stands at time 0, within one jiffy: the run's kernel booted
    /// at no particular time before it (drawn from the seed, `sim::distinct_params`).
    pub wheel_phase: Duration,
    /// Differentiated minRTO: (minRTO′, fraction of the window).
    pub min_rto_prime: Option<(Duration, f64)>,
}

/// The receiver's acknowledgements (`receiver.rs`).
#[derive(Debug, Clone)]
pub struct AckPolicy {
    pub delayed_ack: Option<Duration>,
    pub ack_first_data: bool,
    /// Linux's quick-ACK mode: this many immediate ACKs when it starts (0: `ack_rule = "rfc5681"`).
    pub quick_acks: u8,
    /// ns-2's DelAck sink holds a duplicate of the highest in-order segment (`ack_rule = "ns2"`).
    pub hold_last_duplicate: bool,
    /// ns-2 FullTcp's receiver (`ack_rule = "ns2_full"`): a full segment's bytes unacknowledged
    /// make an ACK, anything less waits for the delayed-ACK timer's next tick on a fixed grid.
    pub full_tcp: bool,
}

/// When data may leave (`sender.rs`, `pacing.rs`).
#[derive(Debug, Clone)]
pub struct SendPolicy {
    /// Linux's pacing of data segments (`pacing = "linux"`).
    pub pacing: bool,
    pub slow_start_after_idle: bool,
}

/// The papers' endpoint remedies: padding, diversity, fully backlogged senders, TCP-SF.
#[derive(Debug, Clone)]
pub struct Remedies {
    pub padding_dummies: u32,
    pub padding_dummy_bytes: u64,
    pub diversity_copies: u32,
    pub diversity_copy_retransmissions: bool,
    pub fully_backlogged: bool,
    pub smart_framing: bool,
}

impl TryFrom<&TcpConfig> for TcpParams {
    type Error = ConfigError;

    fn try_from(c: &TcpConfig) -> Result<Self, ConfigError> {
        c.validate()?;
        Ok(TcpParams::from_valid(c))
    }
}

impl TcpParams {
    fn from_valid(c: &TcpConfig) -> Self {
        let mss = c.mss_bytes() as u64;
        let ms = Duration::from_millis_f64;
        TcpParams {
            mss,
            header_bytes: c.header_bytes(),
            initial_window: c.initial_window_pkts as u64 * mss,
            rwnd: c.rwnd_bytes,
            recovery: RecoveryPolicy {
                algorithm: c.recovery,
                dupthresh: c.dupack_threshold,
                limited_transmit: c.limited_transmit,
                dupack_rule: c.dupack_rule,
                disorder_ack: c.disorder_ack,
                partial_ack: c.recovery_partial_ack,
                pipe: c.recovery_pipe,
                prr: c.recovery_pacing == RecoveryPacing::Prr,
                rack: c.loss_detection == LossDetection::Rack,
                exit: c.recovery_exit,
                tail_loss_probe: c.tail_loss_probe,
                tlp_rto_from_head: c.tlp_rto_from_head,
                sack_rearms_rto: c.sack_rearms_rto,
                rto_undo: c.rto_undo,
                dsack: c.dsack,
                recovery_undo: c.recovery_undo,
                frto: c.frto,
                rack_dsack_reo_wnd: c.rack_dsack_reo_wnd,
                fast_retransmit_rto: c.fast_retransmit_rto,
                first_partial_rto: c.recovery == Recovery::Newreno || c.recovery_rto == RecoveryRto::FirstPartial,
                head_retransmit_rto: c.recovery_rto == RecoveryRto::Linux,
                ns2: matches!(c.fast_recovery, FastRecoveryRule::Ns2 | FastRecoveryRule::Ns2Full),
                fulltcp: c.fast_recovery == FastRecoveryRule::Ns2Full,
            },
            cc: CcPolicy {
                congestion: c.congestion,
                cubic_fast_convergence: c.cubic_fast_convergence,
                ssthresh_from: c.ssthresh_from,
                hystart: c.hystart,
                cubic_hystart: c.cubic_hystart,
                cwnd_growth: c.cwnd_growth,
                abc_limit: c.abc_limit_pkts as u64 * mss,
            },
            timers: TimerPolicy {
                min_rto: ms(c.min_rto_ms),
                linux_rto: c.rto_rule == RtoRule::Linux,
                ns2_rto: c.rto_rule == RtoRule::Ns2,
                rtt_every_ack: c.rtt_samples == RttSamples::EveryAck,
                max_rto: ms(c.max_rto_ms),
                initial_rto: ms(c.initial_rto_ms),
                syn_retries: c.syn_retries,
                granularity: ms(c.clock_granularity_ms),
                timestamps: c.timestamps,
                linux_syn_restart: c.syn_timeout_restart == SynTimeoutRestart::Linux,
                thin_linear_timeouts: c.thin_linear_timeouts,
                wheel_tick: (c.timer_wheel_hz > 0).then(|| Duration(1_000_000_000 / c.timer_wheel_hz as u64)),
                wheel_phase: Duration::ZERO,
                min_rto_prime: c.min_rto_prime_ms.map(|m| (ms(m), c.min_rto_prime_fraction)),
            },
            acks: AckPolicy {
                delayed_ack: c.delayed_ack.then(|| ms(c.delayed_ack_ms)),
                ack_first_data: c.ack_first_data,
                // Linux tcp_incr_quickack: rcv_wnd / (2 rcv_mss), at least 2, at most TCP_MAX_QUICKACKS = 16.
                quick_acks: match c.ack_rule {
                    AckRule::Rfc5681 | AckRule::Ns2 | AckRule::Ns2Full => 0,
                    AckRule::Linux => (c.rwnd_bytes / (2 * mss)).clamp(2, 16) as u8,
                },
                hold_last_duplicate: c.ack_rule == AckRule::Ns2,
                full_tcp: c.ack_rule == AckRule::Ns2Full,
            },
            send: SendPolicy { pacing: c.pacing == Pacing::Linux, slow_start_after_idle: c.slow_start_after_idle },
            remedies: Remedies {
                padding_dummies: c.padding_dummies,
                padding_dummy_bytes: c.padding_dummy_bytes as u64,
                diversity_copies: c.diversity_copies,
                diversity_copy_retransmissions: c.diversity_copy_retransmissions,
                fully_backlogged: c.fully_backlogged,
                smart_framing: c.smart_framing,
            },
        }
    }

    /// BBR is the controller (`congestion = "bbr"`, `tcp/cong_control.rs`).
    pub(super) fn bbr(&self) -> bool {
        self.cc.congestion == Congestion::Bbr
    }

    pub(super) fn sack(&self) -> bool {
        self.recovery.algorithm == Recovery::Sack
    }

    /// ns-2's `Agent/TCP/Sack1` with a `TCPSink/Sack1` (`recovery/ns2_sack1.rs`).
    pub(super) fn ns2_sack1(&self) -> bool {
        self.recovery.ns2 && self.sack()
    }
}
