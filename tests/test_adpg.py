"""ADPG (``ccgym.agents.adpg``): the loss terms against brute force, the rollout alignment and
schedule, a short seeded training run that must learn to control an incast, checkpoints,
resume, export."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils.tensorboard")
pytest.importorskip("ccgym._sim")

from ccgym import policies as P  # noqa: E402
from ccgym.agents import adpg  # noqa: E402
from ccgym.train import loop  # noqa: E402
from ccgym.train.config import load_config, merge_config  # noqa: E402
from ccgym.train.rollout import AgentTable, many_to_one_scenario  # noqa: E402
from ccgym.train.trajectories import (  # noqa: E402
    AgentTrajectories,
    PolicyOutput,
    average_reward_to_go,
)

# A small, fast training set-up: 2-to-1 and 4-to-1 only, with the bundled config's settings.
SMALL: dict[str, Any] = {
    "train": {
        "seed": 2,
        "updates": 600,
        "checkpoint_every": 0,
        "lr": 0.003,
        "anneal_lr": True,
        "action_coef": 3.0,
    },
    "agent": {"trigger": "interval", "interval": "32us"},
    "env": {"episode": "30ms", "window_start": "5ms"},
    "scenarios": [
        {"hosts": 2, "flows_per_host": 1, "count": 1},
        {"hosts": 4, "flows_per_host": 1, "count": 1},
    ],
}

# Evaluation: 4-to-1 (the 2-to-1 base with 4 senders), 20 ms, measured over 10-20 ms.
EVAL = [
    "topology.hosts=5",
    'switch.buffer="60MiB"',
    "duration=20ms",
    'workload[0].stop="20ms"',
    'metrics.window=["10ms", "20ms"]',
]


def test_average_reward_to_go_matches_the_definition() -> None:
    rng = np.random.default_rng(0)
    delta = rng.normal(size=17).astype(np.float32)
    t_len, g = len(delta), 0.99
    want = [sum(g**k * delta[t + k] for k in range(t_len - t)) / (t_len - t) for t in range(t_len)]
    np.testing.assert_allclose(average_reward_to_go(delta, g), want, rtol=1e-5)
    # gamma 0 or 1: the plain mean of the remaining signals
    plain = [delta[t:].mean() for t in range(t_len)]
    np.testing.assert_allclose(average_reward_to_go(delta, 1.0), plain, rtol=1e-5)
    np.testing.assert_allclose(average_reward_to_go(delta, 0.0), plain, rtol=1e-5)


def test_adpg_loss_matches_brute_force() -> None:
    torch.manual_seed(0)
    pol = adpg.Policy(4)
    rng = np.random.default_rng(1)
    obs = [rng.normal(size=(t, 4)).astype(np.float32) for t in (5, 9, 1)]
    deltas = [rng.normal(size=len(o)).astype(np.float32) for o in obs]
    c_r, c_a, g = 1.0, 0.7, 0.99
    loss, stats = adpg.adpg_loss(pol, obs, deltas, g, c_r, c_a)
    total = []
    for o, d in zip(obs, deltas, strict=True):
        t_len = len(d)
        if t_len < 2:
            continue  # agents need at least 2 signals
        a = pol(torch.from_numpy(o))
        big_d = torch.from_numpy(average_reward_to_go(d, g))
        l_r = c_r * (a * big_d).sum() / t_len
        l_a = sum(
            sum((c_a / 2) * (a[t] - a[j]) ** 2 for j in range(t + 1, t_len)) / (t_len - t)
            for t in range(t_len - 1)
        )
        total.append(l_r + l_a / t_len)
    want = torch.stack(total).mean()
    assert stats["agents"] == 2
    assert float(loss.detach()) == pytest.approx(float(want.detach()), rel=1e-5)
    # Same gradient too.
    loss.backward()
    g1 = [p.grad.clone() for p in pol.parameters()]
    pol.zero_grad()
    want.backward()
    for a, b in zip(g1, (p.grad for p in pol.parameters()), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_gradient_sign_slows_down_above_target() -> None:
    # One agent whose future signal is positive (x above target): a step lowers its action.
    torch.manual_seed(0)
    pol = adpg.Policy(4)
    obs = [np.tile(np.array([[1.0, 0.5, 1.0, 0.5]], np.float32), (8, 1))]
    opt = torch.optim.SGD(pol.parameters(), lr=0.05)
    before = float(pol(torch.from_numpy(obs[0][:1])).detach())
    loss, _ = adpg.adpg_loss(pol, obs, [np.full(8, 2.0, np.float32)], 0.99, 1.0, 1.0)
    loss.backward()
    opt.step()
    assert float(pol(torch.from_numpy(obs[0][:1])).detach()) < before


def test_policy_architecture() -> None:
    pol = adpg.Policy(4, [12, 12])
    names = {n: tuple(p.shape) for n, p in pol.named_parameters()}
    assert names == {
        "net.0.weight": (12, 4),
        "net.2.weight": (12, 12),
        "output_layer.weight": (1, 12),
    }  # bias-free, the public checkpoint's names
    w = pol.net[0].weight.detach()
    # orthogonal rows with gain sqrt 2
    torch.testing.assert_close(w.T @ w, 2 * torch.eye(4), atol=1e-5, rtol=0)
    x = torch.randn(7, 4)
    np.testing.assert_allclose(
        adpg.numpy_act(pol.numpy_weights(), x.numpy()), pol(x).detach().numpy(), atol=1e-6
    )


def _record(traj: AgentTrajectories, entries: list[tuple[int, list[float], float, bool]]) -> None:
    """One batch of (flow, obs, reward, done) entries of simulation 0, episode 0."""
    n = len(entries)
    zero = np.zeros(n, np.float32)
    traj.record(
        [f for f, *_ in entries],
        np.array([e[1] for e in entries], np.float32),
        np.array([e[2] for e in entries], np.float32),
        np.array([e[3] for e in entries]),
        np.zeros(n, bool),
        PolicyOutput(env_actions=zero, raw=zero, logp=zero, value=zero),
    )


def test_rollout_aligns_signals_with_the_next_observation() -> None:
    traj = AgentTrajectories(adpg.ADPG.segment_length)
    o = [[float(i)] * 4 for i in range(6)]
    # agent 7: o0 (reward ignored: no action yet), o1 (d=0.1 -> delta_0), o2 (d=0.2)
    # agent 3: o3, then done with d=0.5 (delta of o3's action); it appeared after agent 7
    _record(traj, [(7, o[0], 9.0, False), (3, o[3], 9.0, False)])
    _record(traj, [(3, o[4], 0.5, True), (7, o[1], 0.1, False)])
    _record(traj, [(7, o[2], 0.2, False)])
    obs, deltas = adpg.agent_sequences(traj)
    assert [ob[:, 0].tolist() for ob in obs] == [[0.0, 1.0], [3.0]]  # order of appearance
    assert [d.tolist() for d in deltas] == [pytest.approx([0.1, 0.2]), [0.5]]
    # o2 waits for its signal in the next rollout
    assert list(traj.pending) == [7] and not traj.open and not traj.complete
    _record(traj, [(7, o[5], 0.3, False)])
    obs, deltas = adpg.agent_sequences(traj)
    assert obs[0][:, 0].tolist() == [2.0] and deltas[0].tolist() == pytest.approx([0.3])


def test_rollout_schedule() -> None:
    """Warm-up updates take a fixed number of decisions; later ones end when every live agent
    has rollout_length transitions, or at max_step_size decisions."""
    cfg = load_config(
        {"train": {"warmup_updates": 3, "warmup_length": 5, "rollout_length": 2}},
        adpg.DEFAULT_CONFIG,
    )
    learner = adpg.ADPG(4, cfg)
    traj = AgentTrajectories(None)
    o = [0.0] * 4
    _record(traj, [(1, o, 0.0, False), (2, o, 0.0, False)])
    _record(traj, [(1, o, 0.0, False), (2, o, 0.0, False)])
    assert not learner.ready(traj, 2, 4) and learner.ready(traj, 2, 5)  # warm-up: 5 decisions
    assert not learner.ready(traj, 3, 4)  # both agents have 1 transition, not 2
    _record(traj, [(1, o, 0.0, False)])
    assert not learner.ready(traj, 3, 5)  # agent 2 still has 1
    _record(traj, [(2, o, 0.0, True)])  # agent 2 ends: no longer live
    assert learner.ready(traj, 3, 5) and not learner.ready(traj, 3, 0)
    assert learner.ready(AgentTrajectories(None), 3, int(cfg["train"]["max_step_size"]))


def _history(run: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]


def _good(policy: str | Path) -> tuple[bool, float, float]:
    """Whether a native policy keeps a 4-to-1 incast busy (>= 90%) with a small queue (< 10 us
    mean queueing delay; the ADPG fixed point for 4 flows is about 5 us)."""
    s = P.evaluate(policy, "adpg-m2o-2", overrides=EVAL).summary
    util, ql = s["bottleneck"]["utilization"], s["bottleneck"]["queue_latency_mean_us"]
    return util >= 0.9 and ql < 10.0, util, ql


def test_short_training_learns_to_control_an_incast(tmp_path: Path) -> None:
    """600 seeded updates on 2-to-1 and 4-to-1 (about 10 s): the initial policy (same seed)
    fails the 4-to-1 check, the trained one passes it; it speeds up when idle and slows down
    when the queue is well above the target."""
    cfg = load_config(SMALL, adpg.DEFAULT_CONFIG)
    torch.manual_seed(cfg["train"]["seed"])  # the trainer's initial policy
    init = P.save_policy(
        adpg.export_policy(adpg.Policy(4, cfg["train"]["hidden"]), cfg), tmp_path / "init.json"
    )
    ok, util0, ql0 = _good(init)
    assert not ok, f"the untrained policy should fail: util {util0:.3f}, queue {ql0:.2f} us"
    out = adpg.train_from_config(cfg, tmp_path / "run", progress=False)
    assert out["updates"] == 600 and len(_history(tmp_path / "run")) == 600
    ok, util, ql = _good(out["policy"])
    assert ok, f"trained: util {util:.3f}, queue {ql:.2f} us (untrained {util0:.3f}, {ql0:.2f})"
    pol = P.load_policy(out["policy"])
    idle, congested = [1.0, -0.8, 1.0, -0.8], [1.0, 5.0, 1.0, 5.0]
    a = P.forward(pol, np.array([idle, congested]))[:, 0]
    assert a[0] > 0 > a[1]
    assert pol["meta"]["agent"]["trigger"] == "interval"


def test_checkpoint_resume_and_export(tmp_path: Path) -> None:
    cfg = load_config(SMALL, adpg.DEFAULT_CONFIG)
    cfg["train"].update(updates=6, checkpoint_every=3, anneal_lr=False)
    run = tmp_path / "run"
    adpg.train_from_config(cfg, run, progress=False)
    ckpts = sorted(p.name for p in (run / "checkpoints").glob("*.pt"))
    assert [c[:10] for c in ckpts] == ["ckpt-u0000", "ckpt-u0000"] and len(ckpts) == 2
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    assert state["update"] == 6 and set(state["rng"]) == {
        "python",
        "numpy_global",
        "numpy",
        "torch",
    }
    # resume: continue to 9 updates from the saved counter and optimiser
    cfg2 = merge_config(cfg, {"train": {"updates": 9}})
    out = adpg.train_from_config(cfg2, run, resume=True, progress=False)
    assert out["updates"] == 9
    assert [r["update"] for r in _history(run)] == list(range(1, 10))
    resumed = torch.load(run / "checkpoint.pt", weights_only=False)
    assert resumed["decisions"] > state["decisions"] and resumed["optimizer"]["state"]
    # export: the native policy computes what the torch policy computes
    policy = adpg.export_checkpoint(run / "checkpoint.pt")
    learner, _, _ = loop.load_learner(run / "checkpoint.pt", "adpg", adpg.ADPG)
    net = learner.policy
    x = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(P.forward(policy, x)[:, 0], want, atol=1e-5)
    assert policy["meta"]["update"] == 9 and policy["meta"]["algorithm"] == "adpg"
    assert not math.isnan(policy["layers"][0]["weight"][0][0])


def test_bundled_config_loads() -> None:
    cfg = load_config("adpg-default", adpg.DEFAULT_CONFIG)
    assert cfg["train"]["lr"] > 0 and cfg["scenarios"]
    assert cfg["agent"]["features"] == ["action", "adpg"]


def test_deploy_agent_reaches_the_exported_policy_but_not_training() -> None:
    cfg = load_config({"deploy_agent": {"hold_ticks": 8}}, adpg.DEFAULT_CONFIG)
    scenario = many_to_one_scenario(cfg, {"hosts": 2}, AgentTable(cfg["agent"])).data
    assert "hold_ticks" not in scenario["agent"]
    exported = adpg.export_policy(adpg.Policy(4, cfg["train"]["hidden"]), cfg)
    assert exported["meta"]["agent"]["hold_ticks"] == 8
    assert exported["meta"]["agent"]["features"] == ["action", "adpg"]


def test_a_training_scenario_may_change_its_own_agent_table() -> None:
    cfg = load_config({}, adpg.DEFAULT_CONFIG)
    table = AgentTable(cfg["agent"])
    own = many_to_one_scenario(cfg, {"hosts": 2, "agent": {"initial_rate": 0.01}}, table).data
    plain = many_to_one_scenario(cfg, {"hosts": 2}, table).data
    assert own["agent"]["initial_rate"] == 0.01
    assert "initial_rate" not in plain["agent"]
    assert own["agent"]["features"] == plain["agent"]["features"] == ["action", "adpg"]
    exported = adpg.export_policy(adpg.Policy(4, cfg["train"]["hidden"]), cfg)
    assert "initial_rate" not in exported["meta"]["agent"]


def test_resume_with_more_updates_continues_the_annealed_lr(tmp_path: Path) -> None:
    """anneal_lr and a resume that raises train.updates: the rate goes on falling from the one
    the checkpoint reached, to 0 after the new last update (it used to restart over the new
    total: 3.75e-5 at update 80 of 80, then 6e-4 at update 81 of 100). A resume that keeps the
    total keeps the schedule."""
    cfg = load_config(SMALL, adpg.DEFAULT_CONFIG)
    cfg["train"].update(updates=2, checkpoint_every=0, lr=0.003, anneal_lr=True)
    run = tmp_path / "run"
    adpg.train_from_config(cfg, run, progress=False)
    with pytest.warns(loop.ResumeConfigWarning, match=r"train\.updates = 2 -> 4"):
        adpg.train_from_config({"train": {"updates": 4}}, run, resume=True, progress=False)
    lrs = [h["lr"] for h in _history(run)]
    np.testing.assert_allclose(lrs, [0.003, 0.0015, 0.001, 0.0005], rtol=1e-12)
    assert torch.load(run / "checkpoint.pt", weights_only=False)["extra"]["lr_anchor"] == [2, 0.5]
    # the schedule of a run, and of a resume that keeps its total
    assert (
        adpg.anneal_fraction(80, 80) == pytest.approx(1 / 80) and adpg.anneal_fraction(1, 80) == 1
    )
    for u in (81, 90, 100):
        assert adpg.anneal_fraction(u, 100, (80, 1 / 80)) < 1 / 80
    assert adpg.anneal_fraction(101, 100, (80, 1 / 80)) == 0.0
