//! BBR (`tcp.congestion = "bbr"`) on the dumbbell, checked against the path: a lone flow's
//! bandwidth estimate and pacing rate settle on the bottleneck's packet rate, and the
//! queue stays within what BBR's cwnd gain of 2 allows.

use smallpipe_sim::{simulate, Scenario};

/// The bottleneck, bits/s, and its packets: full 1500-byte packets (1448 payload bytes
/// with timestamps).
const RATE_BPS: f64 = 1e6;
const PACKET_BYTES: f64 = 1500.0;
const MSS: f64 = 1448.0;
const RTT_S: f64 = 0.1;

fn run(duration_s: f64) -> smallpipe_sim::results::Results {
    let json = format!(
        r#"{{"seed":1,"duration_s":{duration_s},"link":{{"rate_bps":{RATE_BPS},"delay_ms":1,"access_rate_bps":100000000,
            "queue":{{"kind":"droptail","limit_pkts":100}}}},
            "tcp":{{"stack":"linux","congestion":"bbr"}},
            "flows":[{{"app":"bulk","rtt_ms":{rtt_ms}}}],
            "trace":{{"interval_s":0.05,"all_flows":true,"links":true}}}}"#,
        rtt_ms = RTT_S * 1e3
    );
    simulate(&Scenario::from_json(&json).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

#[test]
fn a_lone_flow_estimates_the_bottleneck_rate_and_bounds_the_queue() {
    let r = run(30.0);
    let t = &r.traces;
    // BBR counts packets delivered: the bottleneck's rate in BBR's units is its packet
    // rate times the MSS (payload bits/s), headers left out.
    let packet_rate = RATE_BPS / (PACKET_BYTES * 8.0);
    let bottleneck_bw_bps = packet_rate * MSS * 8.0;
    let settled: Vec<_> = t.flow_series.iter().filter(|s| s.time_ns >= 10_000_000_000).collect();
    assert!(settled.len() >= 390, "20 s sampled every 50 ms");
    for s in &settled {
        let bw = s.bbr_bw_bps.expect("a BBR flow") as f64;
        assert!((bw / bottleneck_bw_bps - 1.0).abs() <= 0.05, "t = {} ns: estimate {bw} vs {bottleneck_bw_bps}", s.time_ns);
        // The pacing rate is one of PROBE_BW's gains (5/4, 3/4, 1) × the rate, 1% under.
        let pacing = s.pacing_rate_bps.expect("a BBR flow") as f64;
        assert!([1.25, 0.75, 1.0].iter().any(|g| (pacing / (g * 0.99 * bottleneck_bw_bps) - 1.0).abs() <= 0.05),
            "t = {} ns: pacing {pacing}", s.time_ns);
    }
    // Six phases in eight pace at gain 1: the median is that phase's, within 5% of the rate.
    let mut pacing: Vec<f64> = settled.iter().map(|s| s.pacing_rate_bps.unwrap() as f64).collect();
    pacing.sort_by(f64::total_cmp);
    let median = pacing[pacing.len() / 2];
    assert!((median / bottleneck_bw_bps - 1.0).abs() <= 0.05, "median pacing {median} vs {bottleneck_bw_bps}");
    // cwnd ≤ 2 × BDP + 3 TSO buffers (at most 2 segments each at these rates) + 2 packets
    // of probing + 1 of rounding to even, where BBR's RTT is the propagation delay plus up to
    // two serializations (its own and, with delayed ACKs, the next segment's).
    let serialization_s = PACKET_BYTES * 8.0 / RATE_BPS;
    let bdp_pkts = packet_rate * (RTT_S + 2.0 * serialization_s);
    let max_cwnd_pkts = (2.0 * bdp_pkts).ceil() + 3.0 * 2.0 + 2.0 + 1.0;
    for s in &settled {
        assert!(s.cwnd_bytes as f64 / MSS <= max_cwnd_pkts, "t = {} ns: cwnd {} packets", s.time_ns, s.cwnd_bytes as f64 / MSS);
    }
    // The queue holds what is in flight beyond the propagation BDP: at most about one BDP
    // plus the budget above.
    let propagation_bdp = packet_rate * RTT_S;
    let queue: Vec<u64> = t.link_series.iter().filter(|s| s.link == 0 && s.time_ns >= 10_000_000_000).map(|s| s.backlog_pkts).collect();
    let max_queue = *queue.iter().max().unwrap();
    assert!(max_queue as f64 <= max_cwnd_pkts - propagation_bdp, "queue {max_queue} packets, bound {}", max_cwnd_pkts - propagation_bdp);
    assert_eq!(r.links[0].drops_by_reason.iter().sum::<u64>(), 0, "a 100-packet buffer never fills");
    eprintln!("bottleneck {bottleneck_bw_bps:.0} b/s; median pacing {median:.0}; max queue {max_queue} (bound {:.1}); goodput {:.0} b/s",
        max_cwnd_pkts - propagation_bdp, r.flows[0].bytes_delivered as f64 * 8.0 / 30.0);
}

/// BBR is refused where it cannot run: without Linux's pacing, or without SACK and RACK.
#[test]
fn bbr_needs_pacing_and_sack_with_rack() {
    for tcp in [r#""congestion":"bbr""#, r#""stack":"linux","congestion":"bbr","pacing":"none""#,
                r#""stack":"linux","congestion":"bbr","loss_detection":"dupthresh""#] {
        let json = format!(r#"{{"duration_s":1,"link":{{"rate_bps":1000000}},"tcp":{{{tcp}}},"flows":[{{"app":"bulk","rtt_ms":100}}]}}"#);
        let err = Scenario::from_json(&json).err().unwrap_or_else(|| panic!("{tcp} accepted")).to_string();
        assert!(err.contains("congestion") && err.contains("bbr") && err.contains("pacing = \"linux\""), "{tcp}: {err}");
    }
}
