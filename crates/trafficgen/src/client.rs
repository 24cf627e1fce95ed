//! Client side: the receivers. Each unit runs its application (one connection, a session,
//! a web user's page over a pool, Poisson arrivals, a replayed log) in a thread of its own;
//! each connection asks the server for `size` bytes and counts what it reads, per slice.
//!
//! A connection sends a 16-byte request: flow id (u32), unit id (u32), size (u64; 0 is an
//! interactive connection whose bursts the server writes, `u64::MAX` an unlimited bulk
//! flow), little-endian. It ends when the server's FIN arrives after the last byte (the
//! simulator's "receiver had every byte and the FIN").

use crate::plan::{secs_to_ns, Plan, UnitSpec};
use crate::sock;
use serde::Serialize;
use smallpipe_sim::config::{AppKind, FlowGroup, ReplayMode};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddrV4;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// How often a blocked read wakes to check the end of the run.
const POLL: Duration = Duration::from_millis(50);
pub const UNLIMITED: u64 = u64::MAX;

/// One connection, times in ns since t0.
#[derive(Debug, Serialize)]
pub struct FlowRecord {
    pub flow_id: u32,
    pub unit_id: u32,
    pub start_ns: u64,
    /// Replayed logs: when the client wanted the object (the unit's start plus its logged
    /// time), as the simulator's `requested_ns`.
    pub requested_ns: Option<u64>,
    pub end_ns: Option<u64>,
    /// None for unlimited bulk and interactive connections.
    pub size_bytes: Option<u64>,
    pub bytes_delivered: u64,
    /// RTO expirations of the client socket before it was established (its SYNs).
    pub syn_timeouts: Option<u16>,
    pub longest_silence_ns: u64,
    pub first_slice: u32,
    pub slice_bytes: Vec<u64>,
    /// With `record_progress`: when each MSS of data had arrived, since the flow's start.
    pub progress_ns: Vec<u64>,
    /// Why the connection failed (connect refused, timed out, reset), if it did.
    pub error: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct UnitRecord {
    pub unit_id: u32,
    pub connections: u32,
    pub bytes_delivered: u64,
    pub longest_hang_ns: u64,
    pub pages_done: u32,
    #[serde(skip)]
    open: u32,
    #[serde(skip)]
    last_progress_ns: u64,
}

#[derive(Serialize)]
pub struct ClientOutput {
    pub flows: Vec<FlowRecord>,
    pub units: Vec<UnitRecord>,
}

struct Ctx {
    plan: Plan,
    next_flow: AtomicU32,
    flows: Mutex<Vec<FlowRecord>>,
}

impl Ctx {
    fn now(&self) -> u64 {
        sock::monotonic_ns().saturating_sub(self.plan.t0_ns)
    }
    /// The end of the run: the plan's, or the moment a stop signal came (`sock::stop_now`).
    fn duration_ns(&self) -> u64 {
        self.plan.end_ns().min(sock::stop_at_ns()).saturating_sub(self.plan.t0_ns)
    }
    fn slice_of(&self, t_ns: u64) -> u32 {
        ((t_ns / self.plan.slice_ns()) as u32).min(self.plan.n_slices() - 1)
    }
    fn group(&self, unit: &UnitSpec) -> &FlowGroup {
        &self.plan.scenario.flows[unit.group as usize]
    }
}

type Unit = Arc<Mutex<UnitRecord>>;

pub fn run(plan: Plan, units: Vec<UnitSpec>) -> ClientOutput {
    let ctx = Arc::new(Ctx { plan, next_flow: AtomicU32::new(0), flows: Mutex::new(Vec::new()) });
    let records: Vec<Unit> =
        units.iter().map(|u| Arc::new(Mutex::new(UnitRecord { unit_id: u.unit_id, ..Default::default() }))).collect();
    let threads: Vec<_> = units
        .into_iter()
        .zip(&records)
        .map(|(spec, rec)| {
            let (ctx, rec) = (ctx.clone(), rec.clone());
            thread::spawn(move || run_unit(&ctx, spec, &rec))
        })
        .collect();
    for t in threads {
        t.join().expect("unit thread panicked");
    }
    let end = ctx.duration_ns();
    let units = records
        .into_iter()
        .map(|r| {
            let mut r = Arc::try_unwrap(r).expect("threads joined").into_inner().unwrap();
            if r.open > 0 {
                r.longest_hang_ns = r.longest_hang_ns.max(end.saturating_sub(r.last_progress_ns));
            }
            r
        })
        .collect();
    let mut flows = std::mem::take(&mut *ctx.flows.lock().unwrap());
    flows.sort_by_key(|f| f.flow_id);
    ClientOutput { flows, units }
}

fn run_unit(ctx: &Arc<Ctx>, mut spec: UnitSpec, rec: &Unit) {
    let g = ctx.group(&spec).clone();
    let mut children: Vec<JoinHandle<()>> = Vec::new();
    sock::sleep_until(ctx.plan.t0_ns + spec.start_ns);
    match spec.app {
        AppKind::Bulk => {
            connection(ctx, &spec, rec, g.size_bytes.unwrap_or(UNLIMITED), None);
        }
        AppKind::Transfer => {
            connection(ctx, &spec, rec, g.size_bytes.expect("validated: transfers have a size"), None);
        }
        AppKind::Interactive => {
            connection(ctx, &spec, rec, 0, None);
        }
        AppKind::Session => {
            while ctx.now() < ctx.duration_ns() {
                let size = g.draw_size(&mut spec.rng);
                connection(ctx, &spec, rec, size, None);
                let think = secs_to_ns(g.think_s.sample(&mut spec.rng));
                sock::sleep_until(sock::monotonic_ns() + think);
            }
        }
        AppKind::Web => {
            while ctx.now() < ctx.duration_ns() {
                let objects = (g.objects_per_page.sample(&mut spec.rng).round() as u32).max(1);
                let sizes: VecDeque<_> = (0..objects).map(|_| (g.draw_size(&mut spec.rng), None)).collect();
                if pool(ctx, &spec, rec, sizes, g.connections) {
                    rec.lock().unwrap().pages_done += 1;
                }
                let think = secs_to_ns(g.think_s.sample(&mut spec.rng));
                sock::sleep_until(sock::monotonic_ns() + think);
            }
        }
        AppKind::Poisson => {
            let per_s = g.rate_per_s.unwrap_or_else(|| {
                let mean_bytes = g.mean_size_bytes().expect("validated: finite mean");
                g.load.unwrap_or(1.0) * ctx.plan.scenario.link.rate_bps / (8.0 * mean_bytes)
            });
            let mean_gap_s = g.count as f64 / per_s;
            let mut at = spec.start_ns + secs_to_ns(spec.rng.exponential(mean_gap_s));
            while at < ctx.duration_ns() {
                sock::sleep_until(ctx.plan.t0_ns + at);
                if at >= ctx.duration_ns() {
                    break; // stopped while waiting
                }
                at += secs_to_ns(spec.rng.exponential(mean_gap_s));
                let size = g.draw_size(&mut spec.rng);
                children.push(spawn_connection(ctx, &spec, rec, size, None));
            }
        }
        AppKind::UdpCbr | AppKind::UdpExpoo | AppKind::UdpPareto => unreachable!("main rejects plans with UDP groups"),
        AppKind::Replay => match spec.replay {
            ReplayMode::Logged => {
                for &(time_s, bytes) in &spec.requests {
                    let at = spec.start_ns + secs_to_ns(time_s);
                    if at >= ctx.duration_ns() {
                        break;
                    }
                    sock::sleep_until(ctx.plan.t0_ns + at);
                    if at >= ctx.duration_ns() {
                        break; // stopped while waiting
                    }
                    children.push(spawn_connection(ctx, &spec, rec, bytes, Some(at)));
                }
            }
            ReplayMode::Asap => {
                let sizes = spec.requests.iter().map(|&(t, b)| (b, Some(spec.start_ns + secs_to_ns(t)))).collect();
                pool(ctx, &spec, rec, sizes, g.connections);
            }
        },
    }
    for c in children {
        c.join().expect("connection thread panicked");
    }
}

fn spawn_connection(ctx: &Arc<Ctx>, spec: &UnitSpec, rec: &Unit, size: u64, requested_ns: Option<u64>) -> JoinHandle<()> {
    let (ctx, spec, rec) = (ctx.clone(), spec.clone(), rec.clone());
    thread::spawn(move || {
        connection(&ctx, &spec, &rec, size, requested_ns);
    })
}

/// Fetches `objects` (size, when wanted) over at most `connections` parallel connections, a
/// new one as soon as one ends (the TAQ paper's flow pool). True when every object arrived whole.
fn pool(ctx: &Arc<Ctx>, spec: &UnitSpec, rec: &Unit, objects: VecDeque<(u64, Option<u64>)>, connections: u32) -> bool {
    let queue = Arc::new(Mutex::new(objects));
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let (ctx, spec, rec, queue) = (ctx.clone(), spec.clone(), rec.clone(), queue.clone());
            thread::spawn(move || {
                let mut all = true;
                while ctx.now() < ctx.duration_ns() {
                    let Some((size, requested_ns)) = queue.lock().unwrap().pop_front() else { break };
                    all &= connection(&ctx, &spec, &rec, size, requested_ns);
                }
                all
            })
        })
        .collect();
    let all_done = workers.into_iter().fold(true, |acc, w| w.join().expect("pool worker panicked") & acc);
    all_done && queue.lock().unwrap().is_empty()
}

/// One connection, start to FIN or the end of the run. True when it finished.
fn connection(ctx: &Ctx, spec: &UnitSpec, unit: &Unit, size: u64, requested_ns: Option<u64>) -> bool {
    let end = ctx.duration_ns();
    let start = ctx.now();
    if start >= end {
        return false;
    }
    let flow_id = ctx.next_flow.fetch_add(1, Ordering::Relaxed);
    {
        let mut u = unit.lock().unwrap();
        if u.open == 0 {
            u.last_progress_ns = start; // a hang counts only while something is open
        }
        u.open += 1;
        u.connections += 1;
    }
    let record_progress = ctx.group(spec).record_progress;
    let mut rec = FlowRecord {
        flow_id,
        unit_id: spec.unit_id,
        start_ns: start,
        requested_ns,
        end_ns: None,
        size_bytes: (size != 0 && size != UNLIMITED).then_some(size),
        bytes_delivered: 0,
        syn_timeouts: None,
        longest_silence_ns: 0,
        first_slice: ctx.slice_of(start),
        slice_bytes: vec![0],
        progress_ns: Vec::new(),
        error: None,
    };
    let mut last_progress = start;
    if let Err(e) = transfer(ctx, spec, unit, size, record_progress, &mut rec, &mut last_progress) {
        rec.error = Some(e.to_string());
    }
    let end = ctx.duration_ns(); // earlier than before the transfer if the run was stopped
    let stop = rec.end_ns.unwrap_or(end).min(end);
    rec.longest_silence_ns = rec.longest_silence_ns.max(stop.saturating_sub(last_progress));
    let final_slice = ctx.slice_of(stop);
    rec.slice_bytes.resize((final_slice - rec.first_slice + 1) as usize, 0);
    unit.lock().unwrap().open -= 1;
    let finished = rec.end_ns.is_some();
    ctx.flows.lock().unwrap().push(rec);
    finished
}

fn transfer(ctx: &Ctx, spec: &UnitSpec, unit: &Unit, size: u64, record_progress: bool, rec: &mut FlowRecord,
            last_progress: &mut u64) -> std::io::Result<()> {
    let end = ctx.duration_ns();
    let server = SocketAddrV4::new(ctx.plan.server_addr, ctx.plan.port);
    let local = ctx.plan.client_addrs[spec.unit_id as usize];
    let timeout = Duration::from_nanos(end.saturating_sub(rec.start_ns).max(1_000_000));
    let clamp = ctx.plan.scenario.tcp.rwnd_bytes.min(u32::MAX as u64) as u32;
    let mut stream = sock::connect_from(local, server, clamp, timeout)?;
    rec.syn_timeouts = sock::tcp_info(stream.as_raw_fd())?.total_rto;
    let mut request = [0u8; 16];
    request[..4].copy_from_slice(&rec.flow_id.to_le_bytes());
    request[4..8].copy_from_slice(&spec.unit_id.to_le_bytes());
    request[8..].copy_from_slice(&size.to_le_bytes());
    stream.write_all(&request)?;
    stream.set_read_timeout(Some(POLL))?;
    let mss = ctx.plan.mss_bytes() as u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                if ctx.now() >= ctx.duration_ns() {
                    return Ok(());
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        let now = ctx.now();
        if now >= ctx.duration_ns() {
            return Ok(()); // data read after the end belongs to no slice
        }
        if n == 0 {
            rec.end_ns = Some(now);
            return Ok(());
        }
        let n = n as u64;
        let before = rec.bytes_delivered;
        rec.bytes_delivered += n;
        let k = (ctx.slice_of(now) - rec.first_slice) as usize;
        if rec.slice_bytes.len() <= k {
            rec.slice_bytes.resize(k + 1, 0);
        }
        rec.slice_bytes[k] += n;
        rec.longest_silence_ns = rec.longest_silence_ns.max(now - *last_progress);
        *last_progress = now;
        if record_progress {
            for _ in before / mss..rec.bytes_delivered / mss {
                rec.progress_ns.push(now - rec.start_ns);
            }
        }
        let mut u = unit.lock().unwrap();
        u.bytes_delivered += n;
        u.longest_hang_ns = u.longest_hang_ns.max(now.saturating_sub(u.last_progress_ns));
        u.last_progress_ns = now;
    }
}
