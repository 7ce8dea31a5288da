"""pktsim.reference: the same table as the ``pktsim reference`` command, and
what an ideal schedule must satisfy (SRPT's mean FCT at most PS's; no flow
faster than its bytes at the bottleneck rate)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import pktsim

# 4 senders into host 4 through one switch: one 10 Gbit/s bottleneck.
BOTTLENECK = """\
seed = 3
[topology]
kind = "star"
hosts = 5
host_rate = "10Gbps"
link_delay = "0.2us"
[network]
switch_queue = { kind = "pfabric" }
switch_buffer_bytes = 36000
host_queue = { kind = "pfabric" }
[transport]
protocol = "pfabric"
[[workload]]
kind = "poisson"
cdf = "sizes.cdf"
load = 0.6
receiver = 4
flows = 200
"""

CDF = "# bytes cumulative-probability\n1000 0.0\n10000 0.5\n100000 1.0\n"

# 10 Gbit/s: one byte on the wire takes exactly 800 ps.
PS_PER_BYTE = 800
MSS, HEADER = 1460, 40


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bottleneck")
    (d / "sizes.cdf").write_text(CDF)
    (d / "exp.toml").write_text(BOTTLENECK)
    res = pktsim.run(d / "exp.toml", d / "res")
    assert res.summary["finished"] == 200
    return res.path


def test_matches_the_command_line(run_dir: Path, tmp_path: Path) -> None:
    ref = pktsim.reference(run_dir)
    assert ref.height == 200
    assert ref.columns == [
        "flow_id", "size_bytes", "start_ps", "fct_ps", "ideal_fct_ps", "work_ps",
        "srpt_fct_ps", "ps_fct_ps",
    ]
    # It wrote reference.parquet, as the command does.
    assert pl.read_parquet(run_dir / "reference.parquet").equals(ref)
    cli_out = tmp_path / "cli.parquet"
    p = subprocess.run(
        [sys.executable, "-m", "pktsim", "reference", str(run_dir), "--out", str(cli_out)],
        capture_output=True, text=True, check=True,
    )
    assert pl.read_parquet(cli_out).equals(ref)
    # The command's JSON summary is computed from the same table.
    s = json.loads(p.stdout)
    done = ref.filter(pl.col("fct_ps").is_not_null())
    assert s["flows"] == 200 and s["rate_bps"] == 10_000_000_000
    for col, key in (("fct_ps", "measured"), ("srpt_fct_ps", "srpt"), ("ps_fct_ps", "ps")):
        assert done[col].mean() / 1e6 == pytest.approx(s["mean_fct_us"][key], rel=1e-9)


def test_ideal_schedules_obey_their_bounds(run_dir: Path) -> None:
    ref = pktsim.reference(run_dir, out=run_dir / "again.parquet")
    # SRPT minimises mean response time on one server (Schrage 1968).
    assert ref["srpt_fct_ps"].mean() <= ref["ps_fct_ps"].mean()
    # Service time by hand: ⌈size/1460⌉ packets of 40 header bytes each.
    npkt = (ref["size_bytes"] + MSS - 1) // MSS
    assert (ref["work_ps"] == (ref["size_bytes"] + HEADER * npkt) * PS_PER_BYTE).all()
    # No flow finishes before its bytes cross the bottleneck, nor before
    # its unloaded FCT.
    for col in ("srpt_fct_ps", "ps_fct_ps"):
        assert (ref[col] >= ref["size_bytes"] * PS_PER_BYTE).all()
        assert (ref[col] >= ref["ideal_fct_ps"]).all()
    # In this run the first flow is served before the second arrives: alone
    # at the server, both references give exactly its ideal FCT.
    first, second = ref.sort("start_ps").head(2).iter_rows(named=True)
    assert first["start_ps"] + first["work_ps"] <= second["start_ps"]
    assert first["srpt_fct_ps"] == first["ps_fct_ps"] == first["ideal_fct_ps"]


def test_rate_override_scales_the_work(run_dir: Path, tmp_path: Path) -> None:
    full = pktsim.reference(run_dir, out=tmp_path / "a.parquet")
    half = pktsim.reference(run_dir, rate="5Gbps", out=tmp_path / "b.parquet")
    assert (half["work_ps"] == 2 * full["work_ps"]).all()


def test_bad_input(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        pktsim.reference(tmp_path / "nowhere")
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.reference(run_dir, rate="fast", out=tmp_path / "x.parquet")
    assert e.value.field == "rate"
    assert not (tmp_path / "x.parquet").exists()
