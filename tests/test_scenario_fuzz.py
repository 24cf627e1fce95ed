"""Scenario fuzz (issue 12): random TOML-like trees built from the scenario's real key
names and junk values go through validation only (nothing is simulated). The only
exception allowed is ConfigError, and whatever validates fits the memory guard."""

import os
import re
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

from smallpipe import ConfigError, Scenario
from smallpipe.guard import LIMIT_ENV, estimate_memory, memory_limit_bytes

RUST_NAMES = re.compile(r"\b(u8|u16|u32|u64|f64|struct \w+|enum \w+)\b")
MINIMAL: dict[str, Any] = {"flows": [{"app": "bulk"}]}


def _kinds() -> list[str]:
    """The discipline kinds, as the validator lists them for an unknown one."""
    try:
        Scenario(link={"queue": {"kind": "?"}}, **MINIMAL)
    except ConfigError as error:
        return re.findall(r"`(\w+)`", str(error))
    raise AssertionError("kind '?' was accepted")


KINDS = _kinds()
CANONICAL = Scenario(**MINIMAL).to_dict()
TOP_KEYS = sorted(CANONICAL)
LINK_KEYS = sorted(CANONICAL["link"])
TCP_KEYS = sorted(CANONICAL["tcp"])
EDGE_KEYS = sorted(CANONICAL["edge"])
FLOW_KEYS = sorted(CANONICAL["flows"][0])
QUEUE_KEYS = sorted(
    {key for kind in KINDS for key in Scenario(link={"queue": {"kind": kind}}, **MINIMAL)["link"]["queue"]}
)
APPS = ["bulk", "transfer", "interactive", "session", "web", "poisson", "replay"]

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=0, max_value=2000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-6, max_value=1e7),
    st.text(max_size=8),
    st.dates() | st.times(),  # TOML has dates and times; JSON has not
    st.sampled_from(KINDS + APPS + ["fixed", "uniform", "exponential", "pareto", "empirical", "diamond"]),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=3),
    st.dictionaries(st.sampled_from(["dist", "mean", "min", "max", "value", "values", "shape"]),
                    st.floats(min_value=-10, max_value=1e6) | st.text(max_size=6), max_size=3),
)


# Mostly values of the right kind (so that many trees validate and reach the memory
# guard), now and then junk.
plausible = st.one_of(st.integers(1, 100), st.floats(0.001, 1000.0), st.booleans())


def mostly(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``strategy`` three times in four, junk otherwise."""
    return st.integers(0, 3).flatmap(lambda pick: junk if pick == 0 else strategy)


value = mostly(plausible)


def table(keys: list[str], extra: dict[str, st.SearchStrategy[Any]] | None = None) -> st.SearchStrategy[Any]:
    """A table of a few of ``keys`` (now and then an unknown key) with values of ``extra``,
    or mostly plausible ones."""
    values = {key: (extra or {}).get(key, value) for key in [*keys, "bogus_key"]}
    # A few (key, value) pairs rather than a coin per key: the fuzz draws far less per case.
    pairs = st.one_of([st.tuples(st.just(key), strategy) for key, strategy in values.items()])
    return st.lists(pairs, max_size=2).map(dict)


queue = table(QUEUE_KEYS, {"kind": mostly(st.sampled_from(KINDS))})
flow = st.tuples(mostly(st.sampled_from(APPS)), mostly(st.integers(1, 70_000)), table(FLOW_KEYS)).map(
    lambda parts: {**parts[2], "app": parts[0], "count": parts[1]}
)
scenario_tree = st.tuples(mostly(st.lists(flow, min_size=1, max_size=2)), table(
    TOP_KEYS,
    {
        "duration_s": mostly(st.floats(min_value=0.001, max_value=1e7)),
        "slice_s": mostly(st.floats(min_value=1e-4, max_value=100.0)),
        "link": mostly(table(LINK_KEYS, {"queue": mostly(queue), "reverse_queue": queue})),
        "tcp": mostly(table(TCP_KEYS)),
        "edge": mostly(table(EDGE_KEYS)),
        "topology": mostly(table(["kind", "routing", "lifetime_pkts", "path2_queue", "path2_rate_bps"],
                          {"kind": mostly(st.sampled_from(["dumbbell", "diamond"])), "path2_queue": queue})),
    },
)).map(lambda parts: {"flows": parts[0], **{k: v for k, v in parts[1].items() if k != "flows"}})
overrides = st.dictionaries(
    st.sampled_from(
        [f"link.{k}" for k in LINK_KEYS] + [f"link.queue.{k}" for k in QUEUE_KEYS] + [f"tcp.{k}" for k in TCP_KEYS]
        + [f"flows.0.{k}" for k in FLOW_KEYS] + TOP_KEYS + ["flows.1.count", "flows[0].app", "link..x", "seed.x"]
    ),
    mostly(st.sampled_from(KINDS) | plausible),
    max_size=3,
)
BASE = Scenario.from_dict(
    {"link": {"queue": {"kind": "red", "min_th_pkts": 5}}, "flows": [{"app": "bulk", "count": 10}]}
)


def check_fits(scenario: Scenario) -> None:
    limit, _ = memory_limit_bytes()
    assert estimate_memory(scenario.to_dict()).total_bytes <= limit


@pytest.mark.filterwarnings("ignore::smallpipe.errors.OverrideNote")
# A low limit, so the guard refuses many generated scenarios (it must do so as a ConfigError).
@mock.patch.dict(os.environ, {LIMIT_ENV: "400MB"})
@settings(max_examples=10_000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(tree=scenario_tree, changes=overrides)
def test_only_config_errors_and_nothing_past_the_guard(tree, changes):
    for build in (lambda: Scenario.from_dict(tree), lambda: BASE.with_overrides(changes)):
        try:
            check_fits(build())
        except ConfigError as error:
            # Field, value and what is allowed, in TOML words.
            assert " is not allowed; expected " in str(error) or " is not a number; expected " in str(error)
            assert not RUST_NAMES.search(str(error)), str(error)
