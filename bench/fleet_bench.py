#!/usr/bin/env python3
"""Rank files per second per core: `vxperf explain` in one process against `python -m
vxperf.fleet explain` on a Ray cluster of this machine (a head without CPUs and --workers worker
nodes of --cpus each, started with `ray start` on 127.0.0.2 in sessions of their own and stopped
by session), and on a Ray the fleet starts itself (no --address).

    python3 bench/fleet_bench.py DIR --vxperf build/vxperf [--workers 2] [--cpus 1] [--repeats 3]
                                 [--files-per-task N] [--one-file] [--no-local-ray]

DIR holds the rank files (bench/explain_bench.py make ... --ranks N writes them). Run it with
the Python of an environment that has Ray and vxperf (build-venv, with VXPERF_BUILD's python/ on
PYTHONPATH). Each time is the fastest of --repeats runs (on a shared machine, the one least
slowed by the others); the cluster's start is not counted, the fleet's own (importing Ray,
joining the cluster, the merge) is, and --one-file times it alone (the fleet on the first file).
Prints one markdown table. No CPU seconds: summing the cluster's processes' times from /proc
(their own and their reaped children's) gave 2.1 s for work that takes 5.7 s in one process (the
job's workers end with it, and their times reach no parent that is read).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

# The nodes' starting and stopping, shared with the fleet's test.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "python"))
from ray_nodes import Nodes  # noqa: E402


def timed(argv: Sequence[str], env: dict[str, str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.monotonic()
        subprocess.run(list(argv), env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        best = min(best, time.monotonic() - start)
    return best


def start_cluster(env: dict[str, str], workers: int, cpus: int) -> Nodes:
    """A head without CPUs and `workers` nodes of `cpus` each, one after the other."""
    nodes = Nodes(tempfile.mkdtemp(prefix="vxr-", dir="/tmp"), env)
    try:
        nodes.start("head", "--head", "--port=0", "--num-cpus=0", "--include-dashboard=false",
                    f"--temp-dir={nodes.root}", timeout=300)
        for w in range(workers):
            nodes.start(f"worker{w}", f"--address={nodes.address}", f"--num-cpus={cpus}",
                        timeout=300)
    except RuntimeError as e:
        stop_cluster(nodes)
        raise SystemExit(str(e)) from None
    return nodes


def stop_cluster(nodes: Nodes) -> None:
    nodes.stop()
    shutil.rmtree(nodes.root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--vxperf", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cpus", type=int, default=1, help="CPUs of each worker node")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files-per-task", type=int, default=1, help="the fleet's (default 1)")
    parser.add_argument("--one-file", action="store_true",
                        help="also the fleet on the cluster over the first file alone")
    parser.add_argument("--no-local-ray", action="store_true",
                        help="skip the fleet on a Ray it starts itself")
    args = parser.parse_args()
    files = [e for e in os.listdir(args.dir) if e.endswith((".json", ".json.gz"))]
    size = sum(os.path.getsize(os.path.join(args.dir, e)) for e in files) / len(files) / 2**20
    vxperf = os.path.abspath(args.vxperf)
    env = dict(os.environ, PATH=os.path.dirname(vxperf) + os.pathsep + os.environ["PATH"],
               RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=secrets.token_hex(32))
    fleet = [sys.executable, "-m", "vxperf.fleet", "explain", args.dir, "--files-per-task",
             str(args.files_per_task)]
    cores = os.cpu_count() or 1
    rows: list[tuple[str, int, float, int]] = []
    for threads in (1, cores):
        t = timed([vxperf, "explain", args.dir, "--threads", str(threads)], env, args.repeats)
        rows.append((f"one process, --threads {threads}", threads, t, len(files)))
    if not args.no_local_ray:
        t = timed(fleet, env, args.repeats)
        rows.append(("fleet, a Ray it starts (its start counted)", cores, t, len(files)))
    cluster = start_cluster(env, args.workers, args.cpus)
    try:
        cores_used = args.workers * args.cpus
        t = timed(fleet + ["--address", cluster.address], env, args.repeats)
        rows.append((f"fleet, cluster of {args.workers} x {args.cpus} CPU, "
                     f"{args.files_per_task} file(s) a task", cores_used, t, len(files)))
        if args.one_file:
            first = os.path.join(args.dir, sorted(files)[0])
            t = timed([*fleet[:4], first, "--address", cluster.address], env, args.repeats)
            rows.append(("fleet, cluster, the first file alone", cores_used, t, 1))
    finally:
        stop_cluster(cluster)
    print(f"{len(files)} rank files of {size:.2f} MiB, {cores} cores, load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| run | cores | wall s | files/s | files/s/core |")
    print("| --- | --- | --- | --- | --- |")
    for name, k, t, n in rows:
        print(f"| {name} | {k} | {t:.2f} | {n / t:.1f} | {n / t / k:.1f} |")

if __name__ == "__main__":
    main()
