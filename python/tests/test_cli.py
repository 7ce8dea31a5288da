"""The Python package's ``pktsim`` command: usage mistakes are one line
with exit code 2, for its own commands and the Rust ones alike; its help
names the Python commands."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _pktsim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pktsim", *args], capture_output=True, text=True
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep"], "sweep_file"),
        (["reproduce", "phost", "--scale", "lots"], "--scale"),
        (["report", "x", "--bogus"], "--bogus"),
        (["run", "x.toml", "--bogus"], "--bogus"),
        (["validate"], "CONFIG"),
    ],
)
def test_usage_mistakes_are_one_line(args: list[str], needle: str) -> None:
    r = _pktsim(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ") and needle in lines[0], lines[0]
    assert "--help" in lines[0]


def test_help_names_the_python_commands() -> None:
    r = _pktsim("--help")
    assert r.returncode == 0
    for c in ("sweep", "report", "reproduce", "run", "validate"):
        assert c in r.stdout, c
