//! Range checks shared by the scenario's tables: each failure names the field, the value
//! and what is allowed.

use smallpipe_core::ConfigError;

pub(crate) fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<(), ConfigError> {
    if ok { Ok(()) } else { Err(ConfigError::new(field, value, allowed)) }
}

pub(crate) fn finite_at_least(field: &str, v: f64, min: f64) -> Result<(), ConfigError> {
    check(v.is_finite() && v >= min, field, v, &format!("a finite number >= {min}"))
}
