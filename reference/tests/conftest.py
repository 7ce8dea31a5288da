"""Tests of the reference simulators' converters (reference/): CI runs them
although it builds neither simulator. The converters are plain modules beside
this folder, so put reference/ on the import path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
