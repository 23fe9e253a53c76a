"""One rank of a small job for the cross-rank view's bad-input tests: the vxperf training API
around host sleeps, over a gloo process group that only provides the store. Started by the tests
one process per rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), not by torchrun, so that a
rank that dies does not take the others with it.

    xrank_worker.py [--steps N] [--hang-at STEP --hang-s S] [--die-at STEP] [--no-xrank]
                    [--claim-rank R]
"""
import argparse
import datetime
import os
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--step-s", type=float, default=0.01)
    parser.add_argument("--hang-at", type=int, default=-1, help="stop answering at this step")
    parser.add_argument("--hang-s", type=float, default=0)
    parser.add_argument("--die-at", type=int, default=-1, help="exit at this step")
    parser.add_argument("--no-xrank", action="store_true", help="VIDEOX_PERF_XRANK unset here")
    parser.add_argument("--claim-rank", type=int, default=-1, help="tell vxperf this rank")
    args = parser.parse_args()
    if args.no_xrank:
        os.environ.pop("VIDEOX_PERF_XRANK", None)

    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    import vxperf

    rank, world = dist.get_rank(), dist.get_world_size()
    vxperf.register_model(params=1000)
    if args.claim_rank >= 0:
        vxperf._ext.set_topology(args.claim_rank, world)
    optimizer = object()
    for step in range(args.steps):
        if step == args.hang_at:
            time.sleep(args.hang_s)
        if step == args.die_at:
            os._exit(3)
        with vxperf.micro_step():
            with vxperf.model_call("fwd", 64, 1):
                time.sleep(args.step_s)
            with vxperf.backward():
                time.sleep(args.step_s)
            with vxperf.optimizer_step(optimizer):
                pass
    vxperf.finish()
    print(f"rank {rank} trained {args.steps} steps", flush=True)


if __name__ == "__main__":
    main()
