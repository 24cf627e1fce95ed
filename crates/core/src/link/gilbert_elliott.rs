//! Bursty loss: the Gilbert–Elliott two-state model, drawn once per packet.
//!
//! The channel is Good or Bad. A packet is lost with probability `1 - k` in Good and
//! `1 - h` in Bad (`k`, `h`: the probabilities a packet gets through); after each packet
//! the channel moves Good -> Bad with probability `p` and Bad -> Good with probability `r`.
//! A run starts in Good. The stationary share of packets in Bad is `p / (p + r)`, so the
//! long-run loss rate is `(r (1 - k) + p (1 - h)) / (p + r)`; a stay in Bad lasts `1 / r`
//! packets on average (geometric), which with `h = 0, k = 1` (Gilbert's original: Bad loses
//! every packet, Good none) is the mean loss burst.

use crate::error::ConfigError;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// `loss_model = { kind = "gilbert_elliott", p, r, h, k }`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LossModelConfig {
    GilbertElliott(GilbertElliottConfig),
}

/// The Gilbert–Elliott model's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottConfig {
    /// Good -> Bad transition probability per packet.
    pub p: f64,
    /// Bad -> Good transition probability per packet (1 / mean stay in Bad).
    pub r: f64,
    /// Probability a packet gets through in Bad (default 0: Bad loses everything).
    #[serde(default)]
    pub h: f64,
    /// Probability a packet gets through in Good (default 1: Good loses nothing).
    #[serde(default = "one")]
    pub k: f64,
}

fn one() -> f64 {
    1.0
}

impl LossModelConfig {
    /// Checks the parameters; errors name `p`, `r`, `h` or `k` (the caller prefixes its
    /// field).
    pub fn build(&self) -> Result<GilbertElliott, ConfigError> {
        let LossModelConfig::GilbertElliott(GilbertElliottConfig { p, r, h, k }) = *self;
        for (name, v) in [("p", p), ("h", h), ("k", k)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::new(name, v, "a probability in [0, 1]"));
            }
        }
        if !(r > 0.0 && r <= 1.0) {
            return Err(ConfigError::new("r", r, "a probability in (0, 1] (1 / r is the mean stay in Bad, in packets)"));
        }
        Ok(GilbertElliott { p, r, h, k, bad: false })
    }

    /// serde's error path stops at the tagged enum (`link.loss_model`): for the knobs of a
    /// table of `kind`, the path of the bad field inside it and the error there (as
    /// `QdiscConfig::locate_error` does for a discipline's table); `None` for an unknown
    /// kind or knobs that parse.
    pub fn locate_error<'de, D: serde::Deserializer<'de>>(kind: &str, knobs: D) -> Option<(String, String)> {
        match kind {
            "gilbert_elliott" => serde_path_to_error::deserialize::<D, GilbertElliottConfig>(knobs)
                .err()
                .map(|e| (e.path().to_string(), e.into_inner().to_string())),
            _ => None,
        }
    }

    /// The long-run fraction of packets lost.
    pub fn stationary_loss(&self) -> f64 {
        let LossModelConfig::GilbertElliott(GilbertElliottConfig { p, r, h, k }) = *self;
        (r * (1.0 - k) + p * (1.0 - h)) / (p + r)
    }
}

/// The channel's state and parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct GilbertElliott {
    p: f64,
    r: f64,
    h: f64,
    k: f64,
    bad: bool,
}

impl GilbertElliott {
    /// Whether the next packet is lost; the channel then makes its transition. Two draws
    /// per packet from `rng`, so the stream stays aligned whatever the outcomes.
    #[inline]
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        let through = if self.bad { self.h } else { self.k };
        let lost = rng.uniform() >= through;
        let leave = if self.bad { self.r } else { self.p };
        if rng.uniform() < leave {
            self.bad = !self.bad;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ge(p: f64, r: f64, h: f64, k: f64) -> GilbertElliott {
        LossModelConfig::GilbertElliott(GilbertElliottConfig { p, r, h, k }).build().unwrap()
    }

    /// Lost fraction and mean run of consecutive losses over `n` packets.
    fn measure(mut g: GilbertElliott, n: u64, seed: u64) -> (f64, f64) {
        let mut rng = Rng::new(seed, 9);
        let (mut lost, mut bursts, mut in_burst) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = g.lose(&mut rng);
            lost += l as u64;
            bursts += (l && !in_burst) as u64;
            in_burst = l;
        }
        (lost as f64 / n as f64, lost as f64 / bursts as f64)
    }

    #[test]
    fn gilbert_loss_rate_and_burst_length_match_the_closed_forms() {
        // h = 0, k = 1: loss bursts are the stays in Bad, geometric with mean 1 / r = 4;
        // loss rate p / (p + r) = 0.01 / 0.26.
        let (p, r) = (0.01, 0.25);
        let cfg = LossModelConfig::GilbertElliott(GilbertElliottConfig { p, r, h: 0.0, k: 1.0 });
        let n = 2_000_000;
        let (rate, burst) = measure(cfg.build().unwrap(), n, 1);
        let want = p / (p + r);
        assert!((cfg.stationary_loss() - want).abs() < 1e-15);
        // About n p / (1 + p / r) = 19 230 bursts of variance (1 - r) / r^2 = 12 each: the
        // mean burst's standard error is sqrt(12 / 19 230) = 0.025; 5 of them.
        assert!((burst - 1.0 / r).abs() < 5.0 * 0.025, "mean burst {burst}, want {}", 1.0 / r);
        // Loss rate: each burst contributes its length, so the total's relative error is
        // about that of the bursts' count plus their mean (< 1.5%): 5% tolerance is > 3 sd.
        assert!((rate / want - 1.0).abs() < 0.05, "loss rate {rate}, want {want}");
    }

    #[test]
    fn elliott_loss_rate_matches_the_stationary_mixture() {
        // Both states lose some: 2% in Good, 60% in Bad; Bad a fifth of the time.
        let cfg = LossModelConfig::GilbertElliott(GilbertElliottConfig { p: 0.02, r: 0.08, h: 0.4, k: 0.98 });
        let want = (0.08 * 0.02 + 0.02 * 0.6) / 0.1;
        assert!((cfg.stationary_loss() - want).abs() < 1e-12);
        let (rate, _) = measure(cfg.build().unwrap(), 2_000_000, 3);
        // Stays of mean 50 (Good) and 12.5 (Bad) packets: about 32 000 cycles; the Bad share
        // has relative sd near 1/sqrt(32 000) (0.6%); 5% is well past 3 sd.
        assert!((rate / want - 1.0).abs() < 0.05, "loss rate {rate}, want {want}");
    }

    #[test]
    fn the_same_seed_gives_the_same_losses() {
        let draws = |seed| {
            let mut g = ge(0.1, 0.3, 0.0, 1.0);
            let mut rng = Rng::new(seed, 1);
            (0..1000).map(|_| g.lose(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draws(5), draws(5));
        assert_ne!(draws(5), draws(6));
    }

    #[test]
    fn bad_parameters_are_named() {
        let bad = |p, r, h, k| LossModelConfig::GilbertElliott(GilbertElliottConfig { p, r, h, k }).build().unwrap_err();
        assert_eq!(bad(1.5, 0.1, 0.0, 1.0).field, "p");
        let e = bad(0.1, 0.0, 0.0, 1.0);
        assert_eq!((e.field.as_str(), e.value.as_str()), ("r", "0"));
        assert_eq!(bad(0.1, 0.1, -0.1, 1.0).field, "h");
        assert_eq!(bad(0.1, 0.1, 0.0, f64::NAN).field, "k");
    }

    #[test]
    fn a_bad_knob_inside_the_table_is_located() {
        let at = |v| LossModelConfig::locate_error("gilbert_elliott", v);
        let (path, msg) = at(serde_json::json!({"p": "x", "r": 0.1})).unwrap();
        assert_eq!(path, "p");
        assert!(msg.starts_with("invalid type: string \"x\", expected f64"), "{msg}");
        let (path, msg) = at(serde_json::json!({"p": 0.1, "r": 0.1, "q": 1})).unwrap();
        assert_eq!(path, "q");
        assert!(msg.starts_with("unknown field `q`"), "{msg}");
        assert_eq!(at(serde_json::json!({"p": 0.1, "r": 0.1})), None);
        assert_eq!(LossModelConfig::locate_error("bernoulli", serde_json::json!({"p": "x"})), None);
    }
}
