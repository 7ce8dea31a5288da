#!/usr/bin/env python3
"""The pHost paper's per-flow metrics of run_all.sh results (needs polars).

Usage: figures.py RESULTS/runs [RUN_NAME_GLOB]

For each run folder (<workload>_<protocol>_load<L>, holding flows.parquet)
prints one line per run with what Figs. 3, 4 and 5 of Gao et al. (CoNEXT
2015) report, using the paper's definitions (spec phost.md §3.3):

- mean slowdown over all flows (Fig. 3, 6);
- short / long mean slowdown with the Fig. 4 split: long = flows over
  10 MB for data mining and web search, over 100 KB for IMC10; every other
  flow is short;
- p99 slowdown of the short flows with that split (`short_p99`), and of
  the flows of at most 100 KB (`p99_100k`), the cut under which the 2015
  simulator's own output on our flows gives Fig. 5d's value (see the
  README's Fig. 5d section), also under the 2015 metric (`p99_100k_2015`);
- NFCT = mean FCT / mean ideal FCT (Fig. 5a);
- mean FCT of flows of 10 MiB or more (the long-flow gap of issue 20);
- incast runs (`incast_*`, Fig. 9c/d): mean FCT and mean request
  completion time in ms; a request is the flows that start together
  towards one receiver, complete when its last flow is;
- `mean_2015`: the mean slowdown as the 2015 simulator's metric would give
  it (spec §3.3, §4 item 11), estimated from our flows: the FCT ends when
  the sender has the final ACK (our FCT plus the ACK's trip back: h hops of
  0.2 us and 40 B at 10 Gbit/s), every packet is full-size (plus the last
  packet's padding at 10 Gbit/s), and the denominator is the 2015
  cut-through oracle `2·h·0.2us + (⌊S/1460⌋·1500 + 120)·8/C`, plus
  `2·80·8/(4C)` for inter-rack flows (h = 4; 16 hosts per rack). An
  estimate for the paper's 10/40 Gbit/s leaf-spine only.

Flows that did not finish are counted and left out of the means.
"""

import sys
from pathlib import Path

import polars as pl

LONG_BYTES = {"datamining": 10_000_000, "websearch": 10_000_000, "imc10": 100_000}
SMALL_BYTES = 100_000
MIB10 = 10 * 1024 * 1024
RATE = 10e9
PROP = 0.2e-6


def slowdown_2015() -> pl.Expr:
    """Each flow's slowdown under the 2015 simulator's FCT and oracle (see
    above)."""
    hops = pl.when(pl.col("src") // 16 == pl.col("dst") // 16).then(2).otherwise(4)
    whole = pl.col("size_bytes") // 1460
    packets = (pl.col("size_bytes") + 1459) // 1460
    oracle = (
        2 * hops * PROP
        + (whole * 1500 + 120) * 8 / RATE
        + pl.when(hops == 4).then(2 * 80 * 8 / (4 * RATE)).otherwise(0.0)
    )
    fct = (
        pl.col("fct_ps") / 1e12
        + hops * PROP
        + 40 * 8 / RATE
        + (packets * 1460 - pl.col("size_bytes")) * 8 / RATE
    )
    return fct / oracle


def incast_rct_ms(done: pl.DataFrame) -> float:
    """Mean request completion time (ms) of an incast run: the flows of a
    request start at the same instant towards the same receiver."""
    per_request = done.group_by("start_ps", "dst").agg((pl.col("fct_ps").max()).alias("rct_ps"))
    return per_request["rct_ps"].mean() / 1e9


def metrics(flows: pl.DataFrame, workload: str) -> dict:
    """The paper's metrics of one run's flows table."""
    done = flows.filter(pl.col("fct_ps").is_not_null())
    long_cut = LONG_BYTES.get(workload, 10_000_000)
    is_long = pl.col("size_bytes") > long_cut
    short = done.filter(~is_long)
    long = done.filter(is_long)
    small = done.filter(pl.col("size_bytes") <= SMALL_BYTES)
    big = done.filter(pl.col("size_bytes") >= MIB10)
    return {
        "flows": flows.height,
        "unfinished": flows.height - done.height,
        "mean": done["slowdown"].mean(),
        "mean_2015": done.select(slowdown_2015().mean()).item(),
        "short_mean": short["slowdown"].mean(),
        "long_mean": long["slowdown"].mean(),
        "n_long": long.height,
        "short_p99": short["slowdown"].quantile(0.99, "linear"),
        "p99_100k": small["slowdown"].quantile(0.99, "linear"),
        "p99_100k_2015": small.select(slowdown_2015().quantile(0.99, "linear")).item(),
        "nfct": done["fct_ps"].mean() / done["ideal_fct_ps"].mean(),
        "mib10_fct_ms": big["fct_ps"].mean() / 1e9 if big.height else None,
        "n_mib10": big.height,
        "fct_ms": done["fct_ps"].mean() / 1e9,
        "rct_ms": incast_rct_ms(done) if workload == "incast" else None,
    }


def fmt(x) -> str:
    """A number for the table; '—' where missing."""
    if x is None:
        return "—"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.3f}"


def main(runs: Path, pattern: str) -> None:
    cols = [
        "run",
        "flows",
        "unfinished",
        "mean",
        "mean_2015",
        "short_mean",
        "long_mean",
        "n_long",
        "short_p99",
        "p99_100k",
        "p99_100k_2015",
        "nfct",
        "mib10_fct_ms",
        "n_mib10",
        "fct_ms",
        "rct_ms",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for path in sorted(runs.glob(f"{pattern}/flows.parquet")):
        name = path.parent.name
        workload = name.split("_", 1)[0]
        m = metrics(pl.read_parquet(path), workload)
        print("| " + " | ".join([name] + [fmt(m[c]) for c in cols[1:]]) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "*")
