//! The few Linux socket calls std does not offer: binding a client socket to its unit's
//! address before connecting, `TCP_CONGESTION`, `TCP_WINDOW_CLAMP`, `TCP_INFO`, `SIOCOUTQ`,
//! a large listen backlog, and absolute sleeps on `CLOCK_MONOTONIC` (the clock both
//! generator processes and the Python runner share, so one `t0` orders both sides).

use std::io;
use std::mem::size_of;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// `CLOCK_MONOTONIC` in nanoseconds (Python's `time.monotonic_ns()`).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// When SIGINT or SIGTERM asked the run to stop (`CLOCK_MONOTONIC` ns; `u64::MAX`: not asked).
static STOP_AT_NS: AtomicU64 = AtomicU64::new(u64::MAX);

/// Ends the run now: every side's end of run becomes this moment, so each loop winds down
/// within a poll and the records so far are written (Ctrl-C keeps what was measured).
/// Async-signal-safe: a clock read and an atomic store.
pub fn stop_now() {
    STOP_AT_NS.fetch_min(monotonic_ns(), Ordering::SeqCst);
}

/// The time the run was asked to stop at (`u64::MAX` while it was not).
pub fn stop_at_ns() -> u64 {
    STOP_AT_NS.load(Ordering::SeqCst)
}

/// The longest a sleep goes without looking at a stop.
const STOP_POLL_NS: u64 = 50_000_000;

/// Sleeps until the absolute `CLOCK_MONOTONIC` time `at_ns` (returns at once if past), or
/// until a stop (checked every 50 ms).
pub fn sleep_until(at_ns: u64) {
    loop {
        let now = monotonic_ns();
        let target = at_ns.min(stop_at_ns());
        if now >= target {
            return;
        }
        let wake = target.min(now + STOP_POLL_NS);
        let ts = libc::timespec { tv_sec: (wake / 1_000_000_000) as libc::time_t, tv_nsec: (wake % 1_000_000_000) as libc::c_long };
        // SAFETY: ts is valid; EINTR (a stop signal) loops back to the check.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

fn sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: value points to a live T of the given size.
    check(unsafe { libc::setsockopt(fd, level, name, value as *const T as *const libc::c_void, size_of::<T>() as libc::socklen_t) })
        .map(drop)
}

/// Sets the socket's congestion control (`reno`, `cubic`, `bbr`: what the kernel has).
pub fn set_congestion_control(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: the name's bytes are live for the call.
    check(unsafe {
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_ptr() as *const libc::c_void, name.len() as libc::socklen_t)
    })
    .map(drop)
}

pub fn set_nodelay(fd: RawFd) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &1 as &libc::c_int)
}

/// A TCP connection from `local` (the unit's own address) to `remote`. The receive window
/// is clamped to `window_clamp_bytes` (the scenario's `rwnd_bytes`) before the SYN. The
/// connect gives up after `timeout` (SYN retransmissions follow the namespace's sysctls).
pub fn connect_from(local: Ipv4Addr, remote: SocketAddrV4, window_clamp_bytes: u32, timeout: Duration) -> io::Result<TcpStream> {
    // SAFETY: plain socket(2); the fd is owned below.
    let fd = unsafe { OwnedFd::from_raw_fd(check(libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0))?) };
    let raw = fd.as_raw_fd();
    let clamp = window_clamp_bytes.min(i32::MAX as u32) as libc::c_int;
    setsockopt(raw, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, &clamp)?;
    // Linux bounds a blocking connect by SO_SNDTIMEO.
    let tv = libc::timeval { tv_sec: timeout.as_secs() as libc::time_t, tv_usec: timeout.subsec_micros() as libc::suseconds_t };
    setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDTIMEO, &tv)?;
    let local = sockaddr(SocketAddrV4::new(local, 0));
    let remote = sockaddr(remote);
    let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: the sockaddrs are live and of the given length.
    check(unsafe { libc::bind(raw, &local as *const _ as *const libc::sockaddr, len) })?;
    check(unsafe { libc::connect(raw, &remote as *const _ as *const libc::sockaddr, len) })?;
    Ok(TcpStream::from(fd))
}

/// A listening socket with a backlog large enough for a burst of Poisson arrivals.
pub fn listen(addr: SocketAddrV4, backlog: i32) -> io::Result<TcpListener> {
    // SAFETY: plain socket(2); the fd is owned below.
    let fd = unsafe { OwnedFd::from_raw_fd(check(libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0))?) };
    let raw = fd.as_raw_fd();
    setsockopt(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, &1 as &libc::c_int)?;
    let sa = sockaddr(addr);
    // SAFETY: the sockaddr is live and of the given length.
    check(unsafe { libc::bind(raw, &sa as *const _ as *const libc::sockaddr, size_of::<libc::sockaddr_in>() as libc::socklen_t) })?;
    check(unsafe { libc::listen(raw, backlog) })?;
    Ok(TcpListener::from(fd))
}

/// Bytes written but not yet acknowledged (plus unsent), `SIOCOUTQ`.
pub fn unacked_bytes(fd: RawFd) -> io::Result<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int.
    check(unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) })?;
    Ok(n.max(0) as u64)
}

/// The `struct tcp_info` fields the testbed reports, read by offset from the kernel's
/// layout (include/uapi/linux/tcp.h) so an older kernel's shorter struct just leaves the
/// newer fields unknown.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct TcpInfo {
    pub ca_state: u8,
    pub rto_us: u32,
    pub lost_pkts: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_ssthresh_pkts: u32,
    pub snd_cwnd_pkts: u32,
    pub total_retrans: u32,
    pub bytes_acked: u64,
    pub data_segs_out: u32,
    /// RTO expirations, SYN and SYN-ACK included (Linux 6.7+).
    pub total_rto: Option<u16>,
    /// Time spent in RTO recoveries, ms (Linux 6.7+).
    pub total_rto_time_ms: Option<u32>,
}

pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most len bytes into buf.
    check(unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr() as *mut libc::c_void, &mut len) })?;
    let len = len as usize;
    let u16_at = |o: usize| (o + 2 <= len).then(|| u16::from_ne_bytes([buf[o], buf[o + 1]]));
    let u32_at = |o: usize| if o + 4 <= len { u32::from_ne_bytes(buf[o..o + 4].try_into().unwrap()) } else { 0 };
    let u64_at = |o: usize| if o + 8 <= len { u64::from_ne_bytes(buf[o..o + 8].try_into().unwrap()) } else { 0 };
    Ok(TcpInfo {
        ca_state: buf[1],
        rto_us: u32_at(8),
        lost_pkts: u32_at(32),
        rtt_us: u32_at(68),
        rttvar_us: u32_at(72),
        snd_ssthresh_pkts: u32_at(76),
        snd_cwnd_pkts: u32_at(80),
        total_retrans: u32_at(100),
        bytes_acked: u64_at(120),
        data_segs_out: u32_at(156),
        total_rto: u16_at(240),
        total_rto_time_ms: (len >= 248).then(|| u32_at(244)),
    })
}
