#!/usr/bin/env bash
# Run every test of the project. This is the README's test command and what
# CI (.ci/run) calls.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace
bash scripts/test_python.sh
