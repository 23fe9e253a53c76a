"""Tiny but real PyTorch pipelines in the three input conventions the cost model reads.

* Wan: the transformer is handed `x` (B, C, F, H, W) and an explicit padded `seq_len`; separate
  q/k/v/o projections, `self_attn` and `cross_attn` blocks, `text_len`; a second expert
  (`transformer_2`) takes the low-noise steps; classifier-free guidance as two calls per step.
* diffusers: `hidden_states` (B, C, F, H, W) with `config.patch_size`; `attn1`/`attn2` blocks with
  `to_q`/`to_k`/`to_v`; guidance batched (batch 2 per call).
* packed tokens: a (B, T, D) sequence as the first positional argument; fused `qkv` projections;
  a `token_refiner` attention stack over the text.

Every model computes (attention, FFN, convolutions); the pipelines run a real sampler loop over
them. Sizes are tiny so a request takes milliseconds on a CPU.
"""

import math
import os
import sys
import threading

import torch
from torch import nn

# The Wan models are the examples' (examples/python/tiny_wan.py), smaller: one definition of them.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                             "examples", "python"))
import tiny_wan  # noqa: E402


class Config(dict):
    """A diffusers-style config: keys readable as attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as error:
            raise AttributeError(name) from error


attention = tiny_wan.attention


def clip_and_step(perf, optimizer, params, last):
    """The end of a micro-step, in `perf`'s (vxperf's) scopes: on the last micro-step of an
    optimizer step the gradients of `params` are clipped (the clip phase) and the optimizer steps;
    every micro-step is an optimizer_step() scope, synced on the last (the step's boundary)."""
    if last:
        with perf.clip():
            torch.nn.utils.clip_grad_norm_(params, 1.0)
    with perf.optimizer_step(optimizer, synced=last):
        if last:
            optimizer.step()
            optimizer.zero_grad()


# ---- Wan -----------------------------------------------------------------------------------------


WanSelfAttention = tiny_wan.Attention  # separate q/k/v/o projections


class WanBlock(tiny_wan.Block):
    def __init__(self, dim, heads):
        super().__init__(dim, heads, ffn=2)


class WanTransformer3DModel(tiny_wan.WanDiT):
    def __init__(self, channels=4, dim=32, heads=2, layers=2, text_dim=16, text_len=12,
                 patch_size=(1, 2, 2)):
        super().__init__(channels, dim, heads, layers, text_dim, text_len, patch_size, ffn=2)
        self.fail_on_call = None  # raise at this call number (the failing-request scenario)
        self.calls = 0

    def forward(self, x, t, context, seq_len):
        self.calls += 1
        if self.fail_on_call is not None and self.calls == self.fail_on_call:
            raise RuntimeError(f"transformer failed at call {self.calls}")
        return super().forward(x, t, context, seq_len)


class TextEncoder(nn.Module):
    """A T5-like encoder: embeddings and a transformers-style attention layer (q_proj, ...)."""

    def __init__(self, vocab=64, dim=16, heads=2, barrier=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(dim, dim) for _ in range(3))
        self.out = nn.Linear(dim, dim)
        self.heads = heads
        self.barrier = barrier  # the two-thread scenario: both requests meet in here

    def forward(self, ids):
        if self.barrier is not None:
            self.barrier.wait(timeout=30)
        x = self.embed(ids)
        return self.out(attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), self.heads))


class VideoVAE(nn.Module):
    """4x spatial, causal 4x temporal autoencoder (F -> 1 + (F - 1) / 4)."""

    def __init__(self, channels=4):
        super().__init__()
        self.encoder = nn.Conv3d(3, channels, kernel_size=(1, 4, 4), stride=(1, 4, 4))
        self.decoder = nn.ConvTranspose3d(channels, 3, kernel_size=(1, 4, 4), stride=(1, 4, 4))

    def encode(self, video):
        keep = video[:, :, ::4]
        return self.encoder(keep)

    def decode(self, latents):
        frames = self.decoder(latents)
        return frames.repeat_interleave(4, dim=2)[:, :, : 1 + 4 * (latents.shape[2] - 1)]

    def decode_stream(self, latents, chunk=1):
        """Decodes a few latent frames at a time (a streaming decoder's interface)."""
        frames = latents.shape[2]
        return [self.decoder(latents[:, :, i: i + chunk]) for i in range(0, frames, chunk)]


class FlowScheduler:
    """Flow-matching Euler steps (not a module: pipelines hold it as a plain component)."""

    def __init__(self, steps):
        self.sigmas = torch.linspace(1.0, 0.0, steps + 1)

    def step(self, velocity, index, latents):
        return latents + (self.sigmas[index + 1] - self.sigmas[index]) * velocity


class Tokenizer:
    def __call__(self, prompt, length):
        ids = [(ord(ch) % 63) + 1 for ch in prompt][:length]
        return torch.tensor([ids + [0] * (length - len(ids))])


class TinyPipeline:
    """What the pipelines share: `components` as diffusers exposes them."""

    component_names = ()

    def __init__(self, **components):
        for name, value in components.items():
            setattr(self, name, value)

    @property
    def components(self):
        return {name: getattr(self, name) for name in self.component_names}


class WanPipeline(TinyPipeline):
    component_names = ("tokenizer", "text_encoder", "transformer", "transformer_2", "vae",
                       "scheduler")

    @torch.no_grad()
    def __call__(self, prompt, frames=5, height=16, width=16, steps=4, guidance=5.0, image=None,
                 boundary=0.5, seed=0):
        generator = torch.Generator().manual_seed(seed)
        ids = self.tokenizer(prompt, self.transformer.text_len)
        context = self.text_encoder(ids)
        null_context = self.text_encoder(torch.zeros_like(ids))
        lat_frames = 1 + (frames - 1) // 4
        shape = (1, self.transformer.channels, lat_frames, height // 4, width // 4)
        latents = torch.randn(shape, generator=generator)
        if image is not None:
            latents = latents + 0.1 * self.vae.encode(image)
        pf, ph, pw = self.transformer.patch_size
        tokens = (lat_frames // pf) * (height // 4 // ph) * (width // 4 // pw)
        seq_len = 8 * math.ceil(tokens / 8)  # padded, as Wan pads its sequence
        scheduler = FlowScheduler(steps)
        for i in range(steps):
            model = self.transformer if i < steps * boundary else self.transformer_2
            t = torch.tensor([1000.0 * float(scheduler.sigmas[i])])
            cond = model(x=latents, t=t, context=context, seq_len=seq_len)
            uncond = model(x=latents, t=t, context=null_context, seq_len=seq_len)
            latents = scheduler.step(uncond + guidance * (cond - uncond), i, latents)
        return self.vae.decode(latents)


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update (peft's lora_A / lora_B names)."""

    def __init__(self, base, rank=2):
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(base.in_features, rank, bias=False)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        for param in base.parameters():
            param.requires_grad_(False)

    @property
    def out_features(self):
        return self.base.out_features

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x))


def add_lora(model, rank=2):
    """Freezes `model` and puts trainable adapters on every attention's q and v projections."""
    for param in model.parameters():
        param.requires_grad_(False)
    for module in list(model.modules()):
        if isinstance(module, WanSelfAttention):
            module.q = LoRALinear(module.q, rank)
            module.v = LoRALinear(module.v, rank)
    return model


# ---- diffusers -----------------------------------------------------------------------------------


class DiffusersAttention(nn.Module):
    def __init__(self, dim, heads, cross_dim=None):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(cross_dim or dim, dim)
        self.to_v = nn.Linear(cross_dim or dim, dim)
        self.to_out = nn.ModuleList([nn.Linear(dim, dim), nn.Dropout(0.0)])

    def forward(self, x, encoder_hidden_states=None):
        source = x if encoder_hidden_states is None else encoder_hidden_states
        out = attention(self.to_q(x), self.to_k(source), self.to_v(source), self.heads)
        return self.to_out[1](self.to_out[0](out))


class DiffusersBlock(nn.Module):
    def __init__(self, dim, heads, cross_dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn1 = DiffusersAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.attn2 = DiffusersAttention(dim, heads, cross_dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, context):
        x = x + self.attn1(self.norm1(x))
        x = x + self.attn2(self.norm2(x), context)
        return x + self.ff(x)


class VideoTransformer3DModel(nn.Module):
    def __init__(self, channels=4, dim=24, heads=2, layers=2, text_dim=16, patch_size=2):
        super().__init__()
        self.config = Config(patch_size=patch_size, in_channels=channels)
        self.proj_in = nn.Conv3d(channels, dim, kernel_size=(1, patch_size, patch_size),
                                 stride=(1, patch_size, patch_size))
        self.blocks = nn.ModuleList(DiffusersBlock(dim, heads, text_dim) for _ in range(layers))
        self.proj_out = nn.Linear(dim, channels * patch_size * patch_size)

    def forward(self, hidden_states, encoder_hidden_states, timestep, return_dict=False):
        b, c, f, h, w = hidden_states.shape
        p = self.config.patch_size
        x = self.proj_in(hidden_states).flatten(2).transpose(1, 2)
        x = x + timestep.view(-1, 1, 1).float() / 1000.0
        for block in self.blocks:
            x = block(x, encoder_hidden_states)
        out = self.proj_out(x).view(b, f, h // p, w // p, c, p, p)
        out = out.permute(0, 4, 1, 2, 5, 3, 6).reshape(b, c, f, h, w)
        return (out,)


class DiffusersVideoPipeline(TinyPipeline):
    component_names = ("tokenizer", "text_encoder", "transformer", "vae", "scheduler")

    def __init__(self, upsampler=None, **components):
        super().__init__(**components)
        self.upsampler = upsampler  # a nested pipeline (not a module component)

    @torch.no_grad()
    def __call__(self, prompt, frames=5, height=16, width=16, steps=3, guidance=4.0, seed=0,
                 stream_decode=False):
        generator = torch.Generator().manual_seed(seed)
        ids = self.tokenizer(prompt, 10)
        context = torch.cat([self.text_encoder(torch.zeros_like(ids)), self.text_encoder(ids)])
        lat_frames = 1 + (frames - 1) // 4
        latents = torch.randn((1, 4, lat_frames, height // 4, width // 4), generator=generator)
        scheduler = FlowScheduler(steps)
        for i in range(steps):
            t = torch.full((2,), 1000.0 * float(scheduler.sigmas[i]))
            both = self.transformer(hidden_states=torch.cat([latents, latents]),
                                    encoder_hidden_states=context, timestep=t)[0]
            uncond, cond = both.chunk(2)
            latents = scheduler.step(uncond + guidance * (cond - uncond), i, latents)
        if self.upsampler is not None:
            latents = self.upsampler(latents)
        if stream_decode:
            return torch.cat(self.vae.decode_stream(latents), dim=2)
        return self.vae.decode(latents)


class LatentUpsamplerModel(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv = nn.Conv3d(channels, channels, kernel_size=3, padding=1)

    def forward(self, latents):
        return self.conv(torch.nn.functional.interpolate(latents, scale_factor=(1, 2, 2)))


class UpsamplePipeline(TinyPipeline):
    """Called from inside another pipeline (a nested request), sharing its VAE."""

    component_names = ("latent_upsampler", "vae")

    @torch.no_grad()
    def __call__(self, latents, roundtrip=False):
        if roundtrip:  # called on its own: decode, re-encode
            latents = self.vae.encode(self.vae.decode(latents))
        return self.latent_upsampler(latents)


# ---- packed tokens -------------------------------------------------------------------------------


class FusedAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.proj(attention(q, k, v, self.heads))


class PackedBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = FusedAttention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


class TokenRefiner(nn.Module):
    """Attention over the text alone (its q/k/v run over the prompt, never the latents)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.block = WanSelfAttention(dim, heads)

    def forward(self, text):
        return text + self.block(text)


class PackedTransformerModel(nn.Module):
    def __init__(self, dim=32, heads=2, layers=2, text_dim=16):
        super().__init__()
        self.token_refiner = TokenRefiner(text_dim, 2)
        self.text_proj = nn.Linear(text_dim, dim)
        self.blocks = nn.ModuleList(PackedBlock(dim, heads) for _ in range(layers))
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden, text, timestep):
        text = self.text_proj(self.token_refiner(text))
        n = hidden.shape[1]
        x = torch.cat([hidden + timestep.view(-1, 1, 1), text], dim=1)
        for block in self.blocks:
            x = block(x)
        return self.out(x[:, :n])


class PackedPipeline(TinyPipeline):
    component_names = ("tokenizer", "text_encoder", "transformer", "vae", "scheduler")

    @torch.no_grad()
    def __call__(self, prompt, frames=5, height=16, width=16, steps=3, seed=0):
        generator = torch.Generator().manual_seed(seed)
        text = self.text_encoder(self.tokenizer(prompt, 8))
        lat_frames = 1 + (frames - 1) // 4
        latents = torch.randn((1, 4, lat_frames, height // 4, width // 4), generator=generator)
        b, c, f, h, w = latents.shape
        scheduler = FlowScheduler(steps)
        for i in range(steps):
            # 2x2 patches packed as tokens of width 4 * 4 = 16, projected up to 32
            packed = latents.view(b, c, f, h // 2, 2, w // 2, 2).permute(0, 2, 3, 5, 1, 4, 6)
            packed = packed.reshape(b, f * (h // 2) * (w // 2), c * 4)
            packed = torch.cat([packed, packed], dim=-1)
            out = self.transformer(packed, text, torch.tensor([float(i)]))[..., : c * 4]
            out = out.view(b, f, h // 2, w // 2, c, 2, 2).permute(0, 4, 1, 2, 5, 3, 6)
            latents = scheduler.step(out.reshape(b, c, f, h, w), i, latents)
        return self.vae.decode(latents)


# ---- builders ------------------------------------------------------------------------------------


def wan_pipeline(barrier=None):
    torch.manual_seed(0)
    return WanPipeline(tokenizer=Tokenizer(), text_encoder=TextEncoder(barrier=barrier),
                       transformer=WanTransformer3DModel(),
                       transformer_2=WanTransformer3DModel(), vae=VideoVAE(),
                       scheduler=FlowScheduler(1))


def diffusers_pipeline(upsampler=None):
    torch.manual_seed(1)
    return DiffusersVideoPipeline(tokenizer=Tokenizer(), text_encoder=TextEncoder(),
                                  transformer=VideoTransformer3DModel(), vae=VideoVAE(),
                                  scheduler=FlowScheduler(1), upsampler=upsampler)


def packed_pipeline():
    torch.manual_seed(2)
    return PackedPipeline(tokenizer=Tokenizer(), text_encoder=TextEncoder(),
                          transformer=PackedTransformerModel(), vae=VideoVAE(),
                          scheduler=FlowScheduler(1))


def make_barrier(parties):
    return threading.Barrier(parties)


def train_dit(steps, after_step=None):
    """`steps` measured training steps of a tiny WanTransformer3DModel (registered), one micro-step
    each: fwd (8 tokens, 1 sample), backward, SGD step; `after_step(step)` after each, when given.
    Needs vxperf imported with metrics on."""
    import vxperf

    dit = WanTransformer3DModel()
    vxperf.register_model(dit)
    optimizer = torch.optim.SGD(dit.parameters(), lr=1e-3)
    for step in range(steps):
        with vxperf.micro_step():
            with vxperf.model_call("fwd", 8, 1):
                loss = dit(x=torch.randn(1, 4, 2, 4, 4), t=torch.ones(1),
                           context=torch.randn(1, 12, 16), seq_len=8).pow(2).mean()
            with vxperf.backward():
                loss.backward()
            with vxperf.optimizer_step(optimizer):
                optimizer.step()
        if after_step is not None:
            after_step(step)
