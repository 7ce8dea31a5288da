"""Tables of the FlashPass runs beside the paper's numbers:
``python3 summarize.py results/flashpass``. Static: goodput and data loss;
dynamic: average and p99 FCT of small (< 10 MB) flows, average FCT of
large flows and of all flows, in ms, with the paper's Figs. 11/12."""

import json
import sys
from pathlib import Path

# Figs. 11/12 read from the vector drawing (spec flashpass-paper.md §4):
# small avg, small p99, large avg, all avg (ms).
PAPER = {
    0.4: {
        "cubic": (632, 1402, 3187, 2801),
        "expresspass": (523, 1117, 2740, 2396),
        "expresspass_star": (382, 966, 2423, 2076),
        "flashpass": (391, 738, 2416, 2012),
        "flashpass_star": (363, 708, 2404, 2004),
    },
    0.8: {
        "cubic": (716, 1800, 5680, 5152),
        "expresspass": (703, 1616, 4979, 4388),
        "expresspass_star": (672, 1465, 4386, 3949),
        "flashpass": (591, 937, 4038, 3594),
        "flashpass_star": (562, 907, 3953, 3495),
    },
}


def ms(us):
    """Microseconds as whole milliseconds ('-' for none)."""
    return "-" if us is None else f"{us / 1000:.0f}"


def main(out: Path) -> None:
    """Print both tables for the runs under ``out``."""
    runs = {
        p.name: json.loads((p / "summary.json").read_text())
        for p in sorted(out.iterdir())
        if (p / "summary.json").exists()
    }
    print("| static run | goodput (Gbit/s) | data loss | sim s | wall s |")
    print("|---|---|---|---|---|")
    for name, s in runs.items():
        if not name.startswith("static"):
            continue
        sent = s["conservation"]["sent"]["data"]
        lost = sum(s["drops"]["data"].values())
        print(
            f"| {name} | {s['throughput']['goodput_gbps']:.2f} | {100 * lost / max(sent, 1):.3f} % "
            f"| {s['sim_time_us'] / 1e6:.2f} | {s['wall_time_s']:.1f} |"
        )
    print()
    print(
        "| dynamic run | finished | small avg | small p99 | large avg | all avg "
        "| paper (small avg, p99, large, all) | sim s per wall s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, s in runs.items():
        if not name.startswith("dynamic"):
            continue
        load = float(name.split("_")[1].removeprefix("load"))
        proto = name.split("_", 2)[2]
        small, large = s["buckets"][0]["fct_us"], s["buckets"][1]["fct_us"]
        paper = PAPER.get(load, {}).get(proto)
        rate = s["sim_time_us"] / 1e6 / s["wall_time_s"]
        print(
            f"| {name} | {s['finished']}/{s['flows']} | {ms(small['mean'])} | {ms(small['p99'])} "
            f"| {ms(large['mean'])} | {ms(s['fct_us']['mean'])} | {paper or '-'} | {rate:.2f} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/flashpass"))
