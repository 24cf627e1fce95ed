//! The box as a service, in namespaces client | box | server (veths, offloads off): the
//! systemd notifications and watchdog, a second instance refused, a SIGHUP reload of rate
//! and discipline under traffic, the box's own interface going down and up, and kill -9
//! followed by the fail-open script of `packaging/`. Needs root and `ip netns`; skips
//! with the reason printed otherwise. Namespaces are removed on the way out, failure
//! included, and every wait is bounded.

mod common;

use common::{in_ns, pattern, sh, wait_for_log, wait_for_ready};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CLIENT_IP: &str = "198.18.41.1";
const SERVER_IP: &str = "198.18.41.2";
const CLIENT_MAC: &str = "02:00:c6:12:29:01";
const SERVER_MAC: &str = "02:00:c6:12:29:02";
const FAILOPEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/smallpipe-box-failopen");

struct Testbed {
    names: [String; 3],
    boxes: Vec<Child>,
    dir: PathBuf,
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for c in &mut self.boxes {
            let _ = c.kill();
            let _ = c.wait();
        }
        let mut names: Vec<&String> = self.names.iter().filter(|n| !n.is_empty()).collect();
        names.dedup();
        for n in names {
            let _ = sh(&["ip", "netns", "del", n]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Testbed {
    fn boxns(&self) -> &str {
        &self.names[1]
    }
    fn exec(&self, ns: &str, args: &[&str]) -> Result<String, String> {
        let mut v = vec!["ip", "netns", "exec", ns];
        v.extend_from_slice(args);
        sh(&v)
    }

    /// Namespaces `i41<tag>{c,b,s}<pid>`: the tests of this file run in parallel.
    fn new(tag: &str) -> Result<Testbed, String> {
        let pid = std::process::id();
        let tb = Testbed {
            names: [format!("i41{tag}c{pid}"), format!("i41{tag}b{pid}"), format!("i41{tag}s{pid}")],
            boxes: Vec::new(),
            dir: std::env::temp_dir().join(format!("i41-box-{tag}-{pid}")),
        };
        for n in &tb.names {
            sh(&["ip", "netns", "add", n])?;
        }
        std::fs::create_dir_all(&tb.dir).map_err(|e| e.to_string())?;
        let [c, b, s] = &tb.names;
        sh(&["ip", "link", "add", "eth0", "netns", c, "type", "veth", "peer", "name", "a0", "netns", b])?;
        sh(&["ip", "link", "add", "eth0", "netns", s, "type", "veth", "peer", "name", "b0", "netns", b])?;
        tb.exec(c, &["ip", "link", "set", "eth0", "address", CLIENT_MAC])?;
        tb.exec(s, &["ip", "link", "set", "eth0", "address", SERVER_MAC])?;
        for (ns, ifs) in [(c, &["eth0"][..]), (b, &["a0", "b0"][..]), (s, &["eth0"][..])] {
            tb.exec(ns, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
            tb.exec(ns, &["ip", "link", "set", "lo", "up"])?;
            for i in ifs {
                tb.exec(ns, &["ip", "link", "set", i, "up"])?;
                tb.exec(ns, &["ethtool", "-K", i, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"])?;
            }
        }
        let dev = "eth0";
        tb.exec(c, &["ip", "addr", "add", &format!("{CLIENT_IP}/24"), "dev", dev])?;
        tb.exec(s, &["ip", "addr", "add", &format!("{SERVER_IP}/24"), "dev", dev])?;
        tb.exec(c, &["ip", "neigh", "add", SERVER_IP, "lladdr", SERVER_MAC, "dev", dev, "nud", "permanent"])?;
        tb.exec(s, &["ip", "neigh", "add", CLIENT_IP, "lladdr", CLIENT_MAC, "dev", dev, "nud", "permanent"])?;
        Ok(tb)
    }

    /// Start a box in the box namespace; its stderr goes to `log`.
    fn start_box(&self, config: &Path, log: &Path, notify: Option<&Path>) -> Child {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.boxns(), env!("CARGO_BIN_EXE_smallpipe-box"), "--iface-a", "a0", "--iface-b", "b0",
                  "--config", config.to_str().unwrap(), "--no-fifo", "--duration-s", "120",
                  "--lock-dir", self.dir.join("locks").to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap());
        if let Some(n) = notify {
            cmd.env("NOTIFY_SOCKET", n).env("WATCHDOG_USEC", "200000");
        }
        cmd.spawn().expect("start the box")
    }
}

fn config(rate_bps: u64, queue: &str) -> String {
    let link = format!(r#"{{"rate_bps": {rate_bps}, "delay_ns": 5000000, "queue": {queue}}}"#);
    format!(r#"{{"seed": 1, "a_to_b": {link}, "b_to_a": {link}}}"#)
}




/// Send `len` bytes client → server, every byte checked; the receiver's rate in bit/s.
fn transfer(ns: &[String; 3], port: u16, len: usize) -> Result<f64, String> {
    let server = in_ns(&ns[2], move || -> Result<f64, String> {
        let l = TcpListener::bind((SERVER_IP, port)).map_err(|e| format!("bind: {e}"))?;
        let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(20))).map_err(|e| e.to_string())?;
        let (mut got, mut buf, mut first) = (0usize, vec![0u8; 65536], None);
        loop {
            let n = s.read(&mut buf).map_err(|e| format!("read after {got} bytes: {e}"))?;
            if n == 0 {
                break;
            }
            first.get_or_insert_with(Instant::now);
            if let Some(k) = (0..n).find(|&k| buf[k] != pattern(got + k)) {
                return Err(format!("byte {} corrupted", got + k));
            }
            got += n;
        }
        if got != len {
            return Err(format!("received {got} of {len} bytes"));
        }
        Ok(got as f64 * 8.0 / first.map_or(f64::NAN, |t: Instant| t.elapsed().as_secs_f64()))
    });
    std::thread::sleep(Duration::from_millis(200));
    let client = in_ns(&ns[0], move || -> Result<(), String> {
        let mut s = TcpStream::connect_timeout(&format!("{SERVER_IP}:{port}").parse().unwrap(), Duration::from_secs(5))
            .map_err(|e| format!("connect: {e}"))?;
        s.set_write_timeout(Some(Duration::from_secs(20))).map_err(|e| e.to_string())?;
        let data: Vec<u8> = (0..len).map(pattern).collect();
        s.write_all(&data).map_err(|e| format!("write: {e}"))?;
        s.shutdown(std::net::Shutdown::Write).map_err(|e| e.to_string())?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
        let _ = s.read(&mut [0u8; 1]);
        Ok(())
    });
    client.join().map_err(|_| "client panicked".to_string())??.map_err(|e| format!("client: {e}"))?;
    server.join().map_err(|_| "server panicked".to_string())??.map_err(|e| format!("server: {e}"))
}

/// Every notification the box sends, read as systemd would (always), in order.
fn collect_notifications(sock: UnixDatagram) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = std::sync::Arc::clone(&got);
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok(n) = sock.recv(&mut buf) {
            out.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    });
    got
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn can_run() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root".into());
    }
    sh(&["ethtool", "--version"])?;
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = format!("i41probe{}-{k}", std::process::id());
    sh(&["ip", "netns", "add", &probe])?;
    sh(&["ip", "netns", "del", &probe]).map(drop)
}

#[test]
fn the_box_notifies_refuses_a_twin_reloads_survives_a_flap_and_fails_open() {
    if let Err(why) = can_run() {
        eprintln!("SKIPPED the_box_notifies...: needs root, ethtool and ip netns ({why})");
        return;
    }
    let mut tb = Testbed::new("svc").expect("testbed");
    let cfg = tb.dir.join("box.json");
    std::fs::write(&cfg, config(10_000_000, r#"{"kind": "droptail", "limit_pkts": 100}"#)).unwrap();
    let notify_path = tb.dir.join("notify");
    let notified = collect_notifications(UnixDatagram::bind(&notify_path).unwrap());
    let log = tb.dir.join("box.log");
    let mut first = tb.start_box(&cfg, &log, Some(&notify_path));
    let ready = wait_for_ready(&mut first);
    tb.boxes.push(first);
    ready.unwrap();

    // systemd's protocol: READY=1, then a watchdog ping every WATCHDOG_USEC / 2 (100 ms).
    std::thread::sleep(Duration::from_millis(1000));
    let got = notified.lock().unwrap().clone();
    assert_eq!(got.first().map(String::as_str), Some("READY=1"), "{got:?}");
    let pings = got.iter().filter(|m| *m == "WATCHDOG=1").count();
    assert!((5..=12).contains(&pings), "{pings} watchdog pings in 1 s at one per 100 ms: {got:?}");

    // A second box on the same interfaces is refused, and says why.
    let twin_log = tb.dir.join("twin.log");
    let mut twin = tb.start_box(&cfg, &twin_log, None);
    let status = wait_exit(&mut twin, Duration::from_secs(10)).expect("the second box exits");
    let said = std::fs::read_to_string(&twin_log).unwrap();
    assert_eq!(status.code(), Some(3), "{said}");
    assert!(said.contains("interface a0 is already served by another smallpipe-box"), "{said}");

    let fast = transfer(&tb.names, 5101, 1_000_000).unwrap();
    assert!(fast > 5e6 && fast <= 10e6 * 1.01, "{fast} bit/s through a 10 Mbit/s box");

    // Reload under traffic: 2 Mbit/s and FQ-CoDel instead of DropTail, while a transfer runs.
    let during = {
        let names = tb.names.clone();
        let h = std::thread::spawn(move || transfer(&names, 5102, 1_500_000));
        std::thread::sleep(Duration::from_millis(600));
        std::fs::write(&cfg, config(2_000_000, r#"{"kind": "fq_codel"}"#)).unwrap();
        let pid = nix::unistd::Pid::from_raw(tb.boxes[0].id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::SIGHUP).unwrap();
        h.join().unwrap()
    };
    if let Err(e) = during {
        panic!("the transfer across the reload failed: {e}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
    let text = wait_for_log(&log, "reload: b_to_a.queue droptail -> fq_codel", Duration::from_secs(5)).unwrap();
    assert!(text.contains("reload: a_to_b.rate_bps 10000000 -> 2000000"), "{text}");
    assert!(text.contains("reload: a_to_b.queue droptail -> fq_codel"), "{text}");
    let got = notified.lock().unwrap().clone();
    let reloading = got.iter().position(|m| m.starts_with("RELOADING=1\nMONOTONIC_USEC=")).expect("RELOADING=1 sent");
    assert!(got[reloading..].iter().any(|m| m == "READY=1"), "READY=1 after the reload: {got:?}");
    assert!(tb.boxes[0].try_wait().unwrap().is_none(), "the box still runs after SIGHUP");
    let slow = transfer(&tb.names, 5103, 300_000).unwrap();
    assert!(slow <= 2e6 * 1.01 && slow > 1e6, "{slow} bit/s after the reload to 2 Mbit/s");

    // The box's own interface goes down and comes back: it waits, then forwards again.
    tb.exec(tb.boxns(), &["ip", "link", "set", "a0", "down"]).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    tb.exec(tb.boxns(), &["ip", "link", "set", "a0", "up"]).unwrap();
    wait_for_log(&log, "interface a0 (a) is up again", Duration::from_secs(5)).unwrap();
    assert!(tb.boxes[0].try_wait().unwrap().is_none(), "the box survived the flap");
    transfer(&tb.names, 5104, 200_000).expect("forwarding after the flap");

    // kill -9: nothing passes; the fail-open script (the unit's ExecStopPost) bridges the
    // two interfaces; closing it and starting a box again (the lock died with the first) works.
    let mut dead = tb.boxes.remove(0);
    dead.kill().unwrap();
    dead.wait().unwrap();
    assert!(transfer(&tb.names, 5105, 10_000).is_err(), "nothing passes a dead box before fail-open");
    tb.exec(tb.boxns(), &["sh", FAILOPEN, "open", "a0", "b0"]).unwrap();
    let bridged = transfer(&tb.names, 5106, 1_000_000).expect("traffic passes the fail-open bridge");
    assert!(bridged > 2e6 * 1.01, "{bridged} bit/s: the bridge does not shape");
    // While the bridge is up, a box refuses to start beside it.
    let beside_log = tb.dir.join("beside.log");
    let mut beside = tb.start_box(&cfg, &beside_log, None);
    let status = wait_exit(&mut beside, Duration::from_secs(10)).expect("a box beside the bridge exits");
    let said = std::fs::read_to_string(&beside_log).unwrap();
    assert!(status.code() == Some(3) && said.contains("is a port of spfo-a0"), "{status}: {said}");
    tb.exec(tb.boxns(), &["sh", FAILOPEN, "close", "a0", "b0"]).unwrap();
    let mut again = tb.start_box(&cfg, &tb.dir.join("again.log"), None);
    let ready = wait_for_ready(&mut again);
    tb.boxes.push(again);
    ready.unwrap();
    let rate = transfer(&tb.names, 5107, 300_000).expect("forwarding by the restarted box");
    assert!(rate <= 2e6 * 1.01, "{rate} bit/s: the restarted box shapes again");
}

#[test]
fn offloads_are_refused_with_the_command_or_fixed_and_oversized_frames_are_logged() {
    if let Err(why) = can_run() {
        eprintln!("SKIPPED offloads_are_refused...: needs root, ethtool and ip netns ({why})");
        return;
    }
    let pid = std::process::id();
    // One namespace: the box on a0 and b0, their veth peers a1 and b1, offloads as veths
    // come (checksum and segmentation offloads on).
    let mut tb = Testbed {
        names: [format!("i41o{pid}"), String::new(), String::new()],
        boxes: Vec::new(),
        dir: std::env::temp_dir().join(format!("i41-box-offloads-{pid}")),
    };
    let ns = tb.names[0].clone();
    sh(&["ip", "netns", "add", &ns]).unwrap();
    tb.names[1] = ns.clone(); // `boxns()` is this namespace; the others stay empty
    std::fs::create_dir_all(&tb.dir).unwrap();
    // Side A carries jumbo frames, side B does not: what A sends beyond B's MTU is refused.
    for (x, y, mtu) in [("a0", "a1", "9000"), ("b0", "b1", "1500")] {
        tb.exec(&ns, &["ip", "link", "add", x, "type", "veth", "peer", "name", y]).unwrap();
        for i in [x, y] {
            tb.exec(&ns, &["ip", "link", "set", i, "mtu", mtu, "up"]).unwrap();
        }
    }
    let features = |i: &str| sh(&["ip", "netns", "exec", &ns, "ethtool", "-k", i]).unwrap();
    assert!(features("a0").contains("tcp-segmentation-offload: on"), "{}", features("a0"));
    let cfg = tb.dir.join("box.json");
    std::fs::write(&cfg, config(10_000_000, r#"{"kind": "droptail"}"#)).unwrap();

    let log = tb.dir.join("refused.log");
    let mut refused = tb.start_box(&cfg, &log, None);
    let status = wait_exit(&mut refused, Duration::from_secs(10)).expect("the box exits");
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(3), "{said}");
    assert!(said.contains("interface a0 has offloads on") && said.contains("`ethtool -K a0 ") && said.contains("tso off"),
            "{said}");

    // --fix-offloads: the box turns them off, and ethtool's own report agrees.
    let log = tb.dir.join("fixed.log");
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns, env!("CARGO_BIN_EXE_smallpipe-box"), "--iface-a", "a0", "--iface-b", "b0",
              "--config", cfg.to_str().unwrap(), "--no-fifo", "--duration-s", "60", "--fix-offloads",
              "--lock-dir", tb.dir.join("locks").to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut fixed = cmd.spawn().unwrap();
    let ready = wait_for_ready(&mut fixed);
    tb.boxes.push(fixed);
    ready.unwrap();
    for i in ["a0", "b0"] {
        let f = features(i);
        // The legacy TSO switch leaves newer TSO variants (6.18's tx-tcp-accecn-segmentation)
        // alone; they only segment TCP the box's own host sends.
        for name in ["tx-tcp-segmentation", "tx-tcp6-segmentation", "generic-segmentation-offload",
                     "generic-receive-offload", "tx-checksumming", "rx-checksumming"] {
            assert!(f.contains(&format!("{name}: off")), "{i}: {name} still on:\n{f}");
        }
    }
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("interface a0: turned offloads off") && said.contains("b0 (MTU 1500) and a0 (MTU 9000)"), "{said}");

    // A 4000-byte frame from a1: read whole (a0 carries jumbo frames), refused towards b0,
    // counted and logged with its size.
    let sent = in_ns(&ns, || {
        let s = smallpipe_middlebox::io::PacketSocket::open("a1").unwrap();
        let mut f = vec![0x02, 0, 0xc6, 0x12, 0x29, 0x02, 0x02, 0, 0xc6, 0x12, 0x29, 0x01, 0x08, 0x00];
        f.resize(4000, 0);
        s.send_batch(&[&f]).unwrap()
    })
    .join()
    .unwrap()
    .unwrap();
    assert_eq!(sent, 1);
    wait_for_log(&log, "interface a0: dropped a frame of 4000 bytes", Duration::from_secs(5)).unwrap();
}

#[test]
fn vlan_tagged_frames_leave_the_box_with_their_tag() {
    if let Err(why) = can_run() {
        eprintln!("SKIPPED vlan_tagged_frames...: needs root, ethtool and ip netns ({why})");
        return;
    }
    if sh(&["tshark", "--version"]).is_err() {
        eprintln!("SKIPPED vlan_tagged_frames...: needs tshark to see the tag on the far side");
        return;
    }
    // The client sends UDP tagged with VLAN 100 (priority 3). The kernel gives the box each
    // frame untagged, with the tag in PACKET_AUXDATA; the box must put it back. tshark on
    // the server's side (libpcap, which reads the kernel's metadata the same way) must see
    // VLAN 100 and priority 3.
    let mut tb = Testbed::new("vl").expect("testbed");
    let cfg = tb.dir.join("box.json");
    std::fs::write(&cfg, config(10_000_000, r#"{"kind": "fq_codel"}"#)).unwrap();
    let mut b = tb.start_box(&cfg, &tb.dir.join("box.log"), None);
    let ready = wait_for_ready(&mut b);
    tb.boxes.push(b);
    ready.unwrap();
    let capture = Command::new("ip")
        .args(["netns", "exec", &tb.names[2], "tshark", "-i", "eth0", "-c", "1", "-a", "duration:10", "-f", "udp",
               "-T", "fields", "-e", "vlan.id", "-e", "vlan.priority", "-e", "ip.dst"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500)); // tshark's start
    in_ns(&tb.names[0], || {
        let s = smallpipe_middlebox::io::PacketSocket::open("eth0").unwrap();
        for _ in 0..5 {
            s.send_batch(&[&tagged_udp_frame(100, 3)]).unwrap();
            std::thread::sleep(Duration::from_millis(200));
        }
    })
    .join()
    .unwrap()
    .unwrap();
    let out = capture.wait_with_output().unwrap();
    let seen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(seen.trim(), format!("100\t3\t{SERVER_IP}"), "what the server's side saw (vlan id, priority, dst)");
}

/// An Ethernet frame client → server with an 802.1Q tag and an IPv4/UDP datagram (valid
/// IPv4 checksum, no UDP checksum).
fn tagged_udp_frame(vlan: u16, priority: u16) -> Vec<u8> {
    let mac = |m: &str| m.split(':').map(|h| u8::from_str_radix(h, 16).unwrap()).collect::<Vec<u8>>();
    let ip = |a: &str| a.parse::<std::net::Ipv4Addr>().unwrap().octets();
    let mut f = mac(SERVER_MAC);
    f.extend(mac(CLIENT_MAC));
    f.extend([0x81, 0x00]);
    f.extend(((priority << 13) | vlan).to_be_bytes());
    f.extend([0x08, 0x00]);
    let payload = [0x5au8; 32];
    let total = (20 + 8 + payload.len()) as u16;
    let mut h = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h.extend(ip(CLIENT_IP));
    h.extend(ip(SERVER_IP));
    let mut sum: u32 = h.chunks(2).map(|w| (w[0] as u32) << 8 | w[1] as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend(h);
    f.extend(4000u16.to_be_bytes());
    f.extend(4001u16.to_be_bytes());
    f.extend((8 + payload.len() as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend(payload);
    f
}
