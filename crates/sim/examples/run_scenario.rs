//! Runs one scenario file (the JSON `Scenario::to_json` writes) in the simulator alone, for
//! profiling without the interpreter: `perf stat -e instructions:u` counts only the
//! simulator's work. Prints events, packets, bottleneck packets and a digest of the whole
//! results (wall time excluded), so that two builds can be checked bit-identical.

use smallpipe_sim::{simulate, Scenario};
use std::hash::{Hash, Hasher};

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_scenario SCENARIO.json");
    let json = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let sc = Scenario::from_json(&json).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut r = simulate(&sc).unwrap_or_else(|e| panic!("{path}: {e}"));
    r.wall_seconds = 0.0;
    let bottleneck = r.links.iter().find(|l| l.name == "bottleneck").map_or(0, |l| l.tx_pkts);
    let mut digest = rustc_hash::FxHasher::default();
    format!("{r:?}").hash(&mut digest);
    println!("events {} packets {} bottleneck_packets {} flows {} digest {:016x}", r.events, r.packets, bottleneck,
             r.flows.len(), digest.finish());
}
