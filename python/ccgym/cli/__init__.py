"""The ``ccgym`` command line, one module per command group:

* :mod:`ccgym.cli.run`: ``run`` (simulate a scenario) and ``list``;
* :mod:`ccgym.cli.perf`: ``perf`` (the simulator, the agent bridge, a native decision);
* :mod:`ccgym.cli.learning`: ``train``, ``export`` and ``eval`` (learned congestion control);
* :mod:`ccgym.cli.bench`: ``bench`` (benchmark suites);
* :mod:`ccgym.cli.validate`: ``validate`` (ccgym beside htsim and YAPS on their scenarios);
* :mod:`ccgym.cli.common`: number formatting, the run-summary table, argument types.

User mistakes (a bad scenario, a missing file) print one red ``error: ...`` line on stderr and
exit with status 2; ``--debug`` shows the traceback instead. Commands import what they need
when they run, so ``ccgym run``, ``ccgym perf`` and ``ccgym bench`` never import PyTorch, and
building the parser imports no command's machinery (the benchmark, the bench runner, rich's
console, pandas): ``ccgym run`` pays only for what it uses.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from ccgym._errors import (
    CorruptFileError,
    CorruptFileWarning,
    InternalError,
    LateScheduleWarning,
    PerfError,
    ResumeConfigWarning,
    ScenarioError,
)
from ccgym.cli import acc, bench, learning, perf, run, validate
from ccgym.cli.common import summary_table

__all__ = [
    "EXIT_FAILURE",
    "EXIT_USER_ERROR",
    "build_parser",
    "main",
    "run_command",
    "summary_table",
]

EXIT_USER_ERROR = 2
EXIT_FAILURE = 1


class _VersionAction(argparse.Action):
    """``--version``: the installed version is looked up only when asked for (reading the
    package metadata costs more than parsing the rest of the command line)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from ccgym import __version__

        print(f"ccgym {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ccgym`` command."""
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    parser = argparse.ArgumentParser(
        prog="ccgym", description="Datacenter congestion-control simulator.", parents=[debug]
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show program's version number and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (run, perf, learning, bench, acc, validate):
        group.register(sub, debug)
    return parser


def _error(message: str) -> None:
    from rich.console import Console
    from rich.text import Text

    line = " ".join(part.strip() for part in str(message).strip().splitlines())
    Console(stderr=True, highlight=False, soft_wrap=True).print(Text(line, style="red"))


ShowWarning = Callable[[Warning | str, type[Warning], str, int, TextIO | None, str | None], None]


def _one_line_warnings(
    fallback: ShowWarning,
    one_line: tuple[type[Warning], ...] = (
        CorruptFileWarning,
        ResumeConfigWarning,
        LateScheduleWarning,
    ),
) -> ShowWarning:
    """A ``warnings.showwarning`` for the command line: ccgym's own warnings (a damaged file
    skipped or repaired, or the ``one_line`` categories) as one yellow ``warning: ...`` line,
    others through ``fallback``."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if not issubclass(category, one_line):
            fallback(message, category, filename, lineno, file, line)
            return
        from rich.console import Console
        from rich.text import Text

        text = " ".join(part.strip() for part in str(message).strip().splitlines())
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            Text(f"warning: {text}", style="yellow")
        )

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ccgym`` command line; returns the exit status."""
    return run_command(build_parser().parse_args(argv))


def run_command(
    args: argparse.Namespace,
    one_line: tuple[type[Warning], ...] = (
        CorruptFileWarning,
        ResumeConfigWarning,
        LateScheduleWarning,
    ),
) -> int:
    """Runs a parsed command, ``args.func(args)``, as the ``ccgym`` command does: user mistakes
    (:class:`ScenarioError`, :class:`CorruptFileError`, :class:`OSError`) as one ``error: ...``
    line and status 2, other failures as one line and status 1, the traceback instead when
    ``args.debug`` is true; the ``one_line`` warning categories as one ``warning: ...`` line.
    Other command lines of the package (``python -m ccgym.qtcp``) go through it too."""
    with warnings.catch_warnings():
        for category in one_line:
            warnings.simplefilter("always", category)
        warnings.showwarning = _one_line_warnings(warnings.showwarning, one_line)
        return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    func: Callable[[argparse.Namespace], int] = args.func
    if getattr(args, "debug", False):
        return func(args)
    try:
        return func(args)
    except KeyboardInterrupt as e:  # with a message when work was saved (ccgym train)
        _error(f"error: {e}" if str(e) else "error: interrupted")
        return 130
    except (ScenarioError, CorruptFileError, OSError) as e:
        _error(f"error: {e}")
        return EXIT_USER_ERROR
    except (ImportError, PerfError) as e:
        _error(f"error: {e}")
        return EXIT_FAILURE
    except InternalError as e:
        _error(f"internal error: {e} (a bug in ccgym; --debug shows the traceback)")
        return EXIT_FAILURE
    except Exception as e:
        _error(f"error: {type(e).__name__}: {e} (--debug shows the traceback)")
        return EXIT_FAILURE
