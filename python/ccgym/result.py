"""The result of a run: summary metrics, time series tables and the scenario that produced them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ccgym.runner import NativeRun

SUMMARY_FILE = "summary.json"
SCENARIO_FILE = "scenario.json"
TIMING_FILE = "timing.json"
# Every table a run can produce (the native module's; ``flows``, ``messages`` and ``ecn`` only
# in some runs). ``save`` removes the files of those this result lacks, which an earlier save
# into the same folder left, so that ``load`` does not return another run's table.
RESULT_TABLES = ("ports", "port_info", "flow_info", "flows", "messages", "ecn")


@dataclass(repr=False)
class Result:
    """Everything a run produced.

    Attributes:
        summary: the simulator's summary metrics (see ``docs/`` and the summary table of
            ``ccgym run``); deterministic for a given scenario and seed.
        series: time series and per-entity tables in long format, by table name: ``ports``,
            ``port_info``, ``flows`` (absent for very large runs), ``flow_info``.
        scenario: the scenario as it was simulated (after overrides and name resolution).
        timing: wall-clock facts of this run (``wall_s``, ``setup_s``, ``events_per_s``); not
            deterministic, hence kept apart from ``summary``.
    """

    summary: dict[str, Any]
    series: dict[str, pd.DataFrame]
    scenario: dict[str, Any]
    timing: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_native(
        cls,
        summary_json: str,
        series: Mapping[str, Mapping[str, np.ndarray | Sequence[str]]],
        scenario: dict[str, Any],
        timing: dict[str, float] | None = None,
    ) -> Result:
        """Build a result from what ``ccgym._sim.Simulation.finish()`` returns."""
        return cls(json.loads(summary_json), native_tables(series), scenario, dict(timing or {}))

    @classmethod
    def from_run(cls, raw: NativeRun) -> Result:
        """Build a result from what :func:`ccgym.runner.simulate` returns; its tables take the
        arrays of ``raw.series`` without copying them (``raw`` should not be used afterwards)."""
        tables = native_tables(raw.series, copy=False)
        return cls(raw.summary, tables, raw.scenario, dict(raw.timing))

    def save(self, out_dir: str | Path) -> Path:
        """Write the result to ``out_dir`` (created if needed) and return its path.

        Files: ``summary.json``, ``scenario.json``, ``timing.json`` and one ``<table>.parquet``
        per series table. A result table's file that this result does not have (``flows.parquet``
        from an earlier run saved there with flow series, say) is removed.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name in RESULT_TABLES:
            if name not in self.series:
                (out / f"{name}.parquet").unlink(missing_ok=True)
        _write_json(out / SUMMARY_FILE, self.summary)
        _write_json(out / SCENARIO_FILE, self.scenario)
        _write_json(out / TIMING_FILE, self.timing)
        for name, table in self.series.items():
            table.to_parquet(out / f"{name}.parquet", index=False)
        return out

    @classmethod
    def load(cls, directory: str | Path) -> Result:
        """Read a result folder written by :meth:`save`."""
        d = Path(directory)
        if not (d / SUMMARY_FILE).is_file():
            raise FileNotFoundError(f"not a ccgym result folder (no {SUMMARY_FILE}): {d}")
        summary = _read_json(d / SUMMARY_FILE)
        scenario = _read_json(d / SCENARIO_FILE) if (d / SCENARIO_FILE).is_file() else {}
        timing = _read_json(d / TIMING_FILE) if (d / TIMING_FILE).is_file() else {}
        series = {p.stem: pd.read_parquet(p) for p in sorted(d.glob("*.parquet"))}
        return cls(summary, series, scenario, timing)

    def __repr__(self) -> str:
        name = self.summary.get("scenario") or self.scenario.get("name") or "?"
        tables = ", ".join(f"{k}[{len(v)}]" for k, v in self.series.items())
        return f"<ccgym.Result {name!r} events={self.summary.get('events')} series: {tables}>"


def native_tables(
    series: Mapping[str, Mapping[str, np.ndarray | Sequence[str]]], *, copy: bool = True
) -> dict[str, pd.DataFrame]:
    """The series tables the native module returns, as DataFrames.

    With ``copy=False`` the frames take the native arrays as they are (one block per column
    rather than a copy of the whole table into a 2-D block), and Parquet writing reads them in
    place: for arrays nobody else holds, as :func:`ccgym.runner.run`'s. Text columns become
    pandas strings either way.
    """
    return {name: pd.DataFrame(dict(columns), copy=copy) for name, columns in series.items()}


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(_finite(obj), indent=2, default=str) + "\n", encoding="utf-8")


def _finite(obj: Any) -> Any:
    """Replace NaN and infinities by None so that the files are strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
