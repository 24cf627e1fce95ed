"""Scenario ids are pinned (issue 36): a sweep store finds finished points by the id of their
canonical JSON (`sweep.point_id`), so a field or default that changed the canonical form
would make every stored point look new, silently. `data/pinned_scenarios.json` holds the
canonical JSON and id of the default scenario, of the smallest one and of one scenario per
named stack. The "rfc" entries were written by the build before stacks existed (e1cef62);
the others when their stack was added. Changing an entry is a decision named in the commit."""

import json
from pathlib import Path

import pytest
import smallpipe
from smallpipe.sweep import point_id

ROOT = Path(__file__).resolve().parent.parent
PINNED = json.loads((ROOT / "tests" / "data" / "pinned_scenarios.json").read_text())


def _scenario(name: str, overrides: dict[str, str]) -> smallpipe.Scenario:
    if name.startswith("examples/"):
        base = smallpipe.Scenario.from_toml(ROOT / name)
    else:
        base = smallpipe.Scenario.from_dict({"flows": [{"app": "bulk"}]})
    return base.with_overrides(overrides) if overrides else base


@pytest.mark.parametrize("name", PINNED)
def test_canonical_json_and_point_id_are_pinned(name):
    pinned = PINNED[name]
    sc = _scenario(name, pinned["overrides"])
    assert sc.to_dict() == pinned["canonical"]
    assert point_id(sc) == pinned["point_id"]


def test_the_pins_cover_the_default_and_every_stack():
    stacks = {entry["canonical"]["tcp"].get("stack", "rfc") for entry in PINNED.values()}
    assert stacks == {"rfc", "ns3", "linux", "ns2"}
    assert "examples/dumbbell.toml" in PINNED
    # Under "rfc" the canonical form has no stack and none of the knobs added after ids were kept.
    rfc = PINNED["examples/dumbbell.toml"]["canonical"]["tcp"]
    assert not {"stack", "loss_detection", "pacing", "rtt_samples"} & set(rfc)
