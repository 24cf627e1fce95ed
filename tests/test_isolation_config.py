"""The class-isolation, RIO, edge-marking and diamond knobs through the Python front:
defaults filled in by the core, and errors naming the field."""

from __future__ import annotations

import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe import ConfigError, Scenario

BULK = [{"app": "bulk"}]


def test_defaults_are_filled_in() -> None:
    sc = Scenario(link={"queue": {"kind": "class_isolation"}}, flows=BULK).to_dict()
    q = sc["link"]["queue"]
    assert (q["classify"], q["short_dscp"], q["lifetime_pkts"], q["quantum_bytes"]) == ("dscp", 10, 32, 1500)
    assert q["short"] == {"weight": 1, "queue": {"kind": "droptail", "limit_pkts": 100, "limit_bytes": None}}
    assert sc["edge"]["mark"] == "none" and sc["topology"] == {"kind": "dumbbell"}
    rio = Scenario(link={"queue": {"kind": "rio"}}, flows=BULK).to_dict()["link"]["queue"]
    assert rio["in"]["min_th_pkts"] > rio["out"]["min_th_pkts"]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"link": {"queue": {"kind": "class_isolation", "long": {"weight": 0}}}}, "link.queue.long.weight"),
        ({"link": {"queue": {"kind": "rio", "out": {"min_th_pkts": 5, "max_th_pkts": 2, "max_p": 0.1}}}},
         "link.queue.out.max_th_pkts"),
        ({"edge": {"mark": "first_n"}}, "edge.in_pkts"),
        ({"topology": {"kind": "diamond", "routing": "size"}}, "topology.routing"),
    ],
)
def test_bad_knobs_name_their_field(config, field) -> None:
    with pytest.raises(ConfigError) as error:
        Scenario(**config, flows=BULK)
    assert error.value.field == field


def test_an_unknown_routing_names_the_value_and_the_choices() -> None:
    # Inside a tagged table serde reports the table's path (as for link.queue), not the key.
    with pytest.raises(ConfigError) as error:
        Scenario(topology={"kind": "diamond", "routing": "hash"}, flows=BULK)
    assert error.value.field == "topology"
    assert "hash" in error.value.value
    assert "load_balanced" in error.value.allowed
