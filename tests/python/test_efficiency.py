"""Honest efficiency from Python: skipped and partial forwards (explicit, and through diffusers'
cache hooks via the stand-in), the measured peak (probe, shared cache, auto pricing), the dtype
read off the parameters, and attention density."""
import json
import math
import os

from conftest import STANDINS, clean_env, read_records, run_python


def records_of(tmp_path, code, check=True, **settings):
    path = tmp_path / "records.jsonl"
    env = clean_env(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(path),
                    XDG_CACHE_HOME=str(tmp_path / "cache"), **settings)
    env["PYTHONPATH"] += os.pathsep + STANDINS
    proc = run_python(code, env=env, check=check)
    return read_records(path), proc


def test_skipped_and_partial_calls_are_timed_but_priced_at_their_fraction(tmp_path):
    records, _ = records_of(tmp_path, """
        import time, vxperf
        vxperf.declare_model("transformer", params=1000, widths=(64, 64, 2), text_tokens=0)
        with vxperf.request():
            for fraction in (None, 0.0, 0.25, None):
                with vxperf.stage("transformer", 100, 2):
                    if fraction == 0.0:
                        vxperf.skip_forward()
                    elif fraction is not None:
                        vxperf.forward_fraction(fraction)
                    time.sleep(0.002)
            vxperf.forward_fraction(0.5)  # after the call: the last one closed
    """)
    assert len(records) == 1
    dit = records[0]["dit"]
    stage = records[0]["stages"]["transformer"]
    assert stage["count"] == 4  # every call timed
    assert dit["skipped_fwd"] == 1
    assert dit["effective_fwd"] == 1 + 0 + 0.25 + 0.5
    per_call = (2.0 * 1000 * 100 + 4.0 * 100 * 100 * 64) * 2
    assert dit["flops_per_fwd"] == per_call  # a full forward's cost
    assert math.isclose(dit["tflops"], per_call * 1.75 / (stage["total_ms"] / 1000) / 1e12,
                        rel_tol=1e-12)


def test_no_new_fields_without_skips(tmp_path):
    records, _ = records_of(tmp_path, """
        import vxperf
        vxperf.declare_model("transformer", params=1000, widths=(64, 64, 2), text_tokens=0,
                             dtype="bf16")
        with vxperf.request():
            with vxperf.stage("transformer", 100, 1):
                pass
    """)
    dit = records[0]["dit"]
    for field in ("skipped_fwd", "effective_fwd", "peak_source", "dtype", "attn_density"):
        assert field not in dit, field


TRACKED_PIPELINE = """
    import vxperf, torch
    import tiny_models as tm
    from diffusers.hooks import (FirstBlockCacheConfig, SkipCacheConfig,
                                 apply_first_block_cache, apply_skip_cache)
    pipe = tm.diffusers_pipeline()
    {setup}
    pipe("a cat", steps=4)
"""


def test_track_cache_prices_a_first_block_cache_by_the_blocks_that_ran(tmp_path):
    # The first call runs both blocks; every later one only the first (a huge threshold).
    setup = """
    apply_first_block_cache(pipe.transformer, FirstBlockCacheConfig(threshold=1e9))
    vxperf.instrument_pipeline(pipe)
    assert vxperf.track_cache(pipe.transformer)
    """
    records, _ = records_of(tmp_path, TRACKED_PIPELINE.format(setup=setup))
    dit = records[0]["dit"]
    assert records[0]["stages"]["transformer"]["count"] == 4
    assert dit["effective_fwd"] == 1 + 3 * 0.5
    assert dit["skipped_fwd"] == 0


def test_track_cache_order_does_not_matter_for_block_hooks(tmp_path):
    # vxperf first, the cache after: the counter still sits under the cache's block hooks.
    setup = """
    vxperf.instrument_pipeline(pipe)
    assert vxperf.track_cache(pipe.transformer)
    apply_first_block_cache(pipe.transformer, FirstBlockCacheConfig(threshold=1e9))
    vxperf.track_cache(pipe.transformer)  # a second call changes nothing
    """
    records, _ = records_of(tmp_path, TRACKED_PIPELINE.format(setup=setup))
    assert records[0]["dit"]["effective_fwd"] == 2.5


def test_track_cache_makes_a_whole_skip_a_skipped_call(tmp_path):
    # A TeaCache-like hook on the transformer: calls 2 and 4 return the last output, no block runs.
    setup = """
    apply_skip_cache(pipe.transformer, SkipCacheConfig(every=2))
    vxperf.instrument_pipeline(pipe)
    vxperf.track_cache(pipe.transformer)
    """
    records, _ = records_of(tmp_path, TRACKED_PIPELINE.format(setup=setup))
    dit = records[0]["dit"]
    assert records[0]["stages"]["transformer"]["count"] == 4
    assert dit["skipped_fwd"] == 2
    assert dit["effective_fwd"] == 2.0


def test_track_cache_never_marks_a_call_the_timer_did_not_see(tmp_path):
    # A cache hook set after vxperf. On torch >= 2.1 the timer sits around the whole module call
    # (as a torch module hook does), so the cache's hits are timed and marked skipped. On older
    # torch the timer is the forward the cache wraps: its hits never reach it, so they are not
    # timed, and the call before them must not be marked in their place.
    setup = """
    vxperf.instrument_pipeline(pipe)
    apply_skip_cache(pipe.transformer, SkipCacheConfig(every=2))
    vxperf.track_cache(pipe.transformer)
    from vxperf import _hooks
    print("around the call" if _hooks.instance_call() else "as the forward")
    """
    records, proc = records_of(tmp_path, TRACKED_PIPELINE.format(setup=setup))
    dit = records[0]["dit"]
    if proc.stdout.strip() == "around the call":
        assert records[0]["stages"]["transformer"]["count"] == 4
        assert dit["skipped_fwd"] == 2
    else:
        assert records[0]["stages"]["transformer"]["count"] == 2
        assert "skipped_fwd" not in dit


def test_track_cache_without_diffusers_watches_blocks_and_says_when_there_are_none(tmp_path):
    # The blocks are watched without diffusers (a cache inside the forward needs none of its
    # hooks); a model without blocks is said once.
    path = tmp_path / "records.jsonl"
    proc = run_python("""
        import sys
        sys.modules["diffusers"] = None  # not importable, where the real one is installed
        import torch, vxperf
        import tiny_models as tm
        assert vxperf.track_cache(tm.WanTransformer3DModel()) is True
        linear = torch.nn.Linear(2, 2)
        assert vxperf.track_cache(linear) is False
        assert vxperf.track_cache(linear) is False
    """, env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(path)))
    assert proc.stderr.count("track_cache(): Linear holds no blocks vxperf can see") == 1


# ---- the peak -------------------------------------------------------------------------------


def test_probe_is_bounded_positive_and_cached(tmp_path):
    """The probe's promises, not its speed: within its budget (plus one GEMM round), a positive
    finite rate, and a second calibration that reads the cache instead of measuring."""
    cache = tmp_path / "cache"
    proc = run_python("""
        import json, math, time, torch, vxperf
        from vxperf import _peak
        threads = torch.get_num_threads()
        t0 = time.perf_counter()
        r = _peak.probe("cpu", "fp32", budget_s=0.3, threads=1)
        wall = time.perf_counter() - t0
        assert torch.get_num_threads() == threads
        assert math.isfinite(r["tflops"]) and r["tflops"] > 0, r
        assert r["rounds"] >= 1 and r["gemms"] >= 1 and r["n"] >= 256
        assert r["seconds"] <= 0.3 + 3 * r["longest_s"] + 0.5, r
        assert r["seconds"] <= wall
        first = vxperf.calibrate("cpu", torch.float32, budget_s=0.3, threads=1)
        second = vxperf.calibrate("cpu", "fp32", budget_s=0.3, threads=1)
        assert first["from_cache"] is False and second["from_cache"] is True
        assert second["tflops"] == first["tflops"]
        assert first["device"].startswith("cpu: ") and first["device"].endswith("(1 thread)")
        print(json.dumps(first))
    """, env=clean_env(XDG_CACHE_HOME=str(cache)))
    first = json.loads(proc.stdout)
    # The one cache format the C++ engine reads and writes.
    data = json.loads((cache / "vxperf" / "peaks.json").read_text())
    assert data["format"] == "vxperf-peaks" and data["version"] == 1
    [entry] = data["peaks"]
    assert entry["device"] == first["device"] and entry["dtype"] == "fp32"
    assert entry["tflops"] == first["tflops"] and entry["by"] == "torch"


def test_corrupt_or_foreign_cache_is_ignored_with_a_warning(tmp_path):
    cache = tmp_path / "cache"
    (cache / "vxperf").mkdir(parents=True)
    for text, why in (("{not json", "is not JSON"),
                      ('{"peaks": []}', "is not a vxperf peak cache")):
        (cache / "vxperf" / "peaks.json").write_text(text)
        proc = run_python("""
            import vxperf
            r = vxperf.calibrate("cpu", "fp32", budget_s=0.2, threads=1)
            assert r is not None and r["from_cache"] is False
        """, env=clean_env(XDG_CACHE_HOME=str(cache)))
        assert why in proc.stderr and "ignored" in proc.stderr, proc.stderr
        # Replaced by the new measurement.
        assert json.loads((cache / "vxperf" / "peaks.json").read_text())["format"] == \
            "vxperf-peaks"


def test_what_cannot_be_probed_is_said(tmp_path):
    proc = run_python("""
        import vxperf
        from vxperf import _peak
        for dtype in ("tf32", "fp8"):
            try:
                _peak.probe("cpu", dtype)
            except ValueError as error:
                assert dtype in str(error)
            else:
                raise AssertionError(dtype)
        assert vxperf.calibrate("cpu", "fp8") is None
    """, env=clean_env(XDG_CACHE_HOME=str(tmp_path)))
    assert "no fp8 peak measured" in proc.stderr


def test_auto_prices_against_the_cached_peak_in_the_models_dtype(tmp_path):
    """VIDEOX_PERF_PEAK_TFLOPS=auto on a CPU: the peak the C++ side (or anyone) cached for this
    CPU and the model's dtype is read, not measured again, and the record says "measured"."""
    cache = tmp_path / "cache"
    (cache / "vxperf").mkdir(parents=True)
    key = run_python("""
        import torch
        from vxperf import _ext
        print(_ext.cpu_device_key(torch.get_num_threads()))
    """).stdout.strip()
    (cache / "vxperf" / "peaks.json").write_text(json.dumps({
        "format": "vxperf-peaks", "version": 1,
        "peaks": [{"device": key, "dtype": "fp32", "tflops": 0.5, "n": 512, "gemms": 3,
                   "seconds": 0.1, "ts": 0, "by": "libtorch"}]}))
    records, proc = records_of(tmp_path, """
        import vxperf
        import tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        pipe("a cat", frames=5, steps=2)
    """, VIDEOX_PERF_PEAK_TFLOPS="auto")
    dit = records[0]["dit"]
    assert dit["peak_tflops"] == 0.5
    assert dit["peak_source"] == "measured"
    assert dit["dtype"] == "fp32"  # the tiny model's parameters
    assert math.isclose(dit["mfu"], dit["tflops"] / 0.5, rel_tol=1e-12)
    assert "no peak was measured" not in proc.stderr


def test_auto_measures_once_when_nothing_is_cached(tmp_path):
    records, proc = records_of(tmp_path, """
        import vxperf
        import tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        pipe("a cat", frames=5, steps=1)
        pipe("a dog", frames=5, steps=1)
    """, VIDEOX_PERF_PEAK_TFLOPS="auto", VIDEOX_PERF_DTYPE="fp32")
    assert [r["dit"]["peak_source"] for r in records] == ["measured", "measured"]
    assert records[0]["dit"]["peak_tflops"] == records[1]["dit"]["peak_tflops"] > 0
    data = json.loads((tmp_path / "cache" / "vxperf" / "peaks.json").read_text())
    assert len(data["peaks"]) == 1 and data["peaks"][0]["by"] == "torch"


def test_dtype_variable_and_density(tmp_path):
    records, out = records_of(tmp_path, """
        import json, vxperf
        import tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.diffusers_pipeline())
        pipe("dense", steps=1)
        vxperf.set_attention_density(pipe.transformer, 0.5)
        pipe("causal", steps=1)
        print(json.dumps(sum(b.attn1.to_q.out_features for b in pipe.transformer.blocks)))
    """, VIDEOX_PERF_DTYPE="fp16")
    dense, causal = (r["dit"] for r in records)
    assert dense["dtype"] == causal["dtype"] == "fp16"
    assert "attn_density" not in dense and causal["attn_density"] == 0.5
    # The density is the self-attention square's: that term halves (4 T^2 W_self a sample), the
    # linear layers and the cross-attention stay.
    self_width = json.loads(out.stdout.strip().splitlines()[-1])
    square = 4 * dense["tokens"] ** 2 * self_width * dense["batch"]
    assert math.isclose(causal["flops_per_fwd"], dense["flops_per_fwd"] - square * 0.5,
                        rel_tol=1e-12)


def test_training_forward_fraction(tmp_path):
    records, _ = records_of(tmp_path, """
        import torch, vxperf
        model = torch.nn.Linear(8, 8)
        vxperf.register_model(params=1000, trainable=1000)
        opt = object()
        for step in range(2):
            with vxperf.micro_step():
                with vxperf.model_call("fwd", 100, 2, fraction=0.0 if step else 1.0):
                    pass
                with vxperf.optimizer_step(opt):
                    pass
        vxperf.finish()
    """, VIDEOX_PERF_EVERY="2")
    throughput = records[-1]["throughput"]
    assert throughput["skipped_fwd"] == 1 and throughput["effective_fwd"] == 1.0
    assert throughput["flops_per_step"] == 3.0 * 2.0 * 1000 * 100 * 2 / 2
