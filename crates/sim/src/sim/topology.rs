//! Topology and forwarding: hosts and routers, the links between them, routes, the diamond's
//! path choice, and moving a packet from node to queue to wire.

use super::endpoints::left_network;
use super::Simulator;
use crate::config::Routing;
use crate::event::Event;
use crate::link::Link;
use rustc_hash::FxHashMap;
use smallpipe_core::qdisc::flow_hash;
use smallpipe_core::{Accounted, ConfigError, Duration, Packet, QdiscConfig, Rng};

pub(super) enum Node {
    /// An end host: everything it sends leaves on one access link.
    Host { egress: u32 },
    /// Forwards by destination address.
    Router { routes: FxHashMap<u32, u32> },
}

impl Simulator {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_link(&mut self, name: &str, rate_bps: u64, delay: Duration, jitter: Duration, loss: f64,
                           queue: &QdiscConfig, to_node: u32) -> Result<u32, ConfigError> {
        let id = self.links.len() as u32;
        let mut queue = queue.clone();
        queue.set_link(rate_bps, delay.as_nanos());
        let q = Accounted::new(queue.build()?, Rng::new(self.seed, 0x2000_0000 + id as u64));
        // Only reported links keep a delay histogram (35 KB each; access links are many).
        let q = if is_reported(name) { q.with_delay_histogram() } else { q };
        let rng = Rng::new(self.seed, 0x1000 + id as u64);
        self.links.push(Link::new(name.to_string(), rate_bps, delay, jitter, loss, q, to_node, rng));
        Ok(id)
    }

    pub(super) fn route(&mut self, router: usize, dst_ip: u32, link: u32) {
        if let Node::Router { routes } = &mut self.nodes[router] {
            routes.insert(dst_ip, link);
        }
    }

    pub(super) fn deliver(&mut self, node: u32, pkt: Packet) {
        match &self.nodes[node as usize] {
            Node::Router { routes } => {
                let mut link = *routes.get(&pkt.flow.dst_ip).expect("every host address is routed");
                if node == 0 && link == 0 {
                    link = self.diamond_path(&pkt);
                }
                self.enqueue(link, pkt);
            }
            Node::Host { .. } => {
                let Some(&e) = self.demux.get(&pkt.flow.reversed()) else {
                    self.packets_to_closed_flows += 1;
                    return;
                };
                let p = &self.params[self.tcp_of(e)];
                let conn = &mut self.conns[(e / 2) as usize];
                conn.in_flight = conn.in_flight.saturating_sub(1); // its endpoint's event checks recycling
                let mut out = std::mem::take(&mut self.scratch);
                if let Some(r) = self.rcp.get_mut(&(e / 2)) {
                    if e.is_multiple_of(2) {
                        r.sender.on_segment(&pkt, self.now, p, &mut out);
                        self.after_rcp(e / 2, out);
                        return;
                    }
                    r.echo_kbps = pkt.rcp_rate_kbps.or(r.echo_kbps);
                }
                self.endpoints[e as usize].on_segment(&pkt, self.now, p, &mut out);
                self.after_endpoint(e, out);
            }
        }
    }

    /// The edge of the diamond picks a forward path (link 0 is path 1); on the dumbbell
    /// there is only link 0.
    fn diamond_path(&mut self, pkt: &Packet) -> u32 {
        let Some((d, path2)) = &self.diamond else { return 0 };
        let long = match d.routing {
            Routing::LoadBalanced => flow_hash(&pkt.flow, self.seed) & 1 == 1,
            Routing::Size => pkt.dscp != self.edge.dscp,
            Routing::Lifetime => {
                let seen = self.edge_seen.entry(pkt.flow).or_insert(0);
                *seen = seen.saturating_add(1);
                *seen > d.lifetime_pkts
            }
        };
        if long { *path2 } else { 0 }
    }

    pub(super) fn enqueue(&mut self, link: u32, pkt: Packet) {
        let l = &mut self.links[link as usize];
        if l.computed {
            // No TxDone: the departure is known now (`Link::offer_computed`); untraced.
            if let Some(at) = l.offer_computed(pkt, self.now) {
                self.events.push(at, Event::Arrive { link });
            }
            let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
            left_network(&self.demux, &mut self.conns, &mut self.recycle_candidates, dropped);
            return;
        }
        l.queue.enqueue(pkt, self.now);
        if let Some(r) = self.recorder.as_mut().filter(|r| r.traces(link)) {
            r.on_enqueue(link, &pkt, l.queue.last_drops(), self.now, &self.demux);
        }
        let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
        left_network(&self.demux, &mut self.conns, &mut self.recycle_candidates, dropped);
        self.start_tx(link);
    }

    /// An idle link takes its queue's next packet (traced: what the queue gave and dropped).
    pub(super) fn start_tx(&mut self, link: u32) {
        let l = &mut self.links[link as usize];
        let idle = l.sending.is_none();
        if let Some(done) = l.start_tx(self.now) {
            self.events.push(done, Event::TxDone { link });
        }
        if let Some(r) = self.recorder.as_mut().filter(|r| idle && r.traces(link)) {
            r.on_dequeue(link, l.sending.as_ref(), l.queue.last_drops(), self.now, &self.demux);
        }
        if idle {
            let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
            left_network(&self.demux, &mut self.conns, &mut self.recycle_candidates, dropped);
        }
    }
}

/// The links the results table reports: the bottleneck's directions and the diamond's path 2.
pub(super) fn is_reported(link_name: &str) -> bool {
    link_name.starts_with("bottleneck")
}
