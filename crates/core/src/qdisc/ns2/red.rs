//! ns-2 2.35 RED (`queue/red.cc`, defaults from `tcl/lib/ns-default.tcl`), on the knobs of
//! [`crate::qdisc::RedConfig`], whose defaults and automatic parameters are already ns-2's
//! (`thresh_ 0`, `maxthresh_ 0`, `q_weight_ -1`, `linterm_ 10`, `gentle_`, `wait_`,
//! `bytes_` and `queue_in_bytes_` true, `mean_pktsize_ 500`, `targetdelay_ 0.005`).
//!
//! What this variant does as `REDQueue::enque` does and our default RED does not (line
//! numbers are ns-2.35's `red.cc`):
//! - No forced drop on the average (l. 692-695): that test runs only without `use_mark_p_`,
//!   which ns-2 sets. Above `max_th` (2·`max_th` gentle) the drop probability is 1 and goes
//!   through the same `modify_p` spacing, so in byte mode, right after a drop, packets are
//!   accepted until `count_bytes` reaches one mean packet (`count_bytes/mean_pktsize` is 0).
//! - The first arrival above `min_th` is always accepted and restarts the count (l. 696-705),
//!   before any other test.
//! - The buffer test comes last and overrides (l. 714-717): an arrival to a full buffer is a
//!   forced (`overlimit`) drop even when RED had chosen it for an early drop or a mark.
//! - ECN (`setbit_`, our `ecn`): a chosen ECN-capable packet is marked while the
//!   unmodified probability is at most `mark_p_` = 0.1 (l. 561-562), a constant of
//!   ns-default.tcl, not `max_p`.
//! - Counters: RED's (`early`, `pdrop`, `marked`, `prob_drop`, `forced_drop`, see
//!   [`crate::qdisc::red`]); `forced_drop` stays 0, as there is no forced drop here.
//! - Buffer: `limit_` packets waiting (`qlen >= qlim` refuses, l. 714), or in byte mode
//!   `limit_·mean_pktsize_` bytes; ns-2 has no separate byte limit (`limit_bytes` must be
//!   unset).
//!
//! The average, its idle decay (`m = int(ptc·idle)`, l. 651, idle from the moment the link
//! finds the queue empty, l. 420-425) and the probabilities (`calculate_p_new`, `modify_p`)
//! are the RED core's [`crate::aqm::red`], which follows ns-2 for them.

use crate::aqm::red::{red_update_avg, RedParams, RedStats, RedVars};
use crate::error::ConfigError;
use crate::packet::{Ecn, Packet};
use crate::qdisc::red::red_counters;
use crate::qdisc::{Cx, Qdisc, QdiscCounter, RedConfig};
use crate::stats::{DropReason, MarkReason};
use crate::time::Instant;
use std::collections::VecDeque;

/// ns-default.tcl `Queue/RED set mark_p_ 0.1`.
const MARK_P: f64 = 0.1;

impl RedConfig {
    pub fn build_ns2(&self) -> Result<Ns2Red, ConfigError> {
        if let Some(b) = self.limit_bytes {
            return Err(ConfigError::new(
                "limit_bytes",
                b,
                "unset with variant = \"ns2\" (ns-2's buffer is limit_pkts, times mean_pkt_size_bytes in byte mode)",
            ));
        }
        let Some(limit) = self.limit_pkts else {
            return Err(ConfigError::new("limit_pkts", "unset", "at least 1 packet with variant = \"ns2\" (ns-2 limit_)"));
        };
        let params = self.params()?;
        let qlim = if params.byte_mode { f64::from(limit) * params.mean_pkt_size_bytes } else { f64::from(limit) };
        Ok(Ns2Red {
            params,
            vars: RedVars { idle_since: Some(Instant::ZERO), ..RedVars::default() },
            stats: RedStats::default(),
            qlim,
            link_rate_bps: self.link_rate_bps,
            queue: VecDeque::new(),
            backlog_bytes: 0,
        })
    }
}

#[derive(Debug)]
pub struct Ns2Red {
    params: RedParams,
    vars: RedVars,
    stats: RedStats,
    /// ns-2 `qlim`: packets, or bytes in byte mode.
    qlim: f64,
    link_rate_bps: u64,
    queue: VecDeque<Packet>,
    backlog_bytes: u64,
}

impl Ns2Red {
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

/// What `REDQueue::enque` decided before its buffer test.
#[derive(PartialEq)]
enum Choice {
    Keep,
    Mark,
    Drop,
}

impl Qdisc for Ns2Red {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        let p = &self.params;
        let v = &mut self.vars;
        let qlen = if p.byte_mode { self.backlog_bytes as f64 } else { self.queue.len() as f64 };
        red_update_avg(p, v, cx.now, qlen);
        v.count += 1;
        v.count_bytes += pkt.len_bytes();
        let mut choice = Choice::Keep;
        if v.avg >= p.min_th && qlen > 1.0 {
            if !v.above_min {
                v.above_min = true;
                v.count = 1;
                v.count_bytes = pkt.len_bytes();
            } else {
                let p_b = p.p_b(v.avg);
                let p_a = p.p_a(p_b, v.count, v.count_bytes, pkt.len_bytes());
                if cx.rng.uniform() <= p_a {
                    v.count = 0;
                    v.count_bytes = 0;
                    let ect = matches!(pkt.ecn, Ecn::Ect | Ecn::Ce);
                    choice = if p.ecn && ect && p_b <= MARK_P { Choice::Mark } else { Choice::Drop };
                }
            }
        } else {
            v.above_min = false;
        }
        if qlen >= self.qlim {
            v.on_overflow_drop(&mut self.stats);
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        match choice {
            Choice::Drop => {
                self.stats.prob_drop += 1;
                cx.drop(pkt, DropReason::Early);
            }
            Choice::Mark | Choice::Keep => {
                if choice == Choice::Mark {
                    self.stats.prob_mark += 1;
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
    use crate::qdisc::{Accounted, RedMode};
    use crate::rng::Rng;
    use proptest::prelude::*;

    /// ns-2 2.35's own automatic parameters, printed by `ns benches/ns2/queue_params.tcl`
    /// (Debian's ns2 2.35; duplex-link with a RED queue, defaults, values read after
    /// `$ns run` has reset the queue). Columns: rate, delay, thresh_, maxthresh_,
    /// q_weight_, thresh_queue_ (bytes), maxthresh_queue_ (bytes).
    #[allow(clippy::excessive_precision)] // the digits as ns-2 prints them
    const NS2_PRINTED: [(u64, u64, f64, f64, f64, f64, f64); 3] = [
        (1_000_000, 1_000_000, 5.0, 15.0, 0.0039920106560085156, 2500.0, 7500.0),
        (10_000_000, 10_000_000, 6.25, 18.75, 0.00039992001066557759, 3125.0, 9375.0),
        (10_000_000, 50_000_000, 6.25, 18.75, 0.00026451527421467169, 3125.0, 9375.0),
    ];

    #[test]
    fn automatic_parameters_equal_what_ns2_prints() {
        for (rate, delay, th, maxth, w, th_bytes, maxth_bytes) in NS2_PRINTED {
            let cfg = RedConfig { link_rate_bps: rate, link_delay_ns: delay, ..RedConfig::default() };
            let p = cfg.build_ns2().unwrap().red_params().clone();
            assert!((p.min_th - th_bytes).abs() < 1e-9 && (p.max_th - maxth_bytes).abs() < 1e-9, "{rate} {delay}: {p:?}");
            assert!((p.min_th / 500.0 - th).abs() < 1e-12 && (p.max_th / 500.0 - maxth).abs() < 1e-12);
            assert!((p.w_q - w).abs() < 1e-15 * w.max(1.0) + 1e-18, "{rate} {delay}: {} vs {w}", p.w_q);
        }
    }

    fn packet_mode(limit: u32) -> RedConfig {
        RedConfig {
            limit_pkts: Some(limit),
            mode: RedMode::Packets,
            min_th_pkts: Some(2.0),
            max_th_pkts: Some(4.0),
            w_q: Some(1.0),
            ..RedConfig::default()
        }
    }

    #[test]
    fn the_first_arrival_above_min_th_is_kept_even_far_above_the_ramp() {
        // Packet mode, thresholds 2 and 4, w_q = 0.001; the average is 100 (far above
        // 2·max_th = 8) but the previous arrival saw at most one packet (`old` = 0), and two
        // packets wait. ns-2 keeps this arrival and restarts count at 1 (red.cc l. 696-705);
        // our default RED would force-drop it. The next arrival has p_b = 1, count 2 →
        // p_a = 1 (wait): an early drop, not a forced one.
        let cfg = RedConfig { w_q: Some(0.001), ..packet_mode(100) };
        let mut q = cfg.build_ns2().unwrap();
        for i in 0..2u16 {
            q.queue.push_back(pkt(1, 2, i, 500));
            q.backlog_bytes += 500;
        }
        q.vars = RedVars { avg: 100.0, ..RedVars::default() };
        let (mut rng, mut drops, mut marks) = (Rng::new(1, 0), Vec::new(), Default::default());
        let mut cx = Cx { now: Instant(0), rng: &mut rng, drops: &mut drops, marks: &mut marks };
        q.enqueue(pkt(1, 2, 2, 500), &mut cx);
        assert_eq!((q.len_pkts(), q.vars.count), (3, 1));
        q.enqueue(pkt(1, 2, 3, 500), &mut cx);
        assert_eq!(q.len_pkts(), 3);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].1, DropReason::Early);
        assert_eq!((q.stats.prob_drop, q.stats.forced_drop), (1, 0));
        let mut counters = Vec::new();
        q.counters(&mut counters);
        let counters: Vec<(&str, u64)> = counters.iter().map(|c| (c.name, c.value)).collect();
        assert_eq!(counters, [("early", 1), ("pdrop", 0), ("marked", 0), ("prob_drop", 1), ("forced_drop", 0)]);
    }

    #[test]
    fn byte_mode_accepts_small_packets_right_after_a_drop_above_the_ramp() {
        // Byte mode, w_q = 1 (avg = bytes an arrival sees), thresholds 1 and 2 packets (500
        // and 1000 bytes). 1000-byte arrivals see 0 (kept), 1000 (first above min_th:
        // kept), 2000: p_b = 0.1 + 0.9·(2000 − 1000)/1000 = 1, count_bytes 2000 → 4 mean
        // packets → p_a = 1: dropped, count_bytes restarts at 0. Then 40-byte arrivals:
        // count_bytes/500 = 0 while count_bytes < 500 → p_a = 0 (modify_p with wait): 12
        // are kept (480 bytes); the 13th makes 520 → 1 → p_a = 1/(2 − 1) = 1: dropped.
        let cfg = RedConfig {
            limit_pkts: Some(1000),
            min_th_pkts: Some(1.0),
            max_th_pkts: Some(2.0),
            w_q: Some(1.0),
            ..RedConfig::default()
        };
        let mut q = Accounted::new(cfg.build_ns2().unwrap(), Rng::new(3, 0));
        for i in 0..3u16 {
            q.enqueue(pkt(1, 2, i, 1000), Instant(0));
        }
        assert_eq!((q.len_pkts(), q.stats().dropped(DropReason::Early)), (2, 1));
        for i in 0..12u16 {
            q.enqueue(pkt(1, 2, 10 + i, 40), Instant(0));
        }
        assert_eq!((q.len_pkts(), q.stats().dropped(DropReason::Early)), (14, 1));
        q.enqueue(pkt(1, 2, 30, 40), Instant(0));
        assert_eq!((q.len_pkts(), q.stats().dropped(DropReason::Early)), (14, 2));
        // Our default RED force-drops every one of them (avg ≥ 2·max_th).
        let mut d = Accounted::new(cfg.build().unwrap(), Rng::new(3, 0));
        for i in 0..3u16 {
            d.enqueue(pkt(1, 2, i, 1000), Instant(0));
        }
        for i in 0..13u16 {
            d.enqueue(pkt(1, 2, 10 + i, 40), Instant(0));
        }
        assert_eq!(d.len_pkts(), 2);
    }

    #[test]
    fn a_full_buffer_overrides_an_early_drop_as_overlimit() {
        // Packet mode, limit 3, min_th 1 max_th 1.5, w_q 1: every arrival seeing 3 queued is
        // dropped as overlimit whatever RED drew; nothing is ever counted twice.
        let cfg = RedConfig { min_th_pkts: Some(1.0), max_th_pkts: Some(1.5), ..packet_mode(3) };
        let mut q = Accounted::new(cfg.build_ns2().unwrap(), Rng::new(7, 0));
        for i in 0..200u16 {
            let seen = q.len_pkts();
            let early = q.stats().dropped(DropReason::Early);
            q.enqueue(pkt(1, 2, i, 500), Instant(0));
            if seen == 3 {
                assert_eq!(q.last_drops()[0].1, DropReason::Overlimit);
                assert_eq!(q.stats().dropped(DropReason::Early), early);
            }
            if i % 3 == 0 {
                q.dequeue(Instant(0));
            }
        }
        let s = q.inner().red_stats();
        assert_eq!(s.pdrop, q.stats().dropped(DropReason::Overlimit));
        assert_eq!(s.prob_drop, q.stats().dropped(DropReason::Early));
        q.check().unwrap();
    }

    #[test]
    fn rejects_a_byte_limit_naming_the_field() {
        let e = RedConfig { limit_bytes: Some(9000), ..RedConfig::default() }.build_ns2().unwrap_err();
        assert_eq!(e.field, "limit_bytes");
        let e = RedConfig { limit_pkts: None, limit_bytes: None, ..RedConfig::default() }.build_ns2().unwrap_err();
        assert_eq!(e.field, "limit_pkts");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_and_limits_hold(limit in 1u32..80, bytes in any::<bool>(), ecn in any::<bool>(),
                                      ops in testkit::ops(600)) {
            let cfg = RedConfig {
                limit_pkts: Some(limit),
                mode: if bytes { RedMode::Bytes } else { RedMode::Packets },
                min_th_pkts: Some(2.0),
                max_th_pkts: Some(6.0),
                w_q: Some(0.1),
                ecn,
                ..RedConfig::default()
            };
            let mut q = Accounted::new(cfg.build_ns2().unwrap(), Rng::new(9, 0));
            let limit_bytes = u64::from(limit) * 500;
            let max_pkts = if bytes { (limit_bytes / 40 + 1) as usize } else { limit as usize };
            testkit::run_ops(&mut q, &ops, max_pkts, 0)?;
            if bytes {
                prop_assert!(q.backlog_bytes() < limit_bytes + 1500);
            }
            let s = q.inner().red_stats().clone();
            prop_assert_eq!(s.prob_drop, q.stats().dropped(DropReason::Early));
            prop_assert_eq!(s.pdrop, q.stats().dropped(DropReason::Overlimit));
            prop_assert_eq!(s.forced_drop, 0);
        }
    }
}
