"""The Grafana dashboard (dashboards/vxperf.json, issue #51) against a real Prometheus: Debian's
`prometheus` scrapes, every second, real instrumented runs on loopback, and every query of every
panel (and of every template variable) must return data from them.

The runs, each with its own VIDEOX_PERF_PROMETHEUS endpoint:
  - vxperf-serve: examples/python/serve.py (the tiny Wan-shaped pipeline on the CPU) under a few
    POST /generate requests;
  - vxperf-serve-gpu: requests on "cuda:0" of the fake CUDA driver, read by the fake NVML (a
    device drawing 250 W), each saying its queue wait and its video: what feeds the queue wait,
    the real-time factor, the energy per video, the DiT's MFU and the device panels;
  - vxperf-train: a training loop of the tiny models on the same fakes, on two gloo ranks with the
    live cross-rank view (goodput, its ledger, MFU, step times and phases, the stragglers' seconds
    lost, the windows' device readings); each rank serves its own port (the base plus its
    LOCAL_RANK).
Each run works in two batches with a scrape between them, so that every rate() has a rise to see.
Nothing sleeps a fixed time: the test polls Prometheus' targets and query APIs. Grafana is not
in Debian; its queries are what is tested, with its variables expanded ($job, $instance, $rank:
`.*`; $__rate_interval: a window of several scrapes). Skipped where /usr/bin/prometheus is not
installed (scripts/setup.sh installs it)."""
import contextlib
import json
import math
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import BUILD, FAKE_CUDA, clean_env, stop

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(REPO, "dashboards", "vxperf.json")
SERVE = os.path.join(REPO, "examples", "python", "serve.py")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
FAKE_NVML = os.path.join(BUILD, "tests", "support", "fake_nvml", "libfake_nvml.so")
DEADLINE_S = 90  # the whole run's bound; it takes a fraction of it
RATE_INTERVAL = "10s"  # $__rate_interval: ten scrapes

pytestmark = [
    pytest.mark.skipif(not os.access(PROMETHEUS, os.X_OK),
                       reason="no prometheus binary (Debian's package: apt-get install "
                              "prometheus; scripts/setup.sh installs it)"),
    pytest.mark.skipif(not (os.path.exists(FAKE_CUDA) and os.path.exists(FAKE_NVML)),
                       reason="the fake CUDA driver and fake NVML are not built"),
]

# What both device runs share: the fake driver's cuda:0 and the fake NVML's device at its PCI bus
# id (drawing 250 W, its counter following the wall clock, SM clock and temperature scripted),
# the engine's CUDA backend on them, then a loop that runs the batch each stdin line asks for.
FAKE_DEVICE = """
import ctypes, sys
BUS = b"00000000:01:00.0"
cuda = ctypes.CDLL({fake_cuda!r})
cuda.fake_cuda_set_pci_bus_id(0, BUS)
nvml = ctypes.CDLL("libnvidia-ml.so.1")  # the fake, found on LD_LIBRARY_PATH as the engine finds it
device = nvml.fake_nvml_add_device(BUS)
nvml.fake_nvml_draw(device, ctypes.c_double(250.0), ctypes.c_double(0.0), ctypes.c_double(0.0))
nvml.fake_nvml_follow_clock(1)
nvml.fake_nvml_script_sm_mhz(device, (ctypes.c_uint * 1)(1980), 1)
nvml.fake_nvml_script_temp_c(device, (ctypes.c_uint * 1)(61), 1)
import vxperf
from vxperf import _state
assert _state.ensure_cuda(0, {fake_cuda!r}, lambda d: (7 << 20, 9 << 20), lambda d: None)


def batches(run):
    print("ready", flush=True)
    for line in sys.stdin:
        run(int(line))
        print("done", flush=True)
"""

# Requests as a server on the device makes them: each waited 0.2 s in its queue, makes two videos
# of 33 frames at 16 fps, and runs two priced transformer forwards.
DEVICE_SERVER = FAKE_DEVICE + """
import time
vxperf.declare_model("transformer", params=1_300_000_000, widths=(1536, 1536, 30), text_tokens=512)


def run(n):
    for _ in range(n):
        with vxperf.request(device=0, stream=0x5000, videos=2, queue_s=0.2, frames=33, fps=16):
            for _ in range(2):
                with vxperf.stage("transformer", tokens=1560):
                    time.sleep(0.02)


batches(run)
"""

# A training loop of the tiny models on the fake device: phases, priced forwards, windows of two
# steps (VIDEOX_PERF_EVERY=2), the ledger and its goodput; one rank of two of a gloo group (RANK,
# WORLD_SIZE, MASTER_ADDR/PORT from the environment, as torchrun sets them).
TRAINER = FAKE_DEVICE + """
import torch
import torch.distributed as dist
import tiny_models as tm
dist.init_process_group("gloo")
torch.manual_seed(0)
vxperf.training_device(0, stream=0x77)
dit, vae, text_encoder = tm.WanTransformer3DModel(), tm.VideoVAE(), tm.TextEncoder()
optimizer = torch.optim.AdamW(dit.parameters(), lr=1e-3)
vxperf.register_model(dit)
vxperf.instrument_module(dit)
vxperf.instrument_module(vae, "vae")
vxperf.instrument_module(text_encoder)
ids = tm.Tokenizer()("a caption", dit.text_len)


def step():
    with vxperf.micro_step():
        with torch.no_grad():
            latents = vae.encode(torch.rand(1, 3, 5, 16, 16))
        context = text_encoder(ids)
        tokens = latents.shape[2] * (latents.shape[3] // 2) * (latents.shape[4] // 2)
        pred = dit(x=latents, t=torch.ones(1), context=context, seq_len=8 * -(-tokens // 8))
        with vxperf.backward():
            pred.pow(2).mean().backward()
        tm.clip_and_step(vxperf, optimizer, dit.parameters(), True)


batches(lambda n: [step() for _ in range(n)])
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, body=None, timeout=30):
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                     method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return reply.status, reply.read().decode()


class Prometheus:
    """Debian's prometheus on a free loopback port, with its own storage, scraping `jobs`
    ({job: "host:port"}) every second."""

    def __init__(self, tmp_path, jobs):  # jobs: {job: [target, ...]}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}
                               for job, targets in jobs.items()],
        }
        path = tmp_path / "prometheus.yml"
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        self.log = open(tmp_path / "prometheus.log", "w")
        self.process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={path}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            _, text = http(f"{self.base}/api/v1/{path}?{query}")
        except urllib.error.HTTPError as error:
            text = error.read().decode()
        answer = json.loads(text)
        assert answer.get("status") == "success", (path, params, answer)
        return answer["data"]

    def ready(self):
        try:
            return http(f"{self.base}/-/ready", timeout=2)[0] == 200
        except (OSError, urllib.error.URLError):
            return False

    def value(self, expr):
        """The expression's one value now, or None when it has no series."""
        result = self.api("query", query=expr)["result"]
        return float(result[0]["value"][1]) if result else None

    def close(self):
        stop(self.process)
        self.log.close()


def wait_for(what, predicate, deadline, process=None, interval=0.1):
    while time.monotonic() < deadline:
        if predicate():
            return
        if process is not None and process.poll() is not None:
            pytest.fail(f"{what}: the process ended ({process.returncode})")
        time.sleep(interval)
    pytest.fail(f"timed out waiting for {what}")


class Child:
    """A run in its own interpreter, its stdout read a line at a time with a deadline (a thread
    reads it), its stderr kept in a file for the failure's message. `send(n)` asks a device run
    (DEVICE_SERVER, TRAINER) for n more requests or steps."""

    def __init__(self, argv, env, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen([sys.executable] + argv, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.log)
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def expect(self, start, deadline):
        """The next line of stdout, which must start with `start`."""
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = "(nothing before the deadline)"
        if line is None or not line.startswith(start):
            stop(self.process)
            self.log.flush()
            with open(self.log_path) as handle:
                pytest.fail(f"expected {start!r}, got {line!r}\n{handle.read()[-4000:]}")
        return line

    def send(self, n):
        self.process.stdin.write(f"{n}\n")
        self.process.stdin.flush()

    def close(self):
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        stop(self.process)
        self.reader.join(timeout=15)
        self.process.stdout.close()
        self.log.close()


def expand(expr):
    """A panel's query as Grafana sends it with every variable at "All"."""
    expr = expr.replace("$__rate_interval", RATE_INTERVAL)
    return re.sub(r"\$\{?(job|instance|rank)\}?", ".*", expr)


def targets(dashboard):
    """(panel title, refId, expr) of every query of every panel, rows' own panels included."""
    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    return [(p["title"], t["refId"], t["expr"])
            for p in panels(dashboard["panels"]) for t in p.get("targets", [])]


def has_finite(result):
    for series in result:
        values = series.get("values") or [series["value"]]
        if any(math.isfinite(float(v)) for _, v in values):
            return True
    return False


def test_the_dashboards_model():
    """Importable as it is: a current schema, the Prometheus datasource as a variable that every
    panel and variable names, the three rows, a unit on every panel, ids that do not repeat."""
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    assert dashboard["schemaVersion"] >= 39 and dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("job", "instance", "rank"):
        assert variables[name]["datasource"]["uid"] == "${datasource}", name
        assert variables[name]["includeAll"] and variables[name]["allValue"] == ".*", name
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert rows == ["Serving", "Training", "Devices"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for p in dashboard["panels"]:
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        assert p["fieldConfig"]["defaults"]["unit"], p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}", p["title"]
            assert "vxperf_" in t["expr"], p["title"]
        grid = p["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, p["title"]


def test_every_panel_returns_data_from_real_runs(tmp_path):
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    deadline = time.monotonic() + DEADLINE_S
    fakes = tmp_path / "fakes"
    fakes.mkdir()
    os.symlink(FAKE_NVML, fakes / "libnvidia-ml.so.1")
    ports = {job: free_port() for job in ("vxperf-serve", "vxperf-serve-gpu", "vxperf-train")}
    device_env = {"VIDEOX_PERF": "1", "VIDEOX_PERF_NVML": "1", "OMP_NUM_THREADS": "1",
                  "LD_LIBRARY_PATH": os.pathsep.join(
                      [str(fakes)] + [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p])}

    with contextlib.ExitStack() as stack:
        ranks = 2  # of the training run, each serving the base port plus its LOCAL_RANK
        jobs = {j: [f"127.0.0.1:{p + r}" for r in range(ranks if j == "vxperf-train" else 1)]
                for j, p in ports.items()}
        prometheus = Prometheus(tmp_path, jobs)
        stack.callback(prometheus.close)
        serve = Child([SERVE, "--port", "0"], clean_env(
            VIDEOX_PERF="1", OMP_NUM_THREADS="1",
            VIDEOX_PERF_PROMETHEUS=f"127.0.0.1:{ports['vxperf-serve']}"), tmp_path / "serve.log")
        stack.callback(serve.close)
        gpu = Child(["-c", DEVICE_SERVER.format(fake_cuda=FAKE_CUDA)], clean_env(
            VIDEOX_PERF_PROMETHEUS=f"127.0.0.1:{ports['vxperf-serve-gpu']}", **device_env),
            tmp_path / "serve-gpu.log")
        stack.callback(gpu.close)
        master = free_port()
        trainers = []
        for rank in range(ranks):
            trainers.append(Child(["-c", TRAINER.format(fake_cuda=FAKE_CUDA)], clean_env(
                VIDEOX_PERF_PROMETHEUS=f"127.0.0.1:{ports['vxperf-train']}",
                VIDEOX_PERF_EVERY="2", VIDEOX_PERF_XRANK="1", RANK=str(rank),
                LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(master), **device_env), tmp_path / f"train{rank}.log"))
            stack.callback(trainers[-1].close)

        base = serve.expect("serving on http://", deadline).split()[-1].strip()
        gpu.expect("ready", deadline)
        for train in trainers:
            train.expect("ready", deadline)
        wait_for("prometheus to be ready", prometheus.ready, deadline, prometheus.process)

        def all_up():
            active = prometheus.api("targets", state="active")["activeTargets"]
            return (len(active) == sum(map(len, jobs.values()))
                    and all(t["health"] == "up" for t in active))

        wait_for("every target scraped", all_up, deadline, prometheus.process)
        start = time.time()

        # Two batches, each seen by Prometheus before the next: every counter and histogram
        # series exists at one scrape and has risen at a later one.
        counted = {"vxperf-serve": 'sum(vxperf_requests_total{job="vxperf-serve"})',
                   "vxperf-serve-gpu": 'sum(vxperf_requests_total{job="vxperf-serve-gpu"})',
                   "vxperf-train": 'sum(vxperf_train_step_seconds_count{job="vxperf-train"})'}
        seen = {job: 0.0 for job in counted}
        for n in (2, 2):
            for r in range(n):
                status, _ = http(base + "/generate", {"prompt": f"a paper boat {r}", "steps": 2})
                assert status == 200
            gpu.send(n)
            for train in trainers:
                train.send(2 * n)
            gpu.expect("done", deadline)
            for train in trainers:
                train.expect("done", deadline)
            for job, expr in counted.items():
                before = seen[job]

                def risen(job=job, expr=expr, before=before):
                    value = prometheus.value(expr)
                    seen[job] = value or 0.0
                    return value is not None and value > before

                wait_for(f"{job}'s batch scraped", risen, deadline, prometheus.process)
        # The range ends now, at one of its steps: the last scrapes are in its last point.
        end = time.time()
        start = end - max(1, math.ceil(end - start))

        missing = []
        for title, ref, expr in targets(dashboard):
            query = expand(expr)
            result = prometheus.api("query_range", query=query, start=f"{start:.3f}",
                                    end=f"{end:.3f}", step="1")["result"]
            if not has_finite(result):
                missing.append(f"{title} [{ref}]: {query}")
        for variable in dashboard["templating"]["list"]:
            if variable["type"] != "query":
                continue
            match = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", variable["query"]["query"])
            assert match, variable["query"]
            values = prometheus.api(f"label/{match[2]}/values", **{
                "match[]": expand(match[1]), "start": f"{start:.3f}", "end": f"{end:.3f}"})
            if not values:
                missing.append(f"variable {variable['name']}: {variable['query']['query']}")
            if variable["name"] == "job":
                assert sorted(values) == sorted(ports), values
        assert not missing, "queries with no data:\n" + "\n".join(missing)
