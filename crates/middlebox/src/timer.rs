//! Time for the data path: the run's clock (CLOCK_MONOTONIC, counted from the start of the
//! run so core's time-averaged counters cover the run), a timerfd armed at absolute
//! deadlines on that clock, and the real-time scheduling request.
//!
//! Absolute deadlines mean a late wake-up never shifts the next one: the link model computes
//! departures in logical time, and the timer only says when to look.

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use nix::time::clock_gettime;
use smallpipe_core::Instant;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

fn monotonic_ns() -> u64 {
    let ts = clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always readable");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// The run's clock: nanoseconds of CLOCK_MONOTONIC since the run started.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start_ns: u64,
}

impl Clock {
    pub fn start() -> Self {
        Clock { start_ns: monotonic_ns() }
    }
    pub fn now(&self) -> Instant {
        Instant(monotonic_ns() - self.start_ns)
    }
    pub fn start_monotonic_ns(&self) -> u64 {
        self.start_ns
    }
}

/// A one-shot timerfd on CLOCK_MONOTONIC, armed at absolute deadlines of a [`Clock`].
pub struct Timer {
    fd: TimerFd,
    clock: Clock,
}

impl Timer {
    pub fn new(clock: Clock) -> io::Result<Self> {
        let fd = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC)?;
        Ok(Timer { fd, clock })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Fire at `deadline` (run time); a deadline already past fires at once.
    pub fn arm_at(&self, deadline: Instant) -> io::Result<()> {
        // An all-zero value would disarm the timer; CLOCK_MONOTONIC is never 0 in practice,
        // but the max keeps the meaning exact.
        let abs_ns = (self.clock.start_ns + deadline.as_nanos()).max(1);
        let ts = TimeSpec::new((abs_ns / 1_000_000_000) as i64, (abs_ns % 1_000_000_000) as i64);
        self.fd.set(Expiration::OneShot(ts), TimerSetTimeFlags::TFD_TIMER_ABSTIME)?;
        Ok(())
    }

    pub fn disarm(&self) -> io::Result<()> {
        Ok(self.fd.unset()?)
    }

    /// Consume a pending expiry so the fd stops polling readable.
    pub fn acknowledge(&self) {
        let mut buf = [0u8; 8];
        // EAGAIN (no expiry pending) is the normal case when another fd woke the loop.
        let _ = nix::unistd::read(self.fd.as_fd(), &mut buf);
    }
}

/// Ask for SCHED_FIFO at `priority` for the calling thread. Fails without CAP_SYS_NICE or
/// under an RT-throttled container; the caller reports which it got.
pub fn request_sched_fifo(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid sched_param for the call; pid 0 means this thread.
    let ret = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Total steal time of the machine so far, nanoseconds (the `steal` column of `/proc/stat`'s
/// `cpu` line, in USER_HZ ticks), or `None` where it is not reported.
pub fn steal_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_steal_ns(&stat, user_hz())
}

fn user_hz() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as u64 } else { 100 }
}

/// The steal column is the 8th value of the aggregate `cpu` line (proc(5)).
fn parse_steal_ns(stat: &str, hz: u64) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    Some(ticks * 1_000_000_000 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_value_of_the_cpu_line() {
        let stat = "cpu  10 20 30 40 50 60 70 80 90 100\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        // 80 ticks at 100 Hz = 0.8 s.
        assert_eq!(parse_steal_ns(stat, 100), Some(800_000_000));
        assert_eq!(parse_steal_ns("intr 1 2\n", 100), None);
    }

    #[test]
    fn an_absolute_deadline_in_the_past_fires_at_once() {
        let clock = Clock::start();
        let t = Timer::new(clock).unwrap();
        t.arm_at(Instant(0)).unwrap();
        let mut fds = [nix::poll::PollFd::new(t.fd(), nix::poll::PollFlags::POLLIN)];
        let n = nix::poll::poll(&mut fds, 1000u16).unwrap();
        assert_eq!(n, 1);
    }
}
