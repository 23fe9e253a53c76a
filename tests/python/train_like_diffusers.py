"""A training script written as diffusers' text-to-video training examples are, with no vxperf in
it: what `vxperf run` measures unmodified. The VAE and the text encoder are frozen
(requires_grad_(False)), moved to the device and called in the loop; only the transformer, the
optimizer, the data and the learning-rate schedule go through accelerator.prepare(); the
transformer is called positionally with return_dict=False; clip_grad_norm_ on the steps that
sync; an EMA of the transformer updated after each step that synced (diffusers' --use_ema); the
loss logged and the state saved on the main process only, which also runs a validation pass (a
pipeline made of the models being trained, then called, with the EMA weights swapped in, its
transformer loaded again as VideoX-Fun's scripts do) every few steps and at the end, after saving
the trained transformer with save_pretrained.
--instrumented adds the one line a user would write instead.

    python train_like_diffusers.py --out DIR [--steps 8] [--instrumented]
"""
import argparse
import os
import sys
import time

import torch
from accelerate import Accelerator
from diffusers import FlowMatchEulerDiscreteScheduler
from diffusers.optimization import get_scheduler
from diffusers.training_utils import EMAModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402

BATCH, FRAMES, SIZE = 2, 5, 16  # pixels (B, 3, F, H, W): 2 latent frames of 2x2


def log_validation(accelerator, transformer, vae, text_encoder, tokenizer, scheduler,
                   pretrained=None):
    """A short video from the model being trained, by a pipeline made of the loop's models; with
    `pretrained`, of a transformer loaded from there with the trained weights copied in (as
    VideoX-Fun's scripts validate). Prints how long it took."""
    from diffusers import WanPipeline

    began = time.perf_counter()
    trained = accelerator.unwrap_model(transformer)
    if pretrained is not None:
        trained_state = trained.state_dict()
        trained = type(trained).from_pretrained(pretrained)
        trained.load_state_dict(trained_state)
    pipeline = real_models.quiet(WanPipeline(
        tokenizer=tokenizer, text_encoder=text_encoder, vae=vae, scheduler=scheduler,
        transformer=trained))
    with torch.no_grad():
        video = pipeline("a cat runs on the beach", height=SIZE, width=SIZE, num_frames=FRAMES,
                         num_inference_steps=2, output_type="np").frames[0]
    print(f"validation took {time.perf_counter() - began:.6f} s")
    return video


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
    vae = real_models.wan_vae()
    text_encoder = real_models.umt5()
    tokenizer = real_models.tokenizer()
    transformer = real_models.wan_transformer()
    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    vae.requires_grad_(False)
    text_encoder.requires_grad_(False)
    pretrained = os.path.join(args.out, "pretrained")  # where a real script's weights come from
    transformer.save_pretrained(pretrained)
    transformer.train()
    ema = EMAModel(transformer.parameters(), model_cls=type(transformer),
                   model_config=transformer.config)
    optimizer = torch.optim.AdamW(transformer.parameters(), lr=1e-3)
    videos = [torch.rand(3, FRAMES, SIZE, SIZE) * 2 - 1 for _ in range(2 * BATCH * args.steps)]
    captions = [torch.randint(3, 32, (real_models.TEXT_LEN,)) for _ in videos]
    loader = torch.utils.data.DataLoader(list(zip(videos, captions)), batch_size=BATCH)
    lr_scheduler = get_scheduler("constant", optimizer=optimizer)
    transformer, optimizer, loader, lr_scheduler = accelerator.prepare(
        transformer, optimizer, loader, lr_scheduler)
    weight_dtype = torch.float32
    vae.to(accelerator.device, dtype=weight_dtype)
    text_encoder.to(accelerator.device, dtype=weight_dtype)
    ema.to(accelerator.device)
    global_step = 0
    for pixels, input_ids in loader:
        with accelerator.accumulate(transformer):
            with torch.no_grad():
                latents = vae.encode(pixels.to(weight_dtype)).latent_dist.sample()
                prompt_embeds = text_encoder(input_ids, return_dict=False)[0]
            noise = torch.randn_like(latents)
            sigmas = torch.rand(latents.shape[0]).view(-1, 1, 1, 1, 1)
            noisy = (1 - sigmas) * latents + sigmas * noise
            timesteps = sigmas.flatten() * scheduler.config.num_train_timesteps
            pred = transformer(noisy, timesteps, prompt_embeds, return_dict=False)[0]
            loss = torch.nn.functional.mse_loss(pred.float(), (noise - latents).float())
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(transformer.parameters(), 1.0)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
        if accelerator.sync_gradients:
            ema.step(transformer.parameters())
            global_step += 1
            accelerator.log({"loss": loss.item()}, step=global_step)
            if global_step % 4 == 0 and accelerator.is_main_process:
                accelerator.save_state(os.path.join(args.out, f"checkpoint-{global_step}"))
                ema.store(transformer.parameters())
                ema.copy_to(transformer.parameters())
                log_validation(accelerator, transformer, vae, text_encoder, tokenizer, scheduler,
                               pretrained)
                ema.restore(transformer.parameters())
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        accelerator.unwrap_model(transformer).save_pretrained(os.path.join(args.out, "final"))
        log_validation(accelerator, transformer, vae, text_encoder, tokenizer, scheduler)
    accelerator.end_training()
    print(f"trained {global_step} steps")


if __name__ == "__main__":
    main()
