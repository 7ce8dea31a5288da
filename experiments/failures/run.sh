#!/usr/bin/env bash
# Run the failure experiment: every config of this folder (6 designs x
# baseline / linkdown / gray, and DCTCP+ECMP with routing that never
# reacts), then print the README's table and draw its plots.
#
#   ./run.sh                          # results in results/failures/, plots here
#   ./run.sh --jobs 2 --only 'ecmp_*' # a subset
#
# Options:
#   --jobs J      runs at once (default: all cores)
#   --only GLOB   only configs whose file name matches
#   --out DIR     results folder (default: results/failures under the root)
#   --bin PATH    the pktsim binary (default: build target/release/pktsim)
#   --plots DIR   where the PNGs go (default: this folder)
# PYTHON names an interpreter with polars and matplotlib (default: the
# repository's .venv if it has one, else python3). A run whose
# summary.json exists is not run again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

jobs="$(nproc)"
only="*"
out="$root/results/failures"
bin=""
plots="$here"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --plots) plots="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin" ]]; then
  (cd "$root" && cargo build --release --quiet -p pktsim-cli)
  bin="$root/target/release/pktsim"
fi
py="${PYTHON:-}"
if [[ -z "$py" ]]; then
  py=python3
  [[ -x "$root/.venv/bin/python" ]] && py="$root/.venv/bin/python"
fi
mkdir -p "$out"

list=()
for cfg in "$here"/*.toml; do
  file="$(basename "$cfg")"
  # shellcheck disable=SC2053 # $only is a glob on purpose
  [[ "$file" == $only ]] || continue
  stem="${file%.toml}"
  [[ -f "$out/$stem/summary.json" ]] && continue
  list+=("$stem")
done
echo "${#list[@]} runs, $jobs at a time, results in $out" >&2

export bin out here
if [[ ${#list[@]} -gt 0 ]]; then
  printf '%s\n' "${list[@]}" | xargs -P "$jobs" -I{} sh -c \
    '"$bin" run "$here/{}.toml" --out "$out/{}" --quiet && echo "done {}" >&2'
fi

"$py" "$here/summarize.py" "$out" --plots "$plots"
