"""Thesis, Figure 5.2 on today's TCP: what RED and FQ still buy short flows over plain
DropTail when every sender is Linux CUBIC or Linux BBR (v1), whose initial window is
already 10, beside the thesis's TCP and RCP.

Set-up: :func:`smallpipe.experiments.thesis_fig52.run` (Poisson arrivals of Pareto-sized
flows at 90% load, marker flows of 100 to 1075 packets, 100 ms RTT, a one-BDP buffer) on
the thesis's 2.4 Gbit/s link for 4 s (its full run simulates 20 s), so that eleven runs
finish in minutes; the
protocols ``iw10`` (DropTail), ``red`` and ``fq`` under ``tcp.stack = "linux"`` with
``tcp.congestion = "cubic"`` and ``"bbr"``, applied as ``smallpipe reproduce --set`` does.
The stack decides every knob it names (SACK, RACK, PRR, TLP, 200 ms minimum RTO, pacing,
timestamps; docs/tcp.md): with timestamps a segment carries 948 payload bytes, not 960, so a
flow of k thesis packets takes ceil(k · 960 / 948) segments, which at the sizes of panels (a)
and (c) adds no round trip to slow start from IW 10. The thesis's TCP runs all five protocols.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments import thesis_fig52
from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.thesis_fig51 import WITH_RCP
from smallpipe.result import overriding

__all__ = ["LINUX_PROTOCOLS", "SCALE", "TCPS", "plot", "reproduce", "run"]

TCPS: dict[str, Mapping[str, Any]] = {
    "paper": {},
    "linux-cubic": {"tcp.stack": "linux", "tcp.congestion": "cubic"},
    "linux-bbr": {"tcp.stack": "linux", "tcp.congestion": "bbr"},
}
"""Each TCP's overrides of the Figure 5.2 scenario ("paper": none)."""
LINUX_PROTOCOLS: tuple[str, ...] = ("iw10", "red", "fq")
"""Under Linux, ``tcp`` (IW 2) is ``iw10`` (the stack sets IW 10) and RCP has no TCP sender."""
SCALE: dict[str, Any] = {**thesis_fig52.QUICK, "rate_bps": thesis_fig52.RATE_BPS}
"""The thesis's link with thesis_fig52's quick times (4 s, 0.5 s warm-up, 1.5 s drain)."""


def run(*, tcps: Sequence[str] = tuple(TCPS), setup: Mapping[str, Any] = SCALE, seed: int = 1) -> pl.DataFrame:
    """:func:`thesis_fig52.summary`'s rows per TCP (a ``tcp`` column first) and, per run,
    the flows counted and unfinished (``counted_flows``, ``unfinished_flows``)."""
    tables = []
    for name in tcps:
        if name not in TCPS:
            raise ValueError(f"tcps: {name!r} is not a TCP of this figure; expected one of {', '.join(TCPS)}")
        protocols = WITH_RCP if name == "paper" else LINUX_PROTOCOLS
        with overriding(TCPS[name]):
            fcts = thesis_fig52.run(protocols=protocols, seed=seed, **setup)
        counts = thesis_fig52.flow_counts(fcts).rename({"unfinished": "unfinished_flows"})
        table = thesis_fig52.summary(fcts).join(counts, on="protocol", how="left")
        tables.append(table.select(pl.lit(name).alias("tcp"), pl.all()))
    return pl.concat(tables)


def plot(table: pl.DataFrame, path: Path, *, rate_bps: float) -> None:
    """Median and p99 FCT against size (the small sizes) per TCP, one line per protocol."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tcps = list(dict.fromkeys(table["tcp"]))
    fig, axes = plt.subplots(2, len(tcps), figsize=(4.2 * len(tcps), 7), squeeze=False, sharey="row")
    small = table.filter(pl.col("size_lo_pkts") == pl.col("size_hi_pkts"))
    for column, name in enumerate(tcps):
        for (protocol,), group in small.filter(pl.col("tcp") == name).group_by("protocol", maintain_order=True):
            for row, value in enumerate(("median_s", "p99_s")):
                axes[row][column].plot(group["size_lo_pkts"], group[value], marker="o", label=protocol)
        for row, value in enumerate(("median FCT (s)", "p99 FCT (s)")):
            ax = axes[row][column]
            ax.set_xscale("log")
            ax.set_xlabel("flow size (packets)")
            ax.set_ylabel(value)
            ax.set_title(name, fontsize=9)
            ax.legend(fontsize=7)
    fig.suptitle(f"Thesis Figure 5.2 on today's TCP ({rate_bps / 1e9:g} Gbit/s, RTT 100 ms, 90% load)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The runs at :data:`SCALE` (quick: thesis_fig52's quick run, a tenth of the link),
    written as CSV and PNG."""
    setup = thesis_fig52.QUICK if quick else SCALE
    table = run(setup=setup, seed=seed)
    write_csv(table, out / "today-thesis.csv")
    plot(table, out / "today-thesis.png", rate_bps=setup["rate_bps"])
    return table
