"""`vxperf explain` on real traces of torch 2's profiler (CPU only here): vxperf's ranges around an
instrumented pipeline and an accelerate training loop, found in the trace and joined by range
(the host side of the waterfall end to end), the records found where the trace names them; a
CPU-only profile says so and keeps its ranges."""
import json
import math
import subprocess
import sys
from typing import Any

from conftest import CLI, clean_env, read_records, run_python

INFERENCE = """
import json, sys, torch, vxperf
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for _ in range(2):
        with vxperf.request():
            with vxperf.stage("text_encoder"):
                torch.ones(64) * 2
            for _ in range(3):
                with vxperf.stage("transformer", tokens=16, batch=1):
                    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
            with vxperf.stage("vae_dec"):
                torch.ones(8) + 1
prof.export_chrome_trace(sys.argv[1])
spans = {e.name: e.time_range.elapsed_us() for e in prof.events() if e.name.startswith("request ")}
print(json.dumps(spans))
"""


def explain(*args: object) -> tuple[dict[str, Any], str]:
    proc = subprocess.run([CLI, "explain", "--json", *map(str, args)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def rows(rank, kind):
    return {(w["range"], w.get("step_index")): w for w in rank["waterfall"] if w["kind"] == kind}


def hta_rows(trace):
    """The trace's events as HTA keeps them (a duration and a category other than Trace), with
    HTA's rounding to whole microseconds when a timestamp has a fraction."""
    events = json.loads(trace.read_text())["traceEvents"]
    kept = [dict(e, index=i) for i, e in enumerate(events)
            if "dur" in e and "cat" in e and e["cat"] != "Trace" and "ts" in e]
    if any(isinstance(e["ts"], float) for e in events if "ts" in e):
        for e in kept:
            end = math.floor(float(e["ts"]) + float(e["dur"]))
            e["ts"] = math.ceil(float(e["ts"]))
            e["dur"] = end - e["ts"]
    return kept


def host_path_us(kept, begin, end):
    """HTA's critical path of a CPU-only window with no runtime call, sync or autograd thread:
    each thread's call stack is one chain whose weights add up to its top-level CPU ops' time
    (the ops inside telescope; the gaps between top-level ops weigh 0), so the path is the
    thread with the most."""
    ops = [e for e in kept if e["cat"] == "cpu_op" and e["dur"] > 0 and begin <= e["ts"] <= end]
    best = 0
    for tid in {e["tid"] for e in ops}:
        mine = [e for e in ops if e["tid"] == tid]

        def inside(e, p):
            return p is not e and p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] \
                and (p["dur"] > e["dur"] or p["index"] < e["index"])

        best = max(best, sum(e["dur"] for e in mine if not any(inside(e, p) for p in mine)))
    return best


def expect_host_path(instance):
    """A CPU-only profile: HTA stops (no queue-length series); vxperf says so and gives its rules'
    host path: cpu_bound only, the summary's total its length, operator and dependency edges."""
    assert instance["hta"] == "raises", instance
    assert instance["why"].startswith("AssertionError: Queue length time series is required")
    assert instance["length_us"] == instance["summary_total_us"] > 0
    assert set(instance["breakdown"]) <= {"", "cpu_bound"}
    assert instance["breakdown"]["cpu_bound"] == {"us": instance["length_us"], "pct": 100}
    assert set(instance["edges"]) <= {"critical_path_operator", "critical_path_dependency"}
    assert all(e["bound_by"] == "cpu_bound" for e in instance["top_events"])


def expect_replay(trace: object, *args: object) -> dict[str, Any]:
    """vxperf's replay (`--what-if`: the standard what-ifs) gives every range's span again within
    1% (the trace is CPU-only: a range's span is its host duration, the waterfall's host_s), its
    critical path adds up to it, and each what-if predicts at most what was measured."""
    got, _ = explain(trace, "--what-if", *args)
    for rank in got["ranks"]:
        replay = rank["replay"]
        assert replay["largest_error_pct"] <= 1, replay["largest_error_range"]
        host = {(w["range"], w["kind"], w.get("step_index")): w["host_s"]
                for w in rank["waterfall"]}
        assert len(replay["rows"]) == len(host)
        for row in replay["rows"]:
            assert row["error_pct"] <= 1, row
            assert abs(row["replayed_s"] - row["span_s"]) <= 0.01 * row["span_s"], row
            assert abs(row["span_s"] - host[(row["range"], row["kind"], row.get("step_index"))]) \
                <= 1e-9, row
            assert abs(sum(row["critical_path_s"].values()) - row["replayed_s"]) <= 1e-9, row
            for spec, predicted in row["what_if_s"].items():
                assert -1e-12 <= predicted <= row["span_s"] + 1e-9, (spec, row)
        assert {w["what_if"] for w in replay["what_ifs"]} == {"host", "comm", "copies", "peak",
                                                              "steps:1"}
        assert all(w["gain_s"] >= -1e-12 for w in replay["what_ifs"])
        # Stacked: each line starts where the one above ended and gains, each what-if once;
        # every row has a predicted span per line.
        stacked = replay["stacked"]
        before = replay["what_ifs"][0]["span_s"]
        for line in stacked:
            assert line["span_s"] == before and line["gain_s"] > 0, line
            assert abs(line["span_s"] - line["predicted_s"] - line["gain_s"]) <= 1e-12, line
            before = line["predicted_s"]
        assert len({line["what_if"] for line in stacked}) == len(stacked)
        assert all(len(row["stacked_s"]) == len(stacked) for row in replay["rows"])
    return got


def test_an_instrumented_pipelines_ranges_in_a_cpu_trace(tmp_path):
    trace, records = tmp_path / "trace.json", tmp_path / "records.jsonl"
    proc = run_python(INFERENCE.replace("sys.argv[1]", repr(str(trace))),
                      env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    spans = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(read_records(records)) == 2
    got, stderr = explain(trace, "--records", records)
    assert "CPU-only" in stderr
    (rank,) = got["ranks"]
    assert rank["has_device_rows"] is False and rank["temporal"]["kernel_time_us"] == 0
    (request,) = rows(rank, "request").values()
    assert request["count"] == 2 and request["span_s"] == 0
    # The requests' own time, as the profiler measured them (the trace keeps whole microseconds).
    assert abs(request["host_s"] * 1e6 - sum(spans.values())) <= 2 * len(spans), (request, spans)
    stages = rows(rank, "stage")
    assert {name for name, _ in stages} == {"text_encoder", "transformer", "vae_dec"}
    assert stages[("transformer", None)]["count"] == 6
    steps = rows(rank, "denoising_step")
    assert sorted(steps) == [("transformer", 0), ("transformer", 1), ("transformer", 2)]
    assert all(s["count"] == 2 for s in steps.values())
    # Each stage call lies inside its request.
    assert sum(s["host_s"] for s in stages.values()) <= request["host_s"]
    assert got["records"] == [str(records)]
    # What a user reads: the text says once that the trace has no device activity and what it
    # still tells, and gives the ranges' host time, no device columns of zeros.
    proc = subprocess.run([CLI, "explain", str(trace), "--records", str(records)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.count("the trace has no device activity (a CPU-only profile") == 1, text
    assert "what it still tells is each range's host time" in text, text
    assert "ranges (ms, mean per range: host time)" in text, text
    host_ms = float(text.split("\n    request ")[1].split()[1])
    assert abs(host_ms - request["host_s"] / request["count"] * 1e3) < 1e-3, text  # a mean
    assert "kernwait" not in text and "0.000" not in text and "MFU" not in text, text
    # vxperf's replay: each range's span again; skipping a denoising step of three shortens each
    # request; without a device there is no host overhead to remove, nor communication, copies
    # or FLOPs priced against device time.
    replay = expect_replay(trace, "--records", records)["ranks"][0]["replay"]
    gains = {w["what_if"]: w["gain_s"] for w in replay["what_ifs"]}
    assert gains["steps:1"] > 0 and gains["comm"] == 0 and gains["copies"] == 0, gains
    assert {w["what_if"] for w in replay["what_ifs"] if not w["applies"]} == {"host", "peak"}
    # Of the three that apply only steps:1 gains: it stands alone.
    assert [line["what_if"] for line in replay["stacked"]] == ["steps:1"], replay["stacked"]
    # HTA's critical path of each request: the instances are the rows named "request N"; the
    # host path is the thread with the most top-level op time in the window, worked out here.
    got, stderr = explain(trace, "--critical-path=request")
    (rank,) = got["ranks"]
    path = rank["critical_path"]
    assert path["annotation"] == "request" and path["sync_events"] is False
    kept = hta_rows(trace)
    requests = [e for e in kept if "request" in e["name"]]
    assert [i["row"] for i in path["instances"]] == [e["name"] for e in requests] == \
        ["request 0", "request 1"]
    for instance, row in zip(path["instances"], requests):
        expect_host_path(instance)
        assert instance["window_us"] == [row["ts"], row["ts"] + row["dur"]]
        assert instance["length_us"] == host_path_us(kept, row["ts"], row["ts"] + row["dur"])
        # An op of the request's (the matmuls as a rule; on a loaded machine the first call of
        # aten::mul, warming up, can cost more).
        assert instance["top_events"][0]["name"].startswith("aten::")
    assert "critical path of \"request\" instance 1: HTA raises" in stderr
    # The profiler recorded no steps: HTA finds no ProfilerStep and returns None.
    got, stderr = explain(trace, "--critical-path")
    assert got["ranks"][0]["critical_path"]["instances"][0]["hta"] == "None"
    assert "HTA returns None" in stderr


ACCELERATE = """
import sys, torch, vxperf
from accelerate import Accelerator
vxperf.install_training()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16))
vxperf.register_model(model)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
accelerator = Accelerator(cpu=True)
model, optimizer = accelerator.prepare(model, optimizer)
activities = [torch.profiler.ProfilerActivity.CPU]
prof = vxperf.profile_range(torch.profiler.profile(activities=activities))
for _ in range(6):
    with accelerator.accumulate(model):
        with vxperf.model_call("fwd", tokens=8, samples=4):
            loss = model(torch.randn(4, 16)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
vxperf.finish()
prof.export_chrome_trace(sys.argv[1])
"""


def test_an_accelerate_loops_steps_and_phases_in_a_cpu_trace(tmp_path):
    (tmp_path / "traces").mkdir()
    trace, records = tmp_path / "traces" / "trace.json", tmp_path / "records.jsonl"
    run_python(ACCELERATE.replace("sys.argv[1]", repr(str(trace))),
               env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records,
                             VIDEOX_PERF_PROFILE="steps:2-3", VIDEOX_PERF_EVERY=3))
    # The trace names the records it was taken beside: found from another folder.
    assert json.loads(trace.read_text())["vxperf_records"] == str(records)
    got, _ = explain(trace)
    (rank,) = got["ranks"]
    (step,) = rows(rank, "train_step").values()
    assert step["count"] == 2, rank["waterfall"]  # steps 2 and 3, as VIDEOX_PERF_PROFILE said
    phases = rows(rank, "phase")
    assert {"fwd", "bwd", "opt"} <= {name for name, _ in phases}, phases
    assert all(p["count"] == 2 for name, p in phases.items() if name[0] in ("bwd", "opt"))
    assert sum(p["host_s"] for p in phases.values()) <= step["host_s"] + 1e-6
    assert got["records"] == [str(records)]
    # HTA's critical path of each row whose name holds "step" (vxperf's steps, micro-steps, the
    # optimizer's ranges), in file order: a host path each.
    got, _ = explain(trace, "--critical-path=step")
    instances = got["ranks"][0]["critical_path"]["instances"]
    steps = [e["name"] for e in hta_rows(trace) if "step" in e["name"]]
    assert [i["row"] for i in instances] == steps
    assert {"step 2", "step 3"} <= {i["row"] for i in instances}
    expect_replay(trace)
    for instance in instances:
        expect_host_path(instance)


# A model trained under torch's DistributedDataParallel (gloo, one rank): its class is timed, so
# each model call's range opens inside DDP's own forward range; then a pipeline-like loop that the
# program wraps in its own record_function, with a stage of its own ("refiner") and a collective
# inside each request.
DDP_AND_PIPELINE = """
import sys, torch, torch.distributed as dist, vxperf
from torch.nn.parallel import DistributedDataParallel


class TinyTransformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                       torch.nn.Linear(32, 16))

    def forward(self, x):
        return self.net(x)


vxperf.install_training(models=TinyTransformer)
dist.init_process_group("gloo", store=dist.FileStore(STORE, 1), rank=0, world_size=1)
torch.manual_seed(0)
model = TinyTransformer()
vxperf.register_model(model)
ddp = DistributedDataParallel(model)
optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-2)
denoiser, refiner = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for _ in range(6):
        with vxperf.micro_step():
            loss = ddp(torch.randn(4, 16)).pow(2).mean()
            with vxperf.backward():
                loss.backward()
        with vxperf.optimizer_step(optimizer):
            optimizer.step()
            optimizer.zero_grad()
    with torch.no_grad():
        for _ in range(2):
            with vxperf.request():
                latents = torch.randn(1, 16)
                with torch.profiler.record_function("denoising loop"):
                    for _ in range(3):
                        with vxperf.stage("transformer", tokens=16, batch=1):
                            latents = denoiser(latents)
                    with vxperf.stage("refiner"):
                        latents = refiner(latents)
                dist.all_reduce(latents)
vxperf.finish()
prof.export_chrome_trace(TRACE)
dist.destroy_process_group()
"""


def inside(inner, outer):
    return (inner["tid"] == outer["tid"] and outer["ts"] <= inner["ts"]
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"])


def test_ranges_under_ddps_and_the_programs_own_ranges_in_a_real_trace(tmp_path):
    (tmp_path / "traces").mkdir()
    trace, records = tmp_path / "traces" / "trace.json", tmp_path / "records.jsonl"
    code = DDP_AND_PIPELINE.replace("STORE", repr(str(tmp_path / "store")))
    run_python(code.replace("TRACE", repr(str(trace))),
               env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records, VIDEOX_PERF_EVERY=6))
    written = json.loads(trace.read_text())
    ranges = [e for e in written["traceEvents"] if e.get("cat") == "user_annotation"]

    def named(name):
        return [e for e in ranges if e["name"] == name]

    # The trace is what real jobs write: every model call inside DDP's forward, every transformer
    # call inside the program's "denoising loop"; vxperf declared the stages it opened.
    calls = named("model_call") + named("fwd")
    assert len(calls) == 6, [e["name"] for e in ranges]
    assert all(any(inside(c, d) for d in named("DistributedDataParallel.forward")) for c in calls)
    transformer = named("transformer")
    assert len(transformer) == 6
    assert all(any(inside(t, loop) for loop in named("denoising loop")) for t in transformer)
    assert written["vxperf_ranges"] == ["transformer", "refiner"]
    # No records beside the trace, none named in it: the stages are known from the trace alone.
    got, _ = explain(trace)
    (rank,) = got["ranks"]
    phases = rows(rank, "phase")
    assert sum(p["count"] for (name, _), p in phases.items() if name in ("model_call", "fwd")) \
        == len(calls), phases
    assert {name for name, _ in phases} == {"fwd", "bwd", "opt"}, phases
    assert rows(rank, "train_step")[("step", None)]["count"] == 6
    assert rows(rank, "micro_step")[("micro_step", None)]["count"] == 6
    stages = rows(rank, "stage")
    assert {name for name, _ in stages} == {"transformer", "refiner"}, stages
    assert stages[("transformer", None)]["count"] == len(transformer)
    assert stages[("refiner", None)]["count"] == 2
    steps = rows(rank, "denoising_step")
    assert sorted(steps) == [("transformer", 0), ("transformer", 1), ("transformer", 2)]
    assert all(s["count"] == 2 for s in steps.values())
    assert rows(rank, "request")[("request", None)]["count"] == 2
    # HTA's critical path of the whole trace: a CPU backward runs on the calling thread, so the
    # forward and autograd rows share one (HTA merges nothing) and the path is that thread's
    # top-level op time, training and requests together.
    got, _ = explain(trace, "--critical-path=")
    (instance,) = got["ranks"][0]["critical_path"]["instances"]
    expect_host_path(instance)
    kept = hta_rows(trace)
    assert len({e["tid"] for e in kept if e["cat"] == "cpu_op"}) == 1
    assert {"forward", "autograd"} <= {w for e in kept for w in ("forward", "autograd")
                                         if w in e["name"]}
    assert instance["length_us"] == host_path_us(kept, -math.inf, math.inf)
    # With the run's records: each of the trace's requests and steps has one.
    got, _ = explain(trace, "--records", records)
    (rank,) = got["ranks"]
    assert rank["requests_without_record"] == [] and rank["steps_without_record"] == []
    assert got["records"] == [str(records)]
    expect_replay(trace, "--records", records)


# Two ranks of a gloo job, each profiling its own requests (a collective in each) on the CPU:
# rank 1 marks profiler steps and rank 0 does not, so that HTA's window of rank 0 is the job's,
# which its trace alone cannot tell.
TWO_RANKS = """
import sys, torch, torch.distributed as dist, vxperf
rank = int(sys.argv[1])
dist.init_process_group("gloo", store=dist.FileStore(STORE, 2), rank=rank, world_size=2)
# torch's profiler records its steps under a schedule only.
steps = torch.profiler.schedule(wait=0, warmup=0, active=10) if rank == 1 else None
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                            schedule=steps) as prof:
    for _ in range(3):
        with vxperf.request():
            for _ in range(2):
                with vxperf.stage("transformer", tokens=16, batch=1):
                    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
            dist.all_reduce(torch.ones(8))
        if rank == 1:
            prof.step()
vxperf.finish()
prof.export_chrome_trace(TRACE % rank)
dist.destroy_process_group()
"""


def test_two_ranks_split_into_partials_and_merged_print_what_one_run_prints(tmp_path):
    """`--partial` on each rank's trace alone and `--merge` of the partials: byte for byte what
    one run on both traces prints, text and JSON, with the records and vxperf's replay too."""
    code = TWO_RANKS.replace("STORE", repr(str(tmp_path / "store")))
    code = code.replace("TRACE", repr(str(tmp_path / "trace-%d.json")))
    records = tmp_path / "records.jsonl"
    env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(r)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in (0, 1)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    traces = [str(tmp_path / f"trace-{r}.json") for r in (0, 1)]

    def run(*args: str) -> tuple[int, str, str]:
        p = subprocess.run([CLI, "explain", *args], capture_output=True, text=True, check=False)
        return p.returncode, p.stdout, p.stderr

    for options in ([], ["--records", str(records), "--what-if"]):
        partials = []
        for trace in traces:
            partials.append(trace + ".partial")
            assert run(trace, "--partial", partials[-1], *options) == (0, "", "")
        for form in ([], ["--json"]):
            one = run(*traces, *options, *form)
            assert one[0] == 0, one
            assert run("--merge", *partials, *form) == one
        got = json.loads(run("--merge", *partials, "--json")[1])
        assert [r["rank"] for r in got["ranks"]] == [0, 1]
        assert got["ranks"][1]["steps"] == [0, 1, 2]  # HTA drops the last of ProfilerStep#0-3
        # Rank 0 alone cannot tell its window (it depends on rank 1's steps): its partial holds
        # both; rank 1's holds the one its own steps make the job's.
        (zero,), (one,) = (json.loads(open(p).read())["traces"] for p in partials)
        assert zero["filtered"] and zero["whole"] and one["filtered"] and one["whole"] is None
