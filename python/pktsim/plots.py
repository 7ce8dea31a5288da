"""Standard figures, made from the result tables (never from private state).

Every function takes polars DataFrames as :func:`pktsim.load_sweep`,
:func:`pktsim.load_summaries` or :attr:`pktsim.RunResult.flows` give them,
and returns a matplotlib Figure (Agg backend: no display needed).

- :func:`slowdown_by_size`: mean (or p99) slowdown per flow-size bucket,
  one bar per protocol;
- :func:`fct_cdf`: CDF of flow completion times, one line per protocol;
- :func:`metric_vs_load`: a summary metric against load, one line per
  protocol (mean over seeds, each seed as a dot);
- :func:`queue_occupancy`: queued bytes over time (sum over ports, and the
  fullest port).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl
    from matplotlib.figure import Figure

#: Upper edges of the default size buckets, bytes (as the run summary's).
DEFAULT_BUCKETS: tuple[int, ...] = (100_000, 1_000_000, 10_000_000)


def _figure(width: float = 6.4, height: float = 4.0) -> tuple[Figure, Any]:
    # The object API with no pyplot state: safe in threads and workers.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig, fig.add_subplot(1, 1, 1)


def _label(b: int) -> str:
    for unit, div in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if b >= div and b % div == 0:
            return f"{b // div}{unit}"
    return f"{b}B"


def bucket_labels(buckets: Sequence[int] = DEFAULT_BUCKETS) -> list[str]:
    """Labels of the buckets, as in ``summary.json`` (``0B-100KB``, ...)."""
    edges = [0, *buckets]
    labels = [f"{_label(a)}-{_label(b)}" for a, b in zip(edges, edges[1:], strict=False)]
    return [*labels, f"{_label(edges[-1])}+"]


def with_buckets(flows: pl.DataFrame, buckets: Sequence[int] = DEFAULT_BUCKETS) -> pl.DataFrame:
    """``flows`` with a ``size_bucket`` column (sizes in (lo, hi])."""
    import polars as pl

    labels = bucket_labels(buckets)
    expr = pl.lit(labels[-1])
    for hi, lab in reversed(list(zip(buckets, labels, strict=False))):
        expr = pl.when(pl.col("size_bytes") <= hi).then(pl.lit(lab)).otherwise(expr)
    return flows.with_columns(expr.alias("size_bucket"))


def slowdown_by_size(
    flows: pl.DataFrame,
    by: str = "protocol",
    *,
    stat: str = "mean",
    buckets: Sequence[int] = DEFAULT_BUCKETS,
    title: str | None = None,
) -> Figure:
    """Slowdown (``stat``: ``mean``, ``p50``, ``p99``) per size bucket,
    grouped bars, one colour per value of ``by``. Unfinished flows are left
    out (their slowdown is null)."""
    import polars as pl

    q = {"mean": None, "p50": 0.5, "p99": 0.99, "p999": 0.999}[stat]
    agg = (
        pl.col("slowdown").mean()
        if q is None
        else pl.col("slowdown").quantile(q, interpolation="higher")
    )
    df = with_buckets(flows.filter(pl.col("slowdown").is_not_null()), buckets)
    table = df.group_by([by, "size_bucket"]).agg(agg.alias("v"), pl.len().alias("n"))
    labels = [b for b in bucket_labels(buckets) if b in set(table["size_bucket"])]
    groups = sorted(str(g) for g in table[by].unique())
    fig, ax = _figure()
    width = 0.8 / max(1, len(groups))
    for i, g in enumerate(groups):
        sub = table.filter(pl.col(by).cast(pl.String) == g)
        vals = dict(zip(sub["size_bucket"], sub["v"], strict=True))
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [vals.get(b, float("nan")) for b in labels], width, label=g)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("flow size")
    ax.set_ylabel(f"{stat} slowdown")
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.legend(title=by)
    ax.set_title(title or f"{stat} slowdown by flow size")
    return fig


def fct_cdf(flows: pl.DataFrame, by: str = "protocol", *, title: str | None = None) -> Figure:
    """CDF of the FCT (microseconds, log scale) of finished flows."""
    import polars as pl

    fig, ax = _figure()
    for g in sorted(str(x) for x in flows[by].unique()):
        v = (
            flows.filter((pl.col(by).cast(pl.String) == g) & pl.col("fct_us").is_not_null())
            .get_column("fct_us")
            .sort()
            .to_list()
        )
        if v:
            n = len(v)
            ax.step(v, [(i + 1) / n for i in range(n)], where="post", label=g)
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (µs)")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(title=by)
    ax.set_title(title or "FCT CDF")
    return fig


def metric_vs_load(
    summaries: pl.DataFrame,
    metric: str = "slowdown.mean",
    *,
    x: str = "load",
    by: str = "protocol",
    title: str | None = None,
) -> Figure:
    """``metric`` (a flattened summary key) against ``x``, one line per
    value of ``by``: the mean over seeds, each seed a dot."""
    import polars as pl

    df = summaries.filter(pl.col(metric).is_not_null() & pl.col(x).is_not_null())
    fig, ax = _figure()
    for g in sorted(str(v) for v in df[by].unique()):
        sub = df.filter(pl.col(by).cast(pl.String) == g)
        mean = sub.group_by(x).agg(pl.col(metric).mean()).sort(x)
        (line,) = ax.plot(mean[x], mean[metric], marker="o", label=g)
        ax.scatter(sub[x], sub[metric], s=10, alpha=0.4, color=line.get_color())
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.legend(title=by)
    ax.set_title(title or f"{metric} vs {x}")
    return fig


def queue_occupancy(
    queues: pl.DataFrame, by: str | None = None, *, title: str | None = None
) -> Figure:
    """Queued bytes over time: the sum over all sampled ports (solid) and
    the fullest port (dashed), one colour per value of ``by`` (e.g.
    ``run_id``; None for one run)."""
    import polars as pl

    keys = [by] if by else []
    agg = (
        queues.group_by([*keys, "time_ps"])
        .agg(pl.col("bytes").sum().alias("total"), pl.col("bytes").max().alias("max"))
        .sort([*keys, "time_ps"])
    )
    fig, ax = _figure()
    groups: list[str | None] = [None]
    if by:
        groups = [str(g) for g in sorted(str(x) for x in agg[by].unique())]
    for g in groups:
        sub = agg if by is None else agg.filter(pl.col(by).cast(pl.String) == g)
        t_ms = (sub["time_ps"].cast(pl.Float64) / 1e9).to_list()
        (line,) = ax.plot(t_ms, (sub["total"] / 1e3).to_list(), lw=1, label=g or "all ports")
        ax.plot(t_ms, (sub["max"] / 1e3).to_list(), lw=0.8, ls="--", color=line.get_color())
    ax.set_xlabel("simulated time (ms)")
    ax.set_ylabel("queued KB (solid: all ports, dashed: fullest port)")
    ax.grid(alpha=0.3)
    if by:
        ax.legend(title=by, fontsize="small")
    ax.set_title(title or "queue occupancy")
    return fig


def save(fig: Figure, path: str | os.PathLike[str]) -> str:
    """Write ``fig`` as a PNG and return the path."""
    fig.savefig(path, format="png")
    return str(path)
