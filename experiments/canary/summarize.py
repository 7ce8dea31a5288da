"""Print the query table of a folder of Canary runs (one sub-folder per
config, each with its summary.json): mean and p99 QCT in seconds, the share
of queries completed, drops and deflections.

    python3 summarize.py results/canary-s100
"""

import json
import sys
from pathlib import Path

SCHEMES = ["ecmp", "aifo", "dibs", "vertigo", "canary"]
LOADS = [55, 65, 75, 85, 95]


def main(folder: str) -> None:
    root = Path(folder)
    print(
        "| config | queries | completed | mean QCT (s) | p99 QCT (s) | drops | deflected"
        " | timeouts |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for load in LOADS:
        for s in SCHEMES:
            p = root / f"{s}_{load}" / "summary.json"
            if not p.is_file():
                continue
            d = json.loads(p.read_text(encoding="utf-8"))
            q = d["queries"]
            mean, p99 = q["qct_us"]["mean"], q["qct_us"]["p99"]
            fmt = lambda v: "–" if v is None else f"{v / 1e6:.3f}"  # noqa: E731
            print(
                f"| {s}_{load} | {q['queries']} | {q['completed_share']:.1%} | {fmt(mean)} | "
                f"{fmt(p99)} | {d['drops_total']} | {d['deflected']} | "
                f"{d['protocol_counters'].get('timeouts', 0)} |"
            )


if __name__ == "__main__":
    main(sys.argv[1])
