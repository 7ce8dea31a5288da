#!/usr/bin/env bash
# Run the whole pHost-paper evaluation: every config in this folder at load
# 0.6, and the load sweep (pHost and pFabric of the Fig. 3 configs) over the
# other loads, then write a markdown table of the results. The configs of
# Figs. 8, 9 and 10 (bimodal*, *_perm_*, incast_*, datamining_buf*) run at
# their own setting only.
#
#   ./run_all.sh                       # paper size: 100,000 flows per run
#   ./run_all.sh --flows 2000 --jobs 2 # a laptop-sized version
#
# Options:
#   --flows N     flows per run (default: as in the configs, 100,000)
#   --queries Q   incast requests per run (default: as in the configs, 10,000)
#   --jobs J      runs at once (default: all cores)
#   --loads "L…"  loads of the sweep (default: "0.5 0.6 0.7 0.8")
#   --only GLOB   only configs whose file name matches (e.g. 'websearch_*')
#   --out DIR     results folder (default: results/phost)
#   --bin PATH    the pktsim binary (default: build target/release/pktsim)
#
# Each run writes DIR/runs/<config>_load<L>/ (flows.parquet, summary.json,
# the resolved config) and DIR/table.md summarises them (summarize.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

flows=""
queries=""
jobs="$(nproc)"
loads="0.5 0.6 0.7 0.8"
only="*"
out="$root/results/phost"
bin=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --flows) flows="$2"; shift 2 ;;
    --queries) queries="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --loads) loads="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run_all.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin" ]]; then
  (cd "$root" && cargo build --release --quiet -p pktsim-cli)
  bin="$root/target/release/pktsim"
fi
mkdir -p "$out/configs" "$out/runs"

# Write one config per (file, load): the sweep covers pHost and pFabric;
# DCTCP, Fastpass and the other figures' configs run at load 0.6 only.
list="$(mktemp "$out/configs/list.XXXXXX")"

for cfg in "$here"/*.toml; do
  file="$(basename "$cfg")"
  # shellcheck disable=SC2053 # $only is a glob on purpose
  [[ "$file" == $only ]] || continue
  stem="${file%.toml}"
  for load in $loads; do
    case "$stem" in
      *_dctcp|*_fastpass|bimodal*|incast_*|datamining_buf*|*_perm_*) [[ "$load" == "0.6" ]] || continue ;;
    esac
    point="${stem}_load${load}"
    # A CDF file of this folder (bimodal_*.cdf): by absolute path, since the
    # written config lives elsewhere.
    sed -e "s/^load = .*/load = $load/" \
        -e "s|^cdf = \"\\(.*\\.cdf\\)\"|cdf = \"$here/\\1\"|" \
        -e "s/^name = \"\\(.*\\)\"/name = \"\\1-load$load\"/" \
        ${flows:+-e "s/^flows = .*/flows = $flows/"} \
        ${queries:+-e "s/^queries = .*/queries = $queries/"} \
        "$cfg" > "$out/configs/$point.toml"
    echo "$point" >> "$list"
  done
done
echo "$(wc -l < "$list") runs, $jobs at a time, results in $out"

# One run: pktsim's own summary.json records the wall time of the event loop.
export bin out
xargs -P "$jobs" -I{} sh -c \
  '"$bin" run "$out/configs/{}.toml" --out "$out/runs/{}" --quiet && echo "done {}"' \
  < "$list"

python3 "$here/summarize.py" "$out/runs" > "$out/table.md"
cat "$out/table.md"
