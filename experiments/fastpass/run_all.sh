#!/usr/bin/env bash
# Run the Fastpass experiments (README.md): the 4-to-1 incast and the
# 5-flow fairness run, TCP and Fastpass each, as 1 ms time series, then
# print the tables (summarize.py).
#
#   ./run_all.sh [--out DIR]     # default results/fastpass
#
# Each config's series land in DIR/<config>/{throughput,queues}.csv, and
# `pktsim run` writes the usual flows.parquet / queues.parquet / summary.json
# in DIR/<config>/run/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/results/fastpass"
if [[ "${1:-}" == "--out" ]]; then out="$2"; fi
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release --quiet -p pktsim-cli && \
  cargo build --release --quiet -p pktsim --example timeseries)
mkdir -p "$out"
for cfg in incast_4to1_tcp incast_4to1_fastpass fairness_5flows_tcp fairness_5flows_fastpass; do
  "$target/release/examples/timeseries" "$here/$cfg.toml" 1ms "$out/$cfg"
  "$target/release/pktsim" run "$here/$cfg.toml" --out "$out/$cfg/run" --quiet
done
python3 "$here/summarize.py" "$out" | tee "$out/table.md"
