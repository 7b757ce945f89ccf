"""A pool of agent simulations stepped in batches: the numpy-only core of the RL adapters.

:class:`AgentPool` wraps the native ``ccgym._sim.Pool`` (or, for a single simulation, a
``ccgym._sim.Simulation``, which avoids the pool's per-step threads). It builds the simulations
from scenario specs (bundled names, TOML paths or strings, dicts) with overrides, merges an
``[agent]`` table in and switches every flow to ``cc = "agent"``; it numbers the episodes of
each simulation, gives every agent a unique key and starts the next episode (the next seed) of a
simulation that has ended.

One step is one batch of decision requests of all simulations::

    pool = AgentPool("adpg-m2o-16", seeds=[1, 2, 3], overrides=["duration=20ms"])
    while pool.decisions < 100_000:
        batch = pool.step()                # Batch of numpy arrays
        actions = policy(batch.obs)        # one per entry; ignored where batch.request is False
        pool.act(actions)

No Python object is created per agent or per decision: everything is a numpy array.

A scenario with switch-queue agents (``agent.queues``) has a second batch group, ``"queue"``,
with its own observation width (``queue_obs_dim``) and action (an index into
``agent.ecn_profiles``). :meth:`AgentPool.step` still returns the flow group;
:attr:`AgentPool.last_batches` (or :meth:`AgentPool.step_groups`) holds every group of the
step, and :meth:`AgentPool.act` then takes a dict of actions by group::

    batches = pool.step_groups()           # {"flow": Batch, "queue": Batch}
    pool.act({"flow": policy(batches["flow"].obs), "queue": profiles(batches["queue"].obs)})

The trainers of ``ccgym.agents`` step their training simulations through this same class
(:class:`ccgym.train.rollout.TrainingRollout`): scenarios prepared by the trainer
(:class:`PreparedScenario`), episode seeds from the run's generator (``seeds`` as a function)
and the next episode started as soon as one ends (:meth:`AgentPool.start_next_episodes`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from ccgym._errors import ScenarioError
from ccgym.agent_defaults import (
    AGENT_DEFAULTS,
    expand_preset,
    keep_profile_actions,
    keep_rate_actions,
    neutral_action,
)
from ccgym.runner import native, scenario_json
from ccgym.scenario import ScenarioSpec, load_scenario

__all__ = [
    "AGENT_DEFAULTS",
    "EPISODE_BITS",
    "FLOW_BITS",
    "GROUPS",
    "QUEUE_AGENT_BIT",
    "SIM_BITS",
    "AgentPool",
    "Batch",
    "EndedEpisode",
    "PreparedScenario",
    "SeedFunction",
    "agent_config",
    "is_zero_duration",
    "keep_rate_actions",
    "make_key",
    "neutral_action",
    "prepare_scenario",
    "queue_agent_name",
    "split_key",
]

FLOW_BITS = 32
"""Bits of an agent key holding the flow id (the low bits)."""
EPISODE_BITS = 20
"""Bits of an agent key holding the episode number (modulo 2**20)."""
SIM_BITS = 12
"""Bits of an agent key holding the simulation index (the high bits): at most 4096 simulations."""
QUEUE_AGENT_BIT = 1 << (FLOW_BITS - 1)
"""Set in the agent part of a switch-queue agent's key (flow ids stay below it), so that the
keys of the two batch groups never collide and share the (simulation, episode) prefix."""
GROUPS = ("flow", "queue")
"""The agent bridge's batch groups, in the order :meth:`AgentPool.act` sends their actions."""

_QUEUE_AGENT_ERROR = re.compile(r"^(simulation (\d+): )?queue agent (\d+):")
"""The simulator's name of a switch-queue agent in an action error (its index)."""

_ZERO = re.compile(r"^\s*[+]?0*(\.0*)?\s*([a-zA-Zµ]+)?\s*$")


def make_key(sim: np.ndarray, episode: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """Agent keys: ``sim << 52 | (episode mod 2**20) << 32 | flow``, as uint64.

    A key names one agent of one episode: the same flow in the next episode of the same
    simulation gets another key (until 2**20 episodes of that simulation have passed).
    """
    s = np.asarray(sim, dtype=np.uint64)
    e = np.asarray(episode, dtype=np.uint64) & np.uint64((1 << EPISODE_BITS) - 1)
    f = np.asarray(flow, dtype=np.uint64)
    return (s << np.uint64(FLOW_BITS + EPISODE_BITS)) | (e << np.uint64(FLOW_BITS)) | f


def split_key(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`make_key`: ``(sim, episode mod 2**20, flow)`` as uint32 arrays."""
    k = np.asarray(key, dtype=np.uint64)
    flow = (k & np.uint64((1 << FLOW_BITS) - 1)).astype(np.uint32)
    episode = ((k >> np.uint64(FLOW_BITS)) & np.uint64((1 << EPISODE_BITS) - 1)).astype(np.uint32)
    sim = (k >> np.uint64(FLOW_BITS + EPISODE_BITS)).astype(np.uint32)
    return sim, episode, flow


def is_zero_duration(value: Any) -> bool:
    """Whether a scenario duration (``0``, ``"0s"``, ``"0us"``, ...) is zero."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == 0
    return isinstance(value, str) and bool(_ZERO.match(value)) and any(c.isdigit() for c in value)


def queue_agent_name(port_name: str, queue: int) -> str:
    """The agent name of data queue ``queue`` of switch port ``port_name`` (``"switch->peer"``):
    ``"queue_<switch>-><peer>_q<queue>"``."""
    return f"queue_{port_name}_q{queue}"


def agent_config(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario's ``[agent]`` table completed with :data:`AGENT_DEFAULTS`."""
    cfg = dict(AGENT_DEFAULTS)
    cfg.update(scenario.get("agent") or {})
    return cfg


def prepare_scenario(
    spec: ScenarioSpec,
    overrides: Sequence[str] | None = None,
    agent: Mapping[str, Any] | None = None,
    cc: str | None = "agent",
) -> tuple[dict[str, Any], Path]:
    """Load a scenario for the agent bridge.

    Every flow is switched to ``cc`` (default ``"agent"``; ``None`` keeps the scenario's CC
    tables, so that only the flows whose ``cc`` is ``agent`` are agents), the overrides are
    applied, then the keys of ``agent`` are merged into the ``[agent]`` table (created if
    missing).

    Returns:
        ``(scenario dict, base_dir)`` as :func:`ccgym.load_scenario`.
    """
    data, base_dir = load_scenario(spec, overrides, cc=cc)
    table = dict(data.get("agent") or {})
    table.update(agent or {})
    # A preset's keys are filled in here (as the core would) so that the adapters' spaces see
    # the whole table.
    data["agent"] = expand_preset(table)
    return data, base_dir


@dataclass(frozen=True)
class PreparedScenario:
    """A scenario already loaded for the bridge (as :func:`prepare_scenario` returns it): the
    pool uses it as it is, without overrides, ``agent`` table or ``cc`` switch."""

    data: Mapping[str, Any]
    """The scenario dict (its ``seed`` is replaced by each episode's seed)."""
    base_dir: str | Path
    """The folder that relative paths in it are resolved against."""


SeedFunction = Callable[[int, int], int]
"""``seed(simulation index, episode)``: the seed of an episode, called once as it starts."""


@dataclass(frozen=True)
class EndedEpisode:
    """An episode that :meth:`AgentPool.start_next_episodes` found over."""

    sim: int
    """Simulation index in the pool."""
    episode: int
    """Its episode number (the keys of its agents carry it)."""
    summary: dict[str, Any]
    """The summary of the run (as :meth:`AgentPool.summary`)."""


@dataclass(frozen=True)
class Batch:
    """One batch of the agent bridge: parallel numpy arrays, one entry per agent.

    An entry is either a decision request (``request`` True: the agent's policy must give an
    action) or the end of an agent (``done``: the flow finished; ``truncated``: its simulation
    ended with the flow still active). ``reward`` is the outcome of the agent's previous action
    (measured over the monitor interval that just closed). With ``defer_duplicates`` (the
    default of :class:`AgentPool`) a key appears at most once per batch.
    """

    sim: np.ndarray
    """Simulation index in the pool (uint32)."""
    episode: np.ndarray
    """Episode number of that simulation (uint32, from 0)."""
    flow: np.ndarray
    """Flow id (uint32); in the ``"queue"`` group, the queue agent's id."""
    key: np.ndarray
    """Unique agent key of (sim, episode, flow) (uint64, see :func:`make_key`; a queue agent's
    carries :data:`QUEUE_AGENT_BIT`)."""
    time_s: np.ndarray
    """Simulated time of the request, in seconds (float64)."""
    obs: np.ndarray
    """Observations, K x obs_dim (float32)."""
    reward: np.ndarray
    """Reward of the agent's previous action (float32)."""
    done: np.ndarray
    """The flow finished (bool)."""
    truncated: np.ndarray
    """The simulation ended with the flow active (bool)."""

    def __len__(self) -> int:
        return len(self.flow)

    @property
    def request(self) -> np.ndarray:
        """Entries that need an action: neither done nor truncated (bool)."""
        return ~(self.done | self.truncated)

    @staticmethod
    def empty(obs_dim: int) -> Batch:
        """A batch with no entries."""
        u32 = np.zeros(0, np.uint32)
        return Batch(
            sim=u32,
            episode=u32,
            flow=u32,
            key=np.zeros(0, np.uint64),
            time_s=np.zeros(0, np.float64),
            obs=np.zeros((0, obs_dim), np.float32),
            reward=np.zeros(0, np.float32),
            done=np.zeros(0, bool),
            truncated=np.zeros(0, bool),
        )

    def select(self, index: np.ndarray) -> Batch:
        """The entries at ``index`` (an integer or boolean array)."""
        return Batch(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @staticmethod
    def concat(parts: Sequence[Batch]) -> Batch:
        """The entries of several batches, in order."""
        if len(parts) == 1:
            return parts[0]
        return Batch(
            **{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Batch)}
        )


class _SingleSim:
    """The interface of ``_sim.Pool`` over one ``_sim.Simulation``, stepped in this thread."""

    def __init__(self, scenario: tuple[str, str]) -> None:
        self._sim_mod = native()
        self._sim = self._sim_mod.Simulation(*scenario)
        if self._sim.obs_dim == 0:
            raise ScenarioError("the scenario needs an [agent] table with external policy")
        self._over = False
        self.obs_dim = int(self._sim.obs_dim)
        self.queue_obs_dim = int(self._sim.queue_obs_dim)

    def __len__(self) -> int:
        return 1

    @property
    def over(self) -> list[bool]:
        return [self._over]

    @property
    def events(self) -> list[int]:
        return [int(self._sim.events)]

    def step(self) -> dict[str, np.ndarray]:
        if self._over:
            return {}
        over, batch = self._sim.agent_step()
        self._over = bool(over)
        batch["sim"] = np.zeros(len(batch["flow"]), np.uint32)
        if "queue" in batch:
            batch["queue"]["sim"] = np.zeros(len(batch["queue"]["agent"]), np.uint32)
        return batch

    def act(self, actions: np.ndarray) -> None:
        self._sim.agent_act(actions)

    def reset(self, i: int, scenario_json: str, base_dir: str) -> None:
        sim = self._sim_mod.Simulation(scenario_json, base_dir)
        if int(sim.obs_dim) != self.obs_dim or int(sim.queue_obs_dim) != self.queue_obs_dim:
            raise ValueError("the new scenario's observation length differs from the pool's")
        self._sim = sim
        self._over = False

    def summary(self, i: int) -> str:
        return str(self._sim.summary())

    def queue_agent_targets(self, i: int) -> list[tuple[int, int]]:
        return list(self._sim.queue_agent_targets())


def _seed_lists(
    seeds: Sequence[int] | Sequence[Sequence[int]] | None, n: int
) -> list[list[int] | None]:
    if seeds is None:
        return [None] * n
    items = list(seeds)
    if not items:
        raise ValueError("seeds: give at least one seed")
    if all(isinstance(s, (int, np.integer)) for s in items):
        return [[int(s) for s in items] for _ in range(n)]
    if len(items) != n:
        raise ValueError(f"seeds: expected one list of seeds per scenario ({n}), got {len(items)}")
    out: list[list[int] | None] = []
    for s in items:
        if isinstance(s, (int, np.integer)):
            out.append([int(s)])
        elif s is None:
            out.append(None)
        else:
            lst = [int(x) for x in s]
            if not lst:
                raise ValueError("seeds: every list needs at least one seed")
            out.append(lst)
    return out


class AgentPool:
    """Several agent simulations stepped together through the native bridge.

    Args:
        scenarios: one scenario spec or a list of them (bundled name, TOML path or string,
            dict); each becomes one simulation of the pool (give the same name twice for two
            simulations of it; seeds then tell them apart). A :class:`PreparedScenario` is
            used as it is (``overrides``, ``agent`` and ``cc`` do not apply to it).
        seeds: the seeds of the successive episodes: a flat list (used by every simulation)
            or one list per scenario. Episode ``e`` of simulation ``i`` uses
            ``seeds[i][e % len(seeds[i])]`` (with ``repeat_seeds``); ``None`` uses the
            scenario's own seed plus ``e``. A function ``seeds(i, e)`` is called once as each
            episode starts (episode 0 of every simulation in index order, here), so it may
            draw from a random generator.
        overrides: ``"dotted.key=value"`` strings applied to every scenario.
        agent: keys merged into every scenario's ``[agent]`` table (see ``docs/env.md``).
        auto_reset: start the next episode of a simulation that has ended, on the next
            :meth:`step` (after its final entries were delivered).
        repeat_seeds: cycle through the seed lists; when False a simulation whose list is used
            up stays over.
        defer_duplicates: keep every key unique within a batch: when a flow requests a
            decision and then ends within the same native batch (a positive policy delay, or
            the end of the run), its final entry is held back and delivered at the start of
            the next batch.
        cc: the CC every flow is switched to (default ``"agent"``: all flows are agents);
            ``None`` keeps the scenarios' CC tables, whose ``agent`` flows are the agents (the
            others run their classic CC).
        single_thread: for a single scenario, step a ``_sim.Simulation`` directly instead of
            a ``_sim.Pool`` (same results; saves the pool's per-step thread start).
    """

    def __init__(
        self,
        scenarios: ScenarioSpec | PreparedScenario | Sequence[ScenarioSpec | PreparedScenario],
        *,
        seeds: Sequence[int] | Sequence[Sequence[int]] | SeedFunction | None = None,
        overrides: Sequence[str] | None = None,
        agent: Mapping[str, Any] | None = None,
        auto_reset: bool = True,
        repeat_seeds: bool = True,
        defer_duplicates: bool = True,
        cc: str | None = "agent",
        single_thread: bool = True,
    ) -> None:
        specs = (
            [scenarios]
            if isinstance(scenarios, (str, Mapping, PreparedScenario))
            or hasattr(scenarios, "__fspath__")
            else list(scenarios)  # type: ignore[arg-type]
        )
        if not specs:
            raise ValueError("AgentPool needs at least one scenario")
        if len(specs) > 1 << SIM_BITS:
            raise ValueError(f"at most {1 << SIM_BITS} simulations per pool")
        self.scenarios: list[dict[str, Any]] = []
        self._base_dirs: list[str] = []
        for spec in specs:
            if isinstance(spec, PreparedScenario):
                data, base = dict(spec.data), spec.base_dir
            else:
                data, base = prepare_scenario(spec, overrides, agent, cc)
            self.scenarios.append(data)
            self._base_dirs.append(str(base))
        n = len(specs)
        self._seed_fn: SeedFunction | None = seeds if callable(seeds) else None
        self._seeds = _seed_lists(None if callable(seeds) else seeds, n)
        self.auto_reset = auto_reset
        self.repeat_seeds = repeat_seeds
        self.defer_duplicates = defer_duplicates
        self._episode = np.zeros(n, np.uint32)
        self._seed_now = [self._episode_seed(i, 0) for i in range(n)]
        first = [self._scenario_json(i, self._seed_now[i]) for i in range(n)]
        if n == 1 and single_thread:
            self._pool: Any = _SingleSim(first[0])
        else:
            self._pool = native().Pool(first)
        self.obs_dim: int = int(self._pool.obs_dim)
        self.queue_obs_dim: int = int(self._pool.queue_obs_dim)
        """Observation width of a switch-queue agent (0: no queue agents)."""
        self.groups: tuple[str, ...] = GROUPS if self.queue_obs_dim else GROUPS[:1]
        """The batch groups of this pool's simulations: ``("flow",)`` or ``("flow", "queue")``."""
        self.obs_dims: dict[str, int] = {"flow": self.obs_dim, "queue": self.queue_obs_dim}
        """Observation width of each batch group."""
        self._fresh = np.ones(n, bool)  # not stepped since built
        self._exhausted = np.zeros(n, bool)  # over and no seed left
        self._now_s = np.zeros(n, np.float64)
        self._durations: list[float | None] = [None] * n
        self._done_time_s = 0.0
        # Per batch group: entries held back, native batch length, and per batch entry its
        # index in the native batch (-1: held back from an earlier one).
        self._deferred: dict[str, Batch | None] = dict.fromkeys(self.groups)
        self._raw_len = dict.fromkeys(self.groups, 0)
        self._raw_index = {g: np.zeros(0, np.intp) for g in self.groups}
        self._awaiting = False
        self._needs_action = False
        self._last_groups: dict[str, Batch] = {
            g: Batch.empty(self.obs_dims[g]) for g in self.groups
        }
        self._answered = True  # the last batch was answered (or none was returned yet)
        self.decisions = 0
        """Decision requests delivered so far."""
        self.entries = 0
        """Batch entries delivered so far (requests and ends)."""
        self.batches = 0
        """Calls of :meth:`step` so far."""
        self.episodes = 0
        """Episodes (simulation runs) completed so far."""

    # ----------------------------------------------------------------------------------------
    # configuration

    def __len__(self) -> int:
        return len(self.scenarios)

    @property
    def num_sims(self) -> int:
        """Number of simulations."""
        return len(self.scenarios)

    def agent_config(self, i: int = 0) -> dict[str, Any]:
        """The ``[agent]`` table of simulation ``i`` completed with :data:`AGENT_DEFAULTS`."""
        return agent_config(self.scenarios[i])

    def num_flows(self, i: int = 0) -> int:
        """Flows of the current episode of simulation ``i`` (from its summary)."""
        return int(self.summary(i)["flows"]["count"])

    def duration_s(self, i: int = 0) -> float:
        """Simulated duration of an episode of simulation ``i``, in seconds."""
        if self._durations[i] is None:
            self._durations[i] = float(self.summary(i)["duration_s"])
        return float(self._durations[i])

    def summary(self, i: int = 0) -> dict[str, Any]:
        """The summary of what simulation ``i`` has run so far (its current episode)."""
        return json.loads(self._pool.summary(i))

    @property
    def episode(self) -> np.ndarray:
        """Current episode number of each simulation (uint32 copy)."""
        return self._episode.copy()

    @property
    def seed(self) -> list[int | None]:
        """Seed of the current episode of each simulation (None: the scenario's own)."""
        return list(self._seed_now)

    @property
    def over(self) -> np.ndarray:
        """Per simulation: its episode has ended and every entry of it was delivered."""
        native_over = np.asarray(self._pool.over, bool)
        for held in self._deferred.values():
            if held is not None and len(held):
                native_over = native_over.copy()
                native_over[np.unique(held.sim)] = False
        return native_over

    @property
    def all_over(self) -> bool:
        """No simulation will produce another entry: all are over and none will start another
        episode by itself (``auto_reset`` off, or seed lists used up)."""
        over = self.over
        if not over.all():
            return False
        return not self.auto_reset or not any(self._has_next(i) for i in range(len(over)))

    @property
    def simulated_s(self) -> float:
        """Simulated time run so far, summed over simulations and episodes, in seconds."""
        return self._done_time_s + float(self._now_s.sum())

    @property
    def events(self) -> list[int]:
        """Events processed by each simulation in its current episode."""
        return list(self._pool.events)

    @property
    def last_batch(self) -> Batch:
        """The batch returned by the last :meth:`step` (the flow group)."""
        return self._last_groups["flow"]

    @property
    def last_batches(self) -> dict[str, Batch]:
        """Every batch group of the last :meth:`step`, by name (see :attr:`groups`)."""
        return dict(self._last_groups)

    def queue_agent_names(self, i: int = 0) -> list[str]:
        """The names of simulation ``i``'s switch-queue agents, by agent id (the ``flow`` field
        of the ``"queue"`` group): :func:`queue_agent_name` of each agent's port and queue."""
        targets = [(int(p), int(q)) for p, q in self._pool.queue_agent_targets(i)]
        # Agents are built port by port in the order of agent.queues, which names each port once.
        port_names = list(self.agent_config(i).get("queues") or [])
        ports = list(dict.fromkeys(p for p, _ in targets))
        if len(ports) != len(port_names):
            raise RuntimeError(f"{len(ports)} queue-agent ports but agent.queues = {port_names}")
        name_of = dict(zip(ports, port_names, strict=True))
        return [queue_agent_name(name_of[p], q) for p, q in targets]

    # ----------------------------------------------------------------------------------------
    # episodes

    def _episode_seed(self, i: int, episode: int) -> int | None:
        if self._seed_fn is not None:
            return int(self._seed_fn(i, episode))
        lst = self._seeds[i]
        if lst is None:
            base = self.scenarios[i].get("seed", 0)
            return int(base) + episode if isinstance(base, int) else episode
        if episode >= len(lst) and not self.repeat_seeds:
            return None
        return lst[episode % len(lst)]

    def _has_next(self, i: int) -> bool:
        """Whether simulation ``i`` has a seed for another episode."""
        if self._seed_fn is not None:
            return True
        lst = self._seeds[i]
        return lst is None or self.repeat_seeds or int(self._episode[i]) + 1 < len(lst)

    def _scenario_json(self, i: int, seed: int | None) -> tuple[str, str]:
        data = self.scenarios[i]
        if seed is not None:
            data = dict(data)
            data["seed"] = seed
        return scenario_json(data), self._base_dirs[i]

    def reset(self, i: int, seed: int | None = None) -> None:
        """Start a new episode of simulation ``i`` now, with ``seed`` or the next one.

        Entries of the old episode that were not delivered yet are dropped; an unanswered
        batch is answered with neutral actions first. Resetting a simulation that has not been
        stepped since it was built, to the seed it was built with, costs nothing.
        """
        self._settle()
        for g, held in self._deferred.items():
            if held is not None:
                keep = held.sim != i
                self._deferred[g] = held.select(keep) if keep.any() else None
        if seed is None and not self._fresh[i]:
            seed = self._episode_seed(i, int(self._episode[i]) + 1)
            if seed is None and self._seeds[i] is not None:
                raise ValueError(f"simulation {i}: no seed left (repeat_seeds is False)")
        elif seed is None:
            seed = self._seed_now[i]
        if self._fresh[i] and seed == self._seed_now[i]:
            return
        self._new_episode(i, seed)

    def _new_episode(self, i: int, seed: int | None) -> None:
        self._pool.reset(i, *self._scenario_json(i, seed))
        if not self._fresh[i]:
            self._episode[i] += 1
        self._done_time_s += float(self._now_s[i])
        self._now_s[i] = 0.0
        self._seed_now[i] = seed
        self._fresh[i] = True
        self._exhausted[i] = False

    def _settle(self) -> None:
        """Answer an unanswered batch with rate-keeping actions (before a reset); queue agents
        keep their ECN profile."""
        if not self._awaiting:
            return
        last = self._last_groups["flow"]
        actions = np.zeros(len(last), np.float32)
        if self._needs_action:
            for s in np.unique(last.sim):
                rows = last.sim == s
                actions[rows] = keep_rate_actions(self.agent_config(int(s)), last.obs[rows])
        if len(self.groups) == 1:
            self.act(actions)
            return
        qb = self._last_groups["queue"]
        queue = np.zeros(len(qb), np.float32)
        for s in np.unique(qb.sim):
            rows = qb.sim == s
            queue[rows] = keep_profile_actions(self.agent_config(int(s)), qb.obs[rows])
        self.act({"flow": actions, "queue": queue})

    def _auto_reset(self) -> None:
        native_over = np.asarray(self._pool.over, bool)
        pending = {int(s) for held in self._deferred.values() if held is not None for s in held.sim}
        for i in np.flatnonzero(native_over & ~self._exhausted & ~self._fresh):
            if i in pending:
                continue  # its last entries go out first
            if not self._has_next(int(i)):
                self._exhausted[i] = True
                continue
            self._new_episode(int(i), self._episode_seed(int(i), int(self._episode[i]) + 1))

    def start_next_episodes(self) -> list[EndedEpisode]:
        """Start the next episode of every simulation whose episode is over, now.

        For callers that act on an ended episode at once (trainers log its summary and close
        its agents' trajectories before the next step): use it with ``auto_reset=False``,
        after answering the last batch. Returns the ended episodes in simulation order; a
        simulation without a next seed (``repeat_seeds`` off) stays over and is reported once.
        """
        ended = []
        for i in np.flatnonzero(self.over & ~self._exhausted & ~self._fresh):
            i = int(i)
            ended.append(EndedEpisode(i, int(self._episode[i]), self.summary(i)))
            if self._has_next(i):
                self.reset(i)
            else:
                self._exhausted[i] = True
        return ended

    # ----------------------------------------------------------------------------------------
    # stepping

    def step(self) -> Batch:
        """Advance every running simulation to its next batch of decisions.

        Returns the decisions of all simulations as one :class:`Batch` (the flow group; with
        switch-queue agents, :attr:`last_batches` holds the ``"queue"`` group too). Answer it
        with :meth:`act` before stepping again (a batch with no requests may go unanswered).
        """
        if self._awaiting:
            if self._needs_action:
                raise RuntimeError("answer the last batch with act() before stepping again")
            self._settle()
        if self.auto_reset:
            self._auto_reset()
        deferred, self._deferred = self._deferred, dict.fromkeys(self.groups)
        native_over = np.asarray(self._pool.over, bool)
        if any(d is not None for d in deferred.values()) and native_over.all():
            # nothing runs: deliver what was held back
            raws = {g: Batch.empty(self.obs_dims[g]) for g in self.groups}
        else:
            d = self._pool.step()
            raws = {g: self._convert(d if g == "flow" else d.get(g), g) for g in self.groups}
            ended = np.flatnonzero(np.asarray(self._pool.over, bool) & ~native_over)
            self.episodes += len(ended)
            for i in ended:  # a run that is over has reached its duration
                self._now_s[i] = max(self._now_s[i], self.duration_s(int(i)))
        self._awaiting = any(len(raw) for raw in raws.values())
        self._answered = False
        self._fresh[~native_over] = False  # stepped
        requests = 0
        for g, raw in raws.items():
            self._raw_len[g] = len(raw)
            batch = self._group_batch(g, raw, deferred[g])
            requests += int(np.count_nonzero(batch.request))
            self.entries += len(batch)
            self._last_groups[g] = batch
        self._needs_action = self._awaiting and requests > 0
        self.decisions += requests
        self.batches += 1
        return self._last_groups["flow"]

    def step_groups(self) -> dict[str, Batch]:
        """:meth:`step`, returning every batch group by name (``"flow"``, and ``"queue"`` with
        switch-queue agents)."""
        self.step()
        return self.last_batches

    def _group_batch(self, group: str, raw: Batch, deferred: Batch | None) -> Batch:
        """One group's batch from its native entries ``raw``: the simulated clocks advanced,
        duplicate keys held back (``defer_duplicates``), entries held back earlier first."""
        if len(raw) and len(self._now_s) == 1:
            self._now_s[0] = max(self._now_s[0], float(raw.time_s.max()))
        elif len(raw):
            np.maximum.at(self._now_s, raw.sim.astype(np.intp), raw.time_s)
        raw_index = np.arange(len(raw), dtype=np.intp)
        # A key can repeat only when an agent that requested also ended (done/truncated).
        if self.defer_duplicates and len(raw) > 1 and not raw.request.all():
            _, first = np.unique(raw.key, return_index=True)
            if len(first) < len(raw):
                keep = np.zeros(len(raw), bool)
                keep[first] = True
                held = raw.select(~keep)
                self._deferred[group] = held
                raw_index = raw_index[keep]
                raw = raw.select(keep)
        if deferred is not None and len(deferred):
            batch = Batch.concat([deferred, raw])
            raw_index = np.concatenate([np.full(len(deferred), -1, np.intp), raw_index])
        else:
            batch = raw
        self._raw_index[group] = raw_index
        return batch

    def _convert(self, d: Mapping[str, np.ndarray] | None, group: str = "flow") -> Batch:
        dim = self.obs_dims[group]
        ids = d.get("flow" if group == "flow" else "agent") if d else None
        if ids is None or len(ids) == 0:
            return Batch.empty(dim)
        assert d is not None
        sim = np.asarray(d["sim"], np.uint32)
        flow = np.asarray(ids, np.uint32)
        episode = self._episode[sim]
        agent = flow if group == "flow" else flow | np.uint32(QUEUE_AGENT_BIT)
        return Batch(
            sim=sim,
            episode=episode,
            flow=flow,
            key=make_key(sim, episode, agent),
            time_s=np.asarray(d["time_s"], np.float64),
            obs=np.asarray(d["obs"], np.float32).reshape(len(flow), dim),
            reward=np.asarray(d["reward"], np.float32),
            done=np.asarray(d["done"], bool),
            truncated=np.asarray(d["truncated"], bool),
        )

    def act(self, actions: np.ndarray | Sequence[float] | Mapping[str, Any]) -> None:
        """Answer the last batch, once: one action per entry (values of non-request entries are
        ignored). Discrete actions are given as their index.

        With switch-queue agents, give a dict by group: ``{"flow": ..., "queue": ...}``; a
        queue agent's action is an index into ``agent.ecn_profiles``. A group may be left out
        when it has no requests in the batch (its queues keep their profiles); a plain array
        answers the flow group.

        Raises:
            RuntimeError: the batch was already answered, or no batch was returned yet.
            ValueError: a wrong number of actions, or an action the simulator cannot honour
                (NaN, infinite, or a discrete index outside its table); nothing is applied
                then, and the batch can be answered again.
        """
        if self._answered:
            raise RuntimeError(
                "this batch was already answered: call step() for the next one"
                if self.batches
                else "no batch to answer yet: call step() first"
            )
        given = actions if isinstance(actions, Mapping) else {"flow": actions}
        unknown = set(given) - set(self.groups)
        if unknown:
            raise ValueError(
                f"no batch group {sorted(unknown)} in this pool (groups: {self.groups})"
            )
        per_group = {}
        for g in self.groups:
            last = self._last_groups[g]
            if g not in given:
                if last.request.any():
                    raise ValueError(
                        f"the batch has {g}-agent requests: answer with act({{'flow': ..., "
                        f"'queue': ...}})"
                    )
                per_group[g] = np.zeros(len(last), np.float32)
                continue
            a = np.asarray(given[g], dtype=np.float32).reshape(-1)
            if len(a) != len(last):
                what = "" if g == "flow" else f" in the {g} group"
                raise ValueError(
                    f"expected {len(last)} actions (one per entry){what}, got {len(a)}"
                )
            per_group[g] = a
        if not self._awaiting:
            self._answered = True
            return
        raws = []
        for g in self.groups:
            raw = np.zeros(self._raw_len[g], np.float32)
            mine = self._raw_index[g] >= 0
            raw[self._raw_index[g][mine]] = per_group[g][mine]
            raws.append(raw)
        try:
            self._pool.act(raws[0] if len(raws) == 1 else np.concatenate(raws))
        except ValueError as e:
            raise ValueError(self._named_agent_error(str(e))) from None
        self._awaiting = False
        self._needs_action = False
        self._answered = True

    def _named_agent_error(self, message: str) -> str:
        """The simulator's refusal of an action with the switch-queue agent named as the
        adapters name it (``"agent queue_sw0->h0_q1: ..."``, :meth:`queue_agent_names`) instead
        of by its index (``"queue agent 0: ..."``)."""
        m = _QUEUE_AGENT_ERROR.match(message)
        if m is None:
            return message
        sim, agent = int(m.group(2) or 0), int(m.group(3))
        try:
            name = self.queue_agent_names(sim)[agent]
        except (IndexError, RuntimeError, ValueError):
            return message
        return f"{m.group(1) or ''}agent {name}:{message[m.end() :]}"

    def counters(self) -> dict[str, float]:
        """Decisions, entries, batches, episodes and simulated seconds so far."""
        return {
            "decisions": self.decisions,
            "entries": self.entries,
            "batches": self.batches,
            "episodes": self.episodes,
            "simulated_s": self.simulated_s,
        }
