#!/usr/bin/env python3
"""Text-to-video generation with a tiny Wan-shaped pipeline, measured by vxperf.

    VIDEOX_PERF=1 PYTHONPATH=build/python build-venv/bin/python examples/python/generate.py

With VIDEOX_PERF set, each pipeline call is a request: text encoder, every transformer step (two
per step under classifier-free guidance) and the VAE decode are timed stages, the transformer is
priced in FLOPs from its inputs, and a `[Perf]` line per request plus an exit summary go to stderr
(VIDEOX_PERF_JSON=path also writes the records). Without it, nothing is measured or printed.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_wan  # noqa: E402
import vxperf  # noqa: E402


class TextToVideoPipeline:
    """diffusers' shape of a pipeline: parts in `components`, one generation per call."""

    def __init__(self):
        torch.manual_seed(0)
        self.text_encoder = tiny_wan.TextEncoder()
        self.transformer = tiny_wan.WanDiT()
        self.vae = tiny_wan.VideoVAE()

    @property
    def components(self):
        return {"text_encoder": self.text_encoder, "transformer": self.transformer,
                "vae": self.vae}

    @torch.no_grad()
    def __call__(self, prompt, frames=9, height=64, width=64, steps=4, guidance=5.0, seed=0):
        context = self.text_encoder(tiny_wan.tokenize(prompt, self.transformer.text_len))
        null = self.text_encoder(tiny_wan.tokenize("", self.transformer.text_len))
        shape = (1, 16, 1 + (frames - 1) // 4, height // 8, width // 8)
        latents = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        seq_len = tiny_wan.seq_len_of(latents, self.transformer)
        sigmas = torch.linspace(1.0, 0.0, steps + 1)
        # The loop's length where diffusers' pipelines keep it: vxperf reads it as the call returns
        # and says the time per denoising step (two transformer calls each here) beside a call's.
        self._num_timesteps = steps
        for i in range(steps):
            t = sigmas[i:i + 1] * 1000
            cond = self.transformer(x=latents, t=t, context=context, seq_len=seq_len)
            uncond = self.transformer(x=latents, t=t, context=null, seq_len=seq_len)
            latents = latents + (sigmas[i + 1] - sigmas[i]) * (uncond + guidance * (cond - uncond))
        return self.vae.decode(latents)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--frames", type=int, default=9)
    args = parser.parse_args()

    # The one line a program adds: every TextToVideoPipeline call is measured when VIDEOX_PERF
    # is set (and nothing happens otherwise).
    vxperf.install(pipelines=TextToVideoPipeline)
    pipe = TextToVideoPipeline()
    for i in range(args.requests):
        video = pipe(f"a paper boat on a river, take {i}", frames=args.frames, steps=args.steps)
    print(f"generated {args.requests} videos of shape {tuple(video.shape)}; "
          f"checksum {float(video.abs().sum()):.6f}")


if __name__ == "__main__":
    main()
