//! A bounded per-flow lifetime counter: how many packets of a 5-tuple this box has seen and
//! when it saw the first, the state an edge or core router needs to call a flow "long"
//! after N packets or T seconds (Matta & Guo's lifetime-based classification; RIO's "first
//! N packets are in").
//!
//! Memory: at most `capacity` entries. The table is kept in least-recently-seen order (every
//! entry is evictable; a touch moves it to the back), so a flood of new 5-tuples evicts the
//! flows not seen for longest. An evicted flow that comes back starts over as new, i.e. as
//! short: under a flood, long flows can be misclassified as short, never the reverse.

use super::{BoundedTable, Slot};
use crate::packet::FlowKey;
use crate::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    pkts_seen: u32,
    first_seen: Instant,
}

#[derive(Debug)]
pub(crate) struct LifetimeTable {
    table: BoundedTable<FlowKey>,
    entries: Vec<Entry>,
}

impl LifetimeTable {
    pub fn new(capacity: u32) -> Self {
        LifetimeTable { table: BoundedTable::new(capacity), entries: Vec::new() }
    }

    /// Count one more packet of `flow` at `now`; returns the packets seen so far (this one
    /// included) and the time since the first.
    pub fn observe(&mut self, flow: &FlowKey, now: Instant) -> (u32, Duration) {
        // Every entry is idle (evictable) at all times, so the table never shares a slot.
        let i = match self.table.lookup(*flow, 0) {
            Slot::Existing(i) => i,
            Slot::New(i) | Slot::Shared(i) => {
                if self.entries.len() <= i as usize {
                    self.entries.resize(i as usize + 1, Entry::default());
                }
                self.entries[i as usize] = Entry { pkts_seen: 0, first_seen: now };
                i
            }
        };
        // Least recently seen first: move this entry to the back of the eviction order.
        self.table.set_busy(i);
        self.table.set_idle(i);
        let e = &mut self.entries[i as usize];
        e.pkts_seen = e.pkts_seen.saturating_add(1);
        (e.pkts_seen, now.saturating_since(e.first_seen))
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }
    #[cfg(test)]
    pub fn evictions(&self) -> u64 {
        self.table.evictions()
    }
}

/// How a discipline decides that a packet belongs to a short flow (class isolation's short
/// class, RIO's in-packets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShortBy {
    /// The edge's mark: the packet's DSCP equals the configured codepoint.
    #[default]
    Dscp,
    /// This queue's own count: a flow is short for its first `lifetime_pkts` packets and
    /// until `lifetime_ns` after its first packet (whichever ends first).
    Lifetime,
}

/// The runtime side of [`ShortBy`] with its knobs.
#[derive(Debug)]
pub(crate) struct ShortClassifier {
    by: ShortBy,
    short_dscp: u8,
    lifetime_pkts: u32,
    lifetime: Duration,
    table: LifetimeTable,
}

impl ShortClassifier {
    /// `lifetime_pkts`/`lifetime_ns` `None` mean no limit of that kind.
    pub fn new(by: ShortBy, short_dscp: u8, lifetime_pkts: Option<u32>, lifetime_ns: Option<u64>, capacity: u32) -> Self {
        ShortClassifier {
            by,
            short_dscp,
            lifetime_pkts: lifetime_pkts.unwrap_or(u32::MAX),
            lifetime: Duration(lifetime_ns.unwrap_or(u64::MAX)),
            // The DSCP classifier keeps no per-flow state.
            table: LifetimeTable::new(if by == ShortBy::Lifetime { capacity } else { 0 }),
        }
    }

    pub fn is_short(&mut self, pkt: &crate::packet::Packet, now: Instant) -> bool {
        match self.by {
            ShortBy::Dscp => pkt.dscp == self.short_dscp,
            ShortBy::Lifetime => {
                let (seen, age) = self.table.observe(&pkt.flow, now);
                seen <= self.lifetime_pkts && age < self.lifetime
            }
        }
    }

    pub fn table_len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(port: u16) -> FlowKey {
        FlowKey { src_ip: 1, dst_ip: 2, src_port: port, dst_port: 80, proto: 6 }
    }

    #[test]
    fn counts_per_flow_and_evicts_the_least_recently_seen() {
        let mut t = LifetimeTable::new(2);
        assert_eq!(t.observe(&key(1), Instant(10)), (1, Duration(0)));
        assert_eq!(t.observe(&key(2), Instant(20)), (1, Duration(0)));
        assert_eq!(t.observe(&key(1), Instant(30)), (2, Duration(20)));
        // Flow 2 was seen least recently: flow 3 takes its entry.
        assert_eq!(t.observe(&key(3), Instant(40)), (1, Duration(0)));
        assert_eq!(t.observe(&key(1), Instant(50)), (3, Duration(40)));
        // Flow 2 comes back as new.
        assert_eq!(t.observe(&key(2), Instant(60)), (1, Duration(0)));
        assert_eq!((t.len(), t.evictions()), (2, 2));
    }
}
