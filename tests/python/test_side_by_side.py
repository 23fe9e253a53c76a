"""vxperf against the reference module on the same tiny pipelines (scenarios.py): every
non-timing field of every record must agree (kinds, ids, warmup flags, stage names and call counts,
parameters, tokens, batch, FLOPs per forward, attention share, peak).

Always against the golden files (what the reference recorded, written by make_golden.py); also
against the reference itself, run live, when it is present ($VXPERF_REFERENCE or
<repo>/../shared/reference/seed_perf.py) -- which also catches stale golden files.
"""
import json
import math
import os
import sys

import pytest

from conftest import HERE, TORCH, run_child

sys.path.insert(0, HERE)
import scenarios  # noqa: E402

REFERENCE = scenarios.default_reference()
HAVE_REFERENCE = os.path.exists(REFERENCE)
NAMES = sorted(scenarios.SCENARIOS)


def run_scenario(impl, name, tmp_path):
    out = tmp_path / f"{impl}-{name}.json"
    # scenarios.py puts the stand-ins on sys.path: the real diffusers cannot be preloaded
    proc = run_child([os.path.join(HERE, "scenarios.py"), "--impl", impl, "--scenario", name,
                      "--out", str(out), "--reference", REFERENCE], check=False, timeout=180,
                     preload=TORCH)
    assert proc.returncode == 0, f"{impl} {name} failed:\n{proc.stderr}"
    return json.loads(out.read_text()), proc.stderr


def same(a, b, path="record"):
    """Equal, floats to 1e-12 relative (FLOPs are sums of products of integers)."""
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, f"{path}: {a!r} != {b!r}"
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: {len(a)} entries != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def comparable(name, result):
    """A result as both implementations must agree on it (scenarios.comparable: the fields the
    reference gets wrong left out, each checked on its own below)."""
    return scenarios.comparable(name, result)


@pytest.fixture(scope="module")
def vxperf_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vxperf")
    return {name: run_scenario("vxperf", name, tmp) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_matches_golden(name, vxperf_results):
    golden_path = os.path.join(HERE, "golden", f"{name}.json")
    with open(golden_path) as handle:
        golden = json.load(handle)
    result, _ = vxperf_results[name]
    assert golden["records"], "a golden file without records checks nothing"
    same(comparable(name, result), comparable(name, golden), name)


@pytest.mark.skipif(not HAVE_REFERENCE, reason=f"reference module not found at {REFERENCE}")
@pytest.mark.parametrize("name", NAMES)
def test_matches_reference_live(name, vxperf_results, tmp_path):
    reference, _ = run_scenario("reference", name, tmp_path)
    result, _ = vxperf_results[name]
    same(comparable(name, result), comparable(name, reference), name)
    with open(os.path.join(HERE, "golden", f"{name}.json")) as handle:
        assert json.load(handle) == reference, (
            f"golden/{name}.json is stale: rerun tests/python/make_golden.py")


def test_scenarios_cover_the_conventions(vxperf_results):
    """The scenarios price what they are meant to: tokens from seq_len (Wan, padded), from the
    patch grid (diffusers, batch 2 under batched guidance), from (B, T, D) (packed); two experts;
    a nested request; a swapped transformer; a failed request still reported; two threads."""
    records = {name: result["records"] for name, (result, _) in vxperf_results.items()}
    wan = records["wan"]
    assert wan[0]["stages"] == {"text_encoder": 2, "transformer": 4, "transformer_2": 4,
                                "vae_dec": 1}
    assert wan[0]["dit"]["tokens"] == 8 and wan[0]["dit"]["batch"] == 1
    assert wan[1]["stages"]["vae_enc"] == 1 and wan[1]["dit"]["tokens"] == 24
    assert records["diffusers"][0]["warmup"] and not records["diffusers"][1]["warmup"]
    assert records["diffusers"][1]["dit"]["batch"] == 2
    assert records["diffusers"][2]["stages"]["vae_dec"] == 1  # the streaming decoder
    # What its blocks run on: 8 latent tokens joined by 8 of text (the reference says 8).
    assert records["packed"][0]["dit"]["tokens"] == 16
    nested = records["nested"]
    assert [r["req"] for r in nested] == [0, 1, 2]
    assert nested[0]["stages"]["latent_upsampler"] == 1 and nested[1]["dit"] is None
    swap = records["swap"]
    assert swap[1]["dit"]["params"] > swap[0]["dit"]["params"]
    failing = records["failing"]
    assert len(failing) == 3 and failing[1]["stages"]["transformer"] == 2
    assert vxperf_results["failing"][0]["notes"] == [
        "raised RuntimeError: transformer failed at call 3"]
    threads = records["threads"]
    assert [r["dit"]["tokens"] for r in threads] == [8, 16]
    settings = records["settings"][0]["dit"]
    assert settings["attn_share"] == 0.0 and settings["params"] == 123456789
    assert settings["peak_tflops"] == 100.0


def test_mixed_micro_steps_are_each_priced_at_their_own_length(vxperf_results):
    """Each step of train_full holds one micro-step of 8 tokens (seq_len, padded) and one of 16:
    12 per sample, every step, each forward priced at its own length."""
    result, _ = vxperf_results["train_full"]
    windows = [r for r in result["records"] if r["kind"] == "train_window"]
    assert windows
    params = windows[0]["throughput"]["params"]
    widths, text = 2 * 32, 12  # the tiny Wan: two blocks of 32-wide self and cross attention

    def per_sample(tokens):
        return 2.0 * params * tokens + 4.0 * tokens * tokens * widths + 4.0 * tokens * text * widths

    for window in windows:
        t = window["throughput"]
        assert t["tokens"] == 12.0
        assert math.isclose(t["flops_per_step"],
                            t["flops_coef"] * (per_sample(8) + per_sample(16)), rel_tol=1e-12)


def test_sharded_counts_what_the_ranks_hold(vxperf_results):
    """A wrapper that looks like FSDP but holds the whole model and no sharding metadata, at rank 0
    of 2: the reference multiplies its parameters by the world size (the transformer counted
    twice, 1.5x the pipeline's) and prices the request against both ranks' peak; vxperf counts
    what the rank holds, says once that it cannot read the sharding, and prices the request
    against the one device that computed it."""
    (result, stderr) = vxperf_results["sharded"]
    sharded = result["records"][0]
    wan = vxperf_results["wan"][0]["records"][0]["dit"]
    golden_path = os.path.join(HERE, "golden", "sharded.json")
    with open(golden_path) as handle:
        reference = json.load(handle)["records"][0]["dit"]
    dit = sharded["dit"]
    assert sharded["world_size"] == 2 and dit["devices"] == 1 and reference["devices"] == 2
    assert dit["params"] == wan["params"] and reference["params"] == 3 * wan["params"] // 2
    for key in ("tokens", "batch", "flops_per_fwd", "attn_share"):
        assert dit[key] == wan[key], key
    assert dit["peak_tflops"] == 10.0 and reference["peak_tflops"] == 20.0
    assert stderr.count("cannot read how FullyShardedDataParallel is sharded") == 1
