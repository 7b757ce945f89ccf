"""Exception types shared by the Python layer and the native module.

``ScenarioError`` is defined by the native module ``ccgym._sim``; the Python side raises the
same class so that callers need to catch one type.  When the extension is not built (e.g. while
only the pure-Python parts are tested) a stand-in with the same base class is used.
"""

from __future__ import annotations

import json

try:
    from ccgym._sim import InternalError, ScenarioError
except ImportError:  # the native module is not built

    class ScenarioError(ValueError):  # type: ignore[no-redef]
        """Bad user input: the message names the field and the value."""

    class InternalError(RuntimeError):  # type: ignore[no-redef]
        """A bug in the simulator."""


class CorruptFileError(ValueError):
    """A file ccgym wrote earlier (a training checkpoint or history) is damaged and nothing can
    stand in for it; the message names the file and says what to do."""


class CorruptFileWarning(UserWarning):
    """A damaged file was skipped or repaired and the work goes on (a bench cache record is
    run again, a torn last line of a training history is dropped); the message names it."""


class ResumeConfigWarning(UserWarning):
    """A resumed training run's config given changes settings of its checkpoint's config;
    the message lists them (shown as one ``warning:`` line by the command line)."""


class LateScheduleWarning(UserWarning):
    """A ``[[link]]`` rate-schedule step lies after the end of the run, so it never applies
    (usually a scenario run shorter than written: a step's time cannot follow ``duration``)."""


class PerfError(RuntimeError):
    """A benchmark child process of ``ccgym perf`` failed (:mod:`ccgym.perf` raises it; it is
    defined here so that the command line can catch it without importing the benchmark)."""


def not_utf8(what: str, error: UnicodeDecodeError) -> ScenarioError:
    """The error for a text file that is not UTF-8: ``what`` names the file; the first bad byte
    is given by line and column, as the TOML and JSON parsers give theirs."""
    data = bytes(error.object)
    line = data.count(b"\n", 0, error.start) + 1
    column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
    return ScenarioError(
        f"{what}: not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}, column {column})"
    )


def invalid_json(what: str, error: json.JSONDecodeError) -> ScenarioError:
    """The error for a file that is not valid JSON: ``what`` names the file."""
    return ScenarioError(
        f"{what}: invalid JSON: {error.msg} (at line {error.lineno}, column {error.colno})"
    )


__all__ = [
    "CorruptFileError",
    "CorruptFileWarning",
    "InternalError",
    "PerfError",
    "ScenarioError",
    "invalid_json",
    "not_utf8",
]
