//! The data path: one thread that reads frames from both sides, hands IP packets to the
//! link model of their direction, sends what the model delivers, and sleeps on the timerfd
//! until the model's next deadline (or a frame arrives). Side A faces the clients: frames
//! read on A go through link 0 (`a_to_b`) and leave on B; link 1 is the reverse.

use crate::config::{BoxConfig, DirectionConfig};
use crate::io::{self, PacketSocket};
use crate::link::{next_due, LinkEmu, LinkEvent};
use crate::parse::{parse_frame, set_ce, DropCause, Verdict};
use crate::pcap::{Capture, Point};
use crate::service::{interface_state, InterfaceState, Notifier};
use crate::slab::Slab;
use crate::slice_log::SliceLog;
use crate::log;
use crate::stats::{queue_state_row, BoxStats, FlowTable, QueueStateRow, Snapshot};
use crate::timer::{Clock, Timer};
use hdrhistogram::Histogram;
use nix::poll::{poll, PollFd, PollFlags};
use smallpipe_core::packet::Ecn;
use smallpipe_core::qdisc::QdiscConfig;
use smallpipe_core::{Duration, Instant};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How often the metrics snapshot is refreshed.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);
/// Longest sleep without a deadline, so a stop request is seen promptly.
const IDLE_WAKE: Duration = Duration::from_millis(50);
/// Receive batches per side per wake-up before the loop turns to its deadlines again.
const RECV_ROUNDS: usize = 4;
/// How often a side whose interface went down (or away) is checked again.
const IFACE_RETRY: Duration = Duration::from_millis(1000);

/// What the service around the data path asks of it while it runs.
pub struct Control<'a> {
    pub stop: &'a AtomicBool,
    /// Set by SIGHUP: re-read `config_path` and apply it (`DataPath::reload`).
    pub reload: &'a AtomicBool,
    pub config_path: &'a str,
    pub notifier: &'a Notifier,
}

/// A side whose interface failed: since when, and when to look again.
#[derive(Debug, Clone, Copy)]
struct SideDown {
    since: Instant,
    next_check: Instant,
}

pub struct DataPath {
    socks: [PacketSocket; 2],
    iface_names: [String; 2],
    /// Each side's interface MTU, read at start and with the once-a-second look at the
    /// interface: a frame leaves by a side only if it fits (`io::fits_mtu`).
    mtus: [u32; 2],
    down: [Option<SideDown>; 2],
    /// When an up side's interface is next looked at.
    next_probe: [Instant; 2],
    /// Times a side's interface went down or away (`box.json`, `iface_down_events`).
    pub iface_down_events: [u64; 2],
    /// The config running now (the last one loaded without error).
    cfg: BoxConfig,
    pub links: [LinkEmu; 2],
    slab: Slab,
    pub stats: BoxStats,
    pub flows: FlowTable,
    /// Departure lateness (send time minus logical due time), ns.
    pub lateness_ns: Histogram<u64>,
    /// TAQ's rows of the last slice (flows by state), for the metrics; earlier slices are in
    /// the slice log only.
    last_queue_states: Vec<QueueStateRow>,
    /// With `--out`: each slice's rows of `link_slices.csv` and `queue_states.csv`, written as
    /// the slice ends (nothing per slice is held in memory).
    slice_log: Option<SliceLog>,
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
    /// Slab slots are as long as the sockets' receive buffers (`PacketSocket::frame_bytes`).
    pub fn new(cfg: &BoxConfig, socks: [PacketSocket; 2], iface_names: [String; 2], capture: Option<Capture>)
               -> Result<Self, String> {
        let links = cfg.build_links().map_err(|e| format!("{}: {} is not allowed (allowed: {})", e.field, e.value, e.allowed))?;
        let mut mtus = [0; 2];
        for (m, name) in mtus.iter_mut().zip(&iface_names) {
            *m = io::mtu(name).map_err(|e| format!("interface {name}: reading its MTU: {e}"))?;
        }
        let slot_bytes = socks[0].frame_bytes().max(socks[1].frame_bytes());
        let clock = Clock::start();
        let timer = Timer::new(clock).map_err(|e| format!("timerfd: {e}"))?;
        Ok(DataPath {
            socks,
            iface_names,
            mtus,
            down: [None, None],
            next_probe: [Instant::ZERO; 2],
            iface_down_events: [0; 2],
            cfg: cfg.clone(),
            links,
            slab: Slab::with_capacity(cfg.slab_frames, slot_bytes),
            stats: BoxStats::default(),
            flows: FlowTable::with_config(&cfg.metrics),
            lateness_ns: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("constant bounds are valid"),
            last_queue_states: Vec::new(),
            slice_log: None,
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
    /// `shared` every [`PUBLISH_EVERY`], reloads the config when asked, pings the systemd
    /// watchdog from this loop (so a stuck data path stops the pings), and rides out an
    /// interface that goes down or away.
    pub fn run(&mut self, ctl: &Control, until: Option<Instant>, shared: &Mutex<Arc<Snapshot>>) -> std::io::Result<()> {
        let mut next_publish = Instant::ZERO;
        let mut next_watchdog = Instant::ZERO;
        let mut next_drops_log = self.clock.now() + Duration(log::DROPS_EVERY_NS);
        let mut drops_before = self.drop_counts();
        while !ctl.stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            if until.is_some_and(|u| now >= u) {
                break;
            }
            if ctl.reload.swap(false, Ordering::Relaxed) {
                ctl.notifier.reloading();
                match BoxConfig::load(ctl.config_path) {
                    Ok(c) => {
                        self.reload(&c, now);
                        log::emit("reload", &[("outcome", "applied".into()), ("config", ctl.config_path.into())]);
                    }
                    Err(e) => {
                        eprintln!("smallpipe-box: reload refused, the running config stays: {e}");
                        log::emit("reload", &[("outcome", "refused".into()), ("config", ctl.config_path.into()), ("error", e.to_string())]);
                    }
                }
                ctl.notifier.notify("READY=1");
            }
            if let Some(every) = ctl.notifier.watchdog_every {
                if now >= next_watchdog {
                    ctl.notifier.notify("WATCHDOG=1");
                    next_watchdog = now + Duration(every.as_nanos() as u64);
                }
            }
            self.close_slices(now);
            self.advance(now);
            if now >= next_drops_log {
                let counts = self.drop_counts();
                for l in counts.report(&drops_before, log::DROPS_EVERY_NS / 1_000_000_000) {
                    eprintln!("smallpipe-box: {l}");
                }
                drops_before = counts;
                next_drops_log = now + Duration(log::DROPS_EVERY_NS);
            }
            for side in 0..2 {
                self.check_side(side, now);
                for _ in 0..RECV_ROUNDS {
                    let n = match self.socks[side].recv_batch() {
                        Ok(n) => n,
                        Err(e) => {
                            self.side_failed(side, &e, now)?;
                            0
                        }
                    };
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
            let watchdog = ctl.notifier.watchdog_every.map(|_| next_watchdog);
            let retry = self.down.iter().flatten().map(|d| d.next_check).min();
            let wake = [self.links[0].next_deadline(), self.links[1].next_deadline(), Some(self.next_slice), until,
                        watchdog, retry]
                .into_iter()
                .flatten()
                .fold(now + IDLE_WAKE, Instant::min);
            self.timer.arm_at(wake)?;
            // A side that is down is not polled: its socket may report the error until read.
            let mut fds = [
                PollFd::new(self.socks[0].fd(), if self.down[0].is_some() { PollFlags::empty() } else { PollFlags::POLLIN }),
                PollFd::new(self.socks[1].fd(), if self.down[1].is_some() { PollFlags::empty() } else { PollFlags::POLLIN }),
                PollFd::new(self.timer.fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, nix::poll::PollTimeout::NONE) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
            self.timer.acknowledge();
        }
        ctl.notifier.notify("STOPPING=1");
        let now = self.clock.now();
        self.sample_links(now, false);
        for (side, s) in self.socks.iter_mut().enumerate() {
            // A socket whose interface went away has no statistics to give: keep the last.
            if let Ok(k) = s.kernel_stats() {
                self.stats.kernel[side] = k;
            }
        }
        *shared.lock().expect("metrics lock") = Arc::new(self.snapshot(now));
        Ok(())
    }

    /// A receive error on `side`: an interface that went down (`ENETDOWN`, reported once by
    /// the kernel) or away (`ENODEV`, `ENXIO`) pauses that side; queues, flow tables and
    /// the other side keep going. Any other error ends the run.
    fn side_failed(&mut self, side: usize, e: &std::io::Error, now: Instant) -> std::io::Result<()> {
        match e.raw_os_error() {
            Some(libc::ENETDOWN) | Some(libc::ENODEV) | Some(libc::ENXIO) => {
                if self.down[side].is_none() {
                    self.iface_down_events[side] += 1;
                    eprintln!("smallpipe-box: interface {} ({}): {e}; this side paused, queues and tables kept,                                checking every {} ms", self.iface_names[side], crate::stats::SIDES[side],
                              IFACE_RETRY.as_nanos() / 1_000_000);
                }
                self.down[side] = Some(SideDown { since: self.down[side].map_or(now, |d| d.since), next_check: now });
                Ok(())
            }
            _ => Err(std::io::Error::new(e.kind(), format!("interface {}: {e}", self.iface_names[side]))),
        }
    }

    /// A side that is down: once its interface is up again, resume (on a new socket if
    /// the interface was re-created under the same name).
    fn check_side(&mut self, side: usize, now: Instant) {
        let Some(d) = self.down[side] else {
            // The kernel reports ENETDOWN to a reader once, and may report it to neither
            // socket; a side that missed it learns of it here, once a second (a syscall and
            // a sysfs read are too dear for every wake-up).
            if now >= self.next_probe[side] {
                self.next_probe[side] = now + IFACE_RETRY;
                if matches!(interface_state(&self.iface_names[side]), InterfaceState::Down { .. } | InterfaceState::Gone) {
                    let e = std::io::Error::from_raw_os_error(libc::ENETDOWN);
                    let _ = self.side_failed(side, &e, now);
                } else {
                    self.reread_mtu(side);
                }
            }
            return;
        };
        if now < d.next_check {
            return;
        }
        let name = self.iface_names[side].clone();
        self.down[side] = Some(SideDown { next_check: now + IFACE_RETRY, ..d });
        let InterfaceState::Up { ifindex } = interface_state(&name) else { return };
        self.reread_mtu(side);
        if ifindex != self.socks[side].ifindex() {
            match PacketSocket::open_sized(&name, self.slab.slot_bytes()) {
                Ok(s) => {
                    // Its kernel counters start again; the sums so far stay in the stats.
                    self.stats.kernel[side] = self.socks[side].kernel_stats().unwrap_or(self.stats.kernel[side]);
                    self.socks[side] = s;
                }
                Err(e) => {
                    eprintln!("smallpipe-box: interface {name} is back (index {ifindex}) but cannot be opened: {e}; retrying");
                    return;
                }
            }
        }
        self.down[side] = None;
        eprintln!("smallpipe-box: interface {name} ({}) is up again after {:.1} s; forwarding resumed",
                  crate::stats::SIDES[side], now.saturating_since(d.since).as_nanos() as f64 / 1e9);
    }

    /// Take a changed MTU of `side`'s interface (`ip link set IF mtu N` leaves it up) into the
    /// check of frames leaving by it; one larger than the frame size fixed at start is named.
    fn reread_mtu(&mut self, side: usize) {
        let Ok(mtu) = io::mtu(&self.iface_names[side]) else { return };
        if mtu == self.mtus[side] {
            return;
        }
        let carried = self.slab.slot_bytes();
        let beyond = if mtu as usize + io::L2_OVERHEAD_BYTES > carried {
            format!("; the box carries frames of up to {carried} bytes (set at start): longer ones are dropped as oversized \
                     until a restart")
        } else {
            String::new()
        };
        eprintln!("smallpipe-box: interface {} ({}): MTU {} -> {mtu}{beyond}", self.iface_names[side],
                  crate::stats::SIDES[side], self.mtus[side]);
        self.mtus[side] = mtu;
    }

    /// Apply a reloaded config at `now`, saying in the log what changed. Rate, delays and
    /// loss change in place; a changed discipline (kind or knobs) takes over the queue
    /// (`LinkEmu::replace_queue`); what only a restart can change is kept and named.
    pub fn reload(&mut self, new: &BoxConfig, now: Instant) {
        let say = |m: String| eprintln!("smallpipe-box: reload: {m}");
        let mut changed = false;
        for (d, name) in ["a_to_b", "b_to_a"].into_iter().enumerate() {
            self.advance_links(now, now);
            let (old_dir, new_dir) = (self.dir_config(d).clone(), if d == 0 { &new.a_to_b } else { &new.b_to_a });
            // The trace and the wire framing shape the transmitter from its start: kept.
            let shaping = |c: &DirectionConfig| (c.trace.clone(), c.delivery_trace.clone(), c.overhead_bytes, c.mpu_bytes, c.framing);
            let mut new_dir = new_dir.clone();
            if shaping(&old_dir) != shaping(&new_dir) {
                say(format!("{name}.trace, overhead_bytes, mpu_bytes and framing kept: a restart changes them"));
                (new_dir.trace, new_dir.delivery_trace, new_dir.overhead_bytes, new_dir.mpu_bytes, new_dir.framing) = shaping(&old_dir);
                new_dir.rate_bps = old_dir.rate_bps;
            }
            let new_dir = &new_dir;
            if old_dir.rate_bps != new_dir.rate_bps {
                self.links[d].set_rate(new_dir.rate_bps, now, &mut self.events);
                self.handle_events(d, now);
                say(format!("{name}.rate_bps {} -> {}", old_dir.rate_bps, new_dir.rate_bps));
                changed = true;
            }
            if (old_dir.delay_ns, old_dir.loss, old_dir.loss_model) != (new_dir.delay_ns, new_dir.loss, new_dir.loss_model)
                || self.cfg.extra_delay_ns_by_src != new.extra_delay_ns_by_src
            {
                let burst_loss = new_dir.burst_loss().expect("validated with the config");
                self.links[d].set_path(Duration(new_dir.delay_ns), new.extra_delays(), new_dir.loss, burst_loss);
                say(format!("{name} delay_ns {} -> {}, loss {} -> {}, loss_model {:?} -> {:?}, extra delays for {} hosts",
                            old_dir.delay_ns, new_dir.delay_ns, old_dir.loss, new_dir.loss, old_dir.loss_model, new_dir.loss_model,
                            new.extra_delay_ns_by_src.len()));
                changed = true;
            }
            if old_dir.queue != new_dir.queue || old_dir.rate_bps != new_dir.rate_bps || old_dir.delay_ns != new_dir.delay_ns {
                // Disciplines that size themselves from the link (`set_link`) are rebuilt
                // when it changes, too.
                if matches!(&old_dir.queue, QdiscConfig::Taq(t) if t.admission_hold_syns > 0) {
                    say(format!("{name}.queue kept: TAQ in proxy mode holds SYNs it will not hand over; restart to change it"));
                    continue;
                }
                let q = match new_dir.build_queue() {
                    Ok(q) => q,
                    Err(e) => {
                        say(format!("{name}.queue kept: {}: {} is not allowed (allowed: {})", e.field, e.value, e.allowed));
                        continue;
                    }
                };
                let before = self.links[d].queue.len_pkts();
                let (moved, dropped) = self.links[d].replace_queue(q, now, &mut self.events);
                self.handle_events(d, now);
                say(format!("{name}.queue {} -> {}: {before} queued packets migrated in the old discipline's order,                              {moved} moved, {dropped} dropped on the way", kind(&old_dir.queue), kind(&new_dir.queue)));
                changed = true;
            }
            if d == 0 { self.cfg.a_to_b = new_dir.clone() } else { self.cfg.b_to_a = new_dir.clone() }
        }
        self.cfg.extra_delay_ns_by_src = new.extra_delay_ns_by_src.clone();
        for (field, differs) in [("seed", self.cfg.seed != new.seed), ("slab_frames", self.cfg.slab_frames != new.slab_frames),
                                 ("slice_ns", self.cfg.slice_ns != new.slice_ns), ("metrics", self.cfg.metrics != new.metrics)] {
            if differs {
                say(format!("{field} kept (changes only at a restart)"));
            }
        }
        if !changed {
            say("nothing to change".into());
        }
        self.flush();
    }

    /// The config running now.
    pub fn config(&self) -> &BoxConfig {
        &self.cfg
    }

    fn dir_config(&self, d: usize) -> &DirectionConfig {
        if d == 0 { &self.cfg.a_to_b } else { &self.cfg.b_to_a }
    }

    /// Bytes of frame memory (`slab_frames` × the frame size), for the start log.
    pub fn frame_memory(&self) -> (usize, usize) {
        (self.slab.slot_bytes(), self.slab.memory_bytes())
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
        // Longer than the box reads whole, or than the far side's interface sends (the
        // kernel would refuse it there with EMSGSIZE; a bridge drops it too).
        let out_mtu = self.mtus[1 - side];
        let verdict = if self.socks[side].truncated(i) || !io::fits_mtu(frame, out_mtu) {
            // Counted below like any refusal; logged at the 1st, 2nd, 4th, 8th, ... so a
            // steady stream of them cannot flood the log.
            let n = self.stats.parse_drops[side][DropCause::Oversized as usize] + 1;
            if n.is_power_of_two() {
                eprintln!("smallpipe-box: interface {}: dropped a frame of {} bytes: the box carries frames of up to {} bytes, \
                           and {} (MTU {out_mtu}) sends up to {} ({} with an 802.1Q tag) ({n} so far, counted as oversized; \
                           check the MTUs and that GRO/LRO are off)",
                          self.iface_names[side], self.socks[side].frame_len(i), self.socks[side].frame_bytes(),
                          self.iface_names[1 - side], out_mtu as usize + io::ETH_HEADER_BYTES,
                          out_mtu as usize + io::L2_OVERHEAD_BYTES);
            }
            Verdict::Drop(DropCause::Oversized)
        } else {
            parse_frame(frame)
        };
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
        self.flows.arrived(side, &pkt, self.slab.get(slot), now.as_nanos());
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
            self.sample_links(at, true);
            self.next_slice += Duration(self.slice_ns);
        }
    }

    fn handle_events(&mut self, dir: usize, now: Instant) {
        let mut events = std::mem::take(&mut self.events);
        for ev in events.drain(..) {
            match ev {
                LinkEvent::Dropped(pkt, _) => {
                    self.flows.dropped(dir, &pkt, now.as_nanos());
                    self.slab.release(pkt.runtime_handle);
                }
                LinkEvent::Departed { pkt, at } => {
                    self.flows.departed(dir, &pkt, at);
                    self.links[1 - dir].queue.observe_reverse(&pkt, at);
                }
                LinkEvent::Delivered { pkt, due } => {
                    self.lateness_ns.saturating_record(now.saturating_since(due).as_nanos().max(1));
                    if pkt.ecn == Ecn::Ce {
                        set_ce(self.slab.get_mut(pkt.runtime_handle));
                    }
                    self.flows.delivered(dir, &pkt, now.as_nanos());
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
        self.last_queue_states.clear();
        for (d, l) in self.links.iter().enumerate() {
            self.last_queue_states.extend(queue_state_row(d, l, at, self.slice_ns));
        }
    }

    /// Both directions' counters at `at` (a slice's end, or the stop), after everything due
    /// by then, so two rows give a window's exact counts and backlog integral; to the slice
    /// log with the queue states sampled for the same slice (none at the stop).
    fn sample_links(&mut self, at: Instant, with_states: bool) {
        self.advance_links(at, self.clock.now());
        let row = [0, 1].map(|d| self.links[d].cumulative(at, &mut self.events));
        debug_assert!(self.events.is_empty(), "nothing is left due by `at`");
        if let Some(log) = &mut self.slice_log {
            log.slice(&row, if with_states { &self.last_queue_states } else { &[] });
        }
    }

    /// From now on, write each slice's rows into `dir`'s `link_slices.csv` and
    /// `queue_states.csv` (the box's `--out`).
    pub fn log_slices_to(&mut self, dir: &std::path::Path) -> std::io::Result<()> {
        self.slice_log = Some(SliceLog::create(dir)?);
        Ok(())
    }

    /// Flushes and closes the slice log: the first write error of the run, if any.
    pub fn finish_slice_log(&mut self) -> std::io::Result<()> {
        self.slice_log.take().map_or(Ok(()), SliceLog::finish)
    }

    fn drop_counts(&self) -> log::DropCounts {
        log::DropCounts::of([self.links[0].queue.stats(), self.links[1].queue.stats()], &self.stats)
    }

    pub fn snapshot(&mut self, now: Instant) -> Snapshot {
        self.flows.expire(now.as_nanos());
        Snapshot::take(now, &mut self.links, &self.stats, &self.flows, &self.lateness_ns, self.slab.in_use(), &self.last_queue_states)
    }
}

/// A discipline's `kind`, as the config spells it.
fn kind(q: &QdiscConfig) -> String {
    serde_json::to_value(q).ok().and_then(|v| v["kind"].as_str().map(String::from)).unwrap_or_else(|| "?".into())
}
