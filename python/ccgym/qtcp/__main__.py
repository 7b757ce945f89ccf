"""``python -m ccgym.qtcp SCENARIO``: run a scenario with QTCP or QTCP-AIMD flows learning online.

    python -m ccgym.qtcp qtcp-aimd-dumbbell --variant qtcp-aimd --out runs/aimd
    python -m ccgym.qtcp qtcp-fixed --variant qtcp --save-learners q.npz
    python -m ccgym.qtcp qtcp-fixed --variant qtcp --learners q.npz     # continue learning

``--out`` writes what ``ccgym run --out`` writes (``summary.json``, the scenario, the Parquet
series) plus ``decisions.npz`` (the per-decision log of :class:`ccgym.qtcp.QtcpRun`);
``--save-learners`` writes the learners. See docs/qtcp.md.

    python -m ccgym.qtcp friendliness qtcp-aimd --against newreno cubic -k 1 3

runs the friendliness family instead (:mod:`ccgym.qtcp.friendliness`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ccgym.qtcp.driver import VARIANTS, load_learners, run_qtcp, save_learners


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["friendliness"]:
        from ccgym.qtcp.friendliness import main as friendliness_main

        return friendliness_main(args_in[1:])
    p = argparse.ArgumentParser(prog="python -m ccgym.qtcp", description=__doc__.split("\n")[0])
    p.add_argument("scenario", help="bundled scenario name or TOML file (e.g. qtcp-aimd-dumbbell)")
    p.add_argument("--variant", default="qtcp-aimd", choices=sorted(VARIANTS))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--learners", metavar="FILE.npz", help="start from these saved learners")
    p.add_argument("--save-learners", metavar="FILE.npz", help="write the learners at the end")
    p.add_argument("--keep-cc", action="store_true", help="only the scenario's agent flows learn")
    p.add_argument("--out", metavar="DIR", help="write the result and decisions.npz here")
    args = p.parse_args(args_in)
    learners = load_learners(args.learners) if args.learners else None
    t0 = time.perf_counter()
    run = run_qtcp(
        args.scenario,
        args.variant,
        overrides=args.set,
        seed=args.seed,
        learners=learners,
        cc=None if args.keep_cc else "agent",
    )
    wall = time.perf_counter() - t0
    s = run.summary
    b = s["bottleneck"]
    print(
        f"{args.variant} on {args.scenario}: {s['duration_s']:.0f} s simulated in {wall:.1f} s, "
        f"{len(run.log['time_s'])} decisions; bottleneck utilisation {b['utilization']:.3f}, "
        f"mean queue {b['queue_mean_kb']:.1f} KB, Jain {s['flows']['jain']:.3f}"
    )
    if args.save_learners:
        save_learners(args.save_learners, run.learners)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        run.result.save(out)  # summary.json, scenario and the Parquet series, as ccgym run --out
        np.savez(out / "decisions.npz", **run.log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
