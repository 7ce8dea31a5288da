"""Sweeps: the same results serially, on local processes and on Dask; an
interrupted sweep resumes without losing or redoing points; a Dask worker
that dies mid-point is replaced and the sweep completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import pktsim
from conftest import GRID, SEEDS, assert_same_sweep
from pktsim.sweep import finished_dirs, make_points


def test_layout_is_a_hive_tree_with_one_id_per_point(serial_sweep: Path) -> None:
    flows = pl.scan_parquet(
        str(serial_sweep / "runs" / "**" / "flows.parquet"), hive_partitioning=True
    ).collect()
    assert {"load", "transport_protocol", "seed", "run_id"} <= set(flows.columns)
    assert flows.select("run_id").n_unique() == 6
    assert sorted(flows["load"].unique().to_list()) == [0.3, 0.5, 0.7]
    # The partition column and the flows' own protocol agree.
    differ = pl.col("transport_protocol") != pl.col("protocol").cast(pl.String)
    assert flows.filter(differ).height == 0
    s = pktsim.load_summaries(serial_sweep)
    assert s.height == 6 and s["finished"].sum() > 0
    assert sorted(s["protocol"].unique().to_list()) == ["dctcp", "tcp"]
    assert not (serial_sweep / ".tmp").exists()


def test_run_ids_hash_the_content(small_file: Path, tmp_path: Path) -> None:
    a = make_points(small_file, GRID, SEEDS, out=tmp_path / "a")
    b = make_points(small_file, GRID, SEEDS, out=tmp_path / "b")
    assert [p["run_id"] for p in a] == [p["run_id"] for p in b]
    assert len({p["run_id"] for p in a}) == 6
    c = make_points(small_file, GRID, [4], out=tmp_path / "c")
    assert not {p["run_id"] for p in a} & {p["run_id"] for p in c}


def test_processes_give_the_serial_results(
    serial_sweep: Path, small_file: Path, tmp_path: Path
) -> None:
    res = pktsim.sweep(
        small_file, GRID, SEEDS, out=tmp_path / "p", executor="processes", workers=2,
        progress=False,
    )
    assert res.ran == 6
    assert_same_sweep(serial_sweep, tmp_path / "p")


def test_two_threads_per_point_give_the_serial_results(
    serial_sweep: Path, small_file: Path, tmp_path: Path
) -> None:
    res = pktsim.sweep(
        small_file, GRID, SEEDS, out=tmp_path / "t", executor="serial",
        threads_per_point=2, progress=False,
    )
    assert res.ran == 6
    assert_same_sweep(serial_sweep, tmp_path / "t")
    with pytest.raises(ValueError, match="threads_per_point"):
        pktsim.sweep(small_file, GRID, SEEDS, out=tmp_path / "z", threads_per_point=0)


def test_dask_local_cluster_gives_the_serial_results(
    serial_sweep: Path, small_file: Path, tmp_path: Path
) -> None:
    pytest.importorskip("distributed")
    res = pktsim.sweep(
        small_file, GRID, SEEDS, out=tmp_path / "d", executor="dask", workers=2, progress=False
    )
    assert res.ran == 6
    assert_same_sweep(serial_sweep, tmp_path / "d")


def test_killed_sweep_resumes_and_loses_nothing(
    serial_sweep: Path, small_file: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        f'base = "{small_file}"\nseeds = {SEEDS}\nexecutor = "serial"\n'
        '[grid]\nload = [0.3, 0.5, 0.7]\n"transport.protocol" = ["dctcp", "tcp"]\n'
    )
    out = tmp_path / "k"
    env = dict(os.environ, PKTSIM_TEST_POINT_DELAY="0.4")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pktsim", "sweep", str(spec), "--out", str(out), "--no-progress"],
        env=env,
    )
    deadline = time.monotonic() + 60
    while len(finished_dirs(out)) < 3 and time.monotonic() < deadline:
        assert proc.poll() is None, "the sweep ended before it could be killed"
        time.sleep(0.02)
    # Kill it while the next point's results are half written (no marker).
    while not list(out.glob(".tmp/*/flows.parquet")) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(finished_dirs(out))
    assert 3 <= done < 6, done
    half = [d for d in (out / ".tmp").iterdir() if (d / "flows.parquet").is_file()]
    assert half, "the kill did not catch a point half written"
    assert not any((d / "_SUCCESS").exists() for d in half)
    assert pktsim.load_sweep(out).select("run_id").n_unique() == done
    # A point directory is complete or absent: every one has its marker.
    assert all((d / "flows.parquet").is_file() for d in finished_dirs(out))
    res = pktsim.sweep(small_file, GRID, SEEDS, out=out, executor="serial", progress=False)
    assert (res.ran, res.skipped) == (6 - done, done)
    assert_same_sweep(serial_sweep, out)
    assert not (out / ".tmp").exists(), "debris of the killed run left behind"
    again = pktsim.sweep(small_file, GRID, SEEDS, out=out, executor="serial", progress=False)
    assert (again.ran, again.skipped) == (0, 6)


def test_dask_worker_killed_mid_point_is_retried_elsewhere(
    serial_sweep: Path, small_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    distributed = pytest.importorskip("distributed")
    marker = tmp_path / "crashed"
    # The first worker process to start a point dies (os._exit) right there.
    monkeypatch.setenv("PKTSIM_TEST_CRASH_ONCE", str(marker))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        # Attach to the running scheduler, as on a real cluster.
        res = pktsim.sweep(
            small_file, GRID, SEEDS, out=tmp_path / "w", executor="dask",
            address=cluster.scheduler_address, progress=False,
        )
    assert marker.is_file(), "no worker was killed"
    assert res.ran == 6 and len(finished_dirs(tmp_path / "w")) == 6
    assert_same_sweep(serial_sweep, tmp_path / "w")


def test_a_client_of_yours_runs_the_points(
    serial_sweep: Path, small_file: Path, tmp_path: Path
) -> None:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as c,
        distributed.Client(c) as client,
    ):
        res = pktsim.sweep(
            small_file, GRID, SEEDS, out=tmp_path / "c", executor=client, progress=False
        )
    assert res.ran == 6
    assert_same_sweep(serial_sweep, tmp_path / "c")
