"""TAQ paper, Section 2.3's hangs on today's TCP: the share of web users who see a hang
over 20 s (200 users) or 60 s (400 users) under DropTail, TAQ and per-host FQ, with the
papers' TCP and with Linux CUBIC and Linux BBR (v1) in every connection.

Set-up: the runs of :func:`smallpipe.experiments.taq_hangs_queues.run` (web users with four
connections each on 1 Mbit/s, 200 ms RTT, 50 packets of buffer, 600 s), once as they are
(ns-2-like NewReno) and once under each of ``tcp.stack = "linux"`` with
``tcp.congestion = "cubic"`` and ``"bbr"``, applied as ``smallpipe reproduce --set`` does:
the stack then decides every knob it names (docs/tcp.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments import taq_hangs_queues
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import overriding

__all__ = ["DISCIPLINES", "TCPS", "plot", "reproduce", "run"]

DISCIPLINES: tuple[str, ...] = ("droptail", "taq", "host_fq")
TCPS: dict[str, Mapping[str, Any]] = {
    "paper": {},
    "linux-cubic": {"tcp.stack": "linux", "tcp.congestion": "cubic"},
    "linux-bbr": {"tcp.stack": "linux", "tcp.congestion": "bbr"},
}
"""Each TCP's overrides of the hang scenario ("paper": none, the ns-2-like NewReno)."""


def run(*, tcps: Sequence[str] = tuple(TCPS), disciplines: Sequence[str] = DISCIPLINES,
        users_list: tuple[int, ...] = (200, 400), duration_s: float = 600.0, seed: int = 1) -> pl.DataFrame:
    """:func:`taq_hangs_queues.run`'s summary rows once per TCP, with a ``tcp`` column first."""
    tables = []
    for name in tcps:
        if name not in TCPS:
            raise ValueError(f"tcps: {name!r} is not a TCP of this figure; expected one of {', '.join(TCPS)}")
        with overriding(TCPS[name]):
            table, _ = taq_hangs_queues.run(disciplines=disciplines, users_list=users_list, duration_s=duration_s,
                                            seed=seed)
        tables.append(table.select(pl.lit(name).alias("tcp"), pl.all()))
    return pl.concat(tables)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Per user count: the share of users with a hang over the paper's threshold, bars per
    discipline, grouped by TCP."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    users_list = sorted(table["users"].unique())
    tcps = list(dict.fromkeys(table["tcp"]))
    kinds = list(dict.fromkeys(table["discipline"]))
    fig, axes = plt.subplots(1, len(users_list), figsize=(5.5 * len(users_list), 4), sharey=True, squeeze=False)
    width = 0.8 / len(kinds)
    for ax, users in zip(axes[0], users_list, strict=True):
        column = "share_hang_over_60s" if users >= 400 else "share_hang_over_20s"
        for offset, kind in enumerate(kinds):
            rows = table.filter(pl.col("users") == users, pl.col("discipline") == kind)
            values = [rows.filter(pl.col("tcp") == t)[column].mean() for t in tcps]
            ax.bar([i + (offset - (len(kinds) - 1) / 2) * width for i in range(len(tcps))], values, width=width,
                   label=kind)
        ax.set_xticks(range(len(tcps)), tcps)
        ax.set_ylim(0, 1)
        ax.set_title(f"{users} users: share with a hang over {column.split('_')[3]}")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("share of users")
    fig.suptitle("TAQ §2.3 hangs on today's TCP (1 Mbit/s, 4 connections per user)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """600 s runs (300 s with ``quick``), written as CSV and PNG."""
    table = run(duration_s=300.0 if quick else 600.0, seed=seed)
    write_csv(table, out / "today-hangs.csv")
    plot(table, out / "today-hangs.png")
    return table
