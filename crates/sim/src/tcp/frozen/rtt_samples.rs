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
