"""What a command that runs many simulations keeps when Ctrl-C stops it before its own
table is written (`smallpipe reproduce`): every run that ended, and the one stopped (its
tables cover the time it reached), as three Parquet tables in a folder marked partial."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.provenance import run_provenance
from smallpipe.result import Result

__all__ = ["MeasuredRuns"]


class MeasuredRuns:
    """Collects results as :func:`smallpipe.result.keeping_results` hands them over."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        self.flows: list[pl.DataFrame] = []
        self.links: list[pl.DataFrame] = []

    def add(self, result: Result) -> None:
        run = len(self.runs)
        self.runs.append({
            "run": run,
            "partial": bool(result.meta.get("partial")),
            "scenario_json": result.scenario.to_json(),
            "meta_json": json.dumps({k: v for k, v in result.meta.items() if k != "provenance"}),
        })
        self.flows.append(result.flows.with_columns(run=pl.lit(run, pl.Int64)))
        self.links.append(result.links.with_columns(run=pl.lit(run, pl.Int64)))

    def write(self, directory: Path, about: dict[str, Any]) -> None:
        """``runs.parquet`` (one row per run: its scenario and meta as JSON, ``partial``),
        ``flows.parquet`` and ``links.parquet`` (each with a ``run`` column), and
        ``meta.json``: ``partial`` true, ``about`` (what was being made) and the provenance."""
        directory.mkdir(parents=True)
        schema = {"run": pl.Int64, "partial": pl.Boolean, "scenario_json": pl.String, "meta_json": pl.String}
        pl.DataFrame(self.runs, schema=schema).write_parquet(directory / "runs.parquet")
        if self.flows:
            pl.concat(self.flows).write_parquet(directory / "flows.parquet")
            pl.concat(self.links).write_parquet(directory / "links.parquet")
        meta = {"partial": True, **about, "runs": len(self.runs), "provenance": run_provenance()}
        (directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
