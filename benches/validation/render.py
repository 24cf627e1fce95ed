#!/usr/bin/env python3
"""Rewrites the results tables of docs/validation.md from ``<out>/summary.csv``: each
section's table sits between ``<!-- table:SECTION -->`` and ``<!-- /table:SECTION -->``.

    python3 benches/validation/render.py --out docs/validation --doc docs/validation.md
"""

import argparse
import csv
import json
import re
from pathlib import Path


def fmt(v):
    if v in ("", "None"):
        return "—"
    x = float(v)
    if x == int(x) and abs(x) >= 10:
        return f"{int(x)}"
    return f"{x:.4g}"


def table(rows):
    lines = ["| metric | ns-3 | smallpipe | tolerance | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        unit = f" {r['unit']}" if r["unit"] else ""
        lines.append(f"| {r['metric']} | {fmt(r['ns3'])}{unit} | {fmt(r['smallpipe'])}{unit} | {r['tolerance']} | "
                     f"**{r['verdict']}** |")
    return "\n".join(lines)


def render(out: Path, doc: Path):
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    meta = json.loads((out / "meta.json").read_text())
    text = doc.read_text()
    for section in {r["section"] for r in rows}:
        body = table([r for r in rows if r["section"] == section])
        pat = re.compile(rf"(<!-- table:{section} -->\n)(?:.*?\n)?(<!-- /table:{section} -->)", re.DOTALL)
        if not pat.search(text):
            raise SystemExit(f"{doc}: no <!-- table:{section} --> ... <!-- /table:{section} --> markers")
        text = pat.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    passed = sum(r["verdict"] == "pass" for r in rows)
    stamp = (f"{passed} of {len(rows)} rows within tolerance; {meta['runs']} scenarios, smallpipe "
             f"{meta['smallpipe_wall_s']} s, ns-3 process {meta['ns3_process_wall_s']} s of wall time.")
    text = re.sub(r"(<!-- summary -->\n)(?:.*?\n)?(<!-- /summary -->)", lambda m: m.group(1) + stamp + "\n" + m.group(2),
                  text, flags=re.DOTALL)
    doc.write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/validation")
    ap.add_argument("--doc", default="docs/validation.md")
    a = ap.parse_args()
    render(Path(a.out), Path(a.doc))


if __name__ == "__main__":
    main()
