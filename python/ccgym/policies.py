"""Native policies: export, import, calibration and evaluation of small MLP policies.

A *native policy* is a small multilayer perceptron stored as JSON (format ``ccgym-mlp``,
version 1) that the simulator evaluates itself, in float32 or int8, so that a learned
congestion control runs at thousands of flows without Python in the loop::

    {"format": "ccgym-mlp", "version": 1,
     "layers": [{"weight": [[...]], "bias": [...] or null, "activation": "relu"}, ...],
     "output": "tanh",
     "int8": {"input_amax": [one per layer]},
     "meta": {...}}

``weight`` has the PyTorch ``Linear`` layout ``[out][in]``. Any weight or bias may instead be
*packed*: ``{"shape": [rows, cols], "f32": "<base64>"}``, the little-endian float32 values
row-major in standard base64 (:func:`pack_array`). The values are exactly the list form's;
:func:`save_policy` packs arrays of more than :data:`PACK_ABOVE` values (a recurrent MVFST-RL
network is a quarter of the size and loads in a fraction of the time), and :func:`load_policy`
gives back plain lists, so the rest of this module sees one form. ``meta.agent`` (optional) is the
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

import base64
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

PACK_ABOVE = 65_536
"""Arrays with more values than this are written packed (base64 float32) by :func:`save_policy`."""

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
    if policy.get("format") == FORMAT and policy.get("version") == RECURRENT_VERSION:
        _check_steps(policy)
        return
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
    first = policy["layers"][0]
    if first.get("kind") == "lstm":
        return len(first["weight_ih"][0])
    return len(first["weight"][0])


def save_policy(policy: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a policy dict as compact JSON (one line per layer, arrays of more than
    :data:`PACK_ABOVE` values packed); returns the path."""
    validate_policy(load_policy(policy) if _has_packed(policy) else policy)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(_dumps(policy), encoding="utf-8")
    os.replace(tmp, out)
    return out


_ARRAY_KEYS = ("weight", "bias", "weight_ih", "weight_hh", "bias_ih", "bias_hh")


def pack_array(values: Any) -> dict[str, Any]:
    """The packed form of a weight matrix or bias vector: its shape and its float32 values,
    little-endian, row-major, in standard base64."""
    a = np.ascontiguousarray(np.asarray(values, dtype="<f4"))
    return {"shape": list(a.shape), "f32": base64.b64encode(a.tobytes()).decode("ascii")}


def unpack_array(packed: Mapping[str, Any]) -> list[Any]:
    """The nested lists of a packed array (:func:`pack_array`).

    Raises:
        ValueError: a malformed packed array (unknown fields, bad base64, size not the shape's).
    """
    extra = set(packed) - {"shape", "f32"}
    if extra:
        raise ValueError(
            f'packed array: unknown field "{sorted(extra)[0]}" (expected "shape" and "f32")'
        )
    shape, text = packed.get("shape"), packed.get("f32")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError('packed array: "shape" must be a list of sizes')
    if not isinstance(text, str):
        raise ValueError('packed array: "f32" must be a base64 string')
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError as e:
        raise ValueError(f'packed array: "f32" is not base64: {e}') from None
    n = int(np.prod(shape, dtype=np.int64))
    if len(raw) != 4 * n:
        raise ValueError(
            f"packed array: shape {shape} needs {n} float32 values, the data holds {len(raw)} bytes"
        )
    return np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float64).tolist()


def _unpacked(policy: dict[str, Any]) -> dict[str, Any]:
    """``policy`` with every packed array of its layers turned into lists (in place)."""
    for layer in policy.get("layers") or []:
        if isinstance(layer, dict):
            for key in _ARRAY_KEYS:
                if isinstance(layer.get(key), Mapping):
                    layer[key] = unpack_array(layer[key])
    return policy


def _has_packed(policy: Mapping[str, Any]) -> bool:
    layers = policy.get("layers") or []
    return any(
        isinstance(la, Mapping) and any(isinstance(la.get(k), Mapping) for k in _ARRAY_KEYS)
        for la in layers
    )


def _packed_layer(layer: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(layer)
    for key in _ARRAY_KEYS:
        v = out.get(key)
        if v is not None and not isinstance(v, Mapping) and np.size(v) > PACK_ABOVE:
            out[key] = pack_array(v)
    return out


def _dumps(policy: Mapping[str, Any]) -> str:
    head = {k: v for k, v in policy.items() if k != "layers"}
    layers = ",\n  ".join(
        json.dumps(_packed_layer(la), separators=(",", ":")) for la in policy["layers"]
    )
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


def forward(
    policy: Mapping[str, Any],
    obs: Any,
    precision: str = "float32",
    *,
    extra: Any = None,
    state: np.ndarray | None = None,
) -> np.ndarray:
    """Evaluate a policy on a batch of observations with numpy, as the simulator does.

    A version-2 policy with ``concat`` or ``lstm`` steps is evaluated by
    :func:`forward_steps` (``obs`` rows are then consecutive decisions of one agent, with
    ``extra`` and ``state`` as there).

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
    if is_stepped(policy):
        if precision != "float32":
            raise ValueError("int8 inference does not support concat or lstm layers")
        return forward_steps(policy, obs, extra=extra, state=state)
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
    policy: str | os.PathLike[str] | Mapping[str, Any],
    obs: Any,
    precision: str = "float32",
    *,
    extra: Any = None,
    all_outputs: bool = False,
) -> np.ndarray:
    """Evaluate a policy (name, path or dict) on a batch of observations with the simulator's
    own inference (float32 or int8), as a flow running it would; shape ``(K, outputs)``
    (``all_outputs``: every output of the last layer, e.g. a value head after the action's).

    int8 agrees with :func:`forward` bit for bit, apart from a ``tanh`` activation (the
    simulator's comes from the C library, numpy's from numpy; they can differ in the last bits).
    A recurrent (version-2) policy takes the rows as consecutive decisions of one agent from a
    zero state, with ``extra`` (``(K,)``: its last reward at each) for the ``concat`` steps.
    """
    from ccgym.runner import native

    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    text = _dumps(load_policy(policy))
    x = np.ascontiguousarray(np.atleast_2d(np.asarray(obs, dtype=np.float32)))
    ex = None
    if extra is not None:
        ex = np.ascontiguousarray(np.asarray(extra, dtype=np.float32).reshape(len(x), 1))
    return np.asarray(native().policy_forward(text, x, precision, ex, all_outputs))


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
    check_int8_capable(policy)
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
        policy = _unpacked(copy.deepcopy(dict(spec)))
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
        validate_policy(_unpacked(policy))
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
    precision: str | None = None,
    agent: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A copy of a scenario dict whose flows all run the native ``policy``.

    Sets ``[cc] algorithm = "agent"`` (every workload and flow) and the ``[agent]`` table:
    the policy's own ``meta.agent`` (or the ADPG features when it has none), then the
    scenario's own ``[agent]`` entries (so that ``--set agent.KEY=VALUE`` reaches the run), then
    ``agent``, then ``policy = <absolute path>`` and the precision.

    The ``policy`` argument is the policy run: an ``agent.policy`` of the scenario (or of
    ``agent``) is replaced by it. The precision is ``precision`` when given, else the
    scenario's ``agent.precision`` (e.g. ``--set agent.precision=int8`` on a bench method
    ``policy:NAME``), else float32; the simulator refuses int8 for a policy file without int8
    calibration. ``precision`` given with another ``agent.precision`` in the scenario or in
    ``agent`` is an error.

    Args:
        scenario: a scenario dict (e.g. from :func:`ccgym.load_scenario`).
        policy: a policy name or path (see :func:`policy_path`).
        precision: ``"float32"`` or ``"int8"``; None: the scenario's ``agent.precision``, else
            ``"float32"``.
        agent: further ``[agent]`` settings (e.g. ``{"policy_delay": "0s"}``).

    Raises:
        ScenarioError: an unknown precision, or ``precision`` and ``agent.precision`` differ.
    """
    from ccgym.scenario import set_cc

    path = policy_path(policy)
    data = copy.deepcopy(dict(scenario))
    set_cc(data, "agent")
    own = scenario.get("agent")
    settings = {**(dict(own) if isinstance(own, Mapping) else {}), **dict(agent or {})}
    settings.pop("policy", None)  # the policy argument is the one run
    asked = settings.pop("precision", None)
    if precision is not None and asked is not None and asked != precision:
        raise ScenarioError(
            f"precision {precision!r} given, but the scenario sets agent.precision = {asked!r}: "
            "give one of them (or the same value)"
        )
    chosen = precision if precision is not None else asked if asked is not None else "float32"
    if chosen not in PRECISIONS:
        what = "precision" if precision is not None else "agent.precision"
        raise ScenarioError(f"{what} must be one of {', '.join(PRECISIONS)}, not {chosen!r}")
    table = agent_table(load_policy(path), **settings)
    table["policy"] = str(path)
    table["precision"] = chosen
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

    Every flow acts as it would with the policy run natively (:func:`chosen_actions`: the
    argmax of a discrete policy's scores, the output of a continuous one).

    A switch-queue policy (:func:`is_queue_policy`: a DDQN Q-network of ACC) records the queue
    agents' observations instead, with every queue agent taking the policy's greedy choice
    (:func:`record_queue_observations`).

    Raises:
        ScenarioError: a recurrent policy (:func:`check_int8_capable`), which has no int8 form.
    """
    from ccgym.runner import native, scenario_json
    from ccgym.scenario import load_scenario

    pol = load_policy(policy)
    if is_queue_policy(pol):
        return record_queue_observations(
            pol, scenarios, overrides=overrides, max_obs=max_obs, seed=seed, agent=agent
        )
    check_int8_capable(pol)
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
                sim.agent_act(np.ascontiguousarray(chosen_actions(pol, forward(pol, obs))))
    return _subsample(pol, chunks, max_obs, seed)


def chosen_actions(policy: Mapping[str, Any], outputs: Any) -> np.ndarray:
    """The actions the simulator takes from a batch of a policy's ``outputs`` (``(K, outputs)``,
    e.g. from :func:`forward`), as float32 for ``agent_act``: of the first ``action_outputs``
    outputs (all when the file does not say), the index of the largest score when there are
    several (a discrete policy: ties and NaN as ``crates/sim/src/policy.rs``'s ``argmax``: the
    lowest index, a NaN never wins), else the one output (a continuous action)."""
    out = np.asarray(outputs, dtype=np.float32).reshape(len(outputs), -1)
    n = int(policy.get("action_outputs") or out.shape[1])
    scores = out[:, :n]
    if n <= 1:
        return np.ascontiguousarray(scores[:, 0] if n else np.zeros(len(out), np.float32))
    scores = np.where(np.isnan(scores), np.float32(-np.inf), scores)
    return np.argmax(scores, axis=1).astype(np.float32)


def check_int8_capable(policy: Mapping[str, Any], what: str = "int8 calibration") -> None:
    """Refuses a recurrent (version-2) policy for int8 work: its ``concat`` and ``lstm`` steps
    run in float32 only (docs/mvfst.md), so there is nothing to calibrate, and its numpy
    reference evaluates one agent's decisions in order, not a batch of agents. Raises
    :class:`~ccgym.ScenarioError` (one line) saying so."""
    if is_stepped(policy):
        raise ScenarioError(
            f"{what}: a recurrent policy (concat or lstm steps, e.g. MVFST-RL's) runs in "
            "float32 only and has no int8 form; use it without int8 calibration"
        )


def _subsample(pol: Mapping[str, Any], chunks: list[Any], max_obs: int, seed: int) -> np.ndarray:
    """The recorded observations, at most ``max_obs`` of them (a uniform random subset)."""
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
    precision: str | None = None,
    agent: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> Any:
    """Run a scenario with every flow on the native ``policy``; returns a :class:`ccgym.Result`.

    ``overrides`` apply to the scenario first (``"duration=50ms"``, ``"seed=2"``). ``precision``
    None: the scenario's ``agent.precision`` (an override may set it), else float32
    (:func:`use_policy`).
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


def is_queue_policy(policy: Mapping[str, Any]) -> bool:
    """Whether ``policy`` is a switch-queue policy (a Q-network run by ``agent.queue_policy``):
    ``meta.algorithm = "ddqn"``, or queue-agent keys (``queue_history``) in ``meta.agent``."""
    meta = policy.get("meta") or {}
    if not isinstance(meta, Mapping):
        return False
    agent = meta.get("agent")
    return meta.get("algorithm") == "ddqn" or (
        isinstance(agent, Mapping) and "queue_history" in agent
    )


def record_queue_observations(
    policy: Mapping[str, Any] | str | os.PathLike[str],
    scenarios: Iterable[str | Mapping[str, Any]],
    *,
    overrides: Iterable[str] | None = None,
    max_obs: int = 20000,
    seed: int = 0,
    agent: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Run scenarios with every switch-queue agent taking the greedy choice of the queue
    policy ``policy`` (float32, stepped from Python) and record the queue observations, for
    int8 calibration of a queue policy.

    The ``[agent]`` table of each scenario is set up as :func:`use_queue_policy` does (the
    scenario's keys, then the policy's ``meta.agent``, then ``agent``); ``queues`` (default
    ``"all"``, every switch port) may be a tier name as in ``ccgym.acc.driver.switch_ports``.
    Flow agents, if the scenario has any, are answered by the native flow policy its
    ``agent.policy`` names. At most ``max_obs`` observations are kept in total.
    """
    from ccgym.acc.driver import switch_ports
    from ccgym.runner import native, scenario_json
    from ccgym.scenario import load_scenario

    pol = load_policy(policy)
    width = policy_inputs(pol)
    sim_mod = native()
    chunks = []
    for spec in scenarios:
        data, base_dir = load_scenario(spec, overrides)
        own = data.get("agent")
        table = dict(own) if isinstance(own, Mapping) else {}
        meta_agent = (pol.get("meta") or {}).get("agent")
        if isinstance(meta_agent, Mapping):
            for k, v in meta_agent.items():
                table.setdefault(k, copy.deepcopy(v))
        table.update(agent or {})
        table.pop("queue_policy", None)
        table.pop("precision", None)
        queues = table.get("queues", "all")
        table["queues"] = switch_ports(data, base_dir, queues)
        flow_policy = table.get("policy")
        flow_pol = None
        if flow_policy not in (None, "external"):
            flow_pol = load_policy(policy_path(flow_policy))
        table["policy"] = "external"
        data["agent"] = table
        sim = sim_mod.Simulation(scenario_json(data), str(base_dir))
        if sim.queue_obs_dim != width:
            raise ValueError(
                f"the queue policy takes {width} inputs, the queue agents of {spec} observe "
                f"{sim.queue_obs_dim} values (agent.queue_history?)"
            )
        over = False
        while not over:
            over, batch = sim.agent_step()
            flow_actions = np.zeros(len(batch["flow"]), np.float32)
            if len(flow_actions):
                if flow_pol is None:
                    raise ValueError(
                        f"{spec}: flow agents need a native flow policy (agent.policy) to record "
                        "queue observations"
                    )
                flow_actions = forward(flow_pol, np.asarray(batch["obs"], np.float32))[:, 0]
            q = batch["queue"]
            obs = np.asarray(q["obs"], np.float32)
            actions = np.zeros(len(obs), np.float32)
            if len(obs):
                live = ~(np.asarray(q["done"], bool) | np.asarray(q["truncated"], bool))
                chunks.append(obs[live])
                actions = greedy_templates(pol, obs).astype(np.float32)
            if len(obs) or len(flow_actions):
                sim.agent_act(np.ascontiguousarray(np.concatenate([flow_actions, actions])))
    return _subsample(pol, chunks, max_obs, seed)


def greedy_templates(policy: Mapping[str, Any], obs: Any, precision: str = "float32") -> np.ndarray:
    """The ECN profile index each queue observation gets from a Q-network ``policy``, as the
    simulator chooses it: argmax of :func:`forward`, ties to the lowest index."""
    q = forward(policy, obs, precision)
    return np.argmax(q, axis=1).astype(np.int64)


# --------------------------------------------------------------------------- recurrent (version 2)

RECURRENT_VERSION = 2
"""The ``version`` of a policy file with ``concat`` or ``lstm`` steps (or ``action_outputs``)."""

STEP_KINDS = ("dense", "concat", "lstm")


def is_stepped(policy: Mapping[str, Any]) -> bool:
    """Whether a policy has ``concat`` or ``lstm`` steps (a version-2 file; evaluated one
    decision at a time, with a state per agent)."""
    return any(la.get("kind", "dense") != "dense" for la in policy.get("layers") or [])


def _check_steps(policy: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """Checks a version-2 policy; returns (inputs, outputs, extra inputs, state floats)."""
    layers = policy.get("layers")
    if not isinstance(layers, list) or not layers:
        raise ValueError("the policy has no layers")
    width: int | None = None
    inputs = extra = state = 0
    for i, la in enumerate(layers):
        if not isinstance(la, Mapping):
            raise ValueError(f"layer {i}: not an object")
        kind = la.get("kind", "dense")
        if kind not in STEP_KINDS:
            raise ValueError(f"layer {i}: unknown kind {kind!r} (use {', '.join(STEP_KINDS)})")
        if kind == "concat":
            if width is None:
                raise ValueError(f"layer {i}: a concat step needs a layer before it")
            if la.get("source") != "reward" or la.get("size", 1) != 1:
                raise ValueError(f'layer {i}: concat takes source "reward" of size 1')
            clip = la.get("clip")
            if clip is not None and not (len(clip) == 2 and float(clip[0]) <= float(clip[1])):
                raise ValueError(f"layer {i}: clip must be [low, high] with low <= high")
            extra += 1
            width += 1
            continue
        if kind == "lstm":
            w_ih = np.asarray(la["weight_ih"], dtype=np.float32)
            w_hh = np.asarray(la["weight_hh"], dtype=np.float32)
            if w_ih.ndim != 2 or w_ih.shape[0] == 0 or w_ih.shape[0] % 4:
                raise ValueError(f"layer {i}: weight_ih must have 4 H rows (gates i, f, g, o)")
            hidden = w_ih.shape[0] // 4
            if w_hh.shape != (4 * hidden, hidden):
                raise ValueError(f"layer {i}: weight_hh must be [{4 * hidden}][{hidden}]")
            for key in ("bias_ih", "bias_hh"):
                b = la.get(key)
                if b is not None and np.asarray(b).shape != (4 * hidden,):
                    raise ValueError(f"layer {i}: {key} must have {4 * hidden} values")
            n_in = w_ih.shape[1]
            out = hidden
            state += 2 * hidden
            arrays = [w_ih, w_hh, *(np.asarray(la.get(k) or 0.0) for k in ("bias_ih", "bias_hh"))]
        else:
            w = np.asarray(la["weight"], dtype=np.float32)
            if w.ndim != 2 or w.size == 0:
                raise ValueError(f"layer {i}: weight must be a non-empty [out][in] matrix")
            if la.get("activation", "none") not in ACTIVATIONS:
                raise ValueError(f"layer {i}: unknown activation {la.get('activation')!r}")
            b = la.get("bias")
            if b is not None and np.asarray(b).shape != (w.shape[0],):
                raise ValueError(f"layer {i}: bias has the wrong length")
            n_in, out = w.shape[1], w.shape[0]
            arrays = [w, np.asarray(b if b is not None else 0.0)]
        if width is not None and n_in != width:
            raise ValueError(f"layer {i}: takes {n_in} inputs, previous layer gives {width}")
        if width is None:
            inputs = n_in
        if not all(np.all(np.isfinite(a)) for a in arrays):
            raise ValueError(f"layer {i}: weights must be finite")
        width = out
    if policy.get("output", "none") not in ACTIVATIONS:
        raise ValueError(f"unknown output activation {policy.get('output')!r}")
    outputs = int(width or 0)
    actions = policy.get("action_outputs")
    if actions is not None and not (1 <= int(actions) <= outputs):
        raise ValueError(f"action_outputs is {actions} but the last layer has {outputs} outputs")
    return inputs, outputs, extra, state


def dense_step(weight: Any, bias: Any = None, activation: str = "none") -> dict[str, Any]:
    """A dense step ``activation(W x + b)`` (``weight`` ``[out][in]``, PyTorch layout)."""
    w = np.asarray(weight, dtype=np.float32)
    b = None if bias is None else np.asarray(bias, dtype=np.float32).reshape(-1).tolist()
    return {"weight": w.tolist(), "bias": b, "activation": activation}


def concat_step(clip: tuple[float, float] | None = (-1.0, 1.0)) -> dict[str, Any]:
    """A step that appends the agent's last reward (clipped to ``clip``) to the vector, as
    MVFST-RL's ``torch.cat([x, clamp(reward, -1, 1)])``."""
    step: dict[str, Any] = {"kind": "concat", "source": "reward", "size": 1}
    if clip is not None:
        step["clip"] = [float(clip[0]), float(clip[1])]
    return step


def lstm_step(
    weight_ih: Any, weight_hh: Any = None, bias_ih: Any = None, bias_hh: Any = None
) -> dict[str, Any]:
    """An LSTM step: the arrays of one PyTorch ``nn.LSTM`` layer (gate order i, f, g, o), or
    the module itself (duck typing, first layer: ``weight_ih_l0`` ...; no torch import)."""
    if hasattr(weight_ih, "weight_ih_l0"):
        lstm = weight_ih
        if getattr(lstm, "num_layers", 1) != 1 or getattr(lstm, "bidirectional", False):
            raise ValueError("only a one-layer, one-direction nn.LSTM can be exported")
        if getattr(lstm, "proj_size", 0):
            raise ValueError("an nn.LSTM with proj_size cannot be exported")

        def arr(name: str) -> np.ndarray | None:
            t = getattr(lstm, name, None)
            return None if t is None else t.detach().cpu().numpy().astype(np.float32)

        weight_ih, weight_hh = arr("weight_ih_l0"), arr("weight_hh_l0")
        bias_ih, bias_hh = arr("bias_ih_l0"), arr("bias_hh_l0")
    step: dict[str, Any] = {
        "kind": "lstm",
        "weight_ih": np.asarray(weight_ih, dtype=np.float32).tolist(),
        "weight_hh": np.asarray(weight_hh, dtype=np.float32).tolist(),
    }
    for key, b in (("bias_ih", bias_ih), ("bias_hh", bias_hh)):
        step[key] = None if b is None else np.asarray(b, dtype=np.float32).reshape(-1).tolist()
    return step


def stepped_policy(
    steps: Sequence[Mapping[str, Any]],
    output: str = "none",
    *,
    action_outputs: int | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A version-2 policy dict from steps (:func:`dense_step`, :func:`concat_step`,
    :func:`lstm_step`). ``action_outputs``: the first outputs are the action's scores (e.g.
    policy logits stacked over a value head); the simulator ignores the rest.

    Raises:
        ValueError: shapes do not chain, a value is not finite, or a step is malformed.
    """
    policy: dict[str, Any] = {
        "format": FORMAT,
        "version": RECURRENT_VERSION,
        "layers": [dict(s) for s in steps],
        "output": output,
    }
    if action_outputs is not None:
        policy["action_outputs"] = int(action_outputs)
    if meta is not None:
        policy["meta"] = dict(meta)
    _check_steps(policy)
    return policy


def state_len(policy: Mapping[str, Any]) -> int:
    """Floats of recurrent state one agent keeps (h and c of every ``lstm`` step)."""
    return _check_steps(policy)[3] if is_stepped(policy) else 0


def forward_steps(
    policy: Mapping[str, Any],
    obs: Any,
    *,
    extra: Any = None,
    state: np.ndarray | None = None,
) -> np.ndarray:
    """The Python reference of the simulator's version-2 inference (float32): ``obs`` rows are
    consecutive decisions of ONE agent; the LSTM state runs through them.

    Args:
        policy: a policy dict with ``concat`` / ``lstm`` steps.
        obs: ``(K, inputs)`` (or ``(inputs,)``).
        extra: the agent's last reward at each decision, ``(K,)`` or ``(K, concat steps)``
            (default zeros); clipped by the ``concat`` steps.
        state: the agent's state (:func:`state_len` float32 values, h then c per ``lstm``
            step), updated in place; default: a zero state (a fresh agent).

    Returns:
        ``(K, outputs)``: every output of the last layer (the action's first).
    """
    _, outputs, n_extra, n_state = _check_steps(policy)
    x = np.atleast_2d(np.asarray(obs, dtype=np.float32))
    k = len(x)
    ex = np.zeros((k, n_extra), np.float32) if extra is None else np.asarray(extra, np.float32)
    ex = ex.reshape(k, -1) if ex.size else np.zeros((k, n_extra), np.float32)
    if ex.shape[1] == 1 and n_extra > 1:
        ex = np.repeat(ex, n_extra, axis=1)
    st = np.zeros(n_state, np.float32) if state is None else state
    if st.shape != (n_state,):
        raise ValueError(f"state must have {n_state} values, not {st.shape}")
    prepared = []
    for la in policy["layers"]:
        kind = la.get("kind", "dense")
        if kind == "lstm":
            h = len(la["weight_hh"][0])
            zero = np.zeros(4 * h, np.float32)
            b = sum(
                (np.asarray(la[k], np.float32) if la.get(k) is not None else zero)
                for k in ("bias_ih", "bias_hh")
            )
            prepared.append(
                (
                    "lstm",
                    np.asarray(la["weight_ih"], np.float32),
                    np.asarray(la["weight_hh"], np.float32),
                    b,
                    h,
                )
            )
        elif kind == "concat":
            clip = la.get("clip")
            prepared.append(("concat", None if clip is None else (clip[0], clip[1])))
        else:
            w = np.asarray(la["weight"], np.float32)
            b = la.get("bias")
            bias = np.zeros(w.shape[0], np.float32) if b is None else np.asarray(b, np.float32)
            prepared.append(("dense", w, bias, la.get("activation", "none")))
    out = np.zeros((k, outputs), np.float32)
    for t in range(k):
        v = x[t]
        e = 0
        at = 0
        for p in prepared:
            if p[0] == "dense":
                v = _act((p[1] @ v + p[2]).astype(np.float32), p[3])
            elif p[0] == "concat":
                r = ex[t, e]
                if p[1] is not None:
                    r = np.clip(r, np.float32(p[1][0]), np.float32(p[1][1]))
                v = np.concatenate([v, np.array([r], np.float32)])
                e += 1
            else:
                _, w_ih, w_hh, b, h = p
                hs, cs = st[at : at + h], st[at + h : at + 2 * h]
                g = (w_ih @ v + w_hh @ hs + b).astype(np.float32)
                i, f = _sigmoid(g[:h]), _sigmoid(g[h : 2 * h])
                gg, o = np.tanh(g[2 * h : 3 * h]), _sigmoid(g[3 * h :])
                c = (f * cs + i * gg).astype(np.float32)
                hn = (o * np.tanh(c)).astype(np.float32)
                st[at : at + h], st[at + h : at + 2 * h] = hn, c
                v = hn
                at += 2 * h
        out[t] = _act(np.asarray(v, np.float32), policy.get("output", "none"))
    return out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp(-x) = inf gives 0, as in the simulator
        return (np.float32(1.0) / (np.float32(1.0) + np.exp(-x))).astype(np.float32)
