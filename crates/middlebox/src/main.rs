//! `smallpipe-box --iface-a IF_A --iface-b IF_B --config CONFIG [--duration-s S]
//! [--out DIR] [--metrics-addr 127.0.0.1:PORT] [--pcap FILE] [--no-fifo] [--lock-dir DIR] [--fix-offloads]`
//!
//! CONFIG is TOML (`.toml`, the packaged `uplink.toml`) or JSON (`.json`, the testbed's
//! `BOX.json`), by its extension (`config::Format`).
//!
//! SIGHUP re-reads CONFIG and applies it without stopping (`DataPath::reload`); under
//! systemd (`$NOTIFY_SOCKET`) the box reports READY/RELOADING/STOPPING and pings the
//! watchdog. One instance per interface (`service::InstanceLock`). At start it refuses
//! interfaces with receive, segmentation or checksum offloads on, naming the `ethtool -K`
//! command, unless `--fix-offloads` turns them off.`
//!
//! `smallpipe-box --replay CAPTURE --config CONFIG --out DIR [--side-a PREFIX/LEN]
//! [--slice-ms MS] [--duration-s S]`: offline, the capture's input frames through the same
//! links (`replay.rs`).
//!
//! `smallpipe-box check CONFIG`: validate the config and print what the box would do.
//!
//! Exit codes: 0 on a clean stop (SIGINT, SIGTERM or the duration), 2 on a bad command line
//! or config, 3 when another box holds one of the interfaces (or it is a bridge port), 1 on
//! an I/O failure while running.

use smallpipe_middlebox::config::BoxConfig;
use smallpipe_middlebox::datapath::{Control, DataPath};
use smallpipe_middlebox::service::{self, InstanceLock, Notifier};
use smallpipe_middlebox::io::PacketSocket;
use smallpipe_middlebox::pcap::Capture;
use smallpipe_middlebox::replay::{read_inputs, Replay, SideA};
use smallpipe_middlebox::stats::{self, Snapshot, SIDES};
use smallpipe_middlebox::{io, metrics, parse::DropCause, timer};
use smallpipe_core::{Duration, Instant};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

const USAGE: &str = "usage: smallpipe-box --iface-a IF_A --iface-b IF_B --config CONFIG [--duration-s SECONDS] \
[--out DIR] [--metrics-addr 127.0.0.1:PORT] [--pcap FILE] [--no-fifo] [--lock-dir DIR] [--fix-offloads]
   or: smallpipe-box check CONFIG
   or: smallpipe-box --replay CAPTURE --config CONFIG --out DIR [--side-a PREFIX/LEN] [--slice-ms MS] [--duration-s SECONDS]
CONFIG is TOML (a .toml file) or JSON (a .json file).";

/// Real-time priority of the data path under SCHED_FIFO (below the kernel's own threads at 50).
const FIFO_PRIORITY: i32 = 40;

#[derive(Debug, Default)]
struct Args {
    iface_a: String,
    iface_b: String,
    config: String,
    duration_s: Option<f64>,
    out: Option<PathBuf>,
    metrics_addr: Option<String>,
    pcap: Option<String>,
    no_fifo: bool,
    lock_dir: Option<PathBuf>,
    fix_offloads: bool,
    replay: Option<String>,
    side_a: Option<SideA>,
    slice_ms: Option<f64>,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args::default();
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--iface-a" => a.iface_a = value("--iface-a")?,
            "--iface-b" => a.iface_b = value("--iface-b")?,
            "--config" => a.config = value("--config")?,
            "--duration-s" => {
                let v = value("--duration-s")?;
                let s: f64 = v.parse().map_err(|_| format!("--duration-s: {v:?} is not a number of seconds"))?;
                if !(s > 0.0 && s.is_finite()) {
                    return Err(format!("--duration-s: {v} is not allowed (allowed: a positive number of seconds)"));
                }
                a.duration_s = Some(s);
            }
            "--out" => a.out = Some(value("--out")?.into()),
            "--metrics-addr" => a.metrics_addr = Some(value("--metrics-addr")?),
            "--pcap" => a.pcap = Some(value("--pcap")?),
            "--no-fifo" => a.no_fifo = true,
            "--lock-dir" => a.lock_dir = Some(value("--lock-dir")?.into()),
            "--fix-offloads" => a.fix_offloads = true,
            "--replay" => a.replay = Some(value("--replay")?),
            "--side-a" => a.side_a = Some(SideA::parse(&value("--side-a")?)?),
            "--slice-ms" => {
                let v = value("--slice-ms")?;
                match v.parse::<f64>() {
                    Ok(ms) if ms >= 1e-3 && ms.is_finite() => a.slice_ms = Some(ms),
                    _ => return Err(format!("--slice-ms: {v} is not allowed (allowed: a number of milliseconds, at least 0.001)")),
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let required: &[(&str, bool)] = if a.replay.is_some() {
        &[("--config", a.config.is_empty()), ("--out", a.out.is_none())]
    } else {
        &[("--iface-a", a.iface_a.is_empty()), ("--iface-b", a.iface_b.is_empty()), ("--config", a.config.is_empty())]
    };
    if let Some((name, _)) = required.iter().find(|(_, missing)| *missing) {
        return Err(format!("{name} is required\n{USAGE}"));
    }
    Ok(a)
}

/// `smallpipe-box check CONFIG`: validate, print what the box would do; exit 0, or 2 with
/// the field, the value and what is allowed.
fn check(path: &str) -> ExitCode {
    match BoxConfig::load(path) {
        Ok(c) => {
            print!("{path}: valid\n{}", c.describe());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("smallpipe-box: bad config: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().is_some_and(|a| a == "check") {
        return match &argv[1..] {
            [path] => check(path),
            _ => {
                eprintln!("smallpipe-box: usage: smallpipe-box check CONFIG");
                ExitCode::from(2)
            }
        };
    }
    let args = match parse_args(argv.into_iter()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("smallpipe-box: {e}");
            return ExitCode::from(2);
        }
    };
    let cfg = match BoxConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("smallpipe-box: bad config: {e}");
            return ExitCode::from(2);
        }
    };
    if args.replay.is_some() {
        return report(run_replay(&args, &cfg));
    }
    // Held until the process ends (the kernel frees them even after kill -9).
    let lock_dir = args.lock_dir.clone().unwrap_or_else(|| service::DEFAULT_LOCK_DIR.into());
    let lock = [&args.iface_a, &args.iface_b].iter().try_for_each(|i| service::check_not_bridged(i))
        .and_then(|()| InstanceLock::acquire(&lock_dir, &[&args.iface_a, &args.iface_b]));
    let _lock = match lock {
        Ok(l) => l,
        Err(e) => {
            eprintln!("smallpipe-box: refused: {e}");
            return ExitCode::from(3);
        }
    };
    let mut mtus = [0; 2];
    for (mtu, iface) in mtus.iter_mut().zip([&args.iface_a, &args.iface_b]) {
        match check_interface(iface, args.fix_offloads) {
            Ok(m) => *mtu = m,
            Err(e) => {
                eprintln!("smallpipe-box: refused: {e}");
                return ExitCode::from(3);
            }
        }
    }
    let frame_bytes = frame_bytes([&args.iface_a, &args.iface_b], mtus);
    report(run(&args, &cfg, frame_bytes))
}

/// Offloads off (or turned off with `--fix-offloads`); returns the interface's MTU.
fn check_interface(iface: &str, fix: bool) -> Result<u32, String> {
    let on = io::offloads_on(iface).map_err(|e| format!("interface {iface}: reading its offloads: {e}"))?;
    if !on.is_empty() {
        let command = format!("ethtool -K {iface} {}", on.iter().map(|o| format!("{o} off")).collect::<Vec<_>>().join(" "));
        if !fix {
            return Err(format!(
                "interface {iface} has offloads on ({}): the box would read merged frames larger than the wire's \
                 (dropped as oversized) and forward frames with unfilled checksums; turn them off with `{command}`, \
                 or start with --fix-offloads", on.join(", ")));
        }
        io::turn_offloads_off(iface, &on).map_err(|e| format!("interface {iface}: --fix-offloads ({command}): {e}"))?;
        let left = io::offloads_on(iface).map_err(|e| format!("interface {iface}: {e}"))?;
        if !left.is_empty() {
            return Err(format!("interface {iface}: --fix-offloads could not turn off {} (fixed by the driver?)", left.join(", ")));
        }
        eprintln!("smallpipe-box: interface {iface}: turned offloads off (--fix-offloads, as `{command}`)");
    }
    io::mtu(iface).map_err(|e| format!("interface {iface}: reading its MTU: {e}"))
}

/// The frame size for the two interfaces' MTUs, saying on stderr what will not pass: frames
/// beyond jumbo size, and frames the smaller MTU cannot send on.
fn frame_bytes(ifaces: [&str; 2], mtus: [u32; 2]) -> usize {
    let bytes = io::frame_bytes_for_mtus(mtus);
    for (iface, mtu) in ifaces.iter().zip(mtus) {
        if mtu as usize + io::L2_OVERHEAD_BYTES > bytes {
            eprintln!("smallpipe-box: interface {iface} has MTU {mtu}: frames longer than {bytes} bytes (IP packets over {} bytes) \
                       are dropped, logged and counted as oversized; set `ip link set {iface} mtu {}` or lower to avoid it",
                      bytes - io::L2_OVERHEAD_BYTES, bytes - io::L2_OVERHEAD_BYTES);
        }
    }
    if mtus[0] != mtus[1] {
        let (small, large) = if mtus[0] < mtus[1] { (0, 1) } else { (1, 0) };
        eprintln!("smallpipe-box: interfaces {} (MTU {}) and {} (MTU {}): frames from {} too long for {} are dropped, \
                   logged and counted as oversized, as a bridge drops them; give both the same MTU to avoid it",
                  ifaces[small], mtus[small], ifaces[large], mtus[large], ifaces[large], ifaces[small]);
    }
    bytes
}

fn report(outcome: Result<(), String>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("smallpipe-box: {e}");
            ExitCode::from(1)
        }
    }
}

/// Forward with receive buffers and slab slots of `frame_bytes`.
fn run(args: &Args, cfg: &BoxConfig, frame_bytes: usize) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|e| format!("signal handler: {e}"))?;
    }
    let reload = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload)).map_err(|e| format!("signal handler: {e}"))?;
    let notifier = Notifier::from_env()?;
    let socks = [
        PacketSocket::open_sized(&args.iface_a, frame_bytes).map_err(|e| format!("--iface-a {}: {e}", args.iface_a))?,
        PacketSocket::open_sized(&args.iface_b, frame_bytes).map_err(|e| format!("--iface-b {}: {e}", args.iface_b))?,
    ];
    let capture = match &args.pcap {
        Some(p) => Some(Capture::create(p).map_err(|e| format!("--pcap {p}: {e}"))?),
        None => None,
    };
    let mut dp = DataPath::new(cfg, socks, [args.iface_a.clone(), args.iface_b.clone()], capture)?;
    if let Some(out) = &args.out {
        dp.log_slices_to(out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    }
    let shared = Arc::new(Mutex::new(Arc::new(Snapshot::empty())));
    let metrics_thread = match &args.metrics_addr {
        Some(addr) => {
            let l = std::net::TcpListener::bind(addr).map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
            let (snap, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            Some(std::thread::Builder::new().name("metrics".into()).spawn(move || metrics::serve(l, snap, stop))
                .map_err(|e| format!("metrics thread: {e}"))?)
        }
        None => None,
    };
    let sched = if args.no_fifo {
        "off (--no-fifo)".to_string()
    } else {
        match timer::request_sched_fifo(FIFO_PRIORITY) {
            Ok(()) => format!("SCHED_FIFO {FIFO_PRIORITY}"),
            Err(e) => format!("refused: {e}"),
        }
    };
    let until = args.duration_s.map(|s| dp.now() + Duration((s * 1e9) as u64));
    let steal_start = timer::steal_ns();
    println!("ready");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let (slot_bytes, memory_bytes) = dp.frame_memory();
    eprintln!("smallpipe-box: forwarding {} <-> {}, config {}, scheduling {sched}, frames of up to {slot_bytes} bytes \
               ({} slots: {:.1} MiB)", args.iface_a, args.iface_b, args.config, cfg.slab_frames, memory_bytes as f64 / (1 << 20) as f64);
    smallpipe_middlebox::log::emit("start", &[
        ("iface_a", args.iface_a.clone()), ("iface_b", args.iface_b.clone()), ("config", args.config.clone()),
        ("a_to_b_rate_bps", cfg.a_to_b.rate_bps.to_string()), ("b_to_a_rate_bps", cfg.b_to_a.rate_bps.to_string()),
        ("metrics_addr", args.metrics_addr.clone().unwrap_or_default()), ("scheduling", sched.clone()),
        ("frame_bytes", slot_bytes.to_string()), ("slab_bytes", memory_bytes.to_string()),
        ("version", env!("CARGO_PKG_VERSION").into()),
    ]);
    notifier.notify("READY=1");
    let ctl = Control { stop: &stop, reload: &reload, config_path: &args.config, notifier: &notifier };
    dp.run(&ctl, until, &shared).map_err(|e| format!("data path: {e}"))?;
    let end = dp.now();
    let steal = steal_start.zip(timer::steal_ns()).map(|(a, b)| b - a);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let pcap = dp.finish_capture().map_err(|e| format!("pcap: {e}"))?;
    if let Some(t) = metrics_thread {
        let _ = t.join();
    }
    if let Some(out) = &args.out {
        write_outputs(out, &mut dp, end, steal, &sched, pcap).map_err(|e| format!("--out {}: {e}", out.display()))?;
    }
    Ok(())
}

fn run_replay(args: &Args, cfg: &BoxConfig) -> Result<(), String> {
    let path = args.replay.as_deref().expect("replay mode");
    let data = std::fs::read(path).map_err(|e| format!("--replay {path}: {e}"))?;
    let inputs = read_inputs(&data, args.side_a).map_err(|e| format!("--replay {path}: {e}"))?;
    let slice_ns = args.slice_ms.map_or(cfg.slice_ns, |ms| (ms * 1e6).round() as u64);
    let mut replay = Replay::new(cfg, slice_ns)?;
    for input in &inputs {
        replay.feed(input);
    }
    let last_ns = inputs.last().map_or(0, |i| i.time_ns);
    let end = Instant(args.duration_s.map_or(last_ns, |s| (s * 1e9) as u64).max(last_ns));
    replay.finish(end);
    let out = args.out.as_deref().expect("required with --replay");
    write_replay(out, &mut replay, end, &inputs).map_err(|e| format!("--out {}: {e}", out.display()))
}

fn write_replay(out: &std::path::Path, r: &mut Replay, end: Instant, inputs: &[smallpipe_middlebox::replay::Input])
                -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let no_lateness = hdrhistogram::Histogram::new(3).expect("constant precision is valid");
    let snap = Snapshot::take(end, &mut r.links, &r.stats, &r.flows, &no_lateness, 0, &r.queue_states);
    std::fs::write(out.join("links.csv"), stats::links_csv(&snap.links, end.as_nanos()))?;
    std::fs::write(out.join("link_counters.csv"), stats::link_counters_csv(&snap.links))?;
    std::fs::write(out.join("queue_states.csv"), stats::queue_states_csv(&r.queue_states))?;
    std::fs::write(out.join("link_slices.csv"), stats::link_slices_csv(&r.link_slices))?;
    let flow = |k: &smallpipe_core::FlowKey| format!("{},{},{},{}", std::net::Ipv4Addr::from(k.src_ip), k.src_port,
                                                      std::net::Ipv4Addr::from(k.dst_ip), k.dst_port);
    let mut drops = String::from("time_ns,direction,src,src_port,dst,dst_port,seq,payload_len,reason\n");
    for d in &r.drops {
        drops += &format!("{},{},{},{},{},{}\n", d.time_ns, stats::DIRECTIONS[d.direction], flow(&d.pkt.flow), d.pkt.seq,
                          d.pkt.payload_len, d.reason.name());
    }
    std::fs::write(out.join("drops.csv"), drops)?;
    let mut tr = String::from("time_ns,direction,src,src_port,dst,dst_port,from,to,trigger,epoch_ns\n");
    for t in &r.transitions {
        tr += &format!("{},{},{},{},{},{},{}\n", t.time_ns, stats::DIRECTIONS[t.direction], flow(&t.flow),
                       t.from.map_or("untracked", |s| s.name()), t.to.name(), t.trigger.name(), t.epoch_ns);
    }
    std::fs::write(out.join("taq_transitions.csv"), tr)?;
    let summary = serde_json::json!({
        "duration_ns": end.as_nanos(),
        "inputs": {"a": inputs.iter().filter(|i| i.side == 0).count(), "b": inputs.iter().filter(|i| i.side == 1).count()},
        "not_scheduled": not_scheduled(&r.stats),
        "unscheduled_forwarded": per_side(&|i| r.stats.unscheduled[i].into()),
        "sent": per_side(&|i| r.stats.sent[i].into()),
        "transitions": r.transitions.len(),
    });
    std::fs::write(out.join("replay.json"), serde_json::to_string_pretty(&summary)? + "\n")
}

/// `{"a": f(0), "b": f(1)}`: a per-side value of `box.json` and `replay.json`.
fn per_side(f: &dyn Fn(usize) -> serde_json::Value) -> serde_json::Value {
    serde_json::Value::Object(SIDES.iter().enumerate().map(|(i, s)| (s.to_string(), f(i))).collect())
}

/// Frames dropped before the discipline, per side and cause.
fn not_scheduled(st: &stats::BoxStats) -> serde_json::Value {
    per_side(&|i| serde_json::Value::Object(DropCause::ALL.iter()
        .map(|c| (c.name().to_string(), st.parse_drops[i][*c as usize].into())).collect()))
}

fn write_outputs(out: &std::path::Path, dp: &mut DataPath, end: Instant, steal_ns: Option<u64>, sched: &str,
                 pcap: Option<(u64, u64)>) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let snap = dp.snapshot(end);
    std::fs::write(out.join("links.csv"), stats::links_csv(&snap.links, end.as_nanos()))?;
    std::fs::write(out.join("link_counters.csv"), stats::link_counters_csv(&snap.links))?;
    dp.finish_slice_log()?; // link_slices.csv and queue_states.csv, written slice by slice
    std::fs::write(out.join("lateness.csv"), stats::lateness_csv(&dp.lateness_ns))?;
    let st = &dp.stats;
    let summary = serde_json::json!({
        "duration_ns": end.as_nanos(),
        "clock_start_monotonic_ns": dp.clock_start_monotonic_ns(),
        "steal_ns": steal_ns,
        "steal_fraction": steal_ns.map(|s| s as f64 / end.as_nanos().max(1) as f64),
        "scheduling": sched,
        "kernel_rx": per_side(&|i| serde_json::json!({"packets": st.kernel[i].packets, "drops": st.kernel[i].drops})),
        "not_scheduled": not_scheduled(st),
        "unscheduled_forwarded": per_side(&|i| st.unscheduled[i].into()),
        "sent": per_side(&|i| st.sent[i].into()),
        "send_failed": per_side(&|i| st.send_failed[i].into()),
        "iface_down_events": per_side(&|i| dp.iface_down_events[i].into()),
        "lateness_ns": {"count": snap.lateness_count, "p50": snap.lateness_p50_ns, "p99": snap.lateness_p99_ns, "max": snap.lateness_max_ns},
        "flows_untracked_pkts": snap.untracked.delivered_pkts + snap.untracked.dropped_pkts,
        "flows_evicted": snap.flow_table.evicted_flows,
        "pcap": pcap.map(|(written, dropped)| serde_json::json!({"written": written, "dropped": dropped})),
    });
    std::fs::write(out.join("box.json"), serde_json::to_string_pretty(&summary)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args, String> {
        parse_args(s.split_whitespace().map(String::from))
    }

    #[test]
    fn required_flags_and_bad_values_are_named() {
        assert!(args("--iface-a x --config c").unwrap_err().contains("--iface-b is required"));
        assert!(args("--iface-a x --iface-b y --config c --duration-s -1").unwrap_err().contains("--duration-s"));
        assert!(args("--iface-a x --iface-b y --config c --bogus").unwrap_err().contains("--bogus"));
        let a = args("--iface-a x --iface-b y --config c --duration-s 2.5 --no-fifo --fix-offloads").unwrap();
        assert_eq!((a.duration_s, a.no_fifo, a.fix_offloads), (Some(2.5), true, true));
    }
}
