#!/usr/bin/python3
"""Runs one inference scenario under the reference module or under vxperf, in this process.

    /usr/bin/python3 scenarios.py --impl vxperf|reference --scenario NAME --out RESULT.json
        [--reference PATH/seed_perf.py] [--real-accelerate]

Needs torch (Debian's python3-torch: /usr/bin/python3). The scenario's pipelines are built from
tiny_models.py and instrumented with the implementation's own `instrument_pipeline`; the records
it writes (VIDEOX_PERF_JSON) are reduced to their non-timing fields and written to RESULT.json with
what the scenario observed (exceptions that propagated, ...). Each scenario runs in a fresh process
because both implementations keep process-wide state (the request counter, the exit summary).

On torch < 2 the reference's `with_kwargs=True` forward hooks do not exist; they are emulated here,
for the reference only, by wrapping each hooked instance's forward (the pre-hook sees
(module, args, kwargs), the post-hook (module, args, kwargs, output)).
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

# name -> VIDEOX_PERF* settings of the scenario (besides VIDEOX_PERF_JSON)
SCENARIOS = {
    "wan": {},
    "diffusers": {"VIDEOX_PERF_WARMUP": "1"},
    "packed": {},
    "nested": {},
    "swap": {},
    "failing": {},
    "threads": {},
    "bad_input": {},
    "settings": {"VIDEOX_PERF_FLOPS_ATTN": "0", "VIDEOX_PERF_PEAK_TFLOPS": "100",
                 "VIDEOX_PERF_DIT_PARAMS": "123456789"},
    # rank 0 of 2: records to records.jsonl.rank0, parameters of a sharded model counted back
    "sharded": {"RANK": "0", "WORLD_SIZE": "2", "VIDEOX_PERF_PEAK_TFLOPS": "10"},
    # install() / install_training() over the stand-in framework packages (standins/)
    "install": {"VIDEOX_PERF": "1"},
    "train_full": {"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "2", "VIDEOX_PERF_WARMUP": "1",
                   "VIDEOX_PERF_TOTAL_STEPS": "10"},
    "train_lora": {"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "3", "VIDEOX_PERF_PEAK_TFLOPS": "50"},
}
# Scenarios run by vxperf alone, checked against another scenario's golden file: the explicit
# training API on a plain loop must record what the reference records through accelerate.
VXPERF_ONLY = {"train_explicit": ("train_full", SCENARIOS["train_full"])}
# Scenarios on the real accelerate (--real-accelerate), whose hooks run on torch 1.13 and 2. Their
# golden files are the reference's records on torch 2, where its module hooks are native: on torch
# 1.x the emulation of those hooks wraps `forward`, which accelerate's hook removal throws away.
REAL_ACCELERATE = {"accelerate_hooks": {}}
STANDINS = os.path.join(HERE, "standins")
# Record kinds vxperf writes and the reference does not (the training's final record): set aside
# before the two are compared, as the conformance comparison does.
VXPERF_KINDS = ("train_end",)

DIT_KEYS = ("params", "tokens", "batch", "devices", "flops_per_fwd", "attn_share", "peak_tflops")


# Where the reference is wrong against a truth (docs/DIFFERENCES.md):
# the fields it gets wrong, left out of comparisons and checked on their own (test_side_by_side).
PRICED = ("tokens", "flops_per_fwd", "flops_per_step", "attn_share")
REFERENCE_WRONG = {
    # the look-alike's whole parameters multiplied by 2 (test_sharded_counts_what_the_ranks_hold)
    "sharded": ("dit", None),
    # the text joined to the latents before the blocks: the reference prices the latents alone
    # (test_scenarios_cover_the_conventions)
    "packed": ("dit", PRICED),
    # micro-steps of two lengths priced at the first one's
    # (test_mixed_micro_steps_are_each_priced_at_their_own_length)
    "train_full": ("throughput", PRICED),
}


def comparable(name, result):
    """A scenario's result as the reference and vxperf must agree on it: the fields the reference
    gets wrong (REFERENCE_WRONG) left out."""
    if name not in REFERENCE_WRONG:
        return result
    part, fields = REFERENCE_WRONG[name]
    result = json.loads(json.dumps(result))
    for record in result["records"]:
        if fields is None:
            record.pop(part, None)
            record.pop("parallel", None)  # vxperf's own: the layout it priced with
        elif record.get(part):
            for field in fields:
                record[part].pop(field, None)
    return result


def default_reference():
    return os.environ.get("VXPERF_REFERENCE") or os.path.join(
        REPO, "..", "shared", "reference", "seed_perf.py")


THROUGHPUT_KEYS = ("samples", "dp", "params", "trainable", "tokens", "priced_steps", "flops_coef",
                   "flops_coef_hw", "flops_coef_reason", "flops_per_step", "attn_share", "devices",
                   "peak_tflops")


def normalize(record):
    """The fields of a record that do not depend on timing."""
    if record["kind"] == "train_window":
        keys = ("kind", "rank", "world_size", "step_first", "step_last", "steps",
                "warmup_excluded", "micro_steps")
        out = {key: record[key] for key in keys}
        out["phases"] = sorted(record["phases_s"])
        out["eta"] = "eta_s" in record
        throughput = record.get("throughput")
        out["throughput"] = None if throughput is None else {
            key: throughput.get(key) for key in THROUGHPUT_KEYS}
        out["device"] = record.get("device")
        return out
    out = {key: record[key] for key in ("kind", "rank", "world_size", "req", "warmup")}
    out["stages"] = {name: stage["count"] for name, stage in sorted(record["stages"].items())}
    dit = record.get("dit")
    out["dit"] = None if dit is None else {key: dit.get(key) for key in DIT_KEYS}
    out["device"] = record.get("device")
    return out


def load(impl, reference_path):
    if impl == "vxperf":
        import vxperf

        return vxperf
    # Loaded where it lives in its framework (videox_fun.utils), so that install() and
    # install_training() find `..pipeline` and `..models` (the stand-ins).
    import videox_fun.utils  # noqa: F401

    name = "videox_fun.utils.seed_perf"
    spec = importlib.util.spec_from_file_location(name, reference_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ---- scenarios -----------------------------------------------------------------------------------


def run_wan(perf, notes):
    import torch
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.wan_pipeline())
    pipe("a cat surfing", frames=5, steps=4)
    image = torch.rand(1, 3, 9, 24, 16)
    pipe("a dog", frames=9, height=24, width=16, steps=3, image=image)


def said_text_length(pipe):
    """The pipeline, its diffusers-style transformer saying the text length its calls receive
    (`text_len`, the tokenizer's 10): the reference reads no other (vxperf reads it off the calls
    where it is not said: test_work_that_ran.py)."""
    pipe.transformer.text_len = 10
    return pipe


def run_diffusers(perf, notes):
    import tiny_models as tm

    pipe = perf.instrument_pipeline(said_text_length(tm.diffusers_pipeline()))
    pipe("warmup", steps=2)
    pipe("a red balloon", frames=9, steps=3)
    pipe("streamed", steps=2, stream_decode=True)


def run_packed(perf, notes):
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.packed_pipeline())
    pipe("tokens", frames=5, steps=3)
    pipe("more tokens", frames=9, height=24, steps=2)


def run_nested(perf, notes):
    import tiny_models as tm

    outer = said_text_length(tm.diffusers_pipeline())
    inner = tm.UpsamplePipeline(latent_upsampler=tm.LatentUpsamplerModel(), vae=outer.vae)
    outer.upsampler = inner
    perf.instrument_pipeline(outer)
    perf.instrument_pipeline(inner)
    outer("nested", steps=2)  # one request: the inner call belongs to it
    import torch

    inner(torch.randn(1, 4, 2, 4, 4), roundtrip=True)  # on its own: a request of its own
    outer("nested again", steps=2)


def run_swap(perf, notes):
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.wan_pipeline())
    pipe("before", steps=2)
    # A different transformer after the pipeline was built (a new checkpoint, a sharded copy):
    # picked up at the next request start.
    pipe.transformer = tm.WanTransformer3DModel(dim=48, heads=4, layers=3)
    pipe("after", steps=2)


def run_failing(perf, notes):
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.wan_pipeline())
    pipe("fine", steps=2)
    pipe.transformer.calls = 0
    pipe.transformer.fail_on_call = 3
    try:
        pipe("broken", steps=4)
    except RuntimeError as error:
        notes.append(f"raised {type(error).__name__}: {error}")
    pipe.transformer.fail_on_call = None
    pipe("fine again", steps=2)


def run_threads(perf, notes):
    import tiny_models as tm

    barrier = tm.make_barrier(2)
    pipe = perf.instrument_pipeline(tm.wan_pipeline(barrier=barrier))
    errors = []

    def work(frames):
        try:
            pipe("threaded", frames=frames, steps=3)
        except Exception as error:  # reported below
            errors.append(repr(error))

    first = threading.Thread(target=work, args=(5,))
    second = threading.Thread(target=work, args=(9,))
    first.start()
    # The second request starts once the first is inside its text encoder: ids are in that order
    # and the two requests overlap (the barrier holds both text encoders until both are in).
    while barrier.n_waiting < 1:
        pass
    second.start()
    first.join()
    second.join()
    notes.extend(errors)


def run_bad_input(perf, notes):
    import torch
    import tiny_models as tm

    class Unreadable(tm.TinyPipeline):
        @property
        def components(self):
            raise RuntimeError("component not loaded")

        def __call__(self, x):
            return x * 2

    perf.instrument_pipeline(Unreadable())(torch.ones(2))

    class FourD(tm.TinyPipeline):
        component_names = ("transformer",)

        def __call__(self, x):
            return self.transformer(x)

    # a 4-D input is no layout the cost model knows: timed, not priced
    pipe = perf.instrument_pipeline(FourD(transformer=torch.nn.Conv2d(3, 3, 1)))
    pipe(torch.randn(1, 3, 4, 4))

    class NoAttention(tm.TinyPipeline):
        component_names = ("transformer",)

        def __call__(self, x):
            for _ in range(2):
                x = self.transformer(x)
            return x

    # no attention projections anywhere: priced from the linear layers alone
    pipe = perf.instrument_pipeline(NoAttention(transformer=torch.nn.Linear(8, 8)))
    pipe(torch.randn(2, 6, 8))
    notes.append("survived")


def run_sharded(perf, notes):
    import torch
    import tiny_models as tm

    class FullyShardedDataParallel(torch.nn.Module):
        """What FSDP looks like to the metrics: a wrapper holding `_fsdp_wrapped_module` that
        hands attribute reads on to it. (It keeps the whole model, not a shard, so the count comes
        out twice the model: what is checked is that both implementations scale by the world.)"""

        def __init__(self, module):
            super().__init__()
            self._fsdp_wrapped_module = module

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._fsdp_wrapped_module, name)

        def forward(self, *args, **kwargs):
            return self._fsdp_wrapped_module(*args, **kwargs)

    pipe = tm.wan_pipeline()
    pipe.transformer = FullyShardedDataParallel(pipe.transformer)  # before instrumenting
    perf.instrument_pipeline(pipe)
    pipe("sharded", steps=2)


def run_settings(perf, notes):
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.diffusers_pipeline())
    pipe("settings", steps=2)


def run_install(perf, notes):
    import torch
    import tiny_models as tm

    assert perf.install()
    from videox_fun.pipeline import WanFunPipeline, WanPipeline

    torch.manual_seed(0)
    parts = dict(tokenizer=tm.Tokenizer(), text_encoder=tm.TextEncoder(),
                 transformer=tm.WanTransformer3DModel(), transformer_2=tm.WanTransformer3DModel(),
                 vae=tm.VideoVAE(), scheduler=tm.FlowScheduler(1))
    WanPipeline(**parts)("installed", steps=2)
    WanFunPipeline(**parts)("subclass", frames=9, steps=2)


def train_loop(perf, lora=False, checkpointing=False, critic=False, steps=5, accumulation=2,
               explicit=False):
    """A flow-matching training loop over the framework's tiny Wan models: accelerate's (the
    stand-in) when explicit is False, plain PyTorch with vxperf's explicit scopes otherwise."""
    import torch
    import tiny_models as tm
    from videox_fun import models as vm

    torch.manual_seed(0)
    dit = vm.WanTransformer3DModel()
    vae = vm.AutoencoderKLWan()
    text_encoder = vm.WanT5EncoderModel()
    dit.gradient_checkpointing = checkpointing
    if lora:
        tm.add_lora(dit)
    trainable = [p for p in dit.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-3)
    judge = torch.nn.Linear(4, 1)
    judge_optimizer = torch.optim.SGD(judge.parameters(), lr=1e-2)
    tokenizer = tm.Tokenizer()
    if explicit:
        perf.register_model(dit)
        perf.instrument_module(vae)  # its encode/decode as vae_enc / vae_dec
        perf.instrument_module(dit)  # fwd, priced from seq_len
    else:
        from accelerate import Accelerator

        accelerator = Accelerator(gradient_accumulation_steps=accumulation, cpu=True)
        dit, optimizer = accelerator.prepare(dit, optimizer)
        if critic:
            judge, judge_optimizer = accelerator.prepare(judge, judge_optimizer)
    for step in range(steps):
        for micro in range(accumulation):
            last = micro == accumulation - 1
            # bucketed data: two clip lengths, so token counts differ between steps
            frames = 5 if (step + micro) % 2 == 0 else 9
            video = torch.rand(1, 3, frames, 16, 16)
            ids = tokenizer("a training caption", dit.text_len)
            scope = perf.micro_step() if explicit else accelerator.accumulate(dit)
            with scope:
                with torch.no_grad():
                    latents = vae.encode(video)
                    if explicit:
                        with perf.model_call("text_encoder"):
                            context = text_encoder(ids)
                    else:
                        context = text_encoder(ids)
                sigma = torch.rand(1)
                noise = torch.randn_like(latents)
                noisy = (1 - sigma) * latents + sigma * noise
                tokens = latents.shape[2] * (latents.shape[3] // 2) * (latents.shape[4] // 2)
                seq_len = 8 * -(-tokens // 8)
                pred = dit(x=noisy, t=sigma * 1000, context=context, seq_len=seq_len)
                loss = torch.nn.functional.mse_loss(pred, noise - latents)
                if explicit:
                    with perf.backward():
                        (loss / accumulation).backward()
                    tm.clip_and_step(perf, optimizer, trainable, last)
                else:
                    accelerator.backward(loss)
                    if accelerator.sync_gradients:
                        accelerator.clip_grad_norm_(trainable, 1.0)
                    optimizer.step()
                    optimizer.zero_grad()
                    if critic:  # a second optimizer: the first to close a step owns the boundary
                        judge(latents.mean(dim=(2, 3, 4)).detach()).sum().backward()
                        judge_optimizer.step()
                        judge_optimizer.zero_grad()


def run_train_full(perf, notes):
    assert perf.install_training()
    train_loop(perf, checkpointing=True)


def run_train_lora(perf, notes):
    assert perf.install_training()
    train_loop(perf, lora=True, critic=True, steps=6, accumulation=1)


def run_train_explicit(perf, notes):
    train_loop(perf, checkpointing=True, explicit=True)


def run_accelerate_hooks(perf, notes):
    """accelerate's hooks on the components between requests, in both orders: the model-offload
    cycle diffusers runs around every call (hooks removed, then added again), and a device hook
    added to a component already timed."""
    from accelerate import cpu_offload_with_hook
    from accelerate.hooks import AlignDevicesHook, add_hook_to_module, remove_hook_from_module
    import tiny_models as tm

    def offload(pipe):
        for name in ("text_encoder", "transformer"):
            cpu_offload_with_hook(getattr(pipe, name), "cpu")

    def unload(pipe):
        for name in ("text_encoder", "transformer"):
            remove_hook_from_module(getattr(pipe, name), recurse=True)

    first = perf.instrument_pipeline(tm.wan_pipeline())
    for _ in range(3):
        offload(first)
        first("a cat", steps=2)
        unload(first)
    second = tm.wan_pipeline()
    offload(second)
    perf.instrument_pipeline(second)
    for _ in range(3):
        second("a dog", steps=2)
        unload(second)
        offload(second)
    add_hook_to_module(second.transformer_2, AlignDevicesHook(io_same_device=True))
    second("a fox", steps=2)
    notes.append("survived")


RUNNERS = {name: globals()[f"run_{name}"]
           for name in list(SCENARIOS) + list(VXPERF_ONLY) + list(REAL_ACCELERATE)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("vxperf", "reference"), required=True)
    parser.add_argument("--scenario", choices=sorted(RUNNERS), required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reference", default=default_reference())
    parser.add_argument("--real-accelerate", action="store_true",
                        help="use the installed accelerate rather than the stand-in")
    args = parser.parse_args()

    for key in list(os.environ):
        if key.startswith("VIDEOX_PERF") or key in ("RANK", "WORLD_SIZE"):
            del os.environ[key]
    records_path = os.path.join(tempfile.mkdtemp(prefix="vxperf-scenario-"), "records.jsonl")
    os.environ["VIDEOX_PERF_JSON"] = records_path
    if args.scenario in SCENARIOS:
        settings = SCENARIOS[args.scenario]
    elif args.scenario in REAL_ACCELERATE:
        settings = REAL_ACCELERATE[args.scenario]
    else:
        settings = VXPERF_ONLY[args.scenario][1]
    os.environ.update(settings)
    if args.real_accelerate:
        import accelerate  # noqa: F401  (imported first: the stand-in cannot shadow it)
    sys.path.insert(0, STANDINS)

    perf = load(args.impl, args.reference)
    notes = []
    RUNNERS[args.scenario](perf, notes)
    records = []
    if not os.path.exists(records_path) and os.path.exists(records_path + ".rank0"):
        records_path += ".rank0"  # a world of several ranks: one file per rank
    if os.path.exists(records_path):
        with open(records_path) as handle:
            records = [json.loads(line) for line in handle if line.strip()]
    records = [r for r in records if r["kind"] not in VXPERF_KINDS]  # the reference has none
    result = {
        "scenario": args.scenario,
        "records": sorted((normalize(r) for r in records),
                          key=lambda r: (r["kind"], r.get("req", r.get("step_first")))),
        "notes": notes,
    }
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main()
