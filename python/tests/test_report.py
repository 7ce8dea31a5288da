"""Reports: PNGs that are real images, an HTML page naming every run;
reproduce runs a paper folder scaled down and shows published numbers."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import polars as pl
import pytest

import pktsim
from conftest import REPO, SMALL

PNG = b"\x89PNG\r\n\x1a\n"


def _check_images(plot_dir: Path) -> list[Path]:
    from matplotlib.image import imread

    pngs = sorted(plot_dir.glob("*.png"))
    assert pngs
    for p in pngs:
        data = p.read_bytes()
        assert data.startswith(PNG) and len(data) > 1000, p
        h, w, *_ = imread(p).shape
        assert h > 100 and w > 100, p
    return pngs


def test_sweep_report(serial_sweep: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pktsim", "report", str(serial_sweep)],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    page = (serial_sweep / "report.html").read_text()
    # Captions in words, not raw summary keys.
    assert "mean slowdown (FCT / ideal FCT) vs load" in page
    assert "slowdown.mean vs load" not in page and "slowdown.p99 vs load" not in page
    assert "queue occupancy over time, 6 runs" in page and "<figure class='wide'>" in page
    pngs = _check_images(serial_sweep / "plots")
    names = {p.stem for p in pngs}
    assert {"slowdown_mean_by_size_websearch", "fct_cdf_websearch", "queue_occupancy"} <= names
    assert "slowdown_mean_vs_load_websearch" in names
    for run_id in pktsim.load_summaries(serial_sweep)["run_id"]:
        assert run_id in page
    assert page.count("data:image/png;base64,") == len(pngs)
    assert pktsim.__version__ in page and "[transport]" in page


def test_single_run_report(tmp_path: Path) -> None:
    res = pktsim.run(SMALL, tmp_path / "one")
    html = pktsim.report(res.path)
    _check_images(res.path / "plots")
    assert res.summary["meta"]["config_hash"] in html.read_text()


def test_a_cdf_given_as_a_path_names_plots_by_its_stem(tmp_path: Path) -> None:
    # The FlashPass configs name their CDF "../../workloads/ali_wan.cdf";
    # the report once tried to write plots/..._../../workloads/....png.
    cdf = REPO / "workloads" / "websearch.cdf"
    res = pktsim.run(SMALL.replace('cdf = "websearch"', f'cdf = "{cdf}"'), tmp_path / "one")
    pktsim.report(res.path)
    names = {p.stem for p in _check_images(res.path / "plots")}
    assert "slowdown_mean_by_size_websearch" in names, names


def _tiny_experiment(root: Path) -> Path:
    folder = root / "tiny"
    folder.mkdir(parents=True)
    cfg = SMALL.replace("flows = 150", "flows = 400")
    (folder / "a_dctcp.toml").write_text(cfg)
    (folder / "b_tcp.toml").write_text(cfg.replace('protocol = "dctcp"', 'protocol = "tcp"'))
    (folder / "published.toml").write_text(
        '[[claim]]\nconfig = "a_dctcp.toml"\nmetric = "slowdown.mean"\nvalue = 2.5\n'
        'source = "a made-up paper"\nnote = "for the test"\n'
        '[[claim]]\nconfig = "a_dctcp.toml"\nrelative_to = "b_tcp.toml"\n'
        'metric = "slowdown.mean"\nvalue = 0.9\nbound = "max"\n'
        '[[claim]]\nconfig = "b_tcp.toml"\nrelative_to = "a_dctcp.toml"\n'
        'metric = "slowdown.mean"\nvalue = 50\nsource = "a ratio claim"\n'
        '[[claim]]\nconfig = "c_missing.toml"\nmetric = "slowdown.mean"\nvalue = 1\n'
    )
    return folder


def test_reproduce_scales_down_and_shows_published_numbers(tmp_path: Path) -> None:
    folder = _tiny_experiment(tmp_path / "experiments")
    out = tmp_path / "out"
    html = pktsim.reproduce(
        "tiny", 4, experiments=folder.parent, out=out, executor="serial", progress=False
    )
    s = pktsim.load_summaries(out)
    assert sorted(s["config"].to_list()) == ["a_dctcp", "b_tcp"]
    assert s["flows"].to_list() == [100, 100]
    page = html.read_text()
    assert "Published vs measured" in page and "a made-up paper" in page
    measured = s.filter(s["config"] == "a_dctcp")["slowdown.mean"][0]
    assert f"{measured:.4g}" in page
    # The page says what scale ran and what the claims need.
    assert "at scale 4" in page and "need scale 1" in page, page
    assert "100 of 400 flows" in page
    # Every claim has a verdict, and no ratio is divided by a bound. Below
    # the claims' scale a measured claim is "trend only", never green/red.
    assert "measured / published" not in page
    verdicts = re.findall(
        r"<span class='verdict-(holds|fails|partly|trend)'>([^<]+)</span>", page
    )
    assert len(verdicts) == 4, verdicts
    assert verdicts[:3] == [("trend", "trend only")] * 3, verdicts
    assert verdicts[3] == ("fails", "not measured")
    # The ratio claim of 50 (tcp 50 times worse than dctcp) says which way
    # it leans: above 1 like the measured ratio, or not.
    assert "leans partly" in page or "leans fails" in page
    # The published numbers stay with the results for later reports.
    again = pktsim.report(out).read_text()
    assert "a made-up paper" in again and "at scale 4" in again
    _check_images(out / "plots")


def test_claim_labels_have_units_only_when_not_ratios() -> None:
    from pktsim.plots import claim_label

    assert claim_label("queries.qct_us.mean", False) == "mean QCT (µs)"
    assert claim_label("fct_us.mean", True) == "mean FCT, ratio"
    assert claim_label("queries.qct_us.p99", True) == "99th-percentile QCT, ratio"
    assert claim_label("slowdown.mean", True) == "mean slowdown, ratio"


def test_verdicts() -> None:
    from pktsim.report import verdict

    bound = {"value": 1.04, "bound": "max", "relative_to": "x.toml"}
    assert verdict(bound, 1.02).kind == "holds"
    v = verdict(bound, 1.21)
    assert (v.kind, v.why) == ("fails", "1.21 > 1.04")
    ratio = {"value": 3.8, "relative_to": "x.toml"}
    assert verdict(ratio, 3.6).kind == "holds"  # within 10 %
    assert verdict(ratio, 1.1).kind == "partly"  # Fastpass worse, not 3.8x worse
    assert verdict(ratio, 0.9).kind == "fails"  # the other way round
    assert verdict({"value": 2.0, "tolerance": 0.5}, 2.9).kind == "holds"
    assert verdict({"value": 2.0}, 2.9).kind == "fails"
    assert verdict(ratio, None).word == "not measured"
    # The paper's own simulator misses it too: a finding, not a failure.
    ref = {**ratio, "reference": {"value": 1.2, "simulator": "ns2-xpass",
                                  "evidence": "experiments/x/README.md"}}
    both = verdict(ref, 0.9)
    assert (both.kind, both.word) == ("reference", "not reproduced by the paper's simulator")
    assert "ns2-xpass on the same flows: 1.2 (partly)" in both.why, both.why
    assert "experiments/x/README.md" in both.why
    # The reference reproduces it: pktsim's miss stays a miss.
    ok_ref = {**ratio, "reference": {"value": 3.7, "simulator": "ns2-xpass"}}
    assert verdict(ok_ref, 0.9).kind == "fails"
    assert verdict(ref, 3.7).kind == "holds"
    scaled = verdict(bound, 1.02, {"scale": 100, "needs_scale": 1})
    assert (scaled.kind, scaled.word) == ("trend", "trend only")
    assert "leans holds" in scaled.why
    # A flow list ran at its full size whatever the scale: graded for real.
    listed = {"scale": 10, "needs_scale": 1,
              "flows": {"x": {"full": None, "run": None}, "y": {"full": 40, "run": 40}}}
    assert verdict({**bound, "config": "y.toml", "relative_to": "x.toml"}, 1.02,
                   listed).kind == "holds"
    listed["flows"]["y"] = {"full": 400, "run": 40}
    assert verdict({**bound, "config": "y.toml", "relative_to": "x.toml"}, 1.02,
                   listed).kind == "trend"
    assert "at scale 100" in scaled.why and "needs scale 1" in scaled.why
    # At the claims' scale the verdict is a test again.
    assert verdict(bound, 1.02, {"scale": 1, "needs_scale": 1}).kind == "holds"


def test_verdict_line_counts_each_kind() -> None:
    from pktsim.report import Verdict, verdict_line

    vs = [Verdict("holds", "holds", ""), Verdict("trend", "trend only", ""),
          Verdict("trend", "trend only", ""), Verdict("fails", "not measured", "")]
    assert verdict_line(vs) == "verdicts: 1 holds, 1 not measured, 2 trend only"
    assert verdict_line([]) == "verdicts: no claims"


def _summaries(seeds: list[int]):
    import polars as pl

    rows = []
    for proto, base in (("dctcp", 2.0), ("tcp", 5.0)):
        for load in (0.3, 0.6):
            for s in seeds:
                rows.append({"protocol": proto, "load": load, "seed": s,
                             "slowdown.p99": base * (1 + load) + 0.1 * s})
    return pl.DataFrame(rows)


def test_plots_have_readable_labels_log_ticks_and_error_bars() -> None:
    import polars as pl
    from matplotlib.container import ErrorbarContainer

    from pktsim import plots

    fig = plots.metric_vs_load(_summaries([1, 2, 3]), "slowdown.p99")
    ax = fig.axes[0]
    assert "slowdown.p99" not in ax.get_ylabel() and "99th-percentile" in ax.get_ylabel()
    assert "3 seeds" in ax.get_ylabel()
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2 and all(c.has_yerr for c in bars)
    # Width: two plots side by side on a 1400 px page.
    w, h = fig.get_size_inches() * fig.dpi
    assert 600 <= w <= 700, w
    # The legend is off the data: outside the axes, to the right.
    fig.canvas.draw()
    leg = ax.get_legend().get_window_extent()
    assert leg.x0 >= ax.get_window_extent().x1

    flows = pl.DataFrame({
        "protocol": ["dctcp"] * 6 + ["tcp"] * 6,
        "size_bytes": [1_000, 50_000, 200_000, 2_000_000, 20_000_000, 900] * 2,
        "slowdown": [1.1, 1.3, 1.6, 2.2, 2.9, 1.2, 1.4, 1.9, 2.4, 2.8, 3.1, 1.5],
        "fct_us": [3.0, 45.0, 180.0, 1_700.0, 16_000.0, 2.5, 4.0, 60.0, 260.0,
                   2_300.0, 21_000.0, 3.1],
    })
    for fig, axis in ((plots.slowdown_by_size(flows), "y"), (plots.fct_cdf(flows), "x")):
        ax = fig.axes[0]
        fig.canvas.draw()
        ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
        lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
        shown = [t.get_text() for t in ticks
                 if t.get_text() and lo <= (t.get_position()[1 if axis == "y" else 0]) <= hi]
        assert len(shown) >= 3, shown
        assert not any("e+" in t or "^" in t or "10^" in t or "$" in t for t in shown), shown


def test_queue_plot_shows_every_run_with_the_legend_off_the_data() -> None:
    import polars as pl

    from pktsim import plots

    runs = [f"load={x / 10:g}, protocol={p}" for x in range(1, 6) for p in ("dctcp", "tcp")]
    q = pl.DataFrame({
        "run": [r for r in runs for _ in range(4)],
        "time_ps": [t * 10**9 for _ in runs for t in range(4)],
        "bytes": [1500 * (i % 7) for i in range(4 * len(runs))],
    })
    fig = plots.queue_occupancy(q, by="run")
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert sorted(titles) == sorted(runs)
    assert all(ax.get_legend() is None for ax in fig.axes)
    assert fig.legends, "one legend for the figure, above the panels"
    assert fig.get_size_inches()[0] * fig.dpi <= 1400


@pytest.mark.skipif(not (REPO / "experiments" / "phost").is_dir(), reason="no experiments/")
def test_reproduce_phost_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "phost"
    r = subprocess.run(
        [sys.executable, "-m", "pktsim", "reproduce", "phost", "--scale", "1000",
         "--out", str(out), "--executor", "processes", "--workers", "2", "--no-progress"],
        capture_output=True, text=True, cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    configs = sorted(p.stem for p in (REPO / "experiments" / "phost").glob("*.toml")
                     if p.name != "published.toml")
    s = pktsim.load_summaries(out)
    assert sorted(s["config"].to_list()) == configs
    # Poisson flow counts are divided by the scale; an incast's requests are
    # not (10 requests of N flows each in incast_n<N>_*).
    poisson = s.filter(~pl.col("config").str.starts_with("incast_"))
    assert set(poisson["flows"].to_list()) == {100}
    for row in s.filter(pl.col("config").str.starts_with("incast_")).iter_rows(named=True):
        senders = int(row["config"].split("_")[1].removeprefix("n"))
        assert row["flows"] == 10 * senders, row["config"]
    page = (out / "report.html").read_text()
    claims = tomllib.loads((REPO / "experiments/phost/published.toml").read_text())["claim"]
    for c in claims:
        assert c["source"] in page


def test_scale_divides_the_query_count_of_queries_workloads_only() -> None:
    from pktsim.reproduce import scaled

    cfg = {
        "workload": [
            {"kind": "poisson", "flows": 1000},
            {"kind": "queries", "queries": 10, "load": 0.2},
            {"kind": "incast", "queries": 10, "senders": 4},
        ]
    }
    out = scaled(cfg, 4)
    assert [w.get("flows") for w in out["workload"]] == [250, None, None]
    assert [w.get("queries") for w in out["workload"]] == [None, 3, 10]


def _bucket_cells(page: str) -> list[dict[str, str]]:
    """The rows of the report's per-bucket table: cell texts by heading."""
    table = page.split("<table class='buckets'>", 1)[1].split("</table>", 1)[0]
    heads = re.findall(r"<th>([^<]*)</th>", table)
    rows = [re.findall(r"<td>([^<]*)</td>", row) for row in table.split("<tr>")[2:]]
    return [dict(zip(heads, r, strict=True)) for r in rows]


def test_report_bucket_p99_is_summary_json_p99(tmp_path: Path) -> None:
    from pktsim import plots
    from pktsim.report import _fmt

    res = pktsim.run(SMALL.replace("flows = 150", "flows = 600"), tmp_path / "one")
    buckets = res.summary["buckets"]
    # The table behind the plots and the report: the core's buckets and
    # statistics, equal to summary.json's to the last bit.
    t = plots.bucket_table(res.flows, None)
    assert t["size_bucket"].to_list() == [b["label"] for b in buckets]
    assert t["flows"].to_list() == [b["flows"] for b in buckets]
    assert t["finished"].to_list() == [b["slowdown"]["count"] for b in buckets]
    assert t["p99"].to_list() == [b["slowdown"]["p99"] for b in buckets]
    assert t["mean"].to_list() == [b["slowdown"]["mean"] for b in buckets]
    # A bucket with several flows, so that "higher" interpolation and
    # nearest rank could differ.
    assert max(b["slowdown"]["count"] for b in buckets) >= 100
    page = pktsim.report(res.path).read_text()
    rows = _bucket_cells(page)
    assert [r["size bucket"] for r in rows] == [b["label"] for b in buckets]
    assert [r["p99 slowdown"] for r in rows] == [_fmt(b["slowdown"]["p99"]) for b in buckets]
    assert [r["flows"] for r in rows] == [_fmt(b["flows"]) for b in buckets]
    assert [r["finished"] for r in rows] == [_fmt(b["slowdown"]["count"]) for b in buckets]
    assert "600 of 600 flows finished (100.0 %) in 1 run" in page
    # Every figure also as SVG and PDF.
    for png in (res.path / "plots").glob("*.png"):
        assert png.with_suffix(".svg").read_bytes().lstrip().startswith(b"<?xml")
        assert png.with_suffix(".pdf").read_bytes().startswith(b"%PDF")


def test_percentiles_and_buckets_come_from_the_core() -> None:
    from pktsim import _core, plots

    # Nearest rank: the 99th percentile of 1..10 is the 10th value; the
    # interpolations polars offers give 9.91 (linear) or 10 by chance, so
    # take 1..200: rank ceil(0.99 * 200) = 198.
    vals = [float(v) for v in range(1, 201)]
    assert _core.stats(vals)[3] == 198.0
    assert _core.stats([]) == (0, None, None, None, None, None)
    assert plots.DEFAULT_BUCKETS == tuple(_core.default_size_buckets())
    assert plots.bucket_labels((1000, 5_000_000)) == ["0B-1KB", "1KB-5MB", "5MB+"]
    # Edges are (lo, hi]: a flow of exactly 100 KB is in the first bucket.
    import polars as pl

    f = plots.with_buckets(pl.DataFrame({"size_bytes": [100_000, 100_001, 1]}))
    assert f["size_bucket"].to_list() == ["0B-100KB", "100KB-1MB", "0B-100KB"]


def test_report_of_a_run_where_no_flow_finished(tmp_path: Path) -> None:
    cfg = SMALL + '\n[run]\ntime_limit = "1ns"\n'
    with pytest.warns(RuntimeWarning, match="no flow finished"):
        res = pktsim.run(cfg, tmp_path / "none")
    page = pktsim.report(res.path).read_text()
    assert "0 of 150 flows finished (0.0 %) in 1 run; 1 run with no finished flow" in page
    rows = _bucket_cells(page)
    assert all(r["finished"] == "0" and r["p99 slowdown"] == "–" for r in rows), rows
    _check_images(res.path / "plots")


@pytest.mark.skipif(not (REPO / "experiments" / "fastpass").is_dir(), reason="no experiments/")
def test_reproduce_fastpass_at_scale_100_writes_a_report(tmp_path: Path) -> None:
    # Its fairness runs end at a time limit with long flows unfinished, and
    # one workload has no finished flow at all: once a TypeError.
    out = tmp_path / "fastpass"
    r = subprocess.run(
        [sys.executable, "-m", "pktsim", "reproduce", "fastpass", "--scale", "100",
         "--out", str(out), "--executor", "serial", "--no-progress"],
        capture_output=True, text=True, cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    page = (out / "report.html").read_text()
    s = pktsim.load_summaries(out)
    done, total = int(s["finished"].sum()), int(s["flows"].sum())
    assert done < total, "the fairness runs have unfinished flows"
    assert f"{done:,} of {total:,} flows finished" in page
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("verdicts: ") and f"{done:,} of {total:,}" in lines[0], lines
    assert lines[-1] == f"report: {out / 'report.html'}"
