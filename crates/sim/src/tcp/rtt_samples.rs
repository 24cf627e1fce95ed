//! Linux's RTT samples (`rtt_samples = "every_ack"`; net/ipv4/tcp_input.c,
//! `tcp_clean_rtx_queue`, `tcp_sacktag_one` and `tcp_ack_update_rtt`). Every ACK that
//! cumulatively acknowledges a segment never retransmitted (nor SACKed before) gives a
//! sample, from the oldest such segment's send time; Karn's rule drops it when the ACK also
//! covers a retransmitted segment. An ACK whose cumulative part gives none may give one from
//! the oldest newly SACKed segment never retransmitted. The default, `"timed"`, times one
//! segment per RTT as RFC 6298 and ns-2/ns-3 do, so a segment held in a queue for seconds
//! reaches Linux's estimate at once and the timed one's only if it was the timed segment.

use super::sack::RangeSet;
use smallpipe_core::{Duration, Instant};
use std::collections::VecDeque;

/// One segment sent and not yet cumulatively acknowledged.
#[derive(Debug, Clone, Copy)]
struct Sent {
    start: u64,
    end: u64,
    /// Its first transmission.
    at: Instant,
    /// Ever retransmitted (Linux `TCPCB_RETRANS`): its delivery times no send.
    retransmitted: bool,
    /// SACKed already (Linux `TCPCB_SACKED_ACKED`): it gave its sample then.
    sacked: bool,
}

/// First-transmission times of the segments in flight, in sequence order (the SYN is `[0, 1)`).
#[derive(Debug, Clone, Default)]
pub(super) struct SendTimes {
    segs: VecDeque<Sent>,
}

impl SendTimes {
    /// Records the first transmission of `[start, end)` at `now`, or marks the segments a
    /// retransmission of `[start, end)` overlaps.
    pub fn on_send(&mut self, start: u64, end: u64, now: Instant, retransmission: bool) {
        if !retransmission {
            self.segs.push_back(Sent { start, end, at: now, retransmitted: false, sacked: false });
            return;
        }
        for s in self.segs.iter_mut().take_while(|s| s.start < end).filter(|s| s.end > start) {
            s.retransmitted = true;
        }
    }

    /// The sample of an ACK at `now` with cumulative `ack` and, if it SACKed new data, the
    /// scoreboard with its blocks; forgets what `ack` covers.
    pub fn on_ack(&mut self, ack: u64, new_sacks: Option<&RangeSet>, now: Instant) -> Option<Duration> {
        let (mut oldest_acked, mut retransmission_acked) = (None, false);
        while let Some(s) = self.segs.front().filter(|s| s.end <= ack) {
            if s.retransmitted {
                retransmission_acked = true;
            } else if !s.sacked {
                oldest_acked = oldest_acked.or(Some(s.at));
            }
            self.segs.pop_front();
        }
        let mut oldest_sacked: Option<Instant> = None;
        if let Some(scoreboard) = new_sacks {
            for s in self.segs.iter_mut().filter(|s| !s.sacked && scoreboard.covers(s.start, s.end)) {
                s.sacked = true;
                if !s.retransmitted {
                    oldest_sacked = Some(oldest_sacked.map_or(s.at, |o| o.min(s.at)));
                }
            }
        }
        let from = oldest_acked.filter(|_| !retransmission_acked).or(oldest_sacked);
        from.map(|at| now.saturating_since(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    /// `n` segments of 100 bytes from offset 1, the i-th first sent at 10·i ms.
    fn sent_10_ms_apart(n: u64) -> SendTimes {
        let mut t = SendTimes::default();
        for i in 0..n {
            t.on_send(1 + 100 * i, 101 + 100 * i, at(10 * i), false);
        }
        t
    }

    /// Segments of 100 bytes sent at 0, 10, 20, 30 ms. A cumulative ACK of the first two at
    /// 250 ms times the oldest (250 ms, Linux's `first_ackt`), not the newest.
    #[test]
    fn a_cumulative_ack_times_the_oldest_segment_it_covers() {
        let mut t = sent_10_ms_apart(4);
        assert_eq!(t.on_ack(201, None, at(250)), Some(Duration::from_millis(250)));
        assert_eq!(t.on_ack(201, None, at(260)), None, "nothing newly acknowledged");
        assert_eq!(t.on_ack(401, None, at(300)), Some(Duration::from_millis(280)));
    }

    /// Karn: an ACK that covers a retransmitted segment gives no sample from its cumulative
    /// part, even if it also covers segments sent once; a later ACK of those does.
    #[test]
    fn an_ack_of_a_retransmission_gives_no_sample() {
        let mut t = sent_10_ms_apart(3);
        t.on_send(1, 101, at(500), true);
        assert_eq!(t.on_ack(201, None, at(600)), None);
        assert_eq!(t.on_ack(301, None, at(700)), Some(Duration::from_millis(680)));
    }

    /// A SACK-only ACK times the oldest newly SACKed segment sent once; a segment SACKed
    /// before gives no second sample when the cumulative ACK covers it, and a SACKed
    /// retransmission gives none.
    #[test]
    fn new_sacks_time_the_oldest_newly_sacked_segment() {
        let mut t = sent_10_ms_apart(5);
        t.on_send(401, 501, at(300), true);
        let mut sb = RangeSet::default();
        sb.insert(201, 501); // segments 3, 4 (sent at 20, 30 ms) and the resent 5th
        assert_eq!(t.on_ack(1, Some(&sb), at(400)), Some(Duration::from_millis(380)));
        assert_eq!(t.on_ack(1, Some(&sb), at(410)), None, "nothing newly SACKed");
        // The hole filled: the first two segments time the ACK (the oldest, sent at 0), the
        // SACKed third gives nothing more; then the SACKed fourth and the resent fifth none.
        assert_eq!(t.on_ack(301, None, at(450)), Some(Duration::from_millis(450)));
        assert_eq!(t.on_ack(501, None, at(460)), None);
    }
}
