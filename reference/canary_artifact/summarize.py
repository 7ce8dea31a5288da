"""Tables of run_1g.sh's results (DIR/<config>/compare.json) for experiments/canary/README.md.

summarize.py DIR
"""

import json
import sys
from pathlib import Path

SCHEMES = ["ecmp", "dibs", "vertigo", "aifo", "canary"]


def ms(x):
    return "—" if x is None else f"{x * 1e3:.1f}"


def ratio(a, b):
    if a is None or not b:
        return "—"
    return f"{(a / b - 1) * 100:+.0f} %"


def main(root: Path) -> None:
    variants = (
        ("", "artifact TCP (10 ms initial/min/SYN RTO), load relative to host links"),
        ("_rto1s", "initial and SYN RTO 1 s (min 10 ms), load relative to host links"),
        ("_fab", "artifact TCP, load relative to the fabric (100 ms of arrivals)"),
        ("_rto1s_fab", "initial and SYN RTO 1 s, load relative to the fabric"),
    )
    for variant, title in variants:
        if not any((root / f"{s}{variant}_{ld}").exists() for s in SCHEMES for ld in (55, 95)):
            continue
        print(f"\n### {title}\n")
        print(
            "| config | mean QCT ms pktsim / artifact (Δ) | p99 QCT ms pktsim / artifact (Δ) "
            "| queries done pktsim / artifact / all | drops pktsim / artifact "
            "| deflections pktsim / artifact | data timeouts pktsim / artifact "
            "| SYN timeouts pktsim / artifact | CPU s pktsim / artifact "
            "| peak RSS MB pktsim / artifact |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for load in (55, 95):
            for s in SCHEMES:
                f = root / f"{s}{variant}_{load}" / "compare.json"
                if not f.exists():
                    continue
                r = json.loads(f.read_text())
                p, a = r["pktsim"], r["artifact"]
                pr, ar = r.get("pktsim_run") or {}, r.get("artifact_run") or {}
                pq, aq = p["qct_s"], a["qct_s"]

                def n(x):
                    return "—" if x is None else f"{x:.0f}"

                print(
                    f"| {s}{variant}_{load} | {ms(pq['mean'])} / {ms(aq['mean'])} "
                    f"({ratio(pq['mean'], aq['mean'])}) | {ms(pq['p99'])} / {ms(aq['p99'])} "
                    f"({ratio(pq['p99'], aq['p99'])}) | {p['completed']} / {a['completed']} / "
                    f"{p['queries']} | {n(p['drops_total'])} / {n(a['drops_total'])} | "
                    f"{n(p['deflections'])} / {n(a['deflections'])} | {n(p['data_timeouts'])} / "
                    f"{n(a['data_timeouts'])} | {n(p['syn_timeouts'])} / {n(a['syn_timeouts'])} | "
                    f"{pr.get('cpu_s', 0):.2f} / {ar.get('cpu_s', 0):.1f} | "
                    f"{(pr.get('peak_rss_kb') or 0) / 1024:.0f} / "
                    f"{(ar.get('peak_rss_kb') or 0) / 1024:.0f} |"
                )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
