#!/usr/bin/env bash
# The Python package's tests: build and install it into .venv (as a user's
# `pip install .` would), then lint and run pytest. Called by scripts/test.sh.
#
#   PYTHON=python3.12 bash scripts/test_python.sh   # another interpreter (>= 3.11)
#   PKTSIM_PY_REINSTALL=0 bash scripts/test_python.sh  # reuse the installed build
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
if [[ ! -x .venv/bin/python ]]; then
  "$py" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if [[ "${PKTSIM_PY_REINSTALL:-1}" != 0 ]]; then
  # Not editable: test what `pip install .` installs.
  .venv/bin/python -m pip install --quiet ".[dask,test]"
fi
# The package and the experiments' scripts (config generators, table makers).
.venv/bin/ruff check python/ experiments/ reference/
# From outside the source tree, so the installed package is what is imported.
cd python/tests
../../.venv/bin/python -m pytest -q -p no:cacheprovider
# The reference simulators' converters (reference/): plain modules, tested
# without building either simulator.
cd ../../reference/tests
../../.venv/bin/python -m pytest -q -p no:cacheprovider
