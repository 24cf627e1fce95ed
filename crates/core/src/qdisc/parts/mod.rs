//! Building blocks shared by the flow-queueing disciplines (SFQ, FQ, FQ-CoDel, HostFQ):
//! the flow queues and their deficit round robin (`drr`), built on a packet arena with
//! per-queue lists and an O(1) longest-queue index; a bounded exact-match table with idle
//! eviction; and the salted flow hash. Crate-private: the disciplines are
//! the public surface.

pub(crate) mod arena;
pub(crate) mod depth;
pub(crate) mod drr;
pub(crate) mod hash;
pub mod lifetime;
pub(crate) mod table;

pub(crate) use arena::{Arena, PktList};
pub(crate) use depth::DepthIndex;
pub(crate) use drr::{DrrRound, FlowQueues};
pub(crate) use lifetime::ShortClassifier;
pub use lifetime::ShortBy;
pub(crate) use table::{BoundedTable, Slot};

/// "No index" in the `u32`-indexed intrusive lists (Linux `sfq_index` style: indices, not
/// pointers, to keep the per-flow structs small).
pub(crate) const NIL: u32 = u32::MAX;
