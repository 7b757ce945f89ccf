"""Runs the code examples of the documentation: every ```python and ```sh / ```bash /
```console block of README.md and docs/*.md.

A page is one session: its blocks run in the order of the page, in one scratch folder that holds
a copy of the pages and of ``python/`` (so relative paths such as ``python/ccgym/configs/...``
resolve and outputs such as ``results/`` or ``runs/`` never land in the repository); its Python
blocks share one namespace, so a block may use the names of the blocks above it, and shell
blocks see the files earlier blocks wrote. ``ccgym ...`` in a shell block is ``python -m ccgym``
with the interpreter running the tests.

Markers, HTML comments on the lines right above a block's opening fence (invisible on the rendered
page, visible in its source):

* ``<!-- docs-test: skip (REASON) -->``: the block is illustrative and is not run; the reason is
  required.
* ``<!-- docs-test: replace OLD => NEW -->``: run the block with the text ``OLD`` replaced by
  ``NEW`` (e.g. a shorter ``duration``); ``OLD`` must occur in the block. Several may be given.
* ``<!-- docs-test: needs anchors -->``: the block reads the shared reference files (the
  ``rlcc-public`` policy), which are not part of the repository; it runs where they are found
  (``$CCGYM_ANCHORS`` or ``<repo>/../shared/anchors``) and is skipped elsewhere, saying why.

A marker that is not followed by a block, or that is malformed, is an error, so markers cannot
go stale unnoticed. In shell blocks, three commands are never run, by rule: ``make`` (its targets
rebuild and rerun the repository, recursively for ``make test``; each target is documented as
the ``ccgym`` commands it runs), ``pip`` (the test must not change the environment) and
``tensorboard`` (a server that does not exit); each prints a note instead.

``python tests/docs_examples.py PAGE.md ...`` runs pages by hand and prints what failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PYTHON_LANGS = {"python", "py"}
SHELL_LANGS = {"sh", "bash", "shell", "console"}

_FENCE = re.compile(r"^```\s*([A-Za-z0-9_+-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*docs-test:(.*?)-->\s*$")
_SKIP = re.compile(r"^skip\s*\((.+)\)$")
_REPLACE = re.compile(r"^replace\s+(.+?)\s+=>\s+(.*)$")
_NEEDS_ANCHORS = re.compile(r"^needs\s+anchors$")


def anchors_found() -> bool:
    """Whether the shared reference files (``rlcc_public_policy.npz``) are found, as ``ccgym``
    looks for them from this repository."""
    env = os.environ.get("CCGYM_ANCHORS")
    dirs = ([Path(env)] if env else []) + [REPO.parent / "shared" / "anchors"]
    return any((d / "rlcc_public_policy.npz").is_file() for d in dirs)


NOT_RUN = {
    "make": "make targets rebuild and rerun the repository (make test would recurse)",
    "pip": "the docs test does not change the environment",
    "tensorboard": "a server that does not exit",
}
"""Shell commands that are never run, and why."""


class MarkerError(ValueError):
    """A ``docs-test`` marker that is malformed or not followed by a code block."""


@dataclass
class Block:
    """One runnable code block of a page."""

    page: str  # path relative to the repository, e.g. docs/env.md
    line: int  # line of the opening fence (1-based)
    lang: str  # "python" or "sh"
    code: str
    skip: str | None = None  # the reason, when the block is illustrative
    replace: list[tuple[str, str]] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def runnable_code(self) -> str:
        """The code as run: the replacements applied (each must match)."""
        code = self.code
        for old, new in self.replace:
            if old not in code:
                raise MarkerError(
                    f"{self.where}: replace marker: {old!r} does not occur in the block"
                )
            code = code.replace(old, new)
        return code


def extract(page: Path, name: str | None = None) -> list[Block]:
    """The python and shell blocks of a markdown page, with their markers."""
    name = name or page.name
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    pending: list[tuple[int, str]] = []  # markers waiting for their block
    i = 0
    while i < len(lines):
        text = lines[i]
        marker = _MARKER.match(text.strip())
        if marker:
            pending.append((i + 1, marker.group(1).strip()))
            i += 1
            continue
        if "docs-test" in text and "<!--" in text:
            raise MarkerError(f"{name}:{i + 1}: malformed docs-test marker: {text.strip()!r}")
        fence = _FENCE.match(text)
        if not fence:
            if pending:
                raise MarkerError(
                    f"{name}:{pending[0][0]}: docs-test marker not followed by a code block"
                )
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        lang = fence.group(1).lower()
        kind = "python" if lang in PYTHON_LANGS else "sh" if lang in SHELL_LANGS else None
        if kind is None and pending:
            raise MarkerError(
                f"{name}:{pending[0][0]}: docs-test marker on a block that is never run "
                f"({lang or 'no language'})"
            )
        if kind is not None:
            code = lines[i + 1 : end]
            if lang == "console":  # commands are the lines after a "$ " prompt
                code = [ln[2:] if ln.startswith("$ ") else "" for ln in code]
            block = Block(name, i + 1, kind, "\n".join(code) + "\n")
            for at, text_ in pending:
                skip, repl = _SKIP.match(text_), _REPLACE.match(text_)
                if skip:
                    block.skip = skip.group(1).strip()
                elif repl:
                    block.replace.append((repl.group(1), repl.group(2)))
                elif _NEEDS_ANCHORS.match(text_):
                    if not anchors_found():
                        block.skip = "needs the shared anchors folder, not found here"
                else:
                    raise MarkerError(
                        f"{name}:{at}: unknown docs-test marker {text_!r} "
                        "(use 'skip (REASON)', 'replace OLD => NEW' or 'needs anchors')"
                    )
            blocks.append(block)
        pending = []
        i = end + 1
    if pending:
        raise MarkerError(f"{name}:{pending[0][0]}: docs-test marker not followed by a code block")
    return blocks


def pages() -> list[Path]:
    """README.md and docs/*.md of the repository."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def make_workspace(root: Path) -> Path:
    """A scratch copy of what the examples read: the pages and ``python/`` without builds."""
    work = root / "work"
    work.mkdir(parents=True)
    shutil.copy(REPO / "README.md", work / "README.md")
    shutil.copytree(REPO / "docs", work / "docs")
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd")
    shutil.copytree(REPO / "python", work / "python", ignore=ignore)
    return work


@dataclass
class PageResult:
    """What running a page's blocks gave."""

    ran: list[str]  # where each block that ran is, in order
    skipped: list[str]
    failure: str | None  # "PAGE:LINE: ..." with the error, or None
    seconds: float


def run_blocks(blocks: list[Block], work: Path, timeout: float = 120.0) -> PageResult:
    """Runs blocks in order in ``work`` in a fresh interpreter (see :func:`_driver`)."""
    todo = [b for b in blocks if b.skip is None]
    skipped = [f"{b.where} ({b.skip})" for b in blocks if b.skip is not None]
    if not todo:
        return PageResult([], skipped, None, 0.0)
    start = time.perf_counter()
    try:
        payload = [dict(asdict(b), code=b.runnable_code()) for b in todo]
    except MarkerError as e:
        return PageResult([], skipped, str(e), 0.0)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "python"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env["DOCS_TEST_PYTHON"] = sys.executable
    env.setdefault("MPLBACKEND", "Agg")
    # Its own session, so that a timeout stops everything the blocks started (a shell block's
    # `ccgym bench` and its workers), not only the driver.
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=work,
        env=env,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(json.dumps(payload), timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, _ = proc.communicate()
        done = sum(ln.startswith("docs-test: ran ") for ln in stdout.splitlines())
        where = todo[min(done, len(todo) - 1)].where
        return PageResult([], skipped, f"{where}: timed out after {timeout:.0f} s", timeout)
    seconds = time.perf_counter() - start
    lines = stdout.splitlines()
    ran = [ln.removeprefix("docs-test: ran ") for ln in lines if ln.startswith("docs-test: ran ")]
    failure = None
    if proc.returncode != 0:
        tail = stderr.strip().splitlines()[-40:]
        failure = "\n".join(tail) or f"exit status {proc.returncode}"
    return PageResult(ran, skipped, failure, seconds)


# The driver runs in a fresh interpreter in the scratch folder: Python blocks in one namespace
# (compiled so that tracebacks name the page and its line), shell blocks through bash with
# `ccgym` as `python -m ccgym`. It stops at the first failing block, naming it on stderr.
_DRIVER = r"""
import json, os, subprocess, sys, time, traceback
blocks = json.load(sys.stdin)
py = os.environ["DOCS_TEST_PYTHON"]
not_run = NOT_RUN_PLACEHOLDER
# Aliases, not functions: a failing command then fails at its own line, where the trap reports it.
prelude = ["set -eo pipefail", "shopt -s expand_aliases",
           "alias ccgym='\"$DOCS_TEST_PYTHON\" -m ccgym' python='\"$DOCS_TEST_PYTHON\"'"]
for cmd, why in not_run.items():
    prelude.append(f'{cmd}() {{ echo "docs-test: not run: {cmd} $* ({why})" >&2; }}')
ns = {"__name__": "__docs__"}
for b in blocks:
    t0 = time.perf_counter()
    where = f"{b['page']}:{b['line']}"
    if b["lang"] == "python":
        try:
            exec(compile("\n" * b["line"] + b["code"], b["page"], "exec"), ns)
        except BaseException:
            traceback.print_exc()
            print(f"{where}: python block failed (traceback above)", file=sys.stderr)
            sys.exit(1)
    else:
        offset = b["line"] - len(prelude) - 1
        trap = f"trap 'echo \"{b['page']}:$((LINENO + {offset})): command failed\" >&2' ERR"
        script = "\n".join(prelude[:1] + [trap] + prelude[1:]) + "\n" + b["code"]
        proc = subprocess.run(["bash", "-c", script], env=os.environ)
        if proc.returncode != 0:
            print(f"{where}: shell block failed (exit status {proc.returncode})", file=sys.stderr)
            sys.exit(1)
    sys.stdout.flush()
    print(f"docs-test: ran {where} ({time.perf_counter() - t0:.1f} s)", flush=True)
""".replace("NOT_RUN_PLACEHOLDER", repr(NOT_RUN))


def main(argv: list[str]) -> int:
    import tempfile

    status = 0
    for arg in argv or [str(p) for p in pages()]:
        page = Path(arg).resolve()
        name = str(page.relative_to(REPO)) if page.is_relative_to(REPO) else page.name
        with tempfile.TemporaryDirectory() as tmp:
            result = run_blocks(extract(page, name), make_workspace(Path(tmp)))
        print(
            f"{name}: {len(result.ran)} blocks ran, {len(result.skipped)} skipped, "
            f"{result.seconds:.1f} s"
        )
        for where in result.ran:
            print(f"  ran {where}")
        if result.failure:
            print(result.failure)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
