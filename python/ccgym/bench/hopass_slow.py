"""Bench tables of HOPASS's slow layer: ``hopass-slow-layer`` and ``hopass-overall``.

A suite with ``table = "hopass-slow-layer"`` or ``"hopass-overall"`` runs its scenarios (HOPASS
experiments: a scenario with a ``[hopass]`` table, :mod:`ccgym.hopass.experiment`) through
:func:`ccgym.hopass.run_experiment` instead of a plain run. Method ``hopass`` is the slow layer
over the experiment's ``hopass.transport``; any other method is a classic CC over the same
switches with their configured weights and no slow layer.

Metrics of a run (from the first demand regime, and from the last one after a demand change):

* ``x1``, ``x2``, ``x3``: the classes' rates, mean of the last decision slots (of the last slots
  without a slow layer), Mb/s (``hopass-overall``: Gb/s, summed over the receivers);
* ``U`` and ``U_opt``: the total utility at those rates and at the exact optimum; ``err``: their
  gap in % of ``|U_opt|`` (the paper's "error"); ``alloc_err``: the largest class's rate gap in %
  of the capacity into the receivers;
* ``conv_ms``: time to the first decision slot from which every later one is within 1 % of the
  optimum's utility; ``alloc_conv_ms``: the same for the allocation within 5 %;
* ``reconv_ms``, ``realloc_ms``, ``err_after``, ``alloc_err_after``: the same after the last
  demand change (flows joining, a class's outstanding bytes changing);
* ``util``: mean utilisation of the host links that carry data, %, over the final slots (bytes
  on the wire, retransmissions and out-of-order data included); ``goodput``: the flows'
  in-order delivered bytes over the whole run (ramp-up included), at wire size, in % of the
  capacity into the receivers; ``drops_mb``: bytes dropped in the whole run, MB.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

SCORES_VERSION = 2
"""Bumped whenever a metric or the controller changes, so that cached runs are redone."""

TABLES = ("hopass-slow-layer", "hopass-overall")
"""The suite table kinds this module scores."""


def is_hopass_table(scores: str | None) -> bool:
    """Whether a suite's ``table`` is one of this module's."""
    return scores in TABLES


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1e3


def scores(res: Mapping[str, Any], table: str = "hopass-slow-layer") -> dict[str, float | None]:
    """The table's metrics of one run (:func:`ccgym.hopass.experiment.result_json`)."""
    regimes = res["regimes"]
    first, last = regimes[0], regimes[-1]
    unit = 1e-3 if table == "hopass-overall" else 1.0
    out: dict[str, float | None] = {
        f"x{k + 1}": x * unit for k, x in enumerate(first["rates_mbps"][:3])
    }
    out.update(
        U=first["utility"],
        U_opt=first["optimum_utility"],
        err=first["error_pct"],
        alloc_err=first["alloc_error_pct"],
        conv_ms=_ms(first["convergence_s"]),
        alloc_conv_ms=_ms(first["alloc_convergence_s"]),
        util=float(np.mean([r["link_util_pct"] for r in regimes])),
    )
    if len(regimes) > 1:
        out.update(
            reconv_ms=_ms(last["convergence_s"]),
            realloc_ms=_ms(last["alloc_convergence_s"]),
            err_after=last["error_pct"],
            alloc_err_after=last["alloc_error_pct"],
        )
    out["goodput"] = res.get("goodput_pct")
    network = (res.get("summary") or {}).get("network") or {}
    drops = network.get("drops_bytes")
    out["drops_mb"] = None if drops is None else drops / 1e6
    return out


def run_hopass_job(scenario: str, overrides: list[str], method: str, table: str) -> dict[str, Any]:
    """One bench run of a HOPASS suite (in a worker process): metrics, summary, the series for
    the report's run figures and the slot trace (``hopass``) for its slow-layer figures."""
    from ccgym.bench.series import compact_series, force_flow_series
    from ccgym.hopass.experiment import result_json, run_experiment
    from ccgym.result import Result
    from ccgym.scenario import load_scenario

    t0 = time.perf_counter()
    data, base_dir = load_scenario(scenario, overrides)
    force_flow_series(data)
    res = run_experiment(data, method, base_dir=str(base_dir))
    trace = result_json(res)
    summary = trace.pop("summary")
    result = Result.from_native(res.summary_json, res.series, data)
    return {
        "metrics": scores({**trace, "summary": summary}, table),
        "summary": summary,
        "wall_s": time.perf_counter() - t0,
        "series": compact_series(result),
        "hopass": trace,
    }


def trace_figure(records: Sequence[Mapping[str, Any]], title: str) -> Any:
    """Class shares and total utility per slot (decision slots) of the runs of one scenario,
    with the optimum's utility; one line style per method."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax_s, ax_u = fig.subplots(1, 2)
    styles = ["-", "--", ":", "-."]
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    for i, rec in enumerate(records):
        slots = (rec.get("hopass") or {}).get("slots") or {}
        if not slots:
            continue
        keep = [j for j, kind in enumerate(slots["kind"]) if kind != "probe"]
        t = np.asarray(slots["t"])[keep] * 1e3
        rates = np.asarray(slots["rates"])[keep]
        total = np.maximum(rates.sum(axis=1, keepdims=True), 1e-9)
        for k in range(rates.shape[1]):
            ax_s.plot(t, rates[:, k] / total[:, 0], styles[i % 4], color=colors[k % 4],
                      label=f"{rec['method']} class {k + 1}")  # fmt: skip
        ax_u.plot(t, np.asarray(slots["utility"])[keep], styles[i % 4], color="#333",
                  label=rec["method"])  # fmt: skip
        if i == 0:
            ax_u.plot(t, np.asarray(slots["optimum"])[keep], color="#e377c2", lw=2, alpha=0.6,
                      label="exact optimum")  # fmt: skip
            regimes = (rec.get("hopass") or {}).get("regimes") or []
            ends = [r["start_s"] * 1e3 for r in regimes[1:]] + [t[-1] if len(t) else 0.0]
            for reg, t_end in zip(regimes, ends, strict=True):
                opt = np.asarray(reg["optimum_rates_mbps"])
                for k, share in enumerate(opt / opt.sum()):
                    ax_s.hlines(share, reg["start_s"] * 1e3, t_end, color=colors[k % 4], lw=4,
                                alpha=0.2)  # fmt: skip
    ax_s.set_xlabel("time (ms)")
    ax_s.set_ylabel("class share of the measured rate")
    ax_s.set_title("shares (thick: exact optimum)", fontsize=9)
    # Below the axes: the shares cover the whole panel, and any corner hid one of them.
    ax_s.legend(fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    ax_u.set_xlabel("time (ms)")
    ax_u.set_ylabel("total utility")
    ax_u.set_title("total utility per decision slot", fontsize=9)
    ax_u.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    lo = min((min(r["hopass"]["slots"]["optimum"]) for r in records if r.get("hopass")), default=0)
    hi = max((max(r["hopass"]["slots"]["optimum"]) for r in records if r.get("hopass")), default=1)
    span = max(abs(hi - lo), abs(hi) * 0.2, 1e-9)
    ax_u.set_ylim(lo - span, hi + span * 0.2)
    fig.suptitle(title, fontsize=10)
    return fig


def report_section(records: Sequence[Mapping[str, Any]]) -> str:
    """The HTML report's slow-layer section: one trace figure per scenario."""
    from ccgym.bench.plots import figure_png, png_data_uri

    by_label: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        if rec.get("seed") == records[0].get("seed"):
            by_label.setdefault(rec["label"], []).append(rec)
    parts = [
        "<h2>Slow layer over time</h2>",
        '<p class="note">Per scenario, the first seed: each class\'s share of the measured rate '
        "(decision slots; thick bands: the exact optimum's shares for each demand regime) and "
        "the total utility per decision slot against the exact optimum's. Methods other than "
        "hopass run without a slow layer.</p>",
    ]
    for label, recs in by_label.items():
        png = figure_png(trace_figure(recs, label), colors=None)
        parts.append(
            f'<figure><img src="{png_data_uri(png)}" alt="{html.escape(label)}">'
            f"<figcaption>{html.escape(label)}</figcaption></figure>"
        )
    return "\n".join(parts)
