"""Today's TCP on the TAQ dumbbell: half the flows Linux CUBIC, half Linux BBR (v1), at
N = 10 and 50 flows over 1 Mbit/s, under DropTail, RED, SFQ, FQ, FQ-CoDel, per-host FQ,
CAKE and TAQ, beside the papers' TCP and all-CUBIC and all-BBR runs: who starves whom, and
which discipline stops it.

Set-up: the Figure 2 dumbbell of the TAQ paper (:func:`smallpipe.presets.taq_dumbbell`:
500-byte packets, 200 ms propagation RTT, one RTT = 50 packets of buffer as every
discipline's packet limit, flows starting in the first second). The papers' TCP is that
preset's ns-2-like NewReno; the others are ``tcp.stack = "linux"`` (initial window 10,
SACK, RACK, PRR, TLP, timestamps, minimum RTO 200 ms, pacing) with
``tcp.congestion = "cubic"`` or ``"bbr"`` per flow group (docs/tcp.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.presets import TAQ_PACKET_SIZE_BYTES, TAQ_RTT_MS, taq_dumbbell
from smallpipe.result import Result, simulate
from smallpipe.scenario import Scenario

__all__ = ["DISCIPLINES", "FLOWS", "MIXES", "RATE_BPS", "mixed_scenario", "plot", "reproduce", "run", "summarize"]

RATE_BPS = 1_000_000
FLOWS: tuple[int, ...] = (10, 50)
DISCIPLINES: tuple[str, ...] = ("droptail", "red", "sfq", "fq", "fq_codel", "host_fq", "cake", "taq")
MIXES: dict[str, tuple[str, ...]] = {
    "paper": ("reno",),  # the preset's ns-2-like NewReno, as the TAQ modules run it
    "cubic": ("cubic",),
    "bbr": ("bbr",),
    "cubic+bbr": ("cubic", "bbr"),
}
"""Each mix's flow groups, in order; a mix of two splits the flows in halves (the first
group gets the smaller half when N is odd)."""
SLICE_S = 20.0  # the TAQ paper's short-term horizon


def mixed_scenario(*, mix: str, flows: int, discipline: str, duration_s: float, seed: int) -> Scenario:
    """The dumbbell of ``flows`` bulk flows under ``discipline`` with the TCP of ``mix``
    (a key of :data:`MIXES`). Raises ValueError for an unknown mix or fewer than 2 flows."""
    if mix not in MIXES:
        raise ValueError(f"mix: {mix!r} is not a mix; expected one of {', '.join(MIXES)}")
    if flows < 2:
        raise ValueError(f"flows: {flows} is too few; expected at least 2 (one per group of a mix)")
    paper = taq_dumbbell(flows=flows, rate_bps=RATE_BPS, duration_s=duration_s, seed=seed,
                         queue={"kind": discipline})
    if mix == "paper":
        return paper
    groups = MIXES[mix]
    counts = [flows // len(groups)] * len(groups)
    counts[-1] += flows - sum(counts)
    link = paper["link"]
    flow_groups: list[dict[str, Any]] = []
    for name, count in zip(groups, counts, strict=True):
        # A BBR group must turn off the CUBIC-only HyStart that the linux stack's CUBIC
        # default switches on for [tcp]; it has no effect on BBR.
        group_tcp: dict[str, Any] = {"congestion": name} | ({"cubic_hystart": False} if name == "bbr" else {})
        flow_groups.append({"count": count, "app": "bulk", "rtt_ms": TAQ_RTT_MS, "start_s": [0.0, 1.0],
                            "tcp": group_tcp})
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=min(SLICE_S, duration_s),
        link={"rate_bps": link["rate_bps"], "delay_ms": link["delay_ms"], "queue": link["queue"]},
        tcp={"stack": "linux", "packet_size_bytes": TAQ_PACKET_SIZE_BYTES},
        flows=flow_groups,
    )


def _short_term_jain(result: Result, flow_ids: pl.Series) -> float | None:
    """Mean 20 s Jain index over ``flow_ids``, the first slice (start-up) skipped."""
    flows = result.flows.filter(pl.col("flow_id").is_in(flow_ids.implode()))
    slices = result.slices.filter(pl.col("flow_id").is_in(flow_ids.implode()))
    per_slice = metrics.jain_per_slice(slices, flows=flows)
    if per_slice.height > 1:
        per_slice = per_slice.filter(pl.col("slice") > 0)
    value = per_slice["jain"].mean()
    return None if value is None else float(value)  # type: ignore[arg-type]


def summarize(result: Result, *, mix: str) -> list[dict[str, Any]]:
    """One row per flow group of ``mix`` and one for all flows (``tcp = "all"``): flows,
    goodput_bps, share (of all flows' bytes), goodput_per_flow_bps, timeouts_per_flow,
    retransmit_rate (retransmitted / sent segments), short_term_jain (20 s, within the
    group), long_term_jain."""
    link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    duration_s = result.scenario["duration_s"]
    total_bytes = int(result.flows["bytes_delivered"].sum())
    names = [*MIXES[mix], "all"]
    rows = []
    for index, name in enumerate(names):
        group = result.flows if name == "all" else result.flows.filter(pl.col("group") == index)
        delivered = int(group["bytes_delivered"].sum())
        sent = int(group["segments_sent"].sum())
        rows.append({
            "tcp": name,
            "flows": group.height,
            "goodput_bps": delivered * 8 / duration_s,
            "share": delivered / total_bytes if total_bytes else None,
            "goodput_per_flow_bps": delivered * 8 / duration_s / group.height,
            "timeouts_per_flow": group["timeouts"].mean(),
            "retransmit_rate": int(group["retransmits"].sum()) / sent if sent else None,
            "short_term_jain": _short_term_jain(result, group["flow_id"]),
            "long_term_jain": metrics.long_term_jain(group),
            "utilization": link["utilization"],
            "loss_rate": link["loss_rate"],
            "queue_delay_p50_ms": link["queue_delay_p50_ms"],
        })
    return rows


def run(
    *,
    mixes: Sequence[str] = tuple(MIXES),
    disciplines: Sequence[str] = DISCIPLINES,
    flows: Sequence[int] = FLOWS,
    duration_s: float = 1000.0,
    seeds: Sequence[int] = (1, 2, 3),
) -> pl.DataFrame:
    """One run per (mix, discipline, N, seed); one row per flow group and one for all flows
    of each run (see :func:`summarize`), keyed by mix, discipline, n_flows, seed."""
    rows = []
    for mix, kind, n, seed in itertools.product(mixes, disciplines, flows, seeds):
        result = simulate(mixed_scenario(mix=mix, flows=n, discipline=kind, duration_s=duration_s, seed=seed))
        rows += [{"mix": mix, "discipline": kind, "n_flows": n, "seed": seed} | row for row in summarize(result, mix=mix)]
    return pl.DataFrame(rows)


def plot(table: pl.DataFrame, path: Path) -> None:
    """Per N: the BBR half's share of the bytes under each discipline (mean over seeds; 0.5
    is an even split), and the 20 s Jain index over all flows per mix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted(table["n_flows"].unique())
    kinds = list(dict.fromkeys(table["discipline"]))
    fig, axes = plt.subplots(2, len(ns), figsize=(5.5 * len(ns), 7), squeeze=False)
    mean = table.group_by("mix", "discipline", "n_flows", "tcp").agg(pl.col("share", "short_term_jain").mean())
    for column, n in enumerate(ns):
        ax = axes[0][column]
        bbr = mean.filter((pl.col("mix") == "cubic+bbr") & (pl.col("n_flows") == n) & (pl.col("tcp") == "bbr"))
        shares = [bbr.filter(pl.col("discipline") == k)["share"].mean() for k in kinds]
        ax.bar(range(len(kinds)), shares, color="tab:orange")
        ax.axhline(0.5, color="grey", linestyle=":")
        ax.set_xticks(range(len(kinds)), kinds, rotation=30, fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_ylabel("BBR half's share of the bytes")
        ax.set_title(f"N = {n}: half CUBIC, half BBR")
        ax = axes[1][column]
        width = 0.8 / len(MIXES)
        for offset, mix in enumerate(MIXES):
            rows = mean.filter((pl.col("mix") == mix) & (pl.col("n_flows") == n) & (pl.col("tcp") == "all"))
            values = [rows.filter(pl.col("discipline") == k)["short_term_jain"].mean() for k in kinds]
            ax.bar([i + (offset - 1.5) * width for i in range(len(kinds))], values, width=width, label=mix)
        ax.set_xticks(range(len(kinds)), kinds, rotation=30, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("Jain index, 20 s slices, all flows")
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Today's TCP on the TAQ dumbbell (1 Mbit/s, 200 ms, buffer = 1 RTT)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """The runs (1000 s, seeds ``seed`` to ``seed + 2``; 200 s and ``seed`` alone with
    ``quick``), written as CSV and PNG."""
    seeds = (seed,) if quick else (seed, seed + 1, seed + 2)
    table = run(duration_s=200.0 if quick else 1000.0, seeds=seeds)
    write_csv(table, out / "today-mixed.csv")
    plot(table, out / "today-mixed.png")
    return table
