"""Native policies: the format, numpy inference, the published RL-CC network, the simulator's
float32 and int8 inference, and the scenario helpers (``ccgym.policies``).

Needs numpy and the native module only; the comparison with a torch module is skipped without
torch, the RL-CC tests without the shared anchor file.

How the simulator's own inference is observed: the policy under test is wrapped so that its
input is a constant (a first layer with zero weights whose bias is the observation) and its
output ``a`` in (-1, 1) becomes a rate ``y = 0.5 + 0.25 a`` of line rate (``[agent] action =
"rate"``). One flow of a fixed size then runs at exactly that rate after its first decision, so
its completion time (FCT, picosecond resolution) is a strictly decreasing function of ``y``. A
native output is checked against a reference value ``a*`` with tolerance ``tol`` by running two
constant-rate flows at ``a* - tol`` and ``a* + tol`` and requiring the FCT of the policy's flow
to lie between theirs.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ccgym._sim")

import ccgym  # noqa: E402
from ccgym import ScenarioError  # noqa: E402
from ccgym import policies as P  # noqa: E402
from ccgym.scenario import load_scenario  # noqa: E402

# anchors/README.md: the multiplier of the published RL-CC network against the ADPG error d.
RLCC_TABLE = [
    (-0.768, 1.049),
    (-0.4, 1.028),
    (0.0, 1.004),
    (0.2, 0.987),
    (0.768, 0.942),
    (2.0, 0.877),
    (10.0, 0.833),
]
TABLE_TOL = 6e-4  # the table has three decimals

FLOW_BYTES = 2_000_000


def rlcc_input(d: float, m: float = 1.0) -> np.ndarray:
    """The input convention that reproduces the table: ``[m_{k-1}, d_{k-1}, m_k, d_k]`` with a
    constant d over both rows and the multiplier 1.0 (the value before a flow's first decision,
    which the bridge repeats over the history)."""
    return np.array([m, d, m, d], dtype=np.float32)


@pytest.fixture(scope="module")
def rlcc() -> dict[str, Any]:
    if P.rlcc_public_npz() is None:
        pytest.skip(f"{P.RLCC_NPZ} not available (set CCGYM_ANCHORS)")
    return P.load_policy(P.RLCC_PUBLIC)


# --------------------------------------------------------------------------- native probe


def _const_policy(y: float, inputs: int) -> dict[str, Any]:
    return P.mlp_policy([(np.zeros((1, inputs)), [y], "none")], "none")


def _wrapped(policy: dict[str, Any], x: np.ndarray, inputs: int) -> dict[str, Any]:
    """``policy`` evaluated on the constant ``x``, its output mapped to ``0.5 + 0.25 a``."""
    layers = [(np.zeros((len(x), inputs)), x, "none")]
    src = policy["layers"]
    for i, la in enumerate(src):
        act = la["activation"] if i < len(src) - 1 else policy.get("output", "none")
        layers.append((la["weight"], la.get("bias"), act))
    layers.append(([[0.25]], [0.5], "none"))
    amax = None
    if policy.get("int8"):
        amax = [1.0, *policy["int8"]["input_amax"], 1.0]
    return P.mlp_policy(layers, "none", input_amax=amax)


def _fct(policy: dict[str, Any], tmp: Path, precision: str = "float32") -> float:
    path = tmp / f"policy-{abs(hash(json.dumps(policy))) % 10**12}.json"
    P.save_policy(policy, path)
    scenario = {
        "name": "native-probe",
        "duration": "5ms",
        "topology": {"kind": "star", "hosts": 2, "link_rate": "100Gbps", "link_delay": "1us"},
        "cc": {"algorithm": "agent"},
        "agent": {
            **P.ADPG_AGENT,
            "action": "rate",
            "policy_delay": "0s",
            "policy": str(path),
            "precision": precision,
        },
        "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": FLOW_BYTES}]}],
    }
    fct = ccgym.run(scenario).series["flow_info"]["fct_s"].iloc[0]
    assert np.isfinite(fct)
    return float(fct)


def assert_native_output(
    policy: dict[str, Any],
    x: np.ndarray,
    expected: float,
    tol: float,
    tmp: Path,
    precision: str = "float32",
) -> None:
    """The simulator's output of ``policy`` on ``x`` is within ``tol`` of ``expected``."""
    inputs = 4  # the ADPG observation of the probe scenario
    fct = _fct(_wrapped(policy, x, inputs), tmp, precision)
    y_lo = np.float32(0.5 + 0.25 * (expected - tol))
    y_hi = np.float32(0.5 + 0.25 * (expected + tol))
    slow, fast = _fct(_const_policy(y_lo, inputs), tmp), _fct(_const_policy(y_hi, inputs), tmp)
    assert fast < slow, "the probe flow cannot resolve this tolerance"
    assert fast <= fct <= slow, (
        f"native output on {x} is outside {expected} +- {tol} (FCT {fct} not in [{fast}, {slow}])"
    )


def test_native_probe_resolves_small_differences(tmp_path: Path) -> None:
    # The method itself: a constant output is found inside a 1e-6 bracket and outside a
    # bracket shifted by 1e-5.
    const = P.mlp_policy([(np.zeros((1, 4)), None, "none")], "tanh")  # a = tanh(0) = 0
    x = np.zeros(4, np.float32)
    assert_native_output(const, x, 0.0, 1e-6, tmp_path)
    with pytest.raises(AssertionError, match="outside"):
        assert_native_output(const, x, 2e-5, 1e-5, tmp_path)


# --------------------------------------------------------------------------- RL-CC anchor


def test_rlcc_public_table_numpy(rlcc: dict[str, Any]) -> None:
    d = np.array([row[0] for row in RLCC_TABLE])
    want = np.array([row[1] for row in RLCC_TABLE])
    x = np.stack([rlcc_input(v) for v in d])
    got = P.multiplier(P.forward(rlcc, x)[:, 0])
    np.testing.assert_allclose(got, want, atol=TABLE_TOL)
    # Saturation beyond the table: d >= 10 stays at the smallest multiplier 1/1.2.
    big = P.multiplier(P.forward(rlcc, np.stack([rlcc_input(v) for v in (10, 50, 1000)]))[:, 0])
    np.testing.assert_allclose(big, 1 / 1.2, atol=TABLE_TOL)


def test_rlcc_public_table_native(rlcc: dict[str, Any], tmp_path: Path) -> None:
    for d, m in RLCC_TABLE[::2] + [RLCC_TABLE[-2]]:
        # multiplier tolerance -> action tolerance (dm/da = 0.2 m^2 below 1, 0.2 above)
        tol = TABLE_TOL / (0.2 * min(m, 1.0) ** 2)
        a = (m - 1) / 0.2 if m >= 1 else (1 - 1 / m) / 0.2
        assert_native_output(rlcc, rlcc_input(d), a, tol, tmp_path)


def test_rlcc_public_conversion(rlcc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path = P.policy_path(P.RLCC_PUBLIC)
    repo = Path(P.__file__).resolve().parents[2]
    assert repo not in path.parents, "the converted network must not be written into the repo"
    assert P.policy_inputs(rlcc) == 4
    assert [la["bias"] for la in rlcc["layers"]] == [None, None, None]
    assert rlcc["output"] == "tanh"
    assert rlcc["meta"]["agent"]["features"] == ["action", "adpg"]
    # CCGYM_ANCHORS points the search elsewhere first; a folder without the file is skipped.
    monkeypatch.setenv("CCGYM_ANCHORS", str(path.parent / "no-such-folder"))
    assert P.rlcc_public_npz() is not None
    assert P.RLCC_PUBLIC in P.bundled_policies()


# --------------------------------------------------------------------------- float32 / int8


def _mlp(seed: int, sizes: tuple[int, ...] = (4, 12, 12, 1), bias: bool = True) -> dict:
    rng = np.random.default_rng(seed)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        w = rng.normal(0, 1 / np.sqrt(n_in), (n_out, n_in))
        b = rng.normal(0, 0.1, n_out) if bias else None
        layers.append((w, b, "relu" if i < len(sizes) - 2 else "none"))
    return P.mlp_policy(layers, "tanh")


def test_forward_matches_a_plain_computation() -> None:
    pol = _mlp(1)
    x = np.random.default_rng(2).normal(0, 2, (50, 4)).astype(np.float32)
    h = x.astype(np.float64)
    for la in pol["layers"]:
        h = h @ np.asarray(la["weight"]).T + np.asarray(la["bias"])
        h = np.maximum(h, 0) if la["activation"] == "relu" else h
    np.testing.assert_allclose(P.forward(pol, x)[:, 0], np.tanh(h[:, 0]), atol=1e-5)


def test_torch_export_and_native_float32_match(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(4, 12), torch.nn.ReLU(), torch.nn.Linear(12, 12), torch.nn.ReLU(),
        torch.nn.Linear(12, 1),
    )  # fmt: skip
    pol = P.export_module(net, tmp_path / "net.json", output="tanh", meta={"agent": P.ADPG_AGENT})
    assert P.load_policy(tmp_path / "net.json") == pol
    x = np.random.default_rng(3).normal(0, 1.5, (200, 4)).astype(np.float32)
    x[:, [0, 2]] = np.abs(x[:, [0, 2]])
    with torch.no_grad():
        want = torch.tanh(net(torch.from_numpy(x)))[:, 0].numpy()
    np.testing.assert_allclose(P.forward(pol, x)[:, 0], want, atol=1e-5)
    for row, a in list(zip(x, want, strict=True))[:3]:
        assert_native_output(pol, row, float(a), 1e-5, tmp_path)


def test_native_float32_matches_numpy_reference(tmp_path: Path) -> None:
    pol = _mlp(4, bias=False)
    xs = np.array([[1.0, -0.8, 1.0, -0.8], [0.9, 0.3, 1.1, 0.1], [1.2, 3.0, 0.85, 2.5]])
    for x in xs.astype(np.float32):
        assert_native_output(pol, x, float(P.forward(pol, x)[0, 0]), 1e-5, tmp_path)


@pytest.fixture(scope="module")
def recorded(rlcc: dict[str, Any]) -> np.ndarray:
    """Observations of the RL-CC network driving a 4-to-1 incast (10 ms)."""
    obs = P.record_observations(
        rlcc,
        ["adpg-m2o-2"],
        overrides=[
            "topology.hosts=5",
            'switch.buffer="60MiB"',
            "duration=10ms",
            'workload[0].stop="10ms"',
            'metrics.window=["0ms", "10ms"]',
        ],
        max_obs=5000,
    )
    assert obs.shape[1] == 4 and len(obs) > 500
    return obs


def test_int8_actions_close_to_float32(rlcc: dict[str, Any], recorded: np.ndarray) -> None:
    q = P.with_calibration(rlcc, recorded)
    amax = q["int8"]["input_amax"]
    assert len(amax) == 3 and all(a > 0 for a in amax)
    a32 = P.forward(q, recorded)[:, 0]
    a8 = P.forward(q, recorded, "int8")[:, 0]
    m32, m8 = P.multiplier(a32), P.multiplier(a8)
    rel = np.abs(m8 - m32) / m32
    # The rate multipliers differ by under 1% on average and for 90% of the observations.
    # The tail is transients whose d is clipped by the per-tensor input scale (a d falling
    # from ~20 to ~4 within one decision): one scale cannot resolve both d ~ 0.1 and d ~ 20.
    assert rel.mean() < 0.01, rel.mean()
    assert np.percentile(rel, 90) < 0.01, np.percentile(rel, 90)
    assert np.abs(a8 - a32).mean() < 0.02
    # The plain maximum as calibration is much worse: the reason for the default.
    worse = P.with_calibration(rlcc, recorded, percentile=100)
    rel_max = np.abs(P.multiplier(P.forward(worse, recorded, "int8")[:, 0]) - m32) / m32
    assert rel_max.mean() > rel.mean()


def test_native_int8_matches_numpy_emulation(
    rlcc: dict[str, Any], recorded: np.ndarray, tmp_path: Path
) -> None:
    q = P.with_calibration(rlcc, recorded)
    for x in recorded[:: len(recorded) // 3][:3]:
        wrapped = _wrapped(q, x, 4)
        y = float(P.forward(wrapped, np.zeros((1, 4)), "int8")[0, 0])
        # The wrapper's own int8 output layer is part of the emulation: compare in y.
        a = (y - 0.5) / 0.25
        fct = _fct(wrapped, tmp_path, "int8")
        lo = _fct(_const_policy(np.float32(0.5 + 0.25 * (a - 1e-5)), 4), tmp_path)
        hi = _fct(_const_policy(np.float32(0.5 + 0.25 * (a + 1e-5)), 4), tmp_path)
        assert hi <= fct <= lo


def _edge_obs(rng: np.random.Generator, n: int, inputs: int) -> np.ndarray:
    """Random observations plus awkward ones: zeros of both signs, exact halves of the int8
    grid, values far outside the calibration range, infinities."""
    x = rng.normal(0, 2, (n, inputs)).astype(np.float32)
    special = np.array(
        [0.0, -0.0, 1e30, -np.inf, np.inf, 0.5 / 63.5, -2.5 / 63.5, 126.5 / 63.5], np.float32
    )
    rows = np.tile(np.float32(0.3), (len(special), inputs))
    for i, v in enumerate(special):
        rows[i, i % inputs] = v
    return np.concatenate([x, rows, np.zeros((1, inputs), np.float32)])


@pytest.mark.parametrize(
    ("sizes", "bias", "hidden"),
    [
        ((4, 12, 12, 1), False, "relu"),
        ((4, 12, 12, 1), True, "relu"),
        ((5, 17, 3), True, "none"),
        ((3, 40, 7, 2), True, "relu"),
        ((256, 9, 1), False, "relu"),
    ],
)
def test_native_int8_is_bit_identical_to_numpy(
    sizes: tuple[int, ...], bias: bool, hidden: str
) -> None:
    rng = np.random.default_rng(len(sizes) * 100 + sizes[1])
    layers = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        w = rng.normal(0, 1 / np.sqrt(n_in), (n_out, n_in))
        w[0, 0] = 0.0
        b = rng.normal(0, 0.1, n_out) if bias else None
        if b is not None:
            b[0] = -0.0
        layers.append((w, b, hidden if i < len(sizes) - 2 else "none"))
    amax = [2.0, 1.5, 3.0, 0.0][: len(layers)]  # 0: no calibration, scale 1
    pol = P.mlp_policy(layers, "none", input_amax=amax)
    x = _edge_obs(rng, 2000, sizes[0])
    native, ref = P.native_forward(pol, x, "int8"), P.forward(pol, x, "int8")
    np.testing.assert_array_equal(native.view(np.uint32), ref.view(np.uint32))
    # float32 is the same network to rounding (the sums are taken in another order).
    finite = np.isfinite(x).all(axis=1) & (np.abs(x) < 1e6).all(axis=1)
    np.testing.assert_allclose(
        P.native_forward(pol, x[finite]), P.forward(pol, x[finite]), rtol=1e-5, atol=1e-5
    )


def test_native_int8_bundled_policy_bit_identical() -> None:
    pol = P.load_policy("adpg-default")
    rng = np.random.default_rng(11)
    x = _edge_obs(rng, 5000, P.policy_inputs(pol))
    x[:5000, [0, 2]] = np.abs(x[:5000, [0, 2]]) * 0.2 + 0.85  # multipliers near 1
    x[:5000, [1, 3]] *= 10.0  # ADPG errors over several magnitudes
    pre = dict(pol, output="none")
    native, ref = P.native_forward(pre, x, "int8"), P.forward(pre, x, "int8")
    np.testing.assert_array_equal(native.view(np.uint32), ref.view(np.uint32))
    # With the tanh output: the C library's tanh against numpy's, a few ulp apart at most.
    np.testing.assert_array_max_ulp(P.native_forward(pol, x, "int8"), P.forward(pol, x, "int8"), 4)


def test_native_int8_bit_identical_on_recorded_observations(
    rlcc: dict[str, Any], recorded: np.ndarray
) -> None:
    q = dict(P.with_calibration(rlcc, recorded), output="none")
    native, ref = P.native_forward(q, recorded, "int8"), P.forward(q, recorded, "int8")
    np.testing.assert_array_equal(native.view(np.uint32), ref.view(np.uint32))


def test_quantise_definition() -> None:
    v = np.array(
        [0.5, 1.5, 2.5, -2.5, 0.49999997, 0.4999999, -0.4, 126.5, 127.4, 1e30, -np.inf, np.nan],
        np.float32,
    )
    assert P.quantise(v).tolist() == [1, 2, 3, -3, 1, 0, 0, 127, 127, 127, -127, 0]


def test_native_decision_cost_reports_both_precisions() -> None:
    from ccgym.perf import native_decision_ns

    row = native_decision_ns(iterations=2000, rounds=3)
    assert row["policy"] == "adpg-default" and row["layers"] == [4, 12, 12, 1]
    ns = row["ns_per_decision"]
    assert set(ns) == {"float32", "int8"}
    assert all(0 < t["min"] <= t["median"] for t in ns.values())
    assert row["int8_vs_float32"]["min"] == pytest.approx(ns["int8"]["min"] / ns["float32"]["min"])
    # A policy without int8 calibration: float32 only.
    plain = P.mlp_policy([(np.ones((1, 4)), None, "none")], "tanh")
    assert set(native_decision_ns(plain, iterations=100, rounds=1)["ns_per_decision"]) == {
        "float32"
    }


def test_native_decision_cost_sizes_rounds_by_time_for_a_slow_policy() -> None:
    # One native decision of mvfst-default's LSTM costs about a millisecond: a fixed 500,000
    # decisions per round took an hour. The rounds are now sized by time from a calibration.
    import time

    from ccgym.perf import NATIVE_MAX_ITERATIONS, native_decision_ns

    said: list[str] = []
    t0 = time.perf_counter()
    row = native_decision_ns("mvfst-default", rounds=2, budget_s=0.02, on_progress=said.append)
    assert time.perf_counter() - t0 < 60
    assert row["layers"][0] == 220 and row["layers"][-1] == 6  # dense, concat, lstm, heads
    assert 1 <= row["iterations"] < NATIVE_MAX_ITERATIONS and row["rounds"] == 2
    assert row["calibration"]["ns_per_decision"] > 0 and set(row["ns_per_decision"]) == {"float32"}
    assert said[0].startswith("calibrating") and said[-1].startswith("round 2 of 2")


def test_perf_policy_cli_budgets_about_a_second_per_round(monkeypatch, capsys) -> None:
    # `ccgym perf --policy NAME` with a policy of 1 ms per decision: about 1,000 per round.
    import ccgym.perf
    from ccgym.cli import main

    calls: list[int] = []

    class Slow:
        @staticmethod
        def bench_policy(text: str, iterations: int, precision: str) -> float:
            calls.append(iterations)
            return 1e6

    monkeypatch.setattr(ccgym.perf, "native", lambda: Slow)
    assert main(["perf", "--policy", "mvfst-default", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["iterations"] == 1000 and row["rounds"] == 5 and row["budget_s"] == 1.0
    assert sum(calls) < 1000 * 5 + 100  # the calibration took a few dozen decisions
    assert calls[-5:] == [1000] * 5


# --------------------------------------------------------------------------- files and names


def test_policy_files_roundtrip_and_validation(tmp_path: Path) -> None:
    pol = _mlp(5)
    path = P.save_policy(pol, tmp_path / "p.json")
    assert json.loads(path.read_text()) == pol
    assert P.load_policy(path) == pol
    with pytest.raises(ValueError, match="previous layer"):
        P.mlp_policy([(np.ones((3, 4)), None, "relu"), (np.ones((1, 2)), None, "none")])
    with pytest.raises(ValueError, match="activation"):
        P.mlp_policy([(np.ones((1, 4)), None, "gelu")])
    with pytest.raises(ValueError, match="format"):
        P.validate_policy({"format": "other", "version": 1, "layers": []})
    with pytest.raises(FileNotFoundError, match="no bundled policy"):
        P.policy_path("no-such-policy")
    with pytest.raises(ValueError, match="int8"):
        P.forward(pol, np.zeros(4), "int8")


def test_bundled_policy_names() -> None:
    names = P.bundled_policies()
    for name in names:
        if name != P.RLCC_PUBLIC:
            assert P.policy_path(name) == P.POLICY_DIR / f"{name}.json"
            P.load_policy(name)


def test_use_policy_makes_every_flow_an_agent(tmp_path: Path) -> None:
    pol = P.save_policy(_mlp(6, bias=False), tmp_path / "p.json")
    data, _ = load_scenario("adpg-m2o-16")
    data["workload"][0]["cc"] = {"algorithm": "dcqcn"}
    before = copy.deepcopy(data)
    out = P.use_policy(data, pol, precision="int8", agent={"policy_delay": "0s"})
    assert data == before, "the input scenario is not modified"
    assert out["cc"] == {"algorithm": "agent"} and "cc" not in out["workload"][0]
    assert out["agent"]["policy"] == str(pol) and os.path.isabs(out["agent"]["policy"])
    assert out["agent"]["precision"] == "int8" and out["agent"]["policy_delay"] == "0s"
    assert out["agent"]["features"] == ["action", "adpg"] and out["agent"]["history"] == 2


def test_use_policy_keeps_the_scenario_s_precision_and_takes_its_own_policy(
    tmp_path: Path,
) -> None:
    # `--set agent.precision=int8` on a bench method `policy:NAME` (no precision argument) runs
    # int8, through the simulator's check of the file's int8 calibration.
    data, _ = load_scenario("adpg-m2o-2", ["agent.precision=int8"])
    out = P.use_policy(data, "adpg-default")
    assert out["agent"]["precision"] == "int8"
    assert P.use_policy(data, "adpg-default", precision="int8")["agent"]["precision"] == "int8"
    plain, _ = load_scenario("adpg-m2o-2")
    assert P.use_policy(plain, "adpg-default")["agent"]["precision"] == "float32"
    with pytest.raises(ScenarioError, match="precision 'float32' given, but the scenario sets"):
        P.use_policy(data, "adpg-default", precision="float32")
    uncalibrated = P.load_policy("adpg-default")
    del uncalibrated["int8"]
    path = tmp_path / "nocal.json"
    path.write_text(json.dumps(uncalibrated))
    with pytest.raises(ScenarioError, match="no int8 calibration"):
        ccgym.run(P.use_policy(data, path))
    # agent.policy in the scenario as well as the argument: the argument is the policy run.
    other, _ = load_scenario("adpg-m2o-2", [f'agent.policy="{path}"'])
    out = P.use_policy(other, "adpg-default")
    assert out["agent"]["policy"] == str(P.policy_path("adpg-default"))


def test_evaluate_runs_a_native_policy(tmp_path: Path) -> None:
    # A policy that always keeps its rate: the 2-to-1 stays at line rate with a growing queue.
    pol = P.save_policy(P.mlp_policy([(np.zeros((1, 4)), None, "none")], "tanh"), tmp_path / "z")
    res = P.evaluate(
        pol,
        "adpg-m2o-2",
        overrides=["duration=3ms", 'workload[0].stop="3ms"', 'metrics.window=["2ms", "3ms"]'],
    )
    assert res.scenario["agent"]["policy"] == str(pol)
    assert res.summary["bottleneck"]["utilization"] > 0.99
