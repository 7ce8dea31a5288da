#!/usr/bin/env bash
# Cubic with and without pacing on the static dumbbell (issue 35, item 3):
# the three cases' `static_*_cubic.toml` and `static_*_cubic_paced.toml`,
# on DRAWS draws of access delays and start times (draw 0: the committed
# files; draw K > 0: `make_configs.py --draw K`, written to a temporary
# folder), one run at a time, then the table of README.md
# (`summarize.py --pacing`). PROTOCOLS adds others on the same draws.
#
#   PKTSIM=target/release/pktsim DRAWS=5 experiments/flashpass/run_pacing.sh
#   PROTOCOLS="cubic cubic_paced expresspass flashpass" DRAWS=5 experiments/flashpass/run_pacing.sh
#
# Results go to results/flashpass-pacing/draw<K>/<config>/ (OUT overrides);
# finished runs are kept, so an interrupted run resumes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
draws="${DRAWS:-3}"
out="${OUT:-results/flashpass-pacing}"
pktsim="${PKTSIM:-pktsim}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for ((k = 0; k < draws; k++)); do
  src="$here"
  if ((k > 0)); then
    src="$tmp/draw$k"
    (cd "$here" && python3 make_configs.py --draw "$k" --out "$src")
  fi
  for case in n20 n200 n20_equal; do
    for v in ${PROTOCOLS:-cubic cubic_paced}; do
      name="static_${case}_${v}"
      dir="$out/draw$k/$name"
      [[ -f "$dir/summary.json" ]] && continue
      "$pktsim" run "$src/$name.toml" --out "$dir" --quiet
    done
  done
done
python3 "$here/summarize.py" --pacing "$out"
