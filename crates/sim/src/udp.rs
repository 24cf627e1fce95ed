//! UDP sources of ns-2 2.35's `Application/Traffic/*`, as the papers ran them: CBR
//! (`tools/cbr_traffic.cc`), exponential on/off (`tools/expoo.cc`) and Pareto on/off
//! (`tools/pareto.cc`). A source emits datagrams of `packet_size_bytes` (ns-2's
//! `packetSize_`, the whole packet: ns-2's UDP agent adds no header) and never reacts to
//! loss. The schedule is shared by the simulator and `smallpipe-gen`.
//!
//! On/off sources, as ns-2 builds them: during a burst packets leave every
//! `interval = packet_size·8 / rate` (ns-2's `rate_` is the rate while on); a burst is a
//! whole number of packets, `round(draw)` and at least one, the draw having mean
//! `burst_time / interval`; each burst is preceded by an idle period added to the gap before
//! its first packet (so a source starts with an idle period; CBR sends its first packet at
//! once). Exponential: both draws exponential. Pareto: both Pareto with `shape`, the scale
//! chosen so the mean is the given one (`scale = mean·(shape − 1)/shape`).

use rand_distr::{Distribution, Pareto};
use serde::{Deserialize, Serialize};
use smallpipe_core::{ConfigError, Rng};

/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UdpKind {
    /// `Application/Traffic/CBR`.
    Cbr,
    /// `Application/Traffic/Exponential`.
    Expoo,
    /// `Application/Traffic/Pareto`.
    Pareto,
}

impl UdpKind {
    pub fn name(self) -> &'static str {
        match self {
            UdpKind::Cbr => "udp_cbr",
            UdpKind::Expoo => "udp_expoo",
            UdpKind::Pareto => "udp_pareto",
        }
    }
}

/// A source's parameters, ns-2's names with units: `packetSize_`, `rate_`, `interval_`
/// (CBR), `burst_time_`, `idle_time_` (on/off), `shape_` (Pareto).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UdpSource {
    pub kind: UdpKind,
    pub packet_size_bytes: u32,
    /// Sending rate (while on), bit/s of whole packets.
    pub rate_bps: f64,
    pub burst_time_s: f64,
    pub idle_time_s: f64,
    pub shape: f64,
}

/// ns-2's defaults (`tcl/lib/ns-default.tcl`): `packetSize_` 210, `rate_` 448 kbit/s for
/// CBR and 64 kbit/s for the on/off sources, `burst_time_` and `idle_time_` 0.5 s,
/// `shape_` 1.5.
pub const DEFAULT_PACKET_SIZE_BYTES: u32 = 210;
pub const DEFAULT_CBR_RATE_BPS: f64 = 448_000.0;
pub const DEFAULT_ON_OFF_RATE_BPS: f64 = 64_000.0;
pub const DEFAULT_BURST_TIME_S: f64 = 0.5;
pub const DEFAULT_IDLE_TIME_S: f64 = 0.5;
pub const DEFAULT_SHAPE: f64 = 1.5;
/// The largest datagram: an IPv4 packet's length field.
pub const MAX_PACKET_SIZE_BYTES: u32 = 65_535;

impl UdpSource {
    /// From the group's optional fields; `interval_s` (CBR only) sets the rate as ns-2's
    /// `interval_` does (`rate = packet_size·8 / interval`). Errors name the field.
    pub fn from_fields(kind: UdpKind, packet_size_bytes: Option<u32>, rate_bps: Option<f64>, interval_s: Option<f64>,
                       burst_time_s: Option<f64>, idle_time_s: Option<f64>, shape: Option<f64>) -> Result<Self, ConfigError> {
        let name = kind.name();
        let size = packet_size_bytes.unwrap_or(DEFAULT_PACKET_SIZE_BYTES);
        if !(20..=MAX_PACKET_SIZE_BYTES).contains(&size) {
            return Err(ConfigError::new("packet_size_bytes", size, format!("20 to {MAX_PACKET_SIZE_BYTES} bytes (a whole IPv4 packet)")));
        }
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 { Ok(v) } else { Err(ConfigError::new(field, v, "a positive finite number")) }
        };
        if kind != UdpKind::Cbr {
            if let Some(i) = interval_s {
                return Err(ConfigError::new("interval_s", i, format!("unset for app = \"{name}\" (ns-2's interval_ is CBR's; use rate_bps)")));
            }
        } else {
            for (field, v) in [("burst_time_s", burst_time_s), ("idle_time_s", idle_time_s), ("shape", shape)] {
                if let Some(v) = v {
                    return Err(ConfigError::new(field, v, "unset for app = \"udp_cbr\" (on/off sources only)"));
                }
            }
        }
        if kind != UdpKind::Pareto {
            if let Some(s) = shape {
                return Err(ConfigError::new("shape", s, "unset except for app = \"udp_pareto\""));
            }
        }
        let rate_bps = match (rate_bps, interval_s) {
            (Some(r), Some(i)) => return Err(ConfigError::new("interval_s", format!("{i} with rate_bps {r}"), "one of rate_bps and interval_s")),
            (None, Some(i)) => size as f64 * 8.0 / positive("interval_s", i)?,
            (r, None) => positive("rate_bps", r.unwrap_or(if kind == UdpKind::Cbr { DEFAULT_CBR_RATE_BPS } else { DEFAULT_ON_OFF_RATE_BPS }))?,
        };
        let shape = shape.unwrap_or(DEFAULT_SHAPE);
        if !(shape.is_finite() && shape > 1.0) {
            return Err(ConfigError::new("shape", shape, "a finite shape > 1 (a finite mean burst and idle time)"));
        }
        Ok(UdpSource {
            kind,
            packet_size_bytes: size,
            rate_bps,
            burst_time_s: positive("burst_time_s", burst_time_s.unwrap_or(DEFAULT_BURST_TIME_S))?,
            idle_time_s: positive("idle_time_s", idle_time_s.unwrap_or(DEFAULT_IDLE_TIME_S))?,
            shape,
        })
    }

    /// Seconds between packets while sending.
    pub fn interval_s(&self) -> f64 {
        self.packet_size_bytes as f64 * 8.0 / self.rate_bps
    }

    /// The long-run mean rate, bit/s, in the fluid limit (bursts of many packets):
    /// `rate·on/(on + off)` for on/off sources, `rate` for CBR.
    pub fn mean_rate_bps(&self) -> f64 {
        match self.kind {
            UdpKind::Cbr => self.rate_bps,
            _ => self.rate_bps * self.burst_time_s / (self.burst_time_s + self.idle_time_s),
        }
    }
}

/// A source's send times: `next_gap_s` gives the time from one packet (or the start) to
/// the next, drawing on its own random stream.
pub struct UdpSchedule {
    src: UdpSource,
    interval_s: f64,
    /// Packets left in the current burst (on/off sources).
    remaining: u64,
    /// The first gap of a CBR source is zero (ns-2's `CBR_Traffic::start` sends at once).
    started: bool,
    rng: Rng,
}

impl UdpSchedule {
    pub fn new(src: UdpSource, rng: Rng) -> Self {
        UdpSchedule { src, interval_s: src.interval_s(), remaining: 0, started: false, rng }
    }

    pub fn source(&self) -> &UdpSource {
        &self.src
    }

    /// Seconds until the next packet.
    pub fn next_gap_s(&mut self) -> f64 {
        let first = !self.started;
        self.started = true;
        if self.src.kind == UdpKind::Cbr {
            return if first { 0.0 } else { self.interval_s };
        }
        let mut gap = self.interval_s;
        if self.remaining == 0 {
            self.remaining = self.burst_pkts();
            gap += self.idle_s();
        }
        self.remaining -= 1;
        gap
    }

    /// The next burst's length, packets: a draw of mean `burst_time / interval`, rounded, at
    /// least one (as ns-2 does).
    fn burst_pkts(&mut self) -> u64 {
        let mean = self.src.burst_time_s / self.interval_s;
        let draw = match self.src.kind {
            UdpKind::Pareto => self.pareto(mean),
            _ => self.rng.exponential(mean),
        };
        ((draw + 0.5) as u64).max(1)
    }

    fn idle_s(&mut self) -> f64 {
        match self.src.kind {
            UdpKind::Pareto => self.pareto(self.src.idle_time_s),
            _ => self.rng.exponential(self.src.idle_time_s),
        }
    }

    /// A Pareto draw of the given mean and the source's shape.
    fn pareto(&mut self, mean: f64) -> f64 {
        let shape = self.src.shape;
        Pareto::new(mean * (shape - 1.0) / shape, shape).expect("validated: positive mean, shape > 1").sample(self.rng.inner())
    }

    /// The send times, seconds from the start, of the packets sent before `duration_s`.
    pub fn send_times_s(mut self, duration_s: f64) -> Vec<f64> {
        let mut times = Vec::new();
        let mut t = self.next_gap_s();
        while t < duration_s {
            times.push(t);
            t += self.next_gap_s();
        }
        times
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(kind: UdpKind, size: u32, rate_bps: f64, on: f64, off: f64, shape: Option<f64>) -> UdpSource {
        UdpSource::from_fields(kind, Some(size), Some(rate_bps), None,
            (kind != UdpKind::Cbr).then_some(on), (kind != UdpKind::Cbr).then_some(off), shape).unwrap()
    }

    /// CBR: the first packet at once, then one every `size·8/rate` (500 B at 400 kbit/s: 10 ms).
    #[test]
    fn cbr_sends_every_interval_from_the_start() {
        let s = source(UdpKind::Cbr, 500, 400_000.0, 0.0, 0.0, None);
        let times = UdpSchedule::new(s, Rng::new(1, 1)).send_times_s(1.0);
        assert_eq!(times.len(), 100);
        for (k, t) in times.iter().enumerate() {
            assert!((t - k as f64 * 0.010).abs() < 1e-9, "{k}: {t}");
        }
        // interval_s sets the rate as ns-2's interval_ does.
        let by_interval = UdpSource::from_fields(UdpKind::Cbr, Some(500), None, Some(0.010), None, None, None).unwrap();
        assert!((by_interval.rate_bps - 400_000.0).abs() < 1e-6);
    }

    /// Splits send times into bursts: a gap longer than the interval (plus rounding) starts
    /// a new one. Returns (packets per burst, idle times).
    fn bursts(times: &[f64], interval: f64) -> (Vec<u64>, Vec<f64>) {
        let (mut lens, mut idles) = (vec![1u64], Vec::new());
        for w in times.windows(2) {
            let gap = w[1] - w[0];
            if gap > interval * (1.0 + 1e-9) {
                lens.push(1);
                idles.push(gap - interval);
            } else {
                *lens.last_mut().unwrap() += 1;
            }
        }
        (lens, idles)
    }

    /// Exponential on/off, 1000 s at 1 Mbit/s while on, 1000 B packets (8 ms), on 0.4 s
    /// (50 packets) and off 0.6 s: the mean rate is rate·on/(on+off) = 400 kbit/s. Over
    /// ~1000 cycles the on and off sums each have a relative standard error of about
    /// 1/sqrt(1000) = 3.2%, so the rate is checked within 8% (2.5 sigma on their ratio);
    /// the mean idle time within 8% of 0.6 s and the mean burst within 8% of 50 packets.
    #[test]
    fn exponential_on_off_mean_rate_is_rate_times_on_over_on_plus_off() {
        let s = source(UdpKind::Expoo, 1000, 1e6, 0.4, 0.6, None);
        assert!((s.mean_rate_bps() - 400_000.0).abs() < 1e-6);
        let duration = 1000.0;
        let times = UdpSchedule::new(s, Rng::new(7, 3)).send_times_s(duration);
        let rate = times.len() as f64 * 8000.0 / duration;
        assert!((rate / 400_000.0 - 1.0).abs() < 0.08, "{rate} bit/s");
        let (lens, idles) = bursts(&times, s.interval_s());
        let mean_len = lens.iter().sum::<u64>() as f64 / lens.len() as f64;
        let mean_idle = idles.iter().sum::<f64>() / idles.len() as f64;
        assert!((mean_len / 50.0 - 1.0).abs() < 0.08, "{mean_len} packets");
        assert!((mean_idle / 0.6 - 1.0).abs() < 0.08, "{mean_idle} s");
    }

    /// Pareto on/off with shape 2.5 (finite variance, so the sample mean converges at the
    /// usual rate): the mean burst is burst_time/interval packets (0.5 s / 4 ms = 125) and
    /// the mean idle time idle_time, through ns-2's scale = mean·(shape−1)/shape. The
    /// coefficient of variation of a Pareto of shape 2.5 is 1/sqrt(a(a−2)) = 0.89; over
    /// ~10 000 bursts the standard error of each mean is 0.9%: checked within 4%. The
    /// shortest burst is the scale, rounded: 125·1.5/2.5 = 75 packets.
    #[test]
    fn pareto_on_off_mean_burst_matches_burst_time() {
        let s = source(UdpKind::Pareto, 500, 1e6, 0.5, 0.5, Some(2.5));
        let times = UdpSchedule::new(s, Rng::new(3, 9)).send_times_s(10_000.0);
        let (lens, idles) = bursts(&times, s.interval_s());
        assert!(lens.len() > 8000, "{} bursts", lens.len());
        // The run's cut ends the last burst early: leave it out.
        let whole = &lens[..lens.len() - 1];
        let mean_len = whole.iter().sum::<u64>() as f64 / whole.len() as f64;
        let mean_idle = idles.iter().sum::<f64>() / idles.len() as f64;
        assert!((mean_len / 125.0 - 1.0).abs() < 0.04, "{mean_len} packets");
        assert!((mean_idle / 0.5 - 1.0).abs() < 0.04, "{mean_idle} s");
        assert_eq!(*whole.iter().min().unwrap(), 75);
        assert!(idles.iter().all(|&i| i >= 0.3 - 1e-9), "idle periods are at least the scale 0.3 s");
    }

    /// On/off sources begin with an idle period (ns-2's default `start` waits one
    /// `next_interval`, which opens with one); the same seed gives the same times.
    #[test]
    fn on_off_sources_start_idle_and_repeat_per_seed() {
        let s = source(UdpKind::Expoo, 1000, 1e6, 0.4, 0.6, None);
        let a = UdpSchedule::new(s, Rng::new(5, 5)).send_times_s(50.0);
        assert!(a[0] > s.interval_s());
        assert_eq!(a, UdpSchedule::new(s, Rng::new(5, 5)).send_times_s(50.0));
        assert_ne!(a, UdpSchedule::new(s, Rng::new(6, 5)).send_times_s(50.0));
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let e = UdpSource::from_fields(UdpKind::Cbr, Some(500), Some(1e5), Some(0.01), None, None, None).unwrap_err();
        assert_eq!(e.field, "interval_s");
        let e = UdpSource::from_fields(UdpKind::Pareto, None, None, None, None, None, Some(1.0)).unwrap_err();
        assert!(e.field == "shape" && e.allowed.contains("> 1"));
        let e = UdpSource::from_fields(UdpKind::Expoo, None, None, None, None, None, Some(2.0)).unwrap_err();
        assert_eq!(e.field, "shape");
        let e = UdpSource::from_fields(UdpKind::Expoo, Some(10), None, None, None, None, None).unwrap_err();
        assert_eq!(e.field, "packet_size_bytes");
        let e = UdpSource::from_fields(UdpKind::Cbr, None, Some(-1.0), None, None, None, None).unwrap_err();
        assert_eq!(e.field, "rate_bps");
    }
}
