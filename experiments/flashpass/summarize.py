"""Tables of the FlashPass runs beside the paper's numbers:
``python3 summarize.py results/flashpass``. Static: goodput and data loss;
dynamic: average and p99 FCT of small (< 10 MB) flows, average FCT of
large flows and of all flows, in ms, with the paper's Figs. 11/12.

``python3 summarize.py --pacing results/flashpass-pacing``: Cubic unpaced
against paced on the static cases, one row per case and draw of access
delays (``run_pacing.sh``'s folders ``draw<K>/<config>/``), then the mean
over the draws."""

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


# Fig. 10 Cubic goodput (Gbit/s) and data loss (%) of the paper (spec §3.1).
PAPER_CUBIC = {"n20_equal": (5.86, 1.9), "n20": (6.4, 1.7), "n200": (7.5, 1.1)}
CASES = {
    "n20_equal": "(c) N = 20, 10 ms each",
    "n20": "(a) N = 20, U(0, 20 ms)",
    "n200": "(b) N = 200, U(0, 20 ms)",
}


def static_figures(s):
    """Goodput (Gbit/s), data loss (% of data packets sent), timeouts and
    fast recoveries of one static run's summary."""
    sent = s["conservation"]["sent"]["data"]
    lost = sum(s["drops"]["data"].values())
    c = s.get("protocol_counters", {})
    return (
        s["throughput"]["goodput_gbps"],
        100 * lost / max(sent, 1),
        c.get("timeouts", 0),
        c.get("fast_recoveries", 0),
    )


def pacing(out: Path) -> None:
    """Print the unpaced-against-paced Cubic table of ``run_pacing.sh``."""
    print("| case | draw | unpaced: goodput, loss, timeouts, fast recoveries | paced | paper |")
    print("|---|---|---|---|---|")
    fmt = "{:.2f} Gbit/s, {:.3f} %, {}, {}"
    for case, label in CASES.items():
        rows = []
        for d in sorted(out.glob("draw*")):
            pair = [d / f"static_{case}_{v}" / "summary.json" for v in ("cubic", "cubic_paced")]
            if not all(p.is_file() for p in pair):
                continue
            a, b = (static_figures(json.loads(p.read_text())) for p in pair)
            rows.append((a, b))
            print(
                f"| {label} | {d.name.removeprefix('draw')} | {fmt.format(*a)} | "
                f"{fmt.format(*b)} | {PAPER_CUBIC[case][0]}, {PAPER_CUBIC[case][1]} % |"
            )
        if len(rows) > 1:
            mean = [sum(r[i][0] for r in rows) / len(rows) for i in (0, 1)]
            lo = [min(r[i][0] for r in rows) for i in (0, 1)]
            hi = [max(r[i][0] for r in rows) for i in (0, 1)]
            print(
                f"| {label} | mean of {len(rows)} | {mean[0]:.2f} ({lo[0]:.2f}–{hi[0]:.2f}) "
                f"| {mean[1]:.2f} ({lo[1]:.2f}–{hi[1]:.2f}) | {PAPER_CUBIC[case][0]} |"
            )
    print()
    print("| case | protocol | draws | goodput mean (min–max) | data loss mean | timeouts mean |")
    print("|---|---|---|---|---|---|")
    for case, label in CASES.items():
        for v in ("cubic", "cubic_paced", "expresspass", "flashpass"):
            runs = [
                static_figures(json.loads(p.read_text()))
                for p in sorted(out.glob(f"draw*/static_{case}_{v}/summary.json"))
            ]
            if not runs:
                continue
            g = [r[0] for r in runs]
            spread = f"{sum(g) / len(g):.2f} ({min(g):.2f}–{max(g):.2f})"
            print(
                f"| {label} | {v} | {len(runs)} | {spread} "
                f"| {sum(r[1] for r in runs) / len(runs):.3f} % "
                f"| {sum(r[2] for r in runs) / len(runs):.1f} |"
            )


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
    if sys.argv[1:2] == ["--pacing"]:
        pacing(Path(sys.argv[2] if len(sys.argv) > 2 else "results/flashpass-pacing"))
    else:
        main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/flashpass"))
