"""``pktsim reproduce NAME [--scale S]``: run a paper's folder
``experiments/NAME/`` and write its report, published numbers beside ours.

Every ``*.toml`` in the folder except ``published.toml`` is one config (the
``config`` column, named by file stem). ``--scale S`` divides each
workload's ``flows`` (and a ``queries`` workload's ``queries``) by S (at
least one), so a 100,000-flow
experiment runs on a laptop at S = 100. The optional ``published.toml``
lists the paper's numbers, one ``[[claim]]`` each::

    [[claim]]
    config = "websearch_phost.toml"      # the runs it is measured on
    metric = "slowdown.mean"             # a flattened summary key
    value = 1.04                         # the published number
    relative_to = "websearch_pfabric.toml"  # optional: a ratio of two configs
    bound = "max"                        # optional: the paper gives an upper bound
    tolerance = 0.1                      # optional: relative, for a value without a bound
    where = { load = 0.6 }               # optional: filter on run columns
    source = "Gao et al., CoNEXT 2015, abstract"
    note = "within 4 % of pFabric"

An optional top-level ``needs_scale`` (default 1) says at which scale the
claims can be tested; the report names the scale that ran and that one,
and gives every claim a verdict (see :func:`pktsim.report.verdict`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._config import source_of
from .report import SCALE_FILE

PUBLISHED = "published.toml"


def find_experiment(name: str, experiments: str | os.PathLike[str] | None = None) -> Path:
    """The folder of experiment ``name``: under ``experiments`` if given,
    else ``experiments/NAME`` in the current folder or one of its parents,
    else in the source tree the package was installed from."""
    if experiments is not None:
        e = Path(experiments)
        for cand in (e / name, e):
            if cand.is_dir() and cand.name == name:
                return cand
        raise FileNotFoundError(f"{e}: no experiment folder {name!r}")
    here = Path.cwd().resolve()
    roots = [here, *here.parents, Path(__file__).resolve().parents[2]]
    for r in roots:
        cand = r / "experiments" / name
        if cand.is_dir():
            return cand
    raise FileNotFoundError(
        f"no experiments/{name}/ here or above {here}; give the folder with --experiments"
    )


def scaled(cfg: dict[str, Any], scale: float) -> dict[str, Any]:
    """``cfg`` with every workload's ``flows`` (and a ``queries``
    workload's query count) divided by ``scale``."""
    if scale == 1:
        return cfg
    for w in cfg.get("workload") or []:
        if isinstance(w.get("flows"), int):
            w["flows"] = max(1, math.ceil(w["flows"] / scale))
        if w.get("kind") == "queries" and isinstance(w.get("queries"), int):
            w["queries"] = max(1, math.ceil(w["queries"] / scale))
    return cfg


def _total_flows(cfg: dict[str, Any]) -> int | None:
    """Flows of a config's workloads with a flow count (None if none has one)."""
    n = [w["flows"] for w in cfg.get("workload") or [] if isinstance(w.get("flows"), int)]
    return sum(n) if n else None


def needs_scale(folder: Path) -> float:
    """The scale the published claims need: ``needs_scale`` at the top of
    ``published.toml``, else 1 (the configs as shipped are the paper's size)."""
    p = folder / PUBLISHED
    if not p.is_file():
        return 1.0
    return float(tomllib.loads(p.read_text(encoding="utf-8")).get("needs_scale", 1))


def load_claims(folder: Path) -> list[dict[str, Any]]:
    """The ``[[claim]]`` entries of ``folder/published.toml`` (none if absent)."""
    p = folder / PUBLISHED
    if not p.is_file():
        return []
    return list(tomllib.loads(p.read_text(encoding="utf-8")).get("claim", []))


def reproduce(
    name: str,
    scale: float = 1.0,
    *,
    experiments: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    seeds: Sequence[int] | None = None,
    executor: Any = "processes",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> Path:
    """Run ``experiments/NAME`` scaled down by ``scale`` into ``out``
    (default ``results/reproduce/NAME``, with ``-scaleS`` when scaled) and
    write its report; returns the report's path. Finished runs are kept, so
    an interrupted reproduction resumes."""
    from .report import report
    from .sweep import sweep

    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    folder = find_experiment(name, experiments)
    files = sorted(p for p in folder.glob("*.toml") if p.name != PUBLISHED)
    if not files:
        raise FileNotFoundError(f"{folder}: no configs (*.toml)")
    configs: dict[str, Any] = {}
    flows: dict[str, dict[str, int | None]] = {}
    for f in files:
        src = source_of(f)
        full = tomllib.loads(src.text)
        before = _total_flows(full)
        configs[f.stem] = scaled(full, scale)
        flows[f.stem] = {"full": before, "run": _total_flows(configs[f.stem])}
    if out is None:
        suffix = "" if scale == 1 else f"-scale{scale:g}"
        out = Path("results") / "reproduce" / f"{name}{suffix}"
    sweep(
        configs,
        seeds=seeds,
        out=out,
        executor=executor,
        workers=workers,
        address=address,
        progress=progress,
        base_dir=folder,
    )
    # Keep the published numbers with the results: `pktsim report OUT` shows them.
    if (folder / PUBLISHED).is_file():
        shutil.copyfile(folder / PUBLISHED, Path(out) / PUBLISHED)
    # And the scale, so that the report says what was run and what the claims need.
    info = {"name": name, "scale": scale, "needs_scale": needs_scale(folder), "flows": flows}
    (Path(out) / SCALE_FILE).write_text(json.dumps(info, indent=1), encoding="utf-8")
    title = f"pktsim reproduce {name}"
    if scale != 1:
        title += f" (flows scaled down by {scale:g})"
    return report(out, claims=load_claims(folder), title=title)
