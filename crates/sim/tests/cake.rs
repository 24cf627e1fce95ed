//! CAKE in the simulator (docs/cake.md): fairness between hosts rather than connections,
//! COBALT's standing queue, and the Voice tin under bulk load.

use smallpipe_sim::{simulate, Results, Scenario};

fn run(json: &str) -> Results {
    simulate(&Scenario::from_json(json).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

/// Host A (unit 0) runs one bulk connection, host B (unit 1) eight at once (a web user with
/// eight parallel 1 GB objects), 60 s on 10 Mbit/s, 20 ms RTT. A's share of the bytes.
fn host_a_share(queue: &str) -> f64 {
    let r = run(&format!(r#"{{"duration_s":60,"link":{{"rate_bps":10000000,"queue":{queue}}},
        "flows":[{{"app":"bulk","count":1,"rtt_ms":20}},
                 {{"app":"web","count":1,"connections":8,"objects_per_page":8,"size_bytes":1000000000,"think_s":0,"rtt_ms":20}}]}}"#));
    let mut by_unit = [0u64; 2];
    for f in &r.flows {
        by_unit[f.unit_id as usize] += f.bytes_delivered;
    }
    assert!(r.links[0].utilization > 0.95, "{:?}", r.links[0]);
    by_unit[0] as f64 / (by_unit[0] + by_unit[1]) as f64
}

/// CAKE's host isolation gives each host half the link whatever its connection count, where
/// per-flow fairness (FQ-CoDel, CAKE's `flows` mode) gives each of the nine connections a
/// ninth. The host shares are exact only while both hosts have packets queued; A's single
/// connection empties its queue for a while after each congestion signal (eight connections
/// signalled one at a time do not), so A may fall short of half: ±0.1 is allowed. Measured
/// (seed 1): A 0.474 with CAKE, 0.108 with `flows`, 0.112 with FQ-CoDel.
#[test]
fn cake_shares_the_link_between_hosts_not_connections() {
    for queue in [r#"{"kind":"cake"}"#, r#"{"kind":"cake","flow_mode":"dual_srchost"}"#] {
        let share = host_a_share(queue);
        assert!((share - 0.5).abs() <= 0.1, "{queue}: {share}");
    }
    for queue in [r#"{"kind":"cake","flow_mode":"flows"}"#, r#"{"kind":"fq_codel"}"#] {
        let share = host_a_share(queue);
        assert!((share - 1.0 / 9.0).abs() <= 0.04, "{queue}: {share}");
    }
}

/// COBALT holds each flow's sojourn near its 5 ms target (at 10 Mbit/s one MTU takes
/// 1.2 ms, so the target is not raised): it signals once the sojourn has stayed above
/// target for an interval and faster while it stays there, so the queue stands above target
/// only for the ramp between signals. Sixteen bulk flows, 100 ms RTT: the median queueing
/// delay is allowed up to twice the target (Reno's sawtooth around the controlled level),
/// where a 1000-packet DropTail holds the whole buffer's worth (about 750 ms).
#[test]
fn cobalt_keeps_the_standing_queue_near_its_target() {
    let delays = |queue: &str| {
        let r = run(&format!(r#"{{"duration_s":60,"link":{{"rate_bps":10000000,"queue":{queue}}},"flows":[{{"app":"bulk","count":16}}]}}"#));
        let l = &r.links[0];
        (l.queue_delay_p50_ms, l.utilization, l.drops_by_reason)
    };
    let (p50, utilization, drops) = delays(r#"{"kind":"cake","diffserv":"besteffort"}"#);
    assert!(p50 <= 10.0, "median {p50} ms");
    assert!(utilization > 0.95, "{utilization}");
    // The drops are COBALT's (`early`), not buffer overflows.
    assert!(drops[1] > 0 && drops[0] == 0, "{drops:?}");
    let (droptail_p50, _, _) = delays(r#"{"kind":"droptail","limit_pkts":1000}"#);
    assert!(droptail_p50 > 20.0 * p50, "DropTail {droptail_p50} ms vs CAKE {p50} ms");
}

/// A 2 Mbit/s voice stream (200-byte datagrams, EF) beside eight bulk TCP flows on
/// 10 Mbit/s. In `diffserv3` it is under the Voice tin's 2.5 Mbit/s threshold, so it is
/// served ahead of Best Effort and nothing of it is dropped (a datagram waits at most one
/// bulk packet; the unit test `voice_under_its_threshold_waits_at_most_one_bulk_packet`
/// checks that bound). In `besteffort` it is one flow of nine, entitled to 1.1 Mbit/s
/// while the others have packets queued, and loses part of what it sends above that.
#[test]
fn voice_under_its_threshold_loses_nothing_in_diffserv3() {
    let voice = |diffserv: &str| {
        let r = run(&format!(r#"{{"duration_s":60,"link":{{"rate_bps":10000000,"queue":{{"kind":"cake","diffserv":"{diffserv}"}}}},
            "flows":[{{"app":"bulk","count":8}},{{"app":"udp_cbr","packet_size_bytes":200,"rate_bps":2000000,"dscp":46}}]}}"#));
        assert!(r.links[0].utilization > 0.95);
        r.udp_flows[0].clone()
    };
    let v = voice("diffserv3");
    assert_eq!(v.packets_sent, 75_000);
    assert_eq!(v.packets_dropped, 0, "{v:?}");
    let b = voice("besteffort");
    assert!(b.packets_dropped as f64 > 0.1 * b.packets_sent as f64, "{b:?}");
}
