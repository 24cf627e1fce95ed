//! The send half: what the window lets go (RFC 5681, RFC 3042), segment sizes (TCP-SF,
//! the remedies' dummies and copies), and the segments themselves on the wire.

use super::*;

impl Endpoint {
    pub(super) fn send_end(&self) -> u64 {
        1 + self.app_written + self.app_closed as u64
    }

    pub(super) fn can_send_data(&self) -> bool {
        matches!(self.state, State::Established | State::CloseWait | State::FinWait1 | State::Closing | State::LastAck)
    }

    /// Send what the window allows: retransmissions after an RTO first, then new data.
    #[inline]
    pub(super) fn try_send(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if !self.can_send_data() {
            return;
        }
        if self.bbr_holds_sends() {
            return;
        }
        if p.ns2_sack1() {
            self.sack1_send_much(now, p, out);
            return;
        }
        if self.recovery.is_some() && p.sack() {
            self.sack_send(now, p, out);
            return;
        }
        if p.recovery.frto && self.frto_sends_new(p) {
            self.frto_send_new(now, p, out);
            return;
        }
        // Linux skips the restart window for a `cong_control` controller (BBR).
        if p.send.slow_start_after_idle && !p.bbr() && self.snd_una == self.snd_max && self.snd_nxt < self.send_end()
            && self.stats.segments_sent > 1 && now.saturating_since(self.last_data_sent) >= self.rtt.rto()
        {
            self.cwnd = self.cwnd.min(p.initial_window); // RFC 5681 §4.1 restart window
        }
        let sent_before = self.snd_max;
        self.send_new(self.cwnd, self.ns2_burst_limit(p), now, p, out);
        if p.recovery.tail_loss_probe && self.snd_max > sent_before {
            self.tlp_schedule(true, now, p);
        }
    }

    /// Sends up to `max_segments` from `snd_nxt` while `snd_nxt - snd_una` stays within
    /// `window` (and rwnd). Going back after an RTO it skips what the receiver SACKed
    /// (RFC 6675 §5.1).
    pub(super) fn send_new(&mut self, window: u64, max_segments: usize, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if !self.can_send_data() || self.bbr_holds_sends() {
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
                let pad = p.remedies.fully_backlogged && self.active_opener && !self.app_closed && self.state == State::Established
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
            if p.recovery.fulltcp && self.fulltcp_nagle_holds(len, p) {
                break;
            }
            // After an RTO `send_new` goes back to `snd_una`: those sends are retransmissions.
            let copy = self.snd_nxt >= self.snd_max || p.remedies.diversity_copy_retransmissions;
            self.send_segment(self.snd_nxt, len, fin, now, p, out);
            if copy && p.remedies.diversity_copies > 1 && len < p.mss && !fin && self.snd_nxt + len == self.send_end() {
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
    pub(super) fn send_copies(&mut self, off: u64, len: u64, window: u64, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let mut in_flight = off + len - self.snd_una;
        let mut copies = 0;
        while copies + 1 < p.remedies.diversity_copies && in_flight + len <= window {
            in_flight += len;
            copies += 1;
            self.stats.segments_sent += 1;
            self.emit(off, len, false, now, p, out);
        }
        if copies > 0 {
            self.queues_mut().copy_acks.push_back((off + len, copies));
        }
    }

    /// The largest segment to send now: one SMSS, or with TCP Smart Framing cwnd/4 while
    /// cwnd < 4 SMSS, so the window always holds DupThresh + 1 segments and growing cwnd
    /// grows the segments back to full size.
    pub(super) fn segment_bytes(&self, p: &TcpParams) -> u64 {
        if p.remedies.smart_framing && self.cwnd < 4 * p.mss {
            (self.cwnd / 4).max(1)
        } else {
            p.mss
        }
    }

    /// The segment starting at `off`: up to `segment_bytes` of data, ending at a hole edge.
    pub(super) fn segment_at(&self, off: u64, p: &TcpParams) -> (u64, u64, bool) {
        let data_end = 1 + self.app_written;
        let mut len = data_end.saturating_sub(off).min(self.segment_bytes(p));
        if let Some((s, _)) = self.scoreboard.ranges().iter().find(|&&(s, _)| s > off) {
            len = len.min(s - off);
        }
        (off, len, self.app_closed && off + len == data_end)
    }

    /// Emits one segment of `len` bytes at `off` (offset 0 is the SYN).
    pub(super) fn send_segment(&mut self, off: u64, len: u64, fin: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let end = off + len.max((off == 0) as u64) + fin as u64;
        let retransmission = off < self.snd_max;
        if p.bbr() && len > 0 && off > 0 {
            self.bbr_on_send(off, end, retransmission, now, p); // before RACK counts it in flight
        }
        if p.recovery.rack && off > 0 {
            self.queues_mut().rack.on_send(off, end, now, retransmission);
        }
        if p.timers.rtt_every_ack {
            self.queues_mut().send_times.on_send(off, end, now, retransmission);
        }
        if p.send.pacing && len > 0 {
            let window = self.cwnd.max(self.flight_size());
            let (slow_start, srtt) = (self.cwnd < self.ssthresh / 2, self.rtt.srtt());
            // BBR sets the rate and the buffers' size (bbr_tso_segs); Linux's rule otherwise.
            let (rate, buffer_segments) = match self.bbr_state() {
                Some(bbr) => (PacingRate::BytesPerSecond(bbr.pacing_rate()), bbr.tso_segs_goal(p.mss)),
                None => (PacingRate::Window { window, slow_start, srtt }, pacing::BUFFER_SEGMENTS),
            };
            // Only a buffer's first segment sizes it; pipe() walks RACK's segments.
            let starts_buffer = self.queues.as_deref().is_none_or(|q| q.pacer.starts_buffer());
            let buffer = starts_buffer.then(|| (self.cwnd.saturating_sub(self.pipe(p)) / p.mss, self.cwnd / p.mss, buffer_segments));
            self.queues_mut().pacer.on_send(now, len, rate, buffer);
        }
        if off < self.snd_max {
            if off > 0 {
                self.stats.retransmits += 1;
                if p.recovery.rto_undo || p.recovery.recovery_undo || p.recovery.frto {
                    self.undo_note_retransmission(now);
                }
                // Outside a timeout episode: there the RTO handler arms the timer itself.
                if p.recovery.head_retransmit_rto && off == self.snd_una && self.backoff_since.get().is_none() {
                    self.arm_rto(now, p);
                }
            }
            self.timed = None; // Karn: never time a retransmitted segment
            if p.recovery.pipe == RecoveryPipe::Ns3 && self.recovery.is_some() {
                self.queues_mut().recovery_rexmits.insert(off, end);
            }
        } else {
            if self.timed.is_none() {
                self.timed = Some((NonZeroU64::new(end).expect("a segment ends past the SYN's offset 0"), now));
            }
            if p.timers.thin_linear_timeouts && off > 0 {
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
        if p.recovery.prr && self.recovery.is_some() {
            self.queues_mut().prr.out += len;
        }
        self.emit(off, len, fin, now, p, out);
    }

    /// Puts the segment `[off, off+len)` (offset 0 is the SYN) on the wire, no bookkeeping.
    pub(super) fn emit(&mut self, off: u64, len: u64, fin: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
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

    pub(super) fn packet(&mut self, off: u64, len: u16, flags: TcpFlags, now: Instant, p: &TcpParams) -> Packet {
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
        if p.timers.timestamps {
            pkt.ts_val = ts_now(now);
            pkt.ts_ecr = self.ts_recent;
        }
        let mut option_bytes = 0;
        // RFC 2883: a D-SACK block goes first, once (Linux clears it as the option is written).
        let dsack = if p.recovery.dsack && flags.ack() { self.queues.as_deref_mut().and_then(|q| q.dsack.take()) } else { None };
        if let Some((s, e)) = dsack {
            pkt.sack[0] = SackBlock { start: self.irs.wrapping_add(s as u32), end: self.irs.wrapping_add(e as u32) };
            pkt.sack_count = 1;
            option_bytes = 4 + 8;
        }
        let first_ooo = pkt.sack_count as usize;
        if let Some(o) = self.ooo.as_deref().filter(|o| p.sack() && flags.ack() && !o.ranges.is_empty()) {
            for &s in &o.recent {
                if pkt.sack_count as usize == MAX_SACK_BLOCKS {
                    break;
                }
                if let Some((rs, re)) = o.ranges.range_of(s) {
                    let block = SackBlock { start: self.irs.wrapping_add(rs as u32), end: self.irs.wrapping_add(re as u32) };
                    if !pkt.sack_blocks()[first_ooo..].contains(&block) {
                        pkt.sack[pkt.sack_count as usize] = block;
                        pkt.sack_count += 1;
                    }
                }
            }
            // Two NOPs, kind, length, the blocks; ns-2's Sack1 sink adds 8 bytes a block
            // (tcp-sink.cc:755).
            option_bytes = if p.ns2_sack1() { 0 } else { 4 } + 8 * pkt.sack_count as u32;
        }
        pkt.ip_len_bytes = (p.header_bytes + option_bytes + len as u32) as u16;
        pkt
    }
}
