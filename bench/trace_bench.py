#!/usr/bin/env python3
"""`vxperf trace` on event scripts at the scale of long runs: wall time and peak RSS.

Generates its own event scripts (a training loop as a live trace writes it: micro-steps, phases,
clip, optimizer steps, memory readings) in two sets: one script of about 1M events, and 8 rank
scripts of about 125k events each (1M in all). For each set it times `cat FILES > /dev/null`
(the machine's raw read speed, warm cache) and `vxperf trace FILES -o OUT`, and takes the peak
RSS of each (GNU time's, else wait4's ru_maxrss). With --compare OTHER_VXPERF it runs that build
too, on the same files, and says whether both wrote the same bytes.

  python3 bench/trace_bench.py --vxperf build/vxperf [--compare old/vxperf] [--events 1000000]
                               [--work DIR] [--keep] [--json OUT.json]
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


def training_script(path, rank, world, events, seed):
    """Writes a training event script of about `events` lines for `rank`; returns its line count."""
    rng = random.Random(seed)
    env = {"VIDEOX_PERF": "2", "VIDEOX_PERF_EVERY": "8"}
    lines = [json.dumps({"ev": "config", "env": env, "device": "NVIDIA H100 80GB HBM3",
                         "device_index": rank % 8, "rank": rank, "world_size": world, "sp": 1}),
             json.dumps({"ev": "train_model", "params": 1418996800, "trainable": 1418996800,
                         "ckpt": True, "attn": {"self": 46080, "cross": 46080, "modules": 60},
                         "text_tokens": 512})]
    t = 100.0 + rank * 0.01
    step = 0
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
        n = len(lines)
        while n < events - 1:
            block = []
            for micro in range(2):
                block.append({"ev": "micro_enter", "t": t})
                for name in ("text_encoder", "vae_enc", "fwd", "bwd"):
                    t1 = t + rng.uniform(0.01, 0.2)
                    ev = {"ev": "phase", "name": name, "t0": t, "t1": t1,
                          "device_ms": (t1 - t) * 1000 * 0.98, "ready_after": 0}
                    if name == "fwd":
                        ev.update(tokens=12368, samples=2)
                    block.append(ev)
                    t = t1
                if micro == 1:
                    t1 = t + 0.002
                    block.append({"ev": "clip", "t0": t, "t1": t1, "device_ms": 1.5,
                                  "ready_after": 0})
                    t = t1
                t1 = t + 0.01
                block.append({"ev": "optimizer_step", "t0": t, "t1": t1, "device_ms": 9.0,
                              "ready_after": 1, "owner": "AdamW", "sync": micro == 1})
                t = t1
                block.append({"ev": "micro_exit", "t": t + 0.0001})
            step += 1
            if step % 8 == 0:
                block.append({"ev": "memory", "peak_alloc_bytes": 27917287424 + rng.randrange(1 << 30),
                              "peak_reserved_bytes": 135291469824})
            t += rng.uniform(0.001, 0.05)  # data loading
            out.write("".join(json.dumps(e) + "\n" for e in block))
            n += len(block)
        out.write(json.dumps({"ev": "finish", "t": t}) + "\n")
        return n + 1


def run(cmd):
    """Wall seconds and peak RSS (MiB) of one command; its stderr. The peak is /usr/bin/time's
    (GNU time, when installed: the program's own), else wait4's ru_maxrss, which also counts
    what the child inherited from this Python process before its exec (some 15 MiB)."""
    gnu_time = os.path.exists("/usr/bin/time")
    marker = "trace_bench-maxrss-kib="
    full = (["/usr/bin/time", "-f", marker + "%M"] if gnu_time else []) + cmd
    start = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), err))
    rss = usage.ru_maxrss / 1024.0
    if gnu_time and marker in err:
        rss = int(err.rsplit(marker, 1)[1].split()[0]) / 1024.0
        err = err.rsplit(marker, 1)[0]
    return wall, rss, err


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vxperf", required=True)
    parser.add_argument("--compare", help="another vxperf build to run on the same files")
    parser.add_argument("--events", type=int, default=1000000, help="events in each set")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--work")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="vxperf-trace-bench-")
    os.makedirs(work, exist_ok=True)
    sets = []
    one = os.path.join(work, "one.events.jsonl")
    sets.append(("1 script", [one], training_script(one, 0, 1, args.events, 1)))
    paths, total = [], 0
    for rank in range(args.ranks):
        path = os.path.join(work, "rank%d.events.jsonl" % rank)
        total += training_script(path, rank, args.ranks, args.events // args.ranks, 100 + rank)
        paths.append(path)
    sets.append(("%d rank scripts" % args.ranks, paths, total))

    builds = [("vxperf", args.vxperf)] + ([("compare", args.compare)] if args.compare else [])
    rows = []
    for label, files, lines in sets:
        size = sum(os.path.getsize(f) for f in files) / 1e6
        wall, rss, _ = run(["cat"] + files)
        rows.append({"set": label, "lines": lines, "MB": size, "what": "cat", "wall_s": wall,
                     "rss_MiB": rss})
        outputs = []
        for name, exe in builds:
            out = os.path.join(work, "%s-%s.json" % (name, label.replace(" ", "_")))
            wall, rss, err = run([exe, "trace"] + files + ["-o", out])
            events = int(err.split("wrote ")[1].split(" ")[0]) if "wrote " in err else None
            rows.append({"set": label, "lines": lines, "MB": size, "what": name, "wall_s": wall,
                         "rss_MiB": rss, "events_out": events,
                         "out_MB": os.path.getsize(out) / 1e6})
            outputs.append(out)
        if len(outputs) == 2:
            same = subprocess.run(["cmp", "-s"] + outputs).returncode == 0
            rows[-1]["same_bytes"] = same
    print("| set | input lines | input MB | run | wall s | peak RSS MiB | events out |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        what = r["what"] + (" (same bytes)" if r.get("same_bytes") else
                            " (DIFFERENT bytes)" if "same_bytes" in r else "")
        print("| %s | %d | %.0f | %s | %.2f | %.1f | %s |" % (
            r["set"], r["lines"], r["MB"], what, r["wall_s"], r["rss_MiB"],
            r.get("events_out", "")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if not args.keep and not args.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
