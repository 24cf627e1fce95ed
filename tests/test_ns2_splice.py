"""benches/ns2/splice_side.py: one side's rerun rows into a committed CSV of several sides.
The other sides' rows must come back byte for byte (they are results nobody reran), the
rerun side's cells must be the new ones, and a row that cannot be matched must stop it."""

from pathlib import Path

import pytest
from ns2_drivers import load

splice_side = load("splice_side")

HEADER = "side,k,seed,jain,path1_loss,smallpipe_version,smallpipe_commit"
OLD_ROWS = [
    "ns-2,1,1,0.8965,0.02,0.1.0,aaaa",
    "smallpipe ns2,1,1,0.8978,,0.1.0,aaaa",
    "smallpipe default,1,1,0.9338,,0.1.0,bbbb",
    "ns-2,2,1,0.9152,0.03,0.1.0,aaaa",
    "smallpipe ns2,2,1,0.8816,,0.1.0,aaaa",
]


def write(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes((newline.join(lines) + newline).encode())
    return path


def test_replaces_the_side_and_keeps_every_other_row(tmp_path: Path) -> None:
    into = write(tmp_path / "verdict.csv", [HEADER, *OLD_ROWS])
    # the rerun's own column order, its k written as a float, and a row the file lacks
    rows = write(tmp_path / "new.csv", [
        "side,seed,k,jain,smallpipe_version,smallpipe_commit",
        "smallpipe ns2,1,2.0,0.8913,0.1.0,cccc",
        "smallpipe ns2,1,1.0,0.8895,0.1.0,cccc",
        "smallpipe ns2,1,4.0,0.8652,0.1.0,cccc",
    ])
    replaced, left_out = splice_side.splice(into, rows, ["smallpipe ns2"], ["k", "seed"])
    assert (replaced, left_out) == (2, 1)
    assert into.read_text().splitlines() == [
        HEADER,
        OLD_ROWS[0],
        "smallpipe ns2,1,1,0.8895,,0.1.0,cccc",  # matched on k = 1.0 as 1; the empty path column kept
        OLD_ROWS[2],
        OLD_ROWS[3],
        "smallpipe ns2,2,1,0.8913,,0.1.0,cccc",
    ]


def test_keeps_crlf_line_ends(tmp_path: Path) -> None:
    into = write(tmp_path / "hangs.csv", [HEADER, *OLD_ROWS], newline="\r\n")
    rows = write(tmp_path / "new.csv", [HEADER, "smallpipe ns2,1,1,0.5,,0.1.0,cccc",
                                        "smallpipe ns2,2,1,0.6,,0.1.0,cccc"])
    splice_side.splice(into, rows, ["smallpipe ns2"], ["k", "seed"])
    assert into.read_bytes().count(b"\r\n") == 1 + len(OLD_ROWS)


def test_a_row_without_its_rerun_is_an_error(tmp_path: Path) -> None:
    into = write(tmp_path / "verdict.csv", [HEADER, *OLD_ROWS])
    rows = write(tmp_path / "new.csv", [HEADER, "smallpipe ns2,1,1,0.5,,0.1.0,cccc"])
    with pytest.raises(SystemExit, match="no row .*'k': 2.0"):
        splice_side.splice(into, rows, ["smallpipe ns2"], ["k", "seed"])
    assert into.read_text().splitlines() == [HEADER, *OLD_ROWS]  # not rewritten


def test_a_filled_column_the_rerun_lacks_is_an_error(tmp_path: Path) -> None:
    # ns-2's rows fill path1_loss; a rerun of them without it would blank a result
    into = write(tmp_path / "verdict.csv", [HEADER, *OLD_ROWS])
    rows = write(tmp_path / "new.csv", ["side,k,seed,jain,smallpipe_version,smallpipe_commit",
                                        "ns-2,1,1,0.9,0.1.0,cccc", "ns-2,2,1,0.9,0.1.0,cccc"])
    with pytest.raises(SystemExit, match=r"lacks the column\(s\) \['path1_loss'\]"):
        splice_side.splice(into, rows, ["ns-2"], ["k", "seed"])
