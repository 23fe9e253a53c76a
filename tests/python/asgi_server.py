"""A FastAPI app served by uvicorn around a tiny real diffusers pipeline (Wan 2.1's classes, random
weights, CPU), with a bounded queue in front of the pipeline: what tests/python/test_serving_load.py
and bench/serve_bench.py drive.

    python asgi_server.py --port 0 [--otel] [--queue 64]

POST /generate {"prompt": ..., "steps": 2, "seed": 0} runs one pipeline call when its turn comes
(one at a time; 503 when more than --queue wait), answering the output's checksum and the
vxperf record's `req`. GET /metrics is the app's prometheus_client registry with vxperf's
collector. With --otel the OpenTelemetry SDK is set up: every HTTP request gets a server span
(the child of the client's W3C `traceparent`), finished spans go to an in-memory exporter
(GET /spans answers them) and, when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, to an OTLP/HTTP
exporter in batches. vxperf's middleware adds Server-Timing and the record (`x-vxperf-record`).
Prints "serving on http://HOST:PORT" once listening.
"""
import argparse
import asyncio
import os
import socket
import sys

import prometheus_client
import torch
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402

import vxperf  # noqa: E402
import vxperf.prometheus  # noqa: E402
from vxperf.integrations.asgi import ServerTiming  # noqa: E402


class TraceRequests:
    """A server span per HTTP request, the child of its incoming traceparent (what
    opentelemetry-instrumentation-asgi does, here without that package)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from opentelemetry import propagate, trace

        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        tracer = trace.get_tracer("asgi_server")
        with tracer.start_as_current_span(f"{scope['method']} {scope['path']}",
                                          context=propagate.extract(carrier),
                                          kind=trace.SpanKind.SERVER):
            await self.app(scope, receive, send)


def tracing(spans):
    """The OpenTelemetry SDK: the in-memory exporter `spans`, and OTLP where its endpoint is set."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    if os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def span_json(span):
    parent = span.parent
    return {"name": span.name, "trace_id": f"{span.context.trace_id:032x}",
            "span_id": f"{span.context.span_id:016x}",
            "parent_id": f"{parent.span_id:016x}" if parent else None,
            "start": span.start_time, "end": span.end_time,
            "status": span.status.status_code.name, "attributes": dict(span.attributes)}


def make_app(otel, queue_max):
    app = FastAPI()
    pipe = real_models.wan()
    registry = prometheus_client.CollectorRegistry()
    vxperf.prometheus.register(registry)
    turn = asyncio.Semaphore(1)
    state = {"waiting": 0}
    spans = provider = None
    if otel:
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans = InMemorySpanExporter()
        provider = tracing(spans)

    def run(body):
        video = pipe(body["prompt"], num_inference_steps=int(body.get("steps", 2)), height=16,
                     width=16, num_frames=5, output_type="pt",
                     generator=torch.Generator().manual_seed(int(body.get("seed", 0))))
        record = vxperf.last_request()
        return float(video.frames.abs().sum()), record["req"] if record else None

    @app.post("/generate")
    async def generate(body: dict):
        if state["waiting"] >= queue_max:
            return JSONResponse({"error": "queue full"}, status_code=503)
        state["waiting"] += 1
        waiting = True
        try:
            with vxperf.queued():  # its wait: the record's queue_s
                async with turn:
                    state["waiting"] -= 1
                    waiting = False
                    checksum, req = await asyncio.to_thread(run, body)
        finally:
            if waiting:
                state["waiting"] -= 1
        return {"checksum": checksum, "req": req}

    @app.get("/metrics")
    async def metrics():
        return Response(prometheus_client.generate_latest(registry),
                        media_type=prometheus_client.CONTENT_TYPE_LATEST)

    @app.get("/spans")
    async def finished_spans():
        if spans is None:
            return JSONResponse({"error": "started without --otel"}, status_code=404)
        provider.force_flush()
        return [span_json(s) for s in spans.get_finished_spans()]

    app.add_middleware(ServerTiming, record_header="x-vxperf-record")
    return TraceRequests(app) if otel else app


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--otel", action="store_true")
    parser.add_argument("--queue", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    vxperf.install()
    app = make_app(args.otel, args.queue)
    sock = socket.socket()
    sock.bind(("127.0.0.1", args.port))
    sock.listen(256)
    host, port = sock.getsockname()
    print(f"serving on http://{host}:{port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
