#!/usr/bin/env python3
"""Markdown tables of a run_all.sh results folder (standard library only).

Usage: summarize.py RESULTS/runs > table.md

Each run folder is named <workload>_<protocol>_load<L> and holds pktsim's
summary.json. One table per workload, a row per (load, protocol), and the
pHost / pFabric ratio of mean slowdown per load.
"""

import json
import sys
from pathlib import Path

PROTOCOLS = ["phost", "pfabric", "fastpass", "dctcp"]


def fmt(x, digits=3):
    """A number for the table; '—' where the statistic is missing."""
    if x is None:
        return "—"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{digits}g}"


def main(runs_dir: Path) -> None:
    rows = {}
    for summary_path in sorted(runs_dir.glob("*/summary.json")):
        name = summary_path.parent.name
        stem, _, load = name.rpartition("_load")
        workload, _, protocol = stem.rpartition("_")
        s = json.loads(summary_path.read_text())
        rows[(workload, float(load), protocol)] = s
    if not rows:
        sys.exit(f"summarize.py: no */summary.json under {runs_dir}")

    for workload in sorted({w for w, _, _ in rows}):
        print(f"### {workload}\n")
        print(
            "| load | protocol | flows | mean slowdown | p99 slowdown | "
            "< 100KB mean | < 100KB p99 | ≥ 10MB mean | NFCT | "
            "delivered/offered per host (mean) | data drops | wall s |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        loads = sorted({ld for w, ld, _ in rows if w == workload})
        for load in loads:
            order = sorted(
                (p for w, ld, p in rows if w == workload and ld == load),
                key=lambda p: PROTOCOLS.index(p) if p in PROTOCOLS else 99,
            )
            for protocol in order:
                s = rows[(workload, load, protocol)]
                data_drops = sum(s["drops"]["data"].values())
                print(
                    f"| {load} | {protocol} | {fmt(s['finished'])}/{fmt(s['flows'])} | "
                    f"{fmt(s['slowdown']['mean'])} | {fmt(s['slowdown']['p99'])} | "
                    f"{fmt(s['short_flows']['slowdown']['mean'])} | "
                    f"{fmt(s['short_flows']['slowdown']['p99'])} | "
                    f"{fmt(s['long_flows']['slowdown']['mean'])} | "
                    f"{fmt(s['normalized_fct'])} | "
                    f"{fmt(s['throughput']['per_host']['mean_fraction'], 4)} | "
                    f"{fmt(data_drops)} | {s['wall_time_s']:.1f} |"
                )
        ratios = []
        for load in loads:
            ph = rows.get((workload, load, "phost"))
            pf = rows.get((workload, load, "pfabric"))
            if ph and pf and ph["slowdown"]["mean"] and pf["slowdown"]["mean"]:
                ratio = ph["slowdown"]["mean"] / pf["slowdown"]["mean"]
                ratios.append(f"{load}: {ratio:.3f}")
        if ratios:
            print(f"\npHost / pFabric mean slowdown — {', '.join(ratios)}\n")
        else:
            print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
