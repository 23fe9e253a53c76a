#!/usr/bin/python3
"""What the live cross-rank view adds per window: the exchange each rank runs at a window end.

    VIDEOX_PERF=1 VIDEOX_PERF_XRANK=1 PYTHONPATH=build/python OMP_NUM_THREADS=1 \\
        /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 4 \\
        --redirects 1 --tee 1 bench/python/xrank_cost.py [--rounds 200]

Each rank calls the package's exchange (vxperf._xrank.exchange, what the engine calls at a window
end: a gloo all-gather of one window's numbers) `rounds` times, after a barrier each time so that
the time is the exchange's own and not a wait for a late rank. The first call also makes the
group (the ranks meet in the store, then gloo connects them): reported apart. Rank 0 prints the
median and p95 over rounds of the slowest rank's time, in milliseconds.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import vxperf  # noqa: F401  (makes the engine: the exchange reads its timeout)
from vxperf import _ext, _xrank


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = [0.0] * _ext.xrank_width()

    dist.barrier()
    start = time.perf_counter()
    _xrank.exchange(mine)
    first = time.perf_counter() - start
    times = []
    for _ in range(args.rounds):
        dist.barrier()
        start = time.perf_counter()
        _xrank.exchange(mine)
        times.append(time.perf_counter() - start)

    # Per round, the slowest rank's time: what the window end costs the job.
    gathered = [None] * world
    dist.all_gather_object(gathered, (first, times))
    if rank == 0:
        firsts = [g[0] for g in gathered]
        slowest = [max(g[1][i] for g in gathered) for i in range(args.rounds)]
        slowest.sort()
        p95 = slowest[min(len(slowest) - 1, int(0.95 * len(slowest)))]
        print(f"xrank exchange, {world} ranks, {args.rounds} rounds: median "
              f"{statistics.median(slowest) * 1e3:.3f} ms, p95 {p95 * 1e3:.3f} ms per window; "
              f"first (makes the group) {max(firsts) * 1e3:.1f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
