"""pktsim: a fast, deterministic packet-level network simulator.

- :func:`run` runs one experiment (a path, TOML text or a dict) and returns
  a :class:`RunResult` (``.flows`` as a polars DataFrame, ``.summary``,
  ``.path``).
- :func:`reference` computes flow-level SRPT and processor-sharing FCTs
  on a finished run's arrivals, beside the measured ones.
- :func:`pcap` turns a run's packet trace into a pcapng file for Wireshark.
- :func:`sweep` runs a grid of experiments × seeds serially, on local
  processes or on a Dask cluster, into a hive-partitioned Parquet tree that
  :func:`load_sweep` reads in one call; interrupted sweeps resume.
- :mod:`pktsim.plots` and :func:`report` turn results into figures and a
  self-contained HTML page (a run's time series prepared by
  :mod:`pktsim.series`, zoomable through :mod:`pktsim.interactive`);
  :func:`reproduce` runs a paper's folder.
"""

from __future__ import annotations

from . import _core
from ._errors import ConfigError
from .api import RunResult, run, validate
from .pcap import pcap
from .reference import reference
from .report import report
from .reproduce import reproduce
from .sweep import PointFailed, SweepResult, load_summaries, load_sweep, scan_sweep, sweep

__version__: str = _core.version()

__all__ = [
    "ConfigError",
    "PointFailed",
    "RunResult",
    "SweepResult",
    "__version__",
    "load_summaries",
    "load_sweep",
    "pcap",
    "reference",
    "report",
    "reproduce",
    "run",
    "scan_sweep",
    "sweep",
    "validate",
]
