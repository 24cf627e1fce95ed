//! The RCP end host (Dukkipati et al., "Processor Sharing Flows in the Internet"): a sender
//! that asks for a rate in its SYN, learns the path's rate from the echo on the SYN-ACK, and
//! then paces its data at the rate the receiver echoes on every ACK. There is no window.
//!
//! Every SYN and data packet carries the largest rate (`u32::MAX` kbit/s) in its
//! `rcp_rate_kbps` field; each RCP router on the way lowers it to its own R; the receiver
//! (the simulator's TCP listener, whose host copies the field of the last data packet onto
//! the ACKs it sends) echoes it back. A path without an RCP router echoes nothing, and the
//! sender then paces at the rate it had (initially none: it sends only after an echo).
//!
//! Reliability (the RCP papers leave it to the transport; its routers keep queues near
//! empty, so losses are rare): cumulative ACKs from the TCP receiver, a retransmission
//! timer (RFC 6298, with Karn's rule) after which the sender goes back to the first
//! unacknowledged byte and paces from there, and one retransmission of that byte on the
//! third duplicate ACK per window of data. SACK blocks are ignored.
//!
//! Sequence numbers count offsets from the ISS as the TCP endpoint does: 0 is the SYN,
//! data starts at 1, the FIN follows the data.

use crate::config::Transport;
use crate::tcp::{earliest, window_field, EndpointStats, RttEstimator, TcpParams};
use smallpipe_core::{Duration, FlowKey, Instant, Packet, TcpFlags};
use std::num::NonZeroU32;

/// The rate a sender asks for: as much as the path allows.
const REQUEST_KBPS: NonZeroU32 = NonZeroU32::MAX;
const DUPTHRESH: u32 = 3;

/// Where the sender is in its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RcpState {
    SynSent,
    /// Handshake done: pacing data at the echoed rate.
    Sending,
    /// Everything, the FIN included, was acknowledged; or the SYN retries ran out.
    Closed,
}

#[derive(Debug, Clone)]
pub struct RcpSender {
    key: FlowKey,
    pub state: RcpState,
    iss: u32,
    irs: u32,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    app_written: u64,
    app_closed: bool,
    /// The rate the last echo gave, bit/s.
    rate_bps: Option<u64>,
    /// When the pacer lets the next packet go.
    next_send_at: Option<Instant>,
    rtt: RttEstimator,
    /// Karn: the segment being timed (its end offset and send time).
    timed: Option<(u64, Instant)>,
    rto_at: Option<Instant>,
    dupacks: u32,
    /// No new fast retransmit for duplicate ACKs below this (one per window).
    recover: u64,
    syn_tries: u32,
    pub stats: EndpointStats,
    pub failed: bool,
    pub timer_gen: u32,
    pub timer_armed: Option<Instant>,
}

impl RcpSender {
    pub fn new(key: FlowKey, iss: u32, p: &TcpParams) -> Self {
        RcpSender {
            key,
            state: RcpState::SynSent,
            iss,
            irs: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            app_written: 0,
            app_closed: false,
            rate_bps: None,
            next_send_at: None,
            rtt: RttEstimator::new(p.timers.initial_rto, p.timers.max_rto),
            timed: None,
            rto_at: None,
            dupacks: 0,
            recover: 0,
            syn_tries: 0,
            stats: EndpointStats::default(),
            failed: false,
            timer_gen: 0,
            timer_armed: None,
        }
    }

    /// The rate the sender paces at, bit/s (`None` before the first echo).
    pub fn rate_bps(&self) -> Option<u64> {
        self.rate_bps
    }

    /// Sends the SYN with the rate request.
    pub fn connect(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.emit(0, 0, false, now, p, out);
    }

    pub fn app_write(&mut self, bytes: u64, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.app_written += bytes;
        self.pace(now, p, out);
    }

    pub fn app_close(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.app_closed = true;
        self.pace(now, p, out);
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        earliest(self.rto_at, self.next_send_at)
    }

    pub fn on_timer(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if self.rto_at.is_some_and(|t| t <= now) {
            self.rto_at = None;
            self.on_rto(now, p, out);
        }
        self.pace(now, p, out);
    }

    pub fn on_segment(&mut self, seg: &Packet, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        if seg.flags.has(TcpFlags::RST) {
            self.close(true);
            return;
        }
        // The receiver closes once it has everything: its FIN is acknowledged in any state.
        if seg.flags.fin() {
            self.ack_peer(seg.seq.wrapping_add(seg.seq_len()), p, out);
        }
        if let Some(kbps) = seg.rcp_rate_kbps {
            self.rate_bps = Some(kbps.get() as u64 * 1000);
        }
        match self.state {
            RcpState::SynSent => {
                if seg.flags.syn() && seg.flags.ack() && seg.ack == self.iss.wrapping_add(1) {
                    self.irs = seg.seq;
                    self.state = RcpState::Sending;
                    self.on_ack(1, now, p);
                    self.ack_peer(seg.seq.wrapping_add(1), p, out);
                    self.pace(now, p, out);
                }
            }
            RcpState::Sending => {
                if !seg.flags.ack() || seg.flags.syn() {
                    return;
                }
                let ack = self.snd_una as i64 + seg.ack.wrapping_sub(self.iss.wrapping_add(self.snd_una as u32)) as i32 as i64;
                let ack = ack.max(0) as u64;
                if ack > self.snd_una && ack <= self.snd_max {
                    self.on_ack(ack, now, p);
                } else if ack == self.snd_una && self.snd_una < self.snd_max && seg.payload_len == 0 && !seg.flags.fin() {
                    self.dupacks += 1;
                    if self.dupacks == DUPTHRESH && self.snd_una >= self.recover {
                        self.recover = self.snd_max;
                        self.stats.fast_retransmits += 1;
                        let (len, fin) = self.segment_at(self.snd_una, p);
                        self.emit(self.snd_una, len, fin, now, p, out);
                    }
                }
                if self.snd_una == self.snd_max && self.app_closed && self.snd_max == self.send_end() {
                    self.close(false);
                    return;
                }
                self.pace(now, p, out);
            }
            RcpState::Closed => {}
        }
    }

    /// New data acknowledged up to `ack`.
    fn on_ack(&mut self, ack: u64, now: Instant, p: &TcpParams) {
        if let Some((end, sent)) = self.timed {
            if ack >= end {
                self.rtt.sample(now - sent, p.timers.min_rto, p.timers.granularity, None);
                self.timed = None;
            }
        }
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dupacks = 0;
        self.rto_at = (self.snd_una < self.snd_max).then(|| now + self.rtt.rto());
    }

    fn on_rto(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.rtt.back_off();
        self.timed = None;
        if self.state == RcpState::SynSent {
            if self.syn_tries >= p.timers.syn_retries {
                self.close(true);
                return;
            }
            self.syn_tries += 1;
            self.stats.syn_timeouts += 1;
            self.emit(0, 0, false, now, p, out);
            return;
        }
        if self.snd_una >= self.snd_max {
            return;
        }
        self.stats.timeouts += 1;
        // Go back to the first unacknowledged byte; the pacer resends from there.
        self.snd_nxt = self.snd_una;
        self.recover = self.snd_max;
        self.next_send_at = Some(now);
        self.rto_at = Some(now + self.rtt.rto());
    }

    fn close(&mut self, failed: bool) {
        self.state = RcpState::Closed;
        self.failed = failed;
        self.rto_at = None;
        self.next_send_at = None;
    }

    /// 1 + data + FIN: the offset after everything the application wants sent.
    fn send_end(&self) -> u64 {
        1 + self.app_written + self.app_closed as u64
    }

    /// The segment starting at `off`: its payload and whether the FIN rides on it.
    fn segment_at(&self, off: u64, p: &TcpParams) -> (u64, bool) {
        let data_end = 1 + self.app_written;
        let len = data_end.saturating_sub(off).min(p.mss);
        (len, self.app_closed && off + len == data_end)
    }

    /// Sends the next packet if the pacer allows, and schedules the one after.
    fn pace(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let Some(rate_bps) = self.rate_bps.filter(|_| self.state == RcpState::Sending) else { return };
        if self.next_send_at.is_some_and(|t| t > now) {
            return;
        }
        if self.snd_nxt >= self.send_end() {
            self.next_send_at = None;
            return;
        }
        let off = self.snd_nxt;
        let (len, fin) = self.segment_at(off, p);
        let wire_bits = (len + p.header_bytes as u64) * 8;
        self.emit(off, len, fin, now, p, out);
        self.snd_nxt = off + len + fin as u64;
        self.next_send_at = Some(now + Duration((wire_bits as u128 * 1_000_000_000 / rate_bps as u128) as u64));
    }

    /// One SYN (`off` 0) or data segment, carrying the rate request.
    fn emit(&mut self, off: u64, len: u64, fin: bool, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        let end = off + len.max((off == 0) as u64) + fin as u64;
        if off < self.snd_max {
            if off > 0 {
                self.stats.retransmits += 1;
            }
            self.timed = None;
        } else if self.timed.is_none() {
            self.timed = Some((end, now));
        }
        self.snd_max = self.snd_max.max(end);
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
        self.stats.segments_sent += 1;
        let mut flags = if off == 0 { TcpFlags::SYN } else { TcpFlags::ACK | TcpFlags::PSH };
        if fin {
            flags |= TcpFlags::FIN;
        }
        out.push(Packet {
            flow: self.key,
            ip_len_bytes: (p.header_bytes as u64 + len) as u16,
            seq: self.iss.wrapping_add(off as u32),
            ack: if off == 0 { 0 } else { self.irs.wrapping_add(1) },
            flags: TcpFlags(flags),
            payload_len: len as u16,
            window: window_field(p.rwnd),
            rcp_rate_kbps: Some(REQUEST_KBPS),
            ..Packet::default()
        });
    }

    /// A pure ACK of the peer's sequence space up to `ack` (its SYN, its FIN).
    fn ack_peer(&self, ack: u32, p: &TcpParams, out: &mut Vec<Packet>) {
        out.push(Packet {
            flow: self.key,
            ip_len_bytes: p.header_bytes as u16,
            seq: self.iss.wrapping_add(self.snd_nxt.max(1) as u32),
            ack,
            flags: TcpFlags(TcpFlags::ACK),
            window: window_field(p.rwnd),
            ..Packet::default()
        });
    }
}

impl TcpParams {
    /// RCP receivers acknowledge every packet (the rate echo must not wait for a delayed
    /// ACK); TCP keeps its knobs.
    pub fn for_transport(mut self, transport: Transport) -> Self {
        if transport == Transport::Rcp {
            self.acks.delayed_ack = None;
        }
        self
    }
}

/// The RCP side of one connection in the simulator: its sender, and the rate the
/// receiver's host copies from the last data packet onto its ACKs.
#[derive(Debug, Clone)]
pub struct RcpConn {
    pub sender: RcpSender,
    pub echo_kbps: Option<NonZeroU32>,
}

#[cfg(test)]
mod tests {
    use crate::{simulate, Scenario};

    fn run(flows: &str, duration_s: f64, initial_rate_fraction: f64) -> crate::Results {
        let json = format!(
            r#"{{"duration_s":{duration_s},"transport":"rcp","link":{{"rate_bps":10000000,
                "queue":{{"kind":"rcp","avg_rtt_ms":100,"initial_rate_fraction":{initial_rate_fraction}}}}},
                "tcp":{{"timestamps":false,"overhead_max_ms":0}},"flows":[{flows}]}}"#
        );
        simulate(&Scenario::from_json(&json).unwrap()).unwrap()
    }

    /// Alone on an idle link whose router starts at R = C, RCP learns C from the SYN-ACK and paces the whole transfer
    /// at C: the last of N packets arrives 1.5 RTT + N·(1500·8 / C) after the SYN (plus the
    /// access links' and the SYN's serialization, under a millisecond), where TCP's slow start
    /// would need a round trip per doubling.
    #[test]
    fn a_lone_transfer_takes_one_and_a_half_rtt_plus_its_size_over_c() {
        let r = run(r#"{"app":"transfer","size_bytes":146000,"rtt_ms":100}"#, 5.0, 1.0);
        let f = &r.flows[0];
        assert_eq!(f.bytes_delivered, 146_000);
        let fct_ms = (f.end_ns.unwrap() - f.start_ns) as f64 / 1e6;
        let expected_ms = 150.0 + 100.0 * 1.2;
        assert!((fct_ms - expected_ms).abs() < 1.0, "FCT {fct_ms} ms, expected {expected_ms} ms");
        assert_eq!((f.retransmits, f.timeouts), (0, 0));
    }

    /// Four long-lived RCP flows started over 5 s all pace at the one rate their router advertises, so over
    /// the last 20 s of 30 each delivers the same bytes, within 10% of the four's mean (with
    /// α = β = 1 and d = the RTT, R swings around C/4 with a period of several RTTs and each
    /// sender samples it at its own phase; the utilization this gives is in docs/rcp.md).
    #[test]
    fn long_flows_share_the_link_equally() {
        // Staggered starts: a sender that kept the rate its SYN-ACK gave would not get C/4.
        let r = run(r#"{"app":"bulk","count":4,"rtt_ms":100,"start_s":[0,5]}"#, 30.0, 0.05);
        let late: Vec<f64> = r.flows.iter().map(|f| f.slice_bytes.iter().skip(10).sum::<u64>() as f64).collect();
        let mean = late.iter().sum::<f64>() / 4.0;
        for (f, bytes) in r.flows.iter().zip(&late) {
            assert!((bytes - mean).abs() < 0.1 * mean, "flow {}: {bytes} bytes, the mean is {mean}", f.flow_id);
        }
    }

    #[test]
    fn rcp_needs_an_rcp_router_and_sized_applications() {
        let json = r#"{"transport":"rcp","flows":[{"app":"bulk"}]}"#;
        assert_eq!(Scenario::from_json(json).unwrap_err().field, "transport");
        let json = r#"{"transport":"rcp","link":{"queue":{"kind":"rcp"}},"flows":[{"app":"interactive"}]}"#;
        assert_eq!(Scenario::from_json(json).unwrap_err().field, "flows[0].app");
    }
}
