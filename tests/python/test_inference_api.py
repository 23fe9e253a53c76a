"""The inference side of the package beyond what the side-by-side scenarios cover: metrics off,
the explicit API, exceptions, bad input, install() over diffusers, and CUDA timing through the
engine's driver backend (over the fake driver, which also counts what was called)."""
import json
import os

import pytest

from conftest import FAKE_CUDA, STANDINS, clean_env, read_records, run_python


def test_off_means_nothing_is_touched():
    """VIDEOX_PERF unset (or 0): nothing wrapped, no hook, no engine, no output; the explicit API
    hands back no-op scopes and the decorator the function itself."""
    code = """
        import torch, vxperf
        from vxperf import _ext
        import tiny_models as tm
        assert not vxperf.enabled()
        assert vxperf.install() is False and vxperf.install_training() is False
        call = tm.WanPipeline.__dict__["__call__"]
        pipe = tm.wan_pipeline()
        pipe("off", steps=1)
        assert tm.WanPipeline.__dict__["__call__"] is call
        assert "forward" not in vars(pipe.transformer)
        assert not pipe.transformer._forward_pre_hooks and not pipe.transformer._forward_hooks
        null = _ext.NULL_SCOPE
        assert vxperf.request() is null and vxperf.stage("transformer", 5, 2) is null
        assert vxperf.micro_step() is null and vxperf.model_call("fwd", 5) is null
        assert vxperf.backward() is null and vxperf.clip() is null
        assert vxperf.optimizer_step(object()) is null
        with vxperf.request(), vxperf.stage("x"):
            pass
        def f(x):
            return x
        assert vxperf.timed("transformer")(f) is f
        assert vxperf.instrument_module(pipe.vae) is pipe.vae and "decode" not in vars(pipe.vae)
        vxperf.register_model(pipe.transformer)
        vxperf.declare_model("transformer", pipe.transformer)
        assert not _ext.configured()  # the engine was never even made
    """
    for value in (None, "0"):
        env = clean_env() if value is None else clean_env(VIDEOX_PERF=value)
        proc = run_python(code, env=env)
        assert proc.stderr == "", proc.stderr


def test_a_switch_that_does_not_read_is_said_once_and_measures_nothing():
    proc = run_python("""
        import vxperf
        assert vxperf.install() is False and vxperf.install_training() is False
        assert not vxperf.enabled()
    """, env=clean_env(VIDEOX_PERF="yes", VIDEOX_PERF_JSON="/nonexistent/never-written.jsonl"))
    assert proc.stderr == 'vxperf: VIDEOX_PERF="yes" is not 0, 1 or 2 (an integer); using 0\n', proc.stderr


def test_the_stage_table_agrees_with_the_registry_and_the_package():
    """The engine's well-known stages (include/vxperf/stages.h) as the package reads them: each
    interned at its id, priced as the engine's rule says, its calls in training a model call's
    phase; the package's names, priced components and VAE phases are the table's."""
    code = """
        from vxperf import _ext, _stages, _training
        rows = _ext.stages()
        assert [row[1] for row in rows] == list(range(len(rows)))
        for name, id, priced, phase in rows:
            assert _ext.stage_id(name) == id, name
            assert _ext.is_priced_stage(name) == priced, name
            assert phase in _ext.model_phases(), name
        assert _stages.STAGES == tuple(_stages.Stage(*row) for row in rows)
        assert [s.name for s in _stages.STAGES] == [
            "transformer", "transformer_2", "text_encoder", "vae_enc", "vae_dec", "vision", "aux"]
        assert _stages.PRICED == ("transformer", "transformer_2")
        assert _ext.is_priced_stage("transformer_3") and not _ext.is_priced_stage("unet")
        assert _training.VAE_METHODS == (("encode", "vae_enc"), ("decode", "vae_dec"),
                                         ("encode_stream", "vae_enc"), ("decode_stream", "vae_dec"))
    """
    run_python(code, env=clean_env())


def test_explicit_request_stage_and_decorator(tmp_path):
    records = tmp_path / "records.jsonl"
    code = """
        import vxperf
        vxperf.declare_model("transformer", params=1000, widths=(64, 64, 2), text_tokens=16)

        @vxperf.timed("vae_dec")
        def decode(x):
            return x * 2

        class Boom(Exception):
            pass

        raised = Boom("kept")
        for attempt in range(2):
            try:
                with vxperf.request():
                    with vxperf.stage("text_encoder"):
                        pass
                    with vxperf.request():  # nested: belongs to the outer request
                        for _ in range(3):
                            with vxperf.stage("transformer", tokens=100, batch=2):
                                pass
                    assert decode(21) == 42
                    if attempt == 1:
                        raise raised
            except Boom as error:
                assert error is raised  # the very same exception object
        print("ok")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    assert proc.stdout.strip() == "ok"
    got = read_records(records)
    assert [r["req"] for r in got] == [0, 1]  # the failing request is reported too
    for record in got:
        counts = {name: stage["count"] for name, stage in record["stages"].items()}
        assert counts == {"text_encoder": 1, "transformer": 3, "vae_dec": 1}
        dit = record["dit"]
        per_sample = 2 * 1000 * 100 + 4 * 100 * 100 * 64 + 4 * 100 * 16 * 64
        assert dit["tokens"] == 100 and dit["batch"] == 2 and dit["params"] == 1000
        assert dit["flops_per_fwd"] == per_sample * 2
        assert dit["attn_share"] == pytest.approx((per_sample - 2 * 1000 * 100) / per_sample)


def test_component_exception_propagates_and_request_is_reported(tmp_path):
    records = tmp_path / "records.jsonl"
    code = """
        import torch, vxperf
        import tiny_models as tm

        class VaeError(Exception):
            pass

        raised = VaeError("decoder out of memory")

        class BrokenVAE(tm.VideoVAE):
            def decode(self, latents):
                raise raised

        pipe = tm.wan_pipeline()
        pipe.vae = BrokenVAE()
        vxperf.instrument_pipeline(pipe)
        try:
            pipe("fails in the vae", steps=1)
        except VaeError as error:
            assert error is raised and error.__traceback__ is not None
            print("propagated")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    assert proc.stdout.strip() == "propagated"
    (record,) = read_records(records)
    # a VAE call that raised still counts (as the reference's try/finally wrapper does)
    assert record["stages"]["vae_dec"]["count"] == 1
    assert record["stages"]["transformer"]["count"] == 2


def test_bad_input_warns_once_and_runs(tmp_path):
    code = """
        import torch, vxperf
        import tiny_models as tm
        thing = object()
        assert vxperf.instrument_pipeline(thing) is thing
        assert vxperf.instrument_pipeline(thing) is thing

        class Unreadable(tm.TinyPipeline):
            @property
            def components(self):
                raise KeyError("text_encoder")
            def __call__(self, x):
                return x + 1

        pipe = vxperf.instrument_pipeline(Unreadable())
        assert pipe(1) == 2 and pipe(2) == 3

        class Odd(tm.TinyPipeline):
            component_names = ("transformer",)
            def __call__(self, x):
                return self.transformer(x)

        odd = vxperf.instrument_pipeline(Odd(transformer=torch.nn.Linear(4, 4)))
        for _ in range(3):
            odd(torch.ones(4))
        print("ran")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1))
    assert proc.stdout.strip() == "ran"
    warnings = [line for line in proc.stderr.splitlines()
                if line.startswith("vxperf:") and "metrics on" not in line]
    assert len(warnings) == 4, proc.stderr  # not a pipeline, components, widths, layout
    assert "object is not a pipeline" in warnings[0]
    assert "cannot read the components of Unreadable" in warnings[1]
    assert any("no token axis" in w for w in warnings)


def test_instrumented_modules_copy_and_pickle(tmp_path):
    records = tmp_path / "records.jsonl"
    code = """
        import copy, io, pickle, torch, vxperf
        import tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        from vxperf import _hooks
        twin = copy.deepcopy(pipe.transformer)
        assert _hooks.timer_of(twin)._vxperf_stage == "transformer"
        assert _hooks.timer_of(twin).__wrapped__.__self__ is twin  # bound to the copy
        buffer = io.BytesIO()
        torch.save(pipe.transformer, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=False)  # a whole module, not weights
        x = torch.randn(1, 4, 2, 4, 4)
        args = dict(x=x, t=torch.ones(1), context=torch.randn(1, 12, 16), seq_len=8)
        assert torch.equal(loaded(**args), pipe.transformer(**args))
        pipe.transformer = twin
        pipe("copied", steps=1)
    """
    run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    (record,) = read_records(records)
    assert record["stages"]["transformer"]["count"] == 2


def test_install_wraps_diffusers_pipelines_defined_later(tmp_path):
    records = tmp_path / "records.jsonl"
    code = """
        import sys, vxperf
        import tiny_models as tm
        assert vxperf.install()
        from diffusers import DiffusionPipeline

        class LatePipeline(DiffusionPipeline):  # defined after install(): still measured
            component_names = ("transformer",)
            def __call__(self, x):
                return self.transformer(hidden_states=x)

        import torch

        class Tower(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(16, 16)
            def forward(self, hidden_states):
                return self.proj(hidden_states)

        late = LatePipeline(transformer=Tower())
        late(torch.randn(1, 10, 16))

        class Custom(tm.TinyPipeline):
            component_names = ("text_encoder",)
            def __call__(self, ids):
                return self.text_encoder(ids)

        assert vxperf.install(pipelines=[Custom])  # a class of one's own
        Custom(text_encoder=tm.TextEncoder())(torch.zeros(1, 4, dtype=torch.long))
        vxperf.install(pipelines=42)  # not a class or a module: said once, ignored
    """
    env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records)
    env["PYTHONPATH"] += os.pathsep + STANDINS
    proc = run_python(code, env=env)
    assert "is neither a pipeline class nor a module" in proc.stderr
    late, custom = read_records(records)
    assert late["stages"]["transformer"]["count"] == 1 and late["dit"]["tokens"] == 10
    assert list(custom["stages"]) == ["text_encoder"]


@pytest.mark.skipif(not os.path.exists(FAKE_CUDA), reason="fake CUDA driver not built")
def test_cuda_markers_sync_once_on_the_request_device(tmp_path):
    """Stage markers are driver events on the given stream of the request's device; one
    synchronize per request, on that device only (device 0 is never touched); peak memory comes
    from the callbacks (torch's allocator counters in real use), reset at every request start."""
    records = tmp_path / "records.jsonl"
    code = f"""
        import ctypes, json, vxperf
        from vxperf import _state
        fake = ctypes.CDLL({FAKE_CUDA!r})
        resets = []
        peaks = lambda device: (1000 + device, 2000 + device)
        assert _state.ensure_cuda(1, {FAKE_CUDA!r}, peaks, resets.append)
        for _ in range(2):
            with vxperf.request(device=1, stream=0x5000):
                for _ in range(3):
                    with vxperf.stage("transformer", tokens=64):
                        pass
                with vxperf.stage("vae_dec"):
                    pass
        print(json.dumps(dict(syncs0=fake.fake_cuda_syncs(0), syncs1=fake.fake_cuda_syncs(1),
                              touched0=fake.fake_cuda_touched(0),
                              records1=fake.fake_cuda_records(1), resets=resets)))
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    seen = json.loads(proc.stdout)
    assert seen == {"syncs0": 0, "syncs1": 2, "touched0": 0, "records1": 16, "resets": [1, 1]}
    for record in read_records(records):
        assert record["device"] == "cuda:1"
        assert record["peak_alloc_bytes"] == 1001 and record["peak_reserved_bytes"] == 2001
        assert record["stages"]["transformer"]["count"] == 3


def test_level_two_dumps_every_call(tmp_path):
    code = """
        import vxperf
        with vxperf.request():
            for _ in range(2):
                with vxperf.stage("transformer"):
                    pass
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=2))
    assert "[Perf][rank0] transformer steps(ms): " in proc.stderr


def test_cpu_run_makes_no_cuda_call(tmp_path):
    """A pipeline on the CPU is timed on the host clock: the driver is never loaded and torch's
    CUDA state is never initialized by the metrics."""
    records = tmp_path / "records.jsonl"
    code = """
        import torch, vxperf
        import tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.diffusers_pipeline())
        pipe("cpu", steps=2)
        maps = open("/proc/self/maps").read()
        assert "libcuda" not in maps and "fake_cuda" not in maps
        assert not torch.cuda.is_initialized()
        print("host only")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    assert proc.stdout.strip() == "host only" and "CUDA" not in proc.stderr
    (record,) = read_records(records)
    assert "device" not in record and "peak_alloc_bytes" not in record


def test_videos_a_call_generates_are_recorded(tmp_path):
    """A pipeline call's videos, from its kwargs as diffusers names them (num_videos_per_prompt
    times the prompts), or the explicit request's; present in the record only above one."""
    records = tmp_path / "records.jsonl"
    code = """
        import vxperf, torch
        from vxperf._inference import videos_of
        import tiny_models as tm
        assert videos_of(("a cat",), {}) == 1
        assert videos_of((["a", "b", "c"],), {"num_videos_per_prompt": 2}) == 6
        assert videos_of((), {"prompt": ["a", "b"]}) == 2
        assert videos_of((), {"num_images_per_prompt": 3}) == 3
        assert videos_of((), {"prompt_embeds": torch.ones(5, 7, 3)}) == 5
        assert videos_of((torch.ones(2),), {"num_videos_per_prompt": None}) == 1
        assert videos_of((), {"num_videos_per_prompt": "many"}) == 1  # unreadable: 1

        class Batched(tm.WanPipeline):
            def __call__(self, prompt, num_videos_per_prompt=1, steps=1):
                return tm.WanPipeline.__call__(self, "x", steps=steps)

        pipe = vxperf.instrument_pipeline(Batched(**tm.wan_pipeline().components))
        pipe(["a", "b"], num_videos_per_prompt=2)
        pipe("a")
        with vxperf.request(videos=3):
            pass
        with vxperf.request(videos="three"):  # said once, one video
            pass
        print("ok")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    assert proc.stdout.strip() == "ok", proc.stderr
    got = read_records(records)
    assert [r.get("videos") for r in got] == [4, None, 3, None]
    assert "energy_j_per_video" not in got[0]  # no device meter on the CPU
    assert proc.stderr.count("request(videos='three') is not a count") == 1


def test_a_served_requests_queue_wait_first_step_and_video(tmp_path):
    """A server's request: the wait it queued (as seconds, or as time.time() when it arrived),
    its time to the first denoising step, its video's length (num_frames at fps, else
    VIDEOX_PERF_FPS) and real-time factor; a queued time in the future or before the process
    began, or frames that are no count, are said once and left out, the request kept."""
    records = tmp_path / "records.jsonl"
    code = """
        import time, torch, vxperf
        import tiny_models as tm
        arrived = time.time()  # a request that arrived now waits until the fourth one begins

        class Video(tm.WanPipeline):
            def __call__(self, prompt, num_frames=None, fps=None, steps=2):
                return tm.WanPipeline.__call__(self, "x", steps=steps)

        pipe = vxperf.instrument_pipeline(Video(**tm.wan_pipeline().components))
        pipe("a", num_frames=81, fps=16)
        pipe("a", num_frames=33)  # fps from VIDEOX_PERF_FPS
        with vxperf.request(queue_s=1.5, frames=48, fps=24):
            with vxperf.stage("transformer", tokens=8, batch=1):
                time.sleep(0.01)
        with vxperf.request(queued_at=arrived):
            pass
        for bad in (dict(queued_at=time.time() + 60), dict(queued_at=1.0),
                    dict(queue_s="soon"), dict(frames="many", fps=16)):
            with vxperf.request(**bad):
                pass
        print("ok")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records,
                                          VIDEOX_PERF_FPS=11))
    assert proc.stdout.strip() == "ok", proc.stderr
    got = read_records(records)
    assert len(got) == 8
    first, second, explicit, arrived = got[:4]
    assert first["video_s"] == 81 / 16
    assert abs(first["realtime_factor"] - first["e2e_s"] / (81 / 16)) < 1e-9
    assert 0 < first["first_step_s"] < first["e2e_s"]
    assert second["video_s"] == 3.0 and "queue_s" not in second
    assert explicit["queue_s"] == 1.5 and explicit["video_s"] == 2.0
    assert 0.01 <= explicit["first_step_s"] <= explicit["e2e_s"]
    assert 0 < arrived["queue_s"] < 60 and "first_step_s" not in arrived
    for bad in got[4:]:
        assert "queue_s" not in bad and "video_s" not in bad
    assert proc.stderr.count("in the future") == 1, proc.stderr
    assert proc.stderr.count("before this process started") == 1, proc.stderr
    assert proc.stderr.count("queue time 'soon'") == 1, proc.stderr
    assert proc.stderr.count("frames='many'") == 1, proc.stderr


def test_a_servers_queue_counts_and_its_tickets_wait(tmp_path):
    """vxperf.queued() as a request arrives: the queued count grows; the ticket handed to
    request(queued=) leaves the queue as the request begins, its wait the record's queue_s; a
    cancelled one leaves unserved; each leaves once. The gauges say so between requests."""
    records = tmp_path / "records.jsonl"
    code = """
        import time, vxperf, vxperf.prometheus
        from prometheus_client import CollectorRegistry
        registry = CollectorRegistry()
        vxperf.prometheus.register(registry)
        with vxperf.request():
            pass
        gauge = lambda name: registry.get_sample_value(name, {"rank": "0"})
        first, second, third = vxperf.queued(), vxperf.queued(), vxperf.queued()
        print("queued", gauge("vxperf_requests_queued"))
        time.sleep(0.05)
        with vxperf.request(queued=first):
            print("inside", gauge("vxperf_requests_in_flight"), gauge("vxperf_requests_queued"))
        second.cancel()
        second.cancel()
        with vxperf.request(queued=first):  # a ticket already used: no second leave
            pass
        print("after", gauge("vxperf_requests_in_flight"), gauge("vxperf_requests_queued"))
        third.cancel()
        print("empty", gauge("vxperf_requests_queued"))
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    lines = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert lines == {"queued": "3.0", "inside": "1.0 2.0", "after": "0.0 1.0",
                     "empty": "0.0"}, proc.stdout + proc.stderr
    got = read_records(records)
    assert "queue_s" not in got[0] and 0.05 <= got[1]["queue_s"] < 60
    assert got[2]["queue_s"] >= got[1]["queue_s"]  # the used ticket still says when it arrived
