"""The learned-CC commands: ``ccgym train`` (a trainer of ``ccgym.agents``), ``ccgym export``
(a checkpoint as a native policy) and ``ccgym eval`` (scenarios run with a native policy)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ccgym._errors import ScenarioError
from ccgym.cli.common import (
    QUEUE_LAT,
    get,
    num,
    nums,
    path_arg,
    pct,
    results_folder,
    stdout,
    summary_table,
)

if TYPE_CHECKING:
    from rich.table import Table


def register(sub: Any, debug: argparse.ArgumentParser) -> None:
    """Adds ``train``, ``export`` and ``eval``."""
    p = sub.add_parser(
        "train", parents=[debug], help="train a learned CC (needs the training extras: torch)"
    )
    p.add_argument("name", help="trainer: a module of ccgym.agents, e.g. adpg")
    p.add_argument("--config", type=path_arg, metavar="FILE", help="training config (TOML)")
    p.add_argument("--out", type=path_arg, metavar="DIR", help="run folder (default: runs/NAME)")
    p.add_argument(
        "--resume", action="store_true", help="continue from the run folder's checkpoint.pt"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="clear the run folder first if it holds another run (without --resume)",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="Ray-based trainers (impala): run on this Ray cluster instead of a local Ray",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "export", parents=[debug], help="write a training checkpoint as a native policy (JSON)"
    )
    p.add_argument(
        "checkpoint", type=path_arg, help="checkpoint file (.pt) written by `ccgym train`"
    )
    p.add_argument(
        "--out", required=True, type=path_arg, metavar="FILE.json", help="policy file to write"
    )
    p.add_argument(
        "--calibrate",
        action="append",
        type=path_arg,
        metavar="SCENARIO",
        help="record observations on this scenario (repeatable) for int8 calibration",
    )
    p.add_argument(
        "--calibrate-set",
        action="append",
        metavar="KEY=VALUE",
        help="override in the calibration scenarios, e.g. duration=20ms (repeatable)",
    )
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "eval", parents=[debug], help="run scenarios with a native policy (no torch needed)"
    )
    p.add_argument(
        "policy", type=path_arg, help="policy file, or bundled name (adpg-default, rlcc-public)"
    )
    p.add_argument(
        "scenarios", nargs="+", type=path_arg, metavar="SCENARIO", help="TOML file or bundled name"
    )
    p.add_argument(
        "--precision",
        choices=["float32", "int8"],
        default=None,
        help="native precision (default: the scenario's agent.precision, else float32)",
    )
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario value")
    p.add_argument("--seed", type=int, metavar="N", help="shorthand for --set seed=N")
    p.add_argument(
        "--baseline",
        action="append",
        metavar="CC",
        help="also run each scenario with this classic CC, e.g. dcqcn (repeatable)",
    )
    p.add_argument("--out", type=path_arg, metavar="DIR", help="save every run's results under DIR")
    p.add_argument("--quiet", action="store_true", help="only the final comparison table")
    p.set_defaults(func=cmd_eval)


def cmd_train(args: argparse.Namespace) -> int:
    """``ccgym train NAME``: run the trainer ``ccgym.agents.NAME`` on a config."""
    from pathlib import Path

    from ccgym.agents import trainer, trainer_names

    known = trainer_names()
    if args.name not in known:
        raise ScenarioError(f'ccgym train: no trainer "{args.name}" (trainers: {", ".join(known)})')
    module = trainer(args.name)
    if args.config is None and not args.resume:
        raise ScenarioError("ccgym train: give --config FILE (or --resume with --out DIR)")
    out = Path(args.out) if args.out else Path("runs") / args.name
    fresh_run_folder(out, resume=args.resume, force=getattr(args, "force", False))
    # --resume: the config saved in the checkpoint, with --config (if given) merged over it.
    kwargs = {}
    if getattr(args, "ray", None):
        import inspect

        if "ray_address" not in inspect.signature(module.train_from_config).parameters:
            raise ScenarioError(f"ccgym train: {args.name} does not run on Ray (no --ray)")
        kwargs["ray_address"] = args.ray
    from ccgym._progress import plain_lines

    # stderr not a terminal (nohup, a log file): plain progress lines instead of no bar at all.
    with plain_lines(unit=getattr(module, "PROGRESS_UNIT", None)):
        result = module.train_from_config(args.config, out, resume=args.resume, **kwargs)
    print(json.dumps(result, indent=2, default=str))
    return 0


def fresh_run_folder(out: Any, *, resume: bool, force: bool) -> None:
    """Refuses to start a new run in a folder that holds something (another run's
    ``history.jsonl`` would be overwritten and its checkpoints mixed with the new ones):
    ``--resume`` continues it, ``--force`` clears it first, an empty or missing folder is fine.
    """
    import shutil

    if resume:
        if force:
            raise ScenarioError("ccgym train: --force clears the run folder; not with --resume")
        return
    if not out.exists():
        return
    if not out.is_dir():
        raise ScenarioError(f"ccgym train: --out {out} is a file, not a run folder")
    if not any(out.iterdir()):
        return
    if not force:
        raise ScenarioError(
            f"ccgym train: the run folder {out} is not empty (another run?); continue that run "
            "with --resume, give another --out, or add --force to clear it first"
        )
    for item in out.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()


def _record(policy: dict[str, Any], scenarios: Sequence[str], sets: Sequence[str]) -> Any:
    from ccgym.policies import record_observations

    return record_observations(policy, scenarios, overrides=list(sets or []))


def cmd_export(args: argparse.Namespace) -> int:
    """``ccgym export CHECKPOINT --out FILE.json``: a checkpoint as a native policy file."""
    from ccgym import policies
    from ccgym.agents import export_checkpoint

    policy = export_checkpoint(args.checkpoint)
    if args.calibrate:
        # Before any simulation: a recurrent policy has no int8 form to calibrate.
        policies.check_int8_capable(policy, "ccgym export --calibrate")
        obs = _record(policy, args.calibrate, args.calibrate_set)
        policy = policies.with_calibration(policy, obs)
        policy["meta"]["int8_calibration"]["scenarios"] = list(args.calibrate)
    path = policies.save_policy(policy, args.out)
    print(f"policy: {path}" + (" (with int8 calibration)" if "int8" in policy else ""))
    return 0


def eval_table(rows: list[tuple[str, str, dict[str, Any]]]) -> Table:
    """One line per (scenario, controller) run: the ADPG paper's metrics."""
    from rich.table import Table

    table = Table(title="ccgym eval")
    for title in (
        "scenario", "controller", "utilisation", "Jain", "min/max", "queue lat. mean / p99",
        "queue max", "drops",
    ):  # fmt: skip
        table.add_column(title, justify="right" if title not in ("scenario",) else "left")
    for scenario, controller, s in rows:
        bn, fl, net = s.get("bottleneck"), s.get("flows"), s.get("network")
        table.add_row(
            scenario,
            controller,
            pct(get(bn, "utilization")),
            num(get(fl, "jain"), ".4f"),
            num(get(fl, "min_max"), ".3f"),
            nums(bn, QUEUE_LAT, ".2f", "us"),
            num(get(bn, "queue_max_kb"), ".0f", "KB"),
            num(get(net, "drops_packets")),
        )
    return table


def cmd_eval(args: argparse.Namespace) -> int:
    """``ccgym eval POLICY SCENARIO...``: run scenarios with a native policy."""
    from pathlib import Path

    from rich.console import Console

    from ccgym import policies
    from ccgym.runner import run

    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    path = policies.policy_path(args.policy)
    label = f"{args.policy} ({args.precision or _set_precision(overrides) or 'float32'})"
    out = stdout()
    progress = not args.quiet and Console(stderr=True).is_terminal
    rows = []
    with results_folder(Path(args.out) if args.out is not None else None):
        for scenario in args.scenarios:
            result = policies.evaluate(
                path, scenario, overrides=overrides, precision=args.precision, progress=progress
            )
            if not args.quiet:
                out.print(summary_table(result.summary, result.timing))
            rows.append((scenario, label, result.summary))
            if args.out is not None:
                result.save(Path(args.out) / f"{Path(scenario).stem}-policy")
            for cc in args.baseline or []:
                base = run(scenario, overrides=overrides, cc=cc, progress=progress)
                rows.append((scenario, cc, base.summary))
                if args.out is not None:
                    base.save(Path(args.out) / f"{Path(scenario).stem}-{cc}")
    out.print(eval_table(rows))
    return 0


def _set_precision(overrides: list[str]) -> str | None:
    """The last ``agent.precision=...`` among ``--set`` overrides, for the table's label."""
    found = None
    for item in overrides:
        key, _, value = item.partition("=")
        if key.strip() == "agent.precision":
            found = value.strip().strip("'\"")
    return found
