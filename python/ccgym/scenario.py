"""Loading scenarios: TOML files, bundled names, TOML strings or dicts.

The Rust side validates the scenario; this module only finds it, parses the TOML, applies
``--set``-style overrides and resolves bare workload CDF names to the package's data files.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ccgym._errors import ScenarioError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

PACKAGE_DIR = Path(__file__).resolve().parent
SCENARIO_DIR = PACKAGE_DIR / "scenarios"
WORKLOAD_DIR = PACKAGE_DIR / "data" / "workloads"

ScenarioSpec = str | os.PathLike[str] | Mapping[str, Any]
"""What :func:`load_scenario` accepts: a path, a bundled name, a TOML string or a dict."""

KeyPath = list[str | int]

_KEY_PART = re.compile(r"^([A-Za-z0-9_-]+)((?:\[\d+\])*)$")


def bundled_scenarios() -> list[str]:
    """Names of the scenarios shipped with the package (``ccgym/scenarios/<name>.toml``)."""
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))


def bundled_workloads() -> list[str]:
    """Names of the workload CDFs shipped with the package (``ccgym/data/workloads/<name>.txt``)."""
    return sorted(p.stem for p in WORKLOAD_DIR.glob("*.txt"))


def workload_description(name: str) -> str:
    """First comment line of a bundled workload CDF file (its provenance)."""
    return _first_comment(WORKLOAD_DIR / f"{name}.txt")


def scenario_description(name: str) -> str:
    """First comment line of a bundled scenario file."""
    return _first_comment(SCENARIO_DIR / f"{name}.toml")


def _first_comment(path: Path) -> str:
    with open(path, encoding="utf-8") as f:
        first = f.readline().strip()
    return first.lstrip("#").strip() if first.startswith("#") else ""


def load_scenario(
    spec: ScenarioSpec, overrides: Iterable[str] | None = None, *, cc: str | None = None
) -> tuple[dict[str, Any], Path]:
    """Load a scenario and prepare it for the simulator.

    Args:
        spec: a path to a ``.toml`` file, the name of a bundled scenario (see
            :func:`bundled_scenarios`), a TOML document as a string, or a dict (copied, not
            modified).
        overrides: ``"dotted.key=value"`` strings applied in order, e.g. ``"seed=3"``,
            ``"switch.pfc.enabled=false"``, ``"workload[0].load=0.3"``. The value is parsed as
            a TOML value and taken as a plain string when that fails (``duration=50ms``).
        cc: switch every flow to this congestion control with its default parameters (the
            scenario's ``[cc]`` table and any per-workload or per-flow ``cc`` are replaced);
            applied before ``overrides``, so ``cc.<param>=...`` overrides tune it.

    Returns:
        ``(scenario, base_dir)``: the scenario dict, with bare workload CDF names replaced by
        absolute paths, and the directory that relative paths in it are resolved against (the
        TOML file's folder, or the current directory for strings and dicts).

    Raises:
        ScenarioError: the file does not exist, the TOML is malformed (the message gives the
            file and line), an override is malformed, or a workload CDF name is unknown.
        TypeError: ``overrides`` is a string, or holds something other than strings.
    """
    if isinstance(overrides, (str, bytes)):
        # A lone string would be taken one character at a time.
        raise TypeError(f"overrides must be a list of key=value strings, e.g. [{overrides!r}]")
    data, base_dir = _read_spec(spec)
    if cc is not None:
        set_cc(data, cc)
    for text in overrides or ():
        if not isinstance(text, str):
            raise TypeError(f"an override must be a key=value string, not {text!r}")
        apply_override(data, text)
    _resolve_workload_cdfs(data, base_dir)
    _resolve_queue_policy(data)
    _resolve_policy_queues(data, base_dir)
    return data, base_dir


def set_cc(data: dict[str, Any], algorithm: str) -> None:
    """Make every flow of the scenario ``data`` use ``algorithm`` with default parameters."""
    data["cc"] = {"algorithm": algorithm}
    for w in data.get("workload") or []:
        if isinstance(w, dict):
            w.pop("cc", None)
            for f in w.get("flows") or []:
                if isinstance(f, dict):
                    f.pop("cc", None)


def _read_spec(spec: ScenarioSpec) -> tuple[dict[str, Any], Path]:
    if isinstance(spec, Mapping):
        return copy.deepcopy(dict(spec)), Path.cwd()
    if isinstance(spec, os.PathLike):
        return _read_file(Path(os.fspath(spec)))
    if not isinstance(spec, str):
        raise TypeError(f"scenario must be a path, a name, a TOML string or a dict, not {spec!r}")
    if "\n" in spec or ("=" in spec and not spec.endswith(".toml")):
        return _parse_toml(spec, "<string>"), Path.cwd()
    path = Path(spec)
    if path.is_file():
        return _read_file(path)
    if (SCENARIO_DIR / f"{spec}.toml").is_file() and "/" not in spec and os.sep not in spec:
        return _read_file(SCENARIO_DIR / f"{spec}.toml")
    if path.suffix == ".toml" or "/" in spec or os.sep in spec:
        raise ScenarioError(f"scenario file not found: {spec}")
    names = ", ".join(bundled_scenarios()) or "none"
    raise ScenarioError(
        f'unknown scenario "{spec}": no such file and no bundled scenario of that name '
        f"(bundled: {names})"
    )


def _read_file(path: Path) -> tuple[dict[str, Any], Path]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"scenario file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"cannot read scenario file {path}: {e}") from None
    data = _parse_toml(text, str(path))
    data.setdefault("name", path.stem)
    return data, path.resolve().parent


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # tomllib's message ends with "(at line L, column C)".
        raise ScenarioError(f"{source}: invalid TOML: {e}") from None


def parse_value(raw: str) -> Any:
    """Parse the value of an override as a TOML value; fall back to the raw string.

    ``"3"`` -> 3, ``"0.5"`` -> 0.5, ``"true"`` -> True, ``'["1ms", "2ms"]'`` -> list,
    ``'"x"'`` -> ``"x"``, ``"50ms"`` -> ``"50ms"``.
    """
    raw = raw.strip()
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def parse_key(key: str) -> KeyPath:
    """Split a dotted key into its parts: ``"workload[0].cdf"`` -> ``["workload", 0, "cdf"]``.

    Numeric parts address array elements too: ``"workload.0.cdf"`` is the same key.
    """
    parts: KeyPath = []
    for piece in key.strip().split("."):
        m = _KEY_PART.match(piece.strip())
        if not m:
            raise ScenarioError(f'override key "{key}": invalid part "{piece}"')
        name, indices = m.groups()
        parts.append(int(name) if name.isdigit() else name)
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", indices))
    return parts


def format_key(parts: KeyPath) -> str:
    """Inverse of :func:`parse_key`, in the canonical ``a.b[0].c`` form."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else p
    return out


def parse_override(text: str) -> tuple[KeyPath, Any]:
    """Parse ``"dotted.key=value"`` into ``(key parts, value)``; see :func:`parse_value`."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ScenarioError(f'override "{text}": expected key=value, e.g. seed=3')
    return parse_key(key), parse_value(raw)


def apply_override(data: dict[str, Any], text: str) -> None:
    """Apply one ``"dotted.key=value"`` override to ``data`` in place.

    Missing tables on the way are created; an array index may address an existing element or
    the position just past the end (which appends one).
    """
    parts, value = parse_override(text)
    node: Any = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = format_key(parts[:depth]) or "the scenario"
        if isinstance(part, int):
            if not isinstance(node, list):
                raise ScenarioError(f'override "{text}": {where} is not an array')
            if part > len(node):
                count = f"{len(node)} element" + ("" if len(node) == 1 else "s")
                raise ScenarioError(
                    f'override "{text}": index {part} out of range ({where} has {count}; '
                    f"index {len(node)} appends one)"
                )
            if part == len(node):
                node.append(None if last else {})
        else:
            if not isinstance(node, dict):
                raise ScenarioError(f'override "{text}": {where} is not a table')
            if not last and part not in node:
                node[part] = [] if isinstance(parts[depth + 1], int) else {}
        if last:
            node[part] = value
        else:
            node = node[part]


def _resolve_queue_policy(data: dict[str, Any]) -> None:
    """A bare ``agent.queue_policy`` name (no folder, no ``.json``) is a bundled policy
    (``ccgym/policies/<name>.json``), replaced by its absolute path; a path is left to the
    simulator, which reads it relative to the scenario's folder."""
    agent = data.get("agent")
    if not isinstance(agent, dict) or not isinstance(agent.get("queue_policy"), str):
        return
    name: str = agent["queue_policy"]
    if not name or "/" in name or "\\" in name or name.endswith(".json"):
        return
    path = PACKAGE_DIR / "policies" / f"{name}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (PACKAGE_DIR / "policies").glob("*.json")))
        raise ScenarioError(
            f'agent.queue_policy: value "{name}": no bundled policy of that name (bundled: '
            f"{known or 'none'}; or give the path of a policy file)"
        )
    agent["queue_policy"] = str(path)


def _resolve_policy_queues(data: dict[str, Any], base_dir: Path) -> None:
    """The switch ports of a scenario whose ``agent.queue_policy`` names a queue policy: without
    ``agent.queues``, the ports the policy was trained on (its ``meta.agent.queues``); a
    ``"all"`` or tier name (``"leaf"``), given or recorded, or none at all, becomes the list of
    those switch ports (:func:`ccgym.acc.driver.switch_ports`), which the simulator takes."""
    agent = data.get("agent")
    if not isinstance(agent, dict) or not isinstance(agent.get("queue_policy"), str):
        return
    which = agent.get("queues")
    if which is None:
        path = Path(agent["queue_policy"])
        path = path if path.is_absolute() else base_dir / path
        try:
            meta = json.loads(path.read_text(encoding="utf-8")).get("meta") or {}
        except (OSError, ValueError, AttributeError):
            return  # the simulator names the unreadable policy file
        recorded = (meta.get("agent") or {}).get("queues") if isinstance(meta, dict) else None
        which = recorded if recorded is not None else "all"
    if isinstance(which, str):
        from ccgym.acc.driver import switch_ports

        try:
            which = switch_ports(data, base_dir, which)
        except ValueError as e:
            raise ScenarioError(str(e)) from None
    agent["queues"] = which


def _resolve_workload_cdfs(data: dict[str, Any], base_dir: Path) -> None:
    workloads = data.get("workload")
    if not isinstance(workloads, list):
        return  # the simulator reports a malformed workload section
    for i, workload in enumerate(workloads):
        if not isinstance(workload, dict) or not isinstance(workload.get("cdf"), str):
            continue
        cdf: str = workload["cdf"]
        field = f"workload[{i}].cdf"
        bundled = WORKLOAD_DIR / f"{cdf}.txt"
        own = Path(cdf) if Path(cdf).is_absolute() else base_dir / cdf
        if "/" not in cdf and "\\" not in cdf and not cdf.endswith(".txt"):
            # A bundled name, or else a file beside the scenario ("my.cdf")
            if bundled.is_file():
                workload["cdf"] = str(bundled)
            elif own.is_file():
                workload["cdf"] = str(own.resolve())
            else:
                raise ScenarioError(
                    f'{field}: value "{cdf}": unknown workload CDF and no such file ({own}); '
                    "known names: " + ", ".join(bundled_workloads())
                )
        elif not own.is_file():
            raise ScenarioError(f'{field}: value "{cdf}": file not found ({own})')
