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
fn one_poisson_arrival_in_marker_every_is_a_marker_and_the_load_counts_them() {
    // Base flows 10 000 bytes, one in 10 a marker of 50 000 or 150 000 bytes (mean 100 000):
    // mean size 0.9 x 10 000 + 0.1 x 100 000 = 19 000 bytes, so load 0.5 of 10 Mbit/s is
    // 625 000 / 19 000 = 32.9 arrivals/s.
    let r = run(r#"{"duration_s":300,"slice_s":10,"link":{"rate_bps":10000000},
        "flows":[{"app":"poisson","count":4,"size_bytes":10000,"load":0.5,"rtt_ms":20,
                  "marker_every":10,"marker_size":{"dist":"empirical","values":[50000,150000]}}]}"#);
    let n = r.flows.len() as f64;
    let expected = 0.5 * 10e6 / 8.0 / 19_000.0 * 300.0;
    assert!((n - expected).abs() < 4.0 * expected.sqrt(), "{n} arrivals, expected {expected:.0}");
    let sizes: Vec<u64> = r.flows.iter().map(|f| f.size_bytes.unwrap()).collect();
    assert!(sizes.iter().all(|s| [10_000, 50_000, 150_000].contains(s)), "only base and marker sizes");
    let markers = sizes.iter().filter(|&&s| s != 10_000).count() as f64;
    // Binomial(n, 0.1): standard deviation sqrt(n 0.1 0.9); allow 4.
    let sd = (n * 0.1 * 0.9).sqrt();
    assert!((markers - 0.1 * n).abs() < 4.0 * sd, "{markers} markers among {n} arrivals");
    let large = sizes.iter().filter(|&&s| s == 150_000).count() as f64;
    assert!((large / markers - 0.5).abs() < 4.0 * (0.25 / markers).sqrt(), "marker sizes drawn uniformly");
}

#[test]
fn markers_need_a_poisson_group_and_both_fields() {
    let err = |app: &str, extra: &str| {
        let load = if app == "poisson" { r#","load":0.1"# } else { "" };
        let json = format!(r#"{{"flows":[{{"app":"{app}","size_bytes":1000,"rtt_ms":20{load},{extra}}}]}}"#);
        Scenario::from_json(&json).unwrap_err()
    };
    assert_eq!(err("poisson", r#""marker_every":10"#).field, "flows[0].marker_size");
    assert_eq!(err("transfer", r#""marker_every":10,"marker_size":5000"#).field, "flows[0].marker_every");
    assert_eq!(err("poisson", r#""marker_every":0,"marker_size":5000"#).field, "flows[0].marker_every");
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

fn write_log(name: &str, text: &str) -> String {
    let path = std::env::temp_dir().join(format!("smallpipe-{}-{name}.log", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

const LOG: &str = "\
100.000 5 10.0.0.1 TCP_MISS/200 3000 GET http://x/1 - DIRECT/- text/html
100.000 5 10.0.0.1 TCP_MISS/200 3000 GET http://x/2 - DIRECT/- text/html
100.000 5 10.0.0.1 TCP_MISS/200 3000 GET http://x/3 - DIRECT/- text/html
102.500 5 10.0.0.2 TCP_MISS/200 8000 GET http://x/4 - DIRECT/- text/html
107.000 5 10.0.0.1 TCP_MISS/200 500 GET http://x/5 - DIRECT/- text/html
";

#[test]
fn replay_at_logged_times_opens_one_connection_per_request() {
    let path = write_log("logged", LOG);
    let r = run(&format!(
        r#"{{"duration_s":30,"link":{{"rate_bps":10000000}},"flows":[{{"app":"replay","log_path":"{path}","replay":"logged","rtt_ms":50}}]}}"#
    ));
    assert_eq!(r.units.len(), 2, "one unit per client");
    let mut starts: Vec<(u32, u64, Option<u64>)> = r.flows.iter().map(|f| (f.unit_id, f.start_ns, f.size_bytes)).collect();
    starts.sort();
    assert_eq!(starts, vec![
        (0, 0, Some(3000)), (0, 0, Some(3000)), (0, 0, Some(3000)), (0, 7_000_000_000, Some(500)),
        (1, 2_500_000_000, Some(8000)),
    ]);
    assert!(r.flows.iter().all(|f| f.end_ns.is_some() && Some(f.bytes_delivered) == f.size_bytes));
    assert!(r.flows.iter().all(|f| f.requested_ns == Some(f.start_ns)), "opened at its logged time");
}

#[test]
fn replay_as_fast_as_possible_respects_the_pool() {
    let path = write_log("asap", LOG);
    let r = run(&format!(
        r#"{{"duration_s":30,"link":{{"rate_bps":10000000}},"flows":[{{"app":"replay","log_path":"{path}","replay":"asap","connections":2,"rtt_ms":50}}]}}"#
    ));
    let client0 = by_unit(&r, 0);
    assert_eq!(client0.len(), 4);
    // Two at once; the third starts when the first finishes; the fourth (logged 7 s later)
    // does not wait for its logged time.
    assert_eq!((client0[0].start_ns, client0[1].start_ns), (0, 0));
    let first_end = client0[0].end_ns.unwrap().min(client0[1].end_ns.unwrap());
    assert_eq!(client0[2].start_ns, first_end);
    assert!(client0[3].start_ns < 7_000_000_000);
    // When the client wanted each: the logged times less the log's first (100.000 s). The
    // third waited in the client for a connection; the fourth was fetched ahead of its time.
    let wanted: Vec<Option<u64>> = client0.iter().map(|f| f.requested_ns).collect();
    assert_eq!(wanted, vec![Some(0), Some(0), Some(0), Some(7_000_000_000)]);
    assert!(client0[2].start_ns > client0[2].requested_ns.unwrap());
}

#[test]
fn malformed_log_lines_are_rejected_with_their_number_or_skipped() {
    let path = write_log("bad", &format!("{LOG}108.0 5 10.0.0.1 TCP_MISS/200 many GET http://x/6 - DIRECT/- -\n"));
    let json = |skip: bool| format!(
        r#"{{"duration_s":30,"flows":[{{"app":"replay","log_path":"{path}","skip_malformed":{skip},"rtt_ms":50}}]}}"#
    );
    let e = simulate(&Scenario::from_json(&json(false)).unwrap()).unwrap_err();
    assert_eq!(e.field, "flows[0].log_path");
    assert!(e.value.starts_with(&format!("{path}: line 6: bytes \"many\"")), "{e}");
    let r = simulate(&Scenario::from_json(&json(true)).unwrap()).unwrap();
    assert_eq!(r.skipped_log_lines, 1);
    assert_eq!(r.flows.len(), 5);
}

#[test]
fn progress_of_a_measuring_flow_is_one_time_per_packet_and_increasing() {
    let r = run(r#"{"duration_s":30,"link":{"rate_bps":10000000,"delay_ms":10},"tcp":{"initial_window_pkts":1,"delayed_ack":false,"overhead_max_ms":0},
        "flows":[{"app":"transfer","size_bytes":10500,"rtt_ms":100,"record_progress":true}]}"#);
    let p = &r.progress;
    // 10 500 bytes in 1448-byte segments: 7 whole packets and a partial eighth.
    assert_eq!(p.len(), 8);
    assert!(p.windows(2).all(|w| w[0].fct_ns <= w[1].fct_ns));
    assert_eq!(p.last().unwrap().fct_ns, r.flows[0].end_ns.unwrap() - r.flows[0].start_ns);
    // IW 1: packet 1 arrives in the first data round, packets 2-3 in the second (one RTT later).
    let round = |k: usize| ((p[k - 1].fct_ns as f64 * 1e-9 - 0.15) / 0.1).round() as i64;
    assert_eq!((round(1), round(2), round(3), round(4)), (0, 1, 1, 2));
}

#[test]
fn queue_delays_are_bounded_by_the_buffer_and_count_every_departure() {
    // Eight bulk flows fill a 20-packet DropTail buffer at 1 Mbit/s: no packet can wait
    // longer than 20 full-size packet times (20 x 12 ms) behind the others.
    let r = run(r#"{"duration_s":60,"link":{"rate_bps":1000000,"queue":{"kind":"droptail","limit_pkts":20}},
        "flows":[{"app":"bulk","count":8,"rtt_ms":100}]}"#);
    let l = &r.links[0];
    let departed: u64 = l.queue_delay_hist.iter().map(|&(_, n)| n).sum();
    // Every packet that left the queue, including the one on the wire when the run ended.
    assert!(departed == l.tx_pkts || departed == l.tx_pkts + 1, "{departed} departures, {} sent", l.tx_pkts);
    let packet_ms = 1500.0 * 8.0 / 1e6 * 1e3;
    assert!(l.queue_delay_max_ms <= 20.0 * packet_ms * 1.01, "max delay {} ms", l.queue_delay_max_ms);
    // A full buffer most of the time: the median is within the last few packets of it.
    assert!(l.queue_delay_p50_ms > 15.0 * packet_ms, "median delay {} ms", l.queue_delay_p50_ms);
    assert!(l.queue_delay_p50_ms <= l.queue_delay_p99_ms && l.queue_delay_p99_ms <= l.queue_delay_max_ms);
}
