"""Caching transformers as VideoX-Fun builds them, reproduced in structure (the code is ours).

VideoX-Fun's Wan transformers cache inside their own forward, and tell nobody:
* TeaCache: the conditional call decides whether the blocks run (its schedule here, a distance
  threshold there); the unconditional call that follows does what it decided; a call that skips
  adds the residual its branch cached when it last ran.
* CFG skip: the forward is decorated so that a batch of two guidance rows is run as two calls of
  one row each (conditional first), and, from a share of the steps on, as the conditional row
  alone, duplicated.

`CountedBlock` counts, in every block's own forward, the rows it ran on, and the pipeline keeps
their sum per transformer call (`block_rows`): the truth the tests price against."""

import torch
from torch import nn

import tiny_models as tm


class CountedBlock(tm.WanBlock):
    """A Wan block that counts the rows it really ran on (class-wide, per transformer call)."""

    rows = []  # rows of each run since the last reset

    def forward(self, x, context):
        CountedBlock.rows.append(int(x.shape[0]))
        return super().forward(x, context)


def cfg_split(forward):
    """The CFG skip decorator's structure: two rows run as two calls (conditional first, with
    cond_flag), the unconditional one dropped from step `cfg_skip_from` on."""

    def split(self, x, t, context, seq_len):
        if torch.is_grad_enabled() or x.shape[0] < 2:
            return forward(self, x, t, context, seq_len, cond_flag=True)
        half = x.shape[0] // 2
        skip = self.cfg_skip_from is not None and self.step >= self.cfg_skip_from
        if skip:
            out = forward(self, x[half:], t[half:], context[half:], seq_len, cond_flag=True)
            return torch.cat([out, out])
        cond = forward(self, x[half:], t[half:], context[half:], seq_len, cond_flag=True)
        uncond = forward(self, x[:half], t[:half], context[:half], seq_len, cond_flag=False)
        return torch.cat([uncond, cond])

    return split


class CachingTransformer(tm.WanTransformer3DModel):
    """A tiny Wan transformer with VideoX-Fun's TeaCache and CFG skip."""

    def __init__(self, layers=2, calc=None, cfg_skip_from=None):
        super().__init__(layers=layers)
        self.blocks = nn.ModuleList(CountedBlock(32, 2) for _ in range(layers))
        self.calc = calc  # TeaCache's decision per step (None: TeaCache off)
        self.cfg_skip_from = cfg_skip_from
        self.step = 0
        self.should_calc = True
        self.residual = {}

    @cfg_split
    def forward(self, x, t, context, seq_len, cond_flag=True):
        tokens, ctx = self.embed(x, t, context, seq_len)
        if self.calc is not None and cond_flag:
            self.should_calc = self.calc[self.step]
        if self.calc is not None and not self.should_calc:
            tokens = tokens + self.residual[cond_flag]
        else:
            before = tokens
            for block in self.blocks:
                tokens = block(tokens, ctx)
            self.residual[cond_flag] = tokens - before
        return self.unpatch(tokens, x.shape)


class CachingPipeline(tm.TinyPipeline):
    """Text to video with guidance batched as two rows per transformer call."""

    component_names = ("tokenizer", "text_encoder", "transformer", "scheduler")

    def __init__(self, **components):
        super().__init__(**components)
        self.block_rows = []  # per transformer call, the rows its blocks ran on, summed

    @torch.no_grad()
    def __call__(self, prompt, steps=4, frames=5, height=16, width=16, guidance=5.0, seed=0):
        generator = torch.Generator().manual_seed(seed)
        ids = self.tokenizer(prompt, self.transformer.text_len)
        context = torch.cat([self.text_encoder(torch.zeros_like(ids)), self.text_encoder(ids)])
        lat_frames = 1 + (frames - 1) // 4
        latents = torch.randn((1, self.transformer.channels, lat_frames, height // 4, width // 4),
                              generator=generator)
        pf, ph, pw = self.transformer.patch_size
        seq_len = (lat_frames // pf) * (height // 4 // ph) * (width // 4 // pw)
        scheduler = tm.FlowScheduler(steps)
        for i in range(steps):
            self.transformer.step = i
            t = torch.full((2,), float(1000 - i * 1000 // steps))
            CountedBlock.rows.clear()
            uncond, cond = self.transformer(x=torch.cat([latents, latents]), t=t, context=context,
                                            seq_len=seq_len).chunk(2)
            self.block_rows.append(sum(CountedBlock.rows))  # the truth of this call
            latents = scheduler.step(uncond + guidance * (cond - uncond), i, latents)
        return latents


def pipeline(calc=None, cfg_skip_from=None, layers=2):
    torch.manual_seed(0)
    return CachingPipeline(tokenizer=tm.Tokenizer(), text_encoder=tm.TextEncoder(),
                           transformer=CachingTransformer(layers, calc, cfg_skip_from),
                           scheduler=None)
