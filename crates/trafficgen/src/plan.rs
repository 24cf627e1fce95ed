//! The plan the Python runner writes, and the scenario's units as the generator sees them.
//!
//! Units are enumerated exactly as the simulator does (groups in order, `count` units each,
//! one unit per client of a replayed log in order of first appearance), and each unit's
//! base RTT and start time are the first two draws of the simulator's per-unit stream
//! (`Rng::new(seed, 0x4000_0000 + unit)`), so a unit has the same RTT and start in both
//! runtimes. Later draws (sizes, think times, gaps) follow real time, not the simulator's
//! event order, so they match in distribution only.

use serde::{Deserialize, Serialize};
use smallpipe_core::Rng;
use smallpipe_sim::config::{AppKind, ReplayMode, Spread};
use smallpipe_sim::Scenario;
use std::net::Ipv4Addr;

/// Written by `smallpipe.testbed` next to the run; both sides read the same file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The canonical scenario (every default filled in).
    pub scenario: Scenario,
    /// `CLOCK_MONOTONIC` time of the run's t = 0, ns.
    pub t0_ns: u64,
    pub server_addr: Ipv4Addr,
    pub port: u16,
    /// The client-side address of each unit, indexed by unit id.
    pub client_addrs: Vec<Ipv4Addr>,
    /// `TCP_CONGESTION` of the data senders, per flow group.
    pub congestion_control: Vec<String>,
}

impl Plan {
    pub fn end_ns(&self) -> u64 {
        self.t0_ns + secs_to_ns(self.scenario.duration_s)
    }
    pub fn slice_ns(&self) -> u64 {
        secs_to_ns(self.scenario.slice_s)
    }
    pub fn n_slices(&self) -> u32 {
        (self.scenario.duration_s / self.scenario.slice_s).ceil() as u32
    }
    /// Payload bytes of a full segment (the simulator's MSS: headers and options excluded).
    pub fn mss_bytes(&self) -> u32 {
        self.scenario.tcp.mss_bytes()
    }
}

pub fn secs_to_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

/// One unit: a flow, session, web user, Poisson host pair or log client.
#[derive(Debug, Clone)]
pub struct UnitSpec {
    pub unit_id: u32,
    pub group: u32,
    pub app: AppKind,
    pub rtt_ms: f64,
    pub start_ns: u64,
    /// The unit's random stream after the RTT and start draws.
    pub rng: Rng,
    /// Replay: the client's requests (seconds since the log's first request, bytes).
    pub requests: Vec<(f64, u64)>,
    pub replay: ReplayMode,
}

/// What `smallpipe-gen units` prints for the Python side (addresses and box delays).
#[derive(Debug, Serialize)]
pub struct UnitRow {
    pub unit_id: u32,
    pub group: u32,
    pub app: &'static str,
    pub rtt_ms: f64,
    pub start_ns: u64,
}

fn draw(spread: Spread, rng: &mut Rng) -> f64 {
    let (lo, hi) = spread.bounds();
    lo + (hi - lo) * rng.uniform()
}

/// The scenario's units, in the simulator's order and with its RTT and start draws.
pub fn units(sc: &Scenario) -> Result<Vec<UnitSpec>, String> {
    let mut out = Vec::new();
    for (gi, g) in sc.flows.iter().enumerate() {
        let clients = match g.app {
            AppKind::Replay => replay_clients(gi, g.log_path.as_deref().unwrap_or_default(), g.skip_malformed)?,
            _ => vec![Vec::new(); g.count as usize],
        };
        for requests in clients {
            let unit_id = out.len() as u32;
            let mut rng = Rng::new(sc.seed, 0x4000_0000 + unit_id as u64);
            let rtt_ms = draw(g.rtt_ms, &mut rng);
            let start_ns = secs_to_ns(draw(g.start_s, &mut rng));
            out.push(UnitSpec { unit_id, group: gi as u32, app: g.app, rtt_ms, start_ns, rng, requests, replay: g.replay });
        }
    }
    Ok(out)
}

/// A replayed log's requests grouped by client, clients in order of first appearance.
fn replay_clients(gi: usize, path: &str, skip_malformed: bool) -> Result<Vec<Vec<(f64, u64)>>, String> {
    let field = format!("flows[{gi}].log_path");
    let text = std::fs::read_to_string(path).map_err(|e| format!("{field}: cannot read {path}: {e}"))?;
    let log = smallpipe_sim::squid::parse_access_log(&text, &field, skip_malformed).map_err(|e| e.to_string())?;
    let mut names: Vec<&str> = Vec::new();
    let mut clients: Vec<Vec<(f64, u64)>> = Vec::new();
    for r in &log.requests {
        let i = match names.iter().position(|n| *n == r.client) {
            Some(i) => i,
            None => {
                names.push(&r.client);
                clients.push(Vec::new());
                clients.len() - 1
            }
        };
        clients[i].push((r.time_s, r.bytes.max(1)));
    }
    Ok(clients)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_match_the_simulators_rtts_and_starts() {
        let sc: Scenario = serde_json::from_str(
            r#"{"seed":7,"flows":[{"app":"bulk","count":3,"rtt_ms":[50,250],"start_s":[0,2]},{"app":"transfer","size_bytes":1000}]}"#,
        )
        .unwrap();
        let ours = units(&sc).unwrap();
        let sim = smallpipe_sim::simulate(&Scenario { duration_s: 3.0, ..sc }).unwrap();
        assert_eq!(ours.len(), sim.units.len());
        for (u, s) in ours.iter().zip(&sim.units) {
            assert_eq!((u.unit_id, u.group), (s.unit_id, s.group));
            // The simulator keeps the RTT in whole nanoseconds.
            assert!((u.rtt_ms - s.rtt_ms).abs() < 1e-6, "{} vs {}", u.rtt_ms, s.rtt_ms);
            let first = sim.flows.iter().find(|f| f.unit_id == u.unit_id).expect("every unit starts within 2 s");
            assert_eq!(first.start_ns, u.start_ns);
        }
    }
}
