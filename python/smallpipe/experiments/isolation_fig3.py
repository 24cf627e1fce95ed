"""Matta & Guo, Figure 3: the large pipe case (N = 30 sessions of long and 30 of short
connections). Jain index and goodput of each class under isolation (short pipe C_u, B_u;
long pipe k C_u, k B_u) and sharing ((1 + k) C_u, (1 + k) B_u) against k.

What the paper reports (Section 4.2.1): isolated short connections see no loss and a
fairness index very close to 1; isolated long connections lose fairness once their share
3.5 k packets per RTT approaches their window; under sharing long connections take more
than their share and short connections time out (lower fairness); isolation's class
goodput grows almost linearly with k.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from smallpipe.experiments.isolation_common import plot_against, run_pipe_sizes
from smallpipe.experiments.provenance import write_csv

__all__ = ["KS", "PAPER", "SESSIONS", "reproduce", "run"]

SESSIONS = 30
KS: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
QUICK_KS: tuple[int, ...] = (1, 2, 4, 8)

PAPER = {"short_isolation_jain_min": 0.95, "short_pkts_per_rtt": 104 / 30}
"""Read from the text: isolated short fairness "very close to 1"; the short pipe gives each
short connection about 104/30 = 3.5 packets per RTT."""


def run(*, ks: tuple[int, ...] = KS, duration_s: float = 400.0, seed: int = 1) -> pl.DataFrame:
    return run_pipe_sizes(sessions=SESSIONS, ks=ks, duration_s=duration_s, seed=seed)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """All k (1..8) over 400 s; ``quick``: k in 1, 2, 4, 8 over 120 s."""
    table = run(ks=QUICK_KS if quick else KS, duration_s=120.0 if quick else 400.0, seed=seed)
    write_csv(table, out / "isolation-fig3.csv")
    plot_against(table, "k", "long-to-short pipe size ratio k",
                 f"Matta & Guo Figure 3: large pipe (N = {SESSIONS})", out / "isolation-fig3.png")
    return table
