#!/usr/bin/env bash
# Build ns2-xpass (github kaist-ina/ns2-xpass, ExpressPass on ns-2.35) on Debian bookworm.
#
#   reference/ns2_xpass/build.sh [BUILD_DIR]
#
# BUILD_DIR (default /work/ref/ns2) receives: src/ (the ns-2 tree), tclcl-1.20/ (rebuilt TclCL),
# pfx/ (symlink prefixes for configure) and src/ns (the binary). Nothing is written to this repository.
#
# Source, by environment:
#   NS2_SRC=DIR            an existing ns2-xpass source folder (copied to BUILD_DIR/src), or
#   NS2_GIT=GITDIR         a git dir (bare mirror) and NS2_COMMIT (default f4e38bcba7bd, the fork's HEAD)
#   TCLCL_SRC=DIR          an unmodified tclcl-1.20 folder, or
#   TCLCL_GIT=GITDIR       a git dir holding tclcl-1.20/ (github yamadharma/ns-allinone, TCLCL_COMMIT 68ecb7fd43a5)
#   JOBS (default 2)
#
# The edits are the ones in /work/shared/specs/reference-builds.md, applied by script:
# multiarch prefixes, -O2 and Tcl 8.6 defines in the generated Makefiles, three one-token fixes,
# tclcl rebuilt with int64_t (this fork's seq_t is int64_t), `make ns` only.
set -euo pipefail

BUILD=$(realpath -m "${1:-/work/ref/ns2}")
NS2_GIT=${NS2_GIT:-/work/.mirror/kaist-ina+ns2-xpass/repo}
NS2_COMMIT=${NS2_COMMIT:-f4e38bcba7bd97f5c7dc80f8e2617008717d02c7}
TCLCL_GIT=${TCLCL_GIT:-/work/.mirror/yamadharma+ns-allinone/repo}
TCLCL_COMMIT=${TCLCL_COMMIT:-68ecb7fd43a5fabcbfa82921dcee61810ce6545b}
JOBS=${JOBS:-2}
T0=$(date +%s)

# ---- Debian packages -------------------------------------------------------------------------
PKGS="tcl8.6-dev tk8.6-dev libotcl1-dev libtclcl1-dev tclcl libx11-dev libxt-dev build-essential time"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    echo "installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

# Extract a tree from a git dir, skipping blobs a partial mirror lacks (git archive stops at them).
extract() { # GITDIR COMMIT SUBDIR DEST
    local g=$1 c=$2 sub=$3 dest=$4
    mkdir -p "$dest"
    git --git-dir="$g" ls-tree -r --format='%(objectname) %(path)' "$c" -- $sub |
        git --git-dir="$g" cat-file --batch-check='%(objectname) %(objecttype) %(rest)' |
        awk '$2 != "missing" {sub(/^[^ ]+ [^ ]+ /, ""); print}' | tr "\n" "\0" |
        xargs -0 sh -c 'g=$0 c=$1 d=$2; shift 2; git --literal-pathspecs --git-dir="$g" archive "$c" -- "$@" | tar x -C "$d"' "$g" "$c" "$dest"
    echo "  $(find "$dest/${sub:-.}" -type f | wc -l) of $(git --git-dir="$g" ls-tree -r "$c" -- $sub | wc -l) files" \
        "(git's 'invalid object' lines name the blobs a partial mirror lacks; not needed)"
}
mkdir -p "$BUILD"
if [ ! -f "$BUILD/src/configure" ]; then
    if [ -n "${NS2_SRC:-}" ]; then cp -a "$NS2_SRC" "$BUILD/src"
    else echo "extracting ns2-xpass $NS2_COMMIT"; extract "$NS2_GIT" "$NS2_COMMIT" "" "$BUILD/src"; fi
fi
if [ ! -f "$BUILD/tclcl-1.20/configure" ]; then
    if [ -n "${TCLCL_SRC:-}" ]; then cp -a "$TCLCL_SRC" "$BUILD/tclcl-1.20"
    else echo "extracting tclcl-1.20 $TCLCL_COMMIT"; extract "$TCLCL_GIT" "$TCLCL_COMMIT" tclcl-1.20 "$BUILD"; fi
fi

# ---- prefixes of symlinks: configure does not know Debian's multiarch layout --------------------
P=$BUILD/pfx
rm -rf "$P"; mkdir -p "$P/tcl/lib" "$P/tk/lib" "$P/otcl"
ln -s /usr/include/tcl8.6/tcl-private/generic "$P/tcl/generic"
ln -s /usr/include/tcl8.6/tcl-private/unix "$P/tcl/unix"
ln -s /usr/lib/$MA/libtcl8.6.so "$P/tcl/lib/libtcl8.6.so"
ln -s /usr/share/tcltk/tcl8.6 "$P/tcl/lib/tcl8.6"
ln -s /usr/include/tcl8.6/tk-private/generic "$P/tk/generic"
ln -s /usr/include/tcl8.6/tk-private/unix "$P/tk/unix"
ln -s /usr/lib/$MA/libtk8.6.so "$P/tk/lib/libtk8.6.so"
ln -s /usr/share/tcltk/tk8.6 "$P/tk/lib/tk8.6"
ln -s /usr/include/otcl.h "$P/otcl/otcl.h"
ln -s /usr/lib/$MA/libotcl.so "$P/otcl/libotcl.so"
WITH="--with-tcl=$P/tcl --with-tk=$P/tk --with-otcl=$P/otcl --with-tcl-ver=8.6 --with-tk-ver=8.6"
DEFS="-DUSE_INTERP_RESULT -DUSE_INTERP_ERRORLINE"

# The generated Makefile: configure drops -O2 on gcc >= 10 (reads 12.2's minor "2" as < 8);
# Tcl 8.6 hides interp->result unless USE_INTERP_RESULT.
fix_makefile() { # FILE EXTRA_CCOPT
    sed -i -e "s|^CCOPT[[:space:]]*=.*|CCOPT = -O2 -Wall -Wno-write-strings -Wno-narrowing $2|" \
        -e "s|^DEFINE[[:space:]]*=|DEFINE = $DEFS |" "$1"
    grep -q -- "-DUSE_INTERP_RESULT" "$1" || { echo "fix_makefile: no DEFINE line in $1" >&2; exit 1; }
}

# ---- tclcl 1.20 with int64 (TclObject::bind(const char*, int64_t*)) ---------------------------
T1=$(date +%s)
if [ ! -f "$BUILD/tclcl-1.20/libtclcl.a" ]; then
    (cd "$BUILD/tclcl-1.20" && ./configure $WITH >configure.log 2>&1 || { tail -20 configure.log; exit 1; }
     fix_makefile Makefile -fPIC
     make -j"$JOBS" >make.log 2>&1 || { tail -30 make.log; exit 1; })
fi
grep -q 'HAVE_INT64' "$BUILD/tclcl-1.20/config.h" "$BUILD/tclcl-1.20/Makefile" 2>/dev/null ||
    echo "warning: tclcl did not detect int64_t" >&2
echo "tclcl: $(( $(date +%s) - T1 )) s"

# ---- ns-2 ---------------------------------------------------------------------------------------
cd "$BUILD/src"
# three one-token fixes (gcc 12 / C++17)
sed -i '661s|Tcl_GetHashKey(|(char*)Tcl_GetHashKey(|' webcache/pagepool.cc
sed -i '86s|Tcl_GetHashKey(|(char*)Tcl_GetHashKey(|' pushback/ident-tree.h
sed -i -e '108s|\([^:]\)hash(|\1::hash(|' -e '396s|\([^:]\)hash(|\1::hash(|' mdart/mdart_adp.cc
sed -n '661p' webcache/pagepool.cc | grep -q '(char\*)(char\*)' && { echo "double cast" >&2; exit 1; }
grep -c '(char\*)Tcl_GetHashKey' webcache/pagepool.cc pushback/ident-tree.h
grep -c '::hash(' mdart/mdart_adp.cc
T2=$(date +%s)
if [ ! -f Makefile ] || ! grep -q -- "$DEFS" Makefile; then
    ./configure $WITH --with-tclcl="$BUILD/tclcl-1.20" >configure.log 2>&1 || { tail -30 configure.log; exit 1; }
    fix_makefile Makefile ""
fi
make -j"$JOBS" ns >make.log 2>&1 || { grep -E 'error|Error' make.log | head -30; exit 1; }
T3=$(date +%s)
echo "ns: configure+make $(( T3 - T2 )) s; total $(( T3 - T0 )) s (jobs $JOBS)"
ls -la "$BUILD/src/ns"

# ---- smoke test: scripts/dumbell-topology.tcl with its finish cut to 0.1 s -----------------------
S=$BUILD/smoke; rm -rf "$S"; mkdir -p "$S"
sed 's|^\$ns at 10.0 "finish"|$ns at 0.1 "finish"|' scripts/dumbell-topology.tcl >"$S/dumbell.tcl"
(cd "$S" && /usr/bin/time -f "smoke: %e s wall, %M kB" "$BUILD/src/ns" dumbell.tcl | tail -2)
head -5 "$S/outputs/fct.out"
test -s "$S/outputs/waste.out" && echo "waste.out: $(wc -l <"$S/outputs/waste.out") lines"
