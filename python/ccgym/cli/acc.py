"""``ccgym acc-eval``: ACC's switch agents (a ``ddqn`` policy) on scenarios, greedy or learning
online (needs the training extras: torch)."""

from __future__ import annotations

import argparse
import errno
import json
from typing import Any

from ccgym.cli.common import path_arg, results_folder, stdout


def register(sub: Any, debug: argparse.ArgumentParser) -> None:
    """Adds ``acc-eval``."""
    p = sub.add_parser(
        "acc-eval",
        parents=[debug],
        help="run ACC switch agents (a ddqn policy) on scenarios, greedy or learning online",
    )
    p.add_argument("scenarios", nargs="+", type=path_arg, metavar="SCENARIO")
    p.add_argument(
        "--policy", default="acc-default", help="ddqn policy file or bundled name (acc-default)"
    )
    p.add_argument(
        "--online",
        action="store_true",
        help="keep learning during the run (epsilon, learning rate, learning_starts from the"
        " [online] of --config, else of the config the policy was trained with: acc-default's"
        " is python/ccgym/policies/acc-default.toml)",
    )
    p.add_argument(
        "--config",
        type=path_arg,
        metavar="FILE",
        help="training config for --online (TOML, or a run folder's config.json); default: the"
        " policy's own (bundled beside it, or config.json beside a run folder's policy.json),"
        " else the built-in [online] defaults, with a warning",
    )
    p.add_argument(
        "--queues", default="all", help="switch ports with an agent: all, a tier (leaf, spine)"
    )
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario value")
    p.add_argument("--seed", type=int, metavar="N", help="shorthand for --set seed=N")
    p.add_argument("--out", type=path_arg, metavar="FILE.json", help="write the metrics here")
    p.set_defaults(func=cmd_acc_eval)


def _warn(text: str) -> None:
    """One yellow ``warning: ...`` line on stderr."""
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text(f"warning: {text}", style="yellow")
    )


def cmd_acc_eval(args: argparse.Namespace) -> int:
    """``ccgym acc-eval SCENARIO...``: one ACC run per scenario, its table metrics printed."""
    from pathlib import Path

    import torch
    from rich.table import Table

    from ccgym.acc.training import online_settings, policy_config, run_policy
    from ccgym.train.config import read_config

    torch.set_num_threads(1)  # a tiny MLP: more threads only spin
    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    config = read_config(args.config) if args.config else None
    if args.online and config is None:
        config, source = policy_config(args.policy)
        if source is None:
            on = online_settings(None)
            _warn(
                f"--online without --config: {args.policy} is not a bundled policy nor a run"
                " folder's policy.json, so the built-in [online] defaults apply (epsilon"
                f" {on['epsilon']:g}, lr {on['lr']:g}, learning_starts {on['learning_starts']});"
                " pass --config FILE to use its training config"
            )
    table = Table(title=f"ccgym acc-eval {args.policy}" + (" (online)" if args.online else ""))
    keys = ("mice_mean_us", "mice_p99_us", "eleph_mean_us", "util", "q_mean_kb", "q_p99_kb")
    keys += ("pfc_pauses", "agent_reward")
    for title in ("scenario", *keys):
        table.add_column(title, justify="left" if title == "scenario" else "right")
    results: dict[str, Any] = {}
    out = Path(args.out) if args.out is not None else None
    if out is not None and out.is_dir():
        raise IsADirectoryError(
            errno.EISDIR, "--out names a folder, not a file for the metrics (JSON)", str(out)
        )
    with results_folder(None if out is None else out.parent):
        for scenario in args.scenarios:
            run, learner = run_policy(
                args.policy,
                scenario,
                overrides,
                online=args.online,
                config=config,
                queues=args.queues,
            )
            m = run.metrics
            m["learner_steps"] = learner.learner_steps
            results[scenario] = m
            row = ("-" if m.get(k) is None else f"{float(m[k]):.4g}" for k in keys)
            table.add_row(scenario, *row)
        stdout().print(table)
        if out is not None:
            out.write_text(json.dumps(results, indent=1))
    return 0
