//! BBR v1 congestion control as Linux 6.x runs it (net/ipv4/tcp_bbr.c; Cardwell, Cheng,
//! Gunn, Hassas Yeganeh, Jacobson, "BBR: Congestion-Based Congestion Control", ACM Queue
//! 14(5), 2016), `congestion = "bbr"`.
//!
//! Principles: BBR models the path by two numbers, the bottleneck bandwidth (the windowed
//! max of the delivery rate over 10 round trips, from `tcp/rate.rs`) and the round-trip
//! propagation time (the min RTT over 10 s), and sends at pacing_gain × bandwidth with at
//! most cwnd_gain × their product in flight. Loss is not its congestion signal.
//!
//! States (`Mode`): STARTUP doubles the rate each round (gain 2/ln 2) until three rounds
//! grow the bandwidth by less than 25%; DRAIN (gain ln 2/2) empties the queue STARTUP made;
//! PROBE_BW cycles the pacing gain through 5/4, 3/4 and six rounds of 1 (from a random
//! phase other than 3/4); PROBE_RTT, when the min RTT is 10 s old, holds 4 packets in
//! flight for 200 ms and a round to measure it again.
//!
//! As Linux: fixed point (bandwidth in packets per µs << 24, gains in 1/256), windows in
//! packets, the pacing rate 1% under gain × bandwidth, cwnd = gain × BDP + 3 TSO buffers
//! (`bbr_quantization_budget`), packet conservation in the first round of recovery and the
//! window before it restored after. Left out: the long-term (policer) bandwidth mode
//! (`lt_bw`), the ACK-aggregation allowance (`bbr_update_ack_aggregation`), and
//! `FLAG_ACK_MAYBE_DELAYED` (a lone sub-MSS segment's ACK may renew an expired min RTT).

use super::minmax::MaxFilter;
use crate::tcp::rate::RateSample;
use crate::tcp::CongState;
use smallpipe_core::{Duration, Instant, Rng};

/// Bandwidth unit: packets per µs << `BW_SCALE`.
pub const BW_SCALE: u32 = 24;
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain unit: 1.0 is `BBR_UNIT`.
pub const BBR_SCALE: u32 = 8;
pub const BBR_UNIT: u64 = 1 << BBR_SCALE;
/// `bbr_high_gain`, 2/ln 2: STARTUP's pacing and cwnd gain.
pub const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain`, 1/high_gain: DRAIN's pacing gain.
pub const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain`: PROBE_BW's cwnd gain.
pub const CWND_GAIN: u64 = BBR_UNIT * 2;
/// `bbr_pacing_gain`: PROBE_BW's gain cycle.
pub const PACING_GAIN: [u64; CYCLE_LEN] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
pub const CYCLE_LEN: usize = 8;
/// `bbr_cycle_rand`: the gain cycle starts at one of the last 7 phases' predecessors.
const CYCLE_RAND: u64 = 7;
/// `bbr_bw_rtts`: the bandwidth filter's window, in round trips.
pub const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// `bbr_min_rtt_win_sec`.
pub const MIN_RTT_WIN: Duration = Duration(10_000_000_000);
/// `bbr_probe_rtt_mode_ms`.
pub const PROBE_RTT_MODE: Duration = Duration(200_000_000);
/// `bbr_cwnd_min_target`, packets.
pub const CWND_MIN_TARGET: u64 = 4;
/// `bbr_full_bw_thresh` and `bbr_full_bw_cnt`: STARTUP ends after this many rounds
/// without 25% growth.
pub const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
pub const FULL_BW_CNT: u32 = 3;
/// `bbr_pacing_margin_percent`.
pub const PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_min_tso_rate`, bits/s: below it a TSO buffer is one segment, else at least two.
pub const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// `TCP_INIT_CWND`, packets.
const INIT_CWND: u64 = 10;
/// `sk_pacing_shift`'s default: a TSO buffer holds about 1 ms (2^-10 s) at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` (64 KiB less x86-64's 320 header bytes): the
/// largest TSO buffer, bytes.
const GSO_MAX_BYTES: u64 = 65_536 - 1 - 320;

/// `enum bbr_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// What BBR reads and writes of the connection (Linux's `tcp_sock` fields), in packets.
#[derive(Debug, Clone, Copy)]
pub struct Conn {
    pub now: Instant,
    pub mss: u64,
    /// `tp->delivered` and `tp->delivered_mstamp`.
    pub delivered: u64,
    pub delivered_at: Instant,
    /// `tcp_packets_in_flight`.
    pub in_flight: u64,
    /// `snd_cwnd`, read and written.
    pub cwnd: u64,
    /// `snd_ssthresh`, written on entering DRAIN.
    pub ssthresh: Option<u64>,
    /// The loss-recovery state after this ACK (`icsk_ca_state`).
    pub ca_state: CongState,
    pub srtt: Option<Duration>,
    /// Earliest departure of the next segment (`tcp_wstamp_ns`).
    pub next_send: Option<Instant>,
    /// `tp->app_limited`, read and written (PROBE_RTT marks its samples).
    pub app_limited: u64,
}

/// Linux's `TCP_CA_Recovery` or `TCP_CA_Loss` (`state >= TCP_CA_Recovery`).
fn recovering(s: CongState) -> bool {
    matches!(s, CongState::Recovery | CongState::Loss)
}

/// `struct bbr`.
#[derive(Debug, Clone)]
pub struct Bbr {
    initialized: bool,
    mode: Mode,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_done: Option<Instant>,
    /// Max delivery rate over `BW_RTTS` rounds, packets/µs << 24.
    bw: MaxFilter,
    /// Packet-timed rounds so far, and the delivery count that ends this one.
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_stamp: Instant,
    prev_ca_state: CongState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: usize,
    has_seen_rtt: bool,
    /// cwnd before loss recovery or PROBE_RTT cut it, packets.
    prior_cwnd: u64,
    full_bw: u64,
    /// `sk_pacing_rate`, bytes per second of payload.
    pacing_rate: u64,
    /// The gain cycle's random start.
    rng: Rng,
    /// Bytes per packet, for rates in bytes.
    mss: u64,
}

impl Bbr {
    /// `seed`: the flow's own (the simulator's ISS, itself drawn from the run's seed).
    pub fn new(seed: u64) -> Self {
        Bbr {
            initialized: false,
            mode: Mode::Startup,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_done: None,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_stamp: Instant::ZERO,
            prev_ca_state: CongState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            pacing_rate: 0,
            rng: Rng::new(seed, 0xBB_0001),
            mss: 0,
        }
    }

    /// `bbr_init`, once the connection is established (`min_rtt`: `tcp_min_rtt`, the
    /// handshake's); later calls do nothing.
    pub fn init(&mut self, c: &Conn, min_rtt: Option<Duration>) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        self.mss = c.mss;
        self.next_rtt_delivered = c.delivered;
        self.min_rtt = min_rtt;
        self.min_rtt_stamp = c.now;
        self.bw.reset(0, 0);
        self.init_pacing_rate_from_rtt(c);
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn pacing_gain(&self) -> u64 {
        self.pacing_gain
    }
    pub fn cwnd_gain(&self) -> u64 {
        self.cwnd_gain
    }
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    /// The bandwidth estimate, packets/µs << 24 (`bbr_bw`).
    pub fn bw(&self) -> u64 {
        self.bw.get()
    }
    /// The bandwidth estimate in payload bits per second (`bbr_get_info`'s `bbr_bw` × 8).
    pub fn bw_bps(&self) -> u64 {
        (self.bw.get() as u128 * self.mss as u128 * 8_000_000 >> BW_SCALE) as u64
    }
    /// `sk_pacing_rate`, bytes of payload per second; 0 before `init`.
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate
    }

    /// `bbr_main`: the model, then the pacing rate and cwnd, on every ACK.
    pub fn on_ack(&mut self, c: &mut Conn, rs: &RateSample) {
        self.update_bw(c, rs);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(c, rs) {
            self.advance_cycle_phase(c);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(c);
        self.update_min_rtt(c, rs);
        self.update_gains();
        let bw = self.bw.get();
        self.set_pacing_rate(c, bw, self.pacing_gain);
        self.set_cwnd(c, rs, bw, self.cwnd_gain);
    }

    /// `bbr_ssthresh`, on entering recovery or a timeout: keeps cwnd to restore after.
    pub fn save_cwnd(&mut self, cwnd: u64) {
        if !recovering(self.prev_ca_state) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd); // recovery or PROBE_RTT cut it
        }
    }

    /// `bbr_set_state(TCP_CA_Loss)`: a timeout ends the round and restarts the full-pipe test.
    pub fn on_timeout(&mut self) {
        self.prev_ca_state = CongState::Loss;
        self.full_bw = 0;
        self.round_start = true;
    }

    /// `bbr_undo_cwnd`: a spurious slow-down; cwnd stays, the full-pipe test restarts.
    pub fn undo(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
    }

    /// `bbr_cwnd_event_tx_start`: sending again with nothing in flight while application-limited.
    pub fn on_tx_start(&mut self, c: &mut Conn) {
        if c.app_limited == 0 {
            return;
        }
        self.idle_restart = true;
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(c, self.bw.get(), BBR_UNIT),
            Mode::ProbeRtt => self.check_probe_rtt_done(c),
            _ => {}
        }
    }

    /// `bbr_tso_segs_goal`: segments per TSO buffer at the pacing rate.
    pub fn tso_segs_goal(&self, mss: u64) -> u64 {
        let min_segs = if self.pacing_rate < MIN_TSO_RATE_BPS / 8 { 1 } else { 2 };
        ((self.pacing_rate >> PACING_SHIFT).min(GSO_MAX_BYTES) / mss).max(min_segs)
    }

    /// `bbr_rate_bytes_per_sec` less the pacing margin: `bw` × `gain` in payload bytes/s.
    fn rate_bytes_per_sec(bw: u64, gain: u64, mss: u64) -> u64 {
        let rate = (bw as u128 * mss as u128 * gain as u128) >> BBR_SCALE;
        ((rate * (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128) >> BW_SCALE) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain × cwnd / SRTT (1 ms before any sample).
    fn init_pacing_rate_from_rtt(&mut self, c: &Conn) {
        let rtt_us = match c.srtt {
            Some(srtt) => {
                self.has_seen_rtt = true;
                (srtt.as_nanos() / 1000).max(1)
            }
            None => 1000,
        };
        let bw = c.cwnd * BW_UNIT / rtt_us;
        self.pacing_rate = Self::rate_bytes_per_sec(bw, HIGH_GAIN, c.mss);
    }

    /// `bbr_set_pacing_rate`: never lowered before the pipe is full.
    fn set_pacing_rate(&mut self, c: &Conn, bw: u64, gain: u64) {
        let rate = Self::rate_bytes_per_sec(bw, gain, c.mss);
        if !self.has_seen_rtt && c.srtt.is_some() {
            self.init_pacing_rate_from_rtt(c);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_update_bw`: round counting and the bandwidth filter.
    fn update_bw(&mut self, c: &Conn, rs: &RateSample) {
        self.round_start = false;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else { return };
        let interval_us = interval.as_nanos() / 1000;
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = c.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = delivered * BW_UNIT / interval_us;
        // An application-limited sample only counts when it raises the estimate.
        if !rs.is_app_limited || bw >= self.bw.get() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_bdp`: ceil(bw × min_rtt × gain), packets; `TCP_INIT_CWND` before any RTT.
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(min_rtt) = self.min_rtt else { return INIT_CWND };
        let w = bw as u128 * (min_rtt.as_nanos() / 1000) as u128;
        ((((w * gain as u128) >> BBR_SCALE) + BW_UNIT as u128 - 1) / BW_UNIT as u128) as u64
    }

    /// `bbr_quantization_budget`: 3 TSO buffers more, rounded up to even, and 2 packets
    /// more in the probing phase so it reaches above the BDP on small BDPs.
    fn quantization_budget(&self, cwnd: u64, mss: u64) -> u64 {
        let cwnd = (cwnd + 3 * self.tso_segs_goal(mss) + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 { cwnd + 2 } else { cwnd }
    }

    /// `bbr_inflight`.
    fn inflight(&self, bw: u64, gain: u64, mss: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain), mss)
    }

    /// `bbr_packets_in_net_at_edt`: what will be in the network when the next segment's
    /// departure time comes, given what is in flight now.
    fn packets_in_net_at_edt(&self, c: &Conn, in_flight: u64) -> u64 {
        let edt = c.next_send.map_or(c.now, |t| t.max(c.now));
        let interval_us = edt.saturating_since(c.now).as_nanos() / 1000;
        let delivered = ((self.bw.get() as u128 * interval_us as u128) >> BW_SCALE) as u64;
        let at_edt = in_flight + if self.pacing_gain > BBR_UNIT { self.tso_segs_goal(c.mss) } else { 0 };
        at_edt.saturating_sub(delivered)
    }

    /// `bbr_is_next_cycle_phase`: a phase lasts a min RTT; the probing phase goes on until
    /// a loss or its target is in flight, the draining one ends early once the BDP is.
    fn is_next_cycle_phase(&self, c: &Conn, rs: &RateSample) -> bool {
        let full_length = self.min_rtt.is_some_and(|m| c.delivered_at.saturating_since(self.cycle_stamp) > m);
        if self.pacing_gain == BBR_UNIT {
            return full_length;
        }
        let in_flight = self.packets_in_net_at_edt(c, rs.prior_in_flight);
        let bw = self.bw.get();
        if self.pacing_gain > BBR_UNIT {
            return full_length && (rs.losses > 0 || in_flight >= self.inflight(bw, self.pacing_gain, c.mss));
        }
        full_length || in_flight <= self.inflight(bw, BBR_UNIT, c.mss)
    }

    fn advance_cycle_phase(&mut self, c: &Conn) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = c.delivered_at;
    }

    /// `bbr_reset_probe_bw_mode`: the cycle starts at a random phase other than 3/4.
    fn reset_probe_bw_mode(&mut self, c: &Conn) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below_inclusive(CYCLE_RAND - 1) as usize;
        self.advance_cycle_phase(c);
    }

    fn reset_mode(&mut self, c: &Conn) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(c);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_full_bw_reached`: the pipe is full after `FULL_BW_CNT` rounds without
    /// the estimate growing by `FULL_BW_THRESH`.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = self.full_bw * FULL_BW_THRESH >> BBR_SCALE;
        if self.bw.get() >= thresh {
            self.full_bw = self.bw.get();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, c: &mut Conn) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            c.ssthresh = Some(self.inflight(self.bw.get(), BBR_UNIT, c.mss));
        }
        if self.mode == Mode::Drain && self.packets_in_net_at_edt(c, c.in_flight) <= self.inflight(self.bw.get(), BBR_UNIT, c.mss) {
            self.reset_probe_bw_mode(c); // the queue is drained
        }
    }

    fn check_probe_rtt_done(&mut self, c: &mut Conn) {
        if !self.probe_rtt_done.is_some_and(|done| c.now > done) {
            return;
        }
        self.min_rtt_stamp = c.now; // the next PROBE_RTT in MIN_RTT_WIN
        c.cwnd = c.cwnd.max(self.prior_cwnd);
        self.reset_mode(c);
    }

    /// `bbr_update_min_rtt`: the min RTT filter, and PROBE_RTT when it expires.
    fn update_min_rtt(&mut self, c: &mut Conn, rs: &RateSample) {
        let expired = c.now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = rs.rtt.filter(|&rtt| self.min_rtt.is_none_or(|m| rtt < m) || expired) {
            self.min_rtt = Some(rtt);
            self.min_rtt_stamp = c.now;
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(c.cwnd);
            self.probe_rtt_done = None;
        }
        if self.mode == Mode::ProbeRtt {
            c.app_limited = (c.delivered + c.in_flight).max(1); // its low-rate samples
            if self.probe_rtt_done.is_none() && c.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done = Some(c.now + PROBE_RTT_MODE);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = c.delivered;
            } else if self.probe_rtt_done.is_some() {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(c);
                }
            }
        }
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: losses come off cwnd; the first round of
    /// recovery conserves packets (what was delivered may go out again), and leaving
    /// recovery restores the window from before it. Returns (conserving, cwnd).
    fn recover_or_restore(&mut self, c: &Conn, rs: &RateSample, acked: u64) -> (bool, u64) {
        let (prev, state) = (self.prev_ca_state, c.ca_state);
        let mut cwnd = if rs.losses > 0 { c.cwnd.saturating_sub(rs.losses).max(1) } else { c.cwnd };
        if state == CongState::Recovery && prev != CongState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = c.delivered; // the round starts now
            cwnd = c.in_flight + acked;
        } else if recovering(prev) && !recovering(state) {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (true, cwnd.max(c.in_flight + acked));
        }
        (false, cwnd)
    }

    /// `bbr_set_cwnd`: toward gain × BDP + the quantization budget, growing by what each
    /// ACK delivered; cut to the target only once the pipe was full; 4 packets in PROBE_RTT.
    fn set_cwnd(&mut self, c: &mut Conn, rs: &RateSample, bw: u64, gain: u64) {
        let acked = rs.acked_sacked;
        let mut cwnd = c.cwnd;
        if acked > 0 {
            let (conserving, w) = self.recover_or_restore(c, rs, acked);
            cwnd = w;
            if !conserving {
                let target = self.quantization_budget(self.bdp(bw, gain), c.mss);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || c.delivered < INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        c.cwnd = if self.mode == Mode::ProbeRtt { cwnd.min(CWND_MIN_TARGET) } else { cwnd };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const RTT: Duration = Duration(100_000_000);

    fn at(ms: u64) -> Instant {
        Instant(ms * 1_000_000)
    }

    /// A path that delivers `pkts_per_rtt` packets per 100 ms round trip, one ACK per round
    /// carrying the round's sample; `flight` packets stay in flight.
    struct Path {
        bbr: Bbr,
        delivered: u64,
        now_ms: u64,
        cwnd: u64,
        ca_state: CongState,
    }

    impl Path {
        fn new(seed: u64) -> Self {
            let mut bbr = Bbr::new(seed);
            let c = Path::conn_at(at(0), 0, 10, CongState::Open);
            bbr.init(&c, Some(RTT));
            Path { bbr, delivered: 0, now_ms: 0, cwnd: 10, ca_state: CongState::Open }
        }

        fn conn_at(now: Instant, delivered: u64, cwnd: u64, ca_state: CongState) -> Conn {
            Conn { now, mss: MSS, delivered, delivered_at: now, in_flight: cwnd, cwnd, ssthresh: None, ca_state,
                srtt: Some(RTT), next_send: None, app_limited: 0 }
        }

        /// One round trip delivering `pkts` with `in_flight` left in flight; returns the conn after.
        fn round(&mut self, pkts: u64, in_flight: u64, rtt: Duration) -> Conn {
            self.round_spaced(pkts, in_flight, rtt, rtt)
        }

        /// As `round`, the ACK coming `spacing` after the last one.
        fn round_spaced(&mut self, pkts: u64, in_flight: u64, rtt: Duration, spacing: Duration) -> Conn {
            let prior_delivered = self.delivered;
            self.delivered += pkts;
            self.now_ms += spacing.as_nanos() / 1_000_000;
            let mut c = Path::conn_at(at(self.now_ms), self.delivered, self.cwnd, self.ca_state);
            c.in_flight = in_flight;
            let rs = RateSample { prior_delivered, delivered: Some(pkts), interval: Some(rtt), is_app_limited: false,
                acked_sacked: pkts, losses: 0, rtt: Some(rtt), prior_in_flight: in_flight };
            self.bbr.on_ack(&mut c, &rs);
            self.cwnd = c.cwnd;
            c
        }

        /// Packets per µs << 24 of `pkts` per 100 ms.
        fn bw(pkts: u64) -> u64 {
            pkts * BW_UNIT / 100_000
        }
    }

    #[test]
    fn the_gains_and_windows_are_the_kernels() {
        let unit = BBR_UNIT as f64;
        assert!((HIGH_GAIN as f64 / unit - 2.0 / std::f64::consts::LN_2).abs() < 1.0 / unit, "bbr_high_gain = 2/ln 2");
        assert!((DRAIN_GAIN as f64 / unit - std::f64::consts::LN_2 / 2.0).abs() < 1.0 / unit, "bbr_drain_gain = 1/high_gain");
        assert_eq!(CWND_GAIN, 2 * BBR_UNIT);
        let cycle: Vec<f64> = PACING_GAIN.iter().map(|&g| g as f64 / unit).collect();
        assert_eq!(cycle, [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        assert_eq!(BW_RTTS, 10, "bandwidth filter: 10 round trips");
        assert_eq!(MIN_RTT_WIN.as_secs_f64(), 10.0);
        assert_eq!(PROBE_RTT_MODE.as_secs_f64(), 0.2);
        assert_eq!((CWND_MIN_TARGET, FULL_BW_CNT), (4, 3));
        assert_eq!(FULL_BW_THRESH as f64 / unit, 1.25);
    }

    #[test]
    fn startup_ends_after_three_rounds_without_a_quarter_more_bandwidth_then_drains() {
        let mut p = Path::new(1);
        // Doubling rounds: 10, 20, 40, 80 packets per RTT, then 100 (growth 25%: still
        // growing), then three rounds at 100.
        for pkts in [10, 20, 40, 80, 100] {
            p.round(pkts, 2 * pkts, RTT);
            assert_eq!(p.bbr.mode(), Mode::Startup, "{pkts}");
        }
        p.round(100, 300, RTT);
        p.round(110, 300, RTT); // +10%: not significant
        assert!(!p.bbr.full_bw_reached(), "two flat rounds");
        let tso = p.bbr.tso_segs_goal(MSS); // at STARTUP's pacing rate
        let c = p.round(100, 300, RTT);
        assert!(p.bbr.full_bw_reached(), "the third flat round");
        assert_eq!(p.bbr.mode(), Mode::Drain, "300 packets in flight: a queue to drain");
        assert_eq!(p.bbr.pacing_gain(), DRAIN_GAIN);
        assert_eq!(p.bbr.cwnd_gain(), HIGH_GAIN);
        // ssthresh = inflight at gain 1: BDP (110 packets, the max) + 3 TSO buffers, even;
        // a buffer at 2.89 × 1100 packets/s holds 1 ms of it, 3 segments.
        assert_eq!(tso, 3);
        assert_eq!(c.ssthresh, Some((110 + 3 * tso + 1) & !1));
        // Once in flight is at most that, PROBE_BW.
        p.round(100, 100, RTT);
        assert_eq!(p.bbr.mode(), Mode::ProbeBw);
        assert_eq!(p.bbr.cwnd_gain(), CWND_GAIN);
    }

    #[test]
    fn probe_bw_starts_at_a_random_phase_but_never_the_draining_one() {
        let mut seen = [0u32; CYCLE_LEN];
        for seed in 0..400 {
            let mut p = Path::new(seed);
            for pkts in [10, 20, 40, 40, 40, 40] {
                p.round(pkts, pkts, RTT);
            }
            p.round(40, 10, RTT);
            assert_eq!(p.bbr.mode(), Mode::ProbeBw, "seed {seed}");
            seen[p.bbr.cycle_idx()] += 1;
        }
        assert_eq!(seen[1], 0, "never starts at 3/4");
        assert!(seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 20), "the 7 others, about 1/7 each: {seen:?}");
    }

    #[test]
    fn the_gain_cycle_advances_each_min_rtt_and_sets_the_pacing_rate() {
        let mut p = Path::new(7);
        for pkts in [10, 20, 40, 40, 40, 40] {
            p.round(pkts, pkts, RTT);
        }
        p.round(40, 10, RTT);
        let bw = Path::bw(40);
        for _ in 0..16 {
            let idx = p.bbr.cycle_idx();
            assert_eq!(p.bbr.pacing_gain(), PACING_GAIN[idx]);
            // pacing rate = gain × bw × (1 − 1%), bytes/s: 400 packets/s × 1448 B here.
            let expect = 400.0 * MSS as f64 * PACING_GAIN[idx] as f64 / BBR_UNIT as f64 * 0.99;
            assert!((p.bbr.pacing_rate() as f64 / expect - 1.0).abs() < 1e-3, "{} vs {expect}", p.bbr.pacing_rate());
            // In flight at the probing phase's target and just the BDP at the draining one,
            // so each phase lasts one min RTT (the 101 ms ACK spacing exceeds it).
            let in_flight = if PACING_GAIN[idx] > BBR_UNIT { 200 } else { 40 };
            p.round_spaced(40, in_flight, RTT, Duration(101_000_000));
            assert_eq!(p.bbr.cycle_idx(), (idx + 1) % CYCLE_LEN);
        }
        assert_eq!(p.bbr.bw(), bw);
    }

    #[test]
    fn cwnd_is_twice_the_bdp_plus_three_tso_buffers() {
        let mut p = Path::new(3);
        for pkts in [10, 20, 40, 40, 40, 40] {
            p.round(pkts, pkts, RTT);
        }
        p.round(40, 10, RTT);
        for _ in 0..30 {
            p.round(40, 40, Duration(101_000_000));
        }
        // 400 packets/s × 100 ms = 40; the rate (≈ 4.6 Mbit/s) is above 1.2 Mbit/s, so a
        // TSO buffer is at least 2 segments, and 1 ms of it (566 bytes) is less.
        let tso = p.bbr.tso_segs_goal(MSS);
        assert_eq!(tso, 2);
        let probing = if p.bbr.cycle_idx() == 0 { 2 } else { 0 };
        assert_eq!(p.cwnd, ((2 * 40 + 3 * tso + 1) & !1) + probing);
    }

    #[test]
    fn a_ten_second_old_min_rtt_brings_probe_rtt_for_200_ms_and_a_round() {
        let mut p = Path::new(5);
        for pkts in [10, 20, 40, 40, 40, 40] {
            p.round(pkts, pkts, RTT);
        }
        p.round(40, 10, RTT);
        let queued = Duration(150_000_000); // every later RTT sample is above the min
        // The min RTT was set at `init`, time 0.
        while p.now_ms + 150 <= 10_000 {
            p.round(40, 60, queued);
            assert_ne!(p.bbr.mode(), Mode::ProbeRtt, "t = {} ms", p.now_ms);
        }
        p.round(40, 60, queued);
        assert_eq!(p.bbr.mode(), Mode::ProbeRtt, "10 s after the min RTT was set");
        let cwnd_before = p.bbr.prior_cwnd;
        assert!(cwnd_before > CWND_MIN_TARGET);
        assert_eq!(p.cwnd, CWND_MIN_TARGET);
        assert_eq!(p.bbr.min_rtt(), Some(queued), "the expired filter took the new sample");
        // In flight falls to 4: 200 ms from then, and a round, it ends.
        p.round(10, 4, RTT);
        let start = p.now_ms;
        while p.bbr.mode() == Mode::ProbeRtt {
            assert_eq!(p.cwnd, CWND_MIN_TARGET);
            p.round(4, 4, RTT);
        }
        // ACKs every 100 ms: the one at 200 ms is not past the 200 ms, the next one is.
        assert_eq!(p.now_ms - start, 300);
        assert_eq!(p.bbr.mode(), Mode::ProbeBw, "the pipe was full before: back to PROBE_BW");
        // Restored (give or take the 2 packets of the probing phase's budget).
        assert!(p.cwnd + 2 >= cwnd_before, "cwnd restored: {} < {cwnd_before}", p.cwnd);
    }

    #[test]
    fn recovery_conserves_packets_for_a_round_and_restores_cwnd_after() {
        let mut p = Path::new(9);
        for pkts in [10, 20, 40, 40, 40, 40] {
            p.round(pkts, pkts, RTT);
        }
        p.round(40, 10, RTT);
        for _ in 0..10 {
            p.round(40, 40, Duration(101_000_000));
        }
        let before = p.cwnd;
        p.bbr.save_cwnd(before); // bbr_ssthresh on entering recovery
        // The entering ACK delivers 2 with 20 in flight: cwnd = in flight + delivered.
        p.ca_state = CongState::Recovery;
        let c = p.round(2, 20, Duration(101_000_000));
        assert_eq!(c.cwnd, 22);
        // Leaving recovery restores at least the saved window.
        p.ca_state = CongState::Open;
        p.round(2, 20, Duration(101_000_000));
        assert!(p.cwnd >= before, "{} < {before}", p.cwnd);
    }
}
