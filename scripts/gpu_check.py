#!/usr/bin/env python3
"""GPU check helper (scripts/gpu_check.sh runs it part by part): a Wan2.1-1.3B-shaped DiT forward
timed directly, the comparisons with vxperf's records, and the rehearsal's fakes.

  gpu_check.py direct --batch B --out direct.json   # a CUDA GPU, or --device cpu to rehearse
  gpu_check.py compare --records DIR --direct direct.json [--json OUT]
  gpu_check.py python-run --impl vxperf|reference [--reference seed_perf.py] --out R.jsonl
  gpu_check.py python-compare --vxperf A.jsonl --reference-records B.jsonl
  gpu_check.py energy-plausible --records R.jsonl | energy-compare --records R --smi POLLS.csv
  gpu_check.py capture-compare --trace GPU_TRACE.csv --records R.jsonl
  gpu_check.py rehearse-meters ... | fake-smi --watts W      # the rehearsal on the fakes
  gpu_check.py python-run ... --profile-trace DIR; explain-check --explanation E.json --json OUT
  gpu_check.py scenarios-compare ... | summary --work DIR --out DIR

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


def build_model(torch, layers=LAYERS):
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
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
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


def vxperf_formula_flops(params, tokens, batch, layers=LAYERS):
    # vxperf's cost model (src/base/cost_model.cpp): 2*params*tokens + 4*S^2*sum(self widths)
    # + 4*S*text*sum(cross widths), per sample.
    widths = layers * DIM
    return batch * (2.0 * params * tokens + 4.0 * tokens * tokens * widths
                    + 4.0 * tokens * TEXT_LEN * widths)


def direct(args):
    """The DiT's forward timed directly: CUDA events on a GPU; on the CPU (--device cpu, the
    rehearsal) the wall clock, in fp32, at --layers and --latent small enough for it."""
    import time

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    on_gpu = args.device != "cpu"
    if on_gpu and not torch.cuda.is_available():
        sys.exit("gpu_check.py direct: no CUDA device visible to PyTorch")
    device = torch.device("cuda", int(args.device)) if on_gpu else torch.device("cpu")
    dtype = torch.bfloat16 if on_gpu else torch.float32
    if on_gpu:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    with torch.device(device):  # initialize on the GPU: seconds, not minutes
        model = build_model(torch, args.layers)
    model = model.to(dtype=dtype).eval()
    params = sum(p.numel() for p in model.parameters())
    b = args.batch
    latent = tuple(args.latent)
    tokens = latent[0] * (latent[1] // PATCH[1]) * (latent[2] // PATCH[2])
    x = torch.randn(b, IN_CH, *latent, device=device, dtype=dtype)
    t = torch.full((b,), 999.0, device=device)
    context = torch.randn(b, TEXT_LEN, TEXT_DIM, device=device, dtype=dtype)

    def timed():
        if not on_gpu:
            start = time.perf_counter()
            model(x, t, context)
            return (time.perf_counter() - start) * 1000.0
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        model(x, t, context)
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    with torch.inference_mode():
        for _ in range(args.warmup):
            model(x, t, context)
        if on_gpu:
            torch.cuda.synchronize(device)
        times = [timed() for _ in range(args.iters)]
        counter = FlopCounterMode(display=False)
        with counter:
            model(x, t, context)
        if on_gpu:
            torch.cuda.synchronize(device)
    result = {
        "device_name": torch.cuda.get_device_name(device) if on_gpu else "cpu",
        "torch": torch.__version__,
        "params": params,
        "tokens": tokens,
        "batch": b,
        "forward_ms": times,
        "forward_ms_median": statistics.median(times),
        "flop_counter_flops": counter.get_total_flops(),
        "formula_flops": vxperf_formula_flops(params, tokens, b, args.layers),
        "max_memory_allocated": torch.cuda.max_memory_allocated(device) if on_gpu else 0,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "forward_ms"}))
    if on_gpu and params != EXPECTED_PARAMS:
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
    write_json(args.json, {"agree": ok, "vxperf_step_ms": v_ms, "direct_step_ms": d_ms,
                           "time_ratio": v_ms / d_ms, "vxperf_flops_per_fwd": v_flops,
                           "direct_flops": d_flops,
                           "flops_ratio": v_flops / d_flops if v_flops else None,
                           "mfu": dit.get("mfu"), "peak_tflops": dit.get("peak_tflops")})
    return 0 if ok else 1


def write_json(path, numbers):
    """A part's numbers, for the summary (nothing when no path was given)."""
    if path:
        with open(path, "w") as handle:
            json.dump(numbers, handle, indent=1)


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


def measuring_implementation(args, **settings):
    """--impl loaded to measure into a fresh --out (the first request a warmup), with no other
    VIDEOX_PERF* setting of this process's environment than `settings`."""
    if os.path.exists(args.out):
        os.remove(args.out)
    for key in list(os.environ):
        if key.startswith("VIDEOX_PERF"):
            del os.environ[key]
    os.environ.update(VIDEOX_PERF_JSON=args.out, VIDEOX_PERF_WARMUP="1", **settings)
    return load_implementation(args.impl, args.reference)


def python_run(args):
    """One implementation instruments a Wan2.1-1.3B-shaped text-to-video pipeline on the GPU and
    runs a warmup request and --requests more; the records go to --out."""
    import torch

    on_gpu = args.device != "cpu"
    if on_gpu and not torch.cuda.is_available():
        sys.exit("gpu_check.py python-run: no CUDA device visible to PyTorch")
    if getattr(args, "cuda_graph", False) and not on_gpu:
        sys.exit("gpu_check.py python-run: --cuda-graph needs a CUDA device")
    profile = getattr(args, "profile_trace", None)
    # --profile-trace: request 1 (after the warmup) under torch's profiler, started and stopped
    # by vxperf (VIDEOX_PERF_PROFILE), its Kineto trace written there for `vxperf explain`.
    perf = measuring_implementation(args, **({"VIDEOX_PERF_PROFILE": "requests:1-1"}
                                             if profile else {}))
    nn = torch.nn
    device = torch.device("cuda", int(args.device)) if on_gpu else torch.device("cpu")
    dtype = torch.bfloat16 if on_gpu else torch.float32
    # The rehearsal on the CPU: one block over one latent frame of 8x8.
    latent, tokens = (PY_LATENT, PY_TOKENS) if on_gpu else ((1, 8, 8), 16)
    torch.manual_seed(0)
    with torch.device(device):
        dit = build_model(torch, LAYERS if on_gpu else 1)
        vocabulary = 32000 if on_gpu else 1000
        text_encoder = nn.Sequential(nn.Embedding(vocabulary, TEXT_DIM),
                                     nn.Linear(TEXT_DIM, TEXT_DIM), nn.GELU(),
                                     nn.Linear(TEXT_DIM, TEXT_DIM))
        vae = build_vae_decoder(torch)

    # --cuda-graph: the DiT's forward captured once (on its first call, in the warmup request) and
    # replayed, its inputs copied into the captured ones: the same device work without the host's
    # launches, what `vxperf explain --what-if=host` predicts from the eager run.
    graphed = graph_replayer(torch, dit) if getattr(args, "cuda_graph", False) else None

    class Transformer(nn.Module):
        """Wan's calling convention (x, t, context, seq_len) over the DiT; `text_len` as Wan has."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.text_len = TEXT_LEN

        def forward(self, x, t, context, seq_len):
            if graphed is None:
                return self.inner(x, t, context)
            return graphed(x, t, context)

    class Pipeline:
        def __init__(self):
            self.text_encoder = text_encoder.to(dtype).eval()
            self.transformer = Transformer(dit).to(dtype).eval()
            self.vae = vae.to(dtype).eval()

        @property
        def components(self):
            return {"text_encoder": self.text_encoder, "transformer": self.transformer,
                    "vae": self.vae}

        @torch.inference_mode()
        def __call__(self, steps, guidance=5.0):
            ids = torch.randint(0, vocabulary, (1, TEXT_LEN), device=device)
            context = self.text_encoder(ids)
            null = self.text_encoder(torch.zeros_like(ids))
            latents = torch.randn(1, IN_CH, *latent, device=device, dtype=dtype)
            for i in range(steps):
                t = torch.full((1,), 999.0 - i, device=device)
                cond = self.transformer(x=latents, t=t, context=context, seq_len=tokens)
                uncond = self.transformer(x=latents, t=t, context=null, seq_len=tokens)
                latents = latents + 0.1 * (uncond + guidance * (cond - uncond))
            return self.vae.decode(latents).float().cpu()

    pipe = perf.instrument_pipeline(Pipeline())
    profiler = None
    if profile:  # metrics are on once the pipeline is instrumented
        activities = [torch.profiler.ProfilerActivity.CPU]
        if on_gpu:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profiler = perf.profile_range(torch.profiler.profile(activities=activities))
    for _ in range(1 + args.requests):
        pipe(args.steps)
    print(f"gpu_check: {args.impl}: {1 + args.requests} requests on {device}")
    if profiler is not None:
        os.makedirs(profile, exist_ok=True)
        profiler.export_chrome_trace(os.path.join(profile, "trace.json"))


def graph_replayer(torch, model):
    """A callable(x, t, context) that captures model's forward in a CUDA graph on its first call
    (after two warmup calls on a side stream, as torch.cuda.graphs asks) and replays it after."""
    held = {}

    def run(x, t, context):
        if "graph" not in held:
            inputs = [x.clone(), t.clone(), context.clone()]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    model(*inputs)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                output = model(*inputs)
            held.update(graph=graph, inputs=inputs, output=output)
        for captured, given in zip(held["inputs"], (x, t, context)):
            captured.copy_(given)
        held["graph"].replay()
        return held["output"].clone()  # the next replay writes over the captured output

    return run


def explain_check(args):
    """`vxperf explain --json`'s answer on the profiled request: the device work found and split
    (on a GPU), every waterfall row adding up to its span, the denoising steps priced; on the CPU
    rehearsal, a CPU-only profile said and its ranges kept. Writes the numbers to --json."""
    with open(args.explanation) as handle:
        got = json.load(handle)
    problems = []
    (rank,) = got["ranks"]
    rows = {(w["kind"], w["range"], w.get("step_index")): w for w in rank["waterfall"]}
    for key in [("request", "request", None), ("denoising_step", "transformer", 0),
                ("denoising_step", "transformer", 1), ("stage", "text_encoder", None)]:
        if key not in rows:
            problems.append(f"no waterfall row {key}")
    for w in rank["waterfall"]:
        parts = sum(w[k] or 0 for k in ("ideal_s", "kernel_excess_s", "exposed_comm_s", "memory_s",
                                        "other_s", "idle_host_wait_s", "idle_kernel_wait_s",
                                        "idle_other_s"))
        if not math.isclose(parts, w["span_s"], rel_tol=1e-9, abs_tol=1e-12):
            problems.append(f"{w['kind']} {w['range']}: parts {parts} != span {w['span_s']}")
    request = rows.get(("request", "request", None), {})
    numbers = {"kernel_time_us": rank["temporal"]["kernel_time_us"],
               "compute_pct": rank["temporal"]["compute_pct"],
               "idle_pct": rank["temporal"]["idle_pct"],
               "launches": rank["launches"]["n_events"],
               "request_span_s": request.get("span_s"), "request_host_s": request.get("host_s"),
               "request_mfu": request.get("mfu"),
               "step_mfu": rows.get(("denoising_step", "transformer", 0), {}).get("mfu")}
    if args.on_gpu:
        if not rank["has_device_rows"] or not rank["temporal"]["kernel_time_us"]:
            problems.append("no device work in the trace")
        mfu = numbers["step_mfu"]
        if mfu is None or not 0 < mfu <= 1:
            problems.append(f"denoising step MFU {mfu} not in (0, 1]")
    elif rank["has_device_rows"]:  # the JSON says a CPU-only profile so (the text, once)
        problems.append("a CPU profile not said to be CPU-only")
    numbers["problems"] = problems
    write_json(args.json, numbers)
    print("gpu_check: explain " + json.dumps(numbers))
    return 1 if problems else 0


def step_rows(explanation, table):
    """The denoising steps' rows of the one rank's `table` ("waterfall", or the replay's "rows")."""
    (rank,) = explanation["ranks"]
    rows = rank["waterfall"] if table == "waterfall" else (rank.get("replay") or {}).get("rows", [])
    return [r for r in rows if r["kind"] == "denoising_step"]


def what_if_check(args):
    """`vxperf explain --what-if=host` on the eager run's trace against the same steps run with
    their host overhead gone (the DiT replayed from a CUDA graph): the denoising steps' predicted
    span summed against the graphed run's, within --tolerance. Without a graphed run (the CPU
    rehearsal) only the prediction itself is checked: there, and never above what was measured.
    Writes the numbers to --json."""
    with open(args.eager) as handle:
        eager = json.load(handle)
    problems = []
    (rank,) = eager["ranks"]
    what_ifs = (rank.get("replay") or {}).get("what_ifs", [])
    host = next((w for w in what_ifs if w["what_if"] == "host"), None)
    steps = step_rows(eager, "replay")
    measured = sum(r["span_s"] for r in steps)
    predicted = sum(r["what_if_s"]["host"] for r in steps if "host" in r.get("what_if_s", {}))
    numbers = {"steps": len(steps), "eager_steps_s": measured, "predicted_steps_s": predicted,
               "host_applies": None if host is None else host["applies"],
               "why": None if host is None else host.get("why")}
    if host is None:
        problems.append("no host what-if in the explanation")
    elif not steps:
        problems.append("no denoising step in the replay's rows")
    elif predicted > measured * (1 + 1e-9):
        problems.append(f"predicted {predicted} s above the measured {measured} s")
    if args.graphed:
        with open(args.graphed) as handle:
            graphed = step_rows(json.load(handle), "waterfall")
        actual = sum(r["span_s"] for r in graphed)
        error = abs(predicted - actual) / actual if actual > 0 else None
        numbers.update(graphed_steps_s=actual, error_pct=None if error is None else 100 * error)
        if host is not None and not host["applies"]:
            problems.append(f"the host what-if does not apply: {host.get('why')}")
        if len(graphed) != len(steps):
            problems.append(f"{len(graphed)} graphed steps against {len(steps)} eager ones")
        if error is None or error > args.tolerance:
            problems.append(f"prediction off by {numbers['error_pct']}% (at most "
                            f"{100 * args.tolerance:g}%)")
    numbers["problems"] = problems
    write_json(args.json, numbers)
    print("gpu_check: what-if " + json.dumps(numbers))
    return 1 if problems else 0


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
    # Its text length said, as Wan's own code says it: the reference cannot read it off the calls
    # (vxperf does) and would price no cross-attention.
    transformer.text_len = 64  # max_sequence_length below
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
    write_json(args.json, {"agree": not problems, "problems": problems})
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


# ---- energy and the capture range: the comparisons (GPU runs and their rehearsal alike) ----------


def energy_plausible(args):
    """Every request that NVML read carries counter energy, a power a GPU can draw and an energy
    within 15% of that power x its time. No readings at all is said, not a failure."""
    requests = [r for r in read_jsonl(args.records) if r.get("kind") == "request"]
    metered = [r for r in requests if "energy_j" in r]
    if not metered:
        print("gpu_check: energy: no NVML readings in the records (libnvidia-ml.so.1 absent?)")
        write_json(args.json, {"metered": 0})
        return 0
    bad = 0
    for r in metered:
        e, p, t = r["energy_j"], r.get("power_w_mean"), r["e2e_s"]
        ok = e > 0 and p is not None and 20 <= p <= 2000 and abs(e - p * t) <= 0.15 * e
        bad += not ok
        print(f"gpu_check: energy req#{r['req']}: {e:.1f} J ({r.get('energy_from')}), "
              f"{p} W mean over {t:.2f} s, SM clock min {r.get('sm_clock_mhz_min')} MHz, "
              f"temp max {r.get('temp_c_max')} C, throttle {r.get('throttle')}, "
              f"host {r.get('cpu_energy_j')} J" + ("" if ok else "  <- implausible"))
    write_json(args.json, {"metered": len(metered), "implausible": bad,
                           "energy_j": [r["energy_j"] for r in metered]})
    return 1 if bad else 0


def read_smi(path):
    """nvidia-smi's polls of timestamp,total_energy_consumption: [(epoch s, mJ)]."""
    import datetime

    polls = []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2 or not parts[1].replace(".", "", 1).isdigit():
            continue
        when = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        polls.append((when, float(parts[1])))
    return polls


def energy_compare(args):
    """Each request's energy_j against the counter nvidia-smi polled over the same interval (the
    record's [ts - e2e_s, ts], interpolated between polls): within 5% for requests of 2 s or
    more (shorter ones are within nvidia-smi's own resolution, and said)."""
    import bisect

    if not os.path.exists(args.records):
        print("gpu_check: energy: the demo wrote no records")
        return 1
    polls = read_smi(args.smi)
    if len(polls) < 2:
        print("gpu_check: energy: nvidia-smi gave no total_energy_consumption (not supported?)")
        write_json(args.json, {"compared": 0})
        return 0
    times = [t for t, _ in polls]

    def counter_at(t):
        i = bisect.bisect_left(times, t)
        if i == 0 or i == len(polls):
            return None
        (t0, e0), (t1, e1) = polls[i - 1], polls[i]
        return e0 + (e1 - e0) * (t - t0) / (t1 - t0) if t1 > t0 else e0

    bad, diffs = 0, []
    for r in read_jsonl(args.records):
        if r.get("kind") != "request" or "energy_j" not in r:
            continue
        start, end = r["ts"] - r["e2e_s"], r["ts"]
        a, b = counter_at(start), counter_at(end)
        if a is None or b is None:
            print(f"gpu_check: energy req#{r['req']}: outside nvidia-smi's polls")
            bad += 1
            continue
        smi_j = (b - a) / 1000.0
        diff = (r["energy_j"] - smi_j) / smi_j if smi_j > 0 else float("inf")
        short = r["e2e_s"] < 2.0
        ok = short or abs(diff) <= 0.05
        bad += not ok
        if not short:
            diffs.append(diff)
        print(f"gpu_check: energy req#{r['req']}: vxperf {r['energy_j']:.1f} J, nvidia-smi "
              f"{smi_j:.1f} J over the same {r['e2e_s']:.2f} s ({diff:+.1%})"
              + (" (shorter than 2 s: not compared)" if short else "" if ok else
                 "  <- beyond 5%"))
    write_json(args.json, {"compared": len(diffs), "beyond_5pct": bad,
                           "relative_differences": diffs})
    return 1 if bad or not diffs else 0


def capture_compare(args):
    """The GPU activity a capture holds (a GPU trace's CSV, as `nsys stats --report
    cuda_gpu_trace` writes it) spans no more than request 1 alone, and at least half of it."""
    import csv

    rows = list(csv.reader(open(args.trace)))
    try:
        head = next(i for i, row in enumerate(rows) if any(c.startswith("Start") for c in row))
    except StopIteration:
        print("gpu_check: capture range: the trace has no Start column")
        return 1
    cols = rows[head]
    start_col = next(i for i, c in enumerate(cols) if c.startswith("Start"))
    dur_col = next(i for i, c in enumerate(cols) if c.startswith("Duration"))
    spans = [(float(r[start_col]), float(r[dur_col])) for r in rows[head + 1:]
             if len(r) > dur_col and r[start_col].replace(".", "", 1).isdigit()]
    if not spans:
        print("gpu_check: capture range: the capture holds no GPU activity")
        return 1
    span_s = (max(s + d for s, d in spans) - min(s for s, _ in spans)) / 1e9
    request = next(r for r in read_jsonl(args.records)
                   if r.get("kind") == "request" and r["req"] == 1)
    ok = 0.5 * request["e2e_s"] <= span_s <= 1.05 * request["e2e_s"] + 0.05
    print(f"gpu_check: capture range: {len(spans)} GPU activities over {span_s:.3f} s; request 1 "
          f"took {request['e2e_s']:.3f} s" + ("" if ok else "  <- not that request alone"))
    write_json(args.json, {"activities": len(spans), "span_s": span_s,
                           "request_e2e_s": request["e2e_s"], "agree": ok})
    return 0 if ok else 1


# ---- the rehearsal of the comparisons above, on the fake driver and the fake NVML ----------------

FAKE_BUS = "00000000:01:00.0"


def fake_counter_mj(watts, now):
    """The energy counter of a device drawing `watts` since the epoch: what the fake NVML
    (fake_nvml_follow_clock) reads, and so what the fake nvidia-smi prints."""
    return watts * 1000.0 * now


def fake_smi(args):
    """Prints what `nvidia-smi --query-gpu=timestamp,total_energy_consumption --format=csv,
    noheader,nounits -lms N` prints, for a device drawing --watts (until killed)."""
    import datetime
    import time

    while True:
        now = time.time()
        stamp = datetime.datetime.fromtimestamp(now).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        print(f"{stamp}, {fake_counter_mj(args.watts, now):.0f}", flush=True)
        time.sleep(args.interval_ms / 1000.0)


def rehearse_meters(args):
    """The energy and capture-range checks' inputs, made on the fake CUDA driver and the fake NVML
    (built with the tests): requests of --seconds each on "cuda:0", whose NVML device draws
    --watts, with VIDEOX_PERF_PROFILE=requests:1-1. Writes the records, and the GPU trace a
    profiler would have captured (the events recorded while capturing) as nsys's CSV. Run with
    LD_LIBRARY_PATH holding the fake NVML as libnvidia-ml.so.1."""
    import ctypes
    import time

    os.environ.update(VIDEOX_PERF="1", VIDEOX_PERF_JSON=args.records,
                      VIDEOX_PERF_PROFILE="requests:1-1", VIDEOX_PERF_NVML="1")
    if os.path.exists(args.records):
        os.remove(args.records)
    cuda = ctypes.CDLL(args.fake_cuda)
    cuda.fake_cuda_set_pci_bus_id(0, FAKE_BUS.encode())
    nvml = ctypes.CDLL("libnvidia-ml.so.1")  # the fake, as the engine will load it
    device = nvml.fake_nvml_add_device(FAKE_BUS.encode())
    nvml.fake_nvml_draw(device, ctypes.c_double(args.watts), ctypes.c_double(0.0),
                        ctypes.c_double(0.0))
    nvml.fake_nvml_follow_clock(1)
    cuda.fake_cuda_captured_first_s.restype = ctypes.c_double
    cuda.fake_cuda_captured_last_s.restype = ctypes.c_double
    import vxperf
    from vxperf import _state

    assert _state.ensure_cuda(0, args.fake_cuda, lambda device: (0, 0), lambda device: None)
    for _ in range(args.requests):
        with vxperf.request(device=0, stream=0x5000):  # a stream handle: torch's CPU build has none
            for _ in range(4):
                with vxperf.stage("transformer", tokens=1024):
                    time.sleep(args.seconds / 4)
    vxperf.shutdown()
    first, last = cuda.fake_cuda_captured_first_s(), cuda.fake_cuda_captured_last_s()
    with open(args.trace, "w") as handle:
        handle.write('"Start (ns)","Duration (ns)","Name"\n')
        if first >= 0:
            handle.write(f'0,0,"fake"\n{(last - first) * 1e9:.0f},0,"fake"\n')
    print(f"gpu_check: rehearsal: {args.requests} requests on the fake driver and NVML "
          f"({args.watts} W), capture {first:.3f}..{last:.3f}")


# ---- the training scenarios, the reference and vxperf side by side -----------------------------


def scenarios_compare(args):
    """A tiny training scenario's results under both implementations, where the reference is
    right (tests/python/scenarios.py's REFERENCE_WRONG left out)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "python"))
    import scenarios

    with open(args.reference_result) as a, open(args.vxperf_result) as b:
        theirs, ours = json.load(a), json.load(b)
    same = scenarios.comparable(args.scenario, theirs) == scenarios.comparable(args.scenario, ours)
    print(f"gpu_check: {args.scenario} with accelerate: records "
          + ("agree" if same else "DIFFER (where the reference is right)"))
    return 0 if same else 1


# ---- the summary -------------------------------------------------------------------------------


def summary(args):
    """One file of the check's numbers: each part's status and seconds (parts.tsv, written as they
    ran) and the numbers each wrote (<part>.json) under --work, into --out's summary.json; a table
    on stdout."""
    parts = []
    with open(os.path.join(args.work, "parts.tsv")) as handle:
        for line in handle:
            name, status, seconds, note = (line.rstrip("\n").split("\t") + [""])[:4]
            entry = {"part": name, "status": status, "seconds": int(seconds), "note": note}
            numbers = os.path.join(args.work, f"{name}.json")
            if os.path.exists(numbers):
                try:
                    entry["numbers"] = json.load(open(numbers))
                except json.JSONDecodeError as error:
                    entry["numbers_unreadable"] = str(error)
            parts.append(entry)
    result = {"rehearsal": args.rehearsal, "parts": parts,
              "seconds": sum(p["seconds"] for p in parts),
              "failed": [p["part"] for p in parts if p["status"] == "failed"]}
    write_json(os.path.join(args.out, "summary.json"), result)
    print(f"gpu_check: {'rehearsal ' if args.rehearsal else ''}summary "
          f"({os.path.join(args.out, 'summary.json')}):")
    for p in parts:
        print(f"  {p['part']:18} {p['status']:8} {p['seconds']:5d}s  {p['note']}")
    print(f"  {'total':18} {'':8} {result['seconds']:5d}s")
    return 1 if result["failed"] else 0


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
    pd.add_argument("--device", default="0", help="a CUDA index, or cpu to rehearse")
    pd.add_argument("--layers", type=int, default=LAYERS)
    pd.add_argument("--latent", type=int, nargs=3, default=LATENT, metavar=("F", "H", "W"))
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
    pc.add_argument("--json", help="also write the numbers here")
    ppr = run_parser(sub, "python-run", dict(default="0", help="a CUDA index, or cpu to rehearse"),
                     requests=3, steps=3)
    ppr.add_argument("--profile-trace", help="profile request 1; its Kineto trace goes here")
    ppr.add_argument("--cuda-graph", action="store_true",
                     help="the DiT's forward captured in a CUDA graph and replayed (CUDA only)")
    pex = sub.add_parser("explain-check")
    pex.add_argument("--explanation", required=True, help="vxperf explain --json's output")
    pex.add_argument("--cpu", dest="on_gpu", action="store_false")
    pex.add_argument("--json", required=True)
    pwi = sub.add_parser("what-if-check")
    pwi.add_argument("--eager", required=True, help="explain --what-if=host --json, eager run")
    pwi.add_argument("--graphed", help="explain --json of the run replayed from CUDA graphs")
    pwi.add_argument("--tolerance", type=float, default=0.10)
    pwi.add_argument("--json", required=True)
    pp = sub.add_parser("python-compare")
    pp.add_argument("--vxperf", required=True)
    pp.add_argument("--reference-records", required=True)
    pp.add_argument("--time-tolerance", type=float, default=0.02)
    pp.add_argument("--expect-dtype", help="the dtype vxperf's records must be priced in")
    pp.add_argument("--expect-peak", type=float, help="the job peak they must be priced against")
    pp.add_argument("--cpu", dest="on_gpu", action="store_false",
                    help="records of a CPU rehearsal (no device, no peak memory)")
    pp.add_argument("--json", help="also write the result here")
    run_parser(sub, "real-run", dict(default="0", help="a CUDA index, or cpu to rehearse"),
               requests=2, steps=4, layers=8)
    sub.add_parser("context-parallel")
    pcc = sub.add_parser("context-parallel-compare")
    pcc.add_argument("--records", required=True)
    pe = sub.add_parser("energy-plausible")
    pe.add_argument("--records", required=True)
    pe.add_argument("--json")
    pec = sub.add_parser("energy-compare")
    pec.add_argument("--records", required=True)
    pec.add_argument("--smi", required=True, help="nvidia-smi's polls (CSV)")
    pec.add_argument("--json")
    pcap = sub.add_parser("capture-compare")
    pcap.add_argument("--trace", required=True, help="the GPU trace (nsys stats CSV)")
    pcap.add_argument("--records", required=True)
    pcap.add_argument("--json")
    psmi = sub.add_parser("fake-smi")
    psmi.add_argument("--watts", type=float, required=True)
    psmi.add_argument("--interval-ms", type=float, default=100)
    prm = sub.add_parser("rehearse-meters")
    prm.add_argument("--fake-cuda", required=True, help="the fake driver (libfake_cuda.so)")
    prm.add_argument("--watts", type=float, required=True)
    prm.add_argument("--requests", type=int, default=3)
    prm.add_argument("--seconds", type=float, default=2.2)
    prm.add_argument("--records", required=True)
    prm.add_argument("--trace", required=True)
    psc = sub.add_parser("scenarios-compare")
    psc.add_argument("--scenario", required=True)
    psc.add_argument("--reference-result", required=True)
    psc.add_argument("--vxperf-result", required=True)
    psum = sub.add_parser("summary")
    psum.add_argument("--work", required=True, help="where the parts wrote")
    psum.add_argument("--out", required=True, help="where summary.json goes")
    psum.add_argument("--rehearsal", action="store_true")
    args = p.parse_args()
    commands = {"direct": direct, "batch": batch_of, "compare": compare, "python-run": python_run,
                "python-compare": python_compare, "real-run": real_run,
                "context-parallel": context_parallel,
                "context-parallel-compare": context_parallel_compare,
                "energy-plausible": energy_plausible, "energy-compare": energy_compare,
                "capture-compare": capture_compare, "fake-smi": fake_smi,
                "rehearse-meters": rehearse_meters, "scenarios-compare": scenarios_compare,
                "explain-check": explain_check, "what-if-check": what_if_check,
                "summary": summary}
    # The comparisons return their exit status; the runs return None, which exits with 0.
    sys.exit(commands[args.cmd](args))


if __name__ == "__main__":
    main()
