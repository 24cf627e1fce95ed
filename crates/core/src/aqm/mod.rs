//! Active queue management decision cores, written once and shared (Linux `red.h` and
//! `codel_impl.h`): each is a `*Params` (configuration), a `*Vars` (state) and a `*Stats`
//! (counters) plus free functions that take `now` and, for RED, the [`crate::Rng`]. They
//! hold no packets; the disciplines own the queues and ask the core what to do.

pub mod cobalt;
pub mod codel;
pub mod red;

pub use codel::{codel_dequeue, CodelOutcome, CodelParams, CodelQueue, CodelStats, CodelVars};
pub use red::{red_on_arrival, red_update_avg, RedParams, RedStats, RedVars, RedVerdict};
