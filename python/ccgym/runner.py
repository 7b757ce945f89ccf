"""Running a scenario on the native simulator."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from ccgym._errors import LateScheduleWarning
from ccgym.scenario import ScenarioSpec, load_scenario

if TYPE_CHECKING:
    from ccgym.result import Result

PROGRESS_STEPS = 200
"""``run`` advances the simulation in this many chunks of simulated time."""


class LargeRunWarning(UserWarning):
    """A run estimated to need more than ``warn_memory`` (1 GiB) of memory, issued before it
    starts; the budgets of the scenario's ``[limits]`` table still hold (docs/scenarios.md)."""


def native() -> ModuleType:
    """Import and return the native module ``ccgym._sim``, with a helpful error if missing."""
    try:
        from ccgym import _sim
    except ImportError as e:
        raise ImportError(
            "the native module ccgym._sim is not built; in the repository run `make run`, or "
            "`maturin develop --release` inside a virtualenv"
        ) from e
    return _sim


def scenario_json(scenario: dict[str, Any]) -> str:
    """Serialise a scenario dict for ``ccgym._sim.Simulation`` (TOML dates become strings)."""
    return json.dumps(scenario, default=str)


def format_time_ps(ps: float, ref: float | None = None) -> str:
    """Format picoseconds as s/ms/us/ns; the unit is chosen by ``ref`` (default: ``ps``)."""
    size = abs(ps if ref is None else ref)
    for unit, scale in (("s", 1e12), ("ms", 1e9), ("us", 1e6), ("ns", 1e3)):
        if size >= scale:
            return f"{ps / scale:.2f} {unit}"
    return f"{ps:.0f} ps"


def estimate(
    scenario: ScenarioSpec,
    *,
    overrides: Iterable[str] | None = None,
    cc: str | None = None,
) -> dict[str, Any]:
    """What a scenario would cost, computed from its fields without building it.

    Returns a dict: ``flows``, ``messages``, ``data_packets``, ``samples``, ``events`` (an upper
    bound) with ``events_by_cause``, ``memory_bytes`` with ``memory_by_part``,
    ``seconds_at_15M_events_per_s``, the ``limits`` in force, ``warn_memory`` and ``refused``
    (the error a run would raise because of a budget, or None). See docs/scenarios.md,
    "Limits and budgets".

    Raises:
        ScenarioError: the scenario is invalid before its budgets are even compared.
    """
    data, base_dir = load_scenario(scenario, overrides, cc=cc)
    result: dict[str, Any] = json.loads(native().estimate(scenario_json(data), str(base_dir)))
    return result


def describe_estimate(est: dict[str, Any]) -> str:
    """One line for humans: flows, messages, events (and time), memory."""
    mem = est["memory_bytes"]
    mem_text = f"{mem / 2**30:.1f} GiB" if mem >= 2**30 else f"{mem / 2**20:.0f} MiB"
    seconds = est["seconds_at_15M_events_per_s"]
    if seconds >= 60:
        when = f"about {seconds / 60:.0f} min or less"
    elif seconds >= 1:
        when = f"about {seconds:.0f} s or less"
    else:  # "about 0 s" read as a mistake
        when = "under a second"
    parts = [f"{est['flows']:,} flows"]
    if est["messages"]:
        parts.append(f"{est['messages']:,} messages")
    parts.append(f"at most {est['events']:.2g} events ({when})")
    parts.append(f"about {mem_text} of memory")
    return "estimate: " + ", ".join(parts)


class NativeRun(NamedTuple):
    """What a run produced, as the native module hands it over (no pandas): what
    :func:`simulate` returns, and :func:`run` turns into a :class:`~ccgym.Result`."""

    summary: dict[str, Any]
    """The summary metrics (``Result.summary``)."""
    series: dict[str, dict[str, Any]]
    """Per table name, its columns: NumPy arrays (numbers) or lists (text)."""
    scenario: dict[str, Any]
    """The scenario as it was simulated (``Result.scenario``)."""
    timing: dict[str, float]
    """Wall-clock facts of the run (``Result.timing``)."""


def run(
    scenario: ScenarioSpec,
    *,
    overrides: Iterable[str] | None = None,
    cc: str | None = None,
    progress: bool = False,
    on_estimate: Callable[[dict[str, Any]], None] | None = None,
) -> Result:
    """Simulate a scenario and return its :class:`~ccgym.Result`.

    Args:
        scenario: a path to a TOML file, a bundled scenario name (``"incast-16"``), a TOML
            string or a dict; see :func:`ccgym.load_scenario`.
        overrides: ``"dotted.key=value"`` strings applied to the scenario first.
        cc: run every flow with this congestion control (default parameters, which
            ``overrides`` such as ``"cc.g=0.0625"`` may then tune).
        progress: show a progress bar (simulated time, events/s) on stderr.
        on_estimate: called with the cost estimate (see :func:`estimate`) once the scenario is
            built and before it runs (``ccgym run`` prints it).

    Raises:
        ScenarioError: the scenario is invalid (the message names the field and the value), or
            beyond a budget of its ``[limits]`` table (memory, events, flows, messages).

    Warns:
        LargeRunWarning: the run is estimated to need more than 1 GiB of memory.
    """
    raw = _simulate(scenario, overrides, cc, progress, on_estimate, warn_stacklevel=3)
    from ccgym.result import Result  # pandas: imported only when needed

    return Result.from_run(raw)


def simulate(
    scenario: ScenarioSpec,
    *,
    overrides: Iterable[str] | None = None,
    cc: str | None = None,
    progress: bool = False,
    on_estimate: Callable[[dict[str, Any]], None] | None = None,
    tables: bool = True,
) -> NativeRun:
    """:func:`run` without the pandas tables: the summary and the series' columns as the
    native module returns them. For callers that need only the summary, or write the series
    themselves (``ccgym run`` imports pandas only with ``--out``); arguments, errors and
    warnings as :func:`run`'s. With ``tables=False`` the series are not built at all
    (``series`` is empty) and NumPy is not imported: ``ccgym run`` without ``--out``."""
    return _simulate(
        scenario, overrides, cc, progress, on_estimate, warn_stacklevel=3, tables=tables
    )


def late_schedule_steps(data: dict[str, Any], end_ps: int) -> list[str]:
    """The ``[[link]]`` schedule steps of scenario ``data`` after ``end_ps``, as
    ``link[I].schedule[J].at = TIME``."""
    from ccgym.units import parse_time_ps

    late = []
    for i, link in enumerate(data.get("link") or []):
        steps = link.get("schedule") if isinstance(link, dict) else None
        for j, step in enumerate(steps if isinstance(steps, list) else []):
            at = step.get("at") if isinstance(step, dict) else None
            if at is not None and parse_time_ps(at) > end_ps:
                late.append(f"link[{i}].schedule[{j}].at = {at}")
    return late


def _simulate(
    scenario: ScenarioSpec,
    overrides: Iterable[str] | None,
    cc: str | None,
    progress: bool,
    on_estimate: Callable[[dict[str, Any]], None] | None,
    *,
    warn_stacklevel: int,
    tables: bool = True,
) -> NativeRun:
    """:func:`run`'s work; ``warn_stacklevel`` points a LargeRunWarning at the public
    function's caller."""
    data, base_dir = load_scenario(scenario, overrides, cc=cc)
    sim_mod = native()
    t_start = time.perf_counter()
    sim = sim_mod.Simulation(scenario_json(data), str(base_dir))
    est = json.loads(sim.estimate)
    if on_estimate is not None:
        on_estimate(est)
    if est["memory_bytes"] > est["warn_memory"]:
        warnings.warn(
            f"{data.get('name', 'scenario')}: {describe_estimate(est)}; "
            "see docs/scenarios.md, 'Limits and budgets'",
            LargeRunWarning,
            stacklevel=warn_stacklevel,
        )
    end = int(sim.end_ps)
    late = late_schedule_steps(data, end)
    if late:
        warnings.warn(
            f"{data.get('name', 'scenario')}: rate-schedule steps after the end of the run "
            f"never apply: {', '.join(late)}",
            LateScheduleWarning,
            stacklevel=warn_stacklevel,
        )
    step = max(end // PROGRESS_STEPS, 1)

    t_run = time.perf_counter()
    if progress:
        _run_with_progress(sim, end, step, str(data.get("name", "")), t_run)
    else:
        advance(sim, end, step)
    t_finish = time.perf_counter()
    summary_json, series = sim.finish(tables=tables)
    t_end = time.perf_counter()

    run_s = t_finish - t_run
    timing = {
        "setup_s": float(sim.setup_seconds),
        "run_s": run_s,
        "finish_s": t_end - t_finish,
        "wall_s": t_end - t_start,
        "events_per_s": sim.events / run_s if run_s > 0 else float("nan"),
    }
    return NativeRun(json.loads(summary_json), dict(series), data, timing)


def advance(sim: Any, end: int, step: int, on_step: Callable[[], None] | None = None) -> None:
    """Run ``sim`` to ``end`` ps in chunks of ``step`` ps, calling ``on_step`` after each."""
    target = int(sim.now_ps)
    while target < end:
        target = min(target + step, end)
        done = sim.run_until(target)
        if on_step is not None:
            on_step()
        if done:
            break


def _run_with_progress(sim: Any, end: int, step: int, name: str, t0: float) -> None:
    from ccgym._progress import progress_bar

    with progress_bar("{task.description}", fixed=("sim",), elastic="eps", transient=True) as bar:
        task = bar.add_task(name or "simulating", total=end, sim="", eps="")

        def update() -> None:
            now = int(sim.now_ps)
            elapsed = time.perf_counter() - t0
            eps = sim.events / elapsed if elapsed > 0 else 0.0
            bar.update(
                task,
                completed=now,
                sim=f"{format_time_ps(now, end)} / {format_time_ps(end)}",
                eps=f"{eps / 1e6:.1f} M events/s",
            )

        advance(sim, end, step, update)
