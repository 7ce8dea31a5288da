#!/usr/bin/env bash
# The 1 Gbit/s comparison of experiments/canary/README.md ("Against the paper's own simulator"):
# each pktsim config of experiments/canary/artifact_1g beside the artifact on the same flows.
#   reference/canary_artifact/run_1g.sh [OUT] [CONFIG...]   (default: all, artifact TCP first)
# Env: SIM_TIME (artifact sim-time-limit for 10 ms RTO runs, default 3), SIM_TIME_1S (default 10),
#      PY (python with polars), REF (build root of build.sh, default /work/ref/omnet).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/results/canary-artifact-1g}; shift || true
py=${PY:-python3}
ref=${REF:-/work/ref/omnet}
cfgs=("$@")
if ((${#cfgs[@]} == 0)); then
  for v in "" _rto1s; do for s in ecmp dibs vertigo aifo canary; do for l in 55 95; do
    cfgs+=("$root/experiments/canary/artifact_1g/${s}${v}_${l}.toml"); done; done; done
fi
for c in "${cfgs[@]}"; do
  name=$(basename "$c" .toml)
  if [[ $name == *rto1s* ]]; then
    t=${SIM_TIME_1S:-10}; inet=(--inet "$ref/practical_deflection/Omnet_Sims/inet_rto1s")
  else
    t=${SIM_TIME:-3}; inet=()
  fi
  extra=()
  # DCTCP_AIFO as released sets should_use_v2_marking = false, but its V2PIFOPrioQueue
  # reads the marking (canary.md §4.6): run it with the marking on, as pktsim's aifo does.
  if [[ $name == aifo* ]]; then extra=(--extra "**.ipv4.ip.should_use_v2_marking = true"); fi
  echo "=== $name $(date -u +%H:%M:%S)"
  "$py" "$here/compare.py" "$c" --out "$out/$name" --sim-time "$t" "${inet[@]}" "${extra[@]}"
done
