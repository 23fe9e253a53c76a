"""`vxperf run` (issue #38): an unmodified program measured, in every Python process its launcher
starts, with its own arguments, output and exit status; records equal to those of the same
program with its one vxperf line."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("diffusers")
pytest.importorskip("accelerate")

from conftest import CLI, HERE, PACKAGE_DIR, clean_env, read_records  # noqa: E402

GENERATE = """
import sys
if "--instrumented" in sys.argv:
    import vxperf
    vxperf.install()
import real_models
pipe = real_models.wan()
for seed in range(2):
    pipe("a cat", num_inference_steps=2, height=16, width=16, num_frames=5, output_type="pt")
print("args", sys.argv[1:])
sys.exit(3)
"""
TRAIN = os.path.join(HERE, "train_like_diffusers.py")


def run(argv, env, tmp_path, timeout=300):
    return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=timeout)


def shape(record):
    """What a record says that does not depend on how long things took."""
    drop = {"ts", "e2e_s", "first_step_s", "step_s_p50", "step_s_p95", "wall_s", "tflops",
            "hw_tflops", "mfu", "hfu", "samples_per_s", "eta_s", "overrun_s"}

    def timed(key):  # times, what is made of them, and bytes a save wrote (its pickles vary)
        return key in drop or key.endswith(("_ms", "_s", "_bytes")) or key == "goodput"

    def keep(value):
        if isinstance(value, dict):
            return {k: keep(v) for k, v in value.items() if not timed(k)}
        return value

    out = keep(record)
    if "phases_s" in record:
        out["phases"] = sorted(record["phases_s"])
    return out


def test_an_unmodified_pipeline_program_is_measured_as_the_instrumented_one(tmp_path):
    script = tmp_path / "generate.py"
    script.write_text(GENERATE)
    plain = clean_env(PYTHONPATH=HERE, VIDEOX_PERF_JSON=tmp_path / "run.jsonl")
    proc = run([CLI, "run", "--", sys.executable, str(script), "--seed", "7"], plain, tmp_path)
    assert proc.returncode == 3, proc.stderr  # the program's own status
    assert "args ['--seed', '7']" in proc.stdout
    assert "nothing was measured" not in proc.stderr
    # diffusers imports accelerate, which installs training's measurement: no loop, nothing said
    assert "training metrics enabled" not in proc.stderr and "no models named" not in proc.stderr
    instrumented = run([sys.executable, str(script), "--instrumented"],
                       clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=tmp_path / "own.jsonl"),
                       tmp_path)
    assert instrumented.returncode == 3, instrumented.stderr
    ran, own = read_records(tmp_path / "run.jsonl"), read_records(tmp_path / "own.jsonl")
    assert len(ran) == 2 and [shape(r) for r in ran] == [shape(r) for r in own]
    assert ran[0]["dit"]["flops_per_fwd"] > 0


def trained_model_truth(tokens=2):
    """(parameters, the FLOPs of one sample's forward) of the trained transformer, counted here
    off the model as diffusers builds it: 2*P*T over its parameters, 4*T*T*W over its
    self-attention's query widths and 4*T*L*W over its cross-attention's, at T latent tokens (the
    diffusers script's 2) and L = 16 text tokens (its captions), which the model advertises
    nowhere."""
    sys.path.insert(0, HERE)
    import real_models

    model = real_models.wan_transformer()
    params = sum(p.numel() for p in model.parameters())
    self_width = sum(block.attn1.to_q.out_features for block in model.blocks)
    cross_width = sum(block.attn2.to_q.out_features for block in model.blocks)
    text = real_models.TEXT_LEN
    forward = (2 * params * tokens + 4 * tokens * tokens * self_width
               + 4 * tokens * text * cross_width)
    return params, forward


def priced_as_the_script_ran(window, truth, samples):
    """A window of train_like_diffusers.py priced by the work that ran, though no line of the
    script names a model: the prepared transformer's forward (under DDP on torchrun), the frozen
    VAE's encode and the text encoder timed as their phases, the EMA's update after each step as
    `ema` (not data wait); `samples` per step, the transformer at its parameter count with its
    FLOPs and MFU."""
    assert {"vae_enc", "text_encoder", "fwd", "bwd", "ema"} <= set(window["phases_s"]), window
    assert all(window["phases_s"][p] > 0 for p in ("vae_enc", "text_encoder", "fwd", "ema"))
    # what runs before any model in the micro-step is the noise and the sigmas, no model's work
    assert window["phases_s"]["prep"] < window["phases_s"]["vae_enc"]
    t = window["throughput"]
    params, forward = truth
    assert t["samples"] == samples and t["samples_per_s"] > 0  # a step's
    # a 2x2x2 latent in 1x2x2 patches: 2 tokens
    assert t["params"] == t["trainable"] == params and t["tokens"] == 2.0
    # a full fine-tune: forward and backward, 3 forwards' worth, of every sample of the step
    assert t["flops_per_step"] == 3 * samples * forward, (t["flops_per_step"], forward)
    assert t["mfu"] > 0 and t["peak_source"] == "env"


def outside_the_steps(records):
    """What a main process of train_like_diffusers.py did outside its steps, as its records say:
    each window's saves and evaluations, and the training's end's ledger."""
    windows = [r for r in records if r["kind"] == "train_window"]
    end = next(r for r in records if r["kind"] == "train_end")
    # A save and a validation after step 4 (the pipeline made, then called: one evaluation), in
    # the window after it; those after step 8 and the final save_pretrained and validation,
    # after the last window, in the end's ledger alone.
    assert [w.get("outside") for w in windows][0] is None
    assert windows[1]["outside"]["saves"] == windows[1]["outside"]["evals"] == 1, windows
    assert end["ledger"]["save_s"] > windows[-1]["ledger"]["save_s"]
    assert end["ledger"]["eval_s"] > windows[-1]["ledger"]["eval_s"]
    return windows


def test_a_training_script_under_accelerate_and_torchrun(tmp_path):
    """A diffusers-style accelerate loop (frozen VAE and text encoder called in it, main-process
    save_state, validation and final save_pretrained, log) unmodified: priced and split into its
    phases as the script ran, the same windows as with install_training() in it; its validation
    passes (the loop's own VAE, text encoder and transformer called by a pipeline) and saves are
    time outside the steps, never a step's phases, samples or FLOPs; under torchrun (DDP) every
    rank writes its own, priced alike."""
    truth = trained_model_truth()
    env = clean_env(PYTHONPATH=HERE, VIDEOX_PERF_EVERY=4, VIDEOX_PERF_PEAK_TFLOPS=1,
                    VIDEOX_PERF_JSON=tmp_path / "run.jsonl")
    proc = run([CLI, "run", sys.executable, TRAIN, "--out", str(tmp_path / "a")], env, tmp_path)
    assert proc.returncode == 0 and "trained 8 steps" in proc.stdout, proc.stderr
    assert "no models named; timing the model given to accelerator.prepare()" in proc.stderr
    assert "is prep" not in proc.stderr  # nothing left that vxperf cannot name
    # accelerate asks whether diffusers is installed as it loads: diffusers is still measured
    assert "inference metrics enabled" in proc.stderr
    own_env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=4, VIDEOX_PERF_PEAK_TFLOPS=1,
                        VIDEOX_PERF_JSON=tmp_path / "own.jsonl")
    own_env["PYTHONPATH"] = os.pathsep.join([PACKAGE_DIR, HERE])
    proc = run([sys.executable, TRAIN, "--out", str(tmp_path / "b"), "--instrumented"], own_env,
               tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = read_records(tmp_path / "run.jsonl", ends=True)
    own = read_records(tmp_path / "own.jsonl", ends=True)
    # `vxperf run` also measures the validation pipeline's calls as requests (install() is on);
    # install_training() alone times them as evaluations only.
    assert [r["kind"] for r in ran].count("request") == 3
    assert all(r["kind"] != "request" for r in own)
    windows = outside_the_steps(ran)
    assert [shape(r) for r in windows] == [shape(r) for r in outside_the_steps(own)]
    for window in windows:  # 2 micro-steps of 2 samples a step
        priced_as_the_script_ran(window, truth, samples=4)
        assert "vae_dec" not in window["phases_s"]  # the validation's decode is no phase

    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    env["VIDEOX_PERF_JSON"] = str(tmp_path / "ranks.jsonl")
    proc = run([CLI, "run", "--level", "1", "--", torchrun, "--standalone", "--nproc-per-node",
                "2", TRAIN, "--out", str(tmp_path / "c")], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nothing was measured" not in proc.stderr  # the launcher's workers were
    # Said by the rank that logs, as the start-up line above it, not once a rank.
    assert proc.stderr.count("no models named; timing the model given") == 1, proc.stderr
    assert proc.stderr.count("training metrics enabled") == 1, proc.stderr
    for rank in (0, 1):
        records = read_records(tmp_path / f"ranks.jsonl.rank{rank}")
        windows = [r for r in records if r["kind"] == "train_window"]
        # the main process alone validates: its 2 passes' requests
        assert len(records) - len(windows) == (2 if rank == 0 else 0)
        assert [w["steps"] for w in windows] == [4] and windows[0]["world_size"] == 2
        priced_as_the_script_ran(windows[0], truth, samples=4)
        assert windows[0]["throughput"]["dp"] == 2


def test_accelerate_launch_is_measured_in_its_worker_not_the_launcher(tmp_path):
    """`accelerate launch` imports accelerate itself and starts the script in a child: the child
    is measured, the launcher is not, so the start-up lines are said once, not once more by a
    launcher that never trains."""
    launch = os.path.join(os.path.dirname(sys.executable), "accelerate")
    env = clean_env(PYTHONPATH=HERE, VIDEOX_PERF_EVERY=4, VIDEOX_PERF_PEAK_TFLOPS=1,
                    VIDEOX_PERF_JSON=tmp_path / "run.jsonl", HF_HOME=tmp_path / "hf")
    proc = run([CLI, "run", "--", launch, "launch", "--cpu", "--num_processes", "1",
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                TRAIN, "--out", str(tmp_path / "a")], env, tmp_path)
    assert proc.returncode == 0 and "trained 8 steps" in proc.stdout, proc.stderr
    for line in ("vxperf: metrics on", "training metrics enabled", "inference metrics enabled",
                 "no models named; timing the model given"):
        assert proc.stderr.count(line) == 1, (line, proc.stderr)
    assert "nothing was measured" not in proc.stderr
    windows = [r for r in read_records(tmp_path / "run.jsonl") if r["kind"] == "train_window"]
    assert [w["steps"] for w in windows] == [4, 4]  # 8 steps, a window every 4


def test_a_plain_ddp_loop_says_nothing_was_measured_until_it_has_vxperfs_lines(tmp_path):
    """A torchrun DDP loop over a diffusers model imports accelerate (diffusers does) and runs no
    pipeline and no accelerate step: `vxperf run` installs its hooks and measures nothing, and
    says so. With the lines docs/PYTHON.md gives, it measures the steps (no such line), the
    transformer priced with its cross-attention at the text its calls received (the model
    advertises no text length), rank 0's torch.save and every rank's no_grad evaluation outside
    the steps."""
    torchrun = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--standalone"]
    script = os.path.join(HERE, "train_like_ddp.py")
    env = clean_env(PYTHONPATH=HERE, VIDEOX_PERF_EVERY=2, VIDEOX_PERF_PEAK_TFLOPS=1,
                    VIDEOX_PERF_JSON=tmp_path / "plain.jsonl")
    proc = run([CLI, "run", "--", *torchrun, "--nproc-per-node", "1", script, "--out",
                str(tmp_path)], env, tmp_path)
    assert proc.returncode == 0 and "rank 0 trained 4 steps" in proc.stdout, proc.stderr
    # accelerate was imported, but no accelerator.prepare(): no line says training is measured
    assert "training metrics enabled" not in proc.stderr
    assert proc.stderr.count("vxperf run: nothing was measured: the program imported diffusers "
                             "or accelerate but ran no pipeline call and no training step") == 1
    assert read_records(tmp_path / "plain.jsonl") == []

    env["VIDEOX_PERF_JSON"] = str(tmp_path / "lines.jsonl")
    proc = run([CLI, "run", "--", *torchrun, "--nproc-per-node", "2", script, "--out",
                str(tmp_path), "--vxperf"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nothing was measured" not in proc.stderr
    params, forward = trained_model_truth(tokens=8)
    for rank in (0, 1):
        records = read_records(tmp_path / f"lines.jsonl.rank{rank}")
        assert [(w["step_first"], w["step_last"]) for w in records] == [(0, 1), (2, 3)]
        for window in records:
            t = window["throughput"]
            assert t["samples"] == 2 and t["params"] == params and t["tokens"] == 8.0
            assert t["flops_per_step"] == 3 * 2 * forward, (t["flops_per_step"], forward)
        outside = records[1]["outside"]
        assert outside["evals"] == 1 and outside["saves"] == (1 if rank == 0 else 0)


def test_an_evaluation_loop_on_every_rank_is_no_steps_work(tmp_path):
    """accelerate with 4 micro-steps a step and a hand-written evaluation on every rank (the
    model's eval(), the VAE, text encoder and model under torch.no_grad(), train() again), no
    pipeline and no vxperf line: the evaluation is time outside the steps, its model calls never
    a step's samples, FLOPs or phases, its time no data wait."""
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    env = clean_env(PYTHONPATH=HERE, VIDEOX_PERF_EVERY=2, VIDEOX_PERF_PEAK_TFLOPS=1,
                    VIDEOX_PERF_JSON=tmp_path / "run.jsonl")
    script = os.path.join(HERE, "train_like_accelerate_eval.py")
    proc = run([CLI, "run", "--", torchrun, "--standalone", "--nproc-per-node", "2", script,
                "--out", str(tmp_path / "out")], env, tmp_path)
    assert proc.returncode == 0 and "trained 4 steps" in proc.stdout, proc.stderr
    assert proc.stdout.count("validation loss") == 2
    params, forward = trained_model_truth()
    for rank in (0, 1):
        records = read_records(tmp_path / f"run.jsonl.rank{rank}", ends=True)
        windows = [r for r in records if r["kind"] == "train_window"]
        end = next(r for r in records if r["kind"] == "train_end")
        assert [(w["step_first"], w["step_last"]) for w in windows] == [(0, 1), (2, 3)]
        for window in windows:  # 4 micro-steps of 2 samples, a full fine-tune
            t = window["throughput"]
            assert t["samples"] == 8 and t["tokens"] == 2.0 and t["params"] == params
            assert t["flops_per_step"] == 3 * 8 * forward, (t["flops_per_step"], forward)
        # the evaluation after step 2 in the window after it, the one after step 4 in the end's;
        # the main process's save after it, before train(), a save of its own
        assert windows[0].get("outside") is None
        assert windows[1]["outside"]["evals"] == 1 and windows[1]["outside"]["eval_s"] > 0
        assert windows[1]["outside"]["saves"] == (1 if rank == 0 else 0)
        assert end["ledger"]["eval_s"] > windows[1]["outside"]["eval_s"]


def test_its_own_errors_and_a_sitecustomize_it_stands_in_front_of(tmp_path):
    chained = tmp_path / "site"
    chained.mkdir()
    (chained / "sitecustomize.py").write_text("print('the program\\'s own sitecustomize ran')\n")
    env = clean_env(PYTHONPATH=chained)
    proc = run([CLI, "run", sys.executable, "-c", "import sys; print(sys.argv)"], env, tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["the program's own sitecustomize ran", "['-c']"]
    # A program none of whose processes imports diffusers or accelerate (a plain PyTorch loop,
    # here a process that starts another) is said to be unmeasured, once, at its end.
    nested = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass']); sys.exit(4)"
    scratch = tmp_path / "tmp"  # where the processes' shared folder is made, and removed
    scratch.mkdir()
    proc = run([CLI, "run", sys.executable, "-c", nested], dict(env, TMPDIR=str(scratch)),
               tmp_path)
    assert proc.returncode == 4
    assert proc.stderr.count("vxperf run: nothing was measured: no process of the program "
                             "imported diffusers or accelerate") == 1, proc.stderr
    assert not list(scratch.iterdir())
    # One with vxperf's own lines, importing neither, measured its steps: nothing to say.
    own = tmp_path / "own.py"
    own.write_text("import torch, vxperf\nmodel = torch.nn.Linear(4, 4)\n"
                   "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                   "for _ in range(2):\n    with vxperf.micro_step():\n"
                   "        model(torch.ones(1, 4)).sum().backward()\n"
                   "        with vxperf.optimizer_step(optimizer):\n"
                   "            optimizer.step()\n")
    proc = run([CLI, "run", sys.executable, str(own)], env, tmp_path)
    assert proc.returncode == 0 and "=== 2 steps" in proc.stderr, proc.stderr
    assert "nothing was measured" not in proc.stderr
    quiet = run([CLI, "run", "--level", "0", sys.executable, "-c", "pass"], env, tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert run([CLI, "run"], env, tmp_path).returncode == 2
    assert run([CLI, "run", "--level", "high", "true"], env, tmp_path).returncode == 2
    missing = run([CLI, "run", "--", "no-such-program-here"], env, tmp_path)
    assert missing.returncode == 127 and "cannot run no-such-program-here" in missing.stderr
    # a program that is not Python is run as it is
    assert run([CLI, "run", "--", "sh", "-c", "exit 5"], env, tmp_path).returncode == 5
