"""Which code made a reproduction's table: every CSV carries the smallpipe version and the
git commit of the tree it ran from, so a page's numbers can be traced to the code behind them."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import polars as pl

from smallpipe import __version__
from smallpipe.result import active_overrides


@functools.cache
def source_commit() -> str:
    """The commit of the checkout smallpipe runs from, with ``+dirty`` when the tree has
    uncommitted changes to tracked files; ``unknown`` outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if changes else "")


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
