"""Training configs: TOML (or JSON) tables merged over a trainer's defaults.

A trainer has a ``DEFAULT_CONFIG`` dict of tables (``[train]``, ``[agent]``, its algorithm's
table, ...). A config given by the user (a dict, a file, or the name of a bundled config in
``ccgym/configs/``) is deep-merged over it: tables merge key by key, any other value replaces
the default. A resumed run starts from the config saved in its checkpoint instead, so that it
rebuilds the networks it saved; a config given then only changes what it names (e.g.
``train.updates``).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccgym._errors import ScenarioError, invalid_json, not_utf8

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["CONFIG_DIR", "ConfigSource", "load_config", "merge_config", "read_config"]

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
"""Bundled training configs (``ccgym/configs/<name>.toml``)."""

ConfigSource = Mapping[str, Any] | str | os.PathLike[str]
"""A config dict, a TOML or JSON file, or a bundled config name (``ppo-gaussian``)."""


def merge_config(base: Mapping[str, Any], override: Mapping[str, Any] | None) -> dict[str, Any]:
    """Deep-merge ``override`` into a copy of ``base`` (tables merge, other values replace)."""
    out = copy.deepcopy(dict(base))
    for key, value in (override or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_config(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_config(source: ConfigSource) -> dict[str, Any]:
    """The tables of a config as given: a dict (copied), a ``.toml`` or ``.json`` file (the
    ``config.json`` of a run folder), or a bundled name (``adpg-default`` ->
    ``ccgym/configs/adpg-default.toml``).

    Raises:
        FileNotFoundError: neither a file nor a bundled config of that name.
        ScenarioError: the file is not valid TOML (JSON) or not a table; the message names the
            file, and the line and column where the parser gives them.
    """
    if isinstance(source, Mapping):
        return copy.deepcopy(dict(source))
    path = Path(source)
    if not path.is_file():
        bundled = CONFIG_DIR / f"{source}.toml"
        if "/" in str(source) or not bundled.is_file():
            raise FileNotFoundError(f"training config not found: {source}")
        path = bundled
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            config = json.loads(text)
        else:
            config = tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise not_utf8(f"training config {path}", e) from None
    except json.JSONDecodeError as e:
        raise invalid_json(f"training config {path}", e) from None
    except tomllib.TOMLDecodeError as e:  # the message ends with "(at line L, column C)"
        raise ScenarioError(f"training config {path}: invalid TOML: {e}") from None
    if not isinstance(config, dict):
        raise ScenarioError(
            f"training config {path}: holds a {type(config).__name__}, not a table of tables"
        )
    return config


def load_config(config: ConfigSource | None, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The full config of a run: ``config`` (see :func:`read_config`; None: nothing) merged
    over ``defaults`` (a trainer's ``DEFAULT_CONFIG``, or a checkpoint's config on resume)."""
    return merge_config(defaults, None if config is None else read_config(config))
