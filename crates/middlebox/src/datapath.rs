//! The data path: one thread that reads frames from both sides, hands IP packets to the
//! link model of their direction, sends what the model delivers, and sleeps on the timerfd
//! until the model's next deadline (or a frame arrives). Side A faces the clients: frames
//! read on A go through link 0 (`a_to_b`) and leave on B; link 1 is the reverse.

use crate::config::BoxConfig;
use crate::io::PacketSocket;
use crate::link::{next_due, LinkCumulative, LinkEmu, LinkEvent};
use crate::parse::{parse_frame, set_ce, DropCause, Verdict};
use crate::pcap::{Capture, Point};
use crate::slab::Slab;
use crate::stats::{queue_state_row, BoxStats, FlowTable, QueueStateRow, Snapshot};
use crate::timer::{Clock, Timer};
use hdrhistogram::Histogram;
use nix::poll::{poll, PollFd, PollFlags};
use smallpipe_core::packet::Ecn;
use smallpipe_core::{Duration, Instant};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How often the metrics snapshot is refreshed.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);
/// Longest sleep without a deadline, so a stop request is seen promptly.
const IDLE_WAKE: Duration = Duration::from_millis(50);
/// Receive batches per side per wake-up before the loop turns to its deadlines again.
const RECV_ROUNDS: usize = 4;

pub struct DataPath {
    socks: [PacketSocket; 2],
    pub links: [LinkEmu; 2],
    slab: Slab,
    pub stats: BoxStats,
    pub flows: FlowTable,
    /// Departure lateness (send time minus logical due time), ns.
    pub lateness_ns: Histogram<u64>,
    pub queue_states: Vec<QueueStateRow>,
    /// Both directions' counters at each slice's end (index 0 = `a_to_b`).
    pub link_slices: Vec<[LinkCumulative; 2]>,
    capture: Option<Capture>,
    clock: Clock,
    timer: Timer,
    slice_ns: u64,
    /// End of the slice being counted (run time).
    next_slice: Instant,
    events: Vec<LinkEvent>,
    outbox: [Vec<u32>; 2],
}

impl DataPath {
    pub fn new(cfg: &BoxConfig, socks: [PacketSocket; 2], capture: Option<Capture>) -> Result<Self, String> {
        let links = cfg.build_links().map_err(|e| format!("{}: {} is not allowed (allowed: {})", e.field, e.value, e.allowed))?;
        let clock = Clock::start();
        let timer = Timer::new(clock).map_err(|e| format!("timerfd: {e}"))?;
        Ok(DataPath {
            socks,
            links,
            slab: Slab::with_capacity(cfg.slab_frames),
            stats: BoxStats::default(),
            flows: FlowTable::default(),
            lateness_ns: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("constant bounds are valid"),
            queue_states: Vec::new(),
            link_slices: Vec::new(),
            capture,
            clock,
            timer,
            slice_ns: cfg.slice_ns,
            next_slice: Instant(cfg.slice_ns),
            events: Vec::new(),
            outbox: [Vec::new(), Vec::new()],
        })
    }

    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// CLOCK_MONOTONIC at the run's time 0, so callers can place the box's times on theirs.
    pub fn clock_start_monotonic_ns(&self) -> u64 {
        self.clock.start_monotonic_ns()
    }

    /// Forward until `stop` is set or `until` (run time) passes. Publishes a snapshot into
    /// `shared` every [`PUBLISH_EVERY`].
    pub fn run(&mut self, stop: &AtomicBool, until: Option<Instant>, shared: &Mutex<Arc<Snapshot>>) -> std::io::Result<()> {
        let mut next_publish = Instant::ZERO;
        while !stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            if until.is_some_and(|u| now >= u) {
                break;
            }
            self.close_slices(now);
            self.advance(now);
            for side in 0..2 {
                for _ in 0..RECV_ROUNDS {
                    let n = self.socks[side].recv_batch()?;
                    for i in 0..n {
                        self.on_frame(side, i);
                    }
                    if n < crate::io::BATCH {
                        break;
                    }
                }
            }
            self.flush();
            let now = self.clock.now();
            if now >= next_publish {
                *shared.lock().expect("metrics lock") = Arc::new(self.snapshot(now));
                next_publish = now + PUBLISH_EVERY;
            }
            let wake = [self.links[0].next_deadline(), self.links[1].next_deadline(), Some(self.next_slice), until]
                .into_iter()
                .flatten()
                .fold(now + IDLE_WAKE, Instant::min);
            self.timer.arm_at(wake)?;
            let mut fds = [
                PollFd::new(self.socks[0].fd(), PollFlags::POLLIN),
                PollFd::new(self.socks[1].fd(), PollFlags::POLLIN),
                PollFd::new(self.timer.fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, nix::poll::PollTimeout::NONE) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
            self.timer.acknowledge();
        }
        let now = self.clock.now();
        self.sample_links(now);
        for (side, s) in self.socks.iter_mut().enumerate() {
            self.stats.kernel[side] = s.kernel_stats()?;
        }
        *shared.lock().expect("metrics lock") = Arc::new(self.snapshot(now));
        Ok(())
    }

    /// Stop the capture thread (if any) and report frames written and dropped.
    pub fn finish_capture(&mut self) -> std::io::Result<Option<(u64, u64)>> {
        match &mut self.capture {
            Some(c) => Ok(Some((c.finish()?, c.dropped))),
            None => Ok(None),
        }
    }

    fn on_frame(&mut self, side: usize, i: usize) {
        let now = self.clock.now();
        let frame = self.socks[side].frame(i);
        if let Some(c) = &mut self.capture {
            c.record(if side == 0 { Point::AIn } else { Point::BIn }, now.as_nanos(), frame);
        }
        let verdict = if self.socks[side].truncated(i) { Verdict::Drop(DropCause::Oversized) } else { parse_frame(frame) };
        let mut pkt = match verdict {
            Verdict::Scheduled(p) => p,
            Verdict::Unscheduled => {
                self.stats.unscheduled[side] += 1;
                let out = 1 - side;
                let copy = frame.to_vec();
                if let Some(c) = &mut self.capture {
                    c.record(if out == 1 { Point::BOut } else { Point::AOut }, now.as_nanos(), &copy);
                }
                if !matches!(self.socks[out].send_batch(&[&copy]), Ok(1)) {
                    self.stats.send_failed[out] += 1;
                }
                return;
            }
            Verdict::Drop(cause) => {
                self.stats.parse_drops[side][cause as usize] += 1;
                return;
            }
        };
        let Some(slot) = self.slab.insert(frame) else {
            self.stats.parse_drops[side][DropCause::SlabFull as usize] += 1;
            return;
        };
        pkt.runtime_handle = slot;
        self.flows.arrived(side, &pkt);
        // What both directions have due first, so the discipline has seen every reverse
        // packet that left before this frame (sent at the next flush), and the slices that
        // ended before it are counted without it.
        self.close_slices(now);
        self.advance_links(now, now);
        self.links[side].enqueue(pkt, now, &mut self.events);
        self.handle_events(side, now);
    }

    fn advance(&mut self, now: Instant) {
        self.advance_links(now, now);
        self.flush();
    }

    /// Both links up to `until`, their events in time order across the two (`next_due`);
    /// `now` is the clock's time, for the deliveries' lateness.
    fn advance_links(&mut self, until: Instant, now: Instant) {
        while let Some((d, t)) = next_due(&self.links, until) {
            self.links[d].advance(t, &mut self.events);
            self.handle_events(d, now);
        }
    }

    /// Count every slice that ended by `now`, each at its exact end: what was due by then
    /// happens first and nothing later has (a replay of the capture samples the same).
    fn close_slices(&mut self, now: Instant) {
        while self.next_slice <= now {
            let at = self.next_slice;
            self.advance_links(at, now);
            self.sample_queue_states(at);
            self.sample_links(at);
            self.next_slice += Duration(self.slice_ns);
        }
    }

    fn handle_events(&mut self, dir: usize, now: Instant) {
        let mut events = std::mem::take(&mut self.events);
        for ev in events.drain(..) {
            match ev {
                LinkEvent::Dropped(pkt, _) => {
                    self.flows.dropped(dir, &pkt);
                    self.slab.release(pkt.runtime_handle);
                }
                LinkEvent::Departed { pkt, at } => self.links[1 - dir].queue.observe_reverse(&pkt, at),
                LinkEvent::Delivered { pkt, due } => {
                    self.lateness_ns.saturating_record(now.saturating_since(due).as_nanos().max(1));
                    if pkt.ecn == Ecn::Ce {
                        set_ce(self.slab.get_mut(pkt.runtime_handle));
                    }
                    self.flows.delivered(dir, &pkt);
                    self.outbox[1 - dir].push(pkt.runtime_handle);
                }
            }
        }
        self.events = events;
    }

    /// Send every delivered frame, then free its slot.
    fn flush(&mut self) {
        let now = self.clock.now().as_nanos();
        for out in 0..2 {
            if self.outbox[out].is_empty() {
                continue;
            }
            let frames: Vec<&[u8]> = self.outbox[out].iter().map(|&s| self.slab.get(s)).collect();
            if let Some(c) = &mut self.capture {
                for f in &frames {
                    c.record(if out == 1 { Point::BOut } else { Point::AOut }, now, f);
                }
            }
            let sent = self.socks[out].send_batch(&frames).unwrap_or(0);
            self.stats.sent[out] += sent as u64;
            self.stats.send_failed[out] += (frames.len() - sent) as u64;
            for s in self.outbox[out].drain(..) {
                self.slab.release(s);
            }
        }
    }

    fn sample_queue_states(&mut self, at: Instant) {
        for (d, l) in self.links.iter().enumerate() {
            self.queue_states.extend(queue_state_row(d, l, at, self.slice_ns));
        }
    }

    /// Both directions' counters at `at` (a slice's end, or the stop), after everything due
    /// by then, so two rows give a window's exact counts and backlog integral.
    fn sample_links(&mut self, at: Instant) {
        self.advance_links(at, self.clock.now());
        let row = [0, 1].map(|d| self.links[d].cumulative(at, &mut self.events));
        debug_assert!(self.events.is_empty(), "nothing is left due by `at`");
        self.link_slices.push(row);
    }

    pub fn snapshot(&mut self, now: Instant) -> Snapshot {
        Snapshot::take(now, &mut self.links, &self.stats, &self.flows, &self.lateness_ns, self.slab.in_use(), &self.queue_states)
    }
}
