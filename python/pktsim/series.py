"""What happens inside a run, over time: the lines and heat maps the
report draws from ``timeseries.parquet``, ``queues.parquet`` and
``links.parquet``, prepared once and drawn twice (static matplotlib
figures by :mod:`pktsim.plots`, zoomable ones by :mod:`pktsim.interactive`),
so that both show the same numbers.

- :func:`time_plots` reads a run's folder and returns every plot it has
  data for (none for a run without those files);
- :func:`downsample` keeps each line to a few thousand points (the first,
  last, lowest and highest point of each time bucket: spikes survive);
- :func:`variable_label` turns a series name with its unit
  (``cwnd_bytes``) into an axis label (``cwnd (KB)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

#: Points per line at most after :func:`downsample` (for the page and the
#: SVG/PDF files: a line drawn 700 px wide shows no more).
MAX_POINTS = 2000

#: Flows drawn per per-flow plot at most (the lowest flow ids traced).
MAX_FLOWS = 8

#: Ports drawn as lines in the queue and utilisation plots (the busiest).
TOP_PORTS = 8

#: Ports (rows) and time bins (columns) of the utilisation heat map at most.
HEATMAP_PORTS = 64
HEATMAP_BINS = 400

#: Unit suffixes of series names: (suffix, shown unit, divide the value by).
UNITS: tuple[tuple[str, str, float], ...] = (
    ("_bytes", "KB", 1e3),
    ("_us", "µs", 1.0),
    ("_ms", "ms", 1.0),
    ("_ps", "µs", 1e6),
    ("_gbps", "Gbps", 1.0),
    ("_mbps", "Mbps", 1.0),
    ("_segments", "segments", 1.0),
    ("_pkts", "packets", 1.0),
    ("_packets", "packets", 1.0),
)

#: Variables drawn together in one plot: the first is solid, the others
#: dashed in the same flow's colour.
COMPANIONS: dict[str, tuple[str, ...]] = {"cwnd_bytes": ("ssthresh_bytes",)}

#: The TCP family's variables in the order they are plotted; others follow
#: by name.
ORDER: tuple[str, ...] = ("cwnd_bytes", "srtt_us", "rttvar_us", "rto_us", "bytes_in_flight",
                          "bytes_acked", "in_recovery")

#: Readable names of well-known variables (the rest lose their underscores).
NAMES: dict[str, str] = {
    "cwnd": "congestion window",
    "srtt": "smoothed RTT",
    "rttvar": "RTT variation",
    "rto": "retransmission timeout",
    "dctcp_alpha": "DCTCP alpha",
}


def variable_label(name: str) -> tuple[str, float]:
    """An axis label for a series name and the divisor into its unit:
    ``cwnd_bytes`` → (``"cwnd (KB)"``, 1000), ``bytes_acked`` → (``"bytes
    acked (KB)"``, 1000), ``srtt_us`` → (``"srtt (µs)"``, 1), ``dctcp_alpha``
    → (``"dctcp alpha"``, 1)."""
    for suffix, unit, div in UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[: -len(suffix)].replace('_', ' ')} ({unit})", div
    if name.startswith("bytes_"):
        return f"{name.replace('_', ' ')} (KB)", 1e3
    return name.replace("_", " "), 1.0


def _title_of(name: str) -> str:
    base = name
    for suffix, _, _ in UNITS:
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            break
    return NAMES.get(base, base.replace("_", " "))


def time_unit(end_ps: int) -> tuple[str, float]:
    """The time axis' unit for a run ``end_ps`` long: ``("µs", 1e6)`` up
    to 2 ms, ``("ms", 1e9)`` up to 20 s, else ``("s", 1e12)``."""
    if end_ps <= 2_000_000_000:
        return "µs", 1e6
    if end_ps <= 20_000_000_000_000:
        return "ms", 1e9
    return "s", 1e12


@dataclass(frozen=True)
class Lines:
    """Lines over time. ``data`` has columns ``t`` (in ``xlabel``'s unit),
    ``line`` (the legend entry), ``group`` (lines of one group share a
    colour), ``dash`` (drawn dashed) and ``value``; ``order`` lists the
    lines in legend order. ``step``: the value holds until the next point
    (a state variable), not a sample to join by straight lines. ``marks``:
    vertical lines at these x values, each labelled (a scheduled change of
    the network; an empty label draws the line alone). ``points``: lines
    drawn as unjoined points (a scatter). ``logy``: a log value axis."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    data: pl.DataFrame
    order: list[str]
    step: bool = False
    note: str = ""
    marks: tuple[tuple[float, str], ...] = ()
    points: frozenset[str] = frozenset()
    logy: bool = False


@dataclass(frozen=True)
class Heatmap:
    """A value over (row, time): ``z[i][j]`` for ``rows[i]`` in the time
    bin from ``edges[j]`` to ``edges[j + 1]``; ``None`` where there is no
    value."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    zlabel: str
    rows: list[str]
    edges: list[float]
    z: list[list[float | None]]
    zmax: float | None = None
    note: str = ""


TimePlot = Lines | Heatmap


def downsample(
    df: pl.DataFrame, max_points: int = MAX_POINTS, *, by: str = "line", t: str = "t",
    value: str = "value",
) -> pl.DataFrame:
    """``df`` with at most about ``max_points`` rows per value of ``by``:
    the line's time span cut into ``max_points / 4`` buckets, of each the
    first, last, lowest and highest point (so a spike or a step is never
    lost, only points between them). Lines that are short enough are kept
    whole. Rows come back sorted by (``by``, ``t``)."""
    import polars as pl

    df = df.sort([by, t]).with_row_index("_i")
    n = df.group_by(by).len()
    long = n.filter(pl.col("len") > max_points)[by]
    if long.len() == 0:
        return df.drop("_i")
    buckets = max(1, max_points // 4)
    lg = df.filter(pl.col(by).is_in(long.implode()))
    lo = pl.col(t).min().over(by)
    span = (pl.col(t).max().over(by) - lo).cast(pl.Float64)
    lg = lg.with_columns(
        ((pl.col(t) - lo).cast(pl.Float64) / pl.when(span > 0).then(span).otherwise(1.0)
         * buckets).floor().clip(0, buckets - 1).alias("_b")
    )
    keep = lg.group_by(by, "_b").agg(
        pl.col("_i").first().alias("a"), pl.col("_i").last().alias("b"),
        pl.col("_i").sort_by(value).first().alias("c"),
        pl.col("_i").sort_by(value).last().alias("d"),
    )
    idx = pl.concat([keep[c] for c in "abcd"]).unique()
    short = df.filter(~pl.col(by).is_in(long.implode()))
    return pl.concat([short, df.filter(pl.col("_i").is_in(idx.implode()))]).sort(
        [by, t]
    ).drop("_i")


@dataclass
class _Ctx:
    unit: str
    div: float
    notes: list[str] = field(default_factory=list)

    @property
    def xlabel(self) -> str:
        return f"simulated time ({self.unit})"


def _lines(
    ctx: _Ctx, name: str, title: str, ylabel: str, data: pl.DataFrame, order: Sequence[str],
    *, step: bool = False, note: str = "",
) -> Lines:
    import polars as pl

    rows = data.height
    data = downsample(data)
    if data.height < rows:
        note = (note + " " if note else "") + (
            f"Downsampled for drawing: {rows:,} points to {data.height:,} (at most about "
            f"{MAX_POINTS:,} per line, each time bucket's first, last, lowest and highest "
            "kept)."
        )
    return Lines(name, title, ctx.xlabel, ylabel,
                 data.select("t", "line", "group", "dash", pl.col("value").cast(pl.Float64)),
                 list(order), step=step, note=note)


def flow_plots(ts: pl.DataFrame, ctx: _Ctx) -> list[Lines]:
    """Per-flow plots of ``timeseries.parquet`` (``time_ps``, ``flow``,
    ``variable``, ``value``, maybe ``host``): cwnd with ssthresh, smoothed
    RTT and the rest of :data:`ORDER`, then one plot per other variable,
    each of the first :data:`MAX_FLOWS` flows, every value held (a step)
    until the next one or the flow's last report."""
    import polars as pl

    if ts.height == 0:
        return []
    flows = sorted(ts["flow"].unique().to_list())
    shown = flows[:MAX_FLOWS]
    cap = ""
    if len(flows) > len(shown):
        cap = (f"Showing {len(shown)} of {len(flows)} traced flows (the lowest ids: "
               f"{', '.join(map(str, shown))}).")
    ts = ts.filter(pl.col("flow").is_in(shown))
    # A state variable holds its last value until the flow's last report
    # (after every change, a flag that never flips is a single row).
    ends = dict(ts.group_by("flow").agg(pl.col("time_ps").max()).iter_rows())
    # A variable read at both ends of a flow is one line per host.
    split = "host" in ts.columns and ts.group_by("flow", "variable").agg(
        pl.col("host").n_unique().alias("n")).filter(pl.col("n") > 1).height > 0
    present = [str(v) for v in ts["variable"].unique().to_list()]
    first = [v for v in ORDER if v in present]
    companions = {c for v in first for c in COMPANIONS.get(v, ())}
    rest = sorted(v for v in present if v not in first and v not in companions)
    out: list[Lines] = []
    for var in [*first, *rest]:
        ylabel, div = variable_label(var)
        parts = []
        order: list[str] = []
        note = cap
        extra = [c for c in COMPANIONS.get(var, ()) if c in present]
        these = ts.filter(pl.col("variable").cast(pl.String).is_in([var, *extra]))
        main = these.filter(pl.col("variable").cast(pl.String) == var)
        cap_value = None
        if extra and main.height:
            # ssthresh starts "infinite" (a huge number): drawn, it would
            # flatten the window to the axis. Keep what the window can reach.
            cap_value = 2.0 * float(main["value"].max())  # type: ignore[arg-type]
        for f in shown:
            for v in [var, *extra]:
                sub = these.filter((pl.col("flow") == f)
                                   & (pl.col("variable").cast(pl.String) == v))
                if v != var and cap_value is not None:
                    big = sub.filter(pl.col("value") > cap_value).height
                    sub = sub.filter(pl.col("value") <= cap_value)
                    if big and "not drawn" not in note:
                        note = (note + " " if note else "") + (
                            f"{_title_of(v)} values above twice the largest "
                            f"{_title_of(var)} (its initial 'infinite' value) are not drawn.")
                hosts = sorted(sub["host"].unique().to_list()) if split else [None]
                for h in hosts:
                    one = sub if h is None else sub.filter(pl.col("host") == h)
                    if one.height == 0:
                        continue
                    line = f"flow {f}" if v == var else f"flow {f} {v.split('_')[0]}"
                    if h is not None:
                        line += f" at host {h}"
                    order.append(line)
                    parts.append(_held(one, ends[f], ctx.div, div, line, f"flow {f}", v != var))
        if not parts:
            continue
        drawn = sorted({v for v in extra if any(o.endswith(" " + v.split("_")[0])
                                                for o in order)})
        title = _title_of(var)
        if drawn:
            title += " and " + ", ".join(_title_of(e) for e in drawn) + " (dashed)"
        out.append(_lines(ctx, f"ts_{var}", f"{title} per flow", ylabel, pl.concat(parts),
                          order, step=True, note=note))
    return out


def _held(sub: pl.DataFrame, end_ps: int, tdiv: float, vdiv: float, line: str, group: str,
          dash: bool) -> pl.DataFrame:
    # One flow's variable as a line, its last value carried to end_ps.
    import polars as pl

    sub = sub.sort("time_ps").select("time_ps", pl.col("value").cast(pl.Float64))
    if int(sub["time_ps"][-1]) < end_ps:
        sub = pl.concat([sub, pl.DataFrame(
            {"time_ps": [end_ps], "value": [sub["value"][-1]]},
            schema={"time_ps": sub.schema["time_ps"], "value": pl.Float64})])
    return sub.select(
        (pl.col("time_ps").cast(pl.Float64) / tdiv).alias("t"), pl.lit(line).alias("line"),
        pl.lit(group).alias("group"), pl.lit(dash).alias("dash"),
        (pl.col("value") / vdiv).alias("value"),
    )


def _port_label(node: int, port: int, peer: int | None) -> str:
    to = "?" if peer is None else str(peer)
    return f"node {node}→{to} (port {port})"


def queue_plot(queues: pl.DataFrame, ctx: _Ctx, peers: dict[int, int] | None = None) -> Lines:
    """Queued KB over time: the sum over all sampled ports, the fullest port
    at each sample, and the :data:`TOP_PORTS` ports with the most queued on
    average (``peers``: a port's far end, from ``links.parquet``)."""
    import polars as pl

    peers = peers or {}
    agg = queues.group_by("time_ps").agg(
        pl.col("bytes").sum().alias("total"), pl.col("bytes").max().alias("max")
    ).sort("time_ps")
    t = (pl.col("time_ps").cast(pl.Float64) / ctx.div).alias("t")
    parts = [
        agg.select(t, pl.lit("all sampled ports").alias("line"), pl.lit("all").alias("group"),
                   pl.lit(False).alias("dash"), (pl.col("total") / 1e3).alias("value")),
        agg.select(t, pl.lit("fullest port").alias("line"), pl.lit("fullest").alias("group"),
                   pl.lit(True).alias("dash"), (pl.col("max") / 1e3).alias("value")),
    ]
    order = ["all sampled ports", "fullest port"]
    busy = (queues.group_by("node", "port").agg(pl.col("bytes").mean().alias("m"))
            .filter(pl.col("m") > 0).sort(["m", "node", "port"], descending=[True, False, False])
            .head(TOP_PORTS))
    for r in busy.iter_rows(named=True):
        label = _port_label(r["node"], r["port"], peers.get(r["port"]))
        order.append(label)
        sub = queues.filter((pl.col("node") == r["node"]) & (pl.col("port") == r["port"]))
        parts.append(sub.select(t, pl.lit(label).alias("line"), pl.lit(label).alias("group"),
                                pl.lit(False).alias("dash"),
                                (pl.col("bytes").cast(pl.Float64) / 1e3).alias("value")))
    n_ports = queues.select("node", "port").unique().height
    note = (f"{n_ports} ports sampled; the lines below the total are the "
            f"{busy.height} with the most bytes queued on average.")
    return _lines(ctx, "queue_occupancy", "queue occupancy over time", "queued KB",
                  pl.concat(parts), order, note=note)


def _busiest(links: pl.DataFrame, n: int) -> pl.DataFrame:
    import polars as pl

    return (links.group_by("node", "port", "peer")
            .agg(pl.col("busy_ps").sum().alias("busy"), pl.col("interval_ps").sum().alias("all"))
            .with_columns((pl.col("busy") / pl.col("all")).alias("u"))
            .sort(["u", "node", "port"], descending=[True, False, False]).head(n))


def link_plots(links: pl.DataFrame, ctx: _Ctx) -> list[TimePlot]:
    """From ``links.parquet``: the :data:`TOP_PORTS` busiest ports'
    utilisation per interval, a heat map of every port's (the
    :data:`HEATMAP_PORTS` busiest when there are more), and drops and ECN
    marks per interval summed over ports when there were any."""
    import polars as pl

    if links.height == 0:
        return []
    out: list[TimePlot] = []
    n_ports = links.select("node", "port").unique().height
    top = _busiest(links, TOP_PORTS)
    parts, order = [], []
    t = (pl.col("time_ps").cast(pl.Float64) / ctx.div).alias("t")
    for r in top.iter_rows(named=True):
        label = _port_label(r["node"], r["port"], r["peer"])
        order.append(label)
        sub = links.filter((pl.col("node") == r["node"]) & (pl.col("port") == r["port"]))
        parts.append(sub.select(t, pl.lit(label).alias("line"), pl.lit(label).alias("group"),
                                pl.lit(False).alias("dash"),
                                (pl.col("utilisation").cast(pl.Float64) * 100).alias("value")))
    interval_us = float(links["interval_ps"].max()) / 1e6  # type: ignore[arg-type]
    out.append(_lines(
        ctx, "link_utilisation", "link utilisation over time, busiest ports",
        "utilisation (%)", pl.concat(parts), order, step=True,
        note=(f"The {top.height} of {n_ports} ports busiest over the whole run; each point is "
              f"one {interval_us:g} µs interval, plotted at its end."),
    ))
    out.append(_heatmap(links, ctx, n_ports))
    drops = [c for c in links.columns if c.startswith("drops_")]
    sums = links.group_by("time_ps").agg(
        [pl.col(c).sum() for c in [*drops, "ecn_marked", "deflected_in"]]
    ).sort("time_ps")
    parts, order = [], []
    for c in [*drops, "ecn_marked", "deflected_in"]:
        if sums[c].sum() == 0:
            continue
        label = {"ecn_marked": "ECN marks", "deflected_in": "deflections"}.get(
            c, c.replace("drops_", "drops: ").replace("_", " "))
        order.append(label)
        parts.append(sums.select(t, pl.lit(label).alias("line"), pl.lit(label).alias("group"),
                                 pl.lit(False).alias("dash"),
                                 pl.col(c).cast(pl.Float64).alias("value")))
    if parts:
        what = [w for w, there in (
            ("drops", any(o.startswith("drops") for o in order)),
            ("ECN marks", "ECN marks" in order), ("deflections", "deflections" in order),
        ) if there]
        title = (", ".join(what[:-1]) + " and " + what[-1]) if len(what) > 1 else what[0]
        out.append(_lines(
            ctx, "link_events", f"{title} over time",
            "packets per interval (all ports)", pl.concat(parts), order, step=True,
            note=f"Summed over all {n_ports} ports, per {interval_us:g} µs interval."))
    return out


def _heatmap(links: pl.DataFrame, ctx: _Ctx, n_ports: int) -> Heatmap:
    import polars as pl

    rows = _busiest(links, HEATMAP_PORTS).sort("node", "port")
    times = links["time_ps"].unique().sort()
    step = max(1, -(-times.len() // HEATMAP_BINS))
    # Neighbouring intervals merged into one bin: busy time over bin time.
    bin_of = {tp: i // step for i, tp in enumerate(times.to_list())}
    ends: dict[int, int] = {}
    for tp, b in bin_of.items():
        ends[b] = max(ends.get(b, 0), tp)
    sub = links.join(rows.select("node", "port"), on=["node", "port"]).with_columns(
        pl.col("time_ps").replace_strict(bin_of, return_dtype=pl.Int64).alias("_bin")
    )
    cells = sub.group_by("node", "port", "_bin").agg(
        (pl.col("busy_ps").sum() / pl.col("interval_ps").sum() * 100).alias("u")
    )
    at = {(r[0], r[1], r[2]): r[3] for r in cells.iter_rows()}
    n_bins = len(ends)
    z = [[at.get((r["node"], r["port"], b)) for b in range(n_bins)]
         for r in rows.iter_rows(named=True)]
    labels = [_port_label(r["node"], r["port"], r["peer"]) for r in rows.iter_rows(named=True)]
    note = "Every port" if rows.height == n_ports else (
        f"The {rows.height} busiest of {n_ports} ports")
    note += ", by node and port; colour: utilisation"
    note += f" over {step} merged intervals." if step > 1 else " per interval."
    first = links.filter(pl.col("time_ps") == times[0])
    start = int(times[0]) - int(first["interval_ps"].max())  # type: ignore[arg-type]
    edges = [max(0, start) / ctx.div, *(ends[b] / ctx.div for b in range(n_bins))]
    return Heatmap("link_utilisation_heatmap", "link utilisation, port × time", ctx.xlabel,
                   "port", "utilisation (%)", labels, edges, z, zmax=100.0, note=note)


def time_plots(run_dir: str | Path) -> list[TimePlot]:
    """Every time plot a run's folder has data for: per-flow series
    (``timeseries.parquet``), queue occupancy (``queues.parquet``), link
    utilisation, its heat map and drops (``links.parquet``); empty when
    the run wrote none of these."""
    import polars as pl

    d = Path(run_dir)
    tables = {}
    for name in ("timeseries", "queues", "links"):
        p = d / f"{name}.parquet"
        if p.is_file():
            tables[name] = pl.read_parquet(p)
    ends = [int(t["time_ps"].max() or 0) for t in tables.values() if t.height]
    if not ends:
        return []
    unit, div = time_unit(max(ends))
    ctx = _Ctx(unit, div)
    out: list[TimePlot] = []
    if "timeseries" in tables:
        out += flow_plots(tables["timeseries"], ctx)
    if "queues" in tables and tables["queues"].height:
        peers: dict[int, int] = {}
        if "links" in tables:
            peers = {r[0]: r[1] for r in tables["links"].select("port", "peer").unique()
                     .iter_rows() if r[1] is not None}
        out.append(queue_plot(tables["queues"], ctx, peers))
    if "links" in tables:
        out += link_plots(tables["links"], ctx)
    return out
