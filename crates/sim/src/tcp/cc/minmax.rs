//! Kathleen Nichols' windowed max filter as Linux runs it (lib/win_minmax.c,
//! `minmax_running_max`): the largest value seen in the last `win` units of time (BBR's
//! time is its count of round trips), kept in three samples instead of a window's worth.
//!
//! The samples are the best value in the window and the best ones that came after it, so
//! when the best ages out the next one is ready; a quarter and a half of a window without a
//! new best refresh the second and third choices, so they stay spread over the window.

/// One value and the time it was seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

/// The windowed running max: `s[0]` the max, `s[1]` and `s[2]` the later second and third choices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaxFilter {
    s: [Sample; 3],
}

impl MaxFilter {
    /// The max of the window.
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// Forgets everything: `v` seen at `t` is the only sample (`minmax_reset`).
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// Adds `v` seen at `t` to a window of `win` time units; returns the window's max.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let new = Sample { t, v };
        if v >= self.s[0].v || t - self.s[2].t > win {
            return self.reset(t, v); // a new max, or every sample aged out
        }
        if v >= self.s[1].v {
            self.s[1] = new;
            self.s[2] = new;
        } else if v >= self.s[2].v {
            self.s[2] = new;
        }
        self.age(win, new)
    }

    /// `minmax_subwin_update`: the max ages out (the next choices move up, perhaps twice),
    /// or after a quarter (half) of a window without a new one, `new` becomes the second
    /// (third) choice.
    fn age(&mut self, win: u64, new: Sample) -> u64 {
        let dt = new.t - self.s[0].t;
        if dt > win {
            self.s = [self.s[1], self.s[2], new];
            if new.t - self.s[0].t > win {
                self.s = [self.s[1], self.s[2], new];
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            self.s[1] = new;
            self.s[2] = new;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            self.s[2] = new;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The max of the last `win + 1` times (t − win ..= t), by brute force.
    fn true_max(samples: &[(u64, u64)], win: u64, t: u64) -> u64 {
        samples.iter().filter(|&&(ts, _)| ts + win >= t).map(|&(_, v)| v).max().unwrap()
    }

    #[test]
    fn a_new_max_takes_over_at_once_and_ages_out_after_the_window() {
        let mut f = MaxFilter::default();
        f.reset(0, 0);
        assert_eq!(f.update(10, 1, 100), 100);
        // Past a quarter of the window, a lower value becomes the second choice.
        assert_eq!(f.update(10, 4, 50), 100, "a lower value does not replace the max");
        for t in 5..=11 {
            assert_eq!(f.update(10, t, 10), 100, "round {t}");
        }
        // At round 12 the max from round 1 is 11 rounds old, out of a 10-round window: the
        // second choice (50, round 4) takes its place until it ages out in turn at round 15.
        assert_eq!(f.update(10, 12, 10), 50);
        assert_eq!(f.update(10, 14, 10), 50);
        assert_eq!(f.update(10, 15, 10), 10, "round 4 aged out too");
    }

    #[test]
    fn it_never_reports_more_than_the_window_held() {
        // The three-sample filter may under-report the true windowed max (it keeps only
        // three choices) but never reports a value from outside the window, and it reports
        // the true max whenever that max is the newest sample or the oldest still in it.
        let mut f = MaxFilter::default();
        let mut samples = vec![(0, 0)];
        f.reset(0, 0);
        let mut x: u64 = 12345;
        for t in 1..500u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = (x >> 33) % 1000;
            samples.push((t, v));
            let got = f.update(10, t, v);
            assert!(got <= true_max(&samples, 10, t), "t = {t}");
            assert!(samples.iter().any(|&(ts, sv)| sv == got && ts + 10 >= t), "t = {t}: {got} from outside the window");
        }
    }
}
