"""Scenarios: a simulation's whole configuration, validated by the Rust core.

The schema lives in Rust (``smallpipe._smallpipe.validate_config``); this module only
reads TOML, applies overrides and keeps the canonical dict (every default filled in)
that the core returns. A :class:`Scenario` is therefore always valid.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from smallpipe import _smallpipe
from smallpipe._smallpipe import ConfigError

__all__ = ["Scenario"]


def _config_error(field: str, value: str, allowed: str) -> ConfigError:
    """Build a ConfigError in the native message format."""
    error = ConfigError(f"{field}: {value} is not allowed; expected {allowed}")
    error.field, error.value, error.allowed = field, value, allowed
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
        canonical_json = _smallpipe.validate_config(json.dumps(config))
        self._config: dict[str, Any] = json.loads(canonical_json)

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> Scenario:
        """Validate a scenario given as a (nested) mapping."""
        return cls(**config)

    @classmethod
    def from_toml(cls, path: str | PathLike[str]) -> Scenario:
        """Read and validate a TOML scenario file.

        Raises:
            FileNotFoundError: ``path`` does not exist.
            ConfigError: the file is not valid TOML (``field == "<file>"``, the
                message gives the line and column) or a field is invalid.
        """
        path = Path(path)
        try:
            with path.open("rb") as file:
                config = tomllib.load(file)
        except FileNotFoundError:
            raise FileNotFoundError(f"scenario file not found: {path}") from None
        except tomllib.TOMLDecodeError as error:
            raise _config_error("<file>", f"{path} ({error})", "a valid TOML file") from None
        # A replayed log's path is relative to the scenario file, not to the working directory.
        for group in config.get("flows", []):
            if isinstance(group, dict) and isinstance(group.get("log_path"), str):
                group["log_path"] = str((path.parent / group["log_path"]).resolve())
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
        """
        config = self.to_dict()
        for dotted_path, value in overrides.items():
            _set_path(config, dotted_path, value)
        return Scenario.from_dict(config)

    def __getitem__(self, key: str) -> Any:
        """A top-level section or value, e.g. ``scenario["link"]["rate_bps"]``."""
        return copy.deepcopy(self._config[key])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self._config == other._config

    def __repr__(self) -> str:
        return f"Scenario({self._config!r})"
