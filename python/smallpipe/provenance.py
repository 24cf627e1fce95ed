"""Which code, command and machine made a result: every run's ``meta.json`` and every
reproduction's CSV name them, so a number can be traced back to what produced it."""

from __future__ import annotations

import functools
import platform
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from smallpipe._smallpipe import __version__

__all__ = ["run_provenance", "source_commit"]


@functools.cache
def source_commit() -> str:
    """The commit of the checkout smallpipe runs from, with ``+dirty`` when the tree has
    uncommitted changes to tracked files outside ``docs/``; ``unknown`` outside a git
    checkout."""
    return commit_of(Path(__file__).resolve().parent)


def commit_of(checkout: Path) -> str:
    """``source_commit`` of the git checkout holding ``checkout``. Changes under ``docs/``
    are left out: that is where the results themselves are written, so regenerating one
    figure's CSV must not mark the next figure's as made by changed code."""
    try:
        head = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no",
             "--", ":(top)", ":(top,exclude)docs"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if changes else "")


def run_provenance() -> dict[str, Any]:
    """``version``, ``commit``, ``command_line`` (as a shell would take it), ``host``,
    ``kernel`` (``uname -sr``) and ``python`` of the process that ran a result."""
    return {
        "version": __version__,
        "commit": source_commit(),
        "command_line": shlex.join(sys.argv),
        "host": socket.gethostname(),
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }
