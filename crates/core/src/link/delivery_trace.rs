//! Trace-driven link rate in mahimahi's format (`mm-link`'s `LinkQueue`): each line of the
//! file is a delivery opportunity at that millisecond, lines non-decreasing, several lines
//! with the same time being several opportunities then. The trace loops with period = its
//! last time stamp: opportunity `i` of loop `n` is at `n * period + t_i` ms from the link's
//! start.
//!
//! An opportunity carries up to `OPPORTUNITY_BYTES` (1500) bytes, on mahimahi's rules: the
//! packet in service takes bytes from it first, then the packets that have reached the
//! queue by its time, in the discipline's order, while bytes are left; a packet larger than
//! what is left keeps the rest for the next opportunities (its partial bytes carry over) and
//! leaves at the opportunity that carries its last byte; bytes no packet is waiting for are
//! wasted. (mahimahi counts 1504 bytes per opportunity because its TUN frames carry a
//! 4-byte header in front of each IP packet: one 1500-byte IP packet per opportunity there
//! as here.) The capacity of the trace is `lines * 1500 bytes / period`.

use crate::error::ConfigError;
use crate::time::Instant;
use std::sync::Arc;

/// Bytes one delivery opportunity carries.
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// Nanoseconds per trace millisecond.
const NS_PER_MS: u64 = 1_000_000;

/// A trace line that is not allowed: its 1-based line number, the text and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {value:?} is not allowed; expected {allowed}")]
pub struct TraceError {
    /// 1-based; 0 for the file as a whole (empty, or no time past 0).
    pub line: usize,
    pub value: String,
    pub allowed: String,
}

/// A parsed trace: the opportunities' times in ms, non-decreasing, the last one > 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryTrace {
    times_ms: Vec<u64>,
}

impl DeliveryTrace {
    /// Parses the text of a trace file (trailing whitespace on a line and a final newline
    /// are accepted; empty lines in between are not, as mahimahi refuses them).
    pub fn parse(text: &str) -> Result<Self, TraceError> {
        let mut times_ms: Vec<u64> = Vec::new();
        let lines: Vec<&str> = text.trim_end().lines().collect();
        for (i, raw) in lines.iter().enumerate() {
            let line = i + 1;
            let s = raw.trim();
            let ms: u64 = s.parse().map_err(|_| TraceError {
                line,
                value: s.into(),
                allowed: "a whole number of milliseconds, one delivery opportunity per line".into(),
            })?;
            if let Some(&prev) = times_ms.last() {
                if ms < prev {
                    return Err(TraceError {
                        line,
                        value: s.into(),
                        allowed: format!("a time at or after the line before ({prev} ms): times never decrease"),
                    });
                }
            }
            times_ms.push(ms);
        }
        match times_ms.last() {
            None => Err(TraceError { line: 0, value: String::new(), allowed: "at least one line (a delivery opportunity, in ms)".into() }),
            Some(0) => Err(TraceError {
                line: times_ms.len(),
                value: "0".into(),
                allowed: "a last time stamp above 0 ms (it is the period the trace loops with)".into(),
            }),
            Some(_) => Ok(DeliveryTrace { times_ms }),
        }
    }

    /// Reads and parses the trace file at `path` (a config's, read once at set-up); errors
    /// name `field`, the file and the line.
    pub fn load(field: &str, path: &str) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(field, path, format!("a readable trace file in mahimahi's format ({e})")))?;
        Self::parse(&text).map_err(|e| match e.line {
            0 => ConfigError::new(field, format!("{path} (empty)"), e.allowed),
            line => ConfigError::new(field, format!("{path} line {line}: {:?}", e.value), e.allowed),
        })
    }

    /// The loop's length, ms: the last time stamp.
    pub fn period_ms(&self) -> u64 {
        *self.times_ms.last().expect("a parsed trace has lines")
    }

    /// Delivery opportunities per loop.
    pub fn opportunities(&self) -> usize {
        self.times_ms.len()
    }

    /// The trace's capacity: bytes it can carry per loop over the loop's length, bit/s.
    pub fn mean_rate_bps(&self) -> f64 {
        self.opportunities() as f64 * f64::from(OPPORTUNITY_BYTES) * 8.0 * 1000.0 / self.period_ms() as f64
    }

    /// Time of opportunity `i` of loop `n`, ns from the link's start.
    fn at(&self, n: u64, i: usize) -> Instant {
        Instant((n * self.period_ms() + self.times_ms[i]) * NS_PER_MS)
    }
}

/// A link's transmitter driven by a trace: which opportunity comes next and how many of
/// its bytes are left.
#[derive(Debug, Clone)]
pub struct TraceServer {
    trace: Arc<DeliveryTrace>,
    /// The next opportunity with bytes left: loop `loop_n`, line `line`.
    loop_n: u64,
    line: usize,
    /// Bytes left in that opportunity (all of them unless a packet ended in it).
    left_bytes: u32,
}

impl TraceServer {
    pub fn new(trace: Arc<DeliveryTrace>) -> Self {
        TraceServer { trace, loop_n: 0, line: 0, left_bytes: OPPORTUNITY_BYTES }
    }

    /// When a packet that can go from `t` on (it has arrived and the transmitter is free)
    /// starts: the first opportunity with bytes left at or after `t`. Those before `t` had
    /// nothing to carry and are gone.
    pub fn next_start(&self, t: Instant) -> Instant {
        let (n, i) = self.first_at_or_after(t);
        self.trace.at(n, i)
    }

    /// Sends `wire_bytes` starting at `start` (a time `next_start` gave, at or after the
    /// previous packet's end); returns when its last byte goes: the time of the opportunity
    /// that carries it.
    pub fn send(&mut self, start: Instant, wire_bytes: u64) -> Instant {
        let (n, i) = self.first_at_or_after(start);
        debug_assert_eq!(self.trace.at(n, i), start, "a start that next_start gave");
        if (n, i) != (self.loop_n, self.line) {
            (self.loop_n, self.line, self.left_bytes) = (n, i, OPPORTUNITY_BYTES);
        }
        let mut rest = wire_bytes;
        loop {
            let take = rest.min(u64::from(self.left_bytes));
            rest -= take;
            self.left_bytes -= take as u32;
            let end = self.trace.at(self.loop_n, self.line);
            if self.left_bytes == 0 {
                self.step();
            }
            if rest == 0 {
                return end;
            }
        }
    }

    /// On to the next opportunity, full.
    fn step(&mut self) {
        self.line += 1;
        if self.line == self.trace.times_ms.len() {
            self.line = 0;
            self.loop_n += 1;
        }
        self.left_bytes = OPPORTUNITY_BYTES;
    }

    /// The first opportunity, from the current one on, at or after `t`.
    fn first_at_or_after(&self, t: Instant) -> (u64, usize) {
        if self.trace.at(self.loop_n, self.line) >= t {
            return (self.loop_n, self.line);
        }
        // The first whole ms at or after t; then the loop n whose (n * P, (n + 1) * P]
        // holds it (a time stamp equal to P belongs to the loop it ends), and the first line
        // of that loop at or after it: the last line (P) always is.
        let t_ms = t.as_nanos().div_ceil(NS_PER_MS);
        let period = self.trace.period_ms();
        let n = t_ms.saturating_sub(1) / period;
        let into = t_ms - n * period;
        let i = self.trace.times_ms.partition_point(|&ms| ms < into);
        (n, i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(text: &str) -> TraceServer {
        TraceServer::new(Arc::new(DeliveryTrace::parse(text).unwrap()))
    }

    const MS: u64 = NS_PER_MS;

    #[test]
    fn parse_refuses_what_mahimahi_refuses_with_the_line() {
        let t = DeliveryTrace::parse("1\n1\n5\n10\n").unwrap();
        assert_eq!((t.opportunities(), t.period_ms()), (4, 10));
        assert_eq!(t.mean_rate_bps(), 4.0 * 1500.0 * 8.0 / 0.010);
        let e = DeliveryTrace::parse("1\n5\n3\n").unwrap_err();
        assert_eq!((e.line, e.value.as_str()), (3, "3"));
        assert!(e.allowed.contains("5 ms"), "{e}");
        let e = DeliveryTrace::parse("1\n\n3\n").unwrap_err();
        assert_eq!((e.line, e.value.as_str()), (2, ""));
        let e = DeliveryTrace::parse("1\n2.5\n").unwrap_err();
        assert_eq!((e.line, e.value.as_str()), (2, "2.5"));
        assert_eq!(DeliveryTrace::parse("\n").unwrap_err().line, 0);
        assert_eq!(DeliveryTrace::parse("0\n0\n").unwrap_err().line, 2);
    }

    #[test]
    fn full_size_packets_take_one_opportunity_each_and_the_trace_loops() {
        // Opportunities at 2, 2, 5 ms; period 5: then 7, 7, 10, 12, 12, 15, ...
        let mut s = server("2\n2\n5\n");
        let mut t = Instant::ZERO;
        let mut ends = Vec::new();
        for _ in 0..7 {
            t = s.next_start(t);
            t = s.send(t, 1500);
            ends.push(t.as_nanos() / MS);
        }
        assert_eq!(ends, vec![2, 2, 5, 7, 7, 10, 12]);
    }

    #[test]
    fn partial_bytes_carry_over_and_leftovers_serve_the_next_packet() {
        // One opportunity per ms (1..=10, period 10).
        let lines: String = (1..=10).map(|ms| format!("{ms}\n")).collect();
        let mut s = server(&lines);
        // 1000 B: ends at 1 ms with 500 B left; 1000 B more: 500 at 1 ms, 500 at 2 ms.
        let a = s.send(s.next_start(Instant::ZERO), 1000);
        assert_eq!(a, Instant(MS));
        assert_eq!(s.next_start(a), a, "the packet behind it starts in the same opportunity");
        let b = s.send(a, 1000);
        assert_eq!(b, Instant(2 * MS));
        // 4000 B from there: 1000 left at 2 ms, then 3, 4 ms full, 4 ms: 1000 + 1500 + 1500 = 4000.
        let c = s.send(s.next_start(b), 4000);
        assert_eq!(c, Instant(4 * MS));
        // The link idles; an arrival at 6.2 ms waits for the 7 ms opportunity (5, 6 wasted).
        assert_eq!(s.next_start(Instant(6 * MS + 200_000)), Instant(7 * MS));
        // Exactly at an opportunity's time: that one.
        assert_eq!(s.next_start(Instant(6 * MS)), Instant(6 * MS));
        // Far in the future: loop 1000, line of 3 ms.
        assert_eq!(s.next_start(Instant(10_002 * MS + 1)), Instant(10_003 * MS));
        // The boundary: at 20 ms both loop 1's last line and loop 2's (none at 0 here).
        assert_eq!(s.next_start(Instant(19 * MS + 1)), Instant(20 * MS));
    }

    #[test]
    fn a_saturated_server_delivers_the_trace_capacity() {
        // Irregular trace: 3 lines at 4 ms, 1 at 9 ms, 2 at 20 ms; packets of 700 B back to
        // back: every opportunity used in full (700 does not divide 1500: carry-over).
        let mut s = server("4\n4\n4\n9\n20\n20\n");
        let (mut t, mut bytes) = (Instant::ZERO, 0u64);
        loop {
            t = s.send(s.next_start(t), 700);
            if t > Instant(20 * 100 * MS) {
                break;
            }
            bytes += 700;
        }
        // 100 loops of 6 x 1500 B by 2 s: all but the part of a packet that ran over.
        assert!((900_000 - 700..=900_000).contains(&bytes), "{bytes}");
    }
}
