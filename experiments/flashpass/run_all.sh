#!/usr/bin/env bash
# Run every FlashPass config in this folder (or those matching a glob) with
# the release binary, then print the tables beside the paper's numbers.
#
#   ./run_all.sh                   # everything, as the files say
#   ./run_all.sh 'dynamic_load0.4_*'
#
# Results go to results/flashpass/<config>/ under the repository root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
only="${1:-*}"
out="$root/results/flashpass"
(cd "$root" && cargo build --release -p pktsim-cli)
mkdir -p "$out"
for f in "$here"/$only.toml; do
  [[ "$(basename "$f")" == published.toml ]] && continue
  name="$(basename "$f" .toml)"
  echo "== $name"
  "$root/target/release/pktsim" run "$f" --out "$out/$name" | tail -4
done
python3 "$here/summarize.py" "$out"
