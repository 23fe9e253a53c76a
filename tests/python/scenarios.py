#!/usr/bin/python3
"""Runs one inference scenario under the reference module or under vxperf, in this process.

    /usr/bin/python3 scenarios.py --impl vxperf|reference --scenario NAME --out RESULT.json
        [--reference PATH/seed_perf.py]

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
}

DIT_KEYS = ("params", "tokens", "batch", "devices", "flops_per_fwd", "attn_share", "peak_tflops")


def default_reference():
    return os.environ.get("VXPERF_REFERENCE") or os.path.join(
        REPO, "..", "shared", "reference", "seed_perf.py")


def normalize(record):
    """The fields of a record that do not depend on timing."""
    out = {key: record[key] for key in ("kind", "rank", "world_size", "req", "warmup")}
    out["stages"] = {name: stage["count"] for name, stage in sorted(record["stages"].items())}
    dit = record.get("dit")
    out["dit"] = None if dit is None else {key: dit.get(key) for key in DIT_KEYS}
    out["device"] = record.get("device")
    return out


# ---- the reference on torch 1.x -----------------------------------------------------------------


def emulate_kwargs_hooks():
    """Lets `register_forward_pre_hook(hook, with_kwargs=True)` (torch 2.x) work on torch 1.x by
    wrapping the instance's forward. Only the reference runs with this."""
    import torch

    if int(torch.__version__.split(".")[0]) >= 2:
        return
    module_cls = torch.nn.Module
    plain_pre = module_cls.register_forward_pre_hook
    plain_post = module_cls.register_forward_hook

    def hooks_of(module):
        hooks = module.__dict__.get("_emulated_kwargs_hooks")
        if hooks is None:
            hooks = {"pre": [], "post": []}
            module.__dict__["_emulated_kwargs_hooks"] = hooks
            inner = module.forward

            def forward(*args, **kwargs):
                for hook in hooks["pre"]:
                    changed = hook(module, args, kwargs)
                    if changed is not None:
                        args, kwargs = changed
                output = inner(*args, **kwargs)
                for hook in hooks["post"]:
                    changed = hook(module, args, kwargs, output)
                    if changed is not None:
                        output = changed
                return output

            module.forward = forward
        return hooks

    def register_pre(self, hook, *, prepend=False, with_kwargs=False):
        if not with_kwargs:
            return plain_pre(self, hook)
        hooks_of(self)["pre"].append(hook)

    def register_post(self, hook, *, prepend=False, with_kwargs=False):
        if not with_kwargs:
            return plain_post(self, hook)
        hooks_of(self)["post"].append(hook)

    module_cls.register_forward_pre_hook = register_pre
    module_cls.register_forward_hook = register_post


def load(impl, reference_path):
    if impl == "vxperf":
        import vxperf

        return vxperf
    emulate_kwargs_hooks()
    spec = importlib.util.spec_from_file_location("seed_perf", reference_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- scenarios ------------------------------------------------------------------------------------


def run_wan(perf, notes):
    import torch
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.wan_pipeline())
    pipe("a cat surfing", frames=5, steps=4)
    image = torch.rand(1, 3, 9, 24, 16)
    pipe("a dog", frames=9, height=24, width=16, steps=3, image=image)


def run_diffusers(perf, notes):
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.diffusers_pipeline())
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

    outer = tm.diffusers_pipeline()
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


def run_settings(perf, notes):
    import tiny_models as tm

    pipe = perf.instrument_pipeline(tm.diffusers_pipeline())
    pipe("settings", steps=2)


RUNNERS = {name: globals()[f"run_{name}"] for name in SCENARIOS}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("vxperf", "reference"), required=True)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reference", default=default_reference())
    args = parser.parse_args()

    for key in list(os.environ):
        if key.startswith("VIDEOX_PERF") or key in ("RANK", "WORLD_SIZE"):
            del os.environ[key]
    records_path = os.path.join(tempfile.mkdtemp(prefix="vxperf-scenario-"), "records.jsonl")
    os.environ["VIDEOX_PERF_JSON"] = records_path
    os.environ.update(SCENARIOS[args.scenario])

    perf = load(args.impl, args.reference)
    notes = []
    RUNNERS[args.scenario](perf, notes)
    records = []
    if os.path.exists(records_path):
        with open(records_path) as handle:
            records = [json.loads(line) for line in handle if line.strip()]
    result = {
        "scenario": args.scenario,
        "records": sorted((normalize(r) for r in records), key=lambda r: (r["kind"], r["req"])),
        "notes": notes,
    }
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main()
