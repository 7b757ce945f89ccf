"""``ccgym run`` pays only for what it uses (issue 21): building the command line and running a
scenario import neither pandas, pyarrow, matplotlib nor PyTorch (pandas alone doubled the CPU
time and tripled the peak memory of a short run), nor the benchmark, the bench runner or the
package-metadata reader; pandas and pyarrow come in with ``--out``, to write the series. Without
``--out`` the series are not even built, so NumPy is not imported either (its import, with
OpenBLAS starting its threads, was 0.06-0.13 s of CPU of a 0.6 s run).

Each check runs in a fresh interpreter and reads its ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ccgym._sim")

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"
HEAVY = ("pandas", "pyarrow", "matplotlib", "torch")
"""Never imported by ``import ccgym.cli`` nor by ``ccgym run`` without ``--out``."""
COMMAND_MACHINERY = ("ccgym.perf", "ccgym.bench", "ccgym.result", "importlib.metadata")
"""Other commands' (or ``--out``'s, or ``--version``'s) modules, not ``run``'s."""
SHORT = ["--set", "duration=1ms", "--set", 'metrics.window=["0ms", "1ms"]']

PROBE = """
import json, sys
from ccgym.cli import main
status = main(sys.argv[1:]) if len(sys.argv) > 1 else 0
sys.stdout.flush()
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
sys.exit(status)
"""


def _modules_after(args: list[str], cwd: Path) -> tuple[set[str], str]:
    """Run ``ccgym ARGS`` (nothing when empty: only ``import ccgym.cli``) in a fresh process;
    the top-level and ccgym modules it imported, and its output before the module list."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out, _, listing = proc.stdout.rpartition("\nMODULES ")
    return set(json.loads(listing)), out


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)]


def test_import_cli_is_light(tmp_path: Path) -> None:
    modules, _ = _modules_after([], tmp_path)
    assert "ccgym.cli" in modules
    assert not _loaded(modules, HEAVY + COMMAND_MACHINERY + ("rich.console",))


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "summary-table"])
def test_run_without_out_imports_no_pandas(tmp_path: Path, quiet: bool) -> None:
    args = ["run", "incast-16", *SHORT] + (["--quiet"] if quiet else [])
    modules, out = _modules_after(args, tmp_path)
    assert not _loaded(modules, HEAVY + COMMAND_MACHINERY + ("numpy",))
    assert "ccgym._sim" in modules  # it did run
    if not quiet:
        assert "ccgym run: incast-16" in out and "utilisation" in out
    assert list(tmp_path.iterdir()) == []


def test_run_with_out_writes_the_series(tmp_path: Path) -> None:
    import pandas as pd

    modules, out = _modules_after(["run", "incast-16", *SHORT, "--quiet", "--out", "r"], tmp_path)
    assert "pandas" in modules and "pyarrow" in modules and "numpy" in modules
    assert not _loaded(modules, ("matplotlib", "torch", "ccgym.perf", "ccgym.bench"))
    assert out.strip() == "results: r"
    names = {p.name for p in (tmp_path / "r").iterdir()}
    assert {"summary.json", "scenario.json", "timing.json", "ports.parquet"} <= names
    assert len(pd.read_parquet(tmp_path / "r" / "flows.parquet")) > 0


def test_version_is_read_when_asked(tmp_path: Path) -> None:
    import ccgym

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "ccgym", "--version"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout == f"ccgym {ccgym.__version__}\n"
    assert ccgym.__version__ and "__version__" in ccgym.__all__


def test_simulate_is_run_without_the_tables() -> None:
    """``simulate`` (what ``ccgym run`` calls) and ``run`` give the same run; the result's
    tables are views of the native arrays, not copies of them."""
    import pandas as pd

    import ccgym
    from ccgym.result import Result
    from ccgym.runner import simulate

    overrides = SHORT[1::2]
    raw = simulate("incast-16", overrides=overrides)
    result = ccgym.run("incast-16", overrides=overrides)
    assert raw.summary == result.summary and raw.scenario == result.scenario
    assert set(raw.timing) == set(result.timing)
    assert set(raw.series) == set(result.series)
    for name, columns in raw.series.items():  # as the tables were built before (copied)
        pd.testing.assert_frame_equal(result.series[name], pd.DataFrame(dict(columns)))

    tables = Result.from_run(raw).series
    for name, columns in raw.series.items():
        for col, values in columns.items():
            if isinstance(values, np.ndarray):
                assert np.shares_memory(tables[name][col].to_numpy(), values), (name, col)


def test_simulate_without_tables_gives_the_same_summary() -> None:
    """``tables=False`` (``ccgym run`` without ``--out``) skips the series, nothing else."""
    from ccgym.runner import simulate

    overrides = SHORT[1::2]
    full = simulate("incast-16", overrides=overrides)
    bare = simulate("incast-16", overrides=overrides, tables=False)
    assert bare.summary == full.summary and bare.scenario == full.scenario
    assert bare.series == {} and full.series
