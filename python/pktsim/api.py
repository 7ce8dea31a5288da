"""``pktsim.run``: one simulation, its results as a polars DataFrame."""

from __future__ import annotations

import json
import os
import sys
import warnings
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core
from ._config import ConfigLike, source_of

if TYPE_CHECKING:
    import polars as pl


class RunResult:
    """The results directory of one run.

    - ``path``: the directory (``flows.parquet``, ``summary.json``,
      ``config.toml``, maybe ``queues.parquet``, ``links.parquet``,
      ``packets.parquet`` and ``timeseries.parquet``);
    - ``flows``: one row per flow (a polars DataFrame, read on first use);
    - ``summary``: ``summary.json`` as a dict;
    - ``queues``: the queue samples, or None when none were taken;
    - ``links``: one row per port and interval of ``[output.links]`` (bytes,
      utilisation, drops by reason, ECN marks, deflections, notices), or
      None when the run took no link series;
    - ``packets``: the packet trace of ``[output.trace]``, one row per hop
      event of a traced packet, or None when the run traced none;
    - ``timeseries``: the per-flow time series of ``[output.timeseries]``
      (``time_ps``, ``flow``, ``host``, ``variable``, ``value``; the unit is
      in the variable's name, e.g. ``cwnd_bytes``), or None;
    - ``faults``: the scheduled network changes the run applied
      (``[[event]]``), as (µs, what) in time order; empty for a run without;
    - ``phases``: the run cut at those changes, one row per phase (its
      bounds, the change that opened it, its flows' FCT, slowdown and
      goodput, the drops while it lasted by reason; see
      :func:`pktsim.failures.phases_frame`), no rows for a run without;
    - ``config``: the resolved config (TOML text, every default filled in).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not (self.path / "flows.parquet").is_file():
            raise FileNotFoundError(f"{self.path}: no flows.parquet (not a pktsim run)")

    @cached_property
    def flows(self) -> pl.DataFrame:
        import polars as pl

        return pl.read_parquet(self.path / "flows.parquet")

    @cached_property
    def summary(self) -> dict[str, Any]:
        return json.loads((self.path / "summary.json").read_text(encoding="utf-8"))

    def _optional(self, name: str) -> pl.DataFrame | None:
        """The table ``name``.parquet, or None when the run did not write it."""
        import polars as pl

        q = self.path / f"{name}.parquet"
        return pl.read_parquet(q) if q.is_file() else None

    @cached_property
    def queues(self) -> pl.DataFrame | None:
        return self._optional("queues")

    @cached_property
    def links(self) -> pl.DataFrame | None:
        return self._optional("links")

    @cached_property
    def packets(self) -> pl.DataFrame | None:
        return self._optional("packets")

    @cached_property
    def timeseries(self) -> pl.DataFrame | None:
        return self._optional("timeseries")

    @cached_property
    def faults(self) -> list[tuple[float, str]]:
        from .failures import faults

        return faults(self.summary)

    @cached_property
    def phases(self) -> pl.DataFrame:
        from .failures import phases_frame

        return phases_frame(self.summary)

    @cached_property
    def config(self) -> str:
        return (self.path / "config.toml").read_text(encoding="utf-8")

    def __repr__(self) -> str:
        return f"RunResult({str(self.path)!r})"


def run(
    config: ConfigLike,
    out: str | os.PathLike[str] | None = None,
    *,
    seed: int | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    quiet: bool = True,
    threads: int | None = None,
) -> RunResult:
    """Run one experiment and return its results.

    ``config`` is a path to a TOML file, TOML text (any string with a line
    break) or a dict of the same shape. Results go to ``out`` (default
    ``results/<config file stem, or the config's name>``). ``seed``
    overrides the config's seed. ``threads`` overrides ``[run] threads``
    (default 1): the run's results are the same for every count. Relative
    paths in the config (CDF and flow files) resolve against the config
    file's folder, else ``base_dir``, else the current folder.
    ``quiet=False`` shows the core's progress bar on a terminal.

    The GIL is released while the simulation runs, and Ctrl-C stops it
    within a fraction of a second (``KeyboardInterrupt``). Bad input raises
    :class:`pktsim.ConfigError` naming the field (and file and line),
    before anything runs: a config estimated to need more memory or events
    than the limits (see ``[limits]`` in the README) included, so the
    interpreter survives it. An ``out`` that is a file or cannot be written,
    or that another run is writing into, raises :class:`OSError`, also
    before the run.

    ``out`` is written all or nothing: it keeps the earlier run's files
    until every file of this one is complete, then holds this run's (files
    pktsim did not write are kept). A failure (a full disk, Ctrl-C, a
    crash) leaves it as it was. A run in which no flow finished gives a
    :class:`RuntimeWarning`, and so does each warning ``pktsim run`` prints:
    the config's (those ``pktsim validate`` prints: a protocol that runs on
    one thread whatever ``threads`` says, an allowed mismatch), and more
    threads than the process has cores.
    """
    src = source_of(config, base_dir)
    dest = Path(out) if out is not None else Path("results") / src.name
    warned = _core.run(
        src.text,
        str(dest),
        label=src.label,
        base_dir=src.base_dir,
        seed=seed,
        quiet=quiet,
        command_line=" ".join(sys.argv) or None,
        threads=threads,
    )
    for w in warned:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    res = RunResult(dest)
    s = res.summary
    if s.get("flows", 0) > 0 and s.get("finished", 0) == 0:
        warnings.warn(
            f"no flow finished: the run stopped ({s.get('stop_reason')}) at "
            f"{s.get('sim_time_us', 0):.3f} µs of simulated time with all "
            f"{s['flows']} flows unfinished",
            RuntimeWarning,
            stacklevel=2,
        )
    return res


def validate(
    config: ConfigLike, *, base_dir: str | os.PathLike[str] | None = None
) -> str:
    """Check a config (and build its topology and workload) without running
    it; returns the resolved config as TOML. Raises :class:`ConfigError`;
    each warning ``pktsim validate`` prints is a :class:`RuntimeWarning`.
    Ctrl-C interrupts it at once."""
    src = source_of(config, base_dir)
    text, warned = _core.validate(src.text, label=src.label, base_dir=src.base_dir)
    for w in warned:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return text
