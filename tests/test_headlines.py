"""The reproduction index's headlines hold the numbers of the CSVs they summarize.

Each page of docs/reproductions/README.md has a claims file,
docs/reproductions/headlines/<page stem>.toml, that says where every number of its headline
comes from. A claim is a piece of the headline's text and a SQL query over the page's CSVs
(polars SQL; the CSVs are the query's tables); the numbers of the text, in order, must be the
query's values, row by row, rounded to the digits the text shows. Every other number of the
headline (figure numbers, the set-up, the paper's own numbers) is listed as not measured, and
a measured number that no committed CSV holds yet is listed as unbacked, with where it comes
from. A tally ("16 of the page's 21 claims hold") counts the verdicts of the page's claim
tables instead of querying a CSV. So a rerun that moves a number, or a headline edited without its claim, fails here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import polars as pl
import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reproductions"
CLAIMS = DOCS / "headlines"
# A number as the pages write it: digits, thousands grouped by a space ("165 061"), decimals.
# "ns-2" and "ns-3" are names, not numbers.
NUMBER = re.compile(r"(?<![\w.])(?<!ns-)(?:\d{1,3}(?: \d{3})+(?![\d])|\d+)(?:\.\d+)?")


def numbers(text: str) -> list[str]:
    return [m.group(0) for m in NUMBER.finditer(text)]


def headlines() -> dict[str, str]:
    """The index's headline column, by page file name."""
    rows = {}
    for line in (DOCS / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        link = re.fullmatch(r"\[([\w.-]+\.md)\]\([\w.-]+\.md\)", cells[0]) if len(cells) == 4 else None
        if link:
            rows[link.group(1)] = cells[3]
    return rows


def agrees(value: float, written: str) -> bool:
    """`written` is `value` rounded to the digits it shows (either way at a tie). Signs are
    prose in the headlines ("+0.046", "−2%"), so the value's magnitude is compared."""
    shown = float(written.replace(" ", ""))
    decimals = len(written.partition(".")[2])
    return abs(abs(value) - shown) <= 0.5 * 10.0**-decimals * (1 + 1e-9) + 1e-12


def query(claim: dict, where: str) -> list[float]:
    tables = {name: pl.read_csv(DOCS / path, infer_schema_length=None) for name, path in claim["tables"].items()}
    result = pl.SQLContext(tables).execute(claim["sql"], eager=True)
    assert result.height > 0, f"{where}: the query returned no row"
    return [float(v) for row in result.iter_rows() for v in row]


PAGES = sorted(p.stem for p in CLAIMS.glob("*.toml"))


def test_numbers_are_read_as_the_pages_write_them() -> None:
    assert numbers("ns-2 gives 165 061 flows, 0.21-0.75 at §2.3 and p99 1.29 s (10^8)") == [
        "165 061", "0.21", "0.75", "2.3", "1.29", "10", "8"]
    assert agrees(0.0336, "0.034") and not agrees(0.0336, "0.033")
    assert agrees(-0.046, "0.046") and agrees(0.125, "0.12") and agrees(0.125, "0.13")


def test_every_headline_has_a_claims_file() -> None:
    assert sorted(Path(page).stem for page in headlines()) == PAGES


@pytest.mark.parametrize("page", PAGES)
def test_each_claim_is_its_csvs_number(page: str) -> None:
    spec = tomllib.loads((CLAIMS / f"{page}.toml").read_text())
    headline = headlines()[f"{page}.md"]
    for i, claim in enumerate(spec["claim"]):
        where = f"{page}.toml claim {i + 1} ({claim['text']!r})"
        assert claim["text"] in headline, f"{where}: not in the headline any more"
        written, values = numbers(claim["text"]), query(claim, where)
        assert len(written) == len(values), f"{where}: {len(written)} numbers in the text, {len(values)} from the query"
        wrong = [(w, round(v, 6)) for w, v in zip(written, values, strict=True) if not agrees(v, w)]
        assert not wrong, f"{where}: the CSVs give {wrong} (headline, CSV)"


VERDICTS = ("yes", "partly", "no")


def verdicts(page: str, text: str) -> list[str]:
    """The verdict of every row of the page's claim tables (those whose last column is
    `holds`): the cell's first word, which must be one of VERDICTS; a row marked "—" is not
    a claim of the paper and is left out."""
    found, in_table = [], False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            in_table = False
        elif cells[-1] == "holds" and cells[0].startswith("claim"):
            in_table = True
        elif in_table and cells[-1] == "—":
            continue  # a row of our own, not a claim of the paper
        elif in_table and not set("".join(cells)) <= set("-: "):
            word = re.match(r"[a-z]+", cells[-1])
            assert word and word.group(0) in VERDICTS, f"{page}: a holds cell must start with {VERDICTS}: {cells[-1]!r}"
            found.append(word.group(0))
    return found


def test_verdicts_are_read_from_claim_tables() -> None:
    table = "| claim | paper | ours | holds |\n|---|---|---|---|\n| a | 1 | 1 | yes |\n| b | 1 | 2 | partly: the sign |\n"
    assert verdicts("t.md", table + "\n| other | holds |\n|---|---|\n| c | maybe |\n") == ["yes", "partly"]
    with pytest.raises(AssertionError, match="must start with"):
        verdicts("t.md", table + "| c | 1 | 1 | roughly |\n")


@pytest.mark.parametrize("page", PAGES)
def test_each_tally_counts_its_pages_verdicts(page: str) -> None:
    """A tally claim ("16 of the page's 21 claims hold") counts the verdicts of a page's claim
    tables: its numbers, in order, are the counts named in `counts` (a verdict, or `all`)."""
    spec = tomllib.loads((CLAIMS / f"{page}.toml").read_text())
    for tally in spec.get("tally", []):
        assert tally["text"] in headlines()[f"{page}.md"], f"{page}: tally {tally['text']!r} not in the headline"
        found = verdicts(tally["page"], (DOCS / tally["page"]).read_text())
        counts = [len(found) if c == "all" else found.count(c) for c in tally["counts"]]
        assert numbers(tally["text"]) == [str(c) for c in counts], f"{page}: {tally['text']!r} but the tables give {counts}"


@pytest.mark.parametrize("page", PAGES)
def test_every_number_of_a_headline_is_claimed_or_not_measured(page: str) -> None:
    spec = tomllib.loads((CLAIMS / f"{page}.toml").read_text())
    claimed = {n for claim in spec["claim"] + spec.get("tally", []) for n in numbers(claim["text"])}
    known = set(spec["not_measured"]) | set(spec.get("unbacked", {}))
    unclaimed = sorted(set(numbers(headlines()[f"{page}.md"])) - claimed - known)
    assert not unclaimed, f"{page}: numbers with neither a claim nor a place in not_measured: {unclaimed}"


@pytest.mark.parametrize("page", PAGES)
def test_the_csvs_behind_a_headline_come_from_a_clean_tree(page: str) -> None:
    spec = tomllib.loads((CLAIMS / f"{page}.toml").read_text())
    paths = sorted({path for claim in spec["claim"] for path in claim["tables"].values()})
    excused = spec.get("provenance_excused", {})
    for path in paths:
        columns = pl.read_csv(DOCS / path, n_rows=1).columns
        if path in excused:
            continue
        assert "smallpipe_commit" in columns, f"{path}: no provenance columns"
        commits = set(pl.read_csv(DOCS / path, columns=["smallpipe_commit"])["smallpipe_commit"])
        dirty = sorted(c for c in commits if c.endswith("+dirty") or c == "unknown")
        assert not dirty, f"{path}: made from a tree with uncommitted changes ({dirty})"
