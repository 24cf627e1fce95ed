//! RED (Random Early Detection): a FIFO whose arrivals pass the RED core in
//! [`crate::aqm::red`].
//!
//! Source: Floyd & Jacobson, "Random Early Detection Gateways for Congestion Avoidance",
//! IEEE/ACM ToN 1993; gentle RED; ns-2.34 `queue/red.cc` and `tcl/lib/ns-default.tcl` for
//! the defaults and the automatic parameters, which the FCT thesis in `papers/`
//! (short-flows-fct-red-fq-rcp) used ("ns-2's automatic initialization, as recommended by
//! Sally Floyd").
//!
//! Principles: keep the average queue between two thresholds by dropping (or ECN-marking)
//! arrivals with a probability that grows with the average; drops are spread uniformly
//! rather than in bursts, and the average decays during idle periods as if the link had
//! kept serving small packets. See [`crate::aqm::red`] for the rules.
//!
//! Knobs (defaults are ns-2.34's):
//! - `limit_pkts` (50 packets, ns-2 `Queue set limit_ 50`), `limit_bytes` (unset): the
//!   physical buffer; an arrival that does not fit is dropped as `overlimit`. In packet
//!   mode the buffer is `limit_pkts` packets (and `limit_bytes` bytes if set). In byte mode
//!   it is in bytes, as ns-2 counts it when `queue_in_bytes_` is on: `limit_bytes`, or
//!   `limit_pkts·mean_pkt_size_bytes` when unset (ns-2 `qlim_·mean_pktsize`: 25 000 bytes
//!   by default, 50 packets of 500 bytes but only 16 of 1500), and, as in ns-2, an
//!   arrival is refused when the bytes already queued reach the limit (so the queue may
//!   exceed it by less than one packet).
//! - `mode`: `bytes` (default: ns-2 `bytes_` and `queue_in_bytes_` are true) or `packets`.
//! - `min_th_pkts`, `max_th_pkts` (unset = automatic): thresholds in packets; in byte mode
//!   they are multiplied by `mean_pkt_size_bytes`. Automatic: `min_th = max(5,
//!   target_delay·C/2)` packets, `max_th = 3·min_th`, where `C = link_rate_bps /
//!   (8·mean_pkt_size_bytes)` packets per second.
//! - `w_q` (unset = automatic, ns-2 `q_weight_ -1`): `1 − exp(−1/(10·rtt·C))` with `rtt =
//!   max(100 ms, 3·(link_delay + 1/C))`; for links whose `3·(delay + 1/C)` is under
//!   100 ms (all thin links with a delay under about 33 ms) this is `1 − exp(−1/C)`.
//! - `max_p` (0.1, ns-2 `linterm_ 10`), `gentle` (true), `wait` (true),
//!   `mean_pkt_size_bytes` (500), `target_delay_ns` (5 ms), `ecn` (false).
//! - `link_rate_bps` (10 Mbit/s) and `link_delay_ns` (10 ms): the link this queue feeds.
//!   RED needs them for the idle-time correction and the automatic parameters; they are
//!   explicit here and the simulator should set them to the link's values.
//!
//! Drops: probabilistic and forced-by-average drops are `early` (an AQM decision before the
//! buffer is full); a full buffer gives `overlimit`. ECN marks are counted as `early` marks.
//! [`Red::red_stats`] splits them further (Linux `red_stats`).
//!
//! Counters ([`Qdisc::counters`], as `tc -s qdisc` prints `tc_red_xstats`, all totals):
//! `early` (probabilistic and forced drops, the `early` drops of the common counters),
//! `pdrop` (arrivals refused by a full buffer), `marked` (probabilistic decisions turned
//! into CE marks; as in Linux, counted when RED decides, so a marked arrival that then
//! finds the buffer full is in both `marked` and `pdrop`), and Linux's breakdown of
//! `early`: `prob_drop` (between the thresholds or in the gentle ramp) and `forced_drop`
//! (the average above the forced-drop threshold; ns-3's "forced" drops).
//!
//! Idle periods: the queue is idle from the moment its last packet has finished
//! transmission, which the queue computes as dequeue time plus the packet's serialization
//! time at `link_rate_bps` (ns-2 starts it when the link asks for a packet and finds none:
//! the same instant when the link is work-conserving).
//!
//! Trade-offs: RED is cheap (O(1) per packet, no per-flow state) but needs tuning to the
//! link and traffic; the automatic parameters target a 5 ms average queue. Limits: no
//! per-flow state, so `flow_table_len` is 0; Adaptive RED (max_p adaptation) is not
//! implemented.

use super::ns2::QueueVariant;
use super::{AnyQdisc, Cx, Qdisc, QdiscCounter};
use crate::aqm::red::{red_on_arrival, RedParams, RedStats, RedVars, RedVerdict};
use crate::error::ConfigError;
use crate::packet::{Ecn, Packet};
use crate::stats::{DropReason, MarkReason};
use crate::time::{Duration, Instant};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What RED measures the queue in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedMode {
    /// Average queue and thresholds in packets; every packet has the same drop chance.
    Packets,
    /// Average queue and thresholds in bytes; drop chance proportional to packet size.
    #[default]
    Bytes,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedConfig {
    /// Buffer capacity in packets; `None` for no packet limit. In byte mode, unless
    /// `limit_bytes` is set, the buffer is this many mean-size packets' worth of bytes.
    pub limit_pkts: Option<u32>,
    /// Buffer capacity in bytes (IP length); `None` for no byte limit.
    pub limit_bytes: Option<u64>,
    pub mode: RedMode,
    /// Lower threshold, packets (scaled to bytes in byte mode); `None` = automatic.
    pub min_th_pkts: Option<f64>,
    /// Upper threshold, packets (scaled to bytes in byte mode); `None` = 3·min_th.
    pub max_th_pkts: Option<f64>,
    /// Drop probability at max_th, in (0, 1].
    pub max_p: f64,
    /// EWMA weight of the average queue, in (0, 1]; `None` = automatic.
    pub w_q: Option<f64>,
    /// Ramp the drop probability from max_p to 1 between max_th and 2·max_th.
    pub gentle: bool,
    /// ns-2 `wait_`: leave at least 1/p_b packets between drops.
    pub wait: bool,
    /// Typical packet size, bytes.
    pub mean_pkt_size_bytes: u32,
    /// Target average queueing delay for the automatic min_th, nanoseconds.
    pub target_delay_ns: u64,
    /// Rate of the link this queue feeds, bit/s (set by the simulator to the link's rate).
    pub link_rate_bps: u64,
    /// Propagation delay of that link, nanoseconds (only used by the automatic w_q).
    pub link_delay_ns: u64,
    /// Mark ECN-capable packets instead of dropping them (between the thresholds).
    pub ecn: bool,
    /// `ns2`: ns-2 2.35's RED algorithm on these knobs (`super::ns2::red`).
    #[serde(skip_serializing_if = "QueueVariant::is_default")]
    pub variant: QueueVariant,
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            limit_pkts: Some(50),
            limit_bytes: None,
            mode: RedMode::Bytes,
            min_th_pkts: None,
            max_th_pkts: None,
            max_p: 0.1,
            w_q: None,
            gentle: true,
            wait: true,
            mean_pkt_size_bytes: 500,
            target_delay_ns: 5_000_000,
            link_rate_bps: 10_000_000,
            link_delay_ns: 10_000_000,
            ecn: false,
            variant: QueueVariant::Default,
        }
    }
}

impl RedConfig {
    /// The RED core parameters this config resolves to (automatic values filled in).
    pub fn params(&self) -> Result<RedParams, ConfigError> {
        if self.limit_pkts == Some(0) {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet, or unset"));
        }
        if self.limit_bytes == Some(0) {
            return Err(ConfigError::new("limit_bytes", 0, "at least 1 byte, or unset"));
        }
        if self.limit_pkts.is_none() && self.limit_bytes.is_none() {
            return Err(ConfigError::new(
                "limit_pkts",
                "unset (with limit_bytes unset)",
                "at least one of limit_pkts, limit_bytes",
            ));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(ConfigError::new("max_p", self.max_p, "a probability in (0, 1]"));
        }
        if let Some(w) = self.w_q {
            if !(w > 0.0 && w <= 1.0) {
                return Err(ConfigError::new("w_q", w, "a weight in (0, 1], or unset for automatic"));
            }
        }
        if self.mean_pkt_size_bytes == 0 {
            return Err(ConfigError::new("mean_pkt_size_bytes", 0, "at least 1 byte"));
        }
        if self.link_rate_bps == 0 {
            return Err(ConfigError::new("link_rate_bps", 0, "at least 1 bit/s"));
        }
        let mean = self.mean_pkt_size_bytes as f64;
        let c = self.link_rate_bps as f64 / (8.0 * mean);
        let min_th = match self.min_th_pkts {
            Some(t) if !(t.is_finite() && t >= 0.0) => {
                return Err(ConfigError::new("min_th_pkts", t, "a finite number ≥ 0, or unset"))
            }
            Some(t) => t,
            None => (Duration(self.target_delay_ns).as_secs_f64() * c / 2.0).max(5.0),
        };
        let max_th = match self.max_th_pkts {
            Some(t) if !(t.is_finite() && t > min_th) => {
                return Err(ConfigError::new(
                    "max_th_pkts",
                    t,
                    format!("a finite number above min_th ({min_th}), or unset"),
                ))
            }
            Some(t) => t,
            None => 3.0 * min_th,
        };
        if max_th <= min_th {
            return Err(ConfigError::new("min_th_pkts", min_th, "below max_th"));
        }
        let w_q = self.w_q.unwrap_or_else(|| {
            let rtt = (3.0 * (Duration(self.link_delay_ns).as_secs_f64() + 1.0 / c)).max(0.1);
            1.0 - (-1.0 / (10.0 * rtt * c)).exp()
        });
        let scale = if self.mode == RedMode::Bytes { mean } else { 1.0 };
        Ok(RedParams {
            min_th: min_th * scale,
            max_th: max_th * scale,
            max_p: self.max_p,
            w_q,
            gentle: self.gentle,
            wait: self.wait,
            byte_mode: self.mode == RedMode::Bytes,
            mean_pkt_size_bytes: mean,
            pkts_per_sec: c,
            ecn: self.ecn,
        })
    }

    /// Either variant, as the discipline set dispatches it.
    pub fn build_any(&self) -> Result<AnyQdisc, ConfigError> {
        match self.variant {
            QueueVariant::Default => self.build().map(AnyQdisc::Red),
            QueueVariant::Ns2 => self.build_ns2().map(AnyQdisc::Ns2Red),
        }
    }

    pub fn build(&self) -> Result<Red, ConfigError> {
        let params = self.params()?;
        let (limit_pkts, limit_bytes) = if params.byte_mode {
            // ns-2 `queue_in_bytes_`: the buffer is `qlim_·mean_pktsize` bytes.
            let from_pkts = self.limit_pkts.map(|l| l as u64 * self.mean_pkt_size_bytes as u64);
            (usize::MAX, self.limit_bytes.or(from_pkts).unwrap_or(u64::MAX))
        } else {
            (self.limit_pkts.map_or(usize::MAX, |l| l as usize), self.limit_bytes.unwrap_or(u64::MAX))
        };
        Ok(Red {
            params,
            // The queue starts idle at time zero (ns-2 `reset`).
            vars: RedVars { idle_since: Some(Instant::ZERO), ..RedVars::default() },
            stats: RedStats::default(),
            limit_pkts,
            limit_bytes,
            link_rate_bps: self.link_rate_bps,
            queue: VecDeque::new(),
            backlog_bytes: 0,
        })
    }
}

#[derive(Debug)]
pub struct Red {
    params: RedParams,
    vars: RedVars,
    stats: RedStats,
    limit_pkts: usize,
    limit_bytes: u64,
    link_rate_bps: u64,
    queue: VecDeque<Packet>,
    backlog_bytes: u64,
}

impl Red {
    pub fn red_params(&self) -> &RedParams {
        &self.params
    }
    pub fn red_vars(&self) -> &RedVars {
        &self.vars
    }
    pub fn red_stats(&self) -> &RedStats {
        &self.stats
    }
}

/// RED's counters from its core's statistics (see the module documentation).
pub(crate) fn red_counters(s: &RedStats) -> [QdiscCounter; 5] {
    [
        QdiscCounter::total("early", s.prob_drop + s.forced_drop),
        QdiscCounter::total("pdrop", s.pdrop),
        QdiscCounter::total("marked", s.prob_mark),
        QdiscCounter::total("prob_drop", s.prob_drop),
        QdiscCounter::total("forced_drop", s.forced_drop),
    ]
}

impl Qdisc for Red {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        let qlen = if self.params.byte_mode { self.backlog_bytes as f64 } else { self.queue.len() as f64 };
        let ect = matches!(pkt.ecn, Ecn::Ect | Ecn::Ce);
        let verdict = red_on_arrival(
            &self.params,
            &mut self.vars,
            &mut self.stats,
            cx.now,
            qlen,
            pkt.len_bytes(),
            ect,
            cx.rng,
        );
        match verdict {
            RedVerdict::EarlyDrop | RedVerdict::ForcedDrop => cx.drop(pkt, DropReason::Early),
            RedVerdict::Accept | RedVerdict::Mark => {
                let full = if self.params.byte_mode {
                    // ns-2 `qlen >= qlim` on the bytes already queued.
                    self.backlog_bytes >= self.limit_bytes
                } else {
                    self.queue.len() >= self.limit_pkts || self.backlog_bytes + pkt.len_bytes() > self.limit_bytes
                };
                if full {
                    self.vars.on_overflow_drop(&mut self.stats);
                    cx.drop(pkt, DropReason::Overlimit);
                    return;
                }
                if verdict == RedVerdict::Mark {
                    cx.mark(&mut pkt, MarkReason::Early);
                }
                self.backlog_bytes += pkt.len_bytes();
                self.queue.push_back(pkt);
            }
        }
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.vars.dequeue_fifo(&mut self.queue, &mut self.backlog_bytes, self.link_rate_bps, cx.now)
    }

    fn len_pkts(&self) -> usize {
        self.queue.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        out.extend(red_counters(&self.stats));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{self, pkt};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use proptest::prelude::*;

    fn packet_mode(min: f64, max: f64, limit: u32) -> RedConfig {
        RedConfig {
            limit_pkts: Some(limit),
            mode: RedMode::Packets,
            min_th_pkts: Some(min),
            max_th_pkts: Some(max),
            w_q: Some(1.0),
            ..RedConfig::default()
        }
    }

    #[test]
    fn automatic_parameters_follow_ns2() {
        // 10 Mbit/s, 500-byte mean: C = 10e6/(8·500) = 2500 packets/s. Target queue 5 ms ·
        // 2500 = 12.5 packets → min_th = 6.25 packets = 3125 bytes, max_th = 9375 bytes.
        // 3·(10 ms + 0.4 ms) < 100 ms → rtt = 0.1 s → w_q = 1 − exp(−1/(10·0.1·2500)).
        let p = RedConfig::default().params().unwrap();
        assert!((p.min_th - 3125.0).abs() < 1e-9 && (p.max_th - 9375.0).abs() < 1e-9);
        assert!((p.w_q - (1.0 - (-1.0f64 / 2500.0).exp())).abs() < 1e-15);
        assert!((p.pkts_per_sec - 2500.0).abs() < 1e-9);
        // 1.5 Mbit/s: C = 375, target queue 1.875 packets < 10 → min_th = 5 packets.
        let slow = RedConfig { link_rate_bps: 1_500_000, mode: RedMode::Packets, ..RedConfig::default() };
        let p = slow.params().unwrap();
        assert_eq!((p.min_th, p.max_th), (5.0, 15.0));
        // 50 ms link delay: rtt = 3·(0.05 + 1/2500) = 0.1512 s > 0.1 s.
        let long = RedConfig { link_delay_ns: 50_000_000, ..RedConfig::default() };
        let w = long.params().unwrap().w_q;
        assert!((w - (1.0 - (-1.0f64 / (10.0 * 0.1512 * 2500.0)).exp())).abs() < 1e-15);
    }

    #[test]
    fn forced_drops_are_early_and_a_full_buffer_is_overlimit() {
        // w_q = 1: the average is the instantaneous queue. No gentle: forced at avg ≥ 15.
        let mut cfg = packet_mode(5.0, 15.0, 20);
        cfg.gentle = false;
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        for i in 0..40u16 {
            q.enqueue(pkt(1, 2, i, 500), Instant(i as u64));
        }
        // The queue never holds more than max_th = 15 (an arrival seeing 15 is dropped),
        // so the 20-packet buffer never overflows; some arrivals before that may have
        // been early drops.
        assert!(q.len_pkts() <= 15);
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 0);
        assert_eq!(q.stats().dropped(DropReason::Early), 40 - q.len_pkts() as u64);
        let c = |q: &Accounted<Red>, name: &str| q.counters().iter().find(|c| c.name == name).unwrap().value;
        // Linux's `early` is the sum of its two causes, and is the common `early` drops.
        assert_eq!(c(&q, "early"), q.stats().dropped(DropReason::Early));
        assert_eq!(c(&q, "early"), c(&q, "prob_drop") + c(&q, "forced_drop"));
        // Arrivals that saw the average at ≥ max_th = 15 were forced: every arrival after
        // the queue first reached 15 (w_q = 1, nothing dequeued).
        assert!(c(&q, "forced_drop") > 0);
        assert_eq!((c(&q, "pdrop"), c(&q, "marked")), (0, 0));
        // Thresholds above the buffer: only the buffer limit drops.
        let mut q = Accounted::new(packet_mode(20.0, 40.0, 10).build().unwrap(), Rng::new(1, 0));
        for i in 0..12u16 {
            q.enqueue(pkt(1, 2, i, 500), Instant(i as u64));
        }
        assert_eq!(q.len_pkts(), 10);
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 2);
        assert_eq!(q.stats().dropped(DropReason::Early), 0);
        assert_eq!(q.inner().red_stats().pdrop, 2);
        let names: Vec<(&str, u64)> = q.counters().iter().map(|c| (c.name, c.value)).collect();
        assert_eq!(names, [("early", 0), ("pdrop", 2), ("marked", 0), ("prob_drop", 0), ("forced_drop", 0)]);
    }

    #[test]
    fn byte_mode_buffer_is_limit_times_mean_packet_size_bytes_as_ns2() {
        // ns-2 with queue_in_bytes_: qlim = limit_ · mean_pktsize = 50 · 500 = 25 000 bytes,
        // and an arrival is refused when the bytes queued are ≥ qlim. Thresholds far above,
        // so only the buffer drops. 1500-byte packets: 16 leave 24 000 < 25 000 queued, the
        // 17th is admitted (25 500), the 18th refused.
        let cfg = RedConfig {
            min_th_pkts: Some(1000.0),
            max_th_pkts: Some(2000.0),
            w_q: Some(1.0),
            ..RedConfig::default()
        };
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        for i in 0..30u16 {
            q.enqueue(pkt(1, 2, i, 1500), Instant(i as u64));
        }
        assert_eq!((q.len_pkts(), q.backlog_bytes()), (17, 25_500));
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 13);
        // 40-byte packets: the limit is bytes, not 50 packets: 25 000 / 40 = 625 fit.
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        for i in 0..700u16 {
            q.enqueue(pkt(1, 2, i, 40), Instant(i as u64));
        }
        assert_eq!((q.len_pkts(), q.backlog_bytes()), (625, 25_000));
        // An explicit limit_bytes replaces limit_pkts · mean in byte mode.
        let mut q = Accounted::new(RedConfig { limit_bytes: Some(3000), ..cfg }.build().unwrap(), Rng::new(1, 0));
        for i in 0..5u16 {
            q.enqueue(pkt(1, 2, i, 1400), Instant(i as u64));
        }
        assert_eq!(q.len_pkts(), 3); // 0, 1400, 2800 < 3000 admitted; 4200 ≥ 3000 refused
    }

    #[test]
    fn idle_starts_when_the_last_packet_has_left_the_wire() {
        // Packet mode, w_q = 0.002, C = 2500 packets/s (10 Mbit/s, 500-byte mean).
        let w = 0.002;
        let cfg = RedConfig { w_q: Some(w), ..packet_mode(5.0, 15.0, 50) };
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        // Three arrivals at t = 0 seeing 0, 1, 2 queued packets.
        for _ in 0..3 {
            q.enqueue(pkt(1, 2, 1, 1000), Instant(0));
        }
        let avg0 = ((0.0 * (1.0 - w) + w * 1.0) * (1.0 - w)) + w * 2.0;
        assert!((q.inner().red_vars().avg - avg0).abs() < 1e-15);
        q.dequeue(Instant(0));
        q.dequeue(Instant(0));
        q.dequeue(Instant(1_000_000)); // the last packet starts transmission at 1 ms
        // 1000 bytes at 10 Mbit/s take 0.8 ms: idle from 1.8 ms. An arrival at 101.8 ms
        // has seen 100 ms idle → m = ⌊2500·0.1⌋ = 250, avg = avg0·(1 − w)^251 + w·0.
        q.enqueue(pkt(1, 2, 1, 1000), Instant(101_800_000));
        let expect = avg0 * (1.0f64 - w).powi(251);
        assert!((q.inner().red_vars().avg - expect).abs() < 1e-15, "{} vs {expect}", q.inner().red_vars().avg);
        // An arrival while the last packet is still on the wire sees no idle time.
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        q.enqueue(pkt(1, 2, 1, 1000), Instant(0));
        q.enqueue(pkt(1, 2, 1, 1000), Instant(0));
        q.dequeue(Instant(0));
        q.dequeue(Instant(0)); // empty; the link is busy until 0.8 ms
        let before = q.inner().red_vars().avg;
        q.enqueue(pkt(1, 2, 1, 1000), Instant(500_000));
        assert!((q.inner().red_vars().avg - (1.0 - w) * before).abs() < 1e-15);
    }

    #[test]
    fn ecn_marks_are_counted_and_not_drops() {
        let cfg = RedConfig { ecn: true, w_q: Some(0.2), ..packet_mode(2.0, 100.0, 10) };
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(5, 0));
        // Fill to 8, then alternate one arrival and one departure: the queue stays at 8–9
        // packets, below the 10-packet buffer, and the average stays far below max_th.
        for i in 0..10_000u64 {
            let mut p = pkt(1, 2, 1, 500);
            p.ecn = Ecn::Ect;
            q.enqueue(p, Instant(i * 1000));
            if i >= 8 {
                q.dequeue(Instant(i * 1000));
            }
        }
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 0);
        assert_eq!(q.stats().dropped(DropReason::Early), 0);
        assert!(q.stats().marked(MarkReason::Early) > 0);
        assert_eq!(q.stats().marked(MarkReason::Early), q.inner().red_stats().prob_mark);
        let marked = q.counters().iter().find(|c| c.name == "marked").unwrap().value;
        assert_eq!(marked, q.stats().marked(MarkReason::Early), "no marked arrival met a full buffer");
        let mut n_ce = 0;
        while let Some(p) = q.dequeue(Instant(10_000_000_000)) {
            n_ce += (p.ecn == Ecn::Ce) as u64;
        }
        assert!(n_ce <= q.stats().marked(MarkReason::Early));
        q.check().unwrap();
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let bad = |c: RedConfig| c.build().unwrap_err().field;
        assert_eq!(bad(RedConfig { max_p: 0.0, ..RedConfig::default() }), "max_p");
        assert_eq!(bad(RedConfig { w_q: Some(1.5), ..RedConfig::default() }), "w_q");
        assert_eq!(bad(RedConfig { link_rate_bps: 0, ..RedConfig::default() }), "link_rate_bps");
        assert_eq!(
            bad(RedConfig { min_th_pkts: Some(10.0), max_th_pkts: Some(5.0), ..RedConfig::default() }),
            "max_th_pkts"
        );
        assert_eq!(bad(RedConfig { limit_pkts: Some(0), ..RedConfig::default() }), "limit_pkts");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_and_limits_hold(
            limit in 1u32..80,
            bytes in any::<bool>(),
            ecn in any::<bool>(),
            ops in testkit::ops(600),
        ) {
            let cfg = RedConfig {
                limit_pkts: Some(limit),
                mode: if bytes { RedMode::Bytes } else { RedMode::Packets },
                min_th_pkts: Some(2.0),
                max_th_pkts: Some(6.0),
                w_q: Some(0.1),
                ecn,
                ..RedConfig::default()
            };
            let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(9, 0));
            // Byte mode: a buffer of limit·500 bytes, exceeded by less than one packet
            // (at most 1500 bytes); packets are at least 40 bytes.
            let limit_bytes = limit as u64 * 500;
            let max_pkts = if bytes { (limit_bytes / 40 + 1) as usize } else { limit as usize };
            testkit::run_ops(&mut q, &ops, max_pkts, 0)?;
            if bytes {
                prop_assert!(q.backlog_bytes() < limit_bytes + 1500);
            }
        }
    }
}
