"""Run a scenario on real Linux TCP through the middlebox, and return a :class:`Result`.

The steps: refuse what Linux cannot honour (:mod:`.knobs`), ask ``smallpipe-gen units``
for the scenario's units (the simulator's RTT and start draws), build the namespaces
(:mod:`.netns`), start ``smallpipe-box`` in the box namespace and wait for its ``ready``,
start the generator's server and client on a shared ``CLOCK_MONOTONIC`` t0, wait (every
wait is bounded), stop the box, and join the records into the simulator's tables
(:mod:`.tables`).
"""

from __future__ import annotations

import json
import os
import platform
import select
import subprocess
import tempfile
import time
import warnings
from os import PathLike
from pathlib import Path
from typing import Any

from smallpipe._smallpipe import SimulationError
from smallpipe.errors import config_error as _config_error
from smallpipe.result import Interrupted, Result, with_active_overrides
from smallpipe.scenario import Scenario
from smallpipe.testbed.knobs import MAX_UNITS, linux_settings, rack_always_on
from smallpipe.testbed.netns import (
    COMMAND_TIMEOUT_S,
    LOSS_PROBE_COUNTERS,
    SERVER_ADDR,
    Network,
    client_addr,
)
from smallpipe.testbed.tables import to_result

__all__ = ["TestbedError", "find_binary", "run_testbed"]

REPO_ROOT = Path(__file__).resolve().parents[3]
SERVER_PORT = 5001
READY_TIMEOUT_S = 15.0
START_DELAY_S = 1.0
"""t0 is this long after the plan is written: the generators must be up by then."""
STOP_GRACE_S = 15.0
"""How long past the scenario's end the generators may take to write their records."""


class TestbedError(SimulationError):
    """The testbed could not run: a binary is missing, a namespace or process failed."""

    __test__ = False  # not a pytest test class


_BINARIES = {
    "smallpipe-box": ("SMALLPIPE_BOX", "smallpipe-middlebox"),
    "smallpipe-gen": ("SMALLPIPE_GEN", "smallpipe-trafficgen"),
}


def find_binary(name: str) -> Path:
    """``smallpipe-box`` or ``smallpipe-gen``: from ``$SMALLPIPE_BOX`` / ``$SMALLPIPE_GEN``,
    else ``<repo>/target/release/``.

    Raises:
        TestbedError: not found; the message gives the command that builds it.
    """
    variable, package = _BINARIES[name]
    path = Path(os.environ[variable]) if os.environ.get(variable) else REPO_ROOT / "target" / "release" / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise TestbedError(
            f"{name} not found at {path}; build it with `cargo build --release -p {package}` "
            f"in {REPO_ROOT} (or point ${variable} at it)"
        )
    return path


def _units(gen: Path, scenario: Scenario, workdir: Path) -> list[dict[str, Any]]:
    path = workdir / "scenario.json"
    path.write_text(scenario.to_json())
    done = subprocess.run([str(gen), "units", str(path)], capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise TestbedError(f"smallpipe-gen units: {done.stderr.strip()}")
    units: list[dict[str, Any]] = json.loads(done.stdout)
    return units


def box_config(scenario: Scenario, units: list[dict[str, Any]]) -> dict[str, Any]:
    """BOX.json (BOX_CONTRACT): the data flows from the servers (IF_B) to the clients
    (IF_A), so ``b_to_a`` is the simulator's forward ``bottleneck`` with ``link.queue``.

    A unit's base RTT is ``2 * delay_ms`` on the bottleneck plus its client's extra delay,
    which the box adds once per round trip (to the packets the client sends).
    """
    link = scenario["link"]
    delay_ns = round(link["delay_ms"] * 1e6)
    # The wire accounting applies to both directions, as in the simulator.
    framing = {key: link[key] for key in ("overhead_bytes", "mpu_bytes", "framing") if key in link}

    def direction(trace: str | None, loss_key: str, model_key: str, queue_key: str) -> dict[str, Any]:
        """One direction: a delivery trace in place of the rate, bursty loss in place of Bernoulli."""
        rate: dict[str, Any] = {"trace": trace} if trace else {"rate_bps": round(link["rate_bps"])}
        loss = {"loss_model": link[model_key]} if link.get(model_key) else {"loss": link[loss_key]}
        return rate | {"delay_ns": delay_ns, "queue": link[queue_key]} | loss | framing

    extra = {client_addr(u["unit_id"]): round(u["rtt_ms"] * 1e6) - 2 * delay_ns for u in units}
    return {
        "seed": scenario["seed"],
        "a_to_b": direction(link.get("reverse_trace") or link.get("trace"), "reverse_loss", "reverse_loss_model",
                            "reverse_queue"),
        "b_to_a": direction(link.get("trace"), "loss", "loss_model", "queue"),
        "extra_delay_ns_by_src": {addr: ns for addr, ns in extra.items() if ns > 0},
        "slice_ns": round(scenario["slice_s"] * 1e9),
    }


class _Process:
    """A testbed process: stdout is a pipe we read for ``ready``, stderr goes to a file (a
    pipe nobody reads could fill and block it)."""

    def __init__(self, name: str, args: list[str], workdir: Path) -> None:
        self.name = name
        self.stderr_path = workdir / f"{name.replace(' ', '-')}.stderr"
        with self.stderr_path.open("wb") as stderr:
            self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace").strip()[-2000:]

    def wait_ready(self, timeout_s: float) -> None:
        """Wait for the ``ready`` line a box or server prints once it is serving."""
        assert self.popen.stdout is not None
        fd = self.popen.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buffered = b""
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([fd], [], [], min(left, 0.05))
            chunk = os.read(fd, 4096) if readable else b""
            buffered += chunk
            if b"ready" in buffered.split():
                return
            if (readable and not chunk) or self.popen.poll() is not None:
                self.popen.wait(timeout=COMMAND_TIMEOUT_S)
                raise TestbedError(f"{self.name} exited with code {self.popen.returncode} before it was ready: "
                                   f"{self.stderr()}")
        raise TestbedError(f"{self.name} did not print `ready` within {timeout_s:g} s")

    def wait(self, timeout_s: float) -> None:
        """Wait for a clean exit."""
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise TestbedError(f"{self.name} did not finish within {timeout_s:g} s") from None
        if self.popen.returncode != 0:
            raise TestbedError(f"{self.name} exited with code {self.popen.returncode}: {self.stderr()}")

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it does not exit in time; closes our end of its stdout."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=timeout_s)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


def run_testbed(
    scenario: Scenario | str | PathLike[str],
    *,
    congestion_control: str | None = None,
    rfc: bool = True,
    out: str | PathLike[str] | None = None,
    pcap: bool = False,
) -> Result:
    """Run ``scenario`` on real Linux TCP in network namespaces, through ``smallpipe-box``.

    Arguments:
        congestion_control: ``reno``, ``cubic`` or ``bbr`` for every data sender [default: the
            scenario's ``tcp.congestion``].
        rfc: switch off Linux behaviours the RFCs lack where a sysctl can (see
            :func:`~smallpipe.testbed.knobs.linux_settings`).
        out: keep the raw records (box output, generator JSON, ``tcp_info.parquet``)
            in this directory; a temporary one otherwise.
        pcap: the box also captures every frame at its four points (both interfaces, in
            and out) to ``box.pcapng`` in ``out`` (pcapng, one interface per point).

    Raises:
        ConfigError: the scenario asks for something the testbed cannot honour.
        TestbedError: a binary is missing, or the network or a process failed.
        Interrupted: Ctrl-C stopped the run; it carries the tables measured until then
            (``meta["partial"]``, ``meta["stopped_at_ns"]``), as :func:`smallpipe.simulate`.
    """
    if not isinstance(scenario, Scenario):
        scenario = Scenario.from_toml(scenario)
    # As simulate does, so `smallpipe reproduce taq-testbed-* --set ...` runs the variant.
    scenario = with_active_overrides(scenario)
    settings = linux_settings(scenario, congestion_control, rfc)
    # What the kernel will do: RACK unless asked off by the sysctl on a kernel that heeds it.
    asked_rack = scenario["tcp"].get("loss_detection", "dupthresh") == "rack"
    loss_detection = "rack" if asked_rack or not rfc or rack_always_on(platform.release()) else "dupthresh"
    if loss_detection == "rack" and not asked_rack and rfc:
        # Warned, not refused: the default is "dupthresh", and refusing it would stop every testbed run.
        warnings.warn(f"tcp.loss_detection = \"dupthresh\" cannot be honoured on Linux {platform.release()}: "
                      "from 6.17 RACK is always on (docs/testbed.md); meta[\"loss_detection\"] records \"rack\"",
                      stacklevel=2)
    if "cubic" in settings.congestion_control and not scenario["tcp"].get("cubic_hystart", False):
        # Warned, not refused, as RACK above: CUBIC's HyStart is a module parameter for the whole host.
        warnings.warn("tcp.cubic_hystart = false cannot be honoured on the testbed: Linux's CUBIC runs its "
                      "HyStart (module parameter hystart, host-wide; docs/testbed.md)", stacklevel=2)
    if scenario["tcp"]["timestamps"] and not scenario["tcp"].get("rto_undo", False):
        warnings.warn("tcp.rto_undo = false cannot be honoured on the testbed: Linux always undoes a timeout "
                      "its timestamps show was spurious (tcp_try_undo_loss; docs/testbed.md)", stacklevel=2)
    box, gen = find_binary("smallpipe-box"), find_binary("smallpipe-gen")
    with tempfile.TemporaryDirectory(prefix="smallpipe-testbed-") as tmp:
        workdir = Path(out) if out is not None else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        units = _units(gen, scenario, workdir)
        if len(units) > MAX_UNITS:
            raise _config_error("flows", f"{len(units)} units", f"at most {MAX_UNITS} units in a testbed run")
        duration_s = scenario["duration_s"]
        started = time.monotonic()
        with Network(len(units), settings.mtu_bytes, settings.sysctls, settings.client_route,
                     settings.server_route) as net:
            if net.swept:
                warnings.warn(f"removed namespaces left by testbed processes that no longer run: {', '.join(net.swept)}",
                              stacklevel=2)
            (workdir / "box_config.json").write_text(json.dumps(box_config(scenario, units), indent=2))
            box_out = workdir / "box"
            box_out.mkdir(exist_ok=True)
            processes: list[_Process] = []
            stopped_at_ns: int | None = None
            try:
                box_proc = _Process("smallpipe-box", [
                    *net.exec_prefix(net.names.box), str(box), "--iface-a", net.IF_A, "--iface-b", net.IF_B,
                    "--config", str(workdir / "box_config.json"), "--out", str(box_out),
                    "--duration-s", str(duration_s + START_DELAY_S + READY_TIMEOUT_S + STOP_GRACE_S),
                    *(["--pcap", str(workdir / "box.pcapng")] if pcap else [])], workdir)
                processes.append(box_proc)
                box_proc.wait_ready(READY_TIMEOUT_S)
                # Linux counts tail-loss probes per namespace, not per socket: the run's are
                # the difference across it, per side (the servers send the data).
                roles = {"servers": net.names.servers, "clients": net.names.clients}
                counters_before = {role: net.read_counters(ns) for role, ns in roles.items()}
                plan_path = workdir / "plan.json"
                # Both generators must be up by t0; they start in milliseconds.
                t0_ns = time.monotonic_ns() + round(START_DELAY_S * 1e9)
                plan_path.write_text(json.dumps({
                    "scenario": scenario.to_dict(), "t0_ns": t0_ns,
                    "server_addr": SERVER_ADDR, "port": SERVER_PORT,
                    "client_addrs": [client_addr(u["unit_id"]) for u in units],
                    "congestion_control": settings.congestion_control,
                }))
                server = _Process("smallpipe-gen server", [
                    *net.exec_prefix(net.names.servers), str(gen), "server", str(plan_path),
                    str(workdir / "server.json")], workdir)
                processes.append(server)
                server.wait_ready(START_DELAY_S)
                client = _Process("smallpipe-gen client", [
                    *net.exec_prefix(net.names.clients), str(gen), "client", str(plan_path),
                    str(workdir / "client.json")], workdir)
                processes.append(client)
                # The box stops at the run's end, so its counters cover the run and no more.
                try:
                    time.sleep(max(0.0, (t0_ns - time.monotonic_ns()) / 1e9 + duration_s))
                except KeyboardInterrupt:
                    # Ctrl-C: end the run now and keep what was measured. The generators stop
                    # at SIGTERM (or at the terminal's SIGINT) and write their records so far.
                    stopped_at_ns = max(0, time.monotonic_ns() - t0_ns)
                    for generator in (client, server):
                        if generator.popen.poll() is None:
                            generator.popen.terminate()
                box_proc.stop()
                client.wait(STOP_GRACE_S)
                server.wait(STOP_GRACE_S)
                if box_proc.popen.returncode != 0:
                    raise TestbedError(f"smallpipe-box exited with code {box_proc.popen.returncode}: {box_proc.stderr()}")
                sysctls_seen = {key: net.read_sysctl(net.names.servers, key) for key in settings.sysctls}
                counters_after = {role: net.read_counters(ns) for role, ns in roles.items()}
                loss_probes = {role: {name: counters_after[role].get(name, 0) - counters_before[role].get(name, 0)
                                      for name in LOSS_PROBE_COUNTERS} for role in roles}
            finally:
                for process in reversed(processes):
                    process.stop()
        meta_extra = {
            "runtime": "testbed",
            "wall_seconds": time.monotonic() - started,
            "congestion_control": settings.congestion_control[0] if settings.congestion_control else None,
            "rfc": rfc,
            "kernel": platform.release(),
            "loss_detection": loss_detection,
            "sysctls": sysctls_seen,
            "loss_probe_counters": loss_probes,
            "client_route": " ".join(settings.client_route),
            "server_route": " ".join(settings.server_route),
        }
        if stopped_at_ns is not None:  # as an interrupted simulation: the tables cover the time run
            meta_extra |= {"partial": True, "stopped_at_ns": min(stopped_at_ns, round(duration_s * 1e9))}
        result = to_result(scenario, units, workdir, meta_extra)
        if stopped_at_ns is not None:
            raise Interrupted(result)
        return result
