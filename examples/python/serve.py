#!/usr/bin/env python3
"""A tiny text-to-video HTTP server on loopback, measured by vxperf and scraped by Prometheus.

Needs torch and prometheus_client (`pip install prometheus_client`; the project's build-venv has
both):

    VIDEOX_PERF=1 PYTHONPATH=build/python build-venv/bin/python examples/python/serve.py --port 8000
    curl -si -X POST localhost:8000/generate -d '{"prompt": "a paper boat", "steps": 2}'
    curl -s localhost:8000/metrics | grep vxperf_

Every POST /generate is one pipeline call of the tiny Wan-shaped pipeline of generate.py, served
on its own thread, so several requests are in flight at once; its response carries the request's
stages as a W3C `Server-Timing` header (what browsers' developer tools show; ASGI servers get it
from the `vxperf.integrations.asgi.ServerTiming` middleware). GET /metrics is this server's own
prometheus_client route, with vxperf's collector registered in its registry (request counts and
latency, per-stage histograms, DiT TFLOPS and MFU). VIDEOX_PERF_PROMETHEUS=[host:]port also
serves the same metrics from vxperf's own endpoint, for servers without a route of their own.
Anything else is 404. The server binds 127.0.0.1 unless --host says otherwise, prints
"serving on http://HOST:PORT" when ready, and stops on SIGTERM or Ctrl-C.
"""
import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    import prometheus_client
except ImportError:
    sys.exit("serve.py needs prometheus_client: pip install prometheus_client")
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate import TextToVideoPipeline  # noqa: E402

import vxperf  # noqa: E402
import vxperf.prometheus  # noqa: E402
from vxperf.integrations.asgi import server_timing  # noqa: E402

MAX_BODY = 64 * 1024  # a prompt and a few numbers; anything larger is refused
LIMITS = {"steps": (1, 50), "frames": (1, 33), "size": (16, 256)}


def _number(body, name, default):
    value = body.get(name, default)
    low, high = LIMITS[name]
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"'{name}' must be an integer from {low} to {high}")
    return value


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, pipe, registry):
        super().__init__(address, Handler)
        self.pipe = pipe
        self.registry = registry
        self.served = 0
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # keep stderr for vxperf's lines
        pass

    def _reply(self, status, body, content_type="application/json", timing=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if timing:
            self.send_header("Server-Timing", timing)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/metrics":
            self._reply(200, prometheus_client.generate_latest(self.server.registry),
                        prometheus_client.CONTENT_TYPE_LATEST)
        elif self.path == "/healthz":
            self._reply(200, {"ok": True, "served": self.server.served})
        else:
            self._reply(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/generate":
            self._reply(404, {"error": "not found"})
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
            if not 0 < length <= MAX_BODY:
                raise ValueError(f"a JSON body of 1 to {MAX_BODY} bytes is needed")
            body = json.loads(self.rfile.read(length))
            if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
                raise ValueError("the body needs a string 'prompt'")
            steps = _number(body, "steps", 2)
            frames = _number(body, "frames", 5)
            size = _number(body, "size", 32) // 16 * 16
        except (ValueError, json.JSONDecodeError) as error:
            self._reply(400, {"error": str(error)})
            return
        video = self.server.pipe(body["prompt"], frames=frames, height=size, width=size,
                                 steps=steps, seed=len(body["prompt"]))
        with self.server.lock:
            self.server.served += 1
        # The record of the call this thread just made (None while metrics are off).
        record = vxperf.last_request()
        self._reply(200, {"shape": list(video.shape), "checksum": float(video.abs().sum())},
                    timing=server_timing([record]) if record else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    # Every pipeline call is a request when VIDEOX_PERF is set; its metrics go into this server's
    # own registry, beside whatever else the server exports.
    vxperf.install(pipelines=TextToVideoPipeline)
    registry = prometheus_client.CollectorRegistry()
    vxperf.prometheus.register(registry)

    server = Server((args.host, args.port), TextToVideoPipeline(), registry)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    host, port = server.server_address[:2]
    print(f"serving on http://{host}:{port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    server.server_close()
    print(f"served {server.served} requests", flush=True)


if __name__ == "__main__":
    main()
