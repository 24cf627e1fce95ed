//! Workloads: sessions, web users with connection pools, Poisson arrivals, and the
//! user-perceived hang, checked against their definitions.

use smallpipe_sim::results::FlowRow;
use smallpipe_sim::{simulate, Results, Scenario};

fn run(json: &str) -> Results {
    simulate(&Scenario::from_json(json).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

fn by_unit(r: &Results, unit: u32) -> Vec<&FlowRow> {
    let mut v: Vec<_> = r.flows.iter().filter(|f| f.unit_id == unit).collect();
    v.sort_by_key(|f| f.start_ns);
    v
}

#[test]
fn session_connections_run_back_to_back_with_the_think_time_between() {
    for think_s in [0.0, 2.0] {
        let r = run(&format!(
            r#"{{"duration_s":60,"link":{{"rate_bps":2000000}},"tcp":{{"delayed_ack":false}},
               "flows":[{{"app":"session","count":3,"size_bytes":14480,"think_s":{think_s},"rtt_ms":100}}]}}"#
        ));
        for u in 0..3 {
            let conns = by_unit(&r, u);
            assert!(conns.len() >= 5, "unit {u}: {} connections", conns.len());
            for pair in conns.windows(2) {
                let gap = pair[1].start_ns as i64 - pair[0].end_ns.expect("finished before the next") as i64;
                assert_eq!(gap, (think_s * 1e9) as i64, "next connection starts one think time after the last ends");
                assert_eq!(pair[0].bytes_delivered, 14480);
            }
        }
        assert_eq!(r.units[0].connections as usize, by_unit(&r, 0).len());
    }
}

#[test]
fn web_users_never_exceed_their_connection_pool_and_finish_pages() {
    let r = run(r#"{"duration_s":120,"link":{"rate_bps":1000000,"queue":{"kind":"droptail","limit_pkts":50}},
        "tcp":{"packet_size_bytes":500,"delayed_ack":false},
        "flows":[{"app":"web","count":20,"connections":4,"objects_per_page":10,
                  "size":{"dist":"pareto","mean":6000,"shape":1.5},"think_s":{"dist":"exponential","mean":5},
                  "rtt_ms":200,"start_s":[0,5]}]}"#);
    let mut reached_pool = 0;
    for u in 0..20 {
        let conns = by_unit(&r, u);
        // Concurrency from the (start, end) intervals: +1 at a start, -1 at an end.
        let mut edges: Vec<(u64, i32)> = conns.iter().map(|c| (c.start_ns, 1)).collect();
        edges.extend(conns.iter().filter_map(|c| c.end_ns.map(|e| (e, -1))));
        edges.sort_by_key(|&(t, d)| (t, d)); // an end at the same instant frees the slot first
        let (mut open, mut most) = (0, 0);
        for (_, d) in edges {
            open += d;
            most = most.max(open);
        }
        assert!(most <= 4, "unit {u} had {most} connections open at once");
        reached_pool += (most == 4) as u32;
        let pages = r.units[u as usize].pages_done as usize;
        assert!(conns.len() >= pages * 10 && conns.len() <= (pages + 1) * 10, "unit {u}: {} objects, {pages} pages", conns.len());
    }
    assert!(reached_pool > 0, "the pool limit was reached at least once");
    assert!(r.units.iter().map(|u| u.pages_done).sum::<u32>() > 20);
}

#[test]
fn poisson_arrivals_have_the_target_rate_and_exponential_gaps() {
    // load 0.5 of 10 Mbit/s with 12 500-byte flows: 50 arrivals/s over 4 host pairs.
    let r = run(r#"{"duration_s":200,"slice_s":10,"link":{"rate_bps":10000000},
        "flows":[{"app":"poisson","count":4,"size_bytes":12500,"load":0.5,"rtt_ms":20}]}"#);
    let n = r.flows.len() as f64;
    let expected = 50.0 * 200.0;
    // Poisson count: standard deviation sqrt(10 000) = 100; allow 4 of them.
    assert!((n - expected).abs() < 400.0, "{n} arrivals, expected {expected}");
    let mut starts: Vec<f64> = r.flows.iter().map(|f| f.start_ns as f64 * 1e-9).collect();
    starts.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    let cv = var.sqrt() / mean;
    assert!((cv - 1.0).abs() < 0.05, "coefficient of variation {cv}, exponential gaps have 1");
    // At half load the link carries about half its capacity in payload and headers.
    let util = r.links[0].utilization;
    assert!((0.45..0.6).contains(&util), "utilization {util}");
}

#[test]
fn a_lost_syn_is_a_hang_as_long_as_the_whole_one_packet_transfer() {
    let r = run(r#"{"duration_s":20,"link":{"rate_bps":10000000,"delay_ms":10,"drop_nth":[1]},
        "tcp":{"overhead_max_ms":0},"flows":[{"app":"transfer","size_bytes":1000,"rtt_ms":100}]}"#);
    let f = &r.flows[0];
    // The only delivery is the whole object, so the hang is the transfer time, > the 1 s RTO.
    assert_eq!(r.units[0].longest_hang_ns, f.end_ns.unwrap() - f.start_ns);
    assert!(r.units[0].longest_hang_ns > 1_000_000_000);
}

#[test]
fn slices_cover_each_flow_lifetime_and_sum_to_its_bytes() {
    let r = run(r#"{"duration_s":30,"slice_s":1,"link":{"rate_bps":1000000},
        "flows":[{"app":"session","count":2,"size_bytes":30000,"think_s":1.5,"rtt_ms":100}]}"#);
    for f in &r.flows {
        assert_eq!(f.slice_bytes.iter().sum::<u64>(), f.bytes_delivered);
        assert_eq!(f.first_slice as u64, f.start_ns / 1_000_000_000);
        if let Some(end) = f.end_ns {
            assert_eq!(f.first_slice as u64 + f.slice_bytes.len() as u64 - 1, end / 1_000_000_000);
        }
    }
}
