//! UDP sources (ns-2's `Application/Traffic/*`) in the simulator: their rates through the
//! network against closed forms, the accounting invariant, and TAQ's treatment of them.

use proptest::prelude::*;
use smallpipe_sim::results::UdpFlowRow;
use smallpipe_sim::{simulate, Results, Scenario};

fn run(json: &str) -> Results {
    simulate(&Scenario::from_json(json).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

fn delivered_bps(f: &UdpFlowRow, duration_s: f64) -> f64 {
    f.bytes_delivered as f64 * 8.0 / duration_s
}

/// A CBR source below the link's rate loses nothing and delivers its rate: 500 B every
/// 20 ms (200 kbit/s) for 60 s over 1 Mbit/s sends 3000 datagrams (the first at 0 s, the
/// last at 59.98 s); all but those on the way at the end (at most one 100 ms RTT's worth,
/// 5, and the bottleneck's queue of at most 1) arrive.
#[test]
fn cbr_delivers_its_rate_on_a_link_that_is_not_full() {
    let r = run(r#"{"duration_s":60,"link":{"rate_bps":1000000},
        "flows":[{"app":"udp_cbr","packet_size_bytes":500,"rate_bps":200000,"rtt_ms":100}]}"#);
    let f = &r.udp_flows[0];
    assert_eq!(f.packets_sent, 3000);
    assert_eq!(f.packets_dropped, 0);
    assert!(f.packets_in_flight <= 6, "{f:?}");
    assert!((delivered_bps(f, 60.0) / 200_000.0 - 1.0).abs() < 0.01, "{f:?}");
    // The link counts them as any packet: 3000 offered to the bottleneck, none dropped.
    let b = &r.links[0];
    // All but the last two or three, still on the sender's 49 ms access link (plus its
    // processing jitter of at most one 12 ms transmission) at the end: 59.96 s, 59.98 s and
    // perhaps 59.94 s.
    assert!((2997..=2998).contains(&b.arrived_pkts) && b.dropped_pkts == 0, "{b:?}");
    assert!(r.flows.is_empty(), "no TCP connection");
}

/// An exponential on/off source's mean rate is rate·on/(on+off): four sources of
/// 500 kbit/s while on, on 0.5 s and off 0.5 s, 1000 B packets, 600 s on a 10 Mbit/s link:
/// 250 kbit/s each. About 2400 on/off cycles in all; the sample on-fraction then has a
/// standard deviation of sqrt(0.125/2400) = 0.0072 (exponential periods), 1.4% of 0.5:
/// the delivered mean is checked within 5%.
#[test]
fn exponential_on_off_mean_rate_is_rate_times_on_over_on_plus_off() {
    let r = run(r#"{"duration_s":600,"slice_s":60,"link":{"rate_bps":10000000},
        "flows":[{"app":"udp_expoo","count":4,"packet_size_bytes":1000,"rate_bps":500000,"burst_time_s":0.5,"idle_time_s":0.5}]}"#);
    assert_eq!(r.udp_flows.len(), 4);
    let total: f64 = r.udp_flows.iter().map(|f| delivered_bps(f, 600.0)).sum();
    assert!((total / 4.0 / 250_000.0 - 1.0).abs() < 0.05, "{} bit/s per source", total / 4.0);
    assert!(r.udp_flows.iter().all(|f| f.packets_dropped == 0));
    // The sources draw on their own streams: no two send the same number of packets.
    let mut sent: Vec<u64> = r.udp_flows.iter().map(|f| f.packets_sent).collect();
    sent.dedup();
    assert_eq!(sent.len(), 4, "{sent:?}");
}

/// The datagrams a full link drops are the ones the bottleneck's queue counts: 3 Mbit/s of
/// CBR into 1 Mbit/s drops about two thirds, and the flows' drops add up to the link's.
#[test]
fn an_overloaded_link_drops_the_datagrams_the_flows_count() {
    let r = run(r#"{"duration_s":20,"link":{"rate_bps":1000000,"queue":{"kind":"droptail","limit_pkts":20}},
        "flows":[{"app":"udp_cbr","count":3,"packet_size_bytes":1000,"rate_bps":1000000}]}"#);
    let dropped: u64 = r.udp_flows.iter().map(|f| f.packets_dropped).sum();
    let sent: u64 = r.udp_flows.iter().map(|f| f.packets_sent).sum();
    assert_eq!(dropped, r.links[0].dropped_pkts);
    assert!((dropped as f64 / sent as f64 - 2.0 / 3.0).abs() < 0.02, "{dropped} of {sent}");
}

/// Identical seeds give identical runs; another seed moves the on/off sources.
#[test]
fn udp_runs_are_deterministic_per_seed() {
    let json = |seed: u64| format!(r#"{{"seed":{seed},"duration_s":30,"link":{{"rate_bps":1000000,"queue":{{"kind":"taq"}}}},
        "flows":[{{"app":"udp_pareto","count":2,"rate_bps":400000}},{{"app":"bulk","count":2}}]}}"#);
    let a = run(&json(1));
    assert_eq!(a.udp_flows, run(&json(1)).udp_flows);
    assert_eq!(a.flows, run(&json(1)).flows);
    assert_ne!(a.udp_flows, run(&json(2)).udp_flows);
}

#[test]
fn bad_udp_fields_are_named() {
    let err = |json: &str| Scenario::from_json(json).and_then(|s| s.validate().map(|_| s)).unwrap_err().to_string();
    let e = err(r#"{"flows":[{"app":"udp_cbr","burst_time_s":1}]}"#);
    assert!(e.contains("burst_time_s") && e.contains("on/off"), "{e}");
    let e = err(r#"{"flows":[{"app":"bulk","rate_bps":1000}]}"#);
    assert!(e.contains("rate_bps") && e.contains("udp_cbr"), "{e}");
    let e = err(r#"{"flows":[{"app":"udp_pareto","shape":0.9}]}"#);
    assert!(e.contains("shape") && e.contains("> 1"), "{e}");
    let e = err(r#"{"flows":[{"app":"udp_expoo","size_bytes":1000}]}"#);
    assert!(e.contains("size"), "{e}");
}

/// A scenario without UDP keeps its canonical form: none of the new keys appear.
#[test]
fn scenarios_without_udp_keep_their_canonical_form() {
    let sc = Scenario::from_json(r#"{"flows":[{"app":"bulk","count":2}]}"#).unwrap();
    let flows = serde_json::to_value(&sc.flows).unwrap();
    let group = flows[0].as_object().unwrap();
    for key in ["packet_size_bytes", "rate_bps", "interval_s", "burst_time_s", "idle_time_s", "shape"] {
        assert!(!group.contains_key(key), "{key}");
    }
}

/// TAQ sees a datagram as a box does (no sequence space) and drops it only from the
/// longest backlog (docs/taq.md): CBR, exponential and Pareto on/off flows each within
/// their fair share even while on (32 and 64 kbit/s against 1 Mbit/s over 11 flows, 91
/// kbit/s), beside eight bulk TCP flows on a 1 Mbit/s TAQ bottleneck of 50
/// packets, lose no larger a fraction of their datagrams than TCP loses of its segments.
/// TCP's drops at the forward bottleneck are the link's less the datagrams'.
#[test]
fn udp_flows_lose_no_more_than_tcp_through_taq() {
    let r = run(r#"{"duration_s":120,"slice_s":10,"link":{"rate_bps":1000000,"queue":{"kind":"taq","limit_pkts":50}},
        "flows":[{"app":"bulk","count":8,"rtt_ms":[60,200]},
                 {"app":"udp_cbr","packet_size_bytes":200,"rate_bps":32000,"rtt_ms":100},
                 {"app":"udp_expoo","packet_size_bytes":210,"rate_bps":64000,"burst_time_s":0.5,"idle_time_s":0.5,"rtt_ms":100},
                 {"app":"udp_pareto","packet_size_bytes":210,"rate_bps":64000,"burst_time_s":0.5,"idle_time_s":0.5,"rtt_ms":100}]}"#);
    let link = &r.links[0];
    let udp_dropped: u64 = r.udp_flows.iter().map(|f| f.packets_dropped).sum();
    let tcp_sent: u64 = r.flows.iter().map(|f| f.segments_sent).sum();
    let tcp_loss = (link.dropped_pkts - udp_dropped) as f64 / tcp_sent as f64;
    assert!(tcp_loss > 0.005, "the bottleneck is congested: TCP lost {tcp_loss}");
    for f in &r.udp_flows {
        let loss = f.packets_dropped as f64 / f.packets_sent as f64;
        println!("{}: {} of {} datagrams lost ({loss:.4}); TCP {tcp_loss:.4}", f.app.name(), f.packets_dropped, f.packets_sent);
        assert!(loss <= tcp_loss, "{}: {loss} > TCP's {tcp_loss}", f.app.name());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    /// Whatever the sources, discipline and load: no datagram is counted delivered or
    /// dropped twice (the row's in-flight count, sent less both, never underflows, which
    /// would panic), the flows' drops are the bottleneck's (only UDP crosses it; access
    /// links of 100 Mbit/s do not drop), and what is in flight fits in the bottleneck's
    /// buffer plus the datagrams on the way (sent in the last RTT plus jitter, at most
    /// one per interval of each source: 1 + 0.2 s / interval).
    #[test]
    fn sent_is_delivered_plus_dropped_plus_in_flight(kind in 0usize..3, queue in 0usize..3, count in 1u32..4,
                                                     rate_kbps in 50u64..1500, size in 100u32..1500, seed in 0u64..1000) {
        let app = ["udp_cbr", "udp_expoo", "udp_pareto"][kind];
        let q = [r#"{"kind":"droptail","limit_pkts":20}"#, r#"{"kind":"taq","limit_pkts":20}"#, r#"{"kind":"fq_codel","limit_pkts":20}"#][queue];
        let r = run(&format!(r#"{{"seed":{seed},"duration_s":10,"link":{{"rate_bps":1000000,"queue":{q}}},
            "flows":[{{"app":"{app}","count":{count},"packet_size_bytes":{size},"rate_bps":{}, "rtt_ms":100}}]}}"#, rate_kbps * 1000));
        let dropped: u64 = r.udp_flows.iter().map(|f| f.packets_dropped).sum();
        prop_assert_eq!(dropped, r.links[0].dropped_pkts);
        let interval_s = size as f64 * 8.0 / (rate_kbps as f64 * 1000.0);
        let in_flight: u64 = r.udp_flows.iter().map(|f| f.packets_in_flight).sum();
        let bound = 20 + count as u64 * (1 + (0.2 / interval_s).ceil() as u64);
        prop_assert!(in_flight <= bound, "{} in flight > {}", in_flight, bound);
        for f in &r.udp_flows {
            prop_assert_eq!(f.bytes_sent, f.packets_sent * size as u64);
            prop_assert_eq!(f.bytes_delivered + f.bytes_dropped, (f.packets_delivered + f.packets_dropped) * size as u64);
        }
    }
}

/// A datagram's one-way delay on an idle path is its propagation plus its transmission plus
/// the sender's processing jitter: 500 B every 20 ms over 1 Mbit/s and a 100 ms RTT (50 ms
/// each way) take 50 ms, 4 ms at the bottleneck and 0.04 ms on each 100 Mbit/s access link,
/// 54.08 ms, plus a jitter uniform up to one bottleneck transmission of a 1500 B packet
/// (12 ms, docs/scenario.md): a mean of 60.08 ms (over 500 datagrams its standard error is
/// 0.15 ms) and at most 66.08 ms. No datagram waits for another (each leaves the bottleneck
/// at least 4 ms before the next arrives).
#[test]
fn a_datagrams_delay_on_an_idle_path_is_propagation_plus_transmission() {
    let r = run(r#"{"duration_s":10,"link":{"rate_bps":1000000},
        "flows":[{"app":"udp_cbr","packet_size_bytes":500,"rate_bps":200000,"rtt_ms":100}]}"#);
    let f = &r.udp_flows[0];
    let mean_ms = f.delay_sum_ns as f64 / f.packets_delivered as f64 / 1e6;
    let max_ms = f.delay_max_ns as f64 / 1e6;
    assert!((59.5..60.6).contains(&mean_ms) && max_ms <= 66.1, "mean {mean_ms} ms, max {max_ms} ms");
}

/// A fetch loop (each 100 KB on a new connection, all in slow start) and a bulk flow keep
/// TAQ's levels 1 and 2 busy, and level 2 serves by arrival. With `sparse_share` a ping goes
/// after Recovery and ahead of level 2, so its one-way delay is at most the path's 10 ms,
/// its own 84 B (0.34 ms), the sender's jitter (up to one 1500 B transmission, 6 ms at
/// 2 Mbit/s), the packet on the wire (6 ms), what Recovery may send ahead of it (its credit,
/// at most 3000 B, less half of each packet it sends: four 1500 B packets, 24 ms) and the
/// other ping (0.34 ms): 46.7 ms. Without it they wait longer on average.
#[test]
fn with_sparse_share_pings_overtake_a_fetch_loops_backlog_in_taq() {
    let run_with = |sparse_share: f64| {
        let r = run(&format!(r#"{{"duration_s":60,"seed":1,"tcp":{{"stack":"linux"}},
            "link":{{"rate_bps":2000000,"delay_ms":10,"queue":{{"kind":"taq","protect_pure_acks":true,"sparse_share":{sparse_share}}}}},
            "flows":[{{"app":"bulk","count":1,"rtt_ms":20}},
                     {{"app":"session","count":1,"size_bytes":100000,"think_s":0,"rtt_ms":20}},
                     {{"app":"udp_cbr","count":2,"packet_size_bytes":84,"rate_bps":3360,"rtt_ms":20}}]}}"#));
        let worst_ms = r.udp_flows.iter().map(|f| f.delay_max_ns).max().unwrap() as f64 / 1e6;
        let lost: u64 = r.udp_flows.iter().map(|f| f.packets_dropped).sum();
        let mean_ms = r.udp_flows.iter().map(|f| f.delay_sum_ns).sum::<u64>() as f64
            / r.udp_flows.iter().map(|f| f.packets_delivered).sum::<u64>() as f64 / 1e6;
        let bulk_bps = r.flows.iter().filter(|f| f.group == 0).map(|f| f.bytes_delivered).sum::<u64>() * 8 / 60;
        let loop_bps = r.flows.iter().filter(|f| f.group == 1).map(|f| f.bytes_delivered).sum::<u64>() * 8 / 60;
        println!("sparse_share {sparse_share}: ping mean {mean_ms:.1} ms, max {worst_ms:.1} ms; bulk {bulk_bps} bit/s, loop {loop_bps} bit/s");
        (worst_ms, mean_ms, lost)
    };
    let (_, without_mean_ms, _) = run_with(0.0);
    let (with_ms, with_mean_ms, lost) = run_with(0.25);
    let bound_ms = 10.0 + 0.34 + 6.0 + 6.0 + 24.0 + 0.34;
    assert!(with_ms <= bound_ms, "{with_ms} ms");
    assert!(with_mean_ms < without_mean_ms, "{with_mean_ms} ms, {without_mean_ms} ms without");
    assert_eq!(lost, 0);
}
