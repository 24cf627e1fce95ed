"""A synthetic Squid native ``access.log``, so replay can be tried without a real proxy log.

Each client sends requests in Poisson arrivals; object sizes follow the SURGE mix of the
size-aware paper's Table 1 (lognormal body of ln-bytes mean 9.357 and deviation 1.318,
Pareto tail above 133 KB with shape 1.5). Lines follow Squid's native format:
``time elapsed client code/status bytes method URL ident hierarchy/peer type``.
"""

from __future__ import annotations

import math
from os import PathLike
from pathlib import Path

import numpy as np

__all__ = ["write_synthetic_access_log"]

SURGE_MU, SURGE_SIGMA = 9.357, 1.318
SURGE_CUTOFF_BYTES, SURGE_TAIL_SHAPE = 133_000.0, 1.5


def surge_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Object sizes in bytes: the lognormal body, redrawn from the Pareto tail above the cutoff."""
    body = rng.lognormal(SURGE_MU, SURGE_SIGMA, n)
    tail = SURGE_CUTOFF_BYTES * (1.0 - rng.random(n)) ** (-1.0 / SURGE_TAIL_SHAPE)
    return np.maximum(1, np.rint(np.where(body < SURGE_CUTOFF_BYTES, body, tail))).astype(np.int64)


def write_synthetic_access_log(
    path: str | PathLike[str],
    *,
    clients: int = 20,
    duration_s: float = 600.0,
    requests_per_client_per_s: float = 0.1,
    seed: int = 1,
    start_epoch_s: float = 1_700_000_000.0,
) -> int:
    """Write the log; returns the number of lines written."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[float, str, int]] = []
    for c in range(clients):
        client = f"10.1.{c // 250}.{c % 250 + 1}"
        count = rng.poisson(requests_per_client_per_s * duration_s)
        times = np.sort(rng.uniform(0.0, duration_s, count))
        for t, size in zip(times, surge_sizes(rng, count), strict=True):
            rows.append((start_epoch_s + float(t), client, int(size)))
    rows.sort()
    lines = []
    for i, (t, client, size) in enumerate(rows):
        elapsed_ms = max(1, int(1000 * math.log1p(size / 10_000)))
        lines.append(
            f"{t:.3f} {elapsed_ms} {client} TCP_MISS/200 {size} GET http://example.org/object/{i} "
            f"- DIRECT/198.18.255.1 application/octet-stream"
        )
    Path(path).write_text("\n".join(lines) + "\n")
    return len(lines)
