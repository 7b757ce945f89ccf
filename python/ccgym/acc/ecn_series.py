"""The ECN settings a run used over time, by switch tier, next to the queues.

A run whose scenario has switch-queue agents (or ``metrics.ecn_series = true``) has a result
table ``ecn``: each switch data queue's starting profile at time 0 and one row per change
(``time_s, port_id, queue, kmin_bytes, kmax_bytes, pmax, template``; NaN marking fields for a
queue that does not mark, a NaN template for a profile that is none of ``agent.ecn_profiles``).
:func:`tier_series` turns it and the ``ports`` queue samples into per-tier arrays at the sample
times (small enough to keep next to a bench run's cache entry); ``ccgym.bench.plots.ecn_figure``
draws them.

Tiers are named from the switches: the node name without its trailing digits (``leaf``,
``spine``, ``edge`` (the ToR of a fat tree), ``agg``, ``core``; ``sw`` on a star). ``by="link"``
splits each tier by where its ports lead (``leaf->h``: down to the servers, ``leaf->spine``: up),
``by="port"`` keeps every switch port apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

_DIGITS = re.compile(r"\d+$")

GROUPINGS = ("tier", "link", "port")


def tier_of(node: str) -> str:
    """A switch's tier: its name without trailing digits (``"leaf3"`` -> ``"leaf"``)."""
    return _DIGITS.sub("", node) or node


def port_group(name: str, by: str = "tier") -> str:
    """The group of switch port ``"node->peer"`` (see the module doc)."""
    if by not in GROUPINGS:
        raise ValueError(f"by must be one of {', '.join(GROUPINGS)}, not {by!r}")
    if by == "port":
        return name
    node, _, peer = name.partition("->")
    if by == "tier":
        return tier_of(node)
    return f"{tier_of(node)}->{tier_of(peer)}"


def _col(table: Any, name: str) -> np.ndarray:
    return np.asarray(table[name])


def tier_series(tables: Any, by: str = "tier") -> dict[str, np.ndarray]:
    """Per group of switch ports, at each sample time: the queue (mean and max over the
    group's sampled ports) and the ECN profile in force (mean, min and max over the group's
    data queues of Kmin, Kmax and Pmax; the most common template index).

    Args:
        tables: a :class:`ccgym.Result` or its ``series`` (DataFrames), or the tables dict of
            the native module (``Simulation.finish()``): needs ``ecn``, ``ports`` and
            ``port_info``.
        by: ``"tier"``, ``"link"`` or ``"port"`` (see the module doc).

    Returns:
        ``time_s`` (T,), ``groups`` (G,) str, and (G, T) arrays ``queue_mean_bytes``,
        ``queue_max_bytes``, ``kmin_bytes``, ``kmin_lo_bytes``, ``kmin_hi_bytes``,
        ``kmax_bytes``, ``kmax_lo_bytes``, ``kmax_hi_bytes``, ``pmax``, ``template`` (NaN where
        no queue of the group marks, or no template applies), ``changes`` (G,): profile
        changes after time 0.

    Raises:
        ValueError: the run has no ``ecn`` table (turn on ``metrics.ecn_series``).
    """
    series = getattr(tables, "series", tables)
    if not isinstance(series, Mapping) or "ecn" not in series:
        raise ValueError("the run has no ecn table: set metrics.ecn_series = true")
    ecn, ports, info = series["ecn"], series["ports"], series["port_info"]
    names = {int(p): str(n) for p, n in zip(_col(info, "port_id"), _col(info, "name"), strict=True)}
    e_time = _col(ecn, "time_s").astype(float)
    e_port = _col(ecn, "port_id").astype(np.int64)
    e_queue = _col(ecn, "queue").astype(np.int64)
    fields = {
        k: _col(ecn, k).astype(float) for k in ("kmin_bytes", "kmax_bytes", "pmax", "template")
    }
    p_time = _col(ports, "time_s").astype(float)
    p_port = _col(ports, "port_id").astype(np.int64)
    p_queue = _col(ports, "queue_bytes").astype(float)
    times = np.unique(p_time)
    if len(times) == 0:
        times = np.unique(e_time)
    groups = sorted({port_group(names[int(p)], by) for p in e_port})
    index = {g: i for i, g in enumerate(groups)}
    G, T = len(groups), len(times)
    nan = np.full((G, T), np.nan)
    out: dict[str, np.ndarray] = {"time_s": times, "groups": np.array(groups, dtype=str)}

    # The profile in force at each sample time, per (port, queue): the last row at or before it.
    per_queue: dict[int, list[dict[str, np.ndarray]]] = {i: [] for i in range(G)}
    changes = np.zeros(G, np.int64)
    for key in sorted(set(zip(e_port.tolist(), e_queue.tolist(), strict=True))):
        rows = np.flatnonzero((e_port == key[0]) & (e_queue == key[1]))
        rows = rows[np.argsort(e_time[rows], kind="stable")]
        at = np.searchsorted(e_time[rows], times, side="right") - 1
        valid = at >= 0
        g = index[port_group(names[key[0]], by)]
        changes[g] += int((e_time[rows] > 0).sum())
        state = {}
        for k, v in fields.items():
            col = np.full(T, np.nan)
            col[valid] = v[rows[at[valid]]]
            state[k] = col
        per_queue[g].append(state)
    for k, lo_hi in (("kmin_bytes", True), ("kmax_bytes", True), ("pmax", False)):
        mean, lo, hi = nan.copy(), nan.copy(), nan.copy()
        for g, states in per_queue.items():
            stack = np.stack([s[k] for s in states]) if states else np.full((1, T), np.nan)
            has = np.isfinite(stack).any(axis=0)
            with np.errstate(all="ignore"):
                mean[g, has] = np.nanmean(stack[:, has], axis=0)
                lo[g, has] = np.nanmin(stack[:, has], axis=0)
                hi[g, has] = np.nanmax(stack[:, has], axis=0)
        out[k] = mean
        if lo_hi:
            base = k.removesuffix("_bytes")
            out[f"{base}_lo_bytes"], out[f"{base}_hi_bytes"] = lo, hi
    template = nan.copy()
    for g, states in per_queue.items():
        if not states:
            continue
        stack = np.stack([s["template"] for s in states])
        for t in range(T):
            col = stack[:, t]
            col = col[np.isfinite(col)]
            if len(col):
                values, counts = np.unique(col, return_counts=True)
                template[g, t] = values[np.argmax(counts)]  # ties: the lowest index
    out["template"] = template
    out["changes"] = changes

    # The queues of the group's sampled ports (only ports that sent anything are sampled).
    q_mean, q_max = nan.copy(), nan.copy()
    slot = np.searchsorted(times, p_time)
    group_of_port = {p: index.get(port_group(n, by)) for p, n in names.items()}
    p_group = np.array(
        [-1 if group_of_port.get(int(p)) is None else group_of_port[int(p)] for p in p_port]
    )
    for g in range(G):
        sel = p_group == g
        if not sel.any():
            continue
        total = np.bincount(slot[sel], weights=p_queue[sel], minlength=T)
        count = np.bincount(slot[sel], minlength=T)
        top = np.full(T, -np.inf)
        np.maximum.at(top, slot[sel], p_queue[sel])
        has = count > 0
        q_mean[g, has] = total[has] / count[has]
        q_max[g, has] = top[has]
    out["queue_mean_bytes"], out["queue_max_bytes"] = q_mean, q_max
    return out


__all__ = ["GROUPINGS", "port_group", "tier_of", "tier_series"]
