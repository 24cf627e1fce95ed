#!/usr/bin/env python3
"""Writes the synthetic delivery traces of ``examples/traces/`` (no downloaded data).

mahimahi's format (``docs/links.md``): one line per delivery opportunity of 1500 bytes,
the millisecond it happens at, non-decreasing; the trace loops with period = its last
line. A rate of R bit/s is R / 12000 opportunities a second. Each trace is built one
millisecond at a time: the rate of that millisecond adds to a credit of opportunities,
and every whole one is written at that millisecond. Every trace ends with an opportunity
at its last millisecond, so that its period is its length.

    python3 scripts/make-traces.py [OUT_DIR]     # default: examples/traces

Traces:
- ``constant-1mbit.trace``: 1 Mbit/s (an opportunity every 12 ms), period 1.2 s;
- ``square-0.5-2mbit.trace``: 0.5 Mbit/s for 1 s, then 2 Mbit/s for 1 s, period 2 s;
- ``cellular-walk.trace``: 30 s of a random walk of the rate in log space (one step every
  100 ms, pulled back towards 1.5 Mbit/s, kept between 0.2 and 4 Mbit/s) with outages (no
  opportunity at all for 0.3 to 1.5 s, about one every 10 s), seeded, so the same file
  comes out every time.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable
from pathlib import Path

OPPORTUNITY_BITS = 1500 * 8


def trace(rate_bps_at_ms: Callable[[int], float], length_ms: int) -> list[int]:
    """Opportunity times for a rate given per millisecond, ending at ``length_ms``."""
    times: list[int] = []
    credit_bits = 0  # whole bits, so that a constant rate gives exactly spaced lines
    for ms in range(1, length_ms + 1):
        credit_bits += round(rate_bps_at_ms(ms) / 1000)
        while credit_bits >= OPPORTUNITY_BITS:
            times.append(ms)
            credit_bits -= OPPORTUNITY_BITS
    if not times or times[-1] != length_ms:
        times.append(length_ms)
    return times


def square(ms: int) -> float:
    return 0.5e6 if (ms - 1) % 2000 < 1000 else 2e6


def cellular_walk(length_ms: int, seed: int = 1) -> Callable[[int], float]:
    """A rate per ms: log-space random walk per 100 ms step, with outages."""
    rng = random.Random(seed)
    steps = length_ms // 100 + 1
    centre = math.log(1.5e6)
    log_rate, rates = centre, []
    outage_left = 0
    for _ in range(steps):
        log_rate += 0.1 * (centre - log_rate) + rng.gauss(0.0, 0.25)
        log_rate = min(max(log_rate, math.log(0.2e6)), math.log(4e6))
        if outage_left == 0 and rng.random() < 100 / 10_000:
            outage_left = rng.randint(3, 15)
        rates.append(0.0 if outage_left > 0 else math.exp(log_rate))
        outage_left = max(outage_left - 1, 0)
    return lambda ms: rates[(ms - 1) // 100]


def write(path: Path, times: list[int]) -> None:
    path.write_text("".join(f"{t}\n" for t in times))
    period_s = times[-1] / 1000
    print(f"{path}: {len(times)} opportunities over {period_s:g} s, "
          f"capacity {len(times) * OPPORTUNITY_BITS / period_s / 1e6:.4f} Mbit/s")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "examples" / "traces"
    out.mkdir(parents=True, exist_ok=True)
    write(out / "constant-1mbit.trace", trace(lambda ms: 1e6, 1200))
    write(out / "square-0.5-2mbit.trace", trace(square, 2000))
    write(out / "cellular-walk.trace", trace(cellular_walk(30_000), 30_000))


if __name__ == "__main__":
    main()
