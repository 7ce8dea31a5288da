"""The README's Python example works when saved as a script and run: the
sweep in it starts worker processes (spawn), which import the script, so
it needs its ``if __name__ == "__main__":`` guard."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def readme_script() -> str:
    """The README's Python block that runs a sweep (the one a newcomer saves)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    runnable = [b for b in blocks if "pktsim.sweep(" in b]
    assert len(runnable) == 1, f"want one Python block with a sweep, found {len(runnable)}"
    return runnable[0]


def test_readme_python_block_runs_as_a_script(tmp_path: Path) -> None:
    script = readme_script()
    assert 'if __name__ == "__main__":' in script
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / "readme_example.py").write_text(script, encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "readme_example.py"], cwd=tmp_path, capture_output=True, text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "BrokenProcessPool" not in r.stderr
    assert (tmp_path / "results" / "sweep" / "report.html").is_file()
    assert (tmp_path / "results" / "leafspine_dctcp" / "flows.parquet").is_file()
