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
import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ccgym._errors import ScenarioError, invalid_json, not_utf8
from ccgym.units import parse_time_ps

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "CONFIG_DIR",
    "ORDER_RULES",
    "VALUE_RULES",
    "ConfigSource",
    "check_keys",
    "check_order",
    "check_values",
    "load_config",
    "merge_config",
    "parse_time_ps",
    "read_config",
]

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


# --------------------------------------------------------------------------------------------
# Values: type and range of the numeric settings

Check = Callable[[Any, Any], "str | None"]
"""A value rule: ``(value, default) -> why it is refused``, or None."""


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and math.isfinite(v) and v.is_integer()
    )


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _count(lo: int) -> Check:
    def check(v: Any, default: Any) -> str | None:
        return None if _is_int(v) and v >= lo else f"must be an integer >= {lo}"

    return check


def _real(lo: float | None = None, hi: float | None = None, *, open_lo: bool = False) -> Check:
    if lo is None:
        want = "a finite number"
    elif hi is None:
        want = f"a number {'>' if open_lo else '>='} {lo:g}"
    else:
        want = f"a number in {'(' if open_lo else '['}{lo:g}, {hi:g}]"

    def check(v: Any, default: Any) -> str | None:
        if not _is_real(v):
            return f"must be {want}"
        if lo is not None and (v < lo or (open_lo and v == lo)):
            return f"must be {want}"
        if hi is not None and v > hi:
            return f"must be {want}"
        return None

    return check


def _time(*, positive: bool) -> Check:
    def check(v: Any, default: Any) -> str | None:
        if v == "" and default == "":  # "" = the scenario's own duration (impala)
            return None
        try:
            ps = parse_time_ps(v)
        except ValueError as e:
            return f"not a time ({e})"
        return "must be longer than 0" if positive and ps <= 0 else None

    return check


def _times(v: Any, default: Any) -> str | None:
    if not isinstance(v, list) or len(v) != 2:
        return 'must be two times, e.g. ["1ms", "2ms"]'
    for t in v:
        why = _time(positive=False)(t, None)
        if why:
            return f"{t!r}: {why}"
    if parse_time_ps(v[0]) > parse_time_ps(v[1]):
        return "the first time must not be after the second"
    return None


def _widths(v: Any, default: Any) -> str | None:
    if not isinstance(v, list) or not all(_is_int(h) and h >= 1 for h in v):
        return "must be a list of layer widths (integers >= 1)"
    return None


VALUE_RULES: dict[str, Check] = {
    # counts: a value below 1 trains nothing (or cannot run)
    **{
        k: _count(1)
        for k in (
            "updates",
            "episodes",
            "env_steps",
            "epochs",
            "minibatches",
            "rollout_length",
            "rollouts_per_update",
            "max_rollouts_per_update",
            "envs_per_scenario",
            "envs_per_runner",
            "unroll",
            "batch",
            "warmup_length",
            "max_step_size",
            "max_batch_size",
            "torch_threads",
            "buffer_size",
            "batch_size",
            "train_every",
            "updates_per_step",
            "target_every",
            "eps_decay_steps",
        )
    },
    # 0 = off, all or none
    **{
        k: _count(0)
        for k in (
            "seed",
            "checkpoint_every",
            "warmup_updates",
            "loss_batch",
            "batch_steps",
            "learning_starts",
            "env_runners",  # IMPALA: 0 samples in the driver, with no actor to start
        )
    },
    # probabilities, discounts and smoothing factors
    **{
        k: _real(0.0, 1.0)
        for k in (
            "gamma",
            "gae_lambda",
            "baseline_momentum",
            "rmsprop_alpha",
            "momentum",
            "eps_start",
            "eps_end",
            "epsilon",
        )
    },
    "tau": _real(0.0, 1.0, open_lo=True),
    # rates and other positive scales
    **{
        k: _real(0.0, open_lo=True)
        for k in ("lr", "adam_eps", "rmsprop_eps", "clip", "clip_value", "rho_bar", "c_bar")
    },
    # weights, clips and wall times where 0 turns the thing off
    **{
        k: _real(0.0)
        for k in (
            "ent_coef",
            "vf_coef",
            "entropy_cost",
            "baseline_cost",
            "max_grad_norm",
            "grad_clip",
            "signal_clip",
            "max_wall_s",
            "stall_s",
            "min_time_s_per_iteration",
        )
    },
    # simulated times (the scenario's units)
    "episode": _time(positive=True),
    "duration": _time(positive=True),
    "warmup": _time(positive=False),
    "window_start": _time(positive=False),
    "start": _times,
    "hidden": _widths,
}
"""The settings of the trainers' tables checked by :func:`check_values`, by key (the same key
means the same kind of value in every trainer): each gives why a value is refused, or None."""


ORDER_RULES: tuple[tuple[str, str, str], ...] = (
    ("eps_end", "eps_start", "epsilon decays from eps_start down to eps_end"),
)
"""``(low, high, why)``: two keys of one table where ``low`` must not be above ``high``
(checked by :func:`check_order` on the table with its defaults)."""


def check_order(table: Mapping[str, Any], section: str, name: str) -> None:
    """Refuses a table (the given keys over their defaults) where a key of
    :data:`ORDER_RULES` is above its partner: a :class:`~ccgym.ScenarioError` naming the
    config and both ``table.key``s with their values. Keys the table does not hold, or that
    are not numbers (refused elsewhere), are not compared."""
    for low, high, why in ORDER_RULES:
        a, b = table.get(low), table.get(high)
        if _is_real(a) and _is_real(b) and a > b:
            raise ScenarioError(
                f"training config {name}: {section}.{low} = {json.dumps(a)} is above "
                f"{section}.{high} = {json.dumps(b)}: {why}"
            )


def _by_type(v: Any, default: Any) -> str | None:
    """A setting without a rule keeps its default's type (a flag stays a flag, a number a
    number)."""
    if isinstance(default, bool):
        return None if isinstance(v, bool) else "must be true or false"
    if isinstance(default, int):
        return None if _is_int(v) else "must be an integer"
    if isinstance(default, float):
        return None if _is_real(v) else "must be a finite number"
    if isinstance(default, str):
        return None if isinstance(v, str) else "must be a string"
    return None


def check_values(config: Mapping[str, Any], defaults: Mapping[str, Any], name: str) -> None:
    """Refuses a setting of a trainer's table (``[train]``, ``[ppo]``, ``[impala]``, ``[ddqn]``,
    ...) of the wrong type or out of range (:data:`VALUE_RULES`; a key without a rule must have
    its default's type): counts at least 1, discounts and probabilities in [0, 1], rates
    above 0, simulated times in the scenario's units; pairs of keys in order
    (:data:`ORDER_RULES`: ``eps_end`` not above ``eps_start``). Raises
    :class:`~ccgym.ScenarioError` naming the config, ``table.key`` and the value. The
    ``[agent]`` tables (the simulator checks them) and the lists of scenarios (their trainer
    does) are not looked at."""
    for section, table in config.items():
        if section in FREE_TABLES or not isinstance(table, Mapping):
            continue
        default_table = defaults.get(section)
        default_table = default_table if isinstance(default_table, Mapping) else {}
        for key, value in table.items():
            default = default_table.get(key)
            rule = VALUE_RULES.get(key)
            why = rule(value, default) if rule is not None else _by_type(value, default)
            if why:
                shown = json.dumps(value, default=str, ensure_ascii=False)
                raise ScenarioError(f"training config {name}: {section}.{key} = {shown}: {why}")
        if any(key in table for low, high, _ in ORDER_RULES for key in (low, high)):
            check_order({**default_table, **table}, section, name)


def load_config(config: ConfigSource | None, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The full config of a run: ``config`` (see :func:`read_config`; None: nothing) merged
    over ``defaults`` (a trainer's ``DEFAULT_CONFIG``, or a checkpoint's config on resume).
    Sections and keys the defaults do not have are refused (:func:`check_keys`), and so are
    values of the wrong type or out of range (:func:`check_values`)."""
    if config is None:
        return merge_config(defaults, None)
    given = read_config(config)
    name = "(dict)" if isinstance(config, Mapping) else str(config)
    check_keys(given, defaults, name)
    check_values(given, defaults, name)
    return merge_config(defaults, given)
