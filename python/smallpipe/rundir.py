"""Where `smallpipe run` writes: a new directory per run, so that no run overwrites
another's results without being asked to."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

__all__ = ["OutputExists", "claim_output_directory", "new_run_directory", "replace_atomically"]


class OutputExists(Exception):
    """The output directory holds files already and overwriting was not asked for."""


def new_run_directory(root: Path, stem: str, now: datetime | None = None) -> Path:
    """Create and return ``root/<stem>-<YYYYmmdd-HHMMSS>``, or ``...-2``, ``-3``, ... when
    that exists (two runs in one second). ``mkdir`` without ``exist_ok`` claims the name
    atomically, so concurrent runs never share a directory."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 10_000):
        candidate = root / (f"{stem}-{stamp}" if attempt == 1 else f"{stem}-{stamp}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise OutputExists(f"{root}: 9 999 runs of {stem} started at {stamp}; pass --out")


def claim_output_directory(out: Path, *, force: bool) -> Path:
    """``out``, if it is absent or an empty directory, or with ``force``."""
    if out.is_dir() and any(out.iterdir()) and not force:
        raise OutputExists(f"--out {out} holds files already (an earlier run?); pass --force to write into it")
    return out


def _full(directory: Path) -> bool:
    """No block left for an unprivileged writer on ``directory``'s file system."""
    try:
        return os.statvfs(directory).f_bavail == 0
    except OSError:
        return False


def replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` into a temporary name beside ``path``, then rename it over ``path``: a
    failed write (a full disk) leaves the old file or none, never a truncated one, and
    raises OSError (also where Polars raised its own error for the OS's)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(temporary)
        os.replace(temporary, path)
    except OSError:
        raise
    except Exception as error:  # Polars reports a failed write as its own error, naming the OS's
        if (code := re.search(r"os error (\d+)", str(error))) is not None:
            raise OSError(int(code[1]), os.strerror(int(code[1])), str(path)) from error
        if _full(path.parent):
            # Its Parquet sink can also fail on a full disk without naming the OS's error
            # ("Invalid thrift: transport error"); the file system says what happened.
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from error
        raise
    finally:
        temporary.unlink(missing_ok=True)
