"""Before, during and after a failure: the phases of a run with scheduled
network changes (``[[event]]``) and the plots of the report's "Failures"
section, prepared once and drawn twice (static by :mod:`pktsim.plots`,
zoomable by :mod:`pktsim.interactive`) like :mod:`pktsim.series`' plots.

- :func:`faults` lists a run's changes from ``summary.json`` (``at_us``,
  ``what``);
- :func:`phases_frame` flattens ``summary.json``'s ``phases`` into one row
  per phase (what :attr:`pktsim.RunResult.phases` returns);
- :func:`failure_plots` returns the section's plots: slowdown of each flow
  against its start time with the binned median and p99, goodput by start
  time, and drops by reason over time (from ``links.parquet`` when the run
  wrote it, else per phase), each with a dotted vertical line at every
  change, labelled with what changed.

Time bins never straddle a change: each phase is cut into its own bins,
so a bin's flows all started under one state of the network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core
from .series import MAX_POINTS, Lines, _Ctx, downsample, time_unit

if TYPE_CHECKING:
    import polars as pl

#: Start-time bins over the whole run, about (each phase gets its share,
#: at least one).
BINS = 40

#: Flows drawn as points at most in the slowdown scatter: the slowest
#: quarter of them always, an even sample by start time of the rest. The
#: binned lines use every finished flow.
MAX_SCATTER = 4000

#: Changes labelled on a plot at most (the first ones; later ones get their
#: line without a label, so that labels stay readable).
MAX_LABELS = 12

#: A label's length at most before it is cut with "…".
LABEL_CHARS = 40

#: Statistics of ``summary.json``'s per-phase ``fct_us`` and ``slowdown``.
_STATS = ("count", "mean", "p50", "p99", "p999", "max")

#: The columns of :func:`phases_frame` other than the drops by reason.
_BASE_SCHEMA: dict[str, str] = {
    "phase": "Int64", "start_us": "Float64", "end_us": "Float64", "what": "String",
    "flows": "Int64", "finished": "Int64", "unfinished": "Int64",
    **{f"fct_us_{s}": "Float64" for s in _STATS[1:]},
    **{f"slowdown_{s}": "Float64" for s in _STATS[1:]},
    "goodput_gbps": "Float64", "mean_flow_goodput_gbps": "Float64", "drops_total": "Int64",
}


def faults(summary: Mapping[str, Any]) -> list[tuple[float, str]]:
    """A run's scheduled changes as (µs, what), in time order; empty for a
    run without any."""
    return [(float(f["at_us"]), str(f["what"])) for f in summary.get("faults") or []]


def phases_frame(summary: Mapping[str, Any]) -> pl.DataFrame:
    """``summary.json``'s ``phases`` as one row per phase: ``phase`` (0 is
    before the first change), ``start_us``, ``end_us``, ``what`` (the
    change that opened it; null for phase 0), ``flows`` (that started in
    it), ``finished``, ``unfinished``, ``fct_us_{mean,p50,p99,p999,max}``,
    ``slowdown_{...}`` (of its finished flows), ``goodput_gbps`` (their
    bytes over their summed FCT), ``mean_flow_goodput_gbps``,
    ``drops_total`` and ``drops_<reason>`` (dropped while the phase lasted,
    data and control packets together). No rows for a run without changes."""
    import polars as pl

    rows = []
    for i, p in enumerate(summary.get("phases") or []):
        row: dict[str, Any] = {
            "phase": i, "start_us": p["start_us"], "end_us": p["end_us"], "what": p.get("what"),
            "flows": p["flows"], "finished": p["finished"], "unfinished": p["unfinished"],
        }
        for metric in ("fct_us", "slowdown"):
            for s in _STATS[1:]:
                row[f"{metric}_{s}"] = (p.get(metric) or {}).get(s)
        row["goodput_gbps"] = p.get("goodput_gbps")
        row["mean_flow_goodput_gbps"] = p.get("mean_flow_goodput_gbps")
        row["drops_total"] = p.get("drops_total", 0)
        by_reason: dict[str, int] = {}
        for per_kind in (p.get("drops") or {}).values():
            for reason, n in per_kind.items():
                by_reason[reason] = by_reason.get(reason, 0) + int(n)
        row.update({f"drops_{r}": n for r, n in by_reason.items()})
        rows.append(row)
    schema: dict[str, Any] = {k: getattr(pl, v) for k, v in _BASE_SCHEMA.items()}
    for r in rows:
        for k in r:
            schema.setdefault(k, pl.Int64)
    return pl.DataFrame(rows, schema=schema)


def _short(what: str) -> str:
    return what if len(what) <= LABEL_CHARS else what[: LABEL_CHARS - 1] + "…"


def marks(summary: Mapping[str, Any], div_us: float) -> list[tuple[float, str]]:
    """The vertical lines of the plots: one per distinct change time (in
    the axis' unit, ``div_us`` µs per unit), labelled with what changed
    (several changes at one time joined); labels after the first
    :data:`MAX_LABELS` times are left empty."""
    by_time: dict[float, list[str]] = {}
    for at, what in faults(summary):
        by_time.setdefault(at, []).append(what)
    out = []
    for i, (at, whats) in enumerate(sorted(by_time.items())):
        label = _short("; ".join(whats)) if i < MAX_LABELS else ""
        out.append((at / div_us, label))
    return out


def _bins(phases: pl.DataFrame, end_us: float) -> list[tuple[float, float]]:
    # Each phase cut into equal bins, as many as its share of BINS.
    out = []
    for r in phases.iter_rows(named=True):
        lo, hi = float(r["start_us"]), float(r["end_us"])
        n = max(1, round(BINS * (hi - lo) / end_us)) if end_us > 0 else 1
        out += [(lo + (hi - lo) * k / n, lo + (hi - lo) * (k + 1) / n) for k in range(n)]
    return out


def _bin_of(starts_us: Sequence[float], bins: Sequence[tuple[float, float]]) -> list[int]:
    # A start at a bin's left edge is in that bin; at the run's end, the last.
    import bisect

    lefts = [lo for lo, _ in bins]
    return [max(0, bisect.bisect_right(lefts, s) - 1) for s in starts_us]


def _line(t: Sequence[float], v: Sequence[float | None], line: str, dash: bool = False,
          group: str | None = None) -> pl.DataFrame:
    import polars as pl

    keep = [(a, b) for a, b in zip(t, v, strict=True) if b is not None]
    return pl.DataFrame(
        {"t": [a for a, _ in keep], "line": [line] * len(keep),
         "group": [group or line] * len(keep), "dash": [dash] * len(keep),
         "value": [float(b) for _, b in keep]},
        schema={"t": pl.Float64, "line": pl.String, "group": pl.String, "dash": pl.Boolean,
                "value": pl.Float64},
    )


def _scatter_sample(done: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    # Every flow when few; else the slowest quarter and an even sample.
    import polars as pl

    if done.height <= MAX_SCATTER:
        return done, ""
    worst = done.sort(["slowdown", "flow_id"], descending=[True, False]).head(MAX_SCATTER // 4)
    rest = done.join(worst.select("flow_id"), on="flow_id", how="anti").sort("start_ps")
    step = -(-rest.height // (MAX_SCATTER - worst.height))
    sample = pl.concat([worst, rest.gather_every(step)]).sort("start_ps")
    return sample, (f"Points: {sample.height:,} of {done.height:,} finished flows (the "
                    f"{worst.height:,} slowest and every {step}th of the rest by start time); "
                    "the lines use them all.")


def slowdown_plot(flows: pl.DataFrame, phases: pl.DataFrame, ctx: _Ctx,
                  mk: list[tuple[float, str]]) -> Lines:
    """Each finished flow's slowdown at its start time (points), and the
    nearest-rank median and p99 of the flows started in each bin."""
    import polars as pl

    done = flows.filter(pl.col("slowdown").is_not_null())
    end_us = float(phases["end_us"].max() or 0.0)  # type: ignore[arg-type]
    bins = _bins(phases, end_us)
    idx = _bin_of((done["start_ps"].cast(pl.Float64) / 1e6).to_list(), bins)
    per_bin: dict[int, list[float]] = {}
    for b, s in zip(idx, done["slowdown"].to_list(), strict=True):
        per_bin.setdefault(b, []).append(float(s))
    mid = [(lo + hi) / 2 * 1e6 / ctx.div for lo, hi in bins]
    st = [_core.stats(per_bin.get(i, [])) for i in range(len(bins))]
    sample, note = _scatter_sample(done)
    parts = [
        _line((sample["start_ps"].cast(pl.Float64) / ctx.div).to_list(),
              sample["slowdown"].to_list(), "flows"),
        _line(mid, [s[2] for s in st], "median per bin"),
        _line(mid, [s[3] for s in st], "p99 per bin"),
    ]
    unfinished = flows.height - done.height
    if unfinished:
        note = (note + " " if note else "") + (
            f"{unfinished:,} unfinished flow{'s' * (unfinished != 1)} have no slowdown (see "
            "the table).")
    return Lines("failures_slowdown", "slowdown of flows by start time",
                 f"flow start time ({ctx.unit})", "slowdown (FCT / ideal FCT)",
                 pl.concat(parts), ["flows", "median per bin", "p99 per bin"],
                 note=note, marks=tuple(mk), points=frozenset({"flows"}), logy=True)


def goodput_plot(flows: pl.DataFrame, phases: pl.DataFrame, ctx: _Ctx,
                 mk: list[tuple[float, str]]) -> Lines:
    """Per start-time bin, the finished flows' bytes over their summed FCT
    and the mean of each flow's size over its FCT (Gbit/s), held over the
    bin."""
    import polars as pl

    done = flows.filter(pl.col("fct_ps").is_not_null() & (pl.col("fct_ps") > 0))
    end_us = float(phases["end_us"].max() or 0.0)  # type: ignore[arg-type]
    bins = _bins(phases, end_us)
    idx = _bin_of((done["start_ps"].cast(pl.Float64) / 1e6).to_list(), bins)
    sums: dict[int, list[float]] = {}
    for b, size, fct in zip(idx, done["size_bytes"].to_list(), done["fct_ps"].to_list(),
                            strict=True):
        s = sums.setdefault(b, [0.0, 0.0, 0.0, 0.0])
        s[0] += size
        s[1] += fct
        s[2] += size * 8e3 / fct
        s[3] += 1
    agg = [sums[i][0] * 8e3 / sums[i][1] if i in sums else None for i in range(len(bins))]
    per = [sums[i][2] / sums[i][3] if i in sums else None for i in range(len(bins))]
    # A step held over each bin: one point at its left edge, one at the end.
    t = [lo * 1e6 / ctx.div for lo, _ in bins] + [bins[-1][1] * 1e6 / ctx.div]
    return Lines("failures_goodput", "goodput of flows by start time",
                 f"flow start time ({ctx.unit})", "goodput (Gbps)",
                 pl.concat([_line(t, [*agg, agg[-1]], "Σ bytes / Σ FCT"),
                            _line(t, [*per, per[-1]], "mean per flow", dash=True)]),
                 ["Σ bytes / Σ FCT", "mean per flow"], step=True, marks=tuple(mk),
                 note="Finished flows only, by the bin their start falls in; a bin with "
                      "none has no value.")


def drops_plot(links: pl.DataFrame | None, phases: pl.DataFrame, ctx: _Ctx,
               mk: list[tuple[float, str]]) -> Lines | None:
    """Drops by reason over time: per ``links.parquet`` interval summed
    over ports, else per phase (``summary.json``); None when nothing was
    dropped."""
    import polars as pl

    parts, order = [], []
    if links is not None and links.height:
        reasons = [c for c in links.columns if c.startswith("drops_")]
        sums = links.group_by("time_ps").agg(
            pl.col("interval_ps").max(), *[pl.col(c).sum() for c in reasons]).sort("time_ps")
        # Each interval's count held from its start (steps), so that a drop
        # at a change shows right of the change's line.
        start = ((sums["time_ps"] - sums["interval_ps"]).cast(pl.Float64) / ctx.div).to_list()
        t = [*start, float(sums["time_ps"][-1]) / ctx.div]
        interval_us = float(sums["interval_ps"].max()) / 1e6  # type: ignore[arg-type]
        ylabel = "packets dropped per interval (all ports)"
        note = f"From links.parquet: summed over all ports, per {interval_us:g} µs interval."
        for c in reasons:
            v = sums[c].cast(pl.Float64).to_list()
            if sum(v):
                order.append(c.removeprefix("drops_").replace("_", " "))
                parts.append(_line(t, [*v, v[-1]], order[-1]))
    else:
        df = phases
        t = [*(df["start_us"] * 1e6 / ctx.div).to_list(),
             float(df["end_us"][-1]) * 1e6 / ctx.div]
        ylabel = "packets dropped in the phase"
        note = ("Per phase, from summary.json (the run wrote no links.parquet; "
                "[output.links] gives drops per interval).")
        for c in [c for c in df.columns if c.startswith("drops_") and c != "drops_total"]:
            v = df[c].cast(pl.Float64).to_list()
            if sum(v):
                order.append(c.removeprefix("drops_").replace("_", " "))
                parts.append(_line(t, [*v, v[-1]], order[-1]))
    if not parts:
        return None
    data = pl.concat(parts)
    if data.height > MAX_POINTS * len(parts):
        note += " Downsampled for drawing (each time bucket's first, last, lowest and highest)."
        data = downsample(data)
    return Lines("failures_drops", "drops by reason over time", ctx.xlabel, ylabel,
                 data, order, step=True, note=note, marks=tuple(mk))


def failure_plots(run_dir: str | Path) -> list[Lines]:
    """The plots of the report's "Failures" section for a run's folder;
    empty for a run without scheduled changes."""
    import json

    import polars as pl

    d = Path(run_dir)
    summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    phases = phases_frame(summary)
    if phases.height == 0:
        return []
    end_us = float(phases["end_us"].max() or 0.0)  # type: ignore[arg-type]
    unit, div = time_unit(int(end_us * 1e6))
    ctx = _Ctx(unit, div)
    mk = marks(summary, div / 1e6)
    flows = pl.read_parquet(d / "flows.parquet")
    links = pl.read_parquet(d / "links.parquet") if (d / "links.parquet").is_file() else None
    out = [slowdown_plot(flows, phases, ctx, mk), goodput_plot(flows, phases, ctx, mk)]
    drops = drops_plot(links, phases, ctx, mk)
    return out + ([drops] if drops else [])
