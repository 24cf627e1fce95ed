//! A TCP endpoint faithful to the RFCs that decide timeouts and recovery in small windows.
//!
//! Read first: RFC 793 (states), RFC 5681 (slow start, congestion avoidance, fast
//! retransmit), RFC 6582 (NewReno), RFC 6675 (SACK loss recovery) with RFC 2018 (SACK
//! blocks), RFC 6298 (RTO, Karn, backoff), RFC 7323 (timestamps), RFC 3042 (limited
//! transmit), RFC 3390/6928 (initial window); RFC 9438 (CUBIC, in `cc/cubic.rs`); RFC 9406
//! (HyStart++, in `cc/hystart.rs`, off by default).
//!
//! Both ends of a connection are `Endpoint`s: each has a send half and a receive half, so
//! ACKs, FINs and their retransmissions follow one set of rules. Sequence numbers on the
//! wire are 32-bit and start at a random ISS; internally every endpoint counts offsets from
//! its ISS in `u64` (offset 0 is the SYN, data starts at 1).
//!
//! Choices where the RFCs leave room (see docs/tcp.md): no Nagle (each write is sent at
//! once); the listener retransmits its SYN-ACK on its own timer and also answers a
//! retransmitted SYN at once; after an RTO the sender goes back to `snd_una` but keeps the
//! SACK scoreboard and skips what it covers (RFC 6675 §5.1: our receivers never renege);
//! ns-2's Sack1 (`recovery/ns2_sack1.rs`) clears it, as ns-2 does.

pub(crate) mod compact;
pub mod config;
mod ack;
mod cong_control;
mod params;
mod receiver;
mod recovery;
mod sender;
mod timers;
#[cfg(test)]
mod differential;
#[cfg(test)]
mod frozen;
pub mod cc;
mod pacing;
mod rtt;
mod rtt_ns2;
mod rtt_samples;
pub mod rate;
pub mod sack;

pub use params::{AckPolicy, CcPolicy, Remedies, RecoveryPolicy, SendPolicy, TcpParams, TimerPolicy};
pub use recovery::CongState;
pub use rtt::{LinuxSample, LinuxVar, RttEstimator};

use config::{DisorderAck, DupackRule, FastRetransmitRto, PartialAck, Recovery, RecoveryExit, RecoveryPipe, SsthreshFrom};
use compact::{LazyVec, Opt64};
use cc::hystart::HyStart;
use cc::CongestionControl;
use pacing::{Pacer, PacingRate};
use recovery::prr::Prr;
use recovery::rack::{LossMarks, Rack};
use recovery::tlp::Tlp;
use recovery::undo::Undo;
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

/// The earlier of two optional deadlines; `None` only if both are.
/// The window field an endpoint with receive window `rwnd_bytes` writes on each segment
/// (RFC 793 SEG.WND). No window scale option is modelled (RFC 7323: no shift is negotiated),
/// so a window past 65 535 bytes shows as 65 535, the most the field holds unscaled.
pub(crate) fn window_field(rwnd_bytes: u64) -> u16 {
    rwnd_bytes.min(u64::from(u16::MAX)) as u16
}

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
    /// ns-2's fixed-point RTT state (`rto_rule = "ns2"`).
    ns2_rtt: rtt_ns2::Ns2Rtt,
    /// ns-2's `dupwnd_`, bytes: the inflation within `cwnd` in fast recovery (`fast_recovery = "ns2"`).
    ns2_dupwnd: u64,
    /// ns-2 FullTcp's sender state (`fast_recovery = "ns2_full"`).
    fulltcp: recovery::ns2_full::FullTcp,
    /// ns-2's Sack1 agent (`fast_recovery = "ns2"` with `recovery = "sack"`).
    ns2_sack1: recovery::ns2_sack1::Sack1,
    /// Arrival of the last in-order data segment (`ack_rule = "linux"`: a longer silence than
    /// the RTO restarts quick-ACK mode).
    last_data_rcv: Option<Instant>,
    prr: Prr,
    /// Per-segment send times and RFC 8985 state (`loss_detection = "rack"`).
    rack: Rack,
    /// First-transmission times of the segments in flight (`rtt_samples = "every_ack"`).
    send_times: SendTimes,
    pacer: Pacer,
    /// `tail_loss_probe`: the probe timer and episode.
    tlp: Tlp,
    /// `rto_undo`, `recovery_undo`, `frto`: what the last episode may have to undo.
    undo: Undo,
    /// The receiver's D-SACK block for its next ACK, offsets (`dsack`; Linux `tcp_dsack_set`).
    dsack: Option<(u64, u64)>,
    /// Delivery-rate samples for BBR (`rate.rs`).
    rate: rate::RateSampler,
    /// BBR's state (`congestion = "bbr"`), from its first use.
    bbr: Option<Box<cc::bbr::Bbr>>,
    /// BBR: an ACK is being processed; its sends wait until BBR has set cwnd (`cong_control.rs`).
    cong_control_pending: bool,
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
    /// The listener's SYN-ACKs resent in answer to a retried SYN (Linux counts them with
    /// its timer's in `num_retrans`, which decides the window after the handshake).
    syn_answers: u8,
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
            cc: CongestionControl::new(p.cc.congestion, p.cc.cubic_fast_convergence, p.cc.cubic_hystart),
            hystart: p.cc.hystart.then(Box::default),
            dupacks: 0,
            recovery: None,
            recover_mark: 0,
            prev_highest_ack: 0,
            rto_una: Opt64::NONE,
            rtt: RttEstimator::new(p.timers.initial_rto, p.timers.max_rto),
            timed: None,
            syn_tries: 0,
            syn_answers: 0,
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
        if p.bbr() {
            self.bbr_on_write(p);
        }
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
            for _ in 0..p.remedies.padding_dummies {
                self.app_written += p.remedies.padding_dummy_bytes;
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
            Some(q) => earliest(earliest(timers, q.tlp.pto_at), earliest(q.rack.timer, q.pacer.timer)),
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
                    let sampled = self.take_rtt_sample(1, seg, ack_rtt, now, p).is_some();
                    self.snd_una = 1;
                    self.rto_retries = 0;
                    self.rto_at = Opt64::NONE;
                    self.start_after_syn_timeout(sampled, p);
                    if p.recovery.fulltcp {
                        // ns-2's FullTcp sends the handshake's ACK alone (tcp-full.cc:1847,
                        // "special to ns: generate pure ACK here"), then the data; with no
                        // data it sends a second pure ACK, the `TF_ACKNOW` set at :1820
                        // (which that first send does not clear) going out through `foutput`.
                        self.send_ack(now, p, out);
                        let sent = out.len();
                        self.try_send(now, p, out);
                        if out.len() == sent {
                            self.send_ack(now, p, out);
                        }
                    } else {
                        let sent = out.len();
                        self.try_send(now, p, out);
                        if out.len() == sent {
                            self.send_ack(now, p, out);
                        }
                    }
                    self.count_handshake_as_unacked(p);
                }
            }
            State::SynReceived if seg.flags.syn() && !seg.flags.ack() => {
                // Our SYN-ACK was lost: the client retried. Echo this SYN's TSval (RFC 7323 §4.3).
                self.update_ts_recent(seg, p);
                self.syn_answers = self.syn_answers.saturating_add(1);
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
        if p.acks.ack_first_data {
            self.unacked_segs = 1;
        }
    }

    /// RFC 5681 §3.1 and RFC 6298 (5.7): once our SYN (or SYN-ACK) timed out, data starts
    /// with a window of one segment and an RTO of 3 s, whatever the handshake's RTT sample.
    /// Linux (`syn_timeout_restart = "linux"`) is narrower: `tcp_init_transfer` cuts the
    /// window only after more than one retransmission (its 1 s initial RTO makes a single
    /// one common), and `tcp_init_metrics` sets 3 s only when `sampled` is false (SRTT 0).
    /// Linux's undo of a spurious retry (`tcp_try_undo_spurious_syn`) is not built.
    fn start_after_syn_timeout(&mut self, sampled: bool, p: &TcpParams) {
        if self.syn_tries == 0 {
            return;
        }
        if !p.timers.linux_syn_restart {
            self.cwnd = p.mss;
            self.rtt.reinit_after_syn_timeout();
            return;
        }
        if self.syn_tries.saturating_add(self.syn_answers) > 1 {
            self.cwnd = p.mss;
        }
        if !sampled {
            self.rtt.reinit_after_syn_timeout();
        }
    }

    fn unwrap_ack(&self, wire: u32) -> u64 {
        unwrap(self.snd_una, self.iss.wrapping_add(self.snd_una as u32), wire)
    }

    fn flight_size(&self) -> u64 {
        self.snd_max - self.snd_una
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

#[cfg(test)]
mod tests;
