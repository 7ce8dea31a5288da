"""Shared fixtures: a small experiment (16 hosts, a few hundred flows, well
under a second per run) and the serial sweep every other sweep is compared
with."""

from __future__ import annotations

import tomllib
from pathlib import Path

import polars as pl
import pytest

import pktsim

REPO = Path(__file__).resolve().parents[2]

SMALL = """\
name = "small"
seed = 1

[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 8
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us"

[network]
switch_queue = { kind = "ecn", k_packets = 20 }
switch_buffer_bytes = 225000

[transport]
protocol = "dctcp"
min_rto = "200us"

[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
flows = 150

[output]
queue_sample_interval = "100us"
"""

# Six points: three loads x two protocols, one seed.
GRID = {"load": [0.3, 0.5, 0.7], "transport.protocol": ["dctcp", "tcp"]}
SEEDS = [3]


@pytest.fixture(scope="session")
def small_text() -> str:
    return SMALL


@pytest.fixture(scope="session")
def small_dict() -> dict:
    return tomllib.loads(SMALL)


@pytest.fixture(scope="session")
def small_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cfg") / "small.toml"
    p.write_text(SMALL)
    return p


@pytest.fixture(scope="session")
def serial_sweep(tmp_path_factory: pytest.TempPathFactory, small_file: Path) -> Path:
    out = tmp_path_factory.mktemp("serial") / "sweep"
    res = pktsim.sweep(small_file, GRID, SEEDS, out=out, executor="serial", progress=False)
    assert (res.ran, res.skipped) == (6, 0)
    return out


def comparable_summaries(out: Path) -> pl.DataFrame:
    """Summaries without what depends on the machine or the folder."""
    s = pktsim.load_summaries(out)
    drop = [
        c
        for c in s.columns
        if c in ("path", "events_per_sec", "packet_hops_per_sec", "wall_time_s")
        or c.startswith("meta.")
    ]
    return s.drop(drop).sort("run_id")


def assert_same_sweep(a: Path, b: Path) -> None:
    fa, fb = pktsim.load_sweep(a), pktsim.load_sweep(b)
    assert fa.height > 0
    assert fa.equals(fb), "flows differ"
    assert comparable_summaries(a).equals(comparable_summaries(b)), "summaries differ"
