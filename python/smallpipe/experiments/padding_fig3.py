"""Padding/diversity paper, Figure 3 (model): mean response time against the loss
probability for the interactive flow (Eq. 3) and the fully-backlogged flow under
correlated (DropTail, Eqs. 4-6) and random (RED, Eqs. 7-8) losses, Eq. (10).

What the paper reports: the fully-backlogged flow is always faster than the interactive
one, and more so with RED. The paper does not state Figure 3's RTT; we draw 100 ms.
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
    return write_latency_figure(out, "padding-fig3", "Figure 3", (
        ("interactive_s", "interactive (Eq. 3)"),
        ("backlogged_droptail_s", "fully backlogged, correlated losses (Padhye Q)"),
        ("backlogged_red_s", "fully backlogged, random losses (Brosh Q, Eq. 7 summed)"),
        ("backlogged_red_eq8_s", "fully backlogged, random losses (Eq. 8 approx.)"),
    ))
