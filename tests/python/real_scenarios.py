#!/usr/bin/env python3
"""Runs one scenario on the real diffusers, transformers and accelerate, under the reference
module, under vxperf, or unmeasured, in this process.

    python real_scenarios.py --impl vxperf|reference|none --scenario NAME --out RESULT.json
        [--reference PATH/seed_perf.py]

Needs torch 2 and the pinned releases of the test environment (scripts/setup.sh). The pipelines
are real_models.py's tiny ones; each implementation instruments them with its own entry points
(`instrument_pipeline`, `install_training`). RESULT.json holds the records reduced to their
non-timing fields (scenarios.normalize, compared between the implementations), the fields only
vxperf writes (`extras`: dtype, peak, skipped forwards), a digest of every output and of the
trained weights (equal with and without measuring), and what the scenario observed (`notes`).
Each scenario runs in a fresh process: both implementations keep process-wide state."""

import argparse
import hashlib
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenarios  # noqa: E402  (normalize, default_reference)

# The framework the reference belongs to, re-exporting the real libraries' classes, so that its
# install_training() finds `videox_fun.models` (and vxperf's does, as it would in that framework).
FRAMEWORK = os.path.join(HERE, "framework_real")

# name -> VIDEOX_PERF* settings (besides VIDEOX_PERF=1 and VIDEOX_PERF_JSON)
SCENARIOS = {
    "t2v": {},
    "i2v": {},
    "offload": {},
    "hooks": {},
    "adapters": {},
    "compile": {},
    # a measured-peak cache with different CPU peaks per dtype (written by the runner)
    "autocast": {"VIDEOX_PERF_PEAK_TFLOPS": "auto"},
    "errors": {},
    "train_bf16": {"VIDEOX_PERF_EVERY": "2", "VIDEOX_PERF_PEAK_TFLOPS": "auto"},
}
# What the autocast scenarios' cache says this CPU does, per dtype.
CACHED_PEAKS = {"fp32": 1.5, "bf16": 6.0}


class Recorder:
    """What a scenario reports besides the records: output digests and notes."""

    def __init__(self):
        self.digests = []
        self.notes = []

    def output(self, result):
        import torch

        frames = getattr(result, "frames", result)
        if hasattr(frames, "numpy") and not torch.is_tensor(frames):
            frames = frames.numpy()
        tensor = torch.as_tensor(frames) if not torch.is_tensor(frames) else frames
        self.digests.append(digest(tensor))
        return result


def digest(*tensors):
    import torch

    h = hashlib.sha256()
    for tensor in tensors:
        h.update(tensor.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes()
                 if tensor.dtype != torch.bool else tensor.numpy().tobytes())
    return h.hexdigest()[:16]


def instrument(perf, pipe):
    return perf.instrument_pipeline(pipe) if perf is not None else pipe


def wan_call(pipe, rec, prompt="a cat runs on the beach", **overrides):
    import real_models as rm

    call = dict(rm.WAN_CALL, negative_prompt="blue snow")
    call.update(overrides)
    return rec.output(pipe(prompt=prompt, **call))


# ---- scenarios -----------------------------------------------------------------------------------


def run_t2v(perf, rec):
    """Wan text-to-video with guidance on and off, batched prompts with several videos each, a
    transformer swapped between requests; CogVideoX."""
    import real_models as rm

    pipe = instrument(perf, rm.wan())
    wan_call(pipe, rec)
    wan_call(pipe, rec, guidance_scale=1.0)  # guidance off: one transformer call per step
    wan_call(pipe, rec, prompt=["a cat", "a red dog"], negative_prompt=["blue", "snow"],
             num_videos_per_prompt=2)
    pipe.transformer = rm.wan_transformer(layers=3, seed=1)  # hooked at the next request
    wan_call(pipe, rec)
    cog = instrument(perf, rm.cogvideox())
    rec.output(cog("a dog runs in the city at night", negative_prompt="blue", **rm.COG_CALL))


def run_i2v(perf, rec):
    """Wan 2.2-style image-to-video: two experts split at the boundary, the image VAE-encoded."""
    import real_models as rm

    pipe = instrument(perf, rm.wan22_i2v())
    for seed in (0, 1):
        wan_call(pipe, rec, image=rm.image(seed), prompt="a cat jumps in slow motion")


def run_offload(perf, rec):
    """Model CPU offload enabled after instrumenting and before it (diffusers re-applies its
    hooks after every call), and accelerate's own hooks: dispatch_model with a device map,
    cpu_offload, hooks added and removed between requests. On the CPU the offload moves nothing;
    the hooks and their re-application are the real ones."""
    import torch
    import real_models as rm
    from accelerate import cpu_offload, dispatch_model
    from accelerate.hooks import (AlignDevicesHook, add_hook_to_module, attach_align_device_hook,
                                  remove_hook_from_module)

    first = instrument(perf, rm.wan())
    first.enable_model_cpu_offload(device="cpu")
    for _ in range(3):
        wan_call(first, rec)
    second = rm.wan()
    second.enable_model_cpu_offload(device="cpu")
    instrument(perf, second)
    for _ in range(3):
        wan_call(second, rec)
    third = rm.wan()
    dispatch_model(third.transformer, device_map={"": "cpu"})
    instrument(perf, third)
    wan_call(third, rec)
    add_hook_to_module(third.transformer, AlignDevicesHook(execution_device="cpu",
                                                           io_same_device=True), append=True)
    attach_align_device_hook(third.transformer, execution_device=torch.device("cpu"))
    wan_call(third, rec)
    remove_hook_from_module(third.transformer, recurse=True)
    wan_call(third, rec)
    fourth = instrument(perf, rm.wan())
    wan_call(fourth, rec)
    cpu_offload(fourth.transformer, execution_device=torch.device("cpu"))
    wan_call(fourth, rec)


def run_hooks(perf, rec):
    """diffusers' hook registry between requests: first-block cache on and off, group offloading,
    layerwise casting (fp8 storage, fp32 compute)."""
    import torch
    import real_models as rm
    from diffusers.hooks import FirstBlockCacheConfig

    pipe = instrument(perf, rm.wan())
    if perf is not None and hasattr(perf, "track_cache"):
        rec.notes.append(f"track_cache {perf.track_cache(pipe.transformer)}")
    wan_call(pipe, rec)
    pipe.transformer.enable_cache(FirstBlockCacheConfig(threshold=0.9))
    wan_call(pipe, rec)
    pipe.transformer.disable_cache()
    wan_call(pipe, rec)
    grouped = instrument(perf, rm.wan())
    grouped.transformer.enable_group_offload(onload_device=torch.device("cpu"),
                                             offload_device=torch.device("cpu"),
                                             offload_type="block_level", num_blocks_per_group=1)
    wan_call(grouped, rec)
    cast = rm.wan()
    cast.transformer.enable_layerwise_casting(storage_dtype=torch.float8_e4m3fn,
                                              compute_dtype=torch.float32)
    instrument(perf, cast)
    wan_call(cast, rec)


def run_adapters(perf, rec):
    """A LoRA adapter injected (peft) between requests, fused, unfused and deleted."""
    import real_models as rm
    from peft import LoraConfig

    pipe = instrument(perf, rm.wan())
    wan_call(pipe, rec)
    pipe.transformer.add_adapter(LoraConfig(r=2, lora_alpha=2,
                                            target_modules=["to_q", "to_k", "to_v"]),
                                 adapter_name="style")
    wan_call(pipe, rec)
    pipe.transformer.fuse_lora()
    wan_call(pipe, rec)
    pipe.transformer.unfuse_lora()
    pipe.transformer.delete_adapters("style")
    wan_call(pipe, rec)


def run_compile(perf, rec):
    """torch.compile: a compiled transformer swapped in after instrumenting, and one compiled in
    place (Module.compile) before."""
    import torch
    import real_models as rm

    pipe = instrument(perf, rm.wan())
    wan_call(pipe, rec, output_type="latent")
    pipe.transformer = torch.compile(pipe.transformer, backend="eager")
    for _ in range(2):
        wan_call(pipe, rec, output_type="latent")
    second = rm.wan()
    second.transformer.compile(backend="eager")
    instrument(perf, second)
    for _ in range(2):
        wan_call(second, rec, output_type="latent")
    # Compiled models are never probed (a probe would break their graphs).
    from torch._dynamo.utils import counters

    original = getattr(pipe.transformer, "_orig_mod", pipe.transformer)
    probed = [type(b.__dict__.get("_call_impl")).__name__ == "BlockProbe"
              for model in (original, second.transformer) for b in model.blocks]
    rec.notes.append(f"probed {any(probed)}, graph breaks {sum(counters['graph_break'].values())}")


def run_autocast(perf, rec):
    """Requests under CPU autocast (bf16) and without: the matmuls' dtype prices the call."""
    import torch
    import real_models as rm

    pipe = instrument(perf, rm.wan())
    wan_call(pipe, rec)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        wan_call(pipe, rec)
    wan_call(pipe, rec)


def run_errors(perf, rec):
    """An exception inside a transformer block at the third call, and one inside the VAE."""
    import real_models as rm

    pipe = instrument(perf, rm.wan())
    calls = {"n": 0}

    def fail_third(module, args):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("block failed at call 3")

    def fail_decode(module, args):
        raise ValueError("decoder failed")

    def call_failing(module, hook, raised):
        """A call with `hook` before `module`'s forward, noting the `raised` error it meets."""
        handle = module.register_forward_pre_hook(hook)
        try:
            wan_call(pipe, rec)
        except raised as error:
            rec.notes.append(f"raised {error}")
        handle.remove()

    call_failing(pipe.transformer.blocks[1], fail_third, RuntimeError)
    call_failing(pipe.vae.decoder, fail_decode, ValueError)
    wan_call(pipe, rec)


def run_train_bf16(perf, rec):
    """A LoRA-free training loop through the real accelerate under bf16 mixed precision: gradient
    accumulation, clipping, gradient checkpointing, a DataLoader with a worker process."""
    import torch
    import real_models as rm
    from accelerate import Accelerator

    torch.manual_seed(0)
    model = rm.wan_transformer()
    model.text_len = 8  # the text below
    model.enable_gradient_checkpointing()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = [torch.randn(16, 2, 8, 8) for _ in range(12)]
    loader = torch.utils.data.DataLoader(data, batch_size=2, num_workers=1)
    accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2, cpu=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    text = torch.randn(2, 8, 16)
    for latents in loader:
        rm.accelerate_micro_step(accelerator, model, optimizer, latents, text)
    weights = accelerator.unwrap_model(model).state_dict()
    rec.digests.append(digest(*(weights[k] for k in sorted(weights))))
    if perf is not None:
        finish = getattr(perf, "finish", None) or perf._TRAIN.finish
        finish()


RUNNERS = {name: globals()[f"run_{name}"] for name in SCENARIOS}


# ---- the implementations -------------------------------------------------------------------------


def load(impl, reference_path):
    """vxperf, the reference module (loaded as its framework's videox_fun.utils.seed_perf), or
    None for an unmeasured run."""
    if impl == "none":
        return None
    sys.path.insert(0, FRAMEWORK)
    return scenarios.load(impl, reference_path)


def extras(record):
    """What vxperf records beyond the reference: the dtype a price is in and its peak."""
    part = record.get("dit") if record["kind"] == "request" else record.get("throughput")
    if not part:
        return None
    return {"dtype": part.get("dtype", "bf16"), "peak_tflops": part.get("peak_tflops"),
            "peak_source": part.get("peak_source", "table"), "mfu": part.get("mfu"),
            "skipped_fwd": part.get("skipped_fwd"), "effective_fwd": part.get("effective_fwd")}


def write_peak_cache(folder):
    """A measured-peak cache holding this CPU's peaks per dtype, in vxperf's own format."""
    import vxperf._peak as peak

    key = peak.device_key(-1)
    entries = [{"device": key, "dtype": dtype, "tflops": tflops, "n": 512, "gemms": 4,
                "seconds": 0.1, "by": "tests", "ts": 0} for dtype, tflops in CACHED_PEAKS.items()]
    path = os.path.join(folder, "vxperf", "peaks.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump({"format": "vxperf-peaks", "version": 1, "peaks": entries}, handle)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("vxperf", "reference", "none"), required=True)
    parser.add_argument("--scenario", choices=sorted(RUNNERS), required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reference", default=scenarios.default_reference())
    args = parser.parse_args()

    for key in list(os.environ):
        if key.startswith("VIDEOX_PERF") or key in ("RANK", "WORLD_SIZE"):
            del os.environ[key]
    folder = tempfile.mkdtemp(prefix="vxperf-real-")
    records_path = os.path.join(folder, "records.jsonl")
    if args.impl != "none":
        os.environ.update({"VIDEOX_PERF": "1", "VIDEOX_PERF_JSON": records_path})
        os.environ.update(SCENARIOS[args.scenario])
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
    # The Wan transformers say their text length, as Wan's own code does: the reference cannot
    # read it off their calls, and without it prices no cross-attention (vxperf reads it off the
    # calls: test_work_that_ran.py checks that on the models as diffusers builds them).
    import real_models as rm

    rm.ADVERTISED_TEXT_LEN = rm.TEXT_LEN
    perf = load(args.impl, args.reference)
    if args.impl == "vxperf" and args.scenario in ("autocast", "train_bf16"):
        write_peak_cache(os.environ["XDG_CACHE_HOME"])
    if args.scenario.startswith("train") and perf is not None:
        perf.install_training()
    rec = Recorder()
    RUNNERS[args.scenario](perf, rec)
    records = []
    if os.path.exists(records_path):
        with open(records_path) as handle:
            records = [json.loads(line) for line in handle if line.strip()]
    records = [r for r in records if r["kind"] not in scenarios.VXPERF_KINDS]
    order = sorted(range(len(records)),
                   key=lambda i: (records[i]["kind"],
                                  records[i].get("req", records[i].get("step_first"))))
    result = {
        "scenario": args.scenario,
        "records": [scenarios.normalize(records[i]) for i in order],
        "extras": [extras(records[i]) for i in order],
        "digests": rec.digests,
        "notes": rec.notes,
    }
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main()
