"""The training runs of the profile-guided build (scripts/build_native.sh).

Runs a short, broad set of scenarios through an instrumented native module, so that the profile
it leaves behind knows which branches of the core are hot in the runs people make: the incast
under every classic CC, the fat trees and leaf-spine of ``ccgym perf --topologies``, HPCC-PINT, the
144-host fabric under every method of the receiver-driven suite, emulated WAN links with their
traces, and native policies (flow agents and switch-queue agents). Code that no run reaches is
laid out as cold, so a CC or feature missing here would run slower than in a plain build; keep
the list as broad as the simulator.

Results do not depend on the profile: it changes the machine code's layout and inlining, never
what the code computes (the golden-results tests run on the optimised build).

Usage: ``python scripts/pgo_train.py [-v]`` (about 5 s of CPU with an instrumented module; ``-v``
prints each run's CPU time).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from ccgym import perf, policies
from ccgym.runner import native, scenario_json, simulate
from ccgym.scenario import load_scenario

Run = Callable[[], None]

# The receiver-driven transports run in the fabric below, under their suite presets; `agent`
# runs with a bundled policy.
_NOT_ON_INCAST = {"pfabric", "phost", "homa", "hopass", "ndp", "eqds", "agent"}
# The two benchmark incasts run longest, so that their branches weigh most in shared code.
_LONG_INCAST = {"line_rate", "hpcc"}
_WHOLE_RUN = "metrics.window=['0s', 'end']"


def _run_dict(data: dict[str, Any]) -> None:
    resolved, base_dir = load_scenario(data)
    sim = native().Simulation(scenario_json(resolved), str(base_dir))
    sim.run_until(int(sim.end_ps))
    sim.finish(tables=False)


def _incast(cc: str, flows: int, duration: str) -> Run:
    return lambda: _run_dict(perf.incast_scenario(flows, duration, cc))


def _topology(entry: str, duration: str, cc: str) -> Run:
    return lambda: _run_dict(perf.topology_scenario(entry, duration, cc))


def _pint(data: dict[str, Any]) -> Run:
    """HPCC-PINT (its switch estimate and field), on the scenario ``data``."""
    data["cc"]["variant"] = "pint"
    return lambda: _run_dict(data)


def _fabric(method: str) -> Run:
    return lambda: _run_dict(perf.fabric_scenario(method, "4ms"))


def _wan(name: str, cc: str) -> Run:
    return lambda: simulate(name, cc=cc, overrides=["duration=3s", _WHOLE_RUN], tables=False)


def _adpg(precision: str) -> Run:
    scenario = perf.incast_scenario(16, "3ms")
    return lambda: _run_dict(policies.use_policy(scenario, "adpg-default", precision=precision))


def _short(name: str, duration: str) -> None:
    simulate(name, overrides=[f"duration={duration}"], tables=False)


def _acc() -> None:
    from ccgym.acc.driver import acc_scenario

    data, base_dir = load_scenario("acc-websearch", ["duration=4ms", _WHOLE_RUN])
    _run_dict(policies.use_queue_policy(acc_scenario(data, base_dir=base_dir), "acc-default"))


def _runs() -> list[tuple[str, Run]]:
    from ccgym.bench.runner import load_suite

    runs: list[tuple[str, Run]] = []
    for cc, _, _ in native().cc_catalogue():
        if cc in _NOT_ON_INCAST:
            continue
        runs.append((f"incast 16 {cc}", _incast(cc, 16, "30ms" if cc in _LONG_INCAST else "4ms")))
        runs.append((f"incast 1024 {cc}", _incast(cc, 1024, "1ms")))
    for cc in sorted(_LONG_INCAST):
        runs.append((f"incast 8192 {cc}", _incast(cc, 8192, "1ms")))
    # k = 16 takes the deeper prefetch chain of networks from 4,096 ports (sim/prefetch.rs).
    topologies = (("fat-tree-8", "100us"), ("fat-tree-16", "30us"), ("leaf-spine", "500us"))
    for entry, duration in topologies:
        for cc in ("line_rate", "hpcc", "dcqcn"):
            runs.append((f"{entry} {cc}", _topology(entry, duration, cc)))
    runs.append(("incast 16 hpcc-pint", _pint(perf.incast_scenario(16, "4ms", "hpcc"))))
    runs.append(
        ("fat-tree-8 hpcc-pint", _pint(perf.topology_scenario("fat-tree-8", "100us", "hpcc")))
    )
    for method in load_suite(perf.FABRIC_SUITE).get("presets") or {}:
        runs.append((f"fabric {method}", _fabric(method)))
    # Emulated WAN links (traces, a policer, rate schedules) under the window-based CCs.
    for name in ("mvfst-policer", "mvfst-mexico-cellular", "dumbbell-wan-varying"):
        for cc in ("cubic", "copa", "bbr"):
            runs.append((f"{name} {cc}", _wan(name, cc)))
    runs += [(f"adpg {p}", _adpg(p)) for p in ("float32", "int8")]
    runs.append(("acc queue agents", _acc))
    for name, duration in (("qtcp-fixed", "200ms"), ("homa-websearch-small", "5ms")):
        runs.append((name, lambda n=name, d=duration: _short(n, d)))
    return runs


def main() -> int:
    warnings.simplefilter("ignore")  # large-run warnings do not concern a training run
    t0 = time.process_time()
    runs = _runs()
    for label, run in runs:
        t = time.process_time()
        run()
        if "-v" in sys.argv[1:]:
            print(f"  {label}: {time.process_time() - t:.2f} s", flush=True)
    cpu = time.process_time() - t0
    print(f"profile training: {len(runs)} runs, {cpu:.1f} s of CPU", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
