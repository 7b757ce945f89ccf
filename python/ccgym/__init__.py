"""ccgym: a fast packet-level datacenter congestion-control simulator.

Quick start::

    import ccgym
    result = ccgym.run("incast-16")          # a bundled scenario, a TOML path, string or dict
    result.summary["bottleneck"]["utilization"]
    result.series["ports"]                   # pandas DataFrame
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ccgym._errors import CorruptFileError, CorruptFileWarning, ScenarioError
from ccgym.runner import LargeRunWarning, LateScheduleWarning, estimate, run
from ccgym.scenario import bundled_scenarios, bundled_workloads, load_scenario

if TYPE_CHECKING:
    from ccgym.result import Result

if TYPE_CHECKING:
    __version__: str

__all__ = [
    "CorruptFileError",
    "CorruptFileWarning",
    "LargeRunWarning",
    "LateScheduleWarning",
    "Result",
    "ScenarioError",
    "__version__",
    "bundled_scenarios",
    "bundled_workloads",
    "estimate",
    "load_scenario",
    "run",
]


def __getattr__(name: str) -> Any:
    # `Result` needs pandas; importing it lazily keeps `import ccgym` (the CLI, the perf child
    # processes whose memory is measured) light.
    if name == "Result":
        from ccgym.result import Result

        return Result
    # The version comes from the package metadata, whose reader (importlib.metadata) costs
    # more to import than the rest of `ccgym run`'s start-up: read it on first use.
    if name == "__version__":
        global __version__
        from importlib.metadata import PackageNotFoundError, version

        try:
            __version__ = version("ccgym")
        except PackageNotFoundError:  # running from a source tree that is not installed
            __version__ = "0.0.0+unknown"
        return __version__
    raise AttributeError(f"module 'ccgym' has no attribute {name!r}")
