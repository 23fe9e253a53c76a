"""Where a component's timer sits (vxperf/_hooks.py), on whichever torch runs the tests: put back
when something replaced it, a stage that went missing said once, a module never timed twice, and
the bad inputs of #17 (an autocast state or a hook registry that cannot be read, a module that
cannot be timed): one warning each, the call runs, the output is unchanged."""

from conftest import clean_env, read_records, run_python


def run(tmp_path, code, **settings):
    path = tmp_path / "records.jsonl"
    proc = run_python(code, env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_JSON=str(path),
                                          XDG_CACHE_HOME=str(tmp_path / "cache"), **settings))
    warnings = [line for line in proc.stderr.splitlines()
                if line.startswith("vxperf:") and "metrics on" not in line]
    return read_records(path), warnings, proc


def test_a_timer_replaced_during_a_call_is_said_once_and_put_back(tmp_path):
    # A pipeline that, inside its call, puts a plain function where vxperf's timer was (what a
    # hook library may do): that request's transformer calls go unmeasured, which is said once;
    # the next request times them again.
    records, warnings, proc = run(tmp_path, """
        import torch, vxperf
        from vxperf import _hooks
        import tiny_models as tm

        class Sneaky(tm.WanPipeline):
            sneak = False
            def __call__(self, *args, **kwargs):
                if self.sneak:
                    self.sneak = False
                    module = self.transformer
                    for attribute in list(_hooks.timers(module)):
                        module.__dict__.pop(attribute, None)
                    if "forward" in module.__dict__:
                        plain = type(module).forward.__get__(module)
                        module.__dict__["forward"] = lambda *a, **k: plain(*a, **k)
                return super().__call__(*args, **kwargs)

        torch.manual_seed(0)
        pipe = vxperf.instrument_pipeline(Sneaky(
            tokenizer=tm.Tokenizer(), text_encoder=tm.TextEncoder(),
            transformer=tm.WanTransformer3DModel(), transformer_2=tm.WanTransformer3DModel(),
            vae=tm.VideoVAE(), scheduler=tm.FlowScheduler(1)))
        outputs = []
        for sneak in (False, True, False, False):
            pipe.sneak = sneak
            torch.manual_seed(0)
            outputs.append(pipe("a cat", steps=2))
        assert all(torch.equal(outputs[0], o) for o in outputs[1:])
        print("ok")
    """)
    assert proc.stdout.strip() == "ok"
    assert [("transformer" in r["stages"]) for r in records] == [True, False, True, True]
    assert len(warnings) == 1, warnings
    assert "stage transformer" in warnings[0] and "replaced during the call" in warnings[0]


def test_an_unreadable_autocast_state_is_said_once_and_priced_by_the_parameters(tmp_path):
    records, warnings, _ = run(tmp_path, """
        import torch, vxperf
        import tiny_models as tm

        def broken(*args, **kwargs):
            raise RuntimeError("autocast state unavailable")

        for name in ("is_autocast_enabled", "is_autocast_cpu_enabled", "get_autocast_dtype"):
            if hasattr(torch, name):
                setattr(torch, name, broken)
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        for _ in range(2):
            pipe("a cat", steps=2)
    """)
    assert len(records) == 2
    assert all(r["dit"]["dtype"] == "fp32" for r in records)
    autocast = [w for w in warnings if "autocast" in w]
    assert len(autocast) == 1 and "parameters' dtype" in autocast[0], warnings


def test_an_unreadable_hook_registry_is_said_once(tmp_path):
    # A module carrying a diffusers-style registry of an unknown shape: its layerwise casting
    # cannot be read, which is said; the parameters' dtype prices it.
    records, warnings, _ = run(tmp_path, """
        import vxperf
        import tiny_models as tm

        class Registry:
            @property
            def hooks(self):
                raise TypeError("a registry of another version")

        pipe = tm.wan_pipeline()
        pipe.transformer.blocks[0].__dict__["_diffusers_hook"] = Registry()
        vxperf.instrument_pipeline(pipe)
        pipe("a cat", steps=2)
    """)
    assert records[0]["dit"]["dtype"] == "fp32"
    casting = [w for w in warnings if "layerwise casting" in w]
    assert len(casting) == 1, warnings


def test_a_module_that_cannot_be_timed_runs_unmeasured(tmp_path):
    # A module whose instance attributes cannot be set (a C-level __dict__ that refuses them):
    # one warning, its calls run unmeasured, the other stages are timed.
    records, warnings, proc = run(tmp_path, """
        import torch, vxperf
        from vxperf import _hooks
        import tiny_models as tm

        pipe = tm.wan_pipeline()
        original = _hooks._wrap

        def refuse(module, attribute, *args):
            if module is pipe.text_encoder:
                raise TypeError("this module cannot take instance attributes")
            return original(module, attribute, *args)

        _hooks._wrap = refuse
        vxperf.instrument_pipeline(pipe)
        torch.manual_seed(0)
        out = pipe("a cat", steps=2)
        print("ran")
    """)
    assert proc.stdout.strip() == "ran"
    assert "text_encoder" not in records[0]["stages"] and "transformer" in records[0]["stages"]
    assert len([w for w in warnings if "cannot time component 'text_encoder'" in w]) == 1


def test_two_pipelines_sharing_a_module_time_it_once(tmp_path):
    records, warnings, _ = run(tmp_path, """
        import vxperf
        import tiny_models as tm

        first = vxperf.instrument_pipeline(tm.wan_pipeline())
        second = tm.wan_pipeline()
        second.transformer = first.transformer  # shared, under the same name
        vxperf.instrument_pipeline(second)
        first("a cat", steps=2)
        second("a dog", steps=2)
    """)
    assert [r["stages"]["transformer"]["count"] for r in records] == [2, 2]
    assert warnings == []


def test_hooks_survive_forward_replacement_by_wrappers(tmp_path):
    # What accelerate's add/remove_hook_from_module do, without accelerate: a wrapper set as the
    # forward (functools.update_wrapper over a partial, the old one kept as _old_forward), later
    # taken off by putting _old_forward back. Every request keeps its transformer stage.
    records, warnings, _ = run(tmp_path, """
        import functools, vxperf
        import tiny_models as tm

        def add_hook(module):
            old = module.forward
            module._old_forward = old
            def new_forward(module, *args, **kwargs):
                return module._old_forward(*args, **kwargs)
            module.forward = functools.update_wrapper(functools.partial(new_forward, module), old)

        def remove_hook(module):
            module.forward = module._old_forward
            del module._old_forward

        pipe = tm.wan_pipeline()
        add_hook(pipe.transformer)
        vxperf.instrument_pipeline(pipe)
        for _ in range(3):
            pipe("a cat", steps=2)
            remove_hook(pipe.transformer)
            add_hook(pipe.transformer)
    """)
    assert [r["stages"]["transformer"]["count"] for r in records] == [2, 2, 2]
    # On torch < 2.1 putting the timer back is said once; on later torch nothing is replaced.
    assert len(warnings) <= 1, warnings
