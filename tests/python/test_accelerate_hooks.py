"""vxperf under the real accelerate's hooks (on torch 1.13 and 2): the model-offload cycle that
diffusers runs around every call, in both orders of instrumenting, and a device hook added to a
component already timed. Every request keeps its stages (golden: the reference's records on torch
2, where its module hooks are native), and nothing is said but the one notice of a timer put back
on torch < 2.1, where the timer is the forward that accelerate replaces."""
import json
import os
import subprocess
import sys

import pytest

from conftest import HERE, clean_env

sys.path.insert(0, HERE)
import scenarios  # noqa: E402
from test_side_by_side import same  # noqa: E402


def _installed(name):
    from importlib import metadata

    try:
        return bool(metadata.version(name))
    except metadata.PackageNotFoundError:
        return False


if not _installed("accelerate"):
    pytest.skip("the real accelerate is not installed here", allow_module_level=True)

import torch  # noqa: E402

REFERENCE = scenarios.default_reference()
NATIVE_HOOKS = int(torch.__version__.split(".")[0]) >= 2


def run(impl, name, tmp_path):
    out = tmp_path / f"{impl}-{name}.json"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "scenarios.py"), "--impl", impl,
                           "--scenario", name, "--out", str(out), "--reference", REFERENCE,
                           "--real-accelerate"],
                          env=clean_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{impl} {name} failed:\n{proc.stderr[-4000:]}"
    return json.loads(out.read_text()), proc.stderr


@pytest.mark.parametrize("name", sorted(scenarios.REAL_ACCELERATE))
def test_matches_golden(name, tmp_path):
    result, stderr = run("vxperf", name, tmp_path)
    with open(os.path.join(HERE, "golden", f"{name}.json")) as handle:
        golden = json.load(handle)
    same(result, golden, name)
    stages = [record["stages"] for record in result["records"]]
    assert stages[0] == {"text_encoder": 2, "transformer": 2, "transformer_2": 2, "vae_dec": 1}
    assert all(s == stages[0] for s in stages), stages
    notices = [line for line in stderr.splitlines()
               if line.startswith("vxperf:") and "metrics on" not in line]
    from_python = subprocess.run([sys.executable, "-c", "from vxperf import _hooks; "
                                  "print(_hooks.instance_call())"], env=clean_env(),
                                 capture_output=True, text=True, check=True).stdout.strip()
    if from_python == "True":
        assert notices == [], stderr
    else:
        # Said once per component whose forward accelerate replaced after vxperf timed it.
        assert len(notices) == len(set(notices)) and 1 <= len(notices) <= 4, stderr
        assert all("timed again from this request" in line for line in notices), stderr


@pytest.mark.skipif(not (NATIVE_HOOKS and os.path.exists(REFERENCE)),
                    reason="the reference's module hooks need torch 2 (and the reference)")
@pytest.mark.parametrize("name", sorted(scenarios.REAL_ACCELERATE))
def test_matches_reference_live(name, tmp_path):
    reference, _ = run("reference", name, tmp_path)
    result, _ = run("vxperf", name, tmp_path)
    same(result, reference, name)
