"""Tiny Wan2.1-shaped models for the examples: a T5-like text encoder, a DiT with 3D patch
embedding, self- and cross-attention blocks (q/k/v/o) and a padded token sequence, and a causal
3D VAE (4x temporal, 8x spatial); and the flow-matching loss the training examples train the DiT
with. Random weights; a request takes milliseconds on a CPU."""
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
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.self_attn = Attention(dim, heads)
        self.cross_attn = Attention(dim, heads)  # "cross" in the name: priced against the text
        self.ffn = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, context):
        x = x + self.self_attn(self.norm1(x))
        x = x + self.cross_attn(self.norm2(x), context)
        return x + self.ffn(x)


class WanDiT(nn.Module):
    """Called as Wan is: forward(x=latents, t=..., context=..., seq_len=padded length)."""

    def __init__(self, channels=16, dim=64, heads=4, layers=2, text_dim=32, text_len=32):
        super().__init__()
        self.patch_size = (1, 2, 2)
        self.text_len = text_len  # the padded text length the cost model prices cross-attention by
        self.gradient_checkpointing = False
        self.patch_embedding = nn.Conv3d(channels, dim, self.patch_size, self.patch_size)
        self.text_embedding = nn.Linear(text_dim, dim)
        self.time_embedding = nn.Linear(1, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, channels * 4)

    def forward(self, x, t, context, seq_len):
        b, c, f, h, w = x.shape
        tokens = self.patch_embedding(x).flatten(2).transpose(1, 2)
        n = tokens.shape[1]
        tokens = nn.functional.pad(tokens, (0, 0, 0, seq_len - n))
        tokens = tokens + self.time_embedding(t.view(-1, 1).float()).unsqueeze(1)
        context = self.text_embedding(context)
        for block in self.blocks:
            if self.gradient_checkpointing and torch.is_grad_enabled():
                tokens = torch.utils.checkpoint.checkpoint(block, tokens, context)
            else:
                tokens = block(tokens, context)
        out = self.head(tokens[:, :n]).view(b, f, h // 2, w // 2, c, 2, 2)
        return out.permute(0, 4, 1, 2, 5, 3, 6).reshape(b, c, f, h, w)


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
