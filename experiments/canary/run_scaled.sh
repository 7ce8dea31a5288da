#!/usr/bin/env bash
# Run every config of this folder with its flow and query counts divided by
# SCALE (default 100: 12 ms of arrivals instead of 1.2 s), one run at a
# time, and print the query table (summarize.py). INITIAL_RTO overrides the
# TCP initial RTO (e.g. 10ms: the Canary artifact's INET value). VARIANT=hs
# runs the configs with the TCP handshake (NAME_hs_LOAD.toml); LOADS and
# SCHEMES pick a subset (space-separated); TIME_LIMIT overrides the run's.
#
#   SCALE=100 ./run_scaled.sh                 # results in results/canary-s100/
#   SCALE=100 INITIAL_RTO=10ms ./run_scaled.sh
#   SCALE=100 VARIANT=hs ./run_scaled.sh      # results in results/canary-hs-s100/
#   SCALE=20 VARIANT=hs LOADS=95 ./run_scaled.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scale="${SCALE:-100}"
rto="${INITIAL_RTO:-}"
variant="${VARIANT:+_$VARIANT}"
limit="${TIME_LIMIT:-}"
out="${OUT:-results/canary${variant:+-${VARIANT}}-s${scale}${rto:+-rto$rto}${limit:+-limit$limit}}"
pktsim="${PKTSIM:-pktsim}"
mkdir -p "$out"
for load in ${LOADS:-55 65 75 85 95}; do
  for s in ${SCHEMES:-ecmp aifo dibs vertigo canary}; do
    name="${s}${variant}_${load}"
    [[ -f "$out/$name/summary.json" ]] && continue
    python3 - "$here/$name.toml" "$scale" "$rto" "$limit" > "$out/$name.toml" <<'PY'
import math, re, sys
text, scale, rto, limit = open(sys.argv[1]).read(), float(sys.argv[2]), sys.argv[3], sys.argv[4]
div = lambda m: f"{m.group(1)} = {max(1, math.ceil(int(m.group(2)) / scale))}"
text = re.sub(r"^(flows|queries) = (\d+)$", div, text, flags=re.M)
if rto:
    text = re.sub(r'^initial_rto = ".*"$', f'initial_rto = "{rto}"', text, flags=re.M)
if limit:
    text = re.sub(r'^time_limit = ".*"$', f'time_limit = "{limit}"', text, flags=re.M)
print(text)
PY
    # The CDF is built in; the config needs nothing else from this folder.
    "$pktsim" run "$out/$name.toml" --out "$out/$name" > "$out/$name.log"
  done
done
python3 "$here/summarize.py" "$out"
