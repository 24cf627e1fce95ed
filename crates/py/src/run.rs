//! Running a simulation in chunks of events, so that Python sees Ctrl-C between them and
//! can show progress; an interrupted run returns the results computed so far.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use smallpipe_sim::{Scenario, Simulator};

use crate::{config_error, results_to_dict, rows_to_dict, SimulationError};

/// Events per chunk: about 20 ms of wall time at the simulator's speed
/// (about a million events per second, 200 flows), so Ctrl-C is seen well within a
/// second even on a loaded machine; the Python work between chunks costs microseconds.
pub const CHUNK_EVENTS: u64 = 20_000;

/// A panic is a broken invariant of the simulator (accounting, event order): report it
/// as SimulationError with its message rather than as pyo3's PanicException.
fn guarded<T>(step: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(step)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        SimulationError::new_err(format!("the simulator failed: {message}"))
    })
}

/// Runs `scenario` `chunk_events` events at a time, without the GIL. Between chunks it
/// runs Python's signal handlers and calls `progress(now_ns, end_ns)`; a KeyboardInterrupt
/// from either stops the run, and the results up to then come back with `meta["partial"]`
/// true and `meta["stopped_at_ns"]`. Pausing keeps all state, so the results of a run
/// that is not interrupted do not depend on `chunk_events`.
///
/// With the scenario's `output.stream_flows_every = N` and an `on_rows` callback, once N
/// or more flows are recycled between two chunks their rows go to `on_rows` as a dict of
/// `flows`, `slices`, `bursts` and `progress` columns (in flow_id order within the batch)
/// and are no longer held; the returned tables hold the rest.
pub fn simulate_in_chunks<'py>(
    py: Python<'py>,
    scenario: &Scenario,
    progress: Option<&Bound<'py, PyAny>>,
    chunk_events: u64,
    on_rows: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    if chunk_events == 0 {
        return Err(PyValueError::new_err("chunk_events: 0 is not allowed; expected at least 1 event per chunk"));
    }
    let mut sim = Simulator::new(scenario).map_err(|e| config_error(py, e))?;
    let end_ns = sim.end_ns();
    let stream = on_rows.zip(scenario.output.as_ref().map(|o| o.stream_flows_every));
    let mut interrupted = false;
    while !py.allow_threads(|| guarded(|| sim.advance(chunk_events)))? {
        let between = py.check_signals().and_then(|()| match progress {
            Some(callback) => callback.call1((sim.now_ns(), end_ns)).map(drop),
            None => Ok(()),
        });
        let between = between.and_then(|()| match stream {
            Some((callback, every)) if sim.finished_flows() as u64 >= every => {
                let rows = sim.take_finished();
                let batch = PyDict::new(py);
                rows_to_dict(py, &batch, &rows.flows, &rows.bursts, &rows.progress, sim.slice_ns())?;
                callback.call1((batch,)).map(drop)
            }
            _ => Ok(()),
        });
        match between {
            Ok(()) => {}
            Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => {
                interrupted = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let results = guarded(|| if interrupted { sim.finish_early() } else { sim.finish() })?;
    let out = results_to_dict(py, &results)?;
    let meta = out.get_item("meta")?.expect("results_to_dict writes meta").downcast_into::<PyDict>()?;
    meta.set_item("partial", interrupted)?;
    if interrupted {
        meta.set_item("stopped_at_ns", results.duration_ns)?;
    }
    Ok(out)
}
