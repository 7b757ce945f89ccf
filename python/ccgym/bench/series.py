"""Compact per-run time series of a bench run, stored next to its cache entry for the plots.

A bench run keeps its summary in ``<out>/runs/<key>.json``; this module reduces the run's long
tables (``ports``, ``flows``) to what the report plots and stores it as ``<key>.series.npz``
(numpy, compressed; a few tens of kB even for 8192 flows over 200 ms):

==========================  ==================  ==============================================
array                       shape, unit         meaning
==========================  ==================  ==============================================
``version``                 ()                  format version (:data:`SERIES_VERSION`)
``time_s``                  (T,) s              sample times (every ``metrics.sample_interval``)
``window_s``                (2,) s              the metrics window ``[start, end]``
``bottleneck_port``         () str              the summary's bottleneck port, ``""`` if none
``bottleneck_rate_gbps``    () Gb/s             its link rate (NaN if none)
``queue_bytes``             (T,) bytes          bytes queued at the bottleneck
``tx_gbps``                 (T,) Gb/s           the bottleneck's transmit rate per interval
``flow_count``              ()                  flows in the run
``flow_active``             (T,)                flows with a rate sample at that time
``flow_percentiles``        (P,) %              the percentiles of ``flow_rate_pct``
``flow_rate_pct``           (T, P) Gb/s         percentiles of the rates across active flows
``flow_rate_mean``          (T,) Gb/s           mean rate across active flows
``flow_sample_ids``         (K,)                up to :data:`MAX_SAMPLED_FLOWS` flow ids (the
                                                heavy flows, then ids evenly spread)
``flow_sample_gbps``        (T, K) Gb/s         their rates (NaN while a flow is not active)
==========================  ==================  ==============================================

The flow arrays have T = 0 rows when the run recorded no per-flow series.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

SERIES_SUFFIX = ".series.npz"
SERIES_VERSION = 1
MAX_SAMPLED_FLOWS = 16
"""Flows whose own rate series is kept; beyond that only percentiles across flows are stored."""
RATE_PERCENTILES: tuple[float, ...] = (0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 100.0)


def series_path(run_dir: str | os.PathLike[str], key: str) -> Path:
    """Where the series of the run ``key`` lives: ``<run_dir>/<key>.series.npz``."""
    return Path(run_dir) / f"{key}{SERIES_SUFFIX}"


def force_flow_series(data: dict[str, Any]) -> None:
    """Record per-flow rates in a bench run even above ``flow_series = "auto"``'s 1024 flows.

    The plots need rate percentiles across flows at every scale, 8192 flows included. Recording
    changes neither the summary nor the event count (the sample event runs either way), so the
    run's cache key, computed from the scenario as written, stays valid. An explicit ``true`` or
    ``false`` in the scenario is respected: ``false`` is how a suite opts out (the long table
    costs about 50 bytes per flow and sample while the run lasts, 0.8 GB for 8192 flows over
    200 ms).
    """
    metrics = data.setdefault("metrics", {})
    if not isinstance(metrics.get("flow_series"), bool):
        metrics["flow_series"] = True


def _row_percentiles(dense: np.ndarray, percentiles: tuple[float, ...]) -> np.ndarray:
    """Percentiles of every row of ``dense`` over its non-NaN entries (numpy's "linear" rule).

    Sorting once and interpolating by index is much faster than ``np.nanpercentile`` along an
    axis, which falls back to a Python loop over rows when NaNs are present.
    """
    rows = dense.shape[0]
    out = np.full((rows, len(percentiles)), np.nan, dtype=np.float32)
    if rows == 0 or dense.shape[1] == 0:
        return out
    ordered = np.sort(dense, axis=1)  # NaN sorts last
    count = np.sum(~np.isnan(dense), axis=1)
    has = count > 0
    r = np.nonzero(has)[0]
    last = (count[has] - 1).astype(np.float64)
    for j, p in enumerate(percentiles):
        pos = last * (p / 100.0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.ceil(pos).astype(np.int64)
        frac = (pos - lo).astype(np.float32)
        a, b = ordered[r, lo], ordered[r, hi]
        out[r, j] = a + (b - a) * frac
    return out


HEAVY_SHARE = 0.05
"""A flow that carried at least this share of all the bytes delivered, and at least
:data:`HEAVY_OVER_EQUAL` times an equal share, is "heavy": it is always among the sampled
flows, and the report draws it on its own (:func:`heavy_flows`)."""
HEAVY_OVER_EQUAL = 10.0
"""How many times an equal share (1 / flows) a heavy flow carries at least: among 40 similar
flows none is heavy, among 5,000 small flows a large one is."""
MAX_HEAVY_FLOWS = 8
"""At most this many heavy flows, the largest first."""


def _heavy(carried: np.ndarray, total: float, n_flows: int) -> list[int]:
    """Indices into ``carried`` (bytes or rates summed per flow) of the heavy flows, largest
    first (ties: the lower index), at most :data:`MAX_HEAVY_FLOWS`; ``total`` is what all
    ``n_flows`` flows carried."""
    if total <= 0:
        return []
    floor = total * max(HEAVY_SHARE, HEAVY_OVER_EQUAL / max(n_flows, 1))
    order = np.argsort(-carried, kind="stable")[:MAX_HEAVY_FLOWS]
    return [int(i) for i in order if carried[i] >= floor]


def _sample_flows(dense: np.ndarray) -> np.ndarray:
    """The flows whose own rate series is kept when there are more than
    :data:`MAX_SAMPLED_FLOWS`: the heavy ones (a weighted experiment's large flows among
    thousands of small ones), then flow ids evenly spread, first and last included (flows are
    numbered in workload order, so every workload is seen, e.g. long-short's long flow, id 0)."""
    n_flows = dense.shape[1]
    carried = np.nansum(dense, axis=0, dtype=np.float64)
    heavy = set(_heavy(carried, float(carried.sum()), n_flows))
    spread = np.linspace(0, n_flows - 1, MAX_SAMPLED_FLOWS - len(heavy)).round()
    return np.asarray(sorted(heavy | {int(f) for f in spread}), dtype=np.int64)


def heavy_flows(series: Mapping[str, np.ndarray]) -> list[tuple[int, int, float]]:
    """The sampled flows of ``series`` that are heavy (:data:`HEAVY_SHARE`,
    :data:`HEAVY_OVER_EQUAL`), as ``(column in flow_sample_gbps, flow id, share)``, largest
    first (at most :data:`MAX_HEAVY_FLOWS`). The total comes from the mean rate across the
    active flows times their number, so it counts every flow, not only the sampled ones."""
    sample = np.asarray(series["flow_sample_gbps"], dtype=np.float64)
    mean = np.asarray(series["flow_rate_mean"], dtype=np.float64)
    active = np.asarray(series["flow_active"], dtype=np.float64)
    if sample.ndim != 2 or sample.shape[0] == 0 or sample.shape[0] != len(mean):
        return []
    total = float(np.nansum(mean * active))
    carried = np.nansum(sample, axis=0)
    ids = np.asarray(series["flow_sample_ids"])
    heavy = _heavy(carried, total, int(series["flow_count"]))
    return [(j, int(ids[j]), float(carried[j]) / total) for j in heavy]


def compact_series(result: Any) -> dict[str, np.ndarray]:
    """Reduce a :class:`ccgym.Result` to the arrays described in the module docstring."""
    summary: Mapping[str, Any] = result.summary
    tables = result.series
    ports = tables.get("ports")
    flows = tables.get("flows")
    times = [ports["time_s"].to_numpy()] if ports is not None else []
    if flows is not None:
        times.append(flows["time_s"].to_numpy())
    # Both tables are written from the same sample events, so their times are the same floats.
    grid = np.unique(np.concatenate(times)) if times else np.zeros(0)
    n_t = len(grid)

    bn = summary.get("bottleneck") or {}
    port_id = bn.get("id")
    queue = np.full(n_t, np.nan, dtype=np.float32)
    tx = np.full(n_t, np.nan, dtype=np.float32)
    rate = np.nan
    if port_id is not None and ports is not None:
        sel = ports[ports["port_id"] == port_id]
        idx = np.searchsorted(grid, sel["time_s"].to_numpy())
        queue[idx] = sel["queue_bytes"].to_numpy()
        tx[idx] = sel["tx_gbps"].to_numpy()
        info = tables.get("port_info")
        if info is not None:
            match = info.loc[info["port_id"] == port_id, "rate_gbps"]
            rate = float(match.iloc[0]) if len(match) else np.nan

    n_flows = int((summary.get("flows") or {}).get("count") or 0)
    pcts = np.asarray(RATE_PERCENTILES, dtype=np.float32)
    if flows is not None and len(flows) and n_flows > 0:
        ids = flows["flow_id"].to_numpy().astype(np.int64)
        n_flows = max(n_flows, int(ids.max()) + 1)
        # Dense (time x flow) matrix, NaN where a flow has no sample (not started, or finished):
        # 4 bytes per cell, 65 MB for 8192 flows x 2000 samples, freed on return.
        dense = np.full((n_t, n_flows), np.nan, dtype=np.float32)
        dense[np.searchsorted(grid, flows["time_s"].to_numpy()), ids] = flows["rate_gbps"]
        active = np.sum(~np.isnan(dense), axis=1).astype(np.int32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # samples with no active flow: NaN
            mean = np.nanmean(dense, axis=1).astype(np.float32)
        pct = _row_percentiles(dense, RATE_PERCENTILES)
        if n_flows <= MAX_SAMPLED_FLOWS:
            sample_ids = np.arange(n_flows, dtype=np.int64)
        else:
            sample_ids = _sample_flows(dense)
        sample = dense[:, sample_ids].copy()
        del dense
    else:
        active = np.zeros(0, dtype=np.int32)
        mean = np.zeros(0, dtype=np.float32)
        pct = np.zeros((0, len(pcts)), dtype=np.float32)
        sample_ids = np.zeros(0, dtype=np.int64)
        sample = np.zeros((0, 0), dtype=np.float32)

    window = summary.get("window_s") or [np.nan, np.nan]
    return {
        "version": np.asarray(SERIES_VERSION),
        "time_s": grid.astype(np.float64),
        "window_s": np.asarray([np.nan if w is None else w for w in window], dtype=np.float64),
        "bottleneck_port": np.asarray(str(bn.get("port") or "")),
        "bottleneck_rate_gbps": np.asarray(rate, dtype=np.float64),
        "queue_bytes": queue,
        "tx_gbps": tx,
        "flow_count": np.asarray(n_flows),
        "flow_active": active,
        "flow_percentiles": pcts,
        "flow_rate_pct": pct,
        "flow_rate_mean": mean,
        "flow_sample_ids": sample_ids,
        "flow_sample_gbps": sample,
    }


def save_series(path: str | os.PathLike[str], series: Mapping[str, np.ndarray]) -> Path:
    """Write ``series`` to ``path`` (compressed ``.npz``), atomically."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    # A file object, not a name: np.savez would append ".npz" to the temporary name.
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **dict(series))
    tmp.replace(path)
    return path


def load_series(path: str | os.PathLike[str]) -> dict[str, np.ndarray] | None:
    """Read a series file; None if it is missing, unreadable or of another format version."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            data = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    if int(data.get("version", -1)) != SERIES_VERSION:
        return None
    return data
