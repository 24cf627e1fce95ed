"""Scenarios: a simulation's whole configuration, validated by the Rust core.

The schema lives in Rust (``smallpipe._smallpipe.validate_config``); this module only
reads TOML, applies overrides and keeps the canonical dict (every default filled in)
that the core returns. A :class:`Scenario` is therefore always valid.
"""

from __future__ import annotations

import copy
import json
import math
import re
import tomllib
import warnings
from collections.abc import Iterator, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from smallpipe import _smallpipe
from smallpipe._smallpipe import ConfigError
from smallpipe.errors import OverrideNote
from smallpipe.errors import config_error as _config_error
from smallpipe.guard import check_memory

__all__ = ["Scenario", "apply_overrides", "check_simulable", "read_toml", "stack_defaults", "tcp_departures", "validate"]

_NON_FINITE_STAND_IN = -1e308
"""What a NaN or infinity is validated as (JSON has neither): a finite number below
every range, so the field's own check names what it allows."""


def _non_finite_paths(node: Any, path: str = "") -> list[tuple[str, float]]:
    """Paths (in the core's ``flows[0].rtt_ms`` form) of every NaN and infinity in ``node``."""
    if isinstance(node, float) and not math.isfinite(node):
        return [(path, node)]
    if isinstance(node, Mapping):
        return [found for key, value in node.items() for found in _non_finite_paths(value, f"{path}.{key}" if path else str(key))]
    if isinstance(node, list):
        return [found for i, value in enumerate(node) for found in _non_finite_paths(value, f"{path}[{i}]")]
    return []


def _finite_stand_ins(node: Any) -> Any:
    if isinstance(node, float) and not math.isfinite(node):
        return _NON_FINITE_STAND_IN
    if isinstance(node, Mapping):
        return {key: _finite_stand_ins(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_finite_stand_ins(value) for value in node]
    return node


def _to_json(config: Mapping[str, Any]) -> str:
    """``config`` as JSON for the core: NaN and infinities as the stand-in, TOML dates and
    times as strings (the core then names the field that does not take one)."""
    return json.dumps(_finite_stand_ins(config), default=str)


_WHOLE_FLOAT_MAX = 2.0**53
"""Up to here every whole float is exactly an integer."""


def _whole_numbers(node: Any) -> Any:
    """``node`` with every whole float (``2e1``, ``20.0``) as an int: TOML reads ``2e1`` as a
    float, and a count must not be refused as not whole while a rate written the same way
    is taken. Fields that take a float take the int alike."""
    if isinstance(node, float) and node.is_integer() and abs(node) < _WHOLE_FLOAT_MAX:
        return int(node)
    if isinstance(node, Mapping):
        return {key: _whole_numbers(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_whole_numbers(value) for value in node]
    return node


_ANY_WHOLE_NUMBER = "a whole number from 0 to "
"""How the core names an integer field's type when a value is not one (its type's range,
not the field's)."""


def _clearer_error(config: dict[str, Any], error: ConfigError) -> ConfigError | None:
    """A message that blames the field the user set and states its own range, where the
    core's does not: a type error on an integer field gives the type's range (``0 to
    4294967295``) where the field allows less (``count``: 1 to 1000000), and the RTO bounds
    are checked as ``max_rto_ms >= min_rto_ms`` (so a huge ``min_rto_ms`` blamed the default
    ``max_rto_ms``). None when the core's message stands."""
    field, allowed = getattr(error, "field", ""), getattr(error, "allowed", "")
    if allowed.startswith(_ANY_WHOLE_NUMBER):
        probe = copy.deepcopy(config)
        try:
            _set_path(probe, _dotted(field), 0)
            _smallpipe.validate_config(_to_json(probe))
        except ConfigError as own:
            if getattr(own, "field", "") == field and getattr(own, "allowed", "") != allowed:
                return _config_error(field, getattr(error, "value", ""), own.allowed)
        return None
    table, _, key = _dotted(field).rpartition(".")
    if key == "max_rto_ms" and allowed.endswith(">= min_rto_ms"):
        raw = _get_path(config, table)
        default_max = json.loads(_smallpipe.validate_config('{"flows": [{"app": "bulk"}]}'))["tcp"]["max_rto_ms"]
        # The bound left at its default (or unset) is not the one the user moved.
        if isinstance(raw, dict) and "min_rto_ms" in raw and raw.get("max_rto_ms", default_max) == default_max:
            at = field.rpartition(".")[0]
            return _config_error(f"{at}.min_rto_ms", f"{raw['min_rto_ms']:g}",
                                 f"a positive number of ms at most max_rto_ms ({getattr(error, 'value', '')} ms)")
    return None


def validate(config: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical form of ``config`` (every default filled in), checked by the core and
    by the memory guard; raises ConfigError naming the field (a NaN or infinity by name)."""
    config = _whole_numbers(config)
    non_finite = _non_finite_paths(config)
    try:
        canonical: dict[str, Any] = json.loads(_smallpipe.validate_config(_to_json(config)))
    except ConfigError as error:
        clearer = _clearer_error(dict(config), error)
        field = getattr(clearer or error, "field", "")
        for path, value in non_finite:
            if path == field or path.startswith((f"{field}[", f"{field}.")):
                raise _non_finite_error(field, value, getattr(clearer or error, "allowed", "a finite number")) from None
        if clearer is not None:
            raise clearer from None
        if getattr(error, "value", "") == "this value":  # serde could not say which: show it
            shown = json.dumps(_get_path(dict(config), _dotted(field)), default=str)
            raise _config_error(field, shown, getattr(error, "allowed", "")) from None
        raise
    if non_finite:  # a field without a range check took the stand-in
        path, value = non_finite[0]
        raise _non_finite_error(path, value, "a finite number")
    check_memory(canonical)
    return canonical


def _non_finite_error(field: str, value: float, allowed: str) -> ConfigError:
    name = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    error = ConfigError(f"{field}: {name} is not a number; expected {allowed}")
    error.field, error.value, error.allowed = field, name, allowed
    return error


def _set_path(config: dict[str, Any], dotted_path: str, value: Any) -> None:
    """Set ``config[a][b][c] = value`` for ``dotted_path = "a.b.c"``, in place.

    A component that walks into a list is an index: ``"flows.0.count"``, also
    written ``"flows[0].count"`` as in the core's error messages. Missing tables on
    the way are created (the core then rejects unknown fields).
    """
    keys = re.sub(r"\[(\d+)\]", r".\1", dotted_path).split(".")
    node: Any = config
    for depth, key in enumerate(keys):
        is_leaf = depth == len(keys) - 1
        index: str | int = key
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                where = ".".join(keys[:depth])
                allowed = f"an index below {len(node)} into the list {where}"
                raise _config_error(dotted_path, key, allowed)
            index = int(key)
        elif isinstance(node, dict):
            if not is_leaf:
                node.setdefault(key, {})
        else:
            where = ".".join(keys[:depth])
            raise _config_error(dotted_path, repr(value), f"a path into tables, but {where} is a value")
        if is_leaf:
            node[index] = value
        else:
            node = node[index]


def _dotted(path: str) -> str:
    """``flows[0].x`` (the core's form) as ``flows.0.x`` (the overrides' form)."""
    return re.sub(r"\[(\d+)\]", r".\1", path)


def apply_overrides(config: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """Set every dotted path of ``overrides`` in ``config``, in place.

    Where an override changes a table's ``kind`` (a discipline), the keys the table had
    before that the new kind does not take are removed (as the core reports them
    unknown), with one :class:`OverrideNote` warning per table naming those that differed
    from the old kind's defaults; keys the overrides set themselves are never removed.
    Raises ConfigError for a bad path.
    """
    _switch_stack(config, overrides)
    switched: dict[str, tuple[str, str, set[str]]] = {}  # table path -> old kind, new kind, its old keys
    order: dict[str, list[str]] = {}  # table path -> its keys before the switch, in order
    for dotted_path, value in overrides.items():
        table_path, _, last = _dotted(dotted_path).rpartition(".")
        if last == "kind" and table_path:
            table = _get_path(config, table_path)
            if isinstance(table, dict) and "kind" in table and table["kind"] != value:
                switched[table_path] = (str(table["kind"]), str(value), set(table) - {"kind"})
                order[table_path] = list(table)
        _set_path(config, dotted_path, value)
    if not switched:
        return
    for dotted_path in overrides:
        table_path, _, key = _dotted(dotted_path).rpartition(".")
        if table_path in switched:
            switched[table_path][2].discard(key)
    dropped: dict[str, dict[str, Any]] = {table_path: {} for table_path in switched}
    while True:
        try:
            _smallpipe.validate_config(_to_json(config))
            break
        except ConfigError as error:
            table_path, _, key = _dotted(getattr(error, "field", "")).rpartition(".")
            if getattr(error, "value", "") != "an unknown field" or key not in switched.get(table_path, ("", "", set()))[2]:
                break  # another error: the caller's validation reports it
            switched[table_path][2].discard(key)
            table = _get_path(config, table_path)
            assert isinstance(table, dict)
            dropped[table_path][key] = table.pop(key)
    for table_path, keys in dropped.items():
        old_kind, new_kind, _ = switched[table_path]
        # The old kind's defaults (the canonical form has them all) were no one's choice;
        # the rest are listed in the table's order, not in the order the core found them.
        defaults = _queue_defaults(old_kind)
        chosen = {key: value for key, value in keys.items() if value is not None and defaults.get(key) != value}
        chosen = {key: chosen[key] for key in order[table_path] if key in chosen}
        if chosen:
            listed = ", ".join(f"{key} = {json.dumps(value)}" for key, value in chosen.items())
            warnings.warn(
                f"{table_path}.kind = {json.dumps(new_kind)}: dropped {old_kind}'s {listed} "
                f"({new_kind} does not take {'it' if len(chosen) == 1 else 'them'})",
                OverrideNote,
                stacklevel=3,  # the caller of with_overrides or load_grid
            )


def _switch_stack(config: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """Where the overrides change ``tcp.stack``, the new stack takes over: every knob a stack
    decides (``TCP_STACK_KNOBS``, and ``TCP_NS2_STACK_KNOBS`` to or from ns2) that the same overrides do not set is removed from
    ``[tcp]``, so the core fills it with the new stack's value. Asking for a stack means its
    rules, whatever the file chose for the old one (``recovery = "newreno"`` of an RFC
    scenario under ``stack = "linux"``); set a knob in the same overrides to keep it. A
    group's ``flows.N.tcp.stack`` needs nothing here: the core applies it to the group."""
    new_stack = next((v for k, v in overrides.items() if _dotted(k) == "tcp.stack"), None)
    tcp = config.get("tcp")
    if new_stack is None or not isinstance(tcp, dict) or tcp.get("stack", "rfc") == new_stack:
        return
    set_here = {_dotted(k).removeprefix("tcp.") for k in overrides if _dotted(k).startswith("tcp.")}
    # The knobs only ns2 decides (its delayed ACKs, timestamps, timer, window) are the
    # stack's only when ns2 is switched to or from.
    ns2 = "ns2" in (new_stack, tcp.get("stack", "rfc"))
    decided = [*_smallpipe.TCP_STACK_KNOBS, *(_smallpipe.TCP_NS2_STACK_KNOBS if ns2 else [])]
    for key in [k for k in decided if k in tcp and k not in set_here]:
        del tcp[key]


def stack_defaults(stack: str) -> dict[str, Any]:
    """Every ``[tcp]`` knob's default under ``stack`` ("rfc", "ns3", "linux", "ns2"), as the
    canonical form writes it. Raises ConfigError for a name that is not a stack."""
    tcp: dict[str, Any] = _minimal_canonical(tcp={"stack": stack})["tcp"]
    return tcp


def tcp_departures(tcp: Mapping[str, Any]) -> dict[str, Any]:
    """The knobs of a canonical ``[tcp]`` table whose values are not its stack's defaults."""
    stack = str(tcp.get("stack", "rfc"))
    defaults = stack_defaults(stack)
    if stack == "ns2" and "packet_size_bytes" in tcp:
        # ns2's receiver window is window_ packets of this table's MSS, not of the default's.
        sized = _minimal_canonical(tcp={"stack": stack, "packet_size_bytes": tcp["packet_size_bytes"]})["tcp"]
        defaults["rwnd_bytes"] = sized["rwnd_bytes"]
    return {key: value for key, value in tcp.items() if key != "stack" and defaults.get(key) != value}


def _queue_defaults(kind: str) -> dict[str, Any]:
    """Every key of the discipline ``kind`` with its default ({} if it has no defaults alone)."""
    try:
        queue: dict[str, Any] = _minimal_canonical(link={"queue": {"kind": kind}})["link"]["queue"]
        return queue
    except ConfigError:
        return {}


def _minimal_canonical(**sections: Any) -> dict[str, Any]:
    """The canonical form of the smallest scenario (one bulk flow) with ``sections`` set:
    where a table's defaults under some choice (a discipline, a stack) are read."""
    canonical: dict[str, Any] = json.loads(_smallpipe.validate_config(json.dumps({"flows": [{"app": "bulk"}], **sections})))
    return canonical


def _get_path(config: dict[str, Any], dotted_path: str) -> Any:
    """The value at ``dotted_path`` (``flows.0.x``), or None where the path does not lead."""
    node: Any = config
    for key in dotted_path.split("."):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def read_toml(path: str | PathLike[str]) -> dict[str, Any]:
    """A scenario file's table as written (not validated), a replayed log's path made
    relative to the file; raises as :meth:`Scenario.from_toml`."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            config = tomllib.load(file)
    except FileNotFoundError:
        raise FileNotFoundError(f"scenario file not found: {path}") from None
    except IsADirectoryError:
        raise _config_error("<file>", f"{path} (a directory)", "a scenario .toml file") from None
    except PermissionError:
        raise _config_error("<file>", f"{path} (not readable)", "a readable scenario .toml file") from None
    except UnicodeDecodeError as error:
        where = f"byte 0x{error.object[error.start]:02x} at offset {error.start}"
        raise _config_error("<file>", f"{path} (not text: {where})", "a UTF-8 TOML file") from None
    except tomllib.TOMLDecodeError as error:
        raise _config_error("<file>", f"{path} ({error})", "a valid TOML file") from None
    # A replayed log's path is relative to the scenario file, not to the working directory.
    for group in config.get("flows", []):
        if isinstance(group, dict) and isinstance(group.get("log_path"), str):
            group["log_path"] = str((path.parent / group["log_path"]).resolve())
    # So are the link's delivery traces.
    link = config.get("link")
    if isinstance(link, dict):
        for key in ("trace", "reverse_trace"):
            if isinstance(link.get(key), str):
                link[key] = str((path.parent / link[key]).resolve())
    return config


class Scenario:
    """A validated simulation scenario.

    Build one from a TOML file (:meth:`from_toml`), a dict (:meth:`from_dict`) or
    keyword arguments with the same keys as the TOML file::

        Scenario(seed=1, duration_s=60.0, link={"rate_bps": 1_000_000},
                 flows=[{"count": 10, "app": "bulk", "rtt_ms": 200.0}])

    Construction calls the Rust validator, so an invalid scenario raises
    :class:`~smallpipe.ConfigError` naming the field. Values are passed through as
    given (a float where the core wants an integer is the core's call).
    """

    def __init__(self, **config: Any) -> None:
        self._config: dict[str, Any] = validate(config)

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> Scenario:
        """Validate a scenario given as a (nested) mapping."""
        return cls(**config)

    @classmethod
    def from_toml(cls, path: str | PathLike[str], overrides: Mapping[str, Any] | None = None) -> Scenario:
        """Read and validate a TOML scenario file, with ``overrides`` (dotted paths, as
        :meth:`with_overrides` takes them) applied first: the file is checked as changed,
        so a run the memory guard refuses can be made to fit (``duration_s``, ``slice_s``).

        Raises:
            FileNotFoundError: ``path`` does not exist.
            ConfigError: the file is not valid TOML (``field == "<file>"``, the
                message gives the line and column) or a field is invalid.
        """
        config = read_toml(path)
        if overrides:
            apply_overrides(config, overrides)
        return cls.from_dict(config)

    def to_dict(self) -> dict[str, Any]:
        """The canonical configuration (all defaults filled in), as a fresh copy."""
        return copy.deepcopy(self._config)

    def to_json(self) -> str:
        """The canonical configuration as JSON, as the native core takes it."""
        return json.dumps(self._config)

    def with_overrides(self, overrides: Mapping[str, Any]) -> Scenario:
        """A new validated scenario with some fields replaced.

        Keys are dotted paths into the configuration; a component that walks into a
        list is an index::

            scenario.with_overrides({"link.rate_bps": 2_000_000,
                                     "tcp.recovery": "sack",
                                     "flows.0.count": 100})

        Setting a discipline's ``kind`` (``link.queue.kind = "fq_codel"``) drops the old
        kind's keys the new kind does not take, with an :class:`~smallpipe.errors.OverrideNote`
        warning naming them.
        """
        config = self.to_dict()
        apply_overrides(config, overrides)
        return Scenario.from_dict(config)

    def __getitem__(self, key: str) -> Any:
        """A top-level section or value, e.g. ``scenario["link"]["rate_bps"]``."""
        return copy.deepcopy(self._config[key])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self._config == other._config

    def __repr__(self) -> str:
        return f"Scenario({self._config!r})"


def _queues(config: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every discipline table of a canonical scenario with its path, nested ones included."""
    def walk(path: str, table: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        if isinstance(table, dict):
            if "kind" in table:
                yield path, table
            for key, value in table.items():
                yield from walk(f"{path}.{key}", value)

    yield from walk("link.queue", config["link"]["queue"])
    yield from walk("link.reverse_queue", config["link"]["reverse_queue"])
    if (path2 := config.get("topology", {}).get("path2_queue")) is not None:
        yield from walk("topology.path2_queue", path2)


def check_simulable(scenario: Scenario) -> None:
    """Refuse what the simulator would accept and ignore (a run that silently differs from
    what was asked): ECN marking turned on where a discipline has it off by default (the
    simulated TCP has no ECN yet, so nothing is ECN-capable and the queue drops as it
    would without it), an RCP router with TCP senders (which ignore its rate), and DSCP
    class isolation with nothing marked (every packet would be in the long class). The
    testbed has no ECN limit (Linux TCP does ECN).

    Raises:
        ConfigError: naming the field, the value and what is allowed.
    """
    config = scenario.to_dict()
    for path, queue in _queues(config):
        if queue.get("ecn") is True and _queue_defaults(str(queue["kind"])).get("ecn") is False:
            raise _config_error(
                f"{path}.ecn", "true",
                "false in the simulator: its TCP has no ECN yet (nothing is ECN-capable, so the queue "
                "would drop as without ECN); the testbed runs ECN with Linux TCP",
            )
    if config["link"]["queue"]["kind"] == "rcp" and config.get("transport", "tcp") != "rcp":
        raise _config_error(
            "link.queue.kind", '"rcp"',
            'another discipline with TCP senders, or transport = "rcp": TCP ignores the rate an RCP router '
            "offers, so the queue would only be a FIFO",
        )
    marks = {group["dscp"] for group in config["flows"] if group.get("dscp") is not None}
    if config["edge"]["mark"] != "none":
        marks.add(config["edge"]["dscp"])
    for path, queue in _queues(config):
        if queue["kind"] == "class_isolation" and queue["classify"] == "dscp" and queue["short_dscp"] not in marks:
            raise _config_error(
                f"{path}.classify", '"dscp"',
                f'packets marked short_dscp = {queue["short_dscp"]} (an [edge] mark = "size_oracle" or "first_n" '
                f'with dscp = {queue["short_dscp"]}, or a flow group\'s dscp), or classify = "lifetime": '
                "with nothing marked every packet is in the long class",
            )
