"""The report's "Over time" section: per-flow series, queues and links over
time, zoomable in a page that needs no network, and the same figures as
SVG/PDF; a run without those tables gets no such section."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

import pktsim
from conftest import SMALL
from pktsim import series
from synthetic_series import INFINITE, write_timeseries

# 20 µs intervals over a ~35 ms run: more intervals than the heat map has
# columns, so that it merges them.
LINKS = '\n[output.links]\ninterval = "20us"\n'


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    res = pktsim.run(SMALL + LINKS, tmp_path_factory.mktemp("traced") / "run")
    assert (res.path / "links.parquet").is_file() and (res.path / "queues.parquet").is_file()
    write_timeseries(res.path)
    return res.path


@pytest.fixture(scope="module")
def traced_page(traced_run: Path) -> str:
    return pktsim.report(traced_run).read_text()


def test_the_page_has_every_time_plot(traced_page: str) -> None:
    page = traced_page
    assert "<h2>Over time</h2>" in page
    for title in ("congestion window and ssthresh (dashed) per flow", "smoothed RTT per flow",
                  "DCTCP alpha per flow", "in recovery per flow", "queue occupancy over time",
                  "link utilisation over time, busiest ports", "link utilisation, port × time"):
        assert f"{title} — static:" in page, title
    # Ten flows traced, eight drawn, and the page says which.
    assert "Showing 8 of 10 traced flows (the lowest ids: 0, 1, 2, 3, 4, 5, 6, 7)" in page
    assert "ssthresh values above twice the largest congestion window" in page
    # Flow 0 has 6,000 samples per variable: drawn downsampled, and said so.
    assert re.search(r"Downsampled for drawing: [\d,]+ points to [\d,]+", page)
    assert "about 2,000 points per line" in page
    # The queue plot is drawn once, over time per port, not also as a PNG.
    assert page.count("queue occupancy over time — static:") == 1
    assert "<img alt='queue occupancy" not in page


def test_the_interactive_plots_are_inline(traced_page: str) -> None:
    page = traced_page
    # No script is fetched: plotly.js is in the page, once.
    assert not re.search(r"<script[^>]*\bsrc\s*=", page), "a script is loaded from elsewhere"
    assert page.count("* plotly.js v") == 1
    divs = re.findall(r"Plotly\.newPlot\(\s*\"(plot-\d+-[\w.-]+)\"", page)
    assert len(divs) == 8, divs
    for div in divs:
        assert f'id="{div}"' in page
    # plotly.js is ~5 MB; the data must not add much more.
    assert len(page.encode()) < 8_000_000


def test_static_figures_for_papers(traced_run: Path, traced_page: str) -> None:
    plots = traced_run / "plots"
    for name in ("ts_cwnd_bytes", "ts_srtt_us", "ts_dctcp_alpha", "queue_occupancy",
                 "link_utilisation", "link_utilisation_heatmap"):
        svg = (plots / f"{name}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg, name
        assert (plots / f"{name}.pdf").read_bytes().startswith(b"%PDF"), name
        assert (plots / f"{name}.png").read_bytes().startswith(b"\x89PNG"), name
        assert f"href='plots/{name}.svg'" in traced_page and f"href='plots/{name}.pdf'" in \
            traced_page
    # The heat map's cells are an image inside the vector file, not 14,000 paths.
    assert (plots / "link_utilisation_heatmap.svg").stat().st_size < 1_000_000


def test_the_plots_show_the_tables_numbers(traced_run: Path) -> None:
    tps = {p.name: p for p in series.time_plots(traced_run)}
    links = pl.read_parquet(traced_run / "links.parquet")
    # Busiest ports first, their utilisation in percent per interval.
    util = tps["link_utilisation"]
    assert isinstance(util, series.Lines)
    per_port = (links.group_by("node", "port")
                .agg((pl.col("busy_ps").sum() / pl.col("interval_ps").sum()).alias("u"))
                .sort("u", descending=True))
    top = per_port.head(series.TOP_PORTS)
    first = top.row(0, named=True)
    assert util.order[0].startswith(f"node {first['node']}→")
    assert util.order[0].endswith(f"(port {first['port']})")
    assert len(util.order) == series.TOP_PORTS
    drawn = util.data.filter(pl.col("line") == util.order[0])["value"]
    port = links.filter((pl.col("node") == first["node"]) & (pl.col("port") == first["port"]))
    assert drawn.to_list() == pytest.approx((port["utilisation"] * 100).to_list())

    # The heat map merges intervals into at most HEATMAP_BINS columns and
    # keeps each port's busy time: sum of utilisation × bin length.
    heat = tps["link_utilisation_heatmap"]
    assert isinstance(heat, series.Heatmap)
    n_times = links["time_ps"].n_unique()
    assert n_times > series.HEATMAP_BINS
    assert len(heat.edges) - 1 <= series.HEATMAP_BINS and len(heat.z[0]) == len(heat.edges) - 1
    assert len(heat.rows) == per_port.height  # 40 ports: every one shown
    div = 1e9  # the run is ~35 ms long: a time axis in ms
    assert heat.xlabel == "simulated time (ms)"
    for label, row in zip(heat.rows, heat.z, strict=True):
        node, port_id = re.match(r"node (\d+)→\S+ \(port (\d+)\)", label).groups()  # type: ignore[union-attr]
        busy = links.filter((pl.col("node") == int(node)) & (pl.col("port") == int(port_id)))
        widths = [b - a for a, b in zip(heat.edges, heat.edges[1:], strict=False)]
        from_map = sum((z or 0.0) / 100 * w for z, w in zip(row, widths, strict=True))
        assert from_map == pytest.approx(busy["busy_ps"].sum() / div, rel=1e-9, abs=1e-9)

    # ssthresh's "infinite" start is left out; the cwnd lines are whole.
    cwnd = tps["ts_cwnd_bytes"]
    assert isinstance(cwnd, series.Lines)
    assert cwnd.data["value"].max() < INFINITE / 1e3
    assert "flow 0 ssthresh" in cwnd.order and "flow 8" not in cwnd.order
    ts = pl.read_parquet(traced_run / "timeseries.parquet")
    flow1 = ts.filter((pl.col("flow") == 1) & (pl.col("variable") == "cwnd_bytes"))
    assert (cwnd.data.filter(pl.col("line") == "flow 1")["value"] * 1e3).to_list() == \
        pytest.approx(flow1["value"].to_list())


def test_downsample_keeps_ends_and_spikes() -> None:
    n = 100_000
    values = [float(i % 100) for i in range(n)]
    values[31_337] = 1e6
    values[77_777] = -1e6
    df = pl.DataFrame({
        "t": [float(i) for i in range(n)] + [0.0, 1.0],
        "line": ["long"] * n + ["short"] * 2,
        "value": values + [5.0, 6.0],
    })
    out = series.downsample(df, 2000)
    long = out.filter(pl.col("line") == "long")
    assert long.height <= 2000
    assert long["t"].is_sorted()
    assert long["t"][0] == 0.0 and long["t"][-1] == n - 1
    assert long["value"].max() == 1e6 and long["value"].min() == -1e6
    assert 31_337.0 in long["t"].to_list() and 77_777.0 in long["t"].to_list()
    assert out.filter(pl.col("line") == "short")["value"].to_list() == [5.0, 6.0]


def test_labels_and_units() -> None:
    assert series.variable_label("cwnd_bytes") == ("cwnd (KB)", 1e3)
    assert series.variable_label("srtt_us") == ("srtt (µs)", 1.0)
    assert series.variable_label("credit_rate_gbps") == ("credit rate (Gbps)", 1.0)
    assert series.variable_label("tokens") == ("tokens", 1.0)
    assert series.time_unit(1_500_000_000) == ("µs", 1e6)
    assert series.time_unit(35_000_000_000) == ("ms", 1e9)
    assert series.time_unit(30_000_000_000_000) == ("s", 1e12)


def test_a_run_without_series_has_no_time_section(tmp_path: Path) -> None:
    plain = SMALL.replace('[output]\nqueue_sample_interval = "100us"\n', "")
    assert plain != SMALL
    res = pktsim.run(plain, tmp_path / "plain")
    assert series.time_plots(res.path) == []
    page = pktsim.report(res.path).read_text()
    assert "Over time" not in page and "plotly" not in page.lower()
    assert len(page.encode()) < 1_000_000
    assert not list((res.path / "plots").glob("ts_*")) and not list(
        (res.path / "plots").glob("link_*"))


def test_only_other_designs_variables(tmp_path: Path) -> None:
    # A design's own variables (no cwnd, no RTT) each get a plot, labelled
    # with the unit in their name; no queue or link tables.
    plain = SMALL.replace('[output]\nqueue_sample_interval = "100us"\n', "")
    res = pktsim.run(plain, tmp_path / "credits")
    pl.DataFrame(
        {"time_ps": [0, 1_000_000, 2_000_000, 0, 1_500_000], "flow": [3, 3, 3, 4, 4],
         "variable": ["credit_rate_gbps"] * 3 + ["tokens"] * 2,
         "value": [10.0, 5.0, 7.5, 2.0, 1.0]},
        schema={"time_ps": pl.UInt64, "flow": pl.UInt32, "variable": pl.String,
                "value": pl.Float64},
    ).write_parquet(res.path / "timeseries.parquet")
    page = pktsim.report(res.path).read_text()
    assert "credit rate per flow — static:" in page and "tokens per flow — static:" in page
    assert "credit rate (Gbps)" in page
    assert "Showing" not in page  # two flows: none left out
    assert (res.path / "plots" / "ts_credit_rate_gbps.svg").is_file()


def test_a_real_tcp_trace(tmp_path: Path) -> None:
    # [output.timeseries] after every change: DCTCP's own variables, each
    # held until the flow's last report.
    cfg = SMALL + '\n[output.timeseries]\nflows = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n'
    res = pktsim.run(cfg, tmp_path / "tcp")
    ts = res.timeseries
    assert ts is not None and ts["flow"].n_unique() == 12
    tps = {p.name: p for p in series.time_plots(res.path)}
    names = [n for n in tps if n.startswith("ts_")]
    assert names[:4] == ["ts_cwnd_bytes", "ts_srtt_us", "ts_rttvar_us", "ts_rto_us"], names
    assert {"ts_dctcp_alpha", "ts_in_recovery", "ts_bytes_in_flight"} <= set(names)
    cwnd = tps["ts_cwnd_bytes"]
    assert isinstance(cwnd, series.Lines) and cwnd.ylabel == "cwnd (KB)"
    f0 = ts.filter((pl.col("flow") == 0) & (pl.col("variable") == "cwnd_bytes")).sort("time_ps")
    line = cwnd.data.filter(pl.col("line") == "flow 0")
    end = ts.filter(pl.col("flow") == 0)["time_ps"].max()
    # Every change of flow 0's window, then its last value at the flow's end.
    assert (line["value"] * 1e3).to_list()[: f0.height] == pytest.approx(f0["value"].to_list())
    assert line["t"][-1] == pytest.approx(end / 1e9)
    assert line["value"][-1] * 1e3 == pytest.approx(f0["value"][-1])
    flags = tps["ts_in_recovery"]
    assert isinstance(flags, series.Lines)
    for name in flags.order:
        assert flags.data.filter(pl.col("line") == name).height >= 2, name
    page = pktsim.report(res.path).read_text()
    assert "Showing 8 of 12 traced flows" in page and "ts_cwnd_bytes.pdf" in page


def test_a_sweep_points_to_each_runs_own_report(tmp_path: Path) -> None:
    cfg = tmp_path / "links.toml"
    cfg.write_text(SMALL + LINKS)
    out = tmp_path / "sweep"
    pktsim.sweep(cfg, {"load": [0.3]}, [1], out=out, executor="serial", progress=False)
    page = pktsim.report(out).read_text()
    # One run's lines per page: the sweep's says where they are.
    assert "1 run wrote time series" in page and "pktsim report " in page
    assert "plotly" not in page.lower()
    run = next((out / "runs").glob("**/run_id=*"))
    assert f"pktsim report {run}" in page
    assert "link utilisation, port × time — static:" in pktsim.report(run).read_text()
