"""Every reproduction's quick run, pinned: any change of behaviour shows.

Each page of docs/reproductions/ keeps, beside the CSVs of its full runs, the CSVs of
`smallpipe reproduce NAME --quick --seed 1` in its `quick/` folder. The simulator is
deterministic for a seed, so re-running gives the same numbers; the tolerance below only
absorbs floating-point noise. The claim tests (`test_reproduce_*.py`) check the papers'
claims against independent numbers; these pins check that nothing moved unnoticed. After a
deliberate change of behaviour, regenerate with `python3 scripts/regenerate-reproductions.py
--quick-only` and explain on the page what moved.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from smallpipe.experiments import REPRODUCTIONS, TESTBED, page_of

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reproductions"
PIN_RELATIVE_TOLERANCE = 1e-9
"""Stated on docs/reproductions/README.md: the pins hold to nine significant digits."""
PROVENANCE_COLUMNS = {"smallpipe_version", "smallpipe_commit", "overrides"}


def _same(ours: pl.DataFrame, pinned: pl.DataFrame, name: str) -> None:
    columns = [c for c in pinned.columns if c not in PROVENANCE_COLUMNS]
    assert [c for c in ours.columns if c not in PROVENANCE_COLUMNS] == columns, f"{name}: columns changed"
    assert ours.height == pinned.height, f"{name}: {ours.height} rows against {pinned.height} pinned"
    for column in columns:
        a, b = ours[column], pinned[column]
        if a.dtype.is_numeric() and b.dtype.is_numeric():
            x, y = a.cast(pl.Float64).to_list(), b.cast(pl.Float64).to_list()
            for row, (u, v) in enumerate(zip(x, y, strict=True)):
                if u is None or v is None:
                    assert u is v, f"{name}: {column}[{row}] is {u}, pinned {v}"
                else:
                    assert u == pytest.approx(v, rel=PIN_RELATIVE_TOLERANCE, abs=1e-12, nan_ok=True), (
                        f"{name}: {column}[{row}] is {u}, pinned {v}"
                    )
        else:
            assert a.cast(pl.String).to_list() == b.cast(pl.String).to_list(), f"{name}: {column} changed"


@pytest.mark.slow
@pytest.mark.parametrize("figure", sorted(set(REPRODUCTIONS) - TESTBED))  # real Linux TCP is not deterministic
def test_quick_run_matches_its_pin(figure: str, tmp_path: Path) -> None:
    pinned_dir = DOCS / page_of(figure) / "quick"
    REPRODUCTIONS[figure].reproduce(tmp_path, quick=True, seed=1)
    written = sorted(tmp_path.glob("*.csv"))
    assert written, f"{figure} wrote no CSV"
    for csv in written:
        pin = pinned_dir / csv.name
        assert pin.exists(), f"{figure}: no pin {pin}; regenerate the quick runs"
        _same(pl.read_csv(csv, infer_schema_length=None), pl.read_csv(pin, infer_schema_length=None), csv.name)
