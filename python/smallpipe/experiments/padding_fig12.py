"""Padding/diversity paper, Figure 12: response-time profiles of interactive flows with
TCP and with TCP Smart Framing (TCP-SF), (a) a byte-mode DropTail, (b) RED.

Set-up (Section III-D's default scenario, which Section IV-E keeps): a 5 Mbit/s
bottleneck, round-trip propagation 12 ms, a 40 kB buffer, cross traffic. Ours: as Figure
8, N bulk TCP flows are the cross traffic; 10 telnet clients write one-MSS bursts (1448
bytes: TCP-SF cuts a 1-SMSS window into four 362-byte segments) with gaps of mean 1 s from
the previous acknowledgement; every sender starts from a 1-segment window (the classic
TCP TCP-SF was measured against). TCP-SF is the telnet group's own ``[flows.tcp]``
setting, so the bulk cross traffic stays plain TCP in both variants. DropTail counts bytes
(40 kB); RED is ns-2's byte mode (thresholds 5/15 packets of 500 bytes, max_p 0.1,
w_q 0.002), whose drop probability scales with the packet's size.

Beside the profiles, the Figure 11 state machine at the measured small-segment loss:
``p_s`` is the share of the interactive senders' transmissions that were lost (resends
over sends), ``p(S,TO)`` measured is their timeout episodes per burst, the model's is
``tcp_sf_transitions(p_s)`` for TCP-SF and ``p_s`` for TCP (Figure 11 and the text below it).

What the paper reports: TCP-SF's response times are clearly worse than TCP's with
DropTail; with RED there is little improvement.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.models.padding_diversity import tcp_sf_transitions
from smallpipe.result import Result, simulate
from smallpipe.scenario import Scenario

__all__ = ["BULK_FLOWS", "QUEUES", "plot", "random_loss_scenario", "reproduce", "run", "run_state_machine", "scenario",
           "transitions"]

BULK_FLOWS: tuple[int, ...] = (5, 10, 20)
BURST_BYTES = 1448  # one MSS of a 1500-byte packet with timestamps
CLIENTS = 10
WARMUP_S = 20.0
QUEUES: dict[str, dict[str, Any]] = {
    "droptail": {"kind": "droptail", "limit_bytes": 40_000},
    "red": {"kind": "red", "mode": "bytes", "limit_bytes": 40_000, "min_th_pkts": 5.0, "max_th_pkts": 15.0,
            "max_p": 0.1, "w_q": 0.002, "gentle": False, "mean_pkt_size_bytes": 500},
}
VARIANTS = {"tcp": False, "tcp_sf": True}
STATE_MACHINE_LOSSES: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2)
STATE_MACHINE_GAP_S = 10.0
QUANTILES = (0.5, 0.9, 0.99)


def scenario(variant: str, queue: str, bulk: int, *, duration_s: float, seed: int) -> Scenario:
    """``bulk`` bulk flows of plain TCP and 10 telnet clients with ``variant``'s TCP."""
    telnet: dict[str, Any] = {"count": CLIENTS, "app": "interactive", "rtt_ms": 12.0, "start_s": [0.0, 2.0],
                              "burst_bytes": BURST_BYTES, "mean_gap_s": 1.0}
    if VARIANTS[variant]:
        telnet["tcp"] = {"smart_framing": True}
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=duration_s,
        link={"rate_bps": 5e6, "delay_ms": 1.0, "queue": QUEUES[queue]},
        tcp={"packet_size_bytes": 1500, "delayed_ack": False, "min_rto_ms": 1000.0, "initial_window_pkts": 1},
        flows=[{"count": bulk, "app": "bulk", "rtt_ms": 12.0, "start_s": [0.0, 2.0]}, telnet],
    )


def transitions(result: Result, smart_framing: bool) -> dict[str, float]:
    """Figure 11 measured on the interactive senders of ``result`` (whole run): first
    transmissions per burst, the segment loss ``p_s``, fast retransmits and timeout
    episodes per burst, and the model's ``p(S,TO)`` at that ``p_s`` (TCP: ``p_s`` itself)."""
    tel = result.flows.filter(pl.col("app") == "interactive")
    bursts = result.bursts.filter(pl.col("flow_id").is_in(tel["flow_id"].implode())).height
    # Less each client's SYN (interactive clients never close). Every loss is resent once
    # (SACK, no spurious resends at these RTOs), so resends over sends is the segment loss.
    sends = int(tel["segments_sent"].sum()) - tel.height
    resends = int(tel["retransmits"].sum())
    p_s = resends / sends
    return {"segments_per_burst": (sends - resends) / bursts, "p_s": p_s,
            "p_fr_measured": int(tel["fast_retransmits"].sum()) / bursts,
            "p_to_measured": int((tel["timeouts"] - tel["timeouts_repeated"]).sum()) / bursts,
            "p_to_model": tcp_sf_transitions(p_s)["TO"] if smart_framing else p_s}


def _row(variant: str, queue: str, bulk: int, *, duration_s: float, seed: int) -> tuple[dict[str, Any], pl.Series]:
    result = simulate(scenario(variant, queue, bulk, duration_s=duration_s, seed=seed))
    done = result.bursts.filter(pl.col("sent_ns") >= int(WARMUP_S * 1e9)).drop_nulls("response_ns")
    response_s = (done["response_ns"] / 1e9).sort()
    link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    row = {"queue": queue, "variant": variant, "bulk_flows": bulk, "loss_rate": link["loss_rate"],
           "bursts": done.height, "mean_response_s": float(cast(float, response_s.mean())),
           **{f"p{round(q * 100)}_response_s": float(cast(float, response_s.quantile(q, "nearest"))) for q in QUANTILES},
           "over_1s": float(cast(float, (response_s > 1.0).mean())), **transitions(result, VARIANTS[variant])}
    return row, response_s


def random_loss_scenario(variant: str, p: float, *, duration_s: float, seed: int) -> Scenario:
    """Figure 11 in isolation: 10 telnet clients, each data packet lost with ``p`` (the
    ``link.loss`` of Figure 5(b)), gaps of mean 10 s so nearly every burst finds the window
    restarted at 1 SMSS (idle longer than the 1 s RTO) and TCP-SF sends it as 4 segments."""
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=duration_s,
        link={"rate_bps": 1e9, "delay_ms": 0.5, "loss": p, "queue": {"kind": "droptail", "limit_pkts": 10_000}},
        tcp={"packet_size_bytes": 1500, "delayed_ack": False, "min_rto_ms": 1000.0, "initial_window_pkts": 1,
             "smart_framing": VARIANTS[variant]},
        flows=[{"count": CLIENTS, "app": "interactive", "rtt_ms": 12.0, "start_s": [0.0, 1.0],
                "burst_bytes": BURST_BYTES, "mean_gap_s": STATE_MACHINE_GAP_S}],
    )


def run_state_machine(*, losses: Sequence[float] = STATE_MACHINE_LOSSES, duration_s: float = 3000.0,
                      seed: int = 1) -> pl.DataFrame:
    """Rows: p, variant, bursts and :func:`transitions`, with the model at the link's p too
    (``p_fr_model``, ``p_to_model_at_p``)."""
    rows = []
    for p in losses:
        for variant, sf in VARIANTS.items():
            result = simulate(random_loss_scenario(variant, p, duration_s=duration_s, seed=seed))
            model = tcp_sf_transitions(p) if sf else {"FR": 0.0, "TO": p}
            rows.append({"p": p, "variant": variant, "bursts": result.bursts.height, **transitions(result, sf),
                         "p_fr_model": model["FR"], "p_to_model_at_p": model["TO"]})
    return pl.DataFrame(rows)


def run(*, bulk_flows: Sequence[int] = BULK_FLOWS, queues: Sequence[str] = ("droptail", "red"),
        duration_s: float = 200.0, seed: int = 1) -> tuple[pl.DataFrame, dict[tuple[str, str, int], pl.Series]]:
    """The summary table (one row per queue, variant and cross-traffic level) and each
    run's sorted response times (s), for the profiles."""
    rows, profiles = [], {}
    for queue in queues:
        for n in bulk_flows:
            for variant in VARIANTS:
                row, response_s = _row(variant, queue, n, duration_s=duration_s, seed=seed)
                rows.append(row)
                profiles[(queue, variant, n)] = response_s
    return pl.DataFrame(rows), profiles


def plot(table: pl.DataFrame, profiles: dict[tuple[str, str, int], pl.Series], path: Path) -> None:
    """The response-time profiles: the share of bursts at least x slow, per queue, TCP solid
    and TCP-SF dashed, one colour per cross-traffic level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queues = table["queue"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(1, len(queues), figsize=(5 * len(queues), 4), squeeze=False)
    for ax, queue in zip(axes[0], queues, strict=True):
        for i, n in enumerate(table.filter(pl.col("queue") == queue)["bulk_flows"].unique(maintain_order=True)):
            for variant, style in (("tcp", "-"), ("tcp_sf", "--")):
                r = profiles[(queue, variant, n)]
                loss = table.filter(pl.col("queue") == queue, pl.col("variant") == variant,
                                    pl.col("bulk_flows") == n)["loss_rate"][0]
                at_least = pl.int_range(r.len(), 0, -1, eager=True) / r.len()  # exact: never below 1/n
                ax.step(r, at_least, style, color=f"C{i}", where="post",
                        label=f"{variant}, {n} bulk ({loss:.1%} loss)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("response time (s)")
        ax.set_ylabel("share of bursts at least this slow")
        ax.set_title(f"({'a' if queue == 'droptail' else 'b'}) {queue}, 5 Mbit/s, RTT 12 ms")
        ax.legend(fontsize=6)
    fig.suptitle("Padding paper, Figure 12: TCP against TCP Smart Framing, interactive flows")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Three cross-traffic levels, both queues, 200 s each, and the state machine at four
    losses, 3000 s each (quick: 10 bulk flows for 60 s; p = 0.1 for 1000 s)."""
    if quick:
        table, profiles = run(bulk_flows=(10,), duration_s=60.0, seed=seed)
        states = run_state_machine(losses=(0.1,), duration_s=1000.0, seed=seed)
    else:
        table, profiles = run(seed=seed)
        states = run_state_machine(seed=seed)
    write_csv(table, out / "padding-fig12.csv")
    write_csv(states, out / "padding-fig12-states.csv")
    plot(table, profiles, out / "padding-fig12.png")
    return table
