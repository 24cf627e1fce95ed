//! Prometheus text exposition of the latest [`Snapshot`], served by a tiny HTTP listener on
//! its own thread: the data path only swaps in a new snapshot now and then, and never
//! waits on a scrape.

use crate::parse::DropCause;
use crate::stats::{Snapshot, DIRECTIONS, SIDES};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use smallpipe_core::qdisc::taq::{TaqQueue, TaqState};
use smallpipe_core::{CounterKind, DropReason, MarkReason};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type Labels = Vec<(&'static str, String)>;

fn counter_family(reg: &mut Registry, name: &str, help: &str) -> Family<Labels, Counter> {
    let f = Family::<Labels, Counter>::default();
    reg.register(name, help, f.clone());
    f
}
fn gauge_family(reg: &mut Registry, name: &str, help: &str) -> Family<Labels, Gauge<f64, AtomicU64>> {
    let f = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    reg.register(name, help, f.clone());
    f
}

/// The snapshot as Prometheus text.
pub fn render(s: &Snapshot) -> String {
    let mut reg = Registry::with_prefix("smallpipe_box");
    let q_pkts = counter_family(&mut reg, "queue_packets", "Packets by queue event (arrived, departed) per direction");
    let q_bytes = counter_family(&mut reg, "queue_bytes", "IP bytes by queue event (arrived, departed) per direction");
    let q_drops = counter_family(&mut reg, "queue_dropped_packets", "Packets dropped by the discipline or the link, by reason");
    let q_marks = counter_family(&mut reg, "queue_marked_packets", "Packets the discipline marked CE instead of dropping, by reason");
    let qdisc_totals = counter_family(&mut reg, "qdisc", "The discipline's own counts since the start (tc -s names), by counter and class");
    let qdisc_levels = gauge_family(&mut reg, "qdisc_level", "The discipline's own values now (tc -s names), by counter and class");
    let q_gauge = gauge_family(&mut reg, "queue", "Queue state now: backlog, in-flight packets, tracked flows, delay quantiles");
    let flow_pkts = counter_family(&mut reg, "flow_packets", "Per-flow packets by event (arrived, delivered, dropped)");
    let flow_bytes = counter_family(&mut reg, "flow_bytes", "Per-flow IP bytes by event (arrived, delivered)");
    let frames = counter_family(&mut reg, "frames", "Frames per side not scheduled (by cause), sent, refused by the kernel");
    let taq = gauge_family(&mut reg, "taq_flows", "TAQ flows by state at the end of the latest slice");
    let taq_q = gauge_family(&mut reg, "taq_queued_packets", "TAQ packets by queue at the end of the latest slice");
    let late = gauge_family(&mut reg, "departure_lateness_ns", "Lateness of departures behind their logical time");
    let misc = gauge_family(&mut reg, "runtime", "Run time (ns) and frame slots in use");
    let host_pkts = counter_family(&mut reg, "host_packets", "Per client host (side A's address) packets by event and direction");
    let host_bytes = counter_family(&mut reg, "host_bytes", "Per client host (side A's address) IP bytes by event and direction");
    let table = gauge_family(&mut reg, "flow_table_entries", "Entries in the flow and host tables now, and their capacity");
    let evicted = counter_family(&mut reg, "flow_table_evicted", "Entries evicted from the flow and host tables (idle or least recently seen)");
    let window = gauge_family(&mut reg, "queue_delay_window_ms", "Queue delay quantiles of the departures of the last window_s seconds, ms");

    for l in &s.links {
        let d = || vec![("direction", l.direction.to_string())];
        let with = |k: &'static str, v: &str| {
            let mut x = d();
            x.push((k, v.to_string()));
            x
        };
        q_pkts.get_or_create(&with("event", "arrived")).inc_by(l.stats.arrived_pkts);
        q_pkts.get_or_create(&with("event", "departed")).inc_by(l.stats.departed_pkts);
        q_bytes.get_or_create(&with("event", "arrived")).inc_by(l.stats.arrived_bytes);
        q_bytes.get_or_create(&with("event", "departed")).inc_by(l.stats.departed_bytes);
        for r in DropReason::ALL {
            q_drops.get_or_create(&with("reason", r.name())).inc_by(l.stats.dropped(r));
        }
        for r in MarkReason::ALL {
            q_marks.get_or_create(&with("reason", r.name())).inc_by(l.stats.marked(r));
        }
        for c in &l.counters {
            let mut labels = with("counter", c.name);
            if let Some(class) = c.class {
                labels.push(("class", class.to_string()));
            }
            match c.kind {
                CounterKind::Total => {
                    qdisc_totals.get_or_create(&labels).inc_by(c.value);
                }
                CounterKind::Level => {
                    qdisc_levels.get_or_create(&labels).set(c.value as f64);
                }
            }
        }
        for (what, v) in [
            ("backlog_pkts", l.backlog_pkts as f64),
            ("backlog_bytes", l.backlog_bytes as f64),
            ("in_flight_pkts", l.in_flight_pkts as f64),
            ("flows_tracked", l.flows_tracked as f64),
            ("mean_queue_delay_ms", l.mean_queue_delay_ms),
            ("queue_delay_p99_ms", l.queue_delay_p99_ms),
        ] {
            q_gauge.get_or_create(&with("what", what)).set(v);
        }
    }
    for ((dir, k), e) in &s.flows {
        let d = *dir as usize;
        // The client is side A's address: the source going A to B, the destination back.
        let (src, dst) = if d == 0 { (s.labels.label(e.src), Some(e.dst.to_string())) } else { (Some(e.src.to_string()), s.labels.label(e.dst)) };
        let endpoint = |a: Option<String>, port: u16| match a {
            Some(a) if a.contains(':') => format!("[{a}]:{port}"),
            Some(a) => format!("{a}:{port}"),
            None => "omitted".to_string(),
        };
        let labels = |event: &str| {
            vec![
                ("direction", DIRECTIONS[d].to_string()),
                ("src", endpoint(src.clone(), k.src_port)),
                ("dst", endpoint(dst.clone(), k.dst_port)),
                ("proto", k.proto.to_string()),
                ("event", event.to_string()),
            ]
        };
        let c = &e.counters;
        flow_pkts.get_or_create(&labels("arrived")).inc_by(c.arrived_pkts);
        flow_pkts.get_or_create(&labels("delivered")).inc_by(c.delivered_pkts);
        flow_pkts.get_or_create(&labels("dropped")).inc_by(c.dropped_pkts);
        flow_bytes.get_or_create(&labels("arrived")).inc_by(c.arrived_bytes);
        flow_bytes.get_or_create(&labels("delivered")).inc_by(c.delivered_bytes);
    }
    for ((dir, addr), c) in &s.hosts {
        let Some(host) = s.labels.label(*addr) else { break };
        let labels = |event: &str| vec![("direction", DIRECTIONS[*dir as usize].to_string()), ("host", host.clone()), ("event", event.to_string())];
        host_pkts.get_or_create(&labels("arrived")).inc_by(c.arrived_pkts);
        host_pkts.get_or_create(&labels("delivered")).inc_by(c.delivered_pkts);
        host_pkts.get_or_create(&labels("dropped")).inc_by(c.dropped_pkts);
        host_bytes.get_or_create(&labels("arrived")).inc_by(c.arrived_bytes);
        host_bytes.get_or_create(&labels("delivered")).inc_by(c.delivered_bytes);
    }
    let t = &s.flow_table;
    for (k, v) in [("flows", t.flows), ("hosts", t.hosts), ("capacity", t.capacity)] {
        table.get_or_create(&vec![("table", k.into())]).set(v as f64);
    }
    evicted.get_or_create(&vec![("table", "flows".into())]).inc_by(t.evicted_flows);
    evicted.get_or_create(&vec![("table", "hosts".into())]).inc_by(t.evicted_hosts);
    for (d, qs) in s.delay_window_ms.iter().enumerate() {
        for (q, v) in ["0.5", "0.95", "0.99", "1"].iter().zip(qs) {
            window.get_or_create(&vec![("direction", DIRECTIONS[d].into()), ("quantile", q.to_string()), ("window_s", s.delay_window_s.to_string())])
                .set(*v);
        }
    }
    // Packets still queued when their flow was evicted.
    for (event, n) in [("untracked_delivered", s.untracked.delivered_pkts), ("untracked_dropped", s.untracked.dropped_pkts)] {
        flow_pkts.get_or_create(&vec![("direction", "any".into()), ("event", event.into())]).inc_by(n);
    }
    for (side, name) in SIDES.iter().enumerate() {
        let l = |what: &str| vec![("side", name.to_string()), ("what", what.to_string())];
        for c in DropCause::ALL {
            frames.get_or_create(&l(&format!("dropped_{}", c.name()))).inc_by(s.stats.parse_drops[side][c as usize]);
        }
        frames.get_or_create(&l("unscheduled")).inc_by(s.stats.unscheduled[side]);
        frames.get_or_create(&l("sent")).inc_by(s.stats.sent[side]);
        frames.get_or_create(&l("send_failed")).inc_by(s.stats.send_failed[side]);
    }
    for row in &s.taq_states {
        let dir = DIRECTIONS[row.direction];
        for st in TaqState::ALL {
            taq.get_or_create(&vec![("direction", dir.into()), ("state", st.name().into())]).set(row.flows_by_state[st as usize] as f64);
        }
        for q in TaqQueue::ALL {
            taq_q.get_or_create(&vec![("direction", dir.into()), ("queue", q.name().into())]).set(row.queue_pkts[q as usize] as f64);
        }
    }
    for (q, v) in [("count", s.lateness_count), ("p50", s.lateness_p50_ns), ("p99", s.lateness_p99_ns), ("max", s.lateness_max_ns)] {
        late.get_or_create(&vec![("stat", q.into())]).set(v as f64);
    }
    misc.get_or_create(&vec![("what", "time_ns".into())]).set(s.time_ns as f64);
    misc.get_or_create(&vec![("what", "slab_in_use".into())]).set(s.slab_in_use as f64);
    let mut out = String::new();
    encode(&mut out, &reg).expect("writing to a String cannot fail");
    out
}

/// Serve `GET` (any path) with the latest snapshot until `stop` is set. Runs on its own thread.
pub fn serve(listener: TcpListener, snapshot: Arc<Mutex<Arc<Snapshot>>>, stop: Arc<AtomicBool>) {
    listener.set_nonblocking(true).expect("a bound listener can be made non-blocking");
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut conn, _)) => {
                // A scraper that stalls must not hold the thread: short timeouts, one request.
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(std::time::Duration::from_millis(500)));
                let _ = conn.set_write_timeout(Some(std::time::Duration::from_millis(500)));
                let mut req = [0u8; 1024];
                let _ = conn.read(&mut req);
                let snap = snapshot.lock().expect("metrics lock").clone();
                let body = render(&snap);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes()).and_then(|_| conn.write_all(body.as_bytes()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BoxConfig, ClientAddresses, MetricsConfig};
    use crate::stats::{queue_state_row, FlowTable};
    use smallpipe_core::{FlowKey, Instant, Packet};
    use std::collections::BTreeSet;
    use std::net::Ipv6Addr;

    /// A snapshot with every family populated: TAQ both ways, `n` UDP flows from distinct
    /// IPv6 clients on side A, each delivered once.
    fn snapshot(n: u32, m: &MetricsConfig) -> Snapshot {
        let cfg = BoxConfig::parse(r#"{"seed": 1,
            "a_to_b": {"rate_bps": 10000000, "delay_ns": 10000000, "queue": {"kind": "taq"}},
            "b_to_a": {"rate_bps": 10000000, "delay_ns": 10000000, "queue": {"kind": "taq"}}}"#, "t").unwrap();
        let mut links = cfg.build_links().unwrap();
        let mut t = FlowTable::with_config(m);
        for i in 0..n {
            let src = Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0xffff, 0xffff, 0xffff, (i >> 16) as u16, i as u16);
            let dst = Ipv6Addr::new(0x2001, 0xdb8, 1, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff);
            let b = etherparse::PacketBuilder::ethernet2([2; 6], [4; 6]).ipv6(src.octets(), dst.octets(), 64).udp(40000 + (i % 20000) as u16, 443);
            let mut frame = Vec::new();
            b.write(&mut frame, &[0; 100]).unwrap();
            let p = match crate::parse::parse_frame(&frame) {
                crate::parse::Verdict::Scheduled(p) => p,
                v => panic!("{v:?}"),
            };
            let now = u64::from(i) * 1_000;
            t.arrived(0, &p, &frame, now);
            t.departed(0, &Packet { arrival: Instant(now), ..p }, Instant(now + 2_000_000));
            t.delivered(0, &p, now + 12_000_000);
        }
        t.arrived(1, &Packet { flow: FlowKey { src_ip: 1, dst_ip: 2, ..Default::default() }, ..Default::default() }, &[], 0);
        let at = Instant(1_000_000_000);
        let rows: Vec<_> = (0..2).filter_map(|d| queue_state_row(d, &links[d], at, 1_000_000_000)).collect();
        let lateness = hdrhistogram::Histogram::new(3).unwrap();
        Snapshot::take(Instant(u64::from(n) * 1_000), &mut links, &Default::default(), &t, &lateness, 0, &rows)
    }

    fn lines_of<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines().filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{')).collect()
    }

    #[test]
    fn a_scrape_of_10000_flows_is_bounded_by_the_table_capacity() {
        let m = MetricsConfig::default();
        let snap = snapshot(10_000, &m);
        let text = render(&snap);
        let cap = m.flow_table_capacity as u64;
        // A full table evicts an eighth at once, so it holds between 7/8 of the capacity and
        // the capacity; one more flow and host go B to A.
        let (flows, hosts) = (snap.flow_table.flows, snap.flow_table.hosts);
        assert!((cap * 7 / 8..=cap + 1).contains(&flows) && (cap * 7 / 8..=cap + 1).contains(&hosts), "{flows} {hosts}");
        assert_eq!(snap.flow_table.evicted_flows + flows, 10_001);
        // Every tracked flow and host has 3 packet and 2 byte series (+2: the untracked ones).
        let n = |name| lines_of(&text, name).len() as u64;
        assert_eq!(n("smallpipe_box_flow_packets_total"), 3 * flows + 2);
        assert_eq!(n("smallpipe_box_flow_bytes_total"), 2 * flows);
        assert_eq!(n("smallpipe_box_host_packets_total"), 3 * hosts);
        assert_eq!(n("smallpipe_box_host_bytes_total"), 2 * hosts);
        // The newest flow is tracked (the oldest went), under its real IPv6 address.
        assert!(text.contains("src=\"[2001:db8:ffff:ffff:ffff:ffff:0:270f]:49999\""), "newest flow missing");
        assert!(!text.contains("src=\"[2001:db8:ffff:ffff:ffff:ffff:0:0]:40000\""), "oldest flow kept");
        let longest = text.lines().map(str::len).max().unwrap();
        assert!(longest <= 200, "longest line {longest} bytes");
        let lines = text.lines().count();
        eprintln!("scrape of 10000 flows: {} bytes, {lines} lines, longest {longest} B", text.len());
        // The bound the docs state: lines × longest.
        assert!(lines as u64 <= 10 * (cap + 1) + 200, "{lines} lines, {} bytes", text.len());
    }

    #[test]
    fn client_addresses_can_be_hashed_or_omitted() {
        let show = render(&snapshot(3, &MetricsConfig::default()));
        assert!(show.contains("host=\"2001:db8:ffff:ffff:ffff:ffff:0:1\""));
        let hash = render(&snapshot(3, &MetricsConfig { client_addresses: ClientAddresses::Hash, ..MetricsConfig::default() }));
        assert!(!hash.contains("2001:db8:ffff"), "a client address leaked");
        assert_eq!(lines_of(&hash, "smallpipe_box_host_packets_total").len(), 3 * 4, "3 hashed hosts + 1 back");
        // The server side stays readable.
        assert!(hash.contains("dst=\"[2001:db8:1:ffff:ffff:ffff:ffff:ffff]:443\""));
        let omit = render(&snapshot(3, &MetricsConfig { client_addresses: ClientAddresses::Omit, ..MetricsConfig::default() }));
        assert!(!omit.contains("2001:db8:ffff") && omit.contains("src=\"omitted\""));
        assert!(lines_of(&omit, "smallpipe_box_host_packets_total").is_empty());
    }

    #[test]
    fn the_delay_window_reports_the_recorded_delay() {
        // Every packet waited 2 ms (departed 2 ms after its arrival): all quantiles 2 ms ± 1 %.
        let text = render(&snapshot(100, &MetricsConfig::default()));
        let l = lines_of(&text, "smallpipe_box_queue_delay_window_ms");
        let a_to_b: Vec<f64> = l.iter().filter(|l| l.contains("a_to_b")).map(|l| l.rsplit(' ').next().unwrap().parse().unwrap()).collect();
        assert_eq!(a_to_b.len(), 4);
        assert!(a_to_b.iter().all(|v| (v - 2.0).abs() <= 0.02), "{a_to_b:?}");
    }

    /// The value of the one line of `text` that starts with `series` (name and labels).
    fn value_of(text: &str, series: &str) -> f64 {
        let hits: Vec<&str> = text.lines().filter(|l| l.starts_with(series) && l[series.len()..].starts_with(' ')).collect();
        assert_eq!(hits.len(), 1, "{series}: {hits:?}");
        hits[0].rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn the_disciplines_own_counters_and_ecn_marks_are_exported() {
        let cfg = BoxConfig::parse(r#"{"seed": 1,
            "a_to_b": {"rate_bps": 10000000, "delay_ns": 10000000, "queue": {"kind": "fq_codel"}},
            "b_to_a": {"rate_bps": 10000000, "delay_ns": 10000000, "queue": {"kind": "taq"}}}"#, "t").unwrap();
        let mut links = cfg.build_links().unwrap();
        // One ECN-capable flow, two 1000-byte arrivals and one departure per ms for 250 ms:
        // the sojourn of the packet sent at t ms is about t/2 ms, above CoDel's 5 ms target
        // from t = 9 ms, so CoDel (interval 100 ms) first acts at 109 ms and next at 209 ms
        // (interval/√1 after it leaves its dropping state, as RFC 8289): two CE marks. The
        // queue never empties, so its flow became active once; 250 packets are left.
        let ms = 1_000_000;
        let q = &mut links[0].queue;
        for t in 0..250u64 {
            for _ in 0..2 {
                let flow = FlowKey { src_ip: 1, dst_ip: 2, src_port: 3, dst_port: 4, proto: 6 };
                q.enqueue(Packet { flow, ip_len_bytes: 1000, ecn: smallpipe_core::packet::Ecn::Ect, ..Default::default() }, Instant(t * ms));
            }
            q.dequeue(Instant(t * ms));
        }
        let t = FlowTable::with_config(&MetricsConfig::default());
        let lateness = hdrhistogram::Histogram::new(3).unwrap();
        let snap = Snapshot::take(Instant(250 * ms), &mut links, &Default::default(), &t, &lateness, 0, &[]);
        let text = render(&snap);
        let a = |name: &str, counter: &str| format!("smallpipe_box_{name}{{direction=\"a_to_b\",counter=\"{counter}\"}}");
        assert_eq!(value_of(&text, "smallpipe_box_queue_marked_packets_total{direction=\"a_to_b\",reason=\"early\"}"), 2.0);
        assert_eq!(value_of(&text, "smallpipe_box_queue_marked_packets_total{direction=\"b_to_a\",reason=\"early\"}"), 0.0);
        assert_eq!(value_of(&text, &a("qdisc_total", "ecn_mark")), 2.0);
        assert_eq!(value_of(&text, &a("qdisc_total", "new_flow_count")), 1.0);
        assert_eq!(value_of(&text, &a("qdisc_total", "drop_overlimit")), 0.0);
        assert_eq!(value_of(&text, &a("qdisc_level", "maxpacket")), 1000.0);
        assert_eq!(value_of(&text, &a("qdisc_level", "memory_used")), 250_000.0);
        assert_eq!(value_of(&text, &a("qdisc_level", "new_flows_len")) + value_of(&text, &a("qdisc_level", "old_flows_len")), 1.0);
        // Totals are Prometheus counters, levels gauges: FQ-CoDel's 4 and 4.
        let series = |name: &str, dir: &str| text.lines().filter(|l| l.starts_with(name) && l.contains(&format!("direction=\"{dir}\""))).count();
        assert_eq!((series("smallpipe_box_qdisc_total{", "a_to_b"), series("smallpipe_box_qdisc_level{", "a_to_b")), (4, 4));
        assert!(text.contains("# TYPE smallpipe_box_qdisc counter") && text.contains("# TYPE smallpipe_box_qdisc_level gauge"));
        // A class-wise counter carries its class: TAQ's queues (8 queues × 3 totals + 4
        // predictions + 8 totals; 8 queue levels + 4 levels), all zero with nothing sent.
        assert_eq!(value_of(&text, "smallpipe_box_qdisc_level{direction=\"b_to_a\",counter=\"queued\",class=\"new_flow\"}"), 0.0);
        assert_eq!((series("smallpipe_box_qdisc_total{", "b_to_a"), series("smallpipe_box_qdisc_level{", "b_to_a")), (8 * 3 + 4 + 8, 8 + 4));
    }

    #[test]
    fn the_grafana_dashboard_queries_only_metrics_the_box_exports() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/grafana/smallpipe-box.json");
        let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let exported: BTreeSet<String> = render(&snapshot(2, &MetricsConfig::default())).lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
            .collect();
        let mut exprs = vec![];
        fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| match v {
                    serde_json::Value::String(s) if k == "expr" || k == "query" || k == "definition" => out.push(s.clone()),
                    _ => walk(v, out),
                }),
                serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        walk(&dash, &mut exprs);
        assert!(exprs.len() >= 10, "{} queries", exprs.len());
        let mut used = BTreeSet::new();
        for e in &exprs {
            for (i, _) in e.match_indices("smallpipe_box_") {
                let name: String = e[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                assert!(exported.contains(&name), "the dashboard queries {name}, which the box does not export ({e})");
                used.insert(name);
            }
        }
        assert!(used.len() >= 10, "{used:?}");
    }
}
