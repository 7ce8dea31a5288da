"""``pktsim reproduce NAME [--scale S]``: run a paper's folder
``experiments/NAME/`` and write its report, published numbers beside ours.

Every ``*.toml`` in the folder except ``published.toml`` is one config (the
``config`` column, named by file stem). ``--scale S`` divides each
workload's ``flows`` by S (at least one flow), so a 100,000-flow
experiment runs on a laptop at S = 100. The optional ``published.toml``
lists the paper's numbers, one ``[[claim]]`` each::

    [[claim]]
    config = "websearch_phost.toml"      # the runs it is measured on
    metric = "slowdown.mean"             # a flattened summary key
    value = 1.04                         # the published number
    relative_to = "websearch_pfabric.toml"  # optional: a ratio of two configs
    bound = "max"                        # optional: the paper gives an upper bound
    where = { load = 0.6 }               # optional: filter on run columns
    source = "Gao et al., CoNEXT 2015, abstract"
    note = "within 4 % of pFabric"
"""

from __future__ import annotations

import math
import os
import shutil
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._config import source_of

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
    """``cfg`` with every workload's ``flows`` divided by ``scale``."""
    if scale == 1:
        return cfg
    for w in cfg.get("workload") or []:
        if isinstance(w.get("flows"), int):
            w["flows"] = max(1, math.ceil(w["flows"] / scale))
    return cfg


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
    for f in files:
        src = source_of(f)
        configs[f.stem] = scaled(tomllib.loads(src.text), scale)
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
    title = f"pktsim reproduce {name}"
    if scale != 1:
        title += f" (flows scaled down by {scale:g})"
    return report(out, claims=load_claims(folder), title=title)
