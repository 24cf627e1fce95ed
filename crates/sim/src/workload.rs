//! Random quantities of workloads: sizes (bytes) and times (seconds), as a number or a
//! `{ dist = ... }` table. Sampling uses `rand_distr` on the component's own stream.

use rand_distr::{Distribution, LogNormal, Pareto};
use serde::{Deserialize, Serialize};
use smallpipe_core::{ConfigError, Rng};

/// A constant, or a distribution spelled `{ dist = "pareto", mean = 25, shape = 1.2 }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Dist {
    Fixed(f64),
    Spec(DistSpec),
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum DistSpec {
    Fixed { value: f64 },
    Uniform { min: f64, max: f64 },
    Exponential { mean: f64 },
    /// Pareto with the given mean: scale = mean (shape − 1) / shape; shape > 1.
    Pareto { mean: f64, shape: f64 },
    /// Lognormal with `mu`, `sigma` of the natural log of the value.
    Lognormal { mu: f64, sigma: f64 },
    /// SURGE web object sizes (Barford & Crovella 1998, as in Table 1 of the size-aware
    /// paper): lognormal body (mu 9.357, sigma 1.318 of ln bytes) below `cutoff`, and a
    /// Pareto tail (scale = cutoff, `shape`) above it, spliced at the body's own tail mass.
    Surge {
        #[serde(default = "surge_cutoff")]
        cutoff: f64,
        #[serde(default = "surge_shape")]
        shape: f64,
    },
    /// One of `values`, uniformly.
    Empirical { values: Vec<f64> },
}

fn surge_cutoff() -> f64 {
    133_000.0
}
fn surge_shape() -> f64 {
    1.5
}

impl Dist {
    pub fn validate(&self, field: &str, min: f64) -> Result<(), ConfigError> {
        let bad = |v: String, allowed: &str| Err(ConfigError::new(field, v, allowed));
        let ok = |v: f64| v.is_finite() && v >= min;
        match self {
            Dist::Fixed(v) | Dist::Spec(DistSpec::Fixed { value: v }) if !ok(*v) => bad(v.to_string(), &format!("a finite value >= {min}")),
            Dist::Spec(DistSpec::Uniform { min: a, max: b }) if !(ok(*a) && b.is_finite() && a <= b) =>
                bad(format!("[{a}, {b}]"), &format!("min <= max, min >= {min}")),
            Dist::Spec(DistSpec::Exponential { mean }) if !(ok(*mean) && *mean > 0.0) => bad(mean.to_string(), "a positive finite mean"),
            Dist::Spec(DistSpec::Pareto { mean, shape }) if !(ok(*mean) && *mean > 0.0 && shape.is_finite() && *shape > 1.0) =>
                bad(format!("mean {mean}, shape {shape}"), "a positive mean and a shape > 1 (finite mean)"),
            Dist::Spec(DistSpec::Lognormal { mu, sigma }) if !(mu.is_finite() && sigma.is_finite() && *sigma >= 0.0) =>
                bad(format!("mu {mu}, sigma {sigma}"), "finite mu and sigma >= 0"),
            Dist::Spec(DistSpec::Surge { cutoff, shape }) if !(cutoff.is_finite() && *cutoff > 0.0 && shape.is_finite() && *shape > 0.0) =>
                bad(format!("cutoff {cutoff}, shape {shape}"), "a positive cutoff and shape"),
            Dist::Spec(DistSpec::Empirical { values }) if values.is_empty() || !values.iter().all(|v| ok(*v)) =>
                bad(format!("{values:?}"), &format!("a non-empty list of finite values >= {min}")),
            _ => Ok(()),
        }
    }

    /// The distribution's mean (for target loads); `None` where it is infinite.
    pub fn mean(&self) -> Option<f64> {
        Some(match self {
            Dist::Fixed(v) | Dist::Spec(DistSpec::Fixed { value: v }) => *v,
            Dist::Spec(DistSpec::Uniform { min, max }) => (min + max) / 2.0,
            Dist::Spec(DistSpec::Exponential { mean }) | Dist::Spec(DistSpec::Pareto { mean, .. }) => *mean,
            Dist::Spec(DistSpec::Lognormal { mu, sigma }) => (mu + sigma * sigma / 2.0).exp(),
            Dist::Spec(DistSpec::Surge { .. }) => return None,
            Dist::Spec(DistSpec::Empirical { values }) => values.iter().sum::<f64>() / values.len() as f64,
        })
    }

    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match self {
            Dist::Fixed(v) | Dist::Spec(DistSpec::Fixed { value: v }) => *v,
            Dist::Spec(DistSpec::Uniform { min, max }) => min + (max - min) * rng.uniform(),
            Dist::Spec(DistSpec::Exponential { mean }) => rng.exponential(*mean),
            Dist::Spec(DistSpec::Pareto { mean, shape }) => {
                let scale = mean * (shape - 1.0) / shape;
                Pareto::new(scale, *shape).expect("validated").sample(rng.inner())
            }
            Dist::Spec(DistSpec::Lognormal { mu, sigma }) => LogNormal::new(*mu, *sigma).expect("validated").sample(rng.inner()),
            Dist::Spec(DistSpec::Surge { cutoff, shape }) => {
                let body = LogNormal::new(9.357, 1.318).expect("constants").sample(rng.inner());
                if body < *cutoff {
                    body
                } else {
                    Pareto::new(*cutoff, *shape).expect("validated").sample(rng.inner())
                }
            }
            Dist::Spec(DistSpec::Empirical { values }) => values[rng.below_inclusive(values.len() as u64 - 1) as usize],
        }
    }

    /// A whole number of bytes, at least one.
    pub fn sample_bytes(&self, rng: &mut Rng) -> u64 {
        (self.sample(rng).round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(d: &Dist, n: usize) -> f64 {
        let mut rng = Rng::new(1, 1);
        (0..n).map(|_| d.sample(&mut rng)).sum::<f64>() / n as f64
    }

    #[test]
    fn pareto_mean_matches_its_parameter() {
        // Shape 2.5 has finite variance: mean 25, variance = scale² a / ((a-1)² (a-2)) = 208.3,
        // standard error over 200 000 draws 0.032.
        let d = Dist::Spec(DistSpec::Pareto { mean: 25.0, shape: 2.5 });
        assert!((mean_of(&d, 200_000) - 25.0).abs() < 0.2);
    }

    #[test]
    fn lognormal_mean_is_exp_mu_plus_half_sigma_squared() {
        let d = Dist::Spec(DistSpec::Lognormal { mu: 1.0, sigma: 0.5 });
        let expected = (1.0f64 + 0.125).exp();
        assert!((mean_of(&d, 200_000) - expected).abs() < 0.02 * expected);
        assert_eq!(d.mean(), Some(expected));
    }

    #[test]
    fn surge_splices_at_the_cutoff() {
        let d = Dist::Spec(DistSpec::Surge { cutoff: 133_000.0, shape: 1.5 });
        let mut rng = Rng::new(2, 2);
        let n = 200_000;
        let draws: Vec<f64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        // P(lognormal(9.357, 1.318) >= 133 000) = P(Z >= (ln 133000 - 9.357)/1.318 = 1.852) = 0.032.
        let tail = draws.iter().filter(|&&x| x >= 133_000.0).count() as f64 / n as f64;
        assert!((tail - 0.032).abs() < 0.003, "{tail}");
        // The median is the lognormal's: e^9.357 = 11 580 bytes.
        let mut sorted = draws.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[n / 2] / 11_580.0 - 1.0).abs() < 0.02);
    }

    #[test]
    fn validation_names_the_field() {
        let e = Dist::Spec(DistSpec::Pareto { mean: 25.0, shape: 1.0 }).validate("flows[0].size", 1.0).unwrap_err();
        assert_eq!(e.field, "flows[0].size");
        assert!(e.allowed.contains("shape > 1"));
        assert!(Dist::Fixed(0.5).validate("x", 1.0).is_err());
    }
}
