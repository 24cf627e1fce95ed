//! Configuration errors: each names the field, the bad value and what is allowed.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
#[error("{field}: {value} is not allowed; expected {allowed}")]
pub struct ConfigError {
    /// Dotted path of the offending field, e.g. `link.qdisc.limit_pkts`.
    pub field: String,
    /// The rejected value, rendered for humans.
    pub value: String,
    /// What would have been accepted.
    pub allowed: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, value: impl ToString, allowed: impl Into<String>) -> Self {
        Self { field: field.into(), value: value.to_string(), allowed: allowed.into() }
    }

    /// Prefix the field path, so nested configs report the full path.
    pub fn within(mut self, parent: &str) -> Self {
        self.field = format!("{parent}.{}", self.field);
        self
    }
}
