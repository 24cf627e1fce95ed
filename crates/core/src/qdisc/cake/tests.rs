use super::*;
use crate::rng::Rng;
use crate::packet::{FlowKey, TcpFlags};
use crate::qdisc::testkit::{self, pkt};
use crate::qdisc::Accounted;
use crate::time::Duration;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn cake(cfg: CakeConfig) -> Accounted<Cake> {
    Accounted::new(cfg.build().unwrap(), Rng::new(41, 0))
}

fn with_dscp(mut p: Packet, dscp: u8) -> Packet {
    p.dscp = dscp;
    p
}

/// Serve `q` back to back on a link of `rate_bps` for `duration`, keeping every flow of
/// `templates` backlogged (refilled to 20 packets); bytes served per template index.
fn serve_backlogged(q: &mut Accounted<Cake>, templates: &[Packet], rate_bps: u64, duration: Duration) -> Vec<u64> {
    let mut served = vec![0u64; templates.len()];
    let mut queued = vec![0usize; templates.len()];
    let mut now = Instant(0);
    while now.0 < duration.0 {
        for (i, t) in templates.iter().enumerate() {
            while queued[i] < 20 {
                q.enqueue(*t, now);
                queued[i] += 1;
            }
        }
        let p = q.dequeue(now).expect("backlogged");
        let i = templates.iter().position(|t| t.flow == p.flow && t.dscp == p.dscp).unwrap();
        queued[i] -= 1;
        served[i] += p.len_bytes();
        now += Duration::serialization(p.len_bytes(), rate_bps);
    }
    served
}

#[test]
fn dual_srchost_gives_a_host_with_one_flow_as_much_as_a_host_with_eight() {
    // Host 1: one flow; host 2: eight. No link rate: flow quantum 1514 bytes, divided by
    // the host's bulk flow count: host 2's flows get 1514/8 each per round, host 1's flow
    // 1514, so each host gets 1514 bytes a round. Bound on |A − B| from the definition:
    // before any flow is bulk every flow starts with a whole quantum (8 · 1514 extra for
    // host 2), and each of the 9 flows carries less than one packet (1500) of deficit.
    let cfg = CakeConfig { flow_mode: FlowMode::DualSrchost, ..CakeConfig::default() };
    let mut q = cake(cfg);
    let mut flows = vec![pkt(1, 9, 1, 1500)];
    flows.extend((1..=8).map(|port| pkt(2, 9, port, 1500)));
    let served = serve_backlogged(&mut q, &flows, 10_000_000, Duration::from_secs_f64(20.0));
    let (a, b) = (served[0] as i64, served[1..].iter().sum::<u64>() as i64);
    assert!((a - b).abs() <= 8 * 1514 + 9 * 1500 + 1514, "A {a} B {b}");
    assert!(a + b > 20_000_000, "the link was kept busy: {}", a + b);
    // Per-flow fairness (`flows`) gives host 1 one ninth instead.
    let mut q = cake(CakeConfig { flow_mode: FlowMode::Flows, ..CakeConfig::default() });
    let served = serve_backlogged(&mut q, &flows, 10_000_000, Duration::from_secs_f64(20.0));
    let share = served[0] as f64 / served.iter().sum::<u64>() as f64;
    assert!((share - 1.0 / 9.0).abs() < 0.01, "{share}");
}

#[test]
fn triple_isolate_balances_the_heavier_side_of_each_flow() {
    // Host 1 sends one flow to server 8, host 2 four flows to server 9. Each flow's quantum
    // is divided by the larger bulk count of its two ends: host 1's flow by max(1, 1),
    // host 2's by max(4, 4), so each host gets one quantum a round.
    let mut q = cake(CakeConfig::default());
    let mut flows = vec![pkt(1, 8, 1, 1500)];
    flows.extend((1..=4).map(|port| pkt(2, 9, port, 1500)));
    let served = serve_backlogged(&mut q, &flows, 10_000_000, Duration::from_secs_f64(10.0));
    let share = served[0] as f64 / served.iter().sum::<u64>() as f64;
    assert!((share - 0.5).abs() < 0.01, "{share}");
}

#[test]
fn cobalt_first_drop_one_interval_after_going_over_target() {
    // One flow, two 1000-byte arrivals per ms, one dequeue per ms, no link rate (target
    // 5 ms, interval 100 ms, no MTU-time floor). The packet dequeued at t ms arrived at
    // ⌊t/2⌋ ms: its sojourn ⌈t/2⌉ ms is over 5 ms from t = 11, so COBALT enters dropping
    // with the first drop due at 111 ms, the next 100/√2 ms later (181.7 → 182).
    let mut q = cake(CakeConfig { ecn: false, memory_limit_bytes: 10 << 20, ..CakeConfig::default() });
    let mut drops_at = vec![];
    for t in 0..200u64 {
        q.enqueue(pkt(1, 9, 1, 1000), Instant(t * MS));
        q.enqueue(pkt(1, 9, 1, 1000), Instant(t * MS));
        q.dequeue(Instant(t * MS));
        drops_at.extend(q.last_drops().iter().map(|(_, r)| (t, *r)));
    }
    assert_eq!(drops_at, [(111, DropReason::Early), (182, DropReason::Early)]);
    assert_eq!(q.inner().tins()[0].stats.drop_aqm, 2);
}

#[test]
fn overflow_drops_the_head_of_the_fattest_queue_and_wakes_blue() {
    // Buffer of 5000 bytes: flow 1 holds 3000, flow 2 holds 1500; a 1000-byte arrival of
    // flow 3 overflows, and flow 1 (the fattest by bytes, not by packets) loses its head.
    let mut q = cake(CakeConfig { memory_limit_bytes: 5000, diffserv: DiffservMode::Besteffort, ..CakeConfig::default() });
    q.enqueue(pkt(1, 9, 1, 1500), Instant(0));
    q.enqueue(pkt(1, 9, 1, 1500), Instant(0));
    for _ in 0..3 {
        q.enqueue(pkt(2, 9, 1, 500), Instant(0));
    }
    let mut first = pkt(3, 9, 1, 1000);
    first.seq = 7;
    q.enqueue(first, Instant(10 * MS));
    let (victim, reason) = q.last_drops()[0];
    assert_eq!((victim.flow.src_ip, reason), (1, DropReason::Overlimit));
    let tin = &q.inner().tins()[0];
    assert_eq!((tin.stats.drop_overlimit, tin.unresponsive_flows), (1, 1));
    q.check().unwrap();
}

#[test]
fn diffserv3_tins_get_priority_up_to_their_threshold_then_share() {
    // All three tins backlogged on a 10 Mbit/s link: Voice (EF) is served whenever its
    // shaper is within 25% of the link, Bulk (CS1) within 6.25%, Best Effort takes the
    // rest. Each tin's shaper admits one packet per packet time at its threshold, so the
    // shares are the thresholds within a packet or two over 10 s (12 500 packets).
    let mut q = cake(CakeConfig { link_rate_bps: 10_000_000, ..CakeConfig::default() });
    let flows = [with_dscp(pkt(1, 9, 1, 1000), 0), with_dscp(pkt(2, 9, 1, 1000), 8), with_dscp(pkt(3, 9, 1, 1000), 46)];
    let served = serve_backlogged(&mut q, &flows, 10_000_000, Duration::from_secs_f64(10.0));
    let total = served.iter().sum::<u64>() as f64;
    let shares: Vec<f64> = served.iter().map(|&b| b as f64 / total).collect();
    for (share, expect) in shares.iter().zip([1.0 - 0.25 - 0.0625, 0.0625, 0.25]) {
        assert!((share - expect).abs() < 0.002, "{shares:?}");
    }
    let tins = q.inner().tins();
    assert_eq!(tins.iter().map(|t| t.name).collect::<Vec<_>>(), ["best_effort", "bulk", "voice"]);
    assert_eq!(tins.iter().map(|t| t.threshold_rate_bps).collect::<Vec<_>>(), [10_000_000, 625_000, 2_500_000]);
}

#[test]
fn a_lone_bulk_tin_takes_the_whole_link() {
    // Thresholds are not caps: with only CS1 traffic, Bulk is the earliest-scheduled tin.
    let mut q = cake(CakeConfig { link_rate_bps: 10_000_000, ..CakeConfig::default() });
    let served = serve_backlogged(&mut q, &[with_dscp(pkt(2, 9, 1, 1000), 8)], 10_000_000, Duration::from_secs_f64(1.0));
    assert!(served[0] >= 1_249_000, "{served:?}");
}

#[test]
fn voice_under_its_threshold_waits_at_most_one_bulk_packet() {
    // Eight Best Effort flows keep the 10 Mbit/s link busy with 1500-byte packets; a voice
    // flow (EF) sends 200 bytes every 2 ms (800 kbit/s, under Voice's 2.5 Mbit/s). A voice
    // packet is next whenever its tin is within threshold, so it waits for at most the rest
    // of the packet on the wire: 1500 B at 10 Mbit/s = 1.2 ms.
    let mut q = cake(CakeConfig { link_rate_bps: 10_000_000, ..CakeConfig::default() });
    let bulk: Vec<Packet> = (1..=8).map(|port| pkt(1, 9, port, 1500)).collect();
    let (mut now, mut next_voice, mut worst_ns, mut voice_sent) = (0u64, 0u64, 0u64, 0);
    while now < 5_000 * MS {
        while next_voice <= now {
            q.enqueue(with_dscp(pkt(7, 9, 1, 200), 46), Instant(next_voice));
            next_voice += 2 * MS;
        }
        while q.len_pkts() < 200 {
            for b in &bulk {
                q.enqueue(*b, Instant(now));
            }
        }
        let p = q.dequeue(Instant(now)).unwrap();
        if p.dscp == 46 {
            worst_ns = worst_ns.max(now - p.arrival.0);
            voice_sent += 1;
        }
        now += Duration::serialization(p.len_bytes(), 10_000_000).0;
    }
    assert!(voice_sent >= 2490, "{voice_sent}");
    assert!(worst_ns <= 1_200_000, "{worst_ns} ns");
    assert_eq!(q.inner().tins()[2].stats.drop_aqm + q.inner().tins()[2].stats.drop_overlimit, 0);
}

fn ack_pkt(ack: u32) -> Packet {
    Packet {
        flow: FlowKey { src_ip: 5, dst_ip: 6, src_port: 5000, dst_port: 80, proto: 6 },
        ip_len_bytes: 52,
        ack,
        flags: TcpFlags(TcpFlags::ACK),
        ..Packet::default()
    }
}

#[test]
fn the_ack_filter_drops_redundant_acks_and_counts_them() {
    for (mode, expect) in [(AckFilter::Off, 0), (AckFilter::On, 2), (AckFilter::Aggressive, 3)] {
        let mut q = cake(CakeConfig { ack_filter: mode, ..CakeConfig::default() });
        // Four cumulative ACKs queue up: on arrival of the 3rd and the 4th, two older ones
        // are eligible and the oldest goes (on); aggressive also drops at the 2nd.
        for n in 1..=4 {
            q.enqueue(ack_pkt(n * 1000), Instant(0));
        }
        assert_eq!(q.stats().dropped(DropReason::AckFilter), expect, "{mode:?}");
        assert_eq!(q.inner().tins()[0].stats.ack_drops, expect);
        let ack_drop = q.counters().iter().find(|c| c.name == "ack_drop" && c.class == Some("best_effort")).unwrap().value;
        assert_eq!(ack_drop, expect);
        // The newest ACK always survives, and what is left is in order.
        let left: Vec<u32> = std::iter::from_fn(|| q.dequeue(Instant(0))).map(|p| p.ack).collect();
        assert_eq!(*left.last().unwrap(), 4000);
        assert!(left.windows(2).all(|w| w[0] < w[1]));
        q.check().unwrap();
    }
}

#[test]
fn eight_flows_of_one_set_get_eight_queues_and_a_ninth_collides() {
    let mut q = cake(CakeConfig { diffserv: DiffservMode::Besteffort, flow_mode: FlowMode::Flows, ..CakeConfig::default() });
    q.enqueue(pkt(1_000_000, 9, 1, 100), Instant(0));
    q.dequeue(Instant(0));
    let salt = q.inner().salt.unwrap();
    let set = |p: &Packet| Cake::hash32(flow_hash(&p.flow, salt)) % CAKE_QUEUES / CAKE_SET_WAYS;
    let target = set(&pkt(0, 9, 1, 100));
    let same_set: Vec<Packet> = (0..).map(|s| pkt(s, 9, 1, 100)).filter(|p| set(p) == target).take(9).collect();
    let (before, sparse_before) = (q.inner().tins()[0].stats.clone(), q.inner().tins()[0].sparse_flows);
    for p in &same_set {
        q.enqueue(*p, Instant(0));
    }
    let after = &q.inner().tins()[0].stats;
    assert_eq!(after.way_misses - before.way_misses, 8);
    assert_eq!(after.way_collisions - before.way_collisions, 1);
    // The ninth shares a queue: nine packets in eight more queues, each still delivered.
    assert_eq!(q.inner().tins()[0].sparse_flows - sparse_before, 8);
    assert_eq!(std::iter::from_fn(|| q.dequeue(Instant(0))).count(), 9);
}

#[test]
fn rejects_bad_values_naming_the_field() {
    let bad = |c: CakeConfig| c.build().unwrap_err().field;
    assert_eq!(bad(CakeConfig { target_ns: 0, ..CakeConfig::default() }), "target_ns");
    assert_eq!(bad(CakeConfig { interval_ns: 1, ..CakeConfig::default() }), "interval_ns");
    assert_eq!(bad(CakeConfig { limit_pkts: 0, ..CakeConfig::default() }), "limit_pkts");
    assert_eq!(bad(CakeConfig { mtu_bytes: 10, ..CakeConfig::default() }), "mtu_bytes");
    let c: CakeConfig = serde_json::from_str(r#"{"flow_mode": "dual_dsthost", "diffserv": "besteffort", "ack_filter": "aggressive"}"#).unwrap();
    assert_eq!((c.flow_mode, c.diffserv, c.ack_filter), (FlowMode::DualDsthost, DiffservMode::Besteffort, AckFilter::Aggressive));
    assert!(serde_json::from_str::<CakeConfig>(r#"{"diffserv": "diffserv5"}"#).is_err());
}

#[test]
fn buffer_follows_cakes_rule() {
    // 10 Mbit/s: four 100 ms intervals are 500 kB, under the 4 MiB floor; 10240 MTUs are
    // more than 4 MiB. 1 Gbit/s: 50 MB, capped at 10240 · 1514 bytes.
    let at = |rate| CakeConfig { link_rate_bps: rate, ..CakeConfig::default() }.buffer_limit_bytes();
    assert_eq!(at(10_000_000), 4 << 20);
    assert_eq!(at(1_000_000_000), 10_240 * 1514);
    assert_eq!(at(0), 10_240 * 1514);
    assert_eq!(CakeConfig { memory_limit_bytes: 20_000, ..CakeConfig::default() }.buffer_limit_bytes(), 20_000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Exact accounting (arrived = departed + dropped + queued, packets and bytes, after
    /// every step), the packet limit and the fixed tables, under random traffic with floods
    /// of new 5-tuples, in every flow mode (DSCPs and ACKs: `ack_filter_accounting`).
    #[test]
    fn accounting_and_bounds_hold(
        limit in 1u32..300,
        memory in prop_oneof![Just(0u64), 2_000u64..200_000],
        mode in 0usize..8,
        diffserv3 in any::<bool>(),
        ack_filter in 0usize..3,
        rate in prop_oneof![Just(0u64), Just(1_000_000u64), Just(100_000_000u64)],
        ops in testkit::ops(2000),
    ) {
        let flow_mode = [FlowMode::Flowblind, FlowMode::Srchost, FlowMode::Dsthost, FlowMode::Hosts, FlowMode::Flows,
            FlowMode::DualSrchost, FlowMode::DualDsthost, FlowMode::TripleIsolate][mode];
        let cfg = CakeConfig {
            limit_pkts: limit,
            memory_limit_bytes: memory,
            flow_mode,
            diffserv: if diffserv3 { DiffservMode::Diffserv3 } else { DiffservMode::Besteffort },
            ack_filter: [AckFilter::Off, AckFilter::On, AckFilter::Aggressive][ack_filter],
            link_rate_bps: rate,
            ..CakeConfig::default()
        };
        let mut q = cake(cfg.clone());
        let cap = q.inner().flow_table_len();
        prop_assert_eq!(cap, cfg.diffserv.tin_count() * CAKE_QUEUES as usize);
        testkit::run_ops(&mut q, &ops, limit as usize, cap)?;
        prop_assert!(q.backlog_bytes() <= cfg.buffer_limit_bytes());
        // The per-tin counters add up to the common ones.
        let counters = q.counters();
        prop_assert_eq!(counters.len(), 13 * cfg.diffserv.tin_count());
        let sum = |name: &str| counters.iter().filter(|c| c.name == name).map(|c| c.value).sum::<u64>();
        let s = q.stats();
        prop_assert_eq!(sum("pkts"), s.departed_pkts);
        prop_assert_eq!(sum("bytes"), s.departed_bytes);
        prop_assert_eq!(sum("drops"), s.dropped(DropReason::Overlimit) + s.dropped(DropReason::Early));
        prop_assert_eq!(sum("marks"), s.marked(MarkReason::Early));
        prop_assert_eq!(sum("ack_drop"), s.dropped(DropReason::AckFilter));
        prop_assert_eq!(sum("backlog"), q.backlog_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Pure ACKs, data, DSCPs of every tin and time steps through the ACK filter: the
    /// identity holds after every call and draining returns everything queued.
    #[test]
    fn ack_filter_accounting(seq in prop::collection::vec((0u8..4, 0u32..8, 0u8..64, 0u64..3_000_000, any::<bool>()), 1..1500), aggressive in any::<bool>()) {
        let mut q = cake(CakeConfig {
            ack_filter: if aggressive { AckFilter::Aggressive } else { AckFilter::On },
            link_rate_bps: 2_000_000,
            limit_pkts: 64,
            ..CakeConfig::default()
        });
        let mut now = 0u64;
        for (kind, n, dscp, wait, ece) in seq {
            now += wait;
            match kind {
                0 | 1 => {
                    let mut p = ack_pkt(n * 1000);
                    p.flow.src_port = 5000 + (n % 2) as u16;
                    p.dscp = dscp;
                    if ece { p.flags = TcpFlags(TcpFlags::ACK | TcpFlags::ECE); }
                    if kind == 1 { p.ts_val = n; }
                    q.enqueue(p, Instant(now));
                }
                2 => {
                    let mut p = pkt(n, 9, 1, 1500);
                    p.dscp = dscp;
                    q.enqueue(p, Instant(now));
                }
                _ => { q.dequeue(Instant(now)); }
            }
            prop_assert!(q.check().is_ok(), "{:?}", q.check());
            prop_assert!(q.len_pkts() <= 64);
        }
        while q.dequeue(Instant(now)).is_some() {}
        prop_assert!(q.is_empty() && q.check().is_ok());
    }
}
