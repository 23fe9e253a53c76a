"""An accelerate loop with gradient accumulation and a hand-written evaluation on every rank, as
accelerate's examples write one, with no vxperf in it: 4 micro-steps a step under
accelerator.accumulate(), a frozen VAE and text encoder called in each, and every few steps,
between accelerator.wait_for_everyone() calls, the model put in eval mode and a validation
loader run through the same models under torch.no_grad(), its loss gathered across the ranks,
then the state saved on the main process before the model's train().

    torchrun --nproc-per-node 2 train_like_accelerate_eval.py [--steps 4] [--every 2]
"""
import argparse
import os
import sys

import torch
from accelerate import Accelerator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402

BATCH, FRAMES, SIZE, ACCUMULATION = 2, 5, 16, 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--out", default="out")
    args = parser.parse_args()
    torch.manual_seed(0)
    accelerator = Accelerator(gradient_accumulation_steps=ACCUMULATION, cpu=True)
    vae, text_encoder = real_models.wan_vae(), real_models.umt5()
    transformer = real_models.wan_transformer()
    vae.requires_grad_(False)
    text_encoder.requires_grad_(False)
    optimizer = torch.optim.AdamW(transformer.parameters(), lr=1e-4)
    count = BATCH * ACCUMULATION * args.steps * accelerator.num_processes
    videos = [torch.rand(3, FRAMES, SIZE, SIZE) * 2 - 1 for _ in range(count)]
    captions = [torch.randint(3, 32, (real_models.TEXT_LEN,)) for _ in videos]
    pairs = list(zip(videos, captions))
    loader = torch.utils.data.DataLoader(pairs, batch_size=BATCH)
    validation = torch.utils.data.DataLoader(pairs[:2 * accelerator.num_processes],
                                             batch_size=BATCH)
    transformer, optimizer, loader, validation = accelerator.prepare(
        transformer, optimizer, loader, validation)

    def encode(pixels, ids):
        with torch.no_grad():
            return (vae.encode(pixels).latent_dist.sample(),
                    text_encoder(ids, return_dict=False)[0])

    step = 0
    transformer.train()
    for pixels, ids in loader:
        with accelerator.accumulate(transformer):
            latents, text = encode(pixels, ids)
            noise = torch.randn_like(latents)
            sigmas = torch.rand(latents.shape[0]).view(-1, 1, 1, 1, 1)
            pred = transformer((1 - sigmas) * latents + sigmas * noise, sigmas.flatten() * 1000,
                               text, return_dict=False)[0]
            loss = torch.nn.functional.mse_loss(pred.float(), (noise - latents).float())
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        if not accelerator.sync_gradients:
            continue
        step += 1
        if step % args.every == 0:
            accelerator.wait_for_everyone()
            transformer.eval()
            losses = []
            for pixels, ids in validation:
                latents, text = encode(pixels, ids)
                with torch.no_grad():
                    pred = transformer(latents, torch.full((latents.shape[0],), 500.0), text,
                                       return_dict=False)[0]
                losses.append(accelerator.gather_for_metrics(
                    torch.nn.functional.mse_loss(pred, latents).reshape(1)))
            accelerator.print(f"step {step} validation loss {torch.cat(losses).mean().item():.4f}")
            if accelerator.is_main_process:  # saved before train(), as at an epoch's end
                accelerator.save_state(os.path.join(args.out, f"step-{step}"))
            transformer.train()
            accelerator.wait_for_everyone()
    accelerator.end_training()
    print(f"trained {step} steps")


if __name__ == "__main__":
    main()
