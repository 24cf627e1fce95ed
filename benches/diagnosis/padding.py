#!/usr/bin/env python3
"""Diagnosis runs of docs/reproductions/padding-diversity.md, one cause at a time.

    python3 benches/diagnosis/padding.py red-diversity   # Figure 9: does RED's mode or `gentle` make diversity degrade gently?

Seed 1, 200 s per run as Figure 9's full run (bursts of the first 20 s left out).
"""

from __future__ import annotations

import argparse

import polars as pl
from smallpipe.experiments import padding_fig9
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["red-diversity"])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    red_diversity(args.seed)


if __name__ == "__main__":
    main()
