//! Timed scripts against one endpoint pair, wired by hand (no links): each step hands a
//! segment to an endpoint at a given time and checks what comes out.

use super::*;
use super::config::*;

fn params(edit: impl FnOnce(&mut TcpConfig)) -> TcpParams {
    let mut c = TcpConfig::default();
    c.packet_size_bytes = 1052; // MSS 1000 with timestamps
    c.delayed_ack = false;
    edit(&mut c);
    TcpParams::try_from(&c).expect("a valid [tcp] table")
}

const KEY: FlowKey = FlowKey { src_ip: 1, dst_ip: 2, src_port: 1000, dst_port: 80, proto: 6 };

fn t(ms: u64) -> Instant {
    Instant(ms * 1_000_000)
}

/// Client and server after the handshake at t = 0..100 ms (RTT 100 ms).
fn established(p: &TcpParams, iss_client: u32, iss_server: u32) -> (Endpoint, Endpoint) {
    let mut c = Endpoint::client(KEY, iss_client, p);
    let mut s = Endpoint::listener(KEY.reversed(), iss_server, p);
    let mut out = Vec::new();
    c.connect(t(0), p, &mut out);
    let syn = out.pop().unwrap();
    assert!(syn.flags.syn() && !syn.flags.ack());
    assert_eq!(syn.seq, iss_client);
    s.on_segment(&syn, t(50), p, &mut out);
    let syn_ack = out.pop().unwrap();
    assert!(syn_ack.flags.syn() && syn_ack.flags.ack());
    assert_eq!(syn_ack.ack, iss_client.wrapping_add(1));
    c.on_segment(&syn_ack, t(100), p, &mut out);
    assert_eq!(c.state, State::Established);
    let ack = out.pop().unwrap();
    s.on_segment(&ack, t(150), p, &mut out);
    assert_eq!(s.state, State::Established);
    assert!(out.is_empty());
    (c, s)
}

#[test]
fn handshake_gives_one_rtt_sample_and_the_initial_window() {
    let p = params(|c| c.initial_window_pkts = 3);
    let (mut c, _) = established(&p, 7, 9);
    assert_eq!(c.rtt_estimator().srtt(), Some(Duration::from_millis(100)));
    let mut out = Vec::new();
    c.app_write(10_000, false, t(100), &p, &mut out);
    assert_eq!(out.len(), 3, "IW 3 segments");
    assert_eq!(out.iter().map(|s| s.payload_len as u64).sum::<u64>(), 3 * p.mss);
    assert_eq!(out[1].seq, 7u32.wrapping_add(1 + 1000));
}

#[test]
fn sequence_numbers_wrap_around_2_to_the_32() {
    let p = params(|c| c.initial_window_pkts = 10);
    let (mut c, mut s) = established(&p, u32::MAX - 2500, u32::MAX - 10);
    let mut out = Vec::new();
    c.app_write(8000, false, t(100), &p, &mut out);
    c.app_close(t(100), &p, &mut out);
    let data: Vec<_> = out.drain(..).collect();
    assert!(data.last().unwrap().flags.fin());
    let mut acks = Vec::new();
    for seg in &data {
        s.on_segment(seg, t(150), &p, &mut acks);
    }
    assert_eq!(s.stats.bytes_delivered, 8000);
    assert_eq!(s.finished_at, Some(t(150)));
    for a in &acks {
        c.on_segment(a, t(200), &p, &mut out);
    }
    assert_eq!(c.bytes_acked(), 8000);
    assert!(matches!(c.state, State::FinWait1 | State::FinWait2 | State::TimeWait));
}

#[test]
fn out_of_order_data_gets_an_immediate_dupack_with_sack_blocks_newest_first() {
    let p = params(|c| c.recovery = Recovery::Sack);
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(5000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    assert_eq!(segs.len(), 4);
    // Segment 0 is lost; 1 and 3 arrive, then 2.
    let mut acks = Vec::new();
    for i in [1, 3] {
        s.on_segment(&segs[i], t(150), &p, &mut acks);
    }
    let last = acks.last().unwrap();
    assert_eq!(last.ack, 1, "still waiting for the first byte");
    let blocks = last.sack_blocks();
    assert_eq!(blocks.len(), 2);
    assert_eq!((blocks[0].start, blocks[0].end), (3001, 4001), "the block just received comes first");
    assert_eq!((blocks[1].start, blocks[1].end), (1001, 2001));
    s.on_segment(&segs[2], t(151), &p, &mut acks);
    let merged = acks.last().unwrap().sack_blocks();
    assert_eq!(merged.len(), 1);
    assert_eq!((merged[0].start, merged[0].end), (1001, 4001));
    s.on_segment(&segs[0], t(152), &p, &mut acks);
    let full = acks.last().unwrap();
    assert_eq!((full.ack, full.sack_count), (4001, 0));
    assert_eq!(s.stats.bytes_delivered, 4000);
}

#[test]
fn delayed_ack_every_second_full_segment_or_after_the_timeout() {
    let p = params(|c| {
        c.delayed_ack = true;
        c.delayed_ack_ms = 200.0;
        c.initial_window_pkts = 3;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(3000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    let mut acks = Vec::new();
    s.on_segment(&segs[0], t(150), &p, &mut acks);
    assert!(acks.is_empty(), "first full segment: ACK delayed");
    assert_eq!(s.next_deadline(), Some(t(350)));
    s.on_segment(&segs[1], t(151), &p, &mut acks);
    assert_eq!(acks.len(), 1, "second full segment: ACK at once");
    assert_eq!(acks[0].ack, 2001);
    s.on_segment(&segs[2], t(152), &p, &mut acks);
    assert_eq!(acks.len(), 1);
    s.on_timer(t(352), &p, &mut acks);
    assert_eq!(acks.len(), 2, "the delayed-ACK timer fired");
    assert_eq!(acks[1].ack, 3001);
}

#[test]
fn ack_first_data_acknowledges_the_first_segment_at_once_then_every_second() {
    // ns-3's receiver answers the first data segment after the handshake at once; later
    // segments go in pairs again (RFC 5681 §4.2). Both ends: neither the server's SYN-ACK
    // nor the client's handshake ACK spends the count (a data segment of its own would).
    let p = params(|c| {
        c.delayed_ack = true;
        c.ack_first_data = true;
        c.initial_window_pkts = 4;
    });
    let acks_for = |rx: &mut Endpoint, segs: &[Packet], at: u64| {
        let mut acks = Vec::new();
        segs.iter().enumerate().map(|(i, seg)| {
            acks.clear();
            rx.on_segment(seg, t(at + i as u64), &p, &mut acks);
            acks.iter().map(|a| a.ack).collect::<Vec<_>>()
        }).collect::<Vec<_>>()
    };
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(3000, false, t(150), &p, &mut out);
    assert_eq!(acks_for(&mut s, &out, 200), [vec![1001], vec![], vec![3001]], "server: 1st at once, then pairs");
    let (mut c, mut s) = established(&p, 0, 0);
    out.clear();
    s.app_write(2000, false, t(150), &p, &mut out);
    assert_eq!(acks_for(&mut c, &out, 200), [vec![1001], vec![]], "client: 1st at once");
}

#[test]
fn linux_quick_ack_mode_acks_the_first_segments_and_those_after_a_silence_at_once() {
    // Linux tcp_incr_quickack: rcv_wnd / (2 MSS) = 6000 / 2000 = 3 immediate ACKs after the
    // first data segment, and again after a segment that arrives more than the receiver's
    // RTO (1 s: the 1 s minimum over a 100 ms handshake RTT) after the previous one;
    // otherwise RFC 5681's pairs. Six segments at 200..205 ms, or three there and three
    // 1001 ms (or 898 ms) after the third. An old segment (tcp_enter_quickack_mode) also
    // restarts the mode: the first segment again after the third, then 3 and 4 at once.
    let p = |rule| params(|c| {
        c.delayed_ack = true;
        c.initial_window_pkts = 6;
        c.rwnd_bytes = 6000;
        c.ack_rule = rule;
    });
    let acks_in_order = |p: &TcpParams, order: &[usize], arrivals: &[u64]| {
        let (mut c, mut s) = established(p, 0, 0);
        let mut out = Vec::new();
        c.app_write(6000, false, t(100), p, &mut out);
        assert_eq!(out.len(), 6);
        order.iter().zip(arrivals).map(|(&i, &at)| {
            let mut acks = Vec::new();
            s.on_segment(&out[i], t(at), p, &mut acks);
            acks.iter().map(|a| a.ack).collect::<Vec<_>>()
        }).collect::<Vec<_>>()
    };
    let acks_for = |p: &TcpParams, arrivals: &[u64]| acks_in_order(p, &[0, 1, 2, 3, 4, 5], arrivals);
    let together = [200, 201, 202, 203, 204, 205];
    let (rfc, linux) = (p(super::config::AckRule::Rfc5681), p(super::config::AckRule::Linux));
    assert_eq!(acks_for(&rfc, &together), [vec![], vec![2001], vec![], vec![4001], vec![], vec![6001]]);
    assert_eq!(acks_for(&linux, &together), [vec![1001], vec![2001], vec![3001], vec![], vec![5001], vec![]]);
    let silence = [200, 201, 202, 1203, 1204, 1205];
    assert_eq!(acks_for(&linux, &silence), [vec![1001], vec![2001], vec![3001], vec![4001], vec![5001], vec![6001]]);
    let shorter = [200, 201, 202, 1100, 1101, 1102];
    assert_eq!(acks_for(&linux, &shorter), [vec![1001], vec![2001], vec![3001], vec![], vec![5001], vec![]]);
    let old_segment = acks_in_order(&linux, &[0, 1, 2, 0, 3, 4, 5], &[200, 201, 202, 203, 204, 205, 206]);
    assert_eq!(old_segment, [vec![1001], vec![2001], vec![3001], vec![3001], vec![4001], vec![5001], vec![]]);
}

#[test]
fn sack_recovery_retransmits_every_lost_hole_within_the_window() {
    let p = params(|c| {
        c.recovery = Recovery::Sack;
        c.initial_window_pkts = 10;
        c.limited_transmit = false;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(10_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    assert_eq!(segs.len(), 10);
    // Segments 2 and 5 are lost.
    let mut acks = Vec::new();
    for (i, seg) in segs.iter().enumerate() {
        if i != 2 && i != 5 {
            s.on_segment(seg, t(150), &p, &mut acks);
        }
    }
    let mut resent = Vec::new();
    for a in &acks {
        c.on_segment(a, t(200), &p, &mut resent);
    }
    let holes: Vec<u32> = resent.iter().filter(|x| x.seq < 10_001).map(|x| x.seq).collect();
    assert_eq!(holes, vec![2001, 5001], "both holes go out in the first recovery RTT");
    assert_eq!(c.stats.fast_retransmits, 1);
    // Segments 0 and 1 were acknowledged first: 8 in flight at the third dupack.
    assert_eq!(c.ssthresh_bytes(), 4000, "half the flight size");
}

#[test]
fn newreno_partial_ack_retransmits_the_next_hole() {
    let p = params(|c| {
        c.recovery = Recovery::Newreno;
        c.initial_window_pkts = 10;
        c.limited_transmit = false;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(10_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    let mut acks = Vec::new();
    for (i, seg) in segs.iter().enumerate() {
        if i != 2 && i != 5 {
            s.on_segment(seg, t(150), &p, &mut acks);
        }
    }
    let mut resent = Vec::new();
    for a in &acks {
        c.on_segment(a, t(200), &p, &mut resent);
    }
    assert_eq!(resent.iter().filter(|x| x.seq < 10_001).map(|x| x.seq).collect::<Vec<_>>(), vec![2001]);
    // 8 segments in flight at the third of six dupacks: ssthresh 4 MSS, cwnd = ssthresh +
    // 3 MSS, inflated by one MSS for each of the 3 later dupacks.
    assert_eq!(c.ssthresh_bytes(), 4000);
    assert_eq!(c.cwnd_bytes(), 4000 + 3 * 1000 + 3 * 1000);
    // The retransmission arrives: a partial ACK up to the second hole.
    let mut acks2 = Vec::new();
    s.on_segment(&resent[0], t(250), &p, &mut acks2);
    assert_eq!(acks2[0].ack, 5001);
    let mut again = Vec::new();
    c.on_segment(&acks2[0], t(300), &p, &mut again);
    assert_eq!(again[0].seq, 5001, "the partial ACK triggers the next retransmission");
    assert_eq!(c.stats.retransmits, 2);
}

#[test]
fn rto_collapses_the_window_and_goes_back_to_snd_una() {
    let p = params(|c| c.initial_window_pkts = 4);
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(4000, false, t(100), &p, &mut out);
    out.clear();
    let deadline = c.next_deadline().unwrap();
    assert_eq!(deadline, t(100) + Duration::from_secs(1), "min RTO 1 s over 3 x 100 ms");
    c.on_timer(deadline, &p, &mut out);
    assert_eq!(out.len(), 1, "cwnd is one segment after an RTO");
    assert_eq!(out[0].seq, 1);
    assert_eq!(c.cwnd_bytes(), 1000);
    assert_eq!(c.ssthresh_bytes(), 2000, "max(FlightSize/2, 2 SMSS)");
    assert_eq!(c.rto(), Duration::from_secs(2));
    assert_eq!(c.next_deadline(), Some(deadline + Duration::from_secs(2)));
}

#[test]
fn an_rto_decreases_from_the_flight_or_from_cwnd_by_ssthresh_from() {
    use super::config::{Congestion, SsthreshFrom};
    // An application-limited sender: 4 segments in flight under a 10-segment window.
    // RFC 5681 (4): max(FlightSize / 2, 2 SMSS); Linux's tcp_reno_ssthresh: cwnd / 2.
    // RFC 9438 §4.6, §4.8: max(0.7 FlightSize, 2 SMSS); Linux's cubictcp_recalc_ssthresh: 0.7 cwnd.
    for (congestion, from, ssthresh) in [
        (Congestion::Reno, SsthreshFrom::FlightSize, 2_000),
        (Congestion::Reno, SsthreshFrom::Cwnd, 5_000),
        (Congestion::Cubic, SsthreshFrom::FlightSize, 2_800),
        (Congestion::Cubic, SsthreshFrom::Cwnd, 7_000),
    ] {
        let p = params(|c| {
            c.initial_window_pkts = 10;
            c.congestion = congestion;
            c.ssthresh_from = from;
        });
        let (mut c, _) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(4000, false, t(100), &p, &mut out);
        let deadline = c.next_deadline().unwrap();
        c.on_timer(deadline, &p, &mut out);
        assert_eq!((c.ssthresh_bytes(), c.cwnd_bytes()), (ssthresh, 1000), "{congestion:?} from {from:?}");
    }
}

#[test]
fn a_listener_that_gave_up_resets_the_sender_which_stops() {
    // The SYN-ACK and every later client segment are lost until the listener's SYN-ACK
    // retries are spent; the client's next data segment then draws a reset and the client
    // aborts instead of retransmitting for ever.
    let p = params(|c| c.syn_retries = 2);
    let mut c = Endpoint::client(KEY, 7, &p);
    let mut s = Endpoint::listener(KEY.reversed(), 9, &p);
    let mut out = Vec::new();
    c.connect(t(0), &p, &mut out);
    let syn = out.pop().unwrap();
    s.on_segment(&syn, t(50), &p, &mut out);
    let syn_ack = out.pop().unwrap();
    // SYN-ACK retries at 1 s and 3 s (backoff), then the listener gives up at 7 s.
    for deadline_ms in [1050, 3050, 7050] {
        assert_eq!(s.next_deadline(), Some(t(deadline_ms)));
        s.on_timer(t(deadline_ms), &p, &mut out);
        out.clear();
    }
    assert!(s.failed && s.state == State::Closed && s.next_deadline().is_none());
    // The client, reached by the first SYN-ACK, sends data that now meets a closed socket.
    c.on_segment(&syn_ack, t(100), &p, &mut out);
    out.clear();
    c.app_write(3000, false, t(8000), &p, &mut out);
    let data = out.remove(0);
    out.clear();
    s.on_segment(&data, t(8050), &p, &mut out);
    let rst = out.pop().expect("a reset");
    assert!(rst.flags.has(TcpFlags::RST) && !rst.flags.syn());
    assert_eq!(rst.seq, data.ack, "RFC 793: the reset's sequence number is the ACK it answers");
    c.on_segment(&rst, t(8100), &p, &mut out);
    assert!(out.is_empty(), "a reset is never answered");
    assert!(c.failed && c.state == State::Closed && c.next_deadline().is_none());
    // A reset reaching the closed listener draws nothing either.
    s.on_segment(&rst, t(8150), &p, &mut out);
    assert!(out.is_empty());
}

/// Runs an established pair over a path where each direction takes `rtt / 2` and data
/// leaves the client at most one segment per `gap` (no queue limit), until `until`. Data
/// segments whose sequence number `lose` picks are lost, once each. Returns the client's
/// (time, cwnd, in recovery) after each segment it takes.
fn run_path(c: &mut Endpoint, s: &mut Endpoint, p: &TcpParams, mut out: Vec<Packet>, start: Instant, until: Instant,
    rtt: Duration, gap: Duration, mut lose: impl FnMut(u32) -> bool) -> Vec<(Instant, u64, bool)> {
    let half = Duration(rtt.as_nanos() / 2);
    // In flight, by arrival time then send order: (to the server, segment).
    let mut wire = std::collections::BTreeMap::new();
    let mut order = 0u64;
    let mut link_free = start;
    let mut lost = std::collections::HashSet::new();
    let mut send = |wire: &mut std::collections::BTreeMap<_, _>, pkts: &mut Vec<Packet>, now: Instant, to_server: bool| {
        for pkt in pkts.drain(..) {
            let depart = if to_server {
                link_free = link_free.max(now) + gap;
                link_free
            } else {
                now
            };
            if to_server && pkt.payload_len > 0 && lose(pkt.seq) && lost.insert(pkt.seq) {
                continue;
            }
            order += 1;
            wire.insert((depart + half, order), (to_server, pkt));
        }
    };
    send(&mut wire, &mut out, start, true);
    let mut trace = Vec::new();
    while let Some(((now, _), (to_server, pkt))) = wire.pop_first() {
        if now > until {
            break;
        }
        if to_server {
            s.on_segment(&pkt, now, p, &mut out);
            send(&mut wire, &mut out, now, false);
        } else {
            c.on_segment(&pkt, now, p, &mut out);
            trace.push((now, c.cwnd, c.recovery.is_some()));
            send(&mut wire, &mut out, now, true);
        }
    }
    assert_eq!(c.stats.timeouts, 0, "the script expects no timeout");
    trace
}

#[test]
fn cubic_after_a_loss_at_w_max_regrows_along_w_cubic_and_is_back_at_w_max_after_k() {
    let p = params(|c| {
        c.recovery = Recovery::Sack;
        c.congestion = super::config::Congestion::Cubic;
        c.limited_transmit = false;
        c.rwnd_bytes = 1 << 24;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    // In congestion avoidance at W_max = 100 segments, all in flight; the first is lost.
    let w_max = 100 * p.mss;
    c.cwnd = w_max;
    c.ssthresh = w_max;
    let mut out = Vec::new();
    c.app_write(1 << 30, false, t(100), &p, &mut out);
    assert_eq!(out.len(), 100);
    // A 1 ms-per-segment bottleneck: 100 segments fill the 100 ms path, so ACKs come back
    // spread over the round trip as behind any bottleneck.
    let rtt = Duration::from_millis(100);
    let trace = run_path(&mut c, &mut s, &p, out, t(100), t(6000), rtt, Duration::from_millis(1), |seq| seq == 1);
    assert_eq!(c.stats.fast_retransmits, 1);
    // RFC 9438 §4.6: ssthresh = β_cubic × FlightSize = 0.7 × 100 segments.
    assert_eq!(c.ssthresh_bytes(), 70 * p.mss);
    let exit = trace.iter().position(|&(_, _, rec)| rec).unwrap()
        + trace.iter().skip_while(|&&(_, _, rec)| !rec).position(|&(_, _, rec)| !rec).unwrap();
    assert_eq!(trace[exit].1, 70 * p.mss, "recovery ends at cwnd = ssthresh");
    // The epoch starts at the next ACK; K = cbrt(W_max (1 − β) / C) = cbrt(75) s.
    let epoch = trace[exit + 1].0;
    let k = 75f64.cbrt();
    let w_cubic = |t: f64| 0.4 * (t - k).powi(3) + 100.0;
    // Path RTT: 100 ms, plus 1 ms per segment of cwnd above 100 (at most 1 by K + 1 s).
    let srtt_max = 0.1 + 0.001;
    let mut at_k = None;
    for &(now, cwnd, _) in &trace[exit + 1..] {
        let t_s = (now - epoch).as_secs_f64();
        if t_s > k + 1.0 {
            break; // the Reno estimate overtakes near K + 1.7 s (see cubic.rs tests)
        }
        let segs = cwnd as f64 / p.mss as f64;
        // cwnd moves toward W_cubic(t + RTT) on every ACK (§4.4, §4.5): it lies between
        // W_cubic(t) and W_cubic(t + RTT), within one segment.
        assert!(segs >= w_cubic(t_s) - 1.0 && segs <= w_cubic(t_s + srtt_max) + 1.0,
            "t = {t_s:.3} s: cwnd {segs:.2} segments, W_cubic {:.2}..{:.2}", w_cubic(t_s), w_cubic(t_s + srtt_max));
        if t_s <= k {
            at_k = Some(segs);
        }
    }
    let at_k = at_k.unwrap();
    assert!((at_k - 100.0).abs() <= 1.0, "cwnd {at_k:.2} segments at K = {k:.3} s, W_max 100");
}

#[test]
fn cubic_after_a_timeout_one_segment_and_ssthresh_from_beta() {
    let p = params(|c| {
        c.initial_window_pkts = 4;
        c.congestion = super::config::Congestion::Cubic;
    });
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(4000, false, t(100), &p, &mut out);
    out.clear();
    let deadline = c.next_deadline().unwrap();
    c.on_timer(deadline, &p, &mut out);
    assert_eq!(out.len(), 1, "cwnd is one segment after an RTO");
    assert_eq!(c.cwnd_bytes(), 1000);
    // RFC 9438 §4.8: ssthresh = max(β_cubic × FlightSize, 2 SMSS) = max(2800, 2000).
    assert_eq!(c.ssthresh_bytes(), 2800);
}

/// The client's SYN is lost; the retransmission at the 1 s initial RTO gets through.
/// Returns the endpoints after the handshake completes at t = 1100 ms (RTT 100 ms).
fn handshake_after_a_lost_syn(p: &TcpParams) -> (Endpoint, Endpoint) {
    let mut c = Endpoint::client(KEY, 7, p);
    let mut s = Endpoint::listener(KEY.reversed(), 9, p);
    let mut out = Vec::new();
    c.connect(t(0), p, &mut out);
    out.clear(); // the SYN is lost
    assert_eq!(c.next_deadline(), Some(t(1000)));
    c.on_timer(t(1000), p, &mut out);
    let syn = out.pop().unwrap();
    s.on_segment(&syn, t(1050), p, &mut out);
    let syn_ack = out.pop().unwrap();
    c.on_segment(&syn_ack, t(1100), p, &mut out);
    s.on_segment(&out.pop().unwrap(), t(1150), p, &mut out);
    assert!(c.state == State::Established && s.state == State::Established && out.is_empty());
    (c, s)
}

#[test]
fn a_lost_syn_leaves_one_segment_and_a_three_second_rto_with_or_without_timestamps() {
    for timestamps in [false, true] {
        let p = params(|c| c.timestamps = timestamps);
        let (mut c, _) = handshake_after_a_lost_syn(&p);
        // With timestamps the handshake gave a valid 100 ms sample; RFC 6298 (5.7) still
        // sets 3 s. Without, Karn's rule gave none.
        let sample = timestamps.then(|| Duration::from_millis(100));
        assert_eq!(c.rtt_estimator().srtt(), sample, "timestamps {timestamps}");
        let mut out = Vec::new();
        c.app_write(10 * p.mss, false, t(1100), &p, &mut out);
        assert_eq!(out.len(), 1, "RFC 5681 §3.1: one segment (timestamps {timestamps})");
        assert_eq!(c.rto(), Duration::from_secs(3), "RFC 6298 (5.7) (timestamps {timestamps})");
        assert_eq!(c.next_deadline(), Some(t(4100)));
    }
}

#[test]
fn a_lost_syn_ack_gives_the_real_rtt_and_the_listener_a_three_second_rto() {
    let p = params(|_| ());
    let mut c = Endpoint::client(KEY, 7, &p);
    let mut s = Endpoint::listener(KEY.reversed(), 9, &p);
    let mut out = Vec::new();
    c.connect(t(0), &p, &mut out);
    let syn = out.pop().unwrap();
    s.on_segment(&syn, t(50), &p, &mut out);
    out.clear(); // the SYN-ACK is lost
    c.on_timer(t(1000), &p, &mut out);
    let syn2 = out.pop().unwrap();
    s.on_segment(&syn2, t(1050), &p, &mut out);
    let syn_ack = out.pop().unwrap();
    // RFC 7323 §4.3: the answer to the retried SYN echoes that SYN's TSval, not the first's.
    assert_eq!(syn_ack.ts_ecr, syn2.ts_val);
    // The listener's own SYN-ACK timer (armed at 50 ms) expires too: RFC 6298 (5.7) applies
    // to it as to the client ("awaiting the ACK of a SYN segment").
    s.on_timer(t(1050), &p, &mut out);
    assert_eq!(s.stats.syn_timeouts, 1);
    out.clear();
    c.on_segment(&syn_ack, t(1100), &p, &mut out);
    assert_eq!(c.rtt_estimator().srtt(), Some(Duration::from_millis(100)), "the real RTT, not 1.1 s");
    s.on_segment(&out.pop().unwrap(), t(1150), &p, &mut out);
    assert_eq!(s.state, State::Established);
    assert_eq!(s.rtt_estimator().srtt(), Some(Duration::from_millis(100)));
    assert_eq!(s.rto(), Duration::from_secs(3));
    assert_eq!(s.cwnd_bytes(), p.mss, "RFC 5681 §3.1: the SYN-ACK was lost");
}

/// `syn_timeout_restart = "linux"` with Linux's IW 10 and RTO estimator.
fn linux_restart(timestamps: bool) -> TcpParams {
    params(|c| {
        c.timestamps = timestamps;
        c.initial_window_pkts = 10;
        c.rto_rule = super::config::RtoRule::Linux;
        c.min_rto_ms = 200.0;
        c.syn_timeout_restart = super::config::SynTimeoutRestart::Linux;
    })
}

/// The client's RTO after a handshake with no loss and a 100 ms RTT.
fn rto_after_a_clean_handshake(p: &TcpParams) -> Duration {
    let (c, _) = established(p, 0, 0);
    c.rto()
}

#[test]
fn linux_keeps_the_initial_window_after_one_lost_syn_and_the_sampled_rto_with_timestamps() {
    for timestamps in [true, false] {
        let p = linux_restart(timestamps);
        let (mut c, _) = handshake_after_a_lost_syn(&p);
        let mut out = Vec::new();
        c.app_write(20 * p.mss, false, t(1100), &p, &mut out);
        // tcp_init_transfer: `total_retrans > 1` is false after one SYN retransmission.
        assert_eq!(out.len(), 10, "IW 10 (timestamps {timestamps})");
        // tcp_init_metrics: 3 s only with SRTT 0, i.e. no sample (Karn, without timestamps).
        let rto = if timestamps { rto_after_a_clean_handshake(&p) } else { Duration::from_secs(3) };
        assert_eq!(c.rto(), rto, "timestamps {timestamps}");
        assert!(c.rto() < Duration::from_secs(1) || !timestamps, "RFC 6298 (5.7) would give 3 s");
    }
}

#[test]
fn linux_cuts_to_one_segment_after_two_lost_syns() {
    let p = linux_restart(true);
    let mut c = Endpoint::client(KEY, 7, &p);
    let mut s = Endpoint::listener(KEY.reversed(), 9, &p);
    let mut out = Vec::new();
    c.connect(t(0), &p, &mut out);
    c.on_timer(t(1000), &p, &mut out);
    out.clear(); // both SYNs lost; the second retry after the doubled RTO
    assert_eq!(c.next_deadline(), Some(t(3000)));
    c.on_timer(t(3000), &p, &mut out);
    s.on_segment(&out.pop().unwrap(), t(3050), &p, &mut out);
    c.on_segment(&out.pop().unwrap(), t(3100), &p, &mut out);
    out.clear();
    c.app_write(20 * p.mss, false, t(3100), &p, &mut out);
    assert_eq!(out.len(), 1, "tcp_init_transfer: total_retrans 2 > 1");
    assert_eq!(c.rto(), rto_after_a_clean_handshake(&p), "the timestamp echo gave a 100 ms sample");
}

#[test]
fn linux_listener_counts_its_answers_to_a_retried_syn_with_its_timers() {
    // The SYN-ACK is lost. Alone, the listener's own retransmission at its 1 s timer
    // (num_retrans 1) keeps IW 10; with the client's retried SYN answered too (num_retrans 2)
    // the window is one segment. Either way the handshake ACK's echo gives the RTO.
    for client_retry_arrives in [false, true] {
        let p = linux_restart(true);
        let mut c = Endpoint::client(KEY, 7, &p);
        let mut s = Endpoint::listener(KEY.reversed(), 9, &p);
        let mut out = Vec::new();
        c.connect(t(0), &p, &mut out);
        s.on_segment(&out.pop().unwrap(), t(50), &p, &mut out);
        out.clear(); // the SYN-ACK is lost
        c.on_timer(t(1000), &p, &mut out);
        let syn2 = out.pop().unwrap();
        if client_retry_arrives {
            s.on_segment(&syn2, t(1050), &p, &mut out);
            out.clear(); // that answer is lost too
        }
        s.on_timer(t(1050), &p, &mut out);
        assert_eq!(s.stats.syn_timeouts, 1);
        c.on_segment(&out.pop().unwrap(), t(1100), &p, &mut out);
        s.on_segment(&out.pop().unwrap(), t(1150), &p, &mut out);
        assert_eq!(s.state, State::Established);
        out.clear();
        s.app_write(20 * p.mss, false, t(1150), &p, &mut out);
        assert_eq!(out.len(), if client_retry_arrives { 1 } else { 10 }, "retry answered: {client_retry_arrives}");
        assert!(s.rto() < Duration::from_secs(1), "retry answered: {client_retry_arrives}");
    }
}

#[test]
fn a_delayed_ack_echoes_the_earliest_segment_it_covers() {
    let p = params(|c| c.delayed_ack = true);
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(1000, false, t(100), &p, &mut out);
    c.app_write(1000, false, t(110), &p, &mut out);
    let mut acks = Vec::new();
    s.on_segment(&out[0], t(150), &p, &mut acks);
    s.on_segment(&out[1], t(160), &p, &mut acks);
    assert_eq!(acks.len(), 1, "second full segment: ACK at once");
    // RFC 7323 §4.3 (A): the second segment lies past Last.ACK.sent.
    assert_eq!(acks[0].ts_ecr, out[0].ts_val);
    assert_ne!(out[0].ts_val, out[1].ts_val);
}

/// Hands packets between a client and a server over 50 ms each way, firing their timers,
/// until nothing is left to do or `until`. `lose(to_server, pkt)` drops a packet;
/// `arrives(server, pkt)` sees each client packet as it reaches the server, before the
/// server handles it; `after(client)` sees the client after each of its steps.
#[allow(clippy::too_many_arguments)]
fn exchange(
    c: &mut Endpoint, s: &mut Endpoint, p: &TcpParams, first: Vec<Packet>, from: Instant, until: Instant,
    mut lose: impl FnMut(bool, &Packet) -> bool, mut arrives: impl FnMut(&Endpoint, &Packet),
    mut after: impl FnMut(&Endpoint),
) {
    let one_way = Duration::from_millis(50);
    let mut wire = std::collections::BTreeMap::new();
    let mut n = 0u64;
    let mut put = |wire: &mut std::collections::BTreeMap<_, _>, at: Instant, to_server: bool, pkts: &mut Vec<Packet>| {
        for pkt in pkts.drain(..) {
            if !lose(to_server, &pkt) {
                wire.insert((at + one_way, n), (to_server, pkt));
            }
            n += 1;
        }
    };
    let mut out = first;
    put(&mut wire, from, true, &mut out);
    loop {
        let next_pkt = wire.keys().next().map(|&(at, _)| at);
        let timers = [c.next_deadline(), s.next_deadline()];
        let Some(now) = timers.into_iter().chain([next_pkt]).flatten().min() else { break };
        if now > until {
            break;
        }
        if next_pkt == Some(now) {
            let (to_server, pkt) = wire.pop_first().unwrap().1;
            if to_server {
                arrives(s, &pkt);
                s.on_segment(&pkt, now, p, &mut out);
            } else {
                c.on_segment(&pkt, now, p, &mut out);
                after(c);
            }
            put(&mut wire, now, !to_server, &mut out);
        } else if c.next_deadline() == Some(now) {
            c.on_timer(now, p, &mut out);
            after(c);
            put(&mut wire, now, true, &mut out);
        } else {
            s.on_timer(now, p, &mut out);
            put(&mut wire, now, false, &mut out);
        }
    }
}

/// The server already holds every byte of `seg` (so sending it again was redundant).
fn holds(s: &Endpoint, seg: &Packet) -> bool {
    let start = unwrap(s.rcv_nxt, s.irs.wrapping_add(s.rcv_nxt as u32), seg.seq);
    let end = start + seg.seq_len() as u64;
    end <= s.rcv_nxt || s.ooo.as_ref().is_some_and(|o| o.ranges.covers(start, end))
}

/// Established at t = 100 ms with IW 10 and limited transmit off; `segments` full segments
/// written then (the first ten go out at once).
fn one_window(recovery: Recovery, segments: u64) -> (TcpParams, Endpoint, Endpoint, Vec<Packet>) {
    one_window_counting(recovery, DupackRule::Rfc, segments)
}

/// `one_window` with duplicate ACKs counted by `rule`.
fn one_window_counting(recovery: Recovery, rule: DupackRule, segments: u64)
                       -> (TcpParams, Endpoint, Endpoint, Vec<Packet>) {
    one_window_with(|c| {
        c.recovery = recovery;
        c.dupack_rule = rule;
    }, segments)
}

/// `one_window` (SACK unless `edit` says otherwise) with `edit` applied to the config.
fn one_window_with(edit: impl FnOnce(&mut TcpConfig), segments: u64) -> (TcpParams, Endpoint, Endpoint, Vec<Packet>) {
    let p = params(|c| {
        c.initial_window_pkts = 10;
        c.limited_transmit = false;
        edit(c);
    });
    let (mut c, s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(segments * p.mss, false, t(100), &p, &mut out);
    (p, c, s, out)
}

/// Hands the segments `arrive` (indices into `out`) to the receiver at 150 ms and its ACKs
/// to the sender at 200 ms; returns what the sender sent.
fn deliver(p: &TcpParams, c: &mut Endpoint, s: &mut Endpoint, out: &[Packet], arrive: &[usize]) -> Vec<Packet> {
    let mut acks = Vec::new();
    for &i in arrive {
        s.on_segment(&out[i], t(150), p, &mut acks);
    }
    let mut sent = Vec::new();
    for a in &acks {
        c.on_segment(a, t(200), p, &mut sent);
    }
    sent
}

#[test]
fn after_an_rto_the_sack_sender_resends_nothing_the_receiver_sacked() {
    let (p, mut c, mut s, mut out) = one_window(Recovery::Sack, 10);
    // Only segments 2, 4, 6 and 8 arrive, and only the first two dupacks come back: two
    // SACKed segments (2000 bytes) are too few for IsLost, so the RTO fires.
    let mut acks = Vec::new();
    for i in [2, 4, 6, 8] {
        s.on_segment(&out[i], t(150), &p, &mut acks);
    }
    for a in &acks[..2] {
        c.on_segment(a, t(200), &p, &mut out);
    }
    assert_eq!((c.stats.fast_retransmits, out.len()), (0, 10));
    let rto_at = c.next_deadline().unwrap();
    let mut resent = Vec::new();
    c.on_timer(rto_at, &p, &mut resent);
    assert_eq!(c.stats.timeouts, 1);
    let (mut redundant, mut sent) = (0, 0);
    exchange(&mut c, &mut s, &p, resent, rto_at, rto_at + Duration::from_secs(10), |_, _| false,
        |s, seg| {
            if seg.seq_len() > 0 {
                sent += 1;
                redundant += holds(s, seg) as u32;
            }
        },
        |_| ());
    assert_eq!(s.stats.bytes_delivered, 10 * p.mss);
    assert_eq!((redundant, sent), (0, 6), "exactly the six holes are resent");
}

#[test]
fn limited_transmit_sends_one_new_segment_for_each_of_the_first_two_dupacks() {
    for recovery in [Recovery::Newreno, Recovery::Sack] {
        let p = params(|c| {
            c.recovery = recovery;
            c.initial_window_pkts = 4;
            c.limited_transmit = true;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(10 * p.mss, false, t(100), &p, &mut out);
        assert_eq!(out.len(), 4);
        let mut acks = Vec::new();
        for seg in &out[1..] {
            s.on_segment(seg, t(150), &p, &mut acks); // segment 0 is lost
        }
        for (i, want) in [(0, 4001), (1, 5001)] {
            let mut sent = Vec::new();
            c.on_segment(&acks[i], t(200), &p, &mut sent);
            assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![want], "{recovery:?}, dupack {}", i + 1);
        }
        let mut sent = Vec::new();
        c.on_segment(&acks[2], t(200), &p, &mut sent);
        assert_eq!(sent[0].seq, 1, "{recovery:?}: the third dupack retransmits");
        assert_eq!(c.stats.fast_retransmits, 1);
    }
}

#[test]
fn limited_transmit_sends_at_most_one_segment_per_dupack_when_the_window_was_full() {
    // All written data is in flight when the first dupack arrives, so it sends nothing; the
    // application then writes more, which cwnd does not admit. The second dupack may send
    // one segment (RFC 3042), not two.
    let p = params(|c| {
        c.recovery = Recovery::Newreno;
        c.initial_window_pkts = 4;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(4 * p.mss, false, t(100), &p, &mut out);
    let mut acks = Vec::new();
    for seg in &out[1..] {
        s.on_segment(seg, t(150), &p, &mut acks);
    }
    let mut sent = Vec::new();
    c.on_segment(&acks[0], t(200), &p, &mut sent);
    assert!(sent.is_empty());
    c.app_write(4 * p.mss, false, t(201), &p, &mut sent);
    assert!(sent.is_empty(), "cwnd is full");
    c.on_segment(&acks[1], t(202), &p, &mut sent);
    assert_eq!(sent.len(), 1);
}

#[test]
fn the_window_restarts_at_the_initial_window_after_an_idle_rto() {
    // RFC 5681 §4.1: idle for at least an RTO (1 s here: min RTO over a 100 ms RTT), cwnd
    // becomes min(cwnd, IW); a shorter pause keeps it.
    for (idle_ms, want) in [(900, 4), (1000, 2)] {
        let p = params(|c| c.initial_window_pkts = 2);
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(2 * p.mss, false, t(100), &p, &mut out);
        exchange(&mut c, &mut s, &p, out, t(100), t(1000), |_, _| false, |_, _| (), |_| ());
        assert_eq!(c.cwnd_bytes(), 4 * p.mss, "two ACKs in slow start");
        let last_sent = t(100);
        let mut out = Vec::new();
        c.app_write(10 * p.mss, false, last_sent + Duration::from_millis(idle_ms), &p, &mut out);
        assert_eq!(out.len(), want, "idle {idle_ms} ms");
    }
}

#[test]
fn flight_never_exceeds_the_receive_window() {
    for recovery in [Recovery::Reno, Recovery::Newreno, Recovery::Sack] {
        let p = params(|c| {
            c.recovery = recovery;
            c.initial_window_pkts = 10;
            c.rwnd_bytes = 5000;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(60 * p.mss, false, t(100), &p, &mut out);
        let mut peak = out.len() as u64 * p.mss;
        let mut n = 0;
        // Lose the 20th data segment once, so recovery runs against the limit too.
        exchange(&mut c, &mut s, &p, out, t(100), t(60_000),
            |to_server, seg| {
                n += (to_server && seg.seq_len() > 0) as u32;
                n == 20 && to_server
            },
            |_, _| (),
            |c| {
                assert!(c.snd_max - c.snd_una <= 5000, "{recovery:?}: flight {}", c.snd_max - c.snd_una);
                peak = peak.max(c.snd_max - c.snd_una);
            });
        assert_eq!(s.stats.bytes_delivered, 60 * p.mss, "{recovery:?}");
        assert_eq!(peak, 5000, "{recovery:?}: the limit binds");
    }
}

/// NewReno, IW 10, one window of 10 segments of which only `arrive` reach the server and
/// no ACK returns. After the RTO the retransmission of segment 0 brings a cumulative ACK;
/// the go-back-N resends of the next two segments follow, the first lost, the second
/// drawing a duplicate ACK that the network delivers three times.
fn dupacks_below_recover_after_an_rto(arrive: &[usize]) -> Endpoint {
    let (p, mut c, mut s, out) = one_window(Recovery::Newreno, 10);
    let mut acks = Vec::new();
    for &i in arrive {
        s.on_segment(&out[i], t(150), &p, &mut acks);
    }
    let rto_at = c.next_deadline().unwrap();
    let mut resent = Vec::new();
    c.on_timer(rto_at, &p, &mut resent);
    let mut acks = Vec::new();
    s.on_segment(&resent[0], rto_at + Duration::from_millis(50), &p, &mut acks);
    let mut gbn = Vec::new();
    c.on_segment(&acks[0], rto_at + Duration::from_millis(100), &p, &mut gbn);
    assert_eq!(gbn.len(), 2, "cwnd 2 after one ACK in slow start");
    let mut dup = Vec::new();
    s.on_segment(&gbn[1], rto_at + Duration::from_millis(150), &p, &mut dup);
    assert_eq!(dup[0].ack, acks[0].ack, "a duplicate ACK");
    assert!(c.snd_una < c.recover_mark, "at or below recover");
    for _ in 0..3 {
        c.on_segment(&dup[0], rto_at + Duration::from_millis(200), &p, &mut gbn);
    }
    c
}

#[test]
fn newreno_dupacks_below_recover_after_an_rto_follow_the_ack_heuristic() {
    // RFC 6582 §3.2 step 2 and §4.2: a fast retransmit only if cwnd > SMSS and the last
    // cumulative ACK advanced by at most 4 SMSS. Here it advanced 6 SMSS (segments 1-5 were
    // already there, so the resends were needless): no fast retransmit.
    let c = dupacks_below_recover_after_an_rto(&[1, 2, 3, 4, 5, 7, 8, 9]);
    assert_eq!(c.snd_una - c.prev_highest_ack, 6000);
    assert_eq!(c.stats.fast_retransmits, 0);
    // Here it advanced 3 SMSS (holes at 0 and 3): the dupacks mean a loss.
    let c = dupacks_below_recover_after_an_rto(&[1, 2, 4, 5, 6, 7, 8, 9]);
    assert_eq!(c.snd_una - c.prev_highest_ack, 3000);
    assert_eq!(c.stats.fast_retransmits, 1);
}

#[test]
fn an_rto_during_fast_recovery_ends_it_with_one_segment_and_half_the_flight() {
    for recovery in [Recovery::Newreno, Recovery::Sack] {
        let (p, mut c, mut s, out) = one_window(recovery, 20);
        let mut acks = Vec::new();
        for (i, seg) in out.iter().enumerate() {
            if i != 2 {
                s.on_segment(seg, t(150), &p, &mut acks);
            }
        }
        let mut sent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut sent); // every segment sent here is lost
        }
        assert_eq!(c.stats.fast_retransmits, 1, "{recovery:?}");
        assert!(c.recovery.is_some());
        let high_data = out.iter().chain(&sent).map(|x| x.seq as u64 + x.seq_len() as u64).max().unwrap();
        let flight = high_data - 2001; // segment 2 is the first byte unacknowledged
        let rto_at = c.next_deadline().unwrap();
        let mut resent = Vec::new();
        c.on_timer(rto_at, &p, &mut resent);
        // RFC 5681 (4) and §3.1: ssthresh = max(FlightSize/2, 2 SMSS), cwnd = 1 SMSS.
        assert!(c.recovery.is_none(), "{recovery:?}");
        assert_eq!(c.ssthresh_bytes(), (flight / 2).max(2 * p.mss), "{recovery:?}");
        assert_eq!(c.cwnd_bytes(), p.mss);
        assert_eq!(resent.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![2001], "{recovery:?}");
    }
}

#[test]
fn is_lost_counts_sacked_segments_not_ranges() {
    // RFC 6675 IsLost: DupThresh SACKed segments above the hole. Writes of 1000, 1000, 500,
    // 1000 and 400 bytes go out as five segments; the first and fourth are lost and the
    // first dupack too. The two dupacks that arrive SACK two ranges (1500 and 400 bytes,
    // not more than 2 SMSS) holding three segments: the hole is lost.
    let p = params(|c| {
        c.recovery = Recovery::Sack;
        c.limited_transmit = false;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    for bytes in [1000, 1000, 500, 1000, 400] {
        c.app_write(bytes, false, t(100), &p, &mut out);
    }
    assert_eq!(out.len(), 5);
    let mut acks = Vec::new();
    for i in [1, 2, 4] {
        s.on_segment(&out[i], t(150), &p, &mut acks);
    }
    let mut sent = Vec::new();
    for a in &acks[1..] {
        c.on_segment(a, t(200), &p, &mut sent);
    }
    assert_eq!(c.dupacks, 2);
    assert_eq!(c.stats.fast_retransmits, 1);
    assert_eq!(sent[0].seq, 1, "the first hole is resent");
}

/// SACK, IW 10, limited transmit off: segments 1, 2 and 4 arrive, no ACK comes back, the
/// RTO resends segment 0. Late copies of segments 6, 8 and 9 then draw three ACKs for the
/// same byte, each SACKing new data. The sender after those ACKs, their last one and the
/// time they came.
fn sack_dupacks_after_an_rto(rule: DupackRule) -> (TcpParams, Endpoint, Packet, Instant) {
    let (p, mut c, mut s, out) = one_window_counting(Recovery::Sack, rule, 10);
    let mut acks = Vec::new();
    for i in [1, 2, 4] {
        s.on_segment(&out[i], t(150), &p, &mut acks);
    }
    let rto_at = c.next_deadline().unwrap();
    let mut sent = Vec::new();
    c.on_timer(rto_at, &p, &mut sent);
    let mut acks = Vec::new();
    s.on_segment(&sent[0], rto_at + Duration::from_millis(50), &p, &mut acks);
    for i in [6, 8, 9] {
        s.on_segment(&out[i], rto_at + Duration::from_millis(60), &p, &mut acks);
    }
    let at = rto_at + Duration::from_millis(100);
    for a in &acks {
        c.on_segment(a, at, &p, &mut sent);
    }
    (p, c, acks.pop().unwrap(), at)
}

#[test]
fn sack_dupacks_are_acks_that_sack_new_data_and_wait_for_the_recovery_point() {
    let (p, mut c, last, at) = sack_dupacks_after_an_rto(DupackRule::Rfc);
    // RFC 6675 §2: the cumulative ACK that SACKed segment 4 counts too.
    assert_eq!(c.dupacks, 4);
    // The NewReno heuristic would say "loss" (cwnd 2 SMSS, ACK advanced 3 SMSS), but
    // RFC 6675 §5.1 forbids a new recovery before `snd_una` reaches the RTO's RecoveryPoint.
    assert!(c.cwnd_bytes() > p.mss && c.snd_una - c.prev_highest_ack <= 4 * p.mss);
    assert_eq!(c.stats.fast_retransmits, 0);
    // RFC 6675 §2: an ACK that SACKs nothing new is no duplicate ACK.
    c.on_segment(&last, at + Duration::from_millis(1), &p, &mut Vec::new());
    assert_eq!(c.dupacks, 4);
}

/// A sender with HyStart++ sending a long transfer from t = 100 ms over `run_path`.
fn hystart_run(p: &TcpParams, gap: Duration, until: Instant) -> (Endpoint, Vec<(Instant, u64, bool)>) {
    let (mut c, mut s) = established(p, 0, 0);
    let mut out = Vec::new();
    c.app_write(1 << 30, false, t(100), p, &mut out);
    let trace = run_path(&mut c, &mut s, p, out, t(100), until, Duration::from_millis(100), gap, |_| false);
    (c, trace)
}

#[test]
fn hystart_with_a_constant_rtt_grows_by_every_byte_acked_so_the_window_doubles_each_round() {
    // Delayed ACKs: each ACK covers two segments. RFC 9406 §4.2 adds min(N, L·SMSS) per
    // ACK (L = 8), so cwnd = IW + bytes acknowledged and doubles per round, where RFC 5681
    // (2) alone adds one SMSS per ACK (×1.5 per round).
    let p = params(|c| {
        c.hystart = true;
        c.delayed_ack = true;
        c.initial_window_pkts = 10;
        c.rwnd_bytes = 1 << 24;
    });
    // No bottleneck (gap 0): every RTT sample is the path's 100 ms.
    let (c, trace) = hystart_run(&p, Duration::ZERO, t(100 + 5 * 100 + 50));
    assert_eq!(c.cwnd_bytes(), 10 * p.mss + c.bytes_acked());
    assert_eq!(c.cwnd_bytes(), 10 * p.mss * 32, "five rounds: 10 segments × 2^5");
    assert_eq!(c.ssthresh_bytes(), 1 << 24, "never left slow start");
    assert!(trace.windows(2).all(|w| w[1].1 - w[0].1 == 2 * p.mss));
    assert!(!c.hystart.as_ref().unwrap().in_css());
    // Without HyStart++: one SMSS per two-segment ACK.
    let p_off = TcpParams { cc: CcPolicy { hystart: false, ..p.cc.clone() }, ..p.clone() };
    let (c, _) = hystart_run(&p_off, Duration::ZERO, t(100 + 5 * 100 + 50));
    assert_eq!(c.cwnd_bytes(), 10 * p.mss + c.bytes_acked() / 2);
}

#[test]
fn hystart_leaves_slow_start_through_css_when_the_queue_builds() {
    for congestion in [super::config::Congestion::Reno, super::config::Congestion::Cubic] {
        let p = params(|c| {
            c.hystart = true;
            c.congestion = congestion;
            c.initial_window_pkts = 10;
            c.rwnd_bytes = 1 << 24;
        });
        // A 1 ms-per-segment bottleneck with no limit on its queue: past 100 segments
        // (the 100 ms path's BDP) the queue, and so the minimum RTT per round, grows.
        let (c, trace) = hystart_run(&p, Duration::from_millis(1), t(4000));
        assert_eq!(c.stats.fast_retransmits + c.stats.timeouts, 0);
        let growth: Vec<u64> = trace.windows(2).map(|w| w[1].1 - w[0].1).collect();
        // Slow start adds one SMSS per one-segment ACK, CSS a quarter (RFC 9406 §4.3).
        let first_css = growth.iter().position(|&g| g != p.mss).unwrap();
        assert_eq!(growth[first_css], p.mss / 4, "{congestion:?}");
        let exit = first_css + growth[first_css..].iter().position(|&g| g != p.mss / 4 && g != p.mss).unwrap();
        // After CSS_ROUNDS rounds ssthresh = cwnd: the window at the exit, far below rwnd.
        assert!(c.hystart.is_none());
        assert_eq!(c.ssthresh_bytes(), trace[exit].1, "{congestion:?}");
        // Flights of 10·2^k segments leave at two per ACK; an ACK comes back per ms. The
        // 6th flight's first segment leaves when the 5th's (160 segments, 160 ms to send)
        // first ACK returns after 101 ms, behind the 59 still queued: round minimum 160 ms
        // against 101 ms before, over 101 + 101/8. So CSS begins at the 6th flight's 8th ACK
        // (N_RTT_SAMPLE), the 318th overall: cwnd (10 + 318) segments.
        assert_eq!(first_css, 318 - 1, "{congestion:?}"); // growth[i] is ACK i + 2's
        assert_eq!(trace[first_css].1, (10 + 318) * p.mss, "{congestion:?}");
        // Five flights in CSS: the rest of the 6th (312 ACKs, each releasing 1.25 segments
        // at a quarter of slow start's growth), then four each 1.25 times the last.
        let mut flight = 8.0 * 2.0 + 312.0 * 1.25;
        let mut css_acks = 312.0;
        for _ in 0..4 {
            css_acks += flight;
            flight *= 1.25;
        }
        assert!(((exit - first_css) as f64 - css_acks).abs() <= 3.0, "{congestion:?}: {} CSS ACKs, {css_acks:.1} expected",
            exit - first_css);
        assert!(growth[first_css..exit].iter().all(|&g| g == p.mss / 4), "{congestion:?}: no spurious exit");
        // Congestion avoidance from there: less than a quarter SMSS per ACK.
        assert!(growth[exit..].iter().all(|&g| g < p.mss / 4), "{congestion:?}");
    }
}

#[test]
fn a_loss_ends_hystart_for_the_rest_of_the_connection() {
    let p = params(|c| {
        c.hystart = true;
        c.recovery = Recovery::Sack;
        c.initial_window_pkts = 10;
        c.rwnd_bytes = 1 << 24;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(1 << 30, false, t(100), &p, &mut out);
    // The 30th data segment is lost: fast retransmit in the second round.
    let trace = run_path(&mut c, &mut s, &p, out, t(100), t(2000), Duration::from_millis(100), Duration::ZERO,
        |seq| seq == 1 + 29 * p.mss as u32);
    assert_eq!(c.stats.fast_retransmits, 1);
    assert!(c.hystart.is_none());
    // SACK recovery ends at cwnd = ssthresh = FlightSize / 2; Reno CA after, never slow start.
    let exit = trace.iter().rposition(|&(_, _, rec)| rec).unwrap() + 1;
    assert_eq!(trace[exit].1, c.ssthresh_bytes());
    assert!(trace[exit..].windows(2).all(|w| w[1].1 - w[0].1 < p.mss));
}

// ------------------------------------------- endpoint remedies (padding/diversity paper)

/// The times (ms) at which the client sends data while nothing comes back, by firing each
/// timer as it falls due, up to `sends` segments.
fn lone_sends_ms(c: &mut Endpoint, p: &TcpParams, first: Vec<Packet>, sends: usize) -> Vec<u64> {
    let mut times = vec![100; first.len().min(1)];
    while times.len() < sends {
        let at = c.next_deadline().expect("the RTO is armed");
        let mut out = Vec::new();
        c.on_timer(at, p, &mut out);
        assert!(out.iter().all(|s| s.payload_len > 0), "only retransmissions: the peer is silent");
        if !out.is_empty() {
            times.push(at.as_nanos() / 1_000_000);
        }
    }
    times
}

fn gaps(times: &[u64]) -> Vec<u64> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn thin_linear_timeouts_keep_the_rto_for_six_timeouts_then_double() {
    // Linux tcp_retransmit_timer: with fewer than 4 segments out, RTOs 1..6 leave the
    // timer at its base (here the 1 s minimum: SRTT 100 ms + 4·50 ms < 1 s); from the
    // 7th on it doubles.
    let p = params(|c| c.thin_linear_timeouts = true);
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &p, &mut out);
    let sends = lone_sends_ms(&mut c, &p, out, 10);
    assert_eq!(gaps(&sends), [1000, 1000, 1000, 1000, 1000, 1000, 1000, 2000, 4000]);

    let plain = params(|_| {});
    let (mut c, _) = established(&plain, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &plain, &mut out);
    assert_eq!(gaps(&lone_sends_ms(&mut c, &plain, out, 4)), [1000, 2000, 4000], "RFC 6298 (5.5) without it");
}

#[test]
fn thin_linear_timeouts_apply_with_three_segments_out() {
    // Fewer than 4 packets out (Linux tcp_stream_is_thin): three is still thin.
    let p = params(|c| c.thin_linear_timeouts = true);
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(3000, false, t(100), &p, &mut out);
    assert_eq!(out.len(), 3);
    assert_eq!(gaps(&lone_sends_ms(&mut c, &p, vec![out.remove(0)], 3)), [1000, 1000]);
}

#[test]
fn thin_linear_timeouts_do_not_apply_with_four_segments_out() {
    let p = params(|c| c.thin_linear_timeouts = true);
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(4000, false, t(100), &p, &mut out);
    assert_eq!(out.len(), 4, "IW 4");
    // Only the first segment is resent after each RTO (cwnd 1 MSS), so follow its sends.
    assert_eq!(gaps(&lone_sends_ms(&mut c, &p, vec![out.remove(0)], 3)), [1000, 2000]);
}

#[test]
fn min_rto_prime_applies_while_the_flight_is_a_quarter_of_the_window() {
    // Approach I with the paper's numbers: minRTO′ 500 ms, fraction 1/4. A 100-byte burst
    // is at most 1/4 of max(cwnd, 4 segments) = 1000 bytes: the RTO is max(500 ms,
    // SRTT + 4·RTTVAR = 300 ms) = 500 ms, and backs off from there.
    let p = params(|c| c.min_rto_prime_ms = Some(500.0));
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &p, &mut out);
    assert_eq!(gaps(&lone_sends_ms(&mut c, &p, out, 4)), [500, 1000, 2000]);
    // Four full segments are the whole window: the 1 s minimum holds.
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(4000, false, t(100), &p, &mut out);
    assert_eq!(c.next_deadline(), Some(t(1100)));
}

#[test]
fn short_term_padding_turns_a_lost_burst_into_a_fast_retransmit() {
    // Approach II: three 20-byte dummies follow the burst; if the burst is lost they draw
    // three duplicate ACKs (RFC 5681 dupthresh), so the burst is resent after one RTT,
    // not after the 1 s RTO.
    for recovery in [Recovery::Sack, Recovery::Newreno] {
        let p = params(|c| {
            c.padding_dummies = 3;
            c.recovery = recovery;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(100, true, t(100), &p, &mut out);
        let lens: Vec<u16> = out.iter().map(|s| s.payload_len).collect();
        assert_eq!(lens, [100, 20, 20, 20], "the burst, then each dummy in its own segment");
        assert_eq!(out[1].ip_len_bytes as u32, p.header_bytes + 20);
        let mut acks = Vec::new();
        for seg in &out[1..] {
            s.on_segment(seg, t(150), &p, &mut acks); // the burst is lost
        }
        assert_eq!(acks.len(), 3);
        let mut resent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut resent);
        }
        assert_eq!(c.stats.fast_retransmits, 1, "{recovery:?}");
        assert_eq!(resent[0].seq, out[0].seq, "{recovery:?}: the burst again");
        assert!(resent[0].payload_len >= 100);
    }
}

#[test]
fn diversity_sends_small_segments_k_times_and_one_copy_is_enough() {
    let p = params(|c| c.diversity_copies = 2);
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &p, &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].seq, out[0].payload_len), (out[1].seq, out[1].payload_len));
    let mut acks = Vec::new();
    s.on_segment(&out[1], t(150), &p, &mut acks); // the first copy is lost
    c.on_segment(&acks[0], t(200), &p, &mut out);
    let answered = CompletedBurst { written: t(100), first_sent: t(100), covered: t(200), acked: t(200) };
    assert_eq!(c.completed_bursts.as_slice(), [answered], "answered in one RTT");
    assert_eq!(c.stats.retransmits, 0);
    // Full-size segments are not copied.
    let mut out = Vec::new();
    c.app_write(1000, true, t(300), &p, &mut out);
    assert_eq!(out.len(), 1);
}

#[test]
fn diversity_copies_acks_are_not_duplicate_acks() {
    // Four copies of a segment that all arrive draw one new ACK and three duplicates of
    // it; RFC 5681 would count three dupacks and retransmit spuriously.
    let p = params(|c| {
        c.diversity_copies = 4;
        c.recovery = Recovery::Newreno;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &p, &mut out);
    c.app_write(100, true, t(100), &p, &mut out); // a second burst keeps data outstanding
    assert_eq!(out.len(), 8);
    let mut acks = Vec::new();
    for seg in &out[..4] {
        s.on_segment(seg, t(150), &p, &mut acks);
    }
    assert_eq!(acks.len(), 4);
    assert!(acks[1..].iter().all(|a| a.ack == acks[0].ack), "three duplicates");
    let mut resent = Vec::new();
    for a in &acks {
        c.on_segment(a, t(200), &p, &mut resent);
    }
    assert_eq!((c.stats.fast_retransmits, c.stats.retransmits), (0, 0));
    assert!(resent.is_empty());
}

#[test]
fn diversity_cuts_the_window_when_a_copy_goes_missing() {
    // The paper: a copy whose duplicate ACK never comes means a loss; the sender cuts its
    // window (here RFC 5681's ssthresh = max(FlightSize/2, 2 SMSS)).
    let p = params(|c| {
        c.diversity_copies = 2;
        c.initial_window_pkts = 10;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &p, &mut out);
    let mut acks = Vec::new();
    s.on_segment(&out[0], t(150), &p, &mut acks); // the second copy is lost
    c.on_segment(&acks[0], t(200), &p, &mut out);
    assert_eq!(c.cwnd_bytes(), 10_000 + 100, "slow start grew it by the bytes acked");
    let mut out = Vec::new();
    c.app_write(100, true, t(300), &p, &mut out);
    let mut acks = Vec::new();
    s.on_segment(&out[0], t(350), &p, &mut acks);
    c.on_segment(&acks[0], t(400), &p, &mut out);
    assert_eq!(c.ssthresh_bytes(), 2 * p.mss, "FlightSize 100 bytes: 2 SMSS");
    assert_eq!(c.cwnd_bytes(), 2 * p.mss);
}

#[test]
fn fully_backlogged_fills_the_window_with_dummies_behind_real_data() {
    let plain = params(|_| {});
    let p = params(|c| c.fully_backlogged = true);
    let (mut c, mut s) = established(&plain, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &p, &mut out);
    let lens: Vec<u16> = out.iter().map(|s| s.payload_len).collect();
    assert_eq!(lens, [100, 1000, 1000, 1000], "the burst, then full dummies while IW 4 has room");
    // A full-size burst does not fit the 900 bytes left; it goes first once an ACK opens
    // the window.
    let mut more = Vec::new();
    c.app_write(1000, true, t(120), &p, &mut more);
    assert!(more.is_empty());
    let mut acks = Vec::new();
    s.on_segment(&out[0], t(150), &p, &mut acks);
    assert_eq!(acks.len(), 1, "the listener does not pad: a pure ACK");
    assert_eq!(acks[0].payload_len, 0);
    let mut next = Vec::new();
    c.on_segment(&acks[0], t(200), &p, &mut next);
    assert_eq!(next[0].payload_len, 1000);
    assert_eq!(next[0].seq, out[3].seq.wrapping_add(1000), "strict priority: the burst before any new dummy");
    assert_eq!(next.len(), 1, "cwnd 4100 after the ACK: no room for a dummy too");
}

/// TCP-SF with the classic 1-segment initial window: cwnd = 1 SMSS = 1000 bytes, so the
/// segment size is cwnd/4 = 250 bytes.
fn smart_framing(recovery: Recovery) -> TcpParams {
    params(|c| {
        c.smart_framing = true;
        c.initial_window_pkts = 1;
        c.recovery = recovery;
    })
}

#[test]
fn smart_framing_cuts_a_one_segment_write_into_four_while_cwnd_is_small() {
    let p = smart_framing(Recovery::Sack);
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(1000, true, t(100), &p, &mut out);
    let lens: Vec<u16> = out.iter().map(|s| s.payload_len).collect();
    assert_eq!(lens, [250; 4], "1 SMSS of cwnd in 4 segments of cwnd/4");
    // Classic TCP sends the same write as one segment.
    let plain = params(|c| c.initial_window_pkts = 1);
    let (mut c, _) = established(&plain, 0, 0);
    let mut out = Vec::new();
    c.app_write(1000, true, t(100), &plain, &mut out);
    assert_eq!(out.len(), 1);
    // From cwnd = 4 SMSS on, full segments again.
    let p4 = params(|c| {
        c.smart_framing = true;
        c.initial_window_pkts = 4;
    });
    let (mut c, _) = established(&p4, 0, 0);
    let mut out = Vec::new();
    c.app_write(4000, false, t(100), &p4, &mut out);
    assert_eq!(out.iter().map(|s| s.payload_len).collect::<Vec<_>>(), [1000; 4]);
}

#[test]
fn smart_framing_segments_grow_with_cwnd() {
    // Slow start adds the bytes each ACK covers (RFC 5681 (2), at most 1 SMSS): four
    // ACKs of 250 bytes double cwnd to 2000, so the next segments are 500 bytes.
    let p = smart_framing(Recovery::Sack);
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(1000, true, t(100), &p, &mut out);
    let mut acks = Vec::new();
    for seg in &out {
        s.on_segment(seg, t(150), &p, &mut acks);
    }
    let mut next = Vec::new();
    for a in &acks {
        c.on_segment(a, t(200), &p, &mut next);
    }
    assert_eq!(c.cwnd_bytes(), 2000);
    c.app_write(2000, true, t(300), &p, &mut next);
    assert_eq!(next.iter().map(|s| s.payload_len).collect::<Vec<_>>(), [500; 4]);
}

#[test]
fn smart_framing_losing_the_first_of_four_is_a_fast_retransmit() {
    // The three later segments each draw a duplicate ACK: DupThresh = 3 (RFC 5681 §3.2).
    for recovery in [Recovery::Sack, Recovery::Newreno] {
        let p = smart_framing(recovery);
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(1000, true, t(100), &p, &mut out);
        let mut acks = Vec::new();
        for seg in &out[1..] {
            s.on_segment(seg, t(150), &p, &mut acks);
        }
        assert!(acks.iter().all(|a| a.ack == out[0].seq), "{recovery:?}: three duplicates");
        let mut resent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut resent);
        }
        assert_eq!((c.stats.fast_retransmits, c.stats.timeouts), (1, 0), "{recovery:?}");
        assert_eq!((resent[0].seq, resent[0].payload_len), (out[0].seq, 250), "{recovery:?}");
        s.on_segment(&resent[0], t(250), &p, &mut acks);
        c.on_segment(acks.last().unwrap(), t(300), &p, &mut resent);
        let answered = CompletedBurst { written: t(100), first_sent: t(100), covered: t(300), acked: t(300) };
        assert_eq!(c.completed_bursts.as_slice(), [answered], "{recovery:?}: two RTTs, no RTO");
    }
}

#[test]
fn smart_framing_losing_one_of_the_last_three_needs_a_timeout() {
    // Losing segment i of 4 leaves 3 − i segments behind it: fewer duplicate ACKs than
    // DupThresh, and an interactive sender has no new data to draw more (the paper's point).
    for recovery in [Recovery::Sack, Recovery::Newreno] {
        for lost in 1..4 {
            let p = smart_framing(recovery);
            let (mut c, mut s) = established(&p, 0, 0);
            let mut out = Vec::new();
            c.app_write(1000, true, t(100), &p, &mut out);
            let mut acks = Vec::new();
            for (i, seg) in out.iter().enumerate().filter(|&(i, _)| i != lost) {
                s.on_segment(seg, t(150 + i as u64), &p, &mut acks);
            }
            let mut resent = Vec::new();
            for a in &acks {
                c.on_segment(a, t(200), &p, &mut resent);
            }
            assert!(resent.is_empty(), "{recovery:?} lost {lost}: nothing to send");
            assert_eq!(c.stats.fast_retransmits, 0, "{recovery:?} lost {lost}");
            let deadline = c.next_deadline().unwrap();
            c.on_timer(deadline, &p, &mut resent);
            assert_eq!(c.stats.timeouts, 1, "{recovery:?} lost {lost}");
            assert_eq!(resent[0].seq, out[lost].seq, "{recovery:?} lost {lost}: the hole again");
        }
    }
}

#[test]
fn a_burst_first_sent_when_the_window_opens_records_that_send() {
    // Fully backlogged, IW 4: a full-size burst written at 120 ms finds the window full of
    // dummies and leaves at 200 ms, when the first ACK opens it; it is acknowledged one
    // RTT (100 ms) later. The paper's response time (send to ACK) is 100 ms, the write's 180.
    let plain = params(|_| {});
    let p = params(|c| c.fully_backlogged = true);
    let (mut c, mut s) = established(&plain, 0, 0);
    let mut out = Vec::new();
    c.app_write(100, true, t(100), &p, &mut out);
    c.app_write(1000, true, t(120), &p, &mut out);
    assert_eq!(c.outstanding_bursts().collect::<Vec<_>>(), [(t(100), Some(t(100)), None), (t(120), None, None)]);
    let mut acks = Vec::new();
    s.on_segment(&out[0], t(150), &p, &mut acks);
    let mut next = Vec::new();
    c.on_segment(&acks[0], t(200), &p, &mut next);
    assert_eq!(c.outstanding_bursts().collect::<Vec<_>>(), [(t(120), Some(t(200)), None)]);
    let mut acks = Vec::new();
    for seg in out[1..].iter().chain(&next) {
        s.on_segment(seg, t(250), &p, &mut acks);
    }
    for a in &acks {
        c.on_segment(a, t(300), &p, &mut next);
    }
    let first = CompletedBurst { written: t(100), first_sent: t(100), covered: t(200), acked: t(200) };
    let second = CompletedBurst { written: t(120), first_sent: t(200), covered: t(300), acked: t(300) };
    assert_eq!(c.completed_bursts.as_slice(), [first, second]);
}

/// The sender's cwnd after each ACK of a scripted stream: it starts at `cwnd_segs` and
/// `ssthresh_segs` (MSS 1000), every ACK covers `per_ack` more full segments.
fn cwnd_after_acks(edit: impl FnOnce(&mut TcpConfig), cwnd_segs: u64, ssthresh_segs: u64, per_ack: usize,
                   acks: usize) -> Vec<u64> {
    let p = params(edit);
    let (mut c, mut s) = established(&p, 0, 0);
    c.cwnd = cwnd_segs * p.mss;
    c.ssthresh = ssthresh_segs * p.mss;
    let mut flight = std::collections::VecDeque::new();
    let mut out = Vec::new();
    c.app_write(10_000 * p.mss, false, t(100), &p, &mut out);
    flight.extend(out.drain(..));
    let mut cwnds = Vec::new();
    for i in 0..acks as u64 {
        let mut replies = Vec::new();
        for seg in flight.drain(..per_ack) {
            s.on_segment(&seg, t(150 + i), &p, &mut replies);
        }
        // The receiver ACKs every segment; only the last ACK of the group reaches the sender.
        c.on_segment(replies.last().unwrap(), t(200 + i), &p, &mut out);
        flight.extend(out.drain(..));
        cwnds.push(c.cwnd_bytes());
    }
    cwnds
}

#[test]
fn slow_start_growth_per_ack_by_bytes_and_by_segments() {
    // ACKs of 2 segments (a delayed-ACK receiver) from cwnd 4, ssthresh 100 segments. RFC
    // 5681 (2): + min(2000, SMSS) = 1000 per ACK, 4 + k segments after k ACKs. RFC 3465 §2.2
    // with L = 2 SMSS: + min(2000, 2000), 4 + 2k; with L = 1: 4 + k. Linux's tcp_slow_start:
    // + 2 segments per ACK, 4 + 2k.
    let ss = |edit: fn(&mut TcpConfig), per_ack| cwnd_after_acks(edit, 4, 100, per_ack, 3);
    assert_eq!(ss(|_| {}, 2), [5000, 6000, 7000]);
    assert_eq!(ss(|c| c.cwnd_growth = CwndGrowth::ByteCounting, 2), [6000, 8000, 10_000]);
    assert_eq!(ss(|c| { c.cwnd_growth = CwndGrowth::ByteCounting; c.abc_limit_pkts = 1 }, 2), [5000, 6000, 7000]);
    assert_eq!(ss(|c| c.cwnd_growth = CwndGrowth::Linux, 2), [6000, 8000, 10_000]);
    // A stretch ACK of 4 segments: RFC 5681 + 1, RFC 3465 (L = 2) + 2, Linux + 4 segments.
    assert_eq!(ss(|_| {}, 4), [5000, 6000, 7000]);
    assert_eq!(ss(|c| c.cwnd_growth = CwndGrowth::ByteCounting, 4), [6000, 8000, 10_000]);
    assert_eq!(ss(|c| c.cwnd_growth = CwndGrowth::Linux, 4), [8000, 12_000, 16_000]);
}

#[test]
fn congestion_avoidance_growth_per_ack_by_bytes_and_by_segments() {
    // cwnd = ssthresh = 10 segments, ACKs of 2 segments: one window of data is 5 ACKs.
    // RFC 5681 (3), + floor(SMSS²/cwnd) per ACK: 10000 + 100 = 10100, + floor(1e6/10100) =
    // 99 → 10199, + 98 → 10297, + 97 → 10394, + 96 → 10490 (half a segment per window),
    // + 95 → 10585.
    assert_eq!(cwnd_after_acks(|_| {}, 10, 10, 2, 6), [10_100, 10_199, 10_297, 10_394, 10_490, 10_585]);
    // RFC 3465 §2.1: bytes_acked reaches cwnd (5 × 2000 = 10000) at the fifth ACK: + SMSS;
    // bytes_acked starts again from 0, so the sixth ACK leaves 11000. Linux's
    // tcp_cong_avoid_ai (w = cwnd) counts the same segments: the same window.
    for growth in [CwndGrowth::ByteCounting, CwndGrowth::Linux] {
        let w = cwnd_after_acks(|c| c.cwnd_growth = growth, 10, 10, 2, 6);
        assert_eq!(w, [10_000, 10_000, 10_000, 10_000, 11_000, 11_000], "{growth:?}");
    }
}

#[test]
fn linux_slow_start_hands_what_passes_ssthresh_to_congestion_avoidance() {
    // cwnd 9, ssthresh 10 segments, ACKs of 2 segments. Linux: slow start to ssthresh
    // (10000) with the first 1000 bytes, the other 1000 credited to congestion avoidance;
    // credit 1000 + 2000·3 = 7000 < 10000 after four ACKs, 9000 after five, 11000 ≥ 10000
    // after six: + 1 segment, credit 1000. RFC 3465 (L = 2): + 2000 in slow start (9000 <
    // ssthresh), then 11000 ≥ ssthresh: bytes_acked 2000, 4000, ..., 10000 < 11000 after six.
    let linux = cwnd_after_acks(|c| c.cwnd_growth = CwndGrowth::Linux, 9, 10, 2, 6);
    assert_eq!(linux, [10_000, 10_000, 10_000, 10_000, 10_000, 11_000]);
    let abc = cwnd_after_acks(|c| c.cwnd_growth = CwndGrowth::ByteCounting, 9, 10, 2, 6);
    assert_eq!(abc, [11_000; 6]);
}

#[test]
fn ns3_rule_a_cumulative_ack_that_sacks_new_data_keeps_the_count() {
    // Segment 3 is lost, segment 1 arrives after 2, and the ACK that segment 1's arrival
    // drew is lost. The sender sees: ACK 1000; ACK 1000 SACK 2 (duplicate); ACK 3000 SACK 4
    // (cumulative, SACKs new data); ACK 3000 SACK 4-5. RFC 6675 §5: the cumulative ACK
    // resets DupAcks to 0 and counts as 1, so 2 at the last ACK (and 2 SACKed segments
    // above the hole: not IsLost): no fast retransmit. ns-3 (ProcessAck skips the reset
    // when the ACK is a duplicate): 1, 2, 3 = DupThresh at the last ACK: fast retransmit.
    for (rule, dupacks, frs) in [(DupackRule::Rfc, 2, 0), (DupackRule::Ns3, 3, 1)] {
        let (p, mut c, mut s, out) = one_window_counting(Recovery::Sack, rule, 10);
        let mut acks = Vec::new();
        for i in [0, 2, 1, 4, 5] {
            s.on_segment(&out[i], t(150), &p, &mut acks);
        }
        let mut sent = Vec::new();
        for (k, a) in acks.iter().enumerate().filter(|&(k, _)| k != 2) {
            c.on_segment(a, t(200 + k as u64), &p, &mut sent);
        }
        assert_eq!((c.dupacks, c.stats.fast_retransmits), (dupacks, frs), "{rule:?}");
    }
}

#[test]
fn ns3_rule_counts_no_dupack_after_an_rto_until_the_recovery_point() {
    // After the RTO, four ACKs below the RecoveryPoint SACK new data. RFC 6675 counts them
    // (4); ns-3's DupAck returns at once in CA_LOSS: 0.
    for (rule, dupacks) in [(DupackRule::Rfc, 4), (DupackRule::Ns3, 0)] {
        let (_, c, _, _) = sack_dupacks_after_an_rto(rule);
        assert!(c.snd_una < c.recover_mark);
        assert_eq!(c.dupacks, dupacks, "{rule:?}");
    }
}

#[test]
fn ns3_rule_the_ack_that_ends_recovery_does_not_count() {
    // Segment 2 of 0-9 is lost; the ACKs of 0 and 1 let segments 10-13 out (slow start),
    // and the third dupack starts recovery with RecoveryPoint after segment 13. Of what
    // recovery sends (14 at once, 15 on the dupack of 10), segment 14 is lost, and the ACKs
    // of 11-13 and 15 too; the
    // retransmission of 2 then draws ACK 14000 SACK 15: a full ACK that SACKs new data.
    // RFC 6675: recovery ends, DupAcks is reset and this duplicate counts: 1. ns-3: DupAck
    // runs first, in CA_RECOVERY (no count), then the exit resets the count: 0.
    for (rule, dupacks) in [(DupackRule::Rfc, 1), (DupackRule::Ns3, 0)] {
        let (p, mut c, mut s, out) = one_window_counting(Recovery::Sack, rule, 20);
        let mut acks = Vec::new();
        for (i, seg) in out.iter().enumerate().filter(|&(i, _)| i != 2) {
            s.on_segment(seg, t(150 + i as u64), &p, &mut acks);
        }
        let mut sent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut sent);
        }
        assert_eq!(c.stats.fast_retransmits, 1);
        assert_eq!(c.recover_mark, 1 + 14 * p.mss);
        let seq = |i: u32| 1 + i * 1000;
        let find = |sent: &[Packet], i: u32| *sent.iter().find(|x| x.seq == seq(i) && x.payload_len > 0).unwrap();
        let mut dup = Vec::new();
        s.on_segment(&find(&sent, 10), t(250), &p, &mut dup);
        c.on_segment(&dup[0], t(300), &p, &mut sent);
        let mut lost_acks = Vec::new();
        for i in [15, 11, 12, 13] {
            s.on_segment(&find(&sent, i), t(350), &p, &mut lost_acks);
        }
        let mut late = Vec::new();
        s.on_segment(&find(&sent, 2), t(351), &p, &mut late);
        assert_eq!(late[0].ack, seq(14), "a full ACK");
        c.on_segment(&late[0], t(400), &p, &mut sent);
        assert!(c.recovery.is_none());
        assert_eq!(c.dupacks, dupacks, "{rule:?}");
    }
}

#[test]
fn first_partial_rto_restarts_the_timer_on_the_first_partial_ack_only() {
    // SACK, segments 2, 4 and 6 of 0-9 lost: fast retransmit, then the resends of 2 and 4
    // draw two partial ACKs, at 400 and 450 ms. RFC 6298 (5.3) restarts the timer on each:
    // it expires one RTO after 450 ms. ns-3 (`NewAck(ack, m_isFirstPartialAck)`) restarts it
    // on the first only: one RTO after 400 ms.
    for (rto_rule, restarted_ms) in [(RecoveryRto::Rfc6298, 450), (RecoveryRto::FirstPartial, 400)] {
        let p = params(|c| {
            c.initial_window_pkts = 10;
            c.limited_transmit = false;
            c.recovery_rto = rto_rule;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(10 * p.mss, false, t(100), &p, &mut out);
        let mut acks = Vec::new();
        for (i, seg) in out.iter().enumerate().filter(|&(i, _)| ![2, 4, 6].contains(&i)) {
            s.on_segment(seg, t(150 + i as u64), &p, &mut acks);
        }
        let mut sent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut sent);
        }
        assert_eq!(c.stats.fast_retransmits, 1);
        for (hole, at) in [(2u32, 400), (4, 450)] {
            let retx = *sent.iter().find(|x| x.seq == 1 + hole * 1000).unwrap();
            let mut ack = Vec::new();
            s.on_segment(&retx, t(at - 50), &p, &mut ack);
            c.on_segment(&ack[0], t(at), &p, &mut sent);
            assert!(c.recovery.is_some(), "a partial ACK");
        }
        assert_eq!(c.next_deadline(), Some(t(restarted_ms) + c.rto()), "{rto_rule:?}");
    }
}

#[test]
fn ns3_disorder_ack_neither_restarts_the_timer_nor_grows_the_window() {
    // Segments 0-9 leave at 100 ms (IW 10), which starts the timer: it expires one RTO after
    // 100 ms (RFC 6298 5.1). Segment 1 is lost, and so is the ACK of segment 0; segment 2
    // draws ACK 1000 SACK 2, which the sender gets at 200 ms outside recovery: it
    // acknowledges new data and SACKs new data (a duplicate ACK by RFC 6675 §2). RFC 6298
    // (5.3) restarts the timer (one RTO after 200 ms) and RFC 5681 (2) grows cwnd by one
    // SMSS in slow start. ns-3.44 handles it in CA_DISORDER (`DupAck` moved it there), where
    // `ProcessAck` calls neither `NewAck` (the timer still one RTO after 100 ms) nor, for
    // "ns3", `IncreaseWindow` (cwnd unchanged).
    for (rule, restarted, grown) in [(DisorderAck::Rfc, true, 1), (DisorderAck::Ns3Timer, false, 1),
        (DisorderAck::Ns3, false, 0)]
    {
        let (p, mut c, mut s, out) = one_window_with(|c| c.disorder_ack = rule, 10);
        let (rto_at_send, cwnd_at_send) = (c.rto(), c.cwnd_bytes());
        let mut acks = Vec::new();
        s.on_segment(&out[0], t(150), &p, &mut acks);
        s.on_segment(&out[2], t(151), &p, &mut acks);
        let mut sent = Vec::new();
        c.on_segment(&acks[1], t(200), &p, &mut sent);
        assert_eq!((c.snd_una, c.dupacks, c.recovery.is_none()), (1 + p.mss, 1, true), "{rule:?}");
        let expires = if restarted { t(200) + c.rto() } else { t(100) + rto_at_send };
        assert_eq!(c.next_deadline(), Some(expires), "{rule:?}");
        assert_eq!(c.cwnd_bytes(), cwnd_at_send + grown * p.mss, "{rule:?}");
    }
}

#[test]
fn ns3_partial_ack_sends_one_segment_outside_cwnd() {
    // Segments 0-9 of 20 leave at 100 ms; the ACKs of 0 and 1 let 10-13 out (slow start).
    // 2 and 6-13 are lost. The dupacks of 3, 4 and 5 start recovery: 2 resent, cwnd =
    // ssthresh = FlightSize/2 = 6 segments (2-13 out). Its ACK 6 is partial; nothing above
    // 6 is SACKed, so 6-13 count in the pipe: 8. RFC 6675 (C): cwnd − pipe < 0, nothing
    // sent. ns-3's `ProcessAck` first calls `DoRetransmit` (segment 6 was not resent):
    // NextSeg finds no lost segment (rule 1) and returns new data (rule 2): segment 14,
    // outside cwnd.
    let seq = |i: u32| 1 + i * 1000;
    for (rule, sends) in [(PartialAck::Rfc6675, vec![]), (PartialAck::Ns3, vec![seq(14)])] {
        let (p, mut c, mut s, out) = one_window_with(|c| c.recovery_partial_ack = rule, 20);
        let sent = deliver(&p, &mut c, &mut s, &out, &[0, 1, 3, 4, 5]);
        assert_eq!((c.stats.fast_retransmits, c.cwnd_bytes()), (1, 6 * p.mss), "{rule:?}");
        assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), [10, 11, 12, 13, 2].map(seq), "{rule:?}");
        let mut ack = Vec::new();
        s.on_segment(&sent[4], t(250), &p, &mut ack);
        assert_eq!(ack[0].ack, seq(6), "a partial ACK");
        let mut after = Vec::new();
        c.on_segment(&ack[0], t(300), &p, &mut after);
        assert!(c.recovery.is_some());
        assert_eq!(after.iter().map(|x| x.seq).collect::<Vec<_>>(), sends, "{rule:?}");
    }
}

#[test]
fn ns3_pipe_keeps_a_sacked_retransmission_in_flight() {
    // Segments 0-9 of 20 leave at 100 ms; the ACKs of 0 and 1 let 10-13 out (slow start).
    // 2 and 4 are lost. The dupacks of 3, 5, 6 start recovery: 2 resent, cwnd = ssthresh =
    // FlightSize/2 = 6 segments (2-13 out). The dupacks of 7, 8, 9 make 4 lost (3 SACKed
    // above) and bring the pipe to 2 (resent) + 10-13 = 5: 4 is resent (pipe 6). The resent
    // 2 is lost again; the resent 4 arrives and its ACK SACKs it. RFC 6675 SetPipe skips
    // SACKed octets: 2 + 10-13 = 5 < cwnd, one new segment (14). ns-3's BytesInFlight
    // (sent − SACKed − lost + retransmitted) still counts segment 4: 6, nothing sent.
    let seq = |i: u32| 1 + i * 1000;
    for (rule, sends) in [(RecoveryPipe::Rfc6675, vec![seq(14)]), (RecoveryPipe::Ns3, vec![])] {
        let (p, mut c, mut s, out) = one_window_with(|c| c.recovery_pipe = rule, 20);
        let sent = deliver(&p, &mut c, &mut s, &out, &[0, 1, 3, 5, 6, 7, 8, 9]);
        assert_eq!((c.stats.fast_retransmits, c.cwnd_bytes()), (1, 6 * p.mss), "{rule:?}");
        assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), [10, 11, 12, 13, 2, 4].map(seq), "{rule:?}");
        let mut ack = Vec::new();
        s.on_segment(&sent[5], t(250), &p, &mut ack);
        let mut after = Vec::new();
        c.on_segment(&ack[0], t(300), &p, &mut after);
        assert!(c.recovery.is_some() && c.scoreboard.contains(seq(4) as u64), "{rule:?}");
        assert_eq!(after.iter().map(|x| x.seq).collect::<Vec<_>>(), sends, "{rule:?}");
    }
}

#[test]
fn fast_retransmit_restarts_the_timer_or_keeps_it() {
    // Segments 0-9 leave at 100 ms; 2 is lost. The ACKs of 0 and 1 arrive at 200 ms (RFC
    // 6298 5.3: the timer restarts, one RTO after 200 ms; the segments they let out do not
    // touch a running timer, 5.1). The dupacks of 3, 4, 5 start recovery at 300 ms.
    // "restart": one RTO after 300 ms. "keep" (RFC 6298 alone, ns-3): one RTO after 200 ms.
    for (rule, restarted_ms) in [(FastRetransmitRto::Restart, 300), (FastRetransmitRto::Keep, 200)] {
        let (p, mut c, mut s, out) = one_window_with(|c| c.fast_retransmit_rto = rule, 20);
        deliver(&p, &mut c, &mut s, &out, &[0, 1]);
        assert_eq!(c.next_deadline(), Some(t(200) + c.rto()));
        let mut dupacks = Vec::new();
        for i in [3, 4, 5] {
            s.on_segment(&out[i], t(250), &p, &mut dupacks);
        }
        let mut sent = Vec::new();
        for a in &dupacks {
            c.on_segment(a, t(300), &p, &mut sent);
        }
        assert_eq!(c.stats.fast_retransmits, 1);
        assert_eq!(c.next_deadline(), Some(t(restarted_ms) + c.rto()), "{rule:?}");
    }
}

#[test]
fn linux_recovery_rto_restarts_the_timer_when_the_head_is_retransmitted() {
    // SACK, 20 segments written, 0-9 sent, 1 and 5 lost. ACKs of 0, 2, 3, 4 at 200 ms:
    // fast retransmit of 1. Its ACK (5, a partial ACK) at 300 ms restarts the timer (RFC
    // 6298 5.3); 5 is not yet lost (nothing SACKed above it). The SACKs of 6 and 7 at 500
    // and 501 ms send new data (NextSeg rule 2); the SACK of 8 at 502 ms makes 5 lost
    // (DupThresh SACKed segments above) and it is resent. RFC 6298 keeps the timer one RTO
    // after 300 ms; Linux (`tcp_xmit_retransmit_queue` re-arms on resending the head) one
    // RTO after 502 ms.
    for (rule, restarted_ms) in [(RecoveryRto::Rfc6298, 300), (RecoveryRto::Linux, 502)] {
        let p = params(|c| {
            c.initial_window_pkts = 10;
            c.limited_transmit = false;
            c.recovery_rto = rule;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(20 * p.mss, false, t(100), &p, &mut out);
        assert_eq!(out.len(), 10);
        let seg = |i: u32| *out.iter().find(|x| x.seq == 1 + i * 1000).unwrap();
        let mut acks = Vec::new();
        for i in [0, 2, 3, 4] {
            s.on_segment(&seg(i), t(150 + i as u64), &p, &mut acks);
        }
        let mut sent = Vec::new();
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut sent);
        }
        assert_eq!(c.stats.fast_retransmits, 1);
        let retx = *sent.iter().find(|x| x.seq == 1001).unwrap();
        let mut ack = Vec::new();
        s.on_segment(&retx, t(250), &p, &mut ack);
        assert_eq!(ack[0].ack, 5001);
        sent.clear();
        c.on_segment(&ack[0], t(300), &p, &mut sent);
        assert!(c.recovery.is_some() && !sent.iter().any(|x| x.seq == 5001), "a partial ACK, 5 not yet lost");
        for (k, i) in [6u32, 7, 8].into_iter().enumerate() {
            let mut sack = Vec::new();
            s.on_segment(&seg(i), t(301 + k as u64), &p, &mut sack);
            c.on_segment(&sack[0], t(500 + k as u64), &p, &mut sent);
            assert_eq!(sent.iter().any(|x| x.seq == 5001), i == 8, "5 resent at the third SACK");
        }
        assert_eq!(c.next_deadline(), Some(t(restarted_ms) + c.rto()), "{rule:?}");
    }
}

#[test]
fn prr_spreads_the_reduction_over_the_acks_where_rfc_6675_waits_then_sends() {
    // SACK, a window of 20 segments (40 written), segment 0 lost; the duplicate ACK j
    // SACKs segment j. At j = 3 fast retransmit: ssthresh = 20/2 = 10, pipe before it =
    // segments 4..19 = 16, and after dupack j (no loss) pipe = (19 - j) originals + the
    // resend + n new segments sent so far.
    // RFC 6675: cwnd = 10 at once, so nothing new until pipe < 10, at j = 11; then one per
    // dupack. PRR (RFC 6937, Linux's tcp_cwnd_reduction, prior cwnd 20): while pipe > 10,
    // ceil(10 (j - 2) / 20) segments sent in all (the resend forced at j = 3): one per two
    // dupacks; at j = 15 pipe is 4 + 1 + 5 = 10, so the slow-start bound allows
    // min(10 - pipe, ...) = 0, and from j = 16 pipe 9 allows one each.
    for (pacing, expected) in [
        (super::config::RecoveryPacing::Rfc6675, [1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
        (super::config::RecoveryPacing::Prr, [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1, 1]),
    ] {
        let p = params(|c| {
            c.initial_window_pkts = 20;
            c.limited_transmit = false;
            c.recovery_pacing = pacing;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(40 * p.mss, false, t(100), &p, &mut out);
        assert_eq!(out.len(), 20);
        let mut sent_per_dupack = Vec::new();
        for (j, seg) in out.iter().enumerate().skip(1) {
            let mut ack = Vec::new();
            s.on_segment(seg, t(150 + j as u64), &p, &mut ack);
            let mut sent = Vec::new();
            c.on_segment(&ack[0], t(300 + j as u64), &p, &mut sent);
            if j >= 3 {
                sent_per_dupack.push(sent.len());
            }
        }
        assert_eq!(c.stats.fast_retransmits, 1);
        assert_eq!(sent_per_dupack, expected, "{pacing:?}");
    }
}

/// Issue 13's goal: an active flow (its two endpoints, the simulator's `Conn` and two
/// entries of the demultiplexing map) takes at most 1 KiB. The endpoint was 816 bytes
/// before issue 13 (1 808 bytes per flow).
#[test]
fn an_active_flow_fits_in_one_kib() {
    use std::mem::size_of;
    const GOAL_BYTES: usize = 1024;
    let conn_bytes = size_of::<crate::flows::Conn>();
    let demux_bytes = 2 * size_of::<(FlowKey, u32)>();
    let endpoint_bytes = size_of::<Endpoint>();
    assert!(
        2 * endpoint_bytes + conn_bytes + demux_bytes <= GOAL_BYTES,
        "Endpoint is {endpoint_bytes} bytes and Conn {conn_bytes}: at most {} per endpoint fit the goal",
        (GOAL_BYTES - conn_bytes - demux_bytes) / 2
    );
}

#[test]
fn a_burst_is_covered_by_the_first_sack_block_that_holds_it_while_a_hole_holds_the_ack() {
    // Two 100-byte bursts; the first is lost. With SACK the receiver's ACK of the second
    // (one RTT after its send) carries a SACK block over all of it (RFC 2018 §4): covered
    // at 200 ms, though the cumulative ACK passes it only after the first burst's RTO
    // resend (1 s later, then one RTT). Without SACK only the cumulative ACK covers it.
    for recovery in [Recovery::Sack, Recovery::Newreno] {
        let p = params(|c| c.recovery = recovery);
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(100, true, t(100), &p, &mut out);
        c.app_write(100, true, t(100), &p, &mut out);
        assert_eq!(out.len(), 2);
        let mut acks = Vec::new();
        s.on_segment(&out[1], t(150), &p, &mut acks);
        let mut resent = Vec::new();
        c.on_segment(&acks[0], t(200), &p, &mut resent);
        let sacked = (recovery == Recovery::Sack).then_some(t(200));
        assert_eq!(c.outstanding_bursts().collect::<Vec<_>>(),
                   [(t(100), Some(t(100)), None), (t(100), Some(t(100)), sacked)], "{recovery:?}");
        let rto = c.next_deadline().unwrap();
        assert_eq!(rto, t(1100), "{recovery:?}: the 1 s minimum RTO from the first send");
        c.on_timer(rto, &p, &mut resent);
        assert_eq!(resent[0].seq, out[0].seq, "{recovery:?}");
        let mut acks = Vec::new();
        s.on_segment(&resent[0], t(1150), &p, &mut acks);
        c.on_segment(&acks[0], t(1200), &p, &mut resent);
        let second_covered = sacked.unwrap_or(t(1200));
        assert_eq!(c.completed_bursts.as_slice(), [
            CompletedBurst { written: t(100), first_sent: t(100), covered: t(1200), acked: t(1200) },
            CompletedBurst { written: t(100), first_sent: t(100), covered: second_covered, acked: t(1200) },
        ], "{recovery:?}");
    }
}

#[test]
fn diversity_copies_a_timeout_retransmission_only_when_asked() {
    // All four copies of a 200-byte burst are lost; the RTO fires at 1.1 s (1 s minimum).
    // The paper's Approach III resends once; with `diversity_copy_retransmissions` the
    // resend goes out 4 times (800 bytes fit the 1-segment window after the RTO). A second
    // burst keeps data outstanding, so the three copies' ACKs would be RFC 5681 duplicate
    // ACKs (three: a fast retransmit) if they were counted; the receiver keeps one copy.
    for (copied, sends) in [(false, 1), (true, 4)] {
        let p = params(|c| {
            c.diversity_copies = 4;
            c.diversity_copy_retransmissions = copied;
            c.recovery = Recovery::Newreno;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut lost = Vec::new();
        c.app_write(200, true, t(100), &p, &mut lost);
        assert_eq!(lost.len(), 4);
        let mut resent = Vec::new();
        c.on_timer(t(1100), &p, &mut resent);
        assert_eq!(resent.len(), sends, "copied: {copied}");
        assert!(resent.iter().all(|r| (r.seq, r.payload_len) == (lost[0].seq, 200)), "copied: {copied}");
        c.app_write(200, true, t(1120), &p, &mut resent);
        assert_eq!(resent.len(), sends + 4, "the second burst and its copies (a first send)");
        let mut acks = Vec::new();
        for seg in &resent {
            s.on_segment(seg, t(1150), &p, &mut acks);
        }
        assert_eq!(s.stats.bytes_delivered, 400, "copied: {copied}: each byte delivered once");
        let mut more = Vec::new();
        for a in &acks {
            c.on_segment(a, t(1200), &p, &mut more);
        }
        assert_eq!((c.stats.retransmits, c.stats.fast_retransmits), (1, 0), "copied: {copied}");
        assert!(more.iter().all(|m| m.payload_len == 0 || m.seq != lost[0].seq), "no resend of the burst");
        assert_eq!(c.completed_bursts.len(), 2, "copied: {copied}");
    }
}

fn rack(edit: impl FnOnce(&mut TcpConfig)) -> TcpParams {
    params(|c| {
        c.recovery = Recovery::Sack;
        c.loss_detection = super::config::LossDetection::Rack;
        edit(c);
    })
}

#[test]
fn rack_marks_a_lost_segment_after_an_rtt_and_a_quarter_min_rtt_without_a_third_dupack() {
    // RFC 8985 §6.2: two segments sent at 100 ms, the first lost. The second's SACK at 200 ms
    // gives RACK.rtt = min_RTT = 100 ms; the first, sent at the same time with a lower
    // sequence, counts as sent before it. No reordering seen, one SACKed segment (< DupThresh),
    // not in recovery: reo_wnd = min_RTT/4 = 25 ms, so it is lost at 100 + 100 + 25 = 225 ms.
    // Limited transmit's one new segment brings a second dupack only: DupThresh would wait
    // for the RTO (1 s minimum, at 1100 ms).
    for detection in [super::config::LossDetection::Rack, super::config::LossDetection::Dupthresh] {
        let p = rack(|c| {
            c.initial_window_pkts = 2;
            c.loss_detection = detection;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(3000, false, t(100), &p, &mut out);
        let segs: Vec<_> = out.drain(..).collect();
        assert_eq!(segs.len(), 2);
        let mut acks = Vec::new();
        s.on_segment(&segs[1], t(150), &p, &mut acks);
        c.on_segment(&acks[0], t(200), &p, &mut out);
        assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [2001], "limited transmit: the third segment");
        acks.clear();
        s.on_segment(&out[0], t(250), &p, &mut acks);
        out.clear();
        c.on_segment(&acks[0], t(300), &p, &mut out);
        if detection == super::config::LossDetection::Dupthresh {
            assert!(out.is_empty(), "two dupacks: no fast retransmit");
            assert_eq!(c.next_deadline(), Some(t(1100)), "the RTO armed at the first send");
            continue;
        }
        // The third segment's SACK (sent at 200 ms) moved RACK.xmit_ts; the first is due
        // at 100 + RACK.rtt 100 + 25 = 225 ms, already past at 300 ms.
        assert_eq!(out.first().map(|x| x.seq), Some(1), "RACK marked it lost on this ACK");
        assert_eq!((c.stats.fast_retransmits, c.stats.timeouts), (1, 0));
        // And by the timer alone, without the third segment's SACK: at 225 ms exactly.
        let (mut c, mut s) = established(&p, 0, 0);
        out.clear();
        c.app_write(3000, false, t(100), &p, &mut out);
        let segs: Vec<_> = out.drain(..).collect();
        acks.clear();
        s.on_segment(&segs[1], t(150), &p, &mut acks);
        c.on_segment(&acks[0], t(200), &p, &mut out);
        out.clear();
        assert_eq!(c.next_deadline(), Some(t(225)), "the reordering timer: 100 + 100 + 100/4 ms");
        c.on_timer(t(225), &p, &mut out);
        assert_eq!(out.first().map(|x| x.seq), Some(1));
        assert_eq!((c.stats.fast_retransmits, c.stats.timeouts), (1, 0));
    }
}

#[test]
fn rack_finds_a_lost_retransmission_by_time_and_resends_it_without_an_rto() {
    // Four segments at 100 ms, the first lost; SACKs of 2, 3, 4 at 200, 201, 202 ms (each
    // segment's RTT is its ACK's time minus 100 ms). At 202 ms three SACKed segments reach
    // DupThresh with no reordering seen: reo_wnd = 0 and the first, due at 100 + 102 ms,
    // is lost then. Its retransmission (202 ms) is lost too. The segments limited transmit
    // sent at 200 and 201 ms were sent before it; fast recovery's new segment at 300 ms is
    // sent after it, and its SACK at 400 ms (RACK.rtt = 100 ms, reo_wnd = 0 in recovery)
    // finds the retransmission due at 202 + 100 = 302 ms: resent at 400 ms, long before the
    // RTO (1 s after the last new ACK... none came: 100 ms + 1 s = 1100 ms).
    let p = rack(|c| c.initial_window_pkts = 4);
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(20_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    assert_eq!(segs.len(), 4);
    let mut sent = Vec::new();
    for (i, at) in [(1, 200), (2, 201), (3, 202)] {
        let mut acks = Vec::new();
        s.on_segment(&segs[i], t(at - 50), &p, &mut acks);
        c.on_segment(&acks[0], t(at), &p, &mut out);
        sent.extend(out.drain(..).map(|x| (at, x)));
    }
    let seqs: Vec<_> = sent.iter().map(|(at, x)| (*at, x.seq)).collect();
    assert_eq!(seqs, [(200, 4001), (201, 5001), (202, 1)], "limited transmit twice, then the fast retransmit");
    assert_eq!(c.stats.fast_retransmits, 1);
    // The retransmission of 1 is lost; 4001 and 5001 arrive.
    let mut later = Vec::new();
    for (at, x) in &sent[..2] {
        let mut acks = Vec::new();
        s.on_segment(x, t(at + 50), &p, &mut acks);
        c.on_segment(&acks[0], t(at + 100), &p, &mut out);
        later.extend(out.drain(..).map(|x| (at + 100, x)));
    }
    assert!(later.iter().all(|(_, x)| x.seq > 1), "4001 and 5001 were sent before the retransmission");
    let (at, newer) = later.first().cloned().expect("recovery sends new data as SACKs free the pipe");
    let mut acks = Vec::new();
    s.on_segment(&newer, t(at + 50), &p, &mut acks);
    c.on_segment(&acks[0], t(at + 100), &p, &mut out);
    assert_eq!(at + 100, 400);
    assert_eq!(out.first().map(|x| x.seq), Some(1), "the lost retransmission goes again at 400 ms");
    assert_eq!((c.stats.retransmits, c.stats.timeouts, c.stats.fast_retransmits), (2, 0, 1));
}

#[test]
fn rack_does_not_mark_a_segment_reordered_within_the_window() {
    // Two segments at 100 ms; the second arrives first (SACKed at 200 ms, timer for
    // 100 + 100 + 25 = 225 ms), the first 10 ms later: the cumulative ACK at 210 ms delivers
    // it before its deadline. Nothing is resent and the reordering timer is gone.
    let p = rack(|c| c.initial_window_pkts = 2);
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(2000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    let mut acks = Vec::new();
    s.on_segment(&segs[1], t(150), &p, &mut acks);
    s.on_segment(&segs[0], t(160), &p, &mut acks);
    c.on_segment(&acks[0], t(200), &p, &mut out);
    assert_eq!(c.next_deadline(), Some(t(225)));
    c.on_segment(&acks[1], t(210), &p, &mut out);
    assert!(out.is_empty());
    assert_eq!(c.next_deadline(), None, "all acknowledged: no timer");
    assert_eq!((c.stats.retransmits, c.stats.fast_retransmits), (0, 0));
}

#[test]
fn rack_starts_recovery_before_the_cumulative_part_of_the_ack_grows_or_sends() {
    // Three segments at 100 ms, the second lost; the ACK of the first is lost, so the third's
    // (200 ms) both advances snd_una and SACKs. With DupThresh 1 one SACKed segment leaves no
    // reordering window: the second (due at 100 + 100 ms) is lost at once. Linux's tcp_ack
    // runs tcp_fastretrans_alert before growing cwnd or sending: recovery starts with
    // ssthresh = max(FlightSize 3001 - 1001 = 2000 / 2, 2 segments) = 2000 = cwnd, the fast
    // retransmit goes first, then one new segment (pipe: the retransmission's 1000 bytes).
    // Growing first would send two new segments (cwnd 3 -> 4 segments) ahead of it. The
    // SACKs at 300 ms find nothing more lost.
    let p = rack(|c| {
        c.initial_window_pkts = 3;
        c.dupack_threshold = 1;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(10_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    let mut acks = Vec::new();
    s.on_segment(&segs[0], t(150), &p, &mut acks);
    acks.clear(); // lost
    s.on_segment(&segs[2], t(150), &p, &mut acks);
    c.on_segment(&acks[0], t(200), &p, &mut out);
    let sent: Vec<_> = out.drain(..).collect();
    assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), [1001, 3001], "the fast retransmit, then new data");
    acks.clear();
    for seg in &sent {
        s.on_segment(seg, t(250), &p, &mut acks);
    }
    for (i, a) in acks.iter().enumerate() {
        c.on_segment(a, t(300 + i as u64), &p, &mut out);
    }
    assert!(out.iter().all(|x| x.seq != 1001), "the retransmission was not marked lost");
    assert_eq!((c.stats.retransmits, c.stats.fast_retransmits, c.stats.timeouts), (1, 1, 0));
}

#[test]
fn rack_after_an_rto_resends_a_lost_retransmission_in_fast_recovery_without_a_second_rto() {
    // Ten segments at 100 ms; the first arrives (ACK at 200 ms: min_RTT = 100 ms, cwnd 11,
    // two new segments), everything else is lost. The RTO armed at 200 ms fires at 1200 ms
    // (1 s minimum) and resends 1001 alone; its ACK at 1300 ms grows cwnd to 2 and the
    // go-back-N resends 2001 and 3001. 2001 is lost again, 3001's SACK comes at 1400 ms:
    // RACK.rtt = 100 ms (not below min_RTT, so not ambiguous), and after an RTO Linux's
    // reordering window is 0 (icsk_ca_state >= TCP_CA_Recovery), so 2001, resent at 1300 ms,
    // is lost at 1300 + 100 = 1400 ms. A lost retransmission in CA_Loss makes Linux enter
    // fast recovery (FLAG_LOST_RETRANS): ssthresh = cwnd/2 floored at 2 segments = 2000
    // bytes (half the FlightSize, 13001 - 2001, would be 5500), and 2001 goes again at once.
    // Without it 2001 would wait for the next RTO, at 1300 ms + 1 s at the earliest.
    let p = rack(|c| c.initial_window_pkts = 10);
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    assert_eq!(segs.len(), 10);
    let mut acks = Vec::new();
    s.on_segment(&segs[0], t(150), &p, &mut acks);
    c.on_segment(&acks[0], t(200), &p, &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [10_001, 11_001], "slow start: two new, both lost");
    out.clear();
    assert_eq!(c.next_deadline(), Some(t(1200)), "the RTO: 1 s after the last new ACK");
    c.on_timer(t(1200), &p, &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [1001]);
    acks.clear();
    s.on_segment(&out[0], t(1250), &p, &mut acks);
    out.clear();
    c.on_segment(&acks[0], t(1300), &p, &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [2001, 3001], "go-back-N with cwnd 2");
    acks.clear();
    s.on_segment(&out[1], t(1350), &p, &mut acks); // 2001 lost again
    out.clear();
    c.on_segment(&acks[0], t(1400), &p, &mut out);
    assert_eq!(out.first().map(|x| x.seq), Some(2001), "the lost retransmission goes again at 1400 ms");
    assert_eq!((c.stats.timeouts, c.stats.fast_retransmits), (1, 1));
    assert_eq!(c.ssthresh_bytes(), 2000);
}

#[test]
fn rack_prr_adds_the_slow_start_segment_only_on_an_ack_that_advances_snd_una_without_a_new_loss() {
    // Linux's tcp_cwnd_reduction (RFC 6937bis): with pipe at or below ssthresh, sndcnt =
    // min(ssthresh - pipe, max(prr_delivered - prr_out, delivered) + 1 if the ACK advanced
    // snd_una and marked nothing lost, else + 0). Ten segments at 100 ms, 0..6 lost; the
    // SACKs of 7, 8, 9 come at 200, 201, 202 ms (limited transmit sends 10 and 11 on the
    // first two). At 202 ms three SACKed segments leave no reordering window: 0..6 are
    // lost, recovery starts with ssthresh = FlightSize 12000 / 2 = 6000 and pipe = 10, 11 =
    // 2000 bytes. That ACK marked losses: sndcnt = min(4000, max(1000, 1000)) = 1000, the
    // fast retransmit alone (with the + 1 a second retransmission would follow).
    let p = rack(|c| {
        c.initial_window_pkts = 10;
        c.recovery_pacing = super::config::RecoveryPacing::Prr;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    let mut sent = Vec::new();
    for (i, at) in [(7, 200), (8, 201), (9, 202)] {
        let mut acks = Vec::new();
        s.on_segment(&segs[i], t(at - 50), &p, &mut acks);
        c.on_segment(&acks[0], t(at), &p, &mut out);
        sent.push(out.drain(..).collect::<Vec<_>>());
    }
    let seqs = |v: &[Packet]| v.iter().map(|x| x.seq).collect::<Vec<_>>();
    assert_eq!([seqs(&sent[0]), seqs(&sent[1]), seqs(&sent[2])], [vec![10_001], vec![11_001], vec![1]]);
    assert_eq!((c.ssthresh_bytes(), c.stats.fast_retransmits), (6000, 1));
    // 10 and 11 arrive (SACK-only ACKs at 300 and 301 ms: nothing newly lost, snd_una
    // unmoved): each time prr_delivered - prr_out = 1000, so one segment each, the next
    // lost ones. The retransmission of 0 arrives next: the ACK at 302 ms advances snd_una
    // and marks nothing, so sndcnt = min(6000 - 2000, max(4000 - 3000, 1000) + 1000) = 2000
    // (pipe: the two retransmissions just sent): two segments.
    let mut got = Vec::new();
    for (at, seg) in [(300, &sent[0][0]), (301, &sent[1][0]), (302, &sent[2][0])] {
        let mut acks = Vec::new();
        s.on_segment(seg, t(at - 50), &p, &mut acks);
        c.on_segment(&acks[0], t(at), &p, &mut out);
        got.push(seqs(&out));
        out.clear();
    }
    assert_eq!(got, [vec![1001], vec![2001], vec![3001, 4001]]);
    assert_eq!((c.stats.timeouts, c.stats.fast_retransmits), (0, 1));
}

#[test]
fn linux_pacing_holds_the_fast_retransmit_until_the_pacing_schedule_allows() {
    // Linux sends the fast retransmit from tcp_xmit_retransmit_queue, which stops at
    // tcp_pacing_check: PRR forces it into cwnd, pacing still decides when it leaves. The
    // PRR test's losses, paced: at 100 ms IW 10 goes as 5 buffers of 2, the 5th paced: with
    // SRTT 100 ms, rate = 200% of 10 000 B per SRTT, so 1000 B take 5 ms and the schedule
    // ends at 110 ms. At 200 ms (SACK of 7) limited transmit sends 10: 90 ms late, so it
    // gets min(5/2, 90) ms back and the next may leave at 202.5 ms. At 201 ms (SACK of 8)
    // limited transmit is held; at 202 ms (SACK of 9) RACK marks 0..6 lost and recovery
    // starts, but the retransmission of 0 waits for 202.5 ms.
    let p = rack(|c| {
        c.initial_window_pkts = 10;
        c.recovery_pacing = super::config::RecoveryPacing::Prr;
        c.pacing = super::config::Pacing::Linux;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    assert_eq!(segs.len(), 10);
    let mut sent = Vec::new();
    for (i, at) in [(7, 200), (8, 201), (9, 202)] {
        let mut acks = Vec::new();
        s.on_segment(&segs[i], t(at - 50), &p, &mut acks);
        c.on_segment(&acks[0], t(at), &p, &mut out);
        sent.push(out.drain(..).map(|x| x.seq).collect::<Vec<_>>());
    }
    assert_eq!(sent, [vec![10_001], vec![], vec![]]);
    assert_eq!(c.stats.fast_retransmits, 1);
    let at = Instant(t(202).0 + 500_000);
    assert_eq!(c.next_deadline(), Some(at));
    c.on_timer(at, &p, &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [1]);
}

#[test]
fn linux_pacing_spaces_buffers_of_two_segments_after_the_tenth_by_their_length_at_twice_cwnd_per_srtt() {
    // Linux's tcp_update_skb_after_send / tcp_update_pacing_rate: once 10 data segments are
    // out, each buffer pushes the next departure back by its length / rate, rate = 200%
    // (cwnd below ssthresh/2: slow start) of max(cwnd, flight) per SRTT; a buffer holds
    // min(2, cwnd − in flight, cwnd / 2) segments (tcp_min_tso_segs, tcp_cwnd_test). IW 20
    // after a 100 ms handshake: 5 buffers of 2 go at 100 ms; the 5th brings the count to 10,
    // so its 2 x 1000 B / (2 x 20000 B / 100 ms) = 5 ms hold the 11th until 105 ms; at
    // 105 ms the 11th and 12th leave together and hold the 13th until 110 ms.
    let p = params(|c| {
        c.initial_window_pkts = 20;
        c.pacing = super::config::Pacing::Linux;
    });
    let (mut c, _) = established(&p, 0, 0);
    let mut out = Vec::new();
    c.app_write(100_000, false, t(100), &p, &mut out);
    assert_eq!(out.len(), 10, "the first 10 unpaced, then the pacing rate holds the 11th");
    let at = Instant(t(100).0 + 5_000_000);
    assert_eq!(c.next_deadline(), Some(at));
    out.clear();
    c.on_timer(at, &p, &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), [10_001, 11_001]);
    assert_eq!(c.next_deadline(), Some(Instant(at.0 + 5_000_000)));
    // Without pacing the whole initial window goes at once.
    let p = params(|c| c.initial_window_pkts = 20);
    let (mut c, _) = established(&p, 0, 0);
    out.clear();
    c.app_write(100_000, false, t(100), &p, &mut out);
    assert_eq!(out.len(), 20);
}

/// `rtt_samples`: a segment held in a queue reaches Linux's estimator on its ACK, and a
/// timed sender's only if it was the timed segment. The handshake (0..100 ms) and the ACK of
/// the first of 4 segments sent at 100 ms (at 200 ms) give both senders samples of 100 ms:
/// SRTT 100, RTTVAR 3/4·50 = 37.5, RTO max(1 s, 100 + 4·37.5) = 1 s. The other three are held
/// until one cumulative ACK at 1000 ms. Every ACK: a sample of 900 ms from the oldest
/// (RFC 6298 (2.3): RTTVAR 3/4·37.5 + 1/4·|100 − 900| = 228.125, SRTT 7/8·100 + 900/8 = 200,
/// RTO 200 + 4·228.125 = 1112.5 ms). Timed: the segment timed at 200 ms (sent on the first
/// ACK) is not covered, so no sample: SRTT 100, RTO 1 s.
#[test]
fn every_ack_samples_a_held_segment_that_timing_one_per_rtt_misses() {
    for (rtt_samples, srtt_ms, rto_us) in [(RttSamples::Timed, 100, 1_000_000), (RttSamples::EveryAck, 200, 1_112_500)] {
        let p = params(|c| {
            c.timestamps = false;
            c.initial_window_pkts = 4;
            c.rtt_samples = rtt_samples;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        assert_eq!(c.rtt_estimator().srtt(), Some(Duration::from_millis(100)), "{rtt_samples:?}: the SYN's sample");
        let mut out = Vec::new();
        c.app_write(10 * p.mss, false, t(100), &p, &mut out);
        let first: Vec<_> = out.drain(..).collect();
        assert_eq!(first.len(), 4);
        let mut acks = Vec::new();
        s.on_segment(&first[0], t(150), &p, &mut acks);
        c.on_segment(&acks.pop().unwrap(), t(200), &p, &mut out);
        assert!(!out.is_empty(), "new segments sent on the ACK");
        for seg in &first[1..] {
            s.on_segment(seg, t(950), &p, &mut acks);
        }
        let cumulative = acks.pop().unwrap();
        assert_eq!(cumulative.ack, 1 + 4 * p.mss as u32);
        c.on_segment(&cumulative, t(1000), &p, &mut out);
        assert_eq!(c.rtt_estimator().srtt(), Some(Duration::from_millis(srtt_ms)), "{rtt_samples:?}");
        assert_eq!(c.rtt_estimator().rto(), Duration::from_micros(rto_us), "{rtt_samples:?}");
    }
}

#[test]
fn the_congestion_state_follows_disorder_recovery_and_loss() {
    // RFC 6675 with DupThresh 3: one duplicate ACK is Disorder, the third starts Recovery,
    // the ACK that reaches `recover` returns to Open, an RTO is Loss until `recover`.
    let p = params(|c| {
        c.recovery = Recovery::Sack;
        c.initial_window_pkts = 10;
    });
    let (mut c, mut s) = established(&p, 0, 0);
    assert_eq!(c.cong_state(), CongState::Open);
    let mut out = Vec::new();
    c.app_write(10_000, false, t(100), &p, &mut out);
    let segs: Vec<_> = out.drain(..).collect();
    let mut acks = Vec::new();
    for seg in segs.iter().skip(1).take(4) {
        s.on_segment(seg, t(150), &p, &mut acks); // segment 0 lost
    }
    c.on_segment(&acks[0], t(200), &p, &mut out);
    assert_eq!(c.cong_state(), CongState::Disorder);
    c.on_segment(&acks[1], t(200), &p, &mut out);
    c.on_segment(&acks[2], t(200), &p, &mut out);
    assert_eq!(c.cong_state(), CongState::Recovery);
    let resent = out.iter().find(|x| x.seq == 1).copied().expect("the fast retransmit of segment 0");
    let mut full = Vec::new();
    s.on_segment(&resent, t(250), &p, &mut full);
    for seg in segs.iter().skip(5) {
        s.on_segment(seg, t(250), &p, &mut full);
    }
    for a in &full {
        c.on_segment(a, t(300), &p, &mut out);
    }
    assert_eq!((c.cong_state(), c.bytes_acked()), (CongState::Open, 10_000));
    // A whole window lost: the timer fires, and the state is Loss until it is all resent.
    c.app_write(5_000, false, t(300), &p, &mut out);
    let deadline = c.next_deadline().unwrap();
    c.on_timer(deadline, &p, &mut out);
    assert_eq!((c.cong_state(), c.stats.timeouts), (CongState::Loss, 1));
}

#[test]
fn params_cannot_be_built_from_a_table_the_scenario_refuses() {
    // NewReno with PRR: refused as the scenario refuses it, with the same field and words.
    let c = TcpConfig { recovery: Recovery::Newreno, recovery_pacing: RecoveryPacing::Prr, ..TcpConfig::default() };
    let e = TcpParams::try_from(&c).unwrap_err();
    assert_eq!((e.field.as_str(), e.value.as_str()), ("recovery_pacing", "prr"));
    assert!(e.allowed.contains("only with recovery = \"sack\""), "{e}");
    let scenario = crate::Scenario::from_json(r#"{"tcp":{"recovery":"newreno","recovery_pacing":"prr"},"flows":[{"app":"bulk"}]}"#);
    assert_eq!(scenario.unwrap_err().allowed, e.allowed);
    assert!(TcpParams::try_from(&TcpConfig::default()).is_ok());
}

/// 20 segments sent at once, segment 2 lost, 0, 1 and every later one delivered: the third
/// duplicate ACK (of 3, 4, 5) starts recovery with 18 segments outstanding, 3 of them SACKed.
fn twenty_with_the_third_lost(edit: impl FnOnce(&mut TcpConfig)) -> (TcpParams, Endpoint, Endpoint, Vec<Packet>) {
    let (p, mut c, mut s, out) = one_window_with(|c| {
        c.initial_window_pkts = 20;
        edit(c);
    }, 20);
    assert_eq!(out.len(), 20);
    let arrive: Vec<usize> = (0..20).filter(|&i| i != 2).collect();
    let resent = deliver(&p, &mut c, &mut s, &out, &arrive);
    (p, c, s, resent)
}

#[test]
fn ssthresh_from_bytes_in_flight_leaves_out_what_the_duplicate_acks_say_has_left() {
    use super::config::SsthreshFrom;
    // ns-3.44 passes BytesInFlight to GetSsThresh (docs/validation.md, diagnosis 1). With
    // SACK it is RFC 6675's pipe: 18 outstanding - 3 SACKed - 1 lost = 14 segments, so
    // ssthresh = 7 segments; without SACK, ns-3's emulated SACK leaves out a segment per
    // duplicate ACK: 18 - 3 = 15, ssthresh 7.5. RFC 5681's FlightSize / 2 is 9 either way.
    for (recovery, from, ssthresh) in [
        (Recovery::Sack, SsthreshFrom::BytesInFlight, 7_000),
        (Recovery::Newreno, SsthreshFrom::BytesInFlight, 7_500),
        (Recovery::Sack, SsthreshFrom::FlightSize, 9_000),
        (Recovery::Newreno, SsthreshFrom::FlightSize, 9_000),
    ] {
        let (_, c, _, _) = twenty_with_the_third_lost(|c| {
            c.recovery = recovery;
            c.ssthresh_from = from;
        });
        assert_eq!(c.stats.fast_retransmits, 1);
        assert_eq!(c.ssthresh_bytes(), ssthresh, "{recovery:?} from {from:?}");
    }
}

#[test]
fn recovery_exit_ns3_grows_the_window_on_the_ack_that_ends_recovery() {
    use super::config::RecoveryExit;
    // The retransmission of segment 2 fills the only hole: its ACK reaches `recover`. RFC
    // 6675 sets cwnd = ssthresh = 9 segments; ns-3 then grows it for that ACK as in
    // congestion avoidance, RFC 5681 (3): + SMSS^2 / cwnd = 1000^2 / 9000 = 111 bytes.
    for (exit, cwnd) in [(RecoveryExit::Rfc, 9_000), (RecoveryExit::Ns3, 9_111)] {
        let (p, mut c, mut s, resent) = twenty_with_the_third_lost(|c| c.recovery_exit = exit);
        let retransmission = resent.iter().find(|x| x.seq == 2001).expect("segment 2 resent");
        let mut acks = Vec::new();
        s.on_segment(retransmission, t(250), &p, &mut acks);
        assert_eq!(acks.last().unwrap().ack, 20_001);
        let mut out = Vec::new();
        c.on_segment(acks.last().unwrap(), t(300), &p, &mut out);
        assert_eq!(c.cong_state(), CongState::Open);
        assert_eq!(c.cwnd_bytes(), cwnd, "{exit:?}");
    }
}

/// SACK with RACK, IW 10, 10 segments sent at 100 ms; `arrive` reach the receiver at 150 ms
/// and their ACKs the sender at 200 ms (every RTT sample 100 ms, so SRTT = 100 ms).
fn tail_lost(tail_loss_probe: bool, arrive: &[usize]) -> (TcpParams, Endpoint, Endpoint, Vec<Packet>) {
    let (p, mut c, mut s, out) = one_window_with(|c| {
        c.loss_detection = LossDetection::Rack;
        c.tail_loss_probe = tail_loss_probe;
    }, 10);
    let sent = deliver(&p, &mut c, &mut s, &out, arrive);
    assert!(sent.is_empty());
    (p, c, s, out)
}

#[test]
fn a_tail_loss_probe_resends_the_last_segment_two_rtts_after_the_last_ack() {
    // Segments 8 and 9 lost. Linux's tcp_schedule_loss_probe at the last ACK (200 ms), two
    // segments out: PTO = 2·SRTT + TCP_TIMEOUT_MIN_US = 200 + 2 ms, well before the RTO
    // (1 s minimum). No new data is written, so tcp_send_loss_probe resends the last segment.
    let (p, mut c, mut s, _) = tail_lost(true, &(0..8).collect::<Vec<_>>());
    assert_eq!(c.next_deadline(), Some(t(402)));
    let mut probe = Vec::new();
    c.on_timer(t(402), &p, &mut probe);
    assert_eq!(probe.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![9001], "the last segment, once");
    assert_eq!(c.loss_probes(), (1, 0));
    // Its ACK (8001, SACK 9001-10001) lets RACK mark segment 8 lost once an RTT and the
    // reordering window (SRTT/4) have passed since 8 was sent: fast recovery, no RTO.
    let mut acks = Vec::new();
    s.on_segment(&probe[0], t(452), &p, &mut acks);
    let mut resent = Vec::new();
    c.on_segment(&acks[0], t(502), &p, &mut resent);
    assert_eq!(resent.first().map(|x| x.seq), Some(8001));
    assert_eq!((c.stats.fast_retransmits, c.stats.timeouts), (1, 0));
    // Without the probe the same tail waits for the RTO.
    let (p, mut c, _, _) = tail_lost(false, &(0..8).collect::<Vec<_>>());
    let deadline = c.next_deadline().unwrap();
    assert!(deadline >= t(1200), "the RTO, at least the 1 s minimum after the last ACK");
    c.on_timer(deadline, &p, &mut Vec::new());
    assert_eq!((c.stats.timeouts, c.loss_probes().0), (1, 0));
}

#[test]
fn with_tlp_rto_from_head_a_probe_after_new_data_is_capped_by_the_heads_rto() {
    // 20 segments written, IW 10 sent at 100 ms; the ACKs of segments 0 and 1 come at
    // 200 ms and slow start sends more. Linux's tcp_write_xmit then schedules the probe with
    // tcp_schedule_loss_probe(sk, false): 2·SRTT + 2 ms, but no later than
    // tcp_rto_delta_us, the RTO from the head's (segment 2's) send at 100 ms. Without the
    // knob the cap is the RTO armed at the ACK (200 ms).
    let pto = |from_head: bool| {
        let (p, mut c, mut s, out) = one_window_with(|c| {
            c.loss_detection = LossDetection::Rack;
            c.tail_loss_probe = true;
            c.tlp_rto_from_head = from_head;
            c.rto_rule = super::config::RtoRule::Linux;
            c.min_rto_ms = 100.0;
        }, 20);
        let sent = deliver(&p, &mut c, &mut s, &out, &[0, 1]);
        assert!(!sent.is_empty(), "slow start sends new data on the ACKs");
        let srtt = c.rtt_estimator().srtt().unwrap();
        let two_rtts = t(200) + srtt + srtt + Duration::from_millis(2);
        let cap = if from_head { t(100) + c.rto() } else { t(200) + c.rto() };
        assert_eq!(c.queues.as_deref().unwrap().tlp.pto_at, Some(two_rtts.min(cap)), "from_head {from_head}");
        two_rtts.min(cap)
    };
    assert!(pto(true) < pto(false), "the head's cap is the earlier one here");
}

#[test]
fn with_sack_rearms_rto_the_sacks_of_older_segments_push_the_rto_past_a_resent_head() {
    // Segment 0 lost of IW 10 sent at 100 ms; segments 1-9 arrive and their SACKs reach the
    // sender one every 10 ms from 200 ms. Fast recovery resends segment 0 at some ACK;
    // Linux's tcp_clean_rtx_queue then takes each later SACK's RTT sample from a segment
    // sent at 100 ms, before the head's resend, and tcp_set_xmit_timer re-arms the RTO from
    // that ACK. Without the knob the RTO stays where the resend armed it.
    let last_sack = t(280);
    let rto_at = |rearms: bool| {
        let (p, mut c, mut s, out) = one_window_with(|c| {
            c.loss_detection = LossDetection::Rack;
            c.rtt_samples = RttSamples::EveryAck;
            c.rto_rule = super::config::RtoRule::Linux;
            c.min_rto_ms = 200.0;
            c.sack_rearms_rto = rearms;
        }, 10);
        let mut acks = Vec::new();
        for seg in &out[1..10] {
            s.on_segment(seg, t(150), &p, &mut acks);
        }
        let mut sent = Vec::new();
        let mut resent_at = None;
        for (i, a) in acks.iter().enumerate() {
            let at = t(200 + 10 * i as u64);
            c.on_segment(a, at, &p, &mut sent);
            if resent_at.is_none() && sent.iter().any(|x| x.seq == 1) {
                resent_at = Some(at);
            }
        }
        let resent_at = resent_at.expect("fast recovery resends segment 0 before the last SACK");
        assert!(resent_at < last_sack, "{resent_at:?}");
        (c.rto_at.get().unwrap(), resent_at, c.rto())
    };
    let (with, _, rto) = rto_at(true);
    assert_eq!(with, last_sack + rto, "re-armed by the last SACK");
    let (without, resent_at, _) = rto_at(false);
    assert!(without > resent_at && without < with, "{without:?} {resent_at:?} {with:?}");
}

#[test]
fn one_segment_out_waits_for_a_delayed_ack_and_never_past_the_rto() {
    // Segment 9 alone lost: one segment out, so PTO = 2·SRTT + the minimum RTO (Linux's
    // tcp_rto_min_us, here 1 s: 1.2 s), capped at the RTO (tcp_rto_delta_us), which it replaces.
    let (p, mut c, _, _) = tail_lost(true, &(0..9).collect::<Vec<_>>());
    let rto_at = c.rto_at.get().expect("the RTO runs");
    assert_eq!(c.next_deadline(), Some(rto_at.min(t(200) + Duration::from_millis(1200))));
    let pto = c.next_deadline().unwrap();
    let mut probe = Vec::new();
    c.on_timer(pto, &p, &mut probe);
    assert_eq!((probe.len(), c.stats.timeouts, c.loss_probes().0), (1, 0, 1), "a probe, not a timeout");
    // tcp_send_loss_probe: "tcp_rearm_rto will restart timer from now".
    assert_eq!(c.rto_at.get(), Some(pto + c.rto()));
}

#[test]
fn a_probe_that_repaired_a_loss_halves_the_window_once_an_ack_passes_it() {
    // Segment 9 alone lost and the probe resends it: its ACK reaches tlp_high_seq, and the next
    // ACK beyond it tells the sender the probe repaired a loss (tcp_process_tlp_ack): Linux's
    // CWR, ssthresh = max(FlightSize/2, 2 SMSS) under the RFC rule, cwnd = ssthresh.
    let (p, mut c, mut s, _) = tail_lost(true, &(0..9).collect::<Vec<_>>());
    let mut probe = Vec::new();
    let pto = c.next_deadline().unwrap();
    c.on_timer(pto, &p, &mut probe);
    let mut acks = Vec::new();
    s.on_segment(&probe[0], pto + Duration::from_millis(50), &p, &mut acks);
    let mut out = Vec::new();
    c.on_segment(&acks[0], pto + Duration::from_millis(100), &p, &mut out);
    assert_eq!(acks[0].ack, 10_001);
    assert_eq!(c.loss_probes(), (1, 0), "an ACK up to the probe is not yet beyond it");
    let cwnd = c.cwnd_bytes();
    let later = pto + Duration::from_millis(200);
    c.app_write(3000, false, later, &p, &mut out);
    let data: Vec<Packet> = out.drain(..).filter(|x| x.payload_len > 0).collect();
    assert_eq!(data.len(), 3);
    let mut acks = Vec::new();
    for d in &data {
        s.on_segment(d, later + Duration::from_millis(50), &p, &mut acks);
    }
    c.on_segment(&acks[0], later + Duration::from_millis(100), &p, &mut out);
    assert_eq!(c.loss_probes(), (1, 1));
    // FlightSize at that ACK: the three new segments (30001 - 10001 is not yet acked).
    assert_eq!(c.ssthresh_bytes(), (3 * 1000 / 2).max(2 * 1000));
    assert_eq!(c.cwnd_bytes(), c.ssthresh_bytes());
    assert!(c.cwnd_bytes() < cwnd);
}

#[test]
fn an_ack_echoing_the_original_timestamp_undoes_a_spurious_timeout() {
    // Ten segments out at 100 ms, all delayed past the RTO (1 s minimum). The timeout resends
    // segment 0; then the original's ACK arrives, echoing the original's TSval, older than the
    // retransmission's: Linux's tcp_packet_delayed. With the undo the sender restores cwnd
    // (10 segments, and slow start's one more for this ACK) and goes on with new data;
    // without it, cwnd is 2 segments after that ACK and it resends segment 1, which the
    // receiver already has (go-back-N).
    for (undo, next_seq, cwnd) in [(true, 10_001u32, 11_000u64), (false, 1_001, 2_000)] {
        let (p, mut c, mut s, out) = one_window_with(|c| c.rto_undo = undo, 20);
        assert_eq!(out.len(), 10);
        let rto = c.next_deadline().unwrap();
        let mut resent = Vec::new();
        c.on_timer(rto, &p, &mut resent);
        assert_eq!((resent.len(), resent[0].seq, c.stats.timeouts), (1, 1, 1));
        let mut acks = Vec::new();
        s.on_segment(&out[0], rto + Duration::from_millis(5), &p, &mut acks);
        assert_eq!(acks[0].ts_ecr, out[0].ts_val);
        let mut sent = Vec::new();
        c.on_segment(&acks[0], rto + Duration::from_millis(10), &p, &mut sent);
        assert_eq!(sent.first().map(|x| x.seq), Some(next_seq), "undo {undo}");
        assert_eq!(c.cwnd_bytes(), cwnd, "undo {undo}");
        assert_eq!(c.rto_undos(), undo as u64);
    }
}

/// The SACK blocks of `ack` as (start, end) pairs.
fn blocks(ack: &Packet) -> Vec<(u32, u32)> {
    ack.sack_blocks().iter().map(|b| (b.start, b.end)).collect()
}

#[test]
fn a_duplicate_segment_is_reported_once_in_a_first_dsack_block() {
    // RFC 2883 §4: the first block of the ACK for a duplicate is the duplicate (D-SACK); for
    // one above the cumulative ACK the next block is the block that holds it (§4.2, example
    // 3); the D-SACK is sent once (Linux clears rx_opt.dsack when the option is written).
    // Each block is 8 bytes on the wire after 4 of kind, length and padding (RFC 2018).
    for dsack in [true, false] {
        let p = params(|c| {
            c.recovery = Recovery::Sack;
            c.dsack = dsack;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut out = Vec::new();
        c.app_write(3000, false, t(100), &p, &mut out);
        let segs: Vec<_> = out.drain(..).collect();
        let mut acks = Vec::new();
        s.on_segment(&segs[0], t(150), &p, &mut acks);
        s.on_segment(&segs[2], t(151), &p, &mut acks);
        assert_eq!(blocks(&acks[1]), [(2001, 3001)]);
        s.on_segment(&segs[2], t(152), &p, &mut acks); // a copy of the out-of-order one
        s.on_segment(&segs[0], t(153), &p, &mut acks); // a copy of one already acknowledged
        s.on_segment(&segs[1], t(154), &p, &mut acks); // fills the hole
        let (above, below, filled) = (&acks[2], &acks[3], &acks[4]);
        if dsack {
            assert_eq!(blocks(above), [(2001, 3001), (2001, 3001)], "D-SACK, then the block holding it");
            assert_eq!(blocks(below), [(1, 1001), (2001, 3001)], "D-SACK below the cumulative ACK 1001");
            assert_eq!(below.ack, 1001);
            assert_eq!(below.ip_len_bytes as u32, p.header_bytes + 4 + 2 * 8);
        } else {
            assert_eq!((blocks(above), blocks(below)), (vec![(2001, 3001)], vec![(2001, 3001)]));
        }
        assert_eq!((filled.ack, filled.sack_count), (3001, 0), "no D-SACK twice");
        // tcp_dsack_seen: D-SACKs of segments the sender never retransmitted are the
        // network's copies, not its own: not counted.
        for a in &acks {
            c.on_segment(a, t(200), &p, &mut out);
        }
        assert_eq!(c.dsacks_received(), 0);
    }
}

/// Ten segments at 100 ms with RACK; segment 0 is delayed: 1..9 arrive at 150 ms, their
/// SACKs at 200 ms make RACK mark 0 lost (DupThresh SACKed, no reordering seen: reo_wnd 0,
/// due at 100 + 100 ms), a spurious fast retransmit. The original arrives at 210 ms; its
/// cumulative ACK ends recovery at 260 ms; the retransmission arrives at 250 ms as a
/// duplicate, whose ACK reaches the sender at 300 ms. Returns the sender after each of those
/// two ACKs (cwnd, ssthresh) and the sender.
fn spurious_fast_retransmit(edit: impl FnOnce(&mut TcpConfig)) -> ((u64, u64), (u64, u64), Endpoint) {
    let (p, mut c, mut s, out) = one_window_with(|c| {
        c.loss_detection = LossDetection::Rack;
        edit(c);
    }, 20);
    assert_eq!((c.cwnd_bytes(), c.ssthresh_bytes()), (10_000, 65_535));
    let resent = deliver(&p, &mut c, &mut s, &out, &(1..10).collect::<Vec<_>>());
    let retransmission = *resent.iter().find(|x| x.seq == 1).expect("the fast retransmit of segment 0");
    assert_eq!((c.stats.fast_retransmits, c.ssthresh_bytes()), (1, 5_000), "FlightSize / 2");
    let mut acks = Vec::new();
    s.on_segment(&out[0], t(210), &p, &mut acks);
    s.on_segment(&retransmission, t(250), &p, &mut acks);
    let (full, duplicate) = (acks[0], acks[1]);
    assert_eq!((full.ack, duplicate.ack), (10_001, 10_001));
    let mut sent = Vec::new();
    c.on_segment(&full, t(260), &p, &mut sent);
    assert_eq!(c.cong_state(), CongState::Open);
    let after_full = (c.cwnd_bytes(), c.ssthresh_bytes());
    c.on_segment(&duplicate, t(300), &p, &mut sent);
    (after_full, (c.cwnd_bytes(), c.ssthresh_bytes()), c)
}

#[test]
fn a_dsack_of_every_retransmission_undoes_a_spurious_fast_retransmit() {
    // Linux's tcp_check_dsack counts the D-SACK of the one retransmission off undo_retrans;
    // at 0, tcp_try_undo_dsack (Open: the recovery ended at the cumulative ACK, whose
    // undo_retrans was still 1) runs tcp_undo_cwnd_reduction: cwnd = max(cwnd, prior_cwnd),
    // the 10 segments before the recovery, and ssthresh = prior_ssthresh, max(65535, 3/4 cwnd).
    // No timestamps here, so the cumulative ACK cannot tell. Without the undo cwnd stays at
    // ssthresh = FlightSize / 2 (RFC 6675 §5.1).
    for undo in [true, false] {
        let (at_full, at_dsack, c) = spurious_fast_retransmit(|c| {
            c.timestamps = false;
            c.packet_size_bytes = 1040; // MSS 1000 without timestamps
            c.dsack = true;
            c.recovery_undo = undo;
        });
        assert_eq!(at_full, (5_000, 5_000), "undo {undo}: the recovery ends at ssthresh");
        assert_eq!(c.dsacks_received(), 1);
        if undo {
            assert_eq!(at_dsack, (10_000, 65_535));
            assert_eq!(c.recovery_undos(), 1);
        } else {
            assert_eq!(at_dsack, (5_000, 5_000));
            assert_eq!(c.recovery_undos(), 0);
        }
    }
}

#[test]
fn a_full_ack_echoing_the_original_timestamp_undoes_a_spurious_fast_retransmit() {
    // The original fills the hole: TS.Recent takes its TSval (sent at 100 ms), which the
    // cumulative ACK echoes, older than the retransmission's (200 ms): tcp_packet_delayed.
    // tcp_try_undo_recovery then restores cwnd and ssthresh at that ACK, no D-SACK needed.
    let (at_full, _, c) = spurious_fast_retransmit(|c| c.recovery_undo = true);
    assert_eq!(at_full, (10_000, 65_535));
    assert_eq!((c.recovery_undos(), c.dsacks_received()), (1, 0));
}

#[test]
fn frto_sends_new_data_after_a_timeout_and_undoes_it_when_never_resent_data_is_acked() {
    // RFC 5682 §3.1 as Linux's tcp_process_loss with tcp_frto = 2. Ten segments out at 100 ms,
    // every one delayed past the RTO (1 s minimum); the timeout resends segment 0 only
    // (cwnd 1). Then the originals' ACKs arrive one by one, no timestamps to tell them apart.
    // The first (of segment 0, which was resent) advances snd_una: step 2.b sends new data,
    // as many as cwnd (2 after slow start's growth) allows over what is in flight (nothing:
    // the timeout marked the window lost), 10001 and 11001, not the go-back-N 1001 and 2001.
    // The second acknowledges segment 1, never resent: step 3.b, spurious, and
    // tcp_try_undo_loss(frto_undo) restores cwnd (10 segments, and slow start's one more for
    // this ACK) and the sender goes on with new data. One retransmission in all.
    for frto in [true, false] {
        let (p, mut c, mut s, out) = one_window_with(|c| {
            c.loss_detection = LossDetection::Rack;
            c.timestamps = false;
            c.packet_size_bytes = 1040;
            c.frto = frto;
        }, 20);
        let rto = c.next_deadline().unwrap();
        let mut resent = Vec::new();
        c.on_timer(rto, &p, &mut resent);
        assert_eq!((resent.len(), resent[0].seq, c.cwnd_bytes()), (1, 1, 1_000));
        let mut acks = Vec::new();
        s.on_segment(&out[0], rto + Duration::from_millis(5), &p, &mut acks);
        s.on_segment(&out[1], rto + Duration::from_millis(6), &p, &mut acks);
        let mut sent = Vec::new();
        c.on_segment(&acks[0], rto + Duration::from_millis(10), &p, &mut sent);
        let seqs: Vec<u32> = sent.iter().map(|x| x.seq).collect();
        if !frto {
            assert_eq!(seqs, [1001, 2001], "go-back-N");
            continue;
        }
        assert_eq!(seqs, [10_001, 11_001], "F-RTO step 2.b: new data");
        assert_eq!(c.cong_state(), CongState::Loss);
        sent.clear();
        c.on_segment(&acks[1], rto + Duration::from_millis(11), &p, &mut sent);
        assert_eq!(c.cong_state(), CongState::Open);
        assert_eq!(c.cwnd_bytes(), 11_000);
        assert_eq!(sent.first().map(|x| x.seq), Some(12_001), "new data, no resend");
        assert_eq!((c.stats.retransmits, c.spurious_rtos(), c.rto_undos()), (1, 1, 1));
    }
}

#[test]
fn frto_goes_back_to_snd_una_when_the_new_data_is_sacked_first() {
    // Step 3.a: the timeout was real (segments 1..9 lost). After step 2.b sent 10001 and
    // 11001, their SACK arrives without any never-resent data below them being acknowledged:
    // the loss was real, F-RTO ends and the sender resends from snd_una (1001), as without it.
    let (p, mut c, mut s, out) = one_window_with(|c| {
        c.loss_detection = LossDetection::Rack;
        c.timestamps = false;
        c.packet_size_bytes = 1040;
        c.frto = true;
    }, 20);
    let rto = c.next_deadline().unwrap();
    let mut resent = Vec::new();
    c.on_timer(rto, &p, &mut resent);
    let mut acks = Vec::new();
    s.on_segment(&resent[0], rto + Duration::from_millis(50), &p, &mut acks);
    assert!(out[1..].iter().all(|x| !holds(&s, x)), "the rest of the window is lost");
    let mut sent = Vec::new();
    c.on_segment(&acks[0], rto + Duration::from_millis(100), &p, &mut sent);
    assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), [10_001, 11_001]);
    acks.clear();
    s.on_segment(&sent[0], rto + Duration::from_millis(150), &p, &mut acks);
    let mut again = Vec::new();
    c.on_segment(&acks[0], rto + Duration::from_millis(200), &p, &mut again);
    assert_eq!(again.first().map(|x| x.seq), Some(1001), "go-back-N from snd_una");
    assert_eq!((c.spurious_rtos(), c.rto_undos()), (0, 0));
}

#[test]
fn a_dsack_after_reordering_widens_racks_window_to_two_quarters_of_min_rtt() {
    // Linux's tcp_rack_update_reo_wnd and tcp_rack_reo_wnd, min_RTT 100 ms. Three rounds of
    // two segments. 1: the second arrives 10 ms before the first (reordering seen, nothing
    // resent). 2: the first is 30 ms late, beyond reo_wnd = min_RTT/4 = 25 ms: RACK's timer
    // (300 + 100 + 25 = 425 ms) resends it, the original's ACK comes at 430 ms and the
    // retransmission's D-SACK at 525 ms. 3: the first is 30 ms late again. With the D-SACK
    // window the next ACK that delivers data grows reo_wnd_steps to 2: reo_wnd = 50 ms, its
    // deadline 600 + 100 + 50 = 750 ms comes after its ACK at 730 ms, nothing resent. Without
    // it, the deadline is 725 ms and it is resent spuriously again.
    for adapt in [true, false] {
        let p = rack(|c| {
            c.initial_window_pkts = 4;
            c.dsack = true;
            c.rack_dsack_reo_wnd = adapt;
        });
        let (mut c, mut s) = established(&p, 0, 0);
        let mut rounds = Vec::new();
        for (sent_ms, first_late_ms) in [(100, 10), (300, 30), (600, 30)] {
            let mut out = Vec::new();
            c.app_write(2000, false, t(sent_ms), &p, &mut out);
            assert_eq!(out.len(), 2, "round at {sent_ms} ms");
            let mut acks = Vec::new();
            s.on_segment(&out[1], t(sent_ms + 50), &p, &mut acks);
            let mut resent = Vec::new();
            c.on_segment(&acks[0], t(sent_ms + 100), &p, &mut resent);
            let deadline = c.next_deadline().unwrap();
            let original_ack_at = t(sent_ms + 100 + first_late_ms);
            if deadline <= original_ack_at {
                c.on_timer(deadline, &p, &mut resent);
            }
            s.on_segment(&out[0], t(sent_ms + 50 + first_late_ms), &p, &mut acks);
            c.on_segment(&acks[1], original_ack_at, &p, &mut resent);
            for x in resent.iter().filter(|x| x.seq == out[0].seq) {
                // The retransmission arrives 50 ms after it left, and its D-SACK 50 ms later.
                let mut dup = Vec::new();
                let left = deadline;
                s.on_segment(x, left + Duration::from_millis(50), &p, &mut dup);
                c.on_segment(&dup[0], left + Duration::from_millis(100), &p, &mut Vec::new());
            }
            rounds.push((deadline, c.stats.retransmits));
        }
        assert_eq!(rounds[0], (t(225), 0), "round 1: timer at 100 + 100 + 25 ms, not needed");
        assert_eq!(rounds[1], (t(425), 1), "round 2: resent at 300 + 100 + 25 ms");
        assert_eq!(c.dsacks_received(), if adapt { 1 } else { 2 }, "one per spurious retransmission");
        if adapt {
            assert_eq!(rounds[2], (t(750), 1), "round 3: reo_wnd = 2 x 25 ms");
        } else {
            assert_eq!(rounds[2], (t(725), 2), "round 3: reo_wnd = 25 ms");
        }
    }
}

#[test]
fn fulltcp_receiver_acks_a_segment_of_bytes_at_once_and_less_at_the_next_delayed_ack_tick() {
    // ns-2 FullTcp (tcp-full.cc:1439-1447, segsperack_ 1): ACK once rcv_nxt - last_ack_sent
    // reaches maxseg_ bytes, whatever the segments' sizes; else at the delayed-ACK timer,
    // which fires on multiples of interval_ (100 ms here) from time 0 (tcp-full.cc:1566-1570).
    let p = |rule| params(|c| {
        c.delayed_ack = true;
        c.delayed_ack_ms = 100.0;
        c.ack_rule = rule;
    });
    let full = p(AckRule::Ns2Full);
    let (mut c, mut s) = established(&full, 0, 0);
    let mut segs = Vec::new();
    c.app_write(1500, false, t(150), &full, &mut segs);
    assert_eq!(segs.iter().map(|x| x.payload_len).collect::<Vec<_>>(), [1000, 500]);
    let mut acks = Vec::new();
    s.on_segment(&segs[0], t(160), &full, &mut acks);
    assert_eq!(acks.iter().map(|a| a.ack).collect::<Vec<_>>(), [1001], "a full segment: at once");
    acks.clear();
    s.on_segment(&segs[1], t(170), &full, &mut acks);
    assert!(acks.is_empty(), "500 bytes < maxseg_: held");
    assert_eq!(s.next_deadline(), Some(t(200)), "the next multiple of 100 ms, not 170 + 100");
    s.on_timer(t(200), &full, &mut acks);
    assert_eq!(acks.iter().map(|a| a.ack).collect::<Vec<_>>(), [1501]);
    // Two short segments: the second brings a segment's worth of bytes, ACKed at once; a
    // segment arriving on a tick waits for the next one (int(now / interval_) + 1).
    let mut segs = Vec::new();
    c.app_write(500, false, t(300), &full, &mut segs);
    c.app_write(500, false, t(300), &full, &mut segs);
    c.app_write(500, false, t(300), &full, &mut segs);
    assert_eq!(segs.len(), 3);
    acks.clear();
    s.on_segment(&segs[0], t(300), &full, &mut acks);
    assert!(acks.is_empty());
    assert_eq!(s.next_deadline(), Some(t(400)));
    s.on_segment(&segs[1], t(301), &full, &mut acks);
    assert_eq!(acks.iter().map(|a| a.ack).collect::<Vec<_>>(), [2501]);
    acks.clear();
    s.on_segment(&segs[1], t(302), &full, &mut acks);
    assert_eq!(acks.iter().map(|a| a.ack).collect::<Vec<_>>(), [2501], "a duplicate: at once (TF_ACKNOW)");
    // RFC 5681's receiver ACKs the same short segment at once (a partial segment).
    let rfc = p(AckRule::Rfc5681);
    let (mut c, mut s) = established(&rfc, 0, 0);
    let mut segs = Vec::new();
    c.app_write(500, false, t(150), &rfc, &mut segs);
    acks.clear();
    s.on_segment(&segs[0], t(170), &rfc, &mut acks);
    assert_eq!(acks.iter().map(|a| a.ack).collect::<Vec<_>>(), [501]);
}

/// ns-2's FullTcp sender (`fast_recovery = "ns2_full"`) on the ns2 stack's window rules,
/// established at t = 100 ms with IW `iw` (no data written yet).
fn fulltcp(iw: u32) -> (TcpParams, Endpoint, Endpoint) {
    let p = params(|c| {
        c.recovery = Recovery::Reno;
        c.fast_recovery = FastRecoveryRule::Ns2Full;
        c.ssthresh_from = SsthreshFrom::Ns2;
        c.cwnd_growth = CwndGrowth::Ns2;
        c.initial_window_pkts = iw;
    });
    let mut c = Endpoint::client(KEY, 0, &p);
    let mut s = Endpoint::listener(KEY.reversed(), 0, &p);
    let mut out = Vec::new();
    c.connect(t(0), &p, &mut out);
    s.on_segment(&out.pop().unwrap(), t(50), &p, &mut out);
    c.on_segment(&out.pop().unwrap(), t(100), &p, &mut out);
    // No data waits: the handshake's ACK, then a second pure ACK (TF_ACKNOW, tcp-full.cc:1820).
    assert_eq!(out.iter().map(|x| (x.flags.ack(), x.payload_len)).collect::<Vec<_>>(), vec![(true, 0), (true, 0)]);
    for a in out.drain(..) {
        s.on_segment(&a, t(150), &p, &mut Vec::new());
    }
    (p, c, s)
}

#[test]
fn fulltcp_recovers_with_ssthresh_plus_dupacks_whole_packets_and_leaves_at_ssthresh() {
    // 11 packets out, the first lost: ns-2 FullTcp's dupack_action sets ssthresh_ =
    // floor(11 / 2) = 5 and cwnd_ = ssthresh_ + 3 = 8 packets (tcp-full.cc:2586), each
    // later dupack adds one (extra_ack); the one-way Reno agent would halve to 5.5.
    let (p, mut c, mut s) = fulltcp(11);
    let mut out = Vec::new();
    c.app_write(30 * p.mss, false, t(100), &p, &mut out);
    assert_eq!(out.len(), 11);
    let mut acks = Vec::new();
    for seg in &out[1..] {
        s.on_segment(seg, t(150), &p, &mut acks);
    }
    assert_eq!(acks.len(), 10);
    let mut sent = Vec::new();
    for a in &acks[..2] {
        c.on_segment(a, t(200), &p, &mut sent);
    }
    assert!(sent.is_empty(), "no limited transmit");
    c.on_segment(&acks[2], t(200), &p, &mut sent);
    assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![1], "the third dupack retransmits");
    assert_eq!((c.ssthresh, c.cwnd), (5 * p.mss, 8 * p.mss));
    sent.clear();
    for a in &acks[3..] {
        c.on_segment(a, t(200), &p, &mut sent);
    }
    // Seven more dupacks: cwnd_ 15 packets, 11 out, so four new segments (11 to 14).
    assert_eq!(c.cwnd, 15 * p.mss);
    assert_eq!(sent.iter().map(|x| x.seq).collect::<Vec<_>>(), (11..15).map(|k| 1 + k * p.mss as u32).collect::<Vec<_>>());
    // The retransmission's ACK ends recovery: cwnd_ = ssthresh_ (pack_action), then
    // opencwnd's 1/cwnd_ (tcp.cc:1138): 5 + 1/5 packets.
    let mut ack = Vec::new();
    s.on_segment(&out[0], t(250), &p, &mut ack);
    c.on_segment(&ack[0], t(300), &p, &mut Vec::new());
    assert_eq!(c.cwnd, 5 * p.mss + p.mss / 5);
}

#[test]
fn fulltcp_holds_a_short_segment_until_nothing_is_outstanding() {
    // Nagle (nodelay_ false, foutput tcp-full.cc:1050-1067): the 500-byte tail of a write
    // waits while the two full segments before it are unacknowledged.
    let (p, mut c, mut s) = fulltcp(10);
    let mut out = Vec::new();
    c.app_write(2 * p.mss + 500, false, t(100), &p, &mut out);
    assert_eq!(out.iter().map(|x| x.payload_len as u64).collect::<Vec<_>>(), vec![p.mss, p.mss]);
    let mut acks = Vec::new();
    s.on_segment(&out[0], t(150), &p, &mut acks);
    let mut sent = Vec::new();
    c.on_segment(&acks[0], t(200), &p, &mut sent);
    assert!(sent.is_empty(), "one segment still out");
    acks.clear();
    s.on_segment(&out[1], t(150), &p, &mut acks);
    c.on_segment(&acks[0], t(200), &p, &mut sent);
    assert_eq!(sent.iter().map(|x| x.payload_len).collect::<Vec<_>>(), vec![500]);
}

#[test]
fn on_linux_s_timer_wheel_the_rto_and_the_probe_fire_on_its_buckets() {
    // IW 10 sent at 100 ms. Exact timers fire at 100 ms + RTO and at the PTO; with
    // timer_wheel_hz = 250 each fires where the kernel's wheel puts a timer armed then
    // (`wheel_fire_at`, checked against calc_index by hand in timers.rs), on a 4 ms tick.
    let armed = |hz: u32| {
        let (p, c, _, out) = one_window_with(|c| {
            c.loss_detection = LossDetection::Rack;
            c.tail_loss_probe = true;
            c.rto_rule = super::config::RtoRule::Linux;
            c.min_rto_ms = 200.0;
            c.timer_wheel_hz = hz;
        }, 10);
        assert_eq!(out.len(), 10);
        (p, c.rto_at.get().unwrap(), c.queues.as_deref().unwrap().tlp.pto_at.unwrap(), c.rto())
    };
    let (_, rto_exact, pto_exact, rto) = armed(0);
    assert_eq!(rto_exact, t(100) + rto);
    let (p, rto_at, pto_at, _) = armed(250);
    let tick = Duration(4_000_000);
    assert_eq!(rto_at, super::timers::wheel_fire_at(tick, Duration::ZERO, t(100), rto_exact));
    assert_eq!(pto_at, super::timers::wheel_fire_at(tick, Duration::ZERO, t(100), pto_exact).min(rto_at));
    assert!(rto_at > rto_exact && rto_at.0 % tick.0 == 0 && pto_at.0 % tick.0 == 0);
    assert_eq!(p.timers.wheel_tick, Some(tick));
}
