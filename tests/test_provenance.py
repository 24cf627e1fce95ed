"""Every reproduction CSV names the code that made it."""

import subprocess
from pathlib import Path

import polars as pl

import smallpipe
from smallpipe.experiments.provenance import write_csv

REPO = Path(__file__).resolve().parents[1]


def test_csv_carries_version_and_the_checkouts_commit(tmp_path):
    write_csv(pl.DataFrame({"x": [1, 2]}), tmp_path / "t.csv")
    table = pl.read_csv(tmp_path / "t.csv")
    assert table["x"].to_list() == [1, 2], "the table itself is unchanged"
    assert set(table["smallpipe_version"]) == {smallpipe.__version__}
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    (commit,) = set(table["smallpipe_commit"])
    if head.returncode == 0:
        assert commit.removesuffix("+dirty") == head.stdout.strip()
    else:
        assert commit == "unknown"
