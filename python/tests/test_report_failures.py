"""The report's "Failures" section and ``RunResult.phases``: a run with
scheduled network changes gets a per-phase table and plots against flow
start time with the changes marked; a run without gets neither."""

from __future__ import annotations

import html
import re
from pathlib import Path

import polars as pl
import pytest

import pktsim
from conftest import SMALL
from pktsim import _core, failures
from synthetic_failures import DOWN_PS, UP_PS, write_failed_run


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_failed_run(tmp_path_factory.mktemp("failed") / "run")


@pytest.fixture(scope="module")
def failed_page(failed_run: Path) -> str:
    return pktsim.report(failed_run).read_text()


def _phase_table(page: str) -> tuple[list[str], list[list[str]]]:
    table = re.search(r"<table class='phases'>(.*?)</table>", page, re.S)
    assert table, "no phases table"
    heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table.group(1))]
    rows = [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", r)]
            for r in re.findall(r"<tr>(.*?)</tr>", table.group(1))[1:]]
    return heads, rows


def test_the_phase_table(failed_page: str) -> None:
    assert failed_page.count("<h2>Failures</h2>") == 1
    heads, rows = _phase_table(failed_page)
    assert heads[:7] == ["phase", "from (µs)", "to (µs)", "opened by", "flows started",
                         "finished", "unfinished"]
    # Only the reasons that dropped anything get a column.
    assert heads[-3:] == ["drops", "buffer full", "link down"]
    assert [r[0] for r in rows] == ["0 (before)", "1", "2 (last)"]
    assert [r[1:4] for r in rows] == [["0", "10,000", "–"],
                                      ["10,000", "20,000", "down link leaf0-spine1"],
                                      ["20,000", "30,000", "up link leaf0-spine1"]]
    # 600 flows evenly over 30 ms; one in ten of those started while the
    # link was down never finished.
    assert [r[4:7] for r in rows] == [["200", "200", "0"], ["200", "180", "20"],
                                      ["200", "200", "0"]]
    assert [r[-3:] for r in rows] == [["12", "12", "0"], ["67", "30", "37"], ["5", "5", "0"]]
    # The failure's flows are about five times slower.
    mean = [float(r[7]) for r in rows]
    assert mean[1] > 3 * mean[0] and mean[1] > 3 * mean[2]


def test_the_plots_mark_the_changes(failed_run: Path, failed_page: str) -> None:
    for title in ("slowdown of flows by start time", "goodput of flows by start time",
                  "drops by reason over time"):
        assert f"{title} — static:" in failed_page, title
    for name in ("failures_slowdown", "failures_goodput", "failures_drops"):
        assert (failed_run / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert (failed_run / "plots" / f"{name}.svg").is_file()
        assert f"href='plots/{name}.pdf'" in failed_page
    # Each plot has a dotted line at both changes, labelled with what changed.
    section = failed_page.split("<h2>Failures</h2>")[1].split("<h2>Over time</h2>")[0]
    assert section.count('"text":"down link leaf0-spine1"') == 3
    assert section.count('"text":"up link leaf0-spine1"') == 3
    assert section.count('"dash":"dot"') == 6
    assert "From links.parquet: summed over all ports, per 100 µs interval." in section
    assert "20 unfinished flows have no slowdown (see the table)." in section
    # The same page still draws its links over time, with plotly inline once.
    assert "<h2>Over time</h2>" in failed_page
    assert failed_page.count("* plotly.js v") == 1


def test_bins_never_straddle_a_change(failed_run: Path) -> None:
    plots = failures.failure_plots(failed_run)
    slow, good = plots[0], plots[1]
    phases = pktsim.RunResult(failed_run).phases
    bins = failures._bins(phases, 30_000.0)
    lefts = [lo for lo, _ in bins]
    changes = [DOWN_PS / 1e6, UP_PS / 1e6]
    assert all(t in lefts for t in changes)
    assert not [b for b in bins for t in changes if b[0] < t < b[1]]
    # Each phase gets its share of the bins (13 of a third of 40).
    assert len(bins) == 39
    # The first bin of the failure: the median of the flows started in it,
    # by the core's nearest-rank percentile.
    lo, hi = next(b for b in bins if b[0] == 10_000.0)
    flows = pktsim.RunResult(failed_run).flows
    mine = flows.filter((pl.col("start_ps") >= lo * 1e6) & (pl.col("start_ps") < hi * 1e6))
    want = _core.stats(mine["slowdown"].drop_nulls().to_list())[2]
    medians = slow.data.filter(pl.col("line") == "median per bin")
    got = medians.filter(pl.col("t") == (lo + hi) / 2 / 1e3)["value"].to_list()
    assert got == [want]
    # Goodput of that bin: its finished flows' bytes over their summed FCT.
    done = mine.filter(pl.col("fct_ps").is_not_null())
    want_g = done["size_bytes"].sum() * 8e3 / done["fct_ps"].sum()
    agg = good.data.filter((pl.col("line") == "Σ bytes / Σ FCT") & (pl.col("t") == lo / 1e3))
    assert agg["value"].to_list() == [pytest.approx(want_g, rel=1e-12)]


def test_drops_per_phase_without_links(tmp_path: Path) -> None:
    d = write_failed_run(tmp_path / "run", links=False)
    drops = failures.failure_plots(d)[2]
    assert drops.ylabel == "packets dropped in the phase"
    link_down = drops.data.filter(pl.col("line") == "link down")
    # Held over each phase: 0 before, 37 during, 0 after.
    assert link_down["value"].to_list() == [0.0, 37.0, 0.0, 0.0]
    assert link_down["t"].to_list() == [0.0, 10.0, 20.0, 30.0]
    page = pktsim.report(d).read_text()
    assert "Per phase, from summary.json" in page and "<h2>Over time</h2>" not in page
    # The Failures plots alone bring plotly inline.
    assert page.count("* plotly.js v") == 1


def test_run_result_phases(failed_run: Path) -> None:
    res = pktsim.RunResult(failed_run)
    ph = res.phases
    assert ph["phase"].to_list() == [0, 1, 2]
    assert ph["what"].to_list() == [None, "down link leaf0-spine1", "up link leaf0-spine1"]
    assert ph["drops_link_down"].to_list() == [0, 37, 0]
    assert ph["drops_buffer_full"].to_list() == [12, 30, 5]
    assert ph["unfinished"].to_list() == [0, 20, 0]
    assert res.faults == [(10_000.0, "down link leaf0-spine1"),
                          (20_000.0, "up link leaf0-spine1")]


def test_sweep_columns_per_phase(failed_run: Path) -> None:
    from pktsim.sweep import flatten_summary

    flat = flatten_summary(pktsim.RunResult(failed_run).summary)
    assert flat["phases.1.drops.data.link_down"] == 37
    assert flat["phases.1.unfinished"] == 20
    assert flat["phases.2.what"] == "up link leaf0-spine1"
    assert "phases" not in flat


def test_no_failures_section_without_changes(tmp_path: Path) -> None:
    d = write_failed_run(tmp_path / "run", links=False, faults=False)
    res = pktsim.RunResult(d)
    assert res.phases.height == 0 and "goodput_gbps" in res.phases.columns
    assert res.faults == []
    assert failures.failure_plots(d) == []
    page = pktsim.report(d).read_text()
    assert "Failures" not in page and "plotly.js" not in page


def test_a_run_without_events_has_no_phases(tmp_path: Path) -> None:
    res = pktsim.run(SMALL, tmp_path / "plain")
    assert "phases" not in res.summary and "faults" not in res.summary
    assert res.phases.height == 0
    assert "<h2>Failures</h2>" not in pktsim.report(res.path).read_text()
