//! CAKE's DiffServ tins: which tin a codepoint goes to, each tin's bandwidth threshold and
//! sharing weight, and the per-tin COBALT parameters scaled to the tin's rate (Linux
//! `cake_config_diffserv3`, `cake_config_besteffort`, `cake_set_rate`).
//!
//! A tin below its threshold rate has priority over the tins after it in the table order
//! below (the highest-indexed eligible tin wins, as Linux's tin scan); a tin above its
//! threshold competes only by when its own shaper allows it to send next. So Voice gets
//! strict priority up to a quarter of the link, Bulk is served first only while under a
//! sixteenth, and Best Effort takes the rest.

use crate::aqm::cobalt::CobaltParams;
use serde::{Deserialize, Serialize};

/// CAKE's tin layouts (`diffserv8`, `diffserv4` and `precedence` are not implemented).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffservMode {
    /// One tin for everything.
    Besteffort,
    /// Best Effort (100%), Bulk (6.25%), Voice (25%): Linux's default.
    #[default]
    Diffserv3,
}

/// Tin indices of `diffserv3`, in Linux's order.
pub const TIN_BEST_EFFORT: usize = 0;
pub const TIN_BULK: usize = 1;
pub const TIN_VOICE: usize = 2;

/// DSCP → `diffserv3` tin, Linux's `diffserv3[]` table: LE (1) and CS1 (8) to Bulk; TOS4 (4),
/// VA (44), EF (46), CS6 (48) and CS7 (56) to Voice; every other codepoint (CS4 and CS5
/// included) to Best Effort.
fn diffserv3_tin(dscp: u8) -> usize {
    match dscp {
        1 | 8 => TIN_BULK,
        4 | 44 | 46 | 48 | 56 => TIN_VOICE,
        _ => TIN_BEST_EFFORT,
    }
}

impl DiffservMode {
    pub fn tin_count(self) -> usize {
        match self {
            DiffservMode::Besteffort => 1,
            DiffservMode::Diffserv3 => 3,
        }
    }

    /// The tin of a packet carrying `dscp` (0–63; the IP header's six bits).
    pub fn tin_of(self, dscp: u8) -> usize {
        match self {
            DiffservMode::Besteffort => 0,
            DiffservMode::Diffserv3 => diffserv3_tin(dscp),
        }
    }

    /// Per tin: (threshold as a right shift of the link rate, DRR weight `tin_quantum` used
    /// when the rate is unknown). Linux: Best Effort the full rate and weight 1024, Bulk
    /// `rate >> 4` and `1024 >> 4`, Voice `rate >> 2` and `1024 >> 2`; one Best Effort tin
    /// with weight 65535.
    fn layout(self) -> &'static [(u32, u32)] {
        match self {
            DiffservMode::Besteffort => &[(0, 65535)],
            DiffservMode::Diffserv3 => &[(0, 1024), (4, 64), (2, 256)],
        }
    }

    /// The name of tin `i` as CAKE's statistics print it.
    pub fn tin_name(self, i: usize) -> &'static str {
        match (self, i) {
            (DiffservMode::Besteffort, _) => "best_effort",
            (DiffservMode::Diffserv3, TIN_BULK) => "bulk",
            (DiffservMode::Diffserv3, TIN_VOICE) => "voice",
            (DiffservMode::Diffserv3, _) => "best_effort",
        }
    }
}

/// What one tin is configured with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TinParams {
    /// Threshold rate, bytes per second (0: unknown link rate, tins share by `tin_quantum`).
    pub rate_bytes_per_s: u64,
    /// Nanoseconds to send one byte at the threshold rate (0 when the rate is unknown).
    pub ns_per_byte: f64,
    /// Weight in the DRR over tins when the rate is unknown.
    pub tin_quantum: u32,
    /// Base DRR quantum of the tin's flows before host scaling.
    pub flow_quantum: u32,
    pub cobalt: CobaltParams,
}

/// The tins of `mode` on a link of `link_rate_bps` (0: unknown), Linux `cake_set_rate`:
/// flow quantum `rate/4096` within [300, 1514] bytes (1514 without a rate); the MTU's
/// serialisation time at the tin's rate; target `max(1.5 MTU times, target_ns)` and
/// interval `max(interval_ns + target − target_ns, 2·target)`, so a slow tin is not
/// signalled for its own packet times.
pub fn tin_params(mode: DiffservMode, link_rate_bps: u64, mtu_bytes: u32, target_ns: u64, interval_ns: u64) -> Vec<TinParams> {
    let link_bytes_per_s = link_rate_bps / 8;
    mode.layout()
        .iter()
        .map(|&(shift, tin_quantum)| {
            let rate = link_bytes_per_s >> shift;
            let (flow_quantum, ns_per_byte) = if rate > 0 {
                ((rate >> 12).clamp(300, 1514) as u32, 1e9 / rate as f64)
            } else {
                (1514, 0.0)
            };
            let mtu_time_ns = (mtu_bytes as f64 * ns_per_byte) as u64;
            let target = (mtu_time_ns * 3 / 2).max(target_ns);
            let interval = (interval_ns + target - target_ns).max(2 * target);
            TinParams {
                rate_bytes_per_s: rate,
                ns_per_byte,
                tin_quantum,
                flow_quantum,
                cobalt: CobaltParams {
                    interval_ns: interval,
                    target_ns: target,
                    mtu_time_ns,
                    p_inc: CobaltParams::P_INC,
                    p_dec: CobaltParams::P_DEC,
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffserv3_maps_the_kernels_codepoints() {
        let m = DiffservMode::Diffserv3;
        // RFC 8622 LE and CS1 → Bulk; EF, VA, CS6, CS7 and TOS4 (min delay) → Voice.
        for dscp in [1, 8] {
            assert_eq!(m.tin_of(dscp), TIN_BULK, "{dscp}");
        }
        for dscp in [4, 44, 46, 48, 56] {
            assert_eq!(m.tin_of(dscp), TIN_VOICE, "{dscp}");
        }
        // Everything else is Best Effort, CS4 (32) and CS5 (40) included (Linux's table).
        let voice_or_bulk = [1, 4, 8, 44, 46, 48, 56];
        for dscp in (0..64).filter(|d| !voice_or_bulk.contains(d)) {
            assert_eq!(m.tin_of(dscp), TIN_BEST_EFFORT, "{dscp}");
        }
        assert!((0..64).all(|d| DiffservMode::Besteffort.tin_of(d) == 0));
    }

    #[test]
    fn thresholds_are_the_papers_fractions_and_parameters_scale_with_rate() {
        // 10 Mbit/s = 1 250 000 B/s: Bulk 1/16, Voice 1/4.
        let t = tin_params(DiffservMode::Diffserv3, 10_000_000, 1514, 5_000_000, 100_000_000);
        let rates: Vec<u64> = t.iter().map(|t| t.rate_bytes_per_s).collect();
        assert_eq!(rates, [1_250_000, 78_125, 312_500]);
        // Flow quantum rate/4096 clamped to [300, 1514]: 305, 300 (19 floored up), 300 (76).
        assert_eq!(t.iter().map(|t| t.flow_quantum).collect::<Vec<_>>(), [305, 300, 300]);
        // Best Effort: one MTU takes 1.21 ms, so target stays 5 ms and interval 100 ms.
        assert_eq!((t[0].cobalt.target_ns, t[0].cobalt.interval_ns), (5_000_000, 100_000_000));
        // Bulk at 78 125 B/s: one MTU takes 19.38 ms, target 1.5× that, interval grows by
        // the same amount.
        let mtu = 1514.0 * 1e9 / 78_125.0;
        assert!((t[1].cobalt.target_ns as f64 - 1.5 * mtu).abs() < 2.0);
        assert_eq!(t[1].cobalt.interval_ns, 100_000_000 + t[1].cobalt.target_ns - 5_000_000);
        // Without a rate: 1514-byte quanta, CoDel's own target and interval, DRR weights.
        let u = tin_params(DiffservMode::Diffserv3, 0, 1514, 5_000_000, 100_000_000);
        assert!(u.iter().all(|t| t.flow_quantum == 1514 && t.cobalt.target_ns == 5_000_000 && t.cobalt.mtu_time_ns == 0));
        assert_eq!(u.iter().map(|t| t.tin_quantum).collect::<Vec<_>>(), [1024, 64, 256]);
    }
}
