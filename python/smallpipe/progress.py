"""Progress of long actions: a Rich bar on a terminal, a plain line every few seconds
otherwise (logs, CI, ``nohup``), so that a long run or sweep is never silent."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from smallpipe.result import ProgressCallback
from smallpipe.scenario import Scenario

__all__ = ["PLAIN_EVERY_S", "SimulationProgress", "eta_s"]

PLAIN_EVERY_S = 5.0
"""Seconds between two plain progress lines."""


def eta_s(elapsed_s: float, done: float, total: float) -> float | None:
    """Wall seconds left if the rest goes at the speed so far (None before any progress)."""
    if done <= 0 or elapsed_s <= 0:
        return None
    return elapsed_s * max(total - done, 0.0) / done


class SimulationProgress:
    """Shows how far the simulator is, for every :func:`smallpipe.simulate` in a
    :func:`smallpipe.result.reporting_progress` block (pass :meth:`start`).

    On a terminal, a bar of simulated seconds with the ETA, from the moment a run has
    taken ``show_after_s`` of wall time (0: from the start; a reproduction numbers its
    runs). Elsewhere, a line every ``every_s`` seconds.
    """

    def __init__(
        self,
        console: Console,
        label: str,
        *,
        show_after_s: float = 2.0,
        every_s: float = PLAIN_EVERY_S,
        count_runs: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console
        self._label = label
        self._show_after_s = show_after_s
        self._every_s = every_s
        self._count_runs = count_runs
        self._clock = clock
        self._runs = 0
        self._last_line_s = clock()
        self._bar: Progress | None = None
        self._task = TaskID(0)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def _description(self) -> str:
        return f"{self._label} · run {self._runs}" if self._count_runs else self._label

    def start(self, scenario: Scenario) -> ProgressCallback:
        """The callback for one run (called as it begins)."""
        self._runs += 1
        started_s = self._clock()
        if self._bar is not None:
            self._bar.reset(self._task, total=None, description=self._description())
        elif not self._console.is_terminal and self._count_runs and started_s - self._last_line_s >= self._every_s:
            self._line(started_s, f"{self._description()} started")

        def update(now_ns: int, end_ns: int) -> None:
            now_s, end_s = now_ns / 1e9, end_ns / 1e9
            wall_s = self._clock()
            if self._console.is_terminal:
                if self._bar is None and wall_s - started_s >= self._show_after_s:
                    self._bar = Progress(
                        TextColumn("{task.description}"),
                        BarColumn(),
                        TextColumn("{task.completed:.0f} of {task.total:.0f} s simulated"),
                        TimeElapsedColumn(),
                        TextColumn("ETA"),
                        TimeRemainingColumn(),
                        console=self._console,
                    )
                    self._task = self._bar.add_task(self._description(), total=end_s)
                    self._bar.start()
                if self._bar is not None:
                    self._bar.update(self._task, total=end_s, completed=now_s)
            elif wall_s - self._last_line_s >= self._every_s:
                left = eta_s(wall_s - started_s, now_s, end_s)
                self._line(
                    wall_s,
                    f"{self._description()}: {now_s:.1f} of {end_s:g} s simulated ({now_s / end_s:.0%}), "
                    f"{wall_s - started_s:.0f} s wall, ETA {'?' if left is None else f'{left:.0f} s'}",
                )

        return update

    def _line(self, wall_s: float, text: str) -> None:
        """A plain progress line, verbatim (no markup), never wrapped."""
        self._last_line_s = wall_s
        self._console.print(text, markup=False, highlight=False, soft_wrap=True)
