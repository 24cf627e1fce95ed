//! Structured log lines (logfmt: `event=NAME key=value ...`) on stderr, which journald keeps:
//! start, reload, and each minute the drops by reason. Values with spaces are quoted.

use crate::parse::DropCause;
use crate::stats::{BoxStats, DIRECTIONS, SIDES};
use smallpipe_core::{DropReason, QdiscStats};

/// How often the drops are logged.
pub const DROPS_EVERY_NS: u64 = 60_000_000_000;

/// One logfmt line.
pub fn line(event: &str, fields: &[(&str, String)]) -> String {
    let mut s = format!("event={event}");
    for (k, v) in fields {
        if v.is_empty() || v.contains([' ', '"', '=']) {
            s += &format!(" {k}={v:?}");
        } else {
            s += &format!(" {k}={v}");
        }
    }
    s
}

pub fn emit(event: &str, fields: &[(&str, String)]) {
    eprintln!("smallpipe-box: {}", line(event, fields));
}

/// The drop counters a minute's report is the difference of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// Per direction, by [`DropReason`].
    pub queue: [Vec<u64>; 2],
    /// Per side, by [`DropCause`] (before the discipline).
    pub frames: [[u64; DropCause::COUNT]; 2],
}

impl DropCounts {
    pub fn of(queues: [&QdiscStats; 2], stats: &BoxStats) -> Self {
        DropCounts { queue: queues.map(|q| DropReason::ALL.iter().map(|r| q.dropped(*r)).collect()), frames: stats.parse_drops }
    }

    /// One line per direction and per side with drops since `prev`, each non-zero reason a
    /// field; nothing when nothing was dropped.
    pub fn report(&self, prev: &DropCounts, window_s: u64) -> Vec<String> {
        let mut out = vec![];
        for (d, dir) in DIRECTIONS.iter().enumerate() {
            let f: Vec<(&str, String)> = DropReason::ALL.iter().enumerate()
                .map(|(i, r)| (r.name(), self.queue[d][i] - prev.queue[d].get(i).copied().unwrap_or(0)))
                .filter(|(_, n)| *n > 0).map(|(k, n)| (k, n.to_string())).collect();
            if !f.is_empty() {
                let head = [("direction", dir.to_string()), ("window_s", window_s.to_string())];
                out.push(line("drops", &[&head[..], &f].concat()));
            }
        }
        for (side, name) in SIDES.iter().enumerate() {
            let f: Vec<(&str, String)> = DropCause::ALL.iter()
                .map(|c| (c.name(), self.frames[side][*c as usize] - prev.frames[side][*c as usize]))
                .filter(|(_, n)| *n > 0).map(|(k, n)| (k, n.to_string())).collect();
            if !f.is_empty() {
                let head = [("side", name.to_string()), ("window_s", window_s.to_string())];
                out.push(line("frame_drops", &[&head[..], &f].concat()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_with_spaces_are_quoted() {
        assert_eq!(line("start", &[("a", "x".into()), ("b", "two words".into())]), r#"event=start a=x b="two words""#);
    }

    #[test]
    fn a_minute_reports_only_the_drops_of_that_minute() {
        let n = DropReason::ALL.len();
        let prev = DropCounts { queue: [vec![5; n], vec![0; n]], frames: [[0; DropCause::COUNT]; 2] };
        let mut now = prev.clone();
        now.queue[0][0] += 7;
        now.frames[1][DropCause::Malformed as usize] = 2;
        let r = now.report(&prev, 60);
        assert_eq!(r, vec![
            format!("event=drops direction=a_to_b window_s=60 {}=7", DropReason::ALL[0].name()),
            format!("event=frame_drops side=b window_s=60 {}=2", DropCause::Malformed.name()),
        ]);
        assert!(now.report(&now, 60).is_empty());
    }
}
