"""Classic baselines on the Pantheon-like ``mvfst-*`` links: mean throughput and 95th-percentile
one-way delay per link and algorithm, over a few seeds, as a Markdown table (docs/cc.md).

    python -m ccgym.bench.wan_baselines --seeds 1 2 3 --duration 30s

Throughput is the flow's delivery rate over the run (distinct bytes received, in order or not;
Pantheon's mean throughput counts the whole flow too); delay is the one-way delay of its data
packets (``metrics.one_way_delay``).
Each cell is the mean over the seeds; a seed also draws another Poisson trace.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence

from ccgym.runner import simulate

LINKS = [
    "mvfst-nepal-india",
    "mvfst-mexico-cellular",
    "mvfst-brazil-colombia",
    "mvfst-india-india",
    "mvfst-korea-china",
    "mvfst-synthetic-12",
    "mvfst-synthetic-50",
    "mvfst-synthetic-60",
    "mvfst-synthetic-100",
    "mvfst-synthetic-108",
    "mvfst-policer",
]
CCS = ["cubic", "newreno", "copa", "bbr"]


def measure(link: str, cc: str, seed: int, duration: str) -> tuple[float, float]:
    """(throughput in Mb/s, p95 one-way delay in ms) of one run."""
    s = simulate(
        link, overrides=[f"seed={seed}", f"duration={duration}"], cc=cc, tables=False
    ).summary
    flows = s["flows"]
    return flows["throughput_gbps_mean"] * 1e3, flows["one_way_delay_ms"]["p95"]


def table(links: Sequence[str], ccs: Sequence[str], seeds: Sequence[int], duration: str) -> str:
    """The Markdown table: one row per link, throughput / p95 delay per algorithm."""
    head = "| link | " + " | ".join(f"{cc} Mb/s, p95 ms" for cc in ccs) + " |"
    lines = [head, "|---|" + "---:|" * len(ccs)]
    for link in links:
        cells = []
        for cc in ccs:
            runs = [measure(link, cc, seed, duration) for seed in seeds]
            tput = statistics.fmean(r[0] for r in runs)
            delay = statistics.fmean(r[1] for r in runs)
            cells.append(f"{tput:.2f}, {delay:.0f}")
        lines.append(f"| `{link}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m ccgym.bench.wan_baselines", description=__doc__)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--duration", default="30s")
    p.add_argument("--links", nargs="+", default=LINKS)
    p.add_argument("--cc", nargs="+", default=CCS)
    a = p.parse_args(argv)
    print(table(a.links, a.cc, a.seeds, a.duration))


if __name__ == "__main__":
    main()
