"""Serving under load (issue #13): examples/python/serve.py on 127.0.0.1, several clients at once
while both /metrics routes (the server's prometheus_client one with vxperf's collector, and
vxperf's own VIDEOX_PERF_PROMETHEUS endpoint) are scraped over and over. Every count must equal
the requests served, no request may fail because of metrics, and the server keeps serving while
scraped. Bounded in requests and in time; loopback only. Run with /usr/bin/python3 (torch)."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from conftest import clean_env, run_python, stop  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVE = os.path.join(REPO, "examples", "python", "serve.py")
CLIENTS, REQUESTS, STEPS = 6, 5, 2
DEADLINE_S = 240


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return reply.status, reply.read().decode()


def post(url, body, timeout=60, headers=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            if headers is not None:
                headers.update(reply.headers)
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def samples(text):
    """{(sample name, frozenset(labels)): value} of an exposition text."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(parsed, name, **labels):
    return parsed.get((name, frozenset(labels.items())))


def normalized(parsed):
    """samples() with every `le` as a number: the two writers may spell a bound differently."""
    return {(name, frozenset((k, float(v) if k == "le" else v) for k, v in labels)): v2
            for (name, labels), v2 in parsed.items()}


def test_the_collector_publishes_the_engines_families_as_they_are(tmp_path):
    """The collector reads the engine's structured families (no text re-parsed); what it
    publishes equals the engine's own exposition, sample for sample, for requests and windows."""
    proc = run_python("""
        import json, torch, vxperf, vxperf.prometheus
        import prometheus_client
        import tiny_models as tm
        registry = prometheus_client.CollectorRegistry()
        vxperf.prometheus.register(registry)
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        pipe("a cat", steps=2)
        pipe("a dog", steps=3)
        tm.train_dit(steps=2)
        from vxperf import _ext
        print(json.dumps([prometheus_client.generate_latest(registry).decode(),
                          _ext.prometheus_text()]))
    """, env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_EVERY="2"))
    published, native = (normalized(samples(t)) for t in json.loads(proc.stdout))
    assert published == native
    assert value(published, "vxperf_requests_total", rank="0", status="ok") == 2
    assert value(published, "vxperf_request_seconds_bucket", rank="0", le=float("inf")) == 2
    assert value(published, "vxperf_train_step_seconds_count", rank="0") == 2


@pytest.fixture
def server():
    native_port = free_port()
    env = clean_env(VIDEOX_PERF="1", VIDEOX_PERF_PROMETHEUS=f"127.0.0.1:{native_port}",
                    OMP_NUM_THREADS="1")
    process = subprocess.Popen([sys.executable, SERVE, "--port", "0"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("serving on http://"), line + process.stderr.read()
        yield line.split()[-1].strip(), f"http://127.0.0.1:{native_port}"
    finally:
        stop(process, timeout=30)


def test_counts_equal_the_requests_served_while_scraped(server):
    base, native = server
    deadline = time.monotonic() + DEADLINE_S
    failures, scrapes = [], {"python": 0, "native": 0}
    done = threading.Event()

    def client(index):
        for r in range(REQUESTS):
            if time.monotonic() > deadline:
                failures.append("deadline")
                return
            status, body = post(base + "/generate",
                                {"prompt": f"client {index} request {r}", "steps": STEPS})
            if status != 200 or body.get("shape") is None:
                failures.append((status, body))

    def scraper():
        while not done.is_set() and time.monotonic() < deadline:
            for name, url in (("python", base + "/metrics"), ("native", native + "/metrics")):
                status, _ = get(url)
                if status != 200:
                    failures.append(("scrape", name, status))
                scrapes[name] += 1
            time.sleep(0.02)

    scraping = threading.Thread(target=scraper)
    scraping.start()
    clients = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for c in clients:
        c.start()
    for c in clients:
        c.join(timeout=DEADLINE_S)
    done.set()
    scraping.join(timeout=60)

    assert not failures, failures
    assert scrapes["python"] > 0 and scrapes["native"] > 0
    total = CLIENTS * REQUESTS
    for name, url in (("python", base + "/metrics"), ("native", native + "/metrics")):
        status, text = get(url)
        assert status == 200, name
        m = samples(text)
        assert value(m, "vxperf_requests_total", rank="0", status="ok") == total, name
        assert value(m, "vxperf_request_seconds_count", rank="0") == total, name
        assert value(m, "vxperf_request_seconds_bucket", rank="0", le="+Inf") == total, name
        # Two transformer calls per step (classifier-free guidance), two text-encoder calls
        # (prompt and empty prompt), one decode per request.
        assert value(m, "vxperf_stage_seconds_count", rank="0", stage="transformer") == \
            total * STEPS * 2, name
        assert value(m, "vxperf_stage_seconds_count", rank="0", stage="text_encoder") == \
            total * 2, name
        assert value(m, "vxperf_stage_seconds_count", rank="0", stage="vae_dec") == total, name
        assert value(m, "vxperf_dit_tflops", rank="0") > 0, name
    status, health = get(base + "/healthz")
    assert json.loads(health)["served"] == total
    # Each response says its own request's stages (its calls: two per step under guidance).
    headers = {}
    status, _ = post(base + "/generate", {"prompt": "timed", "steps": STEPS}, headers=headers)
    timing = headers.get("Server-Timing", "")
    assert status == 200 and 'transformer;dur=' in timing, headers
    assert f'desc="{STEPS * 2} calls"' in timing and ", e2e;dur=" in timing, timing


def test_bad_requests_are_refused_and_the_server_goes_on(server):
    base, native = server
    assert post(base + "/generate", {"steps": 2})[0] == 400
    assert post(base + "/generate", {"prompt": "x", "steps": 10 ** 9})[0] == 400
    with pytest.raises(urllib.error.HTTPError) as error:
        get(base + "/nowhere")
    assert error.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as error:
        get(native + "/other")
    assert error.value.code == 404
    status, body = post(base + "/generate", {"prompt": "still serving", "steps": 1})
    assert status == 200 and body["shape"][0] == 1
