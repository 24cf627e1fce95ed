//! Seeded randomness. Each component gets its own stream derived from the run seed and a
//! stream id, so adding a component does not shift the draws of the others.

use rand::{Rng as _, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Debug, Clone)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// Stream `stream` of run seed `seed` (SplitMix64 mixing of the pair, then xoshiro256++).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
        z = splitmix64(&mut z);
        Rng(Xoshiro256PlusPlus::seed_from_u64(z))
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }
    /// Bernoulli(p).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }
    /// Uniform integer in [0, n]; 0 when n = 0.
    pub fn below_inclusive(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.0.random_range(0..=n) }
    }
    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - U is in (0, 1], so the log is finite.
        -mean * (1.0 - self.uniform()).ln()
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// The underlying generator, for `rand_distr` distributions.
    pub fn inner(&mut self) -> &mut impl rand::Rng {
        &mut self.0
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_stream_repeat() {
        let (mut a, mut b) = (Rng::new(7, 3), Rng::new(7, 3));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn streams_differ() {
        assert_ne!(Rng::new(7, 3).next_u64(), Rng::new(7, 4).next_u64());
        assert_ne!(Rng::new(7, 3).next_u64(), Rng::new(8, 3).next_u64());
    }

    #[test]
    fn exponential_mean_is_close() {
        let mut r = Rng::new(1, 1);
        let n = 200_000;
        let mean = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / n as f64;
        // Standard error of the mean is 2/sqrt(n) = 0.0045; allow 5 of them.
        assert!((mean - 2.0).abs() < 0.025, "{mean}");
    }
}
