//! RFC 6582 NewReno (`recovery = "newreno"`): Reno's fast recovery (`reno.rs`) that stays
//! in recovery over partial ACKs, retransmitting one hole per round trip.

use crate::tcp::{Endpoint, FastRecovery, Instant, Packet, TcpParams};

impl Endpoint {
    /// §3.2 step 2: a new episode only once `snd_una` is past `recover`, or by the ACK
    /// heuristic of §4.2 (the duplicate ACKs follow an ACK of at most four segments).
    pub(super) fn newreno_may_enter(&self, p: &TcpParams) -> bool {
        self.snd_una > self.recover_mark || (self.cwnd > p.mss && self.snd_una - self.prev_highest_ack <= 4 * p.mss)
    }

    /// §3.2 step 3, a partial ACK of `acked` bytes: retransmit the next hole, deflate cwnd by
    /// what was acknowledged and add back one segment if at least one was; restart the
    /// timer on the first partial ACK only (the "Impatient" variant of §4.1).
    pub(super) fn newreno_on_partial_ack(&mut self, mut r: FastRecovery, acked: u64, now: Instant, p: &TcpParams,
                                        out: &mut Vec<Packet>) {
        self.retransmit_una(now, p, out);
        self.cwnd = self.cwnd.saturating_sub(acked) + if acked >= p.mss { p.mss } else { 0 };
        self.cwnd = self.cwnd.max(p.mss);
        if p.recovery.ns2 {
            self.ns2_partial_ack(acked, p);
        }
        if r.first_partial {
            r.first_partial = false;
            self.arm_rto(now, p);
        }
        self.recovery = Some(r);
    }
}
