//! RIO (RED with In and Out): one FIFO, two RED drop curves. "In" packets are judged on the
//! average queue of in-packets only, with lenient thresholds; "out" packets on the average
//! of the whole queue, with harsh ones. Marking the first packets of every flow "in" turns
//! this into a short-flow preference without per-flow state in the core.
//!
//! Source: Clark & Fang, "Explicit Allocation of Best-Effort Packet Delivery Service",
//! IEEE/ACM ToN 1998 (RIO: `avg_in` from in-packets, `avg_total` from all packets; in-packets
//! dropped with `P_in(avg_in)`, out-packets with `P_out(avg_total)`), cited by Matta & Guo
//! (`papers/class-isolation-short-long-flows.md`, [10]) as the Diffserv predictive service;
//! the RED curves are [`crate::aqm::red`]'s.
//!
//! Principles: the out curve sits below the in curve (`out.min_th < in.min_th`,
//! `out.max_th ≤ in.max_th`, `out.max_p ≥ in.max_p`), so under congestion out-packets go
//! first; in-packets see only the in-backlog, so a crowd of out-packets cannot push them out.
//! An in-arrival also updates `avg_total` (the in-packet is part of the total queue) but
//! the out curve's drop spacing counts only out-arrivals. Packet order is kept (one FIFO).
//!
//! Knobs (units in names; defaults in brackets; the thresholds are ours, chosen to keep
//! Clark & Fang's ordering on a 100-packet buffer):
//! - `limit_pkts` [100], `limit_bytes` [unset]: the shared buffer; full → `overlimit`.
//! - `mode` [`packets`]: averages and thresholds in packets or bytes (as RED).
//! - `in`: `min_th_pkts` [40], `max_th_pkts` [70], `max_p` [0.02];
//!   `out`: `min_th_pkts` [10], `max_th_pkts` [30], `max_p` [0.2].
//! - `w_q` [unset = RED's automatic weight], `gentle` [false], `wait` [true],
//!   `mean_pkt_size_bytes` [500]: as in RED, shared by both curves.
//! - `classify` [`dscp`]: `dscp` (in = the edge marked it `in_dscp` [10, AF11]; the
//!   simulator's `[edge] mark = "first_n"` marks each flow's first `in_pkts` packets) or
//!   `lifetime` (this queue counts: the first `lifetime_pkts` [32] packets of a flow, and
//!   those within `lifetime_ns` [unset] of its first, are in; `table_capacity` [4096] flows,
//!   least recently seen evicted).
//! - `link_rate_bps`, `link_delay_ns`: the link this queue feeds (set by the simulator).
//!
//! Drops by reason: in-packets dropped by their curve are `early`; out-packets dropped by
//! theirs are `size_policy` (the class policy chose them); a full buffer is `overlimit`.
//! [`Rio::rio_stats`] splits them by in/out.
//!
//! Counters ([`Qdisc::counters`]): per class (`in`, `out`) `arrivals` and RED's (`early`,
//! `pdrop`, `marked`, `prob_drop`, `forced_drop`, see [`super::red`]), all totals. The
//! in-class `early` drops are the common `early` drops, the out-class ones the
//! `size_policy` drops.
//!
//! Limits: a flow whose entry is evicted from the `lifetime` table is counted again from
//! zero (its next packets are in again).

use super::parts::{ShortBy, ShortClassifier};
use super::red::red_counters;
use super::{Cx, Qdisc, QdiscCounter, RedConfig, RedMode};
use crate::aqm::red::{red_on_arrival, red_update_avg, RedParams, RedStats, RedVars, RedVerdict};
use crate::error::ConfigError;
use crate::packet::{Ecn, Packet};
use crate::stats::{DropReason, MarkReason};
use crate::time::{Duration, Instant};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One RIO drop curve.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RioCurve {
    pub min_th_pkts: f64,
    pub max_th_pkts: f64,
    pub max_p: f64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RioConfig {
    pub limit_pkts: Option<u32>,
    pub limit_bytes: Option<u64>,
    pub mode: RedMode,
    #[serde(rename = "in")]
    pub in_curve: RioCurve,
    #[serde(rename = "out")]
    pub out_curve: RioCurve,
    pub w_q: Option<f64>,
    pub gentle: bool,
    pub wait: bool,
    pub mean_pkt_size_bytes: u32,
    pub classify: ShortBy,
    /// DSCP of in-packets under `classify = "dscp"`.
    pub in_dscp: u8,
    pub lifetime_pkts: Option<u32>,
    pub lifetime_ns: Option<u64>,
    pub table_capacity: u32,
    pub link_rate_bps: u64,
    pub link_delay_ns: u64,
    /// Mark ECN-capable packets instead of dropping them (probabilistic region only).
    pub ecn: bool,
}

impl Default for RioConfig {
    fn default() -> Self {
        RioConfig {
            limit_pkts: Some(100),
            limit_bytes: None,
            mode: RedMode::Packets,
            in_curve: RioCurve { min_th_pkts: 40.0, max_th_pkts: 70.0, max_p: 0.02 },
            out_curve: RioCurve { min_th_pkts: 10.0, max_th_pkts: 30.0, max_p: 0.2 },
            w_q: None,
            gentle: false,
            wait: true,
            mean_pkt_size_bytes: 500,
            classify: ShortBy::Dscp,
            in_dscp: 10,
            lifetime_pkts: Some(32),
            lifetime_ns: None,
            table_capacity: 4096,
            link_rate_bps: 10_000_000,
            link_delay_ns: 10_000_000,
            ecn: false,
        }
    }
}

impl RioConfig {
    fn curve(&self, c: &RioCurve, name: &str) -> Result<RedParams, ConfigError> {
        RedConfig {
            limit_pkts: self.limit_pkts,
            limit_bytes: self.limit_bytes,
            mode: self.mode,
            min_th_pkts: Some(c.min_th_pkts),
            max_th_pkts: Some(c.max_th_pkts),
            max_p: c.max_p,
            w_q: self.w_q,
            gentle: self.gentle,
            wait: self.wait,
            mean_pkt_size_bytes: self.mean_pkt_size_bytes,
            target_delay_ns: 0,
            link_rate_bps: self.link_rate_bps,
            link_delay_ns: self.link_delay_ns,
            ecn: self.ecn,
            variant: Default::default(),
        }
        .params()
        .map_err(|e| match e.field.as_str() {
            "min_th_pkts" | "max_th_pkts" | "max_p" => e.within(name),
            _ => e,
        })
    }

    pub fn build(&self) -> Result<Rio, ConfigError> {
        let in_params = self.curve(&self.in_curve, "in")?;
        let out_params = self.curve(&self.out_curve, "out")?;
        if self.in_dscp > 63 {
            return Err(ConfigError::new("in_dscp", self.in_dscp, "a DSCP value 0 to 63"));
        }
        if self.classify == ShortBy::Lifetime {
            if self.lifetime_pkts.is_none() && self.lifetime_ns.is_none() {
                return Err(ConfigError::new("lifetime_pkts", "unset (with lifetime_ns unset)",
                    "at least one of lifetime_pkts, lifetime_ns for classify = \"lifetime\""));
            }
            if self.table_capacity == 0 || self.table_capacity > 1 << 24 {
                return Err(ConfigError::new("table_capacity", self.table_capacity, "1 to 16777216 flows"));
            }
        }
        let idle = RedVars { idle_since: Some(Instant::ZERO), ..RedVars::default() };
        Ok(Rio {
            in_params,
            out_params,
            in_vars: idle.clone(),
            total_vars: idle,
            stats: RioStats::default(),
            classifier: ShortClassifier::new(self.classify, self.in_dscp, self.lifetime_pkts, self.lifetime_ns,
                self.table_capacity),
            limit_pkts: self.limit_pkts.map_or(usize::MAX, |l| l as usize),
            limit_bytes: self.limit_bytes.unwrap_or(u64::MAX),
            link_rate_bps: self.link_rate_bps,
            queue: VecDeque::new(),
            backlog_bytes: 0,
            in_pkts: 0,
            in_bytes: 0,
        })
    }
}

/// RIO counters: the RED core's, per curve.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RioStats {
    pub in_arrivals: u64,
    pub out_arrivals: u64,
    pub in_red: RedStats,
    pub out_red: RedStats,
}

#[derive(Debug)]
pub struct Rio {
    in_params: RedParams,
    out_params: RedParams,
    /// `avg_in`: the average of the in-packets queued.
    in_vars: RedVars,
    /// `avg_total`: the average of all packets queued.
    total_vars: RedVars,
    stats: RioStats,
    classifier: ShortClassifier,
    limit_pkts: usize,
    limit_bytes: u64,
    link_rate_bps: u64,
    /// Packets and whether each is an in-packet.
    queue: VecDeque<(Packet, bool)>,
    backlog_bytes: u64,
    in_pkts: usize,
    in_bytes: u64,
}

impl Rio {
    pub fn rio_stats(&self) -> &RioStats {
        &self.stats
    }
    /// `(avg_in, avg_total)`, in the queue's unit.
    pub fn averages(&self) -> (f64, f64) {
        (self.in_vars.avg, self.total_vars.avg)
    }
}

impl Qdisc for Rio {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        let is_in = self.classifier.is_short(&pkt, cx.now);
        let bytes_mode = self.in_params.byte_mode;
        let (q_in, q_total) = if bytes_mode {
            (self.in_bytes as f64, self.backlog_bytes as f64)
        } else {
            (self.in_pkts as f64, self.queue.len() as f64)
        };
        let ect = matches!(pkt.ecn, Ecn::Ect | Ecn::Ce);
        let verdict = if is_in {
            self.stats.in_arrivals += 1;
            red_update_avg(&self.out_params, &mut self.total_vars, cx.now, q_total);
            red_on_arrival(&self.in_params, &mut self.in_vars, &mut self.stats.in_red, cx.now, q_in,
                pkt.len_bytes(), ect, cx.rng)
        } else {
            self.stats.out_arrivals += 1;
            red_on_arrival(&self.out_params, &mut self.total_vars, &mut self.stats.out_red, cx.now, q_total,
                pkt.len_bytes(), ect, cx.rng)
        };
        match verdict {
            RedVerdict::EarlyDrop | RedVerdict::ForcedDrop => {
                cx.drop(pkt, if is_in { DropReason::Early } else { DropReason::SizePolicy })
            }
            RedVerdict::Accept | RedVerdict::Mark => {
                if self.queue.len() >= self.limit_pkts || self.backlog_bytes + pkt.len_bytes() > self.limit_bytes {
                    if is_in {
                        self.in_vars.on_overflow_drop(&mut self.stats.in_red);
                    } else {
                        self.total_vars.on_overflow_drop(&mut self.stats.out_red);
                    }
                    cx.drop(pkt, DropReason::Overlimit);
                    return;
                }
                if verdict == RedVerdict::Mark {
                    cx.mark(&mut pkt, MarkReason::Early);
                }
                self.backlog_bytes += pkt.len_bytes();
                if is_in {
                    self.in_pkts += 1;
                    self.in_bytes += pkt.len_bytes();
                }
                self.queue.push_back((pkt, is_in));
            }
        }
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let Some((pkt, is_in)) = self.queue.pop_front() else {
            if self.total_vars.idle_since.is_none() {
                self.total_vars.start_idle(cx.now);
                self.in_vars.start_idle(cx.now);
            }
            return None;
        };
        self.backlog_bytes -= pkt.len_bytes();
        if is_in {
            self.in_pkts -= 1;
            self.in_bytes -= pkt.len_bytes();
        }
        if self.queue.is_empty() {
            // Both averages decay over the idle link, from the end of this transmission.
            let at = cx.now + Duration::serialization(pkt.len_bytes(), self.link_rate_bps);
            self.total_vars.start_idle(at);
            self.in_vars.start_idle(at);
        }
        Some(pkt)
    }

    fn len_pkts(&self) -> usize {
        self.queue.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }
    fn flow_table_len(&self) -> usize {
        self.classifier.table_len()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        let s = &self.stats;
        for (class, arrivals, red) in [("in", s.in_arrivals, &s.in_red), ("out", s.out_arrivals, &s.out_red)] {
            out.push(QdiscCounter::total("arrivals", arrivals).of(class));
            out.extend(red_counters(red).map(|c| c.of(class)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{self, pkt};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use proptest::prelude::*;

    /// w_q = 1 (the average is the instantaneous queue), no gentle, no wait.
    fn cfg(in_c: (f64, f64, f64), out_c: (f64, f64, f64)) -> RioConfig {
        RioConfig {
            in_curve: RioCurve { min_th_pkts: in_c.0, max_th_pkts: in_c.1, max_p: in_c.2 },
            out_curve: RioCurve { min_th_pkts: out_c.0, max_th_pkts: out_c.1, max_p: out_c.2 },
            w_q: Some(1.0),
            wait: false,
            ..RioConfig::default()
        }
    }

    fn p(port: u16, dscp: u8) -> Packet {
        Packet { dscp, ..pkt(1, 2, port, 500) }
    }

    #[test]
    fn out_packets_see_the_total_queue_and_in_packets_only_theirs() {
        // Out curve forced at avg_total ≥ 5, in curve starts at avg_in = 10.
        let mut q = Accounted::new(cfg((10.0, 20.0, 0.1), (2.0, 5.0, 0.1)).build().unwrap(), Rng::new(1, 0));
        for i in 0..30 {
            q.enqueue(p(i, 0), Instant(0));
        }
        // At most 5 out-packets: an arrival seeing 5 queued is forced out.
        let outs = q.len_pkts();
        assert!(outs <= 5);
        assert_eq!(q.stats().dropped(DropReason::SizePolicy), 30 - outs as u64);
        // Ten in-packets: avg_in goes 0..9 < 10, all accepted although the total is above
        // the out curve's max_th.
        for i in 0..10 {
            q.enqueue(p(100 + i, 10), Instant(0));
        }
        assert_eq!(q.len_pkts(), outs + 10);
        assert_eq!(q.stats().dropped(DropReason::Early), 0);
        // An out-packet now sees avg_total = outs + 10 ≥ 5: forced drop, whatever its flow.
        q.enqueue(p(0, 0), Instant(0));
        assert_eq!(q.stats().dropped(DropReason::SizePolicy), 31 - outs as u64);
        // In-packets are forced once avg_in ≥ 20 (not gentle): at most 20 in-packets held.
        for i in 0..30 {
            q.enqueue(p(200 + i, 10), Instant(0));
        }
        assert!(q.len_pkts() <= outs + 20);
        assert!(q.stats().dropped(DropReason::Early) > 0);
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 0);
    }

    /// Mean packets between drops for a constant `p_b` under Floyd & Jacobson's rule
    /// `p_a = p_b / (1 − count·p_b)` (no wait): `E[X] = Σ_n P(X ≥ n)`, written from the
    /// formula, independently of the RED core.
    fn expected_gap(p_b: f64) -> f64 {
        let (mut survive, mut mean, mut k) = (1.0f64, 0.0, 1.0);
        while survive > 1e-15 {
            mean += survive;
            let x = k * p_b;
            let pa = if x < 1.0 { (p_b / (1.0 - x)).min(1.0) } else { 1.0 };
            survive *= 1.0 - pa;
            k += 1.0;
        }
        mean
    }

    #[test]
    fn out_drop_rate_follows_the_red_formula_on_the_total_average() {
        // 8 in-packets held in the queue, no out-packets: avg_total = 8 for every out
        // arrival, which is dropped or served at once. Out curve 5/15/0.1 → p_b = 0.03;
        // in curve 10/30: in-packets are never dropped.
        let mut q = Accounted::new(cfg((10.0, 30.0, 0.1), (5.0, 15.0, 0.1)).build().unwrap(), Rng::new(3, 0));
        for _ in 0..8 {
            q.enqueue(p(1, 10), Instant(0));
        }
        let n = 100_000u64;
        let mut dropped = 0u64;
        for _ in 0..n {
            q.enqueue(p(2, 0), Instant(0));
            if q.last_drops().is_empty() {
                q.dequeue(Instant(0)); // keep the total at 8 (the in-backlog only shrinks)
            } else {
                dropped += 1;
            }
            assert_eq!(q.len_pkts(), 8);
        }
        let expect = 1.0 / expected_gap(0.03);
        let got = dropped as f64 / n as f64;
        let tol = 4.0 * (expect * (1.0 - expect) / n as f64).sqrt();
        assert!((got - expect).abs() < tol, "drop rate {got}, RED formula {expect} ± {tol}");
        assert_eq!(q.stats().dropped(DropReason::Early), 0);
        assert_eq!(q.stats().dropped(DropReason::SizePolicy), dropped);
    }

    #[test]
    fn lifetime_counts_the_first_n_packets_in() {
        // No early drops possible (thresholds above the buffer): count in/out arrivals.
        let c = RioConfig {
            classify: ShortBy::Lifetime,
            lifetime_pkts: Some(5),
            ..cfg((500.0, 600.0, 0.1), (400.0, 500.0, 0.1))
        };
        let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
        for _ in 0..12 {
            q.enqueue(pkt(1, 2, 1, 500), Instant(0));
        }
        for _ in 0..3 {
            q.enqueue(pkt(1, 2, 2, 500), Instant(0));
        }
        let s = q.inner().rio_stats();
        assert_eq!((s.in_arrivals, s.out_arrivals), (5 + 3, 7));
        assert_eq!(q.inner().flow_table_len(), 2);
    }

    #[test]
    fn a_full_buffer_is_overlimit() {
        let c = RioConfig { limit_pkts: Some(10), ..cfg((500.0, 600.0, 0.1), (400.0, 500.0, 0.1)) };
        let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
        for i in 0..15 {
            q.enqueue(p(i, if i % 2 == 0 { 10 } else { 0 }), Instant(0));
        }
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 5);
        let s = q.inner().rio_stats();
        assert_eq!(s.in_red.pdrop + s.out_red.pdrop, 5);
    }

    #[test]
    fn bad_curves_name_the_field() {
        let e = cfg((10.0, 5.0, 0.1), (2.0, 5.0, 0.1)).build().unwrap_err();
        assert_eq!(e.field, "in.max_th_pkts");
        let e = cfg((10.0, 20.0, 0.1), (2.0, 5.0, 1.5)).build().unwrap_err();
        assert_eq!(e.field, "out.max_p");
        let e = RioConfig { limit_pkts: Some(0), ..RioConfig::default() }.build().unwrap_err();
        assert_eq!(e.field, "limit_pkts");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_and_bounded_memory(ops in testkit::ops(300), lifetime in any::<bool>()) {
            let c = RioConfig {
                limit_pkts: Some(60),
                classify: if lifetime { ShortBy::Lifetime } else { ShortBy::Dscp },
                lifetime_pkts: Some(3),
                table_capacity: 64,
                ..RioConfig::default()
            };
            let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
            testkit::run_ops(&mut q, &ops, 60, 64)?;
            let s = q.inner().rio_stats();
            prop_assert_eq!(s.in_arrivals + s.out_arrivals, q.stats().arrived_pkts);
            let c = |class: &str, name: &str| q.counters().iter().find(|c| c.class == Some(class) && c.name == name).unwrap().value;
            prop_assert_eq!(c("in", "arrivals") + c("out", "arrivals"), q.stats().arrived_pkts);
            prop_assert_eq!(c("in", "early"), q.stats().dropped(DropReason::Early));
            prop_assert_eq!(c("out", "early"), q.stats().dropped(DropReason::SizePolicy));
            prop_assert_eq!(c("in", "pdrop") + c("out", "pdrop"), q.stats().dropped(DropReason::Overlimit));
        }
    }
}
