"""TAQ paper, Figure 11 on the testbed: short-term (20 s) Jain index against the per-flow fair
share at 600 kbit/s and 1 Mbit/s, real Linux TCP (reno and cubic) through ``smallpipe-box``,
TAQ against DropTail, FQ-CoDel and per-host FQ.

What the paper reports (Section 5.4): its C# TAQ middlebox between a Ruby web server and two
client machines opening long-lived requests; "Figure 11 shows the Jain fairness as a function
of the per-flow fair-share for 600Kbps and 1000Kbps links ... even on realistically basic
hardware TAQ is able to easily handle these flow rates". The figure's values are not in the
text; the paper gives no DropTail curve for the testbed.

Set-up: the Figure 2/8 dumbbell (:func:`smallpipe.presets.taq_dumbbell`: 500-byte packets,
200 ms propagation RTT, one RTT of buffer, NewReno-era settings: no SACK, no timestamps, IW 2,
minimum RTO 200 ms, no delayed ACKs), N = rate / fair share long-lived flows starting in the
first second, each from its own client address (the paper used two client hosts; per-host FQ
here sees N hosts, so it is per-flow FQ with host keys: see docs/reproductions/taq-testbed.md).
Each run goes through :func:`smallpipe.testbed.run_testbed`; the Jain index is the mean over
20 s slices, the first left out as start-up, as in Figure 8.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from smallpipe.experiments import taq_aqm
from smallpipe.experiments.provenance import source_commit, write_csv
from smallpipe.presets import taq_dumbbell
from smallpipe.scenario import Scenario

__all__ = ["CONGESTION_CONTROLS", "DISCIPLINES", "FAIR_SHARES_BPS", "RATES_BPS", "VARIANTS", "markdown", "plot",
           "point_scenario", "queue_of", "reproduce", "run", "run_point", "with_simulator"]

RATES_BPS: tuple[int, ...] = (600_000, 1_000_000)
FAIR_SHARES_BPS: tuple[int, ...] = (5_000, 10_000, 20_000, 30_000, 50_000, 100_000)
"""Figure 8's fair shares (the paper's Figure 11 axis values are not in its text)."""
DISCIPLINES: tuple[str, ...] = ("taq", "droptail", "fq_codel", "host_fq")
VARIANTS: dict[str, dict[str, Any]] = {"taq_reclassify": {"kind": "taq", "reclassify_waiting": True}}
"""Disciplines run by name beside DISCIPLINES: TAQ with ``reclassify_waiting`` (docs/taq.md,
"Starving in AboveFairShare"), measured on its own (``run(disciplines=("taq_reclassify",), ...)``)."""
CONGESTION_CONTROLS: tuple[str, ...] = ("reno", "cubic")
SLICE_S = 20.0
DURATION_S = 200.0
"""Ten 20 s slices per run, nine measured."""
QUICK: dict[str, Any] = {"fair_shares_bps": (10_000, 50_000), "congestion_controls": ("reno",), "duration_s": 60.0}
SESSION: tuple[dict[str, Any], ...] = (
    {"fair_shares_bps": (10_000, 30_000, 100_000), "congestion_controls": ("reno",), "duration_s": 60.0},
    {"disciplines": ("taq", "droptail"), "rates_bps": (1_000_000,), "fair_shares_bps": (10_000, 100_000),
     "congestion_controls": ("cubic",), "duration_s": 60.0},
)
"""What fits an hour of quiet cores (28 runs of 60 s, two 20 s slices measured each): reno
over both rates, three fair shares and every discipline; cubic at 1 Mbit/s for TAQ and
DropTail at the two ends of the axis."""


def queue_of(discipline: str) -> dict[str, Any]:
    """The scenario's ``link.queue`` for a discipline name of this figure."""
    return VARIANTS.get(discipline, {"kind": discipline})


def point_scenario(*, discipline: str, rate_bps: int, fair_share_bps: int, duration_s: float,
                   slice_s: float = SLICE_S, seed: int = 1) -> Scenario:
    """One point's scenario: N = rate / fair share flows (at least 2) on the Figure 2/8 dumbbell."""
    return taq_dumbbell(flows=max(2, round(rate_bps / fair_share_bps)), rate_bps=rate_bps, duration_s=duration_s,
                        seed=seed, slice_s=slice_s, queue=queue_of(discipline))


def run_point(*, discipline: str, rate_bps: int, fair_share_bps: int, congestion_control: str, duration_s: float,
              slice_s: float = SLICE_S, seed: int = 1) -> dict[str, Any]:
    """One testbed run; its row (Jain per slice averaged over all slices but the first)."""
    from smallpipe.testbed import run_testbed  # needs nothing at import; runs need root

    scenario = point_scenario(discipline=discipline, rate_bps=rate_bps, fair_share_bps=fair_share_bps,
                              duration_s=duration_s, slice_s=slice_s, seed=seed)
    flows = sum(group["count"] for group in scenario["flows"])
    result = run_testbed(scenario, congestion_control=congestion_control)
    box = result.meta.get("box") or {}
    failed = result.meta.get("failed_connections") or []
    return {
        "discipline": discipline,
        "congestion_control": congestion_control,
        "rate_bps": rate_bps,
        "fair_share_bps": fair_share_bps,
        "flows": flows,
        "duration_s": duration_s,
        **taq_aqm.fairness_row(result),
        "failed_connections": len(failed),
        "connection_errors": _error_counts(failed),
        "box_lateness_p99_ns": (box.get("lateness_ns") or {}).get("p99"),
        "steal_fraction": box.get("steal_fraction"),
        "wall_seconds": result.meta["wall_seconds"],
    }


def _error_counts(failed: Sequence[str]) -> str:
    """The failed connections' errors (``flow N: message``) as ``count x message``, most
    frequent first: why a flow never connected, for the table."""
    counts = Counter(entry.split(": ", 1)[-1] for entry in failed)
    return "; ".join(f"{n} x {message}" for message, n in counts.most_common())


def run(*, disciplines: Sequence[str] = DISCIPLINES, rates_bps: Sequence[int] = RATES_BPS,
        fair_shares_bps: Sequence[int] = FAIR_SHARES_BPS, congestion_controls: Sequence[str] = CONGESTION_CONTROLS,
        duration_s: float = DURATION_S, slice_s: float = SLICE_S, seed: int = 1,
        checkpoint: Path | None = None) -> pl.DataFrame:
    """One testbed run per (congestion control, discipline, rate, fair share); one row each.

    With ``checkpoint`` (a JSON-lines file), each point's row is appended there as soon as the
    point ends, and a point already there, run by the same commit with the same duration,
    slice and seed, is not run again: the full set takes hours, and an interrupted run
    resumes where it stopped."""
    done = _checkpointed_rows(checkpoint, duration_s=duration_s, slice_s=slice_s, seed=seed)
    rows = []
    for cc, d, r, f in itertools.product(congestion_controls, disciplines, rates_bps, fair_shares_bps):
        row = done.get((d, cc, r, f))
        if row is None:
            row = run_point(discipline=d, rate_bps=r, fair_share_bps=f, congestion_control=cc, duration_s=duration_s,
                            slice_s=slice_s, seed=seed)
            if checkpoint is not None:
                with checkpoint.open("a") as file:
                    file.write(json.dumps({"commit": source_commit(), "slice_s": slice_s, "seed": seed, "row": row}) + "\n")
        rows.append(row)
    return pl.DataFrame(rows)


def _checkpointed_rows(checkpoint: Path | None, *, duration_s: float, slice_s: float,
                       seed: int) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    """The rows of ``checkpoint`` that this commit ran with this duration, slice and seed, by
    (discipline, congestion control, rate, fair share)."""
    if checkpoint is None or not checkpoint.exists():
        return {}
    rows = {}
    for line in checkpoint.read_text().splitlines():
        entry = json.loads(line)
        row = entry["row"]
        if (entry["commit"], entry["slice_s"], entry["seed"], row["duration_s"]) == (source_commit(), slice_s, seed, duration_s):
            rows[(row["discipline"], row["congestion_control"], row["rate_bps"], row["fair_share_bps"])] = row
    return rows


def with_simulator(table: pl.DataFrame, *, seed: int = 1, overrides: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """The testbed's table with the simulator's numbers on the same scenario beside it
    (``sim_`` columns): each row's point run by :func:`smallpipe.simulate`, with the testbed's
    congestion control (``tcp.congestion``), so Linux checks the simulator point by point.
    ``overrides`` (dotted keys) change the simulator's side only, e.g. a Linux behaviour."""
    from smallpipe import simulate

    sim_rows = []
    for row in table.iter_rows(named=True):
        scenario = point_scenario(discipline=row["discipline"], rate_bps=row["rate_bps"],
                                  fair_share_bps=row["fair_share_bps"], duration_s=row["duration_s"], seed=seed)
        scenario = scenario.with_overrides({"tcp.congestion": row["congestion_control"], **(overrides or {})})
        sim = taq_aqm.fairness_row(simulate(scenario))
        sim_rows.append({f"sim_{k}": sim[k] for k in ("short_term_jain", "utilization", "loss_rate", "timeouts_per_flow")})
    return pl.concat([table, pl.DataFrame(sim_rows)], how="horizontal")


def markdown(table: pl.DataFrame) -> str:
    """The page's tables, from the CSV: per (congestion control, rate) and fair share, each
    discipline's 20 s Jain index on Linux with the simulator's in parentheses, then its
    timeouts per flow the same way (the simulator's columns only where ``with_simulator`` added
    them)."""
    disciplines = table["discipline"].unique(maintain_order=True).to_list()
    keys = ("congestion_control", "rate_bps", "fair_share_bps")
    points = table.select(*keys, "flows").unique(subset=list(keys), maintain_order=True)
    out = []
    for column, title, digits in (("short_term_jain", "20 s Jain index", 3), ("timeouts_per_flow", "timeouts per flow", 2)):
        out.append(f"{title}, Linux (simulator):\n")
        out.append("| TCP, link | fair share | " + " | ".join(disciplines) + " |")
        out.append("|---|---|" + "---|" * len(disciplines))
        for cc, rate, share, flows in points.iter_rows():
            cells = []
            for d in disciplines:
                r = table.filter(pl.col("congestion_control") == cc, pl.col("rate_bps") == rate,
                                 pl.col("fair_share_bps") == share, pl.col("discipline") == d)
                cell = f"{r[column][0]:.{digits}f}" if r.height else "—"
                if r.height and f"sim_{column}" in r.columns:
                    cell += f" ({r[f'sim_{column}'][0]:.{digits}f})"
                cells.append(cell)
            link = f"{rate / 1e6:g} Mbit/s" if rate >= 1_000_000 else f"{rate / 1e3:g} kbit/s"
            out.append(f"| {cc}, {link} | {share / 1e3:g} kbit/s ({flows} flows) | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def plot(table: pl.DataFrame, path: Path) -> None:
    """One panel per (congestion control, rate): Jain index against fair share per discipline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = table.select("congestion_control", "rate_bps").unique(maintain_order=True).rows()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), sharey=True, squeeze=False)
    for ax, (cc, rate) in zip(axes[0], panels, strict=True):
        sub = table.filter(pl.col("congestion_control") == cc, pl.col("rate_bps") == rate).sort("fair_share_bps")
        for (kind,), group in sub.group_by("discipline", maintain_order=True):
            line, = ax.plot(group["fair_share_bps"] / 1000, group["short_term_jain"], marker="o",
                            linewidth=2 if kind == "taq" else 1, label=f"{kind}, Linux")
            if "sim_short_term_jain" in group.columns:
                ax.plot(group["fair_share_bps"] / 1000, group["sim_short_term_jain"], marker="x", linestyle="--",
                        color=line.get_color(), linewidth=1, label=f"{kind}, simulator")
        ax.set_xscale("log")
        ax.set_xlabel("ideal per-flow fair share (kbit/s)")
        ax.set_title(f"{cc}, {rate / 1e3:g} kbit/s")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel("Jain index, 20 s slices")
    fig.suptitle("TAQ Figure 11 on the testbed: real Linux TCP through smallpipe-box")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1, scale: str = "full") -> pl.DataFrame:
    """All runs (96 of 200 s; with ``quick`` reno only, 10 and 50 kbit/s, 60 s: 16 runs; with
    ``scale="session"`` the 28 runs of :data:`SESSION`); writes taq-testbed-fig11.csv, the page's
    tables (taq-testbed-fig11-tables.md) and a PNG.
    Each finished run is kept in taq-testbed-fig11.points.jsonl until the CSV is written, so the
    same call after an interruption resumes (:func:`run`). Needs root and the testbed binaries."""
    if quick:
        scale = "quick"
    parts = {"full": ({},), "quick": (QUICK,), "session": SESSION}.get(scale)
    if parts is None:
        raise ValueError(f"scale: {scale!r} is not a scale; expected full, session or quick")
    checkpoint = out / "taq-testbed-fig11.points.jsonl"
    table = pl.concat([run(seed=seed, checkpoint=checkpoint, **part) for part in parts], how="vertical")
    table = with_simulator(table, seed=seed)
    write_csv(table, out / "taq-testbed-fig11.csv")
    (out / "taq-testbed-fig11-tables.md").write_text(markdown(table))
    plot(table, out / "taq-testbed-fig11.png")
    checkpoint.unlink()
    return table.select("congestion_control", "discipline", "rate_bps", "fair_share_bps", "short_term_jain",
                        "sim_short_term_jain", "utilization", "loss_rate", "sim_loss_rate")
