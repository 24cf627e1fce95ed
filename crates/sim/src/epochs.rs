//! With `record_sender_epochs`: every open connection's data sender seen from the inside
//! at the end of each slice (its epoch), for the TAQ paper's Figure 6 (the idealized
//! model's states are the sender's, not what a box on the wire infers). Where the
//! bottleneck is TAQ, the row also carries the state TAQ inferred for the flow from the
//! wire, so the two can be compared.

use crate::tcp::Endpoint;
use smallpipe_core::qdisc::Taq;
use smallpipe_core::Instant;

/// One connection's sender at the end of one slice.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderEpochRow {
    pub flow_id: u32,
    pub slice: u32,
    /// Segments (data, SYN or FIN; first sends and resends) emitted during the slice.
    pub segments_sent: u64,
    /// cwnd at the slice's end in whole segments (rounded down).
    pub cwnd_segments: u64,
    /// Times the retransmission timer has doubled (RFC 6298 5.5) since the last valid RTT
    /// sample collapsed it: the idealized model's backoff stage.
    pub rto_backoff: u32,
    /// In a retransmission-timeout episode: from the expiry until new data is acknowledged.
    pub in_timeout: bool,
    /// TAQ's inferred state of the flow (`TaqState` order) at the slice's end, if the
    /// forward bottleneck is TAQ and tracks the flow.
    pub taq_state: Option<u8>,
}

#[derive(Debug, Default)]
pub(crate) struct EpochRecorder {
    /// Per connection: `segments_sent` at the previous slice's end.
    sent_before: Vec<u64>,
    pub(crate) rows: Vec<SenderEpochRow>,
}

impl EpochRecorder {
    /// Records slice `slice` ending at `at` for each (connection, its sender, still open,
    /// its MSS) given: open ones, and closed ones that sent in the slice (the one they closed in).
    pub(crate) fn record<'a>(&mut self, slice: u32, at: Instant,
                             senders: impl Iterator<Item = (u32, &'a Endpoint, bool, u64)>, taq: Option<&Taq>) {
        for (flow_id, ep, open, mss) in senders {
            let c = flow_id as usize;
            if self.sent_before.len() <= c {
                self.sent_before.resize(c + 1, 0);
            }
            let sent = ep.stats.segments_sent;
            if !open && sent == self.sent_before[c] {
                continue;
            }
            // Read-only, like `Taq::taq_snapshot`: rolling the flow itself would move its epochs.
            let taq_state = taq.and_then(|q| {
                q.flow_state(&ep.key).map(|m| {
                    let mut m = m.clone();
                    m.roll(at, q.config());
                    m.state as u8
                })
            });
            self.rows.push(SenderEpochRow {
                flow_id,
                slice,
                segments_sent: sent - self.sent_before[c],
                cwnd_segments: ep.cwnd_bytes() / mss,
                rto_backoff: ep.rto_backoff(),
                in_timeout: ep.in_timeout(),
                taq_state,
            });
            self.sent_before[c] = sent;
        }
    }
}
