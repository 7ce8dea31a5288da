#!/usr/bin/env bash
# Build Canary's own simulator (OMNeT++ 5.6.2 without GUI + the artifact's modified INET 4.2 + dc_simulations)
# from source checkouts at the named commits, OUTSIDE this repository. Nothing fetched is committed.
# Applies the steps of /work/shared/specs/reference-builds.md by script:
#   - src/common/sqlite3.c absent from the checkout -> one-line stub + IMPLIBS=-lsqlite3 (Debian libsqlite3-dev)
#   - mkdir bin, put it on PATH; configure.user: WITH_QTENV=no WITH_OSG=no WITH_OSGEARTH=no; MODE=release
# Usage: build.sh [DEST]   (default /work/ref/omnet). Env: OMNET_GIT, PD_GIT (bare mirrors), JOBS (default 2).
set -euo pipefail
DEST=${1:-/work/ref/omnet}
OMNET_GIT=${OMNET_GIT:-/work/.mirror/omnetpp+omnetpp/repo}
PD_GIT=${PD_GIT:-/work/.mirror/hopnets+practical_deflection/repo}
OMNET_COMMIT=b66122ce942a2fb783512d524af8707562a128bb   # tag omnetpp-5.6.2
PD_COMMIT=137c95248d88f04232fce64c293bfc44095bf812      # hopnets/practical_deflection HEAD
JOBS=${JOBS:-2}
t0=$(date +%s)
stamp() { echo "[build.sh $(date -u +%H:%M:%S) +$(( $(date +%s) - t0 ))s] $*"; }

need=()
for p in build-essential bison flex perl python3 python-is-python3 libxml2-dev zlib1g-dev libsqlite3-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  stamp "installing ${need[*]}"
  apt-get install -y --no-install-recommends "${need[@]}"
fi
mkdir -p "$DEST"

# Export a tree via a temporary index, leaving out blobs the mirror lacks (git archive refuses missing objects).
export_tree() { # git_dir commit subdir outdir
  local g=$1 c=$2 sub=$3 out=$4 idx
  idx=$(mktemp); rm -f "$idx"
  GIT_INDEX_FILE=$idx git --git-dir="$g" read-tree "$c"
  git --git-dir="$g" ls-tree -r "$c" -- ${sub:+"$sub"} | awk '$2=="blob"{print $3" "$4}' |
    while read -r s p; do
      if ! git --git-dir="$g" cat-file -e "$s" 2>/dev/null; then
        echo "  missing blob (left out): $p" >&2
        GIT_INDEX_FILE=$idx git --git-dir="$g" update-index --force-remove -- "$p" 2>/dev/null ||
          GIT_INDEX_FILE=$idx git --git-dir="$g" rm -q --cached -- "$p"
      fi
    done
  mkdir -p "$out"
  local tmp; tmp=$(mktemp -d)
  GIT_INDEX_FILE=$idx git --git-dir="$g" --work-tree="$tmp" checkout-index -a -f --prefix="$tmp/"
  rm -f "$idx"
  if [ -n "$sub" ]; then mv "$tmp/$sub" "$out/"; rm -rf "$tmp"; else cp -a "$tmp/." "$out/"; rm -rf "$tmp"; fi
}

# ---- OMNeT++ 5.6.2 ----
O=$DEST/omnetpp-5.6.2
if [ ! -x "$O/bin/opp_run_release" ] && [ ! -e "$O/lib/liboppsim.so" ]; then
  stamp "exporting OMNeT++ $OMNET_COMMIT"
  rm -rf "$O"; export_tree "$OMNET_GIT" "$OMNET_COMMIT" "" "$O"
  if [ ! -s "$O/src/common/sqlite3.c" ]; then
    stamp "sqlite3.c absent: stub + IMPLIBS=-lsqlite3"
    echo '/* stub: SQLite is linked from Debian libsqlite3-dev (-lsqlite3) */' > "$O/src/common/sqlite3.c"
    sed -i 's/^IMPLIBS *=.*/IMPLIBS= -lsqlite3/' "$O/src/common/Makefile"
    grep -q '^IMPLIBS= -lsqlite3' "$O/src/common/Makefile" || echo 'IMPLIBS= -lsqlite3' >> "$O/src/common/Makefile"
  fi
  mkdir -p "$O/bin"
  [ -f "$O/configure.user" ] || cp "$O/configure.user.dist" "$O/configure.user"
  sed -i -e 's/^WITH_QTENV=.*/WITH_QTENV=no/' -e 's/^WITH_OSG=.*/WITH_OSG=no/' \
         -e 's/^WITH_OSGEARTH=.*/WITH_OSGEARTH=no/' "$O/configure.user"
  (cd "$O" && export PATH=$O/bin:$PATH && ./configure >configure.log 2>&1) || { tail -30 "$O/configure.log"; exit 1; }
  stamp "make -j$JOBS MODE=release base (OMNeT++)"
  ts=$(date +%s)
  (cd "$O" && export PATH=$O/bin:$PATH && make -j"$JOBS" MODE=release base)
  stamp "OMNeT++ built in $(( $(date +%s) - ts )) s"
else
  stamp "OMNeT++ already built at $O"
fi
export PATH=$O/bin:$PATH
export LD_LIBRARY_PATH=$O/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# ---- the artifact: modified INET 4.2 + dc_simulations ----
A=$DEST/practical_deflection
if [ ! -d "$A/Omnet_Sims/inet" ]; then
  stamp "exporting practical_deflection $PD_COMMIT"
  export_tree "$PD_GIT" "$PD_COMMIT" Omnet_Sims "$A"
  # its committed prebuilt binaries are not trusted: rebuilt below
  rm -f "$A/Omnet_Sims/dc_simulations/src/dc_simulations" "$A/Omnet_Sims/dc_simulations/src/dc_simulations_dbg"
fi
if [ ! -e "$A/Omnet_Sims/inet/src/libINET.so" ]; then
  stamp "INET: make makefiles && make -j$JOBS MODE=release all"
  ts=$(date +%s)
  make -C "$A/Omnet_Sims/inet" makefiles
  make -C "$A/Omnet_Sims/inet" -j"$JOBS" MODE=release all
  stamp "INET built in $(( $(date +%s) - ts )) s"
fi
stamp "dc_simulations: make -j$JOBS MODE=release all"
ts=$(date +%s)
make -C "$A/Omnet_Sims/dc_simulations" -j"$JOBS" MODE=release all
stamp "dc_simulations built in $(( $(date +%s) - ts )) s"
ls -l "$A/Omnet_Sims/dc_simulations/src/dc_simulations"

# ---- RTO variant (RTO_VARIANT=0 skips): the paper's 1 s initial and SYN RTO ----
# The artifact's INET compiles its timers in (TcpBaseAlg.cc: INITIAL_REXMIT_TIMEOUT 0.01,
# MIN_REXMIT_TIMEOUT 0.01; TcpConnection.h: TCP_TIMEOUT_SYN_REXMIT 0.01, and TcpBaseAlg
# insists the SYN and initial RTO agree). A copy, inet_rto1s, sets both to 1 s (min stays
# 10 ms); run it with `-l .../inet_rto1s/src/INET` and LD_LIBRARY_PATH on its src/.
if [ "${RTO_VARIANT:-1}" != 0 ]; then
  V=$A/Omnet_Sims/inet_rto1s
  if [ ! -e "$V/src/libINET.so" ] || [ "$V/src/libINET.so" -ot "$A/Omnet_Sims/inet/src/libINET.so" ]; then
    stamp "RTO variant: copying INET to $V and rebuilding its TCP with a 1 s initial/SYN RTO"
    ts=$(date +%s)
    rm -rf "$V"; cp -a "$A/Omnet_Sims/inet" "$V"
    T=$V/src/inet/transportlayer/tcp
    sed -i 's/^#define INITIAL_REXMIT_TIMEOUT .*/#define INITIAL_REXMIT_TIMEOUT    1.0/' "$T/flavours/TcpBaseAlg.cc"
    sed -i 's/^#define TCP_TIMEOUT_SYN_REXMIT .*/#define TCP_TIMEOUT_SYN_REXMIT        1.0/' "$T/TcpConnection.h"
    grep -q 'INITIAL_REXMIT_TIMEOUT    1.0' "$T/flavours/TcpBaseAlg.cc"
    grep -q 'TCP_TIMEOUT_SYN_REXMIT        1.0' "$T/TcpConnection.h"
    # every TCP object (the two macros are used only there), then relink
    find "$V/out" -path '*transportlayer/tcp/*' -name '*.o' -delete
    rm -f "$V/src/libINET.so"
    make -C "$V" -j"$JOBS" MODE=release all
    stamp "RTO variant built in $(( $(date +%s) - ts )) s"
  fi
fi
# ---- diagnostic variant (RFC_RTT_VARIANT=1 builds it): inet_rto1s with RFC 6298 2.2's first
# RTT sample (SRTT = R, RTTVAR = R/2). The artifact's rttMeasurementComplete starts from
# srtt = 0, rttvar = INITIAL_REXMIT_TIMEOUT / 4 and moves rttvar by 1/8 per sample, so with a
# 1 s initial RTO the RTO only decays as ~(7/8)^n s over a connection's first samples.
if [ "${RFC_RTT_VARIANT:-0}" != 0 ]; then
  R=$A/Omnet_Sims/inet_rto1s_rfc
  if [ ! -e "$R/src/libINET.so" ]; then
    stamp "RFC-RTT variant: copying inet_rto1s to $R, RFC 6298 first sample"
    ts=$(date +%s)
    rm -rf "$R"; cp -a "$A/Omnet_Sims/inet_rto1s" "$R"
    perl -0pi -e 's/( *simtime_t err = newRTT - srtt;\s*\n\s*srtt \+= g \* err;\s*\n\s*rttvar \+= g \* \(fabs\(err\) - rttvar\);\n)/    if (srtt == 0) { srtt = newRTT; rttvar = newRTT \/ 2; } else {\n$1    }\n/' \
      "$R/src/inet/transportlayer/tcp/flavours/TcpBaseAlg.cc"
    grep -q 'if (srtt == 0) { srtt = newRTT; rttvar = newRTT / 2; } else {' \
      "$R/src/inet/transportlayer/tcp/flavours/TcpBaseAlg.cc"
    find "$R/out" -path '*transportlayer/tcp/flavours/TcpBaseAlg.o' -delete
    rm -f "$R/src/libINET.so"
    make -C "$R" -j"$JOBS" MODE=release all
    stamp "RFC-RTT variant built in $(( $(date +%s) - ts )) s"
  fi
fi
stamp "done: total $(( $(date +%s) - t0 )) s"
