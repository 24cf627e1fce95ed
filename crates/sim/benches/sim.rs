//! Criterion benchmarks of the simulator's hot paths: the event queue and a short run of
//! the TAQ Figure 2 DropTail dumbbell. `smallpipe bench` reports the full-size run.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use smallpipe_core::Instant;
use smallpipe_sim::event::{Event, EventQueue};
use smallpipe_sim::{simulate, Scenario};

fn event_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("push_pop_10k_at_depth_1k", |b| {
        let mut q = EventQueue::default();
        for i in 0..1000u64 {
            q.push(Instant(i * 7919 % 1000), Event::TxDone { link: i as u32 });
        }
        let mut t = 1000u64;
        b.iter(|| {
            for _ in 0..10_000 {
                let (at, ev) = q.pop().unwrap();
                t += 1;
                q.push(Instant(at.as_nanos() + 1 + t % 977), ev);
            }
        });
    });
    // The Figure 5.2 scenario's shape: some 2 000 near events (links' head-of-line events)
    // under 28 000 timers 0.2-1.2 s ahead, most of them stale RTO timers of finished flows.
    g.bench_function("push_pop_10k_at_depth_30k_far_timers", |b| {
        let mut q = EventQueue::default();
        let far = |i: u64| 200_000_000 + i * 7919 % 1_000_000_000;
        for i in 0..30_000u64 {
            let at = if i < 2000 { i * 7919 % 4000 } else { far(i) };
            q.push(Instant(at), Event::TxDone { link: (i < 2000) as u32 });
        }
        let mut i = 0u64;
        b.iter(|| {
            for _ in 0..10_000 {
                let (at, ev) = q.pop().unwrap();
                i += 1;
                let gap = if ev == (Event::TxDone { link: 1 }) { 1 + i % 3989 } else { far(i) };
                q.push(Instant(at.as_nanos() + gap), ev);
            }
        });
    });
    g.finish();
}

fn fig2_dumbbell(c: &mut Criterion) {
    let json = r#"{"seed":1,"duration_s":100,"slice_s":20,
        "link":{"rate_bps":2000000,"delay_ms":1,"queue":{"kind":"droptail","limit_pkts":100}},
        "tcp":{"packet_size_bytes":500,"recovery":"newreno","delayed_ack":false,"timestamps":false,
               "initial_window_pkts":2,"min_rto_ms":200},
        "flows":[{"app":"bulk","count":200,"rtt_ms":200,"start_s":[0,1]}]}"#;
    let sc = Scenario::from_json(json).unwrap();
    let packets = simulate(&sc).unwrap().packets;
    let mut g = c.benchmark_group("fig2_dumbbell");
    g.sample_size(10);
    g.throughput(Throughput::Elements(packets));
    g.bench_function("200_flows_2mbps_100s", |b| b.iter(|| simulate(&sc).unwrap()));
    g.finish();
}

criterion_group!(benches, event_queue, fig2_dumbbell);
criterion_main!(benches);
