"""The ADPG generalisation table: a learned policy against DCQCN, HPCC and Swift.

Runs the native policy (default: the bundled ``adpg-default``) and the classic baselines on the
ADPG benchmark of ``shared/specs/scenarios.md`` section 1 — many-to-one with 2 ... 8192 flows,
all-to-all with 4 and 8 hosts, long-short with 2 and 128 flows — and prints SU / FR / QL / drops
side by side, with the published ADPG numbers (Table 2) where the paper has them.

    python examples/generalisation.py                      # everything (a few minutes on 2 cores)
    python examples/generalisation.py --flows 2 16 128 --jobs 2
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from rich.console import Console
from rich.table import Table

import ccgym
from ccgym import policies
from ccgym.scenario import load_scenario

# Many-to-one scales of the paper: total flows -> (sender hosts, flows per host).
M2O = {
    2: (2, 1), 4: (4, 1), 16: (16, 1), 32: (32, 1), 64: (64, 1), 128: (64, 2), 256: (32, 8),
    512: (64, 8), 1024: (32, 32), 2048: (64, 32), 4096: (64, 64), 8192: (64, 128),
}  # fmt: skip
# Published ADPG paper Table 2 (SU %, FR %, QL) for many-to-one; None = "packet loss".
PUBLISHED = {
    ("dcqcn", 128): (100, 56, 11), ("dcqcn", 1024): (100, 50, 13),
    ("dcqcn", 4096): (95, 65, 12), ("dcqcn", 8192): (95, 64, 12),
    ("hpcc", 128): (83, 96, 5), ("hpcc", 1024): (59, 48, 27),
    ("hpcc", 4096): None, ("hpcc", 8192): None,
    ("swift", 128): (97, 94, 26), ("swift", 1024): (89, 96, 27),
    ("swift", 4096): (88, 85, 77), ("swift", 8192): None,
    ("adpg", 128): (92, 95, 8), ("adpg", 1024): (90, 70, 15),
    ("adpg", 4096): (91, 44, 26), ("adpg", 8192): (92, 29, 42),
}  # fmt: skip
CLASSIC = ("dcqcn", "hpcc", "swift")


def scenario_for(kind: str, n: int) -> dict[str, Any]:
    """The scenario dict of one benchmark entry."""
    if kind == "m2o":
        hosts, per = M2O[n]
        data, _ = load_scenario(
            "adpg-m2o-2",
            [
                f"name=adpg-m2o-{n}",
                f"topology.hosts={hosts + 1}",
                f"workload[0].flows_per_host={per}",
                f"switch.buffer={(hosts + 1) * 10}MiB",
            ],
        )
        return data
    data, _ = load_scenario(f"adpg-{kind}-{n}")
    return data


def run_one(kind: str, n: int, method: str, policy: str) -> dict[str, Any]:
    """Run one (scenario, method) pair and keep the paper's metrics."""
    t0 = time.perf_counter()
    data = scenario_for(kind, n)
    if method in CLASSIC:
        result = ccgym.run(data, cc=method)
    else:
        result = ccgym.run(policies.use_policy(data, policy))
    s = result.summary
    bn = s["bottleneck"] or {}
    msgs = s["messages"]["fct_us"]
    return {
        "kind": kind,
        "n": n,
        "method": method,
        "SU": (bn.get("utilization") or 0.0) * 100,
        "FR": s["paper"]["FR"],
        "jain": s["flows"]["jain"],
        "QL": bn.get("queue_latency_mean_us"),
        "drops_mb": s["paper"]["drops_mb"],
        "msg_fct_us": msgs.get("mean"),
        "wall_s": time.perf_counter() - t0,
    }


def _f(x: Any, spec: str) -> str:
    return "–" if x is None else format(x, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, nargs="+", default=list(M2O))
    parser.add_argument("--policy", default="adpg-default")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-extra", action="store_true", help="many-to-one only")
    args = parser.parse_args()
    methods = (args.policy, *CLASSIC)
    entries = [("m2o", n) for n in args.flows]
    if not args.no_extra:
        entries += [("a2a", 4), ("a2a", 8), ("long-short", 2), ("long-short", 128)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [
            pool.submit(run_one, kind, n, m, args.policy) for kind, n in entries for m in methods
        ]
        rows = [f.result() for f in futures]
    table = Table(
        title="ADPG benchmark: SU % / FR % / Jain / QL us / drops MB (published SU/FR/QL)"
    )
    for col in ("scenario", "method", "SU %", "FR %", "Jain", "QL us", "drops MB", "msg FCT us"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("published", no_wrap=True)
    for r in rows:
        key = ("adpg" if r["method"] == args.policy else r["method"], r["n"])
        pub = PUBLISHED.get(key, "") if r["kind"] == "m2o" else ""
        pub_text = "packet loss" if pub is None else ("" if pub == "" else "/".join(map(str, pub)))
        table.add_row(
            f"{r['kind']} {r['n']}",
            r["method"],
            _f(r["SU"], ".1f"),
            _f(r["FR"], ".0f"),
            _f(r["jain"], ".3f"),
            _f(r["QL"], ".1f"),
            _f(r["drops_mb"], ".2f"),
            _f(r["msg_fct_us"], ".0f"),
            pub_text,
        )
    console = Console() if Console().is_terminal else Console(width=160)
    console.print(table)
    console.print(f"{len(rows)} runs in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
