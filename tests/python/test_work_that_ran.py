"""Pricing the work that ran (#39): what a transformer's blocks ran, read from their own inputs.

Each test's truth is counted by the test itself, in the blocks' (and attention modules') own
forward, innermost, where no cache can answer for them: VideoX-Fun's TeaCache and CFG skip
(caching_models.py reproduces their structure), every cache the pinned diffusers ships, CogVideoX's
(B, F, C, H, W) latents with and without a temporal patch, and micro-steps of different lengths
under the real accelerate. Where the reference module is around, it is run side by side: it
prices what the blocks never ran, and vxperf's numbers say by how much. Outputs are bit-identical
measured and not."""
import json
import os
import sys

import pytest

from conftest import HERE, clean_env, read_records, run_python

sys.path.insert(0, HERE)
import scenarios  # noqa: E402

REFERENCE = scenarios.default_reference()
HAVE_REFERENCE = os.path.exists(REFERENCE)
FRAMEWORK = os.path.join(HERE, "framework_real")

# A child's start: `perf` is vxperf, the reference (as its framework's videox_fun.utils.seed_perf)
# or None for an unmeasured run; `digest` hashes what a run computed.
PRELUDE = f"""
import hashlib, json, sys
import torch
sys.path.insert(0, {FRAMEWORK!r})
import scenarios
IMPL = sys.argv[1] if len(sys.argv) > 1 else "vxperf"
perf = None if IMPL == "none" else scenarios.load(IMPL, {REFERENCE!r})

def digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().float().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]
"""


def run(tmp_path, impl, code, **settings):
    """(records, the child's printed JSON) of `code` run under `impl`."""
    path = tmp_path / f"{impl}.jsonl"
    env = clean_env(VIDEOX_PERF="1" if impl != "none" else "0", VIDEOX_PERF_JSON=str(path),
                    **settings)
    source = PRELUDE.replace('sys.argv[1] if len(sys.argv) > 1 else "vxperf"', repr(impl)) + code
    proc = run_python(source, env=env, timeout=300)
    return read_records(path), json.loads(proc.stdout.strip().splitlines()[-1])


def impls():
    return ("none", "vxperf", "reference") if HAVE_REFERENCE else ("none", "vxperf")


# ---- VideoX-Fun's TeaCache and CFG skip -----------------------------------------------------

CACHING = """
import caching_models as cm
pipe = cm.pipeline(calc={calc}, cfg_skip_from={skip})
if perf is not None:
    perf.instrument_pipeline(pipe)
out = pipe("a cat runs", steps=4)
print(json.dumps({{"rows": pipe.block_rows, "digest": digest(out),
                  "blocks": len(pipe.transformer.blocks)}}))
"""


@pytest.mark.parametrize("calc, skip, rows", [
    # TeaCache (its default in VideoX-Fun's Wan scripts) with CFG skip on the last step: the
    # blocks ran on 2, 0, 0 and 1 of the 2 rows.
    ([True, False, False, True], 3, [2, 0, 0, 1]),
    # CFG skip alone from the third step: 2, 2, 1, 1.
    (None, 2, [2, 2, 1, 1]),
])
def test_videox_caches_are_priced_at_the_rows_the_blocks_ran(tmp_path, calc, skip, rows):
    code = CACHING.format(calc=calc, skip=skip)
    results = {impl: run(tmp_path, impl, code) for impl in impls()}
    records, seen = results["vxperf"]
    # The truth, counted in the blocks' own forward: the rows each call's blocks ran on.
    assert [r // seen["blocks"] for r in seen["rows"]] == rows
    (record,) = records
    dit = record["dit"]
    effective = sum(seen["rows"]) / (seen["blocks"] * 2)
    assert dit["effective_fwd"] == effective
    assert dit["skipped_fwd"] == rows.count(0)
    assert dit["tokens"] == 8 and dit["batch"] == 2  # what the blocks ran on: seq_len, 2 rows
    seconds = record["stages"]["transformer"]["total_ms"] / 1000
    assert dit["tflops"] == pytest.approx(dit["flops_per_fwd"] * effective / seconds / 1e12,
                                          rel=1e-12)
    # Measuring changes nothing computed.
    assert results["none"][1]["digest"] == seen["digest"]
    if "reference" in results:
        (ref,) = results["reference"][0]
        assert results["reference"][1]["digest"] == seen["digest"]
        # The reference prices the same full forward, and every one of the 4 calls at it.
        assert ref["dit"]["flops_per_fwd"] == dit["flops_per_fwd"]
        assert "effective_fwd" not in ref["dit"]
        overpriced = 4 / effective  # 2.67x under TeaCache with CFG skip, 1.33x under CFG skip
        assert overpriced == pytest.approx({1.5: 8 / 3, 3.0: 4 / 3}[effective])


def test_without_caching_nothing_changes(tmp_path):
    records, seen = run(tmp_path, "vxperf", CACHING.format(calc=None, skip=None))
    dit = records[0]["dit"]
    assert seen["rows"] == [4, 4, 4, 4]
    assert "effective_fwd" not in dit and "skipped_fwd" not in dit


# ---- diffusers' caches ----------------------------------------------------------------------

# The blocks' and attention modules' own forwards count the rows they ran on, per transformer
# call (patched on their classes before any model is built: a cache hook captures the patched
# forward, innermost).
DIFFUSERS_CACHE = """
import real_models as rm
from diffusers import hooks
from diffusers.models.attention_processor import Attention
from diffusers.models.transformers.cogvideox_transformer_3d import CogVideoXBlock
from diffusers.models.transformers.transformer_wan import WanAttention, WanTransformerBlock

calls = []  # per transformer call: [("block"|"attn", id, rows)]

def counting(cls, kind):
    forward = cls.forward
    def counted(self, hidden_states, *args, **kwargs):
        if calls:
            calls[-1].append((kind, id(self), int(hidden_states.shape[0])))
        return forward(self, hidden_states, *args, **kwargs)
    cls.forward = counted

for cls, kind in ((WanTransformerBlock, "block"), (CogVideoXBlock, "block"),
                  (WanAttention, "attn"), (Attention, "attn")):
    counting(cls, kind)

NAME = {name!r}
if NAME == "faster_cache":  # its guidance-row skip needs guidance batched: CogVideoX
    pipe = rm.cogvideox()
    pipe.transformer = rm.cogvideox().transformer.__class__(**dict(pipe.transformer.config,
                                                               num_layers=2))
    call = dict(rm.COG_CALL, num_inference_steps=4)
else:
    pipe = rm.wan()
    pipe.transformer = rm.wan_transformer(layers=4, seed=0)
    call = dict(rm.WAN_CALL, num_inference_steps=4)
model = pipe.transformer
step = lambda: pipe.current_timestep
configs = {{
    "first_block_cache": lambda: hooks.FirstBlockCacheConfig(threshold=1e9),
    "pyramid_attention_broadcast": lambda: hooks.PyramidAttentionBroadcastConfig(
        spatial_attention_block_skip_range=2, spatial_attention_timestep_skip_range=(-1, 1001),
        cross_attention_block_skip_range=3, cross_attention_timestep_skip_range=(-1, 1001),
        current_timestep_callback=step),
    "taylorseer_lite": lambda: hooks.TaylorSeerCacheConfig(
        cache_interval=2, disable_cache_before_step=1, use_lite_mode=True),
    "mag_cache": lambda: hooks.MagCacheConfig(threshold=1e9, num_inference_steps=4,
                                              mag_ratios=[1.0] * 4, retention_ratio=0.0),
    "faster_cache": lambda: hooks.FasterCacheConfig(
        spatial_attention_block_skip_range=2, spatial_attention_timestep_skip_range=(-1, 1001),
        current_timestep_callback=step, attention_weight_callback=lambda _: 0.5,
        unconditional_batch_skip_range=2, unconditional_batch_timestep_skip_range=(-1, 1001),
        tensor_format="BFCHW"),
    "sea_cache": lambda: hooks.SeaCacheConfig(threshold=10.0),
}}
if NAME == "layer_skip":  # skip-layer guidance's hook: blocks 1 and 2 left out of every call
    hooks.apply_layer_skip(model, hooks.LayerSkipConfig(indices=[1, 2]))
else:
    model.enable_cache(configs[NAME]())
model.register_forward_pre_hook(lambda m, a: calls.append([]))
if perf is not None:
    perf.instrument_pipeline(pipe)
result = pipe(prompt="a cat runs", generator=torch.Generator().manual_seed(0), **call)
frames = getattr(result, "frames", result)
frames = torch.as_tensor(frames) if not torch.is_tensor(frames) else frames

# The model as the cost model sees it: parameters, and each block's and attention module's size
# and query width (self-attention unless named attn2).
blocks = [b for name, sub in model.named_children() if name in ("blocks", "transformer_blocks")
          for b in sub]
attn = {{}}
for name, sub in model.named_modules():
    if hasattr(sub, "to_q"):
        attn[id(sub)] = {{"size": sum(p.numel() for p in sub.parameters()),
                         "width": sub.to_q.out_features, "cross": name.endswith("attn2")}}
owner = {{id(m): i for i, b in enumerate(blocks) for m in b.modules() if id(m) in attn}}
print(json.dumps({{"calls": calls, "digest": digest(frames), "attn": attn, "owner": owner,
                  "blocks": [id(b) for b in blocks],
                  "params": sum(p.numel() for p in model.parameters()),
                  "block_sizes": [sum(p.numel() for p in b.parameters()) for b in blocks]}}))
"""


def expected_fractions(seen, tokens, rows):
    """Each call's share of a full forward, by the definition vxperf documents: every block's run
    on r of the call's rows adds r/rows of its share of the model's cost at `tokens` (its share of
    the blocks' parameters and attention widths), and every attention module a cache answered
    takes its own share off (its run in its block, minus the runs it really made)."""
    sizes = seen["block_sizes"]
    attn = {int(k): v for k, v in seen["attn"].items()}
    owner = {int(k): v for k, v in seen["owner"].items()}
    self_widths = [0.0] * len(sizes)
    for key, info in attn.items():
        if key in owner and not info["cross"]:
            self_widths[owner[key]] += info["width"]
    linear = 2.0 * seen["params"] * tokens  # the model's cost per sample, its two terms
    quadratic = 4.0 * sum(i["width"] for i in attn.values() if not i["cross"]) * tokens ** 2
    total = linear + quadratic
    block_of = {key: index for index, key in enumerate(seen["blocks"])}
    fractions = []
    for call in seen["calls"]:
        work = 0.0
        ran_attn = {}
        for kind, key, r in call:
            if kind == "attn":
                ran_attn[key] = ran_attn.get(key, 0) + r
        for kind, key, r in call:
            if kind != "block":
                continue
            index = block_of[key]
            work += r * (sizes[index] / sum(sizes) * linear
                         + self_widths[index] / sum(self_widths) * quadratic)
            for m, info in attn.items():
                if owner.get(m) != index:
                    continue
                missing = r - ran_attn.get(m, 0)
                if missing > 0:  # answered by the cache in this run of its block
                    self_share = 0.0 if info["cross"] else info["width"] / sum(self_widths)
                    work -= missing * (info["size"] / sum(sizes) * linear + self_share * quadratic)
                    ran_attn[m] = 0
                else:
                    ran_attn[m] -= r
        fractions.append(work / (rows * total))
    return fractions


@pytest.mark.parametrize("name", ["first_block_cache", "pyramid_attention_broadcast",
                                  "taylorseer_lite", "mag_cache", "faster_cache", "sea_cache",
                                  "layer_skip"])
def test_every_diffusers_cache_is_priced_at_what_ran(tmp_path, name):
    code = DIFFUSERS_CACHE.format(name=name)
    results = {impl: run(tmp_path, impl, code) for impl in ("none", "vxperf")}
    records, seen = results["vxperf"]
    assert results["none"][1]["digest"] == seen["digest"]
    (record,) = records
    dit = record["dit"]
    fractions = expected_fractions(seen, dit["tokens"], dit["batch"])
    assert len(fractions) == record["stages"]["transformer"]["count"]
    assert sum(fractions) < len(fractions) - 0.5, \
        "the cache skipped nothing: the test checks nothing"
    assert dit["effective_fwd"] == pytest.approx(sum(fractions), rel=1e-9)
    assert dit["skipped_fwd"] == sum(1 for f in fractions if f == 0)


# ---- CogVideoX's layout ---------------------------------------------------------------------

COGVIDEOX = """
from diffusers import CogVideoXTransformer3DModel
from diffusers.models.embeddings import get_3d_rotary_pos_embed

TEMPORAL = {temporal}
torch.manual_seed(0)
options = dict(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4,
               time_embed_dim=2, text_embed_dim=32, num_layers=2, sample_width=6,
               sample_height=4, sample_frames=13, patch_size=2, max_text_seq_length=16)
if TEMPORAL:  # CogVideoX 1.5: a temporal patch, rotary positions
    options.update(patch_size_t=TEMPORAL, use_rotary_positional_embeddings=True,
                   use_learned_positional_embeddings=False)
model = CogVideoXTransformer3DModel(**options)
seen = []
model.transformer_blocks[0].register_forward_pre_hook(
    lambda m, a, k: seen.append(int(k["hidden_states"].shape[1])), with_kwargs=True)


class Pipeline:
    # The denoising loop's transformer calls, as CogVideoX's pipelines make them: latents laid
    # out (B, F, C, H, W), guidance batched.
    components = property(lambda self: {{"transformer": model}})

    @torch.no_grad()
    def __call__(self, frames):
        x = torch.randn(2, frames, 4, 4, 6, generator=torch.Generator().manual_seed(0))
        rotary = None
        if TEMPORAL:
            rotary = get_3d_rotary_pos_embed(16, crops_coords=None, grid_size=(2, 3),
                                             temporal_size=frames // TEMPORAL, grid_type="slice",
                                             max_size=(2, 3))
        outs = [model(hidden_states=x, encoder_hidden_states=torch.ones(2, 16, 32),
                      timestep=torch.tensor([999 - 100 * i] * 2), image_rotary_emb=rotary).sample
                for i in range(2)]
        return torch.stack(outs)


pipe = Pipeline()
if perf is not None:
    perf.instrument_pipeline(pipe)
out = pipe({frames})
print(json.dumps({{"tokens": seen, "digest": digest(out)}}))
"""


@pytest.mark.parametrize("temporal, frames", [(None, 3), (2, 4)])
def test_cogvideox_is_priced_at_the_tokens_its_blocks_ran(tmp_path, temporal, frames):
    code = COGVIDEOX.format(temporal=temporal, frames=frames)
    results = {impl: run(tmp_path, impl, code) for impl in impls()}
    records, seen = results["vxperf"]
    truth = seen["tokens"][0]
    assert seen["tokens"] == [truth, truth]
    assert truth == frames // (temporal or 1) * 2 * 3  # (F / patch_t) x (4 / 2) x (6 / 2)
    (record,) = records
    assert record["dit"]["tokens"] == truth and record["dit"]["batch"] == 2
    assert results["none"][1]["digest"] == seen["digest"]
    if "reference" in results:
        (ref,) = results["reference"][0]
        # The reference reads (B, F, C, H, W) as (B, C, F, H, W): C=4 frames, no temporal patch.
        assert ref["dit"]["tokens"] == 4 * 2 * 3
        assert ref["dit"]["flops_per_fwd"] > record["dit"]["flops_per_fwd"]


# ---- micro-steps of different lengths -------------------------------------------------------

ACCUMULATED = """
from accelerate import Accelerator
from diffusers import CogVideoXTransformer3DModel

if perf is not None:
    perf.install_training()  # the framework's models: CogVideoX's transformer among them
torch.manual_seed(0)
model = CogVideoXTransformer3DModel(
    num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4, time_embed_dim=2,
    text_embed_dim=32, num_layers=2, sample_width=6, sample_height=4, sample_frames=13,
    patch_size=2, max_text_seq_length=16)
seen = []  # (rows, tokens) each forward's first block ran on
model.transformer_blocks[0].register_forward_pre_hook(
    lambda m, a, k: seen.append(list(k["hidden_states"].shape[:2])), with_kwargs=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True)
model, optimizer = accelerator.prepare(model, optimizer)
# A bucket sampler's micro-batches: (latent frames, samples), two to a step.
for frames, rows in {plan}:
    with accelerator.accumulate(model):
        x = torch.randn(rows, frames, 4, 4, 6)
        out = model(hidden_states=x, encoder_hidden_states=torch.ones(rows, 16, 32),
                    timestep=torch.full((rows,), 500)).sample
        accelerator.backward(out.pow(2).mean())
        optimizer.step()
        optimizer.zero_grad()
weights = accelerator.unwrap_model(model).state_dict()
if perf is not None:
    (getattr(perf, "finish", None) or perf._TRAIN.finish)()
widths = sum(m.to_q.out_features for m in model.modules() if hasattr(m, "to_q"))
print(json.dumps({{"seen": seen, "digest": digest(*(weights[k] for k in sorted(weights))),
                  "widths": widths}}))
"""

PLAN = [(3, 1), (2, 2), (2, 1), (3, 1), (3, 1), (1, 1), (1, 2), (1, 1)]


def test_micro_steps_of_different_lengths_are_each_priced_at_their_own(tmp_path):
    code = ACCUMULATED.format(plan=PLAN)
    settings = {"VIDEOX_PERF_EVERY": "2", "VIDEOX_PERF_WARMUP": "0"}
    results = {impl: run(tmp_path, impl, code, **settings) for impl in impls()}
    records, seen = results["vxperf"]
    assert results["none"][1]["digest"] == seen["digest"]
    forwards = seen["seen"]
    assert forwards == [[rows, frames * 6] for frames, rows in PLAN]  # what the blocks ran on
    windows = [r for r in records if r["kind"] == "train_window"]
    assert [(w["step_first"], w["step_last"]) for w in windows] == [(0, 1), (2, 3)]
    # docs/DIFFERENCES.md's figures
    assert [w["throughput"]["tokens"] for w in windows] == [14.5, 9.0]
    for window in windows:
        t = window["throughput"]
        steps = [forwards[2 * s: 2 * s + 2] for s in range(window["step_first"],
                                                           window["step_last"] + 1)]
        # Tokens per sample: each step's mean over its samples, the window's mean of those.
        lengths = [sum(n * tokens for n, tokens in step) / sum(n for n, _ in step)
                   for step in steps]
        assert t["tokens"] == pytest.approx(sum(lengths) / len(lengths), rel=1e-12)
        work = sum(n * (2.0 * t["params"] * tokens + 4.0 * seen["widths"] * tokens ** 2)
                   for step in steps for n, tokens in step)
        assert t["flops_per_step"] == pytest.approx(t["flops_coef"] * work / len(steps),
                                                    rel=1e-9)
        assert "effective_fwd" not in t
    if "reference" in results:
        reference = [r for r in results["reference"][0] if r["kind"] == "train_window"]
        # Every micro-step at the first one's length, read as (B, C, F, H, W): C=4 frames.
        assert [w["throughput"]["tokens"] for w in reference] == [24.0, 24.0]
        assert results["reference"][1]["digest"] == seen["digest"]


# ---- the start lines -------------------------------------------------------------------------


def test_the_start_lines_say_what_is_measured(tmp_path):
    proc = run_python("""
        import diffusers, vxperf
        vxperf.install()
        vxperf.install_training()
        base = diffusers.DiffusionPipeline
        present = [c for c in vxperf.integrations.diffusers.subclasses(base)
                   if getattr(c.__dict__.get("__call__"), "_vxperf_wrapped", False)]
        print(len(present))

        class LaterPipeline(base):  # defined after install(): measured as well
            def __call__(self):
                return 1

        print(getattr(LaterPipeline.__call__, "_vxperf_wrapped", False))
        LaterPipeline()()
    """, env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(tmp_path / "r.jsonl")))
    present, later = proc.stdout.split()
    assert later == "True"
    # A new user read "on 0 pipeline classes" (diffusers defines its pipelines as they are first
    # named) while every call was measured: the line says what is measured, the call that ran.
    noun = "class" if present == "1" else "classes"
    so_far = f"{present} {noun} wrapped so far, and " if present != "0" else ""
    assert ("inference metrics enabled (level 1): each pipeline call is measured as a request as "
            f"it runs ({so_far}each DiffusionPipeline subclass wrapped as it is defined)"
            ) in proc.stderr, proc.stderr
    assert "0 pipeline classes" not in proc.stderr
    assert [r["kind"] for r in read_records(tmp_path / "r.jsonl")] == ["request"]
    assert ("training metrics enabled (level 1) on 10 accelerate methods and 0 model classes "
            "(0 non-model classes skipped), reporting every 50 steps (accelerate: "
            "Accelerator.__init__, Accelerator.accumulate, Accelerator.backward, "
            "Accelerator.clip_grad_norm_, "
            "Accelerator.prepare, Accelerator.maybe_context_parallel, Accelerator.end_training, "
            "Accelerator.save_state, Accelerator.load_state, AcceleratedOptimizer.step; "
            "checkpoints: torch.distributed.checkpoint.save, torch.distributed.checkpoint.load, "
            "torch.save, safetensors.torch.save_file, ModelMixin.save_pretrained, "
            "PreTrainedModel.save_pretrained)") in proc.stderr, proc.stderr


def test_the_start_line_without_diffusers(tmp_path):
    """With no diffusers, the line counts the classes install() was given, or says how to name
    them when there are none."""
    source = """
        import sys
        sys.modules["diffusers"] = None  # not installed
        import vxperf

        class MyPipeline:
            components = {}

            def __call__(self):
                return 1

        vxperf.install(%s)
        MyPipeline()()
    """
    records = tmp_path / "r.jsonl"
    proc = run_python(source % "pipelines=MyPipeline",
                      env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(records)))
    assert ("inference metrics enabled (level 1): each pipeline call is measured as a request as "
            "it runs (1 class wrapped)") in proc.stderr, proc.stderr
    assert [r["kind"] for r in read_records(records)] == ["request"]
    proc = run_python(source % "",
                      env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(tmp_path / "none.jsonl")))
    assert ("inference metrics enabled (level 1): no pipeline class found to measure: name yours "
            "with install(pipelines=...) or vxperf.instrument_pipeline(pipe)") in proc.stderr, \
        proc.stderr


# ---- what the probes must never do ------------------------------------------------------------


def test_a_copied_model_computes_with_its_own_weights(tmp_path):
    # An EMA model is a deep copy of a watched one: its probes must call the copy.
    proc = run_python("""
        import copy, torch, vxperf
        import tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        pipe("a cat")
        original = pipe.transformer
        ema = copy.deepcopy(original)
        for p in ema.parameters():
            p.data.mul_(0.5)
        plain = copy.deepcopy(ema)
        for module in plain.modules():
            module.__dict__.pop("_call_impl", None)  # no probes: the copy as torch runs it
        x = torch.randn(1, 4, 2, 4, 4)
        context, t = torch.randn(1, 12, 16), torch.ones(1)
        with torch.no_grad():
            a, b, c = (m(x, t, context, 8) for m in (original, ema, plain))
        probe = ema.blocks[0].__dict__["_call_impl"]
        print(probe.__wrapped__.__self__ is ema.blocks[0], torch.equal(b, c),
              torch.equal(a, b))
    """, env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(tmp_path / "r.jsonl")))
    assert proc.stdout.split() == ["True", "True", "False"]


def test_a_call_whose_probes_were_replaced_is_priced_from_its_inputs(tmp_path):
    # The blocks replaced between two calls (as a late wrapper would): the call in which no probe
    # ran is not taken for a cache hit; the next call is watched again. A call that ran no block
    # with the probes in place is one.
    records, seen = run(tmp_path, "vxperf", """
import tiny_models as tm

model = tm.WanTransformer3DModel()
perf.declare_model("transformer", model)
forward = perf.timed("transformer")(lambda m, x, t, c, n, run=True: m(x, t, c, n) if run else x)
x, t, c = torch.randn(2, 4, 2, 4, 4), torch.ones(2), torch.randn(2, 12, 16)
with torch.no_grad(), perf.request():
    forward(model, x, t, c, 8)
    model.blocks = torch.nn.ModuleList(tm.WanBlock(32, 2) for _ in model.blocks)
    forward(model, x, t, c, 8)  # the old probes see nothing: priced from its inputs
    forward(model, x, t, c, 8)  # watched again
    forward(model, x, t, c, 8, run=False)  # no block ran, probes in place: skipped
print(json.dumps({"watched": type(model.__dict__.get("_vxperf_watch")).__name__}))
""")
    (record,) = records
    assert record["stages"]["transformer"]["count"] == 4
    assert record["dit"]["effective_fwd"] == 3.0 and record["dit"]["skipped_fwd"] == 1
    assert seen["watched"] == "BlockWatch"


# ---- a partial forward's attention share: VACE's context blocks ---------------------------------

VACE = """
from torch import nn
import tiny_models as tm
tiny_wan = tm.tiny_wan


class VaceLike(tm.WanTransformer3DModel):
    # VACE's shape: context blocks beside the main ones, here of another mix (a wider feed-forward
    # over the same attention widths), whose hints the main blocks add; a cache may skip the main
    # blocks and still run the context blocks.
    def __init__(self):
        super().__init__()
        self.vace_blocks = nn.ModuleList([tiny_wan.Block(32, 2, ffn=8)])

    def forward(self, x, t, context, seq_len, skip_main=False):
        tokens, context = self.embed(x, t, context, seq_len)
        hints = [block(tokens, context) for block in self.vace_blocks]
        if not skip_main:
            for block in self.blocks:
                tokens = block(tokens, context) + hints[0]
        return self.unpatch(tokens, x.shape)


model = VaceLike()
perf.declare_model("transformer", model)
forward = perf.timed("transformer")(lambda m, *args, **kw: m(*args, **kw))
x, t, c = torch.randn(1, 4, 2, 4, 4), torch.ones(1), torch.randn(1, 12, 16)
with torch.no_grad():
    for skip in (False, True):
        with perf.request():
            forward(model, x, t, c, 8, skip_main=skip)
size = lambda m: sum(p.numel() for p in m.parameters())
print(json.dumps({"params": size(model), "main": [size(b) for b in model.blocks],
                  "vace": [size(b) for b in model.vace_blocks]}))
"""


def test_a_partial_forward_prices_its_attention_at_what_ran_of_it(tmp_path):
    # One request runs everything, the next only the context block (the main blocks skipped):
    # that call's FLOPs are the context block's share of the blocks' work, its attention share
    # that of the context block's attention (a third of the widths) against that work; the full
    # call's attention share is the model's.
    (full, partial), sizes = run(tmp_path, "vxperf", VACE)
    params, tokens, text, width = sizes["params"], 8, 12, 32  # seq_len 8, text_len 12, dim 32
    blocks = sizes["main"] + sizes["vace"]
    linear = 2.0 * params * tokens
    attention = 4.0 * tokens * tokens * width * 3 + 4.0 * tokens * text * width * 3
    assert full["dit"]["flops_per_fwd"] == linear + attention
    assert full["dit"]["attn_share"] == pytest.approx(attention / (linear + attention))
    # what ran: the context block's share of the linear term by its size, of the attention by its
    # widths (one block of three)
    ran = linear * sizes["vace"][0] / sum(blocks) + attention / 3
    dit = partial["dit"]
    assert dit["effective_fwd"] == pytest.approx(ran / (linear + attention))
    assert dit["attn_share"] == pytest.approx((attention / 3) / ran)
    assert dit["attn_share"] < 0.75 * full["dit"]["attn_share"]  # it was the full call's


# ---- cross-attention at the text the calls received ---------------------------------------------

WAN_TEXT = """
import real_models as rm

pipe = perf.instrument_pipeline(rm.wan()) if perf else rm.wan()
assert not hasattr(pipe.transformer, "text_len")  # as diffusers builds it: no length advertised
pipe("a cat runs", **rm.WAN_CALL)
t = pipe.transformer
print(json.dumps({"params": sum(p.numel() for p in t.parameters()),
                  "self": sum(b.attn1.to_q.out_features for b in t.blocks),
                  "cross": sum(b.attn2.to_q.out_features for b in t.blocks),
                  "text": rm.TEXT_LEN}))
"""


def test_cross_attention_is_priced_at_the_text_the_calls_received(tmp_path):
    # diffusers' Wan says no text length; its calls hand its cross-attention the prompt's
    # embeddings (max_sequence_length of them): vxperf reads their length there, where the
    # reference (which reads `text_len` only) prices no cross-attention at all.
    records, model = run(tmp_path, "vxperf", WAN_TEXT)
    (record,) = records
    dit = record["dit"]
    tokens = dit["tokens"]
    linear = 2 * model["params"] * tokens
    attention = 4 * tokens * tokens * model["self"] + 4 * tokens * model["text"] * model["cross"]
    assert dit["flops_per_fwd"] == (linear + attention) * dit["batch"]
    assert dit["attn_share"] == pytest.approx(attention / (linear + attention))
    if HAVE_REFERENCE:
        reference, _ = run(tmp_path, "reference", WAN_TEXT)
        cross = 4 * tokens * model["text"] * model["cross"] * dit["batch"]
        assert reference[0]["dit"]["flops_per_fwd"] == dit["flops_per_fwd"] - cross
