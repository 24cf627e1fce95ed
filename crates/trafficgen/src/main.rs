//! smallpipe-gen: the testbed's traffic generator (Linux). One process per side, both
//! reading the same plan (`plan::Plan`, written by `smallpipe.testbed`):
//!
//!     smallpipe-gen units  SCENARIO.json          # the units, their RTTs and starts (JSON)
//!     smallpipe-gen server PLAN.json OUT.json     # prints `ready` once listening
//!     smallpipe-gen client PLAN.json OUT.json
//!     smallpipe-gen udp-send HOST:PORT udp_cbr|udp_expoo|udp_pareto duration_s=S [key=value ...]
//!     smallpipe-gen udp-recv PORT duration_s=S
//!
//! Both sides stop at the plan's t0 + duration, or earlier at SIGINT or SIGTERM, and write
//! their records as JSON; the Python side joins them into the simulator's tables.

mod client;
mod plan;
mod server;
mod sock;
mod udp;

use std::process::ExitCode;

const USAGE: &str = "usage: smallpipe-gen units SCENARIO.json | server PLAN.json OUT.json | client PLAN.json OUT.json \
                     | udp-send HOST:PORT APP duration_s=S [key=value ...] | udp-recv PORT duration_s=S";

fn read_json<T: serde::de::DeserializeOwned>(path: &str) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))
}

fn write_json<T: serde::Serialize>(path: &str, value: &T) -> Result<(), String> {
    let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
}

fn run(args: &[String]) -> Result<(), String> {
    match args {
        [cmd, scenario] if cmd == "units" => {
            let sc: smallpipe_sim::Scenario = read_json(scenario)?;
            sc.validate().map_err(|e| e.to_string())?;
            let rows: Vec<plan::UnitRow> = plan::units(&sc)?
                .into_iter()
                .map(|u| plan::UnitRow { unit_id: u.unit_id, group: u.group, app: u.app.name(), rtt_ms: u.rtt_ms, start_ns: u.start_ns })
                .collect();
            println!("{}", serde_json::to_string(&rows).map_err(|e| e.to_string())?);
            Ok(())
        }
        [cmd, plan_path, out] if cmd == "server" || cmd == "client" => {
            let plan: plan::Plan = read_json(plan_path)?;
            if let Some(g) = plan.scenario.flows.iter().find(|g| g.app.udp().is_some()) {
                return Err(format!("{plan_path}: app = \"{}\": plans carry TCP groups only; run UDP sources with udp-send and udp-recv",
                    g.app.name()));
            }
            let units = plan::units(&plan.scenario)?;
            if plan.client_addrs.len() != units.len() || plan.congestion_control.len() != plan.scenario.flows.len() {
                return Err(format!(
                    "{plan_path}: {} client addresses for {} units, {} congestion controls for {} groups",
                    plan.client_addrs.len(), units.len(), plan.congestion_control.len(), plan.scenario.flows.len()
                ));
            }
            if cmd == "server" {
                let output = server::run(plan, units).map_err(|e| format!("server: {e}"))?;
                write_json(out, &output)
            } else {
                write_json(out, &client::run(plan, units))
            }
        }
        [cmd, target, app, rest @ ..] if cmd == "udp-send" => {
            println!("{}", udp::send(target, app, rest)?);
            Ok(())
        }
        [cmd, port, rest @ ..] if cmd == "udp-recv" => {
            println!("{}", udp::receive(port, rest)?);
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    }
}

extern "C" fn on_stop_signal(_: libc::c_int) {
    sock::stop_now();
}

fn main() -> ExitCode {
    // Ctrl-C (the terminal's SIGINT reaches us too) or the runner's SIGTERM ends the run
    // early: both sides wind down within a poll and write the records measured so far.
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only reads the clock and stores an atomic (async-signal-safe).
        unsafe { libc::signal(signal, on_stop_signal as *const () as libc::sighandler_t) };
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("smallpipe-gen: {e}");
            ExitCode::from(2)
        }
    }
}
