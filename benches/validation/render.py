#!/usr/bin/env python3
"""Rewrites the results tables of docs/validation.md from ``<out>/summary.csv`` (ns-3 against
smallpipe) and, where present, ``<out>/linux_summary.csv`` (Linux against smallpipe): each
section's table sits between ``<!-- table:SECTION -->`` and ``<!-- /table:SECTION -->``.
The many-flow and Bernoulli tables get a Linux column; the web-pool section (Linux only) has
a table of its own. Without Linux results those cells say so.

The Linux matrix (``run.py --linux --congestion ...``) has a table of its own, from every
``<out>/linux_matrix_<cc>_summary.csv`` present, between ``<!-- table:linux-matrix -->`` and
``<!-- /table:linux-matrix -->`` (``render_matrix``).

    python3 benches/validation/render.py --out docs/validation --doc docs/validation.md
"""

import argparse
import csv
import json
import re
from pathlib import Path

LINUX_SECTIONS = ("many", "bernoulli")
"""ns-3 sections whose rows Linux also measures (run.py --linux)."""
LINUX_ONLY_SECTIONS = ("web",)
LINUX_SKIPS = ("N = 200:",)
"""Rows Linux does not run (run.py --linux runs N = 10, 50, 100, as the issue asks)."""
NOT_MEASURED = "not yet measured"


def fmt(v):
    if v in ("", "None"):
        return "—"
    x = float(v)
    if x == float("inf"):
        return "∞"  # an unfinished object reached the quantile
    if x == int(x) and abs(x) >= 10:
        return f"{int(x)}"
    return f"{x:.4g}"


def _linux_cells(r, linux):
    """Linux's value and its verdict against smallpipe; the smallpipe value it was compared
    with is shown when it is not this table's (Linux ran other seeds or durations)."""
    unit = f" {r['unit']}" if r["unit"] else ""
    lx = linux.get(r["metric"])
    if lx is None:
        return ("—" if linux or r["metric"].startswith(LINUX_SKIPS) else NOT_MEASURED), "—"
    value = f"{fmt(lx['linux'])}{unit}"
    if fmt(lx["smallpipe"]) != fmt(r["smallpipe"]):
        value += f" (smallpipe on the same runs: {fmt(lx['smallpipe'])})"
    return value, f"**{lx['verdict']}** ({lx['tolerance']})"


def table(rows, linux=None):
    """ns-3 against smallpipe; with ``linux`` (metric -> Linux row), two more columns."""
    head = "| metric | ns-3 | smallpipe | tolerance | verdict |"
    if linux is not None:
        head += " Linux | Linux vs smallpipe |"
    lines = [head, "|---" * head.count(" | ") + "|---|"]
    for r in rows:
        unit = f" {r['unit']}" if r["unit"] else ""
        line = (f"| {r['metric']} | {fmt(r['ns3'])}{unit} | {fmt(r['smallpipe'])}{unit} | {r['tolerance']} | "
                f"**{r['verdict']}** |")
        if linux is not None:
            line += " {} | {} |".format(*_linux_cells(r, linux))
        lines.append(line)
    return "\n".join(lines)


def linux_table(rows):
    lines = ["| metric | smallpipe | Linux | tolerance | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        unit = f" {r['unit']}" if r["unit"] else ""
        lines.append(f"| {r['metric']} | {fmt(r['smallpipe'])}{unit} | {fmt(r['linux'])}{unit} | {r['tolerance']} | "
                     f"**{r['verdict']}** |")
    if not rows:
        lines.append(f"| *{NOT_MEASURED}* | | | | |")
    return "\n".join(lines)


def _replace(text, doc, section, body):
    pat = re.compile(rf"(<!-- table:{section} -->\n)(?:.*?\n)?(<!-- /table:{section} -->)", re.DOTALL)
    if not pat.search(text):
        raise SystemExit(f"{doc}: no <!-- table:{section} --> ... <!-- /table:{section} --> markers")
    return pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def _stamp(text, marker, stamp):
    return re.sub(rf"(<!-- {marker} -->\n)(?:.*?\n)?(<!-- /{marker} -->)", lambda m: m.group(1) + stamp + "\n" + m.group(2),
                  text, flags=re.DOTALL)


def render(out: Path, doc: Path):
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    linux_rows = []
    if (out / "linux_summary.csv").is_file():
        with open(out / "linux_summary.csv") as f:
            linux_rows = list(csv.DictReader(f))
    meta = json.loads((out / "meta.json").read_text())
    text = doc.read_text()
    for section in {r["section"] for r in rows}:
        linux = {r["metric"]: r for r in linux_rows if r["section"] == section} if section in LINUX_SECTIONS else None
        text = _replace(text, doc, section, table([r for r in rows if r["section"] == section], linux))
    for section in LINUX_ONLY_SECTIONS:
        mine = [r for r in linux_rows if r["section"] == section]
        if mine or f"<!-- table:{section} -->" in text:  # a doc without the section and no results: nothing to do
            text = _replace(text, doc, section, linux_table(mine))
    passed = sum(r["verdict"] == "pass" for r in rows)
    text = _stamp(text, "summary", f"{passed} of {len(rows)} rows within tolerance; {meta['runs']} scenarios, smallpipe "
                  f"{meta['smallpipe_wall_s']} s, ns-3 process {meta['ns3_process_wall_s']} s of wall time.")
    if linux_rows:
        linux_meta = json.loads((out / "linux_meta.json").read_text())
        passed = sum(r["verdict"] == "pass" for r in linux_rows)
        stamp = (f"Linux: {passed} of {len(linux_rows)} rows within tolerance; {linux_meta['runs']} scenarios, "
                 f"{linux_meta['wall_s']} s of wall time.")
    else:
        stamp = f"Linux: {NOT_MEASURED} (see below for the command)."
    text = _stamp(text, "linux-summary", stamp)
    doc.write_text(text)


MATRIX_CONGESTION = ("reno", "cubic", "bbr")
MATRIX_VERDICTS = {"pass": "within", "FAIL": "**outside**", "report": "—"}
"""How a matrix row reads: within its tolerance, outside it (to be diagnosed), or no tolerance."""


def matrix_table(rows):
    """One row per (congestion control, section, metric): smallpipe's Linux stack against Linux."""
    lines = ["| TCP | section | metric | smallpipe (linux stack) | Linux | tolerance | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        unit = f" {r['unit']}" if r["unit"] else ""
        lines.append(f"| {r['congestion']} | {r['section']} | {r['metric']} | {fmt(r['smallpipe'])}{unit} | "
                     f"{fmt(r['linux'])}{unit} | {r['tolerance']} | {MATRIX_VERDICTS[r['verdict']]} |")
    if not rows:
        lines.append(f"| *{NOT_MEASURED}* | | | | | | |")
    return "\n".join(lines)


def matrix_rows(out: Path):
    """The rows of every congestion control's summary in ``out``, reno, cubic, bbr in turn."""
    rows = []
    for cc in MATRIX_CONGESTION:
        path = out / f"linux_matrix_{cc}_summary.csv"
        if path.is_file():
            with open(path) as f:
                rows += list(csv.DictReader(f))
    return rows


def render_matrix(out: Path, doc: Path):
    """Rewrites the matrix's table and its summary line in ``doc``; a ``doc`` that does not exist
    is written with them alone (a scratch run's page)."""
    rows = matrix_rows(out)
    if not doc.exists():
        doc.write_text("<!-- linux-matrix-summary -->\n<!-- /linux-matrix-summary -->\n\n"
                       "<!-- table:linux-matrix -->\n<!-- /table:linux-matrix -->\n")
    text = _replace(doc.read_text(), doc, "linux-matrix", matrix_table(rows))
    parts = []
    for cc in MATRIX_CONGESTION:
        mine = [r for r in rows if r["congestion"] == cc and r["verdict"] != "report"]
        if mine:
            meta = json.loads((out / f"linux_matrix_{cc}_meta.json").read_text())
            passed = sum(r["verdict"] == "pass" for r in mine)
            parts.append(f"{cc}: {passed} of {len(mine)} rows within tolerance ({meta['runs']} scenarios, "
                         f"{meta['wall_s']} s of wall time)")
    stamp = "; ".join(parts) + "." if parts else f"Linux matrix: {NOT_MEASURED} (see above for the command)."
    doc.write_text(_stamp(text, "linux-matrix-summary", stamp))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/validation")
    ap.add_argument("--doc", default="docs/validation.md")
    a = ap.parse_args()
    out, doc = Path(a.out), Path(a.doc)
    ns3, linux_matrix = (out / "summary.csv").is_file(), bool(matrix_rows(out))
    if not (ns3 or linux_matrix):
        raise SystemExit(f"--out {out}: no summary.csv and no linux_matrix_<cc>_summary.csv to render")
    if ns3:
        render(out, doc)
    if linux_matrix:
        render_matrix(out, doc)


if __name__ == "__main__":
    main()
