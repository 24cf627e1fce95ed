//! Congestion control: who sets ssthresh on a congestion event and grows cwnd on an ACK of
//! new data outside recovery (Linux's `tcp_congestion_ops`, ns-3's `TcpCongestionOps`,
//! smoltcp's `AnyController`). Reno (RFC 5681, with RFC 3465's and Linux's growth rules in
//! `reno.rs`), CUBIC (RFC 9438, `cubic.rs`), and HyStart++ (RFC 9406, `hystart.rs`) in the
//! initial slow start of either. Slow start's own rules, fast retransmit and recovery are
//! loss recovery's (`tcp/recovery.rs`). BBR (`bbr.rs`) is Linux's other kind of controller
//! (`cong_control`): it sets cwnd and the pacing rate itself on every ACK, recovery included,
//! called from the endpoint (`tcp/cong_control.rs`) instead of through this enum.

pub mod bbr;
pub mod cubic;
pub mod hystart;
pub mod hystart_linux;
mod minmax;
mod reno;

use super::config::{Congestion, CwndGrowth};
use cubic::Cubic;
use smallpipe_core::{Duration, Instant};

/// The controller of one endpoint; enum dispatch, no `dyn` on the ACK path.
#[derive(Debug, Clone)]
pub enum CongestionControl {
    /// RFC 5681: one MSS per RTT, ssthresh = FlightSize / 2 (or cwnd / 2, `tcp.ssthresh_from`).
    Reno,
    /// RFC 9438; boxed so the default, Reno, does not carry its state.
    Cubic(Box<Cubic>),
}

impl CongestionControl {
    pub(super) fn new(congestion: Congestion, fast_convergence: bool, linux_hystart: bool) -> Self {
        match congestion {
            Congestion::Reno => CongestionControl::Reno,
            Congestion::Cubic => CongestionControl::Cubic(Box::new(Cubic::new(fast_convergence, linux_hystart))),
            // BBR sets cwnd and ssthresh from the endpoint (`tcp/cong_control.rs`, state
            // boxed with the feature state so this enum stays one word); none of these hooks run.
            Congestion::Bbr => CongestionControl::Reno,
        }
    }

    /// An ACK of new data with an RTT sample (Linux's `pkts_acked`): whether the
    /// controller ends slow start here (CUBIC with Linux's HyStart).
    pub(super) fn pkts_acked(&mut self, sample: hystart_linux::AckSample) -> bool {
        match self {
            CongestionControl::Reno => false,
            CongestionControl::Cubic(c) => c.pkts_acked(sample),
        }
    }

    /// A retransmission timeout, after its ssthresh: CUBIC resets Linux's HyStart.
    pub(super) fn on_timeout_reset(&mut self, now: Instant, snd_nxt: u64) {
        if let CongestionControl::Cubic(c) = self {
            c.hystart_on_timeout(now, snd_nxt);
        }
    }

    /// ssthresh when fast retransmit (or RACK) finds a loss: RFC 5681 (4) halves `base`
    /// (FlightSize or cwnd, `tcp.ssthresh_from`), RFC 9438 §4.6 keeps β of it.
    pub(super) fn ssthresh_on_loss(&mut self, cwnd: u64, base: u64, mss: u64) -> u64 {
        match self {
            CongestionControl::Reno => reno_halving(base, mss),
            CongestionControl::Cubic(c) => c.on_congestion(cwnd, base, mss),
        }
    }

    /// ssthresh when the retransmission timer expires: RFC 5681 (4), RFC 9438 §4.8.
    pub(super) fn ssthresh_on_timeout(&mut self, cwnd: u64, base: u64, mss: u64) -> u64 {
        match self {
            CongestionControl::Reno => reno_halving(base, mss),
            CongestionControl::Cubic(c) => c.on_timeout(cwnd, base, mss),
        }
    }

    /// cwnd after an ACK of `acked` new bytes outside recovery (slow start or congestion
    /// avoidance): Reno by `rule` (`reno.rs`; `ca_acked` and `abc_limit` are its state and
    /// RFC 3465's L), CUBIC by RFC 9438 at time `now` with the smoothed RTT `srtt`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn grow(&mut self, rule: CwndGrowth, abc_limit: u64, cwnd: u64, ssthresh: u64, acked: u64,
                       mss: u64, ca_acked: &mut u64, now: Instant, srtt: Duration) -> u64 {
        match self {
            CongestionControl::Reno => reno::grow(rule, abc_limit, cwnd, ssthresh, acked, mss, ca_acked),
            CongestionControl::Cubic(c) => c.on_ack(cwnd, ssthresh, acked, now, srtt, mss),
        }
    }

    /// Slow start grew the window (HyStart++): CUBIC starts a new epoch (RFC 9438 §4.10).
    pub(super) fn end_epoch(&mut self) {
        if let CongestionControl::Cubic(c) = self {
            c.end_epoch();
        }
    }
}

/// Reno's decrease, RFC 5681 (4): half of `base`, at least two segments. The diversity
/// remedy's cut also uses it whatever the controller, on purpose: the padding/diversity
/// paper's sender is Reno ("it cuts down the congestion window").
pub(super) fn reno_halving(base: u64, mss: u64) -> u64 {
    (base / 2).max(2 * mss)
}
