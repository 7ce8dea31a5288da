"""A synthetic results folder of a run with a failure, for the report's
"Failures" tests: a link down at 10 ms and back up at 20 ms of a 30 ms run.
``flows.parquet`` has the columns pktsim writes; flows that start while the
link is down are five times slower and some never finish. ``summary.json``
holds the ``faults`` and ``phases`` the core would write for these flows
(the figures per phase are computed here the core's way: nearest-rank
percentiles through ``pktsim._core.stats``) and the drops given below;
``links.parquet`` (optional) spreads the same drops over 100 µs intervals.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import polars as pl

from pktsim import _core

DOWN_PS = 10_000_000_000
UP_PS = 20_000_000_000
END_PS = 30_000_000_000
FAULTS = [{"at_us": 10_000.0, "what": "down link leaf0-spine1"},
          {"at_us": 20_000.0, "what": "up link leaf0-spine1"}]

#: Drops per phase by reason (data packets), as the table must show them.
DROPS = [{"buffer_full": 12}, {"buffer_full": 30, "link_down": 37}, {"buffer_full": 5}]

REASONS = ["buffer_full", "evicted", "aqm", "protocol", "hop_limit", "link_down", "link_loss"]

CONFIG = """\
name = "failure"
seed = 7

[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 8

[transport]
protocol = "dctcp"

[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
flows = 600
"""


def _flows(n: int) -> pl.DataFrame:
    rng = random.Random(7)
    rows: dict[str, list[Any]] = {k: [] for k in (
        "flow_id", "src", "dst", "size_bytes", "start_ps", "finish_ps", "fct_ps",
        "ideal_fct_ps", "fct_us", "slowdown", "bytes_received", "retransmits", "drops")}
    for i in range(n):
        start = int(END_PS * i / n)
        size = rng.choice([2_000, 20_000, 200_000, 2_000_000])
        ideal = size * 800 + 5_000_000  # 10 Gbps and 5 µs, in ps
        slow = 1.0 + rng.expovariate(0.5)
        down = DOWN_PS <= start < UP_PS
        if down:
            slow *= 5.0
        unfinished = down and i % 10 == 0
        fct = None if unfinished else int(ideal * slow)
        rows["flow_id"].append(i)
        rows["src"].append(i % 16)
        rows["dst"].append((i + 5) % 16)
        rows["size_bytes"].append(size)
        rows["start_ps"].append(start)
        rows["finish_ps"].append(None if fct is None else start + fct)
        rows["fct_ps"].append(fct)
        rows["ideal_fct_ps"].append(ideal)
        rows["fct_us"].append(None if fct is None else fct / 1e6)
        rows["slowdown"].append(None if fct is None else fct / ideal)
        rows["bytes_received"].append(size // 3 if fct is None else size)
        rows["retransmits"].append(0)
        rows["drops"].append(0)
    u32, u64 = pl.UInt32, pl.UInt64
    schema = {"flow_id": u32, "src": u32, "dst": u32, "size_bytes": u64, "start_ps": u64,
              "finish_ps": u64, "fct_ps": u64, "ideal_fct_ps": u64, "fct_us": pl.Float64,
              "slowdown": pl.Float64, "bytes_received": u64, "retransmits": u32, "drops": u32}
    return pl.DataFrame(rows, schema=schema).with_columns(
        pl.lit("dctcp").alias("protocol"), pl.lit("").alias("tag"))


def _stats(values: list[float]) -> dict[str, Any]:
    return dict(zip(("count", "mean", "p50", "p99", "p999", "max"), _core.stats(values),
                    strict=True))


def _phase(flows: pl.DataFrame, lo: int, hi: int, what: str | None,
           drops: dict[str, int], last: bool) -> dict[str, Any]:
    inside = (pl.col("start_ps") >= lo) & (
        (pl.col("start_ps") <= hi) if last else (pl.col("start_ps") < hi))
    mine = flows.filter(inside)
    done = mine.filter(pl.col("fct_ps").is_not_null())
    fct_sum = int(done["fct_ps"].sum())
    rates = [s * 8e3 / f for s, f in zip(done["size_bytes"], done["fct_ps"], strict=True)]
    by_kind = {"data": {r: drops.get(r, 0) for r in REASONS}, "control": dict.fromkeys(REASONS, 0)}
    return {
        "start_us": lo / 1e6, "end_us": hi / 1e6, "what": what, "flows": mine.height,
        "finished": done.height, "unfinished": mine.height - done.height,
        "fct_us": _stats(done["fct_us"].to_list()),
        "slowdown": _stats(done["slowdown"].to_list()),
        "goodput_gbps": int(done["size_bytes"].sum()) * 8e3 / fct_sum if fct_sum else None,
        "mean_flow_goodput_gbps": sum(rates) / len(rates) if rates else None,
        "drops": by_kind, "drops_total": sum(drops.values()),
    }


def _links(interval_ps: int = 100_000_000) -> pl.DataFrame:
    # Two ports; each phase's drops spread over its first intervals, the
    # link_down ones all in the interval of the failure.
    rows: dict[str, list[Any]] = {k: [] for k in (
        "time_ps", "interval_ps", "node", "port", "peer", "bytes", "packets", "busy_ps",
        "utilisation", "throughput_gbps", "ecn_marked", "deflected_in", "notices",
        *[f"drops_{r}" for r in REASONS])}
    bounds = [0, DOWN_PS, UP_PS]
    for k in range(END_PS // interval_ps):
        end = (k + 1) * interval_ps
        phase = sum(1 for b in bounds if end - interval_ps >= b) - 1
        first = end - interval_ps == bounds[phase]
        for port in (0, 1):
            rows["time_ps"].append(end)
            rows["interval_ps"].append(interval_ps)
            rows["node"].append(16 + port)
            rows["port"].append(port)
            rows["peer"].append(18)
            rows["bytes"].append(100_000)
            rows["packets"].append(70)
            rows["busy_ps"].append(interval_ps // 2)
            rows["utilisation"].append(0.5)
            rows["throughput_gbps"].append(8.0)
            rows["ecn_marked"].append(0)
            rows["deflected_in"].append(0)
            rows["notices"].append(0)
            for r in REASONS:
                n = DROPS[phase].get(r, 0) if first and port == 0 else 0
                rows[f"drops_{r}"].append(n)
    ints = {k: pl.UInt64 for k in rows} | {"node": pl.UInt32, "port": pl.UInt32,
                                           "peer": pl.UInt32, "utilisation": pl.Float64,
                                           "throughput_gbps": pl.Float64}
    return pl.DataFrame(rows, schema=ints)


def write_failed_run(run_dir: Path, *, links: bool = True, faults: bool = True,
                     n: int = 600) -> Path:
    """Write the synthetic run into ``run_dir`` (created); ``faults=False``
    writes the same run as one without scheduled changes (no ``faults`` or
    ``phases`` in its summary). Returns ``run_dir``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    flows = _flows(n)
    flows.write_parquet(run_dir / "flows.parquet")
    done = flows.filter(pl.col("fct_ps").is_not_null())
    summary: dict[str, Any] = {
        "meta": {"config_hash": "synthetic", "pktsim_version": _core.version()},
        "protocol": "dctcp", "seed": 7, "stop_reason": "time_limit", "flows": flows.height,
        "finished": done.height, "unfinished": flows.height - done.height,
        "slowdown": _stats(done["slowdown"].to_list()),
        "fct_us": _stats(done["fct_us"].to_list()),
        "drops_total": sum(sum(d.values()) for d in DROPS),
        "conservation": {"ok": True}, "sim_time_us": END_PS / 1e6,
    }
    if faults:
        bounds = [(0, DOWN_PS, None), (DOWN_PS, UP_PS, FAULTS[0]["what"]),
                  (UP_PS, END_PS, FAULTS[1]["what"])]
        summary["faults"] = FAULTS
        summary["phases"] = [_phase(flows, lo, hi, what, DROPS[i], i == 2)
                             for i, (lo, hi, what) in enumerate(bounds)]
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (run_dir / "config.toml").write_text(CONFIG, encoding="utf-8")
    if links:
        _links().write_parquet(run_dir / "links.parquet")
    return run_dir
