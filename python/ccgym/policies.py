"""Native policies: export, import, calibration and evaluation of small MLP policies.

A *native policy* is a small multilayer perceptron stored as JSON (format ``ccgym-mlp``,
version 1) that the simulator evaluates itself, in float32 or int8, so that a learned
congestion control runs at thousands of flows without Python in the loop::

    {"format": "ccgym-mlp", "version": 1,
     "layers": [{"weight": [[...]], "bias": [...] or null, "activation": "relu"}, ...],
     "output": "tanh",
     "int8": {"input_amax": [one per layer]},
     "meta": {...}}

``weight`` has the PyTorch ``Linear`` layout ``[out][in]``. ``meta.agent`` (optional) is the
scenario ``[agent]`` table the policy was trained with (features, history, trigger, ...);
:func:`use_policy` copies it into the scenarios it evaluates.

This module needs only numpy (no PyTorch): torch modules are exported by duck typing
(:func:`export_module`), so ``import ccgym``, ``ccgym eval`` and native evaluation work without
torch installed.

Policy names (see :func:`policy_path`):

* a bundled name, e.g. ``adpg-default`` -> ``ccgym/policies/adpg-default.json``;
* ``rlcc-public``: the published RL-CC (ADPG) network, converted at run time from
  ``rlcc_public_policy.npz`` in the shared anchors folder (``$CCGYM_ANCHORS``, else
  ``<repo>/../shared/anchors`` beside the repository) into a cache folder outside the
  repository (``$CCGYM_CACHE``, ``$XDG_CACHE_HOME/ccgym`` or ``~/.cache/ccgym``);
* any path to a policy JSON file.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ccgym._errors import ScenarioError, invalid_json, not_utf8

FORMAT = "ccgym-mlp"
"""The ``format`` field of a native policy file."""

VERSION = 1
"""The ``version`` field of a native policy file."""

PACKAGE_DIR = Path(__file__).resolve().parent
POLICY_DIR = PACKAGE_DIR / "policies"
"""Bundled policy files (``<name>.json``) and the training configs that made them."""

RLCC_PUBLIC = "rlcc-public"
"""Name of the published RL-CC network (converted from the shared anchors at run time)."""

RLCC_NPZ = "rlcc_public_policy.npz"

ADPG_AGENT: dict[str, Any] = {
    "trigger": "probe",
    "features": ["action", "adpg"],
    "history": 2,
    "reward": "adpg_signal",
    "action": "multiplier",
    "multiplier_inc": 0.2,
    "multiplier_dec": 0.2,
    "rtt_norm": "8192ns",
    "adpg_beta": 1.5,
    "adpg_target": 0.064,
    "adpg_scale": 12.5,
}
"""The ``[agent]`` table of ADPG / RL-CC (spec learning_cc.md 1.3-1.5, public-code values):
observation ``[m_{k-1}, d_{k-1}, m_k, d_k]`` (last multiplier and ADPG error, two rows, oldest
first), one decision per RTT-probe reply, log-symmetric multiplier in (1/1.2, 1.2)."""

ACTIVATIONS = ("relu", "tanh", "none")

PRECISIONS = ("float32", "int8")


# --------------------------------------------------------------------------- the format


def mlp_policy(
    layers: Sequence[tuple[Any, Any | None, str]],
    output: str = "none",
    *,
    input_amax: Sequence[float] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a policy dict from ``(weight [out][in], bias or None, activation)`` per layer.

    Args:
        layers: the dense layers in order; weights and biases are array-likes.
        output: activation applied to the last layer's result (``"tanh"`` for ADPG).
        input_amax: int8 calibration, the largest ``|input|`` of each layer.
        meta: free-form information (training config, agent table, provenance).

    Raises:
        ValueError: shapes do not chain, a value is not finite, or an activation is unknown.
    """
    out_layers = []
    prev: int | None = None
    for i, (weight, bias, activation) in enumerate(layers):
        w = np.asarray(weight, dtype=np.float32)
        if w.ndim != 2 or w.size == 0:
            raise ValueError(f"layer {i}: weight must be a non-empty [out][in] matrix")
        if prev is not None and w.shape[1] != prev:
            raise ValueError(f"layer {i}: takes {w.shape[1]} inputs, previous layer gives {prev}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"layer {i}: unknown activation {activation!r}")
        b = None if bias is None else np.asarray(bias, dtype=np.float32).reshape(-1)
        if b is not None and b.shape[0] != w.shape[0]:
            raise ValueError(f"layer {i}: bias has {b.shape[0]} values for {w.shape[0]} outputs")
        if not np.all(np.isfinite(w)) or (b is not None and not np.all(np.isfinite(b))):
            raise ValueError(f"layer {i}: weights must be finite")
        out_layers.append(
            {
                "weight": w.tolist(),
                "bias": None if b is None else b.tolist(),
                "activation": activation,
            }
        )
        prev = w.shape[0]
    if output not in ACTIVATIONS:
        raise ValueError(f"unknown output activation {output!r}")
    policy: dict[str, Any] = {"format": FORMAT, "version": VERSION, "layers": out_layers}
    policy["output"] = output
    if input_amax is not None:
        amax = [float(a) for a in input_amax]
        if len(amax) != len(out_layers):
            raise ValueError("input_amax needs one value per layer")
        policy["int8"] = {"input_amax": amax}
    if meta is not None:
        policy["meta"] = dict(meta)
    return policy


def validate_policy(policy: Mapping[str, Any]) -> None:
    """Check the structure of a policy dict; raise ``ValueError`` with the reason if wrong."""
    if policy.get("format") != FORMAT or policy.get("version") != VERSION:
        raise ValueError(
            f"not a {FORMAT} v{VERSION} policy (format {policy.get('format')!r}, "
            f"version {policy.get('version')!r})"
        )
    layers = policy.get("layers")
    if not isinstance(layers, list) or not layers:
        raise ValueError("the policy has no layers")
    for i, la in enumerate(layers):
        if not isinstance(la, Mapping) or "weight" not in la:
            raise ValueError(f"layer {i}: not an object with a weight matrix")
    mlp_policy(
        [(la["weight"], la.get("bias"), la.get("activation", "none")) for la in layers],
        policy.get("output", "none"),
        input_amax=(policy.get("int8") or {}).get("input_amax"),
    )


def policy_inputs(policy: Mapping[str, Any]) -> int:
    """Number of inputs (observation length) of a policy."""
    return len(policy["layers"][0]["weight"][0])


def save_policy(policy: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a policy dict as compact JSON (one line per layer); returns the path."""
    validate_policy(policy)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(_dumps(policy), encoding="utf-8")
    os.replace(tmp, out)
    return out


def _dumps(policy: Mapping[str, Any]) -> str:
    head = {k: v for k, v in policy.items() if k != "layers"}
    layers = ",\n  ".join(json.dumps(la, separators=(",", ":")) for la in policy["layers"])
    text = json.dumps(head, indent=1, default=str)
    return text[:-2] + f',\n "layers": [\n  {layers}\n ]\n}}\n'


# --------------------------------------------------------------------------- numpy inference


def quantise(v: Any) -> np.ndarray:
    """int8 values (as int64) of float32 values: ``sign(v) floor(min(|v|, 127) + 0.5)`` with
    the addition in float32, i.e. clamped to [-127, 127] and rounded half away from zero; NaN
    gives 0. The simulator's definition, bit for bit."""
    v = np.asarray(v, dtype=np.float32)
    q = np.floor(np.minimum(np.abs(v), np.float32(127.0)) + np.float32(0.5))
    q = np.where(np.isnan(v), np.float32(0.0), np.where(v < 0, -q, q))
    return q.astype(np.int64)


def _act(x: np.ndarray, name: str) -> np.ndarray:
    if name == "relu":
        # As the simulator: max(x, 0) with NaN giving 0 and -0 giving +0.
        return np.where(x > 0, x, np.float32(0.0)).astype(np.float32)
    if name == "tanh":
        return np.tanh(x)
    return x


def layer_inputs(policy: Mapping[str, Any], obs: Any) -> list[np.ndarray]:
    """The float32 input of every layer for a batch of observations (for calibration)."""
    x = np.atleast_2d(np.asarray(obs, dtype=np.float32))
    inputs = []
    for la in policy["layers"]:
        inputs.append(x)
        w = np.asarray(la["weight"], dtype=np.float32)
        y = x @ w.T
        if la.get("bias") is not None:
            y = y + np.asarray(la["bias"], dtype=np.float32)
        x = _act(y.astype(np.float32), la.get("activation", "none"))
    return inputs


def forward(policy: Mapping[str, Any], obs: Any, precision: str = "float32") -> np.ndarray:
    """Evaluate a policy on a batch of observations with numpy, as the simulator does.

    Args:
        policy: a policy dict.
        obs: observations, shape ``(K, inputs)`` or ``(inputs,)``.
        precision: ``"float32"``, or ``"int8"`` for the simulator's int8 arithmetic, which this
            function defines together with ``crates/sim/src/policy.rs`` (the two agree bit for
            bit): per layer, input scale ``s = 127 / input_amax`` (1 if that is not positive
            and finite), row scales ``s_r = 127 / max |row|`` (1 for a zero row), int8 values
            :func:`quantise` ``(x s)`` and ``(w s_r)``, exact integer accumulation, then
            ``acc * (1 / (s s_r)) + b`` in float32 (a bias of -0 counting as +0) and the
            activation. float32 inference agrees with the simulator to rounding (the sums are
            taken in another order).

    Returns:
        The outputs, shape ``(K, outputs)`` (float32).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    x = np.atleast_2d(np.asarray(obs, dtype=np.float32))
    amax = (policy.get("int8") or {}).get("input_amax")
    if precision == "int8" and amax is None:
        raise ValueError("the policy has no int8 calibration (int8.input_amax)")
    for i, la in enumerate(policy["layers"]):
        w = np.asarray(la["weight"], dtype=np.float32)
        b = la.get("bias")
        b = np.zeros(w.shape[0], np.float32) if b is None else np.asarray(b, dtype=np.float32)
        if precision == "float32":
            y = (x @ w.T + b).astype(np.float32)
        else:
            a = np.float32(amax[i])
            in_scale = np.float32(127.0) / a if a > 0 and np.isfinite(a) else np.float32(1.0)
            row_amax = np.abs(w).max(axis=1)
            w_scale = np.where(
                row_amax > 0, np.float32(127.0) / np.where(row_amax > 0, row_amax, 1), 1
            ).astype(np.float32)
            wq = quantise(w * w_scale[:, None])
            xq = quantise(x * in_scale)
            acc = (xq @ wq.T).astype(np.float32)
            dequant = (np.float32(1.0) / (in_scale * w_scale)).astype(np.float32)
            y = (acc * dequant + (b + np.float32(0.0))).astype(np.float32)
        x = _act(y, la.get("activation", "none"))
    return _act(x, policy.get("output", "none")).astype(np.float32)


def native_forward(
    policy: str | os.PathLike[str] | Mapping[str, Any], obs: Any, precision: str = "float32"
) -> np.ndarray:
    """Evaluate a policy (name, path or dict) on a batch of observations with the simulator's
    own inference (float32 or int8), as a flow running it would; shape ``(K, outputs)``.

    int8 agrees with :func:`forward` bit for bit, apart from a ``tanh`` activation (the
    simulator's comes from the C library, numpy's from numpy; they can differ in the last bits).
    """
    from ccgym.runner import native

    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    text = json.dumps(load_policy(policy))
    x = np.ascontiguousarray(np.atleast_2d(np.asarray(obs, dtype=np.float32)))
    return np.asarray(native().policy_forward(text, x, precision))


def multiplier(a: Any, inc: float = 0.2, dec: float = 0.2) -> np.ndarray:
    """ADPG's log-symmetric rate multiplier: ``1 + inc a`` for a >= 0, ``1 / (1 - dec a)``."""
    a = np.clip(np.asarray(a, dtype=np.float64), -1.0, 1.0)
    return np.where(a >= 0, 1.0 + inc * a, 1.0 / (1.0 - dec * a))


def calibrate(
    policy: Mapping[str, Any],
    obs: Any,
    percentile: float | None = None,
    *,
    candidates: int = 48,
    sweeps: int = 2,
) -> list[float]:
    """int8 calibration: one ``input_amax`` per layer from recorded observations ``obs``.

    With ``percentile`` given: that percentile of ``|input|`` per layer (100 = the maximum).
    Default (``None``): the values that minimise the mean absolute error of the int8 output
    against float32 on ``obs``: starting from the 99th percentile of every layer's input (as
    the int8 network computes it), two coordinate-descent sweeps over a log-spaced grid between
    the median and the maximum of ``|input|``. ADPG inputs span three
    orders of magnitude (the error d is hundreds while a queue drains), and the network is
    positively homogeneous, so its hidden activations do too; clipping the rare huge values
    keeps the resolution where the policy's output is not saturated.
    """
    obs = np.atleast_2d(np.asarray(obs, dtype=np.float32))
    inputs = layer_inputs(policy, obs)
    if percentile is not None:
        out = []
        for x in inputs:
            v = np.abs(x).reshape(-1)
            a = float(np.percentile(v, percentile)) if v.size else 1.0
            out.append(a if a > 0 and np.isfinite(a) else 1.0)
        return out
    target = forward(policy, obs)
    trial = copy.deepcopy(dict(policy))
    # Start from the 99th percentile of each layer's input as the int8 network produces it.
    amax: list[float] = []
    for i in range(len(inputs)):
        prefix = {**trial, "layers": trial["layers"][:i], "output": "none"}
        prefix["int8"] = {"input_amax": amax[:i]}
        x = np.abs(forward(prefix, obs, "int8") if i else obs).reshape(-1)
        a = float(np.percentile(x, 99)) if x.size else 1.0
        amax.append(a if a > 0 and np.isfinite(a) else 1.0)

    def error(values: list[float]) -> float:
        trial["int8"] = {"input_amax": values}
        return float(np.abs(forward(trial, obs, "int8") - target).mean())

    for _ in range(sweeps):
        for i in range(len(inputs)):
            # The layer's input as the int8 network produces it (earlier layers clipped).
            prefix = {**trial, "layers": trial["layers"][:i], "output": "none"}
            prefix["int8"] = {"input_amax": amax[:i]}
            x = forward(prefix, obs, "int8") if i else obs
            v = np.abs(x).reshape(-1)
            v = v[v > 0]
            if v.size == 0:
                continue
            lo, hi = float(np.percentile(v, 50)), float(v.max())
            grid = np.geomspace(max(lo, hi * 1e-4), hi, candidates) if hi > lo else [hi]
            best = (error(amax), amax[i])
            for g in grid:
                values = amax.copy()
                values[i] = float(g)
                e = error(values)
                if e < best[0]:
                    best = (e, float(g))
            amax[i] = best[1]
    return amax


def with_calibration(
    policy: Mapping[str, Any],
    obs: Any,
    percentile: float | None = None,
) -> dict[str, Any]:
    """A copy of ``policy`` with int8 calibration from the observations ``obs`` (see
    :func:`calibrate`; ``percentile=None`` is the error-minimising calibration)."""
    out = copy.deepcopy(dict(policy))
    obs = np.atleast_2d(np.asarray(obs, dtype=np.float32))
    out["int8"] = {"input_amax": calibrate(policy, obs, percentile)}
    meta = dict(out.get("meta") or {})
    method = "min-error" if percentile is None else f"percentile {percentile}"
    meta["int8_calibration"] = {"observations": int(len(obs)), "method": method}
    out["meta"] = meta
    return out


# --------------------------------------------------------------------------- torch export


def module_layers(module: Any) -> list[tuple[np.ndarray, np.ndarray | None, str]]:
    """The dense layers of a torch module, found by duck typing (no torch import).

    Walks the module's leaf sub-modules in registration order: each ``Linear`` starts a layer,
    a following ``ReLU`` / ``Tanh`` sets its activation (``Identity`` and ``Dropout`` are
    skipped). Anything else is an error, since the native format cannot express it. The final
    output activation (e.g. ADPG's tanh applied in ``forward``) is given separately.
    """
    layers: list[list[Any]] = []
    for sub in module.modules():
        if any(True for _ in sub.children()):
            continue
        kind = type(sub).__name__
        if kind == "Linear":
            w = sub.weight.detach().cpu().numpy().astype(np.float32)
            b = None if sub.bias is None else sub.bias.detach().cpu().numpy().astype(np.float32)
            layers.append([w, b, "none"])
        elif kind in ("ReLU", "Tanh"):
            if not layers or layers[-1][2] != "none":
                raise ValueError(f"{kind} does not follow a Linear layer")
            layers[-1][2] = kind.lower()
        elif kind in ("Identity", "Dropout"):
            continue
        else:
            raise ValueError(f"cannot export a {kind} layer to the {FORMAT} format")
    if not layers:
        raise ValueError("the module has no Linear layers")
    return [(w, b, a) for w, b, a in layers]


def export_module(
    module: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    output: str | None = None,
    calibration_obs: Any = None,
    percentile: float | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Export a torch MLP to the native policy format (and write it to ``path`` if given).

    Args:
        module: a torch module made of ``Linear`` layers with ``ReLU`` / ``Tanh`` between them
            (see :func:`module_layers`).
        output: the output activation; default: the module's ``output_activation`` attribute,
            else ``"none"``.
        calibration_obs: recorded observations; when given, the file gets int8 calibration.
        percentile: int8 calibration by this percentile of ``|input|``; default: the
            error-minimising calibration (see :func:`calibrate`).
        meta: stored under ``meta`` (e.g. ``{"agent": {...}}``, the training config).
    """
    if output is None:
        output = getattr(module, "output_activation", "none")
    policy = mlp_policy(module_layers(module), output, meta=meta)
    if calibration_obs is not None:
        policy = with_calibration(policy, calibration_obs, percentile)
    if path is not None:
        save_policy(policy, path)
    return policy


# --------------------------------------------------------------------------- names and files


def bundled_policies() -> list[str]:
    """Names of the bundled policies (plus ``rlcc-public`` when its anchor file exists)."""
    names = sorted(p.stem for p in POLICY_DIR.glob("*.json"))
    if rlcc_public_npz() is not None:
        names.append(RLCC_PUBLIC)
    return names


def anchor_dirs() -> list[Path]:
    """Folders searched for the shared anchor files, in order."""
    dirs = []
    env = os.environ.get("CCGYM_ANCHORS")
    if env:
        dirs.append(Path(env))
    # Beside the repository (python/ccgym/ -> <repo>/../shared/anchors); a wheel install
    # has no repository, so only $CCGYM_ANCHORS finds the files there.
    dirs.append(PACKAGE_DIR.parent.parent.parent / "shared" / "anchors")
    return dirs


def rlcc_public_npz() -> Path | None:
    """Path of ``rlcc_public_policy.npz``, or None when absent."""
    for d in anchor_dirs():
        p = d / RLCC_NPZ
        if p.is_file():
            return p
    return None


def cache_dir() -> Path:
    """A writable cache folder outside the repository for converted policies."""
    candidates = []
    if os.environ.get("CCGYM_CACHE"):
        candidates.append(Path(os.environ["CCGYM_CACHE"]))
    if os.environ.get("XDG_CACHE_HOME"):
        candidates.append(Path(os.environ["XDG_CACHE_HOME"]) / "ccgym")
    candidates.append(Path.home() / ".cache" / "ccgym")
    candidates.append(Path(tempfile.gettempdir()) / f"ccgym-cache-{os.getuid()}")
    for c in candidates:
        try:
            c.mkdir(parents=True, exist_ok=True)
            if os.access(c, os.W_OK):
                return c
        except OSError:
            continue
    raise OSError("no writable cache folder for converted policies")


def rlcc_public_policy(npz: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The published RL-CC network as a policy dict (converted from the anchor ``.npz``).

    Architecture (anchors/README.md): bias-free ``4 -> 12 -> 12 -> 1``, ReLU, tanh output;
    input ``[m_{k-1}, d_{k-1}, m_k, d_k]`` = the ADPG features ``["action", "adpg"]`` with
    history 2 (:data:`ADPG_AGENT`).

    Raises:
        FileNotFoundError: the anchor file is not there.
    """
    path = Path(npz) if npz is not None else rlcc_public_npz()
    if path is None or not path.is_file():
        where = ", ".join(str(d) for d in anchor_dirs())
        raise FileNotFoundError(f"{RLCC_NPZ} not found (looked in {where}; set CCGYM_ANCHORS)")
    with np.load(path) as z:
        w0, w2, wo = z["net.0.weight"], z["net.2.weight"], z["output_layer.weight"]
    return mlp_policy(
        [(w0, None, "relu"), (w2, None, "relu"), (wo, None, "none")],
        "tanh",
        meta={
            "name": RLCC_PUBLIC,
            "source": "published RL-CC (ADPG) network, Fuhrer et al. CCGrid 2023; "
            f"converted at run time from {path.name}",
            "agent": dict(ADPG_AGENT),
        },
    )


def _rlcc_public_file() -> Path:
    npz = rlcc_public_npz()
    policy = rlcc_public_policy(npz)
    text = _dumps(policy)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = cache_dir() / f"{RLCC_PUBLIC}-{digest}.json"
    if not path.is_file():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return path


def policy_path(spec: str | os.PathLike[str]) -> Path:
    """Resolve a policy name or path to a policy JSON file.

    Raises:
        FileNotFoundError: neither a file nor a known name.
    """
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    p = Path(spec)
    if p.is_file():
        return p.resolve()
    if spec == RLCC_PUBLIC:
        return _rlcc_public_file()
    if "/" not in spec and os.sep not in spec:
        bundled = POLICY_DIR / f"{spec.removesuffix('.json')}.json"
        if bundled.is_file():
            return bundled
    known = ", ".join(bundled_policies()) or "none"
    raise FileNotFoundError(f'policy "{spec}": no such file and no bundled policy ({known})')


def load_policy(spec: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Load a policy dict from a name, a path, or return a copy of a dict."""
    if isinstance(spec, Mapping):
        policy = copy.deepcopy(dict(spec))
        validate_policy(policy)
        return policy
    path = policy_path(spec)
    try:
        policy = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise not_utf8(f"policy file {path}", e) from None
    except json.JSONDecodeError as e:
        raise invalid_json(f"policy file {path}", e) from None
    try:
        if not isinstance(policy, dict):
            raise ValueError(f"holds a JSON {type(policy).__name__}, not an object")
        validate_policy(policy)
    except (ValueError, TypeError, KeyError) as e:  # the structure, checked by validate_policy
        what = f"missing {e}" if isinstance(e, KeyError) else str(e)
        raise ScenarioError(f"policy file {path}: {what}") from None
    return policy


# --------------------------------------------------------------------------- scenarios


def agent_table(policy: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """The ``[agent]`` table for ``policy``: ``meta.agent`` of the file, else :data:`ADPG_AGENT`,
    updated with ``extra``."""
    meta_agent = ((policy or {}).get("meta") or {}).get("agent")
    table = dict(meta_agent) if isinstance(meta_agent, Mapping) else dict(ADPG_AGENT)
    table.update(extra)
    return table


def use_policy(
    scenario: Mapping[str, Any],
    policy: str | os.PathLike[str],
    *,
    precision: str = "float32",
    agent: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A copy of a scenario dict whose flows all run the native ``policy``.

    Sets ``[cc] algorithm = "agent"`` (every workload and flow) and the ``[agent]`` table:
    the policy's own ``meta.agent`` (or the ADPG features when it has none), then the
    scenario's own ``[agent]`` entries (so that ``--set agent.KEY=VALUE`` reaches the run), then
    ``agent``, then ``policy = <absolute path>`` and ``precision``.

    Args:
        scenario: a scenario dict (e.g. from :func:`ccgym.load_scenario`).
        policy: a policy name or path (see :func:`policy_path`).
        precision: ``"float32"`` or ``"int8"``.
        agent: further ``[agent]`` settings (e.g. ``{"policy_delay": "0s"}``).
    """
    from ccgym.scenario import set_cc

    if precision not in PRECISIONS:
        raise ScenarioError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    path = policy_path(policy)
    data = copy.deepcopy(dict(scenario))
    set_cc(data, "agent")
    own = scenario.get("agent")
    own_table = dict(own) if isinstance(own, Mapping) else {}
    table = agent_table(load_policy(path), **own_table, **dict(agent or {}))
    table["policy"] = str(path)
    table["precision"] = precision
    data["agent"] = table
    return data


def record_observations(
    policy: Mapping[str, Any] | str | os.PathLike[str],
    scenarios: Iterable[str | Mapping[str, Any]],
    *,
    overrides: Iterable[str] | None = None,
    max_obs: int = 20000,
    seed: int = 0,
    agent: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Run scenarios with ``policy`` in the loop (numpy float32) and record its observations.

    Used for int8 calibration and the int8-vs-float32 check. Every flow runs the policy through
    the agent bridge (``Simulation.agent_step``); at most ``max_obs`` observations are kept in
    total (a uniform random subset when there are more).
    """
    from ccgym.runner import native, scenario_json
    from ccgym.scenario import load_scenario

    pol = load_policy(policy)
    sim_mod = native()
    chunks = []
    for spec in scenarios:
        data, base_dir = load_scenario(spec, overrides, cc="agent")
        data["agent"] = agent_table(pol, **dict(agent or {}))
        sim = sim_mod.Simulation(scenario_json(data), str(base_dir))
        over = False
        while not over:
            over, batch = sim.agent_step()
            obs = batch["obs"]
            if len(obs):
                live = ~(batch["done"] | batch["truncated"])
                chunks.append(obs[live])
                actions = forward(pol, obs)[:, 0] if len(obs) else np.zeros(0, np.float32)
                sim.agent_act(np.ascontiguousarray(actions, dtype=np.float32))
    dim = policy_inputs(pol)
    allobs = np.concatenate(chunks) if chunks else np.zeros((0, dim), np.float32)
    if len(allobs) > max_obs:
        rng = np.random.default_rng(seed)
        allobs = allobs[np.sort(rng.choice(len(allobs), max_obs, replace=False))]
    return allobs.astype(np.float32)


def evaluate(
    policy: str | os.PathLike[str],
    scenario: str | Mapping[str, Any],
    *,
    overrides: Iterable[str] | None = None,
    precision: str = "float32",
    agent: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> Any:
    """Run a scenario with every flow on the native ``policy``; returns a :class:`ccgym.Result`.

    ``overrides`` apply to the scenario first (``"duration=50ms"``, ``"seed=2"``).
    """
    from ccgym.runner import run
    from ccgym.scenario import load_scenario

    data, _ = load_scenario(scenario, overrides)  # workload CDF paths come back absolute
    data = use_policy(data, policy, precision=precision, agent=agent)
    return run(data, progress=progress)


# --------------------------------------------------------------------------- queue agents (ACC)

QUEUE_AGENT_KEYS = (
    "queue_interval",
    "queue_history",
    "ecn_profiles",
    "policy_delay",
    "reward_beta",
    "reward_scale",
)
"""The ``[agent]`` keys a switch-queue policy is trained with (recorded in ``meta.agent``)."""


def export_q_network(
    module: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    agent: Mapping[str, Any] | None = None,
    calibration_obs: Any = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Export a DDQN Q-network (``ccgym.agents.ddqn.QNetwork``, or any torch MLP of ``Linear``
    and ``ReLU`` layers) as a queue-agent policy: a ``ccgym-mlp`` with output ``"none"``, one
    output per ECN profile, that the simulator runs when a scenario names it in
    ``agent.queue_policy`` (every queue agent takes the argmax, ties to the lowest index).

    Args:
        module: the Q-network (duck-typed: no torch import here).
        path: where to write the file (optional).
        agent: the ``[agent]`` table it was trained with; its queue-agent keys
            (:data:`QUEUE_AGENT_KEYS`, plus ``queues``) go to ``meta.agent``, which
            :func:`use_queue_policy` copies into the scenarios it evaluates.
        calibration_obs: recorded queue observations, for int8 calibration.
        meta: further ``meta`` entries (training config, provenance).
    """
    info: dict[str, Any] = {"algorithm": "ddqn", "action": "argmax over agent.ecn_profiles"}
    if agent is not None:
        info["agent"] = {k: agent[k] for k in (*QUEUE_AGENT_KEYS, "queues") if k in agent}
    info.update(meta or {})
    return export_module(
        module, path, output="none", calibration_obs=calibration_obs, percentile=None, meta=info
    )


def use_queue_policy(
    scenario: Mapping[str, Any],
    policy: str | os.PathLike[str],
    *,
    agent: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A copy of a scenario dict whose switch-queue agents all run the native ``policy``.

    The ``[agent]`` table is the scenario's own, with every key of the policy's ``meta.agent``
    that the scenario does not set (so that ``--set agent.KEY=VALUE`` and the scenario's
    choice of queues win), then ``agent``, then ``queue_policy = <absolute path>``. Flows keep
    their congestion control.
    """
    path = policy_path(policy)
    data = copy.deepcopy(dict(scenario))
    own = data.get("agent")
    table = dict(own) if isinstance(own, Mapping) else {}
    meta_agent = (load_policy(path).get("meta") or {}).get("agent")
    if isinstance(meta_agent, Mapping):
        for k, v in meta_agent.items():
            table.setdefault(k, copy.deepcopy(v))
    table.update(agent or {})
    table["queue_policy"] = str(path)
    data["agent"] = table
    return data


def greedy_templates(policy: Mapping[str, Any], obs: Any, precision: str = "float32") -> np.ndarray:
    """The ECN profile index each queue observation gets from a Q-network ``policy``, as the
    simulator chooses it: argmax of :func:`forward`, ties to the lowest index."""
    q = forward(policy, obs, precision)
    return np.argmax(q, axis=1).astype(np.int64)
