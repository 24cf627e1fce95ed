"""Matta & Guo, Figure 5: the effect of buffer size. N = 30 sessions of each class; under
isolation the short pipe has capacity C_u and the long pipe 4 C_u, under sharing one pipe
has 5 C_u; the buffers are scaled by k_b / k_c from 0.2 to 3 (isolation: r B_u and 4 r B_u;
sharing: 5 r B_u).

What the paper reports (Section 4.3): under sharing, bigger buffers let long connections
send bigger bursts and take bandwidth from short ones, so short goodput falls as the buffer
grows (and short fairness rises, as they all do equally badly); under isolation short
goodput hardly changes with the buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.isolation_common import (
    SCHEMES,
    measure,
    pipe_scenario,
    plot_against,
)
from smallpipe.experiments.provenance import write_csv

__all__ = ["PAPER", "RATIOS", "SESSIONS", "reproduce", "run"]

SESSIONS = 30
RATIOS: tuple[float, ...] = (0.2, 0.5, 1.0, 1.5, 2.0, 3.0)
QUICK_RATIOS: tuple[float, ...] = (0.2, 1.0, 3.0)

PAPER = {"sharing_short_goodput_falls_with_buffer": True, "isolation_short_goodput_flat": True}
"""The paper's claims, read from its text (no numbers are given in the text)."""


def run(*, ratios: Sequence[float] = RATIOS, duration_s: float = 400.0, seed: int = 1) -> pl.DataFrame:
    rows = []
    for r in ratios:
        for scheme in SCHEMES:
            sc = pipe_scenario(sessions=SESSIONS, short_capacity_units=1, long_capacity_units=4,
                               short_buffer_units=r, long_buffer_units=4 * r, scheme=scheme,
                               duration_s=duration_s, seed=seed)
            rows.append({"buffer_ratio": r, **measure(sc, scheme)})
    return pl.DataFrame(rows)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Six ratios over 400 s; ``quick``: 0.2, 1 and 3 over 120 s."""
    table = run(ratios=QUICK_RATIOS if quick else RATIOS, duration_s=120.0 if quick else 400.0, seed=seed)
    write_csv(table, out / "isolation-fig5.csv")
    plot_against(table, "buffer_ratio", "buffer-to-capacity ratio k_b / k_c",
                 f"Matta & Guo Figure 5: buffer size (N = {SESSIONS}, k_c = 1 + 4)", out / "isolation-fig5.png")
    return table
