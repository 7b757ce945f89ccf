"""MVFST-RL's learner pieces without Ray: V-trace against the formula, the summed loss, the
network and its exports, and a short synchronous training on a small link whose reward rises
(docs/mvfst.md). The RLlib run itself is tests/test_impala_rllib.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ccgym.agents.impala_model import (  # noqa: E402
    MvfstNet,
    StepPolicy,
    impala_losses,
    vtrace_direct,
    with_last_reward,
)


def _vtrace_case(seed: int, t: int = 7, b: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    discounts = np.full((t, b), 0.99)
    discounts[3, 1] = 0.0  # a terminal step inside the trajectory
    return {
        "log_rhos": rng.normal(0.0, 0.8, (t, b)),  # some ratios above 1 (clipped), some below
        "discounts": discounts,
        "rewards": rng.normal(0.0, 1.0, (t, b)),
        "values": rng.normal(0.0, 1.0, (t, b)),
        "bootstrap": rng.normal(0.0, 1.0, b),
    }


def test_vtrace_reference_on_policy_is_the_n_step_return() -> None:
    """The direct formula itself: on-policy (all ratios 1) v_s is the discounted return
    bootstrapped with V(x_T), computed here by hand."""
    c = _vtrace_case(0)
    vs, _ = vtrace_direct(np.zeros_like(c["log_rhos"]), c["discounts"], c["rewards"],
                          c["values"], c["bootstrap"])  # fmt: skip
    t = c["rewards"].shape[0]
    for s in range(t):
        ret, weight = np.zeros(3), np.ones(3)
        for k in range(s, t):
            ret += weight * c["rewards"][k]
            weight = weight * c["discounts"][k]
        ret += weight * c["bootstrap"]
        np.testing.assert_allclose(vs[s], ret, rtol=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vtrace_targets_match_the_formula(seed: int) -> None:
    """The V-trace targets and advantages of the learner's loss (RLlib's recursion) equal
    spec 5.6's sums computed term by term, with clipped ratios and a terminal step."""
    c = _vtrace_case(seed)
    t, b = c["rewards"].shape
    behaviour = torch.zeros(t, b)
    # Logits whose chosen action has log-probability log_rho above the behaviour's 0 ...
    logits = torch.zeros(t, b, 2)
    logits[..., 0] = torch.as_tensor(c["log_rhos"], dtype=torch.float32)
    logits[..., 1] = -30.0  # ... i.e. log pi(a=0) ~ log_rho - log(1 + e^(-30 - log_rho)) ~ log_rho
    logp = torch.log_softmax(logits, -1)[..., 0]
    behaviour = (logp - torch.as_tensor(c["log_rhos"], dtype=torch.float32)).detach()
    parts = impala_losses(
        logits,
        torch.zeros(t, b, dtype=torch.long),
        behaviour,
        torch.as_tensor(c["values"], dtype=torch.float32),
        torch.as_tensor(c["bootstrap"], dtype=torch.float32),
        torch.as_tensor(c["rewards"], dtype=torch.float32),
        torch.as_tensor(c["discounts"], dtype=torch.float32),
        torch.ones(t, b),
    )
    vs, adv = vtrace_direct(**c)
    np.testing.assert_allclose(parts["vs"].numpy(), vs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(parts["pg_advantages"].numpy(), adv, rtol=1e-4, atol=1e-5)


def test_losses_are_summed_over_steps_and_masked() -> None:
    """Spec 5.6: the losses are sums over T x B (twice the batch, twice the loss); masked
    steps (RLlib's padding) count for nothing."""
    rng = np.random.default_rng(5)
    t, b, a = 5, 2, 5
    args = [
        torch.as_tensor(rng.normal(size=(t, b, a)), dtype=torch.float32),
        torch.as_tensor(rng.integers(0, a, (t, b))),
        torch.as_tensor(rng.normal(-1.6, 0.1, (t, b)), dtype=torch.float32),
        torch.as_tensor(rng.normal(size=(t, b)), dtype=torch.float32),
        torch.as_tensor(rng.normal(size=b), dtype=torch.float32),
        torch.as_tensor(rng.normal(size=(t, b)), dtype=torch.float32),
        torch.full((t, b), 0.99),
    ]
    one = impala_losses(*args, torch.ones(t, b))
    doubled = impala_losses(*[torch.cat([x, x], dim=-1 if x.dim() == 1 else 1) for x in args],
                            torch.ones(t, 2 * b))  # fmt: skip
    for key in ("loss", "pg_loss", "baseline_loss"):
        assert float(doubled[key]) == pytest.approx(2 * float(one[key]), rel=1e-5)
    mask = torch.ones(t, b)
    mask[-1] = 0.0
    masked = impala_losses(*args, mask)
    assert float(masked["baseline_loss"]) < float(one["baseline_loss"])
    expected = 0.5 * float(((one["vs"] - args[3]) ** 2 * mask).sum())
    assert float(masked["baseline_loss"]) == pytest.approx(expected, rel=1e-5)


def test_time_major_logits_match_rllibs_layout() -> None:
    """The logits of a stateless module ((B T) x A, a short last row) line up with RLlib's
    time-major values (its ``make_time_major`` pads 1-D tensors only)."""
    from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import make_time_major

    from ccgym.agents.impala import time_major_logits

    flat = torch.arange(7 * 3, dtype=torch.float32).view(7, 3)  # 7 steps, unroll 3
    tm = time_major_logits(flat, 3, recurrent=False)
    assert tm.shape == (3, 3, 3)
    torch.testing.assert_close(tm[..., 0], make_time_major(flat[:, 0], trajectory_len=3))
    seq = torch.zeros(2, 4, 5)
    assert time_major_logits(seq, 3, recurrent=True).shape == (4, 2, 5)


def test_network_shapes_step_by_step_equals_sequence() -> None:
    """The spec 5.5 network: 512, 512, +1 reward, LSTM 513, heads 5 and 1; acting one step at a
    time gives what one pass over the sequence gives; the reward column is clipped."""
    net = MvfstNet(221, 5)
    assert net.core_dim == 513 and net.lstm is not None and net.lstm.hidden_size == 513
    x = torch.randn(2, 6, 221)
    h, c = net.initial_state(2)
    logits, values, h1, c1 = net(x, h, c)
    assert logits.shape == (2, 6, 5) and values.shape == (2, 6) and h1.shape == (2, 513)
    hh, cc = h, c
    for t in range(6):
        step_logits, _, hh, cc = net(x[:, t : t + 1], hh, cc)
        torch.testing.assert_close(step_logits[:, 0], logits[:, t], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(hh, h1, atol=1e-5, rtol=1e-5)
    big = x.clone()
    big[..., -1] = 50.0
    clipped = x.clone()
    clipped[..., -1] = 1.0
    torch.testing.assert_close(net(big, h, c)[0], net(clipped, h, c)[0])
    assert with_last_reward(np.zeros(3, np.float32), -7.0)[-1] == -1.0


def _checkpoint(net: MvfstNet, lstm: bool) -> dict:
    """A checkpoint as `train_from_config` writes it, holding ``net``."""
    from ccgym.agents.impala import ALGORITHM

    first = net.fc[0]
    return {
        "algorithm": ALGORITHM,
        "update": 0,
        "decisions": 0,
        "episodes": 0,
        "wall_s": 0.0,
        "model": net.state_dict(),
        "optimizer": {},
        "extra": {"input_dim": first.in_features + 1, "num_actions": 5},
        "rng": {},
        "config": {"network": {"hidden": [16, 16], "lstm": lstm}},
        "obs_dim": first.in_features,
    }


def test_exported_policy_matches_the_network(tmp_path) -> None:
    """The exported policy (what `ccgym train impala` writes as policy.pt2) gives the network's
    logits and state, for any batch size, once loaded without the Python classes; with and
    without the LSTM (no state columns)."""
    from ccgym.agents.impala import export_program

    torch.manual_seed(0)
    for lstm, n in ((True, 17), (False, 0)):
        net = MvfstNet(9, 5, hidden=(16, 16), lstm=lstm).eval()
        ckpt = tmp_path / f"lstm-{lstm}.pt"
        torch.save(_checkpoint(net, lstm), ckpt)
        path = export_program(ckpt, tmp_path / f"lstm-{lstm}.pt2")
        loaded = torch.export.load(path).module()
        assert int(loaded.state_size) == n and int(loaded.input_size) == 9
        assert StepPolicy(net).state_dim == n
        for batch in (1, 3):
            x = torch.randn(batch, 9)
            h, c = torch.randn(batch, n), torch.randn(batch, n)
            out = loaded(x, h, c)
            ref = net(x.unsqueeze(1), h, c)
            torch.testing.assert_close(out[0], ref[0][:, 0])
            torch.testing.assert_close(out[1], ref[1][:, 0])
            torch.testing.assert_close(out[2], ref[2])


def test_native_export_layers() -> None:
    """The native (ccgym-mlp version 2) layout: dense, dense, reward concat, LSTM, stacked
    heads with the policy rows first."""
    from ccgym.agents.impala import native_policy

    net = MvfstNet(9, 5, hidden=(16, 16))
    pol = native_policy(net, {"algorithm": "impala"})
    kinds = [layer.get("kind", "dense") for layer in pol["layers"]]
    assert kinds == ["dense", "dense", "concat", "lstm", "dense"]
    assert pol["version"] == 2 and pol["action_outputs"] == 5
    lstm = pol["layers"][3]
    assert np.asarray(lstm["weight_ih"]).shape == (4 * 17, 17)
    heads = np.asarray(pol["layers"][4]["weight"])
    np.testing.assert_allclose(heads[:5], net.policy.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(heads[5], net.baseline.weight.detach().numpy()[0], rtol=1e-6)
    from ccgym import policies

    policies.validate_policy(pol)
    # Native inference (numpy reference and the simulator's own) against PyTorch: three
    # consecutive decisions of one agent, the state carried, the last reward as the extra input.
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(3, 8)).astype(np.float32)
    rewards = np.float32([-0.5, -0.2, 0.1])
    h, c = net.initial_state(1)
    ref = []
    for x, r in zip(obs, rewards, strict=True):
        out, value, h, c = net(torch.as_tensor(with_last_reward(x, float(r))).view(1, 1, -1), h, c)
        ref.append(np.concatenate([out[0, 0].detach().numpy(), value.detach().numpy().reshape(-1)]))
    expected = np.asarray(ref)
    numpy_out = policies.forward_steps(pol, obs, extra=rewards)
    np.testing.assert_allclose(numpy_out, expected, atol=1e-5)
    native_out = policies.native_forward(pol, obs, extra=rewards, all_outputs=True)
    np.testing.assert_allclose(native_out, expected, atol=1e-5)


# ------------------------------------------------------------------------- it learns


SMALL_LINK = {  # one flow that must find a 50 Gb/s bottleneck from 10 % of its line rate
    "duration": "1ms",
    "topology": {"kind": "dumbbell", "left": 1, "right": 1, "bottleneck_rate": "50Gbps"},
    "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
}
SMALL_AGENT = {
    "trigger": "interval", "interval": "10us", "policy_delay": "0s", "initial_rate": 0.1,
    "action": "discrete", "discrete": [1.0, 0.5, 0.8, 1.25, 2.0],  # keep, /2, -, +, x2
    "features": ["rate", "rtt_inflation"], "history": 2,
    "reward": "aurora", "reward_scale": 1e-7,
}  # fmt: skip


def test_it_learns_on_a_small_link() -> None:
    """A synchronous actor-learner with the same network, V-trace loss (summed) and RMSProp
    raises the reward per step of the sampled policy on a small link within 80 updates of
    20-step unrolls, the LSTM state carried across them (the RLlib trainer distributes exactly
    these pieces). On this link the `random` policy earns 2.7 per step, the best fixed actions
    (x1.25, x2) 3.8-3.9, keeping the starting rate 0.8."""
    from ccgym.env import CcFlowEnv

    torch.manual_seed(1)
    env = CcFlowEnv(SMALL_LINK, agent=SMALL_AGENT)
    obs, _ = env.reset(seed=1)
    net = MvfstNet(obs.shape[0] + 1, 5, hidden=(16, 16))
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-3, alpha=0.99, eps=0.01)
    curve = []
    h, c = net.initial_state(1)
    last, seed, unroll = 0.0, 1, 20
    for _ in range(80):
        h0, c0 = h, c
        xs, acts, logps, rews, dones = [], [], [], [], []
        with torch.no_grad():
            for _ in range(unroll):
                x = torch.as_tensor(with_last_reward(obs, last))
                logits, _, h, c = net(x.view(1, 1, -1), h, c)
                dist = torch.distributions.Categorical(logits=logits[0, 0])
                a = dist.sample()
                obs, last, term, trunc, _ = env.step(int(a))
                xs.append(x), acts.append(a), logps.append(dist.log_prob(a)), rews.append(last)
                dones.append(term or trunc)
                if term or trunc:
                    seed += 1
                    obs, _ = env.reset(seed=seed)
                    h, c = net.initial_state(1)
                    last = 0.0
        curve.append(np.mean(rews))
        xs.append(torch.as_tensor(with_last_reward(obs, last)))
        hh, cc = h0, c0  # the state at the unroll's start, as IMPALA hands it to the learner
        logits_t, values_t = [], []
        for t, x in enumerate(xs):
            lg, v, hh, cc = net(x.view(1, 1, -1), hh, cc)
            logits_t.append(lg[0]), values_t.append(v[0])
            if t < unroll and dones[t]:
                hh, cc = net.initial_state(1)
        parts = impala_losses(
            torch.stack(logits_t[:unroll]),
            torch.stack(acts).view(unroll, 1),
            torch.stack(logps).view(unroll, 1),
            torch.stack(values_t[:unroll]),
            values_t[unroll],
            torch.tensor(rews, dtype=torch.float32).view(unroll, 1),
            torch.tensor([[0.0 if d else 0.99] for d in dones]),
            torch.ones(unroll, 1),
        )
        opt.zero_grad()
        parts["loss"].backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 40.0)
        opt.step()
    first, last20 = np.mean(curve[:10]), np.mean(curve[-20:])
    # Torch seeds 0-2 gave 1.7 -> 3.4, 0.3 -> 3.6, 1.7 -> 3.3.
    assert last20 > first + 1.0 and last20 > 3.0, np.round(curve, 2)
