"""Sweep points as Ray tasks, on a local Ray instance or a cluster (``smallpipe sweep
--backend ray [--address ADDR]``).

Each task runs :func:`smallpipe.sweep.run_point` into a temporary folder on its node and
returns the record and the bytes of the point's files; the sweep process writes the files
under its run root and the records to the store, as for local workers. Nodes therefore
need no shared storage, only smallpipe installed. See ``docs/sweeps.md``.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smallpipe.sweep import Point, Runner, _utc_now, publish_point, run_point

__all__ = ["RayUnavailableError", "import_ray", "ray_runner"]

#: Times Ray re-runs a task whose worker process or node died (not one whose run raised:
#: that is recorded as an error point at once).
TASK_RETRIES = 1


class RayUnavailableError(RuntimeError):
    """Ray is not installed (``pip install 'smallpipe[ray]'``)."""


def import_ray() -> Any:
    try:
        import ray  # type: ignore[import-not-found,unused-ignore]  # an optional extra
    except ImportError:
        raise RayUnavailableError(
            "--backend ray needs Ray, which is not installed; install it with pip install 'smallpipe[ray]'"
        ) from None
    return ray


def run_point_task(pid: str, scenario_json: str) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Run one point on whatever node Ray chose: its record (plus ``cpu_seconds``, the
    task's CPU time) and its folder's files by name (none if the run failed)."""
    cpu = time.process_time()
    with tempfile.TemporaryDirectory(prefix="smallpipe-point-") as scratch:
        record = run_point(pid, scenario_json, scratch)
        files = {}
        if record["status"] == "ok":
            files = {path.name: path.read_bytes() for path in Path(record["run_dir"]).iterdir()}
    record["cpu_seconds"] = time.process_time() - cpu
    return record, files


def _write_files(files: dict[str, bytes]) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)

    return write


def ray_runner(address: str | None = None, workers: int | None = None) -> Runner:
    """A :data:`smallpipe.sweep.Runner` on Ray.

    Arguments:
        address: a running cluster (``HOST:PORT`` of ``ray start --head``, or ``auto``);
            None starts a Ray instance on this machine for the sweep and stops it after.
            If Ray is already initialised in this process, that instance is used.
        workers: with ``address`` None, the CPUs of the local instance [default: CPU
            count]; with a cluster, at most this many points run at once [default: as
            many as the cluster's CPUs].

    Raises:
        ValueError: ``workers`` is below 1 (0 means "in this process" to the local backend).
    """

    if workers is not None and workers < 1:
        raise ValueError(f"workers = {workers} is not allowed with Ray; expected at least 1 (or unset)")

    def run(todo: list[Point], root: Path, record: Callable[[list[dict[str, Any]]], None]) -> None:
        ray = import_ray()
        owned = not ray.is_initialized()
        if owned:
            ray.init(
                address=address,
                num_cpus=workers if address is None else None,
                include_dashboard=False,
                logging_level=logging.WARNING,
            )
        try:
            _run_on_ray(ray, todo, root, record, workers if address is not None else None)
        finally:
            if owned:
                ray.shutdown()

    return run


def _run_on_ray(
    ray: Any, todo: list[Point], root: Path, record: Callable[[list[dict[str, Any]]], None], limit: int | None
) -> None:
    """Submit ``todo``, keeping at most two tasks per CPU (or ``limit``) queued so that an
    interrupt cancels little; record points as they finish, the ones finishing together
    in one write. Ctrl-C or a failed write cancels the tasks still running."""
    task = ray.remote(max_retries=TASK_RETRIES)(run_point_task)
    queued = limit if limit is not None else 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    pending = list(reversed(todo))
    in_flight: dict[Any, Point] = {}
    try:
        while pending or in_flight:
            while pending and len(in_flight) < queued:
                point = pending.pop()
                in_flight[task.remote(point.point_id, point.scenario.to_json())] = point
            ray.wait(list(in_flight), num_returns=1)
            ready, _ = ray.wait(list(in_flight), num_returns=len(in_flight), timeout=0)
            results = []
            for ref in ready:
                point = in_flight.pop(ref)
                try:
                    result, files = ray.get(ref)
                except ray.exceptions.RayError as error:
                    result = {
                        "point_id": point.point_id, "status": "error",
                        "error": f"the Ray task running this point failed ({type(error).__name__}: {error}); "
                        "re-run with --retry-errors",
                        "started_at": None, "finished_at": _utc_now(), "wall_seconds": None,
                        "summary": None, "run_dir": None,
                    }
                    files = {}
                if files:
                    result["run_dir"] = str(publish_point(root, point.point_id, _write_files(files)))
                results.append(result)
            record(results)
    except BaseException:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        raise
