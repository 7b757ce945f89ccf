"""QTCP and QTCP-AIMD flows in a simulation: the agent table, the reward, and the online loop.

Each QTCP flow is a window agent on a TCP flow (``[agent] action = "per_ack"`` with
``loss_response = "newreno"``: NewReno's loss recovery underneath, docs/env.md). Every decision
interval (0.23 s by default, on a grid shared by the flows) it reports QTCP's state, the EWMA
inter-send time and inter-ACK time over the min RTT and the EWMA RTT over the min RTT, and the
utility ``log(throughput) - delta log(RTT)`` of the interval that just closed (the core's
``log_utility`` reward with ``reward_beta = delta``). Here the reward of the previous action is
the sign of the utility change (with a dead band), the flow's learner (:mod:`ccgym.qtcp.kanerva`)
takes one Q-learning step and picks the per-ACK rule to hold for the next interval. See
docs/qtcp.md.

    from ccgym.qtcp import QTCP_AIMD, run_qtcp
    run = run_qtcp("qtcp-aimd-dumbbell", QTCP_AIMD, overrides=["duration=100s"])
    run.summary["flows"]["jain"], run.log["cwnd_bytes"]
"""

from __future__ import annotations

import json
import os
import re
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ccgym._errors import ScenarioError
from ccgym.env.bridge import prepare_scenario
from ccgym.qtcp.kanerva import KanervaConfig, KanervaQLearner, scale_state
from ccgym.result import Result
from ccgym.runner import native, scenario_json

__all__ = [
    "QTCP",
    "QTCP_AIMD",
    "QTCP_FEATURES",
    "QTCP_MIMD",
    "VARIANTS",
    "LearnerMismatchWarning",
    "QtcpConfig",
    "QtcpRun",
    "agent_table",
    "has_agent_flows",
    "load_learners",
    "qtcp_scenario",
    "run_qtcp",
    "save_learners",
    "saved_variant",
    "utility_reward",
    "with_learner",
]

QTCP_FEATURES = (
    "send_gap_over_min",
    "ack_gap_over_min",
    "rtt_ewma_over_min",
    "window_packets",
    "throughput",
)
"""Observation of a QTCP agent: QTCP's three state variables, then the window in packets and
the interval's delivery rate as a fraction of line rate (not learnt from; recorded for the
figures)."""

STATE_DIMS = 3


@dataclass(frozen=True)
class QtcpConfig:
    """One QTCP variant: actions, decision interval, utility, reward and learner.

    Defaults are QTCP's (learning_cc.md 3.1-3.4, with 3.7's facts); :data:`QTCP_AIMD` changes
    the actions, ``delta``, the learning rate and the schedules (constant, as 3.7 gives them).
    """

    name: str = "qtcp"
    """Label of the variant (results, file names)."""
    per_ack: tuple[float | str, ...] = (10.0, 0.0, -1.0)
    """The per-ACK window rules the actions select, in ``step_unit`` (``"reno"``: +MSS x MSS /
    cwnd per ACK)."""
    step_unit: str = "bytes"
    """``"bytes"`` or ``"segments"`` (numbers in ``per_ack`` times the MSS)."""
    interval: str = "230ms"
    """Decision interval (QTCP's 0.23 s), unless ``interval_rtts`` is set."""
    interval_rtts: float = 0.0
    """When positive, the decision interval is this many base RTTs of each flow."""
    delta: float = 1.0
    """Delay weight of the utility ``log(throughput) - delta log(RTT)``."""
    dead_band: float = 0.0
    """|utility change| at or below this gives reward 0."""
    reward_up: float = 2.0
    """Reward when the utility rose by more than the dead band."""
    reward_down: float = -2.0
    """Reward when it fell by more than the dead band."""
    initial_window: int = 10
    """Window at the start, in segments."""
    slow_start: bool = True
    """Start in slow start (ssthresh unlimited until the first loss), as ns-3's TCP does."""
    shared: bool = False
    """One learner for all flows instead of one per flow."""
    learner: KanervaConfig = field(default_factory=KanervaConfig)
    """Hyper-parameters of the Kanerva Q-learner."""

    def __post_init__(self) -> None:
        if self.step_unit not in ("bytes", "segments"):
            raise ValueError(
                f'QtcpConfig.step_unit = {self.step_unit!r}: use "bytes" or "segments"'
            )
        if not self.per_ack:
            raise ValueError("QtcpConfig.per_ack: give at least one rule")
        for i, rule in enumerate(self.per_ack):
            if isinstance(rule, str) and rule != "reno":
                raise ValueError(f'QtcpConfig.per_ack[{i}] = {rule!r}: a number or "reno"')
        if self.dead_band < 0 or self.initial_window < 1:
            raise ValueError("QtcpConfig: dead_band must be >= 0 and initial_window >= 1")


QTCP = QtcpConfig()
"""QTCP: +10 / 0 / -1 bytes per ACK, delta 1, learning rate 0.95 decaying 0.995 per second."""

QTCP_AIMD = QtcpConfig(
    name="qtcp-aimd",
    per_ack=("reno", 0.0, -5.0),
    delta=10.0,
    learner=KanervaConfig(lr=0.1, lr_decay=1.0, exploration_decay=1.0),
)
"""QTCP-AIMD: +MSS/cwnd segments (Reno) / hold / -5 bytes per ACK, delta 10, learning rate 0.1
and exploration 0.1, both constant (learning_cc.md 3.7 gives the two as constants; QTCP's decays
would freeze a learner within a few hundred seconds, before the next sender joins)."""

QTCP_MIMD = replace(QTCP_AIMD, name="qtcp-mimd", per_ack=QTCP.per_ack)
"""QTCP as the QTCP-AIMD paper runs it: QTCP's moves (+10 / 0 / -1 bytes per ACK, MIMD in
effect) with everything else of :data:`QTCP_AIMD` (delta 10, learning rate and exploration 0.1,
learning_cc.md 3.7). The ablation behind the paper's claim: only the moves differ."""

VARIANTS: dict[str, QtcpConfig] = {"qtcp": QTCP, "qtcp-aimd": QTCP_AIMD, "qtcp-mimd": QTCP_MIMD}
"""The variants by name."""


def agent_table(config: QtcpConfig, mss: int) -> dict[str, Any]:
    """The ``[agent]`` table of a QTCP flow for segments of ``mss`` payload bytes."""
    scale = float(mss) if config.step_unit == "segments" else 1.0
    rules = [r if isinstance(r, str) else float(r) * scale for r in config.per_ack]
    table: dict[str, Any] = {
        "trigger": "interval",
        "interval": config.interval,
        "interval_rtts": config.interval_rtts,
        "policy_delay": 0,  # QTCP decides in the sender's own stack
        "features": list(QTCP_FEATURES),
        "history": 1,
        "reward": "log_utility",
        "reward_beta": config.delta,
        "reward_scale": 1.0,
        "action": "per_ack",
        "per_ack": rules,
        "loss_response": "newreno",
        "slow_start": config.slow_start,
        "initial_window": config.initial_window * mss,
        "min_window": mss,
        "timeout_rate": 1.0,  # the window is the timeout's response, not the pacing rate
    }
    return table


def utility_reward(du: np.ndarray, config: QtcpConfig) -> np.ndarray:
    """QTCP's reward of a utility change: ``reward_up`` above the dead band, ``reward_down``
    below minus it, 0 inside."""
    du = np.asarray(du, dtype=np.float64)
    out = np.zeros_like(du)
    out[du > config.dead_band] = config.reward_up
    out[du < -config.dead_band] = config.reward_down
    return out


@dataclass
class QtcpRun:
    """What :func:`run_qtcp` returns."""

    config: QtcpConfig
    result: Result
    """The simulation's result, as ``ccgym.run`` returns it (summary and series: queue length,
    per-flow delivery rates, ...)."""
    learners: dict[int, KanervaQLearner]
    """The learner of each agent flow (the same object for every flow when shared)."""
    log: dict[str, np.ndarray]
    """One entry per decision: ``time_s``, ``flow``, ``cwnd_bytes`` (window when deciding),
    ``utility`` (of the interval that just closed), ``reward`` (of the previous action; NaN at
    a flow's first decision), ``action`` (-1 at a flow's end), ``throughput`` (of the interval
    that just closed, as a fraction of the flow's line rate) and ``state`` (K x 3, raw)."""

    @property
    def summary(self) -> dict[str, Any]:
        """The simulation's summary."""
        return self.result.summary

    def flow_log(self, flow: int) -> dict[str, np.ndarray]:
        """The decisions of one flow."""
        sel = self.log["flow"] == flow
        return {k: v[sel] for k, v in self.log.items()}


def _mss(scenario: Mapping[str, Any]) -> int:
    packets = scenario.get("packets") or {}
    return int(packets.get("payload", 1024))  # the core's default (PacketConfig)


def variant(config: QtcpConfig | str) -> QtcpConfig:
    """``config`` itself, or the variant of that name in :data:`VARIANTS`."""
    if isinstance(config, str):
        if config not in VARIANTS:
            raise ScenarioError(f"unknown QTCP variant {config!r}; known: {', '.join(VARIANTS)}")
        return VARIANTS[config]
    return config


def qtcp_scenario(
    scenario: Any,
    config: QtcpConfig | str = QTCP,
    *,
    overrides: Sequence[str] | None = None,
    cc: str | None = "agent",
) -> tuple[dict[str, Any], Path]:
    """The scenario :func:`run_qtcp` simulates, and its base folder: the bridge's (see
    ``ccgym.env.bridge.prepare_scenario``) with the ``[agent]`` keys of ``config``."""
    config = variant(config)
    data, base = prepare_scenario(scenario, overrides, cc=cc)
    data["agent"] = {**(data.get("agent") or {}), **agent_table(config, _mss(data))}
    return data, base


def _algorithm(cc: Any) -> str | None:
    """The algorithm of a ``cc`` table (None: not given)."""
    if isinstance(cc, Mapping):
        return str(cc.get("algorithm", "line_rate"))
    return None


def has_agent_flows(data: Mapping[str, Any]) -> bool:
    """Whether some flow of the scenario ``data`` runs ``cc = "agent"`` (its own ``cc``, else its
    workload's, else the scenario's ``[cc]``)."""
    top = _algorithm(data.get("cc")) or "line_rate"
    for w in data.get("workload") or []:
        if not isinstance(w, Mapping):
            continue
        wcc = _algorithm(w.get("cc")) or top
        flows = w.get("flows")
        if isinstance(flows, list) and flows:
            own = [_algorithm(f.get("cc")) if isinstance(f, Mapping) else None for f in flows]
            if any((alg or wcc) == "agent" for alg in own):
                return True
        elif wcc == "agent":
            return True
    return False


def run_qtcp(
    scenario: Any,
    config: QtcpConfig | str = QTCP,
    *,
    overrides: Sequence[str] | None = None,
    seed: int | None = None,
    learners: Mapping[int, KanervaQLearner] | KanervaQLearner | None = None,
    cc: str | None = "agent",
    learn: bool = True,
) -> QtcpRun:
    """Runs a scenario with QTCP flows, learning online.

    Args:
        scenario: bundled name, TOML path or string, or dict (see ``ccgym.load_scenario``).
        config: a :class:`QtcpConfig` or a name in :data:`VARIANTS`.
        overrides: ``"dotted.key=value"`` strings.
        seed: the run's seed (default: the scenario's); the learners' generators are seeded
            from it (and from the flow id).
        learners: learners to start from (one per flow id, or one shared), e.g. from
            :func:`load_learners`; flows without one get a fresh learner.
        cc: ``"agent"``: every flow is a QTCP flow; ``None``: only the flows whose ``cc`` is
            ``agent`` are (the others keep their CC, for mixes with NewReno or CUBIC); a
            scenario without such a flow is then refused (:class:`ScenarioError`), not run with
            no decisions.
        learn: False freezes the learners (greedy actions, no updates).
    """
    config = variant(config)
    data, base = qtcp_scenario(scenario, config, overrides=overrides, cc=cc)
    if cc is None and not has_agent_flows(data):
        raise ScenarioError(
            'the scenario has no flow with cc = "agent" to learn, and cc=None (--keep-cc) keeps'
            f" every flow's own CC ({_algorithm(data.get('cc')) or 'line_rate'} ...): give some"
            ' flows cc = { algorithm = "agent" }, or drop --keep-cc to make every flow QTCP'
        )
    if seed is not None:
        data["seed"] = seed
    run_seed = int(data.get("seed", 1))
    # One simulation stepped directly (not through AgentPool): no episodes to manage, and its
    # series (queue length, per-flow rates) come with the result.
    sim = native().Simulation(scenario_json(data), str(base))
    dim = int(sim.obs_dim)
    if dim != len(QTCP_FEATURES):
        raise ValueError('the scenario has no QTCP agent flows (cc = "agent")')

    own: dict[int, KanervaQLearner] = {}
    shared: KanervaQLearner | None = None
    if isinstance(learners, KanervaQLearner):
        shared = learners
    elif learners is not None:
        own = dict(learners)
    if config.shared and shared is None:
        shared = own.get(0) or KanervaQLearner(
            len(config.per_ack), STATE_DIMS, config.learner, run_seed
        )

    def learner_of(flow: int) -> KanervaQLearner:
        if shared is not None:
            return shared
        if flow not in own:
            own[flow] = KanervaQLearner(
                len(config.per_ack), STATE_DIMS, config.learner, seed=run_seed * 100_003 + flow
            )
        return own[flow]

    # Per flow: the last scaled state, action and utility (for the next transition).
    last: dict[int, tuple[np.ndarray, int, float]] = {}
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "time_s",
            "flow",
            "cwnd_bytes",
            "utility",
            "reward",
            "action",
            "throughput",
            "state",
        )
    }
    mss = _mss(data)
    over = False
    while not over:
        over, batch = sim.agent_step()
        n = len(batch["flow"])
        if n == 0:
            continue
        obs = np.asarray(batch["obs"], np.float32).reshape(n, dim)
        request = ~(np.asarray(batch["done"], bool) | np.asarray(batch["truncated"], bool))
        xs = scale_state(obs[:, :STATE_DIMS])
        actions = np.zeros(n, np.float32)
        for i in range(n):
            flow, t = int(batch["flow"][i]), float(batch["time_s"][i])
            u = float(batch["reward"][i])
            learner = learner_of(flow)
            r = np.nan
            if flow in last:
                x0, a0, u0 = last[flow]
                r = float(utility_reward(np.array([u - u0]), config)[0])
                if learn:
                    learner.update(x0, a0, r, xs[i], t)
            a = -1
            if request[i]:
                a = learner.act(xs[i], t) if learn else learner.greedy(xs[i])
                last[flow] = (xs[i], a, u)
                actions[i] = a
            else:
                last.pop(flow, None)
            cols["time_s"].append(t)
            cols["flow"].append(flow)
            cols["cwnd_bytes"].append(float(obs[i, STATE_DIMS]) * mss)
            cols["utility"].append(u)
            cols["reward"].append(r)
            cols["action"].append(a)
            cols["throughput"].append(float(obs[i, STATE_DIMS + 1]))
            cols["state"].append(obs[i, :STATE_DIMS].astype(np.float64))
        sim.agent_act(actions)
    summary_json, series = sim.finish()
    log = {
        k: (np.array(v).reshape(-1, STATE_DIMS) if k == "state" else np.array(v))
        for k, v in cols.items()
    }
    flows = sorted(set(log["flow"].tolist()))
    learners_out = {f: learner_of(f) for f in flows}
    result = Result.from_native(summary_json, series, data)
    return QtcpRun(config=config, result=result, learners=learners_out, log=log)


class LearnerMismatchWarning(UserWarning):
    """Learners loaded for a QTCP variant seem to come from another one (their file does not
    record its variant, but their hyper-parameters are not this variant's)."""


VARIANT_ENTRY = "variant"
"""The entry of a learner file that records the variant (JSON of its :class:`QtcpConfig`)."""


def save_learners(
    path: str | os.PathLike[str],
    learners: Mapping[int, KanervaQLearner],
    config: QtcpConfig | str | None = None,
) -> None:
    """Writes the learners of a run (:attr:`QtcpRun.learners`) to one ``.npz`` file; a learner
    shared by several flows is stored once. ``config``: the variant they learnt with
    (:attr:`QtcpRun.config`), recorded so that :func:`load_learners` can refuse them for
    another variant."""
    arrays: dict[str, np.ndarray] = {}
    if config is not None:
        arrays[VARIANT_ENTRY] = np.array(json.dumps(asdict(variant(config))))
    seen: dict[int, int] = {}
    for flow, learner in learners.items():
        owner = seen.setdefault(id(learner), flow)
        if owner != flow:
            arrays[f"flow{flow}.same_as"] = np.array(owner)
            continue
        for k, v in learner.state_dict().items():
            arrays[f"flow{flow}.{k}"] = v
    np.savez(path, **arrays)


def saved_variant(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The variant a learner file records (the fields of its :class:`QtcpConfig`), or None
    for a file written without one (by :func:`save_learners` without ``config``, or before
    the variant was recorded)."""
    with _open_learners(path) as z:
        if VARIANT_ENTRY not in z.files:
            return None
        return dict(json.loads(str(z[VARIANT_ENTRY])))


def _open_learners(path: str | os.PathLike[str]) -> Any:
    """``np.load(path)`` of a learner file, with a :class:`ScenarioError` naming the file when
    it is not an ``.npz`` archive (a missing file stays :class:`FileNotFoundError`)."""
    try:
        z = np.load(path)
    except (ValueError, EOFError, zipfile.BadZipFile):
        raise ScenarioError(
            f"{os.fspath(path)}: not a QTCP learner file (not an .npz archive)"
        ) from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ScenarioError(f"{os.fspath(path)}: not a QTCP learner file (a .npy array, not .npz)")
    return z


def load_learners(
    path: str | os.PathLike[str], config: QtcpConfig | str | None = None
) -> dict[int, KanervaQLearner]:
    """The learners written by :func:`save_learners`, by flow id (to pass to :func:`run_qtcp`,
    which continues learning from them).

    ``config``: the variant they are for. Learners of another variant are refused when the file
    records its variant (:class:`ScenarioError` naming both); a file that does not record it
    is checked by its learners: another number of actions is refused, other learner
    hyper-parameters give a :class:`LearnerMismatchWarning`.
    """
    out: dict[int, KanervaQLearner] = {}
    same: dict[int, int] = {}
    where = os.fspath(path)
    recorded: dict[str, Any] | None = None
    with _open_learners(path) as z:
        groups: dict[int, dict[str, np.ndarray]] = {}
        for key in z.files:
            if key == VARIANT_ENTRY:
                recorded = dict(json.loads(str(z[key])))
                continue
            m = re.fullmatch(r"flow(\d+)\.(.+)", key)
            if not m:
                raise ScenarioError(f"{where}: not a QTCP learner file (entry {key!r})")
            flow, name = int(m.group(1)), m.group(2)
            if name == "same_as":
                same[flow] = int(z[key])
            else:
                groups.setdefault(flow, {})[name] = z[key]
        if not groups:
            raise ScenarioError(f"{where}: not a QTCP learner file (no learners in it)")
        try:
            for flow, state in groups.items():
                out[flow] = KanervaQLearner.from_state_dict(state)
        except (KeyError, ValueError, TypeError) as e:
            raise ScenarioError(f"{where}: not a QTCP learner file (flow {flow}: {e})") from None
    for flow, owner in same.items():
        out[flow] = out[owner]
    if config is not None:
        _check_variant(where, out, variant(config), recorded)
    return out


def _check_variant(
    where: str,
    learners: Mapping[int, KanervaQLearner],
    config: QtcpConfig,
    recorded: Mapping[str, Any] | None,
) -> None:
    """Refuses (or warns about) learners loaded for ``config`` that another variant made."""
    if recorded is not None and recorded.get("name") != config.name:
        raise ScenarioError(
            f"{where}: learners of QTCP variant {recorded.get('name')!r}, not {config.name!r}"
            f" (run with --variant {recorded.get('name')}, or start without these learners)"
        )
    if recorded is not None:
        mine = json.loads(json.dumps(asdict(config)))
        differ = sorted(k for k in mine if k != "learner" and recorded.get(k) != mine[k])
        if differ:
            warnings.warn(
                f"{where}: learners of a QTCP variant {config.name!r} with other settings"
                f" ({', '.join(f'{k} = {recorded.get(k)!r}' for k in differ)})",
                LearnerMismatchWarning,
                stacklevel=3,
            )
        return
    for flow, learner in learners.items():
        if learner.n_actions != len(config.per_ack):
            raise ScenarioError(
                f"{where}: flow {flow}'s learner has {learner.n_actions} actions, QTCP variant"
                f" {config.name!r} has {len(config.per_ack)}: learners of another variant"
            )
    if any(learner.config != config.learner for learner in learners.values()):
        warnings.warn(
            f"{where}: the learners' hyper-parameters are not those of QTCP variant"
            f" {config.name!r} (learners of another variant? the file does not record its"
            " variant); they keep their own",
            LearnerMismatchWarning,
            stacklevel=3,
        )


def with_learner(config: QtcpConfig, **changes: Any) -> QtcpConfig:
    """``config`` with some learner hyper-parameters changed."""
    return replace(config, learner=replace(config.learner, **changes))
