#!/usr/bin/env bash
# Run every test of the project. This is the README's test command and what
# CI (.ci/run) calls.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# Doc comments link to what they name: a broken or private link fails here.
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p pktsim -p fastpass-arbiter -p pktsim-py
cargo test --workspace
bash scripts/test_python.sh
