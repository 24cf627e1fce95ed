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
use smallpipe_core::DropReason;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
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
    let q_gauge = gauge_family(&mut reg, "queue", "Queue state now: backlog, in-flight packets, tracked flows, delay quantiles");
    let flow_pkts = counter_family(&mut reg, "flow_packets", "Per-flow packets by event (arrived, delivered, dropped)");
    let flow_bytes = counter_family(&mut reg, "flow_bytes", "Per-flow IP bytes by event (arrived, delivered)");
    let frames = counter_family(&mut reg, "frames", "Frames per side not scheduled (by cause), sent, refused by the kernel");
    let taq = gauge_family(&mut reg, "taq_flows", "TAQ flows by state at the end of the latest slice");
    let taq_q = gauge_family(&mut reg, "taq_queued_packets", "TAQ packets by queue at the end of the latest slice");
    let late = gauge_family(&mut reg, "departure_lateness_ns", "Lateness of departures behind their logical time");
    let misc = gauge_family(&mut reg, "runtime", "Run time (ns) and frame slots in use");

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
    for ((dir, k), c) in &s.flows {
        let labels = |event: &str| {
            vec![
                ("direction", DIRECTIONS[*dir as usize].to_string()),
                ("src", format!("{}:{}", Ipv4Addr::from(k.src_ip), k.src_port)),
                ("dst", format!("{}:{}", Ipv4Addr::from(k.dst_ip), k.dst_port)),
                ("proto", k.proto.to_string()),
                ("event", event.to_string()),
            ]
        };
        flow_pkts.get_or_create(&labels("arrived")).inc_by(c.arrived_pkts);
        flow_pkts.get_or_create(&labels("delivered")).inc_by(c.delivered_pkts);
        flow_pkts.get_or_create(&labels("dropped")).inc_by(c.dropped_pkts);
        flow_bytes.get_or_create(&labels("arrived")).inc_by(c.arrived_bytes);
        flow_bytes.get_or_create(&labels("delivered")).inc_by(c.delivered_bytes);
    }
    flow_pkts.get_or_create(&vec![("direction", "any".into()), ("event", "untracked_arrived".into())]).inc_by(s.untracked.arrived_pkts);
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
