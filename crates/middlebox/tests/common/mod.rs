//! Helpers the namespace test files use: a closure run inside a network namespace, the
//! byte pattern of a transfer, a command's output, and waiting for the box's `ready` line or
//! a line of its log.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<Result<T, String>> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        nix::sched::setns(fd, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns {path}: {e}"))?;
        Ok(f())
    })
}

pub fn pattern(i: usize) -> u8 {
    ((i * 7 + i / 1000) % 251) as u8
}

pub fn wait_for_ready(child: &mut Child) -> Result<(), String> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(l) if l.trim() == "ready" => Ok(()),
        Ok(l) => Err(format!("box printed {l:?} instead of ready")),
        Err(_) => Err("box did not print ready within 10 s".into()),
    }
}

/// Waits until the box's log holds `needle`; the log so far, or why not.
#[allow(dead_code)] // netns.rs reads no log
pub fn wait_for_log(log: &Path, needle: &str, within: Duration) -> Result<String, String> {
    let end = Instant::now() + within;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return Ok(text);
        }
        if Instant::now() > end {
            return Err(format!("no {needle:?} in the box's log within {within:?}:\n{text}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a command; its stdout, or the command and its stderr.
#[allow(dead_code)] // netns.rs has its own, which keeps no output
pub fn sh(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}
