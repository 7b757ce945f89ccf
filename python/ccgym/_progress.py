"""Progress bars on stderr that stay readable on a narrow terminal.

Rich shares out a narrow terminal among all the columns of a bar, so at 60 columns the count
became "7…" and the clock "0:…". Here the title, the count, the fixed fields and the clock keep
their width; the bar and the one elastic field (a run's label, a training's latest figures)
give way, the field cut with "…".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ELAPSED_WIDTH = 7
"""``0:00:00``."""


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
    return Progress(*columns, **kwargs)
