"""``pktsim report RESULTS_DIR``: one self-contained HTML page of a run or a
sweep (plots embedded as PNG data, every run's config, the pktsim version
and git commit), with the PNGs written beside it.

Writes ``RESULTS_DIR/report.html`` and ``RESULTS_DIR/plots/*.png``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core

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
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != v:  # NaN
            return "–"
        return f"{v:.4g}"
    return str(v)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


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
) -> list[tuple[str, Path]]:
    import polars as pl

    from . import plots

    plot_dir.mkdir(parents=True, exist_ok=True)
    made: list[tuple[str, Path]] = []

    def keep(title: str, name: str, fig: Any) -> None:
        path = plot_dir / f"{name}.png"
        plots.save(fig, path)
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
        tag = f"{w}" if w else "all"
        note = ""
        if len(loads) > 1:
            at = _pick_load(loads)
            sub = sub.filter(pl.col("load") == at)
            note = f", load {at:g}"
        if sub.height == 0:
            continue
        for stat in ("mean", "p99"):
            keep(
                f"{stat} slowdown by flow size ({tag}{note})",
                f"slowdown_{stat}_by_size_{tag}",
                plots.slowdown_by_size(sub, stat=stat, title=f"{stat} slowdown, {tag}{note}"),
            )
        keep(
            f"FCT CDF ({tag}{note})",
            f"fct_cdf_{tag}",
            plots.fct_cdf(sub, title=f"FCT CDF, {tag}{note}"),
        )
        if len(loads) > 1:
            sm = summaries if w is None else summaries.filter(pl.col("workload") == w)
            for metric in ("slowdown.mean", "slowdown.p99"):
                keep(
                    f"{metric} vs load ({tag})",
                    f"{metric.replace('.', '_')}_vs_load_{tag}",
                    plots.metric_vs_load(sm, metric, title=f"{metric} vs load, {tag}"),
                )
    if queues is not None and queues.height:
        # Name each run by the columns that tell it apart, not by its hash.
        cols = [c for c in params if summaries[c].n_unique() > 1]
        labels = {
            r["run_id"]: ", ".join(f"{c}={r.get(c)}" for c in cols) or r["run_id"]
            for r in summaries.iter_rows(named=True)
        }
        runs = sorted(queues["run_id"].unique().to_list(), key=lambda x: labels.get(x, x))
        shown = runs[:6]
        q = queues.filter(pl.col("run_id").is_in(shown)).with_columns(
            pl.col("run_id").replace_strict(labels, default=pl.col("run_id")).alias("run")
        )
        keep(
            "queue occupancy over time"
            + (f" ({len(shown)} of {len(runs)} runs)" if len(runs) > len(shown) else ""),
            "queue_occupancy",
            plots.queue_occupancy(q, by="run" if len(shown) > 1 else None),
        )
    return made


CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
td,th{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right}
th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left;font-family:monospace}
figure{display:inline-block;margin:0.5em}
figcaption{font-size:0.85em;color:#555}
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
    if claims is None and (d / "published.toml").is_file():
        import tomllib

        claims = tomllib.loads((d / "published.toml").read_text(encoding="utf-8")).get(
            "claim", []
        )
    summaries, flows, queues = _tables(d)
    params = [c for c in _param_columns(summaries) if c in summaries.columns]
    plot_list = _make_plots(summaries, flows, queues, d / "plots", params)
    commit = git_commit()

    def distinct(col: str) -> str:
        if col not in summaries.columns:
            return "unknown"
        vals = sorted({str(v) for v in summaries[col].to_list() if v is not None})
        return ", ".join(vals) or "unknown"

    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title or d.name)}</title><style>{CSS}</style></head><body>",
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
    if claims:
        rows = []
        for c in claims:
            m = measured(summaries, c)
            pub = c.get("value")
            ratio = m / pub if (m is not None and pub) else None
            what = c.get("config", "")
            if c.get("relative_to"):
                what = f"{what} / {c['relative_to']}"
            kind = str(c.get("bound", ""))
            bound = {"max": "≤ ", "min": "≥ "}.get(kind, "")
            holds = ""
            if m is not None and pub is not None and kind in ("max", "min"):
                holds = "yes" if (m <= pub if kind == "max" else m >= pub) else "no"
            rows.append(
                [what, c.get("metric"), f"{bound}{_fmt(pub)}", m, ratio, holds,
                 c.get("source", ""), c.get("note", "")]
            )
        parts += [
            "<h2>Published vs measured</h2>",
            _table(
                ["config", "metric", "published", "measured", "measured / published",
                 "bound holds", "source", "note"],
                rows,
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
        "<h2>Plots</h2>",
    ]
    for cap, path in plot_list:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        parts.append(
            f"<figure><img alt='{html.escape(cap)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(cap)} — plots/{html.escape(path.name)}</figcaption>"
            "</figure>"
        )
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
