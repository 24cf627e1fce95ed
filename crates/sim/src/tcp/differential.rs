//! The live endpoint held to its frozen copy (`tcp/frozen/`, issue 36 item 1): random scripts
//! of application writes and closes, deliveries in any order, drops and waits that fire
//! the timers, over every valid combination of knobs, run on both; after every step the
//! segments each emitted (sequence and ACK numbers, flags, SACK blocks, timestamps: the
//! whole `Packet`) and each endpoint's state, window, threshold, RTO, deadline and counters
//! must be identical.
//!
//! `PROPTEST_CASES` sets the number of scripts (default 10 000 here; the rebuild is checked
//! with 100 000: docs/tcp.md).

use super::config::*;
use super::frozen;
use super::{Endpoint, TcpParams};
use proptest::prelude::*;
use proptest::test_runner::Config;
use smallpipe_core::{FlowKey, Instant, Packet};

const KEY: FlowKey = FlowKey { src_ip: 1, dst_ip: 2, src_port: 40_000, dst_port: 80, proto: 6 };

/// One step of a script.
#[derive(Debug, Clone)]
enum Op {
    /// The client's application writes (an interactive burst if `burst`).
    Write { bytes: u64, burst: bool },
    /// The server's application answers (once the connection is up).
    Answer { bytes: u64 },
    /// The client's application closes (once).
    Close,
    /// After `gap_us`, the packet at `index` (modulo those in flight) reaches its receiver.
    Deliver { index: usize, gap_us: u64 },
    /// The packet at `index` is lost.
    Drop { index: usize },
    /// Time passes: every timer due fires, at its own deadline.
    Wait { ms: u64 },
}

/// What is compared of an endpoint after each step.
#[derive(Debug, PartialEq)]
struct Snapshot {
    state: String,
    cwnd: u64,
    ssthresh: u64,
    rto_ns: u64,
    deadline: Option<Instant>,
    flight: u64,
    acked: u64,
    in_timeout: bool,
    counters: [u64; 10],
    finished_at: Option<Instant>,
    failed: bool,
}

/// The endpoint's interface the simulator uses, for both implementations.
trait Side: Sized {
    type Params;
    fn params(c: &TcpConfig) -> Self::Params;
    fn client(p: &Self::Params, iss: u32) -> Self;
    fn server(p: &Self::Params, iss: u32) -> Self;
    fn connect(&mut self, now: Instant, p: &Self::Params, out: &mut Vec<Packet>);
    fn write(&mut self, bytes: u64, burst: bool, now: Instant, p: &Self::Params, out: &mut Vec<Packet>);
    fn close(&mut self, now: Instant, p: &Self::Params, out: &mut Vec<Packet>);
    fn segment(&mut self, seg: &Packet, now: Instant, p: &Self::Params, out: &mut Vec<Packet>);
    fn timer(&mut self, now: Instant, p: &Self::Params, out: &mut Vec<Packet>);
    fn deadline(&self) -> Option<Instant>;
    fn established(&self) -> bool;
    fn snapshot(&self) -> Snapshot;
}

macro_rules! side {
    ($endpoint:ty, $params:ty, $build:expr) => {
        impl Side for $endpoint {
            type Params = $params;
            fn params(c: &TcpConfig) -> $params {
                $build(c)
            }
            fn client(p: &$params, iss: u32) -> Self {
                <$endpoint>::client(KEY, iss, p)
            }
            fn server(p: &$params, iss: u32) -> Self {
                <$endpoint>::listener(KEY.reversed(), iss, p)
            }
            fn connect(&mut self, now: Instant, p: &$params, out: &mut Vec<Packet>) {
                <$endpoint>::connect(self, now, p, out)
            }
            fn write(&mut self, bytes: u64, burst: bool, now: Instant, p: &$params, out: &mut Vec<Packet>) {
                self.app_write(bytes, burst, now, p, out)
            }
            fn close(&mut self, now: Instant, p: &$params, out: &mut Vec<Packet>) {
                self.app_close(now, p, out)
            }
            fn segment(&mut self, seg: &Packet, now: Instant, p: &$params, out: &mut Vec<Packet>) {
                self.on_segment(seg, now, p, out)
            }
            fn timer(&mut self, now: Instant, p: &$params, out: &mut Vec<Packet>) {
                self.on_timer(now, p, out)
            }
            fn deadline(&self) -> Option<Instant> {
                self.next_deadline()
            }
            fn established(&self) -> bool {
                format!("{:?}", self.state) == "Established"
            }
            fn snapshot(&self) -> Snapshot {
                let s = &self.stats;
                Snapshot {
                    state: format!("{:?}", self.state),
                    cwnd: self.cwnd_bytes(),
                    ssthresh: self.ssthresh_bytes(),
                    rto_ns: self.rto().as_nanos(),
                    deadline: self.next_deadline(),
                    flight: self.flight_bytes(),
                    acked: self.bytes_acked(),
                    in_timeout: self.in_timeout(),
                    counters: [
                        s.segments_sent, s.retransmits, s.timeouts, s.timeouts_in_recovery, s.timeouts_after_dupacks,
                        s.timeouts_repeated, s.syn_timeouts, s.fast_retransmits, s.bytes_delivered, s.backoff_ns,
                    ],
                    finished_at: self.finished_at,
                    failed: self.failed,
                }
            }
        }
    };
}

side!(Endpoint, TcpParams, |c| TcpParams::try_from(c).expect("the strategy draws valid tables"));
side!(frozen::Endpoint, frozen::TcpParams, frozen::TcpParams::from_config);

/// A client and a server joined by a network the script drives: packets in flight wait
/// until a step delivers or drops them.
struct World<E: Side> {
    p: E::Params,
    client: E,
    server: E,
    now: Instant,
    closed: bool,
    /// (to the server, packet), in send order.
    flight: Vec<(bool, Packet)>,
}

impl<E: Side> World<E> {
    fn new(c: &TcpConfig, iss: (u32, u32)) -> (Self, Vec<(bool, Packet)>) {
        let p = E::params(c);
        let mut w = World { client: E::client(&p, iss.0), server: E::server(&p, iss.1), p, now: Instant(0), closed: false, flight: Vec::new() };
        let mut out = Vec::new();
        w.client.connect(w.now, &w.p, &mut out);
        let sent = w.sent(true, out);
        (w, sent)
    }

    /// Records what one side emitted; returns it tagged with its direction.
    fn sent(&mut self, to_server: bool, out: Vec<Packet>) -> Vec<(bool, Packet)> {
        let tagged: Vec<_> = out.into_iter().map(|p| (to_server, p)).collect();
        self.flight.extend(tagged.iter().copied());
        tagged
    }

    /// Fires every timer due by `until`, each at its deadline, earliest first (the client
    /// first on a tie, as the simulator's insertion order would have it for these two).
    fn fire_timers(&mut self, until: Instant, emitted: &mut Vec<(bool, Packet)>) {
        for _ in 0..10_000 {
            let (c, s) = (self.client.deadline(), self.server.deadline());
            let client_first = match (c, s) {
                (Some(c), Some(s)) => c <= s,
                (c, _) => c.is_some(),
            };
            let Some(due) = (if client_first { c } else { s }).filter(|&d| d <= until) else { return };
            self.now = self.now.max(due);
            let mut out = Vec::new();
            if client_first {
                self.client.timer(self.now, &self.p, &mut out);
            } else {
                self.server.timer(self.now, &self.p, &mut out);
            }
            emitted.extend(self.sent(client_first, out));
        }
    }

    fn step(&mut self, op: &Op) -> Vec<(bool, Packet)> {
        let mut emitted = Vec::new();
        let mut out = Vec::new();
        match *op {
            Op::Write { bytes, burst } if !self.closed => {
                self.client.write(bytes, burst, self.now, &self.p, &mut out);
                emitted.extend(self.sent(true, out));
            }
            Op::Answer { bytes } if self.server.established() => {
                self.server.write(bytes, false, self.now, &self.p, &mut out);
                emitted.extend(self.sent(false, out));
            }
            Op::Close if !self.closed => {
                self.closed = true;
                self.client.close(self.now, &self.p, &mut out);
                emitted.extend(self.sent(true, out));
            }
            Op::Deliver { index, gap_us } if !self.flight.is_empty() => {
                let at = Instant(self.now.0 + gap_us * 1_000);
                self.fire_timers(at, &mut emitted);
                self.now = at;
                if !self.flight.is_empty() {
                    let (to_server, pkt) = self.flight.remove(index % self.flight.len());
                    let mut out = Vec::new();
                    if to_server {
                        self.server.segment(&pkt, self.now, &self.p, &mut out);
                    } else {
                        self.client.segment(&pkt, self.now, &self.p, &mut out);
                    }
                    emitted.extend(self.sent(!to_server, out));
                }
            }
            Op::Drop { index } if !self.flight.is_empty() => {
                let n = self.flight.len();
                self.flight.remove(index % n);
            }
            Op::Wait { ms } => {
                let at = Instant(self.now.0 + ms * 1_000_000);
                self.fire_timers(at, &mut emitted);
                self.now = at;
            }
            _ => {}
        }
        emitted
    }
}

fn one_of<T: Clone + std::fmt::Debug + 'static>(values: Vec<T>) -> impl Strategy<Value = T> {
    proptest::sample::select(values)
}

/// Every valid combination of knobs (a rule refused with another knob is not drawn with it).
fn configs() -> impl Strategy<Value = TcpConfig> {
    let recovery = one_of(vec![Recovery::Reno, Recovery::Newreno, Recovery::Sack]);
    let congestion = (one_of(vec![Congestion::Reno, Congestion::Cubic]), any::<bool>(), any::<bool>());
    (recovery, congestion).prop_flat_map(|(recovery, (congestion, hystart, fast_convergence))| {
        let sack = recovery == Recovery::Sack;
        let sack_only = move |values: Vec<u8>| one_of(if sack { values } else { vec![0] });
        let growth = if congestion == Congestion::Reno && !hystart {
            vec![CwndGrowth::PerAck, CwndGrowth::ByteCounting, CwndGrowth::Linux]
        } else {
            vec![CwndGrowth::PerAck]
        };
        let sack_rules = (
            sack_only(vec![0, 1]), // dupack_rule
            sack_only(vec![0, 1]), // recovery_pacing
            sack_only(vec![0, 1]), // loss_detection
            sack_only(vec![0, 1, 2]), // recovery_rto
            sack_only(vec![0, 1, 2]), // disorder_ack
            sack_only(vec![0, 1]), // recovery_partial_ack
            sack_only(vec![0, 1]), // recovery_pipe
        );
        let timing = (
            one_of(vec![SsthreshFrom::FlightSize, SsthreshFrom::Cwnd]),
            one_of(growth),
            one_of(vec![Pacing::None, Pacing::Linux]),
            one_of(vec![AckRule::Rfc5681, AckRule::Linux]),
            one_of(vec![RtoRule::Rfc6298, RtoRule::Linux]),
            one_of(vec![RttSamples::Timed, RttSamples::EveryAck]),
            one_of(vec![FastRetransmitRto::Restart, FastRetransmitRto::Keep]),
        );
        let switches = proptest::collection::vec(any::<bool>(), 8);
        let sizes = (
            one_of(vec![92u32, 140, 552, 1052]),           // packet_size_bytes (MSS 40 to 1000)
            1u32..=10,                                    // initial_window_pkts
            1u32..=4,                                     // dupack_threshold
            one_of(vec![1000.0f64, 200.0, 50.0]),         // min_rto_ms
            one_of(vec![None, Some(20.0f64)]),            // min_rto_prime_ms
            0u32..=2,                                     // padding_dummies
            1u32..=3,                                     // diversity_copies
            one_of(vec![65_535u64, 8_000]),               // rwnd_bytes
        );
        (sack_rules, timing, switches, sizes).prop_map(move |(r, t, sw, z)| {
            let mut c = TcpConfig::default();
            c.recovery = recovery;
            c.congestion = congestion;
            c.hystart = hystart;
            c.cubic_fast_convergence = fast_convergence;
            c.dupack_rule = [DupackRule::Rfc, DupackRule::Ns3][r.0 as usize];
            c.recovery_pacing = [RecoveryPacing::Rfc6675, RecoveryPacing::Prr][r.1 as usize];
            c.loss_detection = [LossDetection::Dupthresh, LossDetection::Rack][r.2 as usize];
            c.recovery_rto = [RecoveryRto::Rfc6298, RecoveryRto::FirstPartial, RecoveryRto::Linux][r.3 as usize];
            c.disorder_ack = [DisorderAck::Rfc, DisorderAck::Ns3Timer, DisorderAck::Ns3][r.4 as usize];
            c.recovery_partial_ack = [PartialAck::Rfc6675, PartialAck::Ns3][r.5 as usize];
            c.recovery_pipe = [RecoveryPipe::Rfc6675, RecoveryPipe::Ns3][r.6 as usize];
            (c.ssthresh_from, c.cwnd_growth, c.pacing, c.ack_rule, c.rto_rule, c.rtt_samples, c.fast_retransmit_rto) = t;
            c.delayed_ack = sw[0];
            c.ack_first_data = sw[1];
            c.limited_transmit = sw[2];
            c.timestamps = sw[3];
            c.slow_start_after_idle = sw[4];
            c.thin_linear_timeouts = sw[5];
            c.fully_backlogged = sw[6];
            c.smart_framing = sw[7];
            (c.packet_size_bytes, c.initial_window_pkts, c.dupack_threshold, c.min_rto_ms, c.min_rto_prime_ms) =
                (z.0, z.1, z.2, z.3, z.4);
            (c.padding_dummies, c.diversity_copies, c.rwnd_bytes) = (z.5, z.6, z.7);
            c.delayed_ack_ms = 40.0;
            c.diversity_copy_retransmissions = c.diversity_copies > 1 && sw[0] != sw[1];
            c.padding_dummy_bytes = 20.min(c.mss_bytes());
            c
        })
    })
    // What is still refused (RACK with ns-3's pipe, minRTO' with Linux's RTO, ...) is
    // refused by the same check the scenario uses.
    .prop_filter("a valid [tcp]", |c| c.validate().is_ok())
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        2 => (1u64..6_000, any::<bool>()).prop_map(|(bytes, burst)| Op::Write { bytes, burst }),
        1 => (1u64..3_000).prop_map(|bytes| Op::Answer { bytes }),
        1 => Just(Op::Close),
        12 => (any::<usize>(), prop_oneof![Just(0u64), 1u64..2_000, 2_000u64..120_000])
            .prop_map(|(index, gap_us)| Op::Deliver { index, gap_us }),
        2 => any::<usize>().prop_map(|index| Op::Drop { index }),
        2 => prop_oneof![1u64..50, 50u64..1_500, 1_500u64..20_000].prop_map(|ms| Op::Wait { ms }),
    ];
    proptest::collection::vec(op, 1..160)
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

proptest! {
    #![proptest_config(Config { cases: cases(), max_global_rejects: 100_000, ..Config::default() })]

    #[test]
    fn the_endpoint_emits_and_holds_what_its_frozen_copy_does(
        c in configs(),
        iss in (any::<u32>(), prop_oneof![any::<u32>(), Just(u32::MAX - 100)]),
        script in ops(),
    ) {
        let (mut live, sent_live) = World::<Endpoint>::new(&c, iss);
        let (mut frozen, sent_frozen) = World::<frozen::Endpoint>::new(&c, iss);
        prop_assert_eq!(sent_live, sent_frozen);
        for (i, op) in script.iter().enumerate() {
            let (a, b) = (live.step(op), frozen.step(op));
            prop_assert_eq!(&a, &b, "step {} {:?}: emitted", i, op);
            prop_assert_eq!(live.client.snapshot(), frozen.client.snapshot(), "step {} {:?}: client", i, op);
            prop_assert_eq!(live.server.snapshot(), frozen.server.snapshot(), "step {} {:?}: server", i, op);
            prop_assert_eq!(live.now, frozen.now);
        }
    }
}

/// The harness can fail: a copy with one rule changed (here the duplicate-ACK threshold
/// the live side is given) parts from the frozen copy on a script with a loss.
#[test]
fn the_harness_sees_a_changed_rule() {
    let c = TcpConfig { packet_size_bytes: 552, delayed_ack: false, ..TcpConfig::default() };
    let changed = TcpConfig { dupack_threshold: 2, ..c.clone() };
    let mut live = World::<Endpoint>::new(&changed, (0, 0)).0;
    let mut frozen = World::<frozen::Endpoint>::new(&c, (0, 0)).0;
    let mut script = vec![Op::Deliver { index: 0, gap_us: 50_000 }, Op::Deliver { index: 0, gap_us: 50_000 },
        Op::Deliver { index: 0, gap_us: 50_000 }, Op::Write { bytes: 20_000, burst: false }, Op::Drop { index: 0 }];
    script.extend((0..12).map(|_| Op::Deliver { index: 0, gap_us: 10_000 }));
    let parted = script.iter().any(|op| live.step(op) != frozen.step(op));
    assert!(parted, "a different DupThresh must show in the segments");
}

/// The scripts reach what the rebuild moves: over 400 drawn as the property test draws them,
/// most connections open, and fast retransmits, timeouts and SACK-recovery retransmissions
/// each happen in many of them (so a green run is not green for want of losses).
#[test]
fn the_scripts_reach_recovery_and_timeouts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]));
    let strategy = (configs(), (any::<u32>(), any::<u32>()), ops());
    let (mut opened, mut fast, mut timeouts, mut sack_rexmit) = (0, 0, 0, 0);
    for _ in 0..400 {
        let (c, iss, script) = strategy.new_tree(&mut runner).unwrap().current();
        let mut w = World::<Endpoint>::new(&c, iss).0;
        for op in &script {
            w.step(op);
        }
        let s = &w.client.stats;
        opened += (s.bytes_delivered > 0 || w.server.stats.bytes_delivered > 0) as u32;
        fast += (s.fast_retransmits > 0) as u32;
        timeouts += (s.timeouts > 0) as u32;
        sack_rexmit += (c.recovery == Recovery::Sack && s.fast_retransmits > 0 && s.retransmits > s.fast_retransmits) as u32;
    }
    assert!(opened >= 200 && fast >= 20 && timeouts >= 40 && sack_rexmit >= 5,
        "opened {opened}, fast retransmits {fast}, timeouts {timeouts}, SACK recoveries resending more {sack_rexmit}");
}
