//! The receive half: in-order and out-of-order data, delayed and quick ACKs (RFC 5681
//! §4.2, Linux's quick-ACK mode), SACK blocks (RFC 2018), D-SACK blocks (RFC 2883, with
//! `dsack`) and TS.Recent (RFC 7323 §4.3).

use super::*;

impl Endpoint {
    pub(super) fn on_data(&mut self, seg: &Packet, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let start = unwrap(self.rcv_nxt, self.irs.wrapping_add(self.rcv_nxt as u32), seg.seq);
        let end = start + seg.seq_len() as u64;
        if seg.flags.fin() {
            self.fin_offset = Opt64::some(end - 1);
        }
        if end <= self.rcv_nxt {
            if let Some(delay) = p.acks.delayed_ack.filter(|_| {
                p.acks.hold_last_duplicate && end == self.rcv_nxt && self.delack_at.get().is_none() && self.ooo.is_none()
            }) {
                // ns-2's DelAckSink (tcp-sink.cc:429) delays any packet whose seqno is the
                // highest in order, so a copy of the last in-order segment is held like new
                // data: the next segment or the timer acknowledges it.
                self.unacked_segs += 1;
                self.delack_at = Opt64::some(now + delay);
                return;
            }
            // A duplicate: tell the sender where we are (Linux also enters quick-ACK mode),
            // and with D-SACK what came twice (`tcp_send_dupack`).
            if p.recovery.dsack {
                self.queues_mut().dsack = Some((start, end));
            }
            self.quick_acks = self.quick_acks.max(p.acks.quick_acks);
            self.send_ack(now, p, out);
            return;
        }
        if start > self.rcv_nxt {
            // Out of order: remember it and send a duplicate ACK at once (RFC 5681 §4.2). With
            // D-SACK, the first part already held is reported (`tcp_data_queue_ofo`).
            if let Some(held) = self.ooo.as_ref().and_then(|o| o.ranges.first_overlap(start, end)).filter(|_| p.recovery.dsack) {
                self.queues_mut().dsack = Some(held);
            }
            let o = self.ooo.get_or_insert_default();
            o.insert(start, end);
            if p.ns2_sack1() {
                // ns-2's Sack1 sink remembers only the blocks it last reported, maxSackBlocks_
                // 3 of them (tcp-sink.cc:571 SackStack, :738 push).
                o.recent.truncate(MAX_SACK_BLOCKS);
            }
            self.send_ack(now, p, out);
            return;
        }
        if start < self.rcv_nxt && p.recovery.dsack {
            self.queues_mut().dsack = Some((start, self.rcv_nxt)); // partly old (`tcp_data_queue`)
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
        if p.acks.quick_acks > 0 {
            // Linux tcp_event_data_recv: the first data, or data after a silence longer than
            // the RTO ("the sender failed to restart window"), starts quick-ACK mode.
            let rto = self.rtt.rto();
            let last = self.queues_mut().last_data_rcv.replace(now);
            if last.is_none_or(|t| now.saturating_since(t) > rto) {
                self.quick_acks = self.quick_acks.max(p.acks.quick_acks);
            }
        }
        let ack_now = if p.acks.full_tcp {
            // ns-2 FullTcp's need_send (tcp-full.cc:1439-1447, segsperack_ 1): a segment's worth
            // of bytes since the last ACK, whatever the segments' sizes; hole fills and a FIN
            // set TF_ACKNOW (tcp-full.cc:2423, 2449).
            filled_hole || fin_now || self.rcv_nxt - self.last_ack_sent >= p.mss
        } else {
            filled_hole || fin_now || self.unacked_segs >= 2 || seg.payload_len as u64 != p.mss
                || self.quick_acks > 0
        };
        match p.acks.delayed_ack {
            Some(delay) if !ack_now && p.acks.full_tcp => {
                // FullTcp's delayed-ACK timer fires at multiples of interval_ from time 0 and
                // re-arms itself every interval_ (tcp-full.cc:1566-1570, 2659-2665): held data
                // is acknowledged at the first tick after now, not `delay` after it.
                let tick = delay.0.max(1);
                self.delack_at.get_or_insert(Instant((now.0 / tick + 1) * tick));
            }
            Some(delay) if !ack_now => {
                self.delack_at.get_or_insert(p.timers.fire_at(now, now + delay));
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

    /// RFC 7323 §4.3 (2): TS.Recent takes the TSval of a segment at or before Last.ACK.sent
    /// only, so a delayed ACK echoes the earliest segment it covers and an out-of-order one
    /// the last segment that advanced `rcv_nxt`.
    pub(super) fn update_ts_recent(&mut self, seg: &Packet, p: &TcpParams) {
        let seq = unwrap(self.rcv_nxt, self.irs.wrapping_add(self.rcv_nxt as u32), seg.seq);
        let newer = seg.ts_val.wrapping_sub(self.ts_recent) as i32 >= 0;
        if p.timers.timestamps && seg.ts_val != 0 && seq <= self.last_ack_sent && newer {
            self.ts_recent = seg.ts_val;
        }
    }

    /// A pure ACK (carries SACK blocks when there is out-of-order data).
    pub(super) fn send_ack(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let pkt = self.packet(self.snd_nxt, 0, TcpFlags(TcpFlags::ACK), now, p);
        out.push(pkt);
    }
}
