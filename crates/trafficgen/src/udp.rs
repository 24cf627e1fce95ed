//! UDP mode: ns-2's CBR, exponential and Pareto on/off sources (`smallpipe_sim::udp`) on
//! real sockets, and a receiver that counts what arrives. Both stop by themselves: the
//! sender after `duration_s`, the receiver `duration_s` plus a grace period after it
//! started (or at SIGINT/SIGTERM).
//!
//!     smallpipe-gen udp-send HOST:PORT APP duration_s=S [seed=N unit=U packet_size_bytes=B
//!                   rate_bps=R interval_s=I burst_time_s=T idle_time_s=T shape=A]
//!     smallpipe-gen udp-recv PORT duration_s=S
//!
//! `packet_size_bytes` is the whole IP packet, as in the simulator (ns-2's `packetSize_`):
//! the datagram's payload is 28 bytes less (IPv4 and UDP headers). Its first 8 bytes carry
//! the packet's ordinal, so the receiver counts distinct packets. The send times are the
//! simulator's for the same seed and unit (the same schedule on the same stream).

use smallpipe_core::Rng;
use smallpipe_sim::udp::{UdpKind, UdpSchedule, UdpSource};
use std::net::UdpSocket;
use std::time::{Duration, Instant};
use crate::sock;

/// SIGINT or SIGTERM asked the run to stop.
fn stopped() -> bool {
    sock::stop_at_ns() != u64::MAX
}

/// IPv4 and UDP headers: the payload is the packet less these.
const HEADERS_BYTES: u32 = 28;
/// The ordinal each payload starts with.
const ORDINAL_BYTES: u32 = 8;
/// The receiver waits this long after `duration_s` for datagrams still on the way.
const GRACE: Duration = Duration::from_secs(2);

/// `key=value` arguments of the UDP commands.
struct Args<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Args<'a> {
    fn parse(args: &'a [String], allowed: &[&str]) -> Result<Self, String> {
        let mut pairs = Vec::new();
        for a in args {
            let (k, v) = a.split_once('=').ok_or_else(|| format!("{a}: expected key=value"))?;
            if !allowed.contains(&k) {
                return Err(format!("{k}: unknown; allowed: {}", allowed.join(", ")));
            }
            pairs.push((k, v));
        }
        Ok(Args(pairs))
    }

    fn get<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, String> {
        self.0.iter().find(|(k, _)| *k == key)
            .map(|(_, v)| v.parse().map_err(|_| format!("{key}={v}: not a number")))
            .transpose()
    }
}

fn kind(app: &str) -> Result<UdpKind, String> {
    match app {
        "udp_cbr" => Ok(UdpKind::Cbr),
        "udp_expoo" => Ok(UdpKind::Expoo),
        "udp_pareto" => Ok(UdpKind::Pareto),
        _ => Err(format!("{app}: unknown source; allowed: udp_cbr, udp_expoo, udp_pareto")),
    }
}

fn duration_s(args: &Args) -> Result<f64, String> {
    match args.get::<f64>("duration_s")? {
        Some(d) if d.is_finite() && d > 0.0 && d <= 86_400.0 => Ok(d),
        Some(d) => Err(format!("duration_s={d}: allowed 0 < duration_s <= 86400")),
        None => Err("duration_s: required (the sender and receiver stop by themselves)".into()),
    }
}

/// The send offsets from the start, ns, of a source over `duration_s`, on the simulator's
/// stream of unit `unit` (`Rng::new(seed, 0x6000_0000 + unit)`).
pub fn send_offsets_ns(src: UdpSource, seed: u64, unit: u32, duration_s: f64) -> Vec<u64> {
    UdpSchedule::new(src, Rng::new(seed, 0x6000_0000 + u64::from(unit)))
        .send_times_s(duration_s)
        .into_iter()
        .map(|t| (t * 1e9).round() as u64)
        .collect()
}

const SEND_KEYS: [&str; 9] = ["duration_s", "seed", "unit", "packet_size_bytes", "rate_bps", "interval_s", "burst_time_s", "idle_time_s", "shape"];

/// Parses `udp-send` arguments into the source and its offsets.
fn send_plan(app: &str, rest: &[String]) -> Result<(UdpSource, Vec<u64>), String> {
    let args = Args::parse(rest, &SEND_KEYS)?;
    let src = UdpSource::from_fields(kind(app)?, args.get("packet_size_bytes")?, args.get("rate_bps")?, args.get("interval_s")?,
        args.get("burst_time_s")?, args.get("idle_time_s")?, args.get("shape")?).map_err(|e| e.to_string())?;
    if src.packet_size_bytes < HEADERS_BYTES + ORDINAL_BYTES {
        return Err(format!("packet_size_bytes={}: at least {} on a real socket (headers and the ordinal)",
            src.packet_size_bytes, HEADERS_BYTES + ORDINAL_BYTES));
    }
    let offsets = send_offsets_ns(src, args.get("seed")?.unwrap_or(1), args.get("unit")?.unwrap_or(0), duration_s(&args)?);
    Ok((src, offsets))
}

/// `udp-send`: sends on schedule, then prints `{"packets_sent":..,"bytes_sent":..}`.
pub fn send(target: &str, app: &str, rest: &[String]) -> Result<String, String> {
    let (src, offsets) = send_plan(app, rest)?;
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("bind: {e}"))?;
    sock.connect(target).map_err(|e| format!("{target}: {e}"))?;
    let mut payload = vec![0u8; (src.packet_size_bytes - HEADERS_BYTES) as usize];
    let start_ns = sock::monotonic_ns();
    let (mut sent, mut bytes) = (0u64, 0u64);
    for (k, off) in offsets.iter().enumerate() {
        // Absolute deadlines: a late send does not delay the ones after it.
        sock::sleep_until(start_ns + off);
        if stopped() {
            break;
        }
        payload[..8].copy_from_slice(&(k as u64).to_be_bytes());
        if sock.send(&payload).is_ok() {
            sent += 1;
            bytes += u64::from(src.packet_size_bytes);
        }
    }
    Ok(format!(r#"{{"packets_sent":{sent},"bytes_sent":{bytes}}}"#))
}

/// `udp-recv`: counts datagrams (distinct ordinals) for `duration_s` plus a grace period,
/// then prints `{"packets_received":..,"bytes_received":..,"distinct_packets":..}`
/// (bytes as IP packets: payload plus 28).
pub fn receive(port: &str, rest: &[String]) -> Result<String, String> {
    let args = Args::parse(rest, &["duration_s"])?;
    let end = Instant::now() + Duration::from_secs_f64(duration_s(&args)?) + GRACE;
    let sock = UdpSocket::bind(format!("0.0.0.0:{port}")).map_err(|e| format!("bind port {port}: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| e.to_string())?;
    println!("ready");
    let mut buf = vec![0u8; 65_536];
    let (mut pkts, mut bytes) = (0u64, 0u64);
    let mut seen = std::collections::HashSet::new();
    while Instant::now() < end && !stopped() {
        match sock.recv(&mut buf) {
            Ok(n) => {
                pkts += 1;
                bytes += n as u64 + u64::from(HEADERS_BYTES);
                if n >= 8 {
                    seen.insert(u64::from_be_bytes(buf[..8].try_into().expect("8 bytes")));
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(format!("recv: {e}")),
        }
    }
    Ok(format!(r#"{{"packets_received":{pkts},"bytes_received":{bytes},"distinct_packets":{}}}"#, seen.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    /// CBR from the command line: 100-byte packets every 10 ms (80 kbit/s) for 1 s are 100
    /// sends at 0, 10, ..., 990 ms.
    #[test]
    fn cbr_offsets_are_every_interval() {
        let (src, offsets) = send_plan("udp_cbr", &strings(&["duration_s=1", "packet_size_bytes=100", "interval_s=0.01"])).unwrap();
        assert!((src.rate_bps - 80_000.0).abs() < 1e-6);
        assert_eq!(offsets, (0..100).map(|k| k * 10_000_000).collect::<Vec<u64>>());
    }

    /// An on/off source's offsets: increasing, within the duration, a mean rate near
    /// rate·on/(on+off) (600 s, ~600 cycles of exponential on and off periods: on-fraction
    /// standard deviation sqrt(0.125/600) = 1.4 points of 50; checked within 10%), and the
    /// simulator's schedule on the same stream.
    #[test]
    fn on_off_offsets_follow_the_simulators_schedule() {
        let args = strings(&["duration_s=600", "seed=4", "unit=2", "packet_size_bytes=500", "rate_bps=400000",
            "burst_time_s=0.5", "idle_time_s=0.5"]);
        let (src, offsets) = send_plan("udp_expoo", &args).unwrap();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]) && *offsets.last().unwrap() < 600_000_000_000);
        let rate = offsets.len() as f64 * 4000.0 / 600.0;
        assert!((rate / 200_000.0 - 1.0).abs() < 0.10, "{rate}");
        let sim: Vec<u64> = UdpSchedule::new(src, Rng::new(4, 0x6000_0002)).send_times_s(600.0)
            .into_iter().map(|t| (t * 1e9).round() as u64).collect();
        assert_eq!(offsets, sim);
    }

    #[test]
    fn bad_arguments_are_named() {
        let err = |app: &str, a: &[&str]| send_plan(app, &strings(a)).unwrap_err();
        assert!(err("udp_cbr", &["rate_bps=1000"]).contains("duration_s"));
        assert!(err("udp_cbr", &["duration_s=1", "packet_size_bytes=30"]).contains("at least 36"));
        assert!(err("udp_pareto", &["duration_s=1", "shape=1"]).contains("shape"));
        assert!(err("udp_foo", &["duration_s=1"]).contains("udp_cbr"));
        assert!(err("udp_cbr", &["duration_s=1", "colour=red"]).contains("unknown"));
    }
}
