//! Shared test scaffolding for the disciplines: packet builders, random operation scripts
//! (nexosim-style `Op` lists) and the DRR fairness measure.

use super::{Accounted, Qdisc};
use crate::packet::{Ecn, FlowKey, Packet};
use crate::rng::Rng;
use crate::time::Instant;
use proptest::prelude::*;

pub fn pkt(src_ip: u32, dst_ip: u32, src_port: u16, len: u16) -> Packet {
    Packet {
        flow: FlowKey { src_ip, dst_ip, src_port, dst_port: 80, proto: 6 },
        ip_len_bytes: len,
        ..Packet::default()
    }
}

#[derive(Debug, Clone)]
pub enum Op {
    Enq { src_ip: u32, dst_ip: u32, src_port: u16, len: u16, ect: bool },
    Deq,
    Wait { ns: u64 },
    /// A burst of `n` packets from `n` fresh random 5-tuples.
    Flood { seed: u64, n: u16 },
}

/// A mix of enqueues to a few recurring flows and hosts, enqueues from a flood of fresh
/// 5-tuples (random addresses and ports), dequeues and time steps.
pub fn ops(max_len: usize) -> impl Strategy<Value = Vec<Op>> {
    let recurring = (0u32..6, 0u32..3, 0u16..4, 40u16..=1500, any::<bool>()).prop_map(
        |(s, d, port, len, ect)| Op::Enq { src_ip: s, dst_ip: 100 + d, src_port: port, len, ect },
    );
    let fresh = (any::<u32>(), any::<u32>(), any::<u16>(), 40u16..=1500, any::<bool>()).prop_map(
        |(s, d, port, len, ect)| Op::Enq { src_ip: s, dst_ip: d, src_port: port, len, ect },
    );
    let op = prop_oneof![
        10 => recurring,
        10 => fresh,
        10 => Just(Op::Deq),
        3 => (0u64..50_000_000).prop_map(|ns| Op::Wait { ns }),
        1 => (any::<u64>(), 100u16..3000).prop_map(|(seed, n)| Op::Flood { seed, n }),
    ];
    prop::collection::vec(op, 1..max_len)
}

/// Run `ops` and check, after every step, the conservation identity, the packet limit and
/// the flow-table capacity.
pub fn run_ops<Q: Qdisc>(
    q: &mut Accounted<Q>,
    ops: &[Op],
    limit_pkts: usize,
    table_capacity: usize,
) -> Result<(), TestCaseError> {
    let mut now = 0u64;
    let check = |q: &Accounted<Q>| -> Result<(), TestCaseError> {
        prop_assert!(q.check().is_ok(), "{:?}", q.check());
        prop_assert!(q.len_pkts() <= limit_pkts, "{} > {}", q.len_pkts(), limit_pkts);
        prop_assert!(q.inner().flow_table_len() <= table_capacity);
        Ok(())
    };
    for op in ops {
        match *op {
            Op::Flood { seed, n } => {
                let mut rng = Rng::new(seed, 7);
                for _ in 0..n {
                    let r = rng.next_u64();
                    let p = pkt(r as u32, (r >> 32) as u32, rng.next_u64() as u16, 40 + (r % 1461) as u16);
                    q.enqueue(p, Instant(now));
                    check(q)?;
                }
            }
            Op::Enq { src_ip, dst_ip, src_port, len, ect } => {
                let mut p = pkt(src_ip, dst_ip, src_port, len);
                p.ecn = if ect { Ecn::Ect } else { Ecn::NotEct };
                q.enqueue(p, Instant(now));
            }
            Op::Deq => {
                q.dequeue(Instant(now));
            }
            Op::Wait { ns } => now += ns,
        }
        check(q)?;
    }
    // Draining returns every queued packet (nothing is lost or invented).
    let mut guard = 0;
    while !q.is_empty() {
        let before = q.len_pkts();
        q.dequeue(Instant(now));
        prop_assert!(q.len_pkts() < before, "dequeue made no progress");
        guard += 1;
        prop_assert!(guard <= limit_pkts + 1);
    }
    prop_assert!(q.check().is_ok());
    Ok(())
}

/// The DRR unfairness over all windows: with `served` the sequence of (class, bytes)
/// dequeued, the largest over class pairs (a, b) of `max_t X(t) − min_t X(t)`, where
/// `X(t) = S_a(t) − S_b(t)` and `S` is cumulative bytes. `|ΔS_a − ΔS_b|` over any window
/// is at most this.
pub fn max_window_unfairness(served: &[(usize, u64)], classes: usize) -> u64 {
    let mut worst = 0i64;
    for a in 0..classes {
        for b in a + 1..classes {
            let (mut x, mut lo, mut hi) = (0i64, 0i64, 0i64);
            for &(c, bytes) in served {
                if c == a {
                    x += bytes as i64;
                } else if c == b {
                    x -= bytes as i64;
                }
                lo = lo.min(x);
                hi = hi.max(x);
            }
            worst = worst.max(hi - lo);
        }
    }
    worst as u64
}

/// Fill `flows` (templates: 5-tuples) with `per_flow` packets each of random sizes (40–1500
/// bytes), serve a third of them at the arrival instant (no AQM sojourn) while every flow
/// stays backlogged, and check the DRR bound: over every window, two classes' bytes differ
/// by less than `bound`.
pub fn drr_fairness<Q: Qdisc>(
    q: &mut Accounted<Q>,
    flows: &[Packet],
    class_of: impl Fn(&Packet) -> usize,
    classes: usize,
    seed: u64,
    per_flow: usize,
    bound: u64,
) -> Result<(), TestCaseError> {
    let mut rng = Rng::new(seed, 1);
    for _ in 0..per_flow {
        for f in flows {
            let mut p = *f;
            p.ip_len_bytes = 40 + rng.below_inclusive(1460) as u16;
            q.enqueue(p, Instant(0));
        }
    }
    let n = per_flow * flows.len() / 3;
    let mut served = Vec::with_capacity(n);
    for _ in 0..n {
        let p = q.dequeue(Instant(0)).expect("backlogged");
        served.push((class_of(&p), p.len_bytes()));
    }
    let worst = max_window_unfairness(&served, classes);
    prop_assert!(worst < bound, "unfairness {} ≥ bound {}", worst, bound);
    Ok(())
}
