"""`smallpipe plan`: what a run would be before it is run. The scenario as it would be
simulated (``--set`` applied), the memory guard's estimate and verdict, and the wall time
and disk of the whole run extrapolated from a pilot: the run itself, stopped after about a
second of wall time. :func:`estimate_work` is the same estimate for runs, sweeps and
comparisons, which print it in one line before they start."""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smallpipe import _smallpipe
from smallpipe._smallpipe import ConfigError
from smallpipe.guard import Estimate, estimate_memory
from smallpipe.result import Interrupted, Result, reporting_progress, simulate
from smallpipe.scenario import Scenario, apply_overrides, check_simulable, read_toml

__all__ = ["PILOT_WALL_S", "Pilot", "PilotInterrupted", "RunPlan", "WorkEstimate", "estimate_work", "plan_run"]

PILOT_WALL_S = 1.0
"""Wall time the pilot simulates for before it is stopped."""

PER_RUN_TABLES = frozenset({"units", "links", "queue_delays", "link_counters", "udp_flows"})
"""Tables whose size does not grow with the simulated time (one row per unit, link or
delay bucket, UDP source); the others are extrapolated in proportion to it."""


@dataclass(frozen=True)
class Pilot:
    """The start of the run: how far it got in its wall time, and what it wrote."""

    simulated_s: float
    wall_s: float
    table_bytes: dict[str, int]
    finished: bool
    result: Result | None = None
    """The whole run's result when the pilot finished it (a caller may use it as the run)."""


class PilotInterrupted(Exception):
    """Ctrl-C during a pilot (not the pilot's own stop after ``PILOT_WALL_S``)."""


@dataclass(frozen=True)
class RunPlan:
    config: dict[str, Any]
    """The canonical scenario as it would be simulated."""
    memory: Estimate
    refusal: str | None
    """What the memory guard or the simulator's checks would say, or None."""
    pilot: Pilot | None
    """None when the run is refused (a pilot would not fit either)."""

    @property
    def duration_s(self) -> float:
        return float(self.config["duration_s"])

    @property
    def wall_s(self) -> float | None:
        """Wall time of the whole run: the pilot's pace over the whole duration."""
        if self.pilot is None:
            return None
        if self.pilot.finished:
            return self.pilot.wall_s
        return self.pilot.wall_s * self.duration_s / max(self.pilot.simulated_s, 1e-9)

    @property
    def disk_bytes(self) -> float | None:
        """The written tables: those that grow with time scaled to the whole duration."""
        if self.pilot is None:
            return None
        scale = 1.0 if self.pilot.finished else self.duration_s / max(self.pilot.simulated_s, 1e-9)
        return float(sum(size if table in PER_RUN_TABLES else size * scale
                         for table, size in self.pilot.table_bytes.items()))


def _pilot(scenario: Scenario) -> Pilot:
    """Raises PilotInterrupted on Ctrl-C."""
    started = time.monotonic()
    stopped = []

    def start(_: Scenario) -> Any:
        def progress(_now_ns: int, _end_ns: int) -> None:
            if time.monotonic() - started > PILOT_WALL_S:
                stopped.append(True)
                raise KeyboardInterrupt  # the simulator stops here and returns what it has
        return progress

    try:
        with reporting_progress(start):
            result = simulate(scenario)
        finished = True
    except Interrupted as stop:
        if not stopped:
            raise PilotInterrupted from None
        result, finished = stop.result, False
    except KeyboardInterrupt:
        raise PilotInterrupted from None
    with tempfile.TemporaryDirectory(prefix="smallpipe-plan-") as tmp:
        result.write(tmp)
        sizes = {path.name.partition(".")[0]: path.stat().st_size for path in Path(tmp).iterdir()
                 if path.suffix in (".parquet", ".pcap")}
    simulated_s = result.meta.get("stopped_at_ns", result.meta["duration_ns"]) / 1e9
    return Pilot(simulated_s, time.monotonic() - started, sizes, finished, result if finished else None)


def plan_run(path: str | Path, overrides: Mapping[str, Any] | None = None, *, pilot: bool = True) -> RunPlan:
    """Plan the run of the scenario file ``path`` with ``overrides`` applied first.

    Raises:
        ConfigError: the scenario is invalid for a reason other than its size (the memory
            guard's refusal is returned, with the estimate behind it).
    """
    config = read_toml(path)
    apply_overrides(config, overrides or {})
    refusal = None
    try:
        scenario: Scenario | None = Scenario.from_dict(config)
    except ConfigError as error:
        if not str(getattr(error, "allowed", "")).startswith("a run of at most"):
            raise
        refusal, scenario = f"memory guard: {error}", None
    if scenario is None:  # refused for its size only: the canonical form without the guard
        from smallpipe.scenario import _to_json, _whole_numbers

        canonical: dict[str, Any] = json.loads(_smallpipe.validate_config(_to_json(_whole_numbers(config))))
    else:
        canonical = scenario.to_dict()
        try:
            check_simulable(scenario)
        except ConfigError as error:
            refusal = f"simulator: {error}"
    memory = estimate_memory(canonical)
    ran = _pilot(scenario) if pilot and scenario is not None and refusal is None else None
    return RunPlan(canonical, memory, refusal, ran)


@dataclass(frozen=True)
class WorkEstimate:
    """What ``runs`` runs like ``scenario`` cost, ``parallel`` at a time, from one pilot of it."""

    plan: RunPlan
    runs: int
    parallel: int

    @property
    def wall_s(self) -> float | None:
        one = self.plan.wall_s
        return None if one is None else one * math.ceil(self.runs / self.parallel)

    @property
    def disk_bytes(self) -> float | None:
        one = self.plan.disk_bytes
        return None if one is None else one * self.runs

    @property
    def memory_bytes(self) -> float:
        return float(self.plan.memory.total_bytes * min(self.parallel, self.runs))

    def line(self, what: str = "run") -> str:
        """One line: ``estimate: about 2 s wall, 1.3 MB of tables, 40 MB of memory (...)``."""
        pilot = self.plan.pilot
        wall = "unknown wall time" if self.wall_s is None else f"about {human_seconds(self.wall_s)} wall"
        disk = "" if self.disk_bytes is None else f", {human_bytes(self.disk_bytes)} of tables"
        if pilot is None:
            source = "no pilot"
        elif pilot.finished:
            source = f"a pilot ran the whole {'run' if self.runs == 1 else 'first ' + what} in {pilot.wall_s:.2g} s"
        else:
            source = (f"a pilot of the {'run' if self.runs == 1 else 'first ' + what} simulated "
                      f"{pilot.simulated_s:.3g} of {self.plan.duration_s:g} s in {pilot.wall_s:.2g} s")
        count = "" if self.runs == 1 else f" for {self.runs:,} {what}s, {self.parallel} at a time"
        return (f"estimate{count}: {wall}{disk}, {human_bytes(self.memory_bytes)} of memory "
                f"(estimated; {source})")


def estimate_work(scenario: Scenario, *, runs: int = 1, parallel: int = 1) -> WorkEstimate:
    """The wall time, disk and memory of ``runs`` runs like ``scenario``, ``parallel`` at a
    time, extrapolated from a pilot of ``scenario`` (at most ``PILOT_WALL_S``): the
    estimate `plan` prints, which `run`, `sweep` and `compare` print before they start.

    Raises:
        PilotInterrupted: Ctrl-C during the pilot.
    """
    config = scenario.to_dict()
    plan = RunPlan(config, estimate_memory(config), None, _pilot(scenario))
    return WorkEstimate(plan, runs, max(1, parallel))


def human_bytes(n_bytes: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= size:
            return f"{n_bytes / size:.3g} {unit}"
    return f"{n_bytes:.0f} B"


def human_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "unknown"
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"
