//! Window growth on an ACK of new data outside loss recovery, for Reno congestion control:
//! RFC 5681's rule per ACK, RFC 3465's byte counting, or Linux's rule per segment.

use crate::tcp::config::CwndGrowth;

/// `cwnd` after an ACK of `acked` new bytes. `ca_acked` carries the bytes acknowledged in
/// congestion avoidance since the last increase (RFC 3465 `bytes_acked`, Linux
/// `snd_cwnd_cnt` in bytes); `abc_limit` is RFC 3465's L in bytes.
pub(super) fn grow(rule: CwndGrowth, abc_limit: u64, cwnd: u64, ssthresh: u64, acked: u64, mss: u64,
                   ca_acked: &mut u64) -> u64 {
    match rule {
        CwndGrowth::PerAck if cwnd < ssthresh => cwnd + acked.min(mss), // RFC 5681 (2)
        CwndGrowth::PerAck => cwnd + (mss * mss / cwnd).max(1),         // RFC 5681 (3)
        CwndGrowth::ByteCounting if cwnd < ssthresh => cwnd + acked.min(abc_limit), // RFC 3465 §2.2
        CwndGrowth::ByteCounting => {
            // RFC 3465 §2.1: once bytes_acked reaches cwnd, it loses cwnd and cwnd gains SMSS.
            *ca_acked += acked;
            if *ca_acked < cwnd {
                return cwnd;
            }
            *ca_acked -= cwnd;
            cwnd + mss
        }
        CwndGrowth::Linux => {
            // tcp_slow_start: every byte acked up to ssthresh; what is left over goes on to
            // congestion avoidance on the same ACK.
            let grown = if cwnd < ssthresh { (cwnd + acked).min(ssthresh) } else { cwnd };
            let left = acked - (grown - cwnd);
            if left == 0 {
                return grown;
            }
            // tcp_cong_avoid_ai: credit earned at a larger window is spent as one segment.
            let mut cwnd = grown;
            if *ca_acked >= cwnd {
                *ca_acked = 0;
                cwnd += mss;
            }
            *ca_acked += left;
            let steps = *ca_acked / cwnd; // w = cwnd, in bytes
            *ca_acked -= steps * cwnd;
            cwnd + steps * mss
        }
        // ns-2's opencwnd (tcp.cc:1133-1152): +1 packet per new ACK below ssthresh_, else
        // +increase_num_/cwnd_ (1/cwnd_) in floating-point packets.
        CwndGrowth::Ns2 if cwnd < ssthresh => cwnd + mss,
        CwndGrowth::Ns2 => {
            // `ca_acked` holds cwnd's fraction of a byte, in units of 2^-32 byte, so that
            // ns-2's fractional window does not lose what whole bytes would round off.
            let pkts = (cwnd as f64 + *ca_acked as f64 / NS2_FRACTION) / mss as f64;
            let bytes = (pkts + 1.0 / pkts) * mss as f64;
            *ca_acked = ((bytes - bytes.floor()) * NS2_FRACTION) as u64;
            bytes.floor() as u64
        }
    }
}

/// One byte in the units of `CwndGrowth::Ns2`'s fraction.
const NS2_FRACTION: f64 = 4_294_967_296.0;
