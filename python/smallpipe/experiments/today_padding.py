"""Padding/diversity paper, Figure 8 on today's TCP: does a fully-backlogged telnet flow
still answer faster than an interactive one, and do padding and diversity still help, when
every flow is Linux CUBIC or Linux BBR (v1) with its tail loss probe, RACK and 200 ms
minimum RTO?

Set-up: the runs of :func:`smallpipe.experiments.padding_fig8.run` (5 Mbit/s, 12 ms RTT,
40 kB RED or DropTail buffer, N bulk cross-traffic flows, 5 telnet clients using the
approach), once as they are (the paper's TCP: RFC stack, 1 s minimum RTO) and once under
each of ``tcp.stack = "linux"`` with ``tcp.congestion = "cubic"`` and ``"bbr"``, applied as
``smallpipe reproduce --set`` does: the stack then decides every knob it names, the 1 s RTO
floor included (docs/tcp.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments import padding_fig8
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import overriding

__all__ = ["TCPS", "plot", "reproduce", "run"]

TCPS: dict[str, Mapping[str, Any]] = {
    "paper": {},
    "linux-cubic": {"tcp.stack": "linux", "tcp.congestion": "cubic"},
    "linux-bbr": {"tcp.stack": "linux", "tcp.congestion": "bbr"},
}
"""Each TCP's overrides of the Figure 8 scenario ("paper": none)."""


def run(*, tcps: Sequence[str] = tuple(TCPS), bulk_flows: Sequence[int] = padding_fig8.BULK_FLOWS,
        queues: Sequence[str] = ("red", "droptail"), duration_s: float = 200.0, seed: int = 1) -> pl.DataFrame:
    """:func:`padding_fig8.run`'s rows once per TCP, with a ``tcp`` column first."""
    tables = []
    for name in tcps:
        if name not in TCPS:
            raise ValueError(f"tcps: {name!r} is not a TCP of this figure; expected one of {', '.join(TCPS)}")
        with overriding(TCPS[name]):
            table = padding_fig8.run(bulk_flows=bulk_flows, queues=queues, duration_s=duration_s, seed=seed)
        tables.append(table.select(pl.lit(name).alias("tcp"), pl.all()))
    return pl.concat(tables)


def plot(table: pl.DataFrame, path: Path) -> None:
    """One panel per (queue, TCP): mean response time against the bottleneck's loss rate,
    one line per approach."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queues = list(dict.fromkeys(table["queue"]))
    tcps = list(dict.fromkeys(table["tcp"]))
    fig, axes = plt.subplots(len(queues), len(tcps), figsize=(4.2 * len(tcps), 3.6 * len(queues)), squeeze=False,
                             sharey=True)
    for row, queue in enumerate(queues):
        for column, name in enumerate(tcps):
            ax = axes[row][column]
            part = table.filter(pl.col("queue") == queue, pl.col("tcp") == name).sort("loss_rate")
            for (approach,), group in part.group_by("approach", maintain_order=True):
                ax.plot(group["loss_rate"], group["mean_response_s"], marker="o", label=approach)
            ax.set_yscale("log")
            ax.set_xlabel("bottleneck loss rate")
            ax.set_title(f"{queue}, {name}", fontsize=9)
            ax.legend(fontsize=7)
        axes[row][0].set_ylabel("mean response time (s)")
    fig.suptitle("Padding paper, Figure 8 on today's TCP (5 Mbit/s, RTT 12 ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Figure 8's full runs per TCP (quick: 10 bulk flows, RED, 40 s), written as CSV and PNG."""
    if quick:
        table = run(bulk_flows=(10,), queues=("red",), duration_s=40.0, seed=seed)
    else:
        table = run(seed=seed)
    write_csv(table, out / "today-padding.csv")
    plot(table, out / "today-padding.png")
    return table
