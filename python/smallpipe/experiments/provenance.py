"""Which code made a reproduction's table: every CSV carries the smallpipe version and the
git commit of the tree it ran from, so a page's numbers can be traced to the code behind them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from smallpipe import __version__
from smallpipe.provenance import source_commit
from smallpipe.result import active_overrides

__all__ = ["source_commit", "write_csv"]


def write_csv(table: pl.DataFrame, path: Path) -> None:
    """Writes ``table`` with more columns: ``smallpipe_version``, ``smallpipe_commit`` and,
    for a variant run (:func:`smallpipe.result.overriding`), ``overrides`` as JSON."""
    stamped = table.with_columns(
        smallpipe_version=pl.lit(__version__), smallpipe_commit=pl.lit(source_commit())
    )
    if overrides := active_overrides():
        stamped = stamped.with_columns(
            overrides=pl.lit(json.dumps(dict(overrides), sort_keys=True))
        )
    stamped.write_csv(path)
