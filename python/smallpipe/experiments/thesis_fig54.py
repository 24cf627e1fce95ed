"""Thesis, Figure 5.4: median and 99th-percentile FCT as the bandwidth-delay product grows.

Set-up (its §5.3): the Figure 5.1 set-up (4 infinite background flows, a measuring flow
after 250 RTTs) with the RTT and the bandwidth increased together. The thesis does not
list its values; we take three (docs/reproductions/thesis.md): 10 Mbit/s at 40 ms RTT
(Figure 5.1's), 50 Mbit/s at 100 ms and 100 Mbit/s at 200 ms, each with a buffer of one
bandwidth-delay product (50 packets at the first, Figure 5.1's buffer). A fixed 50-packet
buffer leaves the larger links uncongested when the measuring flow starts: Reno
elephants need more than 250 RTTs to refill a 2500-packet pipe after their first loss.
The receiver window is raised to twice the product so that it never binds (the default
64 KB would cap the four elephants at 260 packets in flight).

What it reports: RED matches RCP at the median but is never better than FQ at the 99th
percentile, and at the largest product is slower than standard TCP above 50 KB; FQ lies
between IW 10 and RED at the median and gives the most consistent p99 reductions, better
the larger the product; IW 10 can make the tail worse (more timeouts).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.experiments.thesis_fig51 import (
    PACKET_SIZE_BYTES,
    SIZES_PKTS,
    WITH_RCP,
    draw_reference_lines,
    rtt_ms,
)
from smallpipe.experiments.thesis_fig51 import (
    run as run_fcts,
)
from smallpipe.experiments.thesis_fig51 import (
    summary as fct_summary,
)

__all__ = ["SETTINGS", "plot", "reproduce", "run"]

SETTINGS: tuple[tuple[int, float], ...] = ((10_000_000, 10.0), (50_000_000, 40.0), (100_000_000, 90.0))
"""(link rate in bit/s, access latency in ms): RTTs of 40, 100 and 200 ms."""


def run(
    *,
    settings: Sequence[tuple[int, float]] = SETTINGS,
    protocols: Sequence[str] = WITH_RCP,
    runs: int = 100,
    seed: int = 1,
) -> pl.DataFrame:
    """Median and p99 FCT per setting, protocol and size."""
    frames = []
    for rate_bps, latency_ms in settings:
        bdp_pkts = round(rate_bps * rtt_ms(latency_ms) / 1000 / (PACKET_SIZE_BYTES * 8))
        # A receiver window that never binds: one elephant alone could fill pipe and buffer.
        rwnd_bytes = 2 * bdp_pkts * PACKET_SIZE_BYTES
        fcts = run_fcts(protocols=protocols, runs=runs, seed=seed, rate_bps=rate_bps, latency_ms=latency_ms,
                        buffer_pkts=bdp_pkts, rwnd_bytes=rwnd_bytes)
        table = fct_summary(fcts, latency_ms=latency_ms)
        frames.append(
            table.with_columns(rate_bps=pl.lit(rate_bps), rtt_ms=pl.lit(rtt_ms(latency_ms)), buffer_pkts=pl.lit(bdp_pkts))
        )
    return pl.concat(frames)


def plot(table: pl.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = table.select("rate_bps", "rtt_ms").unique(maintain_order=True).rows()
    fig, axes = plt.subplots(2, len(settings), figsize=(4.5 * len(settings), 7), squeeze=False)
    for col, (rate_bps, path_rtt_ms) in enumerate(settings):
        part = table.filter(pl.col("rate_bps") == rate_bps)
        for row, (column, name) in enumerate((("median_s", "median"), ("p99_s", "99th percentile"))):
            ax = axes[row][col]
            for protocol in WITH_RCP:
                group = part.filter(pl.col("protocol") == protocol)
                ax.plot(group["packets"], group[column], marker="o", markersize=3, label=protocol)
            draw_reference_lines(ax, SIZES_PKTS, rate_bps=rate_bps, rtt_s=path_rtt_ms / 1000)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{rate_bps / 1e6:g} Mbit/s, RTT {path_rtt_ms:g} ms: {name}", fontsize=9)
            ax.set_xlabel("flow size (packets)")
            ax.set_ylabel("FCT (s)")
            ax.legend(fontsize=6)
    fig.suptitle("Thesis Fig. 5.4: FCT as the bandwidth-delay product grows")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """100 runs per protocol and setting (20 with ``quick``), written as CSV and PNG."""
    table = run(runs=20 if quick else 100, seed=seed)
    write_csv(table, out / "thesis-fig5.4.csv")
    plot(table, out / "thesis-fig5.4.png")
    return table.filter(pl.col("packets").is_in([SIZES_PKTS[0], 12, 133, SIZES_PKTS[-1]]))
