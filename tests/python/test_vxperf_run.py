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
            "samples_per_s", "eta_s", "overrun_s"}

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
    instrumented = run([sys.executable, str(script), "--instrumented"],
                       clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=tmp_path / "own.jsonl"),
                       tmp_path)
    assert instrumented.returncode == 3, instrumented.stderr
    ran, own = read_records(tmp_path / "run.jsonl"), read_records(tmp_path / "own.jsonl")
    assert len(ran) == 2 and [shape(r) for r in ran] == [shape(r) for r in own]
    assert ran[0]["dit"]["flops_per_fwd"] > 0


def test_a_training_script_under_accelerate_and_torchrun(tmp_path):
    """A diffusers-style accelerate loop (save_state, log) unmodified: the same windows as with
    install_training() in it; under torchrun every rank writes its own records."""
    env = clean_env(PYTHONPATH=HERE, VIDEOX_PERF_EVERY=4, VIDEOX_PERF_JSON=tmp_path / "run.jsonl")
    proc = run([CLI, "run", sys.executable, TRAIN, "--out", str(tmp_path / "a")], env, tmp_path)
    assert proc.returncode == 0 and "trained 8 steps" in proc.stdout, proc.stderr
    own_env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=4,
                        VIDEOX_PERF_JSON=tmp_path / "own.jsonl")
    own_env["PYTHONPATH"] = os.pathsep.join([PACKAGE_DIR, HERE])
    proc = run([sys.executable, TRAIN, "--out", str(tmp_path / "b"), "--instrumented"], own_env,
               tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran, own = read_records(tmp_path / "run.jsonl"), read_records(tmp_path / "own.jsonl")
    assert len(ran) == 2 and [shape(r) for r in ran] == [shape(r) for r in own]

    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    env["VIDEOX_PERF_JSON"] = str(tmp_path / "ranks.jsonl")
    proc = run([CLI, "run", "--level", "1", "--", torchrun, "--standalone", "--nproc-per-node",
                "2", TRAIN, "--out", str(tmp_path / "c")], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    for rank in (0, 1):
        windows = read_records(tmp_path / f"ranks.jsonl.rank{rank}")
        assert [w["steps"] for w in windows] == [4] and windows[0]["world_size"] == 2


def test_its_own_errors_and_a_sitecustomize_it_stands_in_front_of(tmp_path):
    chained = tmp_path / "site"
    chained.mkdir()
    (chained / "sitecustomize.py").write_text("print('the program\\'s own sitecustomize ran')\n")
    env = clean_env(PYTHONPATH=chained)
    proc = run([CLI, "run", sys.executable, "-c", "import sys; print(sys.argv)"], env, tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["the program's own sitecustomize ran", "['-c']"]
    assert run([CLI, "run"], env, tmp_path).returncode == 2
    assert run([CLI, "run", "--level", "high", "true"], env, tmp_path).returncode == 2
    missing = run([CLI, "run", "--", "no-such-program-here"], env, tmp_path)
    assert missing.returncode == 127 and "cannot run no-such-program-here" in missing.stderr
    # a program that is not Python is run as it is
    assert run([CLI, "run", "--", "sh", "-c", "exit 5"], env, tmp_path).returncode == 5
