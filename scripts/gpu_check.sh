#!/usr/bin/env bash
# GPU check: on a host with an NVIDIA GPU and PyTorch 2.x, checks vxperf against what the GPU
# itself says, in parts, each timed; a part that fails does not stop the others:
#   environment   torch, CUDA and the device
#   deps          gpu-deps/ (the build's Debian dependencies, carried) found by CMake alone
#   build         vxperf against that PyTorch's bundled LibTorch (the command, the LibTorch
#                 helper and demo, the Python package for $PYTHON)
#   demo          `vxperf demo` on the GPU at Wan2.1-1.3B dimensions (random weights, bf16,
#                 832x480x81, 3 denoising steps with CFG, 2 requests)
#   direct        the same transformer forward timed with CUDA events, its FLOPs counted by
#                 torch.utils.flop_counter
#   compare       the two side by side (step time within 15%, FLOPs within 6%)
#   energy        the demo's NVML readings plausible, and each request's energy against
#                 nvidia-smi's counter over the same interval (within 5%)
#   capture       VIDEOX_PERF_PROFILE's capture range under nsys (where nsys is installed)
#   peaks         the measured peaks (vxperf calibrate, the Python probe) against the table
#   python        the reference module and `import vxperf` side by side on a Wan-shaped pipeline,
#                 on the real diffusers WanPipeline with model CPU offload under bf16 autocast,
#                 and on the training scenarios through accelerate
#   cp            diffusers' context parallel over two GPUs (where there are two)
#   explain       two denoising steps of the Python pipeline profiled by torch (VIDEOX_PERF_PROFILE),
#                 `vxperf explain` on the trace: device work found, the waterfall adding up
#   what_if       `explain --what-if=host` on that eager trace against the same steps run with the
#                 DiT replayed from a CUDA graph (the prediction within 10%); on the CPU rehearsal
#                 the prediction alone (no CUDA graphs there)
# $OUT/summary.json holds every part's status, seconds and numbers, $OUT/gpu_check.log all it
# printed; each part's own files are under $OUT/work/parts/all. See docs/CUDA.md.
#
#   bash scripts/gpu_check.sh            # OUT=out/gpu_check by default; PYTHON=python3
#   VXPERF_REFERENCE=path/seed_perf.py   # the reference (default ../shared/reference/, shared/...)
#   GPU_CHECK_REHEARSE=1 PYTHON=build-venv/bin/python BUILD=build bash scripts/gpu_check.sh
#                                        # without a GPU (the test command runs it): every part
#                                        # that can run on the CPU, energy and capture on the
#                                        # fake driver and fake NVML, the rest said skipped
#
# Exit status: 0 when no part failed (skipped ones aside), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$PWD/out/gpu_check}
REHEARSE=${GPU_CHECK_REHEARSE:-0}
# On the CPU, one thread per process: torch's spinning workers on a loaded machine (a build beside
# it) make a request 10-30x slower at random, enough to fail even the rehearsal's time tolerance.
[[ "$REHEARSE" == "1" ]] && export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
BUILD=${BUILD:-build-gpu}
DEVICE=${DEVICE:-0}
VISIBLE=${CUDA_VISIBLE_DEVICES-}  # as given: the context-parallel part wants two devices
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# $OUT gets the summary and the log; every part's files go three folders down, $WORK (what a
# device run returns is at most 8 files, 2 folders down: these two come back, whole).
WORK=${WORK:-$OUT/work/parts/all}
rm -rf "$WORK"
mkdir -p "$WORK"
exec > >(tee "$OUT/gpu_check.log") 2>&1
: >"$WORK/parts.tsv"
# Measured peaks go to a cache of this check's own: every run measures afresh.
export XDG_CACHE_HOME="$WORK/cache"
rm -rf "$XDG_CACHE_HOME"

NOTE=""
part() {  # NAME FUNCTION: runs it; 0 ok, 77 skipped (NOTE says why), anything else failed
  local name=$1 start=$SECONDS rc status=ok
  shift
  echo "gpu_check: == $name"
  NOTE=""
  "$@"
  rc=$?
  if ((rc == 77)); then status=skipped; elif ((rc != 0)); then status=failed; fi
  printf '%s\t%s\t%d\t%s\n' "$name" "$status" $((SECONDS - start)) "$NOTE" >>"$WORK/parts.tsv"
  [[ -n "$NOTE" ]] && echo "gpu_check: $name: $status: $NOTE"
  return 0
}
skip() { NOTE=$1; return 77; }
passed() { grep -q "^$1"$'\t'"ok"$'\t' "$WORK/parts.tsv"; }
vxperf="$BUILD/vxperf"
device_name() {  # the GPU's name (what the peak table is read by), "cpu" without one
  "$PYTHON" -c 'import torch
print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")'
}

# ---- environment --------------------------------------------------------------------------------
environment() {
  "$PYTHON" - "$REHEARSE" "$WORK/environment.json" <<'PY'
import json, platform, sys
import torch
numbers = {"python": platform.python_version(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "gpu": torch.cuda.is_available()}
if torch.cuda.is_available():
    numbers.update(device=torch.cuda.get_device_name(), devices=torch.cuda.device_count())
json.dump(numbers, open(sys.argv[2], "w"), indent=1)
print(f"gpu_check: Python {numbers['python']}, torch {numbers['torch']} (CUDA {numbers['cuda']})"
      f" on {numbers.get('device', 'no GPU')}")
sys.exit(0 if numbers["gpu"] or sys.argv[1] == "1" else 1)
PY
}

# ---- the build's dependencies, carried ----------------------------------------------------------
# A GPU host without Debian's nlohmann-json and simdjson builds with gpu-deps/
# (scripts/gpu_deps.sh, carried with the working tree): CMake must find both there alone.
deps() {
  if [[ ! -d gpu-deps ]]; then
    [[ "$REHEARSE" == "1" ]] || { skip "no gpu-deps/: the host's own packages are used"; return; }
    bash scripts/gpu_deps.sh || return 1
  fi
  local probe="$WORK/deps-probe"
  rm -rf "$probe"
  mkdir -p "$probe"
  cat >"$probe/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(probe CXX)
find_package(nlohmann_json 3.10 REQUIRED PATHS ${DEPS} NO_DEFAULT_PATH)
find_package(simdjson 3 REQUIRED PATHS ${DEPS} NO_DEFAULT_PATH)
message(STATUS "probe: ${nlohmann_json_DIR} ${simdjson_DIR}")
CMAKE
  cmake -S "$probe" -B "$probe/build" -DDEPS="$PWD/gpu-deps" >"$probe/log.txt" 2>&1 ||
    { tail -n 20 "$probe/log.txt"; return 1; }
  grep -q "probe: $PWD/gpu-deps/.* $PWD/gpu-deps/" "$probe/log.txt" ||
    { echo "gpu_check: CMake did not find both in gpu-deps/"; grep "probe:" "$probe/log.txt"; return 1; }
  NOTE="nlohmann-json and simdjson found in gpu-deps/ alone"
}

# ---- build --------------------------------------------------------------------------------------
# The recipe of the project's own build: LibTorch from the torch wheel of $PYTHON
# (torch.utils.cmake_prefix_path), the extension for $PYTHON with its own pybind11. A build
# folder already configured against the same LibTorch and Python (the main build, for the
# rehearsal) is only brought up to date. gpu-deps/ (scripts/gpu_deps.sh) carries the headers
# and libraries Debian gives the project, for a host that has not got them.
build() {
  local torch_prefix python_path prefix
  torch_prefix=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)') || return 1
  python_path=$(command -v "$PYTHON")
  [[ "$python_path" == /* ]] || python_path="$PWD/$python_path"
  prefix="$torch_prefix"
  [[ -d gpu-deps ]] && prefix="$PWD/gpu-deps;$prefix"
  local cache="$BUILD/CMakeCache.txt"
  if [[ -f "$cache" ]] && grep -q "^Torch_DIR:PATH=$torch_prefix/Torch" "$cache" &&
      grep -q "^VXPERF_PYTHON:.*=$python_path\$" "$cache"; then
    echo "gpu_check: $BUILD is configured against this LibTorch and Python: brought up to date"
    NOTE="reused $BUILD"
  else
    echo "gpu_check: configuring $BUILD against the LibTorch of $torch_prefix"
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVXPERF_PYTHON="$python_path" \
      -DCMAKE_PREFIX_PATH="$prefix" -DVXPERF_WITH_TORCH=ON -DVXPERF_BUILD_TESTS=OFF \
      -DVXPERF_BUILD_BENCH=OFF >"$WORK/cmake.log" 2>&1 || { tail -n 30 "$WORK/cmake.log"; return 1; }
  fi
  local targets=(vxperf_cli vxperf_torch_cli)
  if [[ -f "$BUILD/python/CMakeFiles/vxperf_python.dir/build.make" ]] ||
      grep -q "vxperf_python" "$BUILD/build.ninja" 2>/dev/null; then
    targets+=(vxperf_python)
  fi
  # Every core: nproc obeys OMP_NUM_THREADS, which the rehearsal sets to 1 for torch.
  cmake --build "$BUILD" -j "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)" \
    --target "${targets[@]}" >"$WORK/build.log" 2>&1 ||
    { tail -n 30 "$WORK/build.log"; return 1; }
  [[ -d "$BUILD/python/vxperf" ]] ||
    NOTE="${NOTE:+$NOTE; }no Python package (python3-dev, pybind11)"
}

# ---- the demo -----------------------------------------------------------------------------------
demo() {
  passed build || { skip "not built"; return; }
  rm -rf "$WORK/demo"
  if [[ "$REHEARSE" == "1" ]]; then  # as the GPU run makes it, at a size the CPU finishes
    timeout 300 "$vxperf" demo --device cpu --steps 2 --requests 2 --train-steps 0 \
      --out "$WORK/demo" >"$WORK/demo.log" 2>&1 || { tail -n 20 "$WORK/demo.log"; return 1; }
  else
    timeout 300 "$vxperf" demo --device cuda --preset wan2.1-t2v-1.3b --dtype bf16 \
      --size 832x480 --frames 81 --steps 3 --cfg --requests 2 --train-steps 0 \
      --out "$WORK/demo" >"$WORK/demo.log" 2>&1 || { tail -n 20 "$WORK/demo.log"; return 1; }
  fi
  grep "^\[Perf\]\[rank0\] req#\|output digest" "$WORK/demo.log" | sed 's/^/gpu_check: /'
  grep -q '"kind": *"request"' "$WORK/demo/records.jsonl" 2>/dev/null ||
    { echo "gpu_check: the demo wrote no request record to $WORK/demo/records.jsonl"; return 1; }
}

# ---- the transformer forward timed directly, and the comparison -----------------------------
direct() {
  local batch=1
  if passed demo; then batch=$("$PYTHON" scripts/gpu_check.py batch --records "$WORK/demo"); fi
  if [[ "$REHEARSE" == "1" ]]; then  # one block over one latent frame, in fp32 on the CPU
    timeout 300 "$PYTHON" scripts/gpu_check.py direct --device cpu --layers 1 --latent 1 8 8 \
      --batch "$batch" --warmup 0 --iters 1 --out "$WORK/direct.json"
  else
    timeout 300 "$PYTHON" scripts/gpu_check.py direct --batch "$batch" --out "$WORK/direct.json"
  fi
}

compare() {
  { passed demo && passed direct; } || { skip "needs the demo and the direct forward"; return; }
  "$PYTHON" scripts/gpu_check.py compare --records "$WORK/demo" --direct "$WORK/direct.json" \
    --json "$WORK/compare.json" | tee "$WORK/compare.txt"
  local rc=${PIPESTATUS[0]}
  # Rehearsed, the two run different models (the demo's tiny one): it ran, agreeing or not.
  if [[ "$REHEARSE" == "1" ]] && ((rc <= 1)); then
    NOTE="rehearsed: not meant to agree"
    return 0
  fi
  return "$rc"
}

# ---- energy: the demo's NVML readings against nvidia-smi's counter ------------------------------
# Every request on the GPU carries energy_j from the energy counter and a mean power a GPU can
# draw. Then the demo runs again while nvidia-smi polls the same device's energy counter every
# 100 ms (found by the PCI bus id torch gives, as vxperf finds it): each request's energy_j
# against the counter's difference over the same interval. Rehearsed on the fake driver and fake
# NVML (a device drawing 250 W, the counter following the wall clock) and a fake nvidia-smi that
# reads the same model: the comparisons' code is the GPU run's.
SMI=(nvidia-smi)
SMI_NAME=nvidia-smi
energy() {
  local records="$WORK/demo/records.jsonl" second="$WORK/energy-demo/records.jsonl"
  if [[ "$REHEARSE" == "1" ]]; then
    local fake_cuda="$BUILD/tests/support/fake_cuda/libfake_cuda.so"
    local fake_nvml="$BUILD/tests/support/fake_nvml/libfake_nvml.so"
    [[ -f "$fake_cuda" && -f "$fake_nvml" && -d "$BUILD/python/vxperf" ]] ||
      { skip "the fake driver, fake NVML or Python package is not built in $BUILD"; return; }
    mkdir -p "$WORK/fakes"
    ln -sf "$(cd "$(dirname "$fake_nvml")" && pwd)/libfake_nvml.so" "$WORK/fakes/libnvidia-ml.so.1"
    SMI=("$PYTHON" scripts/gpu_check.py fake-smi --watts 250)
    SMI_NAME="the fake nvidia-smi"
    records=$second
  else
    "$PYTHON" scripts/gpu_check.py energy-plausible --records "$records" \
      --json "$WORK/energy-plausible.json" | tee "$WORK/energy.txt" || return 1
    command -v nvidia-smi >/dev/null 2>&1 ||
      { skip "no nvidia-smi: the counter comparison"; return; }
  fi
  local bus="" smi="$WORK/energy-smi.csv" poller rc=0
  if [[ "$REHEARSE" != "1" ]]; then
    bus=$("$PYTHON" -c '
import torch
p = torch.cuda.get_device_properties(0)
try:
    print(f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0")
except AttributeError:
    print("")' 2>/dev/null || true)
    SMI+=(-i "${bus:-$DEVICE}" --query-gpu=timestamp,total_energy_consumption
          --format=csv,noheader,nounits -lms 100)
  fi
  echo "gpu_check: energy against the counter $SMI_NAME polls on ${bus:-the device}"
  rm -rf "$WORK/energy-demo"
  mkdir -p "$WORK/energy-demo"
  "${SMI[@]}" >"$smi" 2>"$WORK/energy-smi.err" &
  poller=$!
  sleep 1
  if [[ "$REHEARSE" == "1" ]]; then
    LD_LIBRARY_PATH="$WORK/fakes${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" timeout 120 "$PYTHON" \
      scripts/gpu_check.py rehearse-meters --fake-cuda "$fake_cuda" --watts 250 \
      --records "$records" --trace "$WORK/capture-trace.csv" \
      >"$WORK/energy-demo/log.txt" 2>&1 || rc=1
  else
    timeout 300 "$vxperf" demo --device cuda --preset wan2.1-t2v-1.3b --dtype bf16 --size 832x480 \
      --frames 81 --steps 3 --cfg --requests 3 --train-steps 0 --out "$WORK/energy-demo/out" \
      >"$WORK/energy-demo/log.txt" 2>&1 || rc=1
    records="$WORK/energy-demo/out/records.jsonl"
  fi
  sleep 1
  kill "$poller" 2>/dev/null || true
  wait "$poller" 2>/dev/null || true
  ((rc == 0)) || { tail -n 20 "$WORK/energy-demo/log.txt"; return 1; }
  if [[ "$REHEARSE" == "1" ]]; then
    "$PYTHON" scripts/gpu_check.py energy-plausible --records "$records" \
      --json "$WORK/energy-plausible.json" | tee "$WORK/energy.txt" || rc=1
  fi
  "$PYTHON" scripts/gpu_check.py energy-compare --records "$records" --smi "$smi" \
    --json "$WORK/energy.json" | tee -a "$WORK/energy.txt" || rc=1
  return $rc
}

# ---- the capture range under Nsight Systems (VIDEOX_PERF_PROFILE) ------------------------------
# The demo's request 1 of 0-2 alone, captured through cuProfilerStart/Stop: the report's GPU
# activity spans no more than that request (and most of it). Rehearsed on the fake driver's
# capture (the energy part's run): the events it recorded while capturing.
capture() {
  local trace="$WORK/capture-trace.csv" records="$WORK/energy-demo/records.jsonl"
  if [[ "$REHEARSE" != "1" ]]; then
    passed demo || { skip "the demo did not run"; return; }
    command -v nsys >/dev/null 2>&1 || { skip "nsys not installed"; return; }
    local dir="$WORK/capture" report="" kind
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "gpu_check: capture range: VIDEOX_PERF_PROFILE=requests:1-1 under nsys"
    VIDEOX_PERF_PROFILE=requests:1-1 timeout 300 nsys profile --capture-range=cudaProfilerApi \
      --capture-range-end=stop --trace=cuda -o "$dir/demo" -f true \
      "$vxperf" demo --device cuda --preset wan2.1-t2v-1.3b --dtype bf16 --size 832x480 \
      --frames 81 --steps 3 --cfg --requests 3 --train-steps 0 --out "$dir/out" \
      >"$dir/log.txt" 2>&1 ||
      { echo "gpu_check: nsys profile failed"; tail -n 20 "$dir/log.txt"; return 1; }
    if grep -q "VIDEOX_PERF_PROFILE" "$dir/log.txt"; then
      grep "VIDEOX_PERF_PROFILE" "$dir/log.txt" | sed 's/^/gpu_check: /'
      return 1
    fi
    for kind in cuda_gpu_trace gputrace; do
      if nsys stats --report "$kind" --format csv --output - "$dir/demo.nsys-rep" \
          >"$trace" 2>"$dir/stats.err" && grep -q "Start" "$trace"; then
        report=$kind
        break
      fi
    done
    [[ -n "$report" ]] || { echo "gpu_check: nsys stats gave no GPU trace"; return 1; }
    records="$dir/out/records.jsonl"
  else
    [[ -f "$trace" ]] || { skip "the energy part's fake capture did not run"; return; }
  fi
  "$PYTHON" scripts/gpu_check.py capture-compare --trace "$trace" --records "$records" \
    --json "$WORK/capture.json"
}

# ---- measured peaks: LibTorch's and torch's probes against the datasheet table ---------------
peaks() {
  passed build || { skip "not built"; return; }
  local device=cuda dtypes=(bf16 fp16 tf32 fp32) name rc=0
  if [[ "$REHEARSE" == "1" ]]; then device=cpu dtypes=(fp32); fi
  name=$(device_name)
  echo "{" >"$WORK/peaks.json"
  local sep=""
  for dtype in "${dtypes[@]}"; do
    local measured table
    measured=$(timeout 120 "$vxperf" calibrate --device "$device" --dtype "$dtype" --force \
      --budget 1 --json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["tflops"])') ||
      { rc=1; continue; }
    table=$("$vxperf" flops --preset wan2.1-t2v-1.3b --size 832x480 --device "$name" \
      --dtype "$dtype" --json 2>/dev/null | "$PYTHON" -c \
      'import json,sys; print(json.load(sys.stdin)["peak_tflops"])' 2>/dev/null || echo None)
    echo "gpu_check: $dtype peak measured $measured TFLOPS, table $table"
    printf '%s "%s": {"measured": %s, "table": %s}\n' "$sep" "$dtype" "$measured" \
      "$([[ $table == None ]] && echo null || echo "$table")" >>"$WORK/peaks.json"
    sep=","
    if [[ "$table" != None ]] && ! "$PYTHON" -c \
        "import sys; m, t = $measured, $table; sys.exit(0 if 0.3 * t <= m <= 1.1 * t else 1)"; then
      echo "gpu_check: $dtype measured peak is not within 30%..110% of the table's"
      rc=1
    fi
  done
  echo "}" >>"$WORK/peaks.json"
  if [[ -d "$BUILD/python/vxperf" ]]; then
    PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" timeout 120 "$PYTHON" -c '
import sys, torch, vxperf
device = "cuda:0" if torch.cuda.is_available() else "cpu"
for dtype in (("bf16", "fp8") if device != "cpu" else ("fp32",)):
    r = vxperf.calibrate(device, dtype, force=True)
    print(f"gpu_check: torch probe {dtype}:", r and round(r["tflops"], 1))' || rc=1
  fi
  return $rc
}

# ---- the Python package: the reference and vxperf side by side ---------------------------------
python_side_by_side() {
  [[ -d "$BUILD/python/vxperf" ]] ||
    { skip "the Python package was not built (python3-dev, pybind11)"; return; }
  local reference=${VXPERF_REFERENCE:-}
  for candidate in ../shared/reference/seed_perf.py shared/reference/seed_perf.py \
      gpu-deps/reference/seed_perf.py; do
    [[ -z "$reference" && -f "$candidate" ]] && reference=$candidate
  done
  [[ -n "$reference" ]] || { skip "no reference module (set VXPERF_REFERENCE)"; return; }
  local rc=0 device=0 tolerance=0.02 cpu=()
  # Rehearsed on the CPU: what the records hold is compared, not times a busy CPU makes.
  if [[ "$REHEARSE" == "1" ]]; then device=cpu tolerance=10 cpu=(--cpu); fi
  PYTHONPATH="$(cd "$BUILD" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}"
  export PYTHONPATH VXPERF_REFERENCE="$reference"
  for impl in reference vxperf; do
    timeout 300 "$PYTHON" scripts/gpu_check.py python-run --impl "$impl" --device "$device" \
      --reference "$reference" --out "$WORK/python-$impl.jsonl" 2>"$WORK/python-$impl.log" ||
      { echo "gpu_check: python-run $impl failed"; tail -n 20 "$WORK/python-$impl.log"; return 1; }
  done
  "$PYTHON" scripts/gpu_check.py python-compare --vxperf "$WORK/python-vxperf.jsonl" \
    --reference-records "$WORK/python-reference.jsonl" --time-tolerance "$tolerance" "${cpu[@]}" \
    --json "$WORK/python.json" | tee "$WORK/python-compare.txt" || rc=1
  # The real diffusers with model CPU offload and bf16 autocast over fp32 weights, side by side:
  # same stages, stage times within 2%, vxperf priced at the bf16 peak. diffusers and peft come
  # from build-wheels/ (scripts/setup.sh) when the host has none.
  if ! "$PYTHON" -c 'import diffusers' 2>/dev/null && ls build-wheels/*.whl >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-deps --no-index --target "$WORK/site" build-wheels/*.whl &&
      export PYTHONPATH="$PYTHONPATH:$WORK/site"
  fi
  if "$PYTHON" -c 'import diffusers, accelerate' 2>/dev/null; then
    local name peak
    name=$(device_name)
    peak=$("$vxperf" flops --preset wan2.1-t2v-1.3b --size 832x480 --device "$name" \
      --dtype bf16 --json 2>/dev/null | "$PYTHON" -c \
      'import json,sys; print(json.load(sys.stdin)["peak_tflops"] or "")' 2>/dev/null || true)
    for impl in reference vxperf; do
      timeout 300 "$PYTHON" scripts/gpu_check.py real-run --impl "$impl" --device "$device" \
        --reference "$reference" --out "$WORK/real-$impl.jsonl" 2>"$WORK/real-$impl.log" ||
        { echo "gpu_check: real-run $impl failed"; tail -n 20 "$WORK/real-$impl.log"; rc=1; }
    done
    echo "gpu_check: real diffusers, model CPU offload, bf16 autocast (bf16 peak ${peak:-unknown})"
    "$PYTHON" scripts/gpu_check.py python-compare --vxperf "$WORK/real-vxperf.jsonl" \
      --reference-records "$WORK/real-reference.jsonl" --expect-dtype bf16 \
      --time-tolerance "$tolerance" "${cpu[@]}" ${peak:+--expect-peak "$peak"} |
      tee "$WORK/real-compare.txt" || rc=1
  else
    echo "gpu_check: diffusers not importable (run scripts/setup.sh to make build-wheels/)"
    rc=1
  fi
  # A training scenario through the installed accelerate (stand-ins for the rest): the records
  # agree where the reference is right (scenarios.py's REFERENCE_WRONG).
  if "$PYTHON" -c 'import accelerate' 2>/dev/null; then
    local scenario=train_full
    for impl in reference vxperf; do
      timeout 120 "$PYTHON" tests/python/scenarios.py --impl "$impl" --scenario "$scenario" \
        --real-accelerate --reference "$reference" --out "$WORK/$scenario-$impl.json" \
        2>"$WORK/$scenario-$impl.log" || { tail -n 20 "$WORK/$scenario-$impl.log"; rc=1; }
    done
    "$PYTHON" scripts/gpu_check.py scenarios-compare --scenario "$scenario" \
      --reference-result "$WORK/$scenario-reference.json" \
      --vxperf-result "$WORK/$scenario-vxperf.json" || rc=1
  else
    echo "gpu_check: accelerate not installed: the training scenario is not run"
  fi
  return $rc
}

# ---- diffusers' context parallel on two devices (it does not start without CUDA) ---------------
# A request computed by ulysses over 2 GPUs: each rank's record is priced against 2 devices, its
# layout read from the config diffusers leaves on the transformer, its parameters the unsharded
# count.
context_parallel() {
  [[ "$REHEARSE" != "1" ]] || { skip "needs two GPUs"; return; }
  local devices two=${VISIBLE:-0,1}
  devices=$(CUDA_VISIBLE_DEVICES=$two "$PYTHON" -c 'import torch; print(torch.cuda.device_count())')
  ((devices >= 2)) || { skip "$devices device(s), needs 2"; return; }
  [[ -d "$BUILD/python/vxperf" ]] || { skip "the Python package was not built"; return; }
  rm -rf "$WORK/cp"
  mkdir -p "$WORK/cp"
  local path="$(cd "$BUILD" && pwd)/python:$PWD/tests/python${PYTHONPATH:+:$PYTHONPATH}"
  CUDA_VISIBLE_DEVICES=$two PYTHONPATH="$path" \
    VIDEOX_PERF=1 VIDEOX_PERF_JSON="$WORK/cp/records.jsonl" timeout 300 "$PYTHON" -m \
    torch.distributed.run --standalone --nproc_per_node 2 scripts/gpu_check.py context-parallel \
    >"$WORK/cp/log.txt" 2>&1 ||
    { echo "gpu_check: context parallel run failed"; tail -n 20 "$WORK/cp/log.txt"; return 1; }
  "$PYTHON" scripts/gpu_check.py context-parallel-compare --records "$WORK/cp/records.jsonl"
}

explain() {
  [[ -d "$BUILD/python/vxperf" ]] ||
    { skip "the Python package was not built (python3-dev, pybind11)"; return; }
  local dir="$WORK/explain" device=0 cpu=()
  if [[ "$REHEARSE" == "1" ]]; then device=cpu cpu=(--cpu); fi
  rm -rf "$dir"
  mkdir -p "$dir"
  PYTHONPATH="$(cd "$BUILD" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$PYTHON" \
    scripts/gpu_check.py python-run --impl vxperf --device "$device" --requests 1 --steps 2 \
    --profile-trace "$dir" --out "$dir/records.jsonl" >"$dir/run.log" 2>&1 ||
    { echo "gpu_check: the profiled run failed"; tail -n 20 "$dir/run.log"; return 1; }
  timeout 120 "$vxperf" explain "$dir" --html "$dir/explain.html" >"$dir/explain.txt" 2>&1 ||
    { echo "gpu_check: vxperf explain failed"; tail -n 20 "$dir/explain.txt"; return 1; }
  sed 's/^/gpu_check: /' "$dir/explain.txt" | head -n 40
  "$vxperf" explain "$dir" --json >"$dir/explain.json" 2>/dev/null &&
    "$PYTHON" scripts/gpu_check.py explain-check --explanation "$dir/explain.json" "${cpu[@]}" \
      --json "$WORK/explain.json"
}

# ---- what a CUDA graph buys, predicted and measured ---------------------------------------------
# `vxperf explain --what-if=host` on the explain part's eager trace predicts the denoising steps
# with the host's launches gone; the same pipeline run again with the DiT replayed from a CUDA
# graph (torch.cuda.graphs: the same kernels, no launches from Python) measures it. Rehearsed on
# the CPU: the eager trace explained with the what-if and its output checked (on a CPU-only profile
# the host what-if says why it does not apply); no CUDA graphs there, so no second run.
what_if() {
  passed explain || { skip "the explain part did not pass (its trace is the eager run)"; return; }
  local eager="$WORK/explain" dir="$WORK/what_if" device=0 graphed=()
  rm -rf "$dir"
  mkdir -p "$dir"
  timeout 120 "$vxperf" explain "$eager" --what-if=host --json >"$dir/eager.json" 2>"$dir/eager.err" ||
    { echo "gpu_check: vxperf explain --what-if=host failed"; tail -n 20 "$dir/eager.err"; return 1; }
  if [[ "$REHEARSE" == "1" ]]; then
    echo "gpu_check: what-if: the CUDA-graph run is skipped on the CPU (no CUDA graphs there)"
  else
    PYTHONPATH="$(cd "$BUILD" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$PYTHON" \
      scripts/gpu_check.py python-run --impl vxperf --device "$device" --requests 1 --steps 2 \
      --cuda-graph --profile-trace "$dir/graphed" --out "$dir/records.jsonl" >"$dir/run.log" 2>&1 ||
      { echo "gpu_check: the CUDA-graph run failed"; tail -n 20 "$dir/run.log"; return 1; }
    timeout 120 "$vxperf" explain "$dir/graphed" --json >"$dir/graphed.json" 2>"$dir/graphed.err" ||
      { echo "gpu_check: vxperf explain on the CUDA-graph run failed"; return 1; }
    graphed=(--graphed "$dir/graphed.json")
  fi
  "$PYTHON" scripts/gpu_check.py what-if-check --eager "$dir/eager.json" "${graphed[@]}" \
    --json "$WORK/what_if.json"
}

part environment environment
part deps deps
part build build
part demo demo
part direct direct
part compare compare
part energy energy
part capture capture
part peaks peaks
part python python_side_by_side
part cp context_parallel
part explain explain
part what_if what_if
summary=()
[[ "$REHEARSE" == "1" ]] && summary=(--rehearsal)
"$PYTHON" scripts/gpu_check.py summary --work "$WORK" --out "$OUT" "${summary[@]}"
