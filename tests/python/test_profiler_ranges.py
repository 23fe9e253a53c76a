"""Torch profiler ranges: while a torch profiler records, vxperf's requests, stages, steps and
phases are named ranges in its trace, next to the ops they ran; outside it, nothing is added and
the records are as before."""
from conftest import clean_env, read_records, run_python

INFERENCE = """
import torch, vxperf
with vxperf.request():  # before the profiler: no range, same record
    with vxperf.stage("transformer", tokens=8, batch=1):
        torch.ones(4) + 1
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    with vxperf.request():
        with vxperf.stage("text_encoder"):
            torch.ones(4) * 2
        for _ in range(2):
            with vxperf.stage("transformer", tokens=8, batch=1):
                torch.mm(torch.ones(8, 8), torch.ones(8, 8))
with vxperf.request():  # after it: no range either
    with vxperf.stage("vae_dec"):
        pass
events = [(e.name, e.time_range.start, e.time_range.end) for e in prof.events()]
names = [name for name, _, _ in events]
print("names", sorted(set(n for n in names if not n.startswith("aten::"))))
print("transformer", names.count("transformer"))
req = next(e for e in events if e[0] == "request 1")
mm = [e for e in events if e[0] == "aten::mm"]
print("mm_inside", all(req[1] <= s and e <= req[2] for _, s, e in mm) and len(mm) == 2)
"""


def test_stages_are_ranges_in_a_torch_profiler_trace(tmp_path):
    records = tmp_path / "records.jsonl"
    proc = run_python(INFERENCE, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    lines = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert "'request 1'" in lines["names"] and "'text_encoder'" in lines["names"], proc.stdout
    assert "'vae_dec'" not in lines["names"] and "'request 0'" not in lines["names"]
    assert "'request 2'" not in lines["names"]
    assert lines["transformer"] == "2"
    assert lines["mm_inside"] == "True"
    got = read_records(records)
    assert [r["req"] for r in got] == [0, 1, 2]
    assert got[1]["stages"]["transformer"]["count"] == 2


# A registered linear model and train(steps): each step one micro-step of a forward, a backward
# and an optimizer step.
TRAIN = """
import torch, vxperf
opt_owner = object()
model = torch.nn.Linear(8, 8)
vxperf.register_model(model)
def train(steps):
    for _ in range(steps):
        with vxperf.micro_step():
            with vxperf.model_call("fwd", tokens=4, samples=1):
                loss = model(torch.ones(2, 8)).sum()
            with vxperf.backward():
                loss.backward()
            with vxperf.optimizer_step(opt_owner):
                pass
"""

TRAINING = TRAIN + """
# a frozen encoder timed as its phase (what install_training() does to a library's VAE)
encoder = vxperf.instrument_module(torch.nn.Linear(8, 8), "vae_enc")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    train(2)
    with vxperf.micro_step():
        with torch.no_grad():
            encoder(torch.ones(2, 8))
vxperf.finish()
names = set(e.name for e in prof.events())
print(sorted(n for n in names if not n.startswith("aten::") and "autograd" not in n.lower()
             and not n.startswith("Optimizer")))
"""


def test_steps_and_phases_are_ranges_in_a_torch_profiler_trace(tmp_path):
    records = tmp_path / "records.jsonl"
    proc = run_python(TRAINING, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    names = proc.stdout.strip()
    # A model call whose phase is known as it begins (every Python scope and timed module) is a
    # range of that phase's name.
    for expected in ("'step 0'", "'step 1'", "'micro_step'", "'fwd'", "'bwd'", "'opt'",
                     "'vae_enc'"):
        assert expected in names, names
    assert read_records(records)  # the window is recorded as without the profiler


def test_off_adds_no_ranges():
    proc = run_python("""
import torch, vxperf
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    with vxperf.request():
        with vxperf.stage("transformer"):
            torch.ones(2) + 1
print(sorted(set(e.name for e in prof.events() if not e.name.startswith("aten::"))))
""", env=clean_env())
    assert "transformer" not in proc.stdout and "request" not in proc.stdout, proc.stdout


CAPTURE = TRAIN + """
activities = [torch.profiler.ProfilerActivity.CPU]
prof = vxperf.profile_range(torch.profiler.profile(activities=activities))
train(8)
vxperf.finish()
names = set(e.name for e in prof.events())
print(sorted(n for n in names if n.startswith("step ")))
"""


def test_a_torch_profiler_handed_over_records_steps_3_to_5_alone(tmp_path):
    """VIDEOX_PERF_PROFILE=steps:3-5: the profiler handed to profile_range() is started as step 3
    begins and stopped as step 5 closes (where cuProfilerStart/Stop go on a GPU)."""
    records = tmp_path / "records.jsonl"
    proc = run_python(CAPTURE, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records,
                                             VIDEOX_PERF_PROFILE="steps:3-5"))
    assert proc.stdout.strip() == "['step 3', 'step 4', 'step 5']", proc.stdout + proc.stderr
    assert "VIDEOX_PERF_PROFILE" not in proc.stderr, proc.stderr
    assert read_records(records)  # the window is recorded as without the range


RECORDER = """
import vxperf
class Recorder:
    def start(self):
        print("start", vxperf.last_request() and vxperf.last_request()["req"])
    def stop(self):
        print("stop", vxperf.last_request() and vxperf.last_request()["req"])
vxperf.profile_range(Recorder())
for _ in range(REQUESTS):
    with vxperf.request():
        with vxperf.stage("transformer"):
            pass
print("done")
"""


def test_a_request_range_starts_and_stops_the_profiler_around_those_requests():
    proc = run_python(RECORDER.replace("REQUESTS", "4"),
                      env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_PROFILE="requests:1-2"))
    # Started before request 1 began (request 0 the last one done), stopped after request 2.
    assert proc.stdout.split("\n")[:3] == ["start 0", "stop 2", "done"], proc.stdout


def test_a_range_that_never_ends_is_stopped_and_said_at_exit():
    proc = run_python(RECORDER.replace("REQUESTS", "2"),
                      env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_PROFILE="requests:1-5"))
    assert proc.stdout.split() == ["start", "0", "done", "stop", "1"], proc.stdout
    assert "VIDEOX_PERF_PROFILE=requests:1-5: the run ended before request 5 ended" in proc.stderr


def test_a_profiler_without_the_setting_is_never_started_and_that_is_said():
    proc = run_python(RECORDER.replace("REQUESTS", "2"), env=clean_env(VIDEOX_PERF=1))
    assert proc.stdout.split() == ["done"], proc.stdout
    assert proc.stderr.count("VIDEOX_PERF_PROFILE is not set") == 1, proc.stderr


def test_a_profiler_that_raises_is_reported_and_the_requests_go_on(tmp_path):
    records = tmp_path / "records.jsonl"
    proc = run_python("""
import vxperf
class Broken:
    def start(self):
        raise RuntimeError("no profiler today")
    def stop(self):
        pass
vxperf.profile_range(Broken())
for _ in range(3):
    with vxperf.request():
        pass
print("done")
""", env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records, VIDEOX_PERF_PROFILE="requests:0-1"))
    assert proc.stdout.strip() == "done"
    assert "no profiler today" in proc.stderr, proc.stderr
    assert len(read_records(records)) == 3


DECLARED = """
import json, torch, vxperf
calls = []
real = torch.autograd._add_metadata_json
def counting(key, value):
    calls.append(key)
    real(key, value)
torch.autograd._add_metadata_json = counting
with vxperf.request():
    with vxperf.stage("refiner"):  # no profiler: nothing is declared
        pass
print("outside", len(calls))
for k in range(2):  # two profiling sessions, the same stage in each
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with vxperf.request():
            for _ in range(2):
                with vxperf.stage("upscaler"):
                    torch.ones(2) + 1
    prof.export_chrome_trace(TRACE + str(k))
    with open(TRACE + str(k)) as f:
        print(k, json.dumps(json.load(f).get("vxperf_ranges")), len(calls))
"""


def test_the_trace_says_which_ranges_are_vxperfs_stages(tmp_path):
    """Each stage range opened while a profiler records declares the stage names in the session's
    metadata ("vxperf_ranges", read by vxperf explain), again in every session since Kineto forgets
    a session's metadata; never without a profiler."""
    trace = str(tmp_path / "trace.json")
    proc = run_python(DECLARED.replace("TRACE", repr(trace)), env=clean_env(VIDEOX_PERF=1))
    assert proc.stdout.split("\n")[:3] == ['outside 0', '0 ["upscaler"] 2', '1 ["upscaler"] 4'], \
        proc.stdout + proc.stderr
