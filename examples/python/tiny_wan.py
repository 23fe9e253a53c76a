"""Tiny Wan2.1-shaped models for the examples: a T5-like text encoder, a DiT with 3D patch
embedding, self- and cross-attention blocks (q/k/v/o) and a padded token sequence, and a causal
3D VAE (4x temporal, 8x spatial); and the flow-matching loss the training examples train the DiT
with. Random weights; a request takes milliseconds on a CPU.

The tests' tiny Wan models (tests/python/tiny_models.py) are built from this module's attention,
blocks and DiT, smaller."""
import math

import torch
import torch.utils.checkpoint
from torch import nn


def attention(q, k, v, heads):
    b, n, d = q.shape
    split = lambda t: t.view(b, t.shape[1], heads, d // heads).transpose(1, 2)  # noqa: E731
    weights = torch.softmax(split(q) @ split(k).transpose(-1, -2) / math.sqrt(d // heads), -1)
    return (weights @ split(v)).transpose(1, 2).reshape(b, n, d)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x, context=None):
        source = x if context is None else context
        return self.o(attention(self.q(x), self.k(source), self.v(source), self.heads))


class Block(nn.Module):
    def __init__(self, dim, heads, ffn=4):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.self_attn = Attention(dim, heads)
        self.cross_attn = Attention(dim, heads)  # "cross" in the name: priced against the text
        self.ffn = nn.Sequential(nn.Linear(dim, ffn * dim), nn.GELU(), nn.Linear(ffn * dim, dim))

    def forward(self, x, context):
        x = x + self.self_attn(self.norm1(x))
        x = x + self.cross_attn(self.norm2(x), context)
        return x + self.ffn(x)


class WanDiT(nn.Module):
    """Called as Wan is: forward(x=latents, t=..., context=..., seq_len=padded length)."""

    def __init__(self, channels=16, dim=64, heads=4, layers=2, text_dim=32, text_len=32,
                 patch_size=(1, 2, 2), ffn=4):
        super().__init__()
        self.patch_size = patch_size
        self.text_len = text_len  # the padded text length the cost model prices cross-attention by
        self.channels = channels
        self.gradient_checkpointing = False  # recompute each block in the backward
        self.patch_embedding = nn.Conv3d(channels, dim, patch_size, patch_size)
        self.text_embedding = nn.Linear(text_dim, dim)
        self.time_embedding = nn.Linear(1, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, ffn) for _ in range(layers))
        self.head = nn.Linear(dim, channels * math.prod(patch_size))

    def forward(self, x, t, context, seq_len):
        tokens, context = self.embed(x, t, context, seq_len)
        for block in self.blocks:
            if self.gradient_checkpointing and torch.is_grad_enabled():
                tokens = torch.utils.checkpoint.checkpoint(block, tokens, context)
            else:
                tokens = block(tokens, context)
        return self.unpatch(tokens, x.shape)

    def embed(self, x, t, context, seq_len):
        """(tokens padded to seq_len with the timestep added, the projected text)."""
        tokens = self.patch_embedding(x).flatten(2).transpose(1, 2)
        tokens = nn.functional.pad(tokens, (0, 0, 0, seq_len - tokens.shape[1]))
        tokens = tokens + self.time_embedding(t.view(-1, 1).float()).unsqueeze(1)
        return tokens, self.text_embedding(context)

    def unpatch(self, tokens, shape):
        """The head's output over the unpadded tokens, as a latent of `shape`."""
        b, c, f, h, w = shape
        pf, ph, pw = self.patch_size
        out = self.head(tokens[:, :(f // pf) * (h // ph) * (w // pw)])
        out = out.view(b, f // pf, h // ph, w // pw, c, pf, ph, pw)
        return out.permute(0, 4, 1, 5, 2, 6, 3, 7).reshape(b, c, f, h, w)


class TextEncoder(nn.Module):
    def __init__(self, vocab=256, dim=32, heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layer = Attention(dim, heads)

    def forward(self, ids):
        x = self.embed(ids)
        return x + self.layer(x)


class VideoVAE(nn.Module):
    """encode: (B, 3, F, H, W) -> (B, 16, 1 + (F - 1) / 4, H / 8, W / 8); decode: the reverse."""

    def __init__(self, channels=16):
        super().__init__()
        self.down = nn.Conv3d(3, channels, (1, 8, 8), (1, 8, 8))
        self.up = nn.ConvTranspose3d(channels, 3, (1, 8, 8), (1, 8, 8))

    def encode(self, video):
        return self.down(video[:, :, ::4])

    def decode(self, latents):
        frames = self.up(latents).repeat_interleave(4, dim=2)
        return frames[:, :, : 1 + 4 * (latents.shape[2] - 1)]


def tokenize(prompt, length):
    ids = [ord(ch) % 255 + 1 for ch in prompt][:length]
    return torch.tensor([ids + [0] * (length - len(ids))])


def seq_len_of(latents, dit):
    pf, ph, pw = dit.patch_size
    tokens = latents.shape[2] // pf * (latents.shape[3] // ph) * (latents.shape[4] // pw)
    return 32 * math.ceil(tokens / 32)  # padded, as Wan pads its sequence


def flow_loss(model, latents, context, seq_len):
    """`model` (a WanDiT, or a wrapper calling one) at a random noise level: the mean squared
    error of its predicted velocity, from the noise to the clean latents."""
    sigma = torch.rand(1, device=latents.device)
    noise = torch.randn_like(latents)
    noisy = (1 - sigma) * latents + sigma * noise
    pred = model(x=noisy, t=sigma * 1000, context=context, seq_len=seq_len)
    return nn.functional.mse_loss(pred, noise - latents)
