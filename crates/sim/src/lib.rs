//! smallpipe-sim: a deterministic discrete-event simulator of TCP over thin, crowded links.
//!
//! All state lives in one [`Simulator`]; events are ordered by (time, insertion sequence),
//! so a seed fixes the result bit for bit. Queue disciplines come from `smallpipe-core` and
//! see only wire-visible packets.
#![forbid(unsafe_code)]

mod checks;
pub mod config;
pub mod epochs;
pub mod flow_delays;
pub mod flows;
pub mod workload;
pub mod event;
pub mod link;
mod prefetch;
pub mod rcp;
pub mod pcap;
pub mod results;
pub mod sim;
pub mod squid;
pub mod tcp;
pub mod trace;
pub mod udp;
mod trace_config;

pub use config::Scenario;
pub use results::Results;
pub use sim::{simulate, Simulator};
