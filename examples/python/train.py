#!/usr/bin/env python3
"""Fine-tuning a tiny Wan-shaped DiT with a plain PyTorch loop, measured by vxperf.

    VIDEOX_PERF=1 VIDEOX_PERF_EVERY=4 PYTHONPATH=build/python \
        build-venv/bin/python examples/python/train.py [--lora] [--checkpointing]

Each optimizer step is split into phases (data wait, prep, VAE encode, text encoder, forward,
backward, clip, optimizer, other) and priced in FLOPs (3x a forward for full fine-tuning, 2x with
--lora; +1x recomputation with gradient checkpointing for HFU); a `[Perf]` line per window of
VIDEOX_PERF_EVERY steps and a summary at exit. Nothing is synchronized: device timings settle as
later steps complete. Without VIDEOX_PERF nothing is measured.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_wan  # noqa: E402
import vxperf  # noqa: E402


def add_lora(model, rank=4):
    """Freezes the model; trainable low-rank adapters (peft's lora_A/lora_B) on q and v."""

    class LoRA(torch.nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base = base
            self.lora_A = torch.nn.Linear(base.in_features, rank, bias=False)
            self.lora_B = torch.nn.Linear(rank, base.out_features, bias=False)
            torch.nn.init.zeros_(self.lora_B.weight)

        @property
        def out_features(self):  # the attention width vxperf reads
            return self.base.out_features

        def forward(self, x):
            return self.base(x) + self.lora_B(self.lora_A(x))

    model.requires_grad_(False)
    for module in list(model.modules()):
        if isinstance(module, tiny_wan.Attention):
            module.q, module.v = LoRA(module.q), LoRA(module.v)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--accumulation", type=int, default=2)
    parser.add_argument("--lora", action="store_true")
    parser.add_argument("--checkpointing", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    dit, vae, text_encoder = tiny_wan.WanDiT(), tiny_wan.VideoVAE(), tiny_wan.TextEncoder()
    if args.lora:
        add_lora(dit)
    dit.gradient_checkpointing = args.checkpointing
    trainable = [p for p in dit.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)

    # What vxperf needs to know: the trained model (size, trainable share, checkpointing,
    # attention widths), and which calls are which phase. No-ops while metrics are off.
    vxperf.register_model(dit, lora=args.lora)
    vxperf.instrument_module(dit, "fwd")     # the trained forward: priced from x and seq_len
    vxperf.instrument_module(vae, "vae")     # encode -> "vae_enc"
    vxperf.instrument_module(text_encoder)   # "text_encoder"
    if torch.cuda.is_available():
        dit, vae, text_encoder = dit.cuda(), vae.cuda(), text_encoder.cuda()
        vxperf.training_device(torch.device("cuda", torch.cuda.current_device()))
    device = next(dit.parameters()).device

    for step in range(args.steps):
        for micro in range(args.accumulation):
            last = micro == args.accumulation - 1
            frames = 9 if (step + micro) % 2 else 5  # two clip lengths: token counts vary
            video = torch.rand(1, 3, frames, 64, 64, device=device)  # the "data loader"
            with vxperf.micro_step():
                with torch.no_grad():
                    latents = vae.encode(video)
                    context = text_encoder(tiny_wan.tokenize("a caption", dit.text_len).to(device))
                seq_len = tiny_wan.seq_len_of(latents, dit)
                loss = tiny_wan.flow_loss(dit, latents, context, seq_len) / args.accumulation
                with vxperf.backward():
                    loss.backward()
                if last:
                    with vxperf.clip():
                        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
                with vxperf.optimizer_step(optimizer, synced=last):
                    if last:
                        optimizer.step()
                        optimizer.zero_grad()
    print(f"trained {args.steps} steps; last loss {float(loss) * args.accumulation:.6f}")


if __name__ == "__main__":
    main()
