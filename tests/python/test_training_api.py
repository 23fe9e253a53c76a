"""The training side on plain PyTorch loops (no accelerate): the explicit scopes, model classes
named to install_training(), settling without a synchronize (over the fake CUDA driver), and the
records and raw trace read back by `vxperf report` and `vxperf replay`."""
import json
import math
import os
import re
import subprocess

import pytest

from conftest import CLI, FAKE_CUDA, clean_env, read_records, run_python

# A small flow-matching loop on the tiny Wan models, measured with the explicit scopes. The DiT's
# blocks are checkpointed; its `head` is instrumented as an aux call (nested in the forward: folded
# into fwd); the text encoder is re-run inside the backward (folded into bwd).
LOOP = """
import torch, vxperf
import tiny_models as tm

torch.manual_seed(0)
dit = tm.WanTransformer3DModel()
dit.gradient_checkpointing = True
vae = tm.VideoVAE()
text_encoder = tm.TextEncoder()
optimizer = torch.optim.AdamW(dit.parameters(), lr=1e-3)
vxperf.register_model(dit)
vxperf.instrument_module(dit)
vxperf.instrument_module(dit.head, "aux")
vxperf.instrument_module(vae, "vae")
vxperf.instrument_module(text_encoder)
ids = tm.Tokenizer()("a caption", dit.text_len)

def step(accumulation=2, frames=5):
    for micro in range(accumulation):
        last = micro == accumulation - 1
        with vxperf.micro_step():
            with torch.no_grad():
                latents = vae.encode(torch.rand(1, 3, frames, 16, 16))
            context = text_encoder(ids)
            tokens = latents.shape[2] * (latents.shape[3] // 2) * (latents.shape[4] // 2)
            seq_len = 8 * -(-tokens // 8)
            pred = dit(x=latents, t=torch.ones(1), context=context, seq_len=seq_len)
            loss = pred.pow(2).mean()
            with vxperf.backward():
                (loss / accumulation).backward()
                with vxperf.model_call("text_encoder"):  # inside the backward: folded into bwd
                    text_encoder(ids)
            tm.clip_and_step(vxperf, optimizer, dit.parameters(), last)
"""


def test_phases_partition_each_step(tmp_path):
    records = tmp_path / "records.jsonl"
    code = LOOP + """
for i in range(4):
    step(frames=5 if i % 2 else 9)
vxperf.finish()
"""
    run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=1, VIDEOX_PERF_JSON=records))
    windows = read_records(records)
    assert [w["step_first"] for w in windows] == [0, 1, 2, 3]
    for window in windows:
        phases = window["phases_s"]
        # nested calls (the DiT's head) and calls inside the backward fold into the outer phase
        assert sorted(phases) == ["bwd", "clip", "data", "fwd", "opt", "other", "prep",
                                  "text_encoder", "vae_enc"]
        assert all(seconds > 0 for seconds in phases.values())
        assert window["overrun_s"] == 0.0  # host-timed phases never overlap
        assert math.isclose(sum(phases.values()), window["step_s_p50"], rel_tol=1e-9)
        assert window["micro_steps"] == 2.0
        throughput = window["throughput"]
        assert throughput["samples"] == 2.0 and throughput["priced_steps"] == 1
        assert throughput["flops_coef_reason"] == (
            "full, ckpt on -> 3x/4x, attn from dims (4 modules)")
    assert [w["throughput"]["tokens"] for w in windows] == [16.0, 8.0, 16.0, 8.0]


@pytest.mark.skipif(not os.path.exists(FAKE_CUDA), reason="fake CUDA driver not built")
def test_settles_without_synchronize(tmp_path):
    """Device events are only polled: a step waits while its events are pending, is read off the
    host clock once two more steps have closed, and nothing ever synchronizes."""
    records = tmp_path / "records.jsonl"
    code = LOOP + f"""
import ctypes, json
from vxperf import _ext, _state
fake = ctypes.CDLL({FAKE_CUDA!r})
fake.fake_cuda_set_manual_completion(1)
assert _state.ensure_cuda(0, {FAKE_CUDA!r}, lambda d: (7 << 20, 9 << 20), lambda d: None)
vxperf.training_device(0, stream=0x77)
pending = []
for _ in range(5):
    step()
    pending.append(_ext.train_pending_steps())
fake.fake_cuda_complete_all()  # the device catches up: the next step close settles them
step()
pending.append(_ext.train_pending_steps())
vxperf.finish()
print(json.dumps(dict(pending=pending, syncs=fake.fake_cuda_syncs(0),
                      records=fake.fake_cuda_records(0))))
"""
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=2,
                                          VIDEOX_PERF_JSON=records))
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["pending"] == [1, 2, 2, 2, 2, 1]
    assert seen["syncs"] == 0 and seen["records"] > 0
    windows = read_records(records)
    assert [(w["step_first"], w["step_last"]) for w in windows] == [(0, 1), (2, 3), (4, 5)]
    for window in windows:
        assert window["device"] == "cuda:0" and window["peak_alloc_bytes"] == 7 << 20


def test_install_training_with_named_classes(tmp_path):
    """Model classes named to install_training() (or a module of them) are timed as the phase
    their names say, on a loop that opens only the micro-step, backward and optimizer scopes."""
    records = tmp_path / "records.jsonl"
    code = """
import sys
for absent in ("accelerate", "diffusers", "transformers"):  # installed in the torch 2 venv
    sys.modules[absent] = None
import torch, vxperf
import tiny_models as tm
assert vxperf.install_training(models=tm)  # every torch module class tiny_models defines
dit, vae, text_encoder = tm.WanTransformer3DModel(), tm.VideoVAE(), tm.TextEncoder()
vxperf.register_model(dit)
optimizer = torch.optim.SGD(dit.parameters(), lr=1e-3)
ids = tm.Tokenizer()("x", dit.text_len)
for _ in range(3):
    with vxperf.micro_step():
        with torch.no_grad():
            latents = vae.encode(torch.rand(1, 3, 5, 16, 16))
            context = text_encoder(ids)
        loss = dit(x=latents, t=torch.ones(1), context=context, seq_len=8).pow(2).mean()
        with vxperf.backward():
            loss.backward()
        with vxperf.optimizer_step(optimizer):
            optimizer.step()
            optimizer.zero_grad()
"""
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    # The reference's announcement, word for word but for the counts.
    assert re.search(r"\[Perf\]\[rank0\] training metrics enabled \(level 1\) on 0 accelerate "
                     r"methods and \d+ model classes \(\d+ non-model classes skipped\), "
                     r"reporting every 50 steps", proc.stderr), proc.stderr
    (window,) = read_records(records)
    assert sorted(window["phases_s"]) == ["bwd", "data", "fwd", "opt", "other", "prep",
                                          "text_encoder", "vae_enc"]
    assert window["throughput"]["tokens"] == 8.0 and window["throughput"]["priced_steps"] == 3


def normalized(record):
    out = {k: v for k, v in record.items() if k != "ts"}
    return json.loads(json.dumps(out), parse_float=lambda s: round(float(s), 6))


def test_records_and_trace_read_back_by_the_cli(tmp_path):
    records = tmp_path / "records.jsonl"
    trace = tmp_path / "trace.jsonl"
    code = LOOP + """
for i in range(5):
    step()
vxperf.declare_model("transformer", dit)
for _ in range(2):
    with vxperf.request():
        with vxperf.stage("text_encoder"):
            text_encoder(ids)
        for _ in range(3):
            with vxperf.stage("transformer", tokens=8, batch=2):
                pass
"""
    run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=2, VIDEOX_PERF_JSON=records,
                                   VIDEOX_PERF_TRACE=trace))
    live = read_records(records)
    assert sorted(r["kind"] for r in live) == ["request"] * 2 + ["train_window"] * 3

    report = subprocess.run([CLI, "report", str(records), "--json"], capture_output=True,
                            text=True, check=True)
    summary = json.loads(report.stdout)
    assert summary["requests"]["count"] == 2
    assert summary["training"]["windows"] == 3 and summary["training"]["steps"] == 5

    replay = subprocess.run([CLI, "replay", str(trace)], capture_output=True, text=True,
                            check=True)
    replayed = [json.loads(line) for line in replay.stdout.splitlines() if line.strip()]
    key = lambda r: (r["kind"], r.get("req", r.get("step_first")))  # noqa: E731
    # Every record, the training's final one too: the trace's train_end places its end.
    everything = read_records(records, ends=True)
    assert [r["kind"] for r in everything].count("train_end") == 1
    assert [normalized(r) for r in sorted(replayed, key=key)] == [
        normalized(r) for r in sorted(everything, key=key)]


def test_a_call_phase_by_name(tmp_path):
    """vxperf.phase(name) times any call phase of the phase table (clip() is phase("clip")); a
    name that is not one (a model phase, a typo) is said once and leaves the step as it was."""
    records = tmp_path / "records.jsonl"
    code = LOOP.replace("vxperf.clip()", 'vxperf.phase("clip")') + """
for _ in range(2):
    with vxperf.phase("fwd"), vxperf.phase("emaa"):
        pass
    step()
vxperf.finish()
"""
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=1,
                                          VIDEOX_PERF_JSON=records))
    said = [line for line in proc.stderr.splitlines() if "is not a call phase" in line]
    assert len(said) == 2, proc.stderr
    assert "'fwd'" in said[0] and "'emaa'" in said[1] and "clip" in said[1]
    windows = read_records(records)
    assert len(windows) == 2
    for window in windows:
        assert window["phases_s"]["clip"] > 0
        assert math.isclose(sum(window["phases_s"].values()), window["step_s_p50"], rel_tol=1e-9)


CHECKPOINTS = """
import io, os, sys, threading, time, torch, vxperf
import safetensors.torch
vxperf.install_training()
from accelerate import Accelerator
import torch.distributed.checkpoint as dcp
import real_models
from diffusers import ConfigMixin, ModelMixin
from diffusers.configuration_utils import register_to_config
out = sys.argv[1]


class SlowToLoad(ModelMixin, ConfigMixin):  # a model whose weights take 0.4 s to load
    @register_to_config
    def __init__(self, width: int = 4):
        super().__init__()
        time.sleep(0.4)
        self.proj = torch.nn.Linear(width, width)


torch.manual_seed(0)
SlowToLoad().save_pretrained(os.path.join(out, "pretrained"))  # before the loop: no save
accelerator = Accelerator(cpu=True, project_dir=out)
model = real_models.wan_transformer()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = accelerator.prepare(model, optimizer)
text = torch.randn(2, 8, 16)
for step in range(8):
    with accelerator.accumulate(model):
        latents = torch.randn(2, 16, 2, 8, 8)
        t = torch.randint(0, 1000, (2,))
        out_ = model(hidden_states=latents, timestep=t, encoder_hidden_states=text).sample
        accelerator.backward(torch.nn.functional.mse_loss(out_.float(), latents))
        optimizer.step()
        optimizer.zero_grad()
    if step == 3:
        accelerator.save_state(os.path.join(out, "state"))
        with vxperf.checkpoint("save") as scope:  # a slow upload, say
            time.sleep(0.6)
            scope.bytes = 10**9
    if step == 5:
        accelerator.load_state(os.path.join(out, "state"))
        dcp.save({"model": model.state_dict()}, checkpoint_id=os.path.join(out, "dcp"))
        dcp.load({"model": model.state_dict()}, checkpoint_id=os.path.join(out, "dcp"))
        with vxperf.evaluation():
            time.sleep(0.3)
        # Files written by torch.save and safetensors are saves; a buffer, or a thread of the
        # program's own saving beside the loop, is not the loop's.
        torch.save(model.state_dict(), os.path.join(out, "plain.pt"))
        safetensors.torch.save_file(model.state_dict(), os.path.join(out, "lora.safetensors"))
        torch.save(model.state_dict(), io.BytesIO())
        beside = threading.Thread(target=torch.save,
                                  args=(model.state_dict(), os.path.join(out, "async.pt")))
        beside.start()
        beside.join()
    if step == 6:  # a model loaded for a validation pass, as VideoX-Fun's scripts load one
        SlowToLoad.from_pretrained(os.path.join(out, "pretrained"))
accelerator.end_training()
with vxperf.checkpoint("upload"):  # no such kind: said once
    pass
"""


def test_checkpoints_and_evaluations_are_outside_the_steps(tmp_path):
    """accelerate's save_state/load_state, DCP's save and load, a diffusers model loaded between
    the steps and the explicit scopes: timed with their bytes in the next window's "outside"
    object, none of it in a step or its data wait; the trace replays to the same records."""
    pytest.importorskip("accelerate")
    records, trace = tmp_path / "r.jsonl", tmp_path / "t.jsonl"
    script = tmp_path / "loop.py"
    script.write_text(CHECKPOINTS)
    proc = run_python(f"import runpy, sys; sys.argv = ['loop', {str(tmp_path)!r}]; "
                      f"runpy.run_path({str(script)!r}, run_name='__main__')",
                      env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=4, VIDEOX_PERF_JSON=records,
                                    VIDEOX_PERF_TRACE=trace))
    assert proc.stderr.count("checkpoint('upload')") == 1, proc.stderr
    first, second = read_records(records)
    assert "outside" not in first  # the save came after its last step closed
    outside = second["outside"]
    state = sum(f.stat().st_size for f in (tmp_path / "state").rglob("*") if f.is_file())
    params = sum(p.numel() * 4 for p in __import__("real_models").wan_transformer().parameters())
    files = sum((tmp_path / f).stat().st_size for f in ("plain.pt", "lora.safetensors"))
    assert outside["saves"] == 5, outside  # accelerate's files inside save_state are its own
    assert outside["save_bytes"] == state + 10**9 + params + files
    assert outside["save_s"] >= 0.6
    # accelerate's load_state (its folder) and DCP's load (the state it filled in)
    assert outside["restores"] == 2 and outside["restore_bytes"] == state + params
    # the explicit scope, and a diffusers model loaded between two steps
    assert outside["evals"] == 2 and outside["eval_s"] >= 0.7
    assert outside["save_gb_per_s"] == pytest.approx(outside["save_bytes"] / outside["save_s"]
                                                     / 1e9)
    # none of the 1.3 s slept is in a step: a sleep after a step's optimizer call would be the
    # next step's data wait (0.1 s a step at least, over these 4), which is milliseconds
    assert second["phases_s"]["data"] < 0.05
    # The loop's ledger: its parts add up to its wall time, the time outside the steps is the
    # calls', and the 1.3 s slept keep the goodput low.
    ledger = second["ledger"]
    parts = ("startup_s", "setup_s", "productive_s", "first_step_excess_s", "slow_step_excess_s",
             "data_wait_s", "save_s", "restore_s", "eval_s", "between_steps_s")
    assert sum(ledger[p] for p in parts) == pytest.approx(ledger["wall_s"], abs=1e-9)
    # Before the loop: from the fork of the preloaded server to Accelerator(), then the model built
    # and prepared; the restore at step 5 (after this process's first step) keeps the numbering.
    assert ledger["startup_s"] > 0 and ledger["setup_s"] > 0
    assert ledger["steps"] == 8 and first["ledger"]["steps"] == 4
    assert ledger["save_s"] == pytest.approx(outside["save_s"])
    assert ledger["restore_s"] == pytest.approx(outside["restore_s"])
    assert ledger["eval_s"] == pytest.approx(outside["eval_s"])
    assert abs(ledger["between_steps_s"]) < 0.05
    # The goodput is the productive part of the wall, which the 1.3 s slept outside the steps
    # (and the checkpoints' own time) cannot be part of: the ledger's own arithmetic, whatever
    # the machine's load made of the steps.
    assert ledger["goodput"] == pytest.approx(ledger["productive_s"] / ledger["wall_s"])
    outside_share = (ledger["save_s"] + ledger["restore_s"] + ledger["eval_s"]) / ledger["wall_s"]
    assert 0 < ledger["goodput"] <= 1 - outside_share
    # The training's end (accelerate's end_training): its ledger carries the loop on from the last
    # window, the parts still the wall.
    end = read_records(records, ends=True)[-1]
    assert end["kind"] == "train_end" and end["steps"] == 8 and end["step_last"] == 7
    assert sum(end["ledger"][p] for p in parts) == pytest.approx(end["ledger"]["wall_s"], abs=1e-9)
    assert end["ledger"]["wall_s"] == pytest.approx(ledger["wall_s"] + end["after_last_step_s"],
                                                    abs=1e-6)
    replayed = subprocess.run([CLI, "replay", str(trace)], capture_output=True, text=True,
                              check=True).stdout.splitlines()
    assert len(replayed) == 3
    for live, again in zip((first, second, end), map(json.loads, replayed)):
        live.pop("ts"), again.pop("ts")
        assert live == again


CUSTOM_CLASSES = """
import torch, vxperf
from accelerate import Accelerator
import tiny_models as tm

vxperf.install_training()


class Captioner(torch.nn.Module):  # the program's own text tower, trained beside the DiT
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.proj(x)


class LatentEncoder(torch.nn.Module):  # the program's own frozen VAE, never prepared
    def __init__(self):
        super().__init__()
        self.mix = torch.nn.Linear(1024, 1024)

    def forward(self, video):
        h = video.flatten(1)
        for _ in range(40):  # the bulk of a step, as a real VAE's encode is
            h = torch.tanh(self.mix(h))
        return h[:2, :64].reshape(2, 4, 1, 4, 4)


torch.manual_seed(0)
accelerator = Accelerator(cpu=True)
model, captioner, vae = tm.WanTransformer3DModel(), Captioner(), LatentEncoder()
vae.requires_grad_(False)
params = list(model.parameters()) + list(captioner.parameters())
optimizer = torch.optim.SGD(params, lr=1e-3)
model, captioner, optimizer = accelerator.prepare(model, captioner, optimizer)
for step in range(4):
    with accelerator.accumulate(model):
        with torch.no_grad():
            latents = vae(torch.randn(32, 1024))
        context = captioner(torch.randn(2, 12, 16))
        out = model(x=latents, t=torch.ones(2), context=context, seq_len=8)
        accelerator.backward(out.float().pow(2).mean())
        optimizer.step()
        optimizer.zero_grad()
accelerator.end_training()
"""


def test_install_training_without_models_on_classes_of_its_own(tmp_path):
    """install_training() with no models, on a loop whose classes are its own (no diffusers or
    transformers model among them): the prepared DiT is still timed and priced as the forward,
    and what vxperf cannot place is said once each, with what to pass."""
    pytest.importorskip("accelerate")
    records = tmp_path / "r.jsonl"
    proc = run_python(CUSTOM_CLASSES, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=4,
                                                    VIDEOX_PERF_JSON=records))
    assert proc.stderr.count("accelerator.prepare() was given Captioner beside the trained "
                             "model") == 1, proc.stderr
    assert "install_training(models=Captioner)" in proc.stderr
    said = [line for line in proc.stderr.splitlines() if "of each step is prep" in line]
    assert len(said) == 1 and "install_training(models=[" in said[0], proc.stderr
    (window,) = read_records(records)
    assert window["phases_s"]["prep"] > 0.3 * window["step_s_p50"]
    t = window["throughput"]
    params = sum(p.numel() for p in __import__("tiny_models").WanTransformer3DModel().parameters())
    assert window["phases_s"]["fwd"] > 0 and t["params"] == params and t["tokens"] == 8.0
    assert t["flops_per_step"] > 0 and t["samples"] == 2.0


def test_install_training_after_prepare_says_to_call_it_before(tmp_path):
    """install_training() after accelerator.prepare(): the trained model's forward falls in prep
    and nothing is priced; the prep line says why and what to do, not that a model is unknown."""
    pytest.importorskip("accelerate")
    late = CUSTOM_CLASSES.replace("\nvxperf.install_training()\n", "\n").replace(
        "for step in range(4):", "vxperf.install_training()\nfor step in range(4):")
    assert late.count("vxperf.install_training()") == 1
    records = tmp_path / "r.jsonl"
    proc = run_python(late, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=4,
                                          VIDEOX_PERF_JSON=records))
    said = [line for line in proc.stderr.splitlines() if "of each step is prep" in line]
    assert len(said) == 1, proc.stderr
    assert "install_training() before accelerator.prepare()" in said[0]
    assert "install_training(models=[" not in said[0]
    (window,) = read_records(records)
    assert "fwd" not in window["phases_s"] and "flops_per_step" not in window["throughput"]
