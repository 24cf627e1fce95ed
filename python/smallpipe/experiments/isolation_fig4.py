"""Matta & Guo, Figure 4: the small pipe case (N = 60 sessions of long and 30 of short
connections). Jain index and goodput of each class under isolation (short pipe C_u, B_u;
long pipe k C_u, k B_u) and sharing ((1 + k) C_u, (1 + k) B_u) against k.

What the paper reports (Section 4.2.2): each short connection's share falls to 1.75
packets per RTT, so short connections lose packets and time out even when isolated, but
isolated short fairness stays around 0.96; mixed with long connections in a 2 C_u pipe
(k = 1) short fairness drops below 0.8; isolation gives about the same overall goodput as
sharing, and its class goodput is almost linear in k.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from smallpipe.experiments.isolation_common import plot_against, run_pipe_sizes
from smallpipe.experiments.provenance import write_csv

__all__ = ["KS", "PAPER", "SESSIONS", "reproduce", "run"]

SESSIONS = 60
KS: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
QUICK_KS: tuple[int, ...] = (1, 2, 4, 8)

PAPER = {"short_isolation_jain": 0.96, "short_sharing_jain_k1_max": 0.8, "short_pkts_per_rtt": 1.75}
"""Read from the text of Section 4.2.2."""


def run(*, ks: tuple[int, ...] = KS, duration_s: float = 400.0, seed: int = 1) -> pl.DataFrame:
    return run_pipe_sizes(sessions=SESSIONS, ks=ks, duration_s=duration_s, seed=seed)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """All k (1..8) over 400 s; ``quick``: k in 1, 2, 4, 8 over 120 s."""
    table = run(ks=QUICK_KS if quick else KS, duration_s=120.0 if quick else 400.0, seed=seed)
    write_csv(table, out / "isolation-fig4.csv")
    plot_against(table, "k", "long-to-short pipe size ratio k",
                 f"Matta & Guo Figure 4: small pipe (N = {SESSIONS})", out / "isolation-fig4.png")
    return table
