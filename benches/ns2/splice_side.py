"""Put one side's rerun rows into a committed CSV of several sides, keeping the others.

A change to one side alone (say the ``"ns2"`` stack's rules) moves only that side's rows;
ns-2 is deterministic and smallpipe's default stack is untouched, so rerunning them (ns-2
often takes hours) would only rewrite what they already say. Rerun the side with the
driver's ``--sides`` and splice it in:

    python3 benches/ns2/matta_guo_verdict.py --figure fig3 --ns2-csv fig3.csv --sides "smallpipe ns2" --out new.csv
    python3 benches/ns2/splice_side.py --into fig3-verdict.csv --rows new.csv --side "smallpipe ns2" \\
        --key scheme k seed

Every row of ``--into`` on ``--side`` is replaced, cell by cell in ``--into``'s columns
but the key's (``smallpipe_commit`` included, so each row names the code that made it), by the row of
``--rows`` with the same side and ``--key`` values (numbers compared as numbers); a row
with no match is an error, and so is a column of ``--into`` that ``--rows`` lacks unless
the side leaves it empty there. Rows of ``--rows`` that ``--into`` does not hold are left
out and counted. The side column is the first one (``side`` or ``simulator``).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


def cell_key(value: str) -> str | float:
    try:
        return float(value)
    except ValueError:
        return value


def read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def splice(into: Path, rows_path: Path, sides: list[str], keys: list[str]) -> tuple[int, int]:
    """Rewrites ``into``; returns (rows replaced, rows of ``rows_path`` left out)."""
    columns, old = read(into)
    new_columns, new = read(rows_path)
    side_col = columns[0]
    if side_col not in ("side", "simulator") or new_columns[:1] != [side_col]:
        raise SystemExit(f"side column: {into} starts with {columns[:1]}, {rows_path} with {new_columns[:1]}; "
                         "both must start with the same 'side' or 'simulator'")
    missing_keys = [c for c in keys if c not in new_columns or c not in columns]
    if missing_keys:
        raise SystemExit(f"--key: {missing_keys} must be columns of both {into} and {rows_path}")
    # a column the side never fills (the driver leaves it out) stays empty; one it fills must be rerun
    absent = [c for c in columns if c not in new_columns]
    by_key = {(r[side_col], *(cell_key(r[k]) for k in keys)): r for r in new if r[side_col] in sides}
    used = set()
    for r in old:
        if r[side_col] not in sides:
            continue
        key = (r[side_col], *(cell_key(r[k]) for k in keys))
        if key not in by_key:
            raise SystemExit(f"--rows: {rows_path} has no row {dict(zip([side_col, *keys], key))} of {into}")
        filled = [c for c in absent if r[c] != ""]
        if filled:
            raise SystemExit(f"--rows: {rows_path} lacks the column(s) {filled}, which {into}'s row "
                             f"{dict(zip([side_col, *keys], key))} fills")
        r.update({c: by_key[key].get(c, "") for c in columns if c not in (side_col, *keys)})  # keys as written
        used.add(key)
    newline = "\r\n" if b"\r\n" in into.read_bytes()[:4096] else "\n"  # as the driver wrote it
    with into.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator=newline)
        w.writeheader()
        w.writerows(old)
    return len(used), len(by_key) - len(used)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--into", type=Path, required=True, help="the committed CSV, rewritten")
    parser.add_argument("--rows", type=Path, required=True, help="the rerun side's CSV")
    parser.add_argument("--side", nargs="+", required=True, help="the side(s) to replace")
    parser.add_argument("--key", nargs="+", required=True, help="the columns that name a row within a side")
    args = parser.parse_args()
    replaced, left_out = splice(args.into, args.rows, args.side, args.key)
    print(f"{args.into}: {replaced} rows of {args.side} replaced; {left_out} rows of {args.rows} not in it")


if __name__ == "__main__":
    main()
