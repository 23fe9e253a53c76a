"""A plain PyTorch loop as torchrun users write one: DistributedDataParallel over gloo, a
diffusers Wan transformer (which imports accelerate, though the loop never uses it), torch.save of
the state dict on rank 0 every few steps and an evaluation under torch.no_grad() on every rank
that calls the DDP model itself. --vxperf adds the lines docs/PYTHON.md gives for a loop without
accelerate (register_model, instrument_module, the step's scopes, checkpoint and evaluation);
without it the script has no vxperf line at all.

    torchrun --nproc-per-node 2 train_like_ddp.py --out DIR [--steps 4] [--vxperf]
"""
import argparse
import contextlib
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402

BATCH = 2
LATENT = (16, 2, 4, 4)  # (C, F, H, W): 2 frames of 2x2 patches, 8 tokens a sample


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--vxperf", action="store_true")
    args = parser.parse_args()
    scope = contextlib.nullcontext
    if args.vxperf:
        import vxperf
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = real_models.wan_transformer()
    if args.vxperf:
        vxperf.register_model(model)
        vxperf.instrument_module(model, "fwd")
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)

    def batch():
        return (torch.randn(BATCH, *LATENT),
                torch.randn(BATCH, real_models.TEXT_LEN, model.config.text_dim))

    for step in range(1, args.steps + 1):
        latents, text = batch()
        with vxperf.micro_step() if args.vxperf else scope():
            t = torch.randint(0, 1000, (BATCH,))
            pred = ddp(hidden_states=latents, timestep=t, encoder_hidden_states=text,
                       return_dict=False)[0]
            loss = torch.nn.functional.mse_loss(pred, latents)
            with vxperf.backward() if args.vxperf else scope():
                loss.backward()
            with vxperf.optimizer_step(optimizer) if args.vxperf else scope():
                optimizer.step()
            optimizer.zero_grad()
        if step % 2 == 0:
            if rank == 0:
                with vxperf.checkpoint("save") if args.vxperf else scope():
                    torch.save(ddp.module.state_dict(), os.path.join(args.out, f"{step}.pt"))
            with vxperf.evaluation() if args.vxperf else scope():
                ddp.eval()
                with torch.no_grad():
                    latents, text = batch()
                    ddp(hidden_states=latents, timestep=torch.zeros(BATCH, dtype=torch.long),
                        encoder_hidden_states=text)
                ddp.train()
    dist.destroy_process_group()
    print(f"rank {rank} trained {args.steps} steps")


if __name__ == "__main__":
    main()
