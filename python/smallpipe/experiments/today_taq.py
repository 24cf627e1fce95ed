"""TAQ paper, Figures 2 and 8 on today's TCP: the 20 s Jain index under DropTail, TAQ and
per-host FQ at fair shares of 5, 10, 20 and 50 kbit/s over 1 Mbit/s, with the papers' TCP
and with Linux CUBIC and Linux BBR (v1) in every flow: does TAQ still matter?

Set-up: the runs of :func:`smallpipe.experiments.taq_aqm.run` (the Figure 2 dumbbell, one
RTT of buffer), once as they are and once under each of ``tcp.stack = "linux"`` with
``tcp.congestion = "cubic"`` and ``"bbr"``, applied as ``smallpipe reproduce --set`` does:
the stack then decides every knob it names (initial window 10, SACK, RACK, PRR, TLP,
timestamps, minimum RTO 200 ms, pacing; docs/tcp.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments import taq_aqm
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import overriding

__all__ = ["DISCIPLINES", "FAIR_SHARES_BPS", "TCPS", "plot", "reproduce", "run"]

FAIR_SHARES_BPS: tuple[int, ...] = (5_000, 10_000, 20_000, 50_000)
DISCIPLINES: tuple[str, ...] = ("droptail", "taq", "host_fq")
TCPS: dict[str, Mapping[str, Any]] = {
    "paper": {},
    "linux-cubic": {"tcp.stack": "linux", "tcp.congestion": "cubic"},
    "linux-bbr": {"tcp.stack": "linux", "tcp.congestion": "bbr"},
}
"""Each TCP's overrides of the Figure 2 scenario ("paper": none, the ns-2-like NewReno)."""


def run(
    *,
    tcps: Sequence[str] = tuple(TCPS),
    disciplines: Sequence[str] = DISCIPLINES,
    fair_shares_bps: Sequence[int] = FAIR_SHARES_BPS,
    duration_s: float = 1000.0,
    seed: int = 1,
) -> pl.DataFrame:
    """:func:`taq_aqm.run`'s rows at 1 Mbit/s, once per TCP, with a ``tcp`` column first."""
    tables = []
    for name in tcps:
        if name not in TCPS:
            raise ValueError(f"tcps: {name!r} is not a TCP of this figure; expected one of {', '.join(TCPS)}")
        with overriding(TCPS[name]):
            table = taq_aqm.run(disciplines=disciplines, fair_shares_bps=fair_shares_bps, duration_s=duration_s,
                                seed=seed)
        tables.append(table.select(pl.lit(name).alias("tcp"), pl.all()))
    return pl.concat(tables)


def plot(table: pl.DataFrame, path: Path) -> None:
    """One panel per TCP: 20 s Jain index against fair share, one line per discipline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tcps = list(dict.fromkeys(table["tcp"]))
    fig, axes = plt.subplots(1, len(tcps), figsize=(4.2 * len(tcps), 4), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], tcps, strict=True):
        for (kind,), group in table.filter(pl.col("tcp") == name).sort("fair_share_bps").group_by(
            "discipline", maintain_order=True
        ):
            ax.plot(group["fair_share_bps"] / 1000, group["short_term_jain"], marker="o", label=kind)
        ax.set_xscale("log")
        ax.set_xlabel("ideal per-flow fair share (kbit/s)")
        ax.set_title(name)
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel("Jain index, 20 s slices")
    fig.suptitle("TAQ Figures 2 and 8 on today's TCP (1 Mbit/s, buffer = 1 RTT)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The runs (1000 s each; 200 s with ``quick``), written as CSV and PNG."""
    table = run(duration_s=200.0 if quick else 1000.0, seed=seed)
    write_csv(table, out / "today-taq.csv")
    plot(table, out / "today-taq.png")
    return table
