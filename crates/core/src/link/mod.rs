//! What a link does to packets besides queueing them, shared by the simulator and the
//! middlebox so both emulate the same link: when a transmission ends (a constant rate or a
//! mahimahi delivery trace, with per-packet overhead and ATM/PTM framing in the byte count)
//! and which packets the wire loses in bursts (Gilbert–Elliott). `docs/links.md`.

pub mod delivery_trace;
pub mod framing;
pub mod gilbert_elliott;

pub use delivery_trace::{DeliveryTrace, TraceError, TraceServer, OPPORTUNITY_BYTES};
pub use framing::{Framing, FramingKind};
pub use gilbert_elliott::{GilbertElliott, GilbertElliottConfig, LossModelConfig};
