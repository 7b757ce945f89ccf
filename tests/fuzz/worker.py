"""The fuzzer's worker process: runs one generated case per request, in a process of its own.

The parent (``harness.py``) writes one JSON request per line to this process's stdin and reads
one JSON reply per line. A case that aborts the process (an allocation the core cannot make, a
crash) or that does not finish in its wall-clock budget kills this worker, not pytest: the
parent sees the pipe close or its timer expire, records the case as a failure and starts a new
worker. The address space is capped (``CCGYM_FUZZ_MEM_MB``, default 3072) so that a scenario
that asks for gigabytes fails fast instead of taking the machine's memory from everyone else.

Requests:

* ``{"op": "scenario", "scenario": {...}, "runs": 2}``: load the scenario dict as
  ``ccgym.run`` does, build it, run it to its end in slices, and reply with the summary and the
  per-flow slowdown and per-port utilisation columns of every run (``runs`` > 1 repeats it with
  the same seed, for the determinism check).
* ``{"op": "native_bridge", "scenario": {...}, "calls": [...]}``: build the scenario on
  ``ccgym._sim.Simulation`` and make the calls in order (``agent_step``, ``agent_act``,
  ``run_until``, ``set_link_rate``, ``set_ecn``, ``set_weights``, ``queue_stats``), replying
  with each call's outcome and the final summary.
* ``{"op": "pool", "scenario": {...}, "calls": [...]}``: the same through
  ``ccgym.env.AgentPool`` (``step``, ``act``, ``reset``).

Outcomes are ``{"status": "ok"}``, ``{"status": "rejected", "type", "message"}`` (an exception
a caller is meant to handle) or ``{"status": "exception", ...}`` with the traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from ccgym import _sim
from ccgym._errors import InternalError, ScenarioError
from ccgym.runner import scenario_json
from ccgym.scenario import load_scenario

SLICES = 7
"""A run is advanced in this many slices (chunked runs must equal one run; a test checks it)."""

# What a user of the bridge is documented to catch; anything else (InternalError above all) is
# a failure of the case.
HANDLED = (ValueError, TypeError, RuntimeError, IndexError, OverflowError)


def _error(e: BaseException) -> dict[str, Any]:
    if isinstance(e, InternalError):
        return {"status": "exception", "type": "InternalError", "message": str(e),
                "traceback": traceback.format_exc()}  # fmt: skip
    if isinstance(e, HANDLED):
        return {"status": "rejected", "type": type(e).__name__, "message": str(e)}
    return {"status": "exception", "type": type(e).__name__, "message": str(e),
            "traceback": traceback.format_exc()}  # fmt: skip


def _column(values: Any) -> list[float | None]:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(values, dtype=float)]


def _digest(tables: dict[str, dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for name in sorted(tables):
        for col in sorted(tables[name]):
            h.update(f"{name}.{col}".encode())
            v = tables[name][col]
            h.update(np.ascontiguousarray(v).tobytes() if isinstance(v, np.ndarray) else
                     json.dumps(v).encode())  # fmt: skip
    return h.hexdigest()


# Budgets that fit this worker's caps (the core's defaults, 4 GiB and 1e10 events, are for a
# whole machine): a case the core accepts must then run to its end inside the address-space cap
# and the time limit, so an abort or a time-out is a failure of the estimate, not of the setup.
MEMORY_BUDGET = f"{int(os.environ.get('CCGYM_FUZZ_MEM_MB', '3072')) // 3}MiB"
EVENT_BUDGET = 20_000_000


def _build(scenario: dict[str, Any]) -> Any:
    data, base_dir = load_scenario(scenario)
    limits = data.setdefault("limits", {})
    limits.setdefault("max_memory", MEMORY_BUDGET)
    limits.setdefault("max_events", EVENT_BUDGET)
    return _sim.Simulation(scenario_json(data), str(base_dir))


def run_scenario(req: dict[str, Any]) -> dict[str, Any]:
    runs = []
    for _ in range(int(req.get("runs", 1))):
        try:
            sim = _build(req["scenario"])
        except ScenarioError as e:
            return {"status": "rejected", "stage": "build", "type": type(e).__name__,
                    "message": str(e)}  # fmt: skip
        except BaseException as e:  # noqa: BLE001 - reported to the parent as a failure
            return {**_error(e), "stage": "build"}
        try:
            end = int(sim.end_ps)
            step = max(end // SLICES, 1)
            t = 0
            while t < end:
                t = min(t + step, end)
                if sim.run_until(t):
                    break
            # The largest data backlog of every switch queue over the run (nobody reset the
            # counters): the buffer check's bound on data alone, whatever control rode on top.
            qs = sim.switch_queues()
            peak = sim.queue_stats(qs["port"], qs["queue"], reset=False)["max_bytes"]
            summary_json, tables = sim.finish()
        except BaseException as e:  # noqa: BLE001
            return {**_error(e), "stage": "run"}
        runs.append({
            "summary": json.loads(summary_json),
            "summary_text": summary_json,
            "tables_digest": _digest(tables),
            "slowdown": _column(tables["flow_info"]["slowdown"]),
            "fct_s": _column(tables["flow_info"]["fct_s"]),
            "utilization": _column(tables["port_info"]["utilization"]),
            "port_names": list(tables["port_info"]["name"]),
            "data_queue_max": [[int(p), int(q), int(b)] for p, q, b in
                               zip(qs["port"], qs["queue"], peak, strict=True)],
            "events": int(sim.events),
        })  # fmt: skip
    return {"status": "ok", "runs": runs}


def make_actions(spec: Any, n: int) -> Any:
    """An action argument from its description: a length change, values, a dtype or shape."""
    if not isinstance(spec, dict):
        return spec  # a wrong type on purpose (None, a string, a dict ...)
    length = max(n + int(spec.get("len_delta", 0)), 0)
    values = spec.get("values") or [0.0]
    data = [values[i % len(values)] for i in range(length)]
    kind = spec.get("dtype", "float32")
    if kind == "list":
        return data
    if kind == "2d":
        return np.asarray(data, dtype=np.float32).reshape(-1, 1)
    if kind == "int64":
        return np.asarray([int(v) if np.isfinite(v) else 0 for v in data], dtype=np.int64)
    return np.asarray(data, dtype=kind)


def index_actions(scenario: dict[str, Any]) -> tuple[int | None, int | None]:
    """How many choices a flow action and a queue action index (None: not an index)."""
    agent = {**_sim.agent_defaults(), **(scenario.get("agent") or {})}
    flow = {"discrete": len(agent["discrete"]), "per_ack": len(agent["per_ack"])}
    queue = len(agent["ecn_profiles"]) if agent.get("queues") else None
    return flow.get(agent["action"]), queue


def expect_reject(
    actions: Any,
    n: int,
    requests: np.ndarray,
    acted: bool,
    choices: tuple[int | None, int | None],
    n_flow: int,
) -> str | None:
    """Why the bridge must refuse ``actions`` for a batch of ``n`` entries (None: it need not):
    a wrong length, a second answer to a batch with requests, or an index outside its table
    for a request."""
    try:
        a = np.asarray(actions, dtype=np.float64)
    except (TypeError, ValueError):
        return "not numbers"
    if a.ndim != 1 or len(a) != n:
        return "wrong length" if a.ndim == 1 or a.size != n else None
    if acted and requests.any():
        return "second answer to one batch (class 7)"
    for lo, hi, k in ((0, n_flow, choices[0]), (n_flow, n, choices[1])):
        if k is None:
            continue
        # The bridge reads float32: a value that rounds to an index there (1e-160 -> 0.0) is one.
        part, req = a[lo:hi].astype(np.float32), requests[lo:hi]
        ok = np.isfinite(part) & (part >= 0) & (part < k) & (part == np.floor(part))
        if (req & ~ok).any():
            return f"index outside the {k} choices of the action table (class 7)"
    return None


def _requests(batch: Any) -> tuple[np.ndarray, int]:
    """Per entry (flow group, then queue group): a request, not an end. And the flow count."""
    groups = [batch] + ([batch["queue"]] if "queue" in batch else [])
    req = [~(np.asarray(g["done"], bool) | np.asarray(g["truncated"], bool)) for g in groups]
    return np.concatenate(req) if req else np.zeros(0, bool), len(batch["flow"])


class _Expect:
    """What the bridge must refuse in the call being made (set before the call, so that it
    survives the exception the call raises)."""

    why: str | None = None


def _drive(
    build: Callable[[], Any],
    calls: list[list[Any]],
    call: Callable[[Any, str, list[Any], _Expect], dict[str, Any]],
    summary: Callable[[Any], Any],
) -> dict[str, Any]:
    """Builds the object under test, makes ``calls`` on it in order through ``call`` (which
    returns the call's outcome and may note what must be refused), and replies with every
    outcome and the final summary. A call that raises a non-caller exception ends the
    sequence."""
    try:
        target = build()
    except ScenarioError as e:
        return {"status": "rejected", "stage": "build", "type": type(e).__name__,
                "message": str(e)}  # fmt: skip
    except BaseException as e:  # noqa: BLE001 - reported to the parent as a failure
        return {**_error(e), "stage": "build"}
    outcomes = []
    for c in calls:
        name, args = c[0], c[1:]
        expect = _Expect()
        try:
            out = call(target, name, args, expect)
        except AssertionError:
            raise
        except BaseException as e:  # noqa: BLE001
            out = _error(e)
        outcomes.append({"call": name, "args": args, "expect": expect.why, **out})
        if out["status"] == "exception":
            break
    try:
        final = summary(target)
    except BaseException as e:  # noqa: BLE001
        return {"status": "ok", "outcomes": outcomes, "summary_error": _error(e)}
    return {"status": "ok", "outcomes": outcomes, "summary": final}


def native_bridge(req: dict[str, Any]) -> dict[str, Any]:
    """Calls on ``ccgym._sim.Simulation``: the stepping API and run-time control."""
    state: dict[str, Any] = {"len": 0, "n_flow": 0, "requests": np.zeros(0, bool), "acted": False}
    choices = index_actions(req["scenario"])

    def call(sim: Any, name: str, args: list[Any], expect: _Expect) -> dict[str, Any]:
        if name == "agent_step":
            over, batch = sim.agent_step()
            state["requests"], state["n_flow"] = _requests(batch)
            state["len"], state["acted"] = len(state["requests"]), False
            return {"status": "ok", "over": bool(over), "entries": state["len"]}
        if name == "agent_act":
            actions = make_actions(args[0], state["len"])
            expect.why = expect_reject(actions, state["len"], state["requests"], state["acted"],
                                       choices, state["n_flow"])  # fmt: skip
            sim.agent_act(actions)
            state["acted"] = True
            return {"status": "ok"}
        if name == "run_until":
            target = int(args[0] * sim.end_ps) if isinstance(args[0], float) else args[0]
            waiting = state["requests"].any() and not state["acted"]
            if waiting and min(target, sim.end_ps) > sim.now_ps:
                expect.why = "run_until while a batch awaits its answer (class 7)"
            return {"status": "ok", "over": bool(sim.run_until(target))}
        if name == "set_link_rate":
            sim.set_link_rate(*args)
            return {"status": "ok"}
        if name in ("set_ecn", "set_weights", "queue_stats"):
            getattr(sim, name)(*args)
            return {"status": "ok"}
        raise AssertionError(f"unknown call {name}")

    return _drive(lambda: _build(req["scenario"]), req["calls"], call,
                  lambda sim: json.loads(sim.summary()))  # fmt: skip


def pool_calls(req: dict[str, Any]) -> dict[str, Any]:
    """Calls on ``ccgym.env.AgentPool``: ``step``, ``act`` and ``reset``."""
    from ccgym.env import AgentPool

    state: dict[str, Any] = {"n": 0, "requests": np.zeros(0, bool), "acted": False}
    choices = (index_actions(req["scenario"])[0], None)

    def call(pool: Any, name: str, args: list[Any], expect: _Expect) -> dict[str, Any]:
        if name == "step":
            batch = pool.step()
            state["n"], state["acted"] = len(batch), False
            state["requests"] = np.asarray(batch.request, bool)
            return {"status": "ok", "entries": state["n"]}
        if name == "act":
            n = state["n"]
            actions = make_actions(args[0], max(n, 0))
            if n >= 0:
                expect.why = expect_reject(actions, n, state["requests"], state["acted"],
                                           choices, n)  # fmt: skip
            pool.act(actions)
            state["acted"] = True
            return {"status": "ok"}
        if name == "reset":
            pool.reset(0, args[0])
            # What the last batch is after a reset is the pool's business until the next
            # step: no expectation for an act() in between.
            state["requests"], state["acted"], state["n"] = np.zeros(0, bool), False, -1
            return {"status": "ok"}
        raise AssertionError(f"unknown call {name}")

    return _drive(lambda: AgentPool([req["scenario"]], cc=None, seeds=req.get("seeds")),
                  req["calls"], call, lambda pool: pool.summary(0))  # fmt: skip


def parallel_calls(req: dict[str, Any]) -> dict[str, Any]:
    """Calls on the PettingZoo adapter: ``reset`` and ``step`` with a dict of actions that may
    leave live agents out and name agents that do not exist."""
    from ccgym.env.pettingzoo_env import CcParallelEnv

    scenario = dict(req["scenario"])
    scenario["agent"] = {
        k: v
        for k, v in scenario["agent"].items()
        if k not in ("trigger", "policy_delay", "queues", "ecn_profiles")
    }

    def call(env: Any, name: str, args: list[Any], expect: _Expect) -> dict[str, Any]:
        if name == "reset":
            env.reset(seed=args[0])
            return {"status": "ok", "agents": len(env.agents)}
        if name == "step":
            spec = args[0]
            live = list(env.agents)
            actions: dict[Any, Any] = {a: spec["value"] for a in live[spec["drop"] :]}
            for extra in spec["extra"]:
                actions[extra] = spec["value"]
            if any(a not in live for a in spec["extra"]) and live:
                expect.why = "an action for an agent that is not live (class 7)"
            env.step(actions)
            return {"status": "ok", "agents": len(env.agents)}
        raise AssertionError(f"unknown call {name}")

    return _drive(lambda: CcParallelEnv(scenario, interval="10us"), req["calls"], call,
                  lambda env: env.pool.summary(0))  # fmt: skip


OPS = {"scenario": run_scenario, "native_bridge": native_bridge, "pool": pool_calls,
       "parallel": parallel_calls}  # fmt: skip


def main() -> None:
    limit = int(os.environ.get("CCGYM_FUZZ_MEM_MB", "3072")) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # Replies go to the original stdout; anything else printed (a warning, a stray print in the
    # package) goes to stderr, so it cannot corrupt the protocol.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    out.write(json.dumps({"status": "ready", "pid": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        # Hooks for the harness's own test: a case that aborts the process, one that hangs.
        if req.get("_test_abort"):
            os.abort()
        if req.get("_test_sleep"):
            time.sleep(req["_test_sleep"])
        reply = OPS[req["op"]](req)
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
