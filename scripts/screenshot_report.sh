#!/usr/bin/env bash
# Render a report page the way a reader sees it: headless Chromium at a
# 1400 px wide window, full page, into a PNG; then check the picture is a
# page (not blank, 1400 px wide). Look at the PNG before calling a report
# change done.
#
#   bash scripts/screenshot_report.sh results/sweep/report.html [out.png] [height_px]
#
# Needs Chromium (Debian: apt-get install chromium) and a Python with
# matplotlib (the .venv that scripts/test_python.sh makes).
set -euo pipefail
page="${1:?usage: screenshot_report.sh REPORT.html [OUT.png] [HEIGHT]}"
out="${2:-${page%.html}.png}"
height="${3:-4000}"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$browser" ]]; then
  echo "error: no chromium on PATH (Debian: apt-get install chromium)" >&2
  exit 2
fi
url="file://$(realpath "$page")"
# --no-sandbox: containers run as root; --hide-scrollbars: a clean 1400 px.
"$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size="1400,${height}" --screenshot="$out" "$url" >/dev/null 2>&1
here="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-$here/.venv/bin/python}"
[[ -x "$py" ]] || py=python3
"$py" - "$out" <<'PY'
import sys
from matplotlib.image import imread

img = imread(sys.argv[1])
h, w = img.shape[:2]
assert w == 1400, f"{sys.argv[1]}: {w} px wide, want 1400"
# A blank or failed render is one colour; a report has text and plots.
assert img[..., :3].std() > 0.05, f"{sys.argv[1]}: the page looks blank"
print(f"screenshot: {sys.argv[1]} ({w} x {h} px)")
PY
