"""Suites (scenarios x methods x seeds) and running them in parallel with a result cache.

A suite is TOML::

    name = "quick"
    seeds = [1]
    methods = ["dcqcn", "policy:adpg-default"]   # classic CC names, or policy:NAME|PATH
                                                 # (or a table of method presets, below)
    optional_methods = ["policy:rlcc-public"]    # optional: added when they can run here
    overrides = ["duration=60ms"]                # optional, applied to every scenario first
    table = "standard"         # optional: "standard" (SU / FR / QL / drops) or "long-short"
                               # (RT / DR / LBW / message FCT, ccgym.bench.longshort), or
                               # "hopass-slow-layer" / "hopass-overall" (ccgym.bench.hopass_slow)
    method_grid = "acc"        # optional: method presets generated from a grid defined in
                               # code (ccgym.bench.acc.method_grid: the ACC ECN templates)

    [[scenario]]
    label = "m2o 2"            # optional; default: the scenario's name
    scenario = "adpg-m2o-2"    # bundled name, or a TOML path (relative to the suite file)
    overrides = []             # optional
    published = "m2o-128"      # optional: a table of published.toml to show beside ccgym's

A method that needs more than its CC (switch discipline, buffers, host scheduler, ECN) is a
*preset*: ``methods`` is then a table, one entry per method, in the order the tables show them::

    [methods.pfabric]
    cc = "pfabric"                      # a CC name (``ccgym list cc``) or policy:NAME|PATH
    overrides = ["switch.discipline=rank", "switch.port_buffer=36KB"]   # optional
    description = "pFabric: rank ports"  # optional
    optional = false                    # optional: true skips the method when its CC is not
                                        # built into this ccgym (a transport still to merge)
    acc = "offline"                     # optional, table "acc" only: ACC's learned switch
                                        # agents, "offline" (greedy) or "online" (learning);
                                        # the policy: agent.queue_policy (ccgym.bench.acc_suite)

A preset's run loads the scenario with ``cc`` (as ``--cc`` does: every flow's CC replaced),
then the suite's and the scenario's overrides, the seed, and last the preset's overrides (so
``cc.PARAM=...`` tunes the CC and switch settings win over the scenario's). Its name is what
the tables and plots show; the cache key holds the name, the CC and the overrides. A preset
whose CC is unknown is an error naming the method, unless it is ``optional``; the skipped
methods are listed in ``suite["skipped_methods"]``.

Every finished run is cached as ``<out>/runs/<key>.json``, its time series for the plots as
``<key>.series.npz`` (:mod:`ccgym.bench.series`); the key hashes the scenario dict
after overrides, the method (and the policy file's contents), the seed, the ccgym version and
the native module file (and, for long-short tables, the scores' version), so a rerun only does
the runs that are missing. Runs go to a process pool, or to Ray tasks (``ray=ADDRESS``,
:mod:`ccgym.bench.ray_runner`), with the same cache.

A cache record that cannot be read or has the wrong shape is named in a
:class:`~ccgym.CorruptFileWarning` and its run done again. Ctrl-C stops a bench at once: the
pool's workers ignore SIGINT and the parent kills them; finished runs stay cached, so the next
``ccgym bench`` goes on where this one stopped. The workers also die with the parent when it is
killed outright (SIGKILL), see :func:`die_with_parent`.
"""

from __future__ import annotations

import contextlib
import ctypes
import difflib
import hashlib
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ccgym._errors import CorruptFileWarning, ScenarioError, not_utf8
from ccgym.bench.series import compact_series, force_flow_series, save_series, series_path
from ccgym.bench.tables import table_spec
from ccgym.scenario import load_scenario

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SUITE_DIR = Path(__file__).parent / "suites"
POLICY_PREFIX = "policy:"


@dataclass
class Job:
    """One run of a suite: a scenario (with overrides), a method and a seed."""

    label: str
    scenario: str
    overrides: list[str]
    method: str
    seed: int
    published: str | None = None
    key: str = ""
    scores: str = "standard"  # which metrics run_job computes: the suite's table
    preset: dict[str, Any] | None = None  # the method's preset ({"cc", "overrides"}), if any
    settings: dict[str, Any] | None = None  # the table's own suite settings (TABLE_SETTINGS)


@dataclass
class RunStats:
    """What :func:`run_suite` did: runs executed, runs taken from the cache, wall time."""

    ran: int = 0
    cached: int = 0
    wall_s: float = 0.0
    ran_keys: list[str] = field(default_factory=list)


def bundled_suites() -> list[str]:
    """Names of the suites shipped with the package."""
    return sorted(p.stem for p in SUITE_DIR.glob("*.toml"))


def load_suite(spec: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a suite: a bundled name (``quick``) or a TOML path; validated, paths resolved."""
    path = Path(spec)
    if not path.is_file():
        bundled = SUITE_DIR / f"{spec}.toml"
        if "/" in str(spec) or not bundled.is_file():
            raise ScenarioError(
                f"no suite {str(spec)!r}: not a file and not a bundled suite "
                f"({', '.join(bundled_suites())})"
            )
        path = bundled
    try:
        suite = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise not_utf8(str(path), e) from None
    except OSError as e:
        raise ScenarioError(f"cannot read suite file {path}: {e.strerror or e}") from e
    except tomllib.TOMLDecodeError as e:  # the message ends with "(at line L, column C)"
        raise ScenarioError(f"{path}: invalid TOML: {e}") from e
    _check_keys(suite, SUITE_KEYS, path, "the top level")
    for i, sc in enumerate(suite.get("scenario") or []):
        if isinstance(sc, dict):
            _check_keys(sc, SCENARIO_KEYS, path, f"scenario[{i}]")
    suite.setdefault("name", path.stem)
    suite["path"] = str(path.resolve())
    seeds = suite.setdefault("seeds", [1])
    methods = suite.get("methods")
    if "method_grid" in suite:  # presets generated from a grid defined in code (bench/acc.py)
        from ccgym.bench.acc import method_grid

        if methods is not None and not isinstance(methods, dict):
            raise ScenarioError(f"{path}: with method_grid, methods must be a table of presets")
        methods = {**method_grid(suite["method_grid"], path), **(methods or {})}
    scenarios = suite.get("scenario")
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise ScenarioError(f"{path}: seeds must be a non-empty list of integers")
    if isinstance(methods, dict):
        methods, suite["presets"], suite["skipped_methods"] = _method_presets(methods, path)
        if not methods:
            raise ScenarioError(f"{path}: every method is optional and none can run here")
    if not isinstance(methods, list) or not methods or not all(isinstance(m, str) for m in methods):
        raise ScenarioError(f"{path}: methods must be a non-empty list of names")
    optional = suite.get("optional_methods", [])
    if not isinstance(optional, list) or not all(isinstance(m, str) for m in optional):
        raise ScenarioError(f"{path}: optional_methods must be a list of names")
    # Optional methods join when they can run here: a policy whose file is present (rlcc-public
    # comes from the shared anchors folder, which not every machine has).
    suite["methods"] = methods + [m for m in optional if m not in methods and _available(m)]
    if not isinstance(scenarios, list) or not scenarios:
        raise ScenarioError(f"{path}: a suite needs at least one [[scenario]]")
    try:
        table_spec(suite.setdefault("table", "standard"))
    except ScenarioError as e:
        raise ScenarioError(f"{path}: {e}") from None
    _table_settings(suite, path)
    acc = [name for name, p in (suite.get("presets") or {}).items() if "acc" in p]
    if acc and suite["table"] != "acc":  # elsewhere nothing would read it: the run is static
        raise ScenarioError(
            f"{path}: methods.{acc[0]}: acc = ... runs learned switch agents in table "
            f'"acc" only, not in table {suite["table"]!r}'
        )
    for i, sc in enumerate(scenarios):
        if not isinstance(sc, dict) or not isinstance(sc.get("scenario"), str):
            raise ScenarioError(f"{path}: scenario[{i}] needs scenario = NAME or PATH")
        local = path.parent / sc["scenario"]
        if sc["scenario"].endswith(".toml") and local.is_file():
            sc["scenario"] = str(local.resolve())
    return suite


SUITE_KEYS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "name": (str, "a string"),
    "description": (str, "a string"),
    "seeds": (list, "a list of integers"),
    "methods": ((list, dict), "a list of names or a table of method presets"),
    "optional_methods": (list, "a list of names"),
    "overrides": (list, "a list of KEY=VALUE strings"),
    "table": (str, "a string"),
    "scenario": (list, "an array of tables, [[scenario]]"),
    "method_grid": (str, "a string"),
    "env_steps": (int, "an integer >= 1"),
}
"""The keys of a suite file's top level, with their TOML types."""

TABLE_SETTINGS: dict[str, dict[str, Callable[[], Any]]] = {
    # environment steps of each training (bench/mvfst_links.py: HISTORY_ENV_STEPS)
    "mvfst-history": {"env_steps": lambda: _history_env_steps()},
}
"""Top-level suite keys that only one table reads, with their defaults (read when the suite is
loaded): a run's :attr:`Job.settings`, passed to its job and part of its cache key."""


def _history_env_steps() -> int:
    from ccgym.bench.mvfst_links import HISTORY_ENV_STEPS

    return HISTORY_ENV_STEPS


def _table_settings(suite: dict[str, Any], path: Path) -> None:
    """Checks the table-specific keys of a suite and fills in their defaults
    (``suite["settings"]``)."""
    table = suite["table"]
    own = TABLE_SETTINGS.get(table, {})
    for key in {k for keys in TABLE_SETTINGS.values() for k in keys}:
        if key in suite and key not in own:
            tables = [t for t, keys in TABLE_SETTINGS.items() if key in keys]
            raise ScenarioError(
                f"{path}: {key} is read by table {' or '.join(map(repr, tables))} only, "
                f"not by table {table!r}"
            )
    settings = {key: suite.get(key, default()) for key, default in own.items()}
    steps = settings.get("env_steps")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ScenarioError(f"{path}: env_steps must be an integer >= 1, not {steps!r}")
    suite["settings"] = settings


SCENARIO_KEYS: dict[str, tuple[type, str]] = {
    "label": (str, "a string"),
    "scenario": (str, "a string"),
    "overrides": (list, "a list of KEY=VALUE strings"),
    "published": (str, "a string"),
}
"""The keys of a suite's ``[[scenario]]`` tables, with their TOML types."""


def _check_keys(
    table: dict[str, Any],
    known: Mapping[str, tuple[type | tuple[type, ...], str]],
    path: Path,
    where: str,
) -> None:
    """Suite files are strict, as scenarios are: a key nobody reads is a mistake (a typo in
    ``overrides`` would silently run the default protocol), and so is a value of another type
    (``overrides = "duration=1ms"`` would be read character by character)."""
    for key, value in table.items():
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ScenarioError(
                f"{path}: unknown key {key!r} in {where}{hint}; known keys: {', '.join(known)}"
            )
        kind, kind_name = known[key]
        if not isinstance(value, kind):
            raise ScenarioError(f"{path}: {key} in {where} must be {kind_name}, not {value!r}")
        if key == "overrides" and not all(isinstance(o, str) for o in value):
            raise ScenarioError(f"{path}: {key} in {where} must be {kind_name}, not {value!r}")


def _available(method: str) -> bool:
    """Whether a method can run on this machine (a ``policy:`` method needs its file)."""
    if not method.startswith(POLICY_PREFIX):
        return True
    from ccgym.policies import policy_path

    try:
        policy_path(method[len(POLICY_PREFIX) :])
    except (ScenarioError, OSError):  # FileNotFoundError: no such file, no anchors
        return False
    return True


def planned_runs(suite: dict[str, Any]) -> int:
    """How many runs :func:`suite_jobs` makes of ``suite``, without loading a scenario."""
    return len(suite["scenario"]) * len(suite["methods"]) * len(suite["seeds"])


def suite_jobs(suite: dict[str, Any]) -> list[Job]:
    """The runs of a suite, scenarios x methods x seeds, each with its cache key."""
    common = list(suite.get("overrides") or [])
    presets = suite.get("presets") or {}
    jobs = []
    for sc in suite["scenario"]:
        overrides = common + list(sc.get("overrides") or [])
        for method in suite["methods"]:
            for seed in suite["seeds"]:
                all_overrides = [*overrides, f"seed={seed}"]
                preset = presets.get(method)
                if preset is None:
                    data, _ = load_scenario(sc["scenario"], all_overrides)
                else:
                    data = _preset_scenario(sc["scenario"], all_overrides, method, preset)
                label = sc.get("label") or str(data.get("name", sc["scenario"]))
                job = Job(label, sc["scenario"], all_overrides, method, seed, sc.get("published"))
                job.scores = suite.get("table") or "standard"
                job.settings = dict(suite.get("settings") or {}) or None
                if preset is None:
                    job.key = run_key(data, method, seed, job.scores, settings=job.settings)
                else:
                    job.preset = preset
                    job.key = run_key(
                        data,
                        preset["cc"],
                        seed,
                        job.scores,
                        preset={method: preset},
                        settings=job.settings,
                    )
                jobs.append(job)
    return jobs


PRESET_KEYS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "cc": (str, "a string"),
    "overrides": (list, "a list of KEY=VALUE strings"),
    "description": (str, "a string"),
    "optional": (bool, "true or false"),
    "acc": (str, '"offline" or "online"'),
}
"""The keys of a method preset, ``[methods.NAME]``, with their TOML types."""


def known_ccs() -> list[str]:
    """The CC names built into the native module (``ccgym list cc``)."""
    from ccgym.runner import native

    return [name for name, _, _ in native().cc_catalogue()]


def _method_presets(
    table: dict[str, Any], path: Path
) -> tuple[list[str], dict[str, dict[str, Any]], list[str]]:
    """The methods of a ``[methods.NAME]`` table: the names that run here (in file order), their
    presets ``{"cc", "overrides"}``, and the optional methods skipped because their CC is not
    built into this ccgym."""
    names: list[str] = []
    presets: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    ccs = known_ccs()
    for name, entry in table.items():
        where = f"methods.{name}"
        if not isinstance(entry, dict):
            raise ScenarioError(
                f"{path}: {where} must be a table (cc = ..., overrides = [...]), not {entry!r}"
            )
        _check_keys(entry, PRESET_KEYS, path, where)
        cc = entry.get("cc")
        if not isinstance(cc, str) or not cc:
            raise ScenarioError(f"{path}: {where} needs cc = NAME (a CC or policy:NAME)")
        known = _available(cc) if cc.startswith(POLICY_PREFIX) else cc in ccs
        if not known:
            if entry.get("optional", False):
                skipped.append(name)
                continue
            what = (
                "its policy file is missing"
                if cc.startswith(POLICY_PREFIX)
                else (f"no CC {cc!r} in this ccgym (known: {', '.join(ccs)})")
            )
            raise ScenarioError(
                f"{path}: {where}: {what}; set optional = true to skip it where it cannot run"
            )
        names.append(name)
        presets[name] = {"cc": cc, "overrides": list(entry.get("overrides") or [])}
        if "acc" in entry:  # an ACC method (table "acc"): learned switch agents, not its name
            from ccgym.bench.acc_suite import ACC_MODES

            if entry["acc"] not in ACC_MODES:
                raise ScenarioError(
                    f'{path}: acc in {where} must be "offline" or "online", not {entry["acc"]!r}'
                )
            presets[name]["acc"] = entry["acc"]
    return names, presets, skipped


def _preset_scenario(
    scenario: str, overrides: list[str], method: str, preset: Mapping[str, Any]
) -> dict[str, Any]:
    """The scenario of a preset's run, as :func:`run_job` builds it (see the module doc)."""
    cc = preset["cc"]
    try:
        data, _ = load_scenario(
            scenario,
            [*overrides, *preset["overrides"]],
            cc=None if cc.startswith(POLICY_PREFIX) else cc,
        )
    except ScenarioError as e:
        raise ScenarioError(f"method {method!r}: {e}") from None
    return data


@cache
def _file_hash(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def code_version() -> str:
    """ccgym's version and a hash of the native module file."""
    from ccgym import __version__
    from ccgym.runner import native

    return f"{__version__}+{_file_hash(str(native().__file__))[:16]}"


def run_key(
    data: dict[str, Any],
    method: str,
    seed: int,
    scores: str = "standard",
    preset: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> str:
    """The cache key of one run (``scores``: the metrics it computes, see :func:`run_job`;
    ``preset``: ``{name: {"cc", "overrides"}}`` of a preset method, whose scenario ``data``
    already carries the CC and the overrides; ``settings``: the table's suite settings, such
    as ``mvfst-history``'s ``env_steps``)."""
    method_id = method
    if method.startswith(POLICY_PREFIX):
        from ccgym.policies import policy_path

        path = policy_path(method[len(POLICY_PREFIX) :])
        method_id = f"{method}#{_file_hash(str(path))}"
    ident = {"scenario": data, "method": method_id, "seed": seed, "code": code_version()}
    if preset is not None:  # list-form methods keep the keys they had before presets
        ident["preset"] = preset
    if settings:  # tables without settings keep the keys they had
        ident["settings"] = dict(settings)
    policy_files = _policy_file_hashes(data)
    if policy_files:  # runs that name no policy file keep the keys they had
        ident["policy_files"] = policy_files
    if scores != "standard":  # standard keys stay what they were before long-short scores
        from ccgym.bench.longshort import SCORES_VERSION

        ident["scores"] = f"{scores}/{SCORES_VERSION}"
    if scores == "acc-oracle":  # ACC tables: their own version too
        from ccgym.bench.acc import SCORES_VERSION as ACC_SCORES_VERSION

        ident["scores"] += f"/{ACC_SCORES_VERSION}"
    if scores.startswith("hopass"):  # HOPASS slow-layer tables: their own version too
        from ccgym.bench.hopass_slow import SCORES_VERSION as HOPASS_SCORES_VERSION

        ident["scores"] += f"/{HOPASS_SCORES_VERSION}"
    if scores == "mvfst-blocking":  # the mvfst-blocking table: its own version too
        from ccgym.bench.mvfst import SCORES_VERSION as MVFST_SCORES_VERSION

        ident["scores"] += f"/{MVFST_SCORES_VERSION}"
    if scores == "acc":  # the acc table: its version, the ACC policy and learner, the oracles
        from ccgym.bench import acc_suite

        ident["scores"] += f"/{acc_suite.SCORES_VERSION}"
        names = list(preset or {}) or [method]
        if any(acc_suite.acc_mode(p) for p in (preset or {}).values()):
            ident["learner"] = acc_suite.learner_code_hash()
        if acc_suite.ORACLE_METHOD in names:
            ident["oracle"] = sorted(acc_suite.ORACLE_TEMPLATES.items(), key=str)
    if scores == "qtcp":  # the qtcp table: its version, and the learner's code for its methods
        from ccgym.bench.qtcp import QTCP_METHODS, learner_code_hash
        from ccgym.bench.qtcp import SCORES_VERSION as QTCP_SCORES_VERSION

        ident["scores"] += f"/{QTCP_SCORES_VERSION}"
        if method in QTCP_METHODS:
            ident["learner"] = learner_code_hash()
    if scores in ("mvfst-links", "mvfst-history"):  # their version, the learner's code
        from ccgym.bench.mvfst_links import SCORES_VERSION as LINKS_SCORES_VERSION

        ident["scores"] += f"/{LINKS_SCORES_VERSION}"
        if scores == "mvfst-history":
            ident["learner"] = _learner_hash()
    if scores == "friendliness":  # its version, and the learner's code for the QTCP methods
        from ccgym.bench.friendliness import SCORES_VERSION as FRIENDLY_SCORES_VERSION
        from ccgym.bench.qtcp import QTCP_METHODS, learner_code_hash

        ident["scores"] += f"/{FRIENDLY_SCORES_VERSION}"
        if method in QTCP_METHODS:
            ident["learner"] = learner_code_hash()
    blob = json.dumps(ident, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _policy_file_hashes(data: Mapping[str, Any]) -> dict[str, str]:
    """The contents' hash of each policy file the scenario's ``[agent]`` table names
    (``agent.policy``, ``agent.queue_policy``; a bundled name or a path), by key: a run's cache
    key must change when a policy is retrained under the same name. A name that resolves to no
    file is left out (the run itself reports it)."""
    from ccgym.policies import policy_path

    agent = data.get("agent")
    if not isinstance(agent, Mapping):
        return {}
    out: dict[str, str] = {}
    for key in ("policy", "queue_policy"):
        spec = agent.get(key)
        if not isinstance(spec, str) or spec in ("", "external"):
            continue
        try:
            path = policy_path(spec)
        except (FileNotFoundError, OSError):
            continue
        # Not _file_hash: its memo would keep a file's old hash for the life of the process.
        out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _learner_hash() -> str:
    """A hash of the IMPALA trainer's source and its bundled config (an mvfst-history run's
    cache key: the native module's hash does not cover them)."""
    from ccgym.train.config import CONFIG_DIR

    h = hashlib.sha256()
    agents = Path(__file__).resolve().parent.parent / "agents"
    for path in (
        agents / "impala.py",
        agents / "impala_model.py",
        CONFIG_DIR / "mvfst-default.toml",
    ):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def run_job(
    scenario: str,
    overrides: list[str],
    method: str,
    scores: str = "standard",
    preset: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one job (in a worker process) and return its metrics and summary.

    ``scores="long-short"`` adds the long-short scores (:func:`ccgym.bench.longshort.scores`).
    ``preset``: the method's preset (``{"cc", "overrides"}``, see the module doc).
    ``settings``: the table's suite settings (:data:`TABLE_SETTINGS`).
    """
    if scores.startswith("hopass"):  # a HOPASS experiment, run in slots (bench/hopass_slow.py)
        from ccgym.bench.hopass_slow import run_hopass_job

        return run_hopass_job(scenario, overrides, method, scores)
    if scores == "acc":  # ACC's learned switch agents, the presets and the static oracle
        from ccgym.bench.acc_suite import acc_mode, run_acc_job

        if acc_mode(preset):  # one torch thread per worker: several threads per tiny MLP only spin
            import torch

            torch.set_num_threads(1)
        return run_acc_job(scenario, overrides, method, preset)
    if scores == "qtcp":  # QTCP / QTCP-AIMD learning online, or classic CCs, scored per phase
        from ccgym.bench.qtcp import run_qtcp_job

        return run_qtcp_job(scenario, overrides, method)
    if scores == "mvfst-links":  # Pantheon's metrics per link (bench/mvfst_links.py)
        from ccgym.bench.mvfst_links import run_mvfst_job

        return run_mvfst_job(scenario, overrides, method, preset)
    if scores == "mvfst-history":  # short IMPALA trainings by action history
        from ccgym.bench.mvfst_links import run_history_job

        return run_history_job(scenario, overrides, method, **dict(settings or {}))
    if scores == "friendliness":  # one flow against others, or one kind on different RTTs
        from ccgym.bench.friendliness import run_friendliness_job

        return run_friendliness_job(scenario, overrides, method)
    import ccgym
    from ccgym import policies

    t0 = time.perf_counter()
    if preset is None:
        data, _ = load_scenario(scenario, overrides)
    else:  # the CC is set before the overrides, which may tune it
        data = _preset_scenario(scenario, overrides, method, preset)
        method = preset["cc"]
    force_flow_series(data)  # the plots' per-flow rates; leaves summary and cache key unchanged
    if method.startswith(POLICY_PREFIX):
        result = ccgym.run(policies.use_policy(data, method[len(POLICY_PREFIX) :]))
    elif preset is not None:
        result = ccgym.run(data)
    else:
        result = ccgym.run(data, cc=method)
    s = result.summary
    bn = s.get("bottleneck") or {}
    paper = s.get("paper") or {}
    util = bn.get("utilization")
    metrics = {
        "SU": None if util is None else util * 100,
        "FR": paper.get("FR"),
        "jain": (s.get("flows") or {}).get("jain"),
        "QL": bn.get("queue_latency_mean_us"),
        "drops_mb": paper.get("drops_mb"),
    }
    if scores == "long-short":
        from ccgym.bench.longshort import scores as long_short_scores

        metrics.update(long_short_scores(result))
    profile = None
    if scores == "slowdown":
        from ccgym.bench import slowdown

        metrics.update(slowdown.scores(s))
        window = s.get("window_s") or [0.0, float("inf")]
        profile = slowdown.size_profile(result.series["flow_info"], (window[0], window[1]))
    if scores == "weighted-shares":
        from ccgym.bench import weighted

        metrics.update(weighted.scores(data, s, result.series["flow_info"]))
    if scores == "acc-oracle":
        from ccgym.bench import acc

        metrics.update(acc.scores(s, result.series))
    out = {"metrics": metrics, "summary": s, "wall_s": time.perf_counter() - t0}
    if scores == "mvfst-blocking":  # bytes delivered, and the curve of the report's figure
        from ccgym.bench import mvfst

        metrics.update(mvfst.scores(result))
        out["cum_mb"] = mvfst.curve(result)
    if profile is not None:
        out["size_profile"] = profile  # the slowdown-against-size plots (bench.plots)
    # numpy arrays: run_suite pops them and stores them apart, never in the JSON record
    out["series"] = compact_series(result)
    return out


def _job_args(job: Job) -> tuple[Any, ...]:
    """The arguments of :func:`run_job` for ``job``, the same for every way of running it."""
    if job.settings:
        return (job.scenario, job.overrides, job.method, job.scores, job.preset, job.settings)
    if job.preset is not None:
        return (job.scenario, job.overrides, job.method, job.scores, job.preset)
    return (job.scenario, job.overrides, job.method, job.scores)


def _record(job: Job, out: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": job.key,
        "label": job.label,
        "scenario": job.scenario,
        "overrides": job.overrides,
        "method": job.method,
        "seed": job.seed,
        "published": job.published,
        "code": code_version(),
        **out,
    }


_RECORD_FIELDS: dict[str, tuple[type, str]] = {
    "key": (str, "a string"),
    "scenario": (str, "a string"),
    "overrides": (list, "a list"),
    "method": (str, "a string"),
    "seed": (int, "an integer"),
    "metrics": (dict, "an object"),
    "summary": (dict, "an object"),
}
"""The fields of a cache record that the tables and the report read, with their JSON types."""


def _record_problem(rec: Any, key: str | None) -> str | None:
    """What is wrong with a cache record read back from disk, or None if it has the shape
    :func:`_record` gives it."""
    if not isinstance(rec, dict):
        return f"a JSON {type(rec).__name__}, not an object"
    for name, (kind, kind_name) in _RECORD_FIELDS.items():
        value = rec.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{name!r} is missing or not {kind_name}"
    if key is not None and rec["key"] != key:
        return f"it is the record of run {rec['key']}, not of {key}"
    if not all(isinstance(o, str) for o in rec["overrides"]):
        return "'overrides' is not a list of strings"
    for name, value in rec["metrics"].items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"metric {name!r} is {value!r}, not a number or null"
    return None


def _load_cached(path: Path, key: str | None = None) -> dict[str, Any] | None:
    """The cache record at ``path``, or None when there is none to use.

    A missing file is the normal case of a run not done yet. A record that cannot be read or
    has the wrong shape (a disk error, an edit, another version's format) is not trusted: a
    :class:`~ccgym.CorruptFileWarning` names the file, and the run is done again, which
    replaces it.
    """
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        problem = f"cannot be read ({e.strerror or e})"
    else:
        try:
            rec = json.loads(text)
        except ValueError as e:  # UnicodeDecodeError and JSONDecodeError
            problem = f"is not valid JSON ({e})"
        else:
            reason = _record_problem(rec, key)
            if reason is None:
                return rec
            problem = f"is not a bench record: {reason}"
    warnings.warn(
        f"bench cache {path} {problem}; ignored, the run is done again",
        CorruptFileWarning,
        stacklevel=2,
    )
    return None


def _save(path: Path, rec: dict[str, Any]) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(rec, indent=1, default=str))
    tmp.replace(path)  # atomic: an interrupted run never leaves a half-written cache entry


PR_SET_PDEATHSIG = 1
"""Linux ``prctl`` option: the signal this process gets when its parent dies."""
PARENT_POLL_S = 0.5
"""Where ``PR_SET_PDEATHSIG`` is missing, how often a worker checks that its parent lives."""


def die_with_parent(parent_pid: int) -> None:
    """Makes this process (a pool worker) end when process ``parent_pid``, its parent, ends,
    however it ends: a parent killed by SIGKILL runs no cleanup, and its workers, blocked on a
    queue that nobody will write to again, would otherwise live for good.

    On Linux the kernel sends SIGKILL on the parent's death (``PR_SET_PDEATHSIG``); elsewhere a
    daemon thread polls the parent pid every :data:`PARENT_POLL_S` seconds.
    """
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):  # no libc prctl: fall back to polling
            armed = False
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
    if armed:
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="ccgym-parent-watch", daemon=True).start()


def _pool_worker_init(parent_pid: int) -> None:
    """First thing a bench pool worker runs."""
    # Ctrl-C is the parent's to act on (it stops the whole pool at once, see _stop_pool). A
    # worker that took it too would report it as the failure of its current run only, and go
    # on with the next run while the parent waits for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


def _process_pool(workers: int) -> ProcessPoolExecutor:
    """A pool whose workers ignore Ctrl-C and die with this process."""
    # fork where the kernel can tie a worker's life to its parent: the worker's parent is then
    # this process (with forkserver it would be the server), and the workers start at once.
    method = "fork" if sys.platform.startswith("linux") else None
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_pool_worker_init,
        initargs=(os.getpid(),),
    )


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stops ``pool`` now: queued runs are cancelled and the running ones killed (their results
    would be lost anyway; nothing of theirs is in the cache, which only this process writes)."""
    # The executor has no public handle on its processes; without the kill, shutdown would
    # wait for every running simulation to end.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for proc in processes:
        proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.join(timeout=2.0)


def progress_bar(title: str, total: int) -> Callable[[str | None], None]:
    """A rich progress bar on stderr; call the result with a label per finished item, and with
    None at the end."""
    from ccgym._progress import progress_bar

    bar = progress_bar(title, count_width=2 * len(str(total)) + 1, elastic="last", transient=True)
    bar.start()
    task = bar.add_task(title, total=total, last="")

    def step(last: str | None) -> None:
        if last is None:
            bar.stop()
        else:
            bar.update(task, advance=1, last=last)

    return step


PLAIN_PROGRESS_S = 10.0
"""Without a terminal, the least time between two progress lines (the last run always has one)."""


def plain_progress(
    title: str, total: int, *, every_s: float = PLAIN_PROGRESS_S
) -> Callable[[str | None], None]:
    """Progress for a log file (stderr not a terminal: nohup, a redirect), where a bar would be
    nothing or a mess of control codes: plain lines on stderr, ``TITLE: 3/24 runs done, 0:01:05,
    last: LABEL``, one per finished item but at most one every ``every_s`` seconds (the items
    in between are counted in the next line), and always one for the last item
    (:class:`ccgym._progress.PlainProgress`). Called as :func:`progress_bar`'s result is: with
    a label per finished item, None at the end."""
    from ccgym._progress import PlainProgress

    lines = PlainProgress(title, every_s=every_s, info_field="last", unit_after="runs done")
    task = lines.add_task("runs", total=total)

    def step(last: str | None) -> None:
        if last is not None:
            lines.update(task, advance=1, last=f"last: {last}")

    return step


@contextlib.contextmanager
def _naming(job: Job) -> Iterator[None]:
    """Bad input found while a run is built (a method's CC, an override) names the suite's
    scenario, method and seed: the field alone ("cc.algorithm") does not say which of a
    suite's runs holds it."""
    try:
        yield
    except ScenarioError as e:
        where = f"{job.label} / {job.method} / seed {job.seed}"
        raise ScenarioError(f"suite run {where}: {e}") from e


def run_suite(
    suite: dict[str, Any] | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    progress: bool | Literal["plain"] = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    ray: str | None = None,
) -> tuple[list[dict[str, Any]], RunStats]:
    """Run every job of ``suite`` not cached under ``out/runs``; return all records, in order.

    Args:
        suite: a suite dict (:func:`load_suite`), or a bundled name or path.
        out: output folder; finished runs are cached in ``out/runs/<key>.json``.
        jobs: worker processes (default ``os.cpu_count()``); 1 runs in this process. With
            ``ray="local"``: the CPUs of the local Ray instance.
        progress: show a rich progress bar on stderr; ``"plain"``: plain lines instead, for
            a log file (:func:`plain_progress`).
        on_done: called with every record as it finishes (cached ones too).
        ray: run the jobs as Ray tasks instead: ``"local"``, ``"auto"``, ``"HOST:PORT"`` or
            ``"ray://HOST:PORT"`` (see :mod:`ccgym.bench.ray_runner`).
    """
    if not isinstance(suite, dict):
        suite = load_suite(suite)
    t0 = time.perf_counter()
    run_dir = Path(out) / "runs"
    run_dir.mkdir(parents=True, exist_ok=True)
    all_jobs = suite_jobs(suite)
    records: dict[str, dict[str, Any]] = {}
    todo: list[Job] = []
    stats = RunStats()
    for job in all_jobs:
        if job.key in records:
            continue
        cached = _load_cached(run_dir / f"{job.key}.json", job.key)
        if cached is not None:
            records[job.key] = cached
            stats.cached += 1
        elif all(job.key != j.key for j in todo):
            todo.append(job)

    step: Callable[[str | None], None] | None = None
    title = f"bench {suite['name']}"
    if progress == "plain":
        print(
            f"{title}: {len(todo)} runs to do, {stats.cached} from the cache",
            file=sys.stderr,
            flush=True,
        )
        step = plain_progress(title, len(todo))
    elif progress:
        step = progress_bar(title, len(todo))

    def finish(job: Job, out_: dict[str, Any]) -> None:
        series = out_.pop("series", None)
        if series is not None:  # before the JSON: a cache entry without its series is allowed
            save_series(series_path(run_dir, job.key), series)
        rec = _record(job, out_)
        _save(run_dir / f"{job.key}.json", rec)
        records[job.key] = rec
        stats.ran += 1
        stats.ran_keys.append(job.key)
        if step is not None:
            step(f"{job.label} / {job.method} / seed {job.seed}")
        if on_done is not None:
            on_done(rec)

    try:
        n_workers = min(jobs or os.cpu_count() or 1, max(len(todo), 1))
        if ray is not None:
            from ccgym.bench.ray_runner import run_on_ray

            calls = [(j, _job_args(j)) for j in todo]
            run_on_ray(run_job, calls, finish, ray, num_cpus=jobs, context=_naming)
        elif n_workers <= 1:
            for job in todo:
                with _naming(job):
                    out = run_job(*_job_args(job))
                finish(job, out)
        else:
            pool = _process_pool(n_workers)
            try:
                pending: dict[Future[dict[str, Any]], Job] = {
                    pool.submit(run_job, *_job_args(j)): j for j in todo
                }
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        job = pending.pop(fut)
                        with _naming(job):
                            out = fut.result()
                        finish(job, out)
            except BaseException:  # Ctrl-C or a failed run: stop at once, not after the queue
                _stop_pool(pool)
                raise
            pool.shutdown()
    finally:
        if step is not None:
            step(None)
    stats.wall_s = time.perf_counter() - t0
    # label and published come from the suite as it is now (a cache entry may predate a rename)
    result = [
        {**records[j.key], "label": j.label, "published": j.published, "seed": j.seed}
        for j in all_jobs
    ]
    return result, stats
