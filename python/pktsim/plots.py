"""Standard figures, made from the result tables (never from private state).

Every function takes polars DataFrames as :func:`pktsim.load_sweep`,
:func:`pktsim.load_summaries` or :attr:`pktsim.RunResult.flows` give them,
and returns a matplotlib Figure (Agg backend: no display needed).

- :func:`slowdown_by_size`: mean (or p99) slowdown per flow-size bucket,
  one bar per protocol;
- :func:`fct_cdf`: CDF of flow completion times, one line per protocol;
- :func:`metric_vs_load`: a summary metric against load, one line per
  protocol (mean over seeds, error bars from the lowest to the highest seed);
- :func:`queue_occupancy`: queued bytes over time (sum over ports, and the
  fullest port), one panel per run;
- :func:`time_plot`: one of a run's time plots prepared by
  :func:`pktsim.series.time_plots` (per-flow cwnd and RTT, queues and link
  utilisation over time, a port × time heat map) or of the "Failures"
  section (:func:`pktsim.failures.failure_plots`: dotted lines at the
  network's scheduled changes), the full page wide.

Axes are labelled in words (:func:`label_of`), log axes in plain numbers
(:func:`log_axis`), and figures are sized for a 1400 px report page.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core

if TYPE_CHECKING:
    import polars as pl
    from matplotlib.figure import Figure

#: Upper edges of the default size buckets, bytes: the Rust core's, so
#: that plots and ``summary.json`` bucket flows alike.
DEFAULT_BUCKETS: tuple[int, ...] = tuple(_core.default_size_buckets())

#: The statistics :func:`bucket_table` computes, in ``_core.stats`` order.
STATS: tuple[str, ...] = ("count", "mean", "p50", "p99", "p999", "max")

#: The formats :func:`save` writes each figure in.
FORMATS: tuple[str, ...] = ("png", "svg", "pdf")


#: Figure size in inches at 100 dpi: two plots side by side fill a
#: 1400 px report page; :data:`WIDE` is the page's full width.
SIZE: tuple[float, float] = (6.8, 4.4)
WIDE: float = 13.7

#: Readable names of the flattened summary keys that plots show.
LABELS: dict[str, str] = {
    "slowdown.mean": "mean slowdown (FCT / ideal FCT)",
    "slowdown.p50": "median slowdown (FCT / ideal FCT)",
    "slowdown.p99": "99th-percentile slowdown",
    "slowdown.p999": "99.9th-percentile slowdown",
    "fct_us.mean": "mean FCT (µs)",
    "fct_us.p99": "99th-percentile FCT (µs)",
    "short_flows.slowdown.mean": "mean slowdown of short flows",
    "long_flows.slowdown.mean": "mean slowdown of long flows",
    "queries.qct_us.mean": "mean QCT (µs)",
    "queries.qct_us.p99": "99th-percentile QCT (µs)",
    "throughput.goodput_gbps": "goodput (Gbit/s)",
    "drops.data.buffer_full": "data packets dropped at full buffers",
    "drops_total": "packets dropped",
    "normalized_fct": "normalised FCT",
    "load": "offered load",
}


def label_of(key: str) -> str:
    """A readable axis label for a column or summary key (``slowdown.p99``
    becomes ``99th-percentile slowdown``); unknown keys lose their dots."""
    return LABELS.get(key, key.replace("_", " ").replace(".", " "))


def claim_label(metric: str, ratio: bool) -> str:
    """The label of a published claim's metric: a ratio of two configs has
    no unit, so it drops the label's and says it is a ratio."""
    label = label_of(metric)
    if not ratio:
        return label
    if label.endswith(")") and " (" in label:
        label = label[: label.rindex(" (")]
    return f"{label}, ratio"


def _figure(width: float = SIZE[0], height: float = SIZE[1]) -> tuple[Figure, Any]:
    # The object API with no pyplot state: safe in threads and workers.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig, fig.add_subplot(1, 1, 1)


def plain_number(v: float, _pos: Any = None) -> str:
    """A tick label without e-notation: 0.5, 2, 150, 1,000, 20,000."""
    if v == 0 or v != v:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def log_axis(ax: Any, which: str = "y") -> None:
    """A log axis labelled in plain numbers, with enough labelled ticks to
    read values off: 1-2-5 per decade, and finer steps when the data span
    less than a factor of 20 (where 1/10/100 labels leave nothing to read)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    lo, hi = ax.get_ylim() if which == "y" else ax.get_xlim()
    span = hi / lo if lo > 0 else float("inf")
    if span < 4:
        subs: tuple[float, ...] = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
    elif span < 20:
        subs = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    else:
        subs = (1.0, 2.0, 5.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=30))
    axis.set_major_formatter(FuncFormatter(plain_number))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(1, 10)), numticks=30))
    axis.set_minor_formatter(NullFormatter())


def _legend_outside(ax: Any, title: str | None) -> None:
    # Right of the axes, never over the data; none for a plot with no
    # lines (a group where no flow finished).
    if not ax.get_legend_handles_labels()[0]:
        return
    ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
              borderaxespad=0.0)


def bucket_labels(buckets: Sequence[int] = DEFAULT_BUCKETS) -> list[str]:
    """Labels of the buckets, as in ``summary.json`` (``0B-100KB``, ...),
    made by the core."""
    return [label for _, _, label in _core.size_buckets([int(b) for b in buckets])]


def with_buckets(flows: pl.DataFrame, buckets: Sequence[int] = DEFAULT_BUCKETS) -> pl.DataFrame:
    """``flows`` with a ``size_bucket`` column: each flow's bucket as the
    core assigns it for ``summary.json`` (sizes in (lo, hi])."""
    import polars as pl

    labels = bucket_labels(buckets)
    idx = _core.size_bucket_index(
        [int(x) for x in flows["size_bytes"].to_list()], [int(b) for b in buckets]
    )
    return flows.with_columns(
        pl.Series("size_bucket", [labels[i] for i in idx], dtype=pl.String)
    )


def bucket_table(
    flows: pl.DataFrame, by: str | None = "protocol", buckets: Sequence[int] = DEFAULT_BUCKETS
) -> pl.DataFrame:
    """Slowdown statistics per (``by``, size bucket): ``flows`` (all flows
    of the bucket), ``finished``, then ``mean``, ``p50``, ``p99``, ``p999``
    and ``max`` of the finished flows' slowdown, computed by the core as
    ``summary.json``'s (nearest rank; null where no flow finished). Every
    bucket is a row, empty ones included, in bucket order."""
    import polars as pl

    keys = [by] if by else []
    df = with_buckets(flows, buckets)
    labels = bucket_labels(buckets)
    groups = sorted({str(g) for g in df[by].to_list()}) if by else [None]
    rows = []
    for g in groups:
        sub = df if g is None else df.filter(pl.col(by).cast(pl.String) == g)
        for lab in labels:
            b = sub.filter(pl.col("size_bucket") == lab)
            vals = [float(v) for v in b["slowdown"].to_list() if v is not None]
            st = dict(zip(STATS, _core.stats(vals), strict=True))
            row: dict[str, Any] = {by: g} if by else {}
            row.update(size_bucket=lab, flows=b.height, finished=st.pop("count"), **st)
            rows.append(row)
    schema = {k: pl.String for k in keys} | {
        "size_bucket": pl.String, "flows": pl.Int64, "finished": pl.Int64,
        **{k: pl.Float64 for k in STATS[1:]},
    }
    return pl.DataFrame(rows, schema=schema)


def _gap(row: dict[str, Any] | None, a: str, b: str) -> float:
    # An error bar's length, row[a] - row[b]; none where a value is missing.
    if row is None or row[a] is None or row[b] is None:
        return 0.0
    return max(0.0, row[a] - row[b])


def slowdown_by_size(
    flows: pl.DataFrame,
    by: str = "protocol",
    *,
    stat: str = "mean",
    buckets: Sequence[int] = DEFAULT_BUCKETS,
    title: str | None = None,
) -> Figure:
    """Slowdown (``stat``: ``mean``, ``p50``, ``p99``, ``p999``) per size
    bucket, grouped bars, one colour per value of ``by``, each labelled with
    its finished/all flow count; the statistic is :func:`bucket_table`'s
    (the core's, as in ``summary.json``). Unfinished flows are left out
    (their slowdown is unknown); a bucket where none finished has no bar."""
    import polars as pl

    if stat not in STATS[1:]:
        raise ValueError(f"stat must be one of {STATS[1:]}, got {stat!r}")
    seeds = "seed" in flows.columns and flows["seed"].n_unique() > 1
    if seeds:
        # The statistic per seed, then its mean and range over the seeds.
        per_seed = pl.concat(
            [
                bucket_table(flows.filter(pl.col("seed") == s), by, buckets).with_columns(
                    pl.lit(s).alias("seed")
                )
                for s in flows["seed"].unique().sort().to_list()
            ]
        )
        table = per_seed.group_by([by, "size_bucket"], maintain_order=True).agg(
            pl.col(stat).mean().alias("v"), pl.col(stat).min().alias("lo"),
            pl.col(stat).max().alias("hi"), pl.col("finished").sum(), pl.col("flows").sum(),
        )
    else:
        table = bucket_table(flows, by, buckets).rename({stat: "v"})
    # Buckets with a flow in them, finished or not: an empty bar with its
    # count says "none finished" where a missing bar says nothing.
    used = set(table.filter(pl.col("flows") > 0)["size_bucket"].to_list())
    labels = [b for b in bucket_labels(buckets) if b in used]
    groups = sorted(str(g) for g in table[by].unique())
    fig, ax = _figure()
    width = 0.8 / max(1, len(groups))
    for i, g in enumerate(groups):
        sub = table.filter(pl.col(by).cast(pl.String) == g)
        rows = {r["size_bucket"]: r for r in sub.iter_rows(named=True)}
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(labels))]
        vals = [
            rows[b]["v"] if b in rows and rows[b]["v"] is not None else float("nan")
            for b in labels
        ]
        err = None
        if seeds:
            err = [
                [_gap(rows.get(b), "v", "lo") for b in labels],
                [_gap(rows.get(b), "hi", "v") for b in labels],
            ]
        bars = ax.bar(xs, vals, width, label=g, yerr=err, capsize=3 if seeds else 0)
        # How many flows each bar stands on: a p99 of 12 flows is not one
        # of 12,000.
        counts = [
            f"{rows[b]['finished']}/{rows[b]['flows']}" if b in rows else "0" for b in labels
        ]
        ax.bar_label(bars, counts, fontsize="x-small", padding=2)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("flow size")
    name = {"mean": "mean", "p50": "median", "p99": "99th-percentile",
            "p999": "99.9th-percentile"}[stat]
    ax.set_ylabel(f"{name} slowdown" + (" (bars: range over seeds)" if seeds else "")
                  + "\n(labels: finished/all flows)")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    vals_all = [v for v in table["v"].to_list() if v]
    if seeds:
        vals_all += [v for v in table["hi"].to_list() if v]
    if not vals_all:
        # No finished flow in any bucket: say so instead of drawing nothing.
        ax.text(0.5, 0.5, "no flow finished", transform=ax.transAxes, ha="center",
                va="center", color="grey")
    # Room above the tallest bar (and its count) so that it never meets the frame.
    ax.set_ylim(min([1.0, *vals_all]) * 0.9, max([1.0, *vals_all]) * 1.6)
    log_axis(ax, "y")
    ax.grid(axis="y", which="major", alpha=0.3)
    _legend_outside(ax, by)
    ax.set_title(title or f"{name} slowdown by flow size")
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
    log_axis(ax, "x")
    ax.set_xlabel("flow completion time (µs)")
    ax.set_ylabel("fraction of flows finished within")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.xaxis.get_major_locator().set_params(subs=(1.0, 3.0))
    for t in ax.get_xticklabels():
        t.set_rotation(30)
    _legend_outside(ax, by)
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
    value of ``by``: the mean over seeds, with error bars from the lowest
    to the highest seed when there are several."""
    import polars as pl

    df = summaries.filter(pl.col(metric).is_not_null() & pl.col(x).is_not_null())
    fig, ax = _figure()
    several = "seed" in df.columns and df["seed"].n_unique() > 1
    for g in sorted(str(v) for v in df[by].unique()):
        sub = df.filter(pl.col(by).cast(pl.String) == g)
        st = sub.group_by(x).agg(
            pl.col(metric).mean().alias("m"), pl.col(metric).min().alias("lo"),
            pl.col(metric).max().alias("hi"),
        ).sort(x)
        m = st["m"].to_list()
        err = None
        if several:
            err = [
                [a - b for a, b in zip(m, st["lo"].to_list(), strict=True)],
                [b - a for a, b in zip(m, st["hi"].to_list(), strict=True)],
            ]
        ax.errorbar(st[x].to_list(), m, yerr=err, marker="o", capsize=3, label=g)
    ax.set_xlabel(label_of(x))
    n_seeds = df["seed"].n_unique() if "seed" in df.columns else 1
    ax.set_ylabel(label_of(metric) + (f"\n(mean, bars: range over {n_seeds} seeds)"
                                      if several else ""))
    ax.grid(alpha=0.3)
    _legend_outside(ax, by)
    ax.set_title(title or f"{label_of(metric)} vs {label_of(x)}")
    return fig


def queue_occupancy(
    queues: pl.DataFrame, by: str | None = None, *, title: str | None = None
) -> Figure:
    """Queued bytes over time: the sum over all sampled ports (solid) and
    the fullest port (dashed). With ``by`` (e.g. a run label), one small
    panel per value, every value shown, on shared axes; None for one run."""
    import math

    import polars as pl
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    keys = [by] if by else []
    agg = (
        queues.group_by([*keys, "time_ps"])
        .agg(pl.col("bytes").sum().alias("total"), pl.col("bytes").max().alias("max"))
        .sort([*keys, "time_ps"])
    )
    groups: list[str | None] = [None]
    if by:
        groups = sorted(str(x) for x in agg[by].unique())
    cols = 1 if len(groups) == 1 else min(3, len(groups))
    rows = math.ceil(len(groups) / cols)
    width = SIZE[0] if cols == 1 else WIDE
    fig = Figure(figsize=(width, 1.0 + 2.6 * rows) if rows > 1 or cols > 1 else SIZE,
                 dpi=100, layout="constrained")
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    for ax, g in zip(axes, groups, strict=False):
        sub = agg if by is None else agg.filter(pl.col(by).cast(pl.String) == g)
        t_ms = (sub["time_ps"].cast(pl.Float64) / 1e9).to_list()
        ax.plot(t_ms, (sub["total"] / 1e3).to_list(), lw=1, color="C0")
        ax.plot(t_ms, (sub["max"] / 1e3).to_list(), lw=0.8, ls="--", color="C1")
        ax.grid(alpha=0.3)
        if g is not None:
            ax.set_title(g, fontsize="small")
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    # A panel over an empty slot is the bottom of its column: label its time axis.
    for ax in axes[max(0, len(groups) - cols):len(groups)]:
        ax.xaxis.set_tick_params(labelbottom=True)
    fig.supxlabel("simulated time (ms)")
    fig.supylabel("queued KB")
    handles = [Line2D([], [], color="C0", lw=1), Line2D([], [], color="C1", lw=0.8, ls="--")]
    fig.legend(handles, ["all sampled ports", "fullest port"], loc="outside upper right",
               ncols=2, fontsize="small")
    fig.suptitle(title or "queue occupancy")
    return fig


def _group_colours(order: Sequence[str], groups: dict[str, str]) -> dict[str, str]:
    # One colour per group, in legend order: a flow's cwnd and ssthresh match.
    colours: dict[str, str] = {}
    for line in order:
        g = groups.get(line, line)
        colours.setdefault(g, f"C{len(colours) % 10}")
    return colours


def time_plot(p: Any) -> Figure:
    """A :class:`pktsim.series.Lines` (one line per entry, dashed where the
    data says, drawn as steps for state variables) or a
    :class:`pktsim.series.Heatmap` (rows × time, colour bar) as a
    full-width figure."""
    import polars as pl

    from .series import Heatmap

    if isinstance(p, Heatmap):
        return _heatmap_figure(p)
    fig, ax = _figure(WIDE, SIZE[1])
    groups = {r[0]: r[1] for r in p.data.select("line", "group").unique().iter_rows()}
    colours = _group_colours(p.order, groups)
    for line in p.order:
        sub = p.data.filter(pl.col("line") == line)
        if sub.height == 0:
            continue
        if line in p.points:
            ax.scatter(sub["t"].to_list(), sub["value"].to_list(), label=line, s=4,
                       alpha=0.35, linewidths=0, color=colours[groups[line]])
            continue
        dash = bool(sub["dash"][0])
        ax.plot(sub["t"].to_list(), sub["value"].to_list(), label=line,
                color=colours[groups[line]], lw=0.9 if dash else 1.1,
                ls="--" if dash else "-", drawstyle="steps-post" if p.step else "default")
    ax.set_xlabel(p.xlabel)
    ax.set_ylabel(p.ylabel)
    if p.logy:
        log_axis(ax)
    else:
        ax.set_ylim(bottom=0)
    _marks(ax, p.marks)
    ax.grid(alpha=0.3)
    _legend_outside(ax, None)
    ax.set_title(p.title)
    return fig


def _marks(ax: Any, marks: Sequence[tuple[float, str]]) -> None:
    # A dotted line at each change, its label written up along it.
    for x, label in marks:
        ax.axvline(x, color="0.25", ls=":", lw=1.0, zorder=3)
        if label:
            ax.text(x, 0.98, label, transform=ax.get_xaxis_transform(), rotation=90,
                    va="top", ha="right", fontsize="x-small", color="0.2", zorder=4,
                    bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 1})


def _heatmap_figure(p: Any) -> Figure:
    import numpy as np

    height = min(12.0, 2.0 + 0.16 * len(p.rows))
    fig, ax = _figure(WIDE, height)
    z = np.array([[np.nan if v is None else v for v in row] for row in p.z], dtype=float)
    # Rasterized cells: thousands of vector quads made a 3 MB SVG; the
    # axes, labels and colour bar stay vector.
    mesh = ax.pcolormesh(p.edges, np.arange(len(p.rows) + 1), z, cmap="viridis",
                         vmin=0, vmax=p.zmax, shading="flat",
                         rasterized=True)
    ax.set_yticks(np.arange(len(p.rows)) + 0.5, p.rows,
                  fontsize="x-small" if len(p.rows) > 24 else "small")
    ax.invert_yaxis()
    ax.set_xlabel(p.xlabel)
    ax.set_ylabel(p.ylabel)
    fig.colorbar(mesh, ax=ax, label=p.zlabel)
    ax.set_title(p.title)
    return fig


def save(
    fig: Figure, path: str | os.PathLike[str], formats: Sequence[str] = ("png",)
) -> str:
    """Write ``fig`` at ``path`` in each of ``formats`` (the path's suffix
    replaced by each format's: ``x.png``, ``x.svg``, ``x.pdf``); returns the
    first file's path."""
    written = []
    for fmt in formats:
        p = Path(path).with_suffix(f".{fmt}")
        fig.savefig(p, format=fmt)
        written.append(str(p))
    return written[0]
