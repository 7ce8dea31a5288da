#!/usr/bin/env python3
"""Tables of an experiments/fastpass run (standard library only).

Usage: summarize.py RESULTS_DIR > table.md

RESULTS_DIR holds one folder per config (incast_4to1_tcp, ...), each with
the timeseries example's throughput.csv and queues.csv (1 ms windows).
"""

import csv
import statistics
import sys
from pathlib import Path

WARMUP_US = 10_000


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def incast(d, receiver):
    q = [r for r in rows(d / "queues.csv") if int(r["host"]) == receiver]
    steady = [r for r in q if int(r["t_end_us"]) > WARMUP_US]
    tp = rows(d / "throughput.csv")
    per_window = {}
    for r in tp:
        t = int(r["t_end_us"])
        if t > WARMUP_US:
            per_window[t] = per_window.get(t, 0.0) + float(r["goodput_gbps"])
    return {
        "max_queue_bytes": max(int(r["max_bytes"]) for r in q),
        "max_queue_packets": max(int(r["max_packets"]) for r in q),
        "mean_queue_bytes": statistics.fmean(float(r["mean_bytes"]) for r in steady),
        "goodput_gbps": statistics.fmean(per_window.values()),
    }


def fairness(d, lo_us, hi_us):
    """Per-flow goodput in the windows (lo, hi] where all 5 flows are active."""
    tp = [r for r in rows(d / "throughput.csv") if lo_us < int(r["t_end_us"]) <= hi_us]
    vals = [float(r["goodput_gbps"]) for r in tp]
    flows = sorted({int(r["flow"]) for r in tp})
    means = [
        statistics.fmean(float(r["goodput_gbps"]) for r in tp if int(r["flow"]) == f)
        for f in flows
    ]
    return {
        "flows": len(flows),
        "stdev_gbps": statistics.pstdev(vals),
        "min_gbps": min(vals),
        "max_gbps": max(vals),
        "per_flow_mean_gbps": means,
    }


# The fairness run's phases (ms): a flow joins every 20 ms, then all five
# run 80-120 ms.
PHASES = [(0, 20), (20, 40), (40, 60), (60, 80), (80, 120)]
SETTLE_US = 2_000


def by_phase(d):
    """Per-flow mean goodput in each phase's windows (the first 2 ms of a
    phase skipped), and the stdev of the active flows' means."""
    tp = rows(d / "throughput.csv")
    flows = sorted({int(r["flow"]) for r in tp})
    table = []
    for lo, hi in PHASES:
        ws = [r for r in tp if lo * 1000 + SETTLE_US < int(r["t_end_us"]) <= hi * 1000]
        table.append([
            statistics.fmean(float(r["goodput_gbps"]) for r in ws if int(r["flow"]) == f)
            if any(int(r["flow"]) == f for r in ws) else 0.0
            for f in flows
        ])
    return flows, table


def main(out):
    print("### 4 senders -> 1 receiver (one rack, 200 ms)\n")
    print("| protocol | max queue (B) | max queue (packets) | mean queue (B) | goodput (Gbit/s) |")
    print("|---|---|---|---|---|")
    res = {}
    for p in ["tcp", "fastpass"]:
        d = out / f"incast_4to1_{p}"
        if d.exists():
            r = res[p] = incast(d, 4)
            print(f"| {p} | {r['max_queue_bytes']:,} | {r['max_queue_packets']} | "
                  f"{r['mean_queue_bytes']:,.0f} | {r['goodput_gbps']:.3f} |")
    if "tcp" in res and "fastpass" in res:
        fp = res["fastpass"]["mean_queue_bytes"]
        mean = (f"{res['tcp']['mean_queue_bytes'] / fp:,.0f}x" if fp >= 1
                else "Fastpass's mean is under 1 B")
        print(f"\nmean queue TCP / Fastpass: {mean}; max queue TCP / Fastpass: "
              f"{res['tcp']['max_queue_bytes'] / max(res['fastpass']['max_queue_bytes'], 1):,.0f}"
              "x. "
              "A Fastpass maximum of 1 packet is the packet that arrives and starts "
              "at once: nothing ever waits.\n")
    print("### 5 flows -> 1 receiver, all 5 active (90-120 ms, 1 ms windows)\n")
    print("| protocol | stdev of per-flow goodput (Gbit/s) | min | max | per-flow means |")
    print("|---|---|---|---|---|")
    fr = {}
    for p in ["tcp", "fastpass"]:
        d = out / f"fairness_5flows_{p}"
        if d.exists():
            r = fr[p] = fairness(d, 90_000, 120_000)
            means = ", ".join(f"{m:.3f}" for m in r["per_flow_mean_gbps"])
            print(f"| {p} | {r['stdev_gbps']:.4f} | {r['min_gbps']:.3f} | "
                  f"{r['max_gbps']:.3f} | {means} |")
    if "tcp" in fr and "fastpass" in fr:
        ratio = fr["tcp"]["stdev_gbps"] / max(fr["fastpass"]["stdev_gbps"], 1e-12)
        print(f"\nstdev TCP / Fastpass: {ratio:,.0f}x")
    for p in ["tcp", "fastpass"]:
        d = out / f"fairness_5flows_{p}"
        if not d.exists():
            continue
        flows, table = by_phase(d)
        print(f"\n### 5 flows -> 1 receiver, {p}: mean goodput (Gbit/s) by phase\n")
        print("| phase (ms) | active | " + " | ".join(f"flow {f}" for f in flows)
              + " | fair share |")
        print("|---" * (len(flows) + 3) + "|")
        for k, ((lo, hi), vals) in enumerate(zip(PHASES, table, strict=True)):
            active = min(k + 1, len(flows))
            print(f"| {lo}-{hi} | {active} | " + " | ".join(f"{v:.3f}" for v in vals)
                  + f" | {9.733 / active:.3f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py RESULTS_DIR")
    main(Path(sys.argv[1]))
