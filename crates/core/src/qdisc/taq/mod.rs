//! TAQ: Timeout Aware Queuing.
//!
//! Source: J. Chen, L. Subramanian, J. Iyengar, B. Ford, "TAQ: Enhancing Fairness and
//! Performance Predictability in Small Packet Regimes", EuroSys 2014 (`papers/`
//! taq-timeout-aware-queuing), Sections 3.3 (approximate flow model), 4.1 (next-state
//! prediction), 4.2 (multi-level priority queuing) and 4.3 (admission control). The paper
//! gives the structure but few numbers; every choice of ours is a knob below and is
//! argued in `docs/taq.md`.
//!
//! Principles:
//! - Track every flow with the approximate model of Figure 7 ([`flow_model`]), from
//!   wire-visible packets only: sequence numbers (retransmissions are inferred), flags,
//!   timing, and the reverse direction's ACKs when the box sees them.
//! - Put each arriving packet in one of the queues of Section 4.2 ([`scheduler`]):
//!   retransmissions in Recovery (by the silence their flow comes out of), packets of
//!   flows in their first slow start in NewFlow, of flows dropped more than
//!   `over_penalized_drops` times in this and the last epoch in OverPenalized, of flows
//!   that lost a packet here recently or are below their fair share in BelowFairShare,
//!   the rest in AboveFairShare. Exception (ours, see `docs/taq.md`): while a flow has
//!   packets queued, its arrivals join them in the same queue, so a flow's packets (its
//!   retransmissions included) never overtake one another; new data joins queued
//!   retransmissions in Recovery only while the flow is recovering. With `sparse_share`
//!   (ours), packets without sequence space of flows below their fair share go to a
//!   Sparse queue served ahead of level 2 up to that share, and never to NewFlow.
//! - When the shared buffer of `limit_pkts` overflows, drop the queued packet (the arrival
//!   included) whose loss is predicted to hurt its flow least (Section 4.1: a fast
//!   retransmit before a timeout before a repeated timeout), searching the lowest-priority
//!   queues first and each from its tail. Timeouts are the last resort.
//!   A UDP or ICMP packet (and a pure ACK with `protect_pure_acks`) is not the first
//!   victim for having no TCP state: it goes only when its flow's backlog is the longest
//!   (ours, `docs/taq.md`, "Packets without sequence space").
//! - Fair share: a flow (or, with `fairness = pool`, its flow pool) is below its fair share
//!   when its bytes served, exponentially averaged over `fair_share_window_ns`, are below
//!   the total's average divided by the number of active flows (pools): the fair-queueing
//!   model, measured on the link's actual output so the box need not know the link rate.
//!   Which flows count as active, `active_flows` says ([`ActiveFlows`]).
//! - Admission control ([`admission`], off by default as in the paper's fairness and
//!   predictability experiments): SYNs of new flow pools are refused while the drop rate
//!   is at or above `admission_drop_threshold` or the NewFlow class is full
//!   (`new_flow_limit_conns`), except when `t_wait_policy` grants a pool that waited
//!   `t_wait_ns`; refused SYNs are dropped, or held (`admission_hold_syns`, proxy mode).
//!
//! Knobs and defaults: see [`TaqConfig`]; paper values where it gives one
//! (`fast_retransmit_min_window_pkts` 4 from the model's W ≥ 4 for three dupACKs,
//! `over_penalized_drops` 2: "more than 2 packet drops in an epoch", the admission
//! threshold just under p_thresh = 0.1), otherwise documented choices.
//!
//! Complexity: enqueue and dequeue are O(1) amortised plus `sweep_flows_per_op` epoch
//! roll-overs; an overflow drop predicts at most `drop_search_pkts` packets per queue
//! (8 queues) and removes from the middle of one queue, O(`limit_pkts`); with
//! `reclassify_waiting`, moving a flow's waiting packets to level 2 is O(`limit_pkts`) too.
//! Memory: the flow table (`flow_table_capacity` entries of 216 bytes plus the index), the pool table
//! (`pool_table_capacity` entries of 48 bytes), at most `limit_pkts + 1` queued packets and
//! `admission_hold_syns` held SYNs.
//! [`Taq::taq_snapshot`] is read-only and O(flows).
//!
//! Drops: buffer overflow drops are `overlimit` (whichever packet TAQ chose); refused
//! SYNs are `admission` (in proxy mode: a retry of a held SYN, or a full hold FIFO).
//!
//! Counters ([`Qdisc::counters`], O(1) to read, unlike the snapshot): per queue (the class:
//! [`TaqQueue::name`]) `enqueued`, `dequeued`, `dropped` (totals; a packet promoted while
//! it waits leaves from another queue than it entered, so only the sums over queues
//! balance) and `queued` (packets now, a level); per predicted next state of the dropped
//! packet's flow (the class: [`NextState::name`]) `dropped_predicted`; and
//! `retransmissions_seen`, `promoted_pkts`, `syns_refused` (admission refusals, held ones
//! included), `pools_admitted`, `pools_admitted_after_wait`, `syns_released`,
//! `syns_hold_full`, `flow_evictions` (totals), `syns_held`, `new_flow_conns`,
//! `flows_tracked`, `pools_tracked` (levels). The flow model's per-state counts need every
//! flow rolled to a time: they are the `queue_states` table's, from the snapshot.
//!
//! Limits: flows are keyed by exact 5-tuple in a table that must be larger than the buffer
//! (so a flow with packets queued is never evicted); evicted idle flows lose their
//! history (their next packet starts them in Normal). Connections opened from the reverse
//! side get their epoch from data/ACK timing only (the handshake sample needs the SYN in
//! the forward direction). Proportional fairness by RTT (the paper's footnote 3) is not
//! implemented.

pub mod admission;
pub mod flow_model;
pub mod scheduler;

pub use admission::{PoolLifetime, TWaitPolicy};
pub use flow_model::{EpochCounts, NextState, TaqState};
pub use scheduler::TaqQueue;

use super::parts::hash::flow_hash;
use super::parts::{BoundedTable, Slot, NIL};
use super::{Cx, Qdisc, QdiscCounter};
use crate::error::ConfigError;
use crate::packet::{FlowKey, Packet};
use crate::stats::DropReason;
use crate::time::Instant;
use admission::{Admission, Verdict};
use flow_model::FlowModel;
use scheduler::{Caps, Queued, Scheduler};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// IP protocol number of TCP: only its packets can carry sequence space.
const PROTO_TCP: u8 = 6;

/// Whose share BelowFairShare/AboveFairShare compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FairnessUnit {
    /// Fair queueing across flows (the paper's evaluated model).
    #[default]
    Flow,
    /// Fair queueing across flow pools (Section 4.3's option), flows outside any pool
    /// counted as their own.
    Pool,
}

/// Which flows count in the fair share's divisor: the served bytes of the last
/// `fair_share_window_ns` divided among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActiveFlows {
    /// Flows in a non-silent state (the paper's "active flows", read literally).
    NonSilent,
    /// Also flows with packets queued here: their window waits in this queue, so they
    /// send nothing new and the model may see them silent.
    NonSilentOrQueued,
    /// Also flows with a packet here within the last `fair_share_window_ns`: the same
    /// window as the served bytes being divided, which include theirs.
    #[default]
    SeenInWindow,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TaqConfig {
    /// Shared buffer, packets (ns-2's default queue limit, one RTT at 1 Mbit/s, 200 ms and
    /// 500-byte packets in the paper's set-up).
    pub limit_pkts: u32,
    /// Flows tracked; must exceed `limit_pkts` so that flows with queued packets are never
    /// evicted.
    pub flow_table_capacity: u32,
    /// Flow pools tracked (Section 4.3).
    pub pool_table_capacity: u32,
    /// Epoch before the first RTT sample, ns (200 ms: the paper's propagation RTT).
    pub initial_epoch_ns: u64,
    /// Bounds on the epoch estimate, ns.
    pub min_epoch_ns: u64,
    pub max_epoch_ns: u64,
    /// Weight of a new RTT sample in the epoch's moving average (RFC 6298's alpha, 1/8).
    pub epoch_gain: f64,
    /// One-way estimation: a packet after a pause of at least this fraction of an epoch
    /// starts a burst.
    pub burst_gap_fraction: f64,
    /// Slow start continues while new packets per epoch grow by at least this factor.
    pub slow_start_growth: f64,
    /// A timeout silence longer than this many epochs is an extended silence (the model's
    /// first backed-off timeout waits 3 epochs).
    pub extended_silence_epochs: u32,
    /// Smallest window (new packets per epoch) that can return three duplicate ACKs
    /// (the idealized model: no fast retransmit below 4).
    pub fast_retransmit_min_window_pkts: u32,
    /// A flow with more drops than this in the current and previous epoch is
    /// OverPenalized ("more than 2 packet drops in an epoch").
    pub over_penalized_drops: u32,
    /// Most of the link's bytes Recovery may take while other queues wait.
    pub recovery_share: f64,
    /// Most of the link's bytes NewFlow may take while the other level-2 queues wait
    /// (1 = no cap); with `new_flow_cap_level_3`, also while AboveFairShare waits.
    pub new_flow_share: f64,
    /// NewFlow's cap holds against level 3 too. Off (the paper: level 3 is strictly lower
    /// than level 2), a stream of short connections that never leave slow start (a fetch
    /// loop) rides NewFlow and leaves an AboveFairShare flow only what it does not take
    /// (docs/taq.md, "A stream of new flows").
    pub new_flow_cap_level_3: bool,
    /// Ours, 0 = off (the paper has no such class; docs/taq.md, "Sparse packets"): packets
    /// without sequence space (UDP, ICMP, and pure ACKs with `protect_pure_acks`) of flows
    /// below their fair share go to the Sparse queue, served right after Recovery while it
    /// has sent at most this share of the link's bytes; those of flows above it go to
    /// AboveFairShare. Such packets never ride NewFlow: a connection's pure-ACK direction
    /// never leaves slow start in the flow model.
    pub sparse_share: f64,
    /// Credit a capped queue may save up, bytes.
    pub cap_burst_bytes: u32,
    pub fairness: FairnessUnit,
    /// Time constant of the served-bytes averages behind the fair-share test, ns.
    pub fair_share_window_ns: u64,
    /// Packets examined per queue, from its tail, when choosing what to drop.
    pub drop_search_pkts: u32,
    /// Ours, off by default (docs/taq.md, "Starving in AboveFairShare"): packets waiting in
    /// AboveFairShare move to level 2 when their flow falls below its fair share or loses
    /// a packet here, checked as the sweep passes the flow. Classes are otherwise decided
    /// at arrival, and a flow starving in level 3 has no arrivals.
    pub reclassify_waiting: bool,
    /// Which flows count in the fair share's divisor (docs/taq.md, "Who counts in the fair
    /// share").
    pub active_flows: ActiveFlows,
    /// Flows whose epochs are rolled forward per enqueue or dequeue, so silent flows
    /// change state (and leave the active count behind the fair share) without a packet
    /// of theirs.
    pub sweep_flows_per_op: u32,
    /// Section 4.3 admission control of new flow pools.
    pub admission_control: bool,
    /// New pools are admitted while the drop rate is below this (p_thresh = 0.1, "slightly
    /// smaller").
    pub admission_drop_threshold: f64,
    /// Window over which the drop rate is measured, ns.
    pub drop_rate_window_ns: u64,
    /// Flows of one initiator opened within this time of the pool's first admitted SYN join
    /// the pool, ns (with `pool_lifetime = while_active`: within this time of its last SYN).
    pub pool_window_ns: u64,
    /// How long an admitted pool admits its initiator's new connections.
    pub pool_lifetime: PoolLifetime,
    /// `while_active`: bound on a pool's life from its first admitted SYN, ns.
    pub pool_max_lifetime_ns: u64,
    /// A pool refused for this long may be admitted whatever the drop rate, ns ("a few
    /// seconds", less than the SYN timeout cycle); which pools, `t_wait_policy` says.
    pub t_wait_ns: u64,
    pub t_wait_policy: TWaitPolicy,
    /// With admission control: a new pool is admitted only while fewer connections than
    /// this are in the NewFlow class (first slow start, not silent); 0 = no limit.
    pub new_flow_limit_conns: u32,
    /// Before the first drop-rate window completes, judge new pools on the drops seen so far
    /// in it, not on a rate of 0.
    pub conservative_start: bool,
    /// Rank the loss of a first SYN with repeated timeouts (a SYN timeout is 1 s or more,
    /// longer than a data RTO) instead of with timeouts, when choosing what to drop.
    pub protect_first_syn: bool,
    /// Pure TCP ACKs join UDP and ICMP under the longest-backlog rule of `drop_one`
    /// instead of being the first victims (docs/taq.md, "Packets without sequence
    /// space"). Off by default: on, it moves the pinned quick run of Figure 10.
    pub protect_pure_acks: bool,
    /// Proxy mode: refused SYNs are held in a FIFO of this many packets instead of being
    /// dropped, and released when their pool is admitted; 0 = off (drop them).
    pub admission_hold_syns: u32,
}

impl Default for TaqConfig {
    fn default() -> Self {
        const MS: u64 = 1_000_000;
        TaqConfig {
            limit_pkts: 50,
            flow_table_capacity: 4096,
            pool_table_capacity: 8192,
            initial_epoch_ns: 200 * MS,
            min_epoch_ns: MS,
            max_epoch_ns: 3_000 * MS,
            epoch_gain: 0.125,
            burst_gap_fraction: 0.5,
            slow_start_growth: 1.5,
            extended_silence_epochs: 3,
            fast_retransmit_min_window_pkts: 4,
            over_penalized_drops: 2,
            recovery_share: 0.5,
            new_flow_share: 0.25,
            new_flow_cap_level_3: false,
            sparse_share: 0.0,
            cap_burst_bytes: 3000,
            fairness: FairnessUnit::Flow,
            fair_share_window_ns: 5_000 * MS,
            drop_search_pkts: 64,
            reclassify_waiting: false,
            active_flows: ActiveFlows::SeenInWindow,
            sweep_flows_per_op: 2,
            admission_control: false,
            admission_drop_threshold: 0.09,
            drop_rate_window_ns: 1_000 * MS,
            pool_window_ns: 3_000 * MS,
            pool_lifetime: PoolLifetime::Window,
            pool_max_lifetime_ns: 30_000 * MS,
            t_wait_ns: 3_000 * MS,
            t_wait_policy: TWaitPolicy::OnePoolFifo,
            new_flow_limit_conns: 12,
            conservative_start: true,
            protect_first_syn: false,
            protect_pure_acks: false,
            admission_hold_syns: 0,
        }
    }
}

fn fraction(field: &str, v: f64, open_zero: bool) -> Result<(), ConfigError> {
    let ok = v.is_finite() && v <= 1.0 && if open_zero { v > 0.0 } else { v >= 0.0 };
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, v, if open_zero { "a fraction in (0, 1]" } else { "a fraction in [0, 1]" }))
    }
}

impl TaqConfig {
    /// Does the flow count in the fair share's divisor at `now`?
    fn is_active(&self, m: &FlowModel, now: Instant) -> bool {
        match self.active_flows {
            ActiveFlows::NonSilent => !m.state.is_silent(),
            ActiveFlows::NonSilentOrQueued => !m.state.is_silent() || m.queued_pkts > 0,
            ActiveFlows::SeenInWindow => {
                !m.state.is_silent()
                    || m.queued_pkts > 0
                    || now.saturating_since(m.last_pkt_at()).as_nanos() < self.fair_share_window_ns
            }
        }
    }

    pub fn build(&self) -> Result<Taq, ConfigError> {
        let c = self;
        if c.limit_pkts == 0 || c.limit_pkts > 1 << 20 {
            return Err(ConfigError::new("limit_pkts", c.limit_pkts, "1 to 1048576 packets"));
        }
        if c.flow_table_capacity <= c.limit_pkts || c.flow_table_capacity > 1 << 24 {
            return Err(ConfigError::new(
                "flow_table_capacity",
                c.flow_table_capacity,
                format!("more than limit_pkts ({}) and at most 16777216 entries", c.limit_pkts),
            ));
        }
        if c.pool_table_capacity == 0 || c.pool_table_capacity > 1 << 24 {
            return Err(ConfigError::new("pool_table_capacity", c.pool_table_capacity, "1 to 16777216 entries"));
        }
        if c.min_epoch_ns == 0 {
            return Err(ConfigError::new("min_epoch_ns", 0, "at least 1 ns"));
        }
        if c.max_epoch_ns < c.min_epoch_ns {
            return Err(ConfigError::new("max_epoch_ns", c.max_epoch_ns, format!("at least min_epoch_ns ({})", c.min_epoch_ns)));
        }
        if c.initial_epoch_ns < c.min_epoch_ns || c.initial_epoch_ns > c.max_epoch_ns {
            return Err(ConfigError::new("initial_epoch_ns", c.initial_epoch_ns, "between min_epoch_ns and max_epoch_ns"));
        }
        fraction("epoch_gain", c.epoch_gain, true)?;
        fraction("burst_gap_fraction", c.burst_gap_fraction, true)?;
        if !(c.slow_start_growth.is_finite() && c.slow_start_growth > 1.0) {
            return Err(ConfigError::new("slow_start_growth", c.slow_start_growth, "a factor above 1"));
        }
        if c.extended_silence_epochs == 0 || c.extended_silence_epochs > 32 {
            return Err(ConfigError::new("extended_silence_epochs", c.extended_silence_epochs, "1 to 32 epochs"));
        }
        if c.fast_retransmit_min_window_pkts == 0 {
            return Err(ConfigError::new("fast_retransmit_min_window_pkts", 0, "at least 1 packet"));
        }
        fraction("recovery_share", c.recovery_share, true)?;
        fraction("new_flow_share", c.new_flow_share, true)?;
        fraction("sparse_share", c.sparse_share, false)?;
        if c.cap_burst_bytes == 0 {
            return Err(ConfigError::new("cap_burst_bytes", 0, "at least 1 byte"));
        }
        if c.fair_share_window_ns == 0 {
            return Err(ConfigError::new("fair_share_window_ns", 0, "at least 1 ns"));
        }
        if c.drop_search_pkts == 0 {
            return Err(ConfigError::new("drop_search_pkts", 0, "at least 1 packet"));
        }
        fraction("admission_drop_threshold", c.admission_drop_threshold, true)?;
        for (f, v) in [("drop_rate_window_ns", c.drop_rate_window_ns), ("pool_window_ns", c.pool_window_ns)] {
            if v == 0 {
                return Err(ConfigError::new(f, 0, "at least 1 ns"));
            }
        }
        if c.pool_max_lifetime_ns < c.pool_window_ns {
            return Err(ConfigError::new(
                "pool_max_lifetime_ns",
                c.pool_max_lifetime_ns,
                format!("at least pool_window_ns ({})", c.pool_window_ns),
            ));
        }
        if c.admission_hold_syns > 1 << 16 {
            return Err(ConfigError::new("admission_hold_syns", c.admission_hold_syns, "0 (off) to 65536 packets"));
        }
        Ok(Taq {
            cfg: c.clone(),
            table: BoundedTable::new(c.flow_table_capacity),
            flows: Vec::new(),
            sched: Scheduler::new(Caps {
                recovery_share: c.recovery_share,
                new_flow_share: c.new_flow_share,
                new_flow_cap_level_3: c.new_flow_cap_level_3,
                sparse_share: c.sparse_share,
                burst_bytes: c.cap_burst_bytes,
            }),
            admission: Admission::new(c.pool_table_capacity),
            held: VecDeque::new(),
            held_bytes: 0,
            syns_released: 0,
            syns_hold_full: 0,
            new_flows: 0,
            active_flows: 0,
            active_pools: 0,
            total_served: Decayed::default(),
            sweep_cursor: 0,
            salt: None,
            enqueued_by_queue: [0; TaqQueue::COUNT],
            dequeued_by_queue: [0; TaqQueue::COUNT],
            dropped_by_queue: [0; TaqQueue::COUNT],
            drops_by_prediction: [0; NextState::COUNT],
            retx_seen: 0,
            promoted_pkts: 0,
        })
    }
}

/// Bytes averaged with an exponential kernel of time constant τ: `acc(now)` decays as
/// `exp(−Δt/τ)` and `acc/τ` is the recent rate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Decayed {
    acc: f64,
    at: Instant,
}

impl Decayed {
    pub fn value(&self, now: Instant, tau_ns: u64) -> f64 {
        let dt = now.saturating_since(self.at).as_nanos() as f64;
        self.acc * (-dt / tau_ns as f64).exp()
    }
    pub fn add(&mut self, now: Instant, bytes: u64, tau_ns: u64) {
        self.acc = self.value(now, tau_ns) + bytes as f64;
        self.at = now;
    }
}

#[derive(Debug, Clone)]
struct Flow {
    model: FlowModel,
    /// Pool slot, or `NIL` when the flow has none (no SYN seen, or the pool table was full).
    pool: u32,
    served: Decayed,
    /// The queue holding the flow's packets while it has any (see `choose_queue`).
    queue: TaqQueue,
    /// Counted in `active_flows` (and its pool's); brought up to date by `count_transition`.
    counted: bool,
    /// Bytes of the flow's queued packets: the backlog `drop_one` compares for packets
    /// without sequence space (in bytes, so a flow of small datagrams is not taken for the
    /// longest because it has more packets queued than a TCP flow of full-size segments).
    queued_bytes: u64,
}

/// What the recorder can read: flows by state, queue occupancy and per-queue counters.
#[derive(Debug, Clone, PartialEq)]
pub struct TaqSnapshot {
    /// Tracked flows per [`TaqState`] (indexed by `as usize`), after rolling every flow's
    /// epochs to the snapshot time.
    pub flows_by_state: [u32; TaqState::COUNT],
    /// Packets queued now per [`TaqQueue`].
    pub queue_pkts: [u32; TaqQueue::COUNT],
    /// Since the start, per queue: packets put in it, sent from it, dropped from it.
    pub enqueued_by_queue: [u64; TaqQueue::COUNT],
    pub dequeued_by_queue: [u64; TaqQueue::COUNT],
    pub dropped_by_queue: [u64; TaqQueue::COUNT],
    /// Overflow drops per predicted next state ([`NextState`] as index).
    pub drops_by_prediction: [u64; NextState::COUNT],
    /// Arrivals inferred to be retransmissions.
    pub retransmissions_seen: u64,
    /// Packets moved from AboveFairShare to level 2 while they waited, because their flow
    /// fell below its fair share or lost a packet here (with `reclassify_waiting`).
    pub promoted_pkts: u64,
    pub syns_refused: u64,
    pub pools_admitted: u64,
    pub pools_admitted_after_wait: u64,
    /// Proxy mode: SYNs held now, released to their pools since the start, and refused
    /// SYNs dropped because the hold FIFO was full (counted in `syns_refused` too).
    pub syns_held: u32,
    pub syns_released: u64,
    pub syns_hold_full: u64,
    /// Connections in the NewFlow class (first slow start, not silent).
    pub new_flow_conns: u32,
    /// Drop rate of the last complete window (admission control's measure).
    pub drop_rate: f64,
    /// Current fair share per active flow (or pool), bits per second.
    pub fair_share_bps: f64,
    /// Flows counted in the fair share's divisor (`TaqConfig::active_flows`), as rolled to
    /// the snapshot time.
    pub active_flows: u32,
    /// Pools with an active flow (as of the flows' last roll).
    pub active_pools: u32,
    pub flows_tracked: u32,
    /// Tracked flows whose reverse direction (ACKs) the box has seen.
    pub two_way_flows: u32,
    /// Mean epoch (perceived RTT) over tracked flows with an RTT sample, ns (0 if none).
    pub mean_epoch_ns: u64,
    pub pools_tracked: u32,
    pub flow_evictions: u64,
}

#[derive(Debug)]
pub struct Taq {
    cfg: TaqConfig,
    table: BoundedTable<FlowKey>,
    flows: Vec<Flow>,
    sched: Scheduler,
    admission: Admission,
    /// Proxy mode: refused SYNs in arrival order, with their pool slots; counted in the
    /// backlog (`len_pkts`, `backlog_bytes`) and bounded by `admission_hold_syns`.
    held: VecDeque<(Packet, u32)>,
    held_bytes: u64,
    syns_released: u64,
    syns_hold_full: u64,
    /// Tracked flows in the NewFlow class (first slow start, not silent).
    new_flows: u32,
    active_flows: u32,
    active_pools: u32,
    total_served: Decayed,
    sweep_cursor: usize,
    salt: Option<u64>,
    enqueued_by_queue: [u64; TaqQueue::COUNT],
    dequeued_by_queue: [u64; TaqQueue::COUNT],
    dropped_by_queue: [u64; TaqQueue::COUNT],
    drops_by_prediction: [u64; NextState::COUNT],
    retx_seen: u64,
    promoted_pkts: u64,
}

impl Taq {
    pub fn config(&self) -> &TaqConfig {
        &self.cfg
    }

    /// The model's view of a flow (forward 5-tuple), if tracked.
    pub fn flow_state(&self, key: &FlowKey) -> Option<&FlowModel> {
        self.table.get(key).map(|i| &self.flows[i as usize].model)
    }

    /// Arrivals inferred to be retransmissions since the start (cheap: no snapshot).
    pub fn retransmissions_seen(&self) -> u64 {
        self.retx_seen
    }

    /// Per-state flow counts and per-queue counters, as if every flow were rolled to `now`.
    /// Read-only: rolling the flows themselves would move their epoch boundaries, so
    /// observing a run would change it.
    pub fn taq_snapshot(&self, now: Instant) -> TaqSnapshot {
        let mut flows_by_state = [0u32; TaqState::COUNT];
        let mut active_flows = 0;
        for f in &self.flows {
            let mut m = f.model.clone();
            m.roll(now, &self.cfg);
            flows_by_state[m.state as usize] += 1;
            active_flows += self.cfg.is_active(&m, now) as u32;
        }
        let fair = self.fair_share_bytes(now) * 8e9 / self.cfg.fair_share_window_ns as f64;
        let measured: Vec<u64> = self.flows.iter().filter(|f| f.model.epoch_measured).map(|f| f.model.epoch_ns).collect();
        let mean_epoch_ns = if measured.is_empty() { 0 } else { measured.iter().sum::<u64>() / measured.len() as u64 };
        let mut queue_pkts = [0; TaqQueue::COUNT];
        for q in TaqQueue::ALL {
            queue_pkts[q as usize] = self.sched.queue_len(q) as u32;
        }
        TaqSnapshot {
            flows_by_state,
            queue_pkts,
            enqueued_by_queue: self.enqueued_by_queue,
            dequeued_by_queue: self.dequeued_by_queue,
            dropped_by_queue: self.dropped_by_queue,
            drops_by_prediction: self.drops_by_prediction,
            retransmissions_seen: self.retx_seen,
            promoted_pkts: self.promoted_pkts,
            syns_refused: self.admission.syns_refused,
            pools_admitted: self.admission.pools_admitted,
            pools_admitted_after_wait: self.admission.pools_admitted_after_wait,
            syns_held: self.held.len() as u32,
            syns_released: self.syns_released,
            syns_hold_full: self.syns_hold_full,
            new_flow_conns: self.new_flows,
            drop_rate: self.admission.drop_rate.peek(now, self.cfg.drop_rate_window_ns),
            fair_share_bps: fair,
            active_flows,
            active_pools: self.active_pools,
            flows_tracked: self.table.len() as u32,
            two_way_flows: self.flows.iter().filter(|f| f.model.two_way).count() as u32,
            mean_epoch_ns,
            pools_tracked: self.admission.len() as u32,
            flow_evictions: self.table.evictions(),
        }
    }

    /// The served-bytes average of one fair share (flow or pool).
    fn fair_share_bytes(&self, now: Instant) -> f64 {
        let n = match self.cfg.fairness {
            FairnessUnit::Flow => self.active_flows,
            FairnessUnit::Pool => self.active_pools,
        };
        self.total_served.value(now, self.cfg.fair_share_window_ns) / n.max(1) as f64
    }

    fn below_fair_share(&self, slot: u32, now: Instant) -> bool {
        let tau = self.cfg.fair_share_window_ns;
        let f = &self.flows[slot as usize];
        let total = self.total_served.value(now, tau);
        let (mine, n) = match (self.cfg.fairness, f.pool) {
            (FairnessUnit::Pool, p) if p != NIL => (self.admission.pools[p as usize].served.value(now, tau), self.active_pools),
            _ => (f.served.value(now, tau), self.active_flows),
        };
        mine == 0.0 || mine * (n.max(1) as f64) < total
    }

    /// Is the flow in the NewFlow class? (A count depends on it.)
    fn is_new(&self, slot: u32) -> bool {
        let m = &self.flows[slot as usize].model;
        m.is_new && !m.state.is_silent()
    }

    /// Keep the active flow, pool and new-connection counts in step with a flow's state,
    /// queued packets and time of its last packet.
    fn count_transition(&mut self, slot: u32, was_new: bool, now: Instant) {
        let is_active = self.cfg.is_active(&self.flows[slot as usize].model, now);
        if self.flows[slot as usize].counted != is_active {
            self.set_active(slot, is_active);
        }
        let is_new = self.is_new(slot);
        if was_new != is_new {
            if is_new {
                self.new_flows += 1;
            } else {
                self.new_flows -= 1;
            }
        }
    }

    fn set_active(&mut self, slot: u32, active: bool) {
        self.flows[slot as usize].counted = active;
        let pool = self.flows[slot as usize].pool;
        if active {
            self.active_flows += 1;
        } else {
            self.active_flows -= 1;
        }
        if pool != NIL {
            let p = &mut self.admission.pools[pool as usize];
            if active {
                p.active_flows += 1;
                self.active_pools += (p.active_flows == 1) as u32;
            } else {
                p.active_flows -= 1;
                self.active_pools -= (p.active_flows == 0) as u32;
            }
        }
    }

    fn roll(&mut self, slot: u32, now: Instant) {
        let was_new = self.is_new(slot);
        self.flows[slot as usize].model.roll(now, &self.cfg);
        self.count_transition(slot, was_new, now);
    }

    fn sweep(&mut self, now: Instant) {
        for _ in 0..self.cfg.sweep_flows_per_op {
            if self.flows.is_empty() {
                return;
            }
            if self.sweep_cursor >= self.flows.len() {
                self.sweep_cursor = 0;
            }
            let slot = self.sweep_cursor as u32;
            self.roll(slot, now);
            self.reclassify_waiting(slot, now);
            self.sweep_cursor += 1;
        }
    }

    /// `reclassify_waiting`: a flow whose packets wait in AboveFairShare but that is no
    /// longer above its share (or has lost a packet here since) takes them to its level-2
    /// queue. Without it they wait for all of level 2, which the queue-order rule can keep
    /// busy for longer than the flow's retransmission timer.
    fn reclassify_waiting(&mut self, slot: u32, now: Instant) {
        let f = &self.flows[slot as usize];
        if !self.cfg.reclassify_waiting || f.model.queued_pkts == 0 || f.queue != TaqQueue::AboveFairShare {
            return;
        }
        let class = self.class_of(slot, false, now);
        if class != TaqQueue::AboveFairShare {
            self.promoted_pkts += self.sched.promote(slot, TaqQueue::AboveFairShare, class) as u64;
            self.flows[slot as usize].queue = class;
        }
    }

    /// The flow's slot, creating (or recycling) it for a new 5-tuple.
    fn flow_slot(&mut self, pkt: &Packet, pool: u32, now: Instant, cx: &mut Cx) -> u32 {
        let salt = *self.salt.get_or_insert_with(|| cx.rng.next_u64());
        let slot = self.table.lookup(pkt.flow, flow_hash(&pkt.flow, salt));
        match slot {
            Slot::Existing(i) => i,
            // Unreachable while flow_table_capacity > limit_pkts (validated): a busy flow
            // has a packet queued. Kept as sharing the slot's model rather than a panic.
            Slot::Shared(i) => i,
            Slot::New(i) => {
                if (i as usize) < self.flows.len() {
                    self.forget(i);
                }
                let flow = Flow {
                    model: FlowModel::new(pkt, now, &self.cfg),
                    pool,
                    served: Decayed::default(),
                    queue: TaqQueue::AboveFairShare,
                    counted: false,
                    queued_bytes: 0,
                };
                if (i as usize) < self.flows.len() {
                    self.flows[i as usize] = flow;
                } else {
                    self.flows.push(flow);
                }
                if pool != NIL {
                    self.admission.add_flow(pool);
                }
                self.set_active(i, true);
                self.new_flows += self.flows[i as usize].model.is_new as u32;
                i
            }
        }
    }

    /// Remove an evicted flow's contributions to the counts.
    fn forget(&mut self, i: u32) {
        debug_assert_eq!(self.flows[i as usize].model.queued_pkts, 0, "only idle flows are evicted");
        if self.flows[i as usize].counted {
            self.set_active(i, false);
        }
        self.new_flows -= self.is_new(i) as u32;
        let pool = self.flows[i as usize].pool;
        if pool != NIL {
            self.admission.remove_flow(pool);
        }
    }

    fn choose_queue(&self, slot: u32, retx: bool, pkt: &Packet, now: Instant) -> TaqQueue {
        let f = &self.flows[slot as usize];
        let m = &f.model;
        let recovering = matches!(m.state, TaqState::ExplicitRecovery | TaqState::TimeoutRecovery);
        let joins_own = match f.queue {
            q if q.is_recovery() => retx || recovering,
            // Sparse holds packets without sequence space only: data joining a flow's queued
            // ACK there would keep the flow's whole backlog at Sparse's priority for as long as
            // it never drains (issue 41's deployed upload did, and pings waited 100 ms behind
            // it). The data goes to its class instead; Sparse is served before it anyway.
            TaqQueue::Sparse => self.has_no_tcp_state(pkt),
            _ => true,
        };
        if m.queued_pkts > 0 && joins_own {
            // Never let a packet overtake its own flow's queued packets. A retransmission
            // that jumps ahead of queued originals draws a partial ACK, and NewReno then
            // "retransmits" each queued packet in turn; reordered new data draws duplicate
            // ACKs and a spurious fast retransmit (docs/taq.md, "Deviations"). But the
            // Recovery queue holds "only retransmitted packets": new data joins a flow's
            // queued retransmissions only while the flow is recovering, or a flow that
            // never drains its queue would send all its data at Recovery's priority.
            // With `reclassify_waiting`, packets waiting in AboveFairShare follow their
            // flow into level 2 when it falls below its share.
            return f.queue;
        }
        if self.cfg.sparse_share > 0.0 && self.has_no_tcp_state(pkt) {
            return if self.below_fair_share(slot, now) { TaqQueue::Sparse } else { TaqQueue::AboveFairShare };
        }
        self.class_of(slot, retx && !pkt.flags.syn(), now)
    }

    /// A packet without sequence space whose loss TAQ does not predict: UDP, ICMP, and a
    /// pure ACK with `protect_pure_acks`.
    fn has_no_tcp_state(&self, pkt: &Packet) -> bool {
        pkt.seq_len() == 0 && (pkt.flow.proto != PROTO_TCP || self.cfg.protect_pure_acks)
    }

    /// Section 4.2's class of a packet of the flow (a retransmission if `retx`).
    fn class_of(&self, slot: u32, retx: bool, now: Instant) -> TaqQueue {
        let m = &self.flows[slot as usize].model;
        if retx {
            return match m.recovering_from {
                Some(TaqState::ExtendedSilence) => TaqQueue::RecoveryExtended,
                Some(_) => TaqQueue::RecoverySilence,
                None => TaqQueue::RecoveryFirst,
            };
        }
        if m.is_new {
            return TaqQueue::NewFlow;
        }
        let recent = m.recent_losses();
        if recent > self.cfg.over_penalized_drops {
            TaqQueue::OverPenalized
        } else if recent > 0 || self.below_fair_share(slot, now) {
            // Section 4.1: flows that lost packets here in this or the last epoch get
            // priority for the rest of their window.
            TaqQueue::BelowFairShare
        } else {
            TaqQueue::AboveFairShare
        }
    }

    /// Drop the queued packet whose loss is predicted to hurt its flow least. A packet
    /// without sequence space (UDP, ICMP, and a pure ACK with `protect_pure_acks`) has no
    /// TCP state to spare, but its "unaffected" prediction would make every such packet
    /// the first victim, so it only goes when its flow's backlog in bytes is longer than that of
    /// every flow with a data candidate (a flood, the longest-queue victim of fair
    /// queueing) or when no data packet is a candidate. Otherwise the prediction rule
    /// chooses among data packets.
    fn drop_one(&mut self, cx: &mut Cx) {
        let mut best: Option<(NextState, TaqQueue, usize)> = None;
        let mut most_data_backlog_bytes = 0;
        let mut seqless: Option<(u64, TaqQueue, usize)> = None;
        'search: for q in TaqQueue::DROP_ORDER {
            for (pos, it) in self.sched.tail(q, self.cfg.drop_search_pkts as usize) {
                let (m, backlog_bytes) = (&self.flows[it.slot as usize].model, self.flows[it.slot as usize].queued_bytes);
                if self.has_no_tcp_state(&it.pkt) {
                    if seqless.is_none_or(|(b, _, _)| backlog_bytes > b) {
                        seqless = Some((backlog_bytes, q, pos));
                    }
                    continue;
                }
                if it.pkt.seq_len() == 0 {
                    // A pure ACK without `protect_pure_acks`: the first victim.
                    best = Some((NextState::Unaffected, q, pos));
                    seqless = None;
                    break 'search;
                }
                most_data_backlog_bytes = most_data_backlog_bytes.max(backlog_bytes);
                let sev = m.predict_drop(&it.pkt, it.retx, &self.cfg);
                if best.is_none_or(|(b, _, _)| sev < b) {
                    best = Some((sev, q, pos));
                }
            }
        }
        match seqless {
            Some((backlog, q, pos)) if best.is_none() || backlog > most_data_backlog_bytes => {
                best = Some((NextState::Unaffected, q, pos));
            }
            _ => {}
        }
        let (sev, q, pos) = best.expect("over the limit means something is queued");
        let item = self.sched.remove(q, pos);
        let slot = item.slot;
        self.roll(slot, cx.now); // the loss belongs to the flow's current epoch
        let was_new = self.is_new(slot);
        self.flows[slot as usize].queued_bytes -= item.pkt.len_bytes();
        let m = &mut self.flows[slot as usize].model;
        m.queued_pkts -= 1;
        m.on_drop(&item.pkt, item.retx);
        let idle = m.queued_pkts == 0;
        self.count_transition(slot, was_new, cx.now);
        if idle {
            self.table.set_idle(slot);
        }
        self.dropped_by_queue[q as usize] += 1;
        self.drops_by_prediction[sev as usize] += 1;
        self.admission.drop_rate.drop(cx.now, self.cfg.drop_rate_window_ns);
        cx.drop(item.pkt, DropReason::Overlimit);
    }
}

impl Qdisc for Taq {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let now = cx.now;
        self.sweep(now);
        self.release_held(cx);
        let mut pool = NIL;
        if pkt.flags.syn() && self.table.get(&pkt.flow).is_none() {
            // A new connection: its initiator sent the SYN (or receives this SYN-ACK).
            let initiator = if pkt.flags.ack() { pkt.flow.dst_ip } else { pkt.flow.src_ip };
            let grant_here = self.cfg.admission_hold_syns == 0;
            match self.admission.on_syn(initiator, now, &self.cfg, self.new_flows, grant_here) {
                Verdict::Refuse(p) => return self.refuse(pkt, p, cx),
                Verdict::Admit(p) => pool = p.unwrap_or(NIL),
            }
        }
        self.admit(pkt, pool, cx);
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let now = cx.now;
        self.sweep(now);
        self.release_held(cx);
        let (q, item) = self.sched.pop()?;
        let tau = self.cfg.fair_share_window_ns;
        let bytes = item.pkt.len_bytes();
        let was_new = self.is_new(item.slot);
        let f = &mut self.flows[item.slot as usize];
        f.model.queued_pkts -= 1;
        f.queued_bytes -= bytes;
        f.served.add(now, bytes, tau);
        let (idle, pool) = (f.model.queued_pkts == 0, f.pool);
        self.count_transition(item.slot, was_new, now);
        if idle {
            self.table.set_idle(item.slot);
        }
        if pool != NIL {
            self.admission.pools[pool as usize].served.add(now, bytes, tau);
        }
        self.total_served.add(now, bytes, tau);
        self.dequeued_by_queue[q as usize] += 1;
        Some(item.pkt)
    }

    fn observes_reverse(&self) -> bool {
        true // two-way epochs come from the reverse ACKs
    }

    fn observe_reverse(&mut self, pkt: &Packet, now: Instant) {
        if let Some(i) = self.table.get(&pkt.flow.reversed()) {
            self.flows[i as usize].model.on_reverse(pkt, now, &self.cfg);
        }
    }

    fn len_pkts(&self) -> usize {
        self.sched.len() + self.held.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.sched.bytes() + self.held_bytes
    }
    fn flow_table_len(&self) -> usize {
        self.table.len()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        for q in TaqQueue::ALL {
            let i = q as usize;
            out.extend(
                [
                    QdiscCounter::total("enqueued", self.enqueued_by_queue[i]),
                    QdiscCounter::total("dequeued", self.dequeued_by_queue[i]),
                    QdiscCounter::total("dropped", self.dropped_by_queue[i]),
                    QdiscCounter::level("queued", self.sched.queue_len(q) as u64),
                ]
                .map(|c| c.of(q.name())),
            );
        }
        for s in [NextState::Unaffected, NextState::ExplicitRecovery, NextState::Timeout, NextState::RepeatedTimeout] {
            out.push(QdiscCounter::total("dropped_predicted", self.drops_by_prediction[s as usize]).of(s.name()));
        }
        out.extend([
            QdiscCounter::total("retransmissions_seen", self.retx_seen),
            QdiscCounter::total("promoted_pkts", self.promoted_pkts),
            QdiscCounter::total("syns_refused", self.admission.syns_refused),
            QdiscCounter::total("pools_admitted", self.admission.pools_admitted),
            QdiscCounter::total("pools_admitted_after_wait", self.admission.pools_admitted_after_wait),
            QdiscCounter::total("syns_released", self.syns_released),
            QdiscCounter::total("syns_hold_full", self.syns_hold_full),
            QdiscCounter::total("flow_evictions", self.table.evictions()),
            QdiscCounter::level("syns_held", self.held.len() as u64),
            QdiscCounter::level("new_flow_conns", self.new_flows as u64),
            QdiscCounter::level("flows_tracked", self.table.len() as u64),
            QdiscCounter::level("pools_tracked", self.admission.len() as u64),
        ]);
    }
}

impl Taq {
    /// A refused SYN: dropped, or held in proxy mode while the FIFO has room (one copy per
    /// connection: a client's retry of a held SYN is dropped, the held one stands for it).
    fn refuse(&mut self, pkt: Packet, pool: Option<u32>, cx: &mut Cx) {
        let cap = self.cfg.admission_hold_syns as usize;
        let Some(pool) = pool.filter(|_| cap > 0) else {
            return cx.drop(pkt, DropReason::Admission);
        };
        if self.held.iter().any(|(h, _)| h.flow == pkt.flow) {
            return cx.drop(pkt, DropReason::Admission);
        }
        if self.held.len() >= cap {
            self.syns_hold_full += 1;
            return cx.drop(pkt, DropReason::Admission);
        }
        self.admission.add_flow(pool); // a pool with held SYNs is not evicted
        self.held_bytes += pkt.len_bytes();
        self.held.push_back((pkt, pool));
    }

    /// Proxy mode: admit held pools in the order their first SYN was held, and queue all
    /// their held SYNs; stop at the first pool that may not be admitted yet.
    fn release_held(&mut self, cx: &mut Cx) {
        while let Some(&(_, pool)) = self.held.front() {
            if !self.admission.try_admit_held(pool, cx.now, &self.cfg, self.new_flows) {
                return;
            }
            let mut i = 0;
            while i < self.held.len() {
                if self.held[i].1 != pool {
                    i += 1;
                    continue;
                }
                let (pkt, _) = self.held.remove(i).expect("index in range");
                self.held_bytes -= pkt.len_bytes();
                self.admission.remove_flow(pool);
                self.syns_released += 1;
                // Its client's retry may have been admitted first (the pool passed the
                // threshold at that SYN); then the held copy joins the tracked flow.
                let p = if self.table.get(&pkt.flow).is_none() { pool } else { NIL };
                self.admit(pkt, p, cx);
            }
        }
    }

    /// Queue an admitted packet (of pool slot `pool` if it opens a flow).
    fn admit(&mut self, pkt: Packet, pool: u32, cx: &mut Cx) {
        let now = cx.now;
        self.admission.drop_rate.arrival(now, self.cfg.drop_rate_window_ns);
        let slot = self.flow_slot(&pkt, pool, now, cx);
        let was_new = self.is_new(slot);
        let info = self.flows[slot as usize].model.on_arrival(&pkt, now, &self.cfg);
        self.count_transition(slot, was_new, now);
        self.retx_seen += info.retx as u64;
        let q = self.choose_queue(slot, info.retx, &pkt, now);
        self.flows[slot as usize].queue = q;
        self.flows[slot as usize].model.queued_pkts += 1;
        self.flows[slot as usize].queued_bytes += pkt.len_bytes();
        self.table.set_busy(slot);
        self.sched.push(q, Queued { pkt, slot, retx: info.retx });
        self.enqueued_by_queue[q as usize] += 1;
        if self.sched.len() > self.cfg.limit_pkts as usize {
            self.drop_one(cx);
        }
    }
}

#[cfg(test)]
mod tests;
