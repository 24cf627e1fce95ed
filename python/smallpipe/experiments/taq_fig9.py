"""TAQ paper, Figure 9: flow evolution, 180 flows over a 600 kbit/s bottleneck.

What the paper reports (Section 5.2): per epoch, flows are *maintained* (active in this and
the last epoch), *dropped* (active → silent), *arriving* (silent → active) or *stalled*
(silent in two epochs in a row). Under TAQ "the number of flows in a stalled state is
nearly zero", more flows are maintained than under DropTail, and "nearly no" flows move
between arriving and dropped.

Set-up: the Figure 2 dumbbell (:func:`smallpipe.presets.taq_dumbbell`: 200 ms propagation
RTT, 500-byte packets, a buffer of one RTT = 30 packets), 180 bulk flows (3.3 kbit/s each),
every discipline on the same seed. **The epoch** is the loaded RTT, 200 ms of propagation
plus 200 ms of full buffer = 0.4 s (the paper says an epoch is about an RTT and does not give
its length); we also report 1.2 s, three loaded RTTs, which is the time the link needs to
send every flow one packet (180 × 4000 bit / 600 kbit/s), so the shortest epoch in which all
flows *could* be active at once. Evolution is counted with
:func:`smallpipe.metrics.flow_evolution` from slices one epoch long, after a 20 s warm-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import TAQ_PACKET_SIZE_BYTES, taq_dumbbell
from smallpipe.result import simulate

__all__ = ["DISCIPLINES", "EPOCH_S", "FLOWS", "RATE_BPS", "plot", "reproduce", "run", "stalled_lower_bound"]

FLOWS = 180
RATE_BPS = 600_000
EPOCH_S = 0.4
"""The loaded RTT: 200 ms propagation + 200 ms of full one-RTT buffer."""
LONG_EPOCH_FACTOR = 3
"""1.2 s = three loaded RTTs: one packet for every flow at the link rate."""
WARMUP_S = 20.0
DISCIPLINES: tuple[str, ...] = ("droptail", "taq", "red", "sfq", "fq", "fq_codel", "host_fq")


def stalled_lower_bound(*, flows: int, rate_bps: int, epoch_s: float,
                        packet_size_bytes: int = TAQ_PACKET_SIZE_BYTES) -> float:
    """Flows silent in two consecutive epochs, at least: at most one flow per packet the link
    sends can be active in an epoch, so at least ``flows − 2 × packets per epoch`` flows are
    silent in both of two epochs, whatever the discipline."""
    packets_per_epoch = rate_bps * epoch_s / (packet_size_bytes * 8)
    return max(0.0, flows - 2 * packets_per_epoch)


def _evolution(slices: pl.DataFrame, factor: int) -> pl.DataFrame:
    binned = slices
    if factor > 1:
        binned = (slices.with_columns(slice=pl.col("slice") // factor).group_by("flow_id", "slice")
                  .agg(pl.col("bytes").sum()))
    return metrics.flow_evolution(binned)


def run(*, disciplines: Sequence[str] = DISCIPLINES, duration_s: float = 600.0, seed: int = 1,
        flows: int = FLOWS, rate_bps: int = RATE_BPS) -> tuple[pl.DataFrame, dict[tuple[str, float], pl.DataFrame]]:
    """One run per discipline. Returns the summary (mean flows per epoch in each state, for
    epochs of 0.4 s and 1.2 s, plus TAQ's own view of its flows' states) and the per-epoch
    evolution of each (discipline, epoch)."""
    rows, evolutions = [], {}
    for kind in disciplines:
        result = simulate(taq_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=duration_s, seed=seed,
                                       slice_s=EPOCH_S, queue={"kind": kind}))
        link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
        for factor in (1, LONG_EPOCH_FACTOR):
            epoch_s = EPOCH_S * factor
            evolution = _evolution(result.slices, factor).filter(pl.col("slice") * epoch_s >= WARMUP_S)
            evolutions[(kind, epoch_s)] = evolution
            row = {"discipline": kind, "epoch_s": epoch_s, "epochs": evolution.height}
            row |= {f"{s}_mean": evolution[s].mean() for s in metrics.EVOLUTION_STATES}
            row["stalled_lower_bound"] = stalled_lower_bound(flows=flows, rate_bps=rate_bps, epoch_s=epoch_s)
            row |= {"utilization": link["utilization"], "loss_rate": link["loss_rate"],
                    "timeouts_per_flow": result.flows["timeouts"].mean()}
            if kind == "taq" and result.queue_states.height:
                # TAQ's own classification of its flows at each epoch's end, after the warm-up.
                states = result.queue_states.filter(pl.col("time_ns") >= WARMUP_S * 1e9)
                for column in [c for c in states.columns if c.startswith("flows_")]:
                    row[f"taq_{column}_mean"] = states[column].mean()
            rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None), evolutions


def plot(evolutions: dict[tuple[str, float], pl.DataFrame], summary: pl.DataFrame, path: Path) -> None:
    """(a) DropTail and (b) TAQ per epoch over 60 s (0.4 s epochs); (c) mean per epoch, all disciplines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    colours = {"maintained": "tab:green", "dropped": "tab:red", "arriving": "tab:blue", "stalled": "black"}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, kind in zip(axes[:2], ("droptail", "taq"), strict=True):
        evo = evolutions[(kind, EPOCH_S)]
        window = evo.filter(pl.col("slice") < cast(int, evo["slice"].min()) + int(60 / EPOCH_S))
        for state in metrics.EVOLUTION_STATES:
            ax.plot(window["slice"] * EPOCH_S, window[state], color=colours[state], linewidth=0.9, label=state)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"flows per {EPOCH_S:g} s epoch")
        ax.set_ylim(0, FLOWS)
        ax.set_title(f"({'a' if kind == 'droptail' else 'b'}) {kind}")
        ax.legend(fontsize=7, loc="upper right")
    table = summary.filter(pl.col("epoch_s") == EPOCH_S)
    x = np.arange(table.height)
    bottom = np.zeros(table.height)
    for state in metrics.EVOLUTION_STATES:
        values = table[f"{state}_mean"].to_numpy()
        axes[2].bar(x, values, bottom=bottom, color=colours[state], label=state)
        bottom += values
    axes[2].axhline(table["stalled_lower_bound"][0], color="grey", linestyle=":", label="stalled floor")
    axes[2].set_xticks(x, table["discipline"].to_list(), rotation=30, fontsize=8)
    axes[2].set_title(f"(c) mean flows per {EPOCH_S:g} s epoch")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"TAQ Figure 9: flow evolution, {FLOWS} flows over {RATE_BPS / 1e3:g} kbit/s")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The runs (600 s; 120 s with ``quick``), written as CSV and PNG."""
    summary, evolutions = run(duration_s=120.0 if quick else 600.0, seed=seed)
    write_csv(summary, out / "taq-fig9.csv")
    plot(evolutions, summary, out / "taq-fig9.png")
    return summary
