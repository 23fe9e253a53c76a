#!/usr/bin/env bash
# Packs what the build takes from Debian's packages (nlohmann-json's headers, simdjson's header and
# library, with their CMake configs, which find them relative to themselves) into gpu-deps/, for
# a GPU host that has PyTorch, CMake and a compiler but not those packages: carry gpu-deps/ with
# the working tree, and scripts/gpu_check.sh builds with it (docs/CUDA.md); with them, a copy of
# the reference module for the check's Python part. Run after scripts/setup.sh; idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=$(gcc -print-multiarch)
rm -rf gpu-deps
mkdir -p gpu-deps/include gpu-deps/share/cmake "gpu-deps/lib/$arch/cmake"
cp -r /usr/include/nlohmann gpu-deps/include/
cp -r /usr/share/cmake/nlohmann_json gpu-deps/share/cmake/
cp /usr/include/simdjson.h gpu-deps/include/
cp -a "/usr/lib/$arch"/libsimdjson.so* "gpu-deps/lib/$arch/"
cp -r "/usr/lib/$arch/cmake/simdjson" "gpu-deps/lib/$arch/cmake/"
# The reference module, which the Python part runs beside vxperf, where it lies beside the
# checkout (a GPU host gets the checkout alone): a copy to carry, never committed.
reference=${VXPERF_REFERENCE:-../shared/reference/seed_perf.py}
if [[ -f "$reference" ]]; then
  mkdir -p gpu-deps/reference
  cp "$reference" gpu-deps/reference/seed_perf.py
fi
echo "gpu_deps: $(du -sh gpu-deps | cut -f1) in gpu-deps/ (nlohmann-json, simdjson$(
  [[ -f gpu-deps/reference/seed_perf.py ]] && echo ", the reference module"))"
