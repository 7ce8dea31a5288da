#!/usr/bin/env bash
# Build the `pktsim` command with profile-guided optimisation (PGO): the
# compiler first builds an instrumented binary, which runs a few short
# training experiments and records which branches and calls are hot; the
# second build lays the code out by those counts. Same code, same results
# (byte-identical outputs); 4-13 % less CPU time on the reference benchmark,
# no measurable change on the pFabric and pHost runs (BENCHMARKS.md, "Build
# options"). Takes two release builds (about 7 minutes on a 2-core machine)
# and `rustup component add llvm-tools`.
#
#   bash scripts/build_pgo.sh          # prints the binary's path at the end
#   target/pgo/use/release/pktsim run examples/leafspine_dctcp.toml
set -euo pipefail
cd "$(dirname "$0")/.."

rustup component add llvm-tools >/dev/null 2>&1 || true
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "llvm-profdata not found at $profdata: run 'rustup component add llvm-tools'" >&2
  exit 1
fi

work="$PWD/target/pgo"
rm -rf "$work/profiles" "$work/train"
mkdir -p "$work/profiles" "$work/train"

echo "1/4 instrumented build" >&2
CARGO_TARGET_DIR="$work/gen" RUSTFLAGS="-Cprofile-generate=$work/profiles" \
  cargo build --release -p pktsim-cli
gen="$work/gen/release/pktsim"

# Training: the paths the shipped experiments take (ECN FIFOs and DCTCP,
# pFabric queues and hosts, pHost's tokens, a TCP dumbbell), cut short.
echo "2/4 training runs" >&2
"$gen" bench --flows 2000 >/dev/null
for c in websearch_pfabric websearch_phost; do
  sed 's/^flows = .*/flows = 1000/' "experiments/phost/$c.toml" >"$work/train/$c.toml"
  "$gen" run "$work/train/$c.toml" --out "$work/train/$c" --quiet >/dev/null
done
# The dumbbell's long flows run into its time limit by design; its warning
# saying so is not news here.
"$gen" run examples/dumbbell_cubic.toml --out "$work/train/cubic" --quiet >/dev/null 2>&1

echo "3/4 merging the profiles" >&2
"$profdata" merge -o "$work/merged.profdata" "$work/profiles"

echo "4/4 optimised build" >&2
CARGO_TARGET_DIR="$work/use" RUSTFLAGS="-Cprofile-use=$work/merged.profdata" \
  cargo build --release -p pktsim-cli
echo "$work/use/release/pktsim"
