"""The results store of a sweep: one DuckDB file plus one Parquet folder per point.

Tables (see ``docs/sweeps.md`` for the whole schema):

- ``sweep``: one row per key of the grid (its position, column type and values), with
  the grid file and base scenario; written when a sweep starts.
- ``points``: one row per grid point: ``point_id``, one column per swept key (named by
  its dotted path, e.g. ``"link.queue.limit_pkts"``), ``overrides`` (JSON), ``status``
  (``'ok'`` or ``'error'``), ``error``, timestamps, wall seconds, attempts, the
  smallpipe version and the canonical scenario (JSON).
- ``summary``: one row per ``'ok'`` point: the headline metrics of
  :data:`SUMMARY_COLUMNS`.
- views ``flows``, ``slices``, ``links``, ``bursts``: the per-point Parquet files of the
  ``'ok'`` points, with a ``point_id`` column, read through ``read_parquet``.

A sweep has a single writer (the parent process) that opens the file only for the
few milliseconds a write takes, so ``smallpipe report`` or a read-only DuckDB session
can look at a sweep while it runs. Opening retries while another process holds the lock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

__all__ = [
    "RESULT_TABLES",
    "SUMMARY_COLUMNS",
    "StoreError",
    "connect",
    "create_views",
    "finished_ids",
    "init_store",
    "read_points",
    "read_sweep",
    "record_points",
]

RESULT_TABLES = ("flows", "slices", "links", "bursts", "queue_delays", "link_counters", "udp_flows")
"""Per-point tables written as Parquet and exposed as views."""

SUMMARY_COLUMNS: dict[str, tuple[str, str]] = {
    "flows": ("BIGINT", "flows in the run"),
    "utilization": ("DOUBLE", "bottleneck utilization (forward direction)"),
    "loss_rate": ("DOUBLE", "fraction of packets arriving at the bottleneck that were dropped"),
    "drops": ("BIGINT", "packets dropped at the bottleneck"),
    "mean_queue_delay_ms": ("DOUBLE", "mean queueing delay at the bottleneck"),
    "long_term_jain": ("DOUBLE", "Jain index of per-flow goodput over the whole run"),
    "short_term_jain": ("DOUBLE", "mean per-slice Jain index, at the scenario's slice_s"),
    "zero_share": ("DOUBLE", "fraction of active flow-slices that received no byte"),
    "top40_share": ("DOUBLE", "mean share of a slice's bytes taken by the top 40% of flows"),
    "slice_s": ("DOUBLE", "the slice length of short_term_jain, zero_share and top40_share"),
    "mean_goodput_bps": ("DOUBLE", "mean per-flow goodput over each flow's lifetime"),
    "timeouts_per_flow": ("DOUBLE", "mean retransmission timeouts per flow"),
    "syn_timeouts_per_flow": ("DOUBLE", "mean SYN timeouts per flow"),
    "retransmits_per_flow": ("DOUBLE", "mean retransmitted segments per flow"),
    "sized_flows": ("BIGINT", "flows with a finite size (transfers, sized bulk flows)"),
    "finished_flows": ("BIGINT", "of those, flows that finished within the run"),
    "fct_mean_s": ("DOUBLE", "mean flow completion time of finished sized flows"),
    "fct_median_s": ("DOUBLE", "median flow completion time"),
    "fct_p99_s": ("DOUBLE", "99th percentile flow completion time (linear interpolation)"),
    "bursts": ("BIGINT", "interactive bursts sent"),
    "response_median_ms": ("DOUBLE", "median response time of acknowledged interactive bursts"),
    "response_p99_ms": ("DOUBLE", "99th percentile interactive response time"),
    "udp_sources": ("BIGINT", "UDP sources in the run (they are not in flows)"),
    "udp_loss_rate": ("DOUBLE", "UDP datagrams dropped / (delivered + dropped), all sources"),
    "udp_delay_mean_ms": ("DOUBLE", "mean one-way delay of the delivered UDP datagrams"),
    "events": ("BIGINT", "simulator events"),
    "packets": ("BIGINT", "link transmissions on all links"),
    "sim_wall_seconds": ("DOUBLE", "wall time of the simulation alone"),
}
"""Columns of the ``summary`` table: name -> (DuckDB type, meaning). NULL when undefined
(e.g. FCTs when no sized flow finished, Jain indices when no byte was delivered)."""

_POINT_COLUMNS = [
    ("overrides", "VARCHAR"),
    ("status", "VARCHAR NOT NULL"),
    ("error", "VARCHAR"),
    ("started_at", "TIMESTAMP"),
    ("finished_at", "TIMESTAMP"),
    ("wall_seconds", "DOUBLE"),
    ("attempts", "INTEGER NOT NULL"),
    ("version", "VARCHAR"),
    ("scenario", "VARCHAR NOT NULL"),
    ("run_dir", "VARCHAR"),
]
"""``points`` columns after ``point_id`` and the swept keys."""

LOCK_TIMEOUT_S = 60.0
"""How long opening the database waits for another process's lock."""


class StoreError(RuntimeError):
    """The database cannot hold this sweep (e.g. it holds a sweep over other keys)."""


def quote(identifier: str) -> str:
    """A DuckDB quoted identifier (dotted keys such as ``link.rate_bps`` need quotes)."""
    return '"' + identifier.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@contextmanager
def connect(path: str | PathLike[str], *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the database, retrying while another process holds its lock, and close it after.

    Raises:
        FileNotFoundError: ``read_only`` and the file does not exist.
        StoreError: the file is not a DuckDB database, or cannot be written.
        duckdb.IOException: the lock was not released within :data:`LOCK_TIMEOUT_S`.
    """
    path = Path(path)
    if read_only and not path.is_file():
        raise FileNotFoundError(f"results database not found: {path}")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    delay = 0.005
    while True:
        try:
            connection = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as error:
            if "lock" not in str(error).lower():
                raise StoreError(f"{path} cannot be opened as a DuckDB database ({error})") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
    try:
        yield connection
    finally:
        connection.close()


def _table_exists(connection: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = connection.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchone()
    return bool(found and found[0])


def init_store(
    path: str | PathLike[str],
    *,
    keys: Mapping[str, str],
    values: Mapping[str, Sequence[Any]],
    grid_file: str,
    base: Mapping[str, Any],
    run_root: str | PathLike[str],
) -> None:
    """Create the tables for a sweep over ``keys`` (key -> DuckDB type, or ``"JSON"`` for
    values kept as JSON text in a VARCHAR column), or check that an
    existing database was made for the same keys, and (re)write the ``sweep`` table.

    Raises:
        StoreError: the database holds a sweep over different keys or key types.
    """
    key_columns = "".join(
        f", {quote(key)} {'VARCHAR' if sql_type == 'JSON' else sql_type}" for key, sql_type in keys.items()
    )
    point_columns = "".join(f", {name} {sql_type}" for name, sql_type in _POINT_COLUMNS)
    summary_columns = "".join(f", {quote(name)} {sql_type}" for name, (sql_type, _) in SUMMARY_COLUMNS.items())
    with connect(path) as connection:
        if _table_exists(connection, "points"):
            existing = read_sweep_keys(connection)
            if existing != dict(keys):
                raise StoreError(
                    f"{path} holds a sweep over keys {existing}, not {dict(keys)}; "
                    "use another --db (one database per set of swept keys)"
                )
        connection.execute("BEGIN")
        connection.execute(f"CREATE TABLE IF NOT EXISTS points (point_id VARCHAR PRIMARY KEY{key_columns}{point_columns})")
        connection.execute(f"CREATE TABLE IF NOT EXISTS summary (point_id VARCHAR PRIMARY KEY{summary_columns})")
        for name, (sql_type, _) in SUMMARY_COLUMNS.items():  # a sweep begun by an older smallpipe resumes
            connection.execute(f"ALTER TABLE summary ADD COLUMN IF NOT EXISTS {quote(name)} {sql_type}")
        connection.execute(
            "CREATE OR REPLACE TABLE sweep (position INTEGER, key VARCHAR, sql_type VARCHAR, "
            "grid_values VARCHAR, grid_file VARCHAR, base VARCHAR, run_root VARCHAR, updated_at TIMESTAMP)"
        )
        connection.executemany(
            "INSERT INTO sweep VALUES (?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP)",
            [
                [position, key, sql_type, json.dumps(list(values[key])), grid_file, json.dumps(base),
                 str(Path(run_root).resolve())]
                for position, (key, sql_type) in enumerate(keys.items())
            ],
        )
        connection.execute("COMMIT")


def read_sweep_keys(connection: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Swept key -> DuckDB type, in grid order, from the ``sweep`` table."""
    rows = connection.execute("SELECT key, sql_type FROM sweep ORDER BY position").fetchall()
    return {key: sql_type for key, sql_type in rows}


def read_sweep(path: str | PathLike[str]) -> dict[str, Any]:
    """The grid of a results database: ``keys`` (key -> values, in grid order),
    ``types``, ``grid_file``, ``base`` (the base scenario as written) and ``run_root``."""
    with connect(path, read_only=True) as connection:
        if not _table_exists(connection, "sweep"):
            raise StoreError(f"{path} has no sweep table: not a smallpipe sweep database")
        rows = connection.execute(
            "SELECT key, sql_type, grid_values, grid_file, base, run_root FROM sweep ORDER BY position"
        ).fetchall()
    if not rows:
        raise StoreError(f"{path} has no sweep table rows: not a smallpipe sweep database")
    return {
        "keys": {row[0]: json.loads(row[2]) for row in rows},
        "types": {row[0]: row[1] for row in rows},
        "grid_file": rows[0][3],
        "base": json.loads(rows[0][4]),
        "run_root": rows[0][5],
    }


def finished_ids(path: str | PathLike[str], *, include_errors: bool) -> dict[str, str]:
    """point_id -> status of the points a re-run must skip: the ``'ok'`` ones, and the
    ``'error'`` ones too when ``include_errors``. Empty for a new database."""
    path = Path(path)
    if not path.is_file():
        return {}
    with connect(path) as connection:
        if not _table_exists(connection, "points"):
            return {}
        statuses = ("ok", "error") if include_errors else ("ok",)
        rows = connection.execute(
            "SELECT point_id, status FROM points WHERE status IN (SELECT unnest(?))", [list(statuses)]
        ).fetchall()
    return dict(rows)


def record_points(path: str | PathLike[str], records: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> None:
    """Write finished points (and the summary of the ``'ok'`` ones) in one transaction.

    Each record has ``point_id``, ``values`` (key -> value, DuckDB-ready), the
    ``points`` columns and, when ok, ``summary`` (name -> value). A point already in
    the database (an earlier error being retried) is replaced and its attempt count
    incremented.
    """
    if not records:
        return
    key_names = ", ".join(quote(key) for key in keys)
    point_names = ", ".join(name for name, _ in _POINT_COLUMNS)
    placeholders = ", ".join("?" for _ in range(1 + len(keys) + len(_POINT_COLUMNS)))
    summary_names = ", ".join(quote(name) for name in SUMMARY_COLUMNS)
    summary_placeholders = ", ".join("?" for _ in range(1 + len(SUMMARY_COLUMNS)))
    with connect(path) as connection:
        # The WAL is checkpointed by DuckDB once it is large, and at the end of the
        # sweep (create_views); a checkpoint at every close would triple a write's cost.
        connection.execute("PRAGMA disable_checkpoint_on_shutdown")
        connection.execute("BEGIN")
        for record in records:
            point_id = record["point_id"]
            previous = connection.execute("SELECT attempts FROM points WHERE point_id = ?", [point_id]).fetchone()
            attempts = (previous[0] if previous else 0) + 1
            connection.execute("DELETE FROM summary WHERE point_id = ?", [point_id])
            connection.execute("DELETE FROM points WHERE point_id = ?", [point_id])
            row = [point_id, *(record["values"][key] for key in keys)]
            row += [record[name] if name != "attempts" else attempts for name, _ in _POINT_COLUMNS]
            connection.execute(
                f"INSERT INTO points (point_id, {key_names}, {point_names}) VALUES ({placeholders})"
                if keys
                else f"INSERT INTO points (point_id, {point_names}) VALUES ({placeholders})",
                row,
            )
            if record.get("summary") is not None:
                summary = record["summary"]
                connection.execute(
                    f"INSERT INTO summary (point_id, {summary_names}) VALUES ({summary_placeholders})",
                    [point_id, *(summary.get(name) for name in SUMMARY_COLUMNS)],
                )
        connection.execute("COMMIT")


def create_views(path: str | PathLike[str], run_root: str | PathLike[str]) -> list[str]:
    """(Re)create the views ``flows``, ``slices``, ``links``, ``bursts`` over the Parquet
    files of the ``'ok'`` points under ``run_root``; returns the views made (a table
    with no file yet gets no view, since DuckDB cannot bind an empty glob)."""
    root = Path(run_root).resolve()
    made = []
    with connect(path) as connection:
        for table in RESULT_TABLES:
            if not any(root.glob(f"*/{table}.parquet")):
                connection.execute(f"DROP VIEW IF EXISTS {table}")
                continue
            glob = _literal(f"{root.as_posix()}/*/{table}.parquet")
            pattern = _literal(f"([0-9a-f]{{16}})/{table}\\.parquet$")
            connection.execute(
                f"CREATE OR REPLACE VIEW {table} AS "
                f"SELECT * FROM (SELECT regexp_extract(filename, {pattern}, 1) AS point_id, * EXCLUDE (filename) "
                f"FROM read_parquet({glob}, filename = true, union_by_name = true)) "
                "WHERE point_id IN (SELECT point_id FROM points WHERE status = 'ok')"
            )
            made.append(table)
    return made


def read_points(path: str | PathLike[str]) -> pl.DataFrame:
    """``points`` left-joined with ``summary``, sorted by the swept keys (scenario JSON left out)."""
    with connect(path, read_only=True) as connection:
        keys = list(read_sweep_keys(connection))
        order = ", ".join([*(quote(key) for key in keys), "point_id"])
        table: pl.DataFrame = connection.sql(
            f"SELECT p.* EXCLUDE (scenario), s.* EXCLUDE (point_id) FROM points p "
            f"LEFT JOIN summary s USING (point_id) ORDER BY {order}"
        ).pl()
        return table
