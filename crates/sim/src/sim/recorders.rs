//! What a run records beyond the connection rows: TAQ queue states at slice ends, the
//! `[trace]` time series, `trace_conn`'s per-packet rows, and collecting it all into
//! `Results`.

use super::topology::is_reported;
use super::Simulator;
use crate::event::Event;
use crate::flows::push_rows;
use crate::results::{LinkRow, QueueStateRow, Results, TraceRow, UnitRow};
use crate::tcp::Endpoint;
use smallpipe_core::{AnyQdisc, Duration, Instant, Packet};

impl Simulator {
    /// At the end of slice `k`: TAQ queues' flows by state and packets by queue, and the
    /// senders' own states with `record_sender_epochs`.
    pub(super) fn sample_queue_states(&mut self, k: u32) {
        let at = self.slice_end(k);
        if let Some(rec) = self.epochs.as_mut() {
            let taq = match self.links[0].queue.inner() {
                AnyQdisc::Taq(taq) => Some(taq),
                _ => None,
            };
            let senders = self.conns.iter().enumerate().map(|(c, conn)| {
                let mss = self.params[self.units[conn.unit as usize].tcp as usize].mss;
                (conn.flow_id, &self.endpoints[2 * c], !conn.done, mss)
            });
            rec.record(k, at, senders, taq);
        }
        for l in &self.links {
            if let AnyQdisc::Taq(taq) = l.queue.inner() {
                let s = taq.taq_snapshot(at);
                self.queue_states.push(QueueStateRow {
                    link: l.name.clone(),
                    slice: k,
                    time_ns: at.as_nanos(),
                    flows_by_state: s.flows_by_state,
                    queue_pkts: s.queue_pkts,
                });
            }
        }
    }

    /// A sample of the `[trace]` time series, and the next one if it falls inside the run.
    pub(super) fn trace_sample(&mut self) {
        let Some(r) = self.recorder.as_mut() else { return };
        let conns = &self.conns;
        r.sample(self.now, &self.links, &self.endpoints, |c| !conns[c].done);
        let next = r.next_sample(self.now);
        if next < self.end {
            self.events.push(next, Event::TraceSample);
        }
    }

    pub(super) fn collect(mut self, wall_seconds: f64) -> Results {
        let end = self.end;
        let mut rows = std::mem::take(&mut self.finished);
        for c in 0..self.conns.len() {
            if self.conns[c].freed {
                continue;
            }
            let cx = self.row_context(self.conns[c].unit);
            let (snd, rcv) = (&self.endpoints[2 * c], &self.endpoints[2 * c + 1]);
            let snd_stats = self.rcp.get(&(c as u32)).map_or(&snd.stats, |r| &r.sender.stats);
            push_rows(&mut self.conns[c], snd, snd_stats, rcv, &cx, &mut rows);
        }
        rows.sort();
        let units = self
            .units
            .iter()
            .enumerate()
            .map(|(u, unit)| {
                let hang_to_end = if unit.open > 0 { end.saturating_since(unit.last_progress) } else { Duration::ZERO };
                UnitRow {
                    unit_id: u as u32,
                    group: unit.group,
                    app: self.groups[unit.group as usize].app,
                    rtt_ms: unit.rtt.as_nanos() as f64 / 1e6,
                    connections: unit.opened,
                    bytes_delivered: unit.bytes_delivered,
                    longest_hang_ns: unit.longest_hang.max(hang_to_end).as_nanos(),
                    pages_done: unit.pages_done,
                }
            })
            .collect();
        let duration = end.as_nanos();
        // Computed links owe the transmissions ending before the end (events at it never run).
        for l in self.links.iter_mut().filter(|l| l.computed) {
            l.settle(end, false);
        }
        let links = self
            .links
            .iter_mut()
            .filter(|l| is_reported(&l.name))
            .map(|l| LinkRow::from_link(l, end, duration))
            .collect();
        let packets = self.links.iter().map(|l| l.tx_pkts).sum();
        let traces = self.recorder.take().map_or_else(Default::default, |mut r| {
            let conns = &self.conns;
            r.sample(self.now, &self.links, &self.endpoints, |c| !conns[c].done);
            r.finish()
        });
        Results {
            seed: self.seed,
            duration_ns: duration,
            slice_ns: self.slice.as_nanos(),
            events: self.events.events_processed(),
            packets,
            wall_seconds,
            flows: rows.flows,
            units,
            links,
            bursts: rows.bursts,
            progress: rows.progress,
            queue_states: std::mem::take(&mut self.queue_states),
            trace: self.trace.take().map_or_else(Vec::new, |t| t.rows),
            sender_epochs: self.epochs.take().map_or_else(Vec::new, |r| r.rows),
            traces,
            skipped_log_lines: self.skipped_log_lines,
            flows_opened: self.flows_opened,
            packets_to_closed_flows: self.packets_to_closed_flows,
            udp_flows: self.udp_rows(),
        }
    }
}

/// `trace_conn`: the traced connection, its sender's ISS (from its first packet, the SYN),
/// and its rows.
pub(super) struct Trace {
    pub(super) conn: u32,
    pub(super) iss: Option<u32>,
    pub(super) rows: Vec<TraceRow>,
}

impl Trace {
    /// One row per packet the traced sender emitted in this event, or one window-only row
    /// if the event changed its cwnd or ssthresh without sending.
    pub(super) fn record(&mut self, ep: &Endpoint, out: &[Packet], now: Instant) {
        let (cwnd_bytes, ssthresh_bytes) = (ep.cwnd_bytes(), ep.ssthresh_bytes());
        let row = |sent: bool, seq: u32, payload_len: u16, flags: u8| TraceRow {
            time_ns: now.as_nanos(), sent, seq, payload_len, flags, cwnd_bytes, ssthresh_bytes,
        };
        let Some(first) = out.first() else {
            let last = self.rows.last().map(|r| (r.cwnd_bytes, r.ssthresh_bytes));
            if last.is_some_and(|w| w != (cwnd_bytes, ssthresh_bytes)) {
                self.rows.push(row(false, 0, 0, 0));
            }
            return;
        };
        let iss = *self.iss.get_or_insert(first.seq);
        for pkt in out {
            self.rows.push(row(true, pkt.seq.wrapping_sub(iss), pkt.payload_len, pkt.flags.0));
        }
    }
}
