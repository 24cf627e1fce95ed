//! The endpoint as it was before issue 36 rebuilt it from parts, frozen (test builds only):
//! the differential test (`tcp/differential.rs`) holds the live endpoint to it, segment by
//! segment. Do not edit, except to follow a rename outside `tcp/`; delete it once the
//! harness runs against recorded traces instead (issue 36, item 1).
#![allow(dead_code)]

//! A TCP endpoint faithful to the RFCs that decide timeouts and recovery in small windows.
//!
//! Read first: RFC 793 (states), RFC 5681 (slow start, congestion avoidance, fast
//! retransmit), RFC 6582 (NewReno), RFC 6675 (SACK loss recovery) with RFC 2018 (SACK
//! blocks), RFC 6298 (RTO, Karn, backoff), RFC 7323 (timestamps), RFC 3042 (limited
//! transmit), RFC 3390/6928 (initial window); RFC 9438 (CUBIC, in `cubic.rs`); RFC 9406
//! (HyStart++, in `hystart.rs`, off by default).
//!
//! Both ends of a connection are `Endpoint`s: each has a send half and a receive half, so
//! ACKs, FINs and their retransmissions follow one set of rules. Sequence numbers on the
//! wire are 32-bit and start at a random ISS; internally every endpoint counts offsets from
//! its ISS in `u64` (offset 0 is the SYN, data starts at 1).
//!
//! Choices where the RFCs leave room (see docs/tcp.md): no Nagle (each write is sent at
//! once); the listener retransmits its SYN-ACK on its own timer and also answers a
//! retransmitted SYN at once; after an RTO the sender goes back to `snd_una` but keeps the
//! SACK scoreboard and skips what it covers (RFC 6675 §5.1: our receivers never renege).

pub(crate) mod compact;
pub mod cubic;
mod growth;
pub mod hystart;
mod pacing;
mod rack;
mod rtt;
mod rtt_samples;
pub mod sack;

pub use rtt::{LinuxSample, LinuxVar, RttEstimator};

use crate::tcp::config::{
    AckRule, Congestion, CwndGrowth, DisorderAck, DupackRule, FastRetransmitRto, LossDetection, Pacing,
    PartialAck, Recovery, RecoveryPacing, RecoveryPipe, RecoveryRto, RtoRule, RttSamples, SsthreshFrom, TcpConfig,
};
use compact::{LazyVec, Opt64};
use cubic::Cubic;
use hystart::HyStart;
use pacing::Pacer;
use rack::{LossMarks, Rack};
use rtt_samples::SendTimes;
use sack::RangeSet;
use smallpipe_core::packet::{SackBlock, MAX_SACK_BLOCKS};
use smallpipe_core::{Duration, FlowKey, Instant, Packet, TcpFlags};
use std::collections::VecDeque;
use std::num::NonZeroU64;

/// TCP connection states (RFC 793), named as there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

/// The knobs of `TcpConfig`, converted to the units the endpoint works in.
#[derive(Debug, Clone)]
pub struct TcpParams {
    pub mss: u64,
    pub header_bytes: u32,
    pub initial_window: u64,
    pub recovery: Recovery,
    pub congestion: Congestion,
    pub cubic_fast_convergence: bool,
    pub ssthresh_from: SsthreshFrom,
    pub hystart: bool,
    pub delayed_ack: Option<Duration>,
    pub ack_first_data: bool,
    /// Linux's quick-ACK mode: this many immediate ACKs when it starts (0: `ack_rule = "rfc5681"`).
    pub quick_acks: u8,
    pub limited_transmit: bool,
    pub dupthresh: u32,
    pub dupack_rule: DupackRule,
    /// The timer restarts on the first partial ACK of a recovery only (NewReno, or SACK as ns-3).
    pub first_partial_rto: bool,
    pub disorder_ack: DisorderAck,
    pub recovery_partial_ack: PartialAck,
    pub recovery_pipe: RecoveryPipe,
    pub fast_retransmit_rto: FastRetransmitRto,
    /// Retransmitting the segment at `snd_una` restarts the timer (`recovery_rto = "linux"`).
    pub head_retransmit_rto: bool,
    /// RFC 6937 PRR in SACK recovery (`recovery_pacing = "prr"`).
    pub prr: bool,
    /// RFC 8985 RACK finds lost segments instead of RFC 6675's DupThresh (`loss_detection = "rack"`).
    pub rack: bool,
    /// Linux's pacing of data segments (`pacing = "linux"`).
    pub pacing: bool,
    pub cwnd_growth: CwndGrowth,
    /// RFC 3465's L, bytes.
    pub abc_limit: u64,
    pub rwnd: u64,
    pub min_rto: Duration,
    pub linux_rto: bool,
    /// `rtt_samples = "every_ack"`: Linux's sample on every ACK (`rtt_samples.rs`).
    pub rtt_every_ack: bool,
    pub max_rto: Duration,
    pub initial_rto: Duration,
    pub syn_retries: u32,
    pub timestamps: bool,
    pub granularity: Duration,
    pub slow_start_after_idle: bool,
    pub thin_linear_timeouts: bool,
    /// Differentiated minRTO: (minRTO′, fraction of the window).
    pub min_rto_prime: Option<(Duration, f64)>,
    pub padding_dummies: u32,
    pub padding_dummy_bytes: u64,
    pub diversity_copies: u32,
    pub diversity_copy_retransmissions: bool,
    pub fully_backlogged: bool,
    pub smart_framing: bool,
}

impl TcpParams {
    pub fn from_config(c: &TcpConfig) -> Self {
        let mss = c.mss_bytes() as u64;
        TcpParams {
            mss,
            header_bytes: c.header_bytes(),
            initial_window: c.initial_window_pkts as u64 * mss,
            recovery: c.recovery,
            congestion: c.congestion,
            cubic_fast_convergence: c.cubic_fast_convergence,
            ssthresh_from: c.ssthresh_from,
            hystart: c.hystart,
            delayed_ack: c.delayed_ack.then(|| Duration::from_millis_f64(c.delayed_ack_ms)),
            ack_first_data: c.ack_first_data,
            // Linux tcp_incr_quickack: rcv_wnd / (2 rcv_mss), at least 2, at most TCP_MAX_QUICKACKS = 16.
            quick_acks: match c.ack_rule {
                AckRule::Rfc5681 => 0,
                AckRule::Ns2 | AckRule::Ns2Full => unreachable!("added after the freeze: never drawn for the frozen copy"),
                AckRule::Linux => (c.rwnd_bytes / (2 * mss)).clamp(2, 16) as u8,
            },
            limited_transmit: c.limited_transmit,
            dupthresh: c.dupack_threshold,
            dupack_rule: c.dupack_rule,
            first_partial_rto: c.recovery == Recovery::Newreno || c.recovery_rto == RecoveryRto::FirstPartial,
            disorder_ack: c.disorder_ack,
            recovery_partial_ack: c.recovery_partial_ack,
            recovery_pipe: c.recovery_pipe,
            fast_retransmit_rto: c.fast_retransmit_rto,
            head_retransmit_rto: c.recovery_rto == RecoveryRto::Linux,
            prr: c.recovery_pacing == RecoveryPacing::Prr,
            rack: c.loss_detection == LossDetection::Rack,
            pacing: c.pacing == Pacing::Linux,
            cwnd_growth: c.cwnd_growth,
            abc_limit: c.abc_limit_pkts as u64 * mss,
            rwnd: c.rwnd_bytes,
            min_rto: Duration::from_millis_f64(c.min_rto_ms),
            linux_rto: c.rto_rule == RtoRule::Linux,
            rtt_every_ack: c.rtt_samples == RttSamples::EveryAck,
            max_rto: Duration::from_millis_f64(c.max_rto_ms),
            initial_rto: Duration::from_millis_f64(c.initial_rto_ms),
            syn_retries: c.syn_retries,
            timestamps: c.timestamps,
            granularity: Duration::from_millis_f64(c.clock_granularity_ms),
            slow_start_after_idle: c.slow_start_after_idle,
            thin_linear_timeouts: c.thin_linear_timeouts,
            min_rto_prime: c.min_rto_prime_ms.map(|m| (Duration::from_millis_f64(m), c.min_rto_prime_fraction)),
            padding_dummies: c.padding_dummies,
            padding_dummy_bytes: c.padding_dummy_bytes as u64,
            diversity_copies: c.diversity_copies,
            diversity_copy_retransmissions: c.diversity_copy_retransmissions,
            fully_backlogged: c.fully_backlogged,
            smart_framing: c.smart_framing,
        }
    }
    fn sack(&self) -> bool {
        self.recovery == Recovery::Sack
    }
}

/// The earlier of two optional deadlines; `None` only if both are.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Counters the recorder reads.
#[derive(Debug, Clone, Default)]
pub struct EndpointStats {
    /// Segments carrying data, SYN or FIN (pure ACKs excluded), first sends and resends.
    pub segments_sent: u64,
    pub retransmits: u64,
    /// Retransmission timeouts while sending data or FIN.
    pub timeouts: u64,
    /// Of `timeouts`, by where they fired: during fast recovery (a resend lost, or the
    /// partial ACKs dried up); after duplicate ACKs too few to start fast retransmit (a
    /// small window); and backed-off repeats for a segment a timeout already resent. The
    /// rest came with no duplicate ACK at all (the whole window or its tail lost).
    pub timeouts_in_recovery: u64,
    pub timeouts_after_dupacks: u64,
    pub timeouts_repeated: u64,
    pub syn_timeouts: u64,
    pub fast_retransmits: u64,
    /// In-order payload bytes handed to the receiving application.
    pub bytes_delivered: u64,
    /// Time spent in retransmission-timeout episodes (SYN or data), closed ones only: from
    /// when the timer that expired was armed (the last progress before the silence) to the
    /// first acknowledgement of new data after it. Covers the first RTO and every backed-off one.
    pub backoff_ns: u64,
}

/// Who grows cwnd in congestion avoidance and sets ssthresh on a congestion event
/// (smoltcp's `AnyController`); slow start, fast retransmit and recovery are shared.
#[derive(Debug, Clone)]
pub enum CongestionControl {
    /// RFC 5681: one MSS per RTT, ssthresh = FlightSize / 2 (or cwnd / 2, `tcp.ssthresh_from`).
    Reno,
    /// RFC 9438; boxed so the default, Reno, does not carry its state.
    Cubic(Box<Cubic>),
}

impl CongestionControl {
    fn new(p: &TcpParams) -> Self {
        match p.congestion {
            Congestion::Reno => CongestionControl::Reno,
            Congestion::Cubic => CongestionControl::Cubic(Box::new(Cubic::new(p.cubic_fast_convergence))),
            Congestion::Bbr => unreachable!("the frozen copy predates BBR"),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct FastRecovery {
    /// Highest offset retransmitted in this episode (RFC 6675 HighRxt, exclusive end).
    high_rxt: u64,
    /// RFC 6582: the RTO is re-armed on the first partial ACK only.
    first_partial: bool,
}

/// An interactive burst written and not yet acknowledged: its bytes `[start, end)`.
#[derive(Debug, Clone, Copy)]
struct PendingBurst {
    start: u64,
    end: u64,
    written: Instant,
    /// First transmission of its first byte (the paper's marked-packet send time).
    first_sent: Option<Instant>,
    /// First ACK whose cumulative ACK or SACK blocks covered all of it.
    covered: Option<Instant>,
}

/// An acknowledged interactive burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedBurst {
    pub written: Instant,
    pub first_sent: Instant,
    /// First ACK whose cumulative ACK or SACK blocks covered all of it (at most `acked`).
    pub covered: Instant,
    pub acked: Instant,
}

/// The receiver's out-of-order data.
#[derive(Debug, Clone, Default)]
struct OutOfOrder {
    ranges: RangeSet,
    /// Starts of `ranges`, most recently changed first (RFC 2018 block order).
    recent: Vec<u64>,
}

impl OutOfOrder {
    /// Adds `[start, end)` and makes its range the most recent.
    fn insert(&mut self, start: u64, end: u64) {
        self.ranges.insert(start, end);
        let Some((s, _)) = self.ranges.range_of(start) else { return };
        // Blocks merge as data arrives: keep the starts of ranges that still exist.
        self.recent.retain(|&x| x != s && !(x > s && self.ranges.range_of(x).is_some_and(|(rs, _)| rs == s)));
        self.recent.insert(0, s);
        self.recent.truncate(8);
    }
}

/// Queues and state of features most connections do not use (interactive bursts, thin
/// streams, diversity, Linux's RTO and quick ACKs), kept out of `Endpoint` so it stays small
/// (docs/performance.md).
#[derive(Debug, Clone, Default)]
struct FeatureQueues {
    /// End offsets of the first transmissions not yet acknowledged (Linux `packets_out`);
    /// kept only with `thin_linear_timeouts`.
    segment_ends: VecDeque<u64>,
    /// Diversity: (end offset of a copied segment, duplicate ACKs its copies still owe).
    copy_acks: VecDeque<(u64, u32)>,
    /// Interactive bursts written and not yet acknowledged.
    pending_bursts: VecDeque<PendingBurst>,
    /// `recovery_pipe = "ns3"`: what fast recovery retransmitted, not yet cumulatively
    /// acknowledged (ns-3's `m_retrans` flags).
    recovery_rexmits: RangeSet,
    /// Linux's RTT variance state (`rto_rule = "linux"`).
    linux_rtt: LinuxVar,
    /// Arrival of the last in-order data segment (`ack_rule = "linux"`: a longer silence than
    /// the RTO restarts quick-ACK mode).
    last_data_rcv: Option<Instant>,
    prr: Prr,
    /// Per-segment send times and RFC 8985 state (`loss_detection = "rack"`).
    rack: Rack,
    /// First-transmission times of the segments in flight (`rtt_samples = "every_ack"`).
    send_times: SendTimes,
    pacer: Pacer,
}

/// RFC 6937 state of the current SACK recovery (`recovery_pacing = "prr"`), bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Prr {
    /// Delivered (cumulatively acknowledged or newly SACKed) since the recovery began.
    delivered: u64,
    /// Sent since the recovery began.
    out: u64,
    /// cwnd when it began (Linux's `prior_cwnd`, RFC 6937's RecoverFS).
    prior_cwnd: u64,
    /// Delivered by the ACK being processed; 0 once it has set cwnd.
    this_ack: u64,
    /// The ACK being processed may take the slow-start reduction bound (RFC 6937bis
    /// SafeACK, Linux's `FLAG_SND_UNA_ADVANCED && !newly_lost`): with RACK, it advanced
    /// `snd_una` and RACK marked nothing lost on it; with DupThresh, every ACK.
    safe_ack: bool,
}

#[derive(Debug, Clone)]
pub struct Endpoint {
    /// As this endpoint sends: `src` is local.
    pub key: FlowKey,
    pub state: State,
    // Send half (offsets from `iss`).
    iss: u32,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// Bytes the application has written.
    app_written: u64,
    /// The application will write no more: a FIN follows the data.
    app_closed: bool,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance toward the next SMSS (`growth.rs`).
    ca_acked: u64,
    cc: CongestionControl,
    /// RFC 9406 state while the initial slow start lasts; `None` when off or over (boxed:
    /// off by default).
    hystart: Option<Box<HyStart>>,
    dupacks: u32,
    recovery: Option<FastRecovery>,
    /// RFC 6582 `recover` (exclusive form): no new fast retransmit for dupacks at or below
    /// it; `snd_max` when the last recovery (or RTO) began, so during recovery an ACK at
    /// or past it ends the episode.
    recover_mark: u64,
    /// `snd_una` before its last advance (RFC 6582 §4.2 ACK heuristic; HighACK is `snd_una`).
    prev_highest_ack: u64,
    /// `snd_una` at the last RTO: a second RTO for it holds ssthresh (RFC 5681 eq. 4 note).
    rto_una: Opt64<u64>,
    rtt: RttEstimator,
    /// Segment being timed without timestamps (Karn): its end offset and send time (an
    /// end is at least 1, the SYN's, so `NonZeroU64` keeps the `Option` in 16 bytes).
    timed: Option<(NonZeroU64, Instant)>,
    /// SYN (or SYN-ACK) retransmissions; at most `syn_retries`, which is at most 20.
    syn_tries: u8,
    scoreboard: RangeSet,
    last_data_sent: Instant,
    rto_at: Opt64<Instant>,
    /// When the retransmission timer was last armed from a non-timeout event.
    rto_armed_at: Instant,
    /// The open timeout episode began here (see `EndpointStats::backoff_ns`).
    backoff_since: Opt64<Instant>,
    /// RTOs since data was last acknowledged (Linux `icsk_retransmits`), for thin streams.
    rto_retries: u32,
    /// Boxed on first use: most connections use none of these features.
    queues: Option<Box<FeatureQueues>>,
    /// Opened the connection (the client): only the application side pads its idle time.
    active_opener: bool,
    // Receive half (offsets from `irs`).
    irs: u32,
    rcv_nxt: u64,
    /// Boxed while there is out-of-order data: most receivers see none most of the time.
    ooo: Option<Box<OutOfOrder>>,
    fin_offset: Opt64<u64>,
    ts_recent: u32,
    /// `rcv_nxt` carried by the last ACK we sent (RFC 7323 Last.ACK.sent).
    last_ack_sent: u64,
    /// In-order segments not yet acknowledged: 0, 1 or 2 (the second is acknowledged at once).
    unacked_segs: u8,
    /// Immediate ACKs left in Linux's quick-ACK mode (`ack_rule = "linux"`).
    quick_acks: u8,
    delack_at: Opt64<Instant>,
    // Bookkeeping for the simulator.
    pub timer_gen: u32,
    pub timer_armed: Option<Instant>,
    pub stats: EndpointStats,
    /// Acknowledged interactive bursts.
    pub completed_bursts: LazyVec<CompletedBurst>,
    /// When the receive half had every byte and the FIN.
    pub finished_at: Option<Instant>,
    /// Gave up (SYN retries exhausted), or was reset by the peer.
    pub failed: bool,
}

impl Endpoint {
    fn new(key: FlowKey, state: State, iss: u32, p: &TcpParams) -> Self {
        Endpoint {
            key,
            state,
            iss,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            app_written: 0,
            app_closed: false,
            cwnd: p.initial_window,
            ssthresh: p.rwnd.max(2 * p.mss),
            ca_acked: 0,
            cc: CongestionControl::new(p),
            hystart: p.hystart.then(Box::default),
            dupacks: 0,
            recovery: None,
            recover_mark: 0,
            prev_highest_ack: 0,
            rto_una: Opt64::NONE,
            rtt: RttEstimator::new(p.initial_rto, p.max_rto),
            timed: None,
            syn_tries: 0,
            scoreboard: RangeSet::default(),
            last_data_sent: Instant::ZERO,
            rto_at: Opt64::NONE,
            rto_armed_at: Instant::ZERO,
            backoff_since: Opt64::NONE,
            rto_retries: 0,
            queues: None,
            active_opener: state == State::Closed,
            irs: 0,
            rcv_nxt: 0,
            ooo: None,
            fin_offset: Opt64::NONE,
            ts_recent: 0,
            last_ack_sent: 0,
            unacked_segs: 0,
            quick_acks: 0,
            delack_at: Opt64::NONE,
            timer_gen: 0,
            timer_armed: None,
            stats: EndpointStats::default(),
            completed_bursts: LazyVec::default(),
            finished_at: None,
            failed: false,
        }
    }

    /// A passive endpoint waiting for a SYN.
    pub fn listener(key: FlowKey, iss: u32, p: &TcpParams) -> Self {
        Self::new(key, State::Listen, iss, p)
    }

    /// An active endpoint; call [`Endpoint::connect`] to send the SYN.
    pub fn client(key: FlowKey, iss: u32, p: &TcpParams) -> Self {
        Self::new(key, State::Closed, iss, p)
    }

    pub fn connect(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        debug_assert_eq!(self.state, State::Closed);
        self.state = State::SynSent;
        self.send_segment(0, 0, false, now, p, out);
    }

    /// The application writes `bytes` more (for an interactive burst, `burst` records it).
    pub fn app_write(&mut self, bytes: u64, burst: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let start = 1 + self.app_written;
        self.app_written += bytes;
        if burst {
            let burst = PendingBurst { start, end: 1 + self.app_written, written: now, first_sent: None, covered: None };
            self.queues_mut().pending_bursts.push_back(burst);
        }
        self.try_send(now, p, out);
        if burst {
            // Short-term padding: separate writes, so each dummy is its own segment when
            // the window lets it go at once (no Nagle).
            for _ in 0..p.padding_dummies {
                self.app_written += p.padding_dummy_bytes;
                self.try_send(now, p, out);
            }
        }
    }

    /// The application will write nothing more; the FIN goes after the data.
    pub fn app_close(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.app_closed = true;
        self.try_send(now, p, out);
    }

    fn queues_mut(&mut self) -> &mut FeatureQueues {
        self.queues.get_or_insert_default()
    }

    /// The earliest pending timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        // Called after every event of the endpoint: `earliest` by hand, as an iterator over
        // the four options cost about 160 instructions a call.
        let timers = earliest(self.rto_at.get(), self.delack_at.get());
        match self.queues.as_deref() {
            Some(q) => earliest(timers, earliest(q.rack.timer, q.pacer.timer)),
            None => timers,
        }
    }

    /// Write, first-send and SACK-cover times of the bursts not yet acknowledged.
    pub fn outstanding_bursts(&self) -> impl Iterator<Item = (Instant, Option<Instant>, Option<Instant>)> + '_ {
        self.queues.iter().flat_map(|q| q.pending_bursts.iter().map(|b| (b.written, b.first_sent, b.covered)))
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }
    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh
    }
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }
    pub fn rtt_estimator(&self) -> &RttEstimator {
        &self.rtt
    }
    /// RFC 5681 FlightSize: bytes sent and not yet cumulatively acknowledged.
    pub fn flight_bytes(&self) -> u64 {
        self.flight_size()
    }
    /// Doublings of the retransmission timer since the last valid RTT sample.
    pub fn rto_backoff(&self) -> u32 {
        self.rtt.backoff()
    }
    /// In a retransmission-timeout episode (see `EndpointStats::backoff_ns`).
    pub fn in_timeout(&self) -> bool {
        self.backoff_since.get().is_some()
    }
    /// Application bytes acknowledged by the peer.
    pub fn bytes_acked(&self) -> u64 {
        self.snd_una.saturating_sub(1).min(self.app_written)
    }

    // ---------------------------------------------------------------- timers

    pub fn on_timer(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if self.delack_at.get().is_some_and(|t| t <= now) {
            self.delack_at = Opt64::NONE;
            self.send_ack(now, p, out);
        }
        if self.queues.as_deref().and_then(|q| q.rack.timer).is_some_and(|t| t <= now) {
            // RFC 8985 §6.3: the reordering timer expired; look for losses again. Linux's
            // tcp_rack_reo_timeout starts fast recovery on any mark, also after an RTO.
            let marks = self.rack_detect_loss(now, p);
            if marks.any {
                self.rack_respond(now, p, out, LossMarks { retransmission: true, ..marks });
            }
        }
        if self.rto_at.get().is_some_and(|t| t <= now) {
            self.rto_at = Opt64::NONE;
            self.on_rto(now, p, out);
        }
        if self.queues.as_deref().and_then(|q| q.pacer.timer).is_some_and(|t| t <= now) {
            self.queues_mut().pacer.timer = None;
            self.try_send(now, p, out);
        }
    }

    /// With pacing, whether the next data segment must wait (arming the pacing timer).
    fn paced_out(&mut self, now: Instant, p: &TcpParams) -> bool {
        p.pacing && self.queues_mut().pacer.holds(now)
    }

    /// RACK's marks over the segments not yet delivered; arms or clears its timer.
    fn rack_detect_loss(&mut self, now: Instant, p: &TcpParams) -> LossMarks {
        let in_recovery = self.recovery.is_some() || self.in_rto_recovery();
        let srtt = self.rtt.srtt();
        self.queues_mut().rack.detect_loss(now, in_recovery, p.dupthresh, srtt)
    }

    /// After an RTO, until `snd_una` passes what was sent before it (Linux's CA_Loss).
    fn in_rto_recovery(&self) -> bool {
        self.recovery.is_none() && self.snd_una < self.recover_mark
    }

    /// RACK marked a segment lost: in recovery, resend within the recovery's window; else
    /// perhaps start one.
    fn rack_respond(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>, marks: LossMarks) {
        if self.recovery.is_some() {
            self.try_send(now, p, out);
        } else if self.rack_starts_recovery(marks, self.snd_una) && self.rack_first_lost().is_some() {
            self.enter_fast_recovery(now, p, out);
        }
    }

    /// Whether RACK's `marks` start fast recovery once `snd_una` is `una`. Linux's
    /// tcp_fastretrans_alert: on any mark once the last recovery is over; after an RTO only on
    /// a resent segment lost again (FLAG_LOST_RETRANS in CA_Loss).
    fn rack_starts_recovery(&self, marks: LossMarks, una: u64) -> bool {
        let after_rto = self.recovery.is_none() && una < self.recover_mark;
        marks.any && self.recovery.is_none() && una < self.snd_max && self.can_send_data()
            && (una >= self.recover_mark || (marks.retransmission && after_rto))
    }

    fn rack_first_lost(&self) -> Option<(u64, u64)> {
        self.queues.as_deref().and_then(|q| q.rack.first_lost())
    }

    fn arm_rto(&mut self, now: Instant, p: &TcpParams) {
        self.rto_at = Opt64::some(now + self.data_rto(p));
        self.rto_armed_at = now;
    }

    /// The RTO for data: RFC 6298's, or with the differentiated minRTO′ while the used
    /// window (what is in flight or written and allowed out) is at most the fraction of the
    /// window, the window counted as at least 4 segments.
    fn data_rto(&self, p: &TcpParams) -> Duration {
        let used = self.flight_size().max(self.send_end().saturating_sub(self.snd_una).min(self.cwnd));
        match p.min_rto_prime {
            Some((min_rto, fraction)) if used as f64 <= fraction * self.cwnd.max(4 * p.mss) as f64 => {
                self.rtt.rto_with_min(min_rto, p.granularity)
            }
            _ => self.rtt.rto(),
        }
    }

    fn end_backoff(&mut self, now: Instant) {
        if let Some(since) = self.backoff_since.take() {
            self.stats.backoff_ns += now.saturating_since(since).as_nanos();
        }
    }

    /// `backoff_ns` with a still-open timeout episode counted up to `end`.
    pub fn backoff_ns_until(&self, end: Instant) -> u64 {
        self.stats.backoff_ns + self.backoff_since.get().map_or(0, |since| end.saturating_since(since).as_nanos())
    }

    /// The connection is reset (a RST arrived): nothing more is sent or delivered.
    fn abort(&mut self, now: Instant) {
        self.state = State::Closed;
        self.failed = true;
        self.rto_at = Opt64::NONE;
        self.delack_at = Opt64::NONE;
        self.end_backoff(now);
    }

    /// The reset answering `seg` (RFC 793: its sequence number is the ACK it carried).
    fn reset_for(&self, seg: &Packet, p: &TcpParams) -> Packet {
        Packet {
            flow: self.key,
            seq: if seg.flags.ack() { seg.ack } else { 0 },
            flags: TcpFlags(TcpFlags::RST),
            ip_len_bytes: p.header_bytes as u16,
            ..Packet::default()
        }
    }

    fn on_rto(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if self.snd_una >= self.snd_max {
            return; // everything was acknowledged meanwhile
        }
        self.rto_retries += 1;
        // Linux tcp_retransmit_timer: a thin stream (fewer than 4 segments out) keeps the
        // base RTO for its first TCP_THIN_LINEAR_RETRIES = 6 timeouts.
        let linear = p.thin_linear_timeouts && self.state == State::Established
            && self.queues.as_ref().map_or(0, |q| q.segment_ends.len()) < 4
            && self.rto_retries <= 6;
        if !linear {
            self.rtt.back_off();
        }
        self.timed = None;
        self.backoff_since.get_or_insert(self.rto_armed_at);
        match self.state {
            State::SynSent | State::SynReceived if self.snd_una == 0 => {
                if u32::from(self.syn_tries) >= p.syn_retries {
                    self.state = State::Closed;
                    self.failed = true;
                    self.end_backoff(now);
                    return;
                }
                self.syn_tries += 1;
                self.stats.syn_timeouts += 1;
                self.send_segment(0, 0, false, now, p, out);
                self.rto_at = Opt64::some(now + self.rtt.rto());
            }
            _ => {
                self.stats.timeouts += 1;
                if self.rto_una.get() == Some(self.snd_una) {
                    self.stats.timeouts_repeated += 1;
                } else if self.recovery.is_some() {
                    self.stats.timeouts_in_recovery += 1;
                } else if self.dupacks > 0 {
                    self.stats.timeouts_after_dupacks += 1;
                }
                // RFC 5681 (4); a repeated RTO of the same segment keeps ssthresh.
                if self.rto_una.get() != Some(self.snd_una) {
                    let base = self.decrease_base(p);
                    self.ssthresh = match &mut self.cc {
                        CongestionControl::Reno => (base / 2).max(2 * p.mss),
                        CongestionControl::Cubic(c) => c.on_timeout(self.cwnd, base, p.mss),
                    };
                }
                self.rto_una = Opt64::some(self.snd_una);
                self.hystart = None; // RFC 9406 §4.2: only the initial slow start
                self.cwnd = p.mss;
                self.ca_acked = 0;
                self.recovery = None;
                self.dupacks = 0;
                if let Some(q) = self.queues.as_deref_mut() {
                    q.copy_acks.clear(); // the timeout is the reaction to any lost copy
                    q.recovery_rexmits = RangeSet::default(); // ns-3's SetSentListLost clears `m_retrans`
                    q.rack.on_rto();
                }
                self.recover_mark = self.snd_max; // RFC 6582 `recover`, RFC 6675 §5.1 RecoveryPoint
                self.snd_nxt = self.snd_una;
                self.try_send(now, p, out);
                self.rto_at = Opt64::some(now + self.data_rto(p));
            }
        }
    }

    // ---------------------------------------------------------------- input

    pub fn on_segment(&mut self, seg: &Packet, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if seg.flags.has(TcpFlags::RST) {
            // RFC 793 §3.4: a reset aborts the connection in any state but LISTEN.
            if !matches!(self.state, State::Listen | State::Closed) {
                self.abort(now);
            }
            return;
        }
        match self.state {
            State::Closed => {
                // RFC 793 §3.4: a segment for a connection this side gave up on draws a
                // reset, so the peer stops retransmitting into the void.
                if self.failed {
                    out.push(self.reset_for(seg, p));
                }
            }
            State::Listen => {
                if seg.flags.syn() && !seg.flags.ack() {
                    self.irs = seg.seq;
                    self.rcv_nxt = 1;
                    self.ts_recent = seg.ts_val;
                    self.state = State::SynReceived;
                    self.send_segment(0, 0, false, now, p, out);
                }
            }
            State::SynSent => {
                if seg.flags.syn() && seg.flags.ack() && seg.ack == self.iss.wrapping_add(1) {
                    self.irs = seg.seq;
                    self.rcv_nxt = 1;
                    self.ts_recent = seg.ts_val;
                    self.state = State::Established;
                    self.end_backoff(now);
                    let ack_rtt = self.ack_rtt(1, false, now, p);
                    self.take_rtt_sample(1, seg, ack_rtt, now, p);
                    self.snd_una = 1;
                    self.rto_retries = 0;
                    self.rto_at = Opt64::NONE;
                    self.start_after_syn_timeout(p);
                    let sent = out.len();
                    self.try_send(now, p, out);
                    if out.len() == sent {
                        self.send_ack(now, p, out);
                    }
                    self.count_handshake_as_unacked(p);
                }
            }
            State::SynReceived if seg.flags.syn() && !seg.flags.ack() => {
                // Our SYN-ACK was lost: the client retried. Echo this SYN's TSval (RFC 7323 §4.3).
                self.update_ts_recent(seg, p);
                self.send_segment(0, 0, false, now, p, out);
            }
            _ => {
                self.update_ts_recent(seg, p);
                if seg.flags.syn() {
                    // A retransmitted SYN-ACK: our handshake ACK was lost.
                    self.send_ack(now, p, out);
                    return;
                }
                if seg.flags.ack() {
                    self.on_ack(seg, now, p, out);
                }
                if seg.seq_len() > 0 {
                    self.on_data(seg, now, p, out);
                }
            }
        }
    }

    /// `ack_first_data`: the first full in-order data segment then completes a pair, so
    /// it is acknowledged at once (until some segment of ours carries an ACK first).
    fn count_handshake_as_unacked(&mut self, p: &TcpParams) {
        if p.ack_first_data {
            self.unacked_segs = 1;
        }
    }

    /// RFC 5681 §3.1 and RFC 6298 (5.7): once our SYN (or SYN-ACK) timed out, data starts
    /// with a window of one segment and an RTO of 3 s, whatever the handshake's RTT sample.
    fn start_after_syn_timeout(&mut self, p: &TcpParams) {
        if self.syn_tries > 0 {
            self.cwnd = p.mss;
            self.rtt.reinit_after_syn_timeout();
        }
    }

    /// RFC 7323 §4.3 (2): TS.Recent takes the TSval of a segment at or before Last.ACK.sent
    /// only, so a delayed ACK echoes the earliest segment it covers and an out-of-order one
    /// the last segment that advanced `rcv_nxt`.
    fn update_ts_recent(&mut self, seg: &Packet, p: &TcpParams) {
        let seq = unwrap(self.rcv_nxt, self.irs.wrapping_add(self.rcv_nxt as u32), seg.seq);
        let newer = seg.ts_val.wrapping_sub(self.ts_recent) as i32 >= 0;
        if p.timestamps && seg.ts_val != 0 && seq <= self.last_ack_sent && newer {
            self.ts_recent = seg.ts_val;
        }
    }

    fn unwrap_ack(&self, wire: u32) -> u64 {
        unwrap(self.snd_una, self.iss.wrapping_add(self.snd_una as u32), wire)
    }

    fn flight_size(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    fn on_ack(&mut self, seg: &Packet, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let ack = self.unwrap_ack(seg.ack);
        if ack > self.snd_max {
            return; // acknowledges what was never sent
        }
        if self.state == State::SynReceived && ack >= 1 {
            self.state = State::Established; // the handshake's third segment
            self.count_handshake_as_unacked(p);
        }
        let sacked_before = if p.prr { self.scoreboard.above(self.snd_una, p.mss).0 } else { 0 };
        let mut new_sack = false;
        if p.sack() {
            for b in seg.sack_blocks() {
                let (s, e) = (self.unwrap_ack(b.start), self.unwrap_ack(b.end));
                if s >= self.snd_una && e <= self.snd_max && e > ack {
                    new_sack |= self.scoreboard.insert(s.max(ack), e);
                }
            }
        }
        if new_sack || ack > self.snd_una {
            self.note_covered_bursts(ack, now);
        }
        let ack_rtt = self.ack_rtt(ack, new_sack, now, p);
        if ack_rtt.is_some() && ack <= self.snd_una {
            self.take_rtt_sample(ack, seg, ack_rtt, now, p); // from new SACKs alone (Linux's sack_rtt)
        }
        if p.prr {
            // RFC 6937 DeliveredData: the change in snd_una plus the change in SACKed bytes.
            let delivered = (ack.saturating_sub(self.snd_una) + self.scoreboard.above(ack.max(self.snd_una), p.mss).0)
                .saturating_sub(sacked_before);
            let in_recovery = self.recovery.is_some();
            let prr = &mut self.queues_mut().prr;
            prr.this_ack = delivered;
            if in_recovery {
                prr.delivered += delivered;
            }
        }
        let rack_marks = if p.rack && self.queues.get_or_insert_default().rack.on_ack(ack, &self.scoreboard, now) {
            self.rack_detect_loss(now, p)
        } else {
            LossMarks::default()
        };
        if p.prr {
            let safe_ack = !p.rack || (ack > self.snd_una && !rack_marks.any);
            self.queues_mut().prr.safe_ack = safe_ack;
        }
        // RFC 6675 §2: with SACK a duplicate ACK is one that SACKs new data, even if it also
        // moves `snd_una`; otherwise RFC 5681's: no data, `ack == snd_una`.
        let duplicate = if p.sack() { new_sack } else { ack == self.snd_una && seg.seq_len() == 0 };
        // Diversity: the ACK of a copy the receiver discarded is expected, not a loss signal.
        let copy_ack = ack == self.snd_una && seg.seq_len() == 0 && self.take_copy_ack(ack);
        // ns-3's DupAck runs before the cumulative part of the ACK and counts only outside
        // CA_RECOVERY and CA_LOSS (after an RTO, until `recover`).
        let ns3_counts = self.recovery.is_none() && self.snd_una >= self.recover_mark;
        let dupacks_before = self.dupacks;
        // ns-3 handles such an ACK in CA_DISORDER (DupAck moved it there first) and skips NewAck.
        let ns3_disorder = (p.disorder_ack != DisorderAck::Rfc && duplicate && !copy_ack && ns3_counts)
            .then_some(p.disorder_ack);
        if ack > self.snd_una {
            // Linux handles the loss before the cumulative part: no growth, no new data ahead
            // of the fast retransmit (tcp_ack runs tcp_fastretrans_alert first).
            let loss_first = p.rack && self.rack_starts_recovery(rack_marks, ack);
            self.on_new_ack(ack, seg, ack_rtt, ns3_disorder, loss_first, now, p, out);
        }
        if duplicate && !copy_ack && ack == self.snd_una && self.snd_max > self.snd_una {
            match p.dupack_rule {
                DupackRule::Rfc => self.on_dupack(now, p, out),
                DupackRule::Ns3 if self.recovery.is_some() => self.on_dupack(now, p, out),
                DupackRule::Ns3 if ns3_counts => {
                    // ProcessAck: a cumulative ACK that is a duplicate does not reset the count.
                    self.dupacks = dupacks_before;
                    self.on_dupack(now, p, out);
                }
                DupackRule::Ns3 => {}
            }
        }
        if rack_marks.any && self.recovery.is_none() {
            // An ACK that was not a duplicate one marked it, or one after an RTO.
            self.rack_respond(now, p, out, rack_marks);
        }
    }

    /// Bursts whose bytes the cumulative `ack` and the SACK scoreboard now cover all of get
    /// `covered = now`: the first ACK telling the sender the receiver holds the burst, even
    /// while an earlier hole keeps the cumulative ACK below it.
    fn note_covered_bursts(&mut self, ack: u64, now: Instant) {
        let Some(q) = self.queues.as_deref_mut() else { return };
        for b in q.pending_bursts.iter_mut().filter(|b| b.covered.is_none()) {
            let from = b.start.max(ack);
            if b.end <= ack || self.scoreboard.covers(from, b.end) {
                b.covered = Some(now);
            }
        }
    }

    /// `ns3_disorder`: the ACK also SACKs new data outside recovery and ns-3's rule is on
    /// (`disorder_ack`): what of RFC 6298 (5.3) and RFC 5681's growth to skip. `loss_first`:
    /// RACK starts fast recovery on this ACK, so cwnd neither grows nor sends here.
    #[allow(clippy::too_many_arguments)]
    fn on_new_ack(&mut self, ack: u64, seg: &Packet, ack_rtt: Option<Duration>, ns3_disorder: Option<DisorderAck>,
        loss_first: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let acked = ack - self.snd_una;
        self.end_backoff(now);
        let rtt_sample = self.take_rtt_sample(ack, seg, ack_rtt, now, p);
        let syn_acked = self.snd_una == 0;
        if syn_acked {
            self.start_after_syn_timeout(p); // the listener's SYN-ACK timed out
        }
        self.prev_highest_ack = self.snd_una;
        self.snd_una = ack;
        self.rto_retries = 0;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.scoreboard.discard_below(ack);
        if let Some(q) = self.queues.as_deref_mut() {
            while q.segment_ends.front().is_some_and(|&end| end <= ack) {
                q.segment_ends.pop_front();
            }
            q.recovery_rexmits.discard_below(ack);
            while q.pending_bursts.front().is_some_and(|b| b.end <= ack) {
                let b = q.pending_bursts.pop_front().unwrap();
                // Acknowledged bytes were sent: `first_sent` is set.
                let first_sent = b.first_sent.unwrap_or(b.written);
                let covered = b.covered.unwrap_or(now);
                self.completed_bursts.vec_mut().push(CompletedBurst { written: b.written, first_sent, covered, acked: now });
            }
        }
        if self.app_closed && ack == self.send_end() {
            self.state = match self.state {
                State::FinWait1 => State::FinWait2,
                State::Closing => State::TimeWait,
                State::LastAck => State::Closed,
                s => s,
            };
        }
        let acked_data = acked - syn_acked as u64;
        match self.recovery {
            Some(_) if ack >= self.recover_mark => {
                // Full ACK: leave recovery (RFC 6582 step 3, option 1; RFC 6675: cwnd = ssthresh).
                self.cwnd = match p.recovery {
                    Recovery::Sack => self.ssthresh,
                    _ => self.ssthresh.min(self.flight_size().max(p.mss) + p.mss),
                };
                self.recovery = None;
                self.dupacks = 0;
            }
            Some(mut r) => match p.recovery {
                Recovery::Reno => {
                    self.cwnd = self.ssthresh;
                    self.recovery = None;
                    self.dupacks = 0;
                }
                Recovery::Newreno => {
                    // Partial ACK: retransmit the next hole, deflate by the amount acked.
                    self.retransmit_una(now, p, out);
                    self.cwnd = self.cwnd.saturating_sub(acked) + if acked >= p.mss { p.mss } else { 0 };
                    self.cwnd = self.cwnd.max(p.mss);
                    if r.first_partial {
                        r.first_partial = false;
                        self.arm_rto(now, p);
                    }
                    self.recovery = Some(r);
                }
                Recovery::Sack if p.first_partial_rto && r.first_partial => {
                    r.first_partial = false;
                    self.recovery = Some(r);
                    self.arm_rto(now, p);
                }
                Recovery::Sack => {}
            },
            None => {
                self.dupacks = 0;
                if acked_data > 0 && ns3_disorder != Some(DisorderAck::Ns3) && !loss_first {
                    if let Some(h) = self.hystart.as_mut().filter(|_| self.cwnd < self.ssthresh) {
                        let growth = h.on_ack(ack, self.snd_max, rtt_sample, acked_data, p.mss);
                        self.cwnd += growth.bytes;
                        if let CongestionControl::Cubic(c) = &mut self.cc {
                            c.end_epoch(); // §4.10 of RFC 9438: slow start ends the epoch
                        }
                        if growth.css_done {
                            self.ssthresh = self.cwnd;
                            self.hystart = None;
                        }
                    } else if let CongestionControl::Cubic(c) = &mut self.cc {
                        let srtt = self.rtt.srtt().unwrap_or(Duration::ZERO);
                        self.cwnd = c.on_ack(self.cwnd, self.ssthresh, acked_data, now, srtt, p.mss);
                    } else {
                        self.cwnd = growth::grow(p.cwnd_growth, p.abc_limit, self.cwnd, self.ssthresh, acked_data,
                            p.mss, &mut self.ca_acked);
                    }
                }
            }
        }
        if p.recovery_partial_ack == PartialAck::Ns3 && matches!(self.recovery, Some(r) if ack >= r.high_rxt) {
            // ns-3's partial ACK: unless the new head was retransmitted, `DoRetransmit` sends
            // NextSeg's rule 1 or 2 (never 3), else the head, before and outside cwnd − pipe.
            let seg = self.next_seg(p).filter(|&(off, _, _)| off >= self.snd_max || self.is_lost(off, p));
            let seg = seg.unwrap_or_else(|| self.segment_at(ack, p));
            self.send_next_seg(seg, now, p, out);
        }
        self.settle_copies(ack, p);
        // RFC 6298 5.2/5.3.
        if self.snd_una >= self.snd_max {
            self.rto_at = Opt64::NONE;
        } else if ns3_disorder.is_none()
            && !matches!(self.recovery, Some(r) if p.first_partial_rto && !r.first_partial && ack < self.recover_mark)
        {
            self.arm_rto(now, p);
        }
        if !loss_first {
            self.try_send(now, p, out);
        }
    }

    /// With `rtt_samples = "every_ack"`, the sample of an ACK with cumulative `ack` that
    /// SACKed new data if `new_sack` (`rtt_samples.rs`); `None` otherwise.
    fn ack_rtt(&mut self, ack: u64, new_sack: bool, now: Instant, p: &TcpParams) -> Option<Duration> {
        if !p.rtt_every_ack {
            return None;
        }
        let new_sacks = new_sack.then_some(&self.scoreboard);
        self.queues.get_or_insert_default().send_times.on_ack(ack, new_sacks, now)
    }

    /// Folds an ACK's RTT sample into the estimator and returns it. With `rtt_samples =
    /// "every_ack"`, Linux's order: the sample of the segments the ACK newly covers
    /// (`ack_rtt`, `rtt_samples.rs`), else the echoed timestamp of an ACK that advances
    /// `snd_una`. Otherwise RFC 7323's echoed timestamp (retransmissions included), or
    /// Karn's rule: one timed segment that was never retransmitted.
    fn take_rtt_sample(&mut self, ack: u64, seg: &Packet, ack_rtt: Option<Duration>, now: Instant, p: &TcpParams)
        -> Option<Duration> {
        let echo = || Duration::from_micros(ts_now(now).wrapping_sub(seg.ts_ecr) as u64);
        let sample = if p.rtt_every_ack {
            match ack_rtt {
                Some(sample) => sample,
                None if p.timestamps && seg.ts_ecr != 0 && ack > self.snd_una => echo(),
                None => return None,
            }
        } else if p.timestamps && seg.ts_ecr != 0 {
            echo()
        } else {
            match self.timed {
                Some((end, sent)) if ack >= end.get() => {
                    self.timed = None;
                    now - sent
                }
                _ => return None,
            }
        };
        let linux = if p.linux_rto {
            Some(LinuxSample { var: &mut self.queues.get_or_insert_default().linux_rtt, acked: ack, sent_max: self.snd_max })
        } else {
            None
        };
        self.rtt.sample(sample, p.min_rto, p.granularity, linux);
        Some(sample)
    }

    /// Diversity: counts off one expected duplicate ACK for the copied segment ending at
    /// `ack`; false when no copy owes one.
    fn take_copy_ack(&mut self, ack: u64) -> bool {
        let Some(q) = self.queues.as_deref_mut() else { return false };
        match q.copy_acks.iter_mut().find(|(end, owed)| *end == ack && *owed > 0) {
            Some((_, owed)) => {
                *owed -= 1;
                true
            }
            None => false,
        }
    }

    /// Diversity: `ack` passed copied segments. A copy whose duplicate ACK never came means
    /// the original or a copy was lost (ACKs come back in order): the sender cuts its
    /// window as for a loss (the paper: "it cuts down the congestion window"), once per ACK.
    fn settle_copies(&mut self, ack: u64, p: &TcpParams) {
        let Some(q) = self.queues.as_deref_mut() else { return };
        let mut lost = false;
        while let Some(&(_, owed)) = q.copy_acks.front().filter(|&&(end, _)| end < ack) {
            lost |= owed > 0;
            q.copy_acks.pop_front();
        }
        if lost && self.recovery.is_none() {
            self.ssthresh = (self.decrease_base(p) / 2).max(2 * p.mss);
            self.cwnd = self.cwnd.min(self.ssthresh);
        }
    }

    /// The window a loss or timeout's decrease starts from (`tcp.ssthresh_from`): the RFCs'
    /// FlightSize, or Linux's cwnd, which stays large while a scheduler holds the flow back.
    fn decrease_base(&self, p: &TcpParams) -> u64 {
        match p.ssthresh_from {
            SsthreshFrom::FlightSize => self.flight_size(),
            SsthreshFrom::Cwnd => self.cwnd,
            SsthreshFrom::BytesInFlight => unreachable!("added after the freeze: never drawn for the frozen copy"),
            SsthreshFrom::Ns2 => unreachable!("the differential test draws no ns-2 rule"),
        }
    }

    fn on_dupack(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.dupacks += 1;
        if self.recovery.is_some() {
            if p.recovery != Recovery::Sack {
                self.cwnd += p.mss; // RFC 5681 step 4: inflate
            }
            self.try_send(now, p, out);
            return;
        }
        // RFC 6675 §5 (2): a dupack that leaves `snd_una` lost starts recovery early.
        let lost = if p.rack {
            self.rack_first_lost().is_some() // no duplicate-ACK count: RACK's marks alone
        } else {
            self.dupacks >= p.dupthresh || (p.sack() && self.is_lost(self.snd_una, p))
        };
        if lost {
            let enter = match p.recovery {
                Recovery::Reno => true,
                // RFC 6582 §3.2 step 2: a new episode only past `recover`, or by the ACK heuristic.
                Recovery::Newreno => {
                    self.snd_una > self.recover_mark
                        || (self.cwnd > p.mss && self.snd_una - self.prev_highest_ack <= 4 * p.mss)
                }
                // RFC 6675 §5.1: none until HighACK reaches the RecoveryPoint of the last one.
                Recovery::Sack => self.snd_una >= self.recover_mark,
            };
            if enter {
                self.enter_fast_recovery(now, p, out);
            }
        } else if p.limited_transmit && self.snd_nxt == self.snd_max {
            // RFC 3042: one previously unsent segment per dupack, FlightSize <= cwnd + 2 SMSS.
            self.send_new(self.cwnd + 2 * p.mss, 1, now, p, out);
        }
    }

    fn enter_fast_recovery(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.stats.fast_retransmits += 1;
        self.hystart = None; // RFC 9406 §4.2: a loss ends slow start and CSS
        // RACK leaving RTO recovery: FlightSize still counts what the RTO gave up on, so
        // halve cwnd instead, as Linux's tcp_init_cwnd_reduction always does.
        let base = if p.rack && self.in_rto_recovery() { self.cwnd } else { self.decrease_base(p) };
        self.ssthresh = match &mut self.cc {
            CongestionControl::Reno => (base / 2).max(2 * p.mss),
            CongestionControl::Cubic(c) => c.on_congestion(self.cwnd, base, p.mss),
        };
        self.recover_mark = self.snd_max;
        self.ca_acked = 0;
        self.recovery = Some(FastRecovery { high_rxt: self.snd_una, first_partial: true });
        match p.recovery {
            Recovery::Sack if p.prr => {
                let prior_cwnd = self.cwnd;
                let q = self.queues_mut();
                q.prr = Prr { delivered: q.prr.this_ack, out: 0, prior_cwnd, ..q.prr };
                self.prr_set_cwnd(p);
                // Forced, as Linux does, but paced as Linux's tcp_xmit_retransmit_queue is:
                // a held one goes when the pacing timer calls sack_send.
                if !self.paced_out(now, p) {
                    self.retransmit_first_lost(now, p, out);
                }
                self.sack_send(now, p, out);
            }
            Recovery::Sack => {
                self.cwnd = self.ssthresh;
                self.retransmit_first_lost(now, p, out);
                self.sack_send(now, p, out);
            }
            _ => {
                self.retransmit_una(now, p, out);
                self.cwnd = self.ssthresh + p.dupthresh as u64 * p.mss;
            }
        }
        if p.fast_retransmit_rto == FastRetransmitRto::Restart {
            self.arm_rto(now, p);
        }
    }

    fn on_data(&mut self, seg: &Packet, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let start = unwrap(self.rcv_nxt, self.irs.wrapping_add(self.rcv_nxt as u32), seg.seq);
        let end = start + seg.seq_len() as u64;
        if seg.flags.fin() {
            self.fin_offset = Opt64::some(end - 1);
        }
        if end <= self.rcv_nxt {
            // A duplicate: tell the sender where we are (Linux also enters quick-ACK mode).
            self.quick_acks = self.quick_acks.max(p.quick_acks);
            self.send_ack(now, p, out);
            return;
        }
        if start > self.rcv_nxt {
            // Out of order: remember it and send a duplicate ACK at once (RFC 5681 §4.2).
            self.ooo.get_or_insert_default().insert(start, end);
            self.send_ack(now, p, out);
            return;
        }
        let before = self.rcv_nxt;
        self.rcv_nxt = end;
        let filled_hole = self.ooo.as_ref().is_some_and(|o| !o.ranges.is_empty());
        if let Some(o) = self.ooo.as_deref_mut() {
            while let Some((_, e)) = o.ranges.pop_reaching(self.rcv_nxt) {
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            o.recent.retain(|&s| s > self.rcv_nxt);
            if o.ranges.is_empty() && o.recent.is_empty() {
                self.ooo = None; // the hole is filled: free the box until the next one
            }
        }
        let data_end = self.fin_offset.get().unwrap_or(u64::MAX);
        self.stats.bytes_delivered += self.rcv_nxt.min(data_end) - before.min(data_end);
        let fin_now = self.fin_offset.get().is_some_and(|f| self.rcv_nxt > f) && self.finished_at.is_none();
        if fin_now {
            self.finished_at = Some(now);
            self.state = match self.state {
                State::Established => State::CloseWait,
                State::FinWait1 => State::Closing,
                State::FinWait2 => State::TimeWait,
                s => s,
            };
        }
        self.unacked_segs += 1;
        if p.quick_acks > 0 {
            // Linux tcp_event_data_recv: the first data, or data after a silence longer than
            // the RTO ("the sender failed to restart window"), starts quick-ACK mode.
            let rto = self.rtt.rto();
            let last = self.queues_mut().last_data_rcv.replace(now);
            if last.is_none_or(|t| now.saturating_since(t) > rto) {
                self.quick_acks = self.quick_acks.max(p.quick_acks);
            }
        }
        let ack_now = filled_hole || fin_now || self.unacked_segs >= 2 || seg.payload_len as u64 != p.mss
            || self.quick_acks > 0;
        match p.delayed_ack {
            Some(delay) if !ack_now => {
                self.delack_at.get_or_insert(now + delay);
            }
            _ => {
                let sent = out.len();
                if self.state == State::CloseWait {
                    // The application closes as soon as it has read everything.
                    self.app_closed = true;
                }
                self.try_send(now, p, out);
                if out.len() == sent {
                    self.send_ack(now, p, out);
                }
            }
        }
    }

    // ---------------------------------------------------------------- output

    fn send_end(&self) -> u64 {
        1 + self.app_written + self.app_closed as u64
    }

    fn can_send_data(&self) -> bool {
        matches!(self.state, State::Established | State::CloseWait | State::FinWait1 | State::Closing | State::LastAck)
    }

    /// Send what the window allows: retransmissions after an RTO first, then new data.
    fn try_send(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if !self.can_send_data() {
            return;
        }
        if self.recovery.is_some() && p.sack() {
            self.sack_send(now, p, out);
            return;
        }
        if p.slow_start_after_idle && self.snd_una == self.snd_max && self.snd_nxt < self.send_end()
            && self.stats.segments_sent > 1 && now.saturating_since(self.last_data_sent) >= self.rtt.rto()
        {
            self.cwnd = self.cwnd.min(p.initial_window); // RFC 5681 §4.1 restart window
        }
        self.send_new(self.cwnd, usize::MAX, now, p, out);
    }

    /// Sends up to `max_segments` from `snd_nxt` while `snd_nxt - snd_una` stays within
    /// `window` (and rwnd). Going back after an RTO it skips what the receiver SACKed
    /// (RFC 6675 §5.1).
    fn send_new(&mut self, window: u64, max_segments: usize, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if !self.can_send_data() {
            return;
        }
        let window = window.min(p.rwnd);
        for _ in 0..max_segments {
            if let Some((_, sacked_end)) = self.scoreboard.range_of(self.snd_nxt) {
                self.snd_nxt = sacked_end;
            }
            if self.snd_nxt >= self.send_end() {
                // Fully backlogged: a full-size dummy when the window has room for one, so
                // real data written later is never queued behind a dummy.
                let pad = p.fully_backlogged && self.active_opener && !self.app_closed && self.state == State::Established
                    && self.snd_nxt + p.mss - self.snd_una <= window;
                if !pad {
                    break;
                }
                self.app_written += p.mss;
            }
            let (_, len, fin) = self.segment_at(self.snd_nxt, p);
            if self.snd_nxt + len - self.snd_una > window || self.paced_out(now, p) {
                break;
            }
            // After an RTO `send_new` goes back to `snd_una`: those sends are retransmissions.
            let copy = self.snd_nxt >= self.snd_max || p.diversity_copy_retransmissions;
            self.send_segment(self.snd_nxt, len, fin, now, p, out);
            if copy && p.diversity_copies > 1 && len < p.mss && !fin && self.snd_nxt + len == self.send_end() {
                self.send_copies(self.snd_nxt, len, window, now, p, out);
            }
            self.snd_nxt += len + fin as u64;
            if fin {
                self.state = match self.state {
                    State::Established => State::FinWait1,
                    State::CloseWait => State::LastAck,
                    s => s,
                };
            }
        }
    }

    /// Diversity: up to `diversity_copies − 1` more copies of the new segment `[off, off+len)`
    /// back to back, as many as fit in `window` counting each copy's bytes as in flight.
    fn send_copies(&mut self, off: u64, len: u64, window: u64, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let mut in_flight = off + len - self.snd_una;
        let mut copies = 0;
        while copies + 1 < p.diversity_copies && in_flight + len <= window {
            in_flight += len;
            copies += 1;
            self.stats.segments_sent += 1;
            self.emit(off, len, false, now, p, out);
        }
        if copies > 0 {
            self.queues_mut().copy_acks.push_back((off + len, copies));
        }
    }

    /// The fast retransmit: the first segment RACK marked lost, or the one at `snd_una`.
    fn retransmit_first_lost(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        match self.rack_lost_segment(p) {
            Some(seg) => self.send_next_seg(seg, now, p, out),
            None => self.retransmit_una(now, p, out),
        }
    }

    /// The first un-SACKed segment of what RACK marked lost.
    fn rack_lost_segment(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        let (hole, _) = self.rack_first_lost().and_then(|(s, e)| self.scoreboard.first_gap(s, e))?;
        Some(self.segment_at(hole, p))
    }

    /// Retransmits the segment at `snd_una`.
    fn retransmit_una(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let (off, len, fin) = self.segment_at(self.snd_una, p);
        self.send_segment(off, len, fin, now, p, out);
        if let Some(r) = &mut self.recovery {
            r.high_rxt = r.high_rxt.max(off + len + fin as u64);
        }
    }

    /// The largest segment to send now: one SMSS, or with TCP Smart Framing cwnd/4 while
    /// cwnd < 4 SMSS, so the window always holds DupThresh + 1 segments and growing cwnd
    /// grows the segments back to full size.
    fn segment_bytes(&self, p: &TcpParams) -> u64 {
        if p.smart_framing && self.cwnd < 4 * p.mss {
            (self.cwnd / 4).max(1)
        } else {
            p.mss
        }
    }

    /// The segment starting at `off`: up to `segment_bytes` of data, ending at a hole edge.
    fn segment_at(&self, off: u64, p: &TcpParams) -> (u64, u64, bool) {
        let data_end = 1 + self.app_written;
        let mut len = data_end.saturating_sub(off).min(self.segment_bytes(p));
        if let Some((s, _)) = self.scoreboard.ranges().iter().find(|&&(s, _)| s > off) {
            len = len.min(s - off);
        }
        (off, len, self.app_closed && off + len == data_end)
    }

    /// RFC 6675 IsLost: DupThresh SACKed segments, or more than (DupThresh-1)*SMSS SACKed
    /// bytes, above `offset`.
    fn is_lost(&self, offset: u64, p: &TcpParams) -> bool {
        let (bytes, segments) = self.scoreboard.above(offset + 1, p.mss);
        bytes > (p.dupthresh as u64 - 1) * p.mss || segments >= p.dupthresh as u64
    }

    /// RFC 6675 SetPipe: bytes believed in the network.
    fn pipe(&self, p: &TcpParams) -> u64 {
        if p.rack {
            return self.queues.as_deref().map_or(0, |q| q.rack.in_flight());
        }
        let high_rxt = self.recovery.map_or(self.snd_una, |r| r.high_rxt);
        let mut pipe = 0;
        let mut at = self.snd_una;
        while let Some((s, e)) = self.scoreboard.first_gap(at, self.snd_max) {
            let mut chunk = s;
            while chunk < e {
                let len = (e - chunk).min(p.mss);
                if !self.is_lost(chunk, p) {
                    pipe += len;
                }
                if chunk < high_rxt {
                    pipe += len;
                }
                chunk += len;
            }
            at = e;
        }
        if p.recovery_pipe == RecoveryPipe::Ns3 {
            pipe += self.sacked_rexmit_bytes();
        }
        pipe
    }

    /// ns-3's `BytesInFlight` = sent − SACKed − lost + retransmitted: `Update` marks a
    /// retransmitted segment SACKed without clearing its `m_retrans`, so it counts once more
    /// than RFC 6675's SetPipe, which skips every SACKed octet.
    fn sacked_rexmit_bytes(&self) -> u64 {
        let Some(q) = self.queues.as_deref() else { return 0 };
        let sacked = self.scoreboard.ranges();
        q.recovery_rexmits.ranges().iter()
            .flat_map(|&(rs, re)| sacked.iter().map(move |&(s, e)| re.min(e).saturating_sub(rs.max(s))))
            .sum()
    }

    /// RFC 6937 PRR as Linux's `tcp_cwnd_reduction`, once per ACK that delivered data:
    /// cwnd = pipe + what may be sent now. Linux counts whole segments, hence the rounding.
    fn prr_set_cwnd(&mut self, p: &TcpParams) {
        let pipe = self.pipe(p);
        let ssthresh = self.ssthresh;
        let Some(q) = self.queues.as_deref_mut() else { return };
        let prr = &mut q.prr;
        if prr.this_ack == 0 {
            return;
        }
        let sndcnt = if pipe > ssthresh {
            // Proportional: ceil(ssthresh · delivered / prior_cwnd) segments in all.
            ((ssthresh * prr.delivered).div_ceil(prr.prior_cwnd.max(1) * p.mss) * p.mss).saturating_sub(prr.out)
        } else {
            // Towards ssthresh: what was delivered (conservative reduction bound), one segment
            // more on a safe ACK (slow-start reduction bound).
            let bonus = if prr.safe_ack { p.mss } else { 0 };
            (ssthresh - pipe).min(prr.delivered.saturating_sub(prr.out).max(prr.this_ack) + bonus)
        };
        // The fast retransmit always goes out.
        let sndcnt = if prr.out == 0 { sndcnt.max(p.mss) } else { sndcnt };
        prr.this_ack = 0;
        self.cwnd = pipe + sndcnt;
    }

    /// RFC 6675 NextSeg rules 1-3: a lost hole, else new data, else a rescue of an
    /// un-SACKed hole below the highest SACKed byte.
    fn next_seg(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        if p.rack {
            // Linux's order: what RACK marked lost, then new data; no rescue retransmission.
            return self.rack_lost_segment(p).or_else(|| self.next_new_seg(p));
        }
        let high_rxt = self.recovery.map_or(self.snd_una, |r| r.high_rxt);
        let from = high_rxt.max(self.snd_una);
        let mut at = from;
        let mut rescue = None;
        let high_sacked = self.scoreboard.highest_end().unwrap_or(0);
        while let Some((s, e)) = self.scoreboard.first_gap(at, self.snd_max) {
            if self.is_lost(s, p) {
                return Some(self.segment_at(s, p));
            }
            if rescue.is_none() && s < high_sacked {
                rescue = Some(self.segment_at(s, p));
            }
            at = e; // no byte of a gap is SACKed, so IsLost is the same all through it
            if at >= high_sacked {
                break;
            }
        }
        self.next_new_seg(p).or(rescue)
    }

    /// RFC 6675 NextSeg rule 2: the next unsent segment, if the receive window allows it.
    fn next_new_seg(&self, p: &TcpParams) -> Option<(u64, u64, bool)> {
        if self.snd_max >= self.send_end() {
            return None;
        }
        let (off, len, fin) = self.segment_at(self.snd_max, p);
        (off + len - self.snd_una <= p.rwnd).then_some((off, len, fin))
    }

    fn sack_send(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if p.prr {
            self.prr_set_cwnd(p);
        }
        while self.cwnd >= self.pipe(p) + p.mss && !self.paced_out(now, p) {
            let Some(seg) = self.next_seg(p) else { break };
            self.send_next_seg(seg, now, p, out);
        }
    }

    /// Sends a segment NextSeg chose: HighRxt or HighData move (RFC 6675 (C.2), (C.3)).
    fn send_next_seg(&mut self, (off, len, fin): (u64, u64, bool), now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let retransmission = off < self.snd_max;
        self.send_segment(off, len, fin, now, p, out);
        let end = off + len + fin as u64;
        if let Some(r) = self.recovery.as_mut().filter(|_| retransmission) {
            r.high_rxt = r.high_rxt.max(end);
        }
        self.snd_nxt = self.snd_nxt.max(end);
        if fin {
            self.state = match self.state {
                State::Established => State::FinWait1,
                State::CloseWait => State::LastAck,
                s => s,
            };
        }
    }

    /// Emits one segment of `len` bytes at `off` (offset 0 is the SYN).
    fn send_segment(&mut self, off: u64, len: u64, fin: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let end = off + len.max((off == 0) as u64) + fin as u64;
        let retransmission = off < self.snd_max;
        if p.rack && off > 0 {
            self.queues_mut().rack.on_send(off, end, now, retransmission);
        }
        if p.rtt_every_ack {
            self.queues_mut().send_times.on_send(off, end, now, retransmission);
        }
        if p.pacing && len > 0 {
            let window = self.cwnd.max(self.flight_size());
            let (slow_start, srtt) = (self.cwnd < self.ssthresh / 2, self.rtt.srtt());
            // Only a buffer's first segment sizes it; pipe() walks RACK's segments.
            let starts_buffer = self.queues.as_deref().is_none_or(|q| q.pacer.starts_buffer());
            let buffer = starts_buffer.then(|| (self.cwnd.saturating_sub(self.pipe(p)) / p.mss, self.cwnd / p.mss));
            self.queues_mut().pacer.on_send(now, len, window, slow_start, srtt, buffer);
        }
        if off < self.snd_max {
            if off > 0 {
                self.stats.retransmits += 1;
                // Outside a timeout episode: there the RTO handler arms the timer itself.
                if p.head_retransmit_rto && off == self.snd_una && self.backoff_since.get().is_none() {
                    self.arm_rto(now, p);
                }
            }
            self.timed = None; // Karn: never time a retransmitted segment
            if p.recovery_pipe == RecoveryPipe::Ns3 && self.recovery.is_some() {
                self.queues_mut().recovery_rexmits.insert(off, end);
            }
        } else {
            if self.timed.is_none() {
                self.timed = Some((NonZeroU64::new(end).expect("a segment ends past the SYN's offset 0"), now));
            }
            if p.thin_linear_timeouts && off > 0 {
                self.queues_mut().segment_ends.push_back(end); // data only: the handshake's ACK pops no SYN
            }
            if let Some(q) = self.queues.as_deref_mut() {
                for b in q.pending_bursts.iter_mut().skip_while(|b| b.first_sent.is_some()) {
                    if b.start >= off + len {
                        break;
                    }
                    b.first_sent = Some(now);
                }
            }
        }
        self.snd_max = self.snd_max.max(end);
        if off == 0 {
            self.snd_nxt = self.snd_nxt.max(1);
        }
        if self.rto_at.get().is_none() {
            self.arm_rto(now, p);
        }
        self.stats.segments_sent += 1;
        if len > 0 {
            self.last_data_sent = now;
        }
        if p.prr && self.recovery.is_some() {
            self.queues_mut().prr.out += len;
        }
        self.emit(off, len, fin, now, p, out);
    }

    /// Puts the segment `[off, off+len)` (offset 0 is the SYN) on the wire, no bookkeeping.
    fn emit(&mut self, off: u64, len: u64, fin: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let mut flags = 0;
        if off == 0 {
            flags |= TcpFlags::SYN;
        }
        if fin {
            flags |= TcpFlags::FIN;
        }
        if self.state != State::SynSent {
            flags |= TcpFlags::ACK;
        }
        if len > 0 {
            flags |= TcpFlags::PSH;
        }
        let pkt = self.packet(off, len as u16, TcpFlags(flags), now, p);
        out.push(pkt);
    }

    /// A pure ACK (carries SACK blocks when there is out-of-order data).
    fn send_ack(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let pkt = self.packet(self.snd_nxt, 0, TcpFlags(TcpFlags::ACK), now, p);
        out.push(pkt);
    }

    fn packet(&mut self, off: u64, len: u16, flags: TcpFlags, now: Instant, p: &TcpParams) -> Packet {
        if flags.ack() {
            self.quick_acks = self.quick_acks.saturating_sub(1); // Linux tcp_dec_quickack_mode
        }
        self.unacked_segs = 0;
        self.delack_at = Opt64::NONE;
        if flags.ack() {
            self.last_ack_sent = self.rcv_nxt;
        }
        let mut pkt = Packet {
            flow: self.key,
            seq: self.iss.wrapping_add(off as u32),
            ack: if flags.ack() { self.irs.wrapping_add(self.rcv_nxt as u32) } else { 0 },
            flags,
            payload_len: len,
            window: super::window_field(p.rwnd),
            ..Packet::default()
        };
        if p.timestamps {
            pkt.ts_val = ts_now(now);
            pkt.ts_ecr = self.ts_recent;
        }
        let mut option_bytes = 0;
        if let Some(o) = self.ooo.as_deref().filter(|o| p.sack() && flags.ack() && !o.ranges.is_empty()) {
            for &s in &o.recent {
                if pkt.sack_count as usize == MAX_SACK_BLOCKS {
                    break;
                }
                if let Some((rs, re)) = o.ranges.range_of(s) {
                    let block = SackBlock { start: self.irs.wrapping_add(rs as u32), end: self.irs.wrapping_add(re as u32) };
                    if !pkt.sack_blocks().contains(&block) {
                        pkt.sack[pkt.sack_count as usize] = block;
                        pkt.sack_count += 1;
                    }
                }
            }
            option_bytes = 4 + 8 * pkt.sack_count as u32; // two NOPs, kind, length, blocks
        }
        pkt.ip_len_bytes = (p.header_bytes + option_bytes + len as u32) as u16;
        pkt
    }
}

/// The timestamp clock: microseconds plus one, wrapping (RFC 7323 allows any monotone
/// clock); zero is reserved for "no timestamp".
fn ts_now(now: Instant) -> u32 {
    ((now.as_nanos() / 1_000) as u32).wrapping_add(1).max(1)
}

/// Unwraps a 32-bit wire sequence number near a known offset.
fn unwrap(base_off: u64, base_wire: u32, wire: u32) -> u64 {
    let delta = wire.wrapping_sub(base_wire) as i32 as i64;
    (base_off as i64 + delta).max(0) as u64
}
