"""Every code example of README.md and docs/*.md runs as written, or as its markers say.

How pages are run and what the ``<!-- docs-test: ... -->`` markers mean: ``tests/docs_examples.py``
(and the README's "Examples in the docs are tests"). The tests at the end show that the runner
fails, naming the page and the line, when an example is broken.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docs_examples  # noqa: E402
from docs_examples import (  # noqa: E402
    NOT_RUN,
    REPO,
    Block,
    MarkerError,
    extract,
    make_workspace,
    pages,
    run_blocks,
)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path) -> None:
    name = str(page.relative_to(REPO))
    blocks = extract(page, name)
    result = run_blocks(blocks, make_workspace(tmp_path))
    assert result.failure is None, f"an example of {name} failed:\n{result.failure}"
    assert len(result.ran) == sum(b.skip is None for b in blocks)


def test_every_markdown_page_is_checked() -> None:
    found = {p.relative_to(REPO) for p in [*REPO.glob("*.md"), *(REPO / "docs").glob("*.md")]}
    assert found == {p.relative_to(REPO) for p in pages()}


# --------------------------------------------------------------------------- the runner itself


def _page(tmp_path: Path, text: str) -> list[Block]:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return extract(page, "page.md")


def _run(tmp_path: Path, text: str) -> tuple[list[str], str | None]:
    result = run_blocks(_page(tmp_path, text), make_workspace(tmp_path))
    return [r.split(" (")[0] for r in result.ran], result.failure


def test_a_broken_python_example_fails_naming_its_page_and_line(tmp_path: Path) -> None:
    text = (
        "# A page\n\n```python\nx = 1\n```\n\nText.\n\n"
        "```python\ny = x\nz = y + undefined_name\n```\n"
    )
    ran, failure = _run(tmp_path, text)
    assert ran == ["page.md:3"]  # the first block ran; its name x was visible to the second
    assert failure is not None
    assert "page.md:9: python block failed" in failure
    assert 'File "page.md", line 11' in failure and "undefined_name" in failure


def test_a_broken_shell_example_fails_naming_its_page_and_line(tmp_path: Path) -> None:
    text = "```sh\nccgym list cc > /dev/null\nccgym run no-such-scenario\necho never\n```\n"
    ran, failure = _run(tmp_path, text)
    assert ran == []
    assert failure is not None
    assert "page.md:3: command failed" in failure and "page.md:1: shell block failed" in failure
    assert "no-such-scenario" in failure


def test_a_broken_example_of_a_real_page_fails(tmp_path: Path) -> None:
    # docs/scenarios.md's Python example as it was before shortening a run was one setting:
    # a window past the end of a shortened run.
    text = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
    broken = text.replace(
        "\"metrics.window=['2ms', 'end']\"", "\"metrics.window=['2ms', '170ms']\"", 1
    )
    assert broken != text
    page = tmp_path / "scenarios.md"
    page.write_text(broken, encoding="utf-8")
    blocks = [b for b in extract(page, "docs/scenarios.md") if b.lang == "python"]
    result = run_blocks(blocks, make_workspace(tmp_path))
    assert result.failure is not None
    assert f"docs/scenarios.md:{blocks[0].line}: python block failed" in result.failure
    assert "metrics.window" in result.failure and "ends after the end of the run" in result.failure


def test_skip_and_replace_markers(tmp_path: Path) -> None:
    text = (
        "<!-- docs-test: skip (illustrative) -->\n```python\nraise SystemExit(3)\n```\n\n"
        "<!-- docs-test: replace 1 / 0 => 1 / 1 -->\n<!-- docs-test: replace qq => 7 -->\n"
        "```python\nx = 1 / 0 + qq\nassert x == 8\n```\n"
        "```sh\nmake test\npip install nothing\ntensorboard --logdir runs\n```\n"
    )
    blocks = _page(tmp_path, text)
    assert [b.skip for b in blocks] == ["illustrative", None, None]
    assert blocks[1].replace == [("1 / 0", "1 / 1"), ("qq", "7")]
    ran, failure = _run(tmp_path, text)
    assert failure is None and ran == ["page.md:8", "page.md:12"]
    assert set(NOT_RUN) == {"make", "pip", "tensorboard"}


def test_a_block_that_needs_the_anchors_runs_only_where_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "<!-- docs-test: needs anchors -->\n```python\nx = 1\n```\n"
    monkeypatch.setattr(docs_examples, "anchors_found", lambda: False)
    assert [b.skip for b in _page(tmp_path, text)] == [
        "needs the shared anchors folder, not found here"
    ]
    monkeypatch.setattr(docs_examples, "anchors_found", lambda: True)
    assert [b.skip for b in _page(tmp_path, text)] == [None]


def test_a_timeout_stops_everything_the_blocks_started(tmp_path: Path) -> None:
    text = "```python\nx = 1\n```\n\n```sh\nsleep 299.25 &\nsleep 299.5\n```\n"
    result = run_blocks(_page(tmp_path, text), make_workspace(tmp_path), timeout=3.0)
    assert result.failure == "page.md:5: timed out after 3 s"

    def running(arg: str) -> bool:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if arg in cmdline.read_bytes().decode(errors="replace"):
                    return True
            except OSError:
                continue
        return False

    deadline = time.monotonic() + 5
    while (running("299.25") or running("299.5")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running("299.25") and not running("299.5")


def test_a_replace_marker_that_no_longer_matches_fails(tmp_path: Path) -> None:
    ran, failure = _run(
        tmp_path, "<!-- docs-test: replace 20ms => 2ms -->\n```python\nx = 1\n```\n"
    )
    assert ran == [] and failure is not None
    assert "page.md:2: replace marker: '20ms' does not occur in the block" in failure


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "<!-- docs-test: skip (x) -->\n\nText.\n",
            "page.md:1: docs-test marker not followed by a code block",
        ),
        (
            "<!-- docs-test: skip -->\n```python\n```\n",
            "page.md:1: unknown docs-test marker 'skip'",
        ),
        (
            "<!-- docs-test: skip (x) -->\n```toml\n```\n",
            "page.md:1: docs-test marker on a block that is never run",
        ),
        ("<!-- docs-test: skip (x)\n```python\n```\n", "page.md:1: malformed docs-test marker"),
    ],
)
def test_malformed_markers_are_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(MarkerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _page(tmp_path, text)
