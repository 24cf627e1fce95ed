"""Scenario loading and validation, and simulate() results, through the native core."""

from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

import smallpipe
from smallpipe import ConfigError, Result, Scenario
from smallpipe.result import BURSTS_SCHEMA, FLOWS_SCHEMA, LINKS_SCHEMA, SLICES_SCHEMA

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SMALL = {
    "seed": 3,
    "duration_s": 10.0,
    "slice_s": 2.0,
    "link": {"rate_bps": 1_000_000, "delay_ms": 1.0, "queue": {"kind": "droptail", "limit_pkts": 50}},
    "tcp": {"packet_size_bytes": 500, "recovery": "newreno", "delayed_ack": False},
    "flows": [{"count": 4, "app": "bulk", "rtt_ms": 200.0, "start_s": [0.0, 1.0]}],
}


def contains(canonical, given):
    """Every value given is in the canonical dict, unchanged (defaults may be added)."""
    if isinstance(given, dict):
        return all(key in canonical and contains(canonical[key], value) for key, value in given.items())
    if isinstance(given, list):
        return len(canonical) == len(given) and all(map(contains, canonical, given))
    return canonical == given


# ------------------------------------------------------------------- Scenario


def test_public_api_is_exported():
    assert set(smallpipe.__all__) >= {
        "Scenario",
        "simulate",
        "Result",
        "ConfigError",
        "SimulationError",
        "metrics",
        "models",
        "__version__",
    }
    assert isinstance(smallpipe.__version__, str) and smallpipe.__version__
    assert issubclass(smallpipe.ConfigError, ValueError)
    assert issubclass(smallpipe.SimulationError, RuntimeError)


def test_canonical_form_keeps_given_values_and_fills_defaults():
    scenario = Scenario.from_dict(SMALL)
    canonical = scenario.to_dict()
    assert contains(canonical, SMALL)
    assert set(canonical["tcp"]) > set(SMALL["tcp"])  # defaults filled in
    assert Scenario.from_dict(canonical) == scenario  # canonical form is a fixed point


def test_keyword_construction_equals_from_dict():
    assert Scenario(**SMALL) == Scenario.from_dict(SMALL)


def test_to_dict_is_a_copy():
    scenario = Scenario.from_dict(SMALL)
    scenario.to_dict()["link"]["rate_bps"] = 5
    assert scenario.to_dict()["link"]["rate_bps"] == SMALL["link"]["rate_bps"]


@pytest.mark.parametrize("name", ["dumbbell.toml", "interactive.toml", "isolation.toml"])
def test_examples_are_valid(name):
    Scenario.from_toml(EXAMPLES / name)


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(FileNotFoundError, match=r"nope\.toml"):
        Scenario.from_toml(missing)


def test_toml_syntax_error_names_file_and_line(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("seed = 1\n[link\nrate_bps = 5\n")
    with pytest.raises(ConfigError, match="line 2") as caught:
        Scenario.from_toml(broken)
    assert caught.value.field == "<file>"
    assert "broken.toml" in str(caught.value)


def test_invalid_value_names_the_field():
    bad = {**SMALL, "link": {**SMALL["link"], "rate_bps": -5}}
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict(bad)
    error = caught.value
    assert error.field == "link.rate_bps"
    assert "-5" in error.value
    assert error.allowed
    assert str(error).startswith("link.rate_bps")


def test_unknown_field_is_rejected():
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict({**SMALL, "link": {**SMALL["link"], "rate_kbps": 5}})
    assert caught.value.field.startswith("link")
    assert "rate_kbps" in str(caught.value)


def test_overrides_return_a_new_validated_scenario():
    base = Scenario.from_dict(SMALL)
    changed = base.with_overrides(
        {"link.rate_bps": 2_000_000, "tcp.recovery": "sack", "flows.0.count": 7, "link.queue.limit_pkts": 9}
    )
    config = changed.to_dict()
    assert config["link"]["rate_bps"] == 2_000_000
    assert config["tcp"]["recovery"] == "sack"
    assert config["flows"][0]["count"] == 7
    assert config["link"]["queue"]["limit_pkts"] == 9
    assert base.to_dict()["tcp"]["recovery"] == "newreno"  # the original is untouched
    assert changed.with_overrides({"flows[0].count": 4}).to_dict()["flows"][0]["count"] == 4


def test_override_into_a_missing_list_entry_is_a_config_error():
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict(SMALL).with_overrides({"flows.3.count": 1})
    assert caught.value.field == "flows.3.count"


def test_invalid_override_is_a_config_error():
    with pytest.raises(ConfigError):
        Scenario.from_dict(SMALL).with_overrides({"tcp.recovery": "vegas"})


# ------------------------------------------------------------------- simulate


@pytest.fixture(scope="module")
def small_result():
    return smallpipe.simulate(SMALL)


def test_result_tables_have_the_schemas(small_result):
    assert small_result.flows.schema == FLOWS_SCHEMA
    assert small_result.slices.schema == SLICES_SCHEMA
    assert small_result.links.schema == LINKS_SCHEMA
    assert small_result.bursts.schema == BURSTS_SCHEMA
    assert small_result.bursts.height == 0  # bulk flows only: empty, yet typed


def test_result_shapes_follow_the_scenario(small_result):
    meta = small_result.meta
    assert meta["seed"] == 3
    assert meta["duration_ns"] == 10_000_000_000
    assert meta["slice_ns"] == 2_000_000_000
    assert small_result.flows.height == 4
    assert small_result.flows.get_column("app").to_list() == ["bulk"] * 4
    assert small_result.flows.get_column("end_ns").null_count() == 4  # bulk flows never finish
    assert small_result.slices.height == 4 * 5  # dense: 4 flows × 10 s / 2 s
    assert set(small_result.links.get_column("name")) >= {"bottleneck"}


def test_slices_add_up_to_delivered_bytes(small_result):
    per_flow = small_result.slices.group_by("flow_id").agg(pl.col("bytes").sum())
    joined = small_result.flows.join(per_flow, on="flow_id")
    assert joined.height == 4
    assert (joined.get_column("bytes") == joined.get_column("bytes_delivered")).all()
    assert joined.get_column("bytes").sum() > 0


def test_bottleneck_counters_are_consistent(small_result):
    link = small_result.links.filter(pl.col("name") == "bottleneck").row(0, named=True)
    duration_s = small_result.meta["duration_ns"] / 1e9
    assert link["tx_bytes"] * 8 <= link["rate_bps"] * duration_s * 1.001
    assert link["utilization"] == pytest.approx(
        link["tx_bytes"] * 8 / (link["rate_bps"] * duration_s), rel=1e-6
    )
    assert link["dropped_pkts"] <= link["arrived_pkts"]
    drops_by_reason = sum(link[c] for c in link if c.startswith("drop_"))
    assert drops_by_reason == link["dropped_pkts"]
    delivered_bits = small_result.flows.get_column("bytes_delivered").sum() * 8
    assert delivered_bits <= link["tx_bytes"] * 8


def test_same_seed_same_result(small_result):
    again = smallpipe.simulate(Scenario.from_dict(SMALL))
    assert again.flows.equals(small_result.flows)
    assert again.slices.equals(small_result.slices)


def test_simulate_accepts_a_path():
    result = smallpipe.simulate(str(EXAMPLES / "interactive.toml"))
    assert result.scenario == Scenario.from_toml(EXAMPLES / "interactive.toml")
    assert result.flows.get_column("app").to_list() == ["interactive"]
    assert result.bursts.height > 0


def test_write_and_read_round_trip(small_result, tmp_path):
    directory = small_result.write(tmp_path / "run")
    for name in (
        "flows.parquet",
        "slices.parquet",
        "links.parquet",
        "bursts.parquet",
        "meta.json",
        "scenario.json",
    ):
        assert (directory / name).is_file()
    back = Result.read(directory)
    assert back.flows.equals(small_result.flows)
    assert back.slices.equals(small_result.slices)
    assert back.links.equals(small_result.links)
    assert back.bursts.schema == BURSTS_SCHEMA
    assert back.meta == small_result.meta
    assert back.scenario == small_result.scenario


def test_a_run_written_before_a_table_or_column_existed_still_reads(small_result, tmp_path):
    directory = small_result.write(tmp_path / "old")
    (directory / "sender_epochs.parquet").unlink()
    small_result.flows.drop("timeouts_repeated").write_parquet(directory / "flows.parquet")
    back = Result.read(directory)
    assert back.sender_epochs.is_empty()
    assert back.flows["timeouts_repeated"].null_count() == back.flows.height
    assert back.flows.drop("timeouts_repeated").equals(small_result.flows.drop("timeouts_repeated"))


def test_timer_wheel_hz_takes_only_linux_s_hz_values():
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict({**SMALL, "tcp": {"timer_wheel_hz": 200}})
    assert caught.value.field == "tcp.timer_wheel_hz"
    assert "200" in caught.value.value
    assert "250" in caught.value.allowed and "1000" in caught.value.allowed
    assert Scenario.from_dict({**SMALL, "tcp": {"timer_wheel_hz": 250}}).to_dict()["tcp"]["timer_wheel_hz"] == 250


def test_sack_rearms_rto_needs_rack_and_linux_s_rtt_samples():
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict({**SMALL, "tcp": {"sack_rearms_rto": True}})
    assert caught.value.field == "tcp.sack_rearms_rto"
    assert "rack" in caught.value.allowed and "every_ack" in caught.value.allowed
    linux = Scenario.from_dict({**SMALL, "tcp": {"stack": "linux", "sack_rearms_rto": True}})
    assert linux.to_dict()["tcp"]["sack_rearms_rto"] is True
    # Left out of the canonical form at its default: scenarios without it keep their ids.
    assert "sack_rearms_rto" not in Scenario.from_dict(SMALL).to_dict()["tcp"]


def test_the_linux_stack_takes_the_heads_cap_and_the_sacks_re_arm_where_their_needs_are_met():
    # tcp_schedule_loss_probe's cap and tcp_clean_rtx_queue's re-arm are Linux's; a table
    # that turns off what they need (RACK, probes, an RTT sample on every ACK) keeps each
    # at its default instead of being refused.
    def tcp(**knobs):
        return Scenario.from_dict({**SMALL, "tcp": {"stack": "linux", **knobs}}).to_dict()["tcp"]

    assert tcp()["tlp_rto_from_head"] is True and tcp()["sack_rearms_rto"] is True
    dupthresh = tcp(loss_detection="dupthresh")
    assert dupthresh.get("tlp_rto_from_head", False) is False and dupthresh.get("sack_rearms_rto", False) is False
    assert tcp(tail_loss_probe=False).get("tlp_rto_from_head", False) is False
    assert tcp(tail_loss_probe=False)["sack_rearms_rto"] is True
    assert tcp(rtt_samples="timed").get("sack_rearms_rto", False) is False
    # The RFC stack leaves both off, and out of its canonical form.
    rfc = Scenario.from_dict(SMALL).to_dict()["tcp"]
    assert "tlp_rto_from_head" not in rfc and "sack_rearms_rto" not in rfc
