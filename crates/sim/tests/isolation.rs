//! Edge marking, the diamond's routing rules, and class isolation end to end, checked
//! against the rules' definitions.

use smallpipe_sim::results::LinkRow;
use smallpipe_sim::{simulate, Results, Scenario};

fn run(json: &str) -> Results {
    simulate(&Scenario::from_json(json).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

fn link<'a>(r: &'a Results, name: &str) -> &'a LinkRow {
    r.links.iter().find(|l| l.name == name).unwrap_or_else(|| panic!("no link {name}"))
}

const MSS: u64 = 1448;

fn diamond(routing: &str, flows: &str) -> Results {
    run(&format!(
        r#"{{"duration_s":60,"link":{{"rate_bps":5000000,"queue":{{"kind":"droptail","limit_pkts":1000}}}},
           "edge":{{"mark":"size_oracle","threshold_bytes":{}}},
           "topology":{{"kind":"diamond","routing":"{routing}","lifetime_pkts":32}},
           "flows":[{flows}]}}"#,
        75 * MSS
    ))
}

#[test]
fn size_routing_puts_short_transfers_on_path_1_and_long_on_path_2() {
    let short = format!(r#"{{"app":"transfer","count":5,"size_bytes":{}}}"#, 10 * MSS);
    let long = format!(r#"{{"app":"transfer","count":1,"size_bytes":{}}}"#, 1000 * MSS);
    let r = diamond("size", &short);
    assert!(link(&r, "bottleneck").arrived_pkts >= 5 * 10);
    assert_eq!(link(&r, "bottleneck_path2").arrived_pkts, 0);
    let r = diamond("size", &long);
    assert_eq!(link(&r, "bottleneck").arrived_pkts, 0);
    assert!(link(&r, "bottleneck_path2").arrived_pkts >= 1000);
    // Every transfer finished: nothing was lost between the paths.
    let r = diamond("size", &format!("{short},{long}"));
    assert!(r.flows.iter().all(|f| f.end_ns.is_some()));
    let long_sent = r.flows.iter().find(|f| f.size_bytes == Some(1000 * MSS)).unwrap().segments_sent;
    // Path 2 carries the long sender's segments plus its pure ACKs (handshake, FIN).
    let p2 = link(&r, "bottleneck_path2").arrived_pkts;
    assert!(p2 >= long_sent && p2 <= long_sent + 3, "path 2 {p2}, long segments {long_sent}");
}

#[test]
fn lifetime_routing_moves_a_flow_after_n_packets() {
    // One 100-packet transfer over an ample buffer (no loss): its first 32 packets (the SYN
    // included) take path 1, the rest path 2.
    let r = diamond("lifetime", &format!(r#"{{"app":"transfer","size_bytes":{}}}"#, 100 * MSS));
    assert_eq!(link(&r, "bottleneck").arrived_pkts, 32);
    assert!(link(&r, "bottleneck_path2").arrived_pkts > 100 - 32);
    assert!(r.flows[0].end_ns.is_some());
}

#[test]
fn load_balancing_splits_flows_evenly_by_hash() {
    // 400 identical one-segment transfers, lossless: each flow's packets all take one path,
    // and each path is chosen with probability 1/2. The packet split is the flow split;
    // binomial sd of the fraction = sqrt(0.25/400) = 0.025, allow 4 sd.
    let r = diamond("load_balanced", r#"{"app":"transfer","count":400,"size_bytes":1000,"start_s":[0,10]}"#);
    let (p1, p2) = (link(&r, "bottleneck").arrived_pkts, link(&r, "bottleneck_path2").arrived_pkts);
    let frac = p2 as f64 / (p1 + p2) as f64;
    assert!((frac - 0.5).abs() < 0.1, "path 2 share {frac} ({p1} / {p2})");
    assert!(r.flows.iter().all(|f| f.end_ns.is_some()));
}

#[test]
fn class_isolation_shares_the_link_by_weight() {
    // Two groups of 4 bulk flows, one marked short (DSCP 10) by its group, weights 1:3: the
    // long class should get 3/4 of the delivered bytes once both are backlogged.
    let r = run(r#"{"duration_s":60,"link":{"rate_bps":2000000,"queue":{"kind":"class_isolation",
            "short":{"weight":1,"queue":{"kind":"droptail","limit_pkts":30}},
            "long":{"weight":3,"queue":{"kind":"droptail","limit_pkts":30}}}},
        "flows":[{"app":"bulk","count":4,"dscp":10},{"app":"bulk","count":4}]}"#);
    let bytes = |g: u32| r.flows.iter().filter(|f| f.group == g).map(|f| f.bytes_delivered).sum::<u64>() as f64;
    let long_share = bytes(1) / (bytes(0) + bytes(1));
    assert!((long_share - 0.75).abs() < 0.03, "long class share {long_share}");
    assert!(link(&r, "bottleneck").utilization > 0.9);
}

#[test]
fn path_2_can_have_its_own_rate() {
    // One long bulk flow on path 2 at 1 Mbit/s while path 1 runs at 5 Mbit/s: path 2 is the
    // bottleneck, so the flow gets about 1 Mbit/s of it.
    let r = run(r#"{"duration_s":30,"link":{"rate_bps":5000000,"queue":{"kind":"droptail","limit_pkts":100}},
        "edge":{"mark":"size_oracle","threshold_bytes":1000},
        "topology":{"kind":"diamond","routing":"size","path2_rate_bps":1000000},
        "flows":[{"app":"bulk"}]}"#);
    let p2 = link(&r, "bottleneck_path2");
    assert_eq!(p2.rate_bps, 1_000_000);
    assert!(p2.utilization > 0.9, "{}", p2.utilization);
    assert_eq!(link(&r, "bottleneck").arrived_pkts, 0);
}
