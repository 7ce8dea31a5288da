"""Sweeps: a grid of experiments × seeds, run serially, on local processes
or on a Dask cluster, written as a hive-partitioned Parquet tree.

Layout of a sweep's output folder ``OUT``::

    OUT/sweep.json                       what was asked (configs, grid, seeds)
    OUT/runs/[config=NAME/]<col>=<v>/.../seed=N/run_id=ID/
        flows.parquet  summary.json  config.toml  point.json  _SUCCESS
    OUT/.tmp/                            points being written

A point's ``run_id`` hashes its full config (seed included), so the same
point gets the same id in any sweep. A point is written into ``OUT/.tmp``
and renamed into place in one step with its ``_SUCCESS`` marker inside, so
a point directory under ``runs/`` is either complete or absent: a sweep
started again skips every finished point and redoes the rest.

The worker side (:func:`run_point`) needs only the standard library and
``pktsim._core``; polars is imported by the functions that read results.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import sys
import time
import urllib.parse
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core
from ._config import (
    ConfigLike,
    Source,
    content_hash,
    dict_to_toml,
    load_dict,
    resolve_key,
    set_path,
    source_of,
)

if TYPE_CHECKING:
    import polars as pl

SUCCESS = "_SUCCESS"
# Columns of flows.parquet and queues.parquet: a partition column must not
# shadow one of them.
TABLE_COLUMNS = frozenset(
    "flow_id src dst size_bytes start_ps finish_ps fct_ps ideal_fct_ps fct_us slowdown "
    "bytes_received retransmits drops protocol tag query time_ps node port bytes packets".split()
)
EXECUTORS = ("serial", "processes", "dask")


class PointFailed(RuntimeError):
    """Points of a sweep that could not be run (their worker died on every
    try); ``failed`` lists ``(run_id, why)``. Every other point finished."""

    def __init__(self, failed: list[tuple[str, str]]) -> None:
        self.failed = failed
        names = ", ".join(f"{r} ({why})" for r, why in failed)
        super().__init__(f"{len(failed)} point(s) failed, the others finished: {names}")


@dataclass
class SweepResult:
    """What a sweep did: ``out`` (its folder), ``points`` (every point's
    spec), ``ran`` (points run now), ``skipped`` (found finished) and
    ``failed`` (``(run_id, why)`` of points given up)."""

    out: Path
    points: list[dict[str, Any]]
    ran: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)

    def flows(self) -> pl.DataFrame:
        """Every flow of every point, with the point's columns."""
        return load_sweep(self.out)

    def summaries(self) -> pl.DataFrame:
        """One row per point: its columns and its flattened summary."""
        return load_summaries(self.out)


def _part(col: str, value: Any) -> str:
    # Percent-encode so any value is one safe path component; polars decodes it.
    return f"{col}={urllib.parse.quote(str(value), safe='')}"


def _configs(base: Any, base_dir: Any) -> list[tuple[str | None, Source]]:
    """(name or None, source) of each base config. One config gives no
    ``config`` column; a list of paths or a {name: config} mapping does."""
    if isinstance(base, Mapping) and not _looks_like_config(base):
        return [(str(k), source_of(v, base_dir)) for k, v in base.items()]
    if isinstance(base, list | tuple):
        srcs = [source_of(c, base_dir) for c in base]
        names = [s.name for s in srcs]
        if len(set(names)) != len(names):
            raise ValueError(f"configs need distinct names, got {names}")
        return list(zip(names, srcs, strict=True))
    return [(None, source_of(base, base_dir))]


def _looks_like_config(m: Mapping[str, Any]) -> bool:
    return any(k in m for k in ("topology", "transport", "workload"))


def make_points(
    base: Any,
    grid: Mapping[str, Sequence[Any]] | None = None,
    seeds: Sequence[int] | None = None,
    *,
    out: str | os.PathLike[str],
    fixed: Mapping[str, Any] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """Every point of a sweep, in a fixed order: configs × grid × seeds.
    ``fixed`` sets keys in every point (not columns)."""
    out = Path(out).resolve()
    cols = [resolve_key(k) for k in (grid or {})]
    names = [c for c, _ in cols]
    taken = ({"seed", "run_id", "config"} | TABLE_COLUMNS) & set(names)
    if len(set(names)) != len(names) or taken:
        raise ValueError(
            f"grid columns must be distinct and not seed, run_id, config or a table's "
            f"column; rename with 'column=path': {sorted(taken) or names}"
        )
    values = [list(v) for v in (grid or {}).values()]
    points = []
    for name, src in _configs(base, base_dir):
        cfg0 = load_dict(src)
        for k, v in (fixed or {}).items():
            set_path(cfg0, resolve_key(k)[1], v)
        for combo in itertools.product(*values):
            cfg1 = json.loads(json.dumps(cfg0))
            params: dict[str, Any] = {}
            for (col, path), v in zip(cols, combo, strict=True):
                set_path(cfg1, path, v)
                params[col] = v
            for seed in seeds if seeds is not None else [int(cfg1.get("seed", 1))]:
                cfg = dict(cfg1, seed=int(seed))
                run_id = content_hash(cfg)
                rel = [_part("config", name)] if name is not None else []
                rel += [_part(c, v) for c, v in params.items()]
                rel += [_part("seed", seed), _part("run_id", run_id)]
                points.append(
                    {
                        "run_id": run_id,
                        "config": name,
                        "params": params,
                        "seed": int(seed),
                        "toml": dict_to_toml(cfg),
                        "label": f"{src.label} [{run_id}]",
                        "base_dir": str(Path(src.base_dir).resolve()),
                        "dir": str(out.joinpath("runs", *rel)),
                        "tmp_root": str(out / ".tmp"),
                    }
                )
    ids = [p["dir"] for p in points]
    if len(set(ids)) != len(ids):
        raise ValueError("two points of the sweep are the same (repeated grid values or seeds?)")
    return points


def is_finished(point: Mapping[str, Any]) -> bool:
    """Whether the point's results are complete (its marker is in place)."""
    return os.path.isfile(os.path.join(point["dir"], SUCCESS))


def _test_crash_hook(point: Mapping[str, Any]) -> None:
    # For the test suite only: the first worker process to start a point
    # dies on the spot, to test that the point is run again elsewhere; and
    # every worker that starts the point PKTSIM_TEST_CRASH_POINT names
    # dies, to test that retries are bounded.
    if os.environ.get("PKTSIM_TEST_CRASH_POINT") == point["run_id"]:
        os._exit(17)
    crash = os.environ.get("PKTSIM_TEST_CRASH_ONCE")
    if crash:
        try:
            fd = os.open(crash, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, point["run_id"].encode())
        os.close(fd)
        os._exit(17)


def _test_delay_hook() -> None:
    # For the test suite only: linger with the results half written (in
    # .tmp, no marker), where a kill does the most harm.
    delay = os.environ.get("PKTSIM_TEST_POINT_DELAY")
    if delay:
        time.sleep(float(delay))


def run_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """Run one point into its directory, atomically. Safe to call twice or
    on two machines at once: the first to finish wins, the other's copy is
    dropped. Returns ``{"run_id", "dir", "status"}``, status ``"ran"`` or
    ``"skipped"``."""
    final = point["dir"]
    if is_finished(point):
        return {"run_id": point["run_id"], "dir": final, "status": "skipped"}
    os.makedirs(point["tmp_root"], exist_ok=True)
    tmp = os.path.join(point["tmp_root"], f"{point['run_id']}-{uuid.uuid4().hex[:8]}")
    os.makedirs(tmp)
    # Dies here, as a crash mid-point would: its directory in .tmp stays.
    _test_crash_hook(point)
    try:
        _core.run(
            point["toml"],
            tmp,
            label=point["label"],
            base_dir=point["base_dir"],
            quiet=True,
            command_line=f"pktsim sweep (run_id {point['run_id']})",
            threads=point.get("threads", 1),
        )
        _test_delay_hook()
        meta = {k: point[k] for k in ("run_id", "config", "params", "seed")}
        with open(os.path.join(tmp, "point.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        with open(os.path.join(tmp, SUCCESS), "w", encoding="utf-8"):
            pass
        os.makedirs(os.path.dirname(final), exist_ok=True)
        if os.path.isdir(final) and not is_finished(point):
            shutil.rmtree(final)  # debris of a copy made by hand; never ours
        try:
            os.rename(tmp, final)
        except OSError:
            if not is_finished(point):
                raise
            # Another worker finished the same point first: keep theirs.
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"run_id": point["run_id"], "dir": final, "status": "ran"}


# ----- executors: each maps run_point over the points, yielding as done ------


def _serial(points: list[dict[str, Any]], **_: Any) -> Iterator[dict[str, Any]]:
    for p in points:
        yield run_point(p)


def _processes(
    points: list[dict[str, Any]], workers: int | None = None, retries: int = 2, **_: Any
) -> Iterator[dict[str, Any]]:
    """Run the points on a pool of local processes.

    A worker that dies (a crash, the OOM killer) breaks a
    ``ProcessPoolExecutor``: every point in it fails, the one that killed
    the worker and those that happened to run beside it alike. As on Dask,
    the points are run again: queued ones on a fresh pool, and each that
    was mid-run alone in a pool of one, so that only the point that kills
    its worker dies again. A point whose worker died more than ``retries``
    times is given up (status ``failed``) and the others go on."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    n = workers or os.cpu_count() or 1
    # spawn, not fork: the parent may hold polars' or Dask's threads.
    ctx = multiprocessing.get_context("spawn")
    deaths: dict[str, int] = {}
    todo = list(points)
    suspects: list[dict[str, Any]] = []
    while todo or suspects:
        if suspects:
            batch, alone = [suspects.pop(0)], True
        else:
            batch, todo, alone = todo, [], False
        broken: list[dict[str, Any]] = []
        ex = ProcessPoolExecutor(max_workers=min(n, len(batch)), mp_context=ctx)
        try:
            futs = {ex.submit(run_point, p): p for p in batch}
            for f in as_completed(futs):
                try:
                    yield f.result()
                except BrokenProcessPool:
                    broken.append(futs[f])
        except BaseException:
            # Ctrl-C (or the caller stopped): stop the workers now rather
            # than wait for their points; what they were writing is in .tmp
            # and never counts as finished.
            _stop_pool(ex)
            raise
        ex.shutdown(wait=True)
        mid_run = _mid_run(broken) or broken
        for p in broken:
            if is_finished(p):
                continue
            rid = p["run_id"]
            if not any(p is m for m in mid_run):
                todo.append(p)  # only queued: not its fault
                continue
            deaths[rid] = deaths.get(rid, 0) + 1
            if alone and deaths[rid] > retries:
                yield {"run_id": rid, "dir": p["dir"], "status": "failed",
                       "error": f"its worker process died {deaths[rid]} times"}
            elif alone or deaths[rid] <= retries:
                suspects.append(p)
            else:
                # Died beside others more than `retries` times: one last
                # try alone decides whether it is the culprit.
                deaths[rid] = retries
                suspects.append(p)


def _mid_run(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Those of ``points`` that a dead pool was running: they left a
    directory in ``.tmp`` (removed here, as nothing will finish it)."""
    hit = []
    for p in points:
        tmp_root = Path(p["tmp_root"])
        left = list(tmp_root.glob(f"{p['run_id']}-*")) if tmp_root.is_dir() else []
        for d in left:
            shutil.rmtree(d, ignore_errors=True)
        if left:
            hit.append(p)
    return hit


def _stop_pool(ex: Any) -> None:
    # ProcessPoolExecutor has no public way to stop running calls: end its
    # processes (they hold no lock and write only into .tmp), then shut down.
    for proc in list(getattr(ex, "_processes", {}).values()):
        with contextlib.suppress(Exception):
            proc.terminate()
    ex.shutdown(wait=False, cancel_futures=True)


def _futures(
    ex: Any, points: list[dict[str, Any]], **_: Any
) -> Iterator[dict[str, Any]]:
    from concurrent.futures import as_completed

    futs = [ex.submit(run_point, p) for p in points]
    for f in as_completed(futs):
        yield f.result()


def _dask_client_map(
    client: Any, points: list[dict[str, Any]], retries: int
) -> Iterator[dict[str, Any]]:
    from distributed import as_completed

    futs = client.map(
        run_point,
        points,
        key=[f"pktsim-point-{p['run_id']}-{uuid.uuid4().hex[:6]}" for p in points],
        retries=retries,
        pure=False,
    )
    for f in as_completed(futs):
        yield f.result()


def _dask(
    points: list[dict[str, Any]],
    workers: int | None = None,
    address: str | None = None,
    retries: int = 2,
    **_: Any,
) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("the dask executor needs `pip install 'pktsim[dask]'`") from e
    if address:
        with Client(address) as client:
            yield from _dask_client_map(client, points, retries)
        return
    n = workers or os.cpu_count() or 1
    with (
        LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield from _dask_client_map(client, points, retries)


def _executor_fn(executor: Any) -> Callable[..., Iterator[dict[str, Any]]]:
    if executor in (None, "processes", "local"):
        return _processes
    if executor == "serial":
        return _serial
    if executor == "dask":
        return _dask
    if isinstance(executor, str):
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    mod = type(executor).__module__
    if mod.startswith("distributed"):  # a dask.distributed Client
        return lambda points, retries=2, **_: _dask_client_map(executor, points, retries)
    if hasattr(executor, "submit"):  # a concurrent.futures.Executor
        return lambda points, **kw: _futures(executor, points, **kw)
    raise TypeError(f"cannot run points on {executor!r}")


def _progress(total: int, initial: int, enabled: bool) -> Any:
    if not enabled:
        return contextlib.nullcontext(None)
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="point", desc="sweep", file=sys.stderr)


def sweep(
    base: ConfigLike | Sequence[ConfigLike] | Mapping[str, ConfigLike],
    grid: Mapping[str, Sequence[Any]] | None = None,
    seeds: Sequence[int] | None = None,
    *,
    out: str | os.PathLike[str] = "results/sweep",
    executor: Any = "processes",
    workers: int | None = None,
    address: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    retries: int = 2,
    progress: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
    threads_per_point: int = 1,
) -> SweepResult:
    """Run every point of ``base`` × ``grid`` × ``seeds`` into ``out``.

    - ``base``: one config (path, TOML text, dict), a list of config paths
      (a ``config`` column named by file stem) or a ``{name: config}`` map.
    - ``grid``: ``{key: [values]}``; a key is a dotted path
      (``"workload.0.load"``, ``"network.switch_queue.k_packets"``; ``*``
      for every list element), an alias (``load``, ``flows``) or
      ``"column=path"``. Each key is a partition column.
    - ``seeds``: the seeds of each point (default: each config's own).
    - ``fixed``: keys set in every point without making a column (e.g.
      ``{"flows": 500}`` to shrink a sweep).
    - ``executor``: ``"serial"``, ``"processes"`` (``workers`` local
      processes, default every core), ``"dask"`` (attach to the scheduler
      at ``address``, or start a LocalCluster of ``workers`` processes), or
      a ``concurrent.futures.Executor`` or ``distributed.Client`` of yours.
      On Dask a point whose worker dies is retried elsewhere (``retries``
      more times when it fails outright); on local processes a point whose
      worker dies is run again on a fresh pool, up to ``retries`` more
      times, and the other points go on (:class:`PointFailed` at the end
      names any point given up).
    - ``threads_per_point``: threads of each run (default 1, whatever the
      configs' ``[run] threads`` say: the points already use every core;
      a run's results are the same for every thread count).

    Finished points are skipped, so a sweep that was interrupted finishes
    when started again. Ctrl-C stops the sweep (its workers too) and leaves
    only finished points. A progress bar shows points done / total.
    """
    points = make_points(base, grid, seeds, out=out, fixed=fixed, base_dir=base_dir)
    if threads_per_point < 1:
        raise ValueError(f"threads_per_point must be at least 1, not {threads_per_point}")
    for p in points:
        p["threads"] = threads_per_point
    outp = Path(out).resolve()
    outp.mkdir(parents=True, exist_ok=True)
    # Catch a bad grid value before anything is launched.
    checked: set[str] = set()
    for p in points:
        key = json.dumps([p["config"], p["params"]], sort_keys=True, default=str)
        if key not in checked:
            checked.add(key)
            _, warned = _core.validate(p["toml"], label=p["label"], base_dir=p["base_dir"])
            for w in warned:
                warnings.warn(f"{p['label']}: {w}", RuntimeWarning, stacklevel=2)
    _write_manifest(outp, base, grid, seeds, fixed, points)
    todo = [p for p in points if not is_finished(p)]
    result = SweepResult(out=outp, points=points, skipped=len(points) - len(todo))
    run = _executor_fn(executor)
    with _progress(len(points), result.skipped, progress and bool(todo)) as bar:
        if todo:
            try:
                for r in run(todo, workers=workers, address=address, retries=retries):
                    if r["status"] == "ran":
                        result.ran += 1
                    elif r["status"] == "failed":
                        result.failed.append((r["run_id"], r.get("error", "failed")))
                    else:
                        result.skipped += 1
                    if bar is not None:
                        bar.update(1)
            except KeyboardInterrupt:
                # What the stopped points were writing is not a result.
                _clean_tmp(outp / ".tmp", {p["run_id"] for p in todo})
                raise
    _clean_tmp(outp / ".tmp", {p["run_id"] for p in points})
    if result.failed:
        raise PointFailed(result.failed)
    return result


def _clean_tmp(tmp_root: Path, run_ids: set[str]) -> None:
    """Remove what killed runs of this sweep's points left in ``.tmp`` (all
    its points are finished now); leave other sweeps' work alone."""
    if not tmp_root.is_dir():
        return
    for d in tmp_root.iterdir():
        # A point's folder is RUNID-XXXXXXXX; the core writes it all or
        # nothing through a staging folder and a lock beside it
        # (.RUNID-XXXXXXXX.pktsim-tmp-..., .RUNID-XXXXXXXX.pktsim-lock),
        # which a killed point leaves too.
        base = d.name.lstrip(".").split(".pktsim-", 1)[0]
        if base.rsplit("-", 1)[0] in run_ids:
            if d.is_dir():
                shutil.rmtree(d, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    d.unlink()
    with contextlib.suppress(OSError):
        tmp_root.rmdir()  # only if empty


def _write_manifest(
    out: Path,
    base: Any,
    grid: Mapping[str, Sequence[Any]] | None,
    seeds: Sequence[int] | None,
    fixed: Mapping[str, Any] | None,
    points: list[dict[str, Any]],
) -> None:
    def desc(b: Any) -> Any:
        if isinstance(b, str | os.PathLike) and "\n" not in str(b):
            return str(b)
        if isinstance(b, Mapping) and not _looks_like_config(b):
            return {str(k): desc(v) for k, v in b.items()}
        if isinstance(b, list | tuple):
            return [desc(x) for x in b]
        return "<inline config>"

    doc = {
        "base": desc(base),
        "grid": {k: list(v) for k, v in (grid or {}).items()},
        "seeds": list(seeds) if seeds is not None else None,
        "fixed": dict(fixed or {}),
        "points": len(points),
        "pktsim_version": _core.version(),
    }
    tmp = out / f"sweep.json.tmp{os.getpid()}"
    tmp.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, out / "sweep.json")


# ----- reading results --------------------------------------------------------


def _runs_dir(out: str | os.PathLike[str]) -> Path:
    p = Path(out)
    return p if p.name == "runs" else p / "runs"


def _hive_schema(runs: Path) -> dict[str, Any]:
    """The partition columns and their types, read off the finished points'
    paths: integers, else floats, else strings (``run_id`` and ``config``
    always strings, so that an all-digit hash stays a string)."""
    import polars as pl

    values: dict[str, list[str]] = {}
    for d in finished_dirs(runs.parent):
        for part in d.relative_to(runs).parts:
            k, _, v = part.partition("=")
            values.setdefault(k, []).append(urllib.parse.unquote(v))

    def kind(col: str, vs: list[str]) -> Any:
        if col in ("run_id", "config"):
            return pl.String
        for t, conv in ((pl.Int64, int), (pl.Float64, float)):
            try:
                for v in vs:
                    conv(v)
                return t
            except ValueError:
                continue
        return pl.String

    return {k: kind(k, vs) for k, vs in values.items()}


def scan_sweep(out: str | os.PathLike[str], table: str = "flows") -> pl.LazyFrame:
    """A lazy scan of every finished point's ``<table>.parquet`` (``flows``
    or ``queues``) with the partition columns (config, grid columns, seed,
    run_id) added: one ``polars.scan_parquet`` call over the hive tree."""
    import polars as pl

    runs = _runs_dir(out)
    return pl.scan_parquet(
        str(runs / "**" / f"{table}.parquet"),
        hive_partitioning=True,
        hive_schema=_hive_schema(runs) or None,
        try_parse_hive_dates=False,
    )


def load_sweep(out: str | os.PathLike[str], table: str = "flows") -> pl.DataFrame:
    """Every flow (or queue sample) of a sweep, sorted by point and row."""
    lf = scan_sweep(out, table)
    keys = [c for c in lf.collect_schema().names() if c in ("run_id", "flow_id", "time_ps")]
    return lf.collect().sort(keys, maintain_order=True)


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if k == "buckets" and isinstance(v, list):
            for b in v:
                label = b.get("label", "?")
                flat.update(
                    _flatten({x: y for x, y in b.items() if x != "label"}, f"{key}.{label}.")
                )
        elif k == "phases" and isinstance(v, list):
            # By index, so that a claim or a table can name one phase's
            # figure ("phases.1.slowdown.p99": during the first failure).
            for i, p in enumerate(v):
                flat.update(_flatten(p, f"{key}.{i}."))
        elif isinstance(v, Mapping):
            flat.update(_flatten(v, key + "."))
        elif isinstance(v, list):
            flat[key] = json.dumps(v)
        else:
            flat[key] = v
    return flat


def flatten_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary as one flat dict with dotted keys (``slowdown.mean``,
    ``buckets.0B-100KB.slowdown.p99``, ``meta.git_commit``; a run with
    scheduled changes also ``phases.1.slowdown.p99``, by phase index)."""
    return _flatten(summary)


def finished_dirs(out: str | os.PathLike[str]) -> list[Path]:
    """The directories of a sweep's finished points, in path order."""
    return sorted(p.parent for p in _runs_dir(out).glob(f"**/{SUCCESS}"))


def load_summaries(out: str | os.PathLike[str]) -> pl.DataFrame:
    """One row per finished point: ``run_id``, ``config``, the grid
    columns, ``seed``, then the flattened summary (``slowdown.mean``, ...)
    and ``load``/``workload`` read from the point's config."""
    import tomllib

    import polars as pl

    rows = []
    for d in finished_dirs(out):
        point = json.loads((d / "point.json").read_text(encoding="utf-8"))
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        cfg = tomllib.loads((d / "config.toml").read_text(encoding="utf-8"))
        row: dict[str, Any] = {"run_id": point["run_id"]}
        if point.get("config") is not None:
            row["config"] = point["config"]
        row.update(point["params"])
        row["seed"] = point["seed"]
        wl = (cfg.get("workload") or [{}])[0]
        row.setdefault("load", wl.get("load"))
        row.setdefault("workload", str(wl.get("cdf") or wl.get("kind") or ""))
        for k, v in flatten_summary(summary).items():
            row.setdefault(k, v)
        row["path"] = str(d)
        rows.append(row)
    if not rows:
        return pl.DataFrame()
    return pl.DataFrame(rows, infer_schema_length=None).sort("run_id")
