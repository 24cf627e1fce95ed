"""Size-aware paper (Tokuda et al.), Figure 11 and Tables 4 and 5: throughput against
transfer size, the modified fairness index and the bottleneck utilization for TailDrop,
RED and the size-aware method, bottleneck delay τ = 1, 10 and 100 ms.

Set-up (Section 5): N sender/receiver pairs on 100 Mbit/s, 5 ms access links; a 30 Mbit/s
bottleneck with delay τ and a 100-packet buffer; 512-byte packets; each sender transfers
SURGE-sized objects (Table 1: lognormal body, Pareto tail) separated by Pareto think times
(mean 15 s, shape 1.5); N = 300, 500, 1000 for τ = 1, 10, 100 ms. RED as Table 2 (w_q
0.002, max_p 0.1, thresholds 25/75 packets), the method as Table 3 with RTT_an the flows'
propagation RTT, 2·(5 + τ + 5) ms.

Ours: the paper's N gives our SURGE sessions only about 20 % utilization (we measured
0.20 at N = 300, 30 Mbit/s, τ = 1 ms), far from its 92 %, so we use N = 1350 (4.5 × 300)
at every τ: our sessions' load is set by the think time, not the RTT, so the paper's
larger N at longer τ would overload the link (we measured 99 % utilization and 10–25 %
loss that way). Runs last 600 s (quick: 120 s), the first 20 s are warm-up. TCP is Reno with initial window 1, no
delayed ACKs, 1 s minimum RTO (the analysis' T0). The fairness index is
``smallpipe.metrics.modified_fairness_index`` over connections that started after a
warm-up, with the target the method's run averaged (``size_aware_mean_target_pkts_per_rtt``)
for all three disciplines, and each flow's time taken from its first data packet: the
handshake's RTT is removed and the last ACK's half RTT added, as for Figure 5 (the paper's
ns-2 TCP has no handshake).

What the paper reports: index 0.980/0.986/0.962 (method), 0.670/0.643/0.710 (TailDrop),
0.815/0.795/0.878 (RED); utilization 92.0–93.8 % for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from smallpipe import metrics
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import Result, simulate
from smallpipe.scenario import Scenario

__all__ = ["PAPER", "TAUS_MS", "data_flows", "fairness_rows", "mean_target", "plot", "queue_config", "reproduce", "run",
           "scenario"]

TAUS_MS: tuple[float, ...] = (1.0, 10.0, 100.0)
USERS = 1350
"""Users (sender/receiver pairs) at every τ: 4.5 × the paper's 300, which loads our SURGE
sessions to about the paper's utilization at τ = 1 ms."""
PACKET_BYTES = 512
MSS_BYTES = PACKET_BYTES - 40
WARMUP_S = 20.0

PAPER = {
    "fairness": {
        "size_aware": {1.0: 0.980, 10.0: 0.986, 100.0: 0.962},
        "droptail": {1.0: 0.670, 10.0: 0.643, 100.0: 0.710},
        "red": {1.0: 0.815, 10.0: 0.795, 100.0: 0.878},
    },
    "utilization": {
        "size_aware": {1.0: 0.920, 10.0: 0.928, 100.0: 0.926},
        "droptail": {1.0: 0.928, 10.0: 0.938, 100.0: 0.932},
        "red": {1.0: 0.925, 10.0: 0.930, 100.0: 0.925},
    },
}
"""Tables 4 and 5 of the paper."""


def rtt_ms(tau_ms: float) -> float:
    """Propagation RTT of every flow: 2·(5 ms + τ + 5 ms)."""
    return 2.0 * (10.0 + tau_ms)


def queue_config(method: str, tau_ms: float, *, thresholds: int = 0) -> dict[str, Any]:
    """Router A's discipline: ``droptail``, ``red`` (Table 2) or ``size_aware`` (Table 3)."""
    if method == "droptail":
        return {"kind": "droptail", "limit_pkts": 100}
    if method == "red":
        return {"kind": "red", "limit_pkts": 100, "mode": "packets", "min_th_pkts": 25.0, "max_th_pkts": 75.0,
                "w_q": 0.002, "max_p": 0.1, "gentle": False, "mean_pkt_size_bytes": PACKET_BYTES}
    if method == "size_aware":
        return {"kind": "size_aware", "limit_pkts": 100, "rtt_an_ns": int(rtt_ms(tau_ms) * 1e6),
                "thresholds": thresholds}
    raise ValueError(f"unknown method {method!r}")


def scenario(method: str, tau_ms: float, *, quick: bool, seed: int, thresholds: int = 0,
             queue_overrides: dict[str, Any] | None = None, rtts_ms: Sequence[float] | None = None) -> Scenario:
    """One run of the Section 5 set-up; ``queue_overrides`` replace discipline knobs.
    ``rtts_ms`` splits the users evenly into groups of these propagation RTTs (Section 6.1)
    instead of one group at ``rtt_ms(tau_ms)``."""
    rtts = [rtt_ms(tau_ms)] if rtts_ms is None else list(rtts_ms)
    return Scenario(
        seed=seed,
        duration_s=120.0 if quick else 600.0,
        slice_s=10.0,
        link={"rate_bps": 30e6, "delay_ms": tau_ms, "access_rate_bps": 100e6,
              "queue": queue_config(method, tau_ms, thresholds=thresholds) | (queue_overrides or {})},
        tcp={"packet_size_bytes": PACKET_BYTES, "recovery": "reno", "initial_window_pkts": 1,
             "delayed_ack": False, "timestamps": False, "min_rto_ms": 1000.0, "initial_rto_ms": 1000.0,
             "rwnd_bytes": 1 << 30},
        flows=[{"count": USERS // len(rtts), "app": "session", "size": {"dist": "surge"},
                "think_s": {"dist": "pareto", "mean": 15.0, "shape": 1.5},
                "rtt_ms": rtt, "start_s": [0.0, 15.0]} for rtt in rtts],
    )


def data_flows(result: Result) -> pl.DataFrame:
    """Finished connections started after the warm-up, timed from the first data packet
    to its ACK's return: start moved later by half the RTT (handshake RTT out, last ACK's
    half RTT in)."""
    return result.flows.filter(
        pl.col("end_ns").is_not_null(), pl.col("size_bytes").is_not_null(), pl.col("start_ns") >= WARMUP_S * 1e9
    ).with_columns(start_ns=pl.col("start_ns") + (pl.col("rtt_ms") * 0.5e6).cast(pl.Int64))


def fairness_by_size_bin(flows: pl.DataFrame, target: float) -> float:
    """Jain's index over size bins (powers of two) of the mean of each flow's throughput
    over its ideal — the same ratios as ``modified_fairness_index``, averaged within a bin
    first, so it measures only the bias by size, not the spread among flows of one size."""
    pkts = (flows["size_bytes"] / MSS_BYTES).ceil().to_numpy()
    rounds = 1.0 + np.clip(np.log2(pkts), 0.0, None)
    thr = pkts / ((flows["end_ns"] - flows["start_ns"]).to_numpy() / 1e6 / flows["rtt_ms"].to_numpy())
    ratio = thr / np.minimum(pkts / rounds, target)
    bins = pl.DataFrame({"bin": np.floor(np.log2(pkts)).astype(np.int64), "ratio": ratio})
    return metrics.jain(bins.group_by("bin").agg(pl.col("ratio").mean())["ratio"].to_numpy())


def fairness_rows(results: dict[str, Result], tau_ms: float, target: float) -> list[dict[str, Any]]:
    """Table 4/5 rows for one τ: index, utilization, loss rate per method."""
    rows = []
    for method, result in results.items():
        flows = data_flows(result)
        bottleneck = result.links.filter(pl.col("name") == "bottleneck")
        rows.append({
            "tau_ms": tau_ms,
            "method": method,
            "connections": flows.height,
            "fairness": metrics.modified_fairness_index(flows, mss_bytes=MSS_BYTES, iw_pkts=1,
                                                        target_pkts_per_rtt=target),
            "fairness_by_size_bin": fairness_by_size_bin(flows, target),
            "utilization": bottleneck["utilization"][0],
            "loss_rate": bottleneck["loss_rate"][0],
            "mean_backlog_pkts": bottleneck["mean_backlog_pkts"][0],
            "target_pkts_per_rtt": target,
            "paper_fairness": PAPER["fairness"].get(method, {}).get(tau_ms),
            "paper_utilization": PAPER["utilization"].get(method, {}).get(tau_ms),
        })
    return rows


def throughput_by_size(result: Result) -> pl.DataFrame:
    """Figure 11's curve: mean throughput (packets per RTT) per log-spaced size bin."""
    flows = data_flows(result)
    pkts = (flows["size_bytes"] / MSS_BYTES).ceil()
    fct_rtts = (flows["end_ns"] - flows["start_ns"]) / 1e6 / flows["rtt_ms"]
    edges = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 1 << 20])
    frame = pl.DataFrame({"pkts": pkts, "thr": pkts / fct_rtts})
    frame = frame.with_columns(bin=pl.col("pkts").map_elements(
        lambda d: int(edges[np.searchsorted(edges, d, side="right") - 1]), return_dtype=pl.Int64))
    return frame.group_by("bin").agg(pl.col("thr").mean(), pl.len().alias("n")).sort("bin")


LOW_THRESHOLDS = {"min_th_pkts": 10.0, "max_th_pkts": 30.0}
"""Our variant of the method with lower queue thresholds (not in the paper)."""


def mean_target(result: Result) -> float:
    """The size-aware discipline's target averaged over the run (packets per RTT_an)."""
    links = result.links.filter(pl.col("name") == "bottleneck")
    return float(links["size_aware_mean_target_pkts_per_rtt"][0])


def run(*, taus_ms: Sequence[float] = TAUS_MS, quick: bool = True, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Returns (Table 4/5 rows, Figure 11 curves: tau_ms, method, bin, thr, n).

    Methods: ``droptail``, ``red``, ``size_aware`` (Table 3) and ``size_aware_low_th``
    (thresholds 10/30 packets). ``fairness`` uses the Table 3 method's mean target,
    ``fairness_low_th_target`` the variant's."""
    rows: list[dict[str, Any]] = []
    curves = []
    for tau in taus_ms:
        results = {m: simulate(scenario(m, tau, quick=quick, seed=seed)) for m in ("droptail", "red", "size_aware")}
        results["size_aware_low_th"] = simulate(
            scenario("size_aware", tau, quick=quick, seed=seed, queue_overrides=LOW_THRESHOLDS))
        target, low_target = mean_target(results["size_aware"]), mean_target(results["size_aware_low_th"])
        for row, low in zip(fairness_rows(results, tau, target), fairness_rows(results, tau, low_target), strict=True):
            row["fairness_low_th_target"] = low["fairness"]
            row["fairness_by_size_bin_low_th_target"] = low["fairness_by_size_bin"]
            row["low_th_target_pkts_per_rtt"] = low_target
            rows.append(row)
        for method, result in results.items():
            curves.append(throughput_by_size(result).with_columns(tau_ms=pl.lit(tau), method=pl.lit(method)))
    return pl.DataFrame(rows), pl.concat(curves)


def plot(table: pl.DataFrame, curves: pl.DataFrame, path: Path) -> None:
    """Figure 11: throughput per size bin, one panel per τ, with the ideal of Figure 9(b)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    taus = curves["tau_ms"].unique().sort().to_list()
    fig, axes = plt.subplots(1, len(taus), figsize=(5 * len(taus), 4), squeeze=False)
    labels = {"droptail": "TailDrop", "red": "RED", "size_aware": "size-aware (Table 3)",
              "size_aware_low_th": "size-aware, thresholds 10/30"}
    for ax, tau in zip(axes[0], taus, strict=True):
        for method, label in labels.items():
            c = curves.filter(pl.col("tau_ms") == tau, pl.col("method") == method).sort("bin")
            ax.plot(c["bin"], c["thr"], "o-", label=label)
        d = np.logspace(0, 3.5, 60)
        for col, style in (("target_pkts_per_rtt", "k--"), ("low_th_target_pkts_per_rtt", "k:")):
            target = table.filter(pl.col("tau_ms") == tau)[col][0]
            ax.plot(d, np.minimum(d / (1 + np.log2(d)), target), style, label=f"ideal at target {target:.1f}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(0.2, 2.0 * metrics.to_float(curves["thr"].max()))
        ax.set_xlabel("transfer size (packets, bin start)")
        ax.set_ylabel("throughput (packets per RTT)")
        ax.set_title(f"τ = {tau:g} ms")
        ax.legend(fontsize=7)
    fig.suptitle("Size-aware Figure 11: throughput vs transfer size")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """All three τ (600 s runs; 120 s with ``quick``), as CSV and PNG."""
    table, curves = run(quick=quick, seed=seed)
    write_csv(table, out / "size-aware-table4.csv")
    write_csv(curves, out / "size-aware-fig11.csv")
    plot(table, curves, out / "size-aware-fig11.png")
    return table
