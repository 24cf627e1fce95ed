//! UDP flows (`crate::udp`): one datagram stream per unit, from its sender host to its
//! receiver host, through the same links and disciplines as TCP. A datagram is what a box
//! on the wire sees of UDP: protocol 17, the ports, the length, no sequence space (TAQ then
//! treats it as docs/taq.md says). Each flow counts what it sent, what its receiver got and
//! what the network dropped; at the end the rest is in flight.

use super::topology::Node;
use super::Simulator;
use crate::event::Event;
use crate::results::UdpFlowRow;
use crate::udp::{UdpSchedule, PROTO_UDP};
use smallpipe_core::{Duration, FlowKey, Packet};

/// The handle bit of UDP datagrams: a TCP endpoint index never has it, so `addressee`
/// never takes a datagram for a TCP endpoint's (it finds no endpoint there).
pub(super) const UDP_HANDLE: u32 = 0x8000_0000;
/// The sender's and the receiver's (discard) ports.
const UDP_SRC_PORT: u16 = 1024;
const UDP_DST_PORT: u16 = 9;

pub(super) struct UdpFlow {
    pub(super) unit: u32,
    pub(super) schedule: UdpSchedule,
    pub(super) sent_pkts: u64,
    pub(super) sent_bytes: u64,
    pub(super) delivered_pkts: u64,
    pub(super) delivered_bytes: u64,
    pub(super) dropped_pkts: u64,
    pub(super) dropped_bytes: u64,
    /// One-way delays of the delivered datagrams, sender to receiver host.
    pub(super) delay_sum_ns: u64,
    pub(super) delay_max_ns: u64,
}

/// Datagrams the network dropped (`left_network` passes every packet it drops).
pub(super) fn udp_dropped(udp: &mut [UdpFlow], pkt: &Packet) {
    let f = &mut udp[(pkt.runtime_handle & !UDP_HANDLE) as usize];
    f.dropped_pkts += 1;
    f.dropped_bytes += pkt.len_bytes();
}

impl Simulator {
    /// The unit of UDP flow `f` sends one datagram and schedules the next.
    pub(super) fn udp_send(&mut self, f: u32) {
        let flow = &mut self.udp[f as usize];
        let unit = &self.units[flow.unit as usize];
        let Node::Host { egress } = self.nodes[unit.sender_node as usize] else { unreachable!("units send from hosts") };
        let size = flow.schedule.source().packet_size_bytes as u16;
        let pkt = Packet {
            flow: FlowKey { src_ip: unit.sender_ip, dst_ip: unit.receiver_ip, src_port: UDP_SRC_PORT, dst_port: UDP_DST_PORT, proto: PROTO_UDP },
            ip_len_bytes: size,
            dscp: self.groups[unit.group as usize].dscp.unwrap_or(0),
            // The send time in µs, as a probe carries it in its payload (`ts_val` is a TCP
            // option's field; nothing on the path reads it for UDP). Wraps after 71 min,
            // which the delay's wrapping difference undoes.
            ts_val: (self.now.as_nanos() / 1_000) as u32,
            runtime_handle: UDP_HANDLE | f,
            ..Packet::default()
        };
        flow.sent_pkts += 1;
        flow.sent_bytes += u64::from(size);
        let gap = Duration::from_secs_f64(flow.schedule.next_gap_s());
        self.events.push(self.now + gap, Event::Unit { unit: flow.unit });
        self.host_send(egress, pkt);
    }

    /// A datagram reached its receiver host.
    pub(super) fn udp_deliver(&mut self, pkt: &Packet) {
        let flow = &mut self.udp[(pkt.runtime_handle & !UDP_HANDLE) as usize];
        flow.delivered_pkts += 1;
        flow.delivered_bytes += pkt.len_bytes();
        let delay_ns = u64::from(((self.now.as_nanos() / 1_000) as u32).wrapping_sub(pkt.ts_val)) * 1_000;
        flow.delay_sum_ns += delay_ns;
        flow.delay_max_ns = flow.delay_max_ns.max(delay_ns);
        let unit = &mut self.units[flow.unit as usize];
        unit.bytes_delivered += pkt.len_bytes();
        unit.last_progress = self.now;
    }

    pub(super) fn udp_rows(&self) -> Vec<UdpFlowRow> {
        self.udp.iter().enumerate().map(|(i, f)| {
            let unit = &self.units[f.unit as usize];
            UdpFlowRow {
                udp_flow_id: i as u32,
                unit_id: f.unit,
                group: unit.group,
                app: self.groups[unit.group as usize].app,
                rtt_ms: unit.rtt.as_nanos() as f64 / 1e6,
                packets_sent: f.sent_pkts,
                bytes_sent: f.sent_bytes,
                packets_delivered: f.delivered_pkts,
                bytes_delivered: f.delivered_bytes,
                packets_dropped: f.dropped_pkts,
                bytes_dropped: f.dropped_bytes,
                packets_in_flight: f.sent_pkts - f.delivered_pkts - f.dropped_pkts,
                delay_sum_ns: f.delay_sum_ns,
                delay_max_ns: f.delay_max_ns,
            }
        }).collect()
    }
}
