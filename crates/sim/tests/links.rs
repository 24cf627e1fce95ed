//! The bottleneck's link models (`docs/links.md`): delivery traces in mahimahi's format,
//! Gilbert–Elliott loss and ATM/PTM framing, against what the trace file and the closed
//! forms say.

use smallpipe_sim::{simulate, Results, Scenario};
use std::path::PathBuf;

fn run(json: &str) -> Results {
    simulate(&Scenario::from_json(json).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

/// Writes `lines` as a trace file in the test's own temporary directory.
fn trace_file(name: &str, lines: &[u64]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("smallpipe-links-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, lines.iter().map(|ms| format!("{ms}\n")).collect::<String>()).unwrap();
    path
}

/// A square wave: 0.5 Mbit/s (a 1500-byte opportunity every 24 ms) for 1 s, then 2 Mbit/s
/// (every 6 ms) for 1 s; period 2 s.
fn square_wave() -> Vec<u64> {
    (1..=1000 / 24).map(|k| k * 24).chain((1..=1000 / 6).map(|k| 1000 + k * 6)).chain([2000]).collect()
}

/// Capacity of a trace from its lines alone: opportunities x 1500 B per period, bit/s.
fn capacity_bps(lines: &[u64]) -> f64 {
    lines.len() as f64 * 1500.0 * 8.0 / (*lines.last().unwrap() as f64 / 1000.0)
}

fn bottleneck_bps(r: &Results, duration_s: f64) -> f64 {
    r.links[0].tx_bytes as f64 * 8.0 / duration_s
}

/// A CBR source of 1500-byte datagrams above the trace's peak keeps the queue full from the
/// first packet on: every opportunity carries one datagram, so the bottleneck sends the
/// trace's capacity over whole periods, to within a packet.
#[test]
fn a_saturated_trace_link_sends_the_trace_capacity() {
    let lines = square_wave();
    let path = trace_file("square.trace", &lines);
    let r = run(&format!(r#"{{"duration_s":20,"link":{{"trace":{path:?},"queue":{{"kind":"droptail","limit_pkts":100}}}},
        "flows":[{{"app":"udp_cbr","packet_size_bytes":1500,"rate_bps":3000000,"rtt_ms":20}}]}}"#));
    let want = capacity_bps(&lines);
    let got = bottleneck_bps(&r, 20.0);
    assert!((got / want - 1.0).abs() < 0.01, "{got} bit/s against the trace's {want}");
    // The link's nominal rate, for its tables and disciplines, is that capacity.
    assert_eq!(r.links[0].rate_bps, want.round() as u64);
}

/// Saturating TCP (four bulk flows, a buffer of a few bandwidth-delay products) over the
/// same trace: after slow start the queue never empties, so the bottleneck sends within 1%
/// of the trace's capacity (checked over 60 s, start-up included).
#[test]
fn saturating_tcp_over_a_trace_gets_the_trace_capacity() {
    let lines = square_wave();
    let path = trace_file("square-tcp.trace", &lines);
    let r = run(&format!(r#"{{"duration_s":60,"link":{{"trace":{path:?},"queue":{{"kind":"droptail","limit_pkts":100}}}},
        "flows":[{{"app":"bulk","count":4,"rtt_ms":40}}]}}"#));
    let want = capacity_bps(&lines);
    let got = bottleneck_bps(&r, 60.0);
    assert!((got / want - 1.0).abs() < 0.01, "{got} bit/s against the trace's {want}");
}

/// ATM framing: a 1500-byte packet takes 32 cells (1696 bytes) of the rate, so a saturated
/// 1 Mbit/s link sends 1500/1696 of what it sends unframed; PTM: 1524 bytes (64b/65b).
#[test]
fn framing_takes_its_closed_form_share_of_the_rate() {
    let sent = |framing: &str| {
        let r = run(&format!(r#"{{"duration_s":20,"link":{{"rate_bps":1000000,"framing":"{framing}"}},
            "flows":[{{"app":"udp_cbr","packet_size_bytes":1500,"rate_bps":2000000,"rtt_ms":20}}]}}"#));
        bottleneck_bps(&r, 20.0)
    };
    // Busy from the first datagram's arrival (after its 10 ms access path) to the end.
    let none = sent("none");
    assert!((none / 1e6 - 1.0).abs() < 0.002, "{none}");
    for (framing, factor) in [("atm", 1500.0 / 1696.0), ("ptm", 1500.0 / 1524.0)] {
        let got = sent(framing);
        assert!((got / (none * factor) - 1.0).abs() < 0.001, "{framing}: {got} bit/s, want {}", none * factor);
    }
}

/// Overhead and MPU: 40-byte ACK-sized datagrams with 24 bytes of overhead raised to a
/// 96-byte MPU take 96 bytes each: 1 Mbit/s carries 1302 of them a second.
#[test]
fn overhead_and_mpu_set_the_small_packet_rate() {
    let r = run(r#"{"duration_s":10,"link":{"rate_bps":1000000,"overhead_bytes":24,"mpu_bytes":96},
        "flows":[{"app":"udp_cbr","packet_size_bytes":40,"rate_bps":1000000,"rtt_ms":20}]}"#);
    let pps = r.links[0].tx_pkts as f64 / 10.0;
    let want = 1e6 / (96.0 * 8.0);
    assert!((pps / want - 1.0).abs() < 0.002, "{pps} packets/s, want {want}");
}

/// Gilbert–Elliott on the bottleneck: the link's loss rate is the model's stationary one.
/// h = 0, k = 1, p = 0.02, r = 0.25: 0.02 / 0.27 = 7.4%. About 60 000 packets, 1 100
/// bursts of mean 4 (variance 12): the lost count's relative sd is about 4%; 15% is > 3 sd.
#[test]
fn bursty_loss_on_the_bottleneck_loses_the_stationary_share() {
    let r = run(r#"{"duration_s":60,"link":{"rate_bps":10000000,"loss_model":{"kind":"gilbert_elliott","p":0.02,"r":0.25}},
        "flows":[{"app":"udp_cbr","packet_size_bytes":200,"rate_bps":1600000,"rtt_ms":20}]}"#);
    let f = &r.udp_flows[0];
    let lost = f.packets_dropped as f64 / f.packets_sent as f64;
    let want = 0.02 / 0.27;
    assert!((lost / want - 1.0).abs() < 0.15, "lost {lost}, want {want}");
    // The same seed, the same losses.
    let again = run(r#"{"duration_s":60,"link":{"rate_bps":10000000,"loss_model":{"kind":"gilbert_elliott","p":0.02,"r":0.25}},
        "flows":[{"app":"udp_cbr","packet_size_bytes":200,"rate_bps":1600000,"rtt_ms":20}]}"#);
    assert_eq!(again.udp_flows[0].packets_dropped, f.packets_dropped);
}

fn config_error(json: &str) -> smallpipe_core::ConfigError {
    Scenario::from_json(json).unwrap_err()
}

#[test]
fn bad_trace_and_loss_settings_name_the_field_the_value_and_what_is_allowed() {
    let ok = trace_file("ok.trace", &[5, 10]);
    let e = config_error(&format!(r#"{{"link":{{"trace":{ok:?},"rate_bps":2000000}},"flows":[{{"app":"bulk"}}]}}"#));
    assert_eq!((e.field.as_str(), e.value.as_str()), ("link.rate_bps", "2000000"));
    assert!(e.allowed.contains("unset when link.trace is set") && e.allowed.contains("2400000"), "{e}");
    // The canonical form (rate_bps = the trace's capacity) reads back.
    let sc = Scenario::from_json(&format!(r#"{{"link":{{"trace":{ok:?}}},"flows":[{{"app":"bulk"}}]}}"#)).unwrap();
    assert_eq!(Scenario::from_json(&sc.to_json()).unwrap(), sc);

    let dir = ok.parent().unwrap();
    std::fs::write(dir.join("down.trace"), "1\n7\n3\n9\n").unwrap();
    let e = config_error(&format!(r#"{{"link":{{"reverse_trace":{:?}}},"flows":[{{"app":"bulk"}}]}}"#, dir.join("down.trace")));
    assert_eq!(e.field, "link.reverse_trace");
    assert!(e.value.ends_with("down.trace line 3: \"3\"") && e.allowed.contains("never decrease"), "{e}");
    std::fs::write(dir.join("empty.trace"), "").unwrap();
    let e = config_error(&format!(r#"{{"link":{{"trace":{:?}}},"flows":[{{"app":"bulk"}}]}}"#, dir.join("empty.trace")));
    assert!(e.field == "link.trace" && e.value.contains("(empty)"), "{e}");
    let e = config_error(r#"{"link":{"trace":"/nonexistent/x.trace"},"flows":[{"app":"bulk"}]}"#);
    assert!(e.field == "link.trace" && e.value == "/nonexistent/x.trace", "{e}");

    let e = config_error(r#"{"link":{"loss_model":{"kind":"gilbert_elliott","p":0.1,"r":0}},"flows":[{"app":"bulk"}]}"#);
    assert_eq!((e.field.as_str(), e.value.as_str()), ("link.loss_model.r", "0"));
    let e = config_error(r#"{"link":{"loss":0.01,"loss_model":{"kind":"gilbert_elliott","p":0.1,"r":0.5}},"flows":[{"app":"bulk"}]}"#);
    assert_eq!(e.field, "link.loss");
    let e = config_error(r#"{"link":{"loss_model":{"kind":"markov","p":0.1,"r":0.5}},"flows":[{"app":"bulk"}]}"#);
    assert!(e.field.starts_with("link.loss_model"), "{e}");
    let e = config_error(r#"{"link":{"overhead_bytes":-100},"flows":[{"app":"bulk"}]}"#);
    assert_eq!((e.field.as_str(), e.value.as_str()), ("link.overhead_bytes", "-100"));
    let e = config_error(r#"{"link":{"framing":"docsis"},"flows":[{"app":"bulk"}]}"#);
    assert_eq!(e.field, "link.framing");
    let e = config_error(&format!(r#"{{"link":{{"trace":{ok:?}}},"topology":{{"kind":"diamond"}},"flows":[{{"app":"bulk"}}]}}"#));
    assert_eq!(e.field, "topology.kind");
}

/// Without the new knobs the canonical form is what it was: none of them is written.
#[test]
fn default_links_write_none_of_the_new_knobs() {
    let json = Scenario::from_json(r#"{"flows":[{"app":"bulk"}]}"#).unwrap().to_json();
    for key in ["trace", "loss_model", "overhead_bytes", "mpu_bytes", "framing"] {
        assert!(!json.contains(&format!("\"{key}\"")), "{key} in {json}");
    }
}
