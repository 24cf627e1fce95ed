//! Class-based isolation of short and long flows: two classes, each with its own buffer and
//! its own weighted share of the link, so short flows compete only with short flows and long
//! flows only with long ones.
//!
//! Source: Matta & Guo, "Differentiated Predictive Fair Service for TCP Flows" (ICNP 2000),
//! `papers/class-isolation-short-long-flows.md`: Section 2.2 (individual control: each class
//! has its own buffer `B_i` and service capacity `C_i`) and Section 4.2 (class-based queueing
//! at the bottleneck makes two pipes, `C_u, B_u` for the short class and `k·C_u, k·B_u` for
//! the long class).
//!
//! Principles: classify each arrival as short or long; each class is a FIFO with tail drop
//! or RED (the [`DropTail`] and [`Red`] disciplines, reused unchanged); the link is shared
//! between the two classes by deficit round robin in bytes with quantum `weight ·
//! quantum_bytes`, which is work-conserving (a class with nothing queued leaves its share
//! to the other) and gives each backlogged class `weight_c / (weight_s + weight_l)` of the
//! link in the long run.
//!
//! Knobs (units in names; defaults in brackets):
//! - `classify` [`dscp`]: `dscp` (the edge marked short flows with `short_dscp`; the
//!   simulator's `[edge] mark = "size_oracle"` does that from the transfer size, an oracle)
//!   or `lifetime` (this queue counts: a flow is short for its first `lifetime_pkts`
//!   packets [32, the paper's lifetime threshold in Table 3] and while less than
//!   `lifetime_ns` [unset = no time limit] has passed since its first packet).
//! - `short_dscp` [10, AF11]: the codepoint that means "short" under `dscp`.
//! - `table_capacity` [4096]: flows remembered by `lifetime` (least recently seen evicted).
//! - `quantum_bytes` [1500]: bytes per unit of weight per round.
//! - `short`, `long`: each `weight` [1] and `queue`, a `droptail` [100 packets] or `red`
//!   discipline config. A RED class's `link_rate_bps` is set to its weighted share of
//!   `link_rate_bps` (its pipe's capacity, for the idle correction and automatic
//!   parameters); `link_rate_bps` [10 Mbit/s] and `link_delay_ns` [10 ms] are set by the
//!   simulator to the link's values.
//!
//! Drops: each class's own reasons (`overlimit` when its buffer is full, `early` for RED).
//! [`ClassIsolation::class_stats`] counts arrivals, drops and service per class.
//!
//! Counters ([`Qdisc::counters`]), per class (`short`, `long`): `arrived`, `dropped`,
//! `served_pkts`, `served_bytes` (totals) and `queued` (packets now, a level).
//!
//! Trade-offs and limits: a flow reclassified from short to long mid-transfer (`lifetime`)
//! may have packets in both queues, and the long queue may send its later packets first
//! (reordering), as the paper's lifetime-based routing also would. Under a flood of new
//! 5-tuples the `lifetime` table evicts the flows not seen for longest, which then restart
//! as short. The weights are fixed (the paper leaves dynamic allocation to future work).

use super::parts::{ShortBy, ShortClassifier};
use super::{Cx, DropTail, DropTailConfig, Qdisc, QdiscCounter, Red, RedConfig};
use crate::error::ConfigError;
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

/// The discipline of one class: tail drop or RED.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClassQueueConfig {
    #[serde(rename = "droptail")]
    DropTail(DropTailConfig),
    Red(RedConfig),
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassConfig {
    /// Share of the link relative to the other class's weight.
    pub weight: u32,
    pub queue: ClassQueueConfig,
}

impl Default for ClassConfig {
    fn default() -> Self {
        ClassConfig { weight: 1, queue: ClassQueueConfig::DropTail(DropTailConfig::default()) }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassIsolationConfig {
    pub classify: ShortBy,
    /// DSCP of short-flow packets (AF11 = 10) under `classify = "dscp"`.
    pub short_dscp: u8,
    /// `lifetime`: a flow is long from its packet `lifetime_pkts + 1` on; `None` = no count limit.
    pub lifetime_pkts: Option<u32>,
    /// `lifetime`: a flow is long from `lifetime_ns` after its first packet; `None` = no time limit.
    pub lifetime_ns: Option<u64>,
    /// Flows remembered by `lifetime`.
    pub table_capacity: u32,
    /// Bytes of service per unit of weight per round robin turn.
    pub quantum_bytes: u32,
    pub short: ClassConfig,
    pub long: ClassConfig,
    /// Rate of the link this queue feeds, bit/s (set by the simulator).
    pub link_rate_bps: u64,
    /// Propagation delay of that link, nanoseconds (set by the simulator).
    pub link_delay_ns: u64,
}

impl Default for ClassIsolationConfig {
    fn default() -> Self {
        ClassIsolationConfig {
            classify: ShortBy::Dscp,
            short_dscp: 10,
            lifetime_pkts: Some(32),
            lifetime_ns: None,
            table_capacity: 4096,
            quantum_bytes: 1500,
            short: ClassConfig::default(),
            long: ClassConfig::default(),
            link_rate_bps: 10_000_000,
            link_delay_ns: 10_000_000,
        }
    }
}

/// Index of the short class; the long class is `1`.
pub const SHORT: usize = 0;
pub const LONG: usize = 1;

impl ClassIsolationConfig {
    pub fn build(&self) -> Result<ClassIsolation, ConfigError> {
        if self.short_dscp > 63 {
            return Err(ConfigError::new("short_dscp", self.short_dscp, "a DSCP value 0 to 63"));
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
        if self.quantum_bytes == 0 {
            return Err(ConfigError::new("quantum_bytes", 0, "at least 1 byte"));
        }
        if self.link_rate_bps == 0 {
            return Err(ConfigError::new("link_rate_bps", 0, "at least 1 bit/s"));
        }
        let total_weight = self.short.weight as u64 + self.long.weight as u64;
        let mut classes = Vec::with_capacity(2);
        for (name, c) in [("short", &self.short), ("long", &self.long)] {
            if !(1..=1_000_000).contains(&c.weight) {
                return Err(ConfigError::new(format!("{name}.weight"), c.weight, "1 to 1000000"));
            }
            let q = match &c.queue {
                ClassQueueConfig::DropTail(d) => ClassQueue::DropTail(d.build()?),
                ClassQueueConfig::Red(r) => {
                    // The class's pipe: its weighted share of the link.
                    let share = (self.link_rate_bps * c.weight as u64 / total_weight).max(1);
                    let r = RedConfig { link_rate_bps: share, link_delay_ns: self.link_delay_ns, ..r.clone() };
                    ClassQueue::Red(r.build()?)
                }
            };
            classes.push(q);
        }
        let [short, long]: [ClassQueue; 2] = classes.try_into().expect("two classes");
        let quantum = [
            self.short.weight as i64 * self.quantum_bytes as i64,
            self.long.weight as i64 * self.quantum_bytes as i64,
        ];
        Ok(ClassIsolation {
            classifier: ShortClassifier::new(self.classify, self.short_dscp, self.lifetime_pkts, self.lifetime_ns,
                self.table_capacity),
            classes: [short, long],
            quantum,
            deficit: [0; 2],
            active: [false; 2],
            order: [SHORT; 2],
            n_active: 0,
            stats: [ClassStats::default(), ClassStats::default()],
        })
    }
}

/// A class's queue, dispatched by `match` (no `dyn` on the hot path).
#[derive(Debug)]
enum ClassQueue {
    DropTail(DropTail),
    Red(Red),
}

impl ClassQueue {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        match self {
            ClassQueue::DropTail(q) => q.enqueue(pkt, cx),
            ClassQueue::Red(q) => q.enqueue(pkt, cx),
        }
    }
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        match self {
            ClassQueue::DropTail(q) => q.dequeue(cx),
            ClassQueue::Red(q) => q.dequeue(cx),
        }
    }
    fn len_pkts(&self) -> usize {
        match self {
            ClassQueue::DropTail(q) => q.len_pkts(),
            ClassQueue::Red(q) => q.len_pkts(),
        }
    }
    fn backlog_bytes(&self) -> u64 {
        match self {
            ClassQueue::DropTail(q) => q.backlog_bytes(),
            ClassQueue::Red(q) => q.backlog_bytes(),
        }
    }
}

/// Counters of one class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassStats {
    pub arrived_pkts: u64,
    pub dropped_pkts: u64,
    pub served_pkts: u64,
    pub served_bytes: u64,
}

#[derive(Debug)]
pub struct ClassIsolation {
    classifier: ShortClassifier,
    classes: [ClassQueue; 2],
    quantum: [i64; 2],
    deficit: [i64; 2],
    active: [bool; 2],
    /// Round robin order of the active classes: `order[..n_active]`.
    order: [usize; 2],
    n_active: usize,
    stats: [ClassStats; 2],
}

impl ClassIsolation {
    /// Per-class counters, indexed by [`SHORT`] and [`LONG`].
    pub fn class_stats(&self) -> &[ClassStats; 2] {
        &self.stats
    }
    /// Packets queued in a class.
    pub fn class_len_pkts(&self, class: usize) -> usize {
        self.classes[class].len_pkts()
    }

    fn deactivate_front(&mut self) {
        self.active[self.order[0]] = false;
        self.order[0] = self.order[1];
        self.n_active -= 1;
    }
}

impl Qdisc for ClassIsolation {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let c = if self.classifier.is_short(&pkt, cx.now) { SHORT } else { LONG };
        let drops_before = cx.drops.len();
        self.stats[c].arrived_pkts += 1;
        self.classes[c].enqueue(pkt, cx);
        self.stats[c].dropped_pkts += (cx.drops.len() - drops_before) as u64;
        if !self.active[c] && self.classes[c].len_pkts() > 0 {
            // A class that becomes backlogged joins the round with a fresh quantum.
            self.active[c] = true;
            self.deficit[c] = self.quantum[c];
            self.order[self.n_active] = c;
            self.n_active += 1;
        }
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        while self.n_active > 0 {
            let c = self.order[0];
            if self.deficit[c] <= 0 {
                // Turn over: the class gets a new quantum and goes to the back.
                self.deficit[c] += self.quantum[c];
                self.order.swap(0, self.n_active - 1);
                continue;
            }
            let Some(pkt) = self.classes[c].dequeue(cx) else {
                self.deactivate_front();
                continue;
            };
            self.deficit[c] -= pkt.len_bytes() as i64;
            self.stats[c].served_pkts += 1;
            self.stats[c].served_bytes += pkt.len_bytes();
            if self.classes[c].len_pkts() == 0 {
                self.deactivate_front();
            }
            return Some(pkt);
        }
        None
    }

    fn len_pkts(&self) -> usize {
        self.classes[SHORT].len_pkts() + self.classes[LONG].len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.classes[SHORT].backlog_bytes() + self.classes[LONG].backlog_bytes()
    }
    fn flow_table_len(&self) -> usize {
        self.classifier.table_len()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        for (c, class) in [(SHORT, "short"), (LONG, "long")] {
            let s = &self.stats[c];
            out.extend(
                [
                    QdiscCounter::total("arrived", s.arrived_pkts),
                    QdiscCounter::total("dropped", s.dropped_pkts),
                    QdiscCounter::total("served_pkts", s.served_pkts),
                    QdiscCounter::total("served_bytes", s.served_bytes),
                    QdiscCounter::level("queued", self.classes[c].len_pkts() as u64),
                ]
                .map(|x| x.of(class)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testkit::{self, pkt};
    use crate::qdisc::{Accounted, RedMode};
    use crate::rng::Rng;
    use crate::stats::DropReason;
    use crate::time::Instant;
    use proptest::prelude::*;

    fn droptail(limit: u32) -> ClassQueueConfig {
        ClassQueueConfig::DropTail(DropTailConfig::packets(limit))
    }

    fn cfg(w_short: u32, w_long: u32, limit: u32) -> ClassIsolationConfig {
        ClassIsolationConfig {
            short: ClassConfig { weight: w_short, queue: droptail(limit) },
            long: ClassConfig { weight: w_long, queue: droptail(limit) },
            ..ClassIsolationConfig::default()
        }
    }

    fn marked(port: u16, len: u16, dscp: u8) -> Packet {
        Packet { dscp, ..pkt(1, 2, port, len) }
    }

    #[test]
    fn shares_under_backlog_follow_the_weights() {
        // Both classes always backlogged with random sizes 40..1500. DRR gives each class
        // `rounds · quantum_c` bytes, give or take one quantum plus one packet (the
        // partial round and the overdraft), so |S_l·q_s − S_s·q_l| ≤ (q_l+M)·q_s + (q_s+M)·q_l.
        for (ws, wl) in [(1u32, 1u32), (1, 3), (1, 8), (2, 5)] {
            let mut q = Accounted::new(cfg(ws, wl, 100_000).build().unwrap(), Rng::new(1, 0));
            let mut rng = Rng::new(7, 0);
            for i in 0..20_000u32 {
                let len = 40 + rng.below_inclusive(1460) as u16;
                q.enqueue(marked(i as u16, len, if i % 2 == 0 { 10 } else { 0 }), Instant(0));
            }
            for _ in 0..10_000 {
                q.dequeue(Instant(0)).unwrap();
            }
            let st = q.inner().class_stats();
            let (ss, sl) = (st[SHORT].served_bytes as f64, st[LONG].served_bytes as f64);
            let (qs, ql, m) = (ws as f64 * 1500.0, wl as f64 * 1500.0, 1500.0);
            let bound = (ql + m) * qs + (qs + m) * ql;
            assert!((sl * qs - ss * ql).abs() <= bound, "weights {ws}:{wl}: short {ss} long {sl}");
            // And the ratio is within 3% of the weights' (the bound is loose after 10 000 packets).
            let ratio = sl / ss;
            assert!((ratio / (wl as f64 / ws as f64) - 1.0).abs() < 0.03, "ratio {ratio} for {ws}:{wl}");
        }
    }

    #[test]
    fn an_idle_class_leaves_the_whole_link_to_the_other() {
        // Weights 1:8, only short packets: every dequeue still returns one (work-conserving).
        let mut q = Accounted::new(cfg(1, 8, 50).build().unwrap(), Rng::new(1, 0));
        for i in 0..50 {
            q.enqueue(marked(i, 1000, 10), Instant(0));
        }
        for _ in 0..50 {
            assert!(q.dequeue(Instant(0)).is_some());
        }
        assert!(q.dequeue(Instant(0)).is_none());
        assert_eq!(q.inner().class_stats()[SHORT].served_pkts, 50);
    }

    #[test]
    fn each_class_has_its_own_buffer() {
        // Short buffer 5, long buffer 20: a long flood cannot take the short class's room.
        let c = ClassIsolationConfig {
            short: ClassConfig { weight: 1, queue: droptail(5) },
            long: ClassConfig { weight: 1, queue: droptail(20) },
            ..ClassIsolationConfig::default()
        };
        let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
        for i in 0..100 {
            q.enqueue(marked(i, 500, 0), Instant(0));
        }
        for i in 0..8 {
            q.enqueue(marked(i, 500, 10), Instant(0));
        }
        assert_eq!((q.inner().class_len_pkts(SHORT), q.inner().class_len_pkts(LONG)), (5, 20));
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 80 + 3);
        let st = q.inner().class_stats();
        assert_eq!((st[SHORT].dropped_pkts, st[LONG].dropped_pkts), (3, 80));
    }

    #[test]
    fn lifetime_reclassifies_after_n_packets() {
        let c = ClassIsolationConfig { classify: ShortBy::Lifetime, lifetime_pkts: Some(32), ..cfg(1, 1, 1000) };
        let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
        for k in 1..=40u64 {
            q.enqueue(pkt(1, 2, 7, 500), Instant(k * 1000));
        }
        // Packets 1..=32 short, 33..=40 long; another flow starts short again.
        q.enqueue(pkt(1, 2, 8, 500), Instant(50_000));
        assert_eq!((q.inner().class_len_pkts(SHORT), q.inner().class_len_pkts(LONG)), (33, 8));
        assert_eq!(q.inner().flow_table_len(), 2);
    }

    #[test]
    fn lifetime_reclassifies_after_t_seconds() {
        // No packet limit, 2 s: first packet at 1 s; ages 0, 1 s, 1.999999999 s are short, 2 s and 8 s long.
        let c = ClassIsolationConfig {
            classify: ShortBy::Lifetime,
            lifetime_pkts: None,
            lifetime_ns: Some(2_000_000_000),
            ..cfg(1, 1, 1000)
        };
        let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
        for t in [1_000_000_000u64, 2_000_000_000, 2_999_999_999, 3_000_000_000, 9_000_000_000] {
            q.enqueue(pkt(1, 2, 7, 500), Instant(t));
        }
        assert_eq!((q.inner().class_len_pkts(SHORT), q.inner().class_len_pkts(LONG)), (3, 2));
    }

    #[test]
    fn red_classes_drop_early_on_their_own_average() {
        // Short class RED with w_q = 1 (average = queue) and thresholds 2/4 packets, not
        // gentle: it holds at most 4; the long DropTail class is not affected.
        let red = RedConfig {
            limit_pkts: Some(100),
            mode: RedMode::Packets,
            min_th_pkts: Some(2.0),
            max_th_pkts: Some(4.0),
            w_q: Some(1.0),
            gentle: false,
            ..RedConfig::default()
        };
        let c = ClassIsolationConfig {
            short: ClassConfig { weight: 1, queue: ClassQueueConfig::Red(red) },
            ..cfg(1, 1, 30)
        };
        let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
        for i in 0..30 {
            q.enqueue(marked(i, 500, 10), Instant(0));
            q.enqueue(marked(i, 500, 0), Instant(0));
        }
        assert!(q.inner().class_len_pkts(SHORT) <= 4);
        assert_eq!(q.inner().class_len_pkts(LONG), 30);
        assert_eq!(q.stats().dropped(DropReason::Early), 30 - q.inner().class_len_pkts(SHORT) as u64);
        assert_eq!(q.stats().dropped(DropReason::Overlimit), 0);
    }

    #[test]
    fn bad_config_names_the_field() {
        let e = ClassIsolationConfig { quantum_bytes: 0, ..Default::default() }.build().unwrap_err();
        assert_eq!(e.field, "quantum_bytes");
        let e = cfg(0, 1, 10).build().unwrap_err();
        assert_eq!(e.field, "short.weight");
        let e = ClassIsolationConfig { classify: ShortBy::Lifetime, lifetime_pkts: None, ..Default::default() }
            .build()
            .unwrap_err();
        assert_eq!(e.field, "lifetime_pkts");
        let e = ClassIsolationConfig { short_dscp: 64, ..Default::default() }.build().unwrap_err();
        assert_eq!(e.field, "short_dscp");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn accounting_and_bounded_memory(ops in testkit::ops(300), lifetime in any::<bool>()) {
            let c = ClassIsolationConfig {
                classify: if lifetime { ShortBy::Lifetime } else { ShortBy::Dscp },
                lifetime_pkts: Some(3),
                table_capacity: 64,
                ..cfg(1, 3, 40)
            };
            let mut q = Accounted::new(c.build().unwrap(), Rng::new(1, 0));
            testkit::run_ops(&mut q, &ops, 80, 64)?;
            let st = q.inner().class_stats();
            let arrived = st[SHORT].arrived_pkts + st[LONG].arrived_pkts;
            prop_assert_eq!(arrived, q.stats().arrived_pkts);
            prop_assert_eq!(st[SHORT].dropped_pkts + st[LONG].dropped_pkts, q.stats().total_dropped_pkts());
            prop_assert_eq!(st[SHORT].served_pkts + st[LONG].served_pkts, q.stats().departed_pkts);
            let counters = q.counters();
            let sum = |name: &str| counters.iter().filter(|c| c.name == name).map(|c| c.value).sum::<u64>();
            prop_assert_eq!(sum("arrived"), q.stats().arrived_pkts);
            prop_assert_eq!(sum("dropped"), q.stats().total_dropped_pkts());
            prop_assert_eq!(sum("served_bytes"), q.stats().departed_bytes);
            prop_assert_eq!(sum("queued"), q.len_pkts() as u64);
        }
    }
}
