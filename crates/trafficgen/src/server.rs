//! Server side: the data senders. Each accepted connection reads the client's request
//! (see `client`), sets the group's congestion control, writes the bytes asked for (or,
//! for an interactive connection, single-segment bursts) and closes. A sampler takes a
//! `TCP_INFO` snapshot of every open connection at each slice's end.

use crate::client::UNLIMITED;
use crate::plan::{secs_to_ns, Plan, UnitSpec};
use crate::sock::{self, TcpInfo};
use serde::Serialize;
use smallpipe_core::Rng;
use smallpipe_sim::config::GapFrom;
use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(50);
/// How often an interactive sender checks whether its bursts are acknowledged: the
/// resolution of `bursts.acked_ns`.
const ACK_POLL: Duration = Duration::from_micros(500);

/// A connection's sender-side counters at its end (or at the end of the run).
#[derive(Debug, Serialize)]
pub struct SenderRecord {
    pub flow_id: u32,
    pub unit_id: u32,
    pub congestion_control: String,
    /// `tcpi_total_rto` when accepted: the SYN-ACK's timeouts (Linux starts the child's
    /// count at the request's `num_timeout`), which `info.total_rto` includes.
    pub handshake_timeouts: Option<u16>,
    pub info: TcpInfo,
}

#[derive(Debug, Serialize)]
pub struct BurstRecord {
    pub flow_id: u32,
    pub sent_ns: u64,
    pub acked_ns: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct Snapshot {
    pub flow_id: u32,
    pub slice: u32,
    pub time_ns: u64,
    pub info: TcpInfo,
}

#[derive(Serialize)]
pub struct ServerOutput {
    pub flows: Vec<SenderRecord>,
    pub bursts: Vec<BurstRecord>,
    pub tcp_info: Vec<Snapshot>,
}

struct Ctx {
    plan: Plan,
    units: Vec<UnitSpec>,
    open: Mutex<HashMap<u32, Arc<TcpStream>>>,
    flows: Mutex<Vec<SenderRecord>>,
    bursts: Mutex<Vec<BurstRecord>>,
}

impl Ctx {
    fn now(&self) -> u64 {
        sock::monotonic_ns().saturating_sub(self.plan.t0_ns)
    }
    /// The end of the run: the plan's, or the moment a stop signal came (`sock::stop_now`).
    fn duration_ns(&self) -> u64 {
        self.plan.end_ns().min(sock::stop_at_ns()).saturating_sub(self.plan.t0_ns)
    }
}

/// Listens (printing `ready` once it does), serves until the end of the run, then returns.
pub fn run(plan: Plan, units: Vec<UnitSpec>) -> std::io::Result<ServerOutput> {
    let listener = sock::listen(SocketAddrV4::new(plan.server_addr, plan.port), 4096)?;
    listener.set_nonblocking(true)?;
    println!("ready");
    let ctx = Arc::new(Ctx { plan, units, open: Mutex::default(), flows: Mutex::default(), bursts: Mutex::default() });
    let sampler = {
        let ctx = ctx.clone();
        thread::spawn(move || sample_tcp_info(&ctx))
    };
    let mut conns = Vec::new();
    while ctx.now() < ctx.duration_ns() {
        match listener.accept() {
            Ok((stream, _)) => {
                let ctx = ctx.clone();
                conns.push(thread::spawn(move || serve(&ctx, stream)));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(e),
        }
    }
    for c in conns {
        // A connection's error (a reset by the client at the end) only ends that connection.
        let _ = c.join().expect("connection thread panicked");
    }
    let tcp_info = sampler.join().expect("sampler panicked");
    let ctx = Arc::try_unwrap(ctx).ok().expect("threads joined");
    let mut flows = ctx.flows.into_inner().unwrap();
    flows.sort_by_key(|f| f.flow_id);
    Ok(ServerOutput { flows, bursts: ctx.bursts.into_inner().unwrap(), tcp_info })
}

fn sample_tcp_info(ctx: &Ctx) -> Vec<Snapshot> {
    let mut out = Vec::new();
    for slice in 0..ctx.plan.n_slices() {
        let slice_end_ns = ctx.plan.slice_ns() * (slice as u64 + 1);
        sock::sleep_until(ctx.plan.t0_ns + slice_end_ns.min(ctx.duration_ns()));
        let time_ns = slice_end_ns.min(ctx.duration_ns()); // a stop while asleep ends the slice early
        for (&flow_id, stream) in ctx.open.lock().unwrap().iter() {
            if let Ok(info) = sock::tcp_info(stream.as_raw_fd()) {
                out.push(Snapshot { flow_id, slice, time_ns, info });
            }
        }
        if time_ns < slice_end_ns {
            break; // the run ended inside this slice
        }
    }
    out
}

fn serve(ctx: &Ctx, stream: TcpStream) -> std::io::Result<()> {
    let handshake_timeouts = sock::tcp_info(stream.as_raw_fd()).ok().and_then(|info| info.total_rto);
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(POLL))?;
    let mut request = [0u8; 16];
    if !read_exact_until(&stream, &mut request, ctx)? {
        return Ok(());
    }
    let flow_id = u32::from_le_bytes(request[..4].try_into().unwrap());
    let unit_id = u32::from_le_bytes(request[4..8].try_into().unwrap());
    let size = u64::from_le_bytes(request[8..].try_into().unwrap());
    let unit = ctx.units.get(unit_id as usize).ok_or_else(|| std::io::Error::other(format!("unknown unit {unit_id}")))?;
    let cc = ctx.plan.congestion_control[unit.group as usize].clone();
    let fd = stream.as_raw_fd();
    sock::set_congestion_control(fd, &cc)?;
    // The simulator's application writes go out at once (no Nagle hold of a short tail).
    sock::set_nodelay(fd)?;
    let stream = Arc::new(stream);
    ctx.open.lock().unwrap().insert(flow_id, stream.clone());
    let result = if size == 0 { bursts(ctx, &stream, flow_id, unit) } else { send(ctx, &stream, size) };
    let info = sock::tcp_info(fd);
    ctx.open.lock().unwrap().remove(&flow_id);
    if let Ok(info) = info {
        ctx.flows.lock().unwrap().push(SenderRecord { flow_id, unit_id, congestion_control: cc, handshake_timeouts, info });
    }
    result
}

/// Reads exactly `buf.len()` bytes unless the run ends or the peer closes first.
fn read_exact_until(mut stream: &TcpStream, buf: &mut [u8], ctx: &Ctx) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                if ctx.now() >= ctx.duration_ns() {
                    return Ok(false);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Writes `size` bytes (until the end for unlimited), sends the FIN, and waits for the
/// client's close so the final `TCP_INFO` counts every retransmission.
fn send(ctx: &Ctx, stream: &Arc<TcpStream>, size: u64) -> std::io::Result<()> {
    let chunk = vec![0u8; 1 << 16];
    let mut written = 0u64;
    let mut s: &TcpStream = stream;
    while written < size {
        let n = (size - written).min(chunk.len() as u64) as usize;
        match s.write(&chunk[..n]) {
            Ok(n) => written += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
        if ctx.now() >= ctx.duration_ns() {
            return Ok(());
        }
    }
    debug_assert!(size != UNLIMITED);
    s.shutdown(std::net::Shutdown::Write)?;
    let mut sink = [0u8; 64];
    while ctx.now() < ctx.duration_ns() {
        match s.read(&mut sink) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Interactive: bursts of `burst_bytes` (one MSS by default), the first one gap after the
/// handshake, then one gap after the previous burst's write (`gap_from = "send"`) or its
/// acknowledgement (`"response"`). A burst is acknowledged when the socket's unacknowledged
/// bytes (`SIOCOUTQ`) no longer include it.
fn bursts(ctx: &Ctx, stream: &Arc<TcpStream>, flow_id: u32, unit: &UnitSpec) -> std::io::Result<()> {
    let g = &ctx.plan.scenario.flows[unit.group as usize];
    let burst = vec![0u8; g.burst_bytes.map_or(ctx.plan.mss_bytes(), |b| b) as usize];
    let mut rng = Rng::new(ctx.plan.scenario.seed, 0x5000_0000 + flow_id as u64);
    let mut gap = || secs_to_ns(rng.exponential(g.mean_gap_s));
    let mut next_send = Some(ctx.now() + gap());
    // (sent_ns, bytes written once this burst was)
    let mut outstanding: VecDeque<(u64, u64)> = VecDeque::new();
    let mut written = 0u64;
    let mut s: &TcpStream = stream;
    let fd = stream.as_raw_fd();
    loop {
        let now = ctx.now();
        if now >= ctx.duration_ns() {
            break;
        }
        let acked = written - sock::unacked_bytes(fd)?.min(written);
        while outstanding.front().is_some_and(|&(_, upto)| upto <= acked) {
            let (sent_ns, _) = outstanding.pop_front().unwrap();
            ctx.bursts.lock().unwrap().push(BurstRecord { flow_id, sent_ns, acked_ns: Some(now) });
            if g.gap_from == GapFrom::Response {
                next_send = Some(now + gap());
            }
        }
        if next_send.is_some_and(|t| now >= t) {
            s.write_all(&burst)?;
            written += burst.len() as u64;
            outstanding.push_back((now, written));
            next_send = match g.gap_from {
                GapFrom::Send => Some(now + gap()),
                GapFrom::Response => None,
            };
        }
        thread::sleep(ACK_POLL);
    }
    let mut all = ctx.bursts.lock().unwrap();
    all.extend(outstanding.into_iter().map(|(sent_ns, _)| BurstRecord { flow_id, sent_ns, acked_ns: None }));
    Ok(())
}
