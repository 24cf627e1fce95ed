//! Queue-delay quantiles over the last N seconds: a ring of one-second histograms, so memory
//! is fixed (N histograms of a fixed bucket count) however many packets pass.

use hdrhistogram::Histogram;

/// Slot length: one second of departures per histogram.
pub const SLOT_NS: u64 = 1_000_000_000;
/// Delays from 1 µs to 60 s, two significant digits (a 1 % bucket).
const LOWEST_NS: u64 = 1_000;
const HIGHEST_NS: u64 = 60_000_000_000;

#[derive(Debug, Clone)]
pub struct DelayWindow {
    slots: Vec<Histogram<u32>>,
    /// The second (run time / SLOT_NS) each slot holds.
    slot_epoch: Vec<u64>,
}

impl DelayWindow {
    /// A window of `seconds` (at least 1).
    pub fn new(seconds: u32) -> Self {
        let h = Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, 2).expect("constant bounds are valid");
        DelayWindow { slots: vec![h; seconds.max(1) as usize], slot_epoch: vec![u64::MAX; seconds.max(1) as usize] }
    }

    pub fn seconds(&self) -> u32 {
        self.slots.len() as u32
    }

    /// A packet that waited `delay_ns` in the queue left it at `now_ns`.
    pub fn record(&mut self, now_ns: u64, delay_ns: u64) {
        let epoch = now_ns / SLOT_NS;
        let i = (epoch % self.slots.len() as u64) as usize;
        if self.slot_epoch[i] != epoch {
            self.slots[i].reset();
            self.slot_epoch[i] = epoch;
        }
        self.slots[i].saturating_record(delay_ns.clamp(LOWEST_NS, HIGHEST_NS));
    }

    /// Departures of the last `seconds()` whole or partial seconds up to `now_ns`, merged.
    pub fn merged(&self, now_ns: u64) -> Histogram<u32> {
        let epoch = now_ns / SLOT_NS;
        let oldest = epoch.saturating_sub(self.slots.len() as u64 - 1);
        let mut m = Histogram::new_from(&self.slots[0]);
        for (h, &e) in self.slots.iter().zip(&self.slot_epoch) {
            if e != u64::MAX && (oldest..=epoch).contains(&e) {
                m.add(h).expect("same bounds");
            }
        }
        m
    }

    /// Bytes of histogram counters held (fixed at construction).
    pub fn counter_bytes(&self) -> usize {
        self.slots.iter().map(|h| h.distinct_values() * std::mem::size_of::<u32>()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_cover_only_the_last_seconds() {
        let mut w = DelayWindow::new(10);
        // Second 0: 100 packets at 500 ms; seconds 20..=29: 1..=100 ms, ten a second.
        for _ in 0..100 {
            w.record(0, 500_000_000);
        }
        for s in 20..30u64 {
            for j in 1..=10u64 {
                w.record(s * SLOT_NS + j, (10 * (s - 20) + j) * 1_000_000);
            }
        }
        let m = w.merged(29 * SLOT_NS + 500);
        // The 500 ms of second 0 are out of the window; what is left is 1..=100 ms uniformly,
        // whose p50 / p95 / p99 are 50 / 95 / 99 ms (within the 1 % bucket).
        assert_eq!(m.len(), 100);
        for (q, want_ms) in [(0.5, 50.0), (0.95, 95.0), (0.99, 99.0)] {
            let got = m.value_at_quantile(q) as f64 / 1e6;
            assert!((got - want_ms).abs() <= want_ms * 0.01, "p{q}: {got} ms, want {want_ms}");
        }
        // Five seconds on, only seconds 25..=29 (and the empty 30..=34) remain: 51..=100 ms.
        let m = w.merged(34 * SLOT_NS);
        assert_eq!(m.len(), 50);
        assert!((m.min() as f64 / 1e6 - 51.0).abs() <= 0.51, "{}", m.min());
    }

    #[test]
    fn memory_is_fixed_by_the_window_not_the_traffic() {
        let mut w = DelayWindow::new(10);
        let before = w.counter_bytes();
        for i in 0..1_000_000u64 {
            w.record(i * 100_000, (i * 7919) % 5_000_000_000);
        }
        assert_eq!(w.counter_bytes(), before);
        eprintln!("delay window of 10 s: {before} bytes of counters");
    }
}
