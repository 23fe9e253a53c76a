"""Time per denoising step beside time per transformer call (#50). A denoising step is one sampler
step, all its transformer calls: two with classifier-free guidance run as two, one without it,
and Wan2.2's two experts split the steps between `transformer` and `transformer_2`. A pipeline
call says diffusers' own count (the `_num_timesteps` its loop ran); request(denoising_steps=) and
vxperf.denoising_steps() say it for a loop of one's own. The record's `denoising_steps`, the
`[Perf]` line and `vxperf report` (text, JSON) follow; records without it read as before."""
import json
import subprocess
from importlib import metadata

import pytest

from conftest import CLI, clean_env, read_records, run_python


def _distributions(*names):
    """Whether these distributions are installed (the stand-ins are none)."""
    try:
        return all(metadata.version(name) for name in names)
    except metadata.PackageNotFoundError:
        return False


REAL = pytest.mark.skipif(not _distributions("diffusers", "transformers", "tokenizers"),
                          reason="the real diffusers and transformers are not installed here")

# Real diffusers pipelines built from configs with random weights, called the way a user's job
# calls them: num_inference_steps and guidance_scale as keyword arguments.
PIPELINES = """
import torch, vxperf
import real_models as rm

def call(pipe, **kwargs):
    args = dict(rm.WAN_CALL, negative_prompt="blue snow")
    args.update(kwargs)
    return pipe(prompt="a cat runs on the beach", generator=torch.Generator().manual_seed(0),
                **args)

wan = vxperf.instrument_pipeline(rm.wan())
call(wan, num_inference_steps=3, guidance_scale=5.0)   # guidance on: two calls a step
call(wan, num_inference_steps=4, guidance_scale=1.0)   # guidance off: one
wan22 = vxperf.instrument_pipeline(rm.wan22_i2v())
call(wan22, image=rm.image(0), num_inference_steps=4, guidance_scale=4.0)  # two experts
print("ok")
"""


def report(*args):
    proc = subprocess.run([CLI, "report", *args], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def priced(record):
    """The record's transformer calls (every expert's) and their milliseconds."""
    stages = [s for name, s in record["stages"].items() if name.startswith("transformer")]
    return sum(s["count"] for s in stages), sum(s["total_ms"] for s in stages)


@REAL
def test_a_pipeline_call_says_the_steps_its_sampler_ran(tmp_path):
    records = tmp_path / "records.jsonl"
    proc = run_python(PIPELINES, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records),
                      timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr
    cfg, plain, experts = read_records(records)
    assert [r["denoising_steps"] for r in (cfg, plain, experts)] == [3, 4, 4]
    assert priced(cfg)[0] == 6 and priced(plain)[0] == 4
    # Wan2.2: the high-noise expert takes the steps above the boundary, the low-noise one the
    # rest; a step is still both calls of whichever expert ran it.
    assert set(experts["stages"]) >= {"transformer", "transformer_2"}
    assert priced(experts)[0] == 8
    # The [Perf] line says a step beside the calls: 2 calls each with guidance, 1 without.
    lines = [line for line in proc.stderr.splitlines() if " | denoising " in line]
    assert len(lines) == 3, proc.stderr
    assert "| denoising 3 steps, " in lines[0] and "ms/step (2 calls each) |" in lines[0]
    assert "| denoising 4 steps, " in lines[1] and "ms/step (1 call each) |" in lines[1]
    assert "| denoising 4 steps, " in lines[2] and "ms/step (2 calls each) |" in lines[2]

    # `vxperf report` over each request alone: a step's time is the request's transformer calls'
    # time over its steps.
    for record in (cfg, plain, experts):
        one = tmp_path / f"req{record['req']}.jsonl"
        one.write_text(json.dumps(record) + "\n")
        calls, ms = priced(record)
        steps = record["denoising_steps"]
        got = json.loads(report("--json", str(one)))["requests"]["denoising_step"]
        assert got["requests"] == 1 and got["steps"] == steps
        assert got["mean_ms"] == pytest.approx(ms / steps, rel=1e-12)
        assert got["calls"] == calls / steps
        text = report(str(one))
        assert (f"  denoising step: {steps} steps, mean {ms / steps:.1f}ms "
                f"({calls // steps} call{'s' if calls // steps > 1 else ''} each)\n") in text, text
    # Over all three: the calls' time over all their steps.
    both = json.loads(report("--json", str(records)))["requests"]["denoising_step"]
    total_ms = sum(priced(r)[1] for r in (cfg, plain, experts))
    assert both["requests"] == 3 and both["steps"] == pytest.approx(11 / 3)
    assert both["mean_ms"] == pytest.approx(total_ms / 11, rel=1e-12)
    assert both["calls"] == pytest.approx(18 / 11)


def test_a_loop_of_ones_own_says_its_steps(tmp_path):
    """request(denoising_steps=) as the loop begins, vxperf.denoising_steps() once it knows (the
    last said wins); what is no count above 0 is said once and left out; a request that says
    nothing has no `denoising_steps`, and the report then says nothing of steps."""
    records = tmp_path / "records.jsonl"
    code = """
        import time, vxperf

        def loop(calls):
            for _ in range(calls):
                with vxperf.stage("transformer", tokens=8, batch=1):
                    time.sleep(0.002)

        with vxperf.request(denoising_steps=4):
            loop(8)
        with vxperf.request(denoising_steps=50):
            vxperf.denoising_steps(3)  # a strength cut the schedule short
            loop(3)
        with vxperf.request():
            loop(2)
        for bad in (0, "many", True):
            with vxperf.request(denoising_steps=bad):
                loop(1)
        with vxperf.request():
            vxperf.denoising_steps(-2)
            loop(1)
        vxperf.denoising_steps(7)  # outside a request: nothing
        print("ok")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    assert proc.stdout.strip() == "ok", proc.stderr
    got = read_records(records)
    assert [r.get("denoising_steps") for r in got] == [4, 3, None, None, None, None, None]
    assert proc.stderr.count("is not a count above 0; not said") == 4, proc.stderr
    assert proc.stderr.count("request(denoising_steps='many')") == 1, proc.stderr

    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps(got[2]) + "\n")
    assert "denoising" not in report(str(old))
    assert "denoising_step" not in json.loads(report("--json", str(old)))["requests"]
    said = json.loads(report("--json", str(records)))["requests"]["denoising_step"]
    assert said["requests"] == 2 and said["steps"] == 3.5
    assert said["calls"] == 11 / 7
