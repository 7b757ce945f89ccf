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
import difflib
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

__all__ = ["CONFIG_DIR", "ConfigSource", "check_keys", "load_config", "merge_config", "read_config"]

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


FREE_TABLES = frozenset({"agent", "deploy_agent"})
"""Tables whose keys are not checked against the defaults: the ``[agent]`` table goes to the
simulator, which checks it. A table whose default is empty (``[ddqn]``) is checked by its
trainer."""


def _unknown(name: str, what: str, key: str, known: list[str]) -> ScenarioError:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ScenarioError(
        f"training config {name}: unknown {what} {key!r}{hint}; known: {', '.join(known)}"
    )


def check_keys(config: Mapping[str, Any], defaults: Mapping[str, Any], name: str) -> None:
    """Training configs are strict, as scenarios and suite files are: a section or a key that
    the trainer's defaults do not have is a mistake (``[trian]``, ``episdoes``) that would
    otherwise silently train with the default. Raises :class:`~ccgym.ScenarioError` naming the
    config, the key and the closest known one."""
    for section, value in config.items():
        if section not in defaults:
            raise _unknown(name, "section", section, list(defaults))
        default = defaults[section]
        if section in FREE_TABLES or not isinstance(default, Mapping) or not default:
            continue
        if not isinstance(value, Mapping):
            raise ScenarioError(f"training config {name}: [{section}] must be a table")
        for key in value:
            if key not in default:
                raise _unknown(name, f"key in [{section}]:", key, list(default))


def load_config(config: ConfigSource | None, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The full config of a run: ``config`` (see :func:`read_config`; None: nothing) merged
    over ``defaults`` (a trainer's ``DEFAULT_CONFIG``, or a checkpoint's config on resume).
    Sections and keys the defaults do not have are refused (:func:`check_keys`)."""
    if config is None:
        return merge_config(defaults, None)
    given = read_config(config)
    name = "(dict)" if isinstance(config, Mapping) else str(config)
    check_keys(given, defaults, name)
    return merge_config(defaults, given)
