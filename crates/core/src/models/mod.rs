//! Closed-form analyses the disciplines are built on (pure functions, no state).

pub mod size_aware_analysis;
