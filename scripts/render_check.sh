#!/usr/bin/env bash
# Renders a `vxperf report --html` page in headless Chromium and checks the screenshot is a
# non-trivial PNG. Exits 77 (skipped) when chromium is not installed.
# usage: scripts/render_check.sh [VXPERF [WORKDIR]]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
vxperf="${1:-$root/build/vxperf}"
work="${2:-$(mktemp -d)}"
cases="$root/tests/conformance/cases"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$browser" ]]; then
  echo "render_check: chromium not installed (scripts/setup.sh installs it); skipping"
  exit 77
fi
mkdir -p "$work"
"$vxperf" report --html "$work/report.html" \
  "$cases/training-2-02.expected.jsonl" "$cases/training-1-00.expected.jsonl" \
  "$cases/inference-1-00.expected.jsonl" >/dev/null
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
rm -f "$work/report.png"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --screenshot="$work/report.png" --window-size=1200,1600 \
  "file://$work/report.html" >"$work/chromium.log" 2>&1 || {
  echo "render_check: chromium failed:"; tail -5 "$work/chromium.log"; exit 1; }
[[ -s "$work/report.png" ]] || { echo "render_check: no screenshot"; exit 1; }
# A PNG, and big enough to hold more than a blank page (a blank 1200x1600 page is ~10 KB).
python3 - "$work/report.png" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
assert len(data) > 30000, f"screenshot is only {len(data)} bytes: blank page?"
print(f"render_check: {sys.argv[1]} ({len(data)} bytes)")
PY
