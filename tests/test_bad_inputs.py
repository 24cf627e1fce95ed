"""The bad-input corpus (tests/bad_inputs.json): each case is a command line that must
exit with its code, with a message holding every one of its words, and no traceback.
``{examples}`` is the examples folder, ``{tmp}`` a fresh temporary one per case."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

from smallpipe.cli import app

HERE = Path(__file__).resolve().parent
CASES = json.loads((HERE / "bad_inputs.json").read_text())
EXAMPLES = HERE.parent / "examples"


def test_the_corpus_is_large_and_its_cases_distinct():
    assert len(CASES) >= 100
    assert len({json.dumps(case["args"]) for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[" ".join(case["args"])[:80] for case in CASES])
def test_bad_input_is_refused_with_a_clear_message(case, tmp_path):
    (tmp_path / "notdb.duckdb").write_text("x" * 100)  # a file that is not a database

    def fill(text: str) -> str:
        return text.replace("{examples}", str(EXAMPLES)).replace("{tmp}", str(tmp_path))

    result = CliRunner().invoke(app, [fill(arg) for arg in case["args"]])
    said = " ".join(result.output.split())
    assert result.exit_code == case["exit"], said
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    missing = [word for word in case["words"] if fill(word) not in said]
    assert not missing, f"{missing} not in: {said}"
    assert not (tmp_path / "o").exists(), "refused before any output folder was made"
