//! The approximate flow model of TAQ (Section 3.3, Figure 7): what a middlebox can learn
//! about one TCP flow from the packets it sees, epoch by epoch.
//!
//! An *epoch* is the middlebox-perceived RTT of the flow. Per epoch the model counts new
//! packets, retransmitted packets (inferred from sequence numbers: a segment that starts
//! below the highest sequence number seen so far re-sends data), losses inflicted here and
//! the progress of the highest sequence number. Epochs close lazily: when the flow's next
//! packet arrives, or when the discipline's sweep passes over the flow.
//!
//! Epoch length:
//! - two-way (the reverse direction is seen through `observe_reverse`): the handshake gives
//!   the first sample, both halves of the path as seen from the box. When this side opens
//!   (forward SYN), from the SYN to the first forward packet after the reverse SYN-ACK.
//!   When the far side opens (the usual download: the client's SYN is reverse traffic and
//!   this direction starts with the server's SYN-ACK), the receiver-side half runs from the
//!   SYN-ACK to the reverse ACK that answers it, and the sender-side half from the last
//!   reverse packet (that ACK, or the request) to the first forward data. After that, a
//!   new data segment is timed until the reverse ACK covers it (the receiver-side half,
//!   queueing here included) and the sender-side half measured in the handshake is added.
//!   Karn: a retransmission of the timed segment cancels the sample.
//! - one-way: the first sample is the gap between the SYN (or SYN-ACK) and the first data packet;
//!   afterwards the gap between successive *burst starts* (a packet after a pause of at
//!   least `burst_gap_fraction` of an epoch), when shorter than two epochs (longer gaps are
//!   silences, not RTTs).
//!
//! Samples are smoothed with weight `epoch_gain` (RFC 6298's alpha by default) and clamped
//! to `[min_epoch_ns, max_epoch_ns]`; before any sample the epoch is `initial_epoch_ns`.

use super::TaqConfig;
use crate::packet::Packet;
use crate::time::Instant;

/// The states of Figure 7 (plus the paper's "dummy" silence state for flows that have
/// nothing to send).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaqState {
    /// Window growing fast: new packets per epoch grow by at least `slow_start_growth`.
    SlowStart = 0,
    /// No loss here, new packets per epoch roughly steady.
    Normal,
    /// Lost a packet (here, or elsewhere: a retransmission was seen) and is recovering
    /// without a timeout.
    ExplicitRecovery,
    /// Silent for an epoch or more after a loss: waiting for its retransmission timer.
    TimeoutSilence,
    /// Retransmitting after a silence.
    TimeoutRecovery,
    /// Silent after a loss during timeout recovery, or for `extended_silence_epochs`
    /// epochs: a repeated timeout with a backed-off timer.
    ExtendedSilence,
    /// Silent without a known loss: nothing to send (the paper's dummy silence state).
    IdleSilence,
}

impl TaqState {
    pub const COUNT: usize = 7;
    pub const ALL: [TaqState; Self::COUNT] = [
        TaqState::SlowStart,
        TaqState::Normal,
        TaqState::ExplicitRecovery,
        TaqState::TimeoutSilence,
        TaqState::TimeoutRecovery,
        TaqState::ExtendedSilence,
        TaqState::IdleSilence,
    ];
    pub fn name(self) -> &'static str {
        match self {
            TaqState::SlowStart => "slow_start",
            TaqState::Normal => "normal",
            TaqState::ExplicitRecovery => "explicit_recovery",
            TaqState::TimeoutSilence => "timeout_silence",
            TaqState::TimeoutRecovery => "timeout_recovery",
            TaqState::ExtendedSilence => "extended_silence",
            TaqState::IdleSilence => "idle_silence",
        }
    }
    pub fn is_silent(self) -> bool {
        matches!(self, TaqState::TimeoutSilence | TaqState::ExtendedSilence | TaqState::IdleSilence)
    }
}

/// The predicted consequence of dropping a packet (Section 4.1), mildest first: the
/// discipline drops the packet whose prediction is mildest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NextState {
    /// No sequence space (a pure ACK, UDP, ICMP): no TCP state to hurt. Not the first victim
    /// for that: the discipline drops such a packet only from the longest backlog
    /// (`Taq::drop_one`).
    Unaffected = 0,
    /// Normal loss in a window of at least `fast_retransmit_min_window_pkts` with no other
    /// loss this epoch: three duplicate ACKs can come back, fast retransmit recovers.
    ExplicitRecovery,
    /// A loss the sender can only recover by a retransmission timeout: a retransmission, a
    /// first SYN, a second loss in an epoch, or a window too small for three duplicate ACKs.
    Timeout,
    /// A loss while the flow's timer is still backed off (during timeout recovery, or of a
    /// retried SYN): the next timeout doubles again.
    RepeatedTimeout,
}

impl NextState {
    pub const COUNT: usize = 4;
    pub fn name(self) -> &'static str {
        match self {
            NextState::Unaffected => "unaffected",
            NextState::ExplicitRecovery => "explicit_recovery",
            NextState::Timeout => "timeout",
            NextState::RepeatedTimeout => "repeated_timeout",
        }
    }
}

/// Counters of one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EpochCounts {
    /// Packets of any kind (a SYN or pure ACK also shows the flow is not silent).
    pub pkts: u32,
    /// Data segments above the highest sequence number seen before.
    pub new_pkts: u32,
    /// Data segments (or SYNs) starting below the highest sequence number seen.
    pub retx_pkts: u32,
    /// Packets of this flow dropped here.
    pub losses: u32,
    /// Advance of the highest sequence number, bytes.
    pub progress_bytes: u32,
}

/// `a < b` in sequence space (RFC 793 modular comparison).
pub fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Most silent epochs applied one by one when a flow is rolled forward; after that the
/// state can no longer change (the escalation threshold is validated below this), so the
/// rest are only counted.
const MAX_STEPWISE_SILENT_EPOCHS: u32 = 64;

/// Per-flow state of the approximate model.
#[derive(Debug, Clone)]
pub struct FlowModel {
    pub state: TaqState,
    /// The active state the flow was in when its current (or last) silence began.
    pub before_silence: TaqState,
    /// The silence state that preceded the current recovery (sets the priority of its
    /// retransmissions in the Recovery queue); `None` outside recovery-after-silence.
    pub recovering_from: Option<TaqState>,
    /// Still in the slow start that began with its handshake (NewFlow queue).
    pub is_new: bool,
    pub epoch_ns: u64,
    pub epoch_measured: bool,
    pub epoch_start: Instant,
    pub cur: EpochCounts,
    pub prev: EpochCounts,
    /// Consecutive silent epochs (the current silence's length).
    pub silence_epochs: u32,
    /// Drops inflicted here whose retransmission has not been seen yet (all cleared once
    /// the reverse ACK covers `drop_end`).
    pub pending_drops: u32,
    /// End (highest sequence number + 1) of the data dropped here while drops are pending.
    /// Two-way: once the receiver's cumulative ACK covers it, every dropped byte has
    /// reached the receiver and nothing is pending, even if a dropped copy was a duplicate
    /// that will never be re-sent.
    drop_end: Option<u32>,
    /// A retransmission of this flow was dropped here since it last left a silence.
    pub retx_lost: bool,
    /// Highest sequence number seen + 1 (end of the highest segment), once known.
    highest_end: Option<u32>,
    last_pkt_at: Instant,
    last_burst_start: Option<Instant>,
    syn_at: Option<Instant>,
    synack_at: Option<Instant>,
    first_data_seen: bool,
    /// Box → sender → box, from the handshake (two-way only).
    sender_half_ns: Option<u64>,
    /// The far side opened the connection: when this direction's SYN-ACK passed.
    answered_at: Option<Instant>,
    /// The far side opened: box → receiver → box, from the SYN-ACK to the reverse ACK that
    /// answered it, until the first forward data completes the handshake's sample.
    answered_receiver_half_ns: Option<u64>,
    /// When the last packet of the reverse direction passed.
    last_reverse_at: Option<Instant>,
    /// Data segment being timed until a reverse ACK covers it: (end seq, arrival).
    timed: Option<(u32, Instant)>,
    /// The reverse direction of this flow has been seen.
    pub two_way: bool,
    /// Packets of this flow queued now.
    pub queued_pkts: u32,
}

/// What [`FlowModel::on_arrival`] learned about a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivalInfo {
    /// Re-sends sequence space already seen (data or SYN).
    pub retx: bool,
}

impl FlowModel {
    /// A flow first seen with `first`: a SYN, or a SYN-ACK (the far side opened the
    /// connection, as a client does before a server sends), starts a new flow in slow start;
    /// a packet of a connection already under way (started before the box, or evicted)
    /// starts Normal.
    pub fn new(first: &Packet, now: Instant, cfg: &TaqConfig) -> Self {
        let syn = first.flags.syn();
        FlowModel {
            state: if syn { TaqState::SlowStart } else { TaqState::Normal },
            before_silence: TaqState::Normal,
            recovering_from: None,
            is_new: syn,
            epoch_ns: cfg.initial_epoch_ns,
            epoch_measured: false,
            epoch_start: now,
            cur: EpochCounts::default(),
            prev: EpochCounts::default(),
            silence_epochs: 0,
            pending_drops: 0,
            drop_end: None,
            retx_lost: false,
            highest_end: None,
            last_pkt_at: now,
            last_burst_start: None,
            syn_at: None,
            synack_at: None,
            first_data_seen: false,
            sender_half_ns: None,
            answered_at: None,
            answered_receiver_half_ns: None,
            last_reverse_at: None,
            timed: None,
            two_way: false,
            queued_pkts: 0,
        }
    }

    /// When the flow's last packet arrived here.
    pub fn last_pkt_at(&self) -> Instant {
        self.last_pkt_at
    }

    /// Is `pkt` a retransmission? Updates the highest sequence number seen. Zero-length
    /// segments (pure ACKs) are never retransmissions.
    pub fn classify_seq(&mut self, pkt: &Packet) -> bool {
        let len = pkt.seq_len();
        if len == 0 {
            return false;
        }
        let end = pkt.seq.wrapping_add(len);
        match self.highest_end {
            Some(h) if seq_lt(pkt.seq, h) => {
                if seq_lt(h, end) {
                    self.highest_end = Some(end); // overlaps the edge: re-sends and extends
                }
                true
            }
            Some(h) => {
                self.cur.progress_bytes = self.cur.progress_bytes.saturating_add(end.wrapping_sub(h));
                self.highest_end = Some(end);
                false
            }
            None => {
                self.highest_end = Some(end);
                false
            }
        }
    }

    /// Close every epoch that ended by `now`.
    pub fn roll(&mut self, now: Instant, cfg: &TaqConfig) {
        let elapsed = now.saturating_since(self.epoch_start).as_nanos();
        if elapsed < self.epoch_ns {
            return;
        }
        let k = elapsed / self.epoch_ns;
        self.epoch_start += crate::time::Duration(k * self.epoch_ns);
        self.close_epoch(cfg);
        let silent = k - 1;
        for _ in 0..silent.min(MAX_STEPWISE_SILENT_EPOCHS as u64) {
            self.close_epoch(cfg);
        }
        if silent > MAX_STEPWISE_SILENT_EPOCHS as u64 {
            let rest = (silent - MAX_STEPWISE_SILENT_EPOCHS as u64).min(u32::MAX as u64) as u32;
            self.silence_epochs = self.silence_epochs.saturating_add(rest);
            self.prev = EpochCounts::default();
        }
    }

    /// The transitions of Figure 7 that happen at an epoch boundary.
    fn close_epoch(&mut self, cfg: &TaqConfig) {
        let c = self.cur;
        if c.pkts == 0 {
            self.silent_epoch(cfg);
        } else {
            match self.state {
                TaqState::SlowStart => {
                    // Stays in slow start while new packets per epoch keep growing fast;
                    // the first epochs (no data yet) cannot tell.
                    let growing = self.prev.new_pkts == 0
                        || c.new_pkts as f64 >= cfg.slow_start_growth * self.prev.new_pkts as f64;
                    if !growing {
                        self.set_active(TaqState::Normal);
                    }
                }
                // Recovered: every drop here has been retransmitted, nothing was lost this
                // epoch, and new data is flowing again. A timeout restarts in slow start
                // with a small window; a fast retransmit returns to normal.
                TaqState::ExplicitRecovery | TaqState::TimeoutRecovery
                    if self.pending_drops == 0 && c.losses == 0 && c.new_pkts > 0 =>
                {
                    let next = if self.state == TaqState::TimeoutRecovery {
                        TaqState::SlowStart
                    } else {
                        TaqState::Normal
                    };
                    self.set_active(next);
                }
                _ => {}
            }
        }
        self.prev = c;
        self.cur = EpochCounts::default();
    }

    fn silent_epoch(&mut self, cfg: &TaqConfig) {
        self.silence_epochs = self.silence_epochs.saturating_add(1);
        let known_loss = self.pending_drops > 0 || self.retx_lost;
        let next = match self.state {
            TaqState::SlowStart | TaqState::Normal if known_loss => TaqState::TimeoutSilence,
            TaqState::SlowStart | TaqState::Normal => TaqState::IdleSilence,
            TaqState::ExplicitRecovery => TaqState::TimeoutSilence,
            TaqState::TimeoutRecovery if known_loss => TaqState::ExtendedSilence,
            TaqState::TimeoutRecovery => TaqState::IdleSilence,
            TaqState::TimeoutSilence if self.silence_epochs > cfg.extended_silence_epochs => {
                TaqState::ExtendedSilence
            }
            s => s,
        };
        if !self.state.is_silent() && next.is_silent() {
            self.before_silence = self.state;
            self.silence_epochs = 1;
        }
        self.state = next;
    }

    fn set_active(&mut self, s: TaqState) {
        if s != TaqState::SlowStart {
            self.is_new = false;
        }
        if matches!(s, TaqState::SlowStart | TaqState::Normal) {
            self.recovering_from = None;
        }
        self.state = s;
    }

    /// A packet of this flow reached the queue (before the admit/drop decision).
    pub fn on_arrival(&mut self, pkt: &Packet, now: Instant, cfg: &TaqConfig) -> ArrivalInfo {
        self.roll(now, cfg);
        let retx = self.classify_seq(pkt);
        let data = pkt.payload_len > 0;
        self.estimate_epoch_on_arrival(pkt, now, retx, data, cfg);
        self.cur.pkts += 1;
        if retx {
            self.cur.retx_pkts += 1;
            self.pending_drops = self.pending_drops.saturating_sub(1);
            if self.pending_drops == 0 {
                self.drop_end = None;
            }
        } else if data {
            self.cur.new_pkts += 1;
        }
        if self.state.is_silent() {
            // The silence ends. A retransmission after it is a timeout's retransmission,
            // even after a silence we took for idleness (a loss elsewhere).
            let silence = self.state;
            self.silence_epochs = 0;
            self.retx_lost = false;
            if retx {
                self.recovering_from = Some(silence);
                self.state = TaqState::TimeoutRecovery;
            } else if silence == TaqState::IdleSilence {
                self.state = self.before_silence;
            } else {
                // New data right after a timeout silence: the timeout's retransmission
                // went by unseen (or was not needed); the sender restarts in slow start.
                self.set_active(TaqState::SlowStart);
                self.is_new = false;
            }
        } else if retx && matches!(self.state, TaqState::SlowStart | TaqState::Normal) {
            // Loss elsewhere (Section 4.1: "TAQ automatically adjusts the state").
            self.set_active(TaqState::ExplicitRecovery);
        }
        self.last_pkt_at = now;
        ArrivalInfo { retx }
    }

    /// This box dropped a packet of the flow (`retx`: the packet was a retransmission).
    pub fn on_drop(&mut self, pkt: &Packet, retx: bool) {
        self.cur.losses += 1;
        if pkt.seq_len() == 0 || pkt.flags.syn() {
            return; // a lost handshake is a SYN timeout, not a loss to recover from
        }
        self.pending_drops = self.pending_drops.saturating_add(1);
        let end = pkt.seq.wrapping_add(pkt.seq_len());
        if self.drop_end.is_none_or(|e| seq_lt(e, end)) {
            self.drop_end = Some(end);
        }
        if retx {
            self.retx_lost = true;
        } else if matches!(self.state, TaqState::SlowStart | TaqState::Normal) {
            self.set_active(TaqState::ExplicitRecovery);
        }
    }

    /// Section 4.1: what dropping `pkt` (a retransmission if `retx`) would do to the flow.
    pub fn predict_drop(&self, pkt: &Packet, retx: bool, cfg: &TaqConfig) -> NextState {
        if pkt.seq_len() == 0 {
            return NextState::Unaffected;
        }
        if pkt.flags.syn() {
            // The SYN timer backs off too (1 s, 2 s, 4 s, ...): losing a retried SYN
            // repeats a timeout, and may void the admission it waited for.
            let protected = retx || cfg.protect_first_syn;
            return if protected { NextState::RepeatedTimeout } else { NextState::Timeout };
        }
        // The timer stays backed off until new data is acknowledged (RFC 6298 §5.7):
        // throughout timeout recovery.
        let backed_off = self.state == TaqState::TimeoutRecovery;
        if retx {
            return if backed_off { NextState::RepeatedTimeout } else { NextState::Timeout };
        }
        if backed_off {
            return NextState::RepeatedTimeout; // new data right after a timeout retransmission
        }
        let window = self.cur.new_pkts.max(self.prev.new_pkts);
        let fast_retransmit = window >= cfg.fast_retransmit_min_window_pkts
            && self.cur.losses == 0
            && matches!(self.state, TaqState::SlowStart | TaqState::Normal);
        if fast_retransmit {
            NextState::ExplicitRecovery
        } else {
            NextState::Timeout
        }
    }

    /// Drops here in the current and the previous epoch (OverPenalized test).
    pub fn recent_losses(&self) -> u32 {
        self.cur.losses + self.prev.losses
    }

    fn estimate_epoch_on_arrival(&mut self, pkt: &Packet, now: Instant, retx: bool, data: bool, cfg: &TaqConfig) {
        if pkt.flags.syn() {
            if pkt.flags.ack() {
                self.answered_at = Some(now);
            } else {
                self.syn_at = Some(now);
            }
            return;
        }
        if let (true, Some(receiver_half)) = (data, self.answered_receiver_half_ns) {
            // The far side opened: SYN-ACK → (reverse ACK) ... last reverse packet → this data.
            let sender_half = self.last_reverse_at.map_or(0, |r| now.saturating_since(r).as_nanos());
            self.sample(receiver_half + sender_half, cfg);
            self.sender_half_ns = Some(sender_half);
            self.answered_receiver_half_ns = None;
        }
        if let (Some(syn), Some(synack)) = (self.syn_at, self.synack_at) {
            // Two-way handshake: SYN → (reverse SYN-ACK) → this packet.
            self.sample(now.saturating_since(syn).as_nanos(), cfg);
            self.sender_half_ns = Some(now.saturating_since(synack).as_nanos());
            self.syn_at = None;
            self.synack_at = None;
        }
        if retx {
            if let Some((end, _)) = self.timed {
                if seq_lt(pkt.seq, end) {
                    self.timed = None; // Karn: ambiguous
                }
            }
        } else if data && self.timed.is_none() {
            self.timed = Some((pkt.seq.wrapping_add(pkt.seq_len()), now));
        }
        if !data || self.two_way {
            return;
        }
        if !self.first_data_seen {
            self.first_data_seen = true;
            if let Some(opened) = self.syn_at.take().or(self.answered_at.take()) {
                self.sample(now.saturating_since(opened).as_nanos(), cfg);
            }
            self.last_burst_start = Some(now);
            return;
        }
        let gap = now.saturating_since(self.last_pkt_at).as_nanos();
        if gap as f64 >= cfg.burst_gap_fraction * self.epoch_ns as f64 {
            if let Some(b) = self.last_burst_start {
                let interval = now.saturating_since(b).as_nanos();
                if interval < 2 * self.epoch_ns {
                    self.sample(interval, cfg);
                }
            }
            self.last_burst_start = Some(now);
        }
    }

    /// A packet of this flow's reverse direction (an ACK or the SYN-ACK) passed the box.
    pub fn on_reverse(&mut self, pkt: &Packet, now: Instant, cfg: &TaqConfig) {
        self.two_way = true;
        if pkt.flags.syn() && pkt.flags.ack() {
            self.synack_at = Some(now);
            return;
        }
        if !pkt.flags.ack() {
            return;
        }
        self.last_reverse_at = Some(now);
        if let Some(answered) = self.answered_at.take() {
            self.answered_receiver_half_ns = Some(now.saturating_since(answered).as_nanos());
        }
        if self.drop_end.is_some_and(|e| !seq_lt(pkt.ack, e)) {
            // Every byte dropped here has been received: the losses are recovered (a
            // dropped duplicate of delivered data is never re-sent, so counting
            // retransmissions alone would leave the flow in recovery for good).
            self.pending_drops = 0;
            self.drop_end = None;
        }
        if let Some((end, sent)) = self.timed {
            if !seq_lt(pkt.ack, end) {
                let half = now.saturating_since(sent).as_nanos();
                // Without the handshake's sender-side half, the receiver-side half stands
                // for the whole epoch (exact when the box sits next to the sender).
                self.sample(half + self.sender_half_ns.unwrap_or(0), cfg);
                self.timed = None;
            }
        }
    }

    fn sample(&mut self, sample_ns: u64, cfg: &TaqConfig) {
        let s = sample_ns.clamp(cfg.min_epoch_ns, cfg.max_epoch_ns);
        self.epoch_ns = if self.epoch_measured {
            let e = (1.0 - cfg.epoch_gain) * self.epoch_ns as f64 + cfg.epoch_gain * s as f64;
            (e.round() as u64).clamp(cfg.min_epoch_ns, cfg.max_epoch_ns)
        } else {
            s
        };
        self.epoch_measured = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::TcpFlags;
    use crate::qdisc::testkit::pkt;

    const MS: u64 = 1_000_000;

    fn cfg() -> TaqConfig {
        TaqConfig { initial_epoch_ns: 100 * MS, ..TaqConfig::default() }
    }
    fn syn(seq: u32) -> Packet {
        let mut p = pkt(1, 2, 5, 40);
        p.seq = seq;
        p.flags = TcpFlags(TcpFlags::SYN);
        p
    }
    fn data(seq: u32, len: u16) -> Packet {
        let mut p = pkt(1, 2, 5, 40 + len);
        p.seq = seq;
        p.payload_len = len;
        p.flags = TcpFlags(TcpFlags::ACK);
        p
    }
    fn ack(ackno: u32) -> Packet {
        let mut p = pkt(2, 1, 80, 40);
        p.ack = ackno;
        p.flags = TcpFlags(TcpFlags::ACK);
        p
    }
    fn at(ms: u64) -> Instant {
        Instant(ms * MS)
    }

    #[test]
    fn retransmissions_are_inferred_from_sequence_numbers_with_wraparound() {
        let c = cfg();
        let base = u32::MAX - 700; // the flow wraps the sequence space
        let mut f = FlowModel::new(&syn(base), at(0), &c);
        assert!(!f.classify_seq(&syn(base)));
        assert!(f.classify_seq(&syn(base)), "a repeated SYN re-sends sequence space");
        let s = base.wrapping_add(1);
        assert!(!f.classify_seq(&data(s, 500)));
        assert!(!f.classify_seq(&data(s.wrapping_add(500), 500)), "crosses 2^32: still new");
        assert!(f.classify_seq(&data(s, 500)), "below the highest: retransmission");
        assert!(f.classify_seq(&data(s.wrapping_add(500), 500)));
        assert!(!f.classify_seq(&data(s.wrapping_add(1000), 500)));
        // A pure ACK carries no sequence space.
        assert!(!f.classify_seq(&data(s, 0)));
        // Progress of this epoch = bytes above the old highest: 1 (SYN) + 3 × 500.
        assert_eq!(f.cur.progress_bytes, 1500);
    }

    #[test]
    fn slow_start_then_normal_when_growth_stops() {
        let c = cfg(); // growth 1.5, epoch 100 ms (one-way: SYN→first data resets it below)
        let mut f = FlowModel::new(&syn(0), at(0), &c);
        f.on_arrival(&syn(0), at(0), &c);
        let mut seq = 1;
        let mut t = 100;
        // First data 100 ms after the SYN: epoch = 100 ms. Then 1, 2, 4 packets per epoch.
        for n in [1u32, 2, 4] {
            for i in 0..n {
                f.on_arrival(&data(seq, 100), at(t + i as u64), &c);
                seq += 100;
            }
            t += 100;
            assert_eq!(f.state, TaqState::SlowStart);
            assert!(f.is_new);
        }
        // 5 packets after 4: growth 1.25 < 1.5: Normal when that epoch closes.
        for i in 0..5 {
            f.on_arrival(&data(seq, 100), at(t + i), &c);
            seq += 100;
        }
        f.roll(at(t + 100), &c);
        assert_eq!(f.state, TaqState::Normal);
        assert!(!f.is_new);
        assert_eq!(f.epoch_ns, 100 * MS);
    }

    /// Drive a flow into Normal with `w` packets per 100 ms epoch; returns (model, next seq, time ms).
    fn normal_flow(w: u32) -> (FlowModel, u32, u64) {
        let c = cfg();
        let mut f = FlowModel::new(&data(0, 100), at(0), &c);
        let mut seq = 0;
        for e in 0..3u64 {
            for i in 0..w {
                f.on_arrival(&data(seq, 100), at(e * 100 + i as u64), &c);
                seq += 100;
            }
        }
        assert_eq!(f.state, TaqState::Normal);
        (f, seq, 300)
    }

    #[test]
    fn drop_then_retransmission_then_back_to_normal() {
        let c = cfg();
        let (mut f, seq, t) = normal_flow(5);
        let lost = data(seq, 100);
        f.on_arrival(&lost, at(t), &c);
        // Window 5 ≥ 4, first loss of the epoch: fast retransmit predicted.
        assert_eq!(f.predict_drop(&lost, false, &c), NextState::ExplicitRecovery);
        f.on_drop(&lost, false);
        assert_eq!(f.state, TaqState::ExplicitRecovery);
        assert_eq!(f.pending_drops, 1);
        // A second loss in the same epoch would need a timeout.
        assert_eq!(f.predict_drop(&data(seq + 100, 100), false, &c), NextState::Timeout);
        // Next epoch: the retransmission and new data arrive.
        let info = f.on_arrival(&data(seq, 100), at(t + 100), &c);
        assert!(info.retx);
        assert_eq!(f.pending_drops, 0);
        f.on_arrival(&data(seq + 100, 100), at(t + 101), &c);
        assert_eq!(f.state, TaqState::ExplicitRecovery);
        f.roll(at(t + 200), &c);
        assert_eq!(f.state, TaqState::Normal);
    }

    #[test]
    fn small_window_loss_predicts_timeout_then_silence_recovery_and_slow_start() {
        let c = cfg(); // extended_silence_epochs = 3
        let (mut f, seq, t) = normal_flow(2);
        let lost = data(seq, 100);
        f.on_arrival(&lost, at(t), &c);
        assert_eq!(f.predict_drop(&lost, false, &c), NextState::Timeout, "window 2 < 4: no dupACKs");
        f.on_drop(&lost, false);
        // Silent for the next epoch: timeout silence, remembering the recovery it came from.
        f.roll(at(t + 200), &c);
        assert_eq!(f.state, TaqState::TimeoutSilence);
        assert_eq!(f.before_silence, TaqState::ExplicitRecovery);
        assert_eq!(f.silence_epochs, 1);
        // The timeout's retransmission: timeout recovery; dropping it would repeat the timeout.
        let rtx = data(seq, 100);
        assert!(f.on_arrival(&rtx, at(t + 250), &c).retx);
        assert_eq!(f.state, TaqState::TimeoutRecovery);
        assert_eq!(f.recovering_from, Some(TaqState::TimeoutSilence));
        assert_eq!(f.predict_drop(&rtx, true, &c), NextState::RepeatedTimeout);
        // Next epoch: new data and no loss → slow start (not a new flow).
        f.on_arrival(&data(seq + 100, 100), at(t + 320), &c);
        f.roll(at(t + 400), &c);
        assert_eq!(f.state, TaqState::SlowStart);
        assert!(!f.is_new);
        assert_eq!(f.recovering_from, None);
    }

    /// A Normal flow of 2 packets per epoch whose packet `seq`, sent at `t` ms, was dropped
    /// here, rolled to `t + 200` ms: silent for an epoch after the loss.
    fn timed_out_flow() -> (FlowModel, u32, u64) {
        let c = cfg();
        let (mut f, seq, t) = normal_flow(2);
        f.on_arrival(&data(seq, 100), at(t), &c);
        f.on_drop(&data(seq, 100), false);
        f.roll(at(t + 200), &c);
        (f, seq, t)
    }

    #[test]
    fn lost_timeout_retransmission_leads_to_extended_silence() {
        let c = cfg();
        let (mut f, seq, t) = timed_out_flow();
        f.on_arrival(&data(seq, 100), at(t + 250), &c);
        assert_eq!(f.state, TaqState::TimeoutRecovery);
        f.on_drop(&data(seq, 100), true);
        assert!(f.retx_lost);
        // Silent epoch after a lost retransmission in timeout recovery: repeated timeout.
        f.roll(at(t + 450), &c);
        assert_eq!(f.state, TaqState::ExtendedSilence);
        // Its next retransmission is the highest recovery class.
        f.on_arrival(&data(seq, 100), at(t + 900), &c);
        assert_eq!(f.state, TaqState::TimeoutRecovery);
        assert_eq!(f.recovering_from, Some(TaqState::ExtendedSilence));
    }

    #[test]
    fn timeout_recovery_ends_once_the_reverse_ack_covers_a_dropped_duplicate() {
        // Section 4.1: "A flow in timeout recovery state that has successfully retransmitted
        // lost packets will recover to a slow start state." Here the sender's timer fires
        // twice and the second copy of its retransmission is dropped: the receiver already
        // has it, so it is never sent again and a count of drops against retransmissions
        // never balances. The receiver's cumulative ACK shows that nothing is missing.
        let c = cfg();
        let (mut f, seq, t) = timed_out_flow();
        assert_eq!(f.state, TaqState::TimeoutSilence);
        f.on_arrival(&data(seq, 100), at(t + 250), &c); // delivered
        f.on_arrival(&data(seq, 100), at(t + 260), &c); // its duplicate, dropped here
        f.on_drop(&data(seq, 100), true);
        assert_eq!((f.state, f.pending_drops), (TaqState::TimeoutRecovery, 1));
        f.on_reverse(&ack(seq), at(t + 290), &c);
        assert_eq!(f.pending_drops, 1, "an ACK below the dropped data recovers nothing");
        f.on_reverse(&ack(seq + 100), at(t + 300), &c);
        assert_eq!(f.pending_drops, 0);
        // Close the epoch with the loss, then one epoch of new data without loss.
        let epoch_end = |f: &FlowModel| Instant(f.epoch_start.as_nanos() + f.epoch_ns);
        let t1 = epoch_end(&f);
        f.roll(t1, &c);
        assert_eq!(f.state, TaqState::TimeoutRecovery, "the epoch had a loss");
        f.on_arrival(&data(seq + 100, 100), Instant(t1.as_nanos() + MS), &c);
        f.roll(epoch_end(&f), &c);
        assert_eq!(f.state, TaqState::SlowStart);
    }

    #[test]
    fn long_timeout_silence_escalates_and_idle_silence_resumes() {
        let c = cfg(); // escalation after more than 3 silent epochs
        let (mut f, seq, t) = normal_flow(2);
        f.on_arrival(&data(seq, 100), at(t), &c);
        f.on_drop(&data(seq, 100), false);
        f.roll(at(t + 100 + 3 * 100), &c); // 3 silent epochs
        assert_eq!((f.state, f.silence_epochs), (TaqState::TimeoutSilence, 3));
        f.roll(at(t + 100 + 4 * 100), &c);
        assert_eq!((f.state, f.silence_epochs), (TaqState::ExtendedSilence, 4));
        // A flow with nothing to send: idle silence, back to its state on new data.
        let (mut g, seq, t) = normal_flow(3);
        g.roll(at(t + 100), &c);
        assert_eq!(g.state, TaqState::IdleSilence);
        g.roll(at(t + 10_000), &c);
        assert_eq!(g.state, TaqState::IdleSilence, "no loss known: stays idle however long");
        g.on_arrival(&data(seq, 100), at(t + 10_000), &c);
        assert_eq!(g.state, TaqState::Normal);
        // But a retransmission after an "idle" silence reveals a timeout.
        g.roll(at(t + 20_000), &c);
        assert!(g.on_arrival(&data(seq, 100), at(t + 20_000), &c).retx);
        assert_eq!(g.state, TaqState::TimeoutRecovery);
    }

    #[test]
    fn retransmission_seen_without_a_drop_here_means_loss_elsewhere() {
        let c = cfg();
        let (mut f, _seq, t) = normal_flow(3);
        f.on_arrival(&data(0, 100), at(t), &c);
        assert_eq!(f.state, TaqState::ExplicitRecovery);
        assert_eq!(f.pending_drops, 0);
    }

    #[test]
    fn one_way_epoch_from_syn_gap_then_burst_starts() {
        let c = cfg();
        let mut f = FlowModel::new(&syn(0), at(0), &c);
        f.on_arrival(&syn(0), at(0), &c);
        f.on_arrival(&data(1, 100), at(300), &c);
        assert_eq!(f.epoch_ns, 300 * MS, "first sample: SYN → first data");
        // Bursts start every 200 ms (a pause ≥ half an epoch before each).
        let mut seq = 101;
        for b in 1..=30u64 {
            for i in 0..2u64 {
                f.on_arrival(&data(seq, 100), at(300 + b * 200 + i), &c);
                seq += 100;
            }
        }
        // EWMA with gain 1/8 from 300 toward 200: 300 − 100·(1 − (7/8)^k) ≈ 200 after 30 samples.
        let e = f.epoch_ns as f64 / MS as f64;
        assert!((e - 200.0).abs() < 3.0, "{e}");
    }

    #[test]
    fn two_way_epoch_from_handshake_and_data_ack_timing() {
        let c = cfg();
        let mut f = FlowModel::new(&syn(0), at(0), &c);
        f.on_arrival(&syn(0), at(0), &c);
        let mut synack = ack(1);
        synack.flags = TcpFlags(TcpFlags::SYN | TcpFlags::ACK);
        f.on_reverse(&synack, at(120), &c); // box → receiver → box: 120 ms
        f.on_arrival(&data(1, 0), at(200), &c); // handshake ACK: sender side 80 ms
        assert_eq!(f.epoch_ns, 200 * MS);
        // Data timed at 210, acked at 370: receiver half 160 + sender half 80 = 240.
        f.on_arrival(&data(1, 100), at(210), &c);
        f.on_reverse(&ack(50), at(300), &c); // does not cover the segment
        assert_eq!(f.epoch_ns, 200 * MS);
        f.on_reverse(&ack(101), at(370), &c);
        assert_eq!(f.epoch_ns, 205 * MS, "200 + (240 − 200)/8");
        // Karn: a retransmission of the timed segment cancels its sample.
        f.on_arrival(&data(101, 100), at(400), &c);
        f.on_arrival(&data(101, 100), at(500), &c);
        f.on_reverse(&ack(201), at(900), &c);
        assert_eq!(f.epoch_ns, 205 * MS);
    }
}
