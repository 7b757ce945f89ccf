"""A first comparison: classic CC on the ADPG many-to-one benchmark.

Runs DCQCN, HPCC, Swift, TIMELY and DCTCP on the bundled ``adpg-m2o-N`` scenarios (the setting
of the ADPG paper: one 100 Gb/s switch, lossy 10 MiB queues, ECN ramp 150 KiB -> 1500 KiB,
200 ms simulated, statistics over 50-170 ms) and prints the paper's metrics side by side.

    python examples/compare_many_to_one.py                 # 2, 16, 128, 1024 flows
    python examples/compare_many_to_one.py --flows 2 16 --short   # 60 ms runs
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from rich.console import Console
from rich.table import Table

import ccgym

ALGORITHMS = ("dcqcn", "hpcc", "swift", "timely", "dctcp")
FLOWS = (2, 16, 128, 1024)


SHORT = ["duration=60ms", "metrics.window=['20ms', '50ms']", "workload[0].stop=50ms"]
"""A shorter protocol of the same shape: 60 ms, statistics over 20-50 ms, flows stop at 50 ms."""


def run_one(flows: int, cc: str, short: bool) -> dict[str, Any]:
    """Run one (scale, algorithm) pair and keep the paper's metrics."""
    overrides = SHORT if short else []
    t0 = time.perf_counter()
    result = ccgym.run(f"adpg-m2o-{flows}", cc=cc, overrides=overrides)
    s = result.summary
    bn, fl, net = s["bottleneck"] or {}, s["flows"], s["network"]
    return {
        "flows": flows,
        "cc": cc,
        "SU": (bn.get("utilization") or 0.0) * 100,
        "jain": fl.get("jain"),
        "FR": s["paper"].get("FR"),
        "QL": bn.get("queue_latency_mean_us"),
        "queue_kb": bn.get("queue_mean_kb"),
        "drops_mb": s["paper"].get("drops_mb"),
        "pfc": net.get("pfc_pauses"),
        "wall_s": time.perf_counter() - t0,
    }


def _fmt(x: Any, spec: str) -> str:
    return "–" if x is None else format(x, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, nargs="+", default=list(FLOWS))
    parser.add_argument("--cc", nargs="+", default=list(ALGORITHMS))
    parser.add_argument("--jobs", type=int, default=2, help="parallel runs")
    parser.add_argument("--short", action="store_true", help="60 ms runs instead of 200 ms")
    args = parser.parse_args()
    jobs = [(n, cc) for n in args.flows for cc in args.cc]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, n, cc, args.short) for n, cc in jobs]
        rows = [f.result() for f in futures]
    table = Table(title="many-to-one, ADPG setting: SU % / Jain / FR % (host min/max) / QL us")
    table.add_column("flows", justify="right")
    table.add_column("cc", no_wrap=True)
    for col in ("SU %", "Jain", "FR %", "QL us", "queue KB", "drops MB", "wall s"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            str(r["flows"]),
            r["cc"],
            _fmt(r["SU"], ".1f"),
            _fmt(r["jain"], ".3f"),
            _fmt(r["FR"], ".0f"),
            _fmt(r["QL"], ".1f"),
            _fmt(r["queue_kb"], ".0f"),
            _fmt(r["drops_mb"], ".2f"),
            _fmt(r["wall_s"], ".1f"),
        )
    console = Console() if Console().is_terminal else Console(width=140)
    console.print(table)
    console.print(f"{len(rows)} runs in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
