#!/usr/bin/env python3
"""`vxperf report` at the scale of real runs, side by side with the first thing a user would write
instead (a Python loop of json.loads over the same files), in one run on the same files.

Generates its own records: 64 ranks x 200 and x 2000 windows and 1024 ranks x 200 windows
(the demo's window shape, one file per rank), and a serving log of 1M requests (one file). For
each set it times `cat FILES > /dev/null` (the machine's raw read speed, warm cache), the
json.loads loop, `vxperf report` (parsing on every core, the default), `vxperf report --threads
1` (one thread) and the parse-only bound (bench/records_parse_bound.cpp: every line through
simdjson's On-Demand parser, every value converted, nothing built, one thread), and takes the
peak RSS of each from the kernel (wait4's ru_maxrss). Each command runs at least three times
and, a short one, until its runs add up to a second (at most 20), the commands taking turns; the
table gives each one's fastest run and the ratio of the medians beside that of the fastest.

  python3 bench/records_bench.py --vxperf build/vxperf [--work DIR [--reuse]] [--scale 0.1] [--keep]

--scale shrinks every set (0.1: a tenth of the windows per rank and of the requests) for a quick
look; the figures in docs/COMMANDS.md are from --scale 1. Prints one table (markdown), the
report's peak RSS at 2000 windows a rank over that at 200 (64 ranks: what the report keeps must
not grow with the windows) and, with --json, writes the figures as JSON.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

PHASES = ["data", "prep", "vae_enc", "text_encoder", "aux", "fwd", "bwd", "clip", "opt"]


def window_line(rng, rank, world, index, steps, ts):
    """One train_window record as the demo's engine writes it, at time ts."""
    step_first = index * steps
    p50 = 2.8 + rng.random() * 0.4 + (0.5 if rank == 3 else 0.0)
    phases = {name: rng.random() * 0.5 for name in PHASES}
    wall = p50 * steps
    record = {
        "kind": "train_window", "ts": ts, "rank": rank, "world_size": world,
        "step_first": step_first, "step_last": step_first + steps - 1, "steps": steps,
        "warmup_excluded": 1 if index == 0 else 0, "step_s_p50": p50,
        "step_s_p95": p50 * (1.2 + rng.random() * 0.3), "phases_s": phases,
        "micro_steps": 2.0, "overrun_s": rng.random() * 0.3, "device": "cuda:%d" % (rank % 8),
        "peak_alloc_bytes": 27917287424 + rng.randrange(1 << 30),
        "peak_reserved_bytes": 135291469824,
        "throughput": {
            "samples_per_s": 4.0 / p50, "samples": 4.0, "wall_s": wall, "dp": world,
            "params": 1418996800, "trainable": 1418996800, "tokens": 12368.57142857143,
            "priced_steps": steps, "priced_s": wall, "flops_coef": 2.5, "flops_coef_hw": 2.5,
            "flops_coef_reason": "full, ckpt on -> 3x/4x, attn from dims (60 modules), "
                                 "overridden to 2.5x",
            "flops_per_step": 633238538756571.4, "attn_share": 0.6167174735998288, "devices": 1,
            "tflops": 633.238538756571 / p50, "hw_tflops": 633.238538756571 / p50,
            "peak_tflops": 989.0, "mfu": 0.64 / p50, "hfu": 0.64 / p50},
        "eta_s": (2000 - index) * wall,
    }
    return json.dumps(record)


def request_line(rng, index):
    """One request record as a serving process writes it."""
    steps = 50
    transformer = [rng.uniform(900.0, 1100.0) for _ in range(4)]
    total = sum(transformer) * steps / 4
    text, vae = rng.uniform(15, 25), rng.uniform(1700, 1900)
    e2e = (text + total + vae) / 1000.0 + rng.random() * 0.05

    def stage(count, total_ms, low, high):
        return {"count": count, "total_ms": total_ms, "mean_ms": total_ms / count,
                "std_ms": (high - low) / 4, "min_ms": low, "max_ms": high}

    record = {
        "kind": "request", "ts": 1000.0 + index * 0.06, "rank": 0, "world_size": 1,
        "req": index, "warmup": index < 2, "e2e_s": e2e,
        "stages": {"text_encoder": stage(1, text, text, text),
                   "transformer": stage(steps, total, min(transformer), max(transformer)),
                   "vae_dec": stage(1, vae, vae, vae)},
        "dit": {"params": 14288491584, "tokens": 75600, "batch": 2, "devices": 1,
                "flops_per_fwd": 94456020572160.0, "attn_share": 0.056066654681415785,
                "tflops": 72.81209305203646, "peak_tflops": 989.0, "mfu": 0.0736},
        "device": "cuda:0", "peak_alloc_bytes": 64425245068, "peak_reserved_bytes": 124554051584,
    }
    return json.dumps(record)


def generate(work, name, ranks, windows, requests, seed):
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    files = []
    if requests:
        path = os.path.join(folder, "requests.jsonl")
        with open(path, "w") as f:
            chunk = []
            for i in range(requests):
                chunk.append(request_line(rng, i))
                if len(chunk) == 10000:
                    f.write("\n".join(chunk) + "\n")
                    chunk = []
            if chunk:
                f.write("\n".join(chunk) + "\n")
        files.append(path)
    for rank in range(ranks):
        path = os.path.join(folder, "rank%04d.jsonl" % rank)
        with open(path, "w") as f:
            lines, ts = [], 1000.0
            for i in range(windows):
                ts += 25.0
                lines.append(window_line(rng, rank, ranks, i, 8, ts))
            f.write("\n".join(lines) + "\n")
        files.append(path)
    return files


def run_measured(argv):
    """Runs argv under /usr/bin/time (a small parent: the peak RSS of a child forked from this
    Python would start at this process's own); returns (wall seconds, CPU seconds, peak RSS in
    bytes, exit status, stderr). The wall time is this process's clock around the run: time's
    own is in steps of 10 ms, a twentieth of the fastest run here (its start, about a millisecond,
    is in every command's figure alike)."""
    with tempfile.NamedTemporaryFile("r") as times, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-o", times.name, "-f", "%U %S %M"] + argv,
                              stdout=subprocess.DEVNULL, stderr=err)
        wall = time.perf_counter() - start
        user, system, rss_kb = times.read().split()[-3:]
        err.seek(0)
        return (wall, float(user) + float(system), int(rss_kb) * 1024, proc.returncode,
                err.read().decode(errors="replace"))


MAX_RUNS = 20

PY_LOOP = """
import json, sys
n = 0
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            json.loads(line)
            n += 1
print(n)
"""


def measure(files, vxperf, bound, repeats, min_time):
    """Each command at least `repeats` times and, a short one, until its runs add up to
    `min_time` seconds (at most MAX_RUNS), the commands taking turns; returns the size and, for
    each, its fastest run and its median run (wall seconds, CPU seconds, peak RSS bytes). A short
    command's single run is at the mercy of a moment's interference where a long one's averages
    it out: the same second of runs for each gives the fastest run of either the same footing."""
    size = sum(os.path.getsize(p) for p in files)
    commands = (("cat", ["cat"] + files),
                ("python", [sys.executable, "-c", PY_LOOP] + files),
                ("vxperf", [vxperf, "report"] + files),
                ("vxperf1", [vxperf, "report", "--threads", "1"] + files),
                ("bound", [bound] + files))
    runs = {name: [] for name, _ in commands}

    def pending(name):
        done = runs[name]
        return len(done) < repeats or (sum(r[0] for r in done) < min_time and
                                       len(done) < MAX_RUNS)

    while any(pending(name) for name, _ in commands):
        for name, argv in commands:
            if not pending(name):
                continue
            seconds, cpu, rss, rc, err = run_measured(argv)
            if rc != 0 or err:
                raise SystemExit("%s exited %d: %s" % (name, rc, err[:2000]))
            runs[name].append((seconds, cpu, rss))
    best = {name: min(done) for name, done in runs.items()}
    median = {name: sorted(done)[len(done) // 2] for name, done in runs.items()}
    count = {name: len(done) for name, done in runs.items()}
    return size, best, median, count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vxperf", required=True)
    parser.add_argument("--work", default=None, help="folder for the data (default: a temp dir)")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each command at the least (default 3)")
    parser.add_argument("--min-time", type=float, default=1.0,
                        help="a short command runs until its runs add up to this many seconds "
                             "(default 1, at most %d runs)" % MAX_RUNS)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    parser.add_argument("--reuse", action="store_true",
                        help="use the data a run with --work DIR --keep left there")
    parser.add_argument("--bound", default=None,
                        help="the parse-only bound (default: bench/vxperf_records_parse_bound "
                             "beside the vxperf given)")
    args = parser.parse_args()
    bound = args.bound or os.path.join(os.path.dirname(os.path.abspath(args.vxperf)), "bench",
                                       "vxperf_records_parse_bound")
    if not os.access(bound, os.X_OK):
        raise SystemExit("no parse-only bound at %s (build the benchmarks, or give --bound)" % bound)
    work = args.work or tempfile.mkdtemp(prefix="vxperf-records-bench-")
    sets = [("64 ranks x %d windows" % int(200 * args.scale), 64, int(200 * args.scale), 0),
            ("64 ranks x %d windows" % int(2000 * args.scale), 64, int(2000 * args.scale), 0),
            ("1024 ranks x %d windows" % int(200 * args.scale), 1024, int(200 * args.scale), 0),
            ("%d requests" % int(1000000 * args.scale), 0, 0, int(1000000 * args.scale))]
    rows = []
    try:
        for i, (label, ranks, windows, requests) in enumerate(sets):
            # Named by its shape, so that --reuse finds each set whatever the list before it.
            name = "set-%d-%d-%d" % (ranks, windows, requests)
            folder = os.path.join(work, name)
            if args.reuse and os.path.isdir(folder):
                files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
            else:
                files = generate(work, name, ranks, windows, requests, seed=i)
            size, best, median, count = measure(files, args.vxperf, bound, args.repeats,
                                                args.min_time)
            mb = size / 1e6
            row = {"set": label, "ranks": ranks, "windows": windows, "mb": mb}
            for name, (seconds, cpu, rss) in best.items():
                row[name + "_s"] = seconds
                row[name + "_cpu_s"] = cpu
                row[name + "_rss_mb"] = rss / 1e6
            for name in best:
                row[name + "_median_s"] = median[name][0]
                row[name + "_runs"] = count[name]
            row["speedup"] = best["python"][0] / best["vxperf"][0]
            row["median_speedup"] = median["python"][0] / median["vxperf"][0]
            row["cpu_speedup"] = best["python"][1] / max(best["vxperf"][1], 0.01)
            row["speedup_1"] = best["python"][0] / best["vxperf1"][0]
            row["bound_speedup"] = best["python"][0] / best["bound"][0]
            print("measured: %s" % json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
            shutil.rmtree(folder, ignore_errors=True) if not args.keep else None
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print("| input | size | cat > /dev/null | json.loads loop | vxperf report | vs Python (wall) |"
          " medians | vs Python (CPU) | --threads 1 | vs Python | parse-only bound | vs Python |"
          " vxperf peak RSS | Python peak RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| %s | %.0f MB | %.3f s (%.0f MB/s) | %.2f s (CPU %.2f s) | %.3f s (CPU %.2f s, "
              "%.0f MB/s) | %.1fx | %.1fx | %.1fx | %.3f s | %.1fx | %.3f s | %.1fx | %.1f MB |"
              " %.1f MB |"
              % (r["set"], r["mb"], r["cat_s"], r["mb"] / max(r["cat_s"], 0.01), r["python_s"],
                 r["python_cpu_s"], r["vxperf_s"], r["vxperf_cpu_s"],
                 r["mb"] / max(r["vxperf_s"], 0.01), r["speedup"], r["median_speedup"],
                 r["cpu_speedup"], r["vxperf1_s"], r["speedup_1"], r["bound_s"],
                 r["bound_speedup"], r["vxperf_rss_mb"], r["python_rss_mb"]))
    print("runs of each (cat, python, vxperf, --threads 1, bound): " + "; ".join(
        "%s %s" % (r["set"], ", ".join(str(r[n + "_runs"]) for n in
                                      ("cat", "python", "vxperf", "vxperf1", "bound")))
        for r in rows))
    # What the report keeps of the windows: the same ranks, ten times the windows.
    by_shape = {(r["ranks"], r["windows"]): r for r in rows}
    small = by_shape.get((64, int(200 * args.scale)))
    large = by_shape.get((64, int(2000 * args.scale)))
    figures = {"rows": rows}
    if small and large and small is not large:
        figures["rss_ratio"] = large["vxperf_rss_mb"] / small["vxperf_rss_mb"]
        print("vxperf report peak RSS, 64 ranks: %.1f MB at %d windows a rank, %.1f MB at %d: "
              "%.2fx" % (small["vxperf_rss_mb"], small["windows"], large["vxperf_rss_mb"],
                         large["windows"], figures["rss_ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
