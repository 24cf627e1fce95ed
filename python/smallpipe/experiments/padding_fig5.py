"""Padding/diversity paper, Figure 5(b): the gain ratio in simulation against the model
under artificial random loss (RTT kept constant), and the same agreement for each
approach's mean response time (Eqs. 3, 10, 12, 14) as ratios.

Set-up (Section III-D): a client and a server, round-trip propagation delay 12 ms, the
paper's ns-2 random loss module; telnet bursts with exponential gaps of mean 1 s;
minRTO 1 s. Ours: ``link.loss`` drops each data packet with probability p on a 1 Gbit/s
link (no congestion loss: the backlogged clients' TCP-fair rates add up to well below it),
``flows`` telnet clients per approach and p, 500-byte bursts, 1500-byte packets, SACK.
The response time is a burst's write to its acknowledgement; the paper's is a marked
packet's send to its acknowledgement, the same for interactive flows but not for the
backlogged one, whose burst may wait for the window (see the page).

What the paper reports: model and simulation "match well" up to p = 3.5 %; above, the
model over-estimates G (the backlogged flow inherits backed-off RTOs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from smallpipe.experiments.padding_models import MIN_RTO_PRIME_S
from smallpipe.experiments.padding_sim import (
    APPROACHES,
    BURST_BYTES,
    response_means_s,
    tcp_for,
)
from smallpipe.experiments.provenance import write_csv
from smallpipe.models import interactive
from smallpipe.models import padding_diversity as m
from smallpipe.result import simulate
from smallpipe.scenario import Scenario

__all__ = ["LOSSES", "QUICK_LOSSES", "RTT_MS", "model_s", "plot", "reproduce", "run", "scenario"]

LOSSES: tuple[float, ...] = (0.01, 0.02, 0.035, 0.05, 0.1)
QUICK_LOSSES: tuple[float, ...] = (0.1,)
RTT_MS = 12.0
RTO_S = 1.0
WARMUP_S = 20.0


def scenario(approach: str, p: float, *, flows: int, duration_s: float, seed: int) -> Scenario:
    """``flows`` telnet clients using ``approach`` over a link losing data packets with ``p``."""
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=duration_s,
        link={"rate_bps": 1e9, "delay_ms": 0.5, "loss": p, "queue": {"kind": "droptail", "limit_pkts": 10_000}},
        tcp=tcp_for(approach),
        flows=[{"count": flows, "app": "interactive", "rtt_ms": RTT_MS, "start_s": [0.0, 1.0],
                "burst_bytes": BURST_BYTES, "mean_gap_s": 1.0}],
    )


def model_s(approach: str, p: float) -> float:
    """The paper's model of ``approach`` at loss ``p`` (RTO 1 s, RTT 12 ms); the backlogged
    flow under random losses uses Brosh's Q (Eq. 7 summed, w_max = 2·E[w]); Approach I is
    Eq. (3) with minRTO′; ``thin`` is Linux's rule summed the same way."""
    rtt_s = RTT_MS / 1e3
    if approach == "interactive":
        return interactive.response_time_interactive(p, RTO_S, rtt_s)
    if approach == "backlogged":
        w_max = max(1, round(2 * m.expected_window_pkts(p)))
        return m.response_time_backlogged(p, m.brosh_timeout_probability_uniform(p, w_max=w_max), RTO_S, rtt_s)
    if approach == "padding":
        return m.response_time_padding(p, RTO_S, rtt_s)
    if approach == "diversity":
        return m.response_time_diversity(p, RTO_S, rtt_s)
    if approach == "min_rto_prime":
        return interactive.response_time_interactive(p, MIN_RTO_PRIME_S, rtt_s)
    if approach == "thin":
        return m.response_time_thin_linear(p, RTO_S, rtt_s)
    raise KeyError(approach)


def _gain(base: float | None, sim: float | None) -> float | None:
    return None if sim is None or base is None else base / sim


def run(*, losses: Sequence[float] = LOSSES, flows: int = 10, duration_s: float = 200.0,
        seed: int = 1) -> pl.DataFrame:
    """Rows: p, approach, bursts, sim_s, model_s, sim_over_model, and the gain ratio over
    the interactive flow G = E[L]/E[L′] in simulation and model (``gain_sim``, ``gain_model``);
    then the paper's send-to-acknowledgement metric (``send_sim_s``) and its gain
    (``gain_send_sim``)."""
    rows = []
    for p in losses:
        measured = {a: response_means_s(simulate(scenario(a, p, flows=flows, duration_s=duration_s, seed=seed)).bursts,
                                        warmup_s=WARMUP_S)
                    for a in APPROACHES}
        base = measured["interactive"]
        for approach, got in measured.items():
            sim_s, model = got["write_to_ack_s"], model_s(approach, p)
            rows.append({"p": p, "approach": approach, "bursts": got["bursts"], "sim_s": sim_s, "model_s": model,
                         "sim_over_model": None if sim_s is None else sim_s / model,
                         "gain_sim": _gain(base["write_to_ack_s"], sim_s),
                         "gain_model": model_s("interactive", p) / model,
                         "send_sim_s": got["send_to_ack_s"],
                         "gain_send_sim": _gain(base["send_to_ack_s"], got["send_to_ack_s"])})
    return pl.DataFrame(rows)


SEND_COLUMNS = ("send_sim_s", "gain_send_sim")


def plot(table: pl.DataFrame, path: Path) -> None:
    """Figure 5(b)'s axes: gain ratio against loss, simulation and model, per approach."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for approach in ("backlogged", "padding", "diversity", "min_rto_prime", "thin"):
        t = table.filter(pl.col("approach") == approach).sort("p")
        line = ax.plot(t["p"], t["gain_sim"], "o-", label=f"{approach}: simulation")[0]
        ax.plot(t["p"], t["gain_model"], "--", color=line.get_color(), label=f"{approach}: model")
    ax.set_xlabel("packet loss probability p (artificial, random)")
    ax.set_ylabel("gain ratio G over the interactive flow")
    ax.set_title(f"Padding paper, Figure 5(b): RTT {RTT_MS:g} ms, minRTO 1 s")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """10 telnet clients for 200 s per approach and loss (4 clients for 60 s at p = 0.1
    with ``quick``)."""
    table = run(losses=QUICK_LOSSES, flows=4, duration_s=60.0, seed=seed) if quick else run(seed=seed)
    # The send-to-ACK columns in a file of their own: padding-fig5.csv keeps its columns.
    write_csv(table.drop(SEND_COLUMNS), out / "padding-fig5.csv")
    write_csv(table.select("p", "approach", "bursts", "gain_model", *SEND_COLUMNS), out / "padding-fig5-send-to-ack.csv")
    plot(table, out / "padding-fig5.png")
    return table
