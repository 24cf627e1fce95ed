//! CAKE (Common Applications Kept Enhanced): DiffServ tins, per-host then per-flow fairness
//! with set-associative hashing, COBALT on every flow queue, and an optional ACK filter.
//!
//! Source: T. Høiland-Jørgensen, D. Täht, J. Morton, "Piece of CAKE: A Comprehensive Queue
//! Management Solution for Home Gateways", IEEE LANMAN 2018, and Linux
//! `net/sched/sch_cake.c` (defaults from `cake_init`).
//!
//! Principles:
//! - Tins (`tins.rs`). A packet's DSCP picks its tin (`diffserv3`: Bulk, Best Effort,
//!   Voice; or one `besteffort` tin). Each tin has a threshold rate (a fraction of the link
//!   rate the runtime tells us, `set_link`) tracked by its own virtual shaper; the
//!   highest-priority tin with packets that is within its threshold is served, else the tin
//!   whose shaper allows it soonest. With no link rate the tins share by DRR weights.
//! - Flow queues: 1024 per tin, a packet's flow hash placed by 8-way set-associative
//!   hashing (a flow keeps its queue while it has one; a new flow takes a free way of its set
//!   before colliding), so collisions are rare until about a thousand flows.
//! - Host fairness (`flow_mode`). CAKE's method, not a second DRR level: a flow's DRR quantum
//!   is divided by the number of bulk flows of its source host (`dual_srchost`), of its
//!   destination host (`dual_dsthost`), or by the larger of the two (`triple_isolate`, the
//!   default). A host with eight bulk flows then gets the bytes per round of a host with one.
//!   We follow CAKE because it is O(1) per packet and needs no per-host queues (the
//!   two-level DRR is in `host_fq`); host counts live in set-associative host tables of 1024
//!   entries per tin, and only bulk flows (those that used up a quantum with packets left)
//!   count, so a host's DNS query does not shrink its downloads' share.
//! - DRR++ within a tin: a flow that becomes active is sparse and is served from the new
//!   list first; when it uses up its quantum it moves to the old list (bulk if it still has
//!   packets). An emptied flow whose COBALT state is not at rest waits on the decaying list
//!   (one is visited per dequeue) so its state can decay.
//! - COBALT ([`crate::aqm::cobalt`]) on every flow at dequeue, with the tin's target and
//!   interval (scaled up when one MTU takes long at the tin's rate). Drops are `early`; ECN-
//!   capable packets are marked instead (`ecn`). The last packet of a queue is never dropped.
//! - Overflow (`cake_drop`): past the byte buffer (or `limit_pkts`) the fattest queue of all
//!   tins (by bytes) loses its head packet (`overlimit`), and its BLUE probability rises.
//! - ACK filter (`ack_filter.rs`, off by default): an arriving ACK may replace a redundant
//!   pure ACK of its connection already queued (`ack_filter` drops).
//!
//! Knobs (Linux defaults): `flow_mode` `triple_isolate`, `diffserv` `diffserv3`,
//! `ack_filter` `off`, `target_ns` 5 ms, `interval_ns` 100 ms (CAKE's `rtt`),
//! `memory_limit_bytes` 0 = CAKE's rule (four link-rate intervals, at least 4 MiB, at most
//! `limit_pkts` MTUs; IP bytes here, Linux counts buffer truesize), `limit_pkts` 10240,
//! `mtu_bytes` 1514, `ecn` true; `link_rate_bps` is set by the runtime (0: unknown).
//!
//! Counters ([`Qdisc::counters`]), per tin (the class: `best_effort`, `bulk`, `voice`), named
//! as `tc -s qdisc` prints CAKE's per-tin table: `pkts` and `bytes` (sent), `drops` (dropped
//! by COBALT or from the fattest queue on overflow; not the ACK filter's, as Linux),
//! `marks` (CE marks), `ack_drop` (the ACK filter's drops), `way_inds`, `way_miss`,
//! `way_cols` (set-associative hashing: found in another way, took a free way, shared a
//! busy way), all totals; `backlog` (bytes queued), `sp_flows`, `bk_flows`, `un_flows`
//! (sparse, bulk and unresponsive flows), `max_len` (largest packet seen, bytes), levels.
//! Linux's `pk_delay`, `av_delay` and `sp_delay` (EWMAs of the sojourn time) are not kept.
//!
//! Complexity: enqueue O(1) (two set lookups of 8 ways) plus, with the ACK filter, a scan of
//! the arriving packet's queue; dequeue O(1) amortised per packet plus O(tins); overflow
//! scans the per-queue byte counts (3 × 1024 in `diffserv3`), as FQ-CoDel. Memory: fixed
//! tables of 1024 flows and 1024 hosts per tin, one packet arena of at most `limit_pkts`+1.
//!
//! Left out (Linux has them): the shaper itself (the link or the box's link model sets the
//! rate), per-packet overhead and ATM/PTM framing (the link models), NAT lookup, `wash`,
//! ingress mode, autorate, GSO splitting, `diffserv4`/`diffserv8`/`precedence`, fwmark and
//! filter overrides of tin and flow.

mod ack_filter;
mod chain;
mod tins;

pub use ack_filter::AckFilter;
pub use tins::DiffservMode;

use self::chain::{Chain, FlowChains};
use self::tins::{tin_params, TinParams};
use super::parts::hash::{flow_hash, host_hash};
use super::parts::FlowQueues;
use super::{Cx, Qdisc, QdiscCounter};
use crate::aqm::cobalt::{cobalt_queue_empty, cobalt_queue_full, cobalt_should_drop, CobaltVars, CobaltVerdict};
use crate::error::ConfigError;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::stats::{DropReason, MarkReason};
use crate::time::Instant;
use serde::{Deserialize, Serialize};

/// Flow queues (and host entries) per tin.
pub const CAKE_QUEUES: u32 = 1024;
/// Ways of the set-associative flow and host tables.
pub const CAKE_SET_WAYS: u32 = 8;

/// What CAKE isolates (Linux `flow_mode`; hosts are IP addresses as seen on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowMode {
    /// One queue for everything.
    Flowblind,
    /// One queue per source address.
    Srchost,
    /// One queue per destination address.
    Dsthost,
    /// One queue per source–destination pair.
    Hosts,
    /// One queue per 5-tuple, no host fairness.
    Flows,
    /// Per 5-tuple, fair between source hosts first.
    DualSrchost,
    /// Per 5-tuple, fair between destination hosts first.
    DualDsthost,
    /// Per 5-tuple, fair between source hosts and between destination hosts.
    #[default]
    TripleIsolate,
}

impl FlowMode {
    const SRC_IP: u8 = 1;
    const DST_IP: u8 = 2;
    const FLOWS: u8 = 4;

    fn bits(self) -> u8 {
        match self {
            FlowMode::Flowblind => 0,
            FlowMode::Srchost => Self::SRC_IP,
            FlowMode::Dsthost => Self::DST_IP,
            FlowMode::Hosts => Self::SRC_IP | Self::DST_IP,
            FlowMode::Flows => Self::FLOWS,
            FlowMode::DualSrchost => Self::FLOWS | Self::SRC_IP,
            FlowMode::DualDsthost => Self::FLOWS | Self::DST_IP,
            FlowMode::TripleIsolate => Self::FLOWS | Self::SRC_IP | Self::DST_IP,
        }
    }
    /// Source hosts' bulk flows scale the flow quantum (`cake_dsrc`).
    fn dual_src(self) -> bool {
        self.bits() & (Self::FLOWS | Self::SRC_IP) == Self::FLOWS | Self::SRC_IP
    }
    fn dual_dst(self) -> bool {
        self.bits() & (Self::FLOWS | Self::DST_IP) == Self::FLOWS | Self::DST_IP
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CakeConfig {
    pub flow_mode: FlowMode,
    pub diffserv: DiffservMode,
    pub ack_filter: AckFilter,
    /// COBALT target sojourn time, nanoseconds (raised per tin for slow tins).
    pub target_ns: u64,
    /// COBALT interval, nanoseconds (CAKE's `rtt`).
    pub interval_ns: u64,
    /// Buffer in queued IP bytes; 0: CAKE's rule from the link rate.
    pub memory_limit_bytes: u64,
    /// Buffer in packets (Linux `limit`).
    pub limit_pkts: u32,
    /// Largest packet, bytes: the tins' MTU times and the byte buffer's cap.
    pub mtu_bytes: u32,
    /// Mark ECN-capable packets instead of CoDel drops (BLUE always drops).
    pub ecn: bool,
    /// The rate of the link this queue feeds, bit/s (set by the runtime; 0: unknown).
    pub link_rate_bps: u64,
}

impl Default for CakeConfig {
    fn default() -> Self {
        CakeConfig {
            flow_mode: FlowMode::TripleIsolate,
            diffserv: DiffservMode::Diffserv3,
            ack_filter: AckFilter::Off,
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            memory_limit_bytes: 0,
            limit_pkts: 10_240,
            mtu_bytes: 1514,
            ecn: true,
            link_rate_bps: 0,
        }
    }
}

impl CakeConfig {
    /// CAKE's buffer (`cake_reconfigure`): the configured bytes, else four intervals at the
    /// link rate but at least 4 MiB (unlimited without a rate), and never more than
    /// `limit_pkts` MTUs unless configured so.
    pub fn buffer_limit_bytes(&self) -> u64 {
        let auto = if self.memory_limit_bytes > 0 {
            self.memory_limit_bytes
        } else if self.link_rate_bps > 0 {
            let four_intervals = (self.link_rate_bps as u128 / 8 * self.interval_ns as u128 * 4 / 1_000_000_000) as u64;
            four_intervals.max(4 << 20)
        } else {
            u64::MAX
        };
        auto.min((self.limit_pkts as u64 * self.mtu_bytes as u64).max(self.memory_limit_bytes))
    }

    pub fn build(&self) -> Result<Cake, ConfigError> {
        if self.target_ns == 0 {
            return Err(ConfigError::new("target_ns", 0, "at least 1 ns"));
        }
        if self.interval_ns < self.target_ns {
            return Err(ConfigError::new("interval_ns", self.interval_ns, format!("at least target_ns ({})", self.target_ns)));
        }
        if self.limit_pkts == 0 {
            return Err(ConfigError::new("limit_pkts", 0, "at least 1 packet"));
        }
        if !(68..=65_535).contains(&self.mtu_bytes) {
            return Err(ConfigError::new("mtu_bytes", self.mtu_bytes, "68 to 65535 bytes"));
        }
        let params = tin_params(self.diffserv, self.link_rate_bps, self.mtu_bytes, self.target_ns, self.interval_ns);
        let n = params.len() * CAKE_QUEUES as usize;
        Ok(Cake {
            tins: params.into_iter().map(Tin::new).collect(),
            flows: vec![CakeFlow::default(); n],
            tags: vec![0; n],
            hosts: vec![CakeHost::default(); n],
            queues: FlowQueues::by_bytes(n),
            chains: FlowChains::new(n, self.diffserv.tin_count()),
            buffer_limit_bytes: self.buffer_limit_bytes(),
            cur_tin: 0,
            salt: None,
            cfg: self.clone(),
        })
    }
}

/// Where a flow queue stands (Linux `CAKE_SET_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum FlowSet {
    #[default]
    None,
    Sparse,
    /// Used up its quantum while empty: counted sparse, scheduled with the bulk flows.
    SparseWait,
    Bulk,
    /// Empty, on the decaying list until its COBALT state is at rest.
    Decaying,
}

#[derive(Debug, Clone, Copy, Default)]
struct CakeFlow {
    deficit: i32,
    set: FlowSet,
    cvars: CobaltVars,
    /// Host-table entries (within the tin) of its source and destination hosts.
    srchost: u16,
    dsthost: u16,
}

#[derive(Debug, Clone, Copy, Default)]
struct CakeHost {
    srchost_tag: u32,
    dsthost_tag: u32,
    srchost_bulk_flow_count: u16,
    dsthost_bulk_flow_count: u16,
}

/// One tin's counters (Linux `tc -s qdisc show` per-tin statistics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TinStats {
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    /// Dropped from this tin's fattest queue when the buffer overflowed.
    pub drop_overlimit: u64,
    /// Dropped by COBALT (CoDel or BLUE).
    pub drop_aqm: u64,
    pub ack_drops: u64,
    pub ecn_marked: u64,
    /// Largest packet seen, bytes.
    pub max_skblen: u64,
    /// Set-associative hashing: found in the direct way, in another way, in a free way, or
    /// sharing a busy way.
    pub way_directs: u64,
    pub way_hits: u64,
    pub way_misses: u64,
    pub way_collisions: u64,
}

/// A tin as the operator sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TinSnapshot {
    pub name: &'static str,
    /// Threshold rate, bit/s (0: no link rate known).
    pub threshold_rate_bps: u64,
    pub target_ns: u64,
    pub interval_ns: u64,
    pub backlog_bytes: u64,
    pub sparse_flows: u32,
    pub bulk_flows: u32,
    pub decaying_flows: u32,
    /// Flows whose BLUE probability is non-zero.
    pub unresponsive_flows: u32,
    pub stats: TinStats,
}

#[derive(Debug)]
struct Tin {
    params: TinParams,
    /// The tin's virtual shaper: when it may next send within its threshold.
    time_next_packet: Instant,
    /// DRR deficit among tins (unknown link rate only).
    tin_deficit: i64,
    backlog_bytes: u64,
    sparse_flow_count: u32,
    bulk_flow_count: u32,
    decaying_flow_count: u32,
    unresponsive_flow_count: u32,
    stats: TinStats,
}

impl Tin {
    fn new(params: TinParams) -> Self {
        Tin {
            params,
            time_next_packet: Instant::ZERO,
            tin_deficit: 0,
            backlog_bytes: 0,
            sparse_flow_count: 0,
            bulk_flow_count: 0,
            decaying_flow_count: 0,
            unresponsive_flow_count: 0,
            stats: TinStats::default(),
        }
    }
    fn active(&self) -> bool {
        self.sparse_flow_count + self.bulk_flow_count > 0
    }
    /// Charge `len` bytes to the tin's shaper (Linux `cake_advance_shaper`, tin part): a
    /// tin behind schedule catches up by one packet time, one ahead is pushed to `now` plus
    /// one packet time.
    fn advance_shaper(&mut self, len: u64, now: Instant) {
        let dur = (len as f64 * self.params.ns_per_byte) as u64;
        if self.time_next_packet < now {
            self.time_next_packet = Instant(self.time_next_packet.0 + dur);
        } else if self.time_next_packet.0 < now.0 + dur {
            self.time_next_packet = Instant(now.0 + dur);
        }
    }
}

#[derive(Debug)]
pub struct Cake {
    cfg: CakeConfig,
    tins: Vec<Tin>,
    /// Per queue (tin-major: queue `tin * CAKE_QUEUES + i`): DRR and COBALT state.
    flows: Vec<CakeFlow>,
    /// The flow hash each queue is reserved for.
    tags: Vec<u32>,
    /// Per tin, CAKE_QUEUES host entries.
    hosts: Vec<CakeHost>,
    queues: FlowQueues,
    chains: FlowChains,
    buffer_limit_bytes: u64,
    /// The tin served last (the DRR over tins without a link rate).
    cur_tin: usize,
    salt: Option<u64>,
}

const Q: usize = CAKE_QUEUES as usize;
const WAYS: usize = CAKE_SET_WAYS as usize;

/// The way of `tag` in the 8-way set of `idx` (within one tin's table of `CAKE_QUEUES`):
/// the way holding `tag`, else the first way from `idx`'s own for which `free` holds, else
/// `idx` itself. Returns (entry, found by tag, way distance from `idx`).
fn set_lookup(idx: usize, tag_of: impl Fn(usize) -> u32, tag: u32, free: impl Fn(usize) -> bool) -> (usize, Option<bool>) {
    let (inner, outer) = (idx % WAYS, idx - idx % WAYS);
    let ways = || (0..WAYS).map(|i| outer + (inner + i) % WAYS);
    if let Some(e) = ways().find(|&e| tag_of(e) == tag) {
        return (e, Some(true));
    }
    match ways().find(|&e| free(e)) {
        Some(e) => (e, Some(false)),
        None => (idx, None),
    }
}

impl Cake {
    /// Per-tin state and counters, in tin order (Best Effort, Bulk, Voice for `diffserv3`).
    pub fn tins(&self) -> Vec<TinSnapshot> {
        self.tins
            .iter()
            .enumerate()
            .map(|(i, t)| TinSnapshot {
                name: self.cfg.diffserv.tin_name(i),
                threshold_rate_bps: t.params.rate_bytes_per_s * 8,
                target_ns: t.params.cobalt.target_ns,
                interval_ns: t.params.cobalt.interval_ns,
                backlog_bytes: t.backlog_bytes,
                sparse_flows: t.sparse_flow_count,
                bulk_flows: t.bulk_flow_count,
                decaying_flows: t.decaying_flow_count,
                unresponsive_flows: t.unresponsive_flow_count,
                stats: t.stats.clone(),
            })
            .collect()
    }

    /// The buffer in bytes this instance enforces.
    pub fn buffer_limit_bytes(&self) -> u64 {
        self.buffer_limit_bytes
    }

    fn hash32(h: u64) -> u32 {
        (h >> 32) as u32
    }

    fn host_bulk(&mut self, tin: usize, g: usize, up: bool) {
        let f = self.flows[g];
        let base = tin * Q;
        let step = |c: &mut u16| {
            if up && *c < CAKE_QUEUES as u16 {
                *c += 1;
            } else if !up && *c > 0 {
                *c -= 1;
            }
        };
        if self.cfg.flow_mode.dual_src() {
            step(&mut self.hosts[base + f.srchost as usize].srchost_bulk_flow_count);
        }
        if self.cfg.flow_mode.dual_dst() {
            step(&mut self.hosts[base + f.dsthost as usize].dsthost_bulk_flow_count);
        }
    }

    /// The flow's quantum scaled by its hosts' bulk flow counts, dithered so that the
    /// rounding does not accumulate (Linux `cake_get_flow_quantum`).
    fn flow_quantum(&self, tin: usize, g: usize, rng: &mut Rng) -> i32 {
        let f = &self.flows[g];
        let host = |i: u16| &self.hosts[tin * Q + i as usize];
        let mut load = 1u16;
        if self.cfg.flow_mode.dual_src() {
            load = load.max(host(f.srchost).srchost_bulk_flow_count);
        }
        if self.cfg.flow_mode.dual_dst() {
            load = load.max(host(f.dsthost).dsthost_bulk_flow_count);
        }
        let scale = 65_535 / load as u64;
        ((self.tins[tin].params.flow_quantum as u64 * scale + (rng.next_u64() & 0xFFFF)) >> 16) as i32
    }

    /// The queue of `pkt` within `tin` (Linux `cake_hash`): set-associative placement of the
    /// flow hash, and the host entries of a flow newly given a queue.
    fn cake_hash(&mut self, tin: usize, pkt: &Packet, salt: u64) -> usize {
        let mode = self.cfg.flow_mode;
        let srchost_hash = Self::hash32(host_hash(pkt.flow.src_ip, salt));
        let dsthost_hash = Self::hash32(host_hash(pkt.flow.dst_ip, salt.rotate_left(32)));
        let flow_hash = if mode.bits() & FlowMode::FLOWS != 0 {
            Self::hash32(flow_hash(&pkt.flow, salt))
        } else {
            let src = if mode.bits() & FlowMode::SRC_IP != 0 { srchost_hash } else { 0 };
            let dst = if mode.bits() & FlowMode::DST_IP != 0 { dsthost_hash } else { 0 };
            src ^ dst
        };
        let base = tin * Q;
        let reduced = (flow_hash % CAKE_QUEUES) as usize;
        let stats = &mut self.tins[tin].stats;
        if self.tags[base + reduced] == flow_hash && self.flows[base + reduced].set != FlowSet::None {
            stats.way_directs += 1;
            return reduced;
        }
        let (tags, flows) = (&self.tags, &self.flows);
        let (idx, found) = set_lookup(reduced, |e| tags[base + e], flow_hash, |e| flows[base + e].set == FlowSet::None);
        let allocate = match found {
            Some(true) => {
                if idx != reduced {
                    stats.way_hits += 1;
                }
                self.flows[base + idx].set == FlowSet::None
            }
            Some(false) => {
                stats.way_misses += 1;
                true
            }
            None => {
                // Every way busy: share this queue with its flow, which moves to our hosts.
                stats.way_collisions += 1;
                if self.flows[base + idx].set == FlowSet::Bulk {
                    self.host_bulk(tin, base + idx, false);
                }
                true
            }
        };
        self.tags[base + idx] = flow_hash;
        if allocate {
            let hosts = &self.hosts;
            if mode.dual_src() {
                let i = (srchost_hash % CAKE_QUEUES) as usize;
                let (h, found) = set_lookup(i, |e| hosts[base + e].srchost_tag, srchost_hash, |e| hosts[base + e].srchost_bulk_flow_count == 0);
                self.flows[base + idx].srchost = h as u16;
                if found != Some(true) {
                    self.hosts[base + h].srchost_tag = srchost_hash;
                }
            }
            let hosts = &self.hosts;
            if mode.dual_dst() {
                let i = (dsthost_hash % CAKE_QUEUES) as usize;
                let (h, found) = set_lookup(i, |e| hosts[base + e].dsthost_tag, dsthost_hash, |e| hosts[base + e].dsthost_bulk_flow_count == 0);
                self.flows[base + idx].dsthost = h as u16;
                if found != Some(true) {
                    self.hosts[base + h].dsthost_tag = dsthost_hash;
                }
            }
            if self.flows[base + idx].set == FlowSet::Bulk {
                self.host_bulk(tin, base + idx, true);
            }
        }
        idx
    }

    /// Drop the head of the fattest queue of all tins (Linux `cake_drop`).
    fn cake_drop(&mut self, cx: &mut Cx) {
        let g = self.queues.fattest().expect("the byte scan always names a queue") as usize;
        let tin = g / Q;
        let pkt = self.queues.pop_front(g as u32).expect("over the limit, so the fattest queue has packets");
        let t = &mut self.tins[tin];
        if cobalt_queue_full(&mut self.flows[g].cvars, &t.params.cobalt, cx.now) {
            t.unresponsive_flow_count += 1;
        }
        t.backlog_bytes -= pkt.len_bytes();
        t.stats.drop_overlimit += 1;
        cx.drop(pkt, DropReason::Overlimit);
    }

    /// The tin to serve, or `None` if no tin has flows (Linux `cake_dequeue`'s choice).
    fn choose_tin(&mut self, now: Instant) -> Option<usize> {
        if self.tins[0].params.rate_bytes_per_s > 0 {
            // Shaped: the last (highest-priority) tin within its threshold, else the tin
            // whose shaper lets it send soonest.
            let mut best: Option<(usize, i64)> = None;
            for (i, t) in self.tins.iter().enumerate() {
                if !t.active() {
                    continue;
                }
                let time_to_pkt = t.time_next_packet.0 as i64 - now.0 as i64;
                let sooner = match best {
                    None => true,
                    Some((_, best_time)) => time_to_pkt <= best_time,
                };
                if time_to_pkt <= 0 || sooner {
                    best = Some((i, time_to_pkt));
                }
            }
            self.cur_tin = best?.0;
            return Some(self.cur_tin);
        }
        // No rate: DRR over the tins by their weights.
        let (mut wrapped, mut empty) = (false, true);
        loop {
            let t = &mut self.tins[self.cur_tin];
            if t.tin_deficit >= 0 && t.active() {
                return Some(self.cur_tin);
            }
            if t.tin_deficit <= 0 {
                t.tin_deficit += t.params.tin_quantum as i64;
            }
            empty &= !t.active();
            self.cur_tin += 1;
            if self.cur_tin == self.tins.len() {
                self.cur_tin = 0;
                if wrapped && empty {
                    return None;
                }
                wrapped = true;
            }
        }
    }

    /// Flow `g` of `tin` was served and found empty: to the decaying list while its COBALT
    /// state is not at rest, else off the lists.
    fn retire(&mut self, tin: usize, g: usize, now: Instant) {
        let t = &mut self.tins[tin];
        let v = &mut self.flows[g].cvars;
        if cobalt_queue_empty(v, &t.params.cobalt, now) {
            t.unresponsive_flow_count = t.unresponsive_flow_count.saturating_sub(1);
        }
        let resting = v.p_drop == 0 && v.count == 0 && now >= v.drop_next;
        let set = self.flows[g].set;
        match set {
            FlowSet::Sparse | FlowSet::SparseWait => t.sparse_flow_count -= 1,
            FlowSet::Bulk => t.bulk_flow_count -= 1,
            FlowSet::Decaying => t.decaying_flow_count -= 1,
            FlowSet::None => unreachable!("a served flow is on a list"),
        }
        if set == FlowSet::Bulk {
            self.host_bulk(tin, g, false);
        }
        if resting {
            self.chains.remove(g as u32);
            self.flows[g].set = FlowSet::None;
        } else {
            self.chains.move_tail(g as u32, tin, Chain::Decaying);
            self.tins[tin].decaying_flow_count += 1;
            self.flows[g].set = FlowSet::Decaying;
        }
    }
}

impl Qdisc for Cake {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let salt = *self.salt.get_or_insert_with(|| cx.rng.next_u64());
        let tin = self.cfg.diffserv.tin_of(pkt.dscp & 0x3F);
        let g = tin * Q + self.cake_hash(tin, &pkt, salt);
        let t = &mut self.tins[tin];
        // A tin idle until now starts its shaper from now, not from the past.
        if t.backlog_bytes == 0 && t.time_next_packet < cx.now {
            t.time_next_packet = cx.now;
        }
        t.stats.max_skblen = t.stats.max_skblen.max(pkt.len_bytes());
        t.backlog_bytes += pkt.len_bytes();
        self.queues.push_back(g as u32, pkt);
        if self.cfg.ack_filter != AckFilter::Off {
            let aggressive = self.cfg.ack_filter == AckFilter::Aggressive;
            if let Some(slot) = ack_filter::find_redundant_ack(&self.queues, g as u32, aggressive) {
                let ack = self.queues.remove(g as u32, slot);
                let t = &mut self.tins[tin];
                t.backlog_bytes -= ack.len_bytes();
                t.stats.ack_drops += 1;
                cx.drop(ack, DropReason::AckFilter);
            }
        }
        match self.flows[g].set {
            FlowSet::None | FlowSet::Decaying => {
                let t = &mut self.tins[tin];
                if self.flows[g].set == FlowSet::Decaying {
                    t.decaying_flow_count -= 1;
                }
                t.sparse_flow_count += 1;
                self.chains.move_tail(g as u32, tin, Chain::New);
                self.flows[g].set = FlowSet::Sparse;
                self.flows[g].deficit = self.flow_quantum(tin, g, cx.rng);
            }
            FlowSet::SparseWait => {
                let t = &mut self.tins[tin];
                t.sparse_flow_count -= 1;
                t.bulk_flow_count += 1;
                self.flows[g].set = FlowSet::Bulk;
                self.host_bulk(tin, g, true);
            }
            FlowSet::Sparse | FlowSet::Bulk => {}
        }
        while self.queues.backlog_bytes() > self.buffer_limit_bytes || self.queues.len_pkts() > self.cfg.limit_pkts as usize {
            self.cake_drop(cx);
        }
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let now = cx.now;
        // One decaying flow is looked at per dequeue, before the new and old lists.
        let mut first_flow = true;
        'begin: loop {
            if self.queues.len_pkts() == 0 {
                return None;
            }
            let tin = self.choose_tin(now)?;
            loop {
                let decaying = self.chains.first(tin, Chain::Decaying);
                let head = match decaying.filter(|_| first_flow) {
                    Some(g) => g,
                    None => match self.chains.first(tin, Chain::New).or_else(|| self.chains.first(tin, Chain::Old)).or(decaying) {
                        Some(g) => g,
                        None => continue 'begin,
                    },
                };
                first_flow = false;
                let g = head as usize;
                if self.flows[g].deficit <= 0 {
                    // Out of quantum: a sparse flow with packets left is bulk from now on.
                    if self.flows[g].set == FlowSet::Sparse {
                        if self.queues.is_empty(head) {
                            self.flows[g].set = FlowSet::SparseWait;
                        } else {
                            let t = &mut self.tins[tin];
                            t.sparse_flow_count -= 1;
                            t.bulk_flow_count += 1;
                            self.flows[g].set = FlowSet::Bulk;
                            self.host_bulk(tin, g, true);
                        }
                    }
                    self.flows[g].deficit += self.flow_quantum(tin, g, cx.rng);
                    self.chains.move_tail(head, tin, Chain::Old);
                    continue;
                }
                // Through COBALT: drop until a packet is to be delivered (never the last).
                loop {
                    let Some(mut pkt) = self.queues.pop_front(head) else {
                        self.retire(tin, g, now);
                        continue 'begin;
                    };
                    let t = &mut self.tins[tin];
                    t.backlog_bytes -= pkt.len_bytes();
                    let ect = self.cfg.ecn && matches!(pkt.ecn, Ecn::Ect | Ecn::Ce);
                    let sojourn_ns = now.saturating_since(pkt.arrival).as_nanos();
                    let verdict = cobalt_should_drop(&mut self.flows[g].cvars, &t.params.cobalt, now, sojourn_ns, ect, cx.rng);
                    if verdict == CobaltVerdict::Drop && !self.queues.is_empty(head) {
                        t.stats.drop_aqm += 1;
                        cx.drop(pkt, DropReason::Early);
                        continue;
                    }
                    if verdict == CobaltVerdict::Mark {
                        t.stats.ecn_marked += 1;
                        cx.mark(&mut pkt, MarkReason::Early);
                    }
                    t.stats.sent_pkts += 1;
                    t.stats.sent_bytes += pkt.len_bytes();
                    t.advance_shaper(pkt.len_bytes(), now);
                    t.tin_deficit -= pkt.len_bytes() as i64;
                    self.flows[g].deficit -= pkt.ip_len_bytes as i32;
                    return Some(pkt);
                }
            }
        }
    }

    fn len_pkts(&self) -> usize {
        self.queues.len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.queues.backlog_bytes()
    }
    fn flow_table_len(&self) -> usize {
        self.flows.len()
    }
    fn counters(&self, out: &mut Vec<QdiscCounter>) {
        for (i, t) in self.tins.iter().enumerate() {
            let (s, tin) = (&t.stats, self.cfg.diffserv.tin_name(i));
            out.extend(
                [
                    QdiscCounter::total("pkts", s.sent_pkts),
                    QdiscCounter::total("bytes", s.sent_bytes),
                    QdiscCounter::total("drops", s.drop_overlimit + s.drop_aqm),
                    QdiscCounter::total("marks", s.ecn_marked),
                    QdiscCounter::total("ack_drop", s.ack_drops),
                    QdiscCounter::total("way_inds", s.way_hits),
                    QdiscCounter::total("way_miss", s.way_misses),
                    QdiscCounter::total("way_cols", s.way_collisions),
                    QdiscCounter::level("backlog", t.backlog_bytes),
                    QdiscCounter::level("sp_flows", t.sparse_flow_count as u64),
                    QdiscCounter::level("bk_flows", t.bulk_flow_count as u64),
                    QdiscCounter::level("un_flows", t.unresponsive_flow_count as u64),
                    QdiscCounter::level("max_len", s.max_skblen),
                ]
                .map(|c| c.of(tin)),
            );
        }
    }
    fn empty_dequeue_is_noop(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
