//! Linux's `cong_control` path for BBR (`cc/bbr.rs`; net/ipv4/tcp_input.c `tcp_ack`,
//! `tcp_cong_control`): on every ACK, after loss detection and recovery have run, the
//! delivery-rate sample (`rate.rs`) goes to the controller, which sets cwnd and the pacing
//! rate; only then does the ACK's sending happen (Linux's `tcp_xmit_recovery` and
//! `tcp_data_snd_check` follow `tcp_cong_control`). The endpoint's other window rules
//! (growth, PRR, cwnd = ssthresh on leaving recovery, the restart window after idle) do not
//! run for BBR; a timeout still sets cwnd to one segment (Linux's `tcp_enter_loss`: the
//! packets in flight, none once all are marked lost, plus one).

use super::cc::bbr::Conn;
use super::*;

impl Endpoint {
    /// While an ACK is processed for BBR, sends wait for its cwnd.
    pub(super) fn bbr_holds_sends(&self) -> bool {
        self.queues.as_deref().is_some_and(|q| q.cong_control_pending)
    }

    /// BBR's view of the connection now, in segments.
    fn bbr_conn(&self, now: Instant, p: &TcpParams) -> Conn {
        let q = self.queues.as_deref();
        let rate = q.map(|q| &q.rate);
        Conn {
            now,
            mss: p.mss,
            delivered: rate.map_or(0, |r| r.delivered()),
            delivered_at: rate.and_then(|r| r.delivered_at()).unwrap_or(now),
            in_flight: self.pipe(p).div_ceil(p.mss),
            cwnd: self.cwnd / p.mss,
            ssthresh: None,
            ca_state: self.cong_state(),
            srtt: self.rtt.srtt(),
            next_send: q.and_then(|q| q.pacer.next_departure()),
            app_limited: rate.map_or(0, |r| r.app_limited()),
        }
    }

    /// Takes what BBR set: cwnd, ssthresh (DRAIN), the application-limited mark (PROBE_RTT).
    fn bbr_apply(&mut self, c: Conn, p: &TcpParams) {
        self.cwnd = c.cwnd * p.mss;
        if let Some(ssthresh) = c.ssthresh {
            self.ssthresh = ssthresh * p.mss;
        }
        self.queues_mut().rate.set_app_limited(c.app_limited);
    }

    /// `bbr_init` on first use, with the handshake's RTT as `tcp_min_rtt`.
    fn bbr_init(&mut self, now: Instant, p: &TcpParams) {
        let c = self.bbr_conn(now, p);
        let min_rtt = self.queues.as_deref().and_then(|q| q.rate.min_rtt()).or(self.rtt.srtt());
        let iss = self.iss;
        self.queues_mut().bbr.get_or_insert_with(|| Box::new(cc::bbr::Bbr::new(iss.into()))).init(&c, min_rtt);
    }

    /// A data segment `[off, end)` is about to leave: `CA_EVENT_TX_START` when nothing is in
    /// flight, then `tcp_rate_skb_sent`.
    pub(super) fn bbr_on_send(&mut self, off: u64, end: u64, retransmission: bool, now: Instant, p: &TcpParams) {
        self.bbr_init(now, p);
        if self.pipe(p) == 0 {
            let mut c = self.bbr_conn(now, p);
            self.bbr_mut().on_tx_start(&mut c);
            self.bbr_apply(c, p);
        }
        self.queues_mut().rate.on_send(off, end, now, retransmission);
    }

    /// The application writes: `tcp_rate_check_app_limited` before its bytes count.
    pub(super) fn bbr_on_write(&mut self, p: &TcpParams) {
        let unsent = self.send_end().saturating_sub(self.snd_nxt.max(self.snd_una));
        let in_flight = self.pipe(p).div_ceil(p.mss);
        let lost_unsent = self.rack_first_lost().is_some();
        let cwnd = self.cwnd / p.mss;
        self.queues_mut().rate.check_app_limited(unsent, p.mss, in_flight, cwnd, lost_unsent);
    }

    /// An ACK arrives: its sends wait for BBR. Returns the segments in flight before it.
    pub(super) fn bbr_begin_ack(&mut self, p: &TcpParams) -> u64 {
        let in_flight = self.pipe(p).div_ceil(p.mss);
        self.queues_mut().cong_control_pending = true;
        in_flight
    }

    /// The ACK was processed (cumulative `ack`, `losses` segments RACK marked on it): the
    /// rate sample, `bbr_main`, then the ACK's sends.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bbr_end_ack(&mut self, ack: u64, seg: &Packet, losses: u64, prior_in_flight: u64, now: Instant,
                              p: &TcpParams, out: &mut Vec<Packet>) {
        let ts_rtt = (p.timers.timestamps && seg.ts_ecr != 0)
            .then(|| Duration::from_micros(ts_now(now).wrapping_sub(seg.ts_ecr) as u64));
        let q = self.queues.get_or_insert_default();
        q.cong_control_pending = false;
        let mut rs = q.rate.on_ack(ack, &self.scoreboard, now, ts_rtt);
        rs.losses = losses;
        rs.prior_in_flight = prior_in_flight;
        self.bbr_init(now, p);
        let mut c = self.bbr_conn(now, p);
        self.bbr_mut().on_ack(&mut c, &rs);
        self.bbr_apply(c, p);
        self.try_send(now, p, out);
    }

    /// BBR's bandwidth estimate, payload bits per second; `None` without BBR.
    pub fn bbr_bw_bps(&self) -> Option<u64> {
        self.bbr_state().map(|b| b.bw_bps())
    }

    /// BBR's pacing rate, payload bits per second; `None` without BBR.
    pub fn bbr_pacing_rate_bps(&self) -> Option<u64> {
        self.bbr_state().map(|b| b.pacing_rate() * 8)
    }

    /// BBR's state once it has run (`bbr_init` on the first send or ACK).
    pub(super) fn bbr_state(&self) -> Option<&cc::bbr::Bbr> {
        self.queues.as_deref().and_then(|q| q.bbr.as_deref())
    }

    fn bbr_mut(&mut self) -> &mut cc::bbr::Bbr {
        self.queues_mut().bbr.as_deref_mut().expect("bbr_init ran")
    }

    /// `bbr_ssthresh` on entering recovery or a timeout: BBR keeps the cwnd to restore.
    pub(super) fn bbr_save_cwnd(&mut self, p: &TcpParams) {
        let cwnd = self.cwnd / p.mss;
        if let Some(bbr) = self.queues.as_deref_mut().and_then(|q| q.bbr.as_deref_mut()) {
            bbr.save_cwnd(cwnd);
        }
    }
}
