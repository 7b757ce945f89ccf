"""Training ACC: DDQN offline over a mixture of ACC workloads and loads, then online.

``ccgym train ddqn --config FILE --out DIR`` (the ``ddqn`` trainer plug-in,
:func:`ccgym.agents.ddqn.train_from_config`) runs :func:`train`:

* the config (:data:`DEFAULT_CONFIG`, with the given TOML merged over it): ``[train]`` (seed,
  episodes, per-episode duration and warm-up, checkpoints), ``[ddqn]``
  (:class:`~ccgym.agents.ddqn.DDQNSettings`), ``[agent]`` (the queue-agent keys over
  :data:`ccgym.acc.driver.QUEUE_AGENT`), ``[online]`` (the online phase's epsilon and learning
  rate) and ``[[scenarios]]`` (the mixture: a scenario and the loads to draw from);
* every episode draws, from the run's seeded generator, one mixture entry, one of its loads and
  a simulation seed, and runs it with every switch queue an agent of the one learner (shared
  Q-network, global replay): the same config and seed give the same episodes and, on one torch
  thread, the same weights;
* logs: ``history.jsonl`` (one line per episode: what ran, mean reward, epsilon, loss, learner
  steps, wall time), a rich progress bar when stderr is a terminal;
* checkpoints: ``checkpoint.pt`` every ``checkpoint_every`` episodes (0: no periodic ones) and
  at the end (networks, optimiser, replay, counters, every RNG state, the config; written
  atomically), ``--resume`` continues from it with the same episodes to come; with
  ``keep_checkpoints = true`` each of them is also kept as ``checkpoints/ckpt-ep<episode>.pt``
  (model selection over the run);
* ``policy.json`` at the end: the online Q-network as a native ``ccgym-mlp`` policy (output
  ``none``; the action is the argmax; ``meta.algorithm = "ddqn"``, ``meta.agent`` the
  queue-agent keys with the grid as ``ecn_profiles``).

The **online phase** (:func:`online_learner`, :func:`run_online`) starts from a policy file and
keeps learning during an evaluation run: epsilon at most 0.01 and a learning rate below the
offline one (``[online]``; both checked), a fresh replay that starts learning after
``online.learning_starts`` transitions.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ccgym.acc.driver import QUEUE_AGENT, acc_scenario, grid_profiles
from ccgym.acc.templates import GRID
from ccgym.agent_defaults import QUEUE_FEATURES

ALGORITHM = "ddqn"

DEFAULT_CONFIG: dict[str, Any] = {
    "train": {
        "seed": 1,
        "episodes": 100,
        "duration": "30ms",
        "warmup": "5ms",
        "checkpoint_every": 10,
        "keep_checkpoints": False,
        "torch_threads": 1,
    },
    "ddqn": {},
    "agent": {**QUEUE_AGENT, "queues": "all"},
    "online": {"epsilon": 0.01, "lr": 1e-4, "learning_starts": 256},
    "scenarios": [
        {"scenario": "acc-websearch", "loads": [0.3, 0.5, 0.7]},
        {"scenario": "acc-datamining", "loads": [0.5, 0.7]},
        {"scenario": "acc-storage", "loads": [0.3, 0.5, 0.7]},
    ],
}
"""What a config leaves out. ``[ddqn]`` empty: :class:`~ccgym.agents.ddqn.DDQNSettings`'s
defaults (spec 2.5)."""

ONLINE_MAX_EPSILON = 0.01
"""The online phase explores at most this much (spec 2.5)."""


def obs_dim(agent: Mapping[str, Any]) -> int:
    """Observation width of a queue agent: features x ``queue_history``."""
    return len(QUEUE_FEATURES) * int(agent["queue_history"])


def _config_error(field: str, value: Any, why: str) -> ValueError:
    # A user's mistake: one ``error:`` line and exit status 2 under ``ccgym train``, as the
    # config checks of :mod:`ccgym.train.config` give (a ScenarioError is a ValueError).
    from ccgym._errors import ScenarioError

    return ScenarioError(f"ddqn config: {field} = {value!r}: {why}")


def check_config(config: Mapping[str, Any]) -> None:
    """Refuses a config that cannot train, naming the key."""
    from ccgym.agents.ddqn import DDQNSettings

    tr = config["train"]
    if int(tr["episodes"]) < 1:
        raise _config_error("train.episodes", tr["episodes"], "must be at least 1")
    if int(tr["checkpoint_every"]) < 0:
        raise _config_error(
            "train.checkpoint_every", tr["checkpoint_every"], "must be >= 0 (0: at the end only)"
        )
    if not isinstance(tr.get("keep_checkpoints", False), bool):
        raise _config_error(
            "train.keep_checkpoints", tr["keep_checkpoints"], "must be true or false"
        )
    unknown = sorted(set(config["ddqn"]) - set(DDQNSettings.__dataclass_fields__))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], list(DDQNSettings.__dataclass_fields__), 1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _config_error("ddqn", unknown, f"unknown keys{hint}")
    from dataclasses import asdict

    from ccgym.train.config import check_order

    # [ddqn] is empty by default: its keys are compared over DDQNSettings' defaults.
    check_order({**asdict(DDQNSettings()), **config["ddqn"]}, "ddqn", "(ddqn)")
    try:
        DDQNSettings.from_dict(config["ddqn"])
    except ValueError as e:
        raise _config_error("ddqn", dict(config["ddqn"]), str(e)) from None
    scen = config["scenarios"]
    if not isinstance(scen, list) or not scen:
        raise _config_error("scenarios", scen, "needs at least one [[scenarios]] entry")
    for i, s in enumerate(scen):
        if not isinstance(s, Mapping) or not isinstance(s.get("scenario"), (str, Mapping)):
            raise _config_error(f"scenarios[{i}]", s, "needs scenario = NAME (or a table)")
        loads = s.get("loads", [])
        if not isinstance(loads, list) or not all(0 < float(x) <= 1 for x in loads):
            raise _config_error(f"scenarios[{i}].loads", loads, "loads in (0, 1]")
    online = config["online"]
    if not 0.0 <= float(online["epsilon"]) <= ONLINE_MAX_EPSILON:
        raise _config_error("online.epsilon", online["epsilon"], "must be in [0, 0.01]")
    offline_lr = float(config["ddqn"].get("lr", DDQNSettings.lr))
    if not 0.0 < float(online["lr"]) < offline_lr:
        raise _config_error(
            "online.lr", online["lr"], f"must be positive and below the offline lr {offline_lr}"
        )


def episode_scenario(
    entry: Mapping[str, Any],
    load: float | None,
    seed: int,
    config: Mapping[str, Any],
    *,
    full_length: bool = False,
) -> tuple[dict[str, Any], Path]:
    """The scenario dict of one episode: the entry's scenario and overrides, the load (first
    workload), the seed, the episode's duration and warm-up (unless ``full_length``) and the
    queue agents."""
    from ccgym.scenario import load_scenario

    overrides = [*entry.get("overrides", []), f"seed={seed}"]
    if load is not None:
        overrides.append(f"workload[0].load={load}")
    if not full_length:
        tr = config["train"]
        overrides += [f"duration={tr['duration']}", f"metrics.window=['{tr['warmup']}', 'end']"]
    data, base = load_scenario(entry["scenario"], overrides)
    return acc_scenario(data, config["agent"], base), base


def draw_episode(
    rng: np.random.Generator, config: Mapping[str, Any]
) -> tuple[Mapping[str, Any], float | None, int]:
    """One mixture entry, one of its loads (None: the scenario's own) and a seed."""
    scen = config["scenarios"]
    entry = scen[int(rng.integers(len(scen)))]
    loads = entry.get("loads") or []
    load = float(loads[int(rng.integers(len(loads)))]) if loads else None
    return entry, load, int(rng.integers(1, 2**31 - 1))


def deploy_agent(config: Mapping[str, Any]) -> dict[str, Any]:
    """``meta.agent`` of an exported policy: the queue-agent keys it was trained with, the grid
    as ``ecn_profiles``, without ``queues`` (each scenario names its own ports)."""
    agent = {k: v for k, v in config["agent"].items() if k not in ("queues", "policy")}
    agent["ecn_profiles"] = grid_profiles()
    return agent


def export_policy(learner: Any, config: Mapping[str, Any], meta: Mapping[str, Any]) -> dict:
    """The learner's online Q-network as a ``ccgym-mlp`` policy (output ``none``: the action is
    the argmax of the outputs)."""
    from ccgym import policies

    info = {
        "algorithm": ALGORITHM,
        "agent": deploy_agent(config),
        "templates": [t.name for t in GRID],
        **dict(meta),
    }
    return policies.export_module(learner.q, output="none", meta=info)


def _save(path: Path, state: Mapping[str, Any]) -> None:
    from ccgym.train.loop import save_atomic  # torch, which the trainer needs anyway

    save_atomic(path, state)


def _replay_state(learner: Any) -> dict[str, Any]:
    r = learner.replay
    return {
        "obs": r.obs.copy(),
        "next_obs": r.next_obs.copy(),
        "actions": r.actions.copy(),
        "rewards": r.rewards.copy(),
        "terminal": r.terminal.copy(),
        "pos": r.pos,
        "full": r.full,
        "pending": learner.pending,
        "rng": learner.rng.bit_generator.state,
    }


def _restore_replay(learner: Any, state: Mapping[str, Any]) -> None:
    r = learner.replay
    for name in ("obs", "next_obs", "actions", "rewards", "terminal"):
        getattr(r, name)[:] = state[name]
    r.pos, r.full = int(state["pos"]), bool(state["full"])
    learner.pending = int(state["pending"])
    learner.rng.bit_generator.state = state["rng"]


def train(
    config_source: Any,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Offline DDQN training of ACC's queue agents (see the module doc). Returns a summary:
    episodes, decisions, learner steps, wall time, the first and last episodes' mean reward and
    the policy file."""
    import torch

    from ccgym.agents.ddqn import DDQN, DDQNSettings
    from ccgym.train.config import load_config
    from ccgym.train.loop import (
        read_checkpoint,
        rng_state,
        seed_everything,
        set_rng_state,
        warn_config_changes,
    )

    out = Path(out_dir)
    ckpt_path = out / "checkpoint.pt"
    ckpt = None
    if resume:
        if not ckpt_path.is_file():
            raise FileNotFoundError(f"--resume: no checkpoint at {ckpt_path}")
        ckpt = read_checkpoint(ckpt_path)
        if ckpt["algorithm"] != ALGORITHM:
            raise ValueError(f"{ckpt_path} is a {ckpt['algorithm']} checkpoint, not {ALGORITHM}")
        config = load_config(config_source, ckpt["config"])
        warn_config_changes(ckpt["config"], config, out)
    else:
        config = load_config(config_source, DEFAULT_CONFIG)
    check_config(config)
    tr = config["train"]
    torch.set_num_threads(int(tr["torch_threads"]))
    seed = int(tr["seed"])
    seed_everything(seed)
    rng = np.random.default_rng(seed)
    settings = DDQNSettings.from_dict({"seed": seed, **config["ddqn"]})
    dim = obs_dim(config["agent"])
    learner = DDQN(dim, len(GRID), settings)
    out.mkdir(parents=True, exist_ok=True)
    history = out / "history.jsonl"
    episode, wall0 = 0, 0.0
    if ckpt is not None:
        _check_same_network(ckpt, config, learner, out)
        learner.load_state_dict(ckpt["model"])
        _restore_replay(learner, ckpt["extra"]["replay"])
        set_rng_state(ckpt["rng"], rng)
        episode, wall0 = int(ckpt["episodes"]), float(ckpt["wall_s"])
        _trim_history(history, episode)
    else:
        history.write_text("")
    (out / "config.json").write_text(json.dumps(config, indent=1, default=str))
    t0 = time.perf_counter()

    def wall() -> float:
        return wall0 + time.perf_counter() - t0

    def save() -> None:
        _save(
            ckpt_path,
            {
                "algorithm": ALGORITHM,
                "update": learner.learner_steps,
                "decisions": learner.decisions,
                "episodes": episode,
                "wall_s": wall(),
                "model": learner.state_dict(),
                "optimizer": learner.optimizer.state_dict(),
                "extra": {"replay": _replay_state(learner)},
                "rng": rng_state(rng),
                "config": config,
                "obs_dim": dim,
            },
        )

    total = int(tr["episodes"])
    from ccgym.agents.ddqn import run_queue_episode

    with _progress(progress, total) as bar:
        task = bar.add_task("train", total=total, completed=episode, info="")
        while episode < total:
            entry, load, ep_seed = draw_episode(rng, config)
            data, base = episode_scenario(entry, load, ep_seed, config)
            t_ep = time.perf_counter()
            stats = run_queue_episode(data, learner, train=True, base_dir=base)
            episode += 1
            line = {
                "episode": episode,
                "scenario": entry["scenario"],
                "load": load,
                "seed": ep_seed,
                "mean_reward": stats.mean_reward,
                "epsilon": learner.epsilon(),
                "loss": learner.last_loss,
                "learner_steps": learner.learner_steps,
                "decisions": learner.decisions,
                "template_mean": float(np.mean(stats.actions)) if stats.actions else None,
                "episode_s": time.perf_counter() - t_ep,
                "wall_s": wall(),
            }
            with history.open("a") as f:
                f.write(json.dumps(line) + "\n")
            info = f"r {stats.mean_reward:+.3f} eps {learner.epsilon():.2f}"
            bar.update(task, completed=episode, info=info)
            every = int(tr["checkpoint_every"])  # 0: no periodic checkpoints, the last only
            if (every > 0 and episode % every == 0) or episode == total:
                save()
                if tr.get("keep_checkpoints", False):
                    _keep(ckpt_path, kept_path(out, episode))
    meta = {"episodes": episode, "learner_steps": learner.learner_steps}
    meta["decisions"] = learner.decisions
    policy = export_policy(learner, config, meta)
    from ccgym import policies

    policies.save_policy(policy, out / "policy.json")
    curve = [json.loads(x)["mean_reward"] for x in history.read_text().splitlines() if x]
    return {
        "episodes": episode,
        "decisions": learner.decisions,
        "learner_steps": learner.learner_steps,
        "wall_s": wall(),
        "first_rewards": curve[:5],
        "last_rewards": curve[-5:],
        "policy": str(out / "policy.json"),
        "checkpoint": str(ckpt_path),
    }


NETWORK_KEYS = (("agent", "queue_history"), ("ddqn", "hidden"))
"""The config keys that set the Q-network's shape (observation width, hidden layers)."""


def _check_same_network(
    ckpt: Mapping[str, Any], config: Mapping[str, Any], learner: Any, where: Path
) -> None:
    """On resume: a config given that changes the checkpoint's Q-network is a one-line
    :class:`~ccgym.ScenarioError` naming the keys, not torch's size-mismatch error."""
    from ccgym._errors import ScenarioError
    from ccgym.agents.ddqn import DDQNSettings

    saved = {k: tuple(v.shape) for k, v in ckpt["model"]["q"].items()}
    built = {k: tuple(v.shape) for k, v in learner.q.state_dict().items()}
    if saved == built:
        return
    defaults = {"hidden": list(DDQNSettings().hidden)}
    changed = []
    for table, key in NETWORK_KEYS:
        a = ckpt["config"].get(table, {}).get(key, defaults.get(key))
        b = config.get(table, {}).get(key, defaults.get(key))
        if a != b:
            changed.append(
                f"{table}.{key} = {json.dumps(a)} in the checkpoint, {json.dumps(b)} now"
            )
    keys = "; ".join(changed) or "no config key (another version of ccgym?)"
    raise ScenarioError(
        f"resume: the config given changes the Q-network of the checkpoint in {where}: {keys}. "
        "A run resumes with its own network: leave these keys out of the config given, or "
        "train the new network in another run folder"
    )


def kept_path(out_dir: str | os.PathLike[str], episode: int) -> Path:
    """Where ``train.keep_checkpoints`` keeps the checkpoint of ``episode``."""
    return Path(out_dir) / "checkpoints" / f"ckpt-ep{episode:04d}.pt"


def _keep(ckpt_path: Path, kept: Path) -> None:
    # checkpoint.pt is replaced by a rename on the next save, so a hard link keeps this
    # version's bytes without writing the replay (tens of MB) a second time.
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.unlink(missing_ok=True)  # a resumed run redoes the episodes after its checkpoint
    try:
        os.link(ckpt_path, kept)
    except OSError:  # a file system without hard links
        shutil.copyfile(ckpt_path, kept)


def _trim_history(path: Path, episodes: int) -> None:
    """Keeps the first ``episodes`` lines of ``history.jsonl`` (a resumed run rewrites the
    episodes after its checkpoint)."""
    if not path.is_file():
        return
    lines = [x for x in path.read_text().splitlines() if x.strip()]
    path.write_text("".join(x + "\n" for x in lines[:episodes]))


def _progress(show: bool | None, total: int) -> Any:
    from rich.console import Console

    from ccgym._progress import progress_bar

    console = Console(stderr=True)
    enabled = console.is_terminal if show is None else show
    width = 2 * len(str(total)) + 1
    return progress_bar(
        "ddqn", count_width=width, elastic="info", console=console, disable=not enabled
    )


# --------------------------------------------------------------------------------------------
# Policies: load into a learner, act greedily, learn online
# --------------------------------------------------------------------------------------------


def policy_learner(
    policy: Mapping[str, Any] | str | os.PathLike[str],
    config: Mapping[str, Any] | None = None,
    *,
    online: bool = False,
) -> Any:
    """A :class:`~ccgym.agents.ddqn.DDQN` holding a ``ccgym-mlp`` Q-network (both networks).
    With ``online``: the online phase's settings (``[online]`` of ``config`` over
    :data:`DEFAULT_CONFIG`'s): epsilon fixed at ``online.epsilon`` (at most 0.01), Adam at
    ``online.lr`` (below the offline rate), learning from ``online.learning_starts``
    transitions of a fresh replay."""
    import torch

    from ccgym import policies
    from ccgym.agents.ddqn import DDQN, DDQNSettings
    from ccgym.train.config import merge_config

    pol = policies.load_policy(policy)
    cfg = merge_config(DEFAULT_CONFIG, config or {})
    check_config(cfg)
    layers = pol["layers"]
    hidden = [len(layer["weight"]) for layer in layers[:-1]]
    dim, n_actions = len(layers[0]["weight"][0]), len(layers[-1]["weight"])
    kw: dict[str, Any] = {**cfg["ddqn"], "hidden": hidden}
    if online:
        on = cfg["online"]
        eps = float(on["epsilon"])
        kw.update(eps_start=eps, eps_end=eps, lr=float(on["lr"]))
        kw["learning_starts"] = int(on["learning_starts"])
    learner = DDQN(dim, n_actions, DDQNSettings.from_dict(kw))
    linear = [m for m in learner.q.modules() if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for m, layer in zip(linear, layers, strict=True):
            m.weight.copy_(torch.as_tensor(np.asarray(layer["weight"], np.float32)))
            if layer.get("bias") is not None:
                m.bias.copy_(torch.as_tensor(np.asarray(layer["bias"], np.float32)))
    learner.q_target.load_state_dict(learner.q.state_dict())
    return learner


def policy_agent(policy: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """The queue-agent keys a policy was trained with (``meta.agent``)."""
    from ccgym import policies

    pol = policies.load_policy(policy)
    agent = dict((pol.get("meta") or {}).get("agent") or {})
    if pol.get("meta", {}).get("algorithm") != ALGORITHM:
        raise ValueError("not a ddqn (ACC) policy: meta.algorithm is not 'ddqn'")
    agent.pop("ecn_profiles", None)
    return agent


def policy_config(
    policy: str | os.PathLike[str],
) -> tuple[dict[str, Any] | None, Path | None]:
    """The training config a policy file came with, for its online phase when no config is
    given, and the file it was read from:

    * a bundled policy (``acc-default``, by name or by its bundled path): the config bundled beside
      it (``ccgym/policies/NAME.toml``, a copy of ``ccgym/configs/NAME.toml`` at training time),
      else ``ccgym/configs/NAME.toml``;
    * the ``policy.json`` of a ``ccgym train ddqn`` run folder: the ``config.json`` written beside
      it;
    * else ``(None, None)``: :data:`DEFAULT_CONFIG`'s ``[online]`` applies.
    """
    from ccgym.bench.tables import bundled_policy_name
    from ccgym.policies import POLICY_DIR
    from ccgym.train.config import CONFIG_DIR, read_config

    name = bundled_policy_name(os.fspath(policy))
    if name is not None:
        for path in (POLICY_DIR / f"{name}.toml", CONFIG_DIR / f"{name}.toml"):
            if path.is_file():
                return read_config(path), path
        return None, None
    path = Path(policy)
    beside = path.with_name("config.json")
    if path.is_file() and path.name == "policy.json" and beside.is_file():
        return read_config(beside), beside
    return None, None


def online_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``[online]`` settings of ``config`` over :data:`DEFAULT_CONFIG`'s."""
    return {**DEFAULT_CONFIG["online"], **dict((config or {}).get("online") or {})}


def run_policy(
    policy: Mapping[str, Any] | str | os.PathLike[str],
    scenario: Any,
    overrides: Sequence[str] = (),
    *,
    online: bool = False,
    config: Mapping[str, Any] | None = None,
    queues: Any = "all",
    flow_policy: Any = None,
) -> tuple[Any, Any]:
    """One evaluation run of an ACC policy on a scenario: greedy (offline-only), or learning
    online (:func:`policy_learner` with ``online``). Returns ``(AccRun, learner)``."""
    from ccgym.acc.driver import run_acc
    from ccgym.scenario import load_scenario

    data, base = load_scenario(scenario, list(overrides))
    agent = {**policy_agent(policy), "queues": queues}
    data = acc_scenario(data, agent, base)
    learner = policy_learner(policy, config, online=online)
    run = run_acc(data, learner, train=online, base_dir=base, flow_policy=flow_policy)
    return run, learner


__all__ = [
    "ALGORITHM",
    "DEFAULT_CONFIG",
    "ONLINE_MAX_EPSILON",
    "check_config",
    "deploy_agent",
    "draw_episode",
    "episode_scenario",
    "export_policy",
    "obs_dim",
    "online_settings",
    "policy_agent",
    "policy_config",
    "policy_learner",
    "run_policy",
    "train",
]
