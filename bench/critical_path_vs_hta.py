#!/usr/bin/env python3
"""HTA's critical path against `vxperf explain --critical-path` on random GPU-like traces.

Bench tool only -- never a dependency of vxperf. Run it with the python of a virtual environment
where HTA 0.6.1 is installed (as for bench/hta_numbers.py, which it imports):

    /path/to/hta-venv/bin/python bench/critical_path_vs_hta.py --vxperf build/vxperf \\
        --seeds 1-1000 [--stable-sorts] [--keep DIR]

Each seed makes one Kineto trace (plain JSON) of what HTA's critical-path rules read: profiler
steps (0 to 4, sometimes with a GPU-side copy of a step's name), one to three host threads (with
a forward range on one and the autograd engine's ops on another, now and then), CPU ops holding
launch calls of several names (cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel,
cudaMemcpyAsync; rarely the old `Runtime` category) whose kernels, copies and sets run on one to
three streams, sometimes queued, overlapping, starting in the same microsecond or more than
1500 us after the previous one; cudaEventRecord calls, cudaStreamWaitEvent with its Stream Wait
Event, cudaStreamSynchronize, cudaDeviceSynchronize and cudaEventSynchronize, mostly with their
cuda_sync events; data-loader ranges; NCCL kernel names; fractional timestamps in a quarter of
the traces, zero-length kernels, events in shuffled order in a fifth. Timestamps are
epoch-sized (HTA keeps integers in the smallest type that holds them: small ones overflow).

For each trace both `ProfilerStep` (each instance) and the whole trace (`""`) are compared with
bench/explain_vs_hta.py's rules, and for what HTA raises, the exception's class. With
--stable-sorts HTA runs with pandas' single-column sorts stable: the order of equal times that
vxperf takes (HTA's own depends on the CPU, see docs/EXPLAIN.md). Prints each difference and a
summary line; exit status 1 when some comparison differs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import explain_vs_hta  # noqa: E402
import hta_numbers  # noqa: E402

BASE_US = 1712867402348000
KERNELS = ["void at::native::gemm<float>(int)", "gemm", "elementwise_kernel",
           "void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "ncclDevKernel_AllGather",
           "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"]


def make_trace(seed: int, path: str) -> None:
    """Writes seed's random trace to path."""
    rnd = random.Random(seed)
    events: List[Dict[str, Any]] = []
    correlation = [100]
    fractional = rnd.random() < 0.25

    def new_correlation() -> int:
        correlation[0] += 1
        return correlation[0]

    def at(t: float) -> float:
        if fractional:
            return round(BASE_US + t + rnd.choice([0, 0, 0.25, 0.5, 0.7, 0.999]), 3)
        return BASE_US + int(t)

    def event(cat: str, name: str, pid: int, tid: int, ts: float, dur: float,
              args: Dict[str, Any] | None = None) -> None:
        e: Dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                             "ts": at(ts), "dur": dur}
        if args is not None:
            e["args"] = args
        events.append(e)

    def sync(name: str, stream: int, ts: float, dur: float, corr: int, wait_stream: int = -1,
             wait_record: int = -1) -> None:
        event("cuda_sync", name, 0, stream, ts, dur,
              {"cuda_sync_kind": name, "wait_on_stream": wait_stream,
               "wait_on_cuda_event_record_corr_id": wait_record, "stream": stream,
               "correlation": corr, "device": 0})

    streams = rnd.sample([7, 8, 20, 24], rnd.randint(1, 3))
    busy_until = {s: 0 for s in streams}
    threads = rnd.randint(1, 3)
    autograd = threads >= 2 and rnd.random() < 0.5
    steps = rnd.choice([0, 1, 2, 3, 4])
    recorded: List[tuple] = []  # (correlation, stream) of cudaEventRecord calls
    for step in range(max(steps, 1)):
        s0 = step * 2000
        if steps:
            event("user_annotation", f"ProfilerStep#{step + 1}", 1, 1, s0,
                  2000 - rnd.choice([0, 0, 5]))
            if rnd.random() < 0.3:
                event("gpu_user_annotation", f"ProfilerStep#{step + 1}", 0, streams[0], s0 + 30,
                      500)
        for thread in range(threads):
            tid = thread + 1
            now = s0 + rnd.randint(0, 50)
            if autograd and thread == 0:
                event("user_annotation", "## forward ##", 1, tid, now, 100)
            for _ in range(rnd.randint(1, 5)):
                name = rnd.choice(["aten::mm", "aten::add", "aten::copy_", "aten::item"])
                if autograd and thread == 1:
                    name = "autograd::engine::evaluate_function: MmBackward0"
                op_start = now
                inner = op_start + rnd.randint(1, 10)
                if rnd.random() < 0.15:  # a data loader's range, its collate at the end
                    event("user_annotation",
                          "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, tid,
                          inner, 200)
                    event("cpu_op", "aten::stack", 1, tid, inner + 150, 40)
                    inner += 210
                for _ in range(rnd.randint(0, 3)):
                    kind = rnd.random()
                    d = rnd.randint(2, 20)
                    if kind < 0.6 or (not recorded and kind < 0.75):
                        c = new_correlation()
                        launch = rnd.choice(["cudaLaunchKernel", "cudaLaunchKernel",
                                             "cudaMemcpyAsync", "cudaLaunchKernelExC",
                                             "cuLaunchKernel"])
                        cat = "cuda_driver" if launch == "cuLaunchKernel" else "cuda_runtime"
                        if rnd.random() < 0.03:
                            cat = "Runtime"  # the old Kineto category: HTA refuses
                        event(cat, launch, 1, tid, inner, d, {"correlation": c})
                        stream = rnd.choice(streams)
                        start = max(inner + rnd.randint(1, 40),
                                    busy_until[stream] + rnd.choice([-5, 0, 1, 3, 10, 50, 1600]))
                        length = rnd.choice([0, 1, 5, 20, 100, 400])
                        kernel = rnd.choice(KERNELS)
                        kcat = ("gpu_memcpy" if kernel.startswith("Memcpy") else "gpu_memset"
                                if kernel.startswith("Memset") else "kernel")
                        event(kcat, kernel, 0, stream, start, length,
                              {"device": 0, "stream": stream, "correlation": c})
                        busy_until[stream] = max(busy_until[stream], start + length)
                        if rnd.random() < 0.2:
                            r = new_correlation()
                            event("cuda_runtime", "cudaEventRecord", 1, tid, inner + d + 1, 2,
                                  {"correlation": r})
                            recorded.append((r, stream))
                            inner += 3
                    elif kind < 0.75:
                        r, on = rnd.choice(recorded)
                        c = new_correlation()
                        waits = rnd.choice(streams)
                        event("cuda_runtime", "cudaStreamWaitEvent", 1, tid, inner, d,
                              {"correlation": c})
                        sync("Stream Wait Event", waits, inner + 1, 1, c, on, r)
                    elif kind < 0.85:
                        c = new_correlation()
                        stream = rnd.choice(streams)
                        end = max(inner + d, busy_until[stream] + rnd.randint(0, 10))
                        event("cuda_runtime", "cudaStreamSynchronize", 1, tid, inner, end - inner,
                              {"correlation": c})
                        if rnd.random() < 0.8:
                            sync("Stream Sync", stream, inner, end - inner, c)
                        d = end - inner
                    elif kind < 0.92:
                        c = new_correlation()
                        end = max([inner + d] + [b + rnd.randint(0, 10)
                                                 for b in busy_until.values()])
                        event("cuda_runtime", "cudaDeviceSynchronize", 1, tid, inner, end - inner,
                              {"correlation": c})
                        if rnd.random() < 0.8:
                            sync("Context Sync", -1, inner, end - inner, c)
                        d = end - inner
                    elif recorded:
                        r, on = rnd.choice(recorded)
                        c = new_correlation()
                        end = max(inner + d, busy_until[on] + rnd.randint(0, 10))
                        event("cuda_runtime", "cudaEventSynchronize", 1, tid, inner, end - inner,
                              {"correlation": c})
                        sync("Event Sync", -1, inner, end - inner, c, on, r)
                        d = end - inner
                    inner += d + rnd.randint(1, 10)
                op_end = inner + rnd.randint(1, 20)
                event("cpu_op", name, 1, tid, op_start, op_end - op_start, {"External id": 1})
                now = op_end + rnd.choice([1, 5, 50, 300])
    if rnd.random() < 0.2:
        rnd.shuffle(events)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"schemaVersion": 1, "traceEvents": events}, f)


def exception_class(why: str) -> str:
    return why.split(":")[0].split(" ")[0]


def compare_one(vxperf: str, trace_dir: str, spec: str) -> List[str]:
    """The differences between HTA and vxperf on one trace and SPEC."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        hta = hta_numbers.run(trace_dir, spec, True)
    proc = subprocess.run([vxperf, "explain", "--json", f"--critical-path={spec}", trace_dir],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return [f"vxperf failed: {proc.stderr.strip()[:300]}"]
    ours = json.loads(proc.stdout)
    lines = explain_vs_hta.compare(hta, ours).lines
    by_rank = {r["rank"]: r for r in ours["ranks"]}
    for rank in hta["ranks"]:
        mine = {tuple(i["instance"]): i for i in
                by_rank.get(rank["rank"], {}).get("critical_path", {}).get("instances", [])}
        for i in rank["critical_path"]["instances"]:
            other = mine.get(tuple(i["instance"]), {})
            if i["hta"] == "raises" and other.get("hta") == "raises" and \
                    exception_class(i.get("why", "")) != exception_class(other.get("why", "")):
                lines.append(f"rank {rank['rank']}: instance {i['instance']}: HTA raises "
                             f"{i.get('why', '')[:100]!r}, vxperf says {other.get('why', '')[:100]!r}")
    return lines


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vxperf", required=True, help="the vxperf command")
    parser.add_argument("--seeds", default="1-100", help="FIRST-LAST (default 1-100)")
    parser.add_argument("--stable-sorts", action="store_true",
                        help="run HTA with pandas' sorts stable (vxperf's order of equal times)")
    parser.add_argument("--keep", help="write the traces under this directory (else a temporary one)")
    args = parser.parse_args(argv)
    first, _, last = args.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    if args.stable_sorts:
        hta_numbers.make_sorts_stable()
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or scratch
        compared = differing = 0
        for seed in seeds:
            trace_dir = os.path.join(root, str(seed))
            os.makedirs(trace_dir, exist_ok=True)
            make_trace(seed, os.path.join(trace_dir, "trace.json"))
            for spec in ("ProfilerStep", ""):
                lines = compare_one(args.vxperf, trace_dir, spec)
                compared += 1
                if lines:
                    differing += 1
                    print(f"seed {seed}, --critical-path={spec}: {len(lines)} differences")
                    for line in lines[:8]:
                        print("  " + line)
        print(f"{len(seeds)} traces, {compared} comparisons, {differing} with differences")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
