"""The dtype a record is priced in is what the matmuls ran in (#48), read where the work runs.

Written the way memory-saving modes are: VideoX-Fun's `qfloat8` mode (its CogVideoX-Fun, Z-Image,
Flux2, LTX and HunyuanVideo scripts; quantized-storage libraries do the same) stores a
transformer's weights in fp8 and, at each layer's call, casts the layer and its inputs to bf16,
computes, and casts the weights back; accelerate's mixed precision enters autocast inside the
model's forward, where a timer around the call cannot see it. The truth each test holds the
records to is what the test's own Linear layers saw at their matmul."""
import json

from conftest import clean_env, read_records, run_python

# The fp8 storage mode: every weight of the transformer stored in fp8 but for the modules whose
# names hold "embedding" (as such scripts leave their embeddings), each layer with a weight cast
# to bf16 with its inputs for its own call and back to fp8 after it. What each layer computes in
# is counted there.
FP8_STORAGE = """
import collections, json, torch, vxperf
import tiny_models as tm

seen = collections.Counter()

def store_in_fp8(model):
    for name, module in model.named_modules():
        if "embedding" in name:
            continue
        for param in module.parameters(recurse=False):
            param.data = param.data.to(torch.float8_e4m3fn)

def cast_per_layer(model, compute):
    for name, module in model.named_modules():
        if name == "" or getattr(module, "weight", None) is None:
            continue
        inner = module.forward

        def forward(*inputs, _module=module, _inner=inner, **kwargs):
            stored = _module.weight.dtype
            _module.to(compute)
            try:
                cast = [x.to(compute) if torch.is_tensor(x) else x for x in inputs]
                seen[f"{cast[0].dtype} x {_module.weight.dtype}"] += 1  # what the layer computes
                return _inner(*cast, **kwargs)
            finally:
                _module.to(stored)

        module.forward = forward

pipe = tm.wan_pipeline()
store_in_fp8(pipe.transformer)
store_in_fp8(pipe.transformer_2)
cast_per_layer(pipe.transformer, torch.bfloat16)
cast_per_layer(pipe.transformer_2, torch.bfloat16)
vxperf.instrument_pipeline(pipe)
pipe("a cat", steps=2)
weights = collections.Counter(str(p.dtype) for p in pipe.transformer.parameters())
print(json.dumps({"seen": seen, "weights": weights}))
"""


def test_fp8_stored_weights_cast_per_layer_are_priced_in_the_dtype_they_ran_in(tmp_path):
    records = tmp_path / "r.jsonl"
    proc = run_python(FP8_STORAGE, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records,
                                                 VIDEOX_PERF_PEAK_TFLOPS=1))
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    # every layer of the transformers
    assert set(truth["seen"]) == {"torch.bfloat16 x torch.bfloat16"}, truth
    assert truth["weights"]["torch.float8_e4m3fn"] > truth["weights"].get("torch.float32", 0)
    (record,) = read_records(records)
    dit = record["dit"]
    # bf16 is the reference's assumption and so not written; the storage is said beside it
    assert "dtype" not in dit and dit["weights_dtype"] == "fp8", dit


# A model kept in fp32 whose forward enters autocast itself (accelerate's mixed precision wraps
# the prepared model's forward so): the call's inputs are fp32 and no autocast is on around the
# call, yet every matmul runs in bf16. Timed as the trained forward, with explicit scopes for the
# rest of the step.
AUTOCAST_INSIDE = """
import collections, json, torch, vxperf
import tiny_models as tm

seen = collections.Counter()
model = tm.WanTransformer3DModel()
for module in model.modules():
    if isinstance(module, torch.nn.Linear):
        module.register_forward_pre_hook(
            lambda m, args: seen.update([str(torch.get_autocast_dtype("cpu"))
                                         if torch.is_autocast_enabled("cpu")
                                         else str(args[0].dtype)]))
plain_forward = model.forward

def forward(*args, **kwargs):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return plain_forward(*args, **kwargs)

model.forward = forward
vxperf.register_model(model)
vxperf.instrument_module(model, "fwd")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
x, context = torch.randn(1, 4, 2, 4, 4), torch.randn(1, 12, 16)
for step in range(2):
    with vxperf.micro_step():
        loss = model(x=x, t=torch.tensor([1.0]), context=context, seq_len=8).float().mean()
        with vxperf.backward():
            loss.backward()
        with vxperf.optimizer_step(optimizer):
            optimizer.step()
            optimizer.zero_grad()
vxperf.finish()
print(json.dumps({"seen": seen}))
"""


def test_autocast_entered_inside_the_forward_prices_the_step_in_its_dtype(tmp_path):
    records = tmp_path / "r.jsonl"
    proc = run_python(AUTOCAST_INSIDE, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records,
                                                     VIDEOX_PERF_EVERY=2,
                                                     VIDEOX_PERF_PEAK_TFLOPS=1))
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(truth["seen"]) == {"torch.bfloat16"}
    (window,) = [r for r in read_records(records) if r["kind"] == "train_window"]
    t = window["throughput"]
    assert "dtype" not in t and t["weights_dtype"] == "fp32", t
