//! Criterion benchmark of the four flow-queueing disciplines (SFQ, FQ, HostFQ, FQ-CoDel),
//! which share `qdisc::parts::drr`: 64 backlogged flows of mixed packet sizes held over
//! the buffer limit, so every arrival costs a DRR dequeue and a longest/fattest-queue drop.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use smallpipe_core::qdisc::{FqClassifier, FqCodelConfig, FqConfig, HostFqConfig, SfqConfig};
use smallpipe_core::{Accounted, FlowKey, Instant, Packet, Qdisc, Rng};

const FLOWS: u32 = 64;
const STEPS: u64 = 10_000;

fn packet(i: u64) -> Packet {
    let flow = FlowKey { src_ip: 1 + (i % 8) as u32, dst_ip: 100, src_port: (i % FLOWS as u64) as u16, dst_port: 80, proto: 6 };
    Packet { flow, ip_len_bytes: if i.is_multiple_of(3) { 64 } else { 1500 }, ..Packet::default() }
}

/// Two arrivals per departure, one packet per nanosecond of simulated time.
fn churn<Q: Qdisc>(q: &mut Accounted<Q>, t: &mut u64) {
    for _ in 0..STEPS {
        *t += 1;
        q.enqueue(packet(*t), Instant(*t));
        q.enqueue(packet(*t * 7), Instant(*t));
        q.dequeue(Instant(*t));
    }
}

fn bench<Q: Qdisc>(c: &mut Criterion, name: &str, qdisc: Q) {
    let mut g = c.benchmark_group("flow_queueing");
    g.throughput(Throughput::Elements(STEPS));
    let mut q = Accounted::new(qdisc, Rng::new(1, 0));
    let mut t = 0;
    churn(&mut q, &mut t);
    g.bench_function(name, |b| b.iter(|| churn(&mut q, &mut t)));
    g.finish();
}

fn disciplines(c: &mut Criterion) {
    bench(c, "sfq", SfqConfig { limit_pkts: 500, depth_pkts: 500, perturb_s: 0, ..SfqConfig::default() }.build().unwrap());
    bench(c, "fq_exact", FqConfig { limit_pkts: 500, classifier: FqClassifier::Exact, ..FqConfig::default() }.build().unwrap());
    bench(c, "host_fq_both", HostFqConfig { limit_pkts: 500, ..HostFqConfig::default() }.build().unwrap());
    bench(c, "fq_codel", FqCodelConfig { limit_pkts: 500, ..FqCodelConfig::default() }.build().unwrap());
}

criterion_group!(benches, disciplines);
criterion_main!(benches);
