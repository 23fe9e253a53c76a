#!/usr/bin/env python3
"""GPU check helper: a Wan2.1-1.3B-shaped DiT forward timed directly, and the comparison with
vxperf's records.

  gpu_check.py direct --batch B --out direct.json   # needs a CUDA GPU and PyTorch 2.x
  gpu_check.py compare --records DIR --direct direct.json
  gpu_check.py python-run --impl vxperf|reference [--reference seed_perf.py] --out R.jsonl
  gpu_check.py python-compare --vxperf A.jsonl --reference-records B.jsonl

`direct` builds the Wan2.1 T2V-1.3B transformer with random weights in bf16 (30 blocks, width
1536, 12 heads, FFN 8960, text 512x4096, patch 1x2x2: 1,418,996,800 parameters), feeds it an
832x480x81 latent (16x21x60x104 -> 32,760 tokens), times the forward with CUDA events and counts
its FLOPs with torch.utils.flop_counter.FlopCounterMode. `compare` reads vxperf's JSON request
records (every *.jsonl under DIR) and prints both side by side.

`python-run` instruments a pipeline over the same DiT (Wan's calling convention, a text encoder
and a VAE decoder, classifier-free guidance) with the Python package (`import vxperf`) or with the
reference module, on CUDA; `python-compare` checks that both recorded the same requests (stages,
counts, tokens, FLOPs) and stage times within 2%.
"""
import argparse
import glob
import json
import math
import os
import statistics
import sys

# Wan2.1 T2V-1.3B.
DIM, FFN, HEADS, LAYERS = 1536, 8960, 12, 30
IN_CH, OUT_CH, PATCH = 16, 16, (1, 2, 2)
TEXT_LEN, TEXT_DIM, FREQ_DIM = 512, 4096, 256
EXPECTED_PARAMS = 1418996800
# 832x480, 81 frames: VAE stride 4x8x8 -> latent 21x60x104; patch 1x2x2 -> 21x30x52 tokens.
LATENT = (21, 60, 104)
TOKENS = 21 * 30 * 52  # 32,760


def build_model(torch):
    nn = torch.nn
    F = torch.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            y = x.float()
            y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
            return y.type_as(x) * self.weight

    def rope_apply(x, cos, sin):
        # x: [B, S, H, D]; rotates consecutive pairs (Wan's complex multiply, in float32 here).
        b, s, h, d = x.shape
        xf = x.float().view(b, s, h, d // 2, 2)
        x0, x1 = xf[..., 0], xf[..., 1]
        out = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
        return out.view(b, s, h, d).type_as(x)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(DIM, DIM)
            self.k = nn.Linear(DIM, DIM)
            self.v = nn.Linear(DIM, DIM)
            self.o = nn.Linear(DIM, DIM)
            self.norm_q = RMSNorm(DIM)
            self.norm_k = RMSNorm(DIM)

        def forward(self, x, context=None, rope=None):
            b, s, _ = x.shape
            src = x if context is None else context
            hd = DIM // HEADS
            q = self.norm_q(self.q(x)).view(b, s, HEADS, hd)
            k = self.norm_k(self.k(src)).view(b, -1, HEADS, hd)
            v = self.v(src).view(b, -1, HEADS, hd)
            if rope is not None:
                q = rope_apply(q, *rope)
                k = rope_apply(k, *rope)
            out = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
            return self.o(out.transpose(1, 2).reshape(b, s, DIM))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(DIM, eps=1e-6, elementwise_affine=False)
            self.self_attn = Attention()
            self.norm3 = nn.LayerNorm(DIM, eps=1e-6, elementwise_affine=True)
            self.cross_attn = Attention()
            self.norm2 = nn.LayerNorm(DIM, eps=1e-6, elementwise_affine=False)
            self.ffn = nn.Sequential(nn.Linear(DIM, FFN), nn.GELU(approximate="tanh"),
                                     nn.Linear(FFN, DIM))
            self.modulation = nn.Parameter(torch.randn(1, 6, DIM) / DIM**0.5)

        def forward(self, x, e, context, rope):
            e = (self.modulation + e).chunk(6, dim=1)
            y = self.self_attn(self.norm1(x) * (1 + e[1]) + e[0], rope=rope)
            x = x + y * e[2]
            x = x + self.cross_attn(self.norm3(x), context=context)
            y = self.ffn(self.norm2(x) * (1 + e[4]) + e[3])
            return x + y * e[5]

    class WanDiT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embedding = nn.Conv3d(IN_CH, DIM, kernel_size=PATCH, stride=PATCH)
            self.text_embedding = nn.Sequential(nn.Linear(TEXT_DIM, DIM),
                                                nn.GELU(approximate="tanh"), nn.Linear(DIM, DIM))
            self.time_embedding = nn.Sequential(nn.Linear(FREQ_DIM, DIM), nn.SiLU(),
                                                nn.Linear(DIM, DIM))
            self.time_projection = nn.Sequential(nn.SiLU(), nn.Linear(DIM, 6 * DIM))
            self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
            self.head_norm = nn.LayerNorm(DIM, eps=1e-6, elementwise_affine=False)
            self.head = nn.Linear(DIM, OUT_CH * math.prod(PATCH))
            self.head_modulation = nn.Parameter(torch.randn(1, 2, DIM) / DIM**0.5)

        def rope(self, f, h, w, device):
            # 3-D RoPE: the head dimension split into frame/height/width bands, as in Wan.
            hd = DIM // HEADS
            bands = [hd - 4 * (hd // 6), 2 * (hd // 6), 2 * (hd // 6)]
            angles = []
            for size, n in zip(bands, (f, h, w)):
                inv = 1.0 / (10000 ** (torch.arange(0, size, 2, device=device).float() / size))
                angles.append(torch.outer(torch.arange(n, device=device).float(), inv))
            a = torch.cat([
                angles[0][:, None, None, :].expand(f, h, w, -1),
                angles[1][None, :, None, :].expand(f, h, w, -1),
                angles[2][None, None, :, :].expand(f, h, w, -1),
            ], dim=-1).reshape(f * h * w, 1, hd // 2)
            return a.cos(), a.sin()

        def forward(self, x, t, context):
            b = x.shape[0]
            x = self.patch_embedding(x)
            f, h, w = x.shape[2:]
            x = x.flatten(2).transpose(1, 2)
            rope = self.rope(f, h, w, x.device)
            half = FREQ_DIM // 2
            freqs = torch.exp(-math.log(10000) * torch.arange(half, device=x.device) / half)
            sinus = torch.cat([torch.cos(t[:, None].float() * freqs),
                               torch.sin(t[:, None].float() * freqs)], dim=1).to(x.dtype)
            e = self.time_embedding(sinus)
            e0 = self.time_projection(e).unflatten(1, (6, DIM))
            context = self.text_embedding(context)
            for block in self.blocks:
                x = block(x, e0, context, rope)
            mod = (self.head_modulation + e[:, None]).chunk(2, dim=1)
            x = self.head(self.head_norm(x) * (1 + mod[1]) + mod[0])
            # Unpatchify to the latent's shape.
            x = x.view(b, f, h, w, PATCH[0], PATCH[1], PATCH[2], OUT_CH)
            x = x.permute(0, 7, 1, 4, 2, 5, 3, 6)
            return x.reshape(b, OUT_CH, f * PATCH[0], h * PATCH[1], w * PATCH[2])

    return WanDiT()


def vxperf_formula_flops(params, tokens, batch):
    # vxperf's cost model (src/cost_model.cpp): 2*params*tokens + 4*S^2*sum(self widths)
    # + 4*S*text*sum(cross widths), per sample.
    widths = LAYERS * DIM
    return batch * (2.0 * params * tokens + 4.0 * tokens * tokens * widths
                    + 4.0 * tokens * TEXT_LEN * widths)


def direct(args):
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if not torch.cuda.is_available():
        sys.exit("gpu_check.py direct: no CUDA device visible to PyTorch")
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    with torch.device(device):  # initialize on the GPU: seconds, not minutes
        model = build_model(torch)
    model = model.to(dtype=torch.bfloat16).eval()
    params = sum(p.numel() for p in model.parameters())
    b = args.batch
    x = torch.randn(b, IN_CH, *LATENT, device=device, dtype=torch.bfloat16)
    t = torch.full((b,), 999.0, device=device)
    context = torch.randn(b, TEXT_LEN, TEXT_DIM, device=device, dtype=torch.bfloat16)

    with torch.inference_mode():
        for _ in range(args.warmup):
            model(x, t, context)
        torch.cuda.synchronize(device)
        times = []
        for _ in range(args.iters):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            model(x, t, context)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        counter = FlopCounterMode(display=False)
        with counter:
            model(x, t, context)
        torch.cuda.synchronize(device)
    result = {
        "device_name": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "params": params,
        "tokens": TOKENS,
        "batch": b,
        "forward_ms": times,
        "forward_ms_median": statistics.median(times),
        "flop_counter_flops": counter.get_total_flops(),
        "formula_flops": vxperf_formula_flops(params, TOKENS, b),
        "max_memory_allocated": torch.cuda.max_memory_allocated(device),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "forward_ms"}))
    if params != EXPECTED_PARAMS:
        print(f"warning: {params} parameters, expected {EXPECTED_PARAMS}", file=sys.stderr)


def load_requests(directory):
    records = []
    for path in sorted(glob.glob(os.path.join(directory, "**", "*.jsonl"), recursive=True)):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if r.get("kind") == "request":
                    records.append(r)
    return records


def batch_of(args):
    """The batch per transformer call vxperf recorded (1 when unknown): what `direct` must run."""
    records = load_requests(args.records)
    batches = [r["dit"]["batch"] for r in records if isinstance(r.get("dit"), dict)]
    print(max(batches) if batches else 1)


def compare(args):
    records = load_requests(args.records)
    if not records:
        sys.exit(f"gpu_check.py compare: no request records under {args.records}")
    with open(args.direct) as f:
        d = json.load(f)
    measured = [r for r in records if not r.get("warmup")] or records[-1:]
    # The last measured request: the first one pays for allocator growth and kernel selection.
    r = measured[-1]
    stage = r["stages"].get("transformer")
    if stage is None:
        sys.exit("gpu_check.py compare: the records have no 'transformer' stage")
    dit = r.get("dit") or {}
    v_ms = stage["mean_ms"]
    d_ms = d["forward_ms_median"]
    v_flops = dit.get("flops_per_fwd")
    d_flops = d["flop_counter_flops"]

    print(f"device: {d['device_name']}  torch {d['torch']}  vxperf record req#{r['req']} "
          f"on {r.get('device')}, {stage['count']} transformer calls, batch {dit.get('batch')}")
    print(f"{'':28}{'vxperf':>14}{'direct':>14}{'ratio':>8}")
    print(f"{'transformer step (ms)':28}{v_ms:14.1f}{d_ms:14.1f}{v_ms / d_ms:8.3f}")
    if v_flops:
        print(f"{'FLOPs / forward':28}{v_flops:14.4e}{d_flops:14.4e}{v_flops / d_flops:8.3f}")
    else:
        print("FLOPs / forward: vxperf record has no 'dit' block (model not declared?)")
    print(f"{'  (vxperf formula, direct)':28}{d['formula_flops']:14.4e}")
    if dit.get("mfu") is not None:
        print(f"vxperf MFU {dit['mfu'] * 100:.1f}% @ {dit.get('peak_tflops')} TFLOPS peak; "
              f"direct {d_flops / (d_ms / 1000) / 1e12:.0f} TFLOPS (FlopCounter FLOPs)")
    print(f"peak memory: vxperf {r.get('peak_alloc_bytes', 0) / 2**30:.1f} GiB allocated, "
          f"{r.get('peak_reserved_bytes', 0) / 2**30:.1f} GiB reserved; direct "
          f"{d['max_memory_allocated'] / 2**30:.1f} GiB allocated")
    # The formula prices every parameter over every latent token; FlopCounterMode sees the text
    # and time embeddings and the cross-attention K/V projections run over 512 text tokens or
    # one row, so the formula is expected ~4% above it at these dimensions.
    ok = abs(v_ms / d_ms - 1) <= args.time_tolerance
    if v_flops:
        ok = ok and abs(v_flops / d_flops - 1) <= args.flops_tolerance
    print("RESULT:", "agree" if ok else "DISAGREE",
          f"(time within {args.time_tolerance:.0%}, FLOPs within {args.flops_tolerance:.0%})")
    return 0 if ok else 1


# ---- the Python package: the reference module and vxperf side by side ----------------------------

# The latent of the Python check: 832x480, 21 frames (latent 6x60x104 -> 9,360 tokens), so that a
# transformer forward takes long enough for a 2% comparison and a run stays well inside a minute.
PY_LATENT = (6, 60, 104)
PY_TOKENS = 6 * 30 * 52


def load_implementation(impl, reference):
    if impl == "vxperf":
        import vxperf

        return vxperf
    import importlib.util

    spec = importlib.util.spec_from_file_location("seed_perf", reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measuring_implementation(args):
    """--impl loaded to measure into a fresh --out (the first request a warmup), with no other
    VIDEOX_PERF* setting of this process's environment."""
    if os.path.exists(args.out):
        os.remove(args.out)
    for key in list(os.environ):
        if key.startswith("VIDEOX_PERF"):
            del os.environ[key]
    os.environ.update(VIDEOX_PERF_JSON=args.out, VIDEOX_PERF_WARMUP="1")
    return load_implementation(args.impl, args.reference)


def python_run(args):
    """One implementation instruments a Wan2.1-1.3B-shaped text-to-video pipeline on the GPU and
    runs a warmup request and --requests more; the records go to --out."""
    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_check.py python-run: no CUDA device visible to PyTorch")
    perf = measuring_implementation(args)
    nn = torch.nn
    device = torch.device("cuda", args.device)
    torch.manual_seed(0)
    with torch.device(device):
        dit = build_model(torch)
        text_encoder = nn.Sequential(nn.Embedding(32000, TEXT_DIM), nn.Linear(TEXT_DIM, TEXT_DIM),
                                     nn.GELU(), nn.Linear(TEXT_DIM, TEXT_DIM))
        vae = build_vae_decoder(torch)

    class Transformer(nn.Module):
        """Wan's calling convention (x, t, context, seq_len) over the DiT; `text_len` as Wan has."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.text_len = TEXT_LEN

        def forward(self, x, t, context, seq_len):
            return self.inner(x, t, context)

    class Pipeline:
        def __init__(self):
            self.text_encoder = text_encoder.to(torch.bfloat16).eval()
            self.transformer = Transformer(dit).to(torch.bfloat16).eval()
            self.vae = vae.to(torch.bfloat16).eval()

        @property
        def components(self):
            return {"text_encoder": self.text_encoder, "transformer": self.transformer,
                    "vae": self.vae}

        @torch.inference_mode()
        def __call__(self, steps, guidance=5.0):
            ids = torch.randint(0, 32000, (1, TEXT_LEN), device=device)
            context = self.text_encoder(ids)
            null = self.text_encoder(torch.zeros_like(ids))
            latents = torch.randn(1, IN_CH, *PY_LATENT, device=device, dtype=torch.bfloat16)
            for i in range(steps):
                t = torch.full((1,), 999.0 - i, device=device)
                cond = self.transformer(x=latents, t=t, context=context, seq_len=PY_TOKENS)
                uncond = self.transformer(x=latents, t=t, context=null, seq_len=PY_TOKENS)
                latents = latents + 0.1 * (uncond + guidance * (cond - uncond))
            return self.vae.decode(latents).float().cpu()

    pipe = perf.instrument_pipeline(Pipeline())
    for _ in range(1 + args.requests):
        pipe(args.steps)
    print(f"gpu_check: {args.impl}: {1 + args.requests} requests on {device}")


def real_run(args):
    """One implementation instruments the real diffusers WanPipeline (a Wan2.1-1.3B-wide
    transformer of --layers blocks, random weights kept in fp32) with model CPU offload enabled
    after instrumenting, and runs a warmup request and --requests more under bf16 autocast; the
    records go to --out. --device cpu rehearses it without a GPU (tiny sizes)."""
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "python"))
    import real_models as rm
    from diffusers import (AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanPipeline,
                           WanTransformer3DModel)

    on_gpu = args.device != "cpu"
    if on_gpu and not torch.cuda.is_available():
        sys.exit("gpu_check.py real-run: no CUDA device visible to PyTorch")
    perf = measuring_implementation(args)
    torch.manual_seed(0)
    heads, head_dim, ffn, text_dim = (12, 128, 8960, 512) if on_gpu else (2, 8, 32, 16)
    transformer = WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=heads, attention_head_dim=head_dim,
        in_channels=16, out_channels=16, text_dim=text_dim, freq_dim=256 if on_gpu else 32,
        ffn_dim=ffn, num_layers=args.layers, cross_attn_norm=True,
        qk_norm="rms_norm_across_heads", rope_max_seq_len=1024 if on_gpu else 32)
    vae = AutoencoderKLWan() if on_gpu else rm.wan_vae()
    pipe = WanPipeline(tokenizer=rm.tokenizer(64), text_encoder=rm.umt5(text_dim), vae=vae,
                       scheduler=FlowMatchEulerDiscreteScheduler(shift=5.0),
                       transformer=transformer)
    pipe.set_progress_bar_config(disable=True)
    perf.instrument_pipeline(pipe)
    pipe.enable_model_cpu_offload(device="cuda" if on_gpu else "cpu")
    height, width, frames = (272, 480, 21) if on_gpu else (16, 16, 5)
    for _ in range(1 + args.requests):
        with torch.autocast("cuda" if on_gpu else "cpu", dtype=torch.bfloat16):
            pipe(prompt="a cat runs on the beach at sunset", negative_prompt="blue snow",
                 height=height, width=width, num_frames=frames, num_inference_steps=args.steps,
                 max_sequence_length=64, output_type="np")
    print(f"gpu_check: {args.impl}: {1 + args.requests} offloaded bf16-autocast requests on "
          f"{'cuda' if on_gpu else 'cpu'}")


def build_vae_decoder(torch):
    nn = torch.nn

    class Decoder(nn.Module):
        """A Wan-VAE-sized upsampling decoder (8x spatial, 4x temporal)."""

        def __init__(self):
            super().__init__()
            self.conv_in = nn.Conv3d(IN_CH, 256, 3, padding=1)
            self.up = nn.ConvTranspose3d(256, 64, (1, 8, 8), stride=(1, 8, 8))
            self.conv_out = nn.Conv3d(64, 3, 3, padding=1)

        def forward(self, latents):
            return self.decode(latents)

        def decode(self, latents):
            x = self.up(torch.nn.functional.silu(self.conv_in(latents)))
            return self.conv_out(x).repeat_interleave(4, dim=2)

    return Decoder()


def read_jsonl(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def python_compare(args):
    """Same records from both (stages and counts, FLOPs, tokens, batch, params), and stage times
    within --time-tolerance over the measured requests."""
    ours = sorted(read_jsonl(args.vxperf), key=lambda r: r["req"])
    theirs = sorted(read_jsonl(args.reference_records), key=lambda r: r["req"])
    problems = []
    if [(r["req"], r["warmup"]) for r in ours] != [(r["req"], r["warmup"]) for r in theirs]:
        problems.append("request ids or warmup flags differ")
    for a, b in zip(ours, theirs):
        counts_a = {n: s["count"] for n, s in a["stages"].items()}
        counts_b = {n: s["count"] for n, s in b["stages"].items()}
        if counts_a != counts_b:
            problems.append(f"req#{a['req']}: stages {counts_a} != {counts_b}")
        for key in ("params", "tokens", "batch", "devices", "flops_per_fwd", "attn_share"):
            va, vb = (a.get("dit") or {}).get(key), (b.get("dit") or {}).get(key)
            if va is None or vb is None or not math.isclose(va, vb, rel_tol=1e-12):
                problems.append(f"req#{a['req']}: dit.{key} {va} != {vb}")
        if a.get("device") != b.get("device") or (args.on_gpu and "peak_alloc_bytes" not in a):
            problems.append(f"req#{a['req']}: device {a.get('device')} vs {b.get('device')}, "
                            "or no peak memory")
    measured_a = [r for r in ours if not r["warmup"]]
    measured_b = [r for r in theirs if not r["warmup"]]
    print(f"{'mean over measured requests':28}{'vxperf':>12}{'reference':>12}{'ratio':>8}")
    for name in sorted(measured_a[0]["stages"]) if measured_a else []:
        va = statistics.fmean(r["stages"][name]["mean_ms"] for r in measured_a)
        vb = statistics.fmean(r["stages"][name]["mean_ms"] for r in measured_b)
        print(f"{name + ' (ms)':28}{va:12.2f}{vb:12.2f}{va / vb:8.3f}")
        # Stages of a few milliseconds carry host jitter of their own: 2% or 0.3 ms.
        if abs(va - vb) > max(args.time_tolerance * vb, 0.3):
            problems.append(f"{name}: {va:.2f} ms vs {vb:.2f} ms")
    if measured_a:
        va = statistics.fmean(r["e2e_s"] for r in measured_a)
        vb = statistics.fmean(r["e2e_s"] for r in measured_b)
        print(f"{'e2e (s)':28}{va:12.3f}{vb:12.3f}{va / vb:8.3f}")
        print(f"{'FLOPs / forward':28}{measured_a[0]['dit']['flops_per_fwd']:12.4e}"
              f"{measured_b[0]['dit']['flops_per_fwd']:12.4e}")
    if args.expect_dtype:
        for r in measured_a:
            dit = r.get("dit") or {}
            dtype = dit.get("dtype", "bf16")  # bf16 is the reference's, left out of records
            if dtype != args.expect_dtype:
                problems.append(f"req#{r['req']}: priced at {dtype}, not {args.expect_dtype}")
            if args.expect_peak is not None:
                peak = dit.get("peak_tflops")
                if peak is None or not math.isclose(peak, args.expect_peak, rel_tol=1e-9):
                    problems.append(f"req#{r['req']}: peak {peak}, not {args.expect_peak}")
                elif dit.get("mfu") is None or not math.isclose(dit["mfu"], dit["tflops"] / peak,
                                                                rel_tol=1e-9):
                    problems.append(f"req#{r['req']}: MFU {dit.get('mfu')} is not TFLOPS/peak")
                else:
                    print(f"req#{r['req']}: {dit['tflops']:.1f} TFLOPS, MFU "
                          f"{dit['mfu'] * 100:.1f}% of the {dtype} peak {peak:.0f}")
    for problem in problems:
        print("  ", problem)
    print("RESULT:", "agree" if not problems else "DISAGREE",
          f"(records equal, stage times within {args.time_tolerance:.0%})")
    return 0 if not problems else 1


def context_parallel(args):
    """One rank of a real diffusers Wan pipeline whose transformer runs ulysses context parallel
    over the two ranks (enable_parallelism), one request; writes its record and the truth."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    import real_models
    import vxperf
    from diffusers import ContextParallelConfig

    pipe = real_models.wan(seed=0).to(f"cuda:{rank}")
    truth = sum(p.numel() for p in pipe.transformer.parameters())
    pipe.transformer.set_attention_backend("native")
    pipe.transformer.enable_parallelism(config=ContextParallelConfig(ulysses_degree=2))
    vxperf.instrument_pipeline(pipe)
    generator = torch.Generator("cuda").manual_seed(0)
    pipe(prompt="a cat runs", num_inference_steps=2, height=32, width=32, num_frames=5,
         generator=generator, output_type="latent")
    with open(os.environ["VIDEOX_PERF_JSON"] + f".truth{rank}", "w") as handle:
        json.dump({"truth": truth}, handle)
    dist.destroy_process_group()


def context_parallel_compare(args):
    """Both ranks' request: priced against the 2 devices of the group, the layout read from
    diffusers' config, the unsharded count; the report counts it once."""
    problems = []
    for rank in (0, 1):
        records = [json.loads(line) for line in open(f"{args.records}.rank{rank}")]
        truth = json.load(open(f"{args.records}.truth{rank}"))["truth"]
        request = [r for r in records if r["kind"] == "request"][0]
        layout = request.get("parallel") or {}
        print(f"gpu_check: context parallel rank {rank}: devices {request['dit']['devices']}, "
              f"params {request['dit']['params']} (truth {truth}), layout {layout}")
        if request["dit"]["devices"] != 2 or layout.get("cp") != 2 or layout.get("group") != 2:
            problems.append(f"rank {rank}: not priced as a request of 2 devices")
        if layout.get("from", {}).get("cp") != "diffusers":
            problems.append(f"rank {rank}: cp not read from diffusers' config")
        if request["dit"]["params"] != truth:
            problems.append(f"rank {rank}: params {request['dit']['params']} != {truth}")
    for problem in problems:
        print("  ", problem)
    print("RESULT:", "agree" if not problems else "DISAGREE", "(context parallel)")
    return 0 if not problems else 1


def run_parser(sub, name, device, requests, steps, layers=None):
    """The subcommand `name`, which runs one implementation: --impl, --reference, --device (its
    add_argument keywords `device`), --layers (when given its default), --requests, --steps
    (their defaults given) and --out."""
    parser = sub.add_parser(name)
    parser.add_argument("--impl", choices=("vxperf", "reference"), required=True)
    parser.add_argument("--reference", help="the reference module (seed_perf.py)")
    parser.add_argument("--device", **device)
    if layers is not None:
        parser.add_argument("--layers", type=int, default=layers)
    parser.add_argument("--requests", type=int, default=requests)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--out", required=True)
    return parser


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pd = sub.add_parser("direct")
    pd.add_argument("--batch", type=int, default=1)
    pd.add_argument("--device", type=int, default=0)
    pd.add_argument("--warmup", type=int, default=2)
    pd.add_argument("--iters", type=int, default=5)
    pd.add_argument("--out", required=True)
    pb = sub.add_parser("batch")
    pb.add_argument("--records", required=True)
    pc = sub.add_parser("compare")
    pc.add_argument("--records", required=True)
    pc.add_argument("--direct", required=True)
    pc.add_argument("--time-tolerance", type=float, default=0.15)
    pc.add_argument("--flops-tolerance", type=float, default=0.06)
    run_parser(sub, "python-run", dict(type=int, default=0), requests=3, steps=3)
    pp = sub.add_parser("python-compare")
    pp.add_argument("--vxperf", required=True)
    pp.add_argument("--reference-records", required=True)
    pp.add_argument("--time-tolerance", type=float, default=0.02)
    pp.add_argument("--expect-dtype", help="the dtype vxperf's records must be priced in")
    pp.add_argument("--expect-peak", type=float, help="the job peak they must be priced against")
    pp.add_argument("--cpu", dest="on_gpu", action="store_false",
                    help="records of a CPU rehearsal (no device, no peak memory)")
    run_parser(sub, "real-run", dict(default="0", help="a CUDA index, or cpu to rehearse"),
               requests=2, steps=4, layers=8)
    sub.add_parser("context-parallel")
    pcc = sub.add_parser("context-parallel-compare")
    pcc.add_argument("--records", required=True)
    args = p.parse_args()
    commands = {"direct": direct, "batch": batch_of, "compare": compare, "python-run": python_run,
                "python-compare": python_compare, "real-run": real_run,
                "context-parallel": context_parallel,
                "context-parallel-compare": context_parallel_compare}
    # The comparisons return their exit status; the runs return None, which exits with 0.
    sys.exit(commands[args.cmd](args))


if __name__ == "__main__":
    main()
