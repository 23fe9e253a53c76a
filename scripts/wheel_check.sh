#!/usr/bin/env bash
# The Python package as pip users get it: `pip wheel .` (pyproject.toml: scikit-build-core runs the
# CMake build of the extension and the command), the wheel installed into a fresh venv that sees
# the test environment's torch (a .pth file), `pip show`, importlib.metadata, an example with
# metrics on, the `vxperf` console command on its records, `pip uninstall` leaving nothing behind.
# Called by scripts/test.sh; OUT=build-dist by default.
#
# The wheel is built in build-venv with its pinned build requirements (--no-build-isolation: the
# same scikit-build-core and pybind11 an isolated build would fetch), in build-wheel/, a tree as
# deep as build/, so that with scripts/test.sh's CCACHE_BASEDIR its objects come from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build-dist}
rm -rf "$out"
mkdir -p "$out"

echo "wheel_check: pip wheel ."
build-venv/bin/python -m pip wheel -q --no-input --no-deps --no-build-isolation \
  --config-settings=build-dir=build-wheel -w "$out" . >"$out/build.log" 2>&1 ||
  { tail -n 40 "$out/build.log"; exit 1; }
wheel=$(ls "$out"/vxperf-*.whl)
version=$(sed -n 's/^#define VXPERF_VERSION_STRING "\(.*\)"/\1/p' include/vxperf/version.h)
echo "wheel_check: $(basename "$wheel")"

venv="$out/venv"
base=$(build-venv/bin/python -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# torch and what the example needs, as a project's venv sees a shared installation.
build-venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
  >"$site/test-env.pth"
"$venv/bin/python" -m pip install -q --no-input --no-index --no-deps "$wheel"
"$venv/bin/python" -m pip show vxperf >"$out/show.txt"  # whole, not into grep -q: pip errors on a closed pipe
grep -qx "Version: $version" "$out/show.txt" || { cat "$out/show.txt"; exit 1; }
grep -q "^Requires-Dist: torch>=2.1; extra == \"torch\"" "$site"/vxperf-*.dist-info/METADATA ||
  { echo "wheel_check: the metadata does not say torch >= 2.1"; exit 1; }
env -u PYTHONPATH "$venv/bin/python" -c "
import importlib.metadata as metadata, vxperf, torch
assert metadata.version('vxperf') == vxperf.__version__ == '$version', metadata.version('vxperf')
assert vxperf.__file__.startswith('$site'), vxperf.__file__
print('wheel_check: import vxperf', vxperf.__version__, 'with torch', torch.__version__)"
records="$out/records.jsonl"
env -u PYTHONPATH VIDEOX_PERF=1 VIDEOX_PERF_JSON="$records" "$venv/bin/python" \
  examples/python/generate.py --requests 2 --steps 2 >/dev/null 2>"$out/example.log" ||
  { cat "$out/example.log"; exit 1; }
# Nothing Debian-only at run time: the extension links no cpp-httplib and no simdjson, the command
# finds the simdjson it carries beside itself.
ext=$(ls "$site"/vxperf/_ext.*.so)
ext_libs=$(ldd "$ext")
cli_libs=$(ldd "$site/vxperf/_bin/vxperf")
if grep -q httplib <<<"$ext_libs"; then echo "wheel_check: the extension links cpp-httplib"; exit 1; fi
# The readers (simdjson) are the command's: nothing the extension runs reads records or scripts.
if grep -q simdjson <<<"$ext_libs"; then echo "wheel_check: the extension links simdjson"; exit 1; fi
grep -q "libsimdjson.so.* => $site/vxperf/_bin/" <<<"$cli_libs" ||
  { echo "wheel_check: the command does not use the simdjson it carries"; echo "$cli_libs"; exit 1; }
"$venv/bin/vxperf" --version
"$venv/bin/vxperf" report "$records" >"$out/report.txt"
grep -q "^Requests: 2 measured" "$out/report.txt" || { cat "$out/report.txt"; exit 1; }
# The wheel's command has no LibTorch: its LibTorch commands say where to get them.
if "$venv/bin/vxperf" demo 2>"$out/demo.txt" ||
    ! grep -q "needs LibTorch, which this build leaves out.*build vxperf from source" "$out/demo.txt"; then
  echo "wheel_check: vxperf demo from the wheel does not say how to get it"; cat "$out/demo.txt"
  exit 1
fi
# Its --help lists only what it runs, and names the rest with how to get them.
"$venv/bin/vxperf" --help >"$out/help.txt"
if grep -qE "^  (demo|inspect) " "$out/help.txt" ||
    ! grep -q "^not in this build (they need LibTorch): inspect, demo" "$out/help.txt"; then
  echo "wheel_check: vxperf --help from the wheel lists commands it lacks"; cat "$out/help.txt"
  exit 1
fi

"$venv/bin/python" -m pip uninstall -q -y vxperf
left=$(find "$venv" \( -path '*vxperf*' -o -name vxperf \) -not -path "$venv/lib/*/site-packages/pip/*" | head -n 5)
if [[ -n "$left" ]]; then
  echo "wheel_check: pip uninstall left files behind:"
  echo "$left"
  exit 1
fi
echo "wheel_check: pip uninstall removed everything"
