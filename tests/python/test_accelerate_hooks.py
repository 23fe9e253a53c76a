"""vxperf under the real accelerate's hooks: the model-offload cycle that diffusers runs around
every call, in both orders of instrumenting, and a device hook added to a component already
timed. Every request keeps its stages (golden: the reference's records), and nothing is said: the
timer sits around the module's whole call, which accelerate's hooks never replace."""
import json
import os
import sys

import pytest

from conftest import HERE, TORCH, run_child

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

REFERENCE = scenarios.default_reference()


def run(impl, name, tmp_path):
    out = tmp_path / f"{impl}-{name}.json"
    # scenarios.py puts the stand-ins on sys.path: the real diffusers cannot be preloaded
    proc = run_child([os.path.join(HERE, "scenarios.py"), "--impl", impl, "--scenario", name,
                      "--out", str(out), "--reference", REFERENCE, "--real-accelerate"],
                     check=False, timeout=300, preload=TORCH)
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
    assert notices == [], stderr


@pytest.mark.skipif(not os.path.exists(REFERENCE), reason="the reference module is not here")
@pytest.mark.parametrize("name", sorted(scenarios.REAL_ACCELERATE))
def test_matches_reference_live(name, tmp_path):
    reference, _ = run("reference", name, tmp_path)
    result, _ = run("vxperf", name, tmp_path)
    same(result, reference, name)
