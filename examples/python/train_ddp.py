#!/usr/bin/env python3
"""Data-parallel training of a tiny Wan-shaped DiT, measured by vxperf on every rank.

    VIDEOX_PERF=1 VIDEOX_PERF_EVERY=10 VIDEOX_PERF_JSON=runs/ddp.jsonl VIDEOX_PERF_XRANK=1 \\
    PYTHONPATH=build/python OMP_NUM_THREADS=1 build-venv/bin/python -m torch.distributed.run \\
        --standalone --nproc_per_node 4 examples/python/train_ddp.py --steps 40 --slow-rank 2
    build/vxperf report runs/ddp.jsonl.rank*

One process per rank, as torchrun starts them (rank and world size from its environment);
DistributedDataParallel over gloo on CPU, NCCL when CUDA is present. Each optimizer step is
`--accumulation` micro-steps (gradients all-reduced on the last one only), then clipping and the
optimizer step, measured with vxperf's training API. Records go to one file per rank
(VIDEOX_PERF_JSON + ".rank{N}"); samples/s are local, and the job's are dp times that, dp being
the world size over the sequence-parallel degree (VIDEOX_PERF_SP; 1 here).

--slow-rank R makes rank R's data loader take about half a step longer (host-side: a slow disk or
decoder on one node), so that a straggler exists on purpose. Under DDP every rank's step then
lasts as long as rank R's: the others wait in the backward's all-reduce. With VIDEOX_PERF_XRANK=1
rank 0 names the straggler live at every window; `vxperf report` names it afterwards.
"""
import argparse
import contextlib
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_wan  # noqa: E402
import vxperf  # noqa: E402


class Loader:
    """The data loader: a random clip per micro-step, the same shapes on every rank. On the slow
    rank it also spends `slow` times this rank's own step time (a running estimate) on the host."""

    def __init__(self, rank, device, slow, spin):
        self.generator = torch.Generator().manual_seed(1000 + rank)
        self.device = device
        self.slow = slow
        self.spin = spin
        self.step_s = None  # this rank's step time without the extra, smoothed
        self.extra_s = 0.0  # spent in the current step

    def step_done(self, wall_s):
        own = max(wall_s - self.extra_s, 0.0)
        self.step_s = own if self.step_s is None else 0.8 * self.step_s + 0.2 * own
        self.extra_s = 0.0

    def __call__(self, step, micro, accumulation):
        if self.slow and self.step_s is not None:
            self.extra_s += self._host_work(self.slow * self.step_s / accumulation)
        frames = 9 if (step + micro) % 2 else 5  # two clip lengths: token counts vary
        video = torch.rand(1, 3, frames, 64, 64, generator=self.generator)
        return video.to(self.device)

    def _host_work(self, seconds):
        start = time.perf_counter()
        if self.spin:  # busy host work
            while time.perf_counter() - start < seconds:
                pass
        else:  # waiting on I/O; leaves the CPU to the other ranks of a small machine
            time.sleep(seconds)
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--accumulation", type=int, default=2)
    parser.add_argument("--slow-rank", type=int, default=-1,
                        help="this rank's data loader takes --slow-factor of a step longer")
    parser.add_argument("--slow-factor", type=float, default=0.5)
    parser.add_argument("--slow-spin", action="store_true",
                        help="the slow rank spins on the CPU instead of sleeping")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds a collective may wait before the job fails")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo",
                            timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")

    torch.manual_seed(0)  # the same weights everywhere (DDP would broadcast rank 0's anyway)
    dit = tiny_wan.WanDiT(dim=args.dim, layers=args.layers)
    vae, text_encoder = tiny_wan.VideoVAE(), tiny_wan.TextEncoder()
    # What vxperf needs to know (no-ops while metrics are off): the trained model, and which
    # calls are which phase. The DiT is timed inside DDP's wrapper, so `fwd` excludes DDP's own
    # bookkeeping and `bwd` includes the gradient all-reduce it waits for.
    vxperf.register_model(dit)
    vxperf.instrument_module(dit, "fwd")
    vxperf.instrument_module(vae, "vae")
    vxperf.instrument_module(text_encoder)
    dit, vae, text_encoder = dit.to(device), vae.to(device), text_encoder.to(device)
    if cuda:
        vxperf.training_device(device)
    model = DistributedDataParallel(dit, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = tiny_wan.tokenize("a caption", dit.text_len).to(device)
    load = Loader(rank, device, args.slow_factor if rank == args.slow_rank else 0.0,
                  args.slow_spin)

    for step in range(args.steps):
        start = time.perf_counter()
        for micro in range(args.accumulation):
            last = micro == args.accumulation - 1
            video = load(step, micro, args.accumulation)
            with vxperf.micro_step():
                with torch.no_grad():
                    latents = vae.encode(video)
                    context = text_encoder(ids)
                seq_len = tiny_wan.seq_len_of(latents, dit)
                # Gradients are all-reduced on the last micro-step only.
                with contextlib.nullcontext() if last else model.no_sync():
                    loss = tiny_wan.flow_loss(model, latents, context, seq_len) / args.accumulation
                    with vxperf.backward():
                        loss.backward()
                if last:
                    with vxperf.clip():
                        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                with vxperf.optimizer_step(optimizer, synced=last):
                    if last:
                        optimizer.step()
                        optimizer.zero_grad(set_to_none=True)
        load.step_done(time.perf_counter() - start)

    # The last windows while every rank is still here; then the process group goes.
    vxperf.finish()
    dist.barrier()
    if rank == 0:
        print(f"trained {args.steps} steps on {world} ranks; last loss "
              f"{float(loss) * args.accumulation:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
