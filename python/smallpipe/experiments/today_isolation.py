"""Matta & Guo, Figures 3 and 4 on today's TCP: does isolating short connections from long
ones in pipes of their own still protect the short ones when every connection is Linux
CUBIC or Linux BBR (v1)?

Set-up: :func:`smallpipe.experiments.isolation_common.run_pipe_sizes` with Figure 3's 30 and
Figure 4's 60 sessions of each class, isolation against sharing for long-to-short pipe ratios
k = 1, 2, 4, 8, 200 s per run (the class-isolation page: k = 1 to 8, 400 s), seed 1, once as
they are (the papers' TCP) and once under each of ``tcp.stack = "linux"`` with
``tcp.congestion = "cubic"`` and ``"bbr"``, applied as ``smallpipe reproduce --set`` does:
the stack then decides every knob it names (docs/tcp.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments import isolation_fig3, isolation_fig4
from smallpipe.experiments.isolation_common import run_pipe_sizes
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import overriding

__all__ = ["FIGURES", "KS", "TCPS", "plot", "reproduce", "run"]

FIGURES: dict[int, int] = {3: isolation_fig3.SESSIONS, 4: isolation_fig4.SESSIONS}
"""Figure → sessions of each class."""
KS: tuple[int, ...] = (1, 2, 4, 8)
TCPS: dict[str, Mapping[str, Any]] = {
    "paper": {},
    "linux-cubic": {"tcp.stack": "linux", "tcp.congestion": "cubic"},
    "linux-bbr": {"tcp.stack": "linux", "tcp.congestion": "bbr"},
}
"""Each TCP's overrides of the pipe scenarios ("paper": none)."""


def run(*, tcps: Sequence[str] = tuple(TCPS), figures: Sequence[int] = tuple(FIGURES), ks: Sequence[int] = KS,
        duration_s: float = 200.0, seed: int = 1) -> pl.DataFrame:
    """:func:`run_pipe_sizes`'s rows per TCP and figure, with ``tcp`` and ``figure`` columns first."""
    tables = []
    for name in tcps:
        if name not in TCPS:
            raise ValueError(f"tcps: {name!r} is not a TCP of this figure; expected one of {', '.join(TCPS)}")
        for figure in figures:
            if figure not in FIGURES:
                raise ValueError(f"figures: {figure} is not a figure here; expected one of {', '.join(map(str, FIGURES))}")
            with overriding(TCPS[name]):
                table = run_pipe_sizes(sessions=FIGURES[figure], ks=ks, duration_s=duration_s, seed=seed)
            tables.append(table.select(pl.lit(name).alias("tcp"), pl.lit(figure).alias("figure"), pl.all()))
    return pl.concat(tables)


def plot(table: pl.DataFrame, path: Path) -> None:
    """One panel per figure: the short class's Jain index against k, isolation solid and
    sharing dashed, one colour per TCP."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = sorted(table["figure"].unique())
    fig, axes = plt.subplots(1, len(figures), figsize=(5.5 * len(figures), 4), sharey=True, squeeze=False)
    for ax, figure in zip(axes[0], figures, strict=True):
        for index, (name,) in enumerate(table.select("tcp").unique(maintain_order=True).iter_rows()):
            for scheme, style in (("isolation", "-"), ("sharing", "--")):
                rows = table.filter(pl.col("figure") == figure, pl.col("tcp") == name,
                                    pl.col("scheme") == scheme).sort("k")
                ax.plot(rows["k"], rows["short_jain"], style, marker="o", color=f"C{index}", label=f"{name}, {scheme}")
        ax.set_xlabel("long-to-short pipe size ratio k")
        ax.set_title(f"Figure {figure}: N = {FIGURES[figure]} sessions per class")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("short connections' Jain index")
    fig.suptitle("Matta & Guo Figures 3-4 on today's TCP")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """k = 1, 2, 4, 8 over 200 s (quick: k = 1 and 4 over 60 s), written as CSV and PNG."""
    table = run(ks=(1, 4) if quick else KS, duration_s=60.0 if quick else 200.0, seed=seed)
    write_csv(table, out / "today-isolation.csv")
    plot(table, out / "today-isolation.png")
    return table
