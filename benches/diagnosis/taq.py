#!/usr/bin/env python3
"""Diagnosis runs of docs/reproductions/taq.md: each missed claim, one cause at a time.

    python3 benches/diagnosis/taq.py hangs        # §2.3 hangs: TCP causes (600 s, 200 and 400 users)
    python3 benches/diagnosis/taq.py hangs-web    # §2.3 hangs: the web-user model's parameters
    python3 benches/diagnosis/taq.py hangs-bulk   # §2.3 hangs: users as four long-lived connections
    python3 benches/diagnosis/taq.py fig3         # Figure 3: TCP causes at 400/800 flows, 10 pkts per flow
    python3 benches/diagnosis/taq.py fig3-slices  # Figure 3: the index over 20 s and 60 s slices, every buffer
    python3 benches/diagnosis/taq.py fig9         # Figure 9: stalled flows against the epoch length
    python3 benches/diagnosis/taq.py fig8-30k     # Figure 8 at 30 kbit/s: where TAQ's queueing delay comes from
    python3 benches/diagnosis/taq.py reclassify   # Figure 8's quick points with reclassify_waiting off and on

`--out CSV` writes hangs-bulk's and fig3-slices' rows (with the commit that made them).

Every run is seed 1 unless ``--seed`` says otherwise; lengths are in the docstring of each.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl
from smallpipe import metrics
from smallpipe.experiments import taq_aqm, taq_fig3, taq_fig8, taq_fig9, taq_hangs
from smallpipe.experiments.provenance import write_csv
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


def hangs_bulk(seed: int) -> list[dict]:
    rows = []
    for name, override in TCP_CAUSES[:2]:
        with overriding(override):
            over_20 = (_bulk_user_hangs(200, seed) > 20).mean()
            over_60 = (_bulk_user_hangs(400, seed) > 60).mean()
        print(f"{name:18s} 200 users > 20 s: {over_20:.3f}   400 users > 60 s: {over_60:.3f}", flush=True)
        rows.append({"cause": name, "share_200_users_over_20_s": over_20, "share_400_users_over_60_s": over_60,
                     "seed": seed})
    return rows


def fig3(seed: int) -> None:
    """10 packets per flow (the paper's 8000 packets at 800 flows), 1500 s, 300 s warm-up."""
    for name, override in TCP_CAUSES:
        with overriding(override):
            table = taq_fig3.run(flows=(400, 800), per_flow_buffer_pkts=(10,), duration_s=1500.0, seed=seed)
        print(f"{name:18s}", "  ".join(f"{row['flows']} flows: {row['short_term_jain']:.3f}"
                                       for row in table.iter_rows(named=True)), flush=True)


def fig3_slices(seed: int) -> list[dict]:
    """Every buffer of the figure at 400 and 800 flows, 1500 s, index over 20 s and 60 s slices."""
    rows = []
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
            rows.append({"flows": flows, "buffer_pkts": buffer_pkts, "jain_20_s": jain[20], "jain_60_s": jain[60],
                         "seed": seed})
    return rows


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


FIG8_30K_VARIANTS = [
    ("TAQ defaults", {}),
    ("fair_share_window 1 ns (no level 3)", {"fair_share_window_ns": 1}),
    ("fair_share_window 1 s", {"fair_share_window_ns": 10**9}),
    ("fair_share_window 20 s", {"fair_share_window_ns": 20 * 10**9}),
]


def _queue_waits(events: pl.DataFrame) -> pl.DataFrame:
    """Each packet that entered the forward bottleneck's queue: how it left (dequeue or drop),
    its wait in ms, and whether it was queued while the previous copy of the same segment
    still waited. The k-th enqueue of a (flow, seq, length, flags) is paired with its k-th
    dequeue or drop: copies of one segment leave in arrival order, since a flow's packets
    never overtake each other."""
    key = ["flow_id", "seq", "len_bytes", "flags"]
    forward = events.filter(pl.col("link") == "bottleneck")
    copy = pl.int_range(pl.len()).over(key).alias("copy")
    enq = forward.filter(pl.col("event") == "enqueue").select(*key, copy, t_in=pl.col("time_ns"))
    out = forward.filter(pl.col("event") != "enqueue").select(*key, copy, "event", t_out=pl.col("time_ns"))
    waits = enq.join(out, on=[*key, "copy"])
    previous = waits.select(*key, copy=pl.col("copy") + 1, previous_out=pl.col("t_out"),
                            previous_event=pl.col("event"))
    return (waits.join(previous, on=[*key, "copy"], how="left")
            .with_columns(wait_ms=(pl.col("t_out") - pl.col("t_in")) / 1e6,
                          behind_own_copy=pl.col("t_in") < pl.col("previous_out").fill_null(0)))


def fig8_30k(seed: int) -> None:
    """30 kbit/s per flow, 2 Mbit/s (67 flows), 1000 s, the quick Figure 8 point: the 20 s
    index, loss, queueing delay, TAQ's packets per level (1 s samples) and the share of
    samples in which level 3 may send (levels 1 and 2 empty), for the defaults and with the
    fair-share window moved; then, from a 300 s run with an event trace, how much of the
    mean backlog is packets that are sent or dropped after waiting a second or more (Little's
    law: rate times mean wait), and how many segments were sent twice because a copy was
    queued while its predecessor still waited."""
    rate_bps, flows, duration_s = 2_000_000, 67, 1000.0
    for name, knobs in FIG8_30K_VARIANTS:
        result = simulate(taq_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=duration_s, seed=seed,
                                       slice_s=1.0, queue={"kind": "taq", **knobs}))
        per_slice = metrics.jain_per_slice(result.slices, slice_ns=20 * 10**9, flows=result.flows)
        link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
        states = result.queue_states.filter(pl.col("time_ns") >= 20e9)
        level1 = sum(states[f"queued_recovery_{q}"] for q in ("extended", "silence", "first"))
        level2 = sum(states[f"queued_{q}"] for q in ("new_flow", "over_penalized", "below_fair_share"))
        level3 = states["queued_above_fair_share"]
        print(f"{name:36s} 20 s Jain {per_slice.filter(pl.col('slice') > 0)['jain'].mean():.3f}  "
              f"loss {link['loss_rate']:.3f}  delay p50 / p99 {link['queue_delay_p50_ms']:.0f} / "
              f"{link['queue_delay_p99_ms']:.0f} ms  timeouts per flow {result.flows['timeouts'].mean():.0f}  "
              f"packets in level 1 / 2 / 3 {level1.mean():.1f} / {level2.mean():.1f} / {level3.mean():.1f}  "
              f"level 3 may send {((level1 + level2) == 0).mean():.2f}", flush=True)
    traced_s = 300.0
    scenario = taq_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=traced_s, seed=seed, queue={"kind": "taq"})
    result = simulate(scenario.with_overrides({"trace": {"events": True, "max_rows": 10_000_000}}))
    waits = _queue_waits(result.events)
    backlog = result.links.filter(pl.col("name") == "bottleneck")["mean_backlog_pkts"][0]
    print(f"{traced_s:.0f} s traced, mean backlog {backlog:.1f} packets", flush=True)
    for how in ("dequeue", "drop"):
        for label, waited in (("< 1 s", pl.col("wait_ms") < 1000), (">= 1 s", pl.col("wait_ms") >= 1000)):
            part = waits.filter((pl.col("event") == how) & waited)
            print(f"  {how:7s} after {label:6s}: {part.height:6d} packets, mean wait {part['wait_ms'].mean():5.0f} ms, "
                  f"{part['wait_ms'].sum() / 1e3 / traced_s:5.1f} packets of the backlog", flush=True)
    behind = waits.filter("behind_own_copy")
    sent_twice = behind.filter((pl.col("event") == "dequeue") & (pl.col("previous_event") == "dequeue")).height
    print(f"  queued behind a waiting copy of the same segment: {behind.height}, both copies sent: {sent_twice}",
          flush=True)


def reclassify(seed: int) -> None:
    """TAQ at every quick Figure 8 point (0.5, 1 and 2 Mbit/s; 5 to 100 kbit/s per flow;
    1000 s), with the knob `reclassify_waiting` off (the default) and on: the 20 s index,
    timeouts per flow, loss, the p99 and largest queueing delay and the mean packets queued
    in levels 2 and 3 (`queue_states` at each 20 s slice after the first), with DropTail's
    timeouts beside them."""
    for rate_bps in taq_fig8.RATES_BPS:
        for fair_share_bps in taq_aqm.FAIR_SHARES_BPS:
            cells = []
            for queue in ({"kind": "droptail"}, {"kind": "taq"}, {"kind": "taq", "reclassify_waiting": True}):
                scenario = taq_dumbbell(flows=rate_bps // fair_share_bps, rate_bps=rate_bps, duration_s=1000.0,
                                        seed=seed, queue=queue)
                result = simulate(scenario)
                row = taq_aqm.fairness_row(result)
                if queue["kind"] == "droptail":
                    cells.append(f"DropTail timeouts per flow {row['timeouts_per_flow']:.1f}")
                    continue
                link = result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
                states = result.queue_states.filter(pl.col("time_ns") >= 20e9)
                level2 = sum(states[f"queued_{q}"] for q in ("new_flow", "over_penalized", "below_fair_share"))
                cells.append(f"{'on' if queue.get('reclassify_waiting') else 'off'}: Jain {row['short_term_jain']:.3f}, timeouts per flow "
                             f"{row['timeouts_per_flow']:.1f}, loss {row['loss_rate']:.3f}, delay p99 / max "
                             f"{link['queue_delay_p99_ms']:.0f} / {link['queue_delay_max_ms']:.0f} ms, packets in level 2 / 3 "
                             f"{level2.mean():.1f} / {states['queued_above_fair_share'].mean():.1f}")
            print(f"{rate_bps / 1e6:g} Mbit/s, {fair_share_bps / 1e3:g} kbit/s per flow: " + "; ".join(cells), flush=True)


TABLES = ("hangs-bulk", "fig3-slices")
"""The runs whose numbers the page's headline quotes, so they can be written as CSV."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    runs = {"hangs": hangs, "hangs-web": hangs_web, "hangs-bulk": hangs_bulk, "fig3": fig3,
            "fig3-slices": fig3_slices, "fig9": fig9, "fig8-30k": fig8_30k, "reclassify": reclassify}
    parser.add_argument("what", choices=sorted(runs))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help=f"write the rows as CSV (only {', '.join(sorted(TABLES))})")
    args = parser.parse_args()
    if args.out and args.what not in TABLES:
        parser.error(f"--out: {args.what!r} prints only; a CSV is written by {sorted(TABLES)}")
    rows = runs[args.what](args.seed)
    if args.out:
        write_csv(pl.DataFrame(rows), args.out)  # with the smallpipe commit that made it


if __name__ == "__main__":
    main()
