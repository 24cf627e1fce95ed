//! Integer-nanosecond time. `Instant` matches CLOCK_MONOTONIC in the middlebox and event
//! time in the simulator; there are no floating-point seconds in the core.

use core::ops::{Add, AddAssign, Sub};

/// A point in time, nanoseconds since the start of the run (or of the monotonic clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time since `earlier`, zero if `earlier` is in the future.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// `s` seconds from a configuration value, rounded to the nearest nanosecond (where a
    /// scenario's decimal seconds enter integer time; nothing inside the core calls it).
    #[inline]
    pub fn from_secs_f64(s: f64) -> Self {
        Duration((s * 1e9).round() as u64)
    }
    /// `ms` milliseconds from a configuration value, rounded to the nearest nanosecond.
    #[inline]
    pub fn from_millis_f64(ms: f64) -> Self {
        Duration((ms * 1e6).round() as u64)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time to serialize `bytes` at `rate_bps`, rounded up to a whole nanosecond.
    pub fn serialization(bytes: u64, rate_bps: u64) -> Duration {
        Duration((bytes * 8 * 1_000_000_000).div_ceil(rate_bps))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0 + d.0)
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}
impl Sub for Instant {
    type Output = Duration;
    /// Panics in debug builds if `rhs` is later: use `saturating_since` when unsure.
    fn sub(self, rhs: Instant) -> Duration {
        Duration(self.0 - rhs.0)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0 + d.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_of_500_bytes_at_1_mbps_is_4_ms() {
        assert_eq!(Duration::serialization(500, 1_000_000), Duration::from_millis(4));
    }

    #[test]
    fn serialization_rounds_up() {
        // 1 byte at 3 bit/s = 8/3 s = 2.666..7 s.
        assert_eq!(Duration::serialization(1, 3).0, 2_666_666_667);
    }

    #[test]
    fn saturating_since_never_underflows() {
        assert_eq!(Instant(5).saturating_since(Instant(9)), Duration::ZERO);
        assert_eq!(Instant(9) - Instant(5), Duration(4));
    }
}
