"""Every value of every `[tcp]` rule knob is documented: docs/scenario.md's row for the knob
names it. Adding a knob variant touches three places (docs/tcp.md, "Adding a knob"), and this
test is what keeps the third, the page, from being forgotten."""

import re
from pathlib import Path

import pytest
from smallpipe import ConfigError, Scenario

ROOT = Path(__file__).resolve().parent.parent
BASE = {"flows": [{"app": "bulk"}]}


def _rule_knobs() -> list[str]:
    tcp = Scenario.from_dict(BASE).to_dict()["tcp"]
    # Knobs added after ids were kept are left out of the canonical dict at their defaults.
    return sorted({k for k, v in tcp.items() if isinstance(v, str)} | {"loss_detection", "pacing", "rtt_samples",
                                                                        "recovery_exit", "stack",
                                                                        "syn_timeout_restart"})


def _values(knob: str) -> list[str]:
    with pytest.raises(ConfigError) as bad:
        Scenario.from_dict({**BASE, "tcp": {knob: "no_such_value"}})
    return re.findall(r'[`"]([a-z0-9_]+)[`"]', str(bad.value).split("no_such_value", 1)[1])


def _row(knob: str) -> str:
    page = (ROOT / "docs" / "scenario.md").read_text()
    section = page[page.index("## `[tcp]`"):page.index("## `[[flows]]`")]
    rows = [line for line in section.splitlines() if line.startswith(f"| `{knob}` |")]
    assert len(rows) == 1, f"docs/scenario.md's [tcp] table needs one row for {knob}"
    return rows[0]


@pytest.mark.parametrize("knob", _rule_knobs())
def test_every_value_of_a_rule_knob_has_its_words_in_the_scenario_page(knob):
    values = _values(knob)
    assert len(values) >= 2, f"{knob}: the error message should list the allowed values"
    row = _row(knob)
    missing = [v for v in values if f'"{v}"' not in row and f"`{v}`" not in row]
    assert not missing, f"docs/scenario.md's row for tcp.{knob} does not name {missing}"
