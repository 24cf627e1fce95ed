//! The per-slice tables of a live box, `link_slices.csv` and `queue_states.csv`, written as
//! each slice ends instead of held in memory until the stop. A box deployed for months then
//! holds none of them (the first one-hour soak showed its memory growing with them, about
//! 250 bytes a second at 1 s slices), and a box that is killed leaves the slices it counted.

use crate::link::LinkCumulative;
use crate::log;
use crate::stats::{self, QueueStateRow};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

pub struct SliceLog {
    links: BufWriter<File>,
    states: BufWriter<File>,
    /// The first write error: logging stops there (forwarding goes on) and [`finish`]
    /// returns it, so the box's exit says its tables are short.
    ///
    /// [`finish`]: SliceLog::finish
    failed: Option<io::Error>,
    line: String,
}

impl SliceLog {
    /// Creates `dir` (if needed) and both files, with their header lines.
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut links = BufWriter::new(File::create(dir.join("link_slices.csv"))?);
        let mut states = BufWriter::new(File::create(dir.join("queue_states.csv"))?);
        links.write_all(stats::LINK_SLICES_HEADER.as_bytes())?;
        states.write_all(stats::queue_states_header().as_bytes())?;
        links.flush()?;
        states.flush()?;
        Ok(SliceLog { links, states, failed: None, line: String::new() })
    }

    /// One slice: both directions' counters and, under TAQ, its rows of flows by state.
    /// Flushed at once (a write or two a slice), so nothing counted waits in a buffer.
    pub fn slice(&mut self, links: &[LinkCumulative; 2], states: &[QueueStateRow]) {
        if self.failed.is_some() {
            return;
        }
        self.line.clear();
        stats::push_link_slice(&mut self.line, links);
        let mut written = self.links.write_all(self.line.as_bytes()).and_then(|()| self.links.flush());
        if written.is_ok() && !states.is_empty() {
            self.line.clear();
            for r in states {
                stats::push_queue_state(&mut self.line, r);
            }
            written = self.states.write_all(self.line.as_bytes()).and_then(|()| self.states.flush());
        }
        if let Err(e) = written {
            log::emit("slice_log_failed", &[("error", e.to_string())]);
            self.failed = Some(e);
        }
    }

    /// Flushes both files; the first error of the run, if any.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.links.flush()?;
        self.states.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallpipe_core::qdisc::taq::{TaqQueue, TaqState};

    fn cumulative(k: u64) -> [LinkCumulative; 2] {
        [0, 1].map(|d| LinkCumulative {
            time_ns: k * 1_000_000_000,
            arrived_pkts: 10 * k + d,
            dropped_pkts: k,
            tx_pkts: 9 * k,
            tx_bytes: 9_000 * k,
            backlog_pkt_ns: 7 * k,
        })
    }

    /// A fresh folder of the system's temporary one, per test and process.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("smallpipe-slice-log-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn state(direction: usize, k: u32) -> QueueStateRow {
        QueueStateRow {
            direction,
            slice: k,
            time_ns: u64::from(k) * 1_000_000_000,
            flows_by_state: [k; TaqState::COUNT],
            queue_pkts: [k + 1; TaqQueue::COUNT],
        }
    }

    /// Written slice by slice, the files are what the whole-run tables give for the same
    /// rows (the replay still writes those), at every point of the run.
    #[test]
    fn streamed_files_equal_the_whole_run_tables() {
        let dir = scratch("streamed");
        let mut log = SliceLog::create(&dir).unwrap();
        let (mut links, mut states) = (vec![], vec![]);
        for k in 1..=5u32 {
            let rows = if k == 3 { vec![] } else { vec![state(0, k), state(1, k)] }; // a slice without TAQ rows
            log.slice(&cumulative(k.into()), &rows);
            links.push(cumulative(k.into()));
            states.extend(rows);
            // Flushed each slice: a box killed now leaves exactly these.
            assert_eq!(std::fs::read_to_string(dir.join("link_slices.csv")).unwrap(), stats::link_slices_csv(&links));
            assert_eq!(std::fs::read_to_string(dir.join("queue_states.csv")).unwrap(), stats::queue_states_csv(&states));
        }
        log.finish().unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("link_slices.csv")).unwrap().lines().count(), 1 + 2 * 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A full disk stops the log, not the box: later slices are skipped and the error comes
    /// back at the stop.
    #[test]
    fn a_write_error_stops_the_log_and_is_returned_at_the_end() {
        let Ok(full) = File::options().write(true).open("/dev/full") else { return };
        let dir = scratch("full");
        let mut log = SliceLog::create(&dir).unwrap();
        log.links = BufWriter::new(full);
        log.slice(&cumulative(1), &[]);
        assert!(log.failed.is_some());
        log.slice(&cumulative(2), &[state(0, 2)]);
        assert_eq!(std::fs::read_to_string(dir.join("queue_states.csv")).unwrap(), stats::queue_states_header());
        assert!(log.finish().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
