"""``pktsim report RESULTS_DIR``: one self-contained HTML page of a run or a
sweep (plots embedded as PNG data, how many flows finished, per-bucket
slowdown tables, every run's config, the pktsim version and git commit),
with the figures written beside it. A run's time series (per-flow cwnd and
RTT, queues, link utilisation) are zoomable plotly figures, with plotly.js
inline so that the page works offline; so are, for a run with scheduled
network changes, its "Failures" section's (per-phase table, slowdown and
goodput by flow start time, drops over time).

Writes ``RESULTS_DIR/report.html`` and ``RESULTS_DIR/plots/*.png`` (and
each figure as ``.svg`` and ``.pdf`` too, for papers). Runs with
unfinished flows, or a workload with no finished flow at all, are reported
as such, never a crash: statistics are over finished flows, with their
counts beside them.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core
from .plots import claim_label

if TYPE_CHECKING:
    import polars as pl

#: Summary columns shown in the runs table, with their headings.
RUN_COLUMNS = [
    ("protocol", "protocol"),
    ("flows", "flows"),
    ("finished", "finished"),
    ("slowdown.mean", "mean slowdown"),
    ("slowdown.p99", "p99 slowdown"),
    ("short_flows.slowdown.mean", "short mean slowdown"),
    ("fct_us.p99", "p99 FCT (µs)"),
    ("drops_total", "drops"),
    ("conservation.ok", "books balance"),
]


def git_commit() -> str | None:
    """The commit of the current checkout (where the report is written),
    else the one the core was built from."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.strip()
    return _core.git_commit()


def _single_run_tables(d: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None]:
    import tomllib

    import polars as pl

    from .sweep import flatten_summary

    summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    cfg = tomllib.loads((d / "config.toml").read_text(encoding="utf-8"))
    run_id = str(summary.get("meta", {}).get("config_hash") or d.name)
    wl = (cfg.get("workload") or [{}])[0]
    row = {
        "run_id": run_id,
        "seed": summary.get("seed"),
        "load": wl.get("load"),
        "workload": str(wl.get("cdf") or wl.get("kind") or ""),
    }
    for k, v in flatten_summary(summary).items():
        row.setdefault(k, v)
    row["path"] = str(d)
    summaries = pl.DataFrame([row], infer_schema_length=None)
    flows = pl.read_parquet(d / "flows.parquet").with_columns(pl.lit(run_id).alias("run_id"))
    queues = None
    if (d / "queues.parquet").is_file():
        queues = pl.read_parquet(d / "queues.parquet").with_columns(
            pl.lit(run_id).alias("run_id")
        )
    return summaries, flows, queues


def _tables(d: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None]:
    from .sweep import finished_dirs, load_summaries, load_sweep

    if (d / "runs").is_dir():
        dirs = finished_dirs(d)
        if not dirs:
            raise FileNotFoundError(f"{d}: no finished runs under runs/")
        summaries = load_summaries(d)
        flows = load_sweep(d)
        has_q = any((x / "queues.parquet").is_file() for x in dirs)
        queues = load_sweep(d, "queues") if has_q else None
        return summaries, flows, queues
    if (d / "flows.parquet").is_file():
        return _single_run_tables(d)
    raise FileNotFoundError(f"{d}: neither a run (flows.parquet) nor a sweep (runs/)")


def _param_columns(summaries: pl.DataFrame) -> list[str]:
    """The columns that tell runs apart: config, grid columns, seed."""
    point_cols: list[str] = []
    for p in summaries["path"]:
        pj = Path(p) / "point.json"
        if pj.is_file():
            point = json.loads(pj.read_text(encoding="utf-8"))
            for k in point.get("params", {}):
                if k not in point_cols:
                    point_cols.append(k)
    lead = ["config"] if "config" in summaries.columns else []
    return [*lead, *point_cols, "seed"]


def measured(summaries: pl.DataFrame, claim: Mapping[str, Any]) -> float | None:
    """The measured value of a published claim: the mean of ``metric`` over
    the runs of ``config`` (and ``where``), divided by the same over
    ``relative_to`` when the claim is a ratio."""
    import polars as pl

    def mean_of(config: str | None) -> float | None:
        df = summaries
        if config and "config" in df.columns:
            df = df.filter(pl.col("config") == Path(config).stem)
        for k, v in (claim.get("where") or {}).items():
            if k in df.columns:
                df = df.filter(pl.col(k) == v)
        metric = str(claim["metric"])
        if metric not in df.columns or df.height == 0:
            return None
        v = df[metric].cast(pl.Float64).mean()
        return None if v is None else float(v)  # type: ignore[arg-type]

    value = mean_of(claim.get("config"))
    rel = claim.get("relative_to")
    if rel and value is not None:
        base = mean_of(rel)
        return None if not base else value / base
    return value


def _fmt(v: Any) -> str:
    """A table cell: no e-notation (FCTs of 12,345.6 µs read as such)."""
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != v:  # NaN
            return "–"
        if abs(v) >= 10_000:
            return f"{v:,.0f}"
        if abs(v) >= 1 or v == 0:
            return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
        return f"{v:.3g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


class _Html(str):
    """A table cell that is HTML already."""


def _cell(c: Any) -> str:
    return str(c) if isinstance(c, _Html) else html.escape(_fmt(c))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], cls: str = "") -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    klass = f" class='{cls}'" if cls else ""
    return f"<table{klass}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


#: Relative tolerance of a claim with neither a bound nor its own ``tolerance``.
DEFAULT_TOLERANCE = 0.10

#: What ``pktsim reproduce`` writes beside the runs: the scale it ran at.
SCALE_FILE = "reproduce.json"


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict: ``kind`` (holds, fails, partly, trend when the
    runs are below the claims' scale, or reference when the paper's own
    simulator misses the claim too; the CSS class), the word shown, and
    why, in numbers."""

    kind: str
    word: str
    why: str


def verdict(
    claim: Mapping[str, Any], m: float | None, scale: Mapping[str, Any] | None = None
) -> Verdict:
    """The verdict of one published claim given its measured value ``m``.

    A bound (``bound = "max"`` or ``"min"``) holds or fails. A number
    without a bound matches within ``tolerance`` (relative, default 10 %);
    a ratio of two configs (``relative_to``) that misses it but lies on the
    same side of 1 as the published one gets ``partly``: the direction (who
    beats whom) holds, the size does not. When the runs were scaled down
    below what the claims need, a measured claim is ``trend only`` (grey):
    the numbers say which way it leans, not whether it holds.

    A claim may carry what the paper's own simulator gives on the same
    flows (``reference = { value, simulator, evidence }``, measured by the
    tools in ``reference/``). A claim pktsim misses and the reference
    misses too is graded ``not reproduced by the paper's simulator``
    (kind ``reference``): a finding about the claim, not a failure of
    pktsim; the why gives both figures and where the evidence is."""
    pub = claim.get("value")
    below = bool(
        scale and scale.get("scale", 1) > scale.get("needs_scale", 1)
        and _ran_scaled(claim, scale)
    )
    caveat = ""
    if below and scale:
        caveat = (f"; at scale {scale['scale']:g}, the claim needs scale "
                  f"{scale.get('needs_scale', 1):g}")
    if m is None or pub is None:
        what = claim.get("config", "?")
        return Verdict("fails", "not measured", f"no finished runs of {what}{caveat}")
    v = _full_scale_verdict(claim, m, pub)
    if below:
        return Verdict("trend", "trend only", f"leans {v.word}: {v.why}{caveat}")
    ref = claim.get("reference")
    if v.kind in ("fails", "partly") and isinstance(ref, Mapping) and "value" in ref:
        r = _full_scale_verdict(claim, float(ref["value"]), pub)
        if r.kind in ("fails", "partly"):
            return Verdict(
                "reference", "not reproduced by the paper's simulator",
                f"pktsim: {v.why}; {ref.get('simulator', 'the paper’s own simulator')} on "
                f"the same flows: {_fmt(float(ref['value']))} ({r.word}); "
                f"{ref.get('evidence', '')}".rstrip("; "),
            )
    return v


def _ran_scaled(claim: Mapping[str, Any], scale: Mapping[str, Any]) -> bool:
    """Whether a config of ``claim`` ran smaller than shipped. A config
    whose flows no scale changes (a flow list) ran at its full size, so its
    claims are graded for real; one the scale file does not list is taken
    as scaled."""
    flows = scale.get("flows")
    stems = [Path(str(n)).stem for n in (claim.get("config"), claim.get("relative_to")) if n]
    if not isinstance(flows, Mapping) or not stems:
        return True
    return any(
        s not in flows or flows[s].get("full") != flows[s].get("run") for s in stems
    )


def _full_scale_verdict(claim: Mapping[str, Any], m: float, pub: Any) -> Verdict:
    kind = str(claim.get("bound", ""))
    if kind in ("max", "min"):
        ok = m <= pub if kind == "max" else m >= pub
        op = ("≤" if ok else ">") if kind == "max" else ("≥" if ok else "<")
        return Verdict("holds" if ok else "fails", "holds" if ok else "fails",
                       f"{_fmt(m)} {op} {_fmt(pub)}")
    tol = float(claim.get("tolerance", DEFAULT_TOLERANCE))
    off = abs(m - pub) / abs(pub) if pub else abs(m)
    if off <= tol:
        return Verdict("holds", "holds", f"{_fmt(m)} is within ±{tol:.0%} of {_fmt(pub)}")
    if claim.get("relative_to") and pub != 1 and (m - 1) * (pub - 1) > 0:
        side = "above" if pub > 1 else "below"
        return Verdict(
            "partly", "partly",
            f"{_fmt(m)} is {side} 1 like {_fmt(pub)} (direction holds) but not within "
            f"±{tol:.0%} of it",
        )
    return Verdict("fails", "fails", f"{_fmt(m)} is not within ±{tol:.0%} of {_fmt(pub)}")


def verdicts(
    results_dir: str | os.PathLike[str],
    claims: Sequence[Mapping[str, Any]] | None = None,
) -> list[Verdict]:
    """Every claim's verdict on the runs in ``results_dir`` (``claims``
    default: its ``published.toml``), as the report shows them."""
    d = Path(results_dir)
    if claims is None:
        claims = _published_claims(d)
    if not claims:
        return []
    summaries, _, _ = _tables(d)
    info = _scale_info(d)
    return [verdict(c, measured(summaries, c), info) for c in claims]


def verdict_line(vs: Sequence[Verdict]) -> str:
    """One line of verdict counts: ``"verdicts: 2 holds, 1 fails, 3 trend
    only"`` (kinds in a fixed order, only those present)."""
    order = ["holds", "partly", "fails", "not reproduced by the paper's simulator",
             "not measured", "trend only"]
    counts = {w: sum(1 for v in vs if v.word == w) for w in order}
    parts = [f"{n} {w}" for w, n in counts.items() if n]
    return "verdicts: " + (", ".join(parts) if parts else "no claims")


def _published_claims(d: Path) -> list[dict[str, Any]]:
    import tomllib

    p = d / "published.toml"
    if not p.is_file():
        return []
    return list(tomllib.loads(p.read_text(encoding="utf-8")).get("claim", []))


def _scale_info(d: Path) -> dict[str, Any] | None:
    p = d / SCALE_FILE
    if not p.is_file():
        return None
    return dict(json.loads(p.read_text(encoding="utf-8")))


def _scale_html(info: Mapping[str, Any]) -> str:
    scale = float(info.get("scale", 1))
    needs = float(info.get("needs_scale", 1))
    flows = info.get("flows") or {}
    sizes = sorted({(v.get("run"), v.get("full")) for v in flows.values()
                    if v.get("full") is not None}, key=str)
    examples = "; ".join(f"{r:,} of {f:,} flows" for r, f in sizes[:3])
    text = (f"<b>Scale.</b> These runs are at scale {scale:g}: each config's flow count "
            f"divided by {scale:g}" + (f" ({html.escape(examples)})" if examples else "")
            + f". The published claims need scale {needs:g} (the configs as shipped). ")
    if scale > needs:
        text += (f"At this scale a claim on a scaled config shows the trend only (flow lists "
                 f"no scale changes ran at full size and are graded): run "
                 f"<code>pktsim reproduce {html.escape(str(info.get('name', 'NAME')))} "
                 f"--scale {needs:g}</code> to test the claims.")
    else:
        text += "The verdicts below test the claims at that scale."
    return f"<p class='scale'>{text}</p>"


def run_buckets(summaries: pl.DataFrame) -> tuple[int, ...]:
    """The size buckets' upper edges the runs' ``summary.json`` used (a
    config's ``[output] size_buckets``, else the core's default)."""
    from .plots import DEFAULT_BUCKETS

    for p in summaries["path"].to_list() if "path" in summaries.columns else []:
        f = Path(p) / "summary.json"
        if f.is_file():
            bs = json.loads(f.read_text(encoding="utf-8")).get("buckets") or []
            edges = tuple(int(b["up_to_bytes"]) for b in bs if b.get("up_to_bytes"))
            if edges:
                return edges
    return DEFAULT_BUCKETS


def finished_line(summaries: pl.DataFrame) -> str:
    """How many flows finished over all runs, in words: ``"1,930 of 2,000
    flows finished (96.5 %) in 6 runs"``, plus how many runs had none."""
    cols = summaries.columns
    if "flows" not in cols or "finished" not in cols:
        return "flows finished: unknown"
    total = int(summaries["flows"].fill_null(0).sum())
    done = int(summaries["finished"].fill_null(0).sum())
    pct = 100.0 * done / total if total else 0.0
    runs = summaries.height
    none = summaries.filter((summaries["flows"] > 0) & (summaries["finished"] == 0)).height
    text = f"{done:,} of {total:,} flows finished ({pct:.1f} %) in {runs} run{'s' * (runs != 1)}"
    if none:
        text += f"; {none} run{'s' * (none != 1)} with no finished flow"
    return text


def _bucket_rows(
    summaries: pl.DataFrame, flows: pl.DataFrame, params: Sequence[str]
) -> list[list[Any]]:
    """One row per run and size bucket: flows, finished, mean and p99
    slowdown (the core's statistics: ``summary.json``'s numbers)."""
    import polars as pl

    from . import plots

    buckets = run_buckets(summaries)
    rows = []
    for r in summaries.sort([*params, "run_id"], nulls_last=True).iter_rows(named=True):
        sub = flows.filter(pl.col("run_id") == r["run_id"])
        for b in plots.bucket_table(sub, None, buckets).iter_rows(named=True):
            rows.append([r["run_id"], *[r.get(c) for c in params], b["size_bucket"],
                         b["flows"], b["finished"], b["mean"], b["p99"]])
    return rows


def _pick_load(loads: list[float]) -> float:
    # The bucket and CDF plots show one load: the median of those swept.
    s = sorted(loads)
    return s[(len(s) - 1) // 2]


def _make_plots(
    summaries: pl.DataFrame,
    flows: pl.DataFrame,
    queues: pl.DataFrame | None,
    plot_dir: Path,
    params: Sequence[str] = (),
    queue_plot: bool = True,
) -> list[tuple[str, Path]]:
    import polars as pl

    from . import plots

    plot_dir.mkdir(parents=True, exist_ok=True)
    made: list[tuple[str, Path]] = []
    buckets = run_buckets(summaries)

    def keep(title: str, name: str, fig: Any) -> None:
        # A workload named by a CDF file path ("../../workloads/x.cdf")
        # must not become directories in the file name.
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        path = plot_dir / f"{safe.strip('.')}.png"
        plots.save(fig, path, plots.FORMATS)
        made.append((title, path))

    info = summaries.select(
        "run_id",
        pl.col("load").cast(pl.Float64, strict=False),
        pl.col("workload").cast(pl.String),
    )
    fl = flows.join(info, on="run_id", how="left")
    workloads = sorted({w for w in info["workload"].to_list() if w is not None}) or [None]
    loads = sorted({v for v in info["load"].to_list() if v is not None})
    for w in workloads:
        sub = fl if w is None else fl.filter(pl.col("workload") == w)
        # A CDF given as a path is shown by its file's stem ("ali_wan").
        tag = Path(w).stem if w and ("/" in w or w.endswith(".cdf")) else (w or "all")
        note = ""
        if len(loads) > 1:
            at = _pick_load(loads)
            sub = sub.filter(pl.col("load") == at)
            note = f", load {at:g}"
        if sub.height == 0:
            continue
        for stat in ("mean", "p99"):
            name = plots.label_of(f"slowdown.{stat}").split(" (")[0]
            keep(
                f"{name} by flow size ({tag}{note})",
                f"slowdown_{stat}_by_size_{tag}",
                plots.slowdown_by_size(
                    sub, stat=stat, buckets=buckets, title=f"{name}, {tag}{note}"
                ),
            )
        keep(
            f"FCT CDF ({tag}{note})",
            f"fct_cdf_{tag}",
            plots.fct_cdf(sub, title=f"FCT CDF, {tag}{note}"),
        )
        if len(loads) > 1:
            sm = summaries if w is None else summaries.filter(pl.col("workload") == w)
            for metric in ("slowdown.mean", "slowdown.p99"):
                name = plots.label_of(metric)
                keep(
                    f"{name} vs load ({tag})",
                    f"{metric.replace('.', '_')}_vs_load_{tag}",
                    plots.metric_vs_load(sm, metric, title=f"{name} vs load, {tag}"),
                )
    if queue_plot and queues is not None and queues.height:
        # Name each run by the columns that tell it apart, not by its hash.
        cols = [c for c in params if summaries[c].n_unique() > 1]
        labels = {
            r["run_id"]: ", ".join(f"{c}={r.get(c)}" for c in cols) or r["run_id"]
            for r in summaries.iter_rows(named=True)
        }
        runs = queues["run_id"].unique().to_list()
        q = queues.with_columns(
            pl.col("run_id").replace_strict(labels, default=pl.col("run_id")).alias("run")
        )
        keep(
            f"queue occupancy over time, {len(runs)} run{'s' if len(runs) > 1 else ''}",
            "queue_occupancy",
            plots.queue_occupancy(q, by="run" if len(runs) > 1 else None),
        )
    return made


def _safe(name: str) -> str:
    # A file name from a series name a design chose ("credit_rate_gbps").
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".")


def _time_section(d: Path, plot_dir: Path) -> list[str]:
    """The "Over time" section of a single run: each plot of
    :func:`pktsim.series.time_plots` zoomable in the page and written to
    ``plot_dir`` as PNG, SVG and PDF; nothing when the run has no series."""
    from . import series

    tps = series.time_plots(d)
    if not tps:
        return []
    plot_dir.mkdir(parents=True, exist_ok=True)
    have = [n for n in ("timeseries", "queues", "links") if (d / f"{n}.parquet").is_file()]
    parts = [
        "<h2>Over time</h2>",
        "<p>What happened inside the run, from "
        + ", ".join(f"<code>{n}.parquet</code>" for n in have)
        + ". Drag to zoom (on an axis: that axis only), double-click to zoom out, click a "
        "legend entry to hide its line, hover for values. Long series are downsampled for "
        f"drawing to about {series.MAX_POINTS:,} points per line (each time bucket's first, "
        "last, lowest and highest point kept, so spikes stay); per-flow plots show at most "
        f"{series.MAX_FLOWS} flows, port plots the {series.TOP_PORTS} busiest ports. The same "
        "figures are written as PNG, SVG and PDF for papers (links under each).</p>",
    ]
    return parts + _plot_divs(tps, plot_dir, "plot")


def _plot_divs(tps: Sequence[Any], plot_dir: Path, prefix: str) -> list[str]:
    """Each prepared plot zoomable in the page (a ``<div>``, ids starting
    with ``prefix``), written to ``plot_dir`` as PNG, SVG and PDF, with
    links to those files under it."""
    from . import interactive, plots

    parts = []
    for i, p in enumerate(tps):
        name = _safe(p.name)
        plots.save(plots.time_plot(p), plot_dir / f"{name}.png", plots.FORMATS)
        links = " ".join(
            f"<a href='plots/{html.escape(name)}.{fmt}'>{fmt.upper()}</a>" for fmt in plots.FORMATS
        )
        note = f"<p class='note'>{html.escape(p.note)}</p>" if p.note else ""
        parts.append(
            f"<div class='timeplot' id='tp-{name}'>"
            f"{interactive.figure_div(p, f'{prefix}-{i}-{name}')}{note}"
            f"<p class='note'>{html.escape(p.title)} — static: {links}</p></div>"
        )
    return parts


def _phase_rows(phases: pl.DataFrame) -> tuple[list[str], list[list[Any]]]:
    """The Failures section's table: one row per phase, the drops columns
    of the reasons that dropped anything."""
    reasons = [c for c in phases.columns
               if c.startswith("drops_") and c != "drops_total" and phases[c].sum() > 0]
    headers = ["phase", "from (µs)", "to (µs)", "opened by", "flows started", "finished",
               "unfinished", "mean slowdown", "p99 slowdown", "p99 FCT (µs)",
               "goodput (Gbps)", "drops", *[c.removeprefix("drops_").replace("_", " ")
                                             for c in reasons]]
    rows = []
    last = phases.height - 1
    for r in phases.iter_rows(named=True):
        i = r["phase"]
        name = f"{i} (before)" if i == 0 and r["what"] is None else (
            f"{i} (last)" if i == last else str(i))
        rows.append([name, r["start_us"], r["end_us"], r["what"] or "–", r["flows"],
                     r["finished"], r["unfinished"], r["slowdown_mean"], r["slowdown_p99"],
                     r["fct_us_p99"], r["goodput_gbps"], r["drops_total"],
                     *[r[c] for c in reasons]])
    return headers, rows


def _failures_section(d: Path, plot_dir: Path) -> list[str]:
    """The "Failures" section of a single run with scheduled network
    changes (``[[event]]``): the per-phase table of ``summary.json`` and
    the plots of :func:`pktsim.failures.failure_plots`; nothing for a run
    without changes."""
    from . import failures

    summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    phases = failures.phases_frame(summary)
    if phases.height == 0:
        return []
    n = len(failures.faults(summary))
    headers, rows = _phase_rows(phases)
    parts = [
        "<h2>Failures</h2>",
        f"<p>The run applied {n} scheduled change{'s' * (n != 1)} to the network "
        "(<code>[[event]]</code>), which cut it into the phases below: phase 0 runs until "
        "the first change, each change (several at one instant together) opens the next, "
        "the last ends with the run. A flow counts in the phase it <i>started</i> in, "
        "wherever it finished; its statistics are over finished flows, goodput is their "
        "bytes over their summed FCT. Drops are those counted while the phase lasted "
        "(<code>summary.json</code> → <code>phases</code>). In the plots a dotted line "
        "marks each change; time bins never straddle one.</p>",
        _table(headers, rows, cls="phases"),
    ]
    plot_dir.mkdir(parents=True, exist_ok=True)
    parts += _plot_divs(failures.failure_plots(d), plot_dir, "fail")
    return parts


def _sweep_time_note(d: Path) -> list[str]:
    # A sweep's runs each have their own series: one page per run reads
    # better than dozens of runs' lines in one plot.
    from .sweep import finished_dirs

    with_series = [x for x in finished_dirs(d)
                   if (x / "timeseries.parquet").is_file() or (x / "links.parquet").is_file()]
    if not with_series:
        return []
    example = html.escape(str(with_series[0]))
    return [
        "<h2>Over time</h2>",
        f"<p>{len(with_series)} run{'s' * (len(with_series) != 1)} wrote time series "
        "(<code>timeseries.parquet</code> or <code>links.parquet</code>). Their zoomable "
        "plots are in each run's own report: "
        f"<code>pktsim report {example}</code>.</p>",
    ]


CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222}
img{max-width:100%;height:auto}
.verdict-holds{color:#070;font-weight:bold}
.verdict-fails{color:#a00;font-weight:bold}
.verdict-partly{color:#a60;font-weight:bold}
.verdict-trend{color:#777;font-weight:bold}
.verdict-reference{color:#36a;font-weight:bold}
.unfinished{background:#fdecea;border-left:4px solid #c00;padding:0.6em 1em}
table.claims td:nth-child(2),table.claims td:nth-child(n+5){text-align:left}
.scale{background:#fff6e0;border-left:4px solid #e0a000;padding:0.6em 1em}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
td,th{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right}
th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left;font-family:monospace}
figure{display:inline-block;vertical-align:top;margin:0.5em 0;width:49%}
figure.wide{width:100%}
figcaption{font-size:0.85em;color:#555}
.timeplot{margin:0.5em 0 1.5em 0}
.timeplot .note{font-size:0.85em;color:#555;margin:0.2em 0}
pre{background:#f7f7f7;padding:0.6em;overflow-x:auto;font-size:0.85em}
.bad{color:#a00}
"""


def report(
    results_dir: str | os.PathLike[str],
    *,
    claims: Sequence[Mapping[str, Any]] | None = None,
    title: str | None = None,
) -> Path:
    """Write ``RESULTS_DIR/report.html`` (self-contained) and
    ``RESULTS_DIR/plots/*.png`` for a run or a sweep folder; returns the
    HTML's path. ``claims`` (published numbers, see :mod:`pktsim.reproduce`;
    by default those of ``RESULTS_DIR/published.toml`` if there is one) add
    a published-vs-measured table."""
    d = Path(results_dir)
    if claims is None:
        claims = _published_claims(d)
    summaries, flows, queues = _tables(d)
    params = [c for c in _param_columns(summaries) if c in summaries.columns]
    single = not (d / "runs").is_dir()
    # A single run's queues are drawn over time with its other series
    # (per port, zoomable) instead of as one more static panel.
    time_section = _time_section(d, d / "plots") if single else _sweep_time_note(d)
    failure_section = _failures_section(d, d / "plots") if single else []
    plot_list = _make_plots(summaries, flows, queues, d / "plots", params,
                            queue_plot=not (single and queues is not None))
    commit = git_commit()

    def distinct(col: str) -> str:
        if col not in summaries.columns:
            return "unknown"
        vals = sorted({str(v) for v in summaries[col].to_list() if v is not None})
        return ", ".join(vals) or "unknown"

    # plotly.js once, inline, before any figure: the page works offline.
    script = ""
    if "class='timeplot'" in "".join(time_section + failure_section):
        from .interactive import plotly_js

        script = f"<script type='text/javascript'>{plotly_js()}</script>"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title or d.name)}</title><style>{CSS}</style>{script}"
        "</head><body>",
        f"<h1>{html.escape(title or 'pktsim report: ' + d.name)}</h1>",
        "<p>{} runs, made by pktsim version <b>{}</b> at git commit <b>{}</b>. "
        "Report written {} by pktsim {} (git commit {}).</p>".format(
            summaries.height,
            html.escape(distinct("meta.pktsim_version")),
            html.escape(distinct("meta.git_commit")),
            _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            html.escape(_core.version()),
            html.escape(commit or "unknown"),
        ),
    ]
    fin = finished_line(summaries)
    unfinished = "flows" in summaries.columns and "finished" in summaries.columns and (
        int(summaries["finished"].fill_null(0).sum()) < int(summaries["flows"].fill_null(0).sum())
    )
    if unfinished:
        parts.append(
            f"<p class='unfinished'><b>{html.escape(fin)}.</b> Unfinished flows have no "
            "FCT or slowdown: every statistic and plot below is over finished flows only "
            "(their counts are in the tables and on the bars).</p>"
        )
    else:
        parts.append(f"<p>{html.escape(fin)}.</p>")
    scale_info = _scale_info(d)
    if scale_info:
        parts.append(_scale_html(scale_info))
    if claims:
        rows = []
        for c in claims:
            m = measured(summaries, c)
            what = c.get("config", "")
            if c.get("relative_to"):
                what = f"{what} / {c['relative_to']}"
            kind = str(c.get("bound", ""))
            bound = {"max": "≤ ", "min": "≥ "}.get(kind, "")
            v = verdict(c, m, scale_info)
            rows.append(
                [what, claim_label(str(c.get("metric")), bool(c.get("relative_to"))),
                 f"{bound}{_fmt(c.get('value'))}", m,
                 _Html(f"<span class='verdict-{v.kind}'>{html.escape(v.word)}</span>"),
                 v.why, c.get("source", ""), c.get("note", "")]
            )
        parts += [
            "<h2>Published vs measured</h2>",
            "<p>Each claim's verdict: <b>holds</b>, <b>fails</b>, or <b>partly</b> (the "
            "direction of a ratio holds, its size does not); a claim without a bound "
            f"matches within its <code>tolerance</code> (default ±{DEFAULT_TOLERANCE:.0%}). "
            "Below the claims' scale a verdict is <b>trend only</b>: which way the numbers "
            "lean, not a test. <b>Not reproduced by the paper's simulator</b>: pktsim misses "
            "the claim and so does the paper's own simulator on the same flows "
            "(<code>reference/</code>): a finding about the claim, with its evidence.</p>",
            _table(
                ["claim (config)", "metric", "published", "measured", "verdict", "why",
                 "source", "note"],
                rows,
                cls="claims",
            ),
        ]
    shown = [(k, h) for k, h in RUN_COLUMNS if k in summaries.columns and k not in params]
    ordered = summaries.sort([*params, "run_id"], nulls_last=True)
    rows = [
        [r["run_id"], *[r.get(c) for c in params], *[r.get(k) for k, _ in shown]]
        for r in ordered.iter_rows(named=True)
    ]
    parts += [
        "<h2>Runs</h2>",
        _table(["run_id", *params, *[h for _, h in shown]], rows),
        "<h2>Per size bucket</h2>",
        "<p>Slowdown of each run's finished flows per flow-size bucket: the same buckets "
        "and nearest-rank percentiles as <code>summary.json</code>.</p>",
        _table(
            ["run_id", *params, "size bucket", "flows", "finished", "mean slowdown",
             "p99 slowdown"],
            _bucket_rows(summaries, flows, params),
            cls="buckets",
        ),
        "<h2>Plots</h2>",
    ]
    for cap, path in plot_list:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        wide = " class='wide'" if path.stem == "queue_occupancy" and "runs" in cap else ""
        parts.append(
            f"<figure{wide}><img alt='{html.escape(cap)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(cap)} — plots/{html.escape(path.name)}</figcaption>"
            "</figure>"
        )
    parts += failure_section
    parts += time_section
    parts.append("<h2>Configs</h2>")
    for r in ordered.iter_rows(named=True):
        cfg_path = Path(r["path"]) / "config.toml"
        text = cfg_path.read_text(encoding="utf-8") if cfg_path.is_file() else "(missing)"
        label = ", ".join(f"{c}={r.get(c)}" for c in params)
        parts.append(
            f"<details><summary><code>{html.escape(str(r['run_id']))}</code> "
            f"{html.escape(label)}</summary><pre>{html.escape(text)}</pre></details>"
        )
    parts.append("</body></html>")
    out = d / "report.html"
    tmp = d / f"report.html.tmp{os.getpid()}"
    tmp.write_text("\n".join(parts), encoding="utf-8")
    os.replace(tmp, out)
    return out
