#!/usr/bin/env python3
"""Regenerates every reproduction's CSV and PNG into docs/reproductions/<page>/ (full runs,
seed 1) and the pinned quick runs into docs/reproductions/<page>/quick/, printing each
one's wall time. Run it alone on a quiet machine: the full set takes tens of minutes.

    python3 scripts/regenerate-reproductions.py               # everything but the testbed figures
    python3 scripts/regenerate-reproductions.py --quick-only  # the pins only
    python3 scripts/regenerate-reproductions.py taq-fig8 taq-fig9
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from smallpipe.experiments import REPRODUCTIONS, TESTBED, page_of

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reproductions"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figures", nargs="*", help="figure names (default: all but the testbed's, which "
                        "scripts/testbed-measurements.sh runs)")
    parser.add_argument("--quick-only", action="store_true", help="regenerate only the pinned quick runs")
    args = parser.parse_args()
    for figure in args.figures or sorted(set(REPRODUCTIONS) - TESTBED):
        page = DOCS / page_of(figure)
        runs = [(page / "quick", True)] + ([] if args.quick_only else [(page, False)])
        for out, quick in runs:
            out.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            REPRODUCTIONS[figure].reproduce(out, quick=quick, seed=1)
            print(f"{figure}{' --quick' if quick else ''}: {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
