//! `record_sender_epochs`: the senders' own state per slice, checked against the flow's
//! counters and RFC 6298's backoff (independent of the recorder).

use smallpipe_sim::{simulate, Scenario};

fn scenario(json: &str) -> Scenario {
    Scenario::from_json(json).unwrap_or_else(|e| panic!("{e}"))
}

/// One 1000-byte transfer whose segment and its first retransmission are dropped: two
/// RTOs (1 s, then 2 s), RTT 100 ms, 100 ms slices.
fn lost_twice(record: bool) -> smallpipe_sim::Results {
    let json = format!(
        r#"{{"seed":3,"duration_s":8,"slice_s":0.1,"record_sender_epochs":{record},
            "link":{{"rate_bps":10000000,"delay_ms":10,"access_rate_bps":1000000000,"drop_nth":[2,3]}},
            "tcp":{{"overhead_max_ms":0,"min_rto_ms":1000,"delayed_ack":false,"timestamps":false}},
            "flows":[{{"app":"transfer","size_bytes":1000,"rtt_ms":100}}]}}"#
    );
    simulate(&scenario(&json)).unwrap()
}

#[test]
fn off_by_default_records_nothing() {
    assert!(lost_twice(false).sender_epochs.is_empty());
}

#[test]
fn sender_epochs_follow_the_rto_backoff() {
    let r = lost_twice(true);
    let rows = &r.sender_epochs;
    let flow = &r.flows[0];
    assert_eq!(flow.timeouts, 2);
    // Every segment the sender emitted falls in exactly one slice.
    assert_eq!(rows.iter().map(|e| e.segments_sent).sum::<u64>(), flow.segments_sent);
    // RFC 6298 5.5: one doubling per expiry, none undone before new data is acknowledged.
    assert_eq!(rows.iter().map(|e| e.rto_backoff).max(), Some(2));
    assert!(rows.iter().filter(|e| e.in_timeout).all(|e| e.rto_backoff >= 1));
    // RFC 5681 (4)-(5): after the expiry the window is one segment.
    assert!(rows.iter().filter(|e| e.in_timeout).all(|e| e.cwnd_segments == 1));
    // In a timeout from the first expiry (the 1 s minimum RTO after the send) to the
    // repair's ACK: `backoff_ns` (which counts from the send) less that first RTO.
    let in_timeout = rows.iter().filter(|e| e.in_timeout).count() as f64;
    let episode_slices = (flow.backoff_ns as f64 / 1e9 - 1.0) / 0.1;
    assert!((in_timeout - episode_slices).abs() <= 1.0, "{in_timeout} slices in timeout, episode {episode_slices}");
    // The connection is recorded while open and in the slice it closed in, not after.
    let end_slice = (flow.end_ns.expect("finished") / 100_000_000) as u32;
    assert!(rows.iter().all(|e| e.slice <= end_slice));
    assert!(rows.iter().all(|e| e.taq_state.is_none()), "no TAQ queue, no inferred state");
}

#[test]
fn taq_bottleneck_reports_its_inferred_state_of_each_flow() {
    let r = simulate(&scenario(
        r#"{"duration_s":20,"slice_s":0.2,"record_sender_epochs":true,
            "link":{"rate_bps":300000,"queue":{"kind":"taq","limit_pkts":10}},
            "flows":[{"app":"bulk","count":6,"rtt_ms":200}]}"#,
    ))
    .unwrap();
    // TAQ tracks a flow from its SYN on, so after the first second every row has a state.
    let late: Vec<_> = r.sender_epochs.iter().filter(|e| e.slice >= 5).collect();
    assert_eq!(late.len(), 6 * (100 - 5), "six bulk flows, open all run");
    assert!(late.iter().all(|e| e.taq_state.is_some()));
    let states = r.sender_epochs.iter().filter_map(|e| e.taq_state);
    assert!(states.into_iter().all(|s| (s as usize) < smallpipe_core::qdisc::taq::TaqState::COUNT));
}
