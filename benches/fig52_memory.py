#!/usr/bin/env python3
"""Peak resident memory against flows for the thesis's Figure 5.2 scenario (TCP, rows
streamed), one `benches/fig52_scale.py` process per size.

    python benches/fig52_memory.py --flows 6e4 1e5 1e6 --json docs/memory_fig52.json --plot docs/memory_fig52.png
    python benches/fig52_memory.py --from-json docs/memory_fig52.json --plot docs/memory_fig52.png

``--add-run DIR`` adds the ``resources.json`` of an earlier `fig52_scale.py` run (e.g. the
10^7-flow one) without running it again, also to the rows of ``--from-json``; a run with
``fifo_hops`` other than ``events`` is labelled on the plot.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(flows: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="fig52-memory-") as out:
        subprocess.run([sys.executable, str(HERE / "fig52_scale.py"), "--flows", str(flows), "--protocols", "tcp",
                        "--jobs", "1", "--out", out], check=True, capture_output=True)
        run: dict[str, float] = json.loads((Path(out) / "resources.json").read_text())["runs"][0]
    return run


def plot(rows: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: r["flows_started"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r["flows_started"] for r in rows], [r["peak_rss_mib"] for r in rows], marker="o")
    for r in rows:
        if r.get("fifo_hops", "events") != "events":  # runs before the knob existed had none
            ax.annotate(f"fifo_hops = {r['fifo_hops']}", (r["flows_started"], r["peak_rss_mib"]),
                        textcoords="offset points", xytext=(-10, 8), ha="right", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("flows in the run (TCP, Figure 5.2 scenario, rows streamed)")
    ax.set_ylabel("peak RSS (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title("Peak resident memory against flows", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flows", type=float, nargs="*", default=[6e4, 1e5, 1e6])
    parser.add_argument("--add-run", type=Path, action="append", default=[], metavar="DIR")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--from-json", type=Path)
    parser.add_argument("--plot", type=Path, default=Path("results/memory_fig52.png"))
    args = parser.parse_args()
    rows = json.loads(args.from_json.read_text()) if args.from_json else [measure(n) for n in args.flows]
    rows += [json.loads((d / "resources.json").read_text())["runs"][0] for d in args.add_run]
    for r in sorted(rows, key=lambda r: r["flows_started"]):
        print(f"{r['flows_started']:>12,} flows: peak {r['peak_rss_mib']:7.1f} MiB, {r['wall_s']:7.1f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    plot(rows, args.plot)


if __name__ == "__main__":
    main()
