//! Topology and forwarding: hosts and routers, the links between them, routes, the diamond's
//! path choice, and moving a packet from node to queue to wire.

use super::endpoints::{addressee, left_network};
use super::udp_flows::UDP_HANDLE;
use super::Simulator;
use crate::config::{Routing, HEADER_BYTES};
use crate::event::Event;
use crate::link::Link;
use rustc_hash::FxHashMap;
use smallpipe_core::qdisc::flow_hash;
use smallpipe_core::{Accounted, AnyQdisc, ConfigError, Duration, Instant, Packet, QdiscConfig, Rng};

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
                if let Some(r) = &mut self.recorder {
                    r.on_host_receive(node, &pkt, self.now);
                }
                if pkt.runtime_handle & UDP_HANDLE != 0 {
                    return self.udp_deliver(&pkt);
                }
                let Some(e) = addressee(&self.demux, &self.conns, &self.endpoints, &pkt) else {
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
                if let Some(r) = self.recorder.as_mut().filter(|_| e.is_multiple_of(2)) {
                    r.on_sender_receive(e / 2, &pkt, self.now);
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

    /// A host hands `pkt` to its access link `egress` (where a host's capture sees it).
    #[inline]
    pub(super) fn host_send(&mut self, egress: u32, pkt: Packet) {
        if let Some(r) = &mut self.recorder {
            r.on_host_send(egress, &pkt, self.now);
        }
        self.enqueue(egress, pkt);
    }

    pub(super) fn enqueue(&mut self, link: u32, pkt: Packet) {
        let l = &mut self.links[link as usize];
        if l.chained {
            return self.pass_chained(link, pkt);
        }
        if l.computed {
            // No TxDone: the departure is known now (`Link::offer_computed`); untraced.
            if let Some(at) = l.offer_computed(pkt, self.now) {
                self.schedule_arrival(link, at);
            }
            let dropped = self.links[link as usize].queue.last_drops().iter().map(|(p, _)| p);
            left_network(&self.demux, &self.endpoints, &mut self.conns, &mut self.recycle_candidates, &mut self.udp, dropped);
            return;
        }
        let traced = self.recorder.as_ref().is_some_and(|r| r.hooks(link));
        if l.sending.is_none() && !self.recorder.as_ref().is_some_and(|r| r.sees_every_enqueue(link)) {
            if let Some(done) = l.pass_through(pkt, self.now) {
                if let Some(r) = self.recorder.as_mut().filter(|_| traced) {
                    r.on_pass_through(&Packet { arrival: self.now, ..pkt });
                }
                return self.events.push(done, Event::TxDone { link });
            }
        }
        l.queue.enqueue(pkt, self.now);
        if let Some(r) = self.recorder.as_mut().filter(|_| traced) {
            r.on_enqueue(link, &pkt, l.queue.last_drops(), self.now, &self.demux);
        }
        let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
        left_network(&self.demux, &self.endpoints, &mut self.conns, &mut self.recycle_candidates, &mut self.udp, dropped);
        self.start_tx(link);
    }

    /// A chained link takes `pkt` now and, without an event at its far end, hands it to the
    /// next hop at its arrival time there (`Link::pass_chained`); only the next hop's
    /// arrival is scheduled. A packet that would reach the far end at or after the run's
    /// end stays on the wire, as with the events.
    fn pass_chained(&mut self, link: u32, pkt: Packet) {
        let l = &mut self.links[link as usize];
        let Some(at) = l.pass_chained(pkt, self.now) else {
            let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
            return left_network(&self.demux, &self.endpoints, &mut self.conns, &mut self.recycle_candidates, &mut self.udp, dropped);
        };
        if at >= self.end {
            return;
        }
        let Node::Router { routes } = &self.nodes[l.to_node as usize] else { unreachable!("a chained link ends at a router") };
        let next = *routes.get(&pkt.flow.dst_ip).expect("every host address is routed");
        let n = &mut self.links[next as usize];
        // The packet as the far end receives it: stamped by the queue it left.
        let arrival = n.offer_computed(Packet { arrival: self.now, ..pkt }, at);
        assert!(n.queue.last_drops().is_empty(), "{}: a chained hop dropped a packet (see may_chain_hop)", n.name);
        if let Some(arrival) = arrival {
            self.schedule_arrival(next, arrival);
        }
    }

    /// Schedules `link`'s next arrival at its far end: after the other events of its time
    /// where the link asks for that (`Link::arrivals_after_ties`, set by `chain_hop`).
    pub(super) fn schedule_arrival(&mut self, link: u32, at: Instant) {
        let event = Event::Arrive { link };
        if self.links[link as usize].arrivals_after_ties {
            self.events.push_after_ties(at, event);
        } else {
            self.events.push(at, event);
        }
    }

    /// Whether `link` may be chained to the links at its far end (`Link::chained`). It must
    /// be a bottleneck direction. Every packet it carries must be chained, or none, as the
    /// next hops are then offered packets ahead of time; so it must be computed, decide
    /// nothing at arrival (no loss draws, no `drop_nth`) and keep its departures' spacing to
    /// the far end (no jitter); it must end at a router that no other bottleneck link feeds
    /// (the diamond's two paths both end at R2; the access links coming up to a router
    /// carry packets for the other side only); and each access link it feeds there must be
    /// computed and provably never drop (`never_drops`).
    pub(super) fn may_chain_hop(&self, link: u32) -> bool {
        let l = &self.links[link as usize];
        // `never_drops` reasons on IP lengths: a framed feeder could send closer together.
        let lossy = l.loss > 0.0 || l.burst_loss.is_some() || !l.drop_nth.is_empty();
        if !is_reported(&l.name) || !l.computed || lossy || l.jitter_max > Duration::ZERO || !l.framing.is_identity() {
            return false;
        }
        let sole_feeder = self.links.iter().enumerate()
            .all(|(i, o)| i == link as usize || !is_reported(&o.name) || o.to_node != l.to_node);
        let Node::Router { routes } = &self.nodes[l.to_node as usize] else { return false };
        let largest_tcp = self.params.iter().map(|p| u64::from(HEADER_BYTES) + MAX_TCP_OPTION_BYTES + p.mss).max().unwrap_or(0);
        let largest_udp = self.udp.iter().map(|f| u64::from(f.schedule.source().packet_size_bytes)).max().unwrap_or(0);
        let largest_bytes = largest_tcp.max(largest_udp);
        sole_feeder && routes.values().map(|&m| &self.links[m as usize]).filter(|m| !is_reported(&m.name))
            .all(|m| m.computed && never_drops(l, m, largest_bytes))
    }

    /// Chains `link` to the access links at its far end (see `may_chain_hop`), and picks
    /// where their arrivals go among events of equal time. The events schedule such an
    /// arrival when its transmission ends, the access link's delay before it; chained, it is
    /// scheduled when `link` takes the packet, its sojourn and delay there earlier still. An
    /// event of the same time scheduled in between comes before it with the events, after
    /// it chained; scheduled after the ties, it comes after every such event, also those
    /// the events schedule within the access link's delay. The shorter of the two windows
    /// decides (a receiver's link of no delay behind a bottleneck of 1 ms takes the ties;
    /// a sender's link of 99 ms does not). Either order is a valid run; this only keeps
    /// equal-time ties as the events order them in most cases.
    pub(super) fn chain_hop(&mut self, link: u32) {
        let l = &mut self.links[link as usize];
        l.chained = true;
        let delay = l.delay;
        let Node::Router { routes } = &self.nodes[l.to_node as usize] else { unreachable!("checked by may_chain_hop") };
        for &m in routes.values() {
            let next = &mut self.links[m as usize];
            next.arrivals_after_ties |= !is_reported(&next.name) && next.delay < delay;
        }
    }

    /// An idle link takes its queue's next packet (traced: what the queue gave and dropped).
    pub(super) fn start_tx(&mut self, link: u32) {
        let l = &mut self.links[link as usize];
        // Whether it takes a packet (or drops some) now: a traced link may only schedule a
        // wake-up for its next delivery opportunity.
        let idle = l.sending.is_none() && !l.waits_for_opportunity(self.now);
        if let Some(done) = l.start_tx(self.now) {
            self.events.push(done, Event::TxDone { link });
        }
        if let Some(r) = self.recorder.as_mut().filter(|r| idle && r.hooks(link)) {
            r.on_dequeue(link, l.sending.as_ref(), l.queue.last_drops(), self.now, &self.demux);
        }
        if idle {
            let dropped = l.queue.last_drops().iter().map(|(p, _)| p);
            left_network(&self.demux, &self.endpoints, &mut self.conns, &mut self.recycle_candidates, &mut self.udp, dropped);
        }
    }
}

/// The most option bytes a TCP header carries (a 4-bit data offset in words: 60 bytes).
const MAX_TCP_OPTION_BYTES: u64 = 40;

/// Whether the DropTail of `next`, fed only by the FIFO link `feeder` without jitter, can
/// never drop, with no packet larger than `largest_bytes` nor smaller than a bare IP and
/// TCP header. At least as fast as the feeder, `next` takes no longer to send a packet
/// than the feeder did, and packets reach it at least the feeder's sending time of each
/// apart; so the work queued there just after an arrival never exceeds one largest packet
/// (by induction over the arrivals), and a packet is still being sent when the ones behind
/// it arrived within that time: fewer than `S_next(largest) / S_feeder(smallest)` of them
/// (S: a link's sending time, rounded as the simulator rounds it). The queue must hold
/// that many packets, all of the largest size.
fn never_drops(feeder: &Link, next: &Link, largest_bytes: u64) -> bool {
    let AnyQdisc::DropTail(q) = next.queue.inner() else { return false };
    let spacing = Duration::serialization(u64::from(HEADER_BYTES), feeder.rate_bps).as_nanos();
    let most_waiting = Duration::serialization(largest_bytes, next.rate_bps).as_nanos().div_ceil(spacing) as usize;
    next.rate_bps >= feeder.rate_bps && q.holds(most_waiting, most_waiting as u64 * largest_bytes)
}

/// The links the results table reports: the bottleneck's directions and the diamond's path 2.
pub(super) fn is_reported(link_name: &str) -> bool {
    link_name.starts_with("bottleneck")
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallpipe_core::qdisc::DropTailConfig;

    fn computed_link(name: &str, rate_bps: u64, limit_pkts: u32) -> Link {
        let q = QdiscConfig::DropTail(DropTailConfig::packets(limit_pkts));
        let q = Accounted::new(q.build().unwrap(), Rng::new(1, 2));
        let mut link = Link::new(name.into(), rate_bps, Duration::from_millis(3), Duration::ZERO, 0.0, q, 1, Rng::new(1, 3));
        link.computed = true;
        link
    }

    /// Offers `(gap_ns, ip_len_bytes)` to `feeder` and each packet it accepts to `next` at
    /// its arrival there, as the simulator chains them; returns the most packets ever
    /// waiting at `next` and its drops.
    fn chain(feeder: &mut Link, next: &mut Link, offers: &[(u64, u16)]) -> (usize, u64) {
        feeder.chained = true;
        let (mut now, mut most_waiting) = (Instant::ZERO, 0);
        for &(gap_ns, ip_len_bytes) in offers {
            now += Duration(gap_ns);
            if let Some(at) = feeder.pass_chained(Packet { ip_len_bytes, ..Packet::default() }, now) {
                next.offer_computed(Packet { ip_len_bytes, ..Packet::default() }, at);
                most_waiting = most_waiting.max(next.queue.len_pkts());
            }
        }
        (most_waiting, next.queue.stats().total_dropped_pkts())
    }

    /// `never_drops` against the worst case it bounds. A 1 Mbit/s feeder and an access link
    /// as fast: one largest packet (1448 bytes of payload, 80 of headers with the most TCP
    /// options: 12 224 µs to send) then bare headers back to back (40 bytes: 320 µs apart)
    /// keep at most ⌈12 224 / 320⌉ = 39 packets waiting; that burst reaches 38 (those
    /// arriving while the large one is sent), so the bound is within one of tight, and
    /// random traffic that keeps the feeder busy stays under it, with no drop. An access
    /// link 1% slower is refused: fed large packets back to back its queue grows with
    /// every one (1 in 100), past any limit.
    #[test]
    fn a_chained_hop_holds_at_most_the_bound() {
        let (rate_bps, largest) = (1_000_000, 1448 + 80);
        let bound = 39;
        let mut burst = vec![(1_000_000_000, largest as u16)];
        burst.extend([(0, 40); 60]);
        let mut rng = Rng::new(7, 1);
        let random: Vec<(u64, u16)> = (0..20_000)
            .map(|_| (rng.below_inclusive(12_000_000), 40 + rng.below_inclusive(largest - 40) as u16))
            .collect();
        let fresh = |limit| (computed_link("bottleneck", rate_bps, 10_000), computed_link("receiver0_down", rate_bps, limit));

        let (feeder, next) = fresh(bound as u32);
        assert!(never_drops(&feeder, &next, largest));
        let (_, next) = fresh(bound as u32 - 2);
        assert!(!never_drops(&feeder, &next, largest));
        let (mut feeder, mut next) = fresh(bound as u32);
        assert_eq!(chain(&mut feeder, &mut next, &burst), (bound - 1, 0));
        let (mut feeder, mut next) = fresh(bound as u32);
        let (most_waiting, drops) = chain(&mut feeder, &mut next, &[random.as_slice(), &burst, &random].concat());
        assert!(most_waiting <= bound && drops == 0, "{most_waiting} waiting, {drops} drops");

        let slower = computed_link("receiver0_down", rate_bps * 99 / 100, bound as u32);
        assert!(!never_drops(&feeder, &slower, largest));
        let (mut feeder, mut slower) = (computed_link("bottleneck", rate_bps, 10_000), slower);
        let (most_waiting, drops) = chain(&mut feeder, &mut slower, &vec![(0, largest as u16); 5_000]);
        assert!(most_waiting == bound && drops > 0, "{most_waiting} waiting, {drops} drops");
    }
}
