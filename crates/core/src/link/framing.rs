//! Per-packet overhead and link-layer framing in the rate accounting, as CAKE's `overhead`,
//! `mpu`, `atm` and `ptm` keywords (and sqm-scripts) set them: the link spends its rate on
//! the bytes the wire carries, not on the IP packet alone.
//!
//! The packet's length here is its IP length; `overhead_bytes` is added to it (what the
//! layers below IP add: e.g. PPPoE, Ethernet, VLAN headers and FCS; negative to take
//! bytes off), the result is raised to `mpu_bytes`, then framed:
//! - ATM (ADSL): 48 payload bytes per 53-byte cell, the last cell padded:
//!   `ceil(len / 48) * 53`;
//! - PTM (VDSL2, 64b/65b encoding): one byte in 65 is overhead: `len + ceil(len / 64)`.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FramingKind {
    /// The wire carries the bytes as they are (after overhead and MPU).
    #[default]
    None,
    /// 53-byte cells carrying 48 bytes each.
    Atm,
    /// 64b/65b encoding.
    Ptm,
}

impl FramingKind {
    pub fn is_none(&self) -> bool {
        *self == FramingKind::None
    }
}

/// The least and most overhead a link may add per packet, bytes (CAKE's range).
pub const OVERHEAD_RANGE_BYTES: (i32, i32) = (-64, 256);
/// The largest minimum packet unit, bytes (CAKE's).
pub const MAX_MPU_BYTES: u32 = 256;

/// How many bytes a packet of a given IP length takes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Framing {
    pub overhead_bytes: i32,
    pub mpu_bytes: u32,
    pub kind: FramingKind,
}

impl Framing {
    /// Checks the knobs; errors name `overhead_bytes` or `mpu_bytes` (the caller prefixes
    /// its table).
    pub fn new(overhead_bytes: i32, mpu_bytes: u32, kind: FramingKind) -> Result<Self, ConfigError> {
        let (lo, hi) = OVERHEAD_RANGE_BYTES;
        if !(lo..=hi).contains(&overhead_bytes) {
            return Err(ConfigError::new("overhead_bytes", overhead_bytes, format!("a whole number of bytes from {lo} to {hi}")));
        }
        if mpu_bytes > MAX_MPU_BYTES {
            return Err(ConfigError::new("mpu_bytes", mpu_bytes, format!("0 to {MAX_MPU_BYTES} bytes")));
        }
        Ok(Framing { overhead_bytes, mpu_bytes, kind })
    }

    /// Whether every packet takes its IP length on the wire (the default).
    pub fn is_identity(&self) -> bool {
        self.overhead_bytes == 0 && self.mpu_bytes == 0 && self.kind.is_none()
    }

    /// Bytes on the wire for a packet of `ip_len_bytes`.
    #[inline]
    pub fn wire_bytes(&self, ip_len_bytes: u64) -> u64 {
        if self.is_identity() {
            return ip_len_bytes;
        }
        // A negative overhead larger than the packet leaves nothing (then the MPU, if any).
        let len = (ip_len_bytes as i64 + i64::from(self.overhead_bytes)).max(0) as u64;
        let len = len.max(u64::from(self.mpu_bytes));
        match self.kind {
            FramingKind::None => len,
            FramingKind::Atm => len.div_ceil(48) * 53,
            FramingKind::Ptm => len + len.div_ceil(64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(overhead: i32, mpu: u32, kind: FramingKind) -> Framing {
        Framing::new(overhead, mpu, kind).unwrap()
    }

    #[test]
    fn atm_cells_and_ptm_encoding_follow_their_definitions() {
        // 1500 bytes: 31.25 cells of payload -> 32 cells of 53 bytes.
        assert_eq!(f(0, 0, FramingKind::Atm).wire_bytes(1500), 32 * 53);
        // PPPoA-like 10 bytes of overhead on a 38-byte packet: 48 bytes, exactly one cell.
        assert_eq!(f(10, 0, FramingKind::Atm).wire_bytes(38), 53);
        assert_eq!(f(10, 0, FramingKind::Atm).wire_bytes(39), 106);
        // 64b/65b: 1500 bytes -> 1500 + 24 (23.4 groups of 64, rounded up).
        assert_eq!(f(0, 0, FramingKind::Ptm).wire_bytes(1500), 1524);
        assert_eq!(f(0, 0, FramingKind::Ptm).wire_bytes(64), 65);
    }

    #[test]
    fn overhead_then_mpu_then_framing() {
        assert_eq!(f(0, 0, FramingKind::None).wire_bytes(40), 40);
        assert_eq!(f(18, 0, FramingKind::None).wire_bytes(40), 58);
        assert_eq!(f(18, 64, FramingKind::None).wire_bytes(40), 64);
        assert_eq!(f(-64, 0, FramingKind::None).wire_bytes(40), 0);
        assert_eq!(f(-20, 0, FramingKind::None).wire_bytes(1500), 1480);
        // MPU before the cells: 40 + 8 = 48 -> raised to 96 -> two cells.
        assert_eq!(f(8, 96, FramingKind::Atm).wire_bytes(40), 106);
    }

    #[test]
    fn bad_knobs_name_the_field_and_the_range() {
        let e = Framing::new(300, 0, FramingKind::None).unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("overhead_bytes", "300"));
        assert!(e.allowed.contains("-64 to 256"), "{e}");
        let e = Framing::new(0, 1000, FramingKind::Atm).unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("mpu_bytes", "1000"));
    }
}
