"""User errors: how they are built, checked up front and shown.

A user error (a bad scenario, file, path or option) is a :class:`ConfigError` naming the
field or file, the value and what is allowed; the command line prints it verbatim (never
as Rich markup: ``[min, max]`` and ``[[flows]]`` must survive) and exits with
:data:`EXIT_USER_ERROR`. Checks that need no simulation (an ``--out`` that is a file, a
database that is a directory) run before any work starts.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from smallpipe._smallpipe import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_USER_ERROR",
    "OverrideNote",
    "check_database",
    "check_output_dir",
    "check_writable_dir",
    "config_error",
    "fail",
    "printing_notes",
    "rescue_folder",
    "show_error",
]

EXIT_USER_ERROR = 2
"""Exit code of every user error (as for a usage error)."""



@cache
def _stderr() -> Console:
    # Rich and Typer are imported when a message is shown: scenario.py, which every
    # worker imports, uses only config_error and OverrideNote.
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, highlight=False)


class OverrideNote(UserWarning):
    """An override changed more than the key it names (e.g. switching a discipline's
    ``kind`` dropped the old kind's other keys)."""


def config_error(field: str, value: str, allowed: str) -> ConfigError:
    """A ConfigError in the native message format, with its parts as attributes."""
    error = ConfigError(f"{field}: {value} is not allowed; expected {allowed}")
    error.field, error.value, error.allowed = field, value, allowed
    return error


def show_error(label: str, message: str) -> None:
    """Print ``label: message`` on stderr, the label in bold red, the message verbatim."""
    from rich.text import Text

    _stderr().print(Text.assemble((label, "bold red"), " ", message))


def fail(label: str, message: str) -> NoReturn:
    """Print a user error and exit with :data:`EXIT_USER_ERROR`."""
    import typer

    show_error(label, message)
    raise typer.Exit(EXIT_USER_ERROR)


@contextmanager
def printing_notes() -> Iterator[None]:
    """Print each distinct :class:`OverrideNote` raised inside the block once, as ``note:``;
    pass any other warning on as Python would have shown it."""
    from rich.text import Text

    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", OverrideNote)
            yield
    finally:
        # Shown once the recording has ended: inside it, showwarning would append to the
        # very list being read, and the loop would never end (a testbed reproduction's
        # warning grew the CLI to 24 GB this way).
        seen: set[str] = set()
        for warning in caught:
            if issubclass(warning.category, OverrideNote):
                text = str(warning.message)
                if text not in seen:
                    seen.add(text)
                    _stderr().print(Text.assemble(("note:", "yellow"), " ", text))
            else:
                warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)


def check_output_dir(path: Path, option: str = "--out") -> None:
    """Exit with a message when ``path`` cannot be an output directory (checked before a run)."""
    for existing in (path, *path.parents):
        if existing.exists():
            if not existing.is_dir():
                what = "is a file" if existing == path else f"is inside {existing}, which is a file"
                fail("error:", f"{option} {path} {what}; expected a directory (existing or to be created)")
            if not os.access(existing, os.W_OK | os.X_OK):
                fail("error:", f"{option} {path}: {existing} is not writable; expected a writable directory")
            return


def check_writable_dir(path: Path, option: str = "--out") -> None:
    """Create ``path`` and write a file into it, or exit with a message naming it: checked
    before any work, so that a run is never lost to a folder it cannot write (``/proc/x``)."""
    import tempfile

    check_output_dir(path, option)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".smallpipe-probe-"):
            pass
    except OSError as error:
        fail("error:", f"{option} {path} is not writable ({error.strerror or error}); expected a writable directory")


def rescue_folder(stem: str) -> Path | None:
    """A new folder to keep results whose own folder could not take them (a full disk): in
    the temporary directory, else the home directory, else the working directory; None when
    none of them takes a folder."""
    import tempfile

    for root in (tempfile.gettempdir(), Path.home(), Path.cwd()):
        try:
            return Path(tempfile.mkdtemp(prefix=f"smallpipe-rescued-{stem}-", dir=root))
        except OSError:
            continue
    return None


DUCKDB_MAGIC = b"DUCK"
"""DuckDB's file signature, at byte 8 of the file."""


def check_database(path: Path, option: str, *, writable: bool) -> None:
    """Exit with a message when ``path`` is not a usable DuckDB file (checked before a run).

    ``writable``: the command writes (``sweep``): the file may be missing but must be
    writable if present; otherwise (``report``) it must exist.
    """
    if path.is_dir():
        fail("error:", f"{option} {path} is a directory; expected a DuckDB database file")
    if not path.exists():
        if not writable:
            fail("error:", f"{option} {path} not found; expected a database written by `smallpipe sweep`")
        check_output_dir(path.parent, f"{option} {path}: the folder")
        return
    # The mode bits too: root may write a file its owner marked read-only.
    if writable and (not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222):
        fail("error:", f"{option} {path} is read-only; expected a writable DuckDB file (or a new path)")
    try:
        with path.open("rb") as file:
            header = file.read(12)
    except OSError as error:
        fail("error:", f"{option} {path} cannot be read ({error.strerror}); expected a readable DuckDB file")
    if path.stat().st_size > 0 and header[8:12] != DUCKDB_MAGIC:
        fail("error:", f"{option} {path} is not a DuckDB database; expected a database written by `smallpipe sweep`")
