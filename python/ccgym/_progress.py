"""Progress bars on stderr that stay readable on a narrow terminal.

Rich shares out a narrow terminal among all the columns of a bar, so at 60 columns the count
became "7…" and the clock "0:…". Here the title, the count, the fixed fields and the clock keep
their width; the bar and the one elastic field (a run's label, a training's latest figures)
give way, the field cut with "…".

Where stderr is not a terminal (nohup, a log file) a bar shows nothing; inside
:func:`plain_lines` (``ccgym train`` enters it) a bar that would be off for that reason prints
plain lines instead (:class:`PlainProgress`).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TextIO

ELAPSED_WIDTH = 7
"""``0:00:00``."""

PLAIN_EVERY_S = 10.0
"""At most one plain progress line this often (seconds)."""


@dataclass(frozen=True)
class _Plain:
    every_s: float
    unit: str | None


_PLAIN: ContextVar[_Plain | None] = ContextVar("ccgym_plain_progress", default=None)


@contextlib.contextmanager
def plain_lines(every_s: float = PLAIN_EVERY_S, unit: str | None = None) -> Iterator[None]:
    """Within this context, a :func:`progress_bar` that is off because stderr is not a terminal
    prints :class:`PlainProgress` lines instead, at most one every ``every_s`` seconds;
    ``unit`` names what is counted (default: the task's description)."""
    token = _PLAIN.set(_Plain(every_s, unit))
    try:
        yield
    finally:
        _PLAIN.reset(token)


def plain_reporter(title: str) -> PlainProgress | None:
    """A :class:`PlainProgress` as :func:`plain_lines` asked for, when it did and stderr is not
    a terminal (for a trainer that prints its own lines rather than a bar); else None."""
    plain = _PLAIN.get()
    if plain is None or sys.stderr.isatty():
        return None
    return PlainProgress(title, every_s=plain.every_s, unit=plain.unit)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class PlainProgress:
    """Progress for a log file, with the part of :class:`rich.progress.Progress`'s interface
    the trainers use (a context manager, ``add_task``, ``update``): a line on stderr,
    ``TITLE: UNIT k/N, 0:01:05, INFO`` (INFO: the task's field ``info_field``; with
    ``unit_after``, ``TITLE: k/N UNIT_AFTER, ...``), when a task first reports, then at most one
    every ``every_s`` seconds, and always when it completes. A training reports where it stands
    (which may start past 0 on resume); the bench advances one finished run at a time."""

    def __init__(
        self,
        title: str,
        *,
        every_s: float = PLAIN_EVERY_S,
        unit: str | None = None,
        info_field: str | None = "info",
        stream: TextIO | None = None,
        unit_after: str | None = None,
    ) -> None:
        self.title, self.every_s, self.unit, self.info_field = title, every_s, unit, info_field
        self.unit_after = unit_after
        self.stream = stream
        self.t0 = time.monotonic()
        self.tasks: list[dict[str, Any]] = []

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(
        self, description: str, total: float | None = None, completed: float = 0, **fields: Any
    ) -> int:
        """A new task; returns its id for :meth:`update`."""
        self.tasks.append(
            {
                "description": description,
                "total": total,
                "completed": completed,
                "fields": dict(fields),
                "last": -float("inf"),
            }
        )
        return len(self.tasks) - 1

    def update(
        self,
        task_id: int,
        *,
        completed: float | None = None,
        advance: float | None = None,
        total: float | None = None,
        **fields: Any,
    ) -> None:
        """Records where the task stands; prints a line when one is due."""
        task = self.tasks[task_id]
        if total is not None:
            task["total"] = total
        if completed is not None:
            task["completed"] = completed
        if advance is not None:
            task["completed"] += advance
        task["fields"].update(fields)
        now = time.monotonic()
        done = task["total"] is not None and task["completed"] >= task["total"]
        if not done and now - task["last"] < self.every_s:
            return
        task["last"] = now
        count = f"{task['completed']:,g}"
        if task["total"] is not None:
            count += f"/{task['total']:,g}"
        what = (
            f"{count} {self.unit_after}"
            if self.unit_after
            else f"{self.unit or task['description']} {count}"
        )
        line = f"{self.title}: {what}, {_clock(now - self.t0)}"
        info = str(task["fields"].get(self.info_field, "")) if self.info_field else ""
        if info.strip():
            line += f", {info.strip()}"
        stream = self.stream or sys.stderr
        print(line, file=stream)
        stream.flush()


def progress_bar(
    title: str,
    *,
    count_width: int | None = None,
    fixed: Sequence[str] = (),
    elastic: str | None = None,
    **kwargs: Any,
) -> Any:
    """A :class:`rich.progress.Progress` on stderr: ``title`` in bold (a task's description
    with ``"{task.description}"``), the bar, ``completed/total`` when
    ``count_width`` (the widest count, e.g. ``len(f"{n}/{n}")``) is given, the task fields named
    in ``fixed`` (never cut), the field ``elastic`` (cut first) and the elapsed time. Other
    keyword arguments go to ``Progress`` (``transient``, ``disable``, ``console``)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    def whole(width: int | None = None) -> Column:
        return Column(no_wrap=True, min_width=width)

    columns: list[Any] = [
        # A task's description has no width yet; a fixed title keeps all of it.
        TextColumn(f"[bold]{title}", table_column=whole(None if "{" in title else len(title))),
        BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=4)),
    ]
    if count_width is not None:
        columns.append(
            TextColumn(
                "{task.completed}/{task.total}",
                justify="right",
                table_column=whole(count_width),
            )
        )
    columns += [TextColumn(f"{{task.fields[{name}]}}", table_column=whole()) for name in fixed]
    if elastic is not None:
        # The only column rich may narrow (it collapses wrappable columns first); its text
        # does not wrap, so a narrowed cell ends in "…" instead of taking a second line.
        class Elastic(TextColumn):
            def render(self, task: Any) -> Any:
                text = super().render(task)
                text.no_wrap, text.overflow = True, "ellipsis"
                return text

        columns.append(Elastic(f"{{task.fields[{elastic}]}}", table_column=Column()))
    columns.append(TimeElapsedColumn(table_column=whole(ELAPSED_WIDTH)))
    kwargs.setdefault("console", Console(stderr=True))
    plain = _PLAIN.get()
    if plain is not None and kwargs.get("disable") and not kwargs["console"].is_terminal:
        # Off only because stderr is a log file: plain lines instead.
        name = title if "{" not in title else title.split("{")[0].strip() or "progress"
        return PlainProgress(name, every_s=plain.every_s, unit=plain.unit, info_field=elastic)
    return Progress(*columns, **kwargs)
