"""The ``pktsim`` command of the Python package.

``sweep``, ``report`` and ``reproduce`` are Python; every other command
(``run``, ``validate``, ``bench``) is the Rust command line itself, run
through the extension module, so one install gives both.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from . import _core

PY_COMMANDS = {
    "sweep": "Run a grid of experiments x seeds from a sweep file (resumes if interrupted)",
    "report": "Write RESULTS_DIR/report.html and plots of a run or a sweep",
    "reproduce": "Run experiments/NAME (scaled down by --scale) and write its report",
}


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor",
        choices=["serial", "processes", "dask"],
        help="where points run (default: the sweep file's, else processes)",
    )
    p.add_argument("--workers", type=int, help="processes or Dask workers (default: every core)")
    p.add_argument("--address", help="Dask scheduler to attach to (default: start a LocalCluster)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, with a usage mistake told in one line (as the Rust
    commands tell theirs), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (try {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    ap = _OneLineErrors(prog="pktsim")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_OneLineErrors)
    s = sub.add_parser("sweep", help=PY_COMMANDS["sweep"])
    s.add_argument("sweep_file", type=Path, help="the sweep's TOML file (see docs/python.md)")
    s.add_argument("--out", type=Path, help="results folder (default: the file's `out`)")
    _executor_args(s)
    r = sub.add_parser("report", help=PY_COMMANDS["report"])
    r.add_argument("results_dir", type=Path)
    r.add_argument("--title")
    r.add_argument("--claims", type=Path, help="a published.toml to compare against")
    x = sub.add_parser("reproduce", help=PY_COMMANDS["reproduce"])
    x.add_argument("name", help="a folder under experiments/")
    x.add_argument("--scale", type=float, default=1.0, help="divide flow counts by S")
    x.add_argument("--out", type=Path)
    x.add_argument("--experiments", type=Path, help="the experiments folder")
    x.add_argument("--seeds", help="comma-separated seeds (default: each config's)")
    _executor_args(x)
    return ap


def cmd_sweep(a: argparse.Namespace) -> int:
    from .sweep import sweep

    spec = tomllib.loads(a.sweep_file.read_text(encoding="utf-8"))
    here = a.sweep_file.resolve().parent
    known = {"base", "configs", "out", "seeds", "executor", "workers", "address", "grid", "fixed"}
    unknown = sorted(set(spec) - known)
    if unknown:
        print(f"error: {a.sweep_file}: unknown key(s) {unknown}; known: {sorted(known)}",
              file=sys.stderr)
        return 2
    if ("base" in spec) == ("configs" in spec):
        print(f"error: {a.sweep_file}: give `base` (one config) or `configs` (a list)",
              file=sys.stderr)
        return 2
    base = spec.get("base") or spec.get("configs")
    base = [here / c for c in base] if isinstance(base, list) else here / base
    out = a.out or Path(spec.get("out", f"results/{a.sweep_file.stem}"))
    res = sweep(
        base,
        grid=spec.get("grid"),
        seeds=spec.get("seeds"),
        out=out,
        executor=a.executor or spec.get("executor", "processes"),
        workers=a.workers or spec.get("workers"),
        address=a.address or spec.get("address"),
        fixed=spec.get("fixed"),
        progress=not a.no_progress,
    )
    print(
        f"{len(res.points)} points: {res.ran} run now, {res.skipped} already done; "
        f"results: {res.out}"
    )
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    from .report import report

    claims = None
    if a.claims:
        claims = tomllib.loads(a.claims.read_text(encoding="utf-8")).get("claim", [])
    print(f"report: {report(a.results_dir, claims=claims, title=a.title)}")
    return 0


def cmd_reproduce(a: argparse.Namespace) -> int:
    from .report import _tables, finished_line, verdict_line, verdicts
    from .reproduce import reproduce

    seeds = [int(s) for s in a.seeds.split(",")] if a.seeds else None
    path = reproduce(
        a.name,
        a.scale,
        experiments=a.experiments,
        out=a.out,
        seeds=seeds,
        executor=a.executor or "processes",
        workers=a.workers,
        address=a.address,
        progress=not a.no_progress,
    )
    # The verdicts and what they stand on, on the terminal: the page has
    # the details.
    summaries, _, _ = _tables(path.parent)
    print(f"{verdict_line(verdicts(path.parent))}; {finished_line(summaries)}")
    print(f"report: {path}")
    return 0


def threading_is_main() -> bool:
    """Whether this is the main thread (the only one that may set signal
    handlers)."""
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pktsim`` command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in PY_COMMANDS:
        from ._errors import ConfigError

        a = _parser().parse_args(args)
        try:
            return {"sweep": cmd_sweep, "report": cmd_report, "reproduce": cmd_reproduce}[
                a.cmd
            ](a)
        except (ConfigError, FileNotFoundError, ValueError, KeyError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            # Finished points are kept and unfinished ones left no files.
            print("interrupted: finished runs are kept; run the command again to resume",
                  file=sys.stderr)
            return 130
    # The Rust commands stop on Ctrl-C as the Rust binary does: at once,
    # their results directory untouched (it is written all or nothing).
    # Python's own handler would only raise once the command had ended.
    # (`pktsim --help` lists the Python commands too: the Rust help says
    # where they come from.)
    if not threading_is_main():
        return _core.cli_main(["pktsim", *args])
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        return _core.cli_main(["pktsim", *args])
    finally:
        signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
