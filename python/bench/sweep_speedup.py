"""Sweep speed-up with the number of local worker processes.

Times the same sweep (default: 12 points, examples/leafspine_dctcp.toml at
six loads x two seeds, 1,000 flows each) with each worker count, best of
--repeat, each time into a fresh folder, and prints the speed-up over one
worker. Record the figures in BENCHMARKS.md with the command and machine.

    python python/bench/sweep_speedup.py --workers 1,2 --repeat 3

Before the sweeps it runs a control: the same worker counts spinning on pure
CPU loops for --control seconds, printing the cores they got. If two
spinning processes get no more CPU than one (another session keeps the
machine busy: Linux's autogroup scheduling shares the CPU between sessions,
not processes), no sweep can speed up there, and the figures below it say
so rather than anything about the sweep.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import pktsim

ROOT = Path(__file__).resolve().parents[2]


def _spin(seconds: float) -> int:
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def control(counts: list[int], seconds: float) -> None:
    """Print the cores that ``w`` spinning processes get, for each ``w``."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    for w in counts:
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        t0 = time.perf_counter()
        with ctx.Pool(w) as pool:
            pool.map(_spin, [seconds] * w)
        wall = time.perf_counter() - t0
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - cpu0
        print(f"control: {w} spinning processes got {cpu / wall:.2f} cores")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=ROOT / "examples" / "leafspine_dctcp.toml")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many")
    ap.add_argument("--flows", type=int, default=1000, help="flows per point")
    ap.add_argument("--loads", default="0.3,0.4,0.5,0.6,0.7,0.8")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--executor", default="processes", choices=["processes", "dask"])
    ap.add_argument("--control", type=float, default=3.0, help="seconds of CPU spin (0: skip)")
    a = ap.parse_args()
    grid = {"load": [float(x) for x in a.loads.split(",")]}
    seeds = [int(s) for s in a.seeds.split(",")]
    n_points = len(grid["load"]) * len(seeds)
    print(
        f"sweep: {a.config.name}, {n_points} points of {a.flows} flows, "
        f"executor {a.executor}, {os.cpu_count()} cores, best of {a.repeat}"
    )
    print(f"load average at start: {os.getloadavg()[0]:.2f} (other jobs compete for the cores)")
    counts = [int(x) for x in a.workers.split(",")]
    if a.control > 0:
        control(counts, a.control)
    times: dict[int, list[float]] = {w: [] for w in counts}
    used: dict[int, list[float]] = {w: [] for w in counts}
    tmp = Path(tempfile.mkdtemp(prefix="pktsim-bench-"))
    try:
        # Interleaved (1, 2, 1, 2, ...) so that a change in the machine's load
        # hits every worker count alike.
        for r in range(a.repeat):
            for w in counts:
                out = tmp / f"w{w}-r{r}"
                cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
                t0 = time.perf_counter()
                res = pktsim.sweep(
                    a.config, grid, seeds, out=out, executor=a.executor, workers=w,
                    fixed={"flows": a.flows}, progress=False,
                )
                wall = time.perf_counter() - t0
                assert res.ran == n_points
                # Cores the workers actually got: their CPU time over wall time.
                cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - cpu0
                times[w].append(wall)
                used[w].append(cpu / wall)
                shutil.rmtree(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    best = {w: min(ts) for w, ts in times.items()}
    for w in counts:
        print(
            f"workers {w:>3}: best {best[w]:.2f} s  (all: "
            + ", ".join(f"{t:.2f}" for t in times[w])
            + "; cores used: "
            + ", ".join(f"{u:.2f}" for u in used[w])
            + ")"
        )
    base = best[min(best)]
    for w, t in sorted(best.items()):
        if w == min(best):
            continue
        print(f"speed-up {min(best)} -> {w}: {base / t:.2f}x")


if __name__ == "__main__":
    main()
