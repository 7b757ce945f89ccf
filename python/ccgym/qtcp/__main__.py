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

from ccgym.cli.common import path_arg


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status. Mistakes (a bad scenario or ``--set``, a learner
    file that is missing, not one, or of another variant, an output that cannot be written)
    print one ``error: ...`` line and return 2, as the ``ccgym`` command does; ``--debug``
    shows the traceback instead."""
    from ccgym.cli import run_command
    from ccgym.qtcp.driver import VARIANTS, LearnerMismatchWarning

    args_in = list(sys.argv[1:] if argv is None else argv)
    debug = args_in[:1] == ["--debug"]
    if args_in[debug : debug + 1] == ["friendliness"]:
        from ccgym.qtcp.friendliness import main as friendliness_main

        return friendliness_main(args_in[debug + 1 :] + ["--debug"] * debug)
    p = argparse.ArgumentParser(prog="python -m ccgym.qtcp", description=__doc__.split("\n")[0])
    p.add_argument("scenario", help="bundled scenario name or TOML file (e.g. qtcp-aimd-dumbbell)")
    p.add_argument("--variant", default="qtcp-aimd", choices=sorted(VARIANTS))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--learners", type=path_arg, metavar="FILE.npz", help="start from these saved learners"
    )
    p.add_argument(
        "--save-learners", type=path_arg, metavar="FILE.npz", help="write the learners at the end"
    )
    p.add_argument(
        "--keep-cc",
        action="store_true",
        help='keep the scenario\'s CCs: only its cc = "agent" flows learn (none: refused)',
    )
    p.add_argument(
        "--out", type=path_arg, metavar="DIR", help="write the result and decisions.npz here"
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    args = p.parse_args(args_in)
    args.func = _run
    return run_command(args, one_line=(LearnerMismatchWarning,))


def writable_file(path: str | Path) -> Path:
    """``path`` (``.npz`` added as ``np.savez`` adds it) once it is known that a file can be
    written there, checked by making and removing a scratch file beside it: a run whose
    learners could not be saved at its end fails before it starts (:class:`OSError` naming
    the path)."""
    import errno
    import os
    import tempfile

    target = Path(path)
    if not target.name.endswith(".npz"):
        target = target.with_name(target.name + ".npz")
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "a folder, not a file", str(target))
    folder = target.parent
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder to write into", str(target))
    try:
        fd, scratch = tempfile.mkstemp(dir=folder, prefix=".ccgym-", suffix=".tmp")
    except OSError as e:
        raise OSError(e.errno, f"cannot write there ({e.strerror})", str(target)) from None
    os.close(fd)
    os.unlink(scratch)
    if target.exists() and not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, "cannot overwrite this file", str(target))
    return target


def _run(args: argparse.Namespace) -> int:
    """The run of :func:`main` once its arguments are parsed."""
    import numpy as np

    from ccgym.cli.common import results_folder
    from ccgym.qtcp.driver import load_learners, run_qtcp, save_learners

    learners = load_learners(args.learners, args.variant) if args.learners else None
    save_to = writable_file(args.save_learners) if args.save_learners else None
    with results_folder(Path(args.out) if args.out else None):
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
            f"{args.variant} on {args.scenario}: {s['duration_s']:.0f} s simulated in {wall:.1f}"
            f" s, {len(run.log['time_s'])} decisions; bottleneck utilisation"
            f" {b['utilization']:.3f}, mean queue {b['queue_mean_kb']:.1f} KB,"
            f" Jain {s['flows']['jain']:.3f}"
        )
        if save_to is not None:
            save_learners(save_to, run.learners, run.config)
        if args.out:
            out = Path(args.out)
            run.result.save(out)  # summary.json, scenario and the Parquet series, as ccgym run
            np.savez(out / "decisions.npz", **run.log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
