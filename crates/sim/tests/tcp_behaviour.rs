//! TCP behaviour on the dumbbell, each checked against a number derived independently of
//! the code: slow-start round counts, the RFC 6298 timeout formula, Karn's rule.

use smallpipe_sim::results::FlowRow;
use smallpipe_sim::{simulate, Scenario};

fn scenario(json: &str) -> Scenario {
    Scenario::from_json(json).unwrap_or_else(|e| panic!("{e}"))
}

fn one_flow(tcp: &str, link: &str, flow: &str, duration_s: f64) -> FlowRow {
    let json = format!(
        r#"{{"seed":3,"duration_s":{duration_s},"link":{{"rate_bps":10000000,"delay_ms":10,"access_rate_bps":1000000000,{link}}},
            "tcp":{{"overhead_max_ms":0,{tcp}}},"flows":[{{"app":"transfer",{flow}}}]}}"#
    );
    let r = simulate(&scenario(&json)).unwrap();
    r.flows[0].clone()
}

fn fct_s(f: &FlowRow) -> f64 {
    (f.end_ns.expect("transfer finished") - f.start_ns) as f64 * 1e-9
}

const RTT_S: f64 = 0.1;
/// 1500-byte packet at 10 Mbit/s.
const SER_S: f64 = 1500.0 * 8.0 / 10e6;

#[test]
fn bulk_flow_fills_an_uncongested_link() {
    let json = r#"{"duration_s":60,"link":{"rate_bps":1000000,"delay_ms":10},
        "tcp":{"delayed_ack":false},"flows":[{"app":"bulk","rtt_ms":100}]}"#;
    let r = simulate(&scenario(json)).unwrap();
    let goodput_bps = r.flows[0].bytes_delivered as f64 * 8.0 / 60.0;
    // Capacity for payload: the link rate times the payload share of a full packet.
    let capacity_bps = 1e6 * 1448.0 / 1500.0;
    assert!(goodput_bps >= 0.95 * capacity_bps, "goodput {goodput_bps} < 95% of {capacity_bps}");
    assert_eq!(r.flows[0].retransmits, 0);
}

/// Rounds of slow start to send `n` segments from initial window `iw`, doubling per round.
fn slow_start_rounds(n: u32, iw: u32) -> (u32, u32) {
    let (mut sent, mut w, mut rounds) = (0, iw, 0);
    loop {
        rounds += 1;
        let last = w.min(n - sent);
        sent += last;
        if sent >= n {
            return (rounds, last);
        }
        w *= 2;
    }
}

#[test]
fn ten_packet_transfer_takes_the_slow_start_rounds() {
    for iw in [1, 2, 4, 10] {
        let (rounds, last_round) = slow_start_rounds(10, iw);
        let f = one_flow(
            &format!(r#""initial_window_pkts":{iw},"delayed_ack":false,"timestamps":false"#),
            r#""queue":{"kind":"droptail","limit_pkts":100}"#,
            r#""size_bytes":14600,"rtt_ms":100"#,
            10.0,
        );
        // Handshake (one RTT), `rounds` data rounds each ending one RTT after it began, less
        // the half RTT of the last ACK's way back; the bottleneck serializes the last round
        // back to back, and each earlier round's first packet delays the next round by one
        // serialization time.
        let expected = RTT_S + (rounds as f64 - 0.5) * RTT_S + (last_round + rounds - 1) as f64 * SER_S;
        let got = fct_s(&f);
        assert!((got - expected).abs() <= SER_S, "IW {iw}: FCT {got:.6} s, expected {expected:.6} s ± {SER_S}");
        assert_eq!(f.retransmits, 0);
    }
}

#[test]
fn lost_syn_delays_data_by_the_initial_rto() {
    for initial_rto_ms in [1000.0, 3000.0] {
        let tcp = format!(r#""initial_rto_ms":{initial_rto_ms},"delayed_ack":false"#);
        let flow = r#""size_bytes":1448,"rtt_ms":100"#;
        let clean = one_flow(&tcp, r#""drop_nth":[]"#, flow, 20.0);
        let lost = one_flow(&tcp, r#""drop_nth":[1]"#, flow, 20.0);
        assert_eq!(lost.syn_timeouts, 1);
        let delay = fct_s(&lost) - fct_s(&clean);
        assert!((delay - initial_rto_ms / 1000.0).abs() < 1e-3, "SYN loss delayed by {delay} s");
        // Backoff runs from the first SYN to the SYN-ACK of the retry: RTO + one RTT.
        assert_eq!(clean.backoff_ns, 0);
        let backoff = lost.backoff_ns as f64 * 1e-9;
        assert!((backoff - (initial_rto_ms / 1000.0 + RTT_S)).abs() < 2e-3, "SYN backoff {backoff} s");
    }
}

#[test]
fn one_loss_in_a_large_window_is_repaired_by_fast_retransmit() {
    for recovery in ["reno", "newreno", "sack"] {
        // Packet 1 is the SYN, 2 the handshake-completing first data segment; lose data #5.
        let f = one_flow(
            &format!(r#""recovery":"{recovery}","initial_window_pkts":10,"delayed_ack":false"#),
            r#""drop_nth":[6]"#,
            r#""size_bytes":43440,"rtt_ms":100"#,
            20.0,
        );
        assert_eq!((f.fast_retransmits, f.timeouts, f.retransmits), (1, 0, 1), "{recovery}");
    }
}

#[test]
fn two_losses_newreno_one_hole_per_rtt_sack_both_at_once() {
    let run = |recovery: &str, drops: &str| {
        one_flow(
            &format!(r#""recovery":"{recovery}","initial_window_pkts":10,"delayed_ack":false,"limited_transmit":false"#),
            &format!(r#""drop_nth":[{drops}]"#),
            r#""size_bytes":28960,"rtt_ms":100"#,
            20.0,
        )
    };
    let clean = fct_s(&run("sack", ""));
    let newreno = run("newreno", "4,7");
    let sack = run("sack", "4,7");
    for f in [&newreno, &sack] {
        assert_eq!((f.timeouts, f.retransmits, f.fast_retransmits), (0, 2, 1));
    }
    // SACK resends both holes in the recovery's first RTT; NewReno learns of the second hole
    // from the partial ACK one RTT later.
    let extra_newreno = fct_s(&newreno) - clean;
    let extra_sack = fct_s(&sack) - clean;
    assert!(extra_sack < 1.5 * RTT_S, "SACK recovery cost {extra_sack} s");
    let gap = extra_newreno - extra_sack;
    assert!((gap - RTT_S).abs() < 0.3 * RTT_S, "NewReno took {gap} s longer than SACK, expected one RTT");
}

/// RFC 6298 after one sample R on a fixed path: SRTT = R, RTTVAR = R/2, RTO = max(min, 3R).
fn rto_after_one_sample(rtt_s: f64, min_rto_s: f64) -> f64 {
    (rtt_s + 4.0 * rtt_s / 2.0).max(min_rto_s)
}

#[test]
fn tail_loss_waits_for_the_rto_and_repeated_loss_doubles_it() {
    for min_rto_ms in [1000.0, 200.0] {
        let tcp = format!(r#""min_rto_ms":{min_rto_ms},"delayed_ack":false,"timestamps":false"#);
        // One segment: the only RTT sample is the handshake's.
        let flow = r#""size_bytes":1000,"rtt_ms":100"#;
        let clean = fct_s(&one_flow(&tcp, "\"drop_nth\":[]", flow, 30.0));
        let rto = rto_after_one_sample(RTT_S + 2.0 * 52.0 * 8.0 / 10e6, min_rto_ms / 1000.0);
        let once = one_flow(&tcp, "\"drop_nth\":[2]", flow, 30.0);
        assert_eq!((once.timeouts, once.fast_retransmits), (1, 0));
        let d1 = fct_s(&once) - clean;
        assert!((d1 - rto).abs() < 2e-3, "min_rto {min_rto_ms}: delay {d1}, RTO {rto}");
        // In backoff from the lost segment's send to the ACK of its retransmission.
        let b1 = once.backoff_ns as f64 * 1e-9;
        assert!((b1 - (rto + RTT_S)).abs() < 3e-3, "min_rto {min_rto_ms}: backoff {b1}, expected {}", rto + RTT_S);
        let twice = one_flow(&tcp, "\"drop_nth\":[2,3]", flow, 30.0);
        assert_eq!(twice.timeouts, 2);
        let d2 = fct_s(&twice) - clean;
        assert!((d2 - 3.0 * rto).abs() < 3e-3, "second RTO doubles: delay {d2}, expected {}", 3.0 * rto);
        let b2 = twice.backoff_ns as f64 * 1e-9;
        assert!((b2 - (3.0 * rto + RTT_S)).abs() < 4e-3, "backoff {b2}, expected {}", 3.0 * rto + RTT_S);
    }
}

#[test]
fn karn_keeps_the_backoff_without_timestamps_and_timestamps_reset_it() {
    // An interactive flow: burst 1 is lost twice (arrivals 3, 4 after SYN and handshake ACK),
    // burst 2 once (arrival 6). Without timestamps the retransmission that got through gives
    // no sample, so burst 2 waits the doubled-twice RTO; with timestamps it waits one RTO.
    let run = |timestamps: bool| {
        let json = format!(
            r#"{{"seed":5,"duration_s":60,"link":{{"rate_bps":10000000,"delay_ms":10,"drop_nth":[3,4,6]}},
               "tcp":{{"timestamps":{timestamps},"delayed_ack":false,"overhead_max_ms":0}},
               "flows":[{{"app":"interactive","rtt_ms":100,"mean_gap_s":2.0,"gap_from":"response","burst_bytes":100}}]}}"#
        );
        simulate(&scenario(&json)).unwrap()
    };
    let response = |r: &smallpipe_sim::Results, i: usize| (r.bursts[i].acked_ns.unwrap() - r.bursts[i].sent_ns) as f64 * 1e-9;
    let plain = run(false);
    let ts = run(true);
    let rto = 1.0; // min RTO dominates 3 x 100 ms
    for r in [&plain, &ts] {
        assert!((response(r, 0) - (3.0 * rto + RTT_S)).abs() < 0.01, "burst 1: {}", response(r, 0));
    }
    assert!((response(&plain, 1) - (4.0 * rto + RTT_S)).abs() < 0.01, "no timestamps: {}", response(&plain, 1));
    assert!((response(&ts, 1) - (rto + RTT_S)).abs() < 0.01, "timestamps: {}", response(&ts, 1));
}

#[test]
fn same_seed_same_results_other_seed_different() {
    let json = |seed: u64| {
        format!(r#"{{"seed":{seed},"duration_s":30,"slice_s":5,"link":{{"rate_bps":500000,"queue":{{"kind":"droptail","limit_pkts":20}}}},
            "tcp":{{"packet_size_bytes":500}},"flows":[{{"app":"bulk","count":20,"rtt_ms":[100,300],"start_s":[0,2]}}]}}"#)
    };
    let a = simulate(&scenario(&json(1))).unwrap();
    let b = simulate(&scenario(&json(1))).unwrap();
    let c = simulate(&scenario(&json(2))).unwrap();
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.links, b.links);
    assert_eq!(a.events, b.events);
    assert_ne!(a.flows, c.flows);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Whatever the bottleneck loses (data, SYN, FIN, ACKs), every transfer completes and
        /// the receiver gets exactly the bytes that were sent, under each recovery scheme.
        #[test]
        fn every_transfer_completes_whatever_is_lost(
            recovery in prop::sample::select(vec!["reno", "newreno", "sack"]),
            timestamps in any::<bool>(),
            delayed_ack in any::<bool>(),
            size_pkts in 1u64..60,
            iw in 1u32..11,
            fwd in prop::collection::btree_set(1u64..80, 0..8),
            rev in prop::collection::btree_set(1u64..80, 0..8),
        ) {
            let fmt = |s: &std::collections::BTreeSet<u64>| s.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
            let json = format!(
                r#"{{"seed":1,"duration_s":900,"link":{{"rate_bps":2000000,"delay_ms":5,"drop_nth":[{}],"reverse_drop_nth":[{}]}},
                   "tcp":{{"recovery":"{recovery}","timestamps":{timestamps},"delayed_ack":{delayed_ack},
                           "initial_window_pkts":{iw},"packet_size_bytes":552}},
                   "flows":[{{"app":"transfer","size_bytes":{},"rtt_ms":60}}]}}"#,
                fmt(&fwd), fmt(&rev), size_pkts * 500 - 7,
            );
            let r = simulate(&scenario(&json)).unwrap();
            let f = &r.flows[0];
            prop_assert!(f.end_ns.is_some(), "transfer unfinished: {f:?}");
            prop_assert_eq!(f.bytes_delivered, size_pkts * 500 - 7);
        }
    }
}

/// Where each timeout fired, from scripts whose loss pattern fixes the answer.
#[test]
fn timeouts_are_split_by_where_they_fired() {
    let parts = |f: &FlowRow| (f.timeouts, f.timeouts_in_recovery, f.timeouts_after_dupacks, f.timeouts_repeated);
    let tcp = r#""delayed_ack":false,"timestamps":false,"initial_window_pkts":2,"limited_transmit":false"#;
    // A one-segment transfer loses its segment, then its resend: no duplicate ACK can come,
    // the first RTO has none, the second is a backed-off repeat.
    let tail = one_flow(tcp, r#""drop_nth":[2,3]"#, r#""size_bytes":1000,"rtt_ms":100"#, 30.0);
    assert_eq!(parts(&tail), (2, 0, 0, 1));
    // IW 2, the first segment lost: the second draws one duplicate ACK, too few to start fast
    // retransmit, and nothing more can be sent (limited transmit off).
    let small = one_flow(tcp, r#""drop_nth":[2]"#, r#""size_bytes":2896,"rtt_ms":100"#, 30.0);
    assert_eq!(parts(&small), (1, 0, 1, 0));
    // A window of 10 loses data segment 5 and then its fast retransmission: NewReno without
    // SACK has nothing else to resend it, so the RTO fires in fast recovery.
    let recovery = one_flow(
        r#""recovery":"newreno","initial_window_pkts":10,"delayed_ack":false,"timestamps":false"#,
        r#""drop_nth":[6,12]"#,
        r#""size_bytes":14480,"rtt_ms":100"#,
        30.0,
    );
    assert_eq!(recovery.fast_retransmits, 1);
    assert_eq!(parts(&recovery), (1, 1, 0, 0));
}
