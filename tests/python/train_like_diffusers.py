"""A training script written as diffusers' examples are (accelerate: prepare; accumulate,
backward, clip_grad_norm_ in real_models.accelerate_micro_step; log, save_state), with no vxperf
in it: what `vxperf run` measures unmodified. --instrumented adds the one line a user would write
instead.

    python train_like_diffusers.py --out DIR [--steps 8] [--instrumented]
"""
import argparse
import os
import sys

import torch
from accelerate import Accelerator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--instrumented", action="store_true")
    args = parser.parse_args()
    if args.instrumented:
        import vxperf

        vxperf.install_training()
    torch.manual_seed(0)
    accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True, project_dir=args.out)
    model = real_models.wan_transformer()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = [torch.randn(16, 2, 8, 8) for _ in range(4 * args.steps)]
    loader = torch.utils.data.DataLoader(data, batch_size=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    text = torch.randn(2, 8, 16)
    step = 0
    for latents in loader:
        loss = real_models.accelerate_micro_step(accelerator, model, optimizer, latents, text)
        if accelerator.sync_gradients:
            step += 1
            accelerator.log({"loss": loss.item()}, step=step)
            if step % 4 == 0:
                accelerator.save_state(os.path.join(args.out, f"checkpoint-{step}"))
    accelerator.end_training()
    print(f"trained {step} steps")


if __name__ == "__main__":
    main()
