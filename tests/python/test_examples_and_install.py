"""The examples run (and compute the same with and without metrics), and the package installs
into a fresh virtual environment offline (cmake --install into a venv that sees the test
environment's torch through a .pth file) and works from there."""
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import BUILD, REPO, clean_env, read_records, run_child

EXAMPLES = os.path.join(REPO, "examples", "python")


def run_example(name, args=(), env=None, python=None):
    argv = [os.path.join(EXAMPLES, name), *args]
    if python is None:
        proc = run_child(argv, env=env, check=False, timeout=300)
    else:
        proc = subprocess.run([python, *argv], env=env, capture_output=True, text=True,
                              timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_generate_example(tmp_path):
    records = tmp_path / "records.jsonl"
    measured = run_example("generate.py", env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    plain = run_example("generate.py", env=clean_env())
    assert measured.stdout == plain.stdout  # measuring never changes what is computed
    assert plain.stderr == ""
    got = read_records(records)
    assert [r["req"] for r in got] == [0, 1, 2]
    for record in got:
        assert {n: s["count"] for n, s in record["stages"].items()} == {
            "text_encoder": 2, "transformer": 8, "vae_dec": 1}
        assert record["dit"]["tokens"] == 64 and record["dit"]["attn_share"] > 0
        assert record["denoising_steps"] == 4  # its loop's, two transformer calls each
    assert measured.stderr.count("| denoising 4 steps, ") == 3, measured.stderr


@pytest.mark.parametrize("variant", [["--checkpointing"], ["--lora"]])
def test_train_example(tmp_path, variant):
    records = tmp_path / "records.jsonl"
    env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=2, VIDEOX_PERF_JSON=records)
    measured = run_example("train.py", ["--steps", "4", *variant], env=env)
    plain = run_example("train.py", ["--steps", "4", *variant], env=clean_env())
    assert measured.stdout == plain.stdout
    windows = read_records(records)
    assert [(w["step_first"], w["step_last"]) for w in windows] == [(0, 1), (2, 3)]
    throughput = windows[0]["throughput"]
    if variant == ["--lora"]:
        assert throughput["flops_coef"] == 2.0 and throughput["trainable"] < throughput["params"]
    else:
        assert throughput["flops_coef_reason"].startswith("full, ckpt on -> 3x/4x")
    assert "fwd" in windows[0]["phases_s"] and throughput["priced_steps"] == 2


def fresh_venv(venv):
    """A new venv of this interpreter's Python that sees this environment's packages (torch)
    through a .pth file, as a user's project venv sees a shared torch."""
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    with open(os.path.join(site.stdout.strip(), "test-env.pth"), "w") as handle:
        handle.write(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not found")
def test_install_into_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    python = fresh_venv(venv)
    subprocess.run(["cmake", "--install", BUILD, "--component", "python", "--prefix", str(venv)],
                   check=True, capture_output=True)
    env = {k: v for k, v in clean_env().items() if k != "PYTHONPATH"}
    where = subprocess.run([python, "-c", "import vxperf, torch; print(vxperf.__file__)"],
                           env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(venv)), where.stdout
    records = tmp_path / "records.jsonl"
    env.update(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(records))
    run_example("generate.py", ["--requests", "1", "--steps", "2"], env=env, python=python)
    report = subprocess.run([str(venv / "bin" / "vxperf"), "report", str(records)],
                            capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert len(read_records(records)) == 1
    # `vxperf run` finds the installed package's bootstrap in the prefix's site-packages.
    ran = subprocess.run([str(venv / "bin" / "vxperf"), "run", "--", python, "-c",
                          "import sys; print(any('_bootstrap' in p for p in sys.path))"],
                         env=env, capture_output=True, text=True)
    assert (ran.returncode, ran.stdout.strip()) == (0, "True"), ran.stderr
