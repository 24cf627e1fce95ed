//! smallpipe-core: the queue-discipline library shared by the simulator and the middlebox.
//!
//! Sans-IO: nothing here reads a clock, opens a socket or owns a global. Every entry point
//! takes `now` ([`Instant`], integer nanoseconds) and, where it needs randomness, a seeded
//! [`Rng`] handed in. A discipline sees only the [`Packet`] view a box on the wire sees.
#![forbid(unsafe_code)]

pub mod aqm;
pub mod models;
pub mod error;
pub mod link;
pub mod packet;
pub mod qdisc;
pub mod rng;
pub mod stats;
pub mod time;

pub use error::ConfigError;
pub use packet::{FlowKey, Packet, SackBlock, TcpFlags};
pub use qdisc::{Accounted, AnyQdisc, CounterKind, Cx, Qdisc, QdiscConfig, QdiscCounter};
pub use rng::Rng;
pub use stats::{DropReason, MarkReason, QdiscStats};
pub use time::{Duration, Instant};
