#!/usr/bin/env bash
# GPU check: on a host with an NVIDIA GPU and PyTorch 2.x, builds vxperf against that PyTorch's
# bundled LibTorch, runs the demo on the GPU at Wan2.1-1.3B dimensions (random weights, bf16,
# 832x480x81, 3 denoising steps with CFG, 2 requests), times the same transformer forward directly
# with CUDA events and counts its FLOPs with torch.utils.flop_counter, then compares the two.
# A few minutes in all (the build is most of it). See docs/CUDA.md.
#
#   bash scripts/gpu_check.sh            # OUT=out/gpu_check by default; PYTHON=python3
#
# Exit status: 0 agree, 1 disagree, 2 the demo could not run (the direct numbers still print).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$PWD/out/gpu_check}
BUILD=${BUILD:-build-gpu}
DEVICE=${DEVICE:-0}
mkdir -p "$OUT"

"$PYTHON" - <<'PY'
import sys, torch
if not torch.cuda.is_available():
    sys.exit("gpu_check: PyTorch sees no CUDA device")
print(f"gpu_check: torch {torch.__version__} (CUDA {torch.version.cuda}) on "
      f"{torch.cuda.get_device_name()}")
PY
prefix=$("$PYTHON" -c 'import torch;print(torch.utils.cmake_prefix_path)')

echo "gpu_check: building vxperf against $prefix"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DVXPERF_WITH_TORCH=ON -DVXPERF_BUILD_TESTS=OFF -DVXPERF_BUILD_BENCH=OFF >"$OUT/cmake.log" 2>&1 ||
  { tail -n 40 "$OUT/cmake.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target vxperf_cli >"$OUT/build.log" 2>&1 ||
  { tail -n 40 "$OUT/build.log"; exit 1; }
vxperf="$BUILD/vxperf"

rm -rf "$OUT/demo"
demo_status=0
echo "gpu_check: vxperf demo on cuda:$DEVICE"
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} \
  timeout 300 "$vxperf" demo --device cuda --preset wan2.1-1.3b --dtype bf16 --size 832x480 \
  --frames 81 --steps 3 --cfg --requests 2 --train-steps 0 --out "$OUT/demo" 2>&1 | tee "$OUT/demo.log" ||
  demo_status=$?
if ((demo_status != 0)); then
  echo "gpu_check: the demo failed (status $demo_status; see $OUT/demo.log)"
fi

# The direct forward runs at the batch per transformer call vxperf recorded (2 when the demo
# batches CFG, 1 when it makes two calls per step).
batch=1
if ((demo_status == 0)); then
  batch=$("$PYTHON" scripts/gpu_check.py batch --records "$OUT/demo")
fi
echo "gpu_check: direct forward, batch $batch"
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} \
  timeout 300 "$PYTHON" scripts/gpu_check.py direct --batch "$batch" --out "$OUT/direct.json"

if ((demo_status != 0)); then
  exit 2
fi
"$PYTHON" scripts/gpu_check.py compare --records "$OUT/demo" --direct "$OUT/direct.json" |
  tee "$OUT/compare.txt"
exit "${PIPESTATUS[0]}"
