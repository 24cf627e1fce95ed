"""Every reproduction CSV names the code that made it."""

import json
import subprocess
from pathlib import Path

import polars as pl
import smallpipe
from smallpipe import Scenario, simulate
from smallpipe.experiments.provenance import write_csv
from smallpipe.result import overriding

REPO = Path(__file__).resolve().parents[1]


def test_csv_carries_version_and_the_checkouts_commit(tmp_path):
    write_csv(pl.DataFrame({"x": [1, 2]}), tmp_path / "t.csv")
    table = pl.read_csv(tmp_path / "t.csv")
    assert table["x"].to_list() == [1, 2], "the table itself is unchanged"
    assert set(table["smallpipe_version"]) == {smallpipe.__version__}
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    (commit,) = set(table["smallpipe_commit"])
    if head.returncode == 0:
        assert commit.removesuffix("+dirty") == head.stdout.strip()
    else:
        assert commit == "unknown"


def test_a_variant_applies_to_every_run_and_is_recorded(tmp_path):
    base = Scenario.from_toml(REPO / "examples" / "dumbbell.toml").with_overrides({"duration_s": 5.0, "slice_s": 1.0})
    with overriding({"link.rate_bps": 123_000}):
        with overriding({"seed": 7}):
            inner = simulate(base)
            write_csv(pl.DataFrame({"x": [1]}), tmp_path / "v.csv")
        outer = simulate(base)
    plain = simulate(base)
    assert inner.scenario["link"]["rate_bps"] == 123_000 and inner.scenario["seed"] == 7
    assert outer.scenario["link"]["rate_bps"] == 123_000 and outer.scenario["seed"] == base["seed"]
    assert plain.scenario == base, "outside the block nothing is overridden"
    recorded = json.loads(pl.read_csv(tmp_path / "v.csv")["overrides"][0])
    assert recorded == {"link.rate_bps": 123_000, "seed": 7}


def test_a_changed_result_under_docs_is_not_changed_code(tmp_path):
    from smallpipe.provenance import commit_of

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "fig.csv").write_text("x\n1\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    head = git("rev-parse", "HEAD")
    assert commit_of(tmp_path) == head
    (tmp_path / "docs" / "fig.csv").write_text("x\n2\n")
    assert commit_of(tmp_path / "docs") == head, "a regenerated result is not a code change"
    (tmp_path / "code.py").write_text("x = 2\n")
    assert commit_of(tmp_path / "docs") == head + "+dirty"
    assert commit_of(tmp_path.parent / "not-a-checkout-anywhere") == "unknown"
