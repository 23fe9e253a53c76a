"""Records in process (vxperf.add_sink, remove_sink, last_request) and experiment trackers through
accelerate (install_training(trackers=True), VIDEOX_PERF_TRACKERS): every record handed over as the
dict of its JSON line, on the thread that settled it; a sink that raises, is slow or is removed
during a run never reaches the measured code; last_request() per thread; trackers get every window
at its last step under perf/."""
import json

import pytest

from conftest import clean_env, read_records, run_python


def run(tmp_path, code, **settings):
    path = tmp_path / "records.jsonl"
    env = clean_env(VIDEOX_PERF_JSON=str(path), **settings)
    proc = run_python(code, env=env)
    return read_records(path), proc


def test_a_sink_gets_every_record_as_its_json_line(tmp_path):
    records, proc = run(tmp_path, """
        import json, threading, torch, vxperf
        import tiny_models as tm
        got = []
        vxperf.add_sink(lambda r: got.append((threading.get_ident(), r)))
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        pipe("a cat", steps=2)
        pipe("a dog", steps=3)
        tm.train_dit(steps=3)
        vxperf.finish()
        assert all(ident == threading.get_ident() for ident, _ in got)
        print(json.dumps([r for _, r in got]))
    """, VIDEOX_PERF="1", VIDEOX_PERF_EVERY="2")
    got = json.loads(proc.stdout)
    assert [r["kind"] for r in got] == ["request", "request", "train_window", "train_window",
                                        "train_end"]  # the training's final record too
    assert [r for r in got if r["kind"] != "train_end"] == records
    # the same keys, order and values as the JSON lines
    assert got == read_records(tmp_path / "records.jsonl", ends=True)


def test_a_failing_slow_or_removed_sink_never_reaches_the_run(tmp_path):
    records, proc = run(tmp_path, """
        import threading, time, torch, vxperf
        import tiny_models as tm
        calls = {"bad": 0, "slow": 0, "gone": 0}
        entered = []  # when the slow sink got each record, from the start of its request

        def bad(record):
            calls["bad"] += 1
            raise ValueError("a sink that fails")

        def slow(record):
            calls["slow"] += 1
            entered.append(time.perf_counter() - started)
            time.sleep(0.2)

        def gone(record):
            calls["gone"] += 1

        for fn in (bad, slow, gone):
            vxperf.add_sink(fn)
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        torch.manual_seed(0)
        started = time.perf_counter()
        first = pipe("a cat", steps=2)
        # removed from another thread while a request runs on this one
        remover = threading.Thread(target=lambda: vxperf.remove_sink(gone))
        remover.start()
        remover.join()
        torch.manual_seed(0)
        started = time.perf_counter()
        again = pipe("a cat", steps=2)
        assert torch.equal(first, again)
        assert not vxperf.remove_sink(gone)
        print(calls["bad"], calls["slow"], calls["gone"], *entered)
    """, VIDEOX_PERF="1")
    out = proc.stdout.split()
    assert out[:3] == ["2", "2", "1"]
    warnings = [line for line in proc.stderr.splitlines() if "records sink" in line]
    assert len(warnings) == 1 and "a sink that fails" in warnings[0], proc.stderr
    # the sink runs after its request was measured: the record was settled before the sink got
    # it, so the sink's sleep is in no record (the second request's started after the first sleep)
    entered = [float(x) for x in out[3:]]
    assert len(records) == 2
    assert all(r["e2e_s"] <= t for r, t in zip(records, entered)), (records, entered)


def test_last_request_is_this_threads_own(tmp_path):
    _, proc = run(tmp_path, """
        import threading, vxperf
        import tiny_models as tm
        assert vxperf.last_request() is None
        pipes = [vxperf.instrument_pipeline(tm.wan_pipeline()) for _ in range(2)]
        seen = {}
        barrier = threading.Barrier(2)

        def work(i):
            for _ in range(3):
                pipes[i]("a cat", frames=1 + 4 * (i + 1), steps=2)
                barrier.wait()  # both threads finish a request before either reads
                seen.setdefault(i, []).append(vxperf.last_request()["dit"]["tokens"])
                barrier.wait()

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert vxperf.last_request() is None  # this thread finished none
        print(seen[0], seen[1])
    """, VIDEOX_PERF="1")
    first, second = proc.stdout.strip().split("] [")
    assert first.strip("[]") == "8, 8, 8" and second.strip("[]") == "16, 16, 16", proc.stdout


def test_off_costs_nothing_and_hands_over_nothing(tmp_path):
    records, proc = run(tmp_path, """
        import vxperf
        from vxperf import _ext
        import tiny_models as tm
        got = []
        vxperf.add_sink(got.append)
        pipe = tm.wan_pipeline()
        pipe("a cat", steps=2)
        print(len(got), vxperf.last_request(), _ext.configured())
    """)
    assert proc.stdout.split() == ["0", "None", "False"]
    assert records == []


def test_a_sink_added_before_metrics_come_on_gets_records(tmp_path):
    _, proc = run(tmp_path, """
        import vxperf
        import tiny_models as tm
        got = []
        vxperf.add_sink(got.append)
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline(), level=1)  # turns metrics on
        pipe("a cat", steps=2)
        print(len(got), got[0]["kind"])
    """)
    assert proc.stdout.split() == ["1", "request"]


def _accelerate_installed():
    from importlib import metadata

    try:
        return bool(metadata.version("accelerate"))
    except metadata.PackageNotFoundError:
        return False


TRACKED_LOOP = """
    import torch, vxperf
    from accelerate import Accelerator
    from accelerate.tracking import GeneralTracker
    import tiny_models as tm

    class Recorder(GeneralTracker):
        name = "recorder"
        requires_logging_directory = False

        def __init__(self):
            super().__init__()
            self.logged, self.configured = [], 0

        @property
        def tracker(self):
            return self

        def store_init_configuration(self, values):
            self.configured += 1

        def log(self, values, step=None, **kwargs):
            self.logged.append((step, dict(values)))

    {install}
    recorder = Recorder()
    accelerator = Accelerator(log_with=[recorder], gradient_accumulation_steps=2, cpu=True)
    accelerator.init_trackers("tiny", config={{"lr": 1e-3}})
    dit = vxperf.instrument_module(tm.WanTransformer3DModel(), "fwd")
    optimizer = torch.optim.SGD(dit.parameters(), lr=1e-3)
    dit, optimizer = accelerator.prepare(dit, optimizer)
    for step in range(8):
        with accelerator.accumulate(dit):
            loss = dit(x=torch.randn(1, 4, 2, 4, 4), t=torch.ones(1),
                       context=torch.randn(1, 12, 16), seq_len=8).pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.log({{"loss": float(loss)}}, step=step)
    vxperf.finish()
    perf = [(step, values) for step, values in recorder.logged if "perf/step_s_p50" in values]
    import json
    print(json.dumps({{"configured": recorder.configured, "perf": perf,
                      "other": [v for _, v in recorder.logged if "loss" in v][:1]}}))
"""


@pytest.mark.skipif(not _accelerate_installed(), reason="the real accelerate is not installed")
@pytest.mark.parametrize("how", ["argument", "variable"])
def test_trackers_get_every_window_at_its_last_step(tmp_path, how):
    install = ("vxperf.install_training(trackers=True)" if how == "argument"
               else "vxperf.install_training()")
    settings = {"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "2"}
    if how == "variable":
        settings["VIDEOX_PERF_TRACKERS"] = "1"
    records, proc = run(tmp_path, TRACKED_LOOP.format(install=install), **settings)
    out = json.loads(proc.stdout)
    windows = [r for r in records if r["kind"] == "train_window"]
    assert out["configured"] == 1  # the program's init_trackers only, never a second
    assert [step for step, _ in out["perf"]] == [w["step_last"] for w in windows]
    assert len(windows) == 2  # 4 global steps of 2 micro-steps, windows of 2
    for (_, values), window in zip(out["perf"], windows):
        assert values["perf/step_s_p50"] == window["step_s_p50"]
        assert values["perf/step_s_p95"] == window["step_s_p95"]
        for phase, seconds in window["phases_s"].items():
            assert values[f"perf/phase/{phase}_s"] == seconds
        assert values["perf/samples_per_s"] == window["throughput"]["samples_per_s"]
        assert all(key.startswith("perf/") for key in values)
    assert out["other"] == [{"loss": out["other"][0]["loss"]}]  # the program's own logs untouched


@pytest.mark.skipif(not _accelerate_installed(), reason="the real accelerate is not installed")
def test_trackers_off_by_the_variable(tmp_path):
    install = "vxperf.install_training(trackers=True)"
    _, proc = run(tmp_path, TRACKED_LOOP.format(install=install), VIDEOX_PERF="1",
                  VIDEOX_PERF_EVERY="2", VIDEOX_PERF_TRACKERS="0")
    assert json.loads(proc.stdout)["perf"] == []


def test_the_trackers_log_what_the_field_table_says():
    """tracker_values() logs the window fields whose rows in the field table say so
    (_ext.tracker_fields()), the device readings among them: a reading added with its member and
    its row is logged with no list of names to extend."""
    proc = run_python("""
        import json
        from vxperf import _ext
        from vxperf.integrations import accelerate
        fields = _ext.tracker_fields()
        record = {"kind": "train_window", "step_s_p50": 1.0, "step_s_p95": 1.5, "step_first": 0,
                  "step_last": 9, "phases_s": {"fwd": 0.5}}
        for n, (obj, key, name) in enumerate(fields):
            (record.setdefault(obj, {}) if obj else record)[key] = n + 0.5
        print(json.dumps({"fields": fields, "values": accelerate.tracker_values(record),
                          "empty": accelerate.tracker_values(dict(record, throughput=None))}))
    """, env=clean_env())
    out = json.loads(proc.stdout)
    fields, values = out["fields"], out["values"]
    for n, (_obj, _key, name) in enumerate(fields):
        assert values[f"perf/{name}"] == n + 0.5
    assert len(values) == 5 + len(fields)  # the steps, their times and the one phase besides
    assert {("", "peak_alloc_bytes"), ("", "peak_reserved_bytes"), ("", "energy_j"),
            ("", "power_w_mean"), ("", "cpu_energy_j"), ("", "energy_j_per_sample"),
            ("", "eta_s"), ("throughput", "samples_per_s"), ("throughput", "tflops"),
            ("throughput", "hw_tflops"), ("throughput", "mfu"),
            ("throughput", "hfu")} <= {(obj, key) for obj, key, _ in fields}
    assert not any(key.startswith("perf/samples_per_s") for key in out["empty"])


def test_the_trackers_log_the_cross_rank_scores_phase_by_phase():
    """Rank 0's window with the cross-rank view: for the step and for each phase, the lowest
    relative and individual score over the ranks and the rank holding it, under perf/xrank/ (a
    few names whatever the world size). A DDP rank slow in data scores near 1 on its step and low
    in data."""
    proc = run_python("""
        import json
        from vxperf.integrations import accelerate
        record = {"kind": "train_window", "step_s_p50": 1.0, "step_s_p95": 1.5, "step_first": 0,
                  "step_last": 9, "phases_s": {"data": 0.1, "bwd": 0.5},
                  "xrank": {"relative_score": [1.0, 1.0, 0.998, 1.0],
                            "individual_score": [1.0, 0.9, 1.0, 1.0],
                            "phase_scores": {
                                "data": {"relative": [1.0, 1.0, 0.04, 1.0],
                                         "individual": [1.0, 1.0, 0.75, 1.0]},
                                "bwd": {"relative": [0.5, 0.5, 1.0, 0.5],
                                        "individual": [1.0, 1.0, 1.0, 1.0]}}}}
        print(json.dumps(accelerate.tracker_values(record)))
    """, env=clean_env())
    values = json.loads(proc.stdout)
    xrank = {k: v for k, v in values.items() if k.startswith("perf/xrank/")}
    assert xrank == {
        "perf/xrank/relative_score_min": 0.998, "perf/xrank/relative_score_min_rank": 2,
        "perf/xrank/individual_score_min": 0.9, "perf/xrank/individual_score_min_rank": 1,
        "perf/xrank/phase/data/relative_score_min": 0.04,
        "perf/xrank/phase/data/relative_score_min_rank": 2,
        "perf/xrank/phase/data/individual_score_min": 0.75,
        "perf/xrank/phase/data/individual_score_min_rank": 2,
        "perf/xrank/phase/bwd/relative_score_min": 0.5,
        "perf/xrank/phase/bwd/relative_score_min_rank": 0,
        "perf/xrank/phase/bwd/individual_score_min": 1.0,
        "perf/xrank/phase/bwd/individual_score_min_rank": 0}
