"""Version-2 native policies: ``concat`` (the agent's last reward) and ``lstm`` steps, the
shape of MVFST-RL's network (FC, FC, concat the clipped reward, LSTM, policy and value heads).

The Rust inference, the numpy reference (``ccgym.policies.forward_steps``) and, when PyTorch is
installed, ``torch.nn.LSTM`` agree to float tolerance over sequences of decisions; a run whose
flows use such a policy natively equals the same run stepped from Python with the reference
keeping each flow's state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

_sim = pytest.importorskip("ccgym._sim")

from ccgym import policies  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402
from ccgym.scenario import load_scenario  # noqa: E402


def mvfst_like(
    n_in: int, hidden: int, n_actions: int = 5, seed: int = 0, memory: float = 2.0
) -> tuple[dict[str, Any], dict]:
    """``n_in -> FC hidden ReLU -> FC hidden ReLU -> concat clip(reward) -> LSTM(hidden + 1)
    -> [logits n_actions; value]``: the policy dict and its arrays."""
    rng = np.random.default_rng(seed)

    def u(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.uniform(-1, 1, shape) * scale / np.sqrt(shape[-1])).astype(np.float32)

    core = hidden + 1
    p = {
        "w1": u(hidden, n_in, scale=2.0),
        "b1": u(hidden, scale=0.5),
        "w2": u(hidden, hidden, scale=2.0),
        "b2": u(hidden, scale=0.5),
        "w_ih": u(4 * core, core, scale=2.0),
        "w_hh": u(4 * core, core, scale=memory),
        "b_ih": u(4 * core, scale=0.5),
        "b_hh": u(4 * core, scale=0.5),
        "w_pi": u(n_actions, core, scale=2.0),
        "b_pi": u(n_actions, scale=0.5),
        "w_v": u(1, core),
        "b_v": u(1),
    }
    steps = [
        policies.dense_step(p["w1"], p["b1"], "relu"),
        policies.dense_step(p["w2"], p["b2"], "relu"),
        policies.concat_step((-1.0, 1.0)),
        policies.lstm_step(p["w_ih"], p["w_hh"], p["b_ih"], p["b_hh"]),
        policies.dense_step(
            np.concatenate([p["w_pi"], p["w_v"]]), np.concatenate([p["b_pi"], p["b_v"]])
        ),
    ]
    return policies.stepped_policy(steps, action_outputs=n_actions), p


def sequence(n_in: int, k: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    obs = rng.normal(0, 1, (k, n_in)).astype(np.float32)
    rewards = rng.uniform(-2.5, 2.5, k).astype(np.float32)  # beyond the clip both ways
    return obs, rewards


def test_rust_and_numpy_agree_over_a_sequence() -> None:
    policy, _ = mvfst_like(22, 24)
    obs, rewards = sequence(22, 40)
    state = np.zeros(policies.state_len(policy), np.float32)
    want = policies.forward(policy, obs, extra=rewards, state=state)
    assert want.shape == (40, 6)
    assert np.abs(state).max() > 0.05  # the state moved
    got = policies.native_forward(policy, obs, extra=rewards, all_outputs=True)
    np.testing.assert_allclose(got, want, atol=2e-5, rtol=1e-5)
    # Without all_outputs the simulator's view: the 5 action scores.
    assert policies.native_forward(policy, obs, extra=rewards).shape == (40, 5)
    # The state matters: the same observation later in the sequence scores differently.
    fresh = policies.forward(policy, obs[-1:], extra=rewards[-1:])
    assert np.abs(fresh[0] - want[-1]).max() > 1e-3


def test_rust_numpy_and_torch_lstm_agree() -> None:
    torch = pytest.importorskip("torch")
    n_in, hidden = 220, 48  # MVFST-RL's input; a narrower core keeps the test fast
    policy, p = mvfst_like(n_in, hidden, seed=4)
    obs, rewards = sequence(n_in, 25, seed=5)
    core = hidden + 1
    lstm = torch.nn.LSTM(core, core, num_layers=1)
    with torch.no_grad():
        for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
            getattr(lstm, f"{name[0]}eight_{name[2:]}_l0".replace("beight", "bias")).copy_(
                torch.from_numpy(p[name])
            )
    # The exporter reads the module itself the same way.
    from_module = policies.lstm_step(lstm)
    assert np.array_equal(np.asarray(from_module["weight_hh"], np.float32), p["w_hh"])
    with torch.no_grad():
        x = torch.from_numpy(obs)
        x = torch.relu(x @ torch.from_numpy(p["w1"]).T + torch.from_numpy(p["b1"]))
        x = torch.relu(x @ torch.from_numpy(p["w2"]).T + torch.from_numpy(p["b2"]))
        r = torch.clamp(torch.from_numpy(rewards), -1, 1).view(-1, 1)
        core_in = torch.cat([x, r], dim=-1).unsqueeze(1)  # (T, B=1, core)
        state = (torch.zeros(1, 1, core), torch.zeros(1, 1, core))
        outs = []
        for t in range(len(obs)):  # one step at a time, as MVFST-RL's actor runs
            y, state = lstm(core_in[t : t + 1], state)
            outs.append(y[0, 0])
        h = torch.stack(outs)
        logits = h @ torch.from_numpy(p["w_pi"]).T + torch.from_numpy(p["b_pi"])
        value = h @ torch.from_numpy(p["w_v"]).T + torch.from_numpy(p["b_v"])
        want = torch.cat([logits, value], dim=1).numpy()
    numpy_out = policies.forward(policy, obs, extra=rewards)
    rust_out = policies.native_forward(policy, obs, extra=rewards, all_outputs=True)
    np.testing.assert_allclose(numpy_out, want, atol=2e-5, rtol=1e-5)
    np.testing.assert_allclose(rust_out, want, atol=2e-5, rtol=1e-5)


def test_files_round_trip_and_are_checked(tmp_path: Path) -> None:
    policy, _ = mvfst_like(6, 8)
    path = policies.save_policy(policy, tmp_path / "r.json")
    loaded = policies.load_policy(path)
    assert loaded["version"] == 2 and policies.is_stepped(loaded)
    assert policies.policy_inputs(loaded) == 6
    bad = json.loads(json.dumps(policy))
    bad["layers"][3]["weight_hh"] = bad["layers"][3]["weight_hh"][:-1]
    with pytest.raises(ValueError, match="weight_hh"):
        policies.validate_policy(bad)
    with pytest.raises(ValueError, match="int8"):
        policies.native_forward(policy, np.zeros((1, 6), np.float32), "int8")
    with pytest.raises(ValueError, match="int8"):
        policies.forward(policy, np.zeros((1, 6), np.float32), "int8")


def test_large_arrays_are_packed_exactly_and_load_as_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A low threshold packs the LSTM matrices of a small network (the real one packs 2 M values).
    monkeypatch.setattr(policies, "PACK_ABOVE", 100)
    policy, _ = mvfst_like(6, 8)
    path = policies.save_policy(policy, tmp_path / "packed.json")
    raw = json.loads(path.read_text())
    assert isinstance(raw["layers"][3]["weight_ih"], dict)  # 36 x 9 values: packed
    assert isinstance(raw["layers"][0]["weight"], list)  # 8 x 6 values: kept as lists
    loaded = policies.load_policy(path)
    assert (
        loaded["layers"][3]["weight_ih"] == json.loads(json.dumps(policy))["layers"][3]["weight_ih"]
    )
    obs, rewards = sequence(6, 12)
    ref = policies.forward_steps(policy, obs, extra=rewards)
    # The simulator reads the packed file itself; it must give the same scores as the lists.
    by_file = policies.native_forward(path, obs, extra=rewards)
    by_dict = policies.native_forward(policy, obs, extra=rewards)
    assert np.array_equal(by_file, by_dict)
    np.testing.assert_allclose(by_file, ref[:, :5], rtol=1e-5, atol=1e-6)
    raw["layers"][3]["weight_ih"]["shape"] = [35, 9]
    (tmp_path / "bad.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="needs 315 float32 values"):
        policies.load_policy(tmp_path / "bad.json")


SCENARIO = "adpg-m2o-2"
OVERRIDES = [
    "topology.hosts=3",
    "duration=400us",
    "metrics.window=['0ms', '400us']",
    "workload[0].stop='400us'",
    "workload[0].start=['0us', '20us']",
]
SEED, MEMORY = 1, 6.0
AGENT = {
    "trigger": "interval",
    "interval": "10us",
    "policy_delay": "2us",
    "action": "discrete",
    "discrete": [0.7, 0.9, 1.0, 1.1, 1.3],
}


def test_a_native_recurrent_flow_policy_equals_the_run_stepped_with_the_reference(
    tmp_path: Path,
) -> None:
    data, base = load_scenario(SCENARIO, OVERRIDES, cc="agent")
    data["agent"] = dict(AGENT)
    sim = _sim.Simulation(scenario_json(data), str(base))
    policy, _ = mvfst_like(sim.obs_dim, 16, seed=SEED, memory=MEMORY)
    states: dict[int, np.ndarray] = {}
    chosen: list[int] = []
    forgetful = 0  # decisions a policy without memory would have made differently
    over = False
    while not over:
        over, batch = sim.agent_step()
        live = ~(batch["done"] | batch["truncated"])
        actions = np.zeros(len(batch["flow"]), np.float32)
        for i in np.flatnonzero(live):
            f = int(batch["flow"][i])
            st = states.setdefault(f, np.zeros(policies.state_len(policy), np.float32))
            q = policies.forward(
                policy, batch["obs"][i : i + 1], extra=batch["reward"][i : i + 1], state=st
            )
            chosen.append(int(np.argmax(q[0, :5])))
            actions[i] = chosen[-1]
            fresh = policies.forward(
                policy, batch["obs"][i : i + 1], extra=batch["reward"][i : i + 1]
            )
            forgetful += int(np.argmax(fresh[0, :5])) != chosen[-1]
        if len(actions):
            sim.agent_act(actions)
    stepped = json.loads(sim.finish()[0])
    assert len(states) == 2 and len(set(chosen)) >= 2 and len(chosen) > 40
    assert forgetful >= 5, "the state must matter for the comparison to mean something"
    data["agent"]["policy"] = str(policies.save_policy(policy, tmp_path / "r.json"))
    native = json.loads(_sim.Simulation(scenario_json(data), str(base)).finish()[0])
    assert native == stepped


def test_equal_scores_choose_the_lowest_index_as_torch_does(tmp_path: Path) -> None:
    """A flow policy whose scores all tie takes action 0 at every decision, as
    ``torch.argmax`` would (the same run stepped from Python with action 0)."""
    data, base = load_scenario(SCENARIO, OVERRIDES, cc="agent")
    data["agent"] = dict(AGENT)
    sim = _sim.Simulation(scenario_json(data), str(base))
    flat = policies.mlp_policy([(np.zeros((5, sim.obs_dim)), None, "none")])
    over = False
    while not over:
        over, batch = sim.agent_step()
        if len(batch["flow"]):
            sim.agent_act(np.zeros(len(batch["flow"]), np.float32))
    stepped = json.loads(sim.finish()[0])
    data["agent"]["policy"] = str(policies.save_policy(flat, tmp_path / "flat.json"))
    native = json.loads(_sim.Simulation(scenario_json(data), str(base)).finish()[0])
    assert native == stepped
