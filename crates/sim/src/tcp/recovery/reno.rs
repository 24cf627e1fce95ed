//! RFC 5681 §3.2 fast retransmit and fast recovery (`recovery = "reno"`): one hole per
//! episode, the window inflated by each duplicate ACK. NewReno (`newreno.rs`) enters,
//! inflates and ends the same way.

use crate::tcp::{Endpoint, Instant, Packet, TcpParams};

impl Endpoint {
    /// Steps 2-3: retransmit the segment at `snd_una`; cwnd = ssthresh + DupThresh·SMSS,
    /// the segments the duplicate ACKs say have left the network.
    pub(super) fn reno_enter(&mut self, now: Instant, p: &TcpParams, out: &mut Vec<Packet>) {
        self.retransmit_una(now, p, out);
        self.cwnd = self.ssthresh + p.recovery.dupthresh as u64 * p.mss;
    }

    /// Step 4: each further duplicate ACK inflates cwnd by one segment.
    pub(super) fn reno_inflate(&mut self, p: &TcpParams) {
        self.cwnd += p.mss;
    }

    /// Step 6: an ACK of new data ends the episode, even one below `recover`; cwnd = ssthresh.
    pub(super) fn reno_on_partial_ack(&mut self) {
        self.cwnd = self.ssthresh;
        self.recovery = None;
        self.dupacks = 0;
    }

    /// The ACK that reaches `recover`: RFC 6582 §3.2 step 3 option 1, cwnd =
    /// min(ssthresh, FlightSize + SMSS), which avoids a burst when little is in flight.
    pub(super) fn reno_on_full_ack(&mut self, p: &TcpParams) {
        self.cwnd = self.ssthresh.min(self.flight_size().max(p.mss) + p.mss);
    }
}
