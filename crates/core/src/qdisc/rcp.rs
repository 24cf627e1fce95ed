//! RCP router (Rate Control Protocol): a FIFO whose router computes one rate for every flow
//! and writes it into the packets' rate field.
//!
//! Source: Dukkipati, Kobayashi, Zhang-Shen, McKeown, "Processor Sharing Flows in the
//! Internet" (IWQoS 2005) and Dukkipati's thesis; the short-flows thesis in `papers/` uses
//! it as the reference with α = β = 1 (its §4.3). Every control interval `T` the router
//! updates
//!
//! ```text
//! R(t) = R(t − T) · [1 + (T/d) · (α·(C − y(t)) − β·q(t)/d) / C]
//! ```
//!
//! with `C` the link rate, `y(t)` the input rate over the last interval (bytes that arrived,
//! dropped ones included, over `T`), `q(t)` the queue in bytes at the update and `d` the
//! average RTT. A packet that carries a rate request (SYN or data) leaves with
//! `min(carried, R)`; pure ACKs carry the receiver's echo and are left alone.
//!
//! Knobs: `limit_pkts` (100), `alpha` (1), `beta` (1), `interval_ms` (T, 10 ms),
//! `avg_rtt_ms` (d, 100 ms: the thesis's Figure 5.2 link), `initial_rate_fraction` (R
//! before the first update over C, 0.05); `link_rate_bps` is set by the runtime to the link
//! this queue feeds.
//! Trade-offs: RCP's routers average the RTT field senders write into every packet; here
//! `d` is configured (every flow of the thesis's set-ups shares one RTT), so the packet
//! view needs no RTT field. R is kept between one 1500-byte packet per `d` and `C`.
//! Counters ([`Qdisc::counters`]): `rate_bps` (the rate R advertised now, bit/s rounded
//! down, a level).
//! Limits: no per-flow state; the rate is stamped at enqueue in whole kbit/s (rounded down).
//! Between calls nothing happens, so on the first call after `k` silent intervals the
//! router catches up: the first of them sees the bytes that arrived, the rest see none
//! (exactly what a router updating on a timer would have seen).

use super::{Cx, DropTail, DropTailConfig, Qdisc, QdiscCounter};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::time::{Duration, Instant};
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RcpConfig {
    /// Capacity of the FIFO, packets.
    pub limit_pkts: u32,
    /// Weight of the spare capacity `C − y` (the thesis: 1).
    pub alpha: f64,
    /// Weight of the standing queue `q/d` (the thesis: 1).
    pub beta: f64,
    /// Control interval `T`, milliseconds.
    pub interval_ms: f64,
    /// Average RTT `d` of the flows through the router, milliseconds.
    pub avg_rtt_ms: f64,
    /// R before the first update, as a fraction of C (the ns-2 RCP code's
    /// `INIT_RATE_FACT`): 1 gives a lone first flow the whole link at once, but lets a crowd
    /// of flows that start together overflow the buffer for a round trip.
    pub initial_rate_fraction: f64,
    /// Rate of the link this queue feeds, bit/s (set by the runtime).
    pub link_rate_bps: u64,
}

impl Default for RcpConfig {
    fn default() -> Self {
        Self {
            limit_pkts: 100,
            alpha: 1.0,
            beta: 1.0,
            interval_ms: 10.0,
            avg_rtt_ms: 100.0,
            initial_rate_fraction: 0.05,
            link_rate_bps: 10_000_000,
        }
    }
}

/// The smallest rate R falls to: one 1500-byte packet per average RTT.
const FLOOR_BITS_PER_RTT: f64 = 1500.0 * 8.0;

impl RcpConfig {
    pub fn build(&self) -> Result<Rcp, ConfigError> {
        if self.limit_pkts == 0 {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet"));
        }
        for (field, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ConfigError::new(field, v, "a finite number >= 0"));
            }
        }
        for (field, v) in [("interval_ms", self.interval_ms), ("avg_rtt_ms", self.avg_rtt_ms)] {
            if !(v.is_finite() && v > 0.0 && v <= 1e6) {
                return Err(ConfigError::new(field, v, "milliseconds in (0, 1e6]"));
            }
        }
        if !(self.initial_rate_fraction > 0.0 && self.initial_rate_fraction <= 1.0) {
            return Err(ConfigError::new("initial_rate_fraction", self.initial_rate_fraction, "a fraction of the link rate in (0, 1]"));
        }
        if self.interval_ms > self.avg_rtt_ms {
            return Err(ConfigError::new("interval_ms", self.interval_ms, "at most avg_rtt_ms (RCP updates at least once per RTT)"));
        }
        if self.link_rate_bps == 0 {
            return Err(ConfigError::new("link_rate_bps", 0, "at least 1 bit/s"));
        }
        let c = self.link_rate_bps as f64;
        let interval = Duration((self.interval_ms * 1e6).round() as u64);
        let floor_bps = (FLOOR_BITS_PER_RTT / (self.avg_rtt_ms / 1e3)).min(c);
        Ok(Rcp {
            fifo: DropTailConfig::packets(self.limit_pkts).build()?,
            alpha: self.alpha,
            beta: self.beta,
            interval,
            avg_rtt_s: self.avg_rtt_ms / 1e3,
            capacity_bps: c,
            floor_bps,
            rate_bps: (c * self.initial_rate_fraction).max(floor_bps),
            next_update: Instant::ZERO + interval,
            arrived_bytes: 0,
        })
    }
}

#[derive(Debug)]
pub struct Rcp {
    /// The buffer: a tail-drop FIFO.
    fifo: DropTail,
    alpha: f64,
    beta: f64,
    interval: Duration,
    avg_rtt_s: f64,
    capacity_bps: f64,
    floor_bps: f64,
    /// R, bit/s.
    rate_bps: f64,
    next_update: Instant,
    /// Bytes that arrived since the last update (y·T).
    arrived_bytes: u64,
}

impl Rcp {
    /// The rate R the router currently advertises, bit/s.
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// One step of the RCP equation from the input rate `y_bps` and queue `q_bytes`.
    fn update(&mut self, y_bps: f64, q_bytes: u64) {
        let (c, d, t) = (self.capacity_bps, self.avg_rtt_s, self.interval.as_secs_f64());
        let q_bits = q_bytes as f64 * 8.0;
        let factor = 1.0 + (t / d) * (self.alpha * (c - y_bps) - self.beta * q_bits / d) / c;
        self.rate_bps = (self.rate_bps * factor).clamp(self.floor_bps, c);
    }

    /// Runs every update due by `now` (see the module doc for silent intervals).
    fn catch_up(&mut self, now: Instant) {
        let t_s = self.interval.as_secs_f64();
        while now >= self.next_update {
            let y_bps = self.arrived_bytes as f64 * 8.0 / t_s;
            self.arrived_bytes = 0;
            let before = self.rate_bps;
            self.update(y_bps, self.fifo.backlog_bytes());
            self.next_update += self.interval;
            // Silent intervals all apply the same factor: once R stops moving, skip them.
            if y_bps == 0.0 && self.rate_bps == before && now >= self.next_update {
                let skipped = (now - self.next_update).as_nanos() / self.interval.as_nanos() + 1;
                self.next_update += Duration(skipped * self.interval.as_nanos());
            }
        }
    }

    fn rate_kbps(&self) -> NonZeroU32 {
        let kbps = (self.rate_bps / 1e3).clamp(1.0, u32::MAX as f64) as u32;
        NonZeroU32::new(kbps).expect("clamped to at least 1")
    }
}

/// Whether a packet carries a rate request the router may lower: a SYN or data from the
/// sender. Pure ACKs (and the SYN-ACK) carry the receiver's echo instead.
fn carries_request(pkt: &Packet) -> bool {
    pkt.rcp_rate_kbps.is_some() && (pkt.payload_len > 0 || (pkt.flags.syn() && !pkt.flags.ack()))
}

impl Qdisc for Rcp {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        self.catch_up(cx.now);
        self.arrived_bytes += pkt.len_bytes();
        if carries_request(&pkt) {
            pkt.rcp_rate_kbps = pkt.rcp_rate_kbps.min(Some(self.rate_kbps()));
        }
        self.fifo.enqueue(pkt, cx);
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.catch_up(cx.now);
        self.fifo.dequeue(cx)
    }

    fn len_pkts(&self) -> usize {
        self.fifo.len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.fifo.backlog_bytes()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        out.push(QdiscCounter::level("rate_bps", self.rate_bps as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{ops, pkt, run_ops};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use crate::TcpFlags;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn rcp(c_bps: u64, limit_pkts: u32) -> Accounted<Rcp> {
        let cfg = RcpConfig {
            limit_pkts,
            interval_ms: 10.0,
            avg_rtt_ms: 100.0,
            initial_rate_fraction: 1.0,
            link_rate_bps: c_bps,
            ..Default::default()
        };
        Accounted::new(cfg.build().unwrap(), Rng::new(0, 0))
    }

    fn data(port: u16, len: u16, asked_kbps: u32) -> Packet {
        Packet { payload_len: len - 40, rcp_rate_kbps: NonZeroU32::new(asked_kbps), flags: TcpFlags(TcpFlags::ACK), ..pkt(1, 2, port, len) }
    }

    /// The equation written out again, independently of `Rcp::update`, in integers where
    /// the script is integral: T = 10 ms, d = 100 ms, so T/d = 1/10.
    fn expected_next(r: f64, c: f64, y_bps: f64, q_bytes: f64) -> f64 {
        let spare = c - y_bps;
        let drain = 8.0 * q_bytes / 0.1;
        (r * (1.0 + 0.1 * (spare - drain) / c)).clamp(12_000.0 / 0.1, c)
    }

    /// Scripted load: in each 10 ms interval exactly `pkts_per_interval` 1000-byte packets
    /// arrive, the first at the interval's start, and each is followed by one departure, so
    /// the queue stands at `q_pkts`. The first arrival of interval k + 1 runs update k
    /// (before it counts), so R read after it must be the equation's k-th step.
    fn scripted(c_bps: u64, pkts_per_interval: u64, q_pkts: u64, steps: usize) -> (Vec<f64>, Vec<f64>) {
        let mut q = rcp(c_bps, 10_000);
        let c = c_bps as f64;
        for i in 0..q_pkts {
            q.enqueue(data(1, 1000, u32::MAX), Instant(i));
        }
        // The standing queue's own arrivals fall in the first interval.
        let y_first = (q_pkts + pkts_per_interval) as f64 * 8000.0 / 0.01;
        let y = pkts_per_interval as f64 * 8000.0 / 0.01;
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut r = c;
        for k in 0..=steps as u64 {
            for j in 0..pkts_per_interval {
                let at = Instant(k * 10 * MS + q_pkts + j * (10 * MS - q_pkts) / pkts_per_interval);
                q.enqueue(data(2, 1000, u32::MAX), at);
                if j == 0 && k > 0 {
                    let y_k = if k == 1 { y_first } else { y };
                    r = expected_next(r, c, y_k, (q_pkts * 1000) as f64);
                    got.push(q.inner().rate_bps());
                    want.push(r);
                }
                q.dequeue(at);
            }
        }
        (got, want)
    }

    #[test]
    fn rate_follows_the_rcp_equation_under_a_constant_load_and_standing_queue() {
        // 10 Mbit/s link; 10 packets per 10 ms is y = 8 Mbit/s (spare 2 Mbit/s), and a
        // 5-packet standing queue drains at q/d = 400 kbit/s: R grows by 1.6% per step.
        let (got, want) = scripted(10_000_000, 10, 5, 30);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-6 * w, "step {k}: R = {g}, the equation gives {w}");
        }
        // Overload (y = 12 Mbit/s) with a 50-packet queue pushes R down to the floor.
        let (got, want) = scripted(10_000_000, 15, 50, 100);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-6 * w, "overload step {k}: R = {g}, the equation gives {w}");
        }
        assert_eq!(*got.last().unwrap(), 120_000.0, "one 1500-byte packet per 100 ms");
    }

    #[test]
    fn silent_intervals_raise_the_rate_as_if_updated_on_a_timer() {
        let mut q = rcp(10_000_000, 100);
        // 200 packets in the first 10 ms: y = 160 Mbit/s drives R to the floor at 10 ms.
        for i in 0..200 {
            q.enqueue(data(1, 1000, u32::MAX), Instant(i * 1000));
            q.dequeue(Instant(i * 1000));
        }
        q.dequeue(Instant(10 * MS));
        let mut r = expected_next(10e6, 10e6, 200.0 * 8000.0 / 0.01, 0.0);
        assert_eq!(q.inner().rate_bps(), r);
        assert_eq!(r, 120_000.0, "the floor: one 1500-byte packet per 100 ms");
        assert_eq!(q.counters(), [QdiscCounter::level("rate_bps", 120_000)]);
        // Nothing until 45 ms: the updates at 20, 30 and 40 ms each see y = 0, q = 0.
        q.dequeue(Instant(45 * MS));
        for _ in 0..3 {
            r = expected_next(r, 10e6, 0.0, 0.0);
        }
        assert!((q.inner().rate_bps() - r).abs() <= 1e-9 * r, "{} vs {r}", q.inner().rate_bps());
    }

    #[test]
    fn stamps_the_lower_of_the_carried_rate_and_r_on_requests_only() {
        let mut q = rcp(10_000_000, 100);
        q.enqueue(data(1, 1000, u32::MAX), Instant(0));
        q.enqueue(data(2, 1000, 3_000), Instant(0));
        let syn = Packet { flags: TcpFlags(TcpFlags::SYN), rcp_rate_kbps: NonZeroU32::new(u32::MAX), ..pkt(1, 2, 3, 40) };
        q.enqueue(syn, Instant(0));
        let echo = Packet { flags: TcpFlags(TcpFlags::ACK), rcp_rate_kbps: NonZeroU32::new(20_000), ..pkt(2, 1, 80, 40) };
        q.enqueue(echo, Instant(0));
        let plain_tcp = data(5, 1000, 0);
        q.enqueue(plain_tcp, Instant(0));
        let rates: Vec<Option<u32>> = (0..5).map(|_| q.dequeue(Instant(1)).unwrap().rcp_rate_kbps.map(|r| r.get())).collect();
        assert_eq!(rates, [Some(10_000), Some(3_000), Some(10_000), Some(20_000), None]);
    }

    /// N flows that each send at the advertised rate (one RTT late, as RCP senders learn it)
    /// over a link that serves C: over the last 2 s of 10, R averages C/N within 5%.
    #[test]
    fn converges_to_the_fair_share_of_n_saturating_flows() {
        for n in [1u32, 4, 10] {
            let c = 10_000_000u64;
            let mut q = rcp(c, 1000);
            let pkt_bits = 8000.0;
            let (mut now, mut credit, mut served) = (0u64, 0.0f64, 0.0f64);
            let mut advertised = std::collections::VecDeque::from(vec![c as f64; 10]);
            let mut late_rates = Vec::new();
            for step in 0..100_000 {
                now += 100_000; // 100 µs steps
                // Senders use the rate advertised one RTT (10 steps of 10 ms) ago.
                credit += n as f64 * advertised[0] * 1e-4 / pkt_bits;
                while credit >= 1.0 {
                    credit -= 1.0;
                    q.enqueue(data(1, 1000, u32::MAX), Instant(now));
                }
                served += c as f64 * 1e-4 / pkt_bits;
                while served >= 1.0 && q.dequeue(Instant(now)).is_some() {
                    served -= 1.0;
                }
                served = served.min(1.0);
                if now.is_multiple_of(10 * MS) {
                    advertised.pop_front();
                    advertised.push_back(q.inner().rate_bps());
                    if step >= 80_000 {
                        late_rates.push(q.inner().rate_bps());
                    }
                }
            }
            let share = c as f64 / n as f64;
            let r = late_rates.iter().sum::<f64>() / late_rates.len() as f64;
            let spread = late_rates.iter().fold(0.0f64, |m, x| m.max((x - r).abs()));
            assert!((r - share).abs() <= 0.05 * share, "N = {n}: R = {r}, C/N = {share} (last 2 s ±{spread})");
            assert!(q.len_pkts() <= 2, "N = {n}: the queue drains ({} packets)", q.len_pkts());
        }
    }

    #[test]
    fn bad_knobs_name_the_field() {
        let e = RcpConfig { interval_ms: 200.0, ..Default::default() }.build().unwrap_err();
        assert_eq!(e.field, "interval_ms");
        let e = RcpConfig { alpha: f64::NAN, ..Default::default() }.build().unwrap_err();
        assert_eq!(e.field, "alpha");
        let e = RcpConfig { initial_rate_fraction: 0.0, ..Default::default() }.build().unwrap_err();
        assert_eq!(e.field, "initial_rate_fraction");
        let e = RcpConfig { limit_pkts: 0, ..Default::default() }.build().unwrap_err();
        assert_eq!(e.field, "limit_pkts");
    }

    proptest! {
        #[test]
        fn accounting_holds_under_random_traffic(script in ops(300)) {
            let mut q = rcp(10_000_000, 50);
            run_ops(&mut q, &script, 50, 0)?;
        }
    }
}
