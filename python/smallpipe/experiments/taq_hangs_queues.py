"""TAQ paper, Section 2.3's hang experiment with TAQ and the other disciplines.

The paper reports hangs for DropTail only (200 users: all see a hang over 20 s; 400 users:
almost 50% see one over 60 s) and argues that TAQ exists to remove them. We run the same
set-up (:func:`smallpipe.experiments.taq_hangs.scenario`: web users with four connections
each on 1 Mbit/s, 50 packets of buffer) for every discipline on the same seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments import taq_hangs
from smallpipe.experiments.provenance import write_csv

__all__ = ["DISCIPLINES", "plot", "reproduce", "run"]

DISCIPLINES: tuple[str, ...] = ("droptail", "taq", "red", "sfq", "fq", "fq_codel", "host_fq")


def run(*, disciplines: Sequence[str] = DISCIPLINES, users_list: tuple[int, ...] = (200, 400),
        duration_s: float = 600.0, seed: int = 1) -> tuple[pl.DataFrame, dict[tuple[str, int], pl.DataFrame]]:
    """One :func:`taq_hangs.run` per discipline. Returns the summary rows and each run's units."""
    tables: list[pl.DataFrame] = []
    units: dict[tuple[str, int], pl.DataFrame] = {}
    for kind in disciplines:
        table, per_users = taq_hangs.run(users_list=users_list, duration_s=duration_s, seed=seed, queue=kind)
        tables.append(table)
        units |= {(kind, users): u for users, u in per_users.items()}
    return pl.concat(tables), units


def plot(units: dict[tuple[str, int], pl.DataFrame], path: Path) -> None:
    """CDF of each user's longest hang, one panel per user count, one line per discipline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    users_list = sorted({users for _, users in units})
    fig, axes = plt.subplots(1, len(users_list), figsize=(6 * len(users_list), 4), sharey=True, squeeze=False)
    for ax, users in zip(axes[0], users_list, strict=True):
        for (kind, n), table in units.items():
            if n != users:
                continue
            hangs = np.sort(table["longest_hang_ns"].to_numpy() / 1e9)
            bold = kind in ("taq", "droptail")
            ax.plot(hangs, np.arange(1, hangs.size + 1) / hangs.size, linewidth=2 if bold else 1, label=kind)
        for threshold in (20, 60):
            ax.axvline(threshold, color="grey", linestyle=":")
        ax.set_xscale("log")
        ax.set_xlabel("longest user-perceived hang (s)")
        ax.set_title(f"{users} users")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("CDF over users")
    fig.suptitle("TAQ §2.3 hangs by discipline, 1 Mbit/s, 4 connections per user")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """600 s runs (300 s with ``quick``), written as CSV and PNG."""
    table, units = run(duration_s=300.0 if quick else 600.0, seed=seed)
    write_csv(table, out / "taq-hangs-queues.csv")
    plot(units, out / "taq-hangs-queues.png")
    return table
