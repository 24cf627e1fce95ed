#!/usr/bin/env python3
"""Diagnosis runs of docs/reproductions/taq.md: each missed claim, one cause at a time.

    python3 benches/diagnosis/taq.py hangs        # §2.3 hangs: TCP causes (600 s, 200 and 400 users)
    python3 benches/diagnosis/taq.py hangs-web    # §2.3 hangs: the web-user model's parameters
    python3 benches/diagnosis/taq.py hangs-bulk   # §2.3 hangs: users as four long-lived connections
    python3 benches/diagnosis/taq.py fig3         # Figure 3: TCP causes at 400/800 flows, 10 pkts per flow
    python3 benches/diagnosis/taq.py fig3-slices  # Figure 3: the index over 20 s and 60 s slices, every buffer
    python3 benches/diagnosis/taq.py fig9         # Figure 9: stalled flows against the epoch length

Every run is seed 1 unless ``--seed`` says otherwise; lengths are in the docstring of each.
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from smallpipe import metrics
from smallpipe.experiments import taq_fig3, taq_fig9, taq_hangs
from smallpipe.presets import NS2_TCP, taq_dumbbell
from smallpipe.result import overriding, simulate
from smallpipe.scenario import Scenario

TCP_CAUSES = [
    ("baseline", {}),
    ("no sender jitter", {"tcp.overhead_max_ms": 0}),
    ("min RTO 1 s", {"tcp.min_rto_ms": 1000}),
    ("initial RTO 3 s", {"tcp.initial_rto_ms": 3000}),
    ("max RTO 120 s", {"tcp.max_rto_ms": 120_000}),
    ("IW 1", {"tcp.initial_window_pkts": 1}),
    ("IW 4", {"tcp.initial_window_pkts": 4}),
    ("delayed ACK", {"tcp.delayed_ack": True}),
    ("Reno", {"tcp.recovery": "reno"}),
    ("SACK", {"tcp.recovery": "sack"}),
    ("timestamps", {"tcp.timestamps": True}),
    ("syn_retries 20", {"tcp.syn_retries": 20}),
]


def hangs(seed: int) -> None:
    """The taq-hangs figure (600 s) under each TCP cause."""
    for name, override in TCP_CAUSES:
        with overriding(override):
            table, _ = taq_hangs.run(seed=seed)
        at = {row["users"]: row for row in table.iter_rows(named=True)}
        print(f"{name:18s} 200 users > 20 s: {at[200]['share_hang_over_20s']:.3f}   "
              f"400 users > 60 s: {at[400]['share_hang_over_60s']:.3f}", flush=True)


def hangs_web(seed: int) -> None:
    """The taq-hangs scenario (600 s) with one web-model parameter changed."""
    changes = [
        ("think time mean 60 s", {"think_s": {"dist": "pareto", "mean": 60.0, "shape": 1.5}}),
        ("objects per page mean 3", {"objects_per_page": {"dist": "pareto", "mean": 3.0, "shape": 1.5}}),
        ("sizes: SURGE body only", {"size": {"dist": "lognormal", "mu": 9.357, "sigma": 1.318}}),
        ("2 connections per user", {"connections": 2}),
    ]
    for name, change in changes:
        shares = {}
        for users in (200, 400):
            base = taq_hangs.scenario(users=users, seed=seed)
            result = simulate(base.with_overrides({"flows": [{**base["flows"][0], **change}]}))
            shares[users] = metrics.hang_shares(result.units, (20.0, 60.0))
        print(f"{name:24s} 200 users > 20 s: {shares[200][20.0]:.3f}   400 users > 60 s: {shares[400][60.0]:.3f}",
              flush=True)


def _bulk_user_hangs(users: int, seed: int) -> np.ndarray:
    """Each user's longest run of 1 s slices in which none of its 4 long-lived connections
    received a byte, after a 10 s start-up (users start uniformly in it)."""
    connections = 4
    scenario = Scenario(
        seed=seed, duration_s=600.0, slice_s=1.0,
        link={"rate_bps": 1_000_000, "delay_ms": 1.0, "queue": {"kind": "droptail", "limit_pkts": 50}},
        tcp=NS2_TCP,
        flows=[{"app": "bulk", "count": users * connections, "rtt_ms": 200.0, "start_s": [0.0, 10.0]}],
    )
    slices = simulate(scenario).slices.filter(pl.col("start_ns") >= 10e9)
    per_user = (slices.with_columns(user=pl.col("flow_id") // connections)
                .group_by("user", "slice").agg(pl.col("bytes").sum()).sort("user", "slice"))
    longest = []
    for _, group in per_user.group_by("user"):
        run = best = 0
        for silent in group["bytes"].to_numpy() == 0:
            run = run + 1 if silent else 0
            best = max(best, run)
        longest.append(best)
    return np.array(longest)


def hangs_bulk(seed: int) -> None:
    for name, override in TCP_CAUSES[:2]:
        with overriding(override):
            over_20 = (_bulk_user_hangs(200, seed) > 20).mean()
            over_60 = (_bulk_user_hangs(400, seed) > 60).mean()
        print(f"{name:18s} 200 users > 20 s: {over_20:.3f}   400 users > 60 s: {over_60:.3f}", flush=True)


def fig3(seed: int) -> None:
    """10 packets per flow (the paper's 8000 packets at 800 flows), 1500 s, 300 s warm-up."""
    for name, override in TCP_CAUSES:
        with overriding(override):
            table = taq_fig3.run(flows=(400, 800), per_flow_buffer_pkts=(10,), duration_s=1500.0, seed=seed)
        print(f"{name:18s}", "  ".join(f"{row['flows']} flows: {row['short_term_jain']:.3f}"
                                       for row in table.iter_rows(named=True)), flush=True)


def fig3_slices(seed: int) -> None:
    """Every buffer of the figure at 400 and 800 flows, 1500 s, index over 20 s and 60 s slices."""
    for flows in (400, 800):
        for per_flow in taq_fig3.PER_FLOW_BUFFER_PKTS:
            buffer_pkts = max(1, round(flows * per_flow))
            result = simulate(taq_dumbbell(flows=flows, rate_bps=taq_fig3.RATE_BPS, duration_s=1500.0, seed=seed,
                                           buffer_pkts=buffer_pkts, packet_size_bytes=taq_fig3.PACKET_SIZE_BYTES))
            jain = {}
            for slice_s in (20, 60):
                per_slice = metrics.jain_per_slice(result.slices, slice_ns=slice_s * 10**9, flows=result.flows)
                jain[slice_s] = per_slice.filter(pl.col("start_ns") >= taq_fig3.WARMUP_S * 1e9)["jain"].mean()
            print(f"{flows} flows, {buffer_pkts} pkts: 20 s {jain[20]:.3f}  60 s {jain[60]:.3f}", flush=True)


def fig9(seed: int) -> None:
    """Mean stalled flows per epoch of 1, 3, 6 and 10 loaded RTTs (600 s), and TAQ's own count
    of flows in ExtendedSilence (its repeated-timeout state)."""
    for name, override in [TCP_CAUSES[i] for i in (0, 1, 2, 9, 10)]:
        for kind in ("droptail", "taq"):
            with overriding(override):
                result = simulate(taq_dumbbell(flows=taq_fig9.FLOWS, rate_bps=taq_fig9.RATE_BPS, duration_s=600.0,
                                               seed=seed, slice_s=taq_fig9.EPOCH_S, queue={"kind": kind}))
            stalled = []
            for factor in (1, 3, 6, 10):
                epoch_s = taq_fig9.EPOCH_S * factor
                evolution = metrics.flow_evolution(
                    result.slices.with_columns(slice=pl.col("slice") // factor)
                    .group_by("flow_id", "slice").agg(pl.col("bytes").sum())
                ).filter(pl.col("slice") * epoch_s >= taq_fig9.WARMUP_S)
                stalled.append(f"{epoch_s:.1f} s: {evolution['stalled'].mean():.0f}")
            extra = ""
            if kind == "taq":
                states = result.queue_states.filter(pl.col("time_ns") >= taq_fig9.WARMUP_S * 1e9)
                extra = f"  ExtendedSilence {states['flows_extended_silence'].mean():.0f}"
            print(f"{name:18s} {kind:8s} stalled per epoch " + ", ".join(stalled) + extra, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    runs = {"hangs": hangs, "hangs-web": hangs_web, "hangs-bulk": hangs_bulk, "fig3": fig3,
            "fig3-slices": fig3_slices, "fig9": fig9}
    parser.add_argument("what", choices=sorted(runs))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    runs[args.what](args.seed)


if __name__ == "__main__":
    main()
