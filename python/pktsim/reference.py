"""``pktsim.reference``: flow-level SRPT and processor-sharing references of
a finished run, the Python side of ``pktsim reference``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from . import _core

if TYPE_CHECKING:
    import polars as pl


def reference(
    run_dir: str | os.PathLike[str],
    *,
    rate: str | None = None,
    out: str | os.PathLike[str] | None = None,
) -> pl.DataFrame:
    """Ideal flow-level schedules of a run's flows, on the same arrivals.

    ``run_dir`` is a results folder of :func:`pktsim.run` (or ``pktsim
    run``). Each flow becomes a job at one bottleneck of ``rate`` (e.g.
    ``"10Gbps"``; default: the ``bottleneck_rate`` of a star or dumbbell
    topology, else its host rate) that needs its packets' wire bytes back to
    back, and one server of that rate serves the jobs by preemptive SRPT and
    by processor sharing. Each flow's reference FCT is its response time
    there plus the unloaded latency the run measured it against (its ideal
    FCT minus its service time), so a flow alone gets exactly its ideal FCT.

    Writes the table to ``out`` (default ``run_dir/reference.parquet``, as
    the ``pktsim reference`` command does) and returns it, one row per flow
    in the run's order, times in integer picoseconds: ``flow_id``,
    ``size_bytes``, ``start_ps``, ``fct_ps`` (measured; null if the flow did
    not finish), ``ideal_fct_ps``, ``work_ps`` (service time at the
    bottleneck), ``srpt_fct_ps``, ``ps_fct_ps``. Means, e.g.::

        ref = pktsim.reference("results/bottleneck")
        ref.filter(pl.col("fct_ps").is_not_null()).select(
            pl.col("fct_ps", "srpt_fct_ps", "ps_fct_ps").mean())

    A folder without ``flows.parquet`` raises :class:`FileNotFoundError`;
    a bad ``rate`` raises :class:`pktsim.ConfigError` with field ``rate``.
    """
    import polars as pl

    d = Path(run_dir)
    if not (d / "flows.parquet").is_file():
        raise FileNotFoundError(f"{d}: no flows.parquet (not a pktsim run)")
    dest = Path(out) if out is not None else d / "reference.parquet"
    _core.reference(str(d), rate=rate, out=str(dest))
    return pl.read_parquet(dest)
