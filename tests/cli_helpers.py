"""Running a ccgym command line in a subprocess, as a user's shell does: stdout and stderr are
pipes (so no terminal: no colours, no progress bars, plain progress lines), the package found
through ``PYTHONPATH`` whether or not it is installed, one torch thread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"


def run_ccgym(
    *args: str, cwd: Path | None = None, module: str = "ccgym", timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` (``ccgym``, ``ccgym.cli``, ``ccgym.qtcp``) with a 200-column
    width for tables."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "200"
    env.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
