//! Size-aware dropping: a FIFO that drops a connection's packets with a probability that
//! grows with the number of packets the connection has already sent, so short transfers
//! are spared and long ones are held to a target throughput.
//!
//! Source: K. Tokuda, G. Hasegawa, M. Murata, "Analysis and Improvement of Fairness among
//! TCP Connections transmitting Differently Sized Data" (`papers/`
//! size-aware-drop-fairness), Sections 4 (algorithm), 5 (parameters, Table 3) and 6.2
//! (n-threshold form). The probabilities come from the paper's Section 3 throughput
//! analysis, in [`crate::models::size_aware_analysis`].
//!
//! Principles:
//! - Per-connection packet counter: a table keyed by the 5-tuple holds a counter and the
//!   time of the connection's last packet. An arrival less than `t_update_ns` after the
//!   previous one continues the count; otherwise (or for a new 5-tuple) the count
//!   restarts: the arrival is packet 1 of a new connection.
//! - Target throughput (packets per RTT): a RED-style EWMA of the queue length (weight
//!   `w_q`, with RED's idle-time decay) is compared with `min_th`/`max_th` every
//!   `update_every_pkts` (N) arrivals; below `min_th` the target is multiplied by `alpha`,
//!   above `max_th` by `beta`, in between it stays.
//! - Drop curve: with `g(d) = min(loss-free throughput of d packets, target)` (the paper's
//!   Figure 9(b) ideal) and `f` the analysis' throughput, the probabilities make
//!   `f(d, p_1…p_d)` meet `g(d)` for `d = 1…M`: one per packet (per-packet form, fitted
//!   as described under the choices below), or one per log-spaced interval `(d_{i−1},
//!   d_i]`, `d_i = 10^(i·log10 M / n)`, each solved at `d_i` (n-threshold form,
//!   `thresholds = n`). Packet `i > M` uses `p_M`.
//!   The curve is rebuilt when the target changes (every N arrivals at most).
//! - An arriving packet with index `i` is dropped with probability `p_i` (`size_policy`);
//!   if it is kept and the buffer is full it is dropped as `overlimit` (tail drop).
//!
//! Choices where the paper is silent (see docs/size_aware.md):
//! - Counted and subject to the policy: every packet except SYNs and pure ACKs (no
//!   payload, ACK set, no FIN); the paper's ns-2 TCP has no handshake. Dropped arrivals
//!   count too: the analysis indexes transmitted packets, retransmissions included.
//! - Per-packet form: packets up to `d_0` (the largest transfer whose loss-free throughput
//!   is within the target) are never dropped; `p_d` is the running maximum of `x_d`, the
//!   one probability for packets `d_0+1 … d` with which a `d`-packet transfer reaches
//!   `g(d)`. The paper's recursion (solve `p_d` alone, earlier ones fixed) is
//!   ill-conditioned with its expected-value analysis (runs of the cap, then zeros); see
//!   [`crate::models::size_aware_analysis::per_packet_probabilities`].
//! - Each probability is capped at `max_drop_p` (0.5), so every connection can finish.
//! - The target is kept within [`min_target_pkts_per_rtt`, loss-free throughput of M
//!   packets]; above that bound the curve is all zeros anyway. Curves are computed for the
//!   target rounded to a 2.5 % log grid and cached (256 curves, oldest evicted), because
//!   one per-packet curve of M = 1000 costs tens of milliseconds.
//!
//! Knobs (defaults: the paper's Table 3 and Section 5, else as noted):
//! - `limit_pkts` (100 packets, router A's buffer); `w_q` (0.002); `min_th_pkts` (25),
//!   `max_th_pkts` (75), packets; `t_update_ns` (500 ms); `update_every_pkts` N (100);
//!   `alpha` (1.05), `beta` (0.95);
//! - `initial_target_pkts_per_rtt` (4, our choice: the paper gives none),
//!   `min_target_pkts_per_rtt` (0.5);
//! - the analysis' TCP: `rtt_an_ns` (RTT_an, 100 ms; the paper sets it to the flows'
//!   propagation RTT), `t0_ns` (1 s), `ack_every_pkts` b (1), `initial_window_pkts` w_1 (1),
//!   `max_window_pkts` W_max (unset = unlimited), as in the paper's regular TCP;
//! - `m_pkts` M (1000, Section 6.2), `thresholds` n (0 = per-packet form), `max_drop_p`
//!   (0.5);
//! - `flow_table_capacity` (4096 connections): when full, the connection seen longest ago
//!   is forgotten (its next packet starts a new count);
//! - `link_rate_bps` (10 Mbit/s) and `mean_pkt_size_bytes` (512, the paper's packet):
//!   only for the EWMA's idle-time decay; the simulator sets the rate to its link's.
//!
//! - `fixed_drop_p` (unset): a given per-packet curve instead, for validation.
//!
//! Complexity: O(1) per packet (table lookup, curve lookup); a curve rebuild is O(M²)
//! analysis work (the per-packet form solves M one-dimensional problems), amortised by the
//! cache. Memory: the table (capacity × ~40 bytes) and at most 256 curves of M `f32`.
//!
//! Counters ([`Qdisc::counters`]): `target_increases`, `target_decreases` (updates of the
//! target that raised or lowered it), `curve_builds` (curves computed), `counter_resets`
//! (connections whose count restarted after `t_update_ns` of silence), `evictions`
//! (connections forgotten to make room), totals; `conns_tracked` (table entries now) and
//! `curves_cached`, levels.
//!
//! Limits: RTT_an is one value for all connections (Section 6.1 shows the method is not
//! sensitive to it); a connection idle for more than `t_update_ns` restarts its count
//! (Section 5 notes this with long RTTs); no ECN.

use super::parts::{BoundedTable, Slot};
use super::{Cx, Qdisc, QdiscCounter};
use crate::aqm::red::{red_update_avg, RedParams, RedVars};
use crate::error::ConfigError;
use crate::models::size_aware_analysis::{
    log_thresholds, per_packet_probabilities, threshold_probabilities, throughput_pkts_per_rtt, TcpModel,
};
use crate::packet::{FlowKey, Packet};
use crate::stats::DropReason;
use crate::time::{Duration, Instant};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Curves kept for recently used targets (256 × M `f32`: 1 MB at M = 1000).
const CURVE_CACHE_ENTRIES: usize = 256;
/// Curves are computed for the target rounded to this log grid.
const TARGET_GRID_RATIO: f64 = 1.025;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SizeAwareConfig {
    /// Buffer, packets.
    pub limit_pkts: u32,
    /// EWMA weight of the average queue, in (0, 1].
    pub w_q: f64,
    /// Below this average queue (packets) the target grows.
    pub min_th_pkts: f64,
    /// Above this average queue (packets) the target shrinks.
    pub max_th_pkts: f64,
    /// A connection's count restarts after this much silence, nanoseconds.
    pub t_update_ns: u64,
    /// N: arrivals between two target updates.
    pub update_every_pkts: u32,
    /// Target increase factor (> 1).
    pub alpha: f64,
    /// Target decrease factor (in (0, 1)).
    pub beta: f64,
    /// Target at start, packets per RTT_an.
    pub initial_target_pkts_per_rtt: f64,
    /// Lowest target, packets per RTT_an.
    pub min_target_pkts_per_rtt: f64,
    /// RTT_an: the round-trip time the analysis assumes, nanoseconds.
    pub rtt_an_ns: u64,
    /// T0: the analysis' initial retransmission timeout, nanoseconds.
    pub t0_ns: u64,
    /// b: packets per ACK in the analysis.
    pub ack_every_pkts: f64,
    /// w_1: initial window in the analysis, packets.
    pub initial_window_pkts: f64,
    /// W_max in the analysis, packets; unset = unlimited.
    pub max_window_pkts: Option<f64>,
    /// M: packets covered by the curve; later packets use p_M.
    pub m_pkts: u32,
    /// n: number of log-spaced thresholds (Section 6.2); 0 = a probability per packet.
    pub thresholds: u32,
    /// Cap on every drop probability.
    pub max_drop_p: f64,
    /// Connections remembered.
    pub flow_table_capacity: u32,
    /// Rate of the link this queue feeds, bit/s (idle-time decay of the average).
    pub link_rate_bps: u64,
    /// Typical packet size, bytes (idle-time decay of the average).
    pub mean_pkt_size_bytes: u32,
    /// A fixed curve instead of the target-driven one: packet i is dropped with
    /// `fixed_drop_p[i − 1]` (the last value repeats), and the target never moves. For
    /// validating the analysis with a known loss pattern (the paper's Figure 7).
    pub fixed_drop_p: Option<Vec<f64>>,
}

impl Default for SizeAwareConfig {
    fn default() -> Self {
        SizeAwareConfig {
            limit_pkts: 100,
            w_q: 0.002,
            min_th_pkts: 25.0,
            max_th_pkts: 75.0,
            t_update_ns: 500_000_000,
            update_every_pkts: 100,
            alpha: 1.05,
            beta: 0.95,
            initial_target_pkts_per_rtt: 4.0,
            min_target_pkts_per_rtt: 0.5,
            rtt_an_ns: 100_000_000,
            t0_ns: 1_000_000_000,
            ack_every_pkts: 1.0,
            initial_window_pkts: 1.0,
            max_window_pkts: None,
            m_pkts: 1000,
            thresholds: 0,
            max_drop_p: 0.5,
            flow_table_capacity: 4096,
            link_rate_bps: 10_000_000,
            mean_pkt_size_bytes: 512,
            fixed_drop_p: None,
        }
    }
}

impl SizeAwareConfig {
    /// The TCP the analysis assumes.
    pub fn tcp_model(&self) -> TcpModel {
        TcpModel {
            rtt_s: Duration(self.rtt_an_ns).as_secs_f64(),
            t0_s: Duration(self.t0_ns).as_secs_f64(),
            b: self.ack_every_pkts,
            delta: 1.0,
            w1_pkts: self.initial_window_pkts,
            w_max_pkts: self.max_window_pkts.unwrap_or(f64::INFINITY),
        }
    }

    pub fn build(&self) -> Result<SizeAware, ConfigError> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(ConfigError::new(field, v, "a finite number > 0"))
            }
        };
        if self.limit_pkts == 0 {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet"));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(ConfigError::new("w_q", self.w_q, "a weight in (0, 1]"));
        }
        if !(self.min_th_pkts.is_finite() && self.min_th_pkts >= 0.0) {
            return Err(ConfigError::new("min_th_pkts", self.min_th_pkts, "a finite number ≥ 0"));
        }
        if !(self.max_th_pkts.is_finite() && self.max_th_pkts > self.min_th_pkts) {
            return Err(ConfigError::new(
                "max_th_pkts",
                self.max_th_pkts,
                format!("a finite number above min_th_pkts ({})", self.min_th_pkts),
            ));
        }
        if self.t_update_ns == 0 {
            return Err(ConfigError::new("t_update_ns", 0, "at least 1 ns"));
        }
        if self.update_every_pkts == 0 {
            return Err(ConfigError::new("update_every_pkts", 0, "at least 1 packet"));
        }
        if !(self.alpha.is_finite() && self.alpha > 1.0) {
            return Err(ConfigError::new("alpha", self.alpha, "a factor > 1"));
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(ConfigError::new("beta", self.beta, "a factor in (0, 1)"));
        }
        positive("min_target_pkts_per_rtt", self.min_target_pkts_per_rtt)?;
        positive("initial_target_pkts_per_rtt", self.initial_target_pkts_per_rtt)?;
        if self.rtt_an_ns == 0 {
            return Err(ConfigError::new("rtt_an_ns", 0, "at least 1 ns"));
        }
        if self.t0_ns == 0 {
            return Err(ConfigError::new("t0_ns", 0, "at least 1 ns"));
        }
        if !(self.ack_every_pkts.is_finite() && self.ack_every_pkts >= 1.0) {
            return Err(ConfigError::new("ack_every_pkts", self.ack_every_pkts, "a number ≥ 1"));
        }
        if !(self.initial_window_pkts.is_finite() && self.initial_window_pkts >= 1.0) {
            return Err(ConfigError::new("initial_window_pkts", self.initial_window_pkts, "a number ≥ 1"));
        }
        if let Some(w) = self.max_window_pkts {
            if w.is_nan() || w < self.initial_window_pkts {
                return Err(ConfigError::new(
                    "max_window_pkts",
                    w,
                    "a number ≥ initial_window_pkts, or unset for no limit",
                ));
            }
        }
        if !(1..=100_000).contains(&self.m_pkts) {
            return Err(ConfigError::new("m_pkts", self.m_pkts, "1 to 100000 packets"));
        }
        if self.thresholds > self.m_pkts {
            return Err(ConfigError::new("thresholds", self.thresholds, "0 (per packet) to m_pkts"));
        }
        if !(self.max_drop_p > 0.0 && self.max_drop_p <= 1.0) {
            return Err(ConfigError::new("max_drop_p", self.max_drop_p, "a probability in (0, 1]"));
        }
        if !(1..=1 << 24).contains(&self.flow_table_capacity) {
            return Err(ConfigError::new("flow_table_capacity", self.flow_table_capacity, "1 to 16777216 entries"));
        }
        if self.link_rate_bps == 0 {
            return Err(ConfigError::new("link_rate_bps", 0, "at least 1 bit/s"));
        }
        if self.mean_pkt_size_bytes == 0 {
            return Err(ConfigError::new("mean_pkt_size_bytes", 0, "at least 1 byte"));
        }
        if let Some(f) = &self.fixed_drop_p {
            if f.is_empty() || f.len() > 100_000 || !f.iter().all(|p| (0.0..=1.0).contains(p)) {
                return Err(ConfigError::new(
                    "fixed_drop_p",
                    format!("{f:?}"),
                    "1 to 100000 probabilities in [0, 1], or unset",
                ));
            }
        }
        let model = self.tcp_model();
        let max_target = throughput_pkts_per_rtt(&model, self.m_pkts as usize, &[0.0]).max(self.min_target_pkts_per_rtt);
        let red = RedParams {
            min_th: self.min_th_pkts,
            max_th: self.max_th_pkts,
            max_p: 1.0,
            w_q: self.w_q,
            gentle: false,
            wait: false,
            byte_mode: false,
            mean_pkt_size_bytes: self.mean_pkt_size_bytes as f64,
            pkts_per_sec: self.link_rate_bps as f64 / (8.0 * self.mean_pkt_size_bytes as f64),
            ecn: false,
        };
        let mut q = SizeAware {
            cfg: self.clone(),
            model,
            red,
            avg: RedVars { idle_since: Some(Instant::ZERO), ..RedVars::default() },
            target_pkts_per_rtt: self
                .initial_target_pkts_per_rtt
                .clamp(self.min_target_pkts_per_rtt, max_target),
            max_target_pkts_per_rtt: max_target,
            arrivals_since_update: 0,
            target_sum: 0.0,
            target_samples: 0,
            curves: VecDeque::new(),
            curve: 0,
            table: BoundedTable::new(self.flow_table_capacity),
            conns: Vec::new(),
            queue: VecDeque::new(),
            backlog_bytes: 0,
            stats: SizeAwareStats::default(),
        };
        match &self.fixed_drop_p {
            Some(f) => q.curves.push_back((0, f.iter().map(|&p| p as f32).collect())),
            None => q.select_curve(),
        }
        Ok(q)
    }
}

/// Counters of the mechanism (drops are counted by reason in [`crate::QdiscStats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SizeAwareStats {
    pub target_increases: u64,
    pub target_decreases: u64,
    /// Curves computed (cache misses).
    pub curve_builds: u64,
    /// Counts restarted because the connection had been silent for `t_update_ns` or more.
    pub counter_resets: u64,
    /// Connections forgotten to make room in the table.
    pub evictions: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Conn {
    pkts: u32,
    last: Instant,
}

#[derive(Debug)]
pub struct SizeAware {
    cfg: SizeAwareConfig,
    model: TcpModel,
    red: RedParams,
    avg: RedVars,
    target_pkts_per_rtt: f64,
    max_target_pkts_per_rtt: f64,
    arrivals_since_update: u32,
    /// Sum and number of the targets seen at the update instants (every N arrivals).
    target_sum: f64,
    target_samples: u64,
    /// (grid key, drop probability of packet i at index i − 1), most recent last.
    curves: VecDeque<(i32, Vec<f32>)>,
    /// Index of the current curve in `curves`.
    curve: usize,
    table: BoundedTable<FlowKey>,
    conns: Vec<Conn>,
    queue: VecDeque<Packet>,
    backlog_bytes: u64,
    stats: SizeAwareStats,
}

impl SizeAware {
    pub fn target_pkts_per_rtt(&self) -> f64 {
        self.target_pkts_per_rtt
    }
    /// Mean of the target over the update instants (every N arrivals): the target the
    /// run's packets mostly saw.
    pub fn mean_target_pkts_per_rtt(&self) -> f64 {
        if self.target_samples == 0 {
            self.target_pkts_per_rtt
        } else {
            self.target_sum / self.target_samples as f64
        }
    }
    /// The EWMA of the queue length, packets.
    pub fn avg_queue_pkts(&self) -> f64 {
        self.avg.avg
    }
    pub fn size_aware_stats(&self) -> &SizeAwareStats {
        &self.stats
    }
    /// Drop probability of a connection's packet number `index` (1-based) now.
    pub fn drop_probability(&self, index: u32) -> f64 {
        let c = &self.curves[self.curve].1;
        c[(index.max(1) as usize).min(c.len()) - 1] as f64
    }
    /// The count of a remembered connection (its last packet's index).
    pub fn packet_count(&self, key: &FlowKey) -> Option<u32> {
        self.table.get(key).map(|i| self.conns[i as usize].pkts)
    }
    /// Curves held in the cache (at most 256).
    pub fn cached_curves(&self) -> usize {
        self.curves.len()
    }

    /// Point `curve` at the curve for the current target, computing it on a cache miss.
    fn select_curve(&mut self) {
        let key = (self.target_pkts_per_rtt.ln() / TARGET_GRID_RATIO.ln()).round() as i32;
        if let Some(i) = self.curves.iter().position(|(k, _)| *k == key) {
            self.curve = i;
            return;
        }
        let target = TARGET_GRID_RATIO.powi(key);
        let m = self.cfg.m_pkts as usize;
        let max_p = self.cfg.max_drop_p;
        let curve: Vec<f32> = if self.cfg.thresholds == 0 {
            per_packet_probabilities(&self.model, target, m, max_p).into_iter().map(|p| p as f32).collect()
        } else {
            let th = log_thresholds(self.cfg.thresholds as usize, m);
            let probs = threshold_probabilities(&self.model, target, &th, max_p);
            let mut c = Vec::with_capacity(m);
            for (&d, &p) in th.iter().zip(&probs) {
                c.resize(d.min(m), p as f32);
            }
            c
        };
        self.stats.curve_builds += 1;
        if self.curves.len() == CURVE_CACHE_ENTRIES {
            self.curves.pop_front();
        }
        self.curves.push_back((key, curve));
        self.curve = self.curves.len() - 1;
    }

    /// Every N arrivals: move the target by the average queue (Eqs. 18, 19).
    fn maybe_update_target(&mut self) {
        self.arrivals_since_update += 1;
        if self.arrivals_since_update < self.cfg.update_every_pkts {
            return;
        }
        self.arrivals_since_update = 0;
        self.target_sum += self.target_pkts_per_rtt;
        self.target_samples += 1;
        if self.cfg.fixed_drop_p.is_some() {
            return;
        }
        let before = self.target_pkts_per_rtt;
        if self.avg.avg < self.cfg.min_th_pkts {
            self.target_pkts_per_rtt = (before * self.cfg.alpha).min(self.max_target_pkts_per_rtt);
            self.stats.target_increases += (self.target_pkts_per_rtt > before) as u64;
        } else if self.avg.avg > self.cfg.max_th_pkts {
            self.target_pkts_per_rtt = (before * self.cfg.beta).max(self.cfg.min_target_pkts_per_rtt);
            self.stats.target_decreases += (self.target_pkts_per_rtt < before) as u64;
        }
        if self.target_pkts_per_rtt != before {
            self.select_curve();
        }
    }

    /// Count the packet against its connection and return its index (1-based).
    fn count(&mut self, key: FlowKey, now: Instant) -> u32 {
        let slot = self.table.lookup(key, 0);
        let i = slot.index() as usize;
        if i >= self.conns.len() {
            self.conns.resize(i + 1, Conn::default());
        }
        let conn = &mut self.conns[i];
        match slot {
            Slot::Existing(_) if now.saturating_since(conn.last).as_nanos() < self.cfg.t_update_ns => {
                conn.pkts = conn.pkts.saturating_add(1);
            }
            Slot::Existing(_) => {
                self.stats.counter_resets += 1;
                conn.pkts = 1;
            }
            Slot::New(_) | Slot::Shared(_) => conn.pkts = 1,
        }
        conn.last = now;
        // Every entry sits on the table's idle list in order of its last packet, so a full
        // table forgets the connection seen longest ago.
        self.table.set_busy(i as u32);
        self.table.set_idle(i as u32);
        self.stats.evictions = self.table.evictions();
        conn.pkts
    }
}

/// SYNs and pure ACKs are not part of a transfer's data: neither counted nor policed.
fn is_counted(pkt: &Packet) -> bool {
    let pure_ack = pkt.payload_len == 0 && pkt.flags.ack() && !pkt.flags.fin();
    !pkt.flags.syn() && !pure_ack
}

impl Qdisc for SizeAware {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        red_update_avg(&self.red, &mut self.avg, cx.now, self.queue.len() as f64);
        self.maybe_update_target();
        if is_counted(&pkt) {
            let index = self.count(pkt.flow, cx.now);
            let p = self.drop_probability(index);
            if p > 0.0 && cx.rng.chance(p) {
                cx.drop(pkt, DropReason::SizePolicy);
                return;
            }
        }
        if self.queue.len() >= self.cfg.limit_pkts as usize {
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        self.backlog_bytes += pkt.len_bytes();
        self.queue.push_back(pkt);
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let Some(pkt) = self.queue.pop_front() else {
            if self.avg.idle_since.is_none() {
                self.avg.start_idle(cx.now);
            }
            return None;
        };
        self.backlog_bytes -= pkt.len_bytes();
        if self.queue.is_empty() {
            self.avg.start_idle(cx.now + Duration::serialization(pkt.len_bytes(), self.cfg.link_rate_bps));
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
        self.table.len()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        let s = &self.stats;
        out.extend([
            QdiscCounter::total("target_increases", s.target_increases),
            QdiscCounter::total("target_decreases", s.target_decreases),
            QdiscCounter::total("curve_builds", s.curve_builds),
            QdiscCounter::total("counter_resets", s.counter_resets),
            QdiscCounter::total("evictions", s.evictions),
            QdiscCounter::level("conns_tracked", self.table.len() as u64),
            QdiscCounter::level("curves_cached", self.curves.len() as u64),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::size_aware_analysis as analysis;
    use crate::packet::TcpFlags;
    use crate::qdisc::testkit::{self, pkt};
    use crate::qdisc::Accounted;
    use crate::rng::Rng;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn data(src_port: u16) -> Packet {
        let mut p = pkt(1, 2, src_port, 552);
        p.payload_len = 512;
        p.flags = TcpFlags(TcpFlags::ACK);
        p
    }

    /// A configuration whose curve is all zeros (huge target range start) unless stated.
    fn quiet() -> SizeAwareConfig {
        SizeAwareConfig { m_pkts: 100, initial_target_pkts_per_rtt: 1e6, ..SizeAwareConfig::default() }
    }

    #[test]
    fn counter_counts_a_connection_and_restarts_after_t_update() {
        let mut q = Accounted::new(quiet().build().unwrap(), Rng::new(1, 0));
        let key = data(7).flow;
        // Packets at 0, 100, 200 ms: one connection, count 3.
        for t in [0, 100, 200] {
            q.enqueue(data(7), Instant(t * MS));
        }
        assert_eq!(q.inner().packet_count(&key), Some(3));
        // 499.999 ms of silence (< T_update = 500 ms): the count goes on.
        q.enqueue(data(7), Instant(200 * MS + 499_999_999));
        assert_eq!(q.inner().packet_count(&key), Some(4));
        // Exactly 500 ms later: not "smaller than T_update", a new connection.
        q.enqueue(data(7), Instant(1_200 * MS - 1));
        assert_eq!(q.inner().packet_count(&key), Some(1));
        assert_eq!(q.inner().size_aware_stats().counter_resets, 1);
        // SYNs and pure ACKs are not counted; a FIN is.
        let mut syn = data(7);
        syn.flags = TcpFlags(TcpFlags::SYN);
        syn.payload_len = 0;
        let mut ack = data(7);
        ack.payload_len = 0;
        let mut fin = ack;
        fin.flags = TcpFlags(TcpFlags::ACK | TcpFlags::FIN);
        for p in [syn, ack, fin] {
            q.enqueue(p, Instant(1_300 * MS));
        }
        assert_eq!(q.inner().packet_count(&key), Some(2));
        // Another 5-tuple has its own count.
        q.enqueue(data(8), Instant(1_300 * MS));
        assert_eq!(q.inner().packet_count(&data(8).flow), Some(1));
    }

    #[test]
    fn target_moves_by_alpha_and_beta_every_n_packets() {
        // w_q = 1: the average is the queue an arrival sees. N = 10, thresholds 3 / 6.
        let cfg = SizeAwareConfig {
            w_q: 1.0,
            min_th_pkts: 3.0,
            max_th_pkts: 6.0,
            update_every_pkts: 10,
            initial_target_pkts_per_rtt: 4.0,
            m_pkts: 100,
            ..SizeAwareConfig::default()
        };
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        // 9 arrivals to an empty queue (each dequeued at once): no update yet.
        for i in 0..9 {
            q.enqueue(pkt(1, 2, i, 500), Instant(i as u64));
            q.dequeue(Instant(i as u64));
        }
        assert_eq!(q.inner().target_pkts_per_rtt(), 4.0);
        // The 10th sees an empty queue (avg 0 < 3): target × 1.05.
        q.enqueue(pkt(1, 2, 9, 500), Instant(9));
        q.dequeue(Instant(9));
        assert!((q.inner().target_pkts_per_rtt() - 4.2).abs() < 1e-12);
        // Fill to 7 (avg > 6) and keep it there for 10 arrivals: × 0.95.
        for i in 0..7 {
            q.enqueue(pkt(1, 2, 100 + i, 500), Instant(10));
        }
        for i in 0..3 {
            q.enqueue(pkt(1, 2, 200 + i, 500), Instant(11));
            q.dequeue(Instant(11));
        }
        assert!((q.inner().target_pkts_per_rtt() - 4.2 * 0.95).abs() < 1e-12);
        // Average between the thresholds: unchanged over the next 10 arrivals.
        for _ in 0..3 {
            q.dequeue(Instant(12));
        }
        for i in 0..10 {
            q.enqueue(pkt(1, 2, 300 + i, 500), Instant(13));
            q.dequeue(Instant(13));
        }
        assert!((q.inner().target_pkts_per_rtt() - 4.2 * 0.95).abs() < 1e-12);
        let s = q.inner().size_aware_stats();
        assert_eq!((s.target_increases, s.target_decreases), (1, 1));
        // Each source port is a connection: 10 + 7 + 3 + 10 of them, none silent for
        // t_update, none evicted (the table holds more).
        let c = |name: &str| q.counters().iter().find(|c| c.name == name).unwrap().value;
        assert_eq!((c("target_increases"), c("target_decreases"), c("counter_resets"), c("evictions"), c("conns_tracked")), (1, 1, 0, 0, 30));
    }

    #[test]
    fn target_is_clamped_and_the_curve_follows_it() {
        let cfg = SizeAwareConfig {
            update_every_pkts: 1,
            initial_target_pkts_per_rtt: 2.0,
            min_target_pkts_per_rtt: 1.5,
            m_pkts: 100,
            ..SizeAwareConfig::default()
        };
        let model = cfg.tcp_model();
        // The top: loss-free throughput of M = 100 packets, 100/log2(101) pkts/RTT.
        let top = 100.0 / 101f64.log2();
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        for i in 0..200u64 {
            q.enqueue(pkt(1, 2, i as u16, 500), Instant(i * 1000 * MS)); // empty, idle queue
            q.dequeue(Instant(i * 1000 * MS));
        }
        assert!((q.inner().target_pkts_per_rtt() - top).abs() < 1e-9);
        // At the top every probability is 0 (nothing exceeds the target).
        assert!((1..=100).all(|i| q.inner().drop_probability(i) == 0.0));
        // The curve in use is the analysis' for the target on the 2.5 % grid.
        let mut q = Accounted::new(SizeAwareConfig { m_pkts: 100, ..SizeAwareConfig::default() }.build().unwrap(), Rng::new(1, 0));
        let grid = TARGET_GRID_RATIO.powi((4f64.ln() / TARGET_GRID_RATIO.ln()).round() as i32);
        let expect = analysis::per_packet_probabilities(&model, grid, 100, 0.5);
        for i in 1..=100u32 {
            assert!((q.inner().drop_probability(i) - expect[i as usize - 1]).abs() < 1e-6);
        }
        assert!(q.inner().drop_probability(1000) == expect[99] as f32 as f64);
        q.dequeue(Instant(0));
        assert_eq!(q.inner().cached_curves(), 1);
    }

    /// Send `flows` connections of `len` packets each (0.1 ms apart, a fresh port per
    /// connection, the queue drained after every arrival) and return, per packet index,
    /// the fraction of arrivals dropped by the size policy.
    fn drop_fraction_by_index(cfg: &SizeAwareConfig, flows: u16, len: u32) -> Vec<f64> {
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(3, 0));
        let mut dropped = vec![0u32; len as usize];
        let mut t = 0;
        for f in 0..flows {
            for i in 0..len {
                q.enqueue(data(f), Instant(t));
                if q.last_drops().iter().any(|(_, r)| *r == DropReason::SizePolicy) {
                    dropped[i as usize] += 1;
                }
                q.dequeue(Instant(t));
                t += 100_000;
            }
        }
        dropped.iter().map(|&d| d as f64 / flows as f64).collect()
    }

    #[test]
    fn drop_probability_follows_the_packet_index() {
        // Fixed target (N larger than the script), per-packet form, M = 60.
        let cfg = SizeAwareConfig {
            initial_target_pkts_per_rtt: 3.0,
            update_every_pkts: u32::MAX,
            m_pkts: 60,
            rtt_an_ns: 20 * MS,
            ..SizeAwareConfig::default()
        };
        let grid = TARGET_GRID_RATIO.powi((3f64.ln() / TARGET_GRID_RATIO.ln()).round() as i32);
        let expect = analysis::per_packet_probabilities(&cfg.tcp_model(), grid, 60, 0.5);
        let flows = 4000;
        let got = drop_fraction_by_index(&cfg, flows, 60);
        // Loss-free slow start stays under 3 pkts/RTT up to 7 packets (7/3): never dropped.
        assert!(got[..7].iter().all(|&f| f == 0.0), "{:?}", &got[..7]);
        for (i, (&g, &e)) in got.iter().zip(&expect).enumerate() {
            let sd = (e * (1.0 - e) / flows as f64).sqrt();
            assert!((g - e).abs() <= 5.0 * sd + 1e-12, "packet {}: {g} vs {e}", i + 1);
        }
    }

    #[test]
    fn n_threshold_form_is_constant_between_log_spaced_thresholds() {
        let cfg = SizeAwareConfig {
            initial_target_pkts_per_rtt: 3.0,
            update_every_pkts: u32::MAX,
            m_pkts: 1000,
            thresholds: 3,
            rtt_an_ns: 20 * MS,
            ..SizeAwareConfig::default()
        };
        let q = cfg.build().unwrap();
        let grid = TARGET_GRID_RATIO.powi((3f64.ln() / TARGET_GRID_RATIO.ln()).round() as i32);
        let probs = analysis::threshold_probabilities(&cfg.tcp_model(), grid, &[10, 100, 1000], 0.5);
        // Intervals [1, 10], (10, 100], (100, 1000], and p_3 beyond M.
        for (range, p) in [(1..=10u32, probs[0]), (11..=100, probs[1]), (101..=1500, probs[2])] {
            for i in range {
                assert!((q.drop_probability(i) - p).abs() < 1e-6, "packet {i}");
            }
        }
        assert!(probs[1] > 0.0);
        // Measured: the middle interval's drop fraction matches p_2.
        let got = drop_fraction_by_index(&cfg, 400, 100);
        let mid: f64 = got[10..100].iter().sum::<f64>() / 90.0;
        let sd = (probs[1] * (1.0 - probs[1]) / (400.0 * 90.0)).sqrt();
        assert!((mid - probs[1]).abs() < 5.0 * sd, "{mid} vs {}", probs[1]);
    }

    #[test]
    fn a_fixed_curve_drops_by_index_and_holds_the_target() {
        // Figure 7's pattern: packets 1–20 never dropped, 21 and later with 0.03.
        let mut fixed = vec![0.0; 20];
        fixed.push(0.03);
        let cfg = SizeAwareConfig { fixed_drop_p: Some(fixed), update_every_pkts: 1, ..SizeAwareConfig::default() };
        let flows = 2000;
        let got = drop_fraction_by_index(&cfg, flows, 40);
        assert!(got[..20].iter().all(|&f| f == 0.0));
        let tail: f64 = got[20..].iter().sum::<f64>() / 20.0;
        let sd = (0.03f64 * 0.97 / (flows as f64 * 20.0)).sqrt();
        assert!((tail - 0.03).abs() < 5.0 * sd, "{tail}");
        // An empty queue would raise a target every arrival (N = 1); a fixed curve keeps it.
        let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(1, 0));
        for i in 0..200 {
            q.enqueue(pkt(1, 2, i, 500), Instant(i as u64));
            q.dequeue(Instant(i as u64));
        }
        assert_eq!(q.inner().target_pkts_per_rtt(), 4.0);
        assert_eq!(q.inner().size_aware_stats().target_increases, 0);
        assert_eq!(q.inner().drop_probability(10_000), 0.03f32 as f64);
        let bad = SizeAwareConfig { fixed_drop_p: Some(vec![1.5]), ..SizeAwareConfig::default() };
        assert_eq!(bad.build().unwrap_err().field, "fixed_drop_p");
    }

    #[test]
    fn a_full_buffer_drops_as_overlimit() {
        let mut q = Accounted::new(SizeAwareConfig { limit_pkts: 5, ..quiet() }.build().unwrap(), Rng::new(1, 0));
        for i in 0..8 {
            q.enqueue(data(i), Instant(0));
        }
        assert_eq!(q.len_pkts(), 5);
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 3);
        assert_eq!(q.stats().dropped(DropReason::SizePolicy), 0);
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let bad = |c: SizeAwareConfig| c.build().unwrap_err().field;
        let d = SizeAwareConfig::default;
        assert_eq!(bad(SizeAwareConfig { limit_pkts: 0, ..d() }), "limit_pkts");
        assert_eq!(bad(SizeAwareConfig { w_q: 0.0, ..d() }), "w_q");
        assert_eq!(bad(SizeAwareConfig { max_th_pkts: 20.0, ..d() }), "max_th_pkts");
        assert_eq!(bad(SizeAwareConfig { alpha: 1.0, ..d() }), "alpha");
        assert_eq!(bad(SizeAwareConfig { beta: 1.0, ..d() }), "beta");
        assert_eq!(bad(SizeAwareConfig { update_every_pkts: 0, ..d() }), "update_every_pkts");
        assert_eq!(bad(SizeAwareConfig { t_update_ns: 0, ..d() }), "t_update_ns");
        assert_eq!(bad(SizeAwareConfig { thresholds: 2000, ..d() }), "thresholds");
        assert_eq!(bad(SizeAwareConfig { max_drop_p: 1.5, ..d() }), "max_drop_p");
        assert_eq!(bad(SizeAwareConfig { max_window_pkts: Some(0.5), ..d() }), "max_window_pkts");
        assert_eq!(bad(SizeAwareConfig { flow_table_capacity: 0, ..d() }), "flow_table_capacity");
        assert_eq!(bad(SizeAwareConfig { initial_target_pkts_per_rtt: f64::NAN, ..d() }), "initial_target_pkts_per_rtt");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn accounting_and_bounded_memory_hold(
            limit in 1u32..120,
            capacity in 1u32..64,
            thresholds in 0u32..4,
            n in 1u32..20,
            ops in testkit::ops(600),
        ) {
            // A low target and small N so the curve is non-zero and the target moves.
            let cfg = SizeAwareConfig {
                limit_pkts: limit,
                flow_table_capacity: capacity,
                thresholds,
                update_every_pkts: n,
                m_pkts: 40,
                w_q: 0.2,
                min_th_pkts: 2.0,
                max_th_pkts: 4.0,
                initial_target_pkts_per_rtt: 1.0,
                rtt_an_ns: 10 * MS,
                ..SizeAwareConfig::default()
            };
            let mut q = Accounted::new(cfg.build().unwrap(), Rng::new(9, 0));
            testkit::run_ops(&mut q, &ops, limit as usize, capacity as usize)?;
            prop_assert!(q.inner().cached_curves() <= CURVE_CACHE_ENTRIES);
            let s = q.stats();
            let by_reason: u64 = [DropReason::SizePolicy, DropReason::Overlimit].iter().map(|&r| s.dropped(r)).sum();
            prop_assert_eq!(by_reason, s.total_dropped_pkts());
        }
    }
}
