//! The sender's half of an arriving ACK: SACK blocks into the scoreboard, RTT samples,
//! the cumulative ACK (recovery's exit, window growth, the timer) and duplicate ACKs.

use super::*;
use recovery::rack::Delivery;

/// F-RTO's view of an ACK that advances `snd_una` (`recovery/undo.rs`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Frto {
    /// It delivered data sent before the timeout and never retransmitted.
    original_acked: bool,
    /// It SACKed new data.
    data_sacked: bool,
}

/// What an ACK is, decided before its cumulative part moves `snd_una`.
#[derive(Debug, Clone, Copy)]
struct AckKind {
    /// A duplicate ACK toward fast retransmit (the ACK of a diversity copy excepted).
    duplicate: bool,
    /// ns-3 would count it (outside its CA_RECOVERY and CA_LOSS).
    ns3_counts: bool,
    /// ns-3's `disorder_ack` rule applies to it (see `on_new_ack`).
    ns3_disorder: Option<DisorderAck>,
    /// The duplicate-ACK count before the cumulative part reset it.
    dupacks_before: u32,
}

impl Endpoint {
    /// An arriving ACK, in stages: the SACK blocks into the scoreboard, the RTT sample and
    /// what was delivered (PRR, RACK), what kind of ACK it is, then its cumulative part,
    /// its duplicate part, and RACK's losses it revealed.
    pub(super) fn on_ack(&mut self, seg: &Packet, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let ack = self.unwrap_ack(seg.ack);
        if ack > self.snd_max {
            return; // acknowledges what was never sent
        }
        if self.state == State::SynReceived && ack >= 1 {
            self.state = State::Established; // the handshake's third segment
            self.count_handshake_as_unacked(p);
        }
        if p.ns2_sack1() {
            return self.sack1_on_ack(seg, ack, now, p, out); // its own order, from the first step
        }
        let bbr_prior_in_flight = p.bbr().then(|| self.bbr_begin_ack(p));
        let sacked_before = if p.recovery.prr { self.scoreboard.above(self.snd_una, p.mss).0 } else { 0 };
        let in_loss = self.cong_state() == CongState::Loss;
        let dsack = p.recovery.dsack && self.check_dsack(seg, ack, p);
        let new_sack = p.sack() && self.read_sack_blocks(seg, ack);
        if new_sack || ack > self.snd_una {
            self.note_covered_bursts(ack, now);
        }
        let ack_rtt = self.ack_rtt(ack, new_sack, now, p);
        let mut rearm = false;
        if let Some(sack_rtt) = ack_rtt.filter(|_| ack <= self.snd_una) {
            self.take_rtt_sample(ack, seg, ack_rtt, now, p); // from new SACKs alone (Linux's sack_rtt)
            rearm = p.recovery.sack_rearms_rto && self.sacked_before_head_xmit(sack_rtt, now);
        }
        if p.recovery.prr {
            self.prr_count_delivered(ack, sacked_before, p);
        }
        let delivery = if p.recovery.rack {
            let rack = &mut self.queues.get_or_insert_default().rack;
            let delivery = rack.on_ack(ack, &self.scoreboard, now);
            if p.recovery.rack_dsack_reo_wnd {
                rack.update_reo_wnd(delivery.prior_delivered);
            }
            delivery
        } else {
            Delivery::default()
        };
        let rack_marks = if delivery.rtt_updated { self.rack_detect_loss(now, p) } else { LossMarks::default() };
        // F-RTO's FLAG_ORIG_SACK_ACKED: data sent before the timeout (at most `recover`),
        // never retransmitted, now delivered.
        let original_acked = delivery.original_end.is_some_and(|end| end <= self.recover_mark);
        if p.recovery.prr {
            let safe_ack = !p.recovery.rack || (ack > self.snd_una && !rack_marks.any);
            self.queues_mut().prr.safe_ack = safe_ack;
        }
        let kind = self.classify(seg, ack, new_sack, p);
        if ack > self.snd_una {
            // Linux handles the loss before the cumulative part: no growth, no new data ahead
            // of the fast retransmit (tcp_ack runs tcp_fastretrans_alert first).
            let loss_first = p.recovery.rack && self.rack_starts_recovery(rack_marks, ack);
            let tlp_cut = p.recovery.tail_loss_probe && self.tlp_on_ack(ack, false, p);
            let frto = p.recovery.frto.then_some(Frto { original_acked, data_sacked: new_sack });
            self.on_new_ack(ack, seg, ack_rtt, kind.ns3_disorder, frto, !loss_first && !tlp_cut, !loss_first, now, p, out);
        } else {
            if p.recovery.tail_loss_probe {
                self.tlp_on_ack(ack, !new_sack && seg.seq_len() == 0, p);
            }
            if p.recovery.frto && in_loss {
                let dupack = !new_sack && !dsack && seg.seq_len() == 0;
                let go_back = self.snd_nxt;
                self.frto_on_ack(false, original_acked, new_sack, dupack, p);
                if self.snd_nxt != go_back {
                    self.try_send(now, p, out); // F-RTO gave up: resend what the timeout marked lost
                }
            }
        }
        if dsack && p.recovery.recovery_undo {
            self.undo_dsack(p);
        }
        if kind.duplicate && ack == self.snd_una && self.snd_max > self.snd_una {
            self.count_dupack(kind, now, p, out);
        }
        if rack_marks.any && self.recovery.is_none() {
            // An ACK that was not a duplicate one marked it, or one after an RTO.
            self.rack_respond(now, p, out, rack_marks);
        }
        if rearm && self.snd_una < self.snd_max {
            // tcp_set_xmit_timer: the probe if the sender may send one, else the RTO, from now.
            self.arm_rto(now, p);
            if p.recovery.tail_loss_probe {
                self.tlp_schedule(false, now, p);
            }
        }
        if let Some(prior_in_flight) = bbr_prior_in_flight {
            self.bbr_end_ack(ack, seg, rack_marks.segments, prior_in_flight, now, p, out);
        }
    }

    /// Whether a SACK's RTT sample `sack_rtt`, taken `now`, comes from a segment first sent
    /// before the head's last (re)transmission (Linux's `sack_rtt_us >
    /// tcp_stamp_us_delta(now, tcp_skb_timestamp_us(tcp_rtx_queue_head))`).
    fn sacked_before_head_xmit(&self, sack_rtt: Duration, now: Instant) -> bool {
        let head_xmit = self.queues.as_deref().and_then(|q| q.rack.head_xmit());
        head_xmit.is_some_and(|xmit| sack_rtt > now.saturating_since(xmit))
    }

    /// Adds the ACK's SACK blocks above `ack` to the scoreboard; whether any was new. A
    /// D-SACK block below `ack` adds nothing; one inside the next block adds nothing new.
    fn read_sack_blocks(&mut self, seg: &Packet, ack: u64) -> bool {
        let mut new_sack = false;
        for b in seg.sack_blocks() {
            let (s, e) = (self.unwrap_ack(b.start), self.unwrap_ack(b.end));
            if s >= self.snd_una && e <= self.snd_max && e > ack {
                new_sack |= self.scoreboard.insert(s.max(ack), e);
            }
        }
        new_sack
    }

    /// What kind of ACK `seg` is, before its cumulative part moves `snd_una`.
    #[inline]
    fn classify(&mut self, seg: &Packet, ack: u64, new_sack: bool, p: &TcpParams) -> AckKind {
        // RFC 6675 §2: with SACK a duplicate ACK is one that SACKs new data, even if it also
        // moves `snd_una`; otherwise RFC 5681's: no data, `ack == snd_una`.
        let duplicate = if p.sack() { new_sack } else { ack == self.snd_una && seg.seq_len() == 0 };
        // Diversity: the ACK of a copy the receiver discarded is expected, not a loss signal.
        let copy_ack = ack == self.snd_una && seg.seq_len() == 0 && self.take_copy_ack(ack);
        // ns-3's DupAck runs before the cumulative part of the ACK and counts only outside
        // CA_RECOVERY and CA_LOSS (after an RTO, until `recover`).
        let ns3_counts = matches!(self.cong_state(), CongState::Open | CongState::Disorder);
        // ns-3 handles such an ACK in CA_DISORDER (DupAck moved it there first) and skips NewAck.
        let ns3_disorder = (p.recovery.disorder_ack != DisorderAck::Rfc && duplicate && !copy_ack && ns3_counts)
            .then_some(p.recovery.disorder_ack);
        AckKind { duplicate: duplicate && !copy_ack, ns3_counts, ns3_disorder, dupacks_before: self.dupacks }
    }

    /// A duplicate ACK toward fast retransmit, counted by `tcp.dupack_rule`.
    fn count_dupack(&mut self, kind: AckKind, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        match p.recovery.dupack_rule {
            DupackRule::Rfc => self.on_dupack(now, p, out),
            DupackRule::Ns3 if self.recovery.is_some() => self.on_dupack(now, p, out),
            DupackRule::Ns3 if kind.ns3_counts => {
                // ProcessAck: a cumulative ACK that is a duplicate does not reset the count.
                self.dupacks = kind.dupacks_before;
                self.on_dupack(now, p, out);
            }
            DupackRule::Ns3 => {}
        }
    }

    /// Bursts whose bytes the cumulative `ack` and the SACK scoreboard now cover all of get
    /// `covered = now`: the first ACK telling the sender the receiver holds the burst, even
    /// while an earlier hole keeps the cumulative ACK below it.
    pub(super) fn note_covered_bursts(&mut self, ack: u64, now: Instant) {
        let Some(q) = self.queues.as_deref_mut() else { return };
        for b in q.pending_bursts.iter_mut().filter(|b| b.covered.is_none()) {
            let from = b.start.max(ack);
            if b.end <= ack || self.scoreboard.covers(from, b.end) {
                b.covered = Some(now);
            }
        }
    }

    /// `ns3_disorder`: the ACK also SACKs new data outside recovery and ns-3's rule is on
    /// (`disorder_ack`): what of RFC 6298 (5.3) and RFC 5681's growth to skip. `grow` and
    /// `send` are false when RACK starts fast recovery on this ACK (it does both its own
    /// way); `grow` also when a tail loss probe's ACK just cut the window (Linux's CWR).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_new_ack(&mut self, ack: u64, seg: &Packet, ack_rtt: Option<Duration>, ns3_disorder: Option<DisorderAck>,
        frto: Option<Frto>, grow: bool, send: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let acked = ack - self.snd_una;
        let in_loss = self.cong_state() == CongState::Loss;
        self.end_backoff(now);
        let rtt_sample = self.take_rtt_sample(ack, seg, ack_rtt, now, p);
        let syn_acked = self.snd_una == 0;
        if syn_acked {
            self.start_after_syn_timeout(rtt_sample.is_some(), p); // the listener's SYN-ACK timed out
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
        let undone = p.recovery.rto_undo && self.undo_spurious_rto(seg, in_loss, p);
        if let Some(f) = frto.filter(|_| in_loss && !undone) {
            self.frto_on_ack(true, f.original_acked, f.data_sacked, false, p);
        }
        if p.recovery.rack_dsack_reo_wnd && in_loss && !undone && self.cong_state() != CongState::Loss {
            self.queues_mut().rack.recovery_without_undo(); // tcp_try_undo_recovery from CA_Loss
        }
        if let Some(rtt) = rtt_sample.filter(|_| p.cc.cubic_hystart) {
            self.linux_hystart(ack, rtt, now, p);
        }
        match self.recovery {
            _ if p.recovery.fulltcp => self.fulltcp_new_ack(ack, acked_data, rtt_sample, now, p),
            // ns-2 leaves Reno recovery on any new ACK, NewReno's at `recover`.
            Some(_) if p.recovery.ns2 && (ack >= self.recover_mark || p.recovery.algorithm == Recovery::Reno) => {
                self.ns2_exit_recovery(ack, acked_data, now, p)
            }
            Some(_) if ack >= self.recover_mark => {
                self.on_full_ack(p);
                if p.recovery.recovery_undo {
                    self.undo_at_recovery_end(seg, p);
                }
                if p.recovery.exit == RecoveryExit::Ns3 && acked_data > 0 && grow {
                    self.grow_window(ack, acked_data, rtt_sample, now, p);
                }
            }
            Some(r) => self.on_partial_ack(r, acked, now, p, out),
            None => {
                self.dupacks = 0;
                if acked_data > 0 && ns3_disorder != Some(DisorderAck::Ns3) && grow {
                    self.grow_window(ack, acked_data, rtt_sample, now, p);
                }
            }
        }
        if p.recovery.partial_ack == PartialAck::Ns3 && matches!(self.recovery, Some(r) if ack >= r.high_rxt) {
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
            && !matches!(self.recovery, Some(r) if p.recovery.first_partial_rto && !r.first_partial && ack < self.recover_mark)
        {
            self.arm_rto(now, p);
        }
        if p.recovery.fulltcp {
            self.fulltcp_end_backoff();
        }
        // Linux sets the ACK's timer first (tcp_set_xmit_timer in tcp_ack) and a send that
        // follows reschedules the probe (tcp_write_xmit); without the head's cap the two
        // agree, and the ACK's comes last as it always has.
        let head_cap = p.recovery.tail_loss_probe && p.recovery.tlp_rto_from_head;
        if head_cap {
            self.tlp_schedule(false, now, p);
        }
        if send {
            self.try_send(now, p, out);
        }
        if p.recovery.tail_loss_probe && !head_cap {
            self.tlp_schedule(false, now, p);
        }
    }

    /// Linux CUBIC's HyStart on an ACK of new data with an RTT sample (`cc/hystart_linux.rs`):
    /// its exit from slow start sets ssthresh = cwnd before the window grows.
    fn linux_hystart(&mut self, ack: u64, rtt: Duration, now: Instant, p: &TcpParams) {
        // hystart_ack_delay: min(1 ms, 4 GSO buffers of 64 KiB at the pacing rate), the rate
        // being Linux's slow-start 200% of cwnd per SRTT.
        let ack_delay = match self.rtt.srtt() {
            Some(srtt) if self.cwnd > 0 => {
                Duration((4 * 65_536 * srtt.as_nanos() as u128 / (2 * self.cwnd as u128)) as u64).min(Duration::from_millis(1))
            }
            _ => Duration::ZERO,
        };
        let sample = cc::hystart_linux::AckSample {
            now, snd_una: ack, snd_nxt: self.snd_max, rtt, cwnd_segments: self.cwnd / p.mss,
            slow_start: self.cwnd < self.ssthresh, paced: p.send.pacing, ack_delay,
        };
        if self.cc.pkts_acked(sample) {
            self.ssthresh = self.cwnd;
        }
    }

    /// Window growth on an ACK of `acked_data` new bytes outside recovery: HyStart++ in
    /// the initial slow start, else the congestion controller (`cc/`).
    #[inline]
    pub(super) fn grow_window(&mut self, ack: u64, acked_data: u64, rtt_sample: Option<Duration>, now: Instant, p: &TcpParams) {
        if p.bbr() {
            return; // BBR sets cwnd at the end of the ACK (`bbr_on_ack`)
        }
        if let Some(h) = self.hystart.as_mut().filter(|_| self.cwnd < self.ssthresh) {
            let growth = h.on_ack(ack, self.snd_max, rtt_sample, acked_data, p.mss);
            self.cwnd += growth.bytes;
            self.cc.end_epoch();
            if growth.css_done {
                self.ssthresh = self.cwnd;
                self.hystart = None;
            }
        } else {
            let srtt = self.rtt.srtt().unwrap_or(Duration::ZERO);
            self.cwnd = self.cc.grow(p.cc.cwnd_growth, p.cc.abc_limit, self.cwnd, self.ssthresh, acked_data, p.mss,
                &mut self.ca_acked, now, srtt);
        }
    }

    /// With `rtt_samples = "every_ack"`, the sample of an ACK with cumulative `ack` that
    /// SACKed new data if `new_sack` (`rtt_samples.rs`); `None` otherwise.
    pub(super) fn ack_rtt(&mut self, ack: u64, new_sack: bool, now: Instant, p: &TcpParams) -> Option<Duration> {
        if !p.timers.rtt_every_ack {
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
    pub(super) fn take_rtt_sample(&mut self, ack: u64, seg: &Packet, ack_rtt: Option<Duration>, now: Instant, p: &TcpParams)
        -> Option<Duration> {
        let echo = || Duration::from_micros(ts_now(now).wrapping_sub(seg.ts_ecr) as u64);
        let sample = if p.timers.rtt_every_ack {
            match ack_rtt {
                Some(sample) => sample,
                None if p.timers.timestamps && seg.ts_ecr != 0 && ack > self.snd_una => echo(),
                None => return None,
            }
        } else if p.timers.timestamps && seg.ts_ecr != 0 {
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
        if p.timers.ns2_rto {
            let backoffs = self.rtt.backoff();
            let ns2 = &mut self.queues.get_or_insert_default().ns2_rtt;
            let rto = ns2.sample(sample, now.0.saturating_sub(sample.0), backoffs, p.timers.granularity, p.timers.min_rto);
            let srtt = ns2.srtt(p.timers.granularity).unwrap_or(sample);
            self.rtt.set_from(srtt, rto);
            return Some(sample);
        }
        let linux = if p.timers.linux_rto {
            Some(LinuxSample { var: &mut self.queues.get_or_insert_default().linux_rtt, acked: ack, sent_max: self.snd_max })
        } else {
            None
        };
        self.rtt.sample(sample, p.timers.min_rto, p.timers.granularity, linux);
        Some(sample)
    }

    /// Diversity: counts off one expected duplicate ACK for the copied segment ending at
    /// `ack`; false when no copy owes one.
    pub(super) fn take_copy_ack(&mut self, ack: u64) -> bool {
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
    pub(super) fn settle_copies(&mut self, ack: u64, p: &TcpParams) {
        let Some(q) = self.queues.as_deref_mut() else { return };
        let mut lost = false;
        while let Some(&(_, owed)) = q.copy_acks.front().filter(|&&(end, _)| end < ack) {
            lost |= owed > 0;
            q.copy_acks.pop_front();
        }
        if lost && self.recovery.is_none() {
            self.ssthresh = cc::reno_halving(self.decrease_base(p), p.mss); // Reno's cut on purpose
            self.cwnd = self.cwnd.min(self.ssthresh);
        }
    }

    /// The window a loss or timeout's decrease starts from (`tcp.ssthresh_from`): the RFCs'
    /// FlightSize, Linux's cwnd (which stays large while a scheduler holds the flow back),
    /// or ns-3's BytesInFlight.
    pub(super) fn decrease_base(&self, p: &TcpParams) -> u64 {
        match p.cc.ssthresh_from {
            SsthreshFrom::FlightSize => self.flight_size(),
            SsthreshFrom::Cwnd => self.cwnd,
            SsthreshFrom::BytesInFlight if p.sack() => self.pipe(p),
            // ns-3's emulated SACK: each duplicate ACK marks one more segment as gone.
            SsthreshFrom::BytesInFlight => self.flight_size().saturating_sub(self.dupacks as u64 * p.mss),
            // ns-2's slowdown (tcp.cc:1268, 1295): half of min(cwnd_, window_) in whole
            // packets, so the base is twice that.
            SsthreshFrom::Ns2 => 2 * p.mss * (self.ns2_uninflated_cwnd().min(p.rwnd) / (2 * p.mss)),
        }
    }
}
