"""Reports: PNGs that are real images, an HTML page naming every run;
reproduce runs a paper folder scaled down and shows published numbers."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

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
    # The published numbers stay with the results for later reports.
    again = pktsim.report(out).read_text()
    assert "a made-up paper" in again
    _check_images(out / "plots")


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
    assert set(s["flows"].to_list()) == {100}
    page = (out / "report.html").read_text()
    claims = tomllib.loads((REPO / "experiments/phost/published.toml").read_text())["claim"]
    for c in claims:
        assert c["source"] in page
