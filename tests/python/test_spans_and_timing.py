"""Requests as OpenTelemetry spans (VIDEOX_PERF_OTEL) and in HTTP responses (the ASGI
middleware), one part at a time (issue #38); test_serving_load.py runs them all under load."""
import json

import pytest

pytest.importorskip("opentelemetry.sdk")

from conftest import clean_env, read_records, run_python  # noqa: E402

SDK = """
        import json, time, torch, vxperf
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(provider)
        import tiny_models as tm

        def dump():
            for s in spans.get_finished_spans():
                print("SPAN", json.dumps({"name": s.name, "id": s.context.span_id,
                      "parent": s.parent.span_id if s.parent else None, "start": s.start_time,
                      "end": s.end_time, "status": s.status.status_code.name,
                      "attributes": dict(s.attributes)}))
"""


def spans_of(stdout):
    return [json.loads(line[5:]) for line in stdout.splitlines() if line.startswith("SPAN ")]


def test_a_request_is_a_span_tree_of_its_stages_and_calls(tmp_path):
    """At level 2: the pipeline's span, a child per stage lasting the stage's total, a child per
    call; a failed request's span is an error and its record is kept; the span is the child of
    the one current when the request ran, and takes its queue time from `vxperf.queued_at`."""
    records = tmp_path / "records.jsonl"
    code = SDK + """
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        tracer = trace.get_tracer("server")
        with tracer.start_as_current_span("POST /generate") as server:
            server.set_attribute("vxperf.queued_at", time.time())
            time.sleep(0.25)  # waiting for its turn
            pipe("a cat", steps=3)
        print("SERVER", server.get_span_context().span_id)
        with vxperf.request(name="explicit", frames=8, fps=4):
            with vxperf.stage("transformer", tokens=8):
                pass
        try:
            with vxperf.request(name="broken"):
                raise RuntimeError("out of memory")
        except RuntimeError:
            pass
        dump()
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=2, VIDEOX_PERF_OTEL=1,
                                          VIDEOX_PERF_JSON=records))
    spans = spans_of(proc.stdout)
    first, explicit, broken = read_records(records)
    server_id = int(proc.stdout.split("SERVER ")[1].split()[0])
    root = next(s for s in spans if s["name"] == "WanPipeline")
    assert root["parent"] == server_id
    assert root["attributes"]["vxperf.req"] == first["req"]
    assert root["attributes"]["gen_ai.latency.time_in_queue"] == first["queue_s"]
    assert first["queue_s"] == pytest.approx(0.25, abs=0.2)
    assert root["end"] - root["start"] == round(first["e2e_s"] * 1e9)
    stages = {s["name"]: s for s in spans if s["parent"] == root["id"]}
    assert list(stages) == list(first["stages"])
    for name, stage in first["stages"].items():
        span = stages[name]
        assert abs((span["end"] - span["start"]) - stage["total_ms"] * 1e6) < 1
        assert span["start"] >= root["start"]
        calls = [s for s in spans if s["parent"] == span["id"]]
        assert len(calls) == stage["count"]
        assert sum(c["end"] - c["start"] for c in calls) == pytest.approx(
            stage["total_ms"] * 1e6, abs=stage["count"])
    # the pipeline call's own numbers
    assert root["attributes"]["vxperf.dit.flops_per_fwd"] == first["dit"]["flops_per_fwd"]
    named = next(s for s in spans if s["name"] == "explicit")
    assert named["attributes"]["vxperf.video_s"] == explicit["video_s"] == 2.0
    assert named["status"] == "UNSET"
    failed = next(s for s in spans if s["name"] == "broken")
    assert failed["status"] == "ERROR" and failed["attributes"]["vxperf.req"] == broken["req"]


def test_a_raising_processor_or_a_missing_library_is_said_once(tmp_path):
    """A span processor that raises: said once, every request served and recorded. Without
    opentelemetry importable, VIDEOX_PERF_OTEL=1 says so once and requests are measured."""
    records = tmp_path / "records.jsonl"
    code = SDK + """
        from opentelemetry.sdk.trace import SpanProcessor
        class Broken(SpanProcessor):
            def on_end(self, span):
                raise OSError("collector unreachable")
        provider.add_span_processor(Broken())
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        for _ in range(3):
            pipe("a cat", steps=2)
        print("served")
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_OTEL=1,
                                          VIDEOX_PERF_JSON=records))
    assert "served" in proc.stdout
    assert proc.stderr.count("collector unreachable") == 1, proc.stderr
    assert len(read_records(records)) == 3

    missing = tmp_path / "missing.jsonl"
    code = """
        import sys
        sys.modules["opentelemetry"] = None  # as if it were not installed
        import vxperf, tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
        pipe("a cat", steps=2)
        pipe("a dog", steps=2)
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_OTEL=1,
                                          VIDEOX_PERF_JSON=missing))
    assert proc.stderr.count("opentelemetry-api cannot be imported") == 1, proc.stderr
    assert len(read_records(missing)) == 2


def test_a_ticket_as_context_queues_a_pipeline_call(tmp_path):
    """`with vxperf.queued():` around a pipeline call, here through asyncio.to_thread as a server
    does: the call takes the ticket (queue_s, the queued count back to 0); a second call in the
    same block takes none; a block left without a request cancels its ticket."""
    records = tmp_path / "records.jsonl"
    code = """
        import asyncio, time, vxperf, vxperf.prometheus
        from prometheus_client import CollectorRegistry
        import tiny_models as tm
        registry = CollectorRegistry()
        vxperf.prometheus.register(registry)
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline())

        async def serve():
            with vxperf.queued():
                await asyncio.sleep(0.2)
                await asyncio.to_thread(pipe, "a cat", steps=2)
                await asyncio.to_thread(pipe, "a dog", steps=2)
            with vxperf.queued():
                pass  # the client hung up
        asyncio.run(serve())
        print("queued", registry.get_sample_value("vxperf_requests_queued", {"rank": "0"}))
    """
    proc = run_python(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_JSON=records))
    assert "queued 0.0" in proc.stdout
    first, second = read_records(records)
    assert first["queue_s"] == pytest.approx(0.2, abs=0.15)
    assert "queue_s" not in second


def test_the_middleware_adds_server_timing_and_passes_through_when_off(tmp_path):
    """ServerTiming on a bare ASGI app: the header sums the records made in the request's
    context; a send that raises (the client hung up) is said once and propagates; with metrics
    off nothing is added."""
    code = """
        import asyncio, json, vxperf
        from vxperf.integrations.asgi import ServerTiming, server_timing
        import tiny_models as tm
        pipe = vxperf.instrument_pipeline(tm.wan_pipeline(), level=int(LEVEL))

        async def app(scope, receive, send):
            await asyncio.to_thread(pipe, "a cat", steps=2)
            await asyncio.to_thread(pipe, "a dog", steps=2)
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

        async def call(app, fail=False):
            sent = []
            async def send(message):
                if fail:
                    raise ConnectionResetError("gone")
                sent.append(message)
            try:
                await app({"type": "http"}, None, send)
            except ConnectionResetError:
                print("raised")
            return dict(sent[0]["headers"]) if sent else {}

        wrapped = ServerTiming(app, record_header="X-Vxperf-Record")
        headers = asyncio.run(call(wrapped))
        print("HEADERS", json.dumps({k.decode(): v.decode() for k, v in headers.items()}))
        asyncio.run(call(wrapped, fail=True))
        asyncio.run(call(wrapped, fail=True))
    """
    proc = run_python(code.replace("LEVEL", "1"), env=clean_env())
    headers = json.loads(proc.stdout.split("HEADERS ")[1].splitlines()[0])
    assert proc.stdout.count("raised") == 2
    assert proc.stderr.count("could not be sent") == 1
    timing = dict(part.split(";", 1) for part in headers["server-timing"].split(", "))
    assert timing["transformer"].startswith("dur=") and 'desc="4 calls"' in timing["transformer"]
    record = json.loads(headers["x-vxperf-record"])  # one header per record: the last kept here
    assert record["kind"] == "request"
    assert float(timing["e2e"][4:]) > record["e2e_s"] * 1e3  # two requests' e2e summed

    proc = run_python(code.replace("LEVEL", "0"), env=clean_env())
    assert json.loads(proc.stdout.split("HEADERS ")[1].splitlines()[0]) == {}
