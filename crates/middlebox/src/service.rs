//! Running as a service: one instance per interface ([`InstanceLock`]), systemd's
//! notification protocol by hand ([`Notifier`]: `READY=1`, `RELOADING=1`, `WATCHDOG=1`,
//! `STOPPING=1` as datagrams to `$NOTIFY_SOCKET`), and the checks that keep the box from
//! forwarding beside a fail-open bridge ([`check_not_bridged`]) or on a vanished interface
//! ([`interface_state`]).

use std::fs::File;
use std::io::Write;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the locks live unless `--lock-dir` says otherwise.
pub const DEFAULT_LOCK_DIR: &str = "/run/smallpipe-box";

/// Exclusive `flock`s, one per interface, held for the process's life (the kernel releases
/// them when it exits, `kill -9` included, so a stale file never blocks a restart).
/// Keyed by network namespace and interface name: two boxes must not read the same
/// interface (each would forward every frame), but `a0` in two namespaces is two interfaces.
pub struct InstanceLock {
    _held: Vec<nix::fcntl::Flock<File>>,
}

impl InstanceLock {
    pub fn acquire(dir: &Path, ifaces: &[&str]) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("lock directory {}: {e}", dir.display()))?;
        let netns = std::fs::read_link("/proc/self/ns/net")
            .ok()
            .and_then(|l| l.to_string_lossy().strip_prefix("net:[")?.strip_suffix(']').map(String::from))
            .unwrap_or_else(|| "unknown".into());
        let mut held = Vec::new();
        for iface in ifaces {
            let path = dir.join(format!("net{netns}-{iface}.lock"));
            let file = File::options().create(true).truncate(false).read(true).write(true).open(&path)
                .map_err(|e| format!("lock {}: {e}", path.display()))?;
            let mut lock = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(l) => l,
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                    let owner = std::fs::read_to_string(&path).unwrap_or_default();
                    return Err(format!(
                        "interface {iface} is already served by another smallpipe-box (pid {}; lock {}): \
                         a second box would forward every frame twice; stop the other one first",
                        owner.trim(), path.display()));
                }
                Err((_, e)) => return Err(format!("lock {}: {e}", path.display())),
            };
            lock.set_len(0).and_then(|()| writeln!(*lock, "{}", std::process::id()))
                .map_err(|e| format!("lock {}: {e}", path.display()))?;
            held.push(lock);
        }
        Ok(InstanceLock { _held: held })
    }
}

/// An interface enslaved to a bridge (the fail-open bridge left up) would deliver every
/// frame both through the bridge and through the box.
pub fn check_not_bridged(iface: &str) -> Result<(), String> {
    let master = PathBuf::from(format!("/sys/class/net/{iface}/master"));
    match std::fs::read_link(&master) {
        Ok(m) => Err(format!(
            "interface {iface} is a port of {} (the fail-open bridge?): frames would pass both through it and \
             through the box; remove it first (smallpipe-box-failopen close, or ip link set {iface} nomaster)",
            m.file_name().map_or_else(|| m.display().to_string(), |n| n.to_string_lossy().into_owned()))),
        Err(_) => Ok(()),
    }
}

/// What the box can learn of an interface by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterfaceState {
    Gone,
    Down { ifindex: u32 },
    Up { ifindex: u32 },
}

pub fn interface_state(iface: &str) -> InterfaceState {
    let Ok(ifindex) = nix::net::if_::if_nametoindex(iface) else { return InterfaceState::Gone };
    let up = std::fs::read_to_string(format!("/sys/class/net/{iface}/flags"))
        .ok()
        .and_then(|f| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
        .is_some_and(|flags| flags & libc::IFF_UP as u32 != 0);
    if up { InterfaceState::Up { ifindex } } else { InterfaceState::Down { ifindex } }
}

/// systemd's `sd_notify`, by hand: each state is one datagram to `$NOTIFY_SOCKET` (a path,
/// or an abstract name written with a leading `@`). Without the variable, every call is a
/// no-op, so the box behaves the same outside systemd.
pub struct Notifier {
    target: Option<(UnixDatagram, SocketAddr)>,
    /// Half of `$WATCHDOG_USEC` (systemd's advice), when the watchdog is on for this process.
    pub watchdog_every: Option<Duration>,
}

impl Notifier {
    pub fn from_env() -> Result<Self, String> {
        let target = match std::env::var_os("NOTIFY_SOCKET") {
            None => None,
            Some(path) => {
                let path = path.to_string_lossy().into_owned();
                let addr = match path.strip_prefix('@') {
                    Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
                    None => SocketAddr::from_pathname(&path),
                }
                .map_err(|e| format!("NOTIFY_SOCKET {path}: {e}"))?;
                // Never block the data path: a reader that stopped reading loses pings
                // (and a watchdog then says so), it does not stall forwarding.
                let sock = UnixDatagram::unbound().and_then(|s| s.set_nonblocking(true).map(|()| s))
                    .map_err(|e| format!("NOTIFY_SOCKET: {e}"))?;
                Some((sock, addr))
            }
        };
        let for_us = std::env::var("WATCHDOG_PID").map_or(true, |p| p.trim() == std::process::id().to_string());
        let watchdog_every = std::env::var("WATCHDOG_USEC")
            .ok()
            .and_then(|u| u.trim().parse::<u64>().ok())
            .filter(|&u| u > 0 && for_us)
            .map(|u| Duration::from_micros(u / 2));
        Ok(Notifier { target, watchdog_every })
    }

    /// Send one state (e.g. `"READY=1"`); a failure is reported, not fatal: systemd's own
    /// timeouts then tell the operator.
    pub fn notify(&self, state: &str) {
        if let Some((sock, addr)) = &self.target {
            match sock.send_to_addr(state.as_bytes(), addr) {
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => eprintln!("smallpipe-box: sd_notify {state:?}: {e}"),
                _ => {}
            }
        }
    }

    /// `RELOADING=1` with the time systemd's `Type=notify-reload` asks for (harmless for `notify`).
    pub fn reloading(&self) {
        let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
            .map_or(0, |t| t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000);
        self.notify(&format!("RELOADING=1\nMONOTONIC_USEC={now}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_an_interface_is_refused_with_the_owner_named_and_freed_on_drop() {
        let dir = std::env::temp_dir().join(format!("smallpipe-box-lock-test-{}", std::process::id()));
        let first = InstanceLock::acquire(&dir, &["a0", "b0"]).unwrap();
        // The pair reversed, or one of its interfaces with another, is the same conflict.
        for pair in [["b0", "a0"], ["c0", "a0"]] {
            let e = InstanceLock::acquire(&dir, &pair).err().expect("refused");
            assert!(e.contains("interface") && e.contains("already served") && e.contains(&std::process::id().to_string()), "{e}");
        }
        drop(first);
        InstanceLock::acquire(&dir, &["a0", "b0"]).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn notifications_arrive_as_datagrams_at_the_notify_socket() {
        let path = std::env::temp_dir().join(format!("smallpipe-box-notify-test-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixDatagram::bind(&path).unwrap();
        let n = Notifier {
            target: Some((UnixDatagram::unbound().unwrap(), SocketAddr::from_pathname(&path).unwrap())),
            watchdog_every: None,
        };
        n.notify("READY=1");
        n.reloading();
        let mut buf = [0u8; 256];
        let len = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1");
        let len = listener.recv(&mut buf).unwrap();
        let msg = std::str::from_utf8(&buf[..len]).unwrap();
        assert!(msg.starts_with("RELOADING=1\nMONOTONIC_USEC=") && msg.len() > 27, "{msg}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn the_loopback_is_up_and_a_missing_interface_is_gone() {
        assert!(matches!(interface_state("lo"), InterfaceState::Up { .. }));
        assert_eq!(interface_state("nosuchif0"), InterfaceState::Gone);
    }
}
