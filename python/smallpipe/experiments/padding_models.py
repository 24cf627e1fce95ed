"""The padding/diversity paper's model curves (Figures 3, 4 and 7): mean response time of
each approach against the loss probability, from :mod:`smallpipe.models.padding_diversity`.

Parameters the paper states: RTO = minRTO = 1 s (Section III-D), minRTO′ = 500 ms for
Approach I, three 20-byte dummies (m = 4) for Approach II, k = 2 for Approach III
(Section IV-D). Ours where it is silent: Padhye's ``b = 1`` (no delayed ACKs, as the
diversity receiver needs), and for Brosh's random-loss ``Q`` a window uniform on
``{1, …, w_max}`` with ``w_max = round(2·E[w])`` (mean E[w], Eq. (4)). Brosh's ``Q`` is
drawn twice: Eq. (7) summed (``red``) and the printed approximation Eq. (8) (``red_eq8``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.models import interactive
from smallpipe.models import padding_diversity as m

__all__ = ["FIGURE_RTT_S", "LOSSES", "MIN_RTO_PRIME_S", "RTO_S", "SHOWN_LOSSES", "curves", "shown",
           "write_latency_figure"]

RTO_S = 1.0
FIGURE_RTT_S = 0.1
"""Figures 3 and 7: the paper does not state their RTT."""
MIN_RTO_PRIME_S = 0.5
LOSSES: tuple[float, ...] = tuple(round(0.005 * i, 3) for i in range(1, 61))  # 0.5 % … 30 %
SHOWN_LOSSES: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
"""The rows the figures print (the CSVs hold every loss of ``LOSSES``)."""


def curves(rtt_s: float, losses: Sequence[float] = LOSSES) -> pl.DataFrame:
    """Rows: rtt_s, p, the timeout probabilities and each approach's mean response time
    (seconds) with its gain ratio G = E[L]/E[L′] over the plain interactive flow."""
    rows = []
    for p in losses:
        w_max = max(1, round(2 * m.expected_window_pkts(p)))
        q = {
            "droptail": m.padhye_timeout_probability(p),
            "red": m.brosh_timeout_probability_uniform(p, w_max=w_max),
            "red_eq8": m.brosh_timeout_probability(p, w_max=w_max),
            "padding": m.padding_timeout_probability(p, 4),
        }
        latency = {f"backlogged_{name}": m.response_time_backlogged(p, q[name], RTO_S, rtt_s)
                   for name in ("droptail", "red", "red_eq8")}
        latency["padding"] = m.response_time_padding(p, RTO_S, rtt_s, 4)
        latency["diversity"] = m.response_time_diversity(p, RTO_S, rtt_s, 2)
        latency["min_rto_prime"] = interactive.response_time_interactive(p, MIN_RTO_PRIME_S, rtt_s)
        row = {"rtt_s": rtt_s, "p": p, "w_max_pkts": w_max, **{f"q_{k}": v for k, v in q.items()},
               "interactive_s": interactive.response_time_interactive(p, RTO_S, rtt_s)}
        row |= {f"{k}_s": v for k, v in latency.items()}
        row |= {f"gain_{k}": m.gain_ratio(p, v, RTO_S, rtt_s) for k, v in latency.items()}
        rows.append(row)
    return pl.DataFrame(rows)


def shown(table: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``columns`` of ``table`` at the losses of ``SHOWN_LOSSES``, for the printed summary."""
    return table.filter(pl.col("p").is_in(SHOWN_LOSSES)).select("p", *columns)


def write_latency_figure(out: Path, name: str, title: str, lines: Sequence[tuple[str, str]]) -> pl.DataFrame:
    """Writes ``name``.csv (every loss of ``LOSSES`` at ``FIGURE_RTT_S``) and ``name``.png (the
    ``lines``, (column, label) pairs, against the loss); returns those columns at
    ``SHOWN_LOSSES``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = curves(FIGURE_RTT_S)
    write_csv(table, out / f"{name}.csv")
    fig, ax = plt.subplots(figsize=(6, 4))
    for column, label in lines:
        ax.plot(table["p"], table[column], label=label)
    ax.set_xlabel("packet loss probability p")
    ax.set_ylabel("expected response time (s)")
    ax.set_title(f"Padding paper, {title} (model), RTO 1 s, RTT {FIGURE_RTT_S * 1e3:.0f} ms")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=120)
    plt.close(fig)
    return shown(table, [column for column, _ in lines])
