//! The box as an operator deploys it (issue 41, item 7), in network namespaces named
//! `spd-ROLE-TAG`:
//!
//! ```text
//!  h1 ─┐
//!  h2 ─┤ br0 (lan) ── a0 [smallpipe-box] b0 ── eth0 rtr eth1 ── eth0 srv
//!  h3 ─┘ (h3 speaks VLAN 100 only: eth0.100; rtr has eth0 and eth0.100)
//! ```
//!
//! Normal ARP and neighbour discovery through the box, IPv4 (198.18.0.0/15) and IPv6
//! (fd00:41::/48 ULA), offloads off on every veth, 2 Mbit/s and 10 ms each way. The load is
//! a TCP upload (h1, IPv4), a TCP download (h2, IPv6), a 100 KB fetch loop (h3, VLAN), and
//! ICMP and UDP echo probes every 200 ms from every host. `the_box_as_deployed...` runs it
//! with TAQ and with FQ-CoDel, floods 5-tuples, reloads, flaps the box's LAN interface,
//! kills the box and opens the fail-open bridge, and starts a twin; its numbers go to
//! stdout and to `results.csv` (the path is printed). `soak` (ignored; run by
//! `scripts/box-soak.sh`) runs the same topology and load for `SMALLPIPE_SOAK_S` seconds
//! and samples the box every 10 s. Needs root, `ip netns`, `ethtool`; skips with the reason
//! printed otherwise. The namespaces are removed on the way out, failure included.
//! `SMALLPIPE_DEPLOYED_TAQ` (a queue's JSON) replaces the TAQ phase's queue, and
//! `SMALLPIPE_DEPLOYED_PCAP` (any value) has each box write `box-LABEL.pcapng`.

mod common;

use common::{in_ns, pattern, sh, wait_for_log, wait_for_ready};
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

const RATE_BPS: u64 = 2_000_000;
const RELOAD_RATE_BPS: u64 = 1_000_000;
const DELAY_NS: u64 = 10_000_000;
const PROBE_PERIOD: Duration = Duration::from_millis(200);
/// A probe with no answer this long after the load stops counts as lost.
const REPLY_GRACE: Duration = Duration::from_secs(2);
const FETCH_BYTES: usize = 100_000;
const VLAN_ID: u16 = 100;
const METRICS_PORT: u16 = 9471;
const FLOW_TABLE_CAPACITY: u64 = 64;
const FLOOD_TUPLES: usize = 3000;
const FAILOPEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/smallpipe-box-failopen");

const ROLES: [&str; 7] = ["h1", "h2", "h3", "lan", "box", "rtr", "srv"];
const SRV_V4: &str = "198.19.0.1";
const SRV_V6: &str = "fd00:41:9::1";
const GW_LAN_V4: &str = "198.18.1.254";
const GW_LAN_V6: &str = "fd00:41:1::fe";
const GW_VLAN_V4: &str = "198.18.2.254";
const GW_VLAN_V6: &str = "fd00:41:2::fe";
const UPLOAD_PORT: u16 = 5201;
const DOWNLOAD_PORT: u16 = 5202;
const FETCH_PORT: u16 = 5203;
const ECHO_PORT: u16 = 5300;

/// Each LAN host: role, interface carrying its addresses, IPv4, IPv6, gateways.
struct Host {
    role: &'static str,
    dev: &'static str,
    v4: &'static str,
    v6: &'static str,
    gw4: &'static str,
    gw6: &'static str,
}
const HOSTS: [Host; 3] = [
    Host { role: "h1", dev: "eth0", v4: "198.18.1.1", v6: "fd00:41:1::1", gw4: GW_LAN_V4, gw6: GW_LAN_V6 },
    Host { role: "h2", dev: "eth0", v4: "198.18.1.2", v6: "fd00:41:1::2", gw4: GW_LAN_V4, gw6: GW_LAN_V6 },
    Host { role: "h3", dev: "eth0.100", v4: "198.18.2.3", v6: "fd00:41:2::3", gw4: GW_VLAN_V4, gw6: GW_VLAN_V6 },
];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Icmp,
    Udp,
}

/// A probe stream: name, the host it runs on, ICMP or UDP echo, its destination.
#[derive(Clone, Copy)]
struct Probe {
    name: &'static str,
    role: &'static str,
    kind: Kind,
    dst: &'static str,
}
const PROBES: [Probe; 6] = [
    Probe { name: "icmp4_h1", role: "h1", kind: Kind::Icmp, dst: SRV_V4 },
    Probe { name: "udp4_h1", role: "h1", kind: Kind::Udp, dst: SRV_V4 },
    Probe { name: "icmp6_h2", role: "h2", kind: Kind::Icmp, dst: SRV_V6 },
    Probe { name: "udp6_h2", role: "h2", kind: Kind::Udp, dst: SRV_V6 },
    Probe { name: "icmp4_h3_vlan", role: "h3", kind: Kind::Icmp, dst: SRV_V4 },
    Probe { name: "udp6_h3_vlan", role: "h3", kind: Kind::Udp, dst: SRV_V6 },
];

/// A thread run by `in_ns` whose closure can fail: the outer error is the namespace's.
type Joined<T> = JoinHandle<Result<Result<T, String>, String>>;

/// Join `inner` (untagged) to `outer` (a trunk) for VLAN_ID until `stop`: frames from
/// `inner` leave `outer` with an 802.1Q tag (TPID 0x8100, priority 0); frames on `outer`
/// tagged VLAN_ID go to `inner` without it; anything else on `outer` is not ours.
fn tagger(inner: &str, outer: &str, stop: &AtomicBool) -> Result<(), String> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use smallpipe_middlebox::io::{insert_vlan_tag, PacketSocket, VLAN_TAG_BYTES};
    let mut inside = PacketSocket::open(inner).map_err(|e| format!("tagger: {inner}: {e}"))?;
    let mut trunk = PacketSocket::open(outer).map_err(|e| format!("tagger: {outer}: {e}"))?;
    let mut frame = vec![0u8; 4096];
    while !stop.load(Relaxed) {
        let mut fds = [PollFd::new(inside.fd(), PollFlags::POLLIN), PollFd::new(trunk.fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::from(100u16)).map_err(|e| format!("tagger: poll: {e}"))?;
        for i in 0..inside.recv_batch().map_err(|e| format!("tagger: {inner}: {e}"))? {
            let f = inside.frame(i);
            if f.len() < 14 || f.len() + VLAN_TAG_BYTES > frame.len() {
                continue;
            }
            frame[..f.len()].copy_from_slice(f);
            insert_vlan_tag(&mut frame, f.len(), 0x8100, VLAN_ID);
            let _ = trunk.send_batch(&[&frame[..f.len() + VLAN_TAG_BYTES]]);
        }
        for i in 0..trunk.recv_batch().map_err(|e| format!("tagger: {outer}: {e}"))? {
            let f = trunk.frame(i);
            // PacketSocket puts back the tag the kernel took into metadata.
            if f.len() >= 18 && f[12..14] == [0x81, 0x00] && u16::from_be_bytes([f[14], f[15]]) & 0x0fff == VLAN_ID {
                let untagged = [&f[..12], &f[16..]].concat();
                let _ = inside.send_batch(&[&untagged]);
            }
        }
    }
    Ok(())
}

fn can_run() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root".into());
    }
    sh(&["ethtool", "--version"])?;
    let probe = format!("spd-probe-{}", std::process::id());
    sh(&["ip", "netns", "add", &probe])?;
    sh(&["ip", "netns", "del", &probe]).map(drop)
}

/// The namespaces, the boxes started in them, and the directory of logs and results
/// (kept after the test, so a quiet rerun's numbers can be recorded).
struct Deployed {
    tag: String,
    made: Vec<String>,
    boxes: Vec<Child>,
    dir: PathBuf,
    vlan_mode: &'static str,
    stop: Arc<AtomicBool>,
    taggers: Vec<Joined<()>>,
}

impl Drop for Deployed {
    fn drop(&mut self) {
        for c in &mut self.boxes {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.stop.store(true, Relaxed);
        for t in self.taggers.drain(..) {
            match t.join() {
                Ok(Ok(Err(e))) | Ok(Err(e)) => eprintln!("deployed: VLAN tagger: {e}"),
                _ => {}
            }
        }
        for n in &self.made {
            let _ = sh(&["ip", "netns", "del", n]);
        }
    }
}

impl Deployed {
    fn ns(&self, role: &str) -> String {
        format!("spd-{role}-{}", self.tag)
    }

    fn exec(&self, role: &str, args: &[&str]) -> Result<String, String> {
        let ns = self.ns(role);
        let mut v = vec!["ip", "netns", "exec", ns.as_str()];
        v.extend_from_slice(args);
        sh(&v)
    }

    fn veth(&self, (r1, i1): (&str, &str), (r2, i2): (&str, &str)) -> Result<(), String> {
        sh(&["ip", "link", "add", i1, "netns", &self.ns(r1), "type", "veth", "peer", "name", i2, "netns", &self.ns(r2)])?;
        for (r, i) in [(r1, i1), (r2, i2)] {
            // Offloads off: the box must see wire-sized frames with real checksums.
            self.exec(r, &["ethtool", "-K", i, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"])?;
            self.exec(r, &["ip", "link", "set", i, "up"])?;
        }
        Ok(())
    }

    /// `eth0.100` in `role`: the kernel's VLAN sub-interface of eth0 where the kernel has
    /// 802.1Q; otherwise (a kernel without CONFIG_VLAN_8021Q, as this test's CI machine runs)
    /// a veth `eth0.100` whose peer `tag0` a tagger thread joins to eth0, pushing tag 100 on
    /// the way out and popping it on the way in, as the kernel's driver would.
    fn vlan(&mut self, role: &str) -> Result<(), String> {
        let name = format!("eth0.{VLAN_ID}");
        match self.exec(role, &["ip", "link", "add", "link", "eth0", "name", &name, "type", "vlan", "id", &VLAN_ID.to_string()]) {
            Ok(_) => {
                self.vlan_mode = "kernel 802.1Q sub-interfaces";
                self.exec(role, &["ethtool", "-K", &name, "tx", "off", "tso", "off", "gso", "off", "gro", "off"])?;
                self.exec(role, &["ip", "link", "set", &name, "up"]).map(drop)
            }
            Err(e) if e.contains("Unknown device type") => {
                self.vlan_mode = "tagger threads (this kernel has no 802.1Q)";
                self.exec(role, &["sysctl", "-qw", "net.ipv6.conf.tag0.disable_ipv6=1"]).ok();
                self.veth((role, &name), (role, "tag0"))?;
                self.exec(role, &["sysctl", "-qw", "net.ipv6.conf.tag0.disable_ipv6=1"])?;
                let stop = Arc::clone(&self.stop);
                let ns = self.ns(role);
                self.taggers.push(in_ns(&ns, move || tagger("tag0", "eth0", &stop)));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn addrs(&self, role: &str, dev: &str, v4: &str, v6: &str, plen4: u8) -> Result<(), String> {
        self.exec(role, &["ip", "addr", "add", &format!("{v4}/{plen4}"), "dev", dev])?;
        self.exec(role, &["ip", "-6", "addr", "add", &format!("{v6}/64"), "dev", dev, "nodad"]).map(drop)
    }

    fn build(tag: &str, dir: PathBuf) -> Result<Deployed, String> {
        let mut d = Deployed {
            tag: tag.to_string(),
            made: Vec::new(),
            boxes: Vec::new(),
            dir,
            vlan_mode: "",
            stop: Arc::new(AtomicBool::new(false)),
            taggers: Vec::new(),
        };
        std::fs::create_dir_all(&d.dir).map_err(|e| format!("{}: {e}", d.dir.display()))?;
        for r in ROLES {
            let ns = d.ns(r);
            sh(&["ip", "netns", "add", &ns])?;
            d.made.push(ns);
            d.exec(r, &["ip", "link", "set", "lo", "up"])?;
            // Addresses usable at once (no duplicate address detection), set before any
            // interface exists so that new ones take it.
            for k in ["default", "all"] {
                d.exec(r, &["sysctl", "-qw", &format!("net.ipv6.conf.{k}.accept_dad=0")])?;
                if r == "lan" || r == "box" {
                    // The bridge and the box are layer 2 only: their own stacks stay silent.
                    d.exec(r, &["sysctl", "-qw", &format!("net.ipv6.conf.{k}.disable_ipv6=1")])?;
                }
            }
        }
        for (i, h) in HOSTS.iter().enumerate() {
            d.veth((h.role, "eth0"), ("lan", &format!("p{}", i + 1)))?;
        }
        d.veth(("box", "a0"), ("lan", "pbox"))?;
        d.veth(("box", "b0"), ("rtr", "eth0"))?;
        d.veth(("rtr", "eth1"), ("srv", "eth0"))?;
        // The LAN switch: a plain bridge, STP off, multicast flooded (neighbour discovery).
        d.exec("lan", &["ip", "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0", "mcast_snooping", "0"])?;
        for p in ["p1", "p2", "p3", "pbox"] {
            d.exec("lan", &["ip", "link", "set", p, "master", "br0"])?;
        }
        d.exec("lan", &["ip", "link", "set", "br0", "up"])?;
        // h3's wire carries only tagged frames: its own stack stays off eth0.
        d.exec("h3", &["sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1"])?;
        d.vlan("h3")?;
        d.vlan("rtr")?;
        for h in &HOSTS {
            d.addrs(h.role, h.dev, h.v4, h.v6, 24)?;
            d.exec(h.role, &["ip", "route", "add", "default", "via", h.gw4])?;
            d.exec(h.role, &["ip", "-6", "route", "add", "default", "via", h.gw6])?;
            // Unprivileged-style ICMP echo sockets for the probes (root's group 0 included).
            d.exec(h.role, &["sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"])?;
        }
        d.addrs("rtr", "eth0", GW_LAN_V4, GW_LAN_V6, 24)?;
        d.addrs("rtr", &format!("eth0.{VLAN_ID}"), GW_VLAN_V4, GW_VLAN_V6, 24)?;
        d.addrs("rtr", "eth1", "198.19.0.254", "fd00:41:9::fe", 24)?;
        // Strict reverse-path filtering: h3's packets are accepted only on eth0.100, so
        // had the box stripped the tag, they would die at the router.
        for s in ["net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1", "net.ipv4.conf.all.rp_filter=1"] {
            d.exec("rtr", &["sysctl", "-qw", s])?;
        }
        d.addrs("srv", "eth0", SRV_V4, SRV_V6, 24)?;
        d.exec("srv", &["ip", "route", "add", "default", "via", "198.19.0.254"])?;
        d.exec("srv", &["ip", "-6", "route", "add", "default", "via", "fd00:41:9::fe"])?;
        d.exec("srv", &["sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"])?;
        Ok(d)
    }

    fn write_config(&self, label: &str, rate_bps: u64, queue: &str) -> PathBuf {
        let link = format!(r#"{{"rate_bps": {rate_bps}, "delay_ns": {DELAY_NS}, "queue": {queue}}}"#);
        let cfg = format!(
            r#"{{"seed": 1, "a_to_b": {link}, "b_to_a": {link}, "metrics": {{"flow_table_capacity": {FLOW_TABLE_CAPACITY}, "flow_idle_timeout_s": 60}}}}"#
        );
        let path = self.dir.join(format!("box-{label}.json"));
        std::fs::write(&path, cfg).expect("write the box config");
        path
    }

    fn log(&self, label: &str) -> PathBuf {
        self.dir.join(format!("box-{label}.log"))
    }

    fn spawn_box(&self, label: &str, config: &Path, fifo: bool, duration_s: u64) -> Child {
        let out = self.dir.join(format!("out-{label}"));
        let mut args = vec![
            "netns".to_string(), "exec".into(), self.ns("box"), env!("CARGO_BIN_EXE_smallpipe-box").into(),
            "--iface-a".into(), "a0".into(), "--iface-b".into(), "b0".into(), "--config".into(), config.display().to_string(),
            "--duration-s".into(), duration_s.to_string(), "--metrics-addr".into(), format!("127.0.0.1:{METRICS_PORT}"),
            "--out".into(), out.display().to_string(), "--lock-dir".into(), self.dir.join("locks").display().to_string(),
        ];
        if !fifo {
            args.push("--no-fifo".into());
        }
        if std::env::var_os("SMALLPIPE_DEPLOYED_PCAP").is_some() {
            // For `smallpipe-box --replay`: every frame, and so every TAQ decision, again offline.
            args.extend(["--pcap".into(), self.dir.join(format!("box-{label}.pcapng")).display().to_string()]);
        }
        Command::new("ip")
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.log(label)).expect("box log"))
            .spawn()
            .expect("start the box")
    }

    /// Start a box (kept in `boxes`) and wait for its `ready`.
    fn start_box(&mut self, label: &str, config: &Path, fifo: bool, duration_s: u64) -> Result<(), String> {
        let mut b = self.spawn_box(label, config, fifo, duration_s);
        let ready = wait_for_ready(&mut b);
        self.boxes.push(b);
        ready.map_err(|e| format!("{e}\n{}", std::fs::read_to_string(self.log(label)).unwrap_or_default()))
    }

    /// SIGTERM the running box and wait for it (it writes its tables on the way out).
    fn stop_box(&mut self) -> Result<(), String> {
        let mut b = self.boxes.pop().ok_or("no box running")?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(b.id() as i32), nix::sys::signal::SIGTERM).map_err(|e| e.to_string())?;
        let status = b.wait().map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("the box exited {status} on SIGTERM"))
        }
    }

    fn box_alive(&mut self) -> bool {
        self.boxes.last_mut().is_some_and(|b| matches!(b.try_wait(), Ok(None)))
    }

    fn sysfs(&self, role: &str, dev: &str, stat: &str) -> u64 {
        let text = self.exec(role, &["cat", &format!("/sys/class/net/{dev}/statistics/{stat}")]).unwrap();
        text.trim().parse().unwrap()
    }

    /// The box's Prometheus page (body only).
    fn scrape(&self) -> Result<String, String> {
        in_ns(&self.ns("box"), || -> Result<String, String> {
            let mut s = TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], METRICS_PORT)), Duration::from_secs(2))
                .map_err(|e| format!("metrics connect: {e}"))?;
            s.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
            s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").map_err(|e| e.to_string())?;
            let mut text = String::new();
            s.read_to_string(&mut text).map_err(|e| format!("metrics read: {e}"))?;
            text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).ok_or_else(|| format!("no HTTP body in {text:?}"))
        })
        .join()
        .map_err(|_| "scrape panicked".to_string())?
        .and_then(|r| r)
    }
}

/// The value of one series (`name{labels}`, exactly as the box writes it) in a scrape.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.split_whitespace().next()?.parse().ok())
}

fn departed_bytes(text: &str, direction: &str) -> f64 {
    metric(text, &format!(r#"smallpipe_box_queue_bytes_total{{direction="{direction}",event="departed"}}"#)).unwrap_or(f64::NAN)
}

fn box_time_s(text: &str) -> f64 {
    metric(text, r#"smallpipe_box_runtime{what="time_ns"}"#).unwrap_or(f64::NAN) * 1e-9
}

// ---- probes -------------------------------------------------------------------------

/// A socket for `kind` echoes. ICMP uses a ping socket (SOCK_DGRAM with IPPROTO_ICMP or
/// IPPROTO_ICMPV6, allowed by `net.ipv4.ping_group_range`): the kernel fills the echo
/// identifier and checksum and hands back only our replies. std's `UdpSocket` only wraps the
/// descriptor's sendto/recv/SO_RCVTIMEO, which a ping socket takes as a UDP one does.
fn probe_socket(kind: Kind, v6: bool) -> Result<UdpSocket, String> {
    match kind {
        Kind::Udp => UdpSocket::bind(if v6 { "[::]:0" } else { "0.0.0.0:0" }).map_err(|e| format!("udp socket: {e}")),
        Kind::Icmp => {
            let (family, proto) = if v6 { (libc::AF_INET6, libc::IPPROTO_ICMPV6) } else { (libc::AF_INET, libc::IPPROTO_ICMP) };
            // SAFETY: socket(2) has no memory arguments; a valid fd is owned by the UdpSocket.
            let fd = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, proto) };
            if fd < 0 {
                return Err(format!("ping socket: {}", std::io::Error::last_os_error()));
            }
            Ok(unsafe { UdpSocket::from_raw_fd(fd) })
        }
    }
}

/// The request for sequence number `seq`: an ICMP echo request (type 8, or 128 for ICMPv6,
/// RFC 792 / RFC 4443) with the sequence in bytes 6..8, or a UDP datagram carrying it.
fn echo_request(kind: Kind, v6: bool, seq: u16) -> Vec<u8> {
    match kind {
        Kind::Icmp => {
            let mut m = vec![if v6 { 128 } else { 8 }, 0, 0, 0, 0, 0];
            m.extend(seq.to_be_bytes());
            m.extend([0x5a; 16]);
            m
        }
        Kind::Udp => {
            let mut m = b"spd-echo".to_vec();
            m.extend(seq.to_be_bytes());
            m
        }
    }
}

/// The sequence number an echo reply carries (ICMP type 0, or 129 for ICMPv6).
fn echo_reply_seq(kind: Kind, v6: bool, m: &[u8]) -> Option<u16> {
    match kind {
        Kind::Icmp if m.len() >= 8 && m[0] == if v6 { 129 } else { 0 } => Some(u16::from_be_bytes([m[6], m[7]])),
        Kind::Udp if m.len() == 10 && m.starts_with(b"spd-echo") => Some(u16::from_be_bytes([m[8], m[9]])),
        _ => None,
    }
}

#[derive(Clone, Copy)]
struct Sample {
    sent: Instant,
    rtt: Option<Duration>,
}

/// Send one echo every PROBE_PERIOD until `stop`, then wait REPLY_GRACE for late replies.
fn probe_loop(p: Probe, stop: Arc<AtomicBool>) -> Result<Vec<Sample>, String> {
    let dst: IpAddr = p.dst.parse().unwrap();
    let v6 = dst.is_ipv6();
    let sock = probe_socket(p.kind, v6)?;
    let to = SocketAddr::new(dst, if p.kind == Kind::Udp { ECHO_PORT } else { 0 });
    let mut samples: Vec<Sample> = Vec::new();
    let mut next = Instant::now();
    let mut end: Option<Instant> = None;
    let mut buf = [0u8; 512];
    loop {
        let now = Instant::now();
        if end.is_none() && stop.load(Relaxed) {
            end = Some(now + REPLY_GRACE);
        }
        match end {
            Some(e) if now >= e || samples.iter().all(|s| s.rtt.is_some()) => break,
            Some(_) => {}
            None if now >= next => {
                // A send refused by the stack (no neighbour yet, say) is a lost probe.
                let _ = sock.send_to(&echo_request(p.kind, v6, samples.len() as u16), to);
                samples.push(Sample { sent: now, rtt: None });
                next += PROBE_PERIOD;
                continue;
            }
            None => {}
        }
        let wait = end.unwrap_or(next).saturating_duration_since(now).max(Duration::from_millis(1));
        sock.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
        if let Ok(n) = sock.recv(&mut buf) {
            let got = Instant::now();
            if let Some(seq) = echo_reply_seq(p.kind, v6, &buf[..n]) {
                // The newest probe with this 16-bit sequence number (a long soak wraps it).
                let last = samples.len().saturating_sub(1);
                let back = (last as u16).wrapping_sub(seq) as usize;
                if let Some(s) = last.checked_sub(back).and_then(|i| samples.get_mut(i)) {
                    s.rtt.get_or_insert(got - s.sent);
                }
            }
        }
    }
    Ok(samples)
}

/// One echo, repeated every 200 ms until answered or `within` passes: the RTT.
fn echo_once(p: Probe, within: Duration) -> Result<Duration, String> {
    let dst: IpAddr = p.dst.parse().unwrap();
    let v6 = dst.is_ipv6();
    let sock = probe_socket(p.kind, v6)?;
    let to = SocketAddr::new(dst, if p.kind == Kind::Udp { ECHO_PORT } else { 0 });
    let (start, mut buf) = (Instant::now(), [0u8; 512]);
    for seq in 0u16.. {
        if start.elapsed() > within {
            break;
        }
        let sent = Instant::now();
        let _ = sock.send_to(&echo_request(p.kind, v6, seq), to);
        sock.set_read_timeout(Some(PROBE_PERIOD)).map_err(|e| e.to_string())?;
        while sent.elapsed() < PROBE_PERIOD {
            if let Ok(n) = sock.recv(&mut buf) {
                if echo_reply_seq(p.kind, v6, &buf[..n]) == Some(seq) {
                    return Ok(sent.elapsed());
                }
            }
        }
    }
    Err(format!("{}: no {} echo reply from {} within {within:?}", p.role, if p.kind == Kind::Icmp { "ICMP" } else { "UDP" }, p.dst))
}

fn run_in<T: Send + 'static>(d: &Deployed, role: &str, f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    in_ns(&d.ns(role), f).join().map_err(|_| format!("{role}: thread panicked"))?.and_then(|r| r)
}

struct ProbeStats {
    sent: usize,
    lost: usize,
    p50_ms: f64,
    p99_ms: f64,
}

/// Loss and nearest-rank RTT quantiles of the probes sent in `[from, to)`.
fn probe_stats(samples: &[Sample], from: Instant, to: Instant) -> ProbeStats {
    let window: Vec<&Sample> = samples.iter().filter(|s| s.sent >= from && s.sent < to).collect();
    let mut rtts: Vec<f64> = window.iter().filter_map(|s| s.rtt).map(|r| r.as_secs_f64() * 1e3).collect();
    rtts.sort_by(f64::total_cmp);
    let q = |q: f64| if rtts.is_empty() { f64::NAN } else { rtts[((q * rtts.len() as f64).ceil() as usize).clamp(1, rtts.len()) - 1] };
    ProbeStats { sent: window.len(), lost: window.len() - rtts.len(), p50_ms: q(0.5), p99_ms: q(0.99) }
}

// ---- TCP and UDP servers, and the load ------------------------------------------------

#[derive(Default)]
struct Counters {
    /// Bytes the server received from h1's uploads.
    up_rx: AtomicU64,
    /// Bytes h2 received from its downloads.
    down_rx: AtomicU64,
    fetches: AtomicU64,
    fetch_errors: AtomicU64,
    /// The first failed fetch's error, to say why.
    first_fetch_error: std::sync::Mutex<Option<String>>,
}

/// Accept on `[::]:port` (IPv4 too) until `stop`; each connection on its own thread.
fn serve_tcp(port: u16, stop: Arc<AtomicBool>, handler: impl Fn(TcpStream, &AtomicBool) + Send + Sync + Clone + 'static) -> Result<(), String> {
    let l = TcpListener::bind(("::", port)).map_err(|e| format!("bind {port}: {e}"))?;
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    while !stop.load(Relaxed) {
        match l.accept() {
            Ok((c, _)) => {
                let (h, stop) = (handler.clone(), Arc::clone(&stop));
                let _ = c.set_nonblocking(false);
                std::thread::spawn(move || h(c, &stop));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    Ok(())
}

/// The server's side, in `srv`: upload sink, download source, 100 KB fetches, UDP echo.
struct Servers {
    stop: Arc<AtomicBool>,
    threads: Vec<Joined<()>>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn start_servers(d: &Deployed, c: &Arc<Counters>) -> Servers {
    let stop = Arc::new(AtomicBool::new(false));
    let ns = d.ns("srv");
    let mut threads = Vec::new();
    let (s, c1) = (Arc::clone(&stop), Arc::clone(c));
    threads.push(in_ns(&ns, move || {
        serve_tcp(UPLOAD_PORT, s, move |mut conn, stop| {
            let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = vec![0u8; 65536];
            while !stop.load(Relaxed) {
                match conn.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        c1.up_rx.fetch_add(n as u64, Relaxed);
                    }
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => break,
                }
            }
        })
    }));
    let s = Arc::clone(&stop);
    threads.push(in_ns(&ns, move || {
        serve_tcp(DOWNLOAD_PORT, s, |mut conn, stop| {
            let _ = conn.set_write_timeout(Some(Duration::from_millis(500)));
            let chunk: Vec<u8> = (0..65536).map(pattern).collect();
            while !stop.load(Relaxed) {
                match conn.write(&chunk) {
                    Ok(_) => {}
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => break,
                }
            }
        })
    }));
    let s = Arc::clone(&stop);
    threads.push(in_ns(&ns, move || {
        serve_tcp(FETCH_PORT, s, |mut conn, _| {
            let _ = conn.set_write_timeout(Some(Duration::from_secs(20)));
            let body: Vec<u8> = (0..FETCH_BYTES).map(pattern).collect();
            if conn.write_all(&body).is_ok() && conn.shutdown(Shutdown::Write).is_ok() {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = conn.read(&mut [0u8; 1]);
            }
        })
    }));
    let s = Arc::clone(&stop);
    threads.push(in_ns(&ns, move || -> Result<(), String> {
        let sock = UdpSocket::bind(("::", ECHO_PORT)).map_err(|e| format!("echo bind: {e}"))?;
        sock.set_read_timeout(Some(Duration::from_millis(200))).map_err(|e| e.to_string())?;
        let mut buf = [0u8; 2048];
        while !s.load(Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                let _ = sock.send_to(&buf[..n], from);
            }
        }
        Ok(())
    }));
    Servers { stop, threads }
}

/// Fetch FETCH_BYTES from the server at `to`, every byte checked.
fn fetch(to: SocketAddr, within: Duration) -> Result<usize, String> {
    let mut s = TcpStream::connect_timeout(&to, within).map_err(|e| format!("connect {to}: {e}"))?;
    s.set_read_timeout(Some(within)).map_err(|e| e.to_string())?;
    let (mut got, mut buf) = (0usize, vec![0u8; 65536]);
    loop {
        let n = s.read(&mut buf).map_err(|e| format!("fetch from {to}: read after {got} bytes: {e}"))?;
        if n == 0 {
            break;
        }
        if let Some(k) = (0..n).find(|&k| buf[k] != pattern(got + k)) {
            return Err(format!("fetch from {to}: byte {} corrupted", got + k));
        }
        got += n;
    }
    if got == FETCH_BYTES {
        Ok(got)
    } else {
        Err(format!("fetch from {to}: {got} of {FETCH_BYTES} bytes"))
    }
}

/// The LAN hosts' load: h1 uploads (IPv4), h2 downloads (IPv6), h3 fetches 100 KB in a loop
/// through its VLAN, and every probe of PROBES runs. `finish` stops it and returns the probes.
struct Load {
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<Result<(), String>>>,
    probes: Vec<(Probe, Joined<Vec<Sample>>)>,
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

impl Load {
    fn start(d: &Deployed, c: &Arc<Counters>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::new();
        let (s, up) = (Arc::clone(&stop), SocketAddr::new(SRV_V4.parse().unwrap(), UPLOAD_PORT));
        workers.push(in_ns(&d.ns("h1"), move || {
            let chunk: Vec<u8> = (0..65536).map(pattern).collect();
            while !s.load(Relaxed) {
                // A broken connection (the box killed, say) is opened again.
                let Ok(mut conn) = TcpStream::connect_timeout(&up, Duration::from_secs(3)) else {
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                };
                let _ = conn.set_write_timeout(Some(Duration::from_millis(500)));
                while !s.load(Relaxed) {
                    match conn.write(&chunk) {
                        Ok(_) => {}
                        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                        Err(_) => break,
                    }
                }
            }
        }));
        let (s, c2, down) = (Arc::clone(&stop), Arc::clone(c), SocketAddr::new(SRV_V6.parse().unwrap(), DOWNLOAD_PORT));
        workers.push(in_ns(&d.ns("h2"), move || {
            let mut buf = vec![0u8; 65536];
            while !s.load(Relaxed) {
                let Ok(mut conn) = TcpStream::connect_timeout(&down, Duration::from_secs(3)) else {
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                };
                let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
                while !s.load(Relaxed) {
                    match conn.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            c2.down_rx.fetch_add(n as u64, Relaxed);
                        }
                        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                        Err(_) => break,
                    }
                }
            }
        }));
        let (s, c3, from) = (Arc::clone(&stop), Arc::clone(c), SocketAddr::new(SRV_V4.parse().unwrap(), FETCH_PORT));
        workers.push(in_ns(&d.ns("h3"), move || {
            while !s.load(Relaxed) {
                match fetch(from, Duration::from_secs(10)) {
                    Ok(_) => c3.fetches.fetch_add(1, Relaxed),
                    Err(e) => {
                        c3.first_fetch_error.lock().unwrap().get_or_insert(e);
                        c3.fetch_errors.fetch_add(1, Relaxed)
                    }
                };
            }
        }));
        let probes = PROBES
            .iter()
            .map(|&p| {
                let s = Arc::clone(&stop);
                (p, in_ns(&d.ns(p.role), move || probe_loop(p, s)))
            })
            .collect();
        Load { stop, workers, probes }
    }

    fn finish(mut self) -> Result<Vec<(Probe, Vec<Sample>)>, String> {
        self.stop.store(true, Relaxed);
        for w in self.workers.drain(..) {
            w.join().map_err(|_| "a load thread panicked".to_string())??;
        }
        let mut out = Vec::new();
        for (p, h) in self.probes.drain(..) {
            let samples = h.join().map_err(|_| format!("probe {} panicked", p.name))???;
            out.push((p, samples));
        }
        Ok(out)
    }
}

/// Counter values at one instant, to take goodputs over a window.
#[derive(Clone, Copy)]
struct Mark {
    at: Instant,
    up: u64,
    down: u64,
    fetches: u64,
    fetch_errors: u64,
}

fn mark(c: &Counters) -> Mark {
    Mark { at: Instant::now(), up: c.up_rx.load(Relaxed), down: c.down_rx.load(Relaxed), fetches: c.fetches.load(Relaxed),
           fetch_errors: c.fetch_errors.load(Relaxed) }
}

// ---- results ------------------------------------------------------------------------

/// `phase,quantity,value,unit` rows, printed and rewritten to `results.csv` as they come.
struct Results {
    path: PathBuf,
    rows: Vec<String>,
}

impl Results {
    fn add(&mut self, phase: &str, quantity: &str, value: f64, unit: &str) {
        println!("deployed: {phase:<10} {quantity:<32} {value:>12.3} {unit}");
        self.rows.push(format!("{phase},{quantity},{value},{unit}"));
        let _ = std::fs::write(&self.path, format!("phase,quantity,value,unit\n{}\n", self.rows.join("\n")));
    }
}

struct PhaseResult {
    probes: Vec<(Probe, ProbeStats)>,
    up_bps: f64,
    down_bps: f64,
    fetches_failed: u64,
}

fn record_phase(r: &mut Results, phase: &str, probes: &[(Probe, Vec<Sample>)], m0: Mark, m1: Mark) -> PhaseResult {
    let secs = (m1.at - m0.at).as_secs_f64();
    let up_bps = (m1.up - m0.up) as f64 * 8.0 / secs;
    let down_bps = (m1.down - m0.down) as f64 * 8.0 / secs;
    r.add(phase, "upload_goodput", up_bps, "bit/s");
    r.add(phase, "download_goodput", down_bps, "bit/s");
    r.add(phase, "fetches_100KB", (m1.fetches - m0.fetches) as f64, "count");
    r.add(phase, "fetches_failed", (m1.fetch_errors - m0.fetch_errors) as f64, "count");
    let mut out = Vec::new();
    for (p, samples) in probes {
        let st = probe_stats(samples, m0.at, m1.at);
        r.add(phase, &format!("{}_sent", p.name), st.sent as f64, "count");
        r.add(phase, &format!("{}_lost", p.name), st.lost as f64, "count");
        r.add(phase, &format!("{}_rtt_p50", p.name), st.p50_ms, "ms");
        r.add(phase, &format!("{}_rtt_p99", p.name), st.p99_ms, "ms");
        out.push((*p, st));
    }
    PhaseResult { probes: out, up_bps, down_bps, fetches_failed: m1.fetch_errors - m0.fetch_errors }
}

fn tag_and_dir(prefix: &str) -> (String, PathBuf) {
    let tag = std::env::var("SMALLPIPE_DEPLOYED_TAG").unwrap_or_else(|_| format!("{prefix}{}", std::process::id()));
    let dir = std::env::var_os("SMALLPIPE_DEPLOYED_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("smallpipe-deployed-{tag}")));
    (tag, dir)
}

/// The packaged config's TAQ lines (docs/operator.md).
const TAQ: &str = r#"{"kind": "taq", "protect_pure_acks": true, "sparse_share": 0.25, "new_flow_cap_level_3": true}"#;
const FQ_CODEL: &str = r#"{"kind": "fq_codel"}"#;
/// Load before a phase's window opens: slow start and the first queue build-up.
const WARMUP: Duration = Duration::from_secs(3);
const WINDOW: Duration = Duration::from_secs(15);

/// Basic reachability: from each host, a 100 KB fetch over IPv4 and IPv6, one UDP and one
/// ICMP echo of each family; ARP and neighbour discovery resolve the router's address
/// through the box; every frame h3 sends tagged reaches the router's VLAN interface.
fn check_basics(d: &Deployed) {
    println!("deployed: VLAN {VLAN_ID} by {}", d.vlan_mode);
    let h3_dev = format!("eth0.{VLAN_ID}");
    let (h3_tx0, rtr_vlan_rx0) = (d.sysfs("h3", &h3_dev, "tx_packets"), d.sysfs("rtr", &h3_dev, "rx_packets"));
    for h in &HOSTS {
        for srv in [SRV_V4, SRV_V6] {
            let to = SocketAddr::new(srv.parse().unwrap(), FETCH_PORT);
            run_in(d, h.role, move || fetch(to, Duration::from_secs(10))).unwrap_or_else(|e| panic!("{}: TCP: {e}", h.role));
            for kind in [Kind::Udp, Kind::Icmp] {
                let p = Probe { name: "basic", role: h.role, kind, dst: srv };
                run_in(d, h.role, move || echo_once(p, Duration::from_secs(5))).unwrap();
            }
        }
        // The router's MAC, learnt by ARP (IPv4) and neighbour discovery (IPv6) across the box.
        let rtr_dev = if h.role == "h3" { h3_dev.as_str() } else { "eth0" };
        let rtr_mac = d.exec("rtr", &["cat", &format!("/sys/class/net/{rtr_dev}/address")]).unwrap().trim().to_string();
        for (fam, gw) in [("-4", h.gw4), ("-6", h.gw6)] {
            let n = d.exec(h.role, &["ip", fam, "neigh", "show", gw, "dev", h.dev]).unwrap();
            assert!(n.contains(&format!("lladdr {rtr_mac}")), "{}: neighbour {gw} not resolved to the router's {rtr_mac}: {n:?}", h.role);
        }
    }
    let sent = d.sysfs("h3", &h3_dev, "tx_packets") - h3_tx0;
    let arrived = d.sysfs("rtr", &h3_dev, "rx_packets") - rtr_vlan_rx0;
    println!("deployed: h3 sent {sent} frames tagged VLAN {VLAN_ID}; the router's eth0.{VLAN_ID} received {arrived}");
    assert!(sent >= 20, "h3's fetches and echoes sent only {sent} frames");
    // Nothing was queued to drop here: every tagged frame must arrive with its tag.
    assert!(arrived >= sent, "{sent} frames sent tagged, {arrived} arrived on the router's VLAN interface");
}

#[test]
fn the_box_as_deployed_carries_every_kind_of_traffic_and_survives_floods_reloads_flaps_and_kill_9() {
    if let Err(why) = can_run() {
        eprintln!("SKIPPED the_box_as_deployed...: needs root, ethtool and ip netns ({why})");
        return;
    }
    let (tag, dir) = tag_and_dir("");
    let mut d = Deployed::build(&tag, dir).expect("the deployed topology");
    let mut r = Results { path: d.dir.join("results.csv"), rows: Vec::new() };
    println!("deployed: logs and results.csv in {} (the machine may be loaded: timings are not quiet measurements)", d.dir.display());
    let counters = Arc::new(Counters::default());
    let _servers = start_servers(&d, &counters);

    // TAQ as packaged (or SMALLPIPE_DEPLOYED_TAQ's queue, to try a knob).
    let taq_queue = std::env::var("SMALLPIPE_DEPLOYED_TAQ").unwrap_or_else(|_| TAQ.to_string());
    println!("deployed: TAQ phase's queue {taq_queue}");
    let taq_cfg = d.write_config("taq", RATE_BPS, &taq_queue);
    d.start_box("taq", &taq_cfg, false, 600).unwrap();
    check_basics(&d);
    let load = Load::start(&d, &counters);
    std::thread::sleep(WARMUP);
    let m0 = mark(&counters);
    std::thread::sleep(WINDOW);
    let m1 = mark(&counters);

    // A 5-tuple flood from h1: one datagram per new socket and port, about 800 a second.
    let before = d.scrape().unwrap();
    let evicted = |t: &str| metric(t, r#"smallpipe_box_flow_table_evicted_total{table="flows"}"#).expect("evicted flows metric");
    let flood = in_ns(&d.ns("h1"), || -> Result<usize, String> {
        let t0 = Instant::now();
        for i in 0..FLOOD_TUPLES {
            let s = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
            let _ = s.send_to(&[0u8; 16], (SRV_V4, 20_000 + i as u16));
            if let Some(w) = (t0 + Duration::from_micros(1250 * i as u64)).checked_duration_since(Instant::now()) {
                std::thread::sleep(w);
            }
        }
        Ok(FLOOD_TUPLES)
    });
    let f0 = Instant::now();
    let (mut max_entries, mut max_scrape_bytes) = (0f64, 0usize);
    while !flood.is_finished() {
        let t = d.scrape().unwrap();
        max_entries = max_entries.max(metric(&t, r#"smallpipe_box_flow_table_entries{table="flows"}"#).unwrap());
        max_scrape_bytes = max_scrape_bytes.max(t.len());
        std::thread::sleep(Duration::from_millis(500));
    }
    let sent = flood.join().unwrap().unwrap().unwrap();
    let f1 = Instant::now();
    let after = d.scrape().unwrap();
    let taq_probes = load.finish().unwrap();
    let taq = record_phase(&mut r, "taq", &taq_probes, m0, m1);
    r.add("flood", "tuples_sent", sent as f64, "count");
    r.add("flood", "seconds", (f1 - f0).as_secs_f64(), "s");
    r.add("flood", "max_flow_table_entries", max_entries, "count");
    r.add("flood", "flows_evicted", evicted(&after) - evicted(&before), "count");
    r.add("flood", "max_scrape_bytes", max_scrape_bytes as f64, "bytes");
    assert!(max_entries <= FLOW_TABLE_CAPACITY as f64, "{max_entries} flows tracked, capacity {FLOW_TABLE_CAPACITY}");
    // Each flood tuple entered the table once; a table that stays within its capacity had
    // to evict all but `capacity` of them.
    assert!(evicted(&after) - evicted(&before) >= (sent as u64 - FLOW_TABLE_CAPACITY) as f64, "{} evicted for {sent} new flows",
            evicted(&after) - evicted(&before));
    for (p, samples) in taq_probes.iter().filter(|(p, _)| p.role != "h1") {
        let st = probe_stats(samples, f0, f1);
        r.add("flood", &format!("{}_lost", p.name), st.lost as f64, "count");
        r.add("flood", &format!("{}_rtt_p99", p.name), st.p99_ms, "ms");
        assert!(st.sent >= 5 && st.lost * 2 <= st.sent, "{}: {} of {} lost during h1's flood", p.name, st.lost, st.sent);
    }
    d.stop_box().unwrap();

    // FQ-CoDel, same load.
    let fq_cfg = d.write_config("fq_codel", RATE_BPS, FQ_CODEL);
    d.start_box("fq_codel", &fq_cfg, false, 600).unwrap();
    let load = Load::start(&d, &counters);
    std::thread::sleep(WARMUP);
    let m0 = mark(&counters);
    std::thread::sleep(WINDOW);
    let m1 = mark(&counters);

    // A reload under load: the rate halves, forwarding goes on.
    assert_eq!(d.write_config("fq_codel", RELOAD_RATE_BPS, FQ_CODEL), fq_cfg, "the reload rewrites the running box's config");
    let hup = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(d.boxes[0].id() as i32), nix::sys::signal::SIGHUP).unwrap();
    wait_for_log(&d.log("fq_codel"), &format!("reload: b_to_a.rate_bps {RATE_BPS} -> {RELOAD_RATE_BPS}"), Duration::from_secs(5)).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let s0 = d.scrape().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let s1 = d.scrape().unwrap();
    let reloaded_bps = (departed_bytes(&s1, "b_to_a") - departed_bytes(&s0, "b_to_a")) * 8.0 / (box_time_s(&s1) - box_time_s(&s0));
    r.add("reload", "b_to_a_rate_after", reloaded_bps, "bit/s");
    assert!(d.box_alive(), "the box died on SIGHUP");
    // At most the new rate (plus one 1500-byte packet over the window); more than a third of
    // it: the downloads keep the queue busy.
    assert!(reloaded_bps <= RELOAD_RATE_BPS as f64 + 1500.0 * 8.0 / 3.0 && reloaded_bps > RELOAD_RATE_BPS as f64 / 3.0,
            "{reloaded_bps} bit/s downstream after the reload to {RELOAD_RATE_BPS}");

    // A second box on the same interfaces is refused.
    let mut twin = d.spawn_box("twin", &fq_cfg, false, 30);
    let status = (0..200).find_map(|_| {
        std::thread::sleep(Duration::from_millis(50));
        twin.try_wait().unwrap()
    });
    let said = std::fs::read_to_string(d.log("twin")).unwrap();
    if status.is_none() {
        d.boxes.insert(0, twin);
        panic!("a second box on a0/b0 still runs after 10 s: {said}");
    }
    assert_eq!(status.unwrap().code(), Some(3), "{said}");
    assert!(said.contains("interface a0 is already served by another smallpipe-box"), "{said}");

    // The box's LAN interface goes down for 1.5 s and comes back.
    d.exec("box", &["ip", "link", "set", "a0", "down"]).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    d.exec("box", &["ip", "link", "set", "a0", "up"]).unwrap();
    let up_again = Instant::now();
    wait_for_log(&d.log("fq_codel"), "interface a0 (a) is up again", Duration::from_secs(10)).unwrap();
    assert!(d.box_alive(), "the box died in the flap");
    let p = PROBES[3];
    run_in(&d, p.role, move || echo_once(p, Duration::from_secs(10))).expect("forwarding after the flap");
    r.add("flap", "first_echo_after_up", up_again.elapsed().as_secs_f64() * 1e3, "ms");

    // kill -9: nothing passes until the fail-open bridge is up, then everything does.
    let mut dead = d.boxes.pop().unwrap();
    dead.kill().unwrap();
    dead.wait().unwrap();
    let p = PROBES[1];
    assert!(run_in(&d, p.role, move || echo_once(p, Duration::from_millis(1500))).is_err(), "an echo passed the dead box");
    let opened = Instant::now();
    d.exec("box", &["sh", FAILOPEN, "open", "a0", "b0"]).unwrap();
    for p in [PROBES[1], PROBES[2], PROBES[5]] {
        run_in(&d, p.role, move || echo_once(p, Duration::from_secs(5))).unwrap_or_else(|e| panic!("through the fail-open bridge: {e}"));
    }
    let failopen_ms = opened.elapsed().as_secs_f64() * 1e3;
    let up_then = counters.up_rx.load(Relaxed);
    let upload_back = (0..150).find(|_| {
        std::thread::sleep(Duration::from_millis(100));
        counters.up_rx.load(Relaxed) > up_then + 100_000
    });
    r.add("failopen", "echoes_answered_after_open", failopen_ms, "ms");
    r.add("failopen", "upload_100KB_more_after", opened.elapsed().as_secs_f64() * 1e3, "ms");
    assert!(failopen_ms < 5000.0, "{failopen_ms} ms from `open` to echoes of three hosts answered");
    assert!(upload_back.is_some(), "the upload did not move 100 KB within 15 s of the fail-open bridge");
    let fq_probes = load.finish().unwrap();
    d.exec("box", &["sh", FAILOPEN, "close", "a0", "b0"]).unwrap();
    let fq = record_phase(&mut r, "fq_codel", &fq_probes, m0, m1);

    // The reload's probes: sent from 1 s before the SIGHUP to 2 s after, per kind.
    for (p, samples) in &fq_probes {
        let st = probe_stats(samples, hup - Duration::from_secs(1), hup + Duration::from_secs(2));
        r.add("reload", &format!("{}_lost", p.name), st.lost as f64, "count");
        assert!(st.sent >= 5 && st.lost * 2 <= st.sent, "{}: {} of {} lost across the reload", p.name, st.lost, st.sent);
    }

    // TAQ against FQ-CoDel under the same load.
    for ((p, t), (_, f)) in taq.probes.iter().zip(&fq.probes) {
        assert!(t.sent >= 40 && f.sent >= 40, "{}: {} and {} probes sent in a {WINDOW:?} window", p.name, t.sent, f.sent);
        // A margin of 10% of the probes sent: the issue's failure lost 44–88%.
        assert!(t.lost as f64 <= f.lost as f64 + 0.1 * t.sent as f64, "{}: TAQ lost {} of {}, FQ-CoDel {} of {}", p.name, t.lost, t.sent,
                f.lost, f.sent);
        assert!(t.lost < t.sent && f.lost < f.sent, "{}: a probe stream lost completely", p.name);
    }
    // The upload is h1's only bulk flow upstream; ACKs and probes take a few percent. Its
    // fair share is thus most of the rate; a collapse (the issue's 0.22 of 2 Mbit/s) is below
    // 20% of it.
    for (name, ph) in [("taq", &taq), ("fq_codel", &fq)] {
        assert!(ph.up_bps > 0.2 * RATE_BPS as f64, "{name}: upload {} bit/s", ph.up_bps);
        assert!(ph.down_bps > 0.2 * RATE_BPS as f64 / 2.0, "{name}: download {} bit/s (it shares with the fetch loop)", ph.down_bps);
        assert!(ph.up_bps <= RATE_BPS as f64 * 1.01 && ph.down_bps <= RATE_BPS as f64 * 1.01, "{name}: more than the box's rate");
    }
    r.add("all", "fetches_failed", counters.fetch_errors.load(Relaxed) as f64, "count");
    // Outside the measuring windows the box is killed under the fetches: those may fail.
    for (name, ph) in [("taq", &taq), ("fq_codel", &fq)] {
        assert!(ph.fetches_failed == 0, "{name}: {} of h3's fetches failed, the first of the test: {:?}", ph.fetches_failed,
                counters.first_fetch_error.lock().unwrap());
    }
}

// ---- soak ---------------------------------------------------------------------------

fn env_u64(name: &str, default: u64, allowed: std::ops::RangeInclusive<u64>) -> u64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => match v.parse::<u64>() {
            Ok(n) if allowed.contains(&n) => n,
            _ => panic!("{name}: {v:?} is not allowed (allowed: an integer from {} to {})", allowed.start(), allowed.end()),
        },
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?.trim().parse().ok())
}

/// One 10-second sample of the soak: host clocks (s since the soak started), the box's
/// departed IP bytes per direction and clock (s), its RSS.
struct SoakRow {
    mono_s: f64,
    departed: [f64; 2],
    box_s: f64,
    rss_kib: u64,
    wall_s: f64,
}

/// The same topology and load for SMALLPIPE_SOAK_S seconds (default 3600), sampling every 10
/// s into `soak.csv` (and `summary.txt` at the end) in SMALLPIPE_DEPLOYED_OUT. Stops early on
/// SIGINT or SIGTERM, cleaning up as at the end. `scripts/box-soak.sh` runs it.
#[test]
#[ignore = "a soak of an hour by default: scripts/box-soak.sh"]
fn soak() {
    if let Err(why) = can_run() {
        eprintln!("SKIPPED soak: needs root, ethtool and ip netns ({why})");
        return;
    }
    let duration_s = env_u64("SMALLPIPE_SOAK_S", 3600, 30..=7 * 86_400);
    let rate_bps = env_u64("SMALLPIPE_SOAK_RATE_BPS", RATE_BPS, 100_000..=1_000_000_000);
    let fifo = env_u64("SMALLPIPE_SOAK_FIFO", 1, 0..=1) == 1;
    // A queue's JSON tries a knob over the hour, e.g. a small TAQ flow table that fills early.
    let queue = match std::env::var("SMALLPIPE_SOAK_QUEUE").as_deref() {
        Err(_) | Ok("taq") => TAQ.to_string(),
        Ok("fq_codel") => FQ_CODEL.to_string(),
        Ok(v) if v.trim_start().starts_with('{') => v.to_string(),
        Ok(v) => panic!("SMALLPIPE_SOAK_QUEUE: {v:?} is not allowed (allowed: taq, fq_codel, or a queue's JSON)"),
    };
    let queue = queue.as_str();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).unwrap();
    }
    let (tag, dir) = tag_and_dir("soak");
    let mut d = Deployed::build(&tag, dir).expect("the deployed topology");
    let counters = Arc::new(Counters::default());
    let _servers = start_servers(&d, &counters);
    let cfg = d.write_config("soak", rate_bps, queue);
    d.start_box("soak", &cfg, fifo, duration_s + 120).unwrap();
    let pid = d.boxes[0].id();
    let load = Load::start(&d, &counters);
    let (start, wall0) = (Instant::now(), SystemTime::now());
    let csv_path = d.dir.join("soak.csv");
    let mut csv = std::fs::File::create(&csv_path).unwrap();
    writeln!(csv, "elapsed_s,rss_kib,lateness_count,lateness_p50_ns,lateness_p99_ns,lateness_max_ns,a_to_b_departed_bytes,\
b_to_a_departed_bytes,box_time_ns,box_minus_monotonic_ms,box_minus_wall_ms,upload_rx_bytes,download_rx_bytes,fetches").unwrap();
    println!("soak: {duration_s} s at {rate_bps} bit/s each way, {queue}, box pid {pid}; sampling every 10 s into {}", csv_path.display());
    let mut rows: Vec<SoakRow> = Vec::new();
    let mut why_stopped = "the duration ran out".to_string();
    let mut k = 0u64;
    loop {
        k += 1;
        let due = start + Duration::from_secs(10 * k);
        while Instant::now() < due && !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
        if stop.load(Relaxed) {
            why_stopped = "a signal".into();
            break;
        }
        if !d.box_alive() {
            why_stopped = "the box exited".into();
            break;
        }
        let (Ok(t), Some(rss)) = (d.scrape(), rss_kib(pid)) else {
            why_stopped = "the box could not be sampled".into();
            break;
        };
        let mono_s = start.elapsed().as_secs_f64();
        let wall_s = SystemTime::now().duration_since(wall0).map(|x| x.as_secs_f64()).unwrap_or(f64::NAN);
        let late = |s: &str| metric(&t, &format!(r#"smallpipe_box_departure_lateness_ns{{stat="{s}"}}"#)).unwrap_or(f64::NAN);
        let (a, b, bt) = (departed_bytes(&t, "a_to_b"), departed_bytes(&t, "b_to_a"), box_time_s(&t));
        // The box's clock runs from its own start: compare increments since the first sample.
        let (m0, b0) = rows.first().map_or((mono_s, bt), |r| (r.mono_s, r.box_s));
        let c = mark(&counters);
        writeln!(csv, "{:.3},{rss},{},{},{},{},{a},{b},{:.0},{:.3},{:.3},{},{},{}", mono_s, late("count"), late("p50"), late("p99"),
                 late("max"), bt * 1e9, ((bt - b0) - (mono_s - m0)) * 1e3, ((bt - b0) - (wall_s - m0)) * 1e3, c.up, c.down, c.fetches)
            .unwrap();
        rows.push(SoakRow { mono_s, departed: [a, b], box_s: bt, rss_kib: rss, wall_s });
        if mono_s >= duration_s as f64 {
            break;
        }
    }
    let probes = load.finish().unwrap();
    let alive = d.box_alive();
    if alive {
        d.stop_box().unwrap();
    }
    // Summary: RSS, lateness (the box's own, in its --out tables), per-minute delivered rate
    // against the set one (on the box's clock), box clock against the host's, probes.
    // The box's per-second counters, written at its stop: the seconds in which a direction
    // carried at least 98% of the set rate (busy; 1500-byte packets make a second's count
    // vary by ±0.6% at 2 Mbit/s), and its mean rate over them, as box-accuracy.sh reads them.
    let busy_seconds = |dir: &str| -> Option<(usize, usize, f64)> {
        let text = std::fs::read_to_string(d.dir.join("out-soak/link_slices.csv")).ok()?;
        let mut lines = text.lines();
        let head: Vec<&str> = lines.next()?.split(',').collect();
        let col = |name: &str| head.iter().position(|h| *h == name);
        let (cd, ct, cb) = (col("direction")?, col("time_ns")?, col("tx_bytes")?);
        let rows: Vec<(f64, f64)> = lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.get(cd) == Some(&dir))
            .filter_map(|f| Some((f.get(ct)?.parse().ok()?, f.get(cb)?.parse().ok()?)))
            .collect();
        let rates: Vec<f64> = rows.windows(2).map(|w| (w[1].1 - w[0].1) * 8e9 / (w[1].0 - w[0].0)).collect();
        let busy: Vec<f64> = rates.iter().copied().filter(|r| *r >= 0.98 * rate_bps as f64).collect();
        Some((rates.len(), busy.len(), busy.iter().sum::<f64>() / busy.len().max(1) as f64))
    };
    let mut s = format!("soak of {:.0} s ({why_stopped}), {} samples, {rate_bps} bit/s each way, {queue}, SCHED_FIFO {fifo}\n",
                        rows.last().map_or(0.0, |r| r.mono_s), rows.len());
    if let (Some(f), Some(l)) = (rows.first(), rows.last()) {
        let max_rss = rows.iter().map(|r| r.rss_kib).max().unwrap();
        s += &format!("box RSS: first {} KiB, last {} KiB, max {} KiB\n", f.rss_kib, l.rss_kib, max_rss);
        for (k, dir) in ["a_to_b", "b_to_a"].iter().enumerate() {
            // Every whole minute (7 samples 10 s apart), on the box's own clock.
            let minutes: Vec<f64> =
                rows.windows(7).step_by(6).map(|w| (w[6].departed[k] - w[0].departed[k]) * 8.0 / (w[6].box_s - w[0].box_s)).collect();
            let (lo, hi) = minutes.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            if minutes.is_empty() {
                s += &format!("{dir}: no whole minute sampled\n");
                continue;
            }
            s += &format!("{dir}: {} whole minutes, delivered IP rate per minute {lo:.0} to {hi:.0} bit/s ({:+.3}% to {:+.3}% of the set rate)\n",
                          minutes.len(), (lo / rate_bps as f64 - 1.0) * 100.0, (hi / rate_bps as f64 - 1.0) * 100.0);
        }
        let box_s = l.box_s - f.box_s;
        s += &format!("box clock over {:.1} s of host CLOCK_MONOTONIC: {:+.3} ms; over wall clock: {:+.3} ms (metrics refresh every 250 ms)\n",
                      l.mono_s - f.mono_s, (box_s - (l.mono_s - f.mono_s)) * 1e3, (box_s - (l.wall_s - f.wall_s)) * 1e3);
    }
    for dir in ["a_to_b", "b_to_a"] {
        if let Some((n, busy, mean)) = busy_seconds(dir) {
            s += &format!("{dir}: {busy} of {n} seconds busy (>= 98% of the set rate), mean rate over them {mean:.0} bit/s ({:+.3}%)\n",
                          (mean / rate_bps as f64 - 1.0) * 100.0);
        }
    }
    if let Ok(j) = std::fs::read_to_string(d.dir.join("out-soak/box.json")) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&j) {
            s += &format!("departure lateness over the run (box.json): {}; steal_ns {}\n", v["lateness_ns"], v["steal_ns"]);
        }
    }
    for (p, samples) in &probes {
        let st = probe_stats(samples, start, Instant::now());
        s += &format!("{}: {} sent, {} lost, RTT p50 {:.2} ms, p99 {:.2} ms\n", p.name, st.sent, st.lost, st.p50_ms, st.p99_ms);
    }
    let secs = start.elapsed().as_secs_f64();
    s += &format!("goodput: upload {:.0} bit/s, download {:.0} bit/s, {} fetches of 100 KB ({} failed; the first: {:?})\n",
                  counters.up_rx.load(Relaxed) as f64 * 8.0 / secs, counters.down_rx.load(Relaxed) as f64 * 8.0 / secs,
                  counters.fetches.load(Relaxed), counters.fetch_errors.load(Relaxed), counters.first_fetch_error.lock().unwrap());
    print!("{s}");
    std::fs::write(d.dir.join("summary.txt"), &s).unwrap();
    println!("soak: {} and summary.txt in {}", csv_path.display(), d.dir.display());
    // On Ctrl-C the box gets the SIGINT too and ends cleanly: only an unasked end fails.
    assert!(alive || stop.load(Relaxed), "the box was not running at the end of the soak ({why_stopped})\n{}",
            std::fs::read_to_string(d.log("soak")).unwrap_or_default());
}
