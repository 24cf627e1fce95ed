//! The `[tcp]` table: every knob of the endpoint, the enums naming each rule's variants, and
//! the named stacks (`Stack`) that set the knobs' defaults as a whole.
//!
//! A knob variant is added here (its enum variant, and the `TcpParams` field it sets in
//! `tcp/mod.rs`), plus a row in docs/tcp.md: docs/tcp.md "Adding a knob" lists the places.

use crate::checks::{check, finite_at_least};
use serde::ser::Error as _;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use smallpipe_core::ConfigError;

/// A named TCP: the defaults of the knobs that differ between the RFCs, ns-3 and Linux.
/// A stack only sets defaults: a knob the scenario sets itself still wins. Each stack's
/// values are in `Stack::value` and in docs/tcp.md's stack table, with their sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stack {
    /// The RFCs, as the papers' TCP: every knob's own default.
    #[default]
    Rfc,
    /// ns-3.44's `TcpSocketBase` as docs/validation.md found it: its SACK-mode duplicate-ACK
    /// count, timer and partial-ACK rules, its pipe, the timer left running at the fast
    /// retransmit, the first data segment acknowledged at once, no random send overhead.
    Ns3,
    /// Linux (6.x) as built so far: CUBIC, SACK with RACK and PRR, Linux's RTO estimator and
    /// RTT samples, its decrease from cwnd, quick ACKs, pacing, min RTO 200 ms and IW 10.
    Linux,
    /// ns-2 2.35's one-way `Agent/TCP/Newreno` (or `Reno`, `Sack1` by `recovery`) with a
    /// `TCPSink` (`delayed_ack = true`: `TCPSink/DelAck`), at ns-default.tcl's defaults:
    /// windowInit_ 2, window_ 20 packets, tcpTick_ 10 ms with its fixed-point RTO, minrto_
    /// 200 ms, rtxcur_init_ 3 s, ssthresh from min(cwnd_, window_), no timestamps, no
    /// overhead_ (docs/tcp.md, "Named stacks" and "Where ns-2 departs from the RFCs").
    Ns2,
}

/// ns-default.tcl:919 `Agent/TCP window_`: the ns2 stack's receiver window, in packets of
/// the flow's MSS (`rwnd_bytes` follows the packet size).
pub const NS2_WINDOW_PKTS: u64 = 20;

/// The `[tcp]` keys a stack decides (the union over the stacks). A stack that leaves a key
/// alone gives it the key's own (RFC) default.
pub const STACK_KNOBS: &[&str] = &[
    "recovery", "congestion", "ssthresh_from", "initial_window_pkts", "ack_first_data", "ack_rule",
    "dupack_rule", "recovery_pacing", "loss_detection", "pacing", "recovery_rto", "disorder_ack",
    "recovery_partial_ack", "recovery_pipe", "fast_retransmit_rto", "cwnd_growth", "min_rto_ms",
    "rto_rule", "rtt_samples", "overhead_max_ms", "recovery_exit", "tail_loss_probe", "cubic_hystart", "rto_undo", "timestamps",
    "dsack", "recovery_undo", "frto", "rack_dsack_reo_wnd", "syn_timeout_restart", "tlp_rto_from_head",
    "sack_rearms_rto",
];

/// The `[tcp]` keys only the ns2 stack decides besides `STACK_KNOBS`: they are a stack's
/// only when `ns2` is the stack switched to or from, so that switching between the other
/// stacks keeps a file's own choices of them as it did before ns2 existed.
pub const NS2_STACK_KNOBS: &[&str] = &[
    "delayed_ack", "delayed_ack_ms", "initial_rto_ms", "clock_granularity_ms", "rwnd_bytes",
    "fast_recovery",
];

/// Knobs added after scenario ids were first kept: the canonical JSON leaves them out while
/// they hold their RFC default and the stack's value is that default too, so adding one
/// keeps the id of every scenario that does not use it (tests/test_point_ids_pinned.py). A
/// new knob is added here.
const ADDED_KNOBS: &[&str] = &["loss_detection", "pacing", "rtt_samples", "recovery_exit", "tail_loss_probe", "cubic_hystart", "rto_undo", "fast_recovery",
    "dsack", "recovery_undo", "frto", "rack_dsack_reo_wnd", "syn_timeout_restart", "tlp_rto_from_head",
    "timer_wheel_hz", "sack_rearms_rto"];

/// What a `[tcp]` table holds of the knobs some of a stack's other knobs depend on.
#[derive(Clone, Copy)]
struct Held {
    rack: bool,
    tail_loss_probe: bool,
    every_ack_rtt: bool,
}

impl Held {
    fn of(c: &TcpConfig) -> Self {
        Held {
            rack: c.loss_detection == LossDetection::Rack,
            tail_loss_probe: c.tail_loss_probe,
            every_ack_rtt: c.rtt_samples == RttSamples::EveryAck,
        }
    }

    fn of_table(table: &Map<String, Value>) -> Self {
        Held {
            rack: table.get("loss_detection").and_then(Value::as_str) == Some("rack"),
            tail_loss_probe: table.get("tail_loss_probe").and_then(Value::as_bool) == Some(true),
            every_ack_rtt: table.get("rtt_samples").and_then(Value::as_str) == Some("every_ack"),
        }
    }
}

impl Stack {
    /// This stack's value of `key` for a table whose congestion control is `congestion`
    /// (`None`: the key's own default). Only keys of `STACK_KNOBS` have one.
    fn value(self, key: &str, congestion: Congestion) -> Option<Value> {
        let v = match (self, key) {
            (Stack::Rfc, _) => return None,
            // ns-3.44: TcpSocketBase's "Sack" attribute is on by default.
            (Stack::Ns3, "recovery") => "sack".into(),
            (Stack::Ns3, "fast_retransmit_rto") => "keep".into(),
            (Stack::Ns3, "ack_first_data") => true.into(),
            (Stack::Ns3, "dupack_rule") => "ns3".into(),
            (Stack::Ns3, "recovery_rto") => "first_partial".into(),
            (Stack::Ns3, "disorder_ack") => "ns3".into(),
            (Stack::Ns3, "recovery_partial_ack") => "ns3".into(),
            (Stack::Ns3, "recovery_pipe") => "ns3".into(),
            // ns-3 has no random per-packet processing delay (ns-2's overhead_).
            (Stack::Ns3, "overhead_max_ms") => 0.0.into(),
            (Stack::Ns3, "ssthresh_from") => "bytes_in_flight".into(),
            (Stack::Ns3, "recovery_exit") => "ns3".into(),
            (Stack::Linux, "recovery") => "sack".into(),
            // net.ipv4.tcp_congestion_control's default since 2.6.19.
            (Stack::Linux, "congestion") => "cubic".into(),
            (Stack::Linux, "ssthresh_from") => "cwnd".into(),
            (Stack::Linux, "initial_window_pkts") => 10.into(),
            (Stack::Linux, "ack_rule") => "linux".into(),
            (Stack::Linux, "recovery_pacing") => "prr".into(),
            (Stack::Linux, "loss_detection") => "rack".into(),
            (Stack::Linux, "pacing") => "linux".into(),
            (Stack::Linux, "recovery_rto") => "linux".into(),
            // Linux's Reno grows per segment acknowledged; CUBIC grows the window itself.
            (Stack::Linux, "cwnd_growth") if congestion == Congestion::Reno => "linux".into(),
            (Stack::Linux, "cubic_hystart") if congestion == Congestion::Cubic => true.into(), // tcp_cubic.c hystart = 1
            (Stack::Linux, "min_rto_ms") => 200.0.into(), // TCP_RTO_MIN
            (Stack::Linux, "rto_rule") => "linux".into(),
            (Stack::Linux, "rtt_samples") => "every_ack".into(),
            (Stack::Linux, "tail_loss_probe") => true.into(), // net.ipv4.tcp_early_retrans = 3
            (Stack::Linux, "rto_undo") => true.into(), // tcp_try_undo_loss
            (Stack::Linux, "timestamps") => true.into(), // net.ipv4.tcp_timestamps = 1
            (Stack::Linux, "dsack") => true.into(), // net.ipv4.tcp_dsack = 1
            (Stack::Linux, "recovery_undo") => true.into(), // tcp_try_undo_recovery, tcp_try_undo_dsack
            (Stack::Linux, "frto") => true.into(), // net.ipv4.tcp_frto = 2
            (Stack::Linux, "rack_dsack_reo_wnd") => true.into(), // tcp_rack_update_reo_wnd (no TCP_RACK_STATIC_REO_WND)
            (Stack::Linux, "syn_timeout_restart") => "linux".into(), // tcp_init_transfer, tcp_init_metrics
            (Stack::Linux, "tlp_rto_from_head") => true.into(), // tcp_schedule_loss_probe: tcp_rto_delta_us
            (Stack::Linux, "sack_rearms_rto") => true.into(), // tcp_clean_rtx_queue: FLAG_SET_XMIT_TIMER
            // ns-2 2.35, tcl/lib/ns-default.tcl and tcp/*.cc (docs/tcp.md has each line).
            (Stack::Ns2, "recovery") => "newreno".into(),
            (Stack::Ns2, "initial_window_pkts") => 2.into(), // windowInit_
            (Stack::Ns2, "ssthresh_from") => "ns2".into(),
            (Stack::Ns2, "fast_recovery") => "ns2".into(),
            (Stack::Ns2, "cwnd_growth") if congestion == Congestion::Reno => "ns2".into(),
            (Stack::Ns2, "min_rto_ms") => 200.0.into(), // minrto_
            (Stack::Ns2, "initial_rto_ms") => 3000.0.into(), // rtxcur_init_
            (Stack::Ns2, "clock_granularity_ms") => 10.0.into(), // tcpTick_
            (Stack::Ns2, "rto_rule") => "ns2".into(),
            (Stack::Ns2, "ack_rule") => "ns2".into(), // tcp-sink.cc:429 (DelAckSink::recv)
            (Stack::Ns2, "timestamps") => false.into(), // timestamps_
            (Stack::Ns2, "overhead_max_ms") => 0.0.into(), // overhead_
            // TCPSink ACKs every packet; TCPSink/DelAck's interval_ is 100 ms.
            (Stack::Ns2, "delayed_ack") => false.into(),
            (Stack::Ns2, "delayed_ack_ms") => 100.0.into(),
            _ => return None,
        };
        Some(v)
    }

    /// The ns2 stack's `rwnd_bytes`: `window_` packets of the table's MSS (its packet size
    /// less the 40 header bytes, the stack having no timestamps).
    fn ns2_rwnd(table: &Map<String, Value>) -> Option<Value> {
        let packet = match table.get("packet_size_bytes") {
            Some(v) => v.as_u64()?,
            None => d_packet_size() as u64,
        };
        let header = if table.get("timestamps").and_then(Value::as_bool).unwrap_or(false) {
            (HEADER_BYTES + TIMESTAMP_OPTION_BYTES) as u64
        } else {
            HEADER_BYTES as u64
        };
        Some((NS2_WINDOW_PKTS * packet.checked_sub(header)?).into())
    }

    /// `value`, for a table that `held` describes: Linux's F-RTO and D-SACK reordering window
    /// are RACK's here, the head's cap is RACK's probes', and the SACKs' re-arm needs RACK
    /// and an RTT sample on every ACK, so each keeps its default in a table that lacks what
    /// it needs (e.g. `loss_detection = "dupthresh"`).
    fn value_with(self, key: &str, congestion: Congestion, held: Held) -> Option<Value> {
        match (self, key) {
            (Stack::Linux, "frto" | "rack_dsack_reo_wnd") if !held.rack => None,
            (Stack::Linux, "tlp_rto_from_head") if !(held.rack && held.tail_loss_probe) => None,
            (Stack::Linux, "sack_rearms_rto") if !(held.rack && held.every_ack_rtt) => None,
            _ => self.value(key, congestion),
        }
    }

    /// Fills the knobs `table` leaves out with the values of the stack it names; a stack
    /// name that is not one is left for deserialization to report.
    pub(crate) fn fill_defaults(table: &mut Map<String, Value>) {
        let Some(stack) = table.get("stack").and_then(|v| Stack::deserialize(v).ok()) else { return };
        let congestion = match table.get("congestion") {
            Some(v) => match Congestion::deserialize(v) {
                Ok(c) => c,
                Err(_) => return, // reported with its field when the table is read
            },
            None => stack.value("congestion", Congestion::Reno)
                .map_or(Congestion::Reno, |v| Congestion::deserialize(&v).expect("a stack's congestion is valid")),
        };
        let ns2_knobs = if stack == Stack::Ns2 { NS2_STACK_KNOBS } else { &[] };
        for &key in STACK_KNOBS.iter().chain(ns2_knobs) {
            if !table.contains_key(key) {
                let v = match (stack, key) {
                    (Stack::Ns2, "rwnd_bytes") => Stack::ns2_rwnd(table),
                    // The knobs others depend on come before them in STACK_KNOBS.
                    _ => stack.value_with(key, congestion, Held::of_table(table)),
                };
                if let Some(v) = v {
                    table.insert(key.to_string(), v);
                }
            }
        }
    }
}

impl TcpConfig {
    /// `[tcp]` as a scenario's canonical JSON holds it (its id hashes it): every knob, except
    /// `ADDED_KNOBS` at their RFC defaults where the stack agrees, and `stack` when it is `"rfc"`.
    pub(crate) fn serialize_canonical<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(mut table) = serde_json::to_value(self).map_err(S::Error::custom)? else {
            unreachable!("[tcp] serializes as a table")
        };
        let Value::Object(defaults) = serde_json::to_value(TcpConfig::default()).map_err(S::Error::custom)? else {
            unreachable!("[tcp] serializes as a table")
        };
        if self.stack == Stack::Rfc {
            table.remove("stack");
        }
        let held = Held::of(self);
        for key in ADDED_KNOBS {
            // Left out only where reading it back gives it again: at the RFC default, which
            // is also this stack's value.
            let stack_value = self.stack.value_with(key, self.congestion, held).or_else(|| defaults.get(*key).cloned());
            if table.get(*key) == defaults.get(*key) && table.get(*key) == stack_value.as_ref() {
                table.remove(*key);
            }
        }
        table.serialize(s)
    }

    /// `[tcp]` with a group's `[flows.tcp]` keys over it. A group that names a `stack` takes
    /// that stack's value (or the RFC default) for every knob a stack decides and it does not
    /// set itself, whatever the scenario's `[tcp]` says; its other keys come from `[tcp]`. A
    /// group that names only a `congestion` takes the stack's value for the knobs the stack
    /// sets by congestion control, where `[tcp]` left them at the stack's.
    pub(crate) fn merged_with(&self, overrides: &Map<String, Value>) -> Map<String, Value> {
        let Value::Object(mut merged) = serde_json::to_value(self).expect("[tcp] serializes") else {
            unreachable!("[tcp] serializes as a table")
        };
        if let Some(stack) = overrides.get("stack") {
            let ns2 = self.stack == Stack::Ns2 || Stack::deserialize(stack).ok() == Some(Stack::Ns2);
            merged.retain(|key, _| {
                !STACK_KNOBS.contains(&key.as_str()) && !(ns2 && NS2_STACK_KNOBS.contains(&key.as_str()))
            });
        } else if let Some(congestion) = overrides.get("congestion").and_then(|c| Congestion::deserialize(c).ok()) {
            // A knob the stack sets by congestion control (Linux's `cubic_hystart` for CUBIC,
            // its `cwnd_growth` for Reno), where `[tcp]` left it as the stack has it for its own
            // congestion control: the group's takes the stack's value for the group's.
            let Value::Object(defaults) = serde_json::to_value(TcpConfig::default()).expect("[tcp] serializes") else {
                unreachable!("[tcp] serializes as a table")
            };
            let held = Held::of(self);
            let stack_value = |key: &str, c| self.stack.value_with(key, c, held).or_else(|| defaults.get(key).cloned());
            merged.retain(|key, v| {
                let ours = stack_value(key, self.congestion);
                !(STACK_KNOBS.contains(&key.as_str()) && ours.as_ref() == Some(v) && ours != stack_value(key, congestion))
            });
        }
        merged.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        Stack::fill_defaults(&mut merged);
        merged
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// RFC 5681 fast retransmit / fast recovery: one hole per recovery episode.
    Reno,
    /// RFC 6582: partial ACKs retransmit the next hole, one per RTT.
    Newreno,
    /// RFC 6675 SACK-based loss recovery.
    Sack,
}

/// The congestion controller: how the window grows in congestion avoidance and how far
/// a congestion event lowers it (slow start and loss recovery are shared).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    /// RFC 5681: one segment per RTT, halved on a loss.
    Reno,
    /// RFC 9438: cubic growth in time since the last loss, ×0.7 on a loss (Linux's default).
    Cubic,
    /// Linux's BBR v1 (net/ipv4/tcp_bbr.c): paces at its estimate of the bottleneck rate and
    /// keeps about twice its bandwidth-delay product in flight, losses or not (`cc/bbr.rs`).
    /// Needs Linux's pacing and SACK recovery with RACK (`stack = "linux"` has them).
    Bbr,
}

/// How the window grows on an ACK of new data outside loss recovery (Reno congestion control).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CwndGrowth {
    /// RFC 5681 (2), (3): slow start by min(bytes acked, SMSS) per ACK, congestion avoidance
    /// by SMSS²/cwnd per ACK; with delayed ACKs half as fast per segment as without.
    PerAck,
    /// RFC 3465 (appropriate byte counting): slow start by min(bytes acked, L·SMSS) per ACK,
    /// congestion avoidance by one SMSS per cwnd of bytes acknowledged.
    ByteCounting,
    /// Linux's Reno (`tcp_slow_start`, `tcp_cong_avoid_ai`): slow start by every byte acked up
    /// to ssthresh, the rest in congestion avoidance, one SMSS per cwnd of bytes acked.
    Linux,
    /// ns-2's `opencwnd` (`windowOption_` 1): slow start by one segment per new ACK whatever
    /// it acknowledges, congestion avoidance by 1/cwnd segments per new ACK, kept fractional.
    Ns2,
}

/// How much SACK fast recovery sends per ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryPacing {
    /// RFC 6675: cwnd = ssthresh at once, then whatever `cwnd - pipe` allows.
    Rfc6675,
    /// RFC 6937 Proportional Rate Reduction as Linux's `tcp_cwnd_reduction`: while pipe >
    /// ssthresh, sends ssthresh/prior cwnd of what is delivered; below, rebuilds towards
    /// ssthresh by what is delivered, one segment more per ACK (the slow-start reduction
    /// bound) unless, with RACK, the ACK did not advance snd_una or marked a loss (the
    /// conservative bound); the fast retransmit always goes out.
    Prr,
}

/// How the SACK sender decides a segment is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LossDetection {
    /// RFC 6675: DupThresh SACKed segments (or bytes) above a hole.
    Dupthresh,
    /// RFC 8985 RACK, as Linux (always on since 6.17): a segment sent before one that was
    /// delivered is lost once an RTT plus a reordering window has passed since its send.
    Rack,
}

/// When the data sender's segments leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pacing {
    /// As soon as the window allows (ACK clocking).
    None,
    /// Linux's TCP pacing (the fq qdisc or TCP's internal pacing): each data segment waits
    /// its length at 200% (cwnd < ssthresh/2) or 120% of max(cwnd, flight) per smoothed RTT
    /// after the one before, from the 10th data segment on (docs/tcp.md).
    Linux,
}

/// When a receiver acknowledges in-order data at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AckRule {
    /// RFC 5681 §4.2: every second full segment, out-of-order data, hole fills; else after
    /// `delayed_ack_ms`.
    Rfc5681,
    /// As `rfc5681`, plus Linux's quick-ACK mode (`tcp_event_data_recv`, `tcp_incr_quickack`):
    /// the first data segment, one arriving more than the receiver's RTO after the previous
    /// one, and an old (duplicate) segment each make the next min(16, rwnd / 2 MSS) ACKs
    /// immediate.
    Linux,
    /// ns-2 2.35's `TCPSink/DelAck` (tcp-sink.cc:429): as `rfc5681`, but a duplicate of the
    /// highest in-order segment, arriving with no ACK held and nothing out of order, is held
    /// like new data (its `seqno == acker_->Seqno()` test), not acknowledged at once.
    Ns2,
    /// ns-2 2.35's `Agent/TCP/FullTcp` receiver (`segsperack_` 1, `spa_thresh_` 0, its
    /// defaults, ns-default.tcl:1216–1217): in-order data is acknowledged at once when a full
    /// segment's bytes are unacknowledged (`need_send`, tcp-full.cc:1439–1447), else at the
    /// next multiple of `delayed_ack_ms` on the simulation clock (tcp-full.cc:1566–1570,
    /// 2659–2665); out-of-order data, hole fills, duplicates and a FIN at once
    /// (`TF_ACKNOW`, tcp-full.cc:2423, 2449, 1982).
    #[serde(rename = "ns2_full")]
    Ns2Full,
}

/// The retransmission timeout's bound on SRTT and RTTVAR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoRule {
    /// RFC 6298 (2.3): max(min_rto, SRTT + max(G, 4·RTTVAR)).
    Rfc6298,
    /// Linux's `tcp_rtt_estimator` and `tcp_set_rto`: SRTT + a variance term that is at least
    /// min_rto and the largest deviation of the last RTT, decaying once per RTT (docs/tcp.md).
    Linux,
    /// ns-2 2.35's `rtt_update` and `rtt_timeout` (tcp.cc): samples counted in whole ticks of
    /// `clock_granularity_ms` (`tcpTick_`), SRTT and RTTVAR in fixed point, RTO = SRTT +
    /// 4·RTTVAR truncated to a tick, at least min_rto and 2 ticks (`rtt_ns2.rs`).
    Ns2,
}

/// How data starts after the handshake's SYN (or SYN-ACK) timer expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SynTimeoutRestart {
    /// RFC 5681 §3.1 and RFC 6298 (5.7): one segment and a 3 s RTO after any expiry, even
    /// when the handshake gave an RTT sample.
    Rfc6298,
    /// Linux's `tcp_init_transfer`: one segment only after more than one SYN (or SYN-ACK)
    /// retransmission, one of them a timer's; `tcp_init_metrics`: the 3 s RTO only when the
    /// handshake gave no RTT sample (with timestamps it always gives one).
    Linux,
}

/// Which ACKs give the RTT estimator a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RttSamples {
    /// RFC 6298 (as ns-2 and ns-3): one segment timed at a time, never a retransmitted one
    /// (Karn); with timestamps, every ACK's echo (RFC 7323).
    Timed,
    /// Linux's `tcp_clean_rtx_queue`: every ACK that newly acknowledges (or SACKs) a segment
    /// never retransmitted, from the oldest such; timestamps only where that gives none.
    EveryAck,
}

/// The window a multiplicative decrease starts from: Reno halves it, CUBIC keeps β of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SsthreshFrom {
    /// RFC 5681 (3), (4) and RFC 9438 §4.6: ssthresh = FlightSize / 2, or β·FlightSize.
    FlightSize,
    /// Linux's `tcp_reno_ssthresh` and `cubictcp_recalc_ssthresh`: cwnd / 2, or β·cwnd.
    Cwnd,
    /// ns-3.44's `BytesInFlight()`, which `EnterRecovery` and `ReTxTimeout` pass to
    /// `GetSsThresh`: with SACK, RFC 6675's pipe (SACKed and lost segments left out);
    /// without, FlightSize less a segment per duplicate ACK (ns-3's emulated SACK).
    BytesInFlight,
    /// ns-2's `slowdown` (tcp.cc): min(cwnd, rwnd) / 2 rounded down to whole segments.
    Ns2,
}

/// What restarts the retransmission timer during SACK fast recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryRto {
    /// RFC 6298 (5.3): every ACK of new data.
    Rfc6298,
    /// A diagnostic: only the first partial ACK of an episode, as ns-3.44 does in SACK
    /// recovery (RFC 6582's "Impatient" variant, which smallpipe's NewReno uses anyway).
    FirstPartial,
    /// As `rfc6298`, and also every retransmission of the segment at `snd_una` (Linux
    /// `tcp_xmit_retransmit_queue`), so a hole retransmitted late in a recovery gets a full RTO.
    Linux,
}

/// How duplicate ACKs are counted toward fast retransmit (SACK recovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DupackRule {
    /// RFC 6675 §5: a cumulative ACK resets DupAcks, then counts if it SACKs new data.
    Rfc,
    /// A diagnostic, not a recommended setting: ns-3.44 `TcpSocketBase`'s count (docs/tcp.md).
    Ns3,
}

/// What an ACK that advances `snd_una` and SACKs new data does outside recovery (SACK only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DisorderAck {
    /// RFC 6298 (5.3) restarts the timer and RFC 5681 grows cwnd, as on any ACK of new data.
    Rfc,
    /// A diagnostic: no timer restart, as ns-3.44 in `CA_DISORDER` (it skips `NewAck`).
    Ns3Timer,
    /// A diagnostic: no timer restart and no window growth, ns-3.44's whole `CA_DISORDER`
    /// branch of `ProcessAck` (neither `NewAck` nor `IncreaseWindow`).
    Ns3,
}

/// What a partial ACK sends in SACK recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartialAck {
    /// RFC 6675 §5 (B), (C): update the scoreboard and pipe, send what cwnd − pipe allows.
    Rfc6675,
    /// A diagnostic: first, unless the new head was retransmitted, one segment by NextSeg
    /// rules 1–2 (else the head) outside cwnd, as ns-3.44's `ProcessAck` (`DoRetransmit`).
    Ns3,
}

/// What the pipe of SACK recovery counts (RFC 6675 SetPipe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryPipe {
    /// RFC 6675 §4 SetPipe: SACKed octets are never in the pipe.
    Rfc6675,
    /// A diagnostic: a retransmitted segment stays in the pipe once SACKed, until the
    /// cumulative ACK passes it, as ns-3.44's `TcpTxBuffer::BytesInFlight` counts.
    Ns3,
}

/// What the ACK that ends fast recovery does to cwnd after setting it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryExit {
    /// RFC 5681 §3.2 step 6, RFC 6582 §3.2 step 3, RFC 6675 §5.1: it sets cwnd, nothing more.
    #[default]
    Rfc,
    /// ns-3.44's `ProcessAck`: after cwnd = ssthresh, the window grows for the segments
    /// that ACK covers, as on any ACK outside recovery (`IncreaseWindow`).
    Ns3,
}

/// Fast recovery as the RFCs or as ns-2: when it starts, its window, and the window it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FastRecoveryRule {
    /// RFC 5681 §3.2 (Reno: any third duplicate ACK; cwnd = ssthresh on the next new ACK)
    /// and RFC 6582 §3.2 (NewReno: past `recover` or by the ACK heuristic of §4.2; cwnd =
    /// min(ssthresh, FlightSize + SMSS) at the full ACK, option 1).
    #[default]
    Rfc,
    /// ns-2 2.35 (`recovery/ns2.rs`): a new episode only once `snd_una` is past `recover`
    /// (the last fast retransmit's or timeout's highest sent), Reno too; the window halved
    /// without rounding, inflation counted apart, and on the exit the halved window less
    /// what partial ACKs took, grown by that ACK; no FlightSize bound, so the exit may burst.
    /// With `recovery = "sack"`, ns-2's `Agent/TCP/Sack1` and its sink's SACK blocks
    /// (`recovery/ns2_sack1.rs`).
    Ns2,
    /// ns-2 2.35's two-way `Agent/TCP/FullTcp` sender (`recovery/ns2_full.rs`, Reno only):
    /// the window `ssthresh_ + dupacks_` in whole packets, left at `ssthresh_` on any new
    /// ACK; a further fast retransmit allowed right after one (`last_cwnd_action_`); no
    /// limited transmit; duplicate ACKs past the threshold inflate cwnd after a timeout too;
    /// the handshake's ACK sent alone before the first data.
    #[serde(rename = "ns2_full")]
    Ns2Full,
}

/// Whether the fast retransmit restarts the retransmission timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FastRetransmitRto {
    /// Restart it (the default). RFC 6675 §6 allows re-arming the timer on each
    /// retransmission sent during recovery; this re-arms it on the first only.
    Restart,
    /// Leave it running from the last ACK of new data: RFC 6298 (5.1) starts the timer on
    /// a send only when it is not running, and only (5.3) an ACK of new data restarts it;
    /// ns-3.44's `EnterRecovery` does the same (docs/validation.md, diagnosis 3).
    Keep,
}

/// Every TCP knob a paper varies. Defaults follow the RFCs (noted per field) under
/// `stack = "rfc"`; another stack changes the defaults of the knobs it decides (`Stack`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    /// Whose TCP the knobs default to (`Stack`): a knob set explicitly still wins.
    #[serde(default)]
    pub stack: Stack,
    /// A full data segment on the wire, IP and TCP headers (and options) included.
    #[serde(default = "d_packet_size")]
    pub packet_size_bytes: u32,
    #[serde(default = "d_recovery")]
    pub recovery: Recovery,
    #[serde(default = "d_congestion")]
    pub congestion: Congestion,
    /// RFC 9438 §4.7 fast convergence (CUBIC only); the RFC says to turn it off for a
    /// single flow without other traffic.
    #[serde(default = "d_true")]
    pub cubic_fast_convergence: bool,
    /// What a loss or timeout's decrease starts from, Reno's or CUBIC's: the RFCs' flight
    /// size or Linux's cwnd (they differ when the sender is application-limited or a
    /// scheduler holds its packets back).
    #[serde(default = "d_ssthresh_from")]
    pub ssthresh_from: SsthreshFrom,
    /// HyStart++ (RFC 9406) in the initial slow start, Reno or CUBIC: leaves it on a rise
    /// in delay. Off: RFC 5681 slow start until ssthresh or a loss.
    #[serde(default)]
    pub hystart: bool,
    /// Initial window in segments (RFC 3390: 4 for small MSS; RFC 6928: 10).
    #[serde(default = "d_iw")]
    pub initial_window_pkts: u32,
    /// Delayed ACKs (RFC 5681 §4.2): ACK every second full segment or after the timeout.
    #[serde(default = "d_true")]
    pub delayed_ack: bool,
    #[serde(default = "d_delack_ms")]
    pub delayed_ack_ms: f64,
    /// ACK the first data segment after the handshake at once, then delay as usual (ns-3's
    /// `TcpSocketBase` does; RFC 5681 §4.2 allows either). Off: the first ACK covers two
    /// full segments.
    #[serde(default)]
    pub ack_first_data: bool,
    /// When the receiver acknowledges at once besides RFC 5681's cases: never, or also in
    /// Linux's quick-ACK mode (after the first data and after a silence longer than its RTO).
    #[serde(default = "d_ack_rule")]
    pub ack_rule: AckRule,
    /// Limited transmit (RFC 3042).
    #[serde(default = "d_true")]
    pub limited_transmit: bool,
    /// Duplicate ACKs that trigger fast retransmit.
    #[serde(default = "d_dupthresh")]
    pub dupack_threshold: u32,
    /// Duplicate-ACK accounting: RFC 6675's, or ns-3's (a diagnostic; SACK recovery only).
    #[serde(default = "d_dupack_rule")]
    pub dupack_rule: DupackRule,
    /// How much SACK recovery sends per ACK: RFC 6675's, or RFC 6937's PRR (Linux's).
    #[serde(default = "d_recovery_pacing")]
    pub recovery_pacing: RecoveryPacing,
    /// How SACK recovery finds lost segments: RFC 6675's DupThresh, or RFC 8985's RACK (Linux's).
    /// Left out of the canonical JSON at its RFC default (`ADDED_KNOBS`).
    #[serde(default = "d_loss_detection")]
    pub loss_detection: LossDetection,
    /// When data segments leave: at once, or paced as Linux paces them. Left out of the
    /// canonical JSON at its RFC default (`ADDED_KNOBS`).
    #[serde(default = "d_pacing")]
    pub pacing: Pacing,
    /// What restarts the timer in SACK recovery: every new ACK, or (ns-3, a diagnostic) the first partial ACK only.
    #[serde(default = "d_recovery_rto")]
    pub recovery_rto: RecoveryRto,
    /// An ACK that advances `snd_una` and SACKs new data outside recovery: RFC 6298/5681's
    /// restart and growth, or (ns-3, a diagnostic) neither or only the growth.
    #[serde(default = "d_disorder_ack")]
    pub disorder_ack: DisorderAck,
    /// A partial ACK in SACK recovery: RFC 6675's, or (ns-3, a diagnostic) one more segment outside cwnd first.
    #[serde(default = "d_recovery_partial_ack")]
    pub recovery_partial_ack: PartialAck,
    /// The pipe of SACK recovery: RFC 6675's, or (ns-3, a diagnostic) with SACKed retransmissions in it.
    #[serde(default = "d_recovery_pipe")]
    pub recovery_pipe: RecoveryPipe,
    /// Reno/NewReno fast recovery's entry, window and exit: the RFCs', or ns-2's. Left out of the
    /// canonical JSON at its default, so ids from before it stay.
    #[serde(default)]
    pub fast_recovery: FastRecoveryRule,
    /// Whether the fast retransmit restarts the timer (smallpipe's default) or leaves it running (RFC 6298 5.1, ns-3).
    #[serde(default = "d_fast_retransmit_rto")]
    pub fast_retransmit_rto: FastRetransmitRto,
    /// What the ACK that ends fast recovery does after setting cwnd (`RecoveryExit`).
    /// Left out of the canonical JSON at its RFC default (`ADDED_KNOBS`).
    #[serde(default)]
    pub recovery_exit: RecoveryExit,
    /// Window growth per ACK of new data (Reno only; CUBIC and HyStart++ have their own).
    #[serde(default = "d_cwnd_growth")]
    pub cwnd_growth: CwndGrowth,
    /// RFC 3465's L for `cwnd_growth = "byte_counting"`: the most one ACK grows the window
    /// in slow start, in segments (the RFC allows at most 2).
    #[serde(default = "d_abc_limit")]
    pub abc_limit_pkts: u32,
    /// Receiver window, bytes.
    #[serde(default = "d_rwnd")]
    pub rwnd_bytes: u64,
    /// RFC 6298 (2.4): 1 s; Linux uses 200 ms.
    #[serde(default = "d_min_rto")]
    pub min_rto_ms: f64,
    /// How `min_rto_ms` bounds the RTO: RFC 6298's floor, or Linux's floor on the variance term.
    #[serde(default = "d_rto_rule")]
    pub rto_rule: RtoRule,
    /// Which ACKs time the RTT: one segment per RTT (RFC 6298), or every ACK (Linux).
    /// Left out of the canonical JSON at its RFC default (`ADDED_KNOBS`).
    #[serde(default = "d_rtt_samples")]
    pub rtt_samples: RttSamples,
    /// The window and RTO data starts with after a handshake timeout (RFC 6298 (5.7), or
    /// Linux's narrower rule). Left out of the canonical JSON at its RFC default.
    #[serde(default = "d_syn_timeout_restart")]
    pub syn_timeout_restart: SynTimeoutRestart,
    #[serde(default = "d_max_rto")]
    pub max_rto_ms: f64,
    /// RTO before any RTT sample (RFC 6298: 1 s; RFC 2988: 3 s).
    #[serde(default = "d_initial_rto")]
    pub initial_rto_ms: f64,
    /// SYN retransmissions before the connection gives up.
    #[serde(default = "d_syn_retries")]
    pub syn_retries: u32,
    /// Timestamps option (RFC 7323): RTT samples from every ACK, retransmissions included.
    #[serde(default = "d_true")]
    pub timestamps: bool,
    /// Clock granularity G of RFC 6298, ms.
    #[serde(default = "d_granularity")]
    pub clock_granularity_ms: f64,
    /// RFC 5681 §4.1: restart from the initial window after an idle period of one RTO.
    #[serde(default = "d_true")]
    pub slow_start_after_idle: bool,
    /// Senders' random per-packet processing delay, uniform in [0, this], ms (ns-2's
    /// `overhead_`), which breaks phase effects. Unset: one bottleneck transmission time of
    /// a full-size packet. 0 turns it off.
    #[serde(default)]
    pub overhead_max_ms: Option<f64>,
    /// Linux CUBIC's own HyStart (ACK train and delay; `cc/hystart_linux.rs`). CUBIC only,
    /// not with `hystart`. Left out of the canonical JSON at its RFC default (`ADDED_KNOBS`).
    #[serde(default)]
    pub cubic_hystart: bool,
    /// Linux's undo of a spurious timeout by timestamps (RFC 3522 Eifel detection;
    /// `recovery/undo.rs`). Needs `timestamps`. Left out of the canonical JSON at its RFC
    /// default (`ADDED_KNOBS`).
    #[serde(default)]
    pub rto_undo: bool,
    /// RFC 8985 §7 tail loss probes as Linux sends them (`tcp_schedule_loss_probe`,
    /// `tcp_send_loss_probe`; `recovery/tlp.rs`). SACK only. Left out of the canonical JSON
    /// at its RFC default (`ADDED_KNOBS`).
    #[serde(default)]
    pub tail_loss_probe: bool,
    /// Linux's cap on a probe scheduled after new data went out (`tcp_write_xmit` →
    /// `tcp_schedule_loss_probe(sk, false)`, `tcp_rto_delta_us`): no later than the RTO
    /// counted from the oldest outstanding segment's last transmission, not from the last
    /// ACK. Needs `tail_loss_probe` and `loss_detection = "rack"`; the linux stack's. Left out
    /// of the canonical JSON at its default where the stack agrees (`ADDED_KNOBS`).
    #[serde(default)]
    pub tlp_rto_from_head: bool,
    /// Linux re-arms the retransmission timer (or the probe) from now on an ACK that only
    /// SACKs, when its RTT sample comes from a segment sent before the head's last
    /// (re)transmission (`tcp_clean_rtx_queue`'s `sack_rtt_us > ... tcp_rtx_queue_head`,
    /// then `tcp_set_xmit_timer`): in recovery the SACKs of older segments keep pushing
    /// the RTO out while a retransmitted head is on its way. Needs `loss_detection =
    /// "rack"` and `rtt_samples = "every_ack"`; the linux stack's. Left out of the canonical
    /// JSON at its default where the stack agrees (`ADDED_KNOBS`).
    #[serde(default)]
    pub sack_rearms_rto: bool,
    /// Linux's timer wheel (kernel/time/timer.c): the retransmission, probe, reordering and
    /// delayed-ACK timers count in jiffies of 1/HZ s and fire at their wheel level's
    /// granularity (`timers::wheel_fire_at`), which puts timers of many connections on one
    /// tick. 0: exact timers. A diagnosis knob, not yet a stack's. Left out of the
    /// canonical JSON at its default (`ADDED_KNOBS`).
    #[serde(default)]
    pub timer_wheel_hz: u32,
    /// RFC 2883 D-SACK: the receiver reports a duplicate segment in a first SACK block, and
    /// the sender recognizes it (Linux `tcp_dsack_set`, `tcp_check_dsack`). SACK only. Left
    /// out of the canonical JSON at its RFC default (`ADDED_KNOBS`), as are the three below.
    #[serde(default)]
    pub dsack: bool,
    /// Linux's undo of a fast recovery whose retransmissions were all D-SACKed, or whose
    /// ACKs' timestamps show the originals arrived (`tcp_try_undo_dsack`,
    /// `tcp_try_undo_recovery`; `recovery/undo.rs`). SACK only; needs `dsack` or `timestamps`.
    #[serde(default)]
    pub recovery_undo: bool,
    /// RFC 5682 F-RTO, SACK-enhanced, as Linux's `tcp_frto = 2` (`tcp_enter_loss`,
    /// `tcp_process_loss`; `recovery/undo.rs`). Needs `loss_detection = "rack"`.
    #[serde(default)]
    pub frto: bool,
    /// RACK's reordering window grows by min_RTT/4 per round with a D-SACK (Linux
    /// `tcp_rack_update_reo_wnd`; `recovery/rack.rs`). Needs RACK and `dsack`.
    #[serde(default)]
    pub rack_dsack_reo_wnd: bool,
    /// Linux's `tcp_thin_linear_timeouts`: while fewer than 4 segments are in flight, the
    /// first 6 consecutive RTOs do not double the timer (TCP_THIN_LINEAR_RETRIES).
    #[serde(default)]
    pub thin_linear_timeouts: bool,
    /// Differentiated minRTO (padding/diversity paper, Approach I): the RTO's lower bound is
    /// this instead of `min_rto_ms` while the bytes in flight are at most
    /// `min_rto_prime_fraction` of the window (the window counted as at least 4 segments,
    /// the paper's RFC 3390 minimum). Unset: off.
    #[serde(default)]
    pub min_rto_prime_ms: Option<f64>,
    #[serde(default = "d_min_rto_prime_fraction")]
    pub min_rto_prime_fraction: f64,
    /// Short-term padding (Approach II): after each interactive burst the application writes
    /// this many dummy writes of `padding_dummy_bytes` each, so a lost burst draws duplicate
    /// ACKs. 0: off.
    #[serde(default)]
    pub padding_dummies: u32,
    #[serde(default = "d_padding_dummy_bytes")]
    pub padding_dummy_bytes: u32,
    /// k-copy diversity (Approach III): a new sub-MSS segment that ends the data written so
    /// far goes out this many times when the window has room for the copies; the sender
    /// expects one duplicate ACK per copy and does not count it toward fast retransmit. 1: off.
    #[serde(default = "d_one")]
    pub diversity_copies: u32,
    /// With `diversity_copies`: retransmissions after a timeout are copied too. Off: they
    /// go out once, as the paper's Approach III ("it retransmits the packet only once").
    #[serde(default)]
    pub diversity_copy_retransmissions: bool,
    /// The fully-backlogged misbehaviour (Figure 1): when the application has nothing to
    /// send, the sender fills the window with full-size dummy segments, so real data always
    /// finds a window grown as a bulk flow's. Off: an application-limited sender.
    #[serde(default)]
    pub fully_backlogged: bool,
    /// TCP Smart Framing (TCP-SF, Mellia, Meo and Casetti): while cwnd is under 4 SMSS the
    /// sender cuts data into segments of cwnd/4 bytes, so a window holds 4 segments and one
    /// loss can draw 3 duplicate ACKs; from 4 SMSS on, full segments. Off: full segments.
    #[serde(default)]
    pub smart_framing: bool,
}

fn d_true() -> bool { true }
fn d_packet_size() -> u32 { 1500 }
fn d_recovery() -> Recovery { Recovery::Sack }
fn d_congestion() -> Congestion { Congestion::Reno }
fn d_iw() -> u32 { 4 }
fn d_min_rto_prime_fraction() -> f64 { 0.25 }
fn d_padding_dummy_bytes() -> u32 { 20 }
fn d_one() -> u32 { 1 }
fn d_delack_ms() -> f64 { 200.0 }
fn d_dupthresh() -> u32 { 3 }
fn d_dupack_rule() -> DupackRule { DupackRule::Rfc }
fn d_recovery_rto() -> RecoveryRto { RecoveryRto::Rfc6298 }
fn d_disorder_ack() -> DisorderAck { DisorderAck::Rfc }
fn d_recovery_partial_ack() -> PartialAck { PartialAck::Rfc6675 }
fn d_recovery_pipe() -> RecoveryPipe { RecoveryPipe::Rfc6675 }
fn d_fast_retransmit_rto() -> FastRetransmitRto { FastRetransmitRto::Restart }
fn d_rto_rule() -> RtoRule { RtoRule::Rfc6298 }
fn d_rtt_samples() -> RttSamples { RttSamples::Timed }
fn d_syn_timeout_restart() -> SynTimeoutRestart { SynTimeoutRestart::Rfc6298 }
fn d_ssthresh_from() -> SsthreshFrom { SsthreshFrom::FlightSize }
fn d_ack_rule() -> AckRule { AckRule::Rfc5681 }
fn d_recovery_pacing() -> RecoveryPacing { RecoveryPacing::Rfc6675 }
fn d_loss_detection() -> LossDetection { LossDetection::Dupthresh }
fn d_pacing() -> Pacing { Pacing::None }
fn d_cwnd_growth() -> CwndGrowth { CwndGrowth::PerAck }
fn d_abc_limit() -> u32 { 2 }
fn d_rwnd() -> u64 { 65_535 }
fn d_min_rto() -> f64 { 1000.0 }
fn d_max_rto() -> f64 { 60_000.0 }
fn d_initial_rto() -> f64 { 1000.0 }
fn d_syn_retries() -> u32 { 6 }
fn d_granularity() -> f64 { 1.0 }

impl Default for TcpConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults deserialize")
    }
}

/// IP + TCP headers without options.
pub const HEADER_BYTES: u32 = 40;
/// The timestamps option, padded (RFC 7323).
pub const TIMESTAMP_OPTION_BYTES: u32 = 12;

impl TcpConfig {
    pub fn header_bytes(&self) -> u32 {
        HEADER_BYTES + if self.timestamps { TIMESTAMP_OPTION_BYTES } else { 0 }
    }
    pub fn mss_bytes(&self) -> u32 {
        self.packet_size_bytes - self.header_bytes()
    }
}

/// The knobs ns-2's Sack1 (`fast_recovery = "ns2"` with `recovery = "sack"`,
/// `recovery/ns2_sack1.rs`) leaves at their RFC defaults: it counts duplicate ACKs, keeps its
/// pipe, restarts the timer and sends by its own rules, and sends whole segments only.
const SACK1_RFC_KNOBS: &[&str] = &[
    "dupack_rule", "recovery_pacing", "loss_detection", "recovery_rto", "disorder_ack", "recovery_partial_ack",
    "recovery_pipe", "fast_retransmit_rto", "recovery_exit", "tail_loss_probe", "rto_undo", "diversity_copies",
    "fully_backlogged", "smart_framing",
];

impl TcpConfig {
    /// Each of `SACK1_RFC_KNOBS` at its RFC default, or an error naming the first that is not.
    fn check_sack1_knobs(&self) -> Result<(), ConfigError> {
        let (Ok(Value::Object(mine)), Ok(Value::Object(rfc))) = (serde_json::to_value(self), serde_json::to_value(TcpConfig::default()))
        else {
            unreachable!("[tcp] serializes as a table")
        };
        let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        for &key in SACK1_RFC_KNOBS {
            let (value, default) = (&mine[key], &rfc[key]);
            check(value == default, key, text(value), &format!(
                "{} with ns-2's Sack1 (fast_recovery = \"ns2\" and recovery = \"sack\", as stack = \"ns2\" sets them); \
                 fast_recovery = \"rfc\" gives RFC 6675 recovery, which takes it", text(default)))?;
        }
        Ok(())
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let hdr = self.header_bytes();
        check(self.packet_size_bytes > hdr && self.packet_size_bytes <= 65_535, "packet_size_bytes",
            self.packet_size_bytes, &format!("more than the {hdr} header bytes and at most 65535"))?;
        check((1..=100).contains(&self.initial_window_pkts), "initial_window_pkts",
            self.initial_window_pkts, "1 to 100 segments")?;
        check(self.delayed_ack_ms.is_finite() && self.delayed_ack_ms > 0.0 && self.delayed_ack_ms <= 500.0,
            "delayed_ack_ms", self.delayed_ack_ms, "(0, 500] ms (RFC 5681 §4.2)")?;
        check(self.ack_rule != AckRule::Ns2Full || self.delayed_ack, "ack_rule", "ns2_full",
            "\"rfc5681\", \"linux\" or \"ns2\", or \"ns2_full\" only with delayed_ack = true (FullTcp's \
             delayed-ACK timer, interval_ = delayed_ack_ms, is what acknowledges a short segment)")?;
        check((1..=100).contains(&self.dupack_threshold), "dupack_threshold", self.dupack_threshold, "1 to 100")?;
        check(self.dupack_rule == DupackRule::Rfc || self.recovery == Recovery::Sack, "dupack_rule", "ns3",
            "\"rfc\", or \"ns3\" only with recovery = \"sack\" (it models ns-3's SACK-mode count)")?;
        check(self.recovery_pacing == RecoveryPacing::Rfc6675 || self.recovery == Recovery::Sack, "recovery_pacing",
            "prr", "\"rfc6675\", or \"prr\" only with recovery = \"sack\"")?;
        check(self.loss_detection == LossDetection::Dupthresh || self.recovery == Recovery::Sack, "loss_detection",
            "rack", "\"dupthresh\", or \"rack\" only with recovery = \"sack\" (RACK needs to know what was SACKed)")?;
        check(self.loss_detection == LossDetection::Dupthresh
            || (self.recovery_pipe == RecoveryPipe::Rfc6675 && self.recovery_partial_ack == PartialAck::Rfc6675),
            "loss_detection", "rack", "\"dupthresh\" with ns-3's recovery_pipe or recovery_partial_ack (RACK keeps Linux's own pipe)")?;
        check(self.recovery_rto == RecoveryRto::Rfc6298 || self.recovery == Recovery::Sack, "recovery_rto",
            if self.recovery_rto == RecoveryRto::Linux { "linux" } else { "first_partial" },
            "\"rfc6298\", or another rule only with recovery = \"sack\"")?;
        check(self.disorder_ack == DisorderAck::Rfc || self.recovery == Recovery::Sack, "disorder_ack",
            if self.disorder_ack == DisorderAck::Ns3 { "ns3" } else { "ns3_timer" },
            "\"rfc\", or an ns-3 rule only with recovery = \"sack\" (it models ns-3's SACK-mode CA_DISORDER)")?;
        check(self.recovery_partial_ack == PartialAck::Rfc6675 || self.recovery == Recovery::Sack,
            "recovery_partial_ack", "ns3", "\"rfc6675\", or \"ns3\" only with recovery = \"sack\" (NewReno retransmits anyway)")?;
        if self.fast_recovery == FastRecoveryRule::Ns2 && self.recovery == Recovery::Sack {
            self.check_sack1_knobs()?;
        }
        check(self.fast_recovery != FastRecoveryRule::Ns2Full || self.recovery == Recovery::Reno, "fast_recovery",
            "ns2_full", "\"rfc\" or \"ns2\", or \"ns2_full\" only with recovery = \"reno\" (FullTcp's sender is Reno)")?;
        check(self.recovery_pipe == RecoveryPipe::Rfc6675 || self.recovery == Recovery::Sack, "recovery_pipe", "ns3",
            "\"rfc6675\", or \"ns3\" only with recovery = \"sack\" (only SACK recovery sends by the pipe)")?;
        check(!self.cubic_hystart || (self.congestion == Congestion::Cubic && !self.hystart), "cubic_hystart", true,
            "false, or true only with congestion = \"cubic\" and hystart = false (RFC 9406's HyStart++)")?;
        check(!self.rto_undo || self.timestamps, "rto_undo", true,
            "false, or true only with timestamps = true (the undo reads the echoed timestamp)")?;
        check(!self.tail_loss_probe || self.recovery == Recovery::Sack, "tail_loss_probe", true,
            "false, or true only with recovery = \"sack\" (Linux probes SACK connections only)")?;
        check(!self.dsack || self.recovery == Recovery::Sack, "dsack", true,
            "false, or true only with recovery = \"sack\" (a D-SACK is a SACK block)")?;
        check(!self.recovery_undo || (self.recovery == Recovery::Sack && (self.dsack || self.timestamps)),
            "recovery_undo", true,
            "false, or true only with recovery = \"sack\" and dsack = true or timestamps = true (the undo reads one of them)")?;
        check(!self.frto || self.loss_detection == LossDetection::Rack, "frto", true,
            "false, or true only with loss_detection = \"rack\" (F-RTO counts in flight as Linux does once a timeout marked everything lost)")?;
        check(!self.tlp_rto_from_head || (self.tail_loss_probe && self.loss_detection == LossDetection::Rack),
            "tlp_rto_from_head", true, "false, or true only with tail_loss_probe = true and loss_detection = \"rack\"")?;
        check(!self.sack_rearms_rto || (self.loss_detection == LossDetection::Rack && self.rtt_samples == RttSamples::EveryAck),
            "sack_rearms_rto", true, "false, or true only with loss_detection = \"rack\" and rtt_samples = \"every_ack\"")?;
        check([0, 100, 250, 300, 1000].contains(&self.timer_wheel_hz), "timer_wheel_hz", self.timer_wheel_hz,
            "0 (exact timers) or one of Linux's CONFIG_HZ values 100, 250, 300, 1000")?;
        check(!self.rack_dsack_reo_wnd || (self.loss_detection == LossDetection::Rack && self.dsack),
            "rack_dsack_reo_wnd", true, "false, or true only with loss_detection = \"rack\" and dsack = true")?;
        check(self.cwnd_growth == CwndGrowth::PerAck || (self.congestion == Congestion::Reno && !self.hystart),
            "cwnd_growth", match self.cwnd_growth { CwndGrowth::Linux => "linux", CwndGrowth::Ns2 => "ns2", _ => "byte_counting" },
            "\"per_ack\", or another rule only with congestion = \"reno\" and hystart off (they grow the window themselves)")?;
        check(self.congestion != Congestion::Bbr
            || (self.pacing == Pacing::Linux && self.recovery == Recovery::Sack && self.loss_detection == LossDetection::Rack
                && !self.hystart),
            "congestion", "bbr",
            "\"reno\" or \"cubic\"; \"bbr\" only with pacing = \"linux\", recovery = \"sack\", loss_detection = \"rack\" \
             and hystart = false (stack = \"linux\" sets the first three): BBR paces and reads RACK's losses")?;
        check((1..=100).contains(&self.abc_limit_pkts), "abc_limit_pkts", self.abc_limit_pkts, "1 to 100 segments")?;
        check(self.rwnd_bytes >= self.mss_bytes() as u64 && self.rwnd_bytes <= 1 << 30, "rwnd_bytes",
            self.rwnd_bytes, "at least one MSS and at most 2^30 bytes")?;
        check(self.min_rto_ms.is_finite() && self.min_rto_ms > 0.0, "min_rto_ms", self.min_rto_ms, "a positive number of ms")?;
        check(self.max_rto_ms.is_finite() && self.max_rto_ms >= self.min_rto_ms, "max_rto_ms", self.max_rto_ms,
            "a number of ms >= min_rto_ms")?;
        check(self.initial_rto_ms.is_finite() && self.initial_rto_ms > 0.0, "initial_rto_ms",
            self.initial_rto_ms, "a positive number of ms")?;
        check(self.syn_retries <= 20, "syn_retries", self.syn_retries, "0 to 20")?;
        finite_at_least("clock_granularity_ms", self.clock_granularity_ms, 0.0)?;
        check(self.min_rto_prime_ms.is_none() || self.rto_rule == RtoRule::Rfc6298, "rto_rule", "linux",
            "\"rfc6298\" with min_rto_prime_ms (Linux's variance term carries min_rto_ms in its state)")?;
        if let Some(m) = self.min_rto_prime_ms {
            check(m.is_finite() && m > 0.0 && m <= self.min_rto_ms, "min_rto_prime_ms", m,
                "a positive number of ms at most min_rto_ms, or unset")?;
        }
        check(self.min_rto_prime_fraction > 0.0 && self.min_rto_prime_fraction <= 1.0, "min_rto_prime_fraction",
            self.min_rto_prime_fraction, "(0, 1]")?;
        check(self.padding_dummies <= 16, "padding_dummies", self.padding_dummies, "0 to 16 dummy writes")?;
        check(self.padding_dummy_bytes >= 1 && self.padding_dummy_bytes <= self.mss_bytes(), "padding_dummy_bytes",
            self.padding_dummy_bytes, "1 byte to one MSS")?;
        check((1..=8).contains(&self.diversity_copies), "diversity_copies", self.diversity_copies, "1 to 8 copies")?;
        check(!self.diversity_copy_retransmissions || self.diversity_copies > 1, "diversity_copy_retransmissions",
              self.diversity_copy_retransmissions, "false unless diversity_copies is 2 or more")?;
        check(!self.smart_framing || self.mss_bytes() >= 4, "smart_framing", self.smart_framing,
            &format!("false with an MSS of {} bytes (TCP-SF cuts a 1-SMSS window into 4 segments)", self.mss_bytes()))?;
        if let Some(o) = self.overhead_max_ms {
            check(o.is_finite() && (0.0..=1000.0).contains(&o), "overhead_max_ms", o, "0 to 1000 ms, or unset")?;
        }
        Ok(())
    }
}
