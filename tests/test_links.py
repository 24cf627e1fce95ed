"""Link models from Python (docs/links.md): a scenario's trace path is relative to its file,
and a traced run is measured against the trace's capacity."""

from __future__ import annotations

from pathlib import Path

import pytest
from smallpipe import ConfigError, Scenario, simulate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_a_trace_path_is_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.trace").write_text("4\n8\n")
    (tmp_path / "s.toml").write_text('duration_s = 2.0\n[link]\ntrace = "traces/t.trace"\n[[flows]]\napp = "bulk"\n')
    scenario = Scenario.from_toml(tmp_path / "s.toml")
    assert scenario["link"]["trace"] == str((tmp_path / "traces" / "t.trace").resolve())
    # Two 1500-byte opportunities every 8 ms: 3 Mbit/s, the rate the link tables use.
    assert scenario["link"]["rate_bps"] == 3_000_000


def test_a_bad_trace_line_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "t.trace").write_text("4\nfour\n")
    with pytest.raises(ConfigError) as error:
        Scenario(link={"trace": str(tmp_path / "t.trace")}, flows=[{"app": "bulk"}])
    assert "link.trace" in str(error.value) and "line 2" in str(error.value)


def test_the_cellular_example_fills_its_trace_and_never_exceeds_it() -> None:
    scenario = Scenario.from_toml(EXAMPLES / "cellular.toml").with_overrides({"duration_s": 30.0})
    times = [int(line) for line in (EXAMPLES / "traces" / "cellular-walk.trace").read_text().split()]
    capacity_bps = len(times) * 1500 * 8 / (times[-1] / 1000)
    link = simulate(scenario).links.row(0, named=True)
    assert link["rate_bps"] == round(capacity_bps)
    # One whole loop of the trace (30 s): at most its capacity, and four bulk flows fill it
    # but for slow start and the recoveries from the bursty losses.
    sent_bps = link["tx_bytes"] * 8 / 30.0
    assert 0.95 * capacity_bps < sent_bps <= capacity_bps
