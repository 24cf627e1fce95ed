//! Delivery-rate sampling as Linux's net/ipv4/tcp_rate.c (`tcp_rate_skb_sent`,
//! `tcp_rate_skb_delivered`, `tcp_rate_gen`, `tcp_rate_check_app_limited`), which BBR
//! (`cc/bbr.rs`) reads on every ACK.
//!
//! Each data segment sent carries a snapshot of the connection's delivery count, the time
//! of the last delivery and the send time of the segment whose delivery began the current
//! send phase. When segments are delivered (cumulatively acknowledged or SACKed), the most
//! recently sent of them gives the sample: the packets delivered since its snapshot, over
//! the longer of the send phase (its send time less the snapshot's first send) and the ACK
//! phase (now less the snapshot's delivery time), so neither ACK compression nor a burst of
//! sends inflates the rate. A sample shorter than the least RTT seen is refused.
//!
//! The connection is application-limited from when the sender ran out of data with the
//! window open until what was in flight then is delivered: samples from segments sent in
//! that bubble carry `is_app_limited`, and BBR keeps them only when they raise its estimate.
//!
//! Counts are in segments (Linux's `tp->delivered`); the state is one record per data
//! segment sent and not yet cumulatively acknowledged, so at most a window of them.

use crate::tcp::sack::RangeSet;
use smallpipe_core::{Duration, Instant};
use std::collections::VecDeque;

/// What the connection was when a segment left (Linux's `TCP_SKB_CB(skb)->tx`).
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    delivered: u64,
    delivered_at: Instant,
    first_tx: Instant,
    app_limited: bool,
}

/// A data segment not yet cumulatively acknowledged.
#[derive(Debug, Clone, Copy)]
struct Record {
    start: u64,
    end: u64,
    /// Its latest (re)transmission.
    sent: Instant,
    retransmitted: bool,
    /// SACKed: delivered already, and its snapshot used (Linux zeroes `delivered_mstamp`).
    sacked: bool,
    snap: Snapshot,
}

/// One ACK's rate sample (Linux's `struct rate_sample`). `delivered` and `interval` are
/// `None` when the ACK gives no valid sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateSample {
    /// `tp->delivered` at the sample's segment's send.
    pub prior_delivered: u64,
    /// Segments delivered over `interval`.
    pub delivered: Option<u64>,
    pub interval: Option<Duration>,
    pub is_app_limited: bool,
    /// Segments newly acknowledged or SACKed by this ACK.
    pub acked_sacked: u64,
    /// Segments newly marked lost on this ACK.
    pub losses: u64,
    /// RTT of the most recently sent segment this ACK delivered that was never resent
    /// (Linux's `ca_rtt_us`), else of its echoed timestamp.
    pub rtt: Option<Duration>,
    /// Segments in flight before the ACK (`tcp_packets_in_flight`).
    pub prior_in_flight: u64,
}

/// The connection's rate-sampling state (Linux's `tp->delivered`, `delivered_mstamp`,
/// `first_tx_mstamp`, `app_limited`) and the records of segments in flight.
#[derive(Debug, Clone, Default)]
pub(super) struct RateSampler {
    records: VecDeque<Record>,
    /// Segments delivered so far.
    delivered: u64,
    delivered_at: Option<Instant>,
    first_tx: Instant,
    /// 0, or the delivery count at which the application-limited bubble ends.
    app_limited: u64,
    /// Least RTT seen (`tcp_min_rtt`; Linux keeps it over 5 minutes, here over the run).
    min_rtt: Option<Duration>,
}

impl RateSampler {
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The delivery count the application-limited bubble ends at; 0: not limited.
    pub fn app_limited(&self) -> u64 {
        self.app_limited
    }

    pub fn set_app_limited(&mut self, until: u64) {
        self.app_limited = until;
    }

    /// When the last delivery was acknowledged (`tp->delivered_mstamp`).
    pub fn delivered_at(&self) -> Option<Instant> {
        self.delivered_at
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// `tcp_rate_check_app_limited` when the application writes: with less than a segment
    /// left to send, the window open (`in_flight` < `cwnd`, segments) and every segment
    /// marked lost resent (`lost_unsent` false), the connection is application-limited
    /// until what is in flight now is delivered.
    pub fn check_app_limited(&mut self, unsent_bytes: u64, mss: u64, in_flight: u64, cwnd: u64, lost_unsent: bool) {
        if unsent_bytes < mss && in_flight < cwnd && !lost_unsent {
            self.app_limited = (self.delivered + in_flight).max(1);
        }
    }

    /// `tcp_rate_skb_sent` for data `[start, end)` sent at `now`.
    pub fn on_send(&mut self, start: u64, end: u64, now: Instant, retransmission: bool) {
        if self.records.is_empty() {
            // Nothing sent and unacknowledged (Linux's `packets_out == 0`): any delivery
            // from now on measures what the network did since now.
            self.first_tx = now;
            self.delivered_at = Some(now);
        }
        let snap = Snapshot {
            delivered: self.delivered,
            delivered_at: self.delivered_at.unwrap_or(now),
            first_tx: self.first_tx,
            app_limited: self.app_limited != 0,
        };
        if !retransmission {
            self.records.push_back(Record { start, end, sent: now, retransmitted: false, sacked: false, snap });
            return;
        }
        for r in self.records.iter_mut().filter(|r| r.start < end && r.end > start && !r.sacked) {
            *r = Record { sent: now, retransmitted: true, snap, ..*r };
        }
    }

    /// `tcp_rate_skb_delivered` for each segment the cumulative `ack` and the scoreboard
    /// newly deliver, then `tcp_rate_gen`: the ACK's sample at `now`. `ts_rtt` is the RTT
    /// of the ACK's echoed timestamp, for when every segment it delivered was resent.
    pub fn on_ack(&mut self, ack: u64, scoreboard: &RangeSet, now: Instant, ts_rtt: Option<Duration>) -> RateSample {
        let mut rs = RateSample::default();
        // The delivered segment sent last: its snapshot and send time; and its RTT if never resent.
        let mut newest: Option<(Instant, u64, Snapshot)> = None;
        let mut newest_clean: Option<Instant> = None;
        let mut advanced = false;
        for r in self.records.iter_mut() {
            let cum = r.end <= ack;
            advanced |= cum;
            if r.sacked || !(cum || scoreboard.covers(r.start, r.end)) {
                continue;
            }
            r.sacked = !cum;
            rs.acked_sacked += 1;
            // tcp_skb_sent_after: later send time, or the same time and a higher sequence.
            if newest.is_none_or(|(t, end, _)| r.sent > t || (r.sent == t && r.end > end)) {
                newest = Some((r.sent, r.end, r.snap));
            }
            if !r.retransmitted {
                newest_clean = newest_clean.max(Some(r.sent));
            }
        }
        while self.records.front().is_some_and(|r| r.end <= ack) {
            self.records.pop_front();
        }
        self.delivered += rs.acked_sacked;
        rs.rtt = newest_clean.map(|t| now.saturating_since(t)).or(ts_rtt.filter(|_| advanced));
        if let Some(rtt) = rs.rtt {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        // tcp_rate_gen: the bubble is over once what was in flight at its start is delivered.
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let Some((sent, _, snap)) = newest else { return rs };
        let send_phase = sent.saturating_since(snap.first_tx);
        self.first_tx = sent;
        self.delivered_at = Some(now);
        rs.prior_delivered = snap.delivered;
        rs.is_app_limited = snap.app_limited;
        rs.delivered = Some(self.delivered - snap.delivered);
        let interval = send_phase.max(now.saturating_since(snap.delivered_at));
        // An interval below the least RTT would overestimate the rate (a resend's
        // delivery taken for the original's, say): no sample.
        rs.interval = (self.min_rtt.is_none_or(|m| interval >= m) && interval > Duration::ZERO).then_some(interval);
        rs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEG: u64 = 1000;

    fn ms(t: u64) -> Instant {
        Instant(t * 1_000_000)
    }

    /// Segment `i` (0-based) is bytes `[1 + i·SEG, 1 + (i+1)·SEG)`.
    fn seg(i: u64) -> (u64, u64) {
        (1 + i * SEG, 1 + (i + 1) * SEG)
    }

    #[test]
    fn a_paced_flow_measures_its_sending_rate() {
        // One segment every 10 ms, each acknowledged 100 ms after its send: 100 segments/s
        // through a path with a 100 ms RTT. Once the first window is delivered, each
        // sample covers the 10 segments that were in flight at its segment's send.
        let mut r = RateSampler::default();
        let none = RangeSet::default();
        for i in 0..60u64 {
            if i >= 10 {
                let acked = i - 10;
                let rs = r.on_ack(seg(acked).1, &none, ms(10 * i), None);
                assert_eq!(rs.acked_sacked, 1);
                assert_eq!(rs.rtt, Some(Duration::from_millis(100)));
                if acked >= 10 {
                    let (d, iv) = (rs.delivered.unwrap(), rs.interval.unwrap());
                    assert_eq!((d, iv), (10, Duration::from_millis(100)), "segment {acked}");
                    assert!(!rs.is_app_limited);
                }
            }
            let (s, e) = seg(i);
            r.on_send(s, e, ms(10 * i), false);
        }
        assert_eq!(r.delivered(), 50);
    }

    #[test]
    fn the_interval_is_the_longer_of_the_send_and_ack_phases() {
        // Four segments sent at once at t = 0 into an empty pipe; ACKs 100 ms and 130 ms
        // later: the ACK phase (from the delivery time in the snapshot, the first send)
        // decides, 2 segments in 130 ms.
        let mut r = RateSampler::default();
        let none = RangeSet::default();
        for i in 0..4 {
            let (s, e) = seg(i);
            r.on_send(s, e, ms(0), false);
        }
        let rs = r.on_ack(seg(0).1, &none, ms(100), None);
        assert_eq!((rs.delivered, rs.interval), (Some(1), Some(Duration::from_millis(100))));
        let rs = r.on_ack(seg(1).1, &none, ms(130), None);
        assert_eq!((rs.delivered, rs.interval), (Some(2), Some(Duration::from_millis(130))));
        // A SACK of segment 3 (segment 2 missing) delivers it once; the later cumulative ACK
        // counts segment 2 only.
        let mut sacked = RangeSet::default();
        sacked.insert(seg(3).0, seg(3).1);
        let rs = r.on_ack(seg(1).1, &sacked, ms(140), None);
        assert_eq!((rs.acked_sacked, r.delivered()), (1, 3));
        let rs = r.on_ack(seg(3).1, &RangeSet::default(), ms(150), None);
        assert_eq!((rs.acked_sacked, r.delivered()), (1, 4));
    }

    #[test]
    fn a_resent_segment_gives_no_rtt_but_the_echoed_timestamp_does() {
        let mut r = RateSampler::default();
        let none = RangeSet::default();
        r.on_send(seg(0).0, seg(0).1, ms(0), false);
        r.on_send(seg(1).0, seg(1).1, ms(0), false);
        r.on_ack(seg(0).1, &none, ms(100), None);
        r.on_send(seg(1).0, seg(1).1, ms(150), true);
        let rs = r.on_ack(seg(1).1, &none, ms(260), None);
        assert_eq!(rs.acked_sacked, 1);
        assert_eq!(rs.rtt, None, "Karn: ambiguous");
        // The resend's snapshot: 1 delivered at 100 ms, send phase 150 ms, ACK phase 160 ms.
        assert_eq!((rs.delivered, rs.interval), (Some(1), Some(Duration::from_millis(160))));
        r.on_send(seg(2).0, seg(2).1, ms(300), false);
        r.on_send(seg(2).0, seg(2).1, ms(350), true);
        let rs = r.on_ack(seg(2).1, &none, ms(400), Some(Duration::from_millis(100)));
        assert_eq!(rs.rtt, Some(Duration::from_millis(100)), "the timestamp's RTT");
    }

    #[test]
    fn segments_sent_in_an_application_limited_bubble_are_marked_until_it_is_delivered() {
        let mut r = RateSampler::default();
        let none = RangeSet::default();
        r.on_send(seg(0).0, seg(0).1, ms(0), false);
        // The application has nothing more to send, 1 segment in flight, cwnd 10: limited
        // until delivery count 1 is passed.
        r.check_app_limited(0, SEG, 1, 10, false);
        assert_eq!(r.app_limited(), 1);
        r.on_send(seg(1).0, seg(1).1, ms(50), false);
        let rs = r.on_ack(seg(0).1, &none, ms(100), None);
        assert!(!rs.is_app_limited, "sent before the bubble");
        assert_eq!(r.app_limited(), 1, "delivered = 1: not past it yet");
        let rs = r.on_ack(seg(1).1, &none, ms(150), None);
        assert!(rs.is_app_limited, "sent in the bubble");
        assert_eq!(r.app_limited(), 0, "the bubble is over");
        // A window-limited or data-rich sender is never marked.
        r.check_app_limited(5 * SEG, SEG, 1, 10, false);
        r.check_app_limited(0, SEG, 10, 10, false);
        r.check_app_limited(0, SEG, 1, 10, true);
        assert_eq!(r.app_limited(), 0);
    }
}
