#!/usr/bin/env bash
# The speed-up curve of one run over thread counts (issue 33): runs
# `pktsim bench --config CONFIG --threads N` for each N, one after the other,
# and prints CPU seconds (user + sys), wall seconds, the speed-up in wall time
# over the first thread count, the most that count could gain from the
# balance of its groups alone (the bench's "balance" line; "-" at one
# thread), peak RSS and the load average before each run. Every run must report the same events and packet-hops (the output does not
# depend on the thread count); the script fails if one does not.
#
#   scripts/speedup_curve.sh [-b PKTSIM] [-t "1 2 4 8 16"] CONFIG
#
# PKTSIM defaults to target/release/pktsim. On a machine without a Rust
# toolchain, carry a release binary there (`strip` makes it small enough to
# copy) and name it with -b.
set -euo pipefail

bin=target/release/pktsim
threads="1 2 4 8 16"
while getopts "b:t:" opt; do
    case $opt in
        b) bin=$OPTARG ;;
        t) threads=$OPTARG ;;
        *) echo "usage: $0 [-b PKTSIM] [-t \"1 2 4\"] CONFIG" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
config=${1:?usage: $0 [-b PKTSIM] [-t \"1 2 4\"] CONFIG}
[ -x "$bin" ] || { echo "$bin: not an executable (build with cargo build --release -p pktsim-cli)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "config:  $config"
printf '%-8s %12s %10s %9s %9s %10s %8s %14s %14s\n' threads "CPU s" "wall s" speed-up balance "RSS MB" load events packet-hops
base_wall=""
want=""
for n in $threads; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%U %S %e %M" -o "$tmp/time" "$bin" bench --config "$config" --threads "$n" >"$tmp/out" 2>&1 || {
        cat "$tmp/out" >&2
        exit 1
    }
    read -r user sys wall rss <"$tmp/time"
    events=$(awk '$1 == "events" {print $2}' "$tmp/out")
    hops=$(awk '$1 == "packet-hops" {print $2}' "$tmp/out")
    bound=$(awk '$1 == "balance" {sub(/x$/, "", $9); print $9}' "$tmp/out")
    if [ -z "$want" ]; then
        want="$events $hops"
    elif [ "$want" != "$events $hops" ]; then
        echo "threads $n: events and packet-hops $events $hops differ from $want" >&2
        exit 1
    fi
    [ -n "$base_wall" ] || base_wall=$wall
    awk -v n="$n" -v u="$user" -v s="$sys" -v w="$wall" -v b="$base_wall" -v r="$rss" -v l="$load" -v e="$events" -v h="$hops" -v m="${bound:--}" \
        'BEGIN { printf "%-8s %12.2f %10.2f %8.2fx %9s %10.0f %8s %14s %14s\n", n, u + s, w, b / w, (m == "-" ? m : m "x"), r / 1024, l, e, h }'
done
