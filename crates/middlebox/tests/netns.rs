//! End to end through real Linux TCP: namespaces client | box | server joined by veth pairs,
//! the box forwarding with DropTail at 10 Mbit/s and 20 ms each way. Needs root and
//! `ip netns`; skips with the reason printed otherwise. Every namespace is removed on the
//! way out, failure included, and every wait is bounded.

mod common;

use common::{in_ns, pattern, wait_for_ready};
use smallpipe_middlebox::io::PacketSocket;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RATE_BPS: u64 = 10_000_000;
const DELAY_NS: u64 = 20_000_000;
const CLIENT_IP: &str = "198.18.0.1";
const SERVER_IP: &str = "198.18.0.2";
const CLIENT_MAC: &str = "02:00:c6:12:00:01";
const SERVER_MAC: &str = "02:00:c6:12:00:02";

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Namespaces and the box process, torn down on drop whatever happened.
struct Testbed {
    names: [String; 3],
    box_proc: Option<Child>,
    dir: std::path::PathBuf,
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Some(mut c) = self.box_proc.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.names {
            let _ = sh(&["ip", "netns", "del", n]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Testbed {
    fn client(&self) -> &str {
        &self.names[0]
    }
    fn boxns(&self) -> &str {
        &self.names[1]
    }
    fn server(&self) -> &str {
        &self.names[2]
    }
    fn exec(&self, ns: &str, args: &[&str]) -> Result<(), String> {
        let mut v = vec!["ip", "netns", "exec", ns];
        v.extend_from_slice(args);
        sh(&v)
    }
}

fn build_testbed() -> Result<Testbed, String> {
    let pid = std::process::id();
    let tb = Testbed {
        names: [format!("spc{pid}"), format!("spb{pid}"), format!("sps{pid}")],
        box_proc: None,
        dir: std::env::temp_dir().join(format!("smallpipe-box-test-{pid}")),
    };
    for n in &tb.names {
        sh(&["ip", "netns", "add", n])?;
    }
    std::fs::create_dir_all(&tb.dir).map_err(|e| e.to_string())?;
    sh(&["ip", "link", "add", "eth0", "netns", tb.client(), "type", "veth", "peer", "name", "a0", "netns", tb.boxns()])?;
    sh(&["ip", "link", "add", "eth0", "netns", tb.server(), "type", "veth", "peer", "name", "b0", "netns", tb.boxns()])?;
    // The client side carries jumbo frames so an oversized frame can reach the box.
    tb.exec(tb.client(), &["ip", "link", "set", "eth0", "address", CLIENT_MAC, "mtu", "9000"])?;
    tb.exec(tb.boxns(), &["ip", "link", "set", "a0", "mtu", "9000"])?;
    tb.exec(tb.server(), &["ip", "link", "set", "eth0", "address", SERVER_MAC])?;
    for (ns, ifs) in [(tb.client(), &["eth0"][..]), (tb.boxns(), &["a0", "b0"][..]), (tb.server(), &["eth0"][..])] {
        tb.exec(ns, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
        tb.exec(ns, &["ip", "link", "set", "lo", "up"])?;
        for i in ifs {
            tb.exec(ns, &["ip", "link", "set", i, "up"])?;
            // Offloads off: the box must see wire-sized frames with real checksums.
            if tb.exec(ns, &["ethtool", "-K", i, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]).is_err() {
                eprintln!("note: ethtool missing or refused on {i}; offloads left as they are");
            }
        }
    }
    tb.exec(tb.client(), &["ip", "addr", "add", &format!("{CLIENT_IP}/24"), "dev", "eth0"])?;
    tb.exec(tb.server(), &["ip", "addr", "add", &format!("{SERVER_IP}/24"), "dev", "eth0"])?;
    tb.exec(tb.client(), &["ip", "neigh", "add", SERVER_IP, "lladdr", SERVER_MAC, "dev", "eth0", "nud", "permanent"])?;
    tb.exec(tb.server(), &["ip", "neigh", "add", CLIENT_IP, "lladdr", CLIENT_MAC, "dev", "eth0", "nud", "permanent"])?;
    Ok(tb)
}

struct Transfer {
    connect: Duration,
    receiver_rate_bps: f64,
}

/// Send `len` bytes of a known pattern client → server; the server checks every byte.
fn transfer(tb: &Testbed, port: u16, len: usize) -> Result<Transfer, String> {
    let server = in_ns(tb.server(), move || -> Result<f64, String> {
        let l = TcpListener::bind((SERVER_IP, port)).map_err(|e| format!("bind: {e}"))?;
        l.set_nonblocking(false).map_err(|e| e.to_string())?;
        let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(15))).map_err(|e| e.to_string())?;
        let (mut got, mut buf) = (0usize, vec![0u8; 65536]);
        let mut first: Option<Instant> = None;
        loop {
            let n = s.read(&mut buf).map_err(|e| format!("read after {got} bytes: {e}"))?;
            if n == 0 {
                break;
            }
            first.get_or_insert_with(Instant::now);
            for (k, b) in buf[..n].iter().enumerate() {
                if *b != pattern(got + k) {
                    return Err(format!("byte {} is {b}, sent {}", got + k, pattern(got + k)));
                }
            }
            got += n;
        }
        if got != len {
            return Err(format!("received {got} of {len} bytes"));
        }
        let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
        Ok(got as f64 * 8.0 / secs)
    });
    std::thread::sleep(Duration::from_millis(200));
    let client = in_ns(tb.client(), move || -> Result<Duration, String> {
        let t0 = Instant::now();
        let mut s = TcpStream::connect_timeout(&format!("{SERVER_IP}:{port}").parse().unwrap(), Duration::from_secs(5))
            .map_err(|e| format!("connect: {e}"))?;
        let connect = t0.elapsed();
        s.set_write_timeout(Some(Duration::from_secs(15))).map_err(|e| e.to_string())?;
        let data: Vec<u8> = (0..len).map(pattern).collect();
        s.write_all(&data).map_err(|e| format!("write: {e}"))?;
        s.shutdown(std::net::Shutdown::Write).map_err(|e| e.to_string())?;
        // Wait for the server's FIN so the transfer is complete before returning.
        let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
        let _ = s.read(&mut [0u8; 1]);
        Ok(connect)
    });
    let connect = client.join().map_err(|_| "client panicked".to_string())??.map_err(|e| format!("client: {e}"))?;
    let rate = server.join().map_err(|_| "server panicked".to_string())??.map_err(|e| format!("server: {e}"))?;
    Ok(Transfer { connect, receiver_rate_bps: rate })
}

/// Frames no well-behaved host sends, written raw from the client side.
fn junk_frames() -> Vec<Vec<u8>> {
    let eth = |ethertype: [u8; 2]| -> Vec<u8> {
        let mut f = vec![0x02, 0, 0xc6, 0x12, 0, 0x02, 0x02, 0, 0xc6, 0x12, 0, 0x01];
        f.extend_from_slice(&ethertype);
        f
    };
    let ipv4 = |total_len: u16, frag: u16, good_sum: bool| -> Vec<u8> {
        let mut f = eth([0x08, 0x00]);
        let mut h = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2];
        h[2..4].copy_from_slice(&total_len.to_be_bytes());
        h[6..8].copy_from_slice(&frag.to_be_bytes());
        let mut sum: u32 = h.chunks(2).map(|w| (w[0] as u32) << 8 | w[1] as u32).sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let c = !(sum as u16) ^ if good_sum { 0 } else { 0x0101 };
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&h);
        f.extend(std::iter::repeat_n(0u8, (total_len as usize).saturating_sub(20)));
        f
    };
    let mut frames = vec![
        ipv4(1000, 0, true)[..60].to_vec(),   // truncated: header says 1000 bytes
        ipv4(100, 0, false),                  // wrong IPv4 checksum
        ipv4(100, 0x2000, true),              // first fragment (More Fragments)
        ipv4(100, 0x0010, true),              // later fragment (offset 128)
        ipv4(4000, 0, true),                  // oversized: larger than a slab slot
        { let mut f = eth([0x88, 0xb5]); f.extend([0u8; 46]); f }, // not IP
        vec![0u8; 10],                         // shorter than an Ethernet header
    ];
    // Random frames from a fixed xorshift stream: lengths 14..1514, random EtherTypes, and
    // random bytes after a valid IPv4 EtherType.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for k in 0..200 {
        let len = 14 + (next() % 1500) as usize;
        let mut f: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        f[..12].copy_from_slice(&eth([0, 0])[..12]);
        if k % 2 == 0 {
            f[12..14].copy_from_slice(&[0x08, 0x00]);
        }
        frames.push(f);
    }
    frames
}


fn can_run() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root".into());
    }
    let probe = format!("spprobe{}", std::process::id());
    sh(&["ip", "netns", "add", &probe])?;
    sh(&["ip", "netns", "del", &probe])
}

#[test]
fn tcp_through_the_box_keeps_rate_delay_and_bytes_and_survives_junk() {
    if let Err(why) = can_run() {
        eprintln!("SKIPPED tcp_through_the_box: needs root and ip netns ({why})");
        return;
    }
    let mut tb = build_testbed().expect("testbed");
    let cfg = tb.dir.join("box.json");
    let link = format!(r#"{{"rate_bps": {RATE_BPS}, "delay_ns": {DELAY_NS}, "queue": {{"kind": "droptail", "limit_pkts": 100}}}}"#);
    std::fs::write(&cfg, format!(r#"{{"seed": 1, "a_to_b": {link}, "b_to_a": {link}}}"#)).unwrap();
    let out = tb.dir.join("out");
    let mut child = Command::new("ip")
        .args(["netns", "exec", tb.boxns(), env!("CARGO_BIN_EXE_smallpipe-box"), "--iface-a", "a0", "--iface-b", "b0",
               "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-fifo", "--duration-s", "40"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the box");
    let ready = wait_for_ready(&mut child);
    tb.box_proc = Some(child);
    ready.unwrap();

    let len = 1_000_000;
    let t = transfer(&tb, 5001, len).unwrap();
    // SYN and SYN-ACK each cross the 20 ms link once, plus their serialization.
    assert!(t.connect >= Duration::from_nanos(2 * DELAY_NS), "handshake {:?} < 2 x one-way delay", t.connect);
    // Payload rate at the receiver is below the IP rate of the link (headers take their share).
    assert!(t.receiver_rate_bps <= RATE_BPS as f64 * 1.01, "received at {} bit/s over a {RATE_BPS} bit/s link", t.receiver_rate_bps);

    let frames = junk_frames();
    let n_junk = frames.len();
    let sent = in_ns(tb.client(), move || -> Result<usize, String> {
        let s = PacketSocket::open("eth0").map_err(|e| e.to_string())?;
        let mut n = 0;
        // One by one: the kernel refuses some of them outright, which ends a batch.
        for (k, f) in frames.iter().enumerate() {
            n += s.send_batch(&[f]).unwrap_or(0);
            if k % 16 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        Ok(n)
    })
    .join()
    .unwrap()
    .unwrap()
    .unwrap();
    // The kernel refuses only the frame shorter than an Ethernet header.
    assert!(sent >= n_junk - 1, "sent {sent} of {n_junk} junk frames");

    // Still forwarding after the junk, bytes intact.
    transfer(&tb, 5002, 100_000).unwrap();

    let mut child = tb.box_proc.take().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "box did not stop within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "box exited with {status}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("box.json")).unwrap()).unwrap();
    let a = &summary["not_scheduled"]["a"];
    for cause in ["malformed", "bad_ip_checksum", "oversized"] {
        assert!(a[cause].as_u64().unwrap() >= 1, "no {cause} frame counted: {summary}");
    }
    assert!(summary["unscheduled_forwarded"]["a"].as_u64().unwrap() >= 1, "{summary}");
    let links = std::fs::read_to_string(out.join("links.csv")).unwrap();
    assert!(links.starts_with("direction,") && links.lines().count() == 3, "{links}");
    let a_to_b: Vec<&str> = links.lines().nth(1).unwrap().split(',').collect();
    // Data went a → b: at least the 1.1 MB sent, as IP bytes.
    assert!(a_to_b[4].parse::<u64>().unwrap() >= (len + 100_000) as u64, "{links}");
}
