"""Print the failure experiment's table and draw its plots from a folder of
runs (one sub-folder per config, named by the config's stem, each with
summary.json, flows.parquet and links.parquet).

    python3 summarize.py results/failures            # table on stdout
    python3 summarize.py results/failures --plots .  # and the PNGs here

Table, per design and scenario: mean and p99 slowdown of the flows that
started before (0-10 ms), during (10-30 ms) and after (from 30 ms) the
failure, of the finished ones; flows unfinished at the time limit; drops
for a down link and on the lossy link; and what the hosts received in
10-30 ms, in Gbit/s (bytes on the leaves' host-facing links, headers and
retransmissions included; offered: 0.6 x 144 x 10 = 864 Gbit/s).

Plots: mean slowdown of the flows started in each 1 ms, by start time, per
design, the failure scenario against the baseline, the failure window
shaded (failures_linkdown.png, failures_gray.png); and what the hosts
received per 1 ms (failures_throughput.png).

Needs polars and matplotlib (the pktsim Python package's dependencies).
"""

import argparse
import json
import sys
from pathlib import Path

import polars as pl

DESIGNS = ["ecmp", "spray", "pfabric", "phost", "dibs", "canary"]
LABELS = {
    "ecmp": "DCTCP + ECMP",
    "spray": "DCTCP + spraying",
    "pfabric": "pFabric",
    "phost": "pHost",
    "dibs": "DIBS",
    "canary": "Canary",
}
SCENARIOS = ["baseline", "linkdown", "gray"]
EXTRA = [
    ("ecmp", "never_linkdown", "DCTCP + ECMP, routing never reacts"),
    ("phost_rts", "linkdown", "pHost with an RTS timer"),
    ("phost_rts", "gray", "pHost with an RTS timer"),
]
# Variants drawn dashed in their design's panel: (design, scenario) ->
# [(run folder, label)].
OVERLAYS = {
    ("ecmp", "linkdown"): [("ecmp_never_linkdown", "linkdown, never detected")],
    ("phost", "linkdown"): [("phost_rts_linkdown", "linkdown, RTS timer")],
    ("phost", "gray"): [("phost_rts_gray", "gray, RTS timer")],
}
FAIL_MS, RECOVER_MS = 10.0, 30.0
PHASES = [("before", 0.0, FAIL_MS), ("during", FAIL_MS, RECOVER_MS), ("after", RECOVER_MS, None)]
HOSTS = 144
PS_PER_MS = 1e9


def flows(run: Path) -> pl.DataFrame:
    """Start (ms), slowdown (null if unfinished) of every flow of a run."""
    df = pl.read_parquet(run / "flows.parquet", columns=["start_ps", "slowdown"])
    return df.with_columns((pl.col("start_ps") / PS_PER_MS).alias("start_ms"))


def phase_stats(df: pl.DataFrame, lo: float, hi: float | None) -> tuple[float, float, int]:
    """Mean and p99 slowdown of the finished flows started in [lo, hi), and
    how many of those flows did not finish."""
    sel = df.filter(pl.col("start_ms") >= lo)
    if hi is not None:
        sel = sel.filter(pl.col("start_ms") < hi)
    done = sel["slowdown"].drop_nulls()
    unfinished = sel.height - done.len()
    if done.len() == 0:
        return float("nan"), float("nan"), unfinished
    return float(done.mean()), float(done.quantile(0.99, "nearest")), unfinished


def host_rx(run: Path) -> pl.DataFrame:
    """Bytes the leaves sent to their hosts per interval: (time_ms, gbps)."""
    links = pl.read_parquet(run / "links.parquet")
    down = links.filter((pl.col("node") >= HOSTS) & (pl.col("peer") < HOSTS))
    return (
        down.group_by("time_ps")
        .agg(pl.col("bytes").sum(), pl.col("interval_ps").first())
        .sort("time_ps")
        .with_columns(
            (pl.col("time_ps") / PS_PER_MS).alias("time_ms"),
            (pl.col("bytes") * 8 / (pl.col("interval_ps") / 1e12) / 1e9).alias("gbps"),
        )
    )


def rx_during(run: Path) -> float:
    """Mean Gbit/s received by the hosts over the failure window. A link
    sample's time is the end of its interval."""
    rx = host_rx(run)
    start = rx["time_ms"] - rx["interval_ps"] / PS_PER_MS
    win = rx.filter((start >= FAIL_MS) & (rx["time_ms"] <= RECOVER_MS))
    return float((win["bytes"].sum() * 8) / ((RECOVER_MS - FAIL_MS) * 1e-3) / 1e9)


def drops(summary: dict, reason: str) -> int:
    """Drops of every packet kind for `reason`."""
    return sum(by.get(reason, 0) for by in summary["drops"].values())


def fmt(x: float) -> str:
    return "–" if x != x else f"{x:.2f}" if x < 10 else f"{x:.1f}"


def runs(root: Path) -> list[tuple[str, str, str, Path]]:
    """(design, scenario, row label, folder) of every run present."""
    out = []
    for d in DESIGNS:
        for s in SCENARIOS:
            out.append((d, s, LABELS[d], root / f"{d}_{s}"))
    for d, s, label in EXTRA:
        out.append((d, s, label, root / f"{d}_{s}"))
    return [r for r in out if (r[3] / "summary.json").is_file()]


def table(root: Path) -> None:
    head = ["design", "scenario"]
    for p, _, _ in PHASES:
        head += [f"{p}: mean", f"{p}: p99"]
    head += ["unfinished", "link_down drops", "link_loss drops", "rx 10–30 ms (Gbit/s)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for _, s, label, run in runs(root):
        summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
        df = flows(run)
        cells = [label, s.replace("never_", "")]
        for _, lo, hi in PHASES:
            mean, p99, _ = phase_stats(df, lo, hi)
            cells += [fmt(mean), fmt(p99)]
        cells += [
            f"{summary['unfinished']}",
            f"{drops(summary, 'link_down'):,}",
            f"{drops(summary, 'link_loss'):,}",
            f"{rx_during(run):.0f}",
        ]
        if not summary["conservation"]["ok"]:
            cells[0] += " (conservation FAILED)"
        print("| " + " | ".join(cells) + " |")


def by_start(run: Path) -> pl.DataFrame:
    """Mean slowdown of the finished flows per 1 ms of start time."""
    return (
        flows(run)
        .drop_nulls("slowdown")
        .with_columns(pl.col("start_ms").floor().alias("bin"))
        .group_by("bin")
        .agg(pl.col("slowdown").mean().alias("mean"))
        .sort("bin")
    )


def plot_slowdown(root: Path, scenario: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), sharex=True, sharey=True)
    for ax, d in zip(axes.flat, DESIGNS, strict=True):
        ax.axvspan(FAIL_MS, RECOVER_MS, color="tab:red", alpha=0.12, lw=0)
        for s, style in [("baseline", dict(color="0.55", lw=1)), (scenario, dict(lw=1.4))]:
            run = root / f"{d}_{s}"
            if (run / "flows.parquet").is_file():
                b = by_start(run)
                ax.step(b["bin"] + 0.5, b["mean"], where="mid", label=s, **style)
        for stem, label in OVERLAYS.get((d, scenario), []):
            run = root / stem
            if (run / "flows.parquet").is_file():
                b = by_start(run)
                ax.step(
                    b["bin"] + 0.5,
                    b["mean"],
                    where="mid",
                    lw=1,
                    ls="--",
                    color="tab:purple",
                    label=label,
                )
        ax.set_title(LABELS[d])
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="upper right")
    for ax in axes[1]:
        ax.set_xlabel("flow start time (ms)")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean slowdown (1 ms bins)")
    what = {"linkdown": "leaf0–spine0 down", "gray": "leaf0–spine0 loses 1 %"}[scenario]
    fig.suptitle(f"Slowdown by start time: {what} from 10 to 30 ms (shaded), load 0.6 web search")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_throughput(root: Path, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4), sharey=True)
    for ax, scenario in zip(axes, ["linkdown", "gray"], strict=True):
        ax.axvspan(FAIL_MS, RECOVER_MS, color="tab:red", alpha=0.12, lw=0)
        for d in DESIGNS:
            run = root / f"{d}_{scenario}"
            if (run / "links.parquet").is_file():
                rx = host_rx(run).filter(pl.col("time_ms") <= 60)
                ax.plot(rx["time_ms"] - 0.5, rx["gbps"], lw=1.2, label=LABELS[d])
        ax.set_title(scenario)
        ax.set_xlabel("time (ms)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("received by the hosts (Gbit/s, 1 ms)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--plots", type=Path, help="write the PNGs into this folder")
    args = ap.parse_args()
    if not runs(args.results):
        sys.exit(f"summarize.py: no runs under {args.results}")
    table(args.results)
    if args.plots:
        args.plots.mkdir(parents=True, exist_ok=True)
        for s in ["linkdown", "gray"]:
            plot_slowdown(args.results, s, args.plots / f"failures_{s}.png")
        plot_throughput(args.results, args.plots / "failures_throughput.png")


if __name__ == "__main__":
    main()
