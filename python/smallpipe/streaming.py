"""Streamed per-flow tables: with ``[output] stream_flows_every = N`` the simulator hands the
rows of finished flows out in batches during the run; :class:`FlowStream` writes each
batch as Parquet parts (``flows/part-00001.parquet``, and the same under ``slices/``,
``bursts/`` and ``progress/``) and keeps an online summary, so a run of 10^8 flows never
holds its rows in memory. :func:`scan` reads the parts back lazily.

The summary is mergeable: counts, sums and a histogram of completion times on
logarithmic bins (:data:`FCT_BINS_PER_DECADE` per decade), whose quantiles are exact to
one bin (about 12%).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

__all__ = ["FCT_BINS_PER_DECADE", "STREAMED_TABLES", "FlowStream", "OnlineSummary", "scan", "streamed_parts"]

STREAMED_TABLES = ("flows", "slices", "bursts", "progress")
"""The per-flow tables a streamed run writes as parts."""
FCT_BINS_PER_DECADE = 20
"""Resolution of the completion-time histogram: bins 10^(1/20) (12%) wide."""
_FCT_MIN_NS = 1_000
"""Lowest bin edge: 1 µs (no simulated transfer is faster)."""
_FCT_DECADES = 13
"""1 µs to 10^7 s: every duration a scenario allows."""


@dataclass
class OnlineSummary:
    """What ``smallpipe run`` prints of the streamed flows, kept without their rows."""

    flows: int = 0
    finished: int = 0
    timeouts: int = 0
    fct_counts: np.ndarray = field(default_factory=lambda: np.zeros(_FCT_DECADES * FCT_BINS_PER_DECADE + 1, np.int64))
    """Finished flows by completion time: bin k holds (10^((k-1)/20), 10^(k/20)] µs."""

    def add(self, flows: pl.DataFrame) -> None:
        """Counts a batch of flow rows in."""
        self.flows += flows.height
        self.timeouts += int(flows.get_column("timeouts").sum())
        fct_ns = (flows.get_column("end_ns") - flows.get_column("start_ns")).drop_nulls().to_numpy()
        self.finished += len(fct_ns)
        bins = np.ceil(np.log10(np.maximum(fct_ns, _FCT_MIN_NS) / _FCT_MIN_NS) * FCT_BINS_PER_DECADE)
        np.add.at(self.fct_counts, np.minimum(bins.astype(np.int64), len(self.fct_counts) - 1), 1)

    def merge(self, other: OnlineSummary) -> None:
        self.flows += other.flows
        self.finished += other.finished
        self.timeouts += other.timeouts
        self.fct_counts += other.fct_counts

    def fct_quantile_s(self, q: float) -> float | None:
        """The upper edge of the bin holding the ``q`` quantile of completion times (None: no
        finished flow)."""
        if self.finished == 0:
            return None
        k = int(np.searchsorted(np.cumsum(self.fct_counts), math.ceil(q * self.finished)))
        return _FCT_MIN_NS * 10 ** (k / FCT_BINS_PER_DECADE) / 1e9

    def to_dict(self) -> dict[str, Any]:
        return {
            "flows": self.flows,
            "finished": self.finished,
            "timeouts": self.timeouts,
            "fct_p50_s": self.fct_quantile_s(0.5),
            "fct_p99_s": self.fct_quantile_s(0.99),
        }


class FlowStream:
    """Writes batches of per-flow rows (the native module's column dicts) as numbered
    Parquet parts under ``directory`` and keeps their :class:`OnlineSummary`."""

    def __init__(self, directory: Path, schemas: dict[str, pl.Schema]) -> None:
        self.directory = directory
        self.schemas = schemas
        self.parts = 0
        self.summary = OnlineSummary()

    def __call__(self, batch: dict[str, Any]) -> None:
        self.parts += 1
        for table in STREAMED_TABLES:
            frame = pl.DataFrame(batch[table], schema=self.schemas[table], strict=False)
            if table == "flows":
                self.summary.add(frame)
            folder = self.directory / table
            folder.mkdir(parents=True, exist_ok=True)
            frame.write_parquet(folder / f"part-{self.parts:05d}.parquet")


def streamed_parts(directory: Path, table: str) -> list[Path]:
    """The parts of ``table`` written under ``directory``, in order."""
    return sorted((directory / table).glob("part-*.parquet"))


def scan(directory: Path, table: str, schema: pl.Schema) -> pl.LazyFrame:
    """The parts of ``table`` as one lazy frame (rows in part order; flow_id order within a
    part), or an empty one."""
    parts = streamed_parts(directory, table)
    if not parts:
        return pl.LazyFrame(schema=schema)
    return pl.scan_parquet(parts)
