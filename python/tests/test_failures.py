"""Scheduled failures from Python: ``[[event]]`` tables as a list of dicts
under ``"event"``, and a sweep over when the failure happens."""

from __future__ import annotations

import copy
from pathlib import Path

import polars as pl

import pktsim


def with_failure(cfg: dict, at: str, detection: str = "0") -> dict:
    """``cfg`` with spine link leaf0-spine0 down at ``at`` for 300 us."""
    cfg = copy.deepcopy(cfg)
    cfg.setdefault("network", {})["failure_detection"] = detection
    cfg["event"] = [
        {"at": at, "action": "down", "link": ["leaf0", "spine0"]},
        {"at": "1.3ms", "action": "up", "link": ["leaf0", "spine0"]},
    ]
    cfg.setdefault("output", {})["links"] = {"interval": "100us"}
    return cfg


def test_a_failure_from_a_dict_drops_packets_for_its_link(tmp_path: Path, small_dict: dict) -> None:
    res = pktsim.run(with_failure(small_dict, "1ms", "never"), tmp_path / "down")
    drops = res.summary["drops"]
    down = drops["data"]["link_down"] + drops["control"]["link_down"]
    assert down > 0
    assert res.summary["conservation"]["ok"]
    # The link series count them on the failed link's two ports only.
    links = res.links
    assert links is not None
    by_port = links.group_by("port").agg(pl.col("drops_link_down").sum().alias("d"))
    assert by_port.filter(by_port["d"] > 0).height <= 2
    assert by_port["d"].sum() == down
    # Without the events the same flows lose nothing to a dead link.
    base = pktsim.run(small_dict, tmp_path / "base")
    assert base.summary["drops"]["data"]["link_down"] == 0


def test_the_same_failure_gives_the_same_bytes_on_a_rerun(tmp_path: Path, small_dict: dict) -> None:
    cfg = with_failure(small_dict, "1ms")
    a = pktsim.run(cfg, tmp_path / "a")
    b = pktsim.run(cfg, tmp_path / "b", threads=2)
    assert a.flows.equals(b.flows)
    assert a.summary["drops"] == b.summary["drops"]
