"""Print the query table of a folder of Canary runs (one sub-folder per
config, each with its summary.json): mean and p99 QCT in seconds, the share
of queries completed, drops and deflections, data timeouts, and with the
TCP handshake the SYN and SYN-ACK retransmissions.

    python3 summarize.py results/canary-s100
    python3 summarize.py results/canary-hs-s100     # NAME_hs_LOAD runs
"""

import json
import sys
from pathlib import Path

SCHEMES = ["ecmp", "aifo", "dibs", "vertigo", "canary"]
LOADS = [55, 65, 75, 85, 95]


def syn(d: dict) -> str:
    """SYN and SYN-ACK retransmissions ('–' for a run without the handshake)."""
    c = d["protocol_counters"]
    if "syn_sent" not in c:
        return "–"
    return f"{c.get('syn_retransmits', 0)} / {c.get('synack_retransmits', 0)}"


def main(folder: str) -> None:
    root = Path(folder)
    print(
        "| config | queries | completed | mean QCT (s) | p99 QCT (s) | drops | deflected"
        " | timeouts | SYN / SYN-ACK resent |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for load in LOADS:
        for s in SCHEMES:
            p = root / f"{s}_{load}" / "summary.json"
            if not p.is_file():
                p = root / f"{s}_hs_{load}" / "summary.json"
            if not p.is_file():
                continue
            d = json.loads(p.read_text(encoding="utf-8"))
            q = d["queries"]
            mean, p99 = q["qct_us"]["mean"], q["qct_us"]["p99"]
            fmt = lambda v: "–" if v is None else f"{v / 1e6:.3f}"  # noqa: E731
            print(
                f"| {p.parent.name} | {q['queries']} | {q['completed_share']:.1%} | {fmt(mean)} | "
                f"{fmt(p99)} | {d['drops_total']} | {d['deflected']} | "
                f"{d['protocol_counters'].get('timeouts', 0)} | {syn(d)} |"
            )


if __name__ == "__main__":
    main(sys.argv[1])
