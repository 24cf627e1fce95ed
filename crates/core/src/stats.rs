//! Drop reasons and the counters every discipline keeps, in packets and bytes.

/// Why a queue discipline dropped a packet. Counted in an array indexed by `as usize`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The queue (or its byte limit) was full when the packet arrived.
    Overlimit = 0,
    /// An AQM decided to drop before the queue was full (RED early drop, CoDel).
    Early,
    /// A per-flow limit or longest-queue push-out (FQ drops from the fattest flow).
    FlowLimit,
    /// Admission control refused a new flow (TAQ).
    Admission,
    /// A size- or class-based policy chose this packet (size-aware dropping, RIO).
    SizePolicy,
    /// Random loss injected on a link for validation; not a queueing decision.
    LinkLoss,
    /// A queued pure ACK made redundant by a newer ACK of the same connection (CAKE's ACK
    /// filter): its information reaches the sender with the newer one.
    AckFilter,
}

impl DropReason {
    pub const COUNT: usize = 7;
    pub const ALL: [DropReason; Self::COUNT] = [
        DropReason::Overlimit,
        DropReason::Early,
        DropReason::FlowLimit,
        DropReason::Admission,
        DropReason::SizePolicy,
        DropReason::LinkLoss,
        DropReason::AckFilter,
    ];
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Overlimit => "overlimit",
            DropReason::Early => "early",
            DropReason::FlowLimit => "flow_limit",
            DropReason::Admission => "admission",
            DropReason::SizePolicy => "size_policy",
            DropReason::LinkLoss => "link_loss",
            DropReason::AckFilter => "ack_filter",
        }
    }
}

/// Why a queue discipline set the ECN Congestion Experienced codepoint instead of dropping.
/// A mark is not a drop: marked packets stay queued and leave through `dequeue`, so marks
/// do not enter the conservation identity. Counted in an array indexed by `as usize`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkReason {
    /// An AQM (RED between the thresholds, CoDel) chose this ECN-capable packet where it
    /// would have dropped a non-ECN-capable one.
    Early = 0,
}

impl MarkReason {
    pub const COUNT: usize = 1;
    pub const ALL: [MarkReason; Self::COUNT] = [MarkReason::Early];
    pub fn name(self) -> &'static str {
        match self {
            MarkReason::Early => "early",
        }
    }
}

/// ECN marks by reason, in packets and bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkCounts {
    pub pkts: [u64; MarkReason::COUNT],
    pub bytes: [u64; MarkReason::COUNT],
}

impl MarkCounts {
    pub fn total_pkts(&self) -> u64 {
        self.pkts.iter().sum()
    }
}

/// Counters of a queue. Identity (checked by [`QdiscStats::check`]):
/// `arrived = departed + dropped + backlog`, in packets and in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QdiscStats {
    pub arrived_pkts: u64,
    pub arrived_bytes: u64,
    pub departed_pkts: u64,
    pub departed_bytes: u64,
    pub dropped_pkts: [u64; DropReason::COUNT],
    pub dropped_bytes: [u64; DropReason::COUNT],
    /// ECN marks (not part of the identity: a marked packet is still delivered).
    pub marked: MarkCounts,
}

impl QdiscStats {
    pub fn total_dropped_pkts(&self) -> u64 {
        self.dropped_pkts.iter().sum()
    }
    pub fn total_dropped_bytes(&self) -> u64 {
        self.dropped_bytes.iter().sum()
    }
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.dropped_pkts[reason as usize]
    }
    pub fn marked(&self, reason: MarkReason) -> u64 {
        self.marked.pkts[reason as usize]
    }
    /// Checks the conservation identity against a discipline's own backlog: what arrived
    /// departed, was dropped in the queue, or waits. A link's loss on the wire
    /// (`LinkLoss`) is of a packet that had already departed, so it is not in the identity.
    pub fn check(&self, backlog_pkts: u64, backlog_bytes: u64) -> Result<(), String> {
        let on_wire = DropReason::LinkLoss as usize;
        let (p, b) = (
            self.departed_pkts + self.total_dropped_pkts() - self.dropped_pkts[on_wire] + backlog_pkts,
            self.departed_bytes + self.total_dropped_bytes() - self.dropped_bytes[on_wire] + backlog_bytes,
        );
        if p != self.arrived_pkts || b != self.arrived_bytes {
            return Err(format!(
                "accounting broken: arrived {}p/{}B != departed+dropped+backlog {}p/{}B",
                self.arrived_pkts, self.arrived_bytes, p, b
            ));
        }
        Ok(())
    }
}
