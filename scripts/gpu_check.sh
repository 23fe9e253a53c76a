#!/usr/bin/env bash
# GPU check: on a host with an NVIDIA GPU and PyTorch 2.x, builds vxperf against that PyTorch's
# bundled LibTorch, runs the demo on the GPU at Wan2.1-1.3B dimensions (random weights, bf16,
# 832x480x81, 3 denoising steps with CFG, 2 requests), times the same transformer forward directly
# with CUDA events and counts its FLOPs with torch.utils.flop_counter, then compares the two.
# Then the Python package (built for $PYTHON when its headers and pybind11 are there): the
# reference module and `import vxperf` side by side on one Wan-shaped pipeline on the GPU (same
# records, stage times within 2%), the side-by-side test suite on torch 2.x (real kwargs hooks)
# and the training scenarios through the installed accelerate; then the real diffusers WanPipeline
# with model CPU offload under bf16 autocast, reference and vxperf side by side (carry
# build-wheels/ to a host without diffusers).
# Also the measured peaks (vxperf calibrate) against the table, and the Python probe's; the
# demo's energy per request against nvidia-smi's energy counter over the same intervals (within
# 5%), and VIDEOX_PERF_PROFILE's capture range under nsys where it is installed.
# A few minutes in all (the build is most of it). See docs/CUDA.md.
#
#   bash scripts/gpu_check.sh            # OUT=out/gpu_check by default; PYTHON=python3
#   VXPERF_REFERENCE=path/seed_perf.py   # the reference (default ../shared/reference/, shared/...)
#   GPU_CHECK_REHEARSE=1 PYTHON=build-venv/bin/python bash scripts/gpu_check.sh
#                                        # on a machine without a GPU: the same build against the
#                                        # CPU wheel's LibTorch, and the demo on the CPU
#
# Exit status: 0 agree, 1 disagree, 2 the demo could not run (the direct numbers still print),
# 3 the Python check could not run (package not built or no reference).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$PWD/out/gpu_check}
BUILD=${BUILD:-build-gpu}
DEVICE=${DEVICE:-0}
REHEARSE=${GPU_CHECK_REHEARSE:-0}
mkdir -p "$OUT"
# Measured peaks go to a cache of this check's own: every run measures afresh.
export XDG_CACHE_HOME="$OUT/cache"
rm -rf "$XDG_CACHE_HOME"

"$PYTHON" - "$REHEARSE" <<'PY'
import sys, torch
if not torch.cuda.is_available():
    if sys.argv[1] == "1":
        print(f"gpu_check: rehearsal on torch {torch.__version__} without a GPU")
        sys.exit(0)
    sys.exit("gpu_check: PyTorch sees no CUDA device")
print(f"gpu_check: torch {torch.__version__} (CUDA {torch.version.cuda}) on "
      f"{torch.cuda.get_device_name()}")
PY

# The recipe of the project's own build: LibTorch from the torch wheel of $PYTHON
# (torch.utils.cmake_prefix_path), the extension for $PYTHON with its own pybind11.
echo "gpu_check: building vxperf against the LibTorch of $("$PYTHON" -c 'import torch; print(torch.__file__)')"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVXPERF_PYTHON="$(command -v "$PYTHON")" \
  -DVXPERF_WITH_TORCH=ON -DVXPERF_BUILD_TESTS=OFF -DVXPERF_BUILD_BENCH=OFF \
  >"$OUT/cmake.log" 2>&1 || { tail -n 40 "$OUT/cmake.log"; exit 1; }
grep "vxperf 0\|vxperf: Python" "$OUT/cmake.log" | sed 's/^-- /gpu_check: /'
targets=(vxperf_cli)
if grep -q "vxperf: Python package ON" "$OUT/cmake.log"; then targets+=(vxperf_python); fi
cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" >"$OUT/build.log" 2>&1 ||
  { tail -n 40 "$OUT/build.log"; exit 1; }
vxperf="$BUILD/vxperf"

if [[ "$REHEARSE" == "1" ]]; then
  # The demo as the GPU run makes it, at a size the CPU finishes: records, one request line each.
  rm -rf "$OUT/demo"
  timeout 300 "$vxperf" demo --device cpu --steps 2 --requests 1 --train-steps 2 --out "$OUT/demo" \
    >"$OUT/demo.log" 2>&1 || { tail -n 20 "$OUT/demo.log"; exit 2; }
  grep -c '"kind": "request"' "$OUT"/demo/run-*/records.jsonl >/dev/null ||
    { echo "gpu_check: the rehearsal's demo wrote no request record"; exit 2; }
  grep "^\[Perf\]\[rank0\] req#\|output digest" "$OUT/demo.log" | sed 's/^/gpu_check: /'
  echo "gpu_check: rehearsal passed (build against the wheel's LibTorch, demo on the CPU)"
  exit 0
fi

rm -rf "$OUT/demo"
demo_status=0
echo "gpu_check: vxperf demo on cuda:$DEVICE"
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} \
  timeout 300 "$vxperf" demo --device cuda --preset wan2.1-t2v-1.3b --dtype bf16 --size 832x480 \
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

status=2
if ((demo_status == 0)); then
  status=0
  "$PYTHON" scripts/gpu_check.py compare --records "$OUT/demo" --direct "$OUT/direct.json" |
    tee "$OUT/compare.txt" || status=1
fi

# ---- energy: the demo's NVML readings (VIDEOX_PERF_NVML, on by default) -------------------------
# Every request on the GPU carries energy_j from the energy counter and a mean power a GPU can
# draw. Then the demo runs again while nvidia-smi polls the same device's energy counter every
# 100 ms (found by the PCI bus id torch gives, as vxperf finds it): each request's energy_j
# against the counter's difference over the same interval (the record's [ts - e2e_s, ts],
# interpolated between polls) within 5%, for requests of 2 s or more (shorter ones are within
# nvidia-smi's own resolution, and said). Not an exit failure where NVML or nvidia-smi is absent
# (then said).
energy_check() {
  ((demo_status == 0)) || return 0
  local rc=0
  "$PYTHON" - "$OUT/demo/records.jsonl" <<'PY' | tee "$OUT/energy.txt" || rc=1
import json, sys
requests = [r for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "request"]
metered = [r for r in requests if "energy_j" in r]
if not metered:
    print("gpu_check: energy: no NVML readings in the records (libnvidia-ml.so.1 absent?)")
    sys.exit(0)
bad = 0
for r in metered:
    e, p, t = r["energy_j"], r.get("power_w_mean"), r["e2e_s"]
    ok = e > 0 and p is not None and 20 <= p <= 2000 and abs(e - p * t) <= 0.15 * e
    bad += not ok
    print(f"gpu_check: energy req#{r['req']}: {e:.1f} J ({r.get('energy_from')}), "
          f"{p} W mean over {t:.2f} s, SM clock min {r.get('sm_clock_mhz_min')} MHz, "
          f"temp max {r.get('temp_c_max')} C, throttle {r.get('throttle')}, "
          f"host {r.get('cpu_energy_j')} J" + ("" if ok else "  <- implausible"))
sys.exit(1 if bad else 0)
PY
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: energy: no nvidia-smi: the counter comparison is skipped"
    return $rc
  fi
  local bus smi="$OUT/energy-smi.csv" poller
  bus=$(CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} "$PYTHON" -c '
import torch
p = torch.cuda.get_device_properties(0)
try:
    print(f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0")
except AttributeError:
    print("")' 2>/dev/null || true)
  echo "gpu_check: energy against nvidia-smi's counter on ${bus:-index $DEVICE}"
  rm -rf "$OUT/energy-demo"
  nvidia-smi -i "${bus:-$DEVICE}" --query-gpu=timestamp,total_energy_consumption \
    --format=csv,noheader,nounits -lms 100 >"$smi" 2>"$OUT/energy-smi.err" &
  poller=$!
  sleep 1
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} \
    timeout 300 "$vxperf" demo --device cuda --preset wan2.1-t2v-1.3b --dtype bf16 --size 832x480 \
    --frames 81 --steps 3 --cfg --requests 3 --train-steps 0 --out "$OUT/energy-demo" \
    >"$OUT/energy-demo.log" 2>&1 || rc=1
  sleep 1
  kill "$poller" 2>/dev/null || true
  wait "$poller" 2>/dev/null || true
  "$PYTHON" - "$OUT/energy-demo/records.jsonl" "$smi" <<'PY' | tee -a "$OUT/energy.txt" || rc=1
import bisect, datetime, json, os, sys
records_path, smi_path = sys.argv[1], sys.argv[2]
if not os.path.exists(records_path):
    sys.exit("gpu_check: energy: the second demo wrote no records")
polls = []  # (epoch s, mJ)
for line in open(smi_path):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 2 or not parts[1].replace(".", "", 1).isdigit():
        continue
    when = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
    polls.append((when, float(parts[1])))
if len(polls) < 2:
    print("gpu_check: energy: nvidia-smi gave no total_energy_consumption (not supported here?)")
    sys.exit(0)
times = [t for t, _ in polls]

def counter_at(t):
    i = bisect.bisect_left(times, t)
    if i == 0 or i == len(polls):
        return None
    (t0, e0), (t1, e1) = polls[i - 1], polls[i]
    return e0 + (e1 - e0) * (t - t0) / (t1 - t0) if t1 > t0 else e0

bad = 0
for r in (json.loads(l) for l in open(records_path)):
    if r.get("kind") != "request" or "energy_j" not in r:
        continue
    start, end = r["ts"] - r["e2e_s"], r["ts"]
    a, b = counter_at(start), counter_at(end)
    if a is None or b is None:
        print(f"gpu_check: energy req#{r['req']}: outside nvidia-smi's polls")
        bad += 1
        continue
    smi_j = (b - a) / 1000.0
    diff = (r["energy_j"] - smi_j) / smi_j if smi_j > 0 else float("inf")
    short = r["e2e_s"] < 2.0
    ok = short or abs(diff) <= 0.05
    bad += not ok
    print(f"gpu_check: energy req#{r['req']}: vxperf {r['energy_j']:.1f} J, nvidia-smi "
          f"{smi_j:.1f} J over the same {r['e2e_s']:.2f} s ({diff:+.1%})"
          + (" (shorter than 2 s: not compared)" if short else "" if ok else "  <- beyond 5%"))
sys.exit(1 if bad else 0)
PY
  return $rc
}
energy_check || status=$((status == 0 ? 1 : status))

# ---- the capture range under Nsight Systems (VIDEOX_PERF_PROFILE) ------------------------------
# The demo's request 1 of 0-2 alone, captured through cuProfilerStart/Stop: the report's GPU
# activity spans no more than that request (and most of it). Skipped where nsys is not installed.
capture_check() {
  ((demo_status == 0)) || return 0
  if ! command -v nsys >/dev/null 2>&1; then
    echo "gpu_check: capture range: nsys not installed: skipped"
    return 0
  fi
  local dir="$OUT/capture" report="" kind
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "gpu_check: capture range: VIDEOX_PERF_PROFILE=requests:1-1 under nsys"
  VIDEOX_PERF_PROFILE=requests:1-1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} \
    timeout 600 nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop \
    --trace=cuda -o "$dir/demo" -f true \
    "$vxperf" demo --device cuda --preset wan2.1-t2v-1.3b --dtype bf16 --size 832x480 \
    --frames 81 --steps 3 --cfg --requests 3 --train-steps 0 --out "$dir/out" \
    >"$dir/log.txt" 2>&1 || { echo "gpu_check: nsys profile failed"; tail -n 20 "$dir/log.txt"; return 1; }
  if grep -q "VIDEOX_PERF_PROFILE" "$dir/log.txt"; then
    grep "VIDEOX_PERF_PROFILE" "$dir/log.txt" | sed 's/^/gpu_check: /'
    return 1
  fi
  for kind in cuda_gpu_trace gputrace; do
    if nsys stats --report "$kind" --format csv --output - "$dir/demo.nsys-rep" \
        >"$dir/gpu_trace.csv" 2>"$dir/stats.err" && grep -q "Start" "$dir/gpu_trace.csv"; then
      report=$kind
      break
    fi
  done
  if [[ -z "$report" ]]; then
    echo "gpu_check: capture range: nsys stats gave no GPU trace"
    tail -n 5 "$dir/stats.err"
    return 1
  fi
  "$PYTHON" - "$dir/gpu_trace.csv" "$dir/out/records.jsonl" <<'PY'
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, row in enumerate(rows) if any(c.startswith("Start") for c in row))
cols = rows[head]
start_col = next(i for i, c in enumerate(cols) if c.startswith("Start"))
dur_col = next(i for i, c in enumerate(cols) if c.startswith("Duration"))
spans = [(float(r[start_col]), float(r[dur_col])) for r in rows[head + 1:]
         if len(r) > dur_col and r[start_col].replace(".", "", 1).isdigit()]
if not spans:
    sys.exit("gpu_check: capture range: the capture holds no GPU activity")
span_s = (max(s + d for s, d in spans) - min(s for s, _ in spans)) / 1e9
request = next(r for r in map(json.loads, open(sys.argv[2]))
               if r.get("kind") == "request" and r["req"] == 1)
ok = 0.5 * request["e2e_s"] <= span_s <= 1.05 * request["e2e_s"] + 0.05
print(f"gpu_check: capture range: {len(spans)} GPU activities over {span_s:.3f} s; request 1 took "
      f"{request['e2e_s']:.3f} s" + ("" if ok else "  <- not that request alone"))
sys.exit(0 if ok else 1)
PY
}
capture_check || status=$((status == 0 ? 1 : status))

# ---- measured peaks: LibTorch's and torch's probes against the datasheet table ---------------
peak_check() {
  local name rc=0
  name=$("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name(0))')
  for dtype in bf16 fp16 tf32 fp32; do
    local measured table
    measured=$(CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} timeout 120 "$vxperf" \
      calibrate --device cuda --dtype "$dtype" --force --json | "$PYTHON" -c \
      'import json,sys; print(json.load(sys.stdin)["tflops"])') || { rc=1; continue; }
    table=$("$vxperf" flops --preset wan2.1-t2v-1.3b --size 832x480 --device "$name" \
      --dtype "$dtype" --json 2>/dev/null | "$PYTHON" -c \
      'import json,sys; print(json.load(sys.stdin)["peak_tflops"])' || echo none)
    echo "gpu_check: $dtype peak measured $measured TFLOPS, table $table"
    if [[ "$table" != none ]] && ! "$PYTHON" -c \
        "import sys; m, t = $measured, $table; sys.exit(0 if 0.3 * t <= m <= 1.1 * t else 1)"; then
      echo "gpu_check: $dtype measured peak is not within 30%..110% of the table's"
      rc=1
    fi
  done
  if [[ -d "$BUILD/python/vxperf" ]]; then
    PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} \
      timeout 120 "$PYTHON" -c '
import torch, vxperf
torch.cuda.init()
for dtype in ("bf16", "fp8"):
    r = vxperf.calibrate("cuda:0", dtype, force=True)
    print(f"gpu_check: torch probe {dtype}:", r and round(r["tflops"], 1))' || rc=1
  fi
  return $rc
}
peak_check || status=$((status == 0 ? 1 : status))

# ---- the Python package: the reference and vxperf side by side ---------------------------------
python_check() {
  if [[ ! -d "$BUILD/python/vxperf" ]]; then
    echo "gpu_check: the Python package was not built (python3-dev and pybind11 needed)"
    return 3
  fi
  local reference=${VXPERF_REFERENCE:-}
  for candidate in ../shared/reference/seed_perf.py shared/reference/seed_perf.py; do
    [[ -z "$reference" && -f "$candidate" ]] && reference=$candidate
  done
  if [[ -z "$reference" ]]; then
    echo "gpu_check: no reference module (set VXPERF_REFERENCE)"
    return 3
  fi
  local rc=0 build_dir
  build_dir=$(cd "$BUILD" && pwd)
  export PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" VXPERF_REFERENCE="$reference"
  echo "gpu_check: Python package and reference on cuda:$DEVICE"
  for impl in reference vxperf; do
    CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} timeout 300 "$PYTHON" \
      scripts/gpu_check.py python-run --impl "$impl" --reference "$reference" \
      --out "$OUT/python-$impl.jsonl" 2>"$OUT/python-$impl.log" ||
      { echo "gpu_check: python-run $impl failed"; tail -n 20 "$OUT/python-$impl.log"; return 1; }
  done
  "$PYTHON" scripts/gpu_check.py python-compare --vxperf "$OUT/python-vxperf.jsonl" \
    --reference-records "$OUT/python-reference.jsonl" | tee "$OUT/python-compare.txt" || rc=1
  # Torch 2.x runs the reference's own kwargs hooks: the side-by-side suite against its goldens.
  if "$PYTHON" -c 'import pytest' 2>/dev/null; then
    VXPERF_BUILD="$build_dir" timeout 300 "$PYTHON" -m pytest -q tests/python/test_side_by_side.py \
      2>&1 | tail -n 15 || rc=1
  else
    echo "gpu_check: pytest not installed: side-by-side suite skipped"
  fi
  # The real diffusers with model CPU offload and bf16 autocast over fp32 weights, side by side:
  # same stages, stage times within 2%, vxperf priced at the bf16 peak. diffusers and peft come
  # from build-wheels/ (scripts/setup.sh) when the host has none.
  if ! "$PYTHON" -c 'import diffusers' 2>/dev/null && ls build-wheels/*.whl >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-deps --no-index --target "$OUT/site" build-wheels/*.whl &&
      export PYTHONPATH="$PYTHONPATH:$OUT/site"
  fi
  if "$PYTHON" -c 'import diffusers, accelerate' 2>/dev/null; then
    local name peak
    name=$("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name(0))')
    peak=$("$BUILD/vxperf" flops --preset wan2.1-t2v-1.3b --size 832x480 --device "$name" \
      --dtype bf16 --json 2>/dev/null | "$PYTHON" -c \
      'import json,sys; print(json.load(sys.stdin)["peak_tflops"] or "")' || true)
    for impl in reference vxperf; do
      CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$DEVICE} timeout 300 "$PYTHON" \
        scripts/gpu_check.py real-run --impl "$impl" --reference "$reference" \
        --out "$OUT/real-$impl.jsonl" 2>"$OUT/real-$impl.log" ||
        { echo "gpu_check: real-run $impl failed"; tail -n 20 "$OUT/real-$impl.log"; rc=1; }
    done
    echo "gpu_check: real diffusers, model CPU offload, bf16 autocast (bf16 peak ${peak:-unknown})"
    "$PYTHON" scripts/gpu_check.py python-compare --vxperf "$OUT/real-vxperf.jsonl" \
      --reference-records "$OUT/real-reference.jsonl" --expect-dtype bf16 \
      ${peak:+--expect-peak "$peak"} | tee "$OUT/real-compare.txt" || rc=1
  else
    echo "gpu_check: diffusers not importable (run scripts/setup.sh to make build-wheels/)"
  fi
  # The training scenarios through the installed accelerate (stand-ins for the rest).
  if "$PYTHON" -c 'import accelerate' 2>/dev/null; then
    for scenario in train_full train_lora; do
      for impl in reference vxperf; do
        timeout 120 "$PYTHON" tests/python/scenarios.py --impl "$impl" --scenario "$scenario" \
          --real-accelerate --reference "$reference" --out "$OUT/$scenario-$impl.json" \
          2>"$OUT/$scenario-$impl.log" || { tail -n 20 "$OUT/$scenario-$impl.log"; rc=1; }
      done
      if cmp -s "$OUT/$scenario-reference.json" "$OUT/$scenario-vxperf.json"; then
        echo "gpu_check: $scenario with accelerate: records agree"
      else
        echo "gpu_check: $scenario with accelerate: records DIFFER"
        diff "$OUT/$scenario-reference.json" "$OUT/$scenario-vxperf.json" | head -n 20
        rc=1
      fi
    done
  else
    echo "gpu_check: accelerate not installed: training scenarios skipped"
  fi
  return $rc
}
python_status=0
python_check || python_status=$?
if ((status == 0 && python_status != 0)); then status=$python_status; fi

# ---- diffusers' context parallel on two devices (it does not start without CUDA) ---------------
# A request computed by ulysses over 2 GPUs: each rank's record is priced against 2 devices, its
# layout read from the config diffusers leaves on the transformer, its parameters the unsharded
# count. Skipped on a host with one device.
cp_check() {
  local devices
  devices=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())')
  if ((devices < 2)); then
    echo "gpu_check: context parallel: $devices device(s), needs 2: skipped"
    return 0
  fi
  rm -rf "$OUT/cp"
  mkdir -p "$OUT/cp"
  PYTHONPATH="$(cd "$BUILD" && pwd)/python:$PWD/tests/python${PYTHONPATH:+:$PYTHONPATH}" \
    VIDEOX_PERF=1 VIDEOX_PERF_JSON="$OUT/cp/records.jsonl" timeout 300 "$PYTHON" -m \
    torch.distributed.run --standalone --nproc_per_node 2 scripts/gpu_check.py context-parallel \
    >"$OUT/cp/log.txt" 2>&1 || { echo "gpu_check: context parallel run failed"; tail -n 20 "$OUT/cp/log.txt"; return 1; }
  "$PYTHON" scripts/gpu_check.py context-parallel-compare --records "$OUT/cp/records.jsonl"
}
cp_check || status=$((status == 0 ? 1 : status))
exit "$status"
