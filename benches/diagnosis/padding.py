#!/usr/bin/env python3
"""Diagnosis runs of docs/reproductions/padding-diversity.md, one cause at a time.

    python3 benches/diagnosis/padding.py red-diversity   # Figure 9: does RED's mode or `gentle` make diversity degrade gently?
    python3 benches/diagnosis/padding.py gain            # Figure 5(b): which ns-2 setting brings the backlogged flow's G to the model?
    python3 benches/diagnosis/padding.py copied-retransmissions  # diversity with its resends after a timeout copied too

Seed 1, 200 s per run as Figures 5(b) and 9's full runs (bursts of the first 20 s left out).
"""

from __future__ import annotations

import argparse

import polars as pl
from smallpipe.experiments import padding_fig5, padding_fig9
from smallpipe.experiments.padding_sim import PACKET_BYTES, response_means_s
from smallpipe.models import interactive
from smallpipe.models import padding_diversity as m
from smallpipe.result import simulate

CLIENTS = (200, 300, 400)
RED_VARIANTS = [
    ("packet mode, not gentle (Figure 9 as run)", {}),
    # In byte mode `limit_bytes` replaces `limit_pkts`: the same 40 kB buffer, counted in bytes.
    ("byte mode, not gentle", {"link.queue.mode": "bytes", "link.queue.limit_bytes": padding_fig9.BUFFER_BYTES}),
    ("byte mode, gentle (ns-2's defaults)",
     {"link.queue.mode": "bytes", "link.queue.limit_bytes": padding_fig9.BUFFER_BYTES, "link.queue.gentle": True}),
    ("packet mode, gentle", {"link.queue.gentle": True}),
]


def red_diversity(seed: int) -> None:
    """Mean response time and bottleneck loss of interactive and 2-copy diversity clients
    under Figure 9's RED with its mode and `gentle` changed."""
    for name, overrides in RED_VARIANTS:
        for n in CLIENTS:
            cells = []
            for approach in ("interactive", "diversity"):
                sc = padding_fig9.scenario(approach, "red", n, duration_s=200.0, seed=seed).with_overrides(overrides)
                r = simulate(sc)
                done = r.bursts.filter(pl.col("sent_ns") >= int(padding_fig9.WARMUP_S * 1e9)).drop_nulls("response_ns")
                loss = r.links.filter(pl.col("name") == "bottleneck")["loss_rate"].item()
                cells.append(f"{approach} {done['response_ns'].mean() / 1e9:.3f} s (loss {loss:.3f})")
            print(f"{name}, {n} clients: " + ", ".join(cells), flush=True)


GAIN_LOSSES = padding_fig5.LOSSES
MSS_BYTES = PACKET_BYTES - 52  # 40 header bytes and 12 of timestamps
# One setting at a time, on both the interactive and the backlogged clients of Figure 5(b).
GAIN_VARIANTS = [
    ("Figure 5(b) as run: SACK, timestamps, no delayed ACKs, rwnd unlimited, minRTO 1 s, 500-byte bursts", {}),
    ("rwnd 20 segments (ns-2's window_ default)", {"tcp.rwnd_bytes": 20 * MSS_BYTES}),
    ("Reno recovery (ns-2's FullTcp)", {"tcp.recovery": "reno"}),
    ("NewReno recovery", {"tcp.recovery": "newreno"}),
    ("no timestamps", {"tcp.timestamps": False}),
    ("delayed ACKs (every second segment, 200 ms)", {"tcp.delayed_ack": True}),
    ("minRTO 200 ms", {"tcp.min_rto_ms": 200.0}),
    ("marked packet a full segment (1448-byte bursts)", {"flows.0.burst_bytes": MSS_BYTES}),
    # ns-2's defaults: FullTcp is Reno without timestamps, segsize_ 536, window_ 20,
    # segsperack_ 1 (an ACK per segment, as ours without delayed ACKs).
    ("all of ns-2 FullTcp's defaults: Reno, no timestamps, 576-byte packets, rwnd 20 segments",
     {"tcp.recovery": "reno", "tcp.timestamps": False, "tcp.packet_size_bytes": 576, "tcp.rwnd_bytes": 20 * 536}),
]


def means_s(bursts: pl.DataFrame) -> dict:
    """`response_means_s` and the mean time from a burst's first send to the first ACK
    covering it by SACK or cumulative ACK (`send_to_cover_s`, from `covered_ns`)."""
    done = bursts.filter(pl.col("sent_ns") >= int(padding_fig5.WARMUP_S * 1e9)).drop_nulls("response_ns")
    cover_ns = (done["covered_ns"] - done["first_sent_ns"]).mean()
    return response_means_s(bursts, warmup_s=padding_fig5.WARMUP_S) | {"send_to_cover_s": cover_ns / 1e9}


def model_gain(p: float, rto_s: float) -> float:
    """Eq. (3) over Eq. (10) with Brosh's Q (Eq. 7 summed, w_max = 2·E[w]) at RTT 12 ms."""
    rtt_s = padding_fig5.RTT_MS / 1e3
    w_max = max(1, round(2 * m.expected_window_pkts(p)))
    q = m.brosh_timeout_probability_uniform(p, w_max=w_max)
    return interactive.response_time_interactive(p, rto_s, rtt_s) / m.response_time_backlogged(p, q, rto_s, rtt_s)


def gain(seed: int) -> None:
    """The backlogged flow's gain G over the interactive flow of Figure 5(b) with one TCP
    setting changed at a time, on three metrics, each the same for both flows (from the
    write, from the marked packet's send to its cumulative ACK, and to the first ACK
    covering it by SACK or cumulative ACK), beside the model's G at the variant's minRTO;
    and the backlogged flows' timeouts and fast retransmits per flow and second."""
    for name, overrides in GAIN_VARIANTS:
        rto_s = overrides.get("tcp.min_rto_ms", 1000.0) / 1e3
        for p in GAIN_LOSSES:
            got, events = {}, ""
            for approach in ("interactive", "backlogged"):
                sc = padding_fig5.scenario(approach, p, flows=10, duration_s=200.0, seed=seed).with_overrides(overrides)
                r = simulate(sc)
                got[approach] = means_s(r.bursts)
                if approach == "backlogged":
                    per_s = 1 / (10 * 200.0)
                    events = (f"RTOs {r.flows['timeouts'].sum() * per_s:.3f}/s, "
                              f"fast retransmits {r.flows['fast_retransmits'].sum() * per_s:.2f}/s")
            i, b = got["interactive"], got["backlogged"]
            gains = ", ".join(f"{k} {i[k] / b[k]:.2f}" for k in ("write_to_ack_s", "send_to_ack_s", "send_to_cover_s"))
            print(f"{name}, p {p}: interactive {i['send_to_ack_s']:.4f} s, backlogged write {b['write_to_ack_s']:.4f} "
                  f"send-ack {b['send_to_ack_s']:.4f} send-cover {b['send_to_cover_s']:.4f} s ({b['bursts']} bursts); "
                  f"G {gains}; model {model_gain(p, rto_s):.2f}; {events}", flush=True)


COPIED = {"tcp.diversity_copy_retransmissions": True}


def copied_retransmissions(seed: int) -> None:
    """2-copy diversity with `diversity_copy_retransmissions` against the paper's single
    resends: Figure 5(b)'s points against Eq. (14) and against Eq. (3) at p² (every round
    fails with p^k when every round is copied), and Figure 9's RED (as run, and gentle)."""
    rtt_s, rto_s = padding_fig5.RTT_MS / 1e3, 1.0
    for p in padding_fig5.LOSSES:
        cells = []
        for name, overrides in (("single resends", {}), ("copied resends", COPIED)):
            sc = padding_fig5.scenario("diversity", p, flows=10, duration_s=200.0, seed=seed).with_overrides(overrides)
            got = response_means_s(simulate(sc).bursts, warmup_s=padding_fig5.WARMUP_S)
            cells.append(f"{name} {got['write_to_ack_s']:.4f} s")
        print(f"Figure 5(b) diversity, p {p}: " + ", ".join(cells)
              + f"; Eq. (14) {m.response_time_diversity(p, rto_s, rtt_s):.4f} s, "
              f"Eq. (3) at p^2 {interactive.response_time_interactive(p * p, rto_s, rtt_s):.4f} s", flush=True)
    for red, red_overrides in (("RED as run", {}), ("RED gentle", {"link.queue.gentle": True})):
        for n in CLIENTS:
            cells = []
            for name, overrides in (("single resends", {}), ("copied resends", COPIED)):
                sc = padding_fig9.scenario("diversity", "red", n, duration_s=200.0, seed=seed)
                r = simulate(sc.with_overrides({**red_overrides, **overrides}))
                done = r.bursts.filter(pl.col("sent_ns") >= int(padding_fig9.WARMUP_S * 1e9)).drop_nulls("response_ns")
                loss = r.links.filter(pl.col("name") == "bottleneck")["loss_rate"].item()
                cells.append(f"{name} {done['response_ns'].mean() / 1e9:.3f} s (loss {loss:.3f})")
            print(f"Figure 9 {red}, {n} clients: " + ", ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["red-diversity", "gain", "copied-retransmissions"])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    {"red-diversity": red_diversity, "gain": gain, "copied-retransmissions": copied_retransmissions}[args.what](args.seed)


if __name__ == "__main__":
    main()
