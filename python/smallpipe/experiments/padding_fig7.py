"""Padding/diversity paper, Figure 7 (model): mean response time against the loss
probability for the three countermeasures against the fully-backlogged flow: Approach I
(minRTO′ = 500 ms, Eq. 3), Approach II (short-term padding with three dummies, Eq. 12),
Approach III (diversity, k = 2, Eq. 14).

What the paper reports: Approaches II and III beat the fully-backlogged flow; Approach I
does not. The paper does not state Figure 7's RTT; we draw 100 ms as in Figure 3.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from smallpipe.experiments.padding_models import write_latency_figure

__all__ = ["reproduce"]


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The curves at RTT 100 ms as CSV and PNG; returns them at a few losses (the model is
    exact: ``quick`` and ``seed`` change nothing)."""
    del quick, seed
    return write_latency_figure(out, "padding-fig7", "Figure 7", (
        ("interactive_s", "interactive, minRTO 1 s (Eq. 3)"),
        ("min_rto_prime_s", "Approach I: minRTO' 500 ms (Eq. 3)"),
        ("backlogged_droptail_s", "fully backlogged, correlated losses (Eq. 10)"),
        ("backlogged_red_s", "fully backlogged, random losses (Eq. 10)"),
        ("padding_s", "Approach II: padding, 3 dummies (Eq. 12)"),
        ("diversity_s", "Approach III: diversity, k = 2 (Eq. 14)"),
    ))
