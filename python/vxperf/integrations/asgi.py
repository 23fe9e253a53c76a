"""The record of each HTTP request's pipeline calls in its response: an ASGI middleware.

    from vxperf.integrations.asgi import ServerTiming
    app = FastAPI()
    app.add_middleware(ServerTiming, record_header="x-vxperf-record")   # Starlette / FastAPI
    app = ServerTiming(app)                                             # any ASGI app

Every request vxperf measures while an HTTP request is handled (in its task, or in a thread that
carries its context: a sync FastAPI endpoint, `asyncio.to_thread`, Starlette's threadpool) is
added to that response as a W3C `Server-Timing` header, which browsers' developer tools show:

    Server-Timing: queue;dur=120.5, text_encoder;dur=4.1;desc="1 call",
                   transformer;dur=812.9;desc="50 calls", vae_dec;dur=95.0;desc="1 call",
                   e2e;dur=930.2

(milliseconds: the record's `queue_s`, each stage's `total_ms`, and `e2e_s`; summed over the
requests when one HTTP request ran several). With `record_header`, each record also goes whole
into one header of that name, as its JSON line. The headers are added as the response starts: a
response streamed before its pipeline call ends carries none. A thread the context does not reach
(`loop.run_in_executor`, a worker fed by a queue) can hand its records over itself: see
`collect()`. While metrics are off the middleware passes everything through untouched.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Iterable, MutableMapping
from typing import Any, Callable

from .. import _inference, _state
from ..records_types import RequestRecord

# ASGI's own shapes (the spec's scope, messages and callables), untyped dicts as the spec has them.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_bucket: contextvars.ContextVar[list[RequestRecord] | None] = contextvars.ContextVar(
    "vxperf_http_records", default=None)


def _collect(settled: _inference.Settled) -> None:
    bucket = _bucket.get()
    if bucket is not None:
        bucket.append(settled.record)


def collect(record: RequestRecord) -> bool:
    """Adds `record` (a vxperf record dict, say vxperf.last_request() on a worker thread) to the
    response of the HTTP request whose context this runs in; False outside one."""
    bucket = _bucket.get()
    if bucket is None or not isinstance(record, dict):
        return False
    bucket.append(record)
    return True


def server_timing(records: Iterable[RequestRecord]) -> str:
    """The Server-Timing header value of `records` (request record dicts)."""
    total: dict[str, float] = {}
    calls: dict[str, int] = {}
    queue = 0.0
    queued = False
    e2e = 0.0
    for record in records:
        if record.get("queue_s") is not None:
            queue += record["queue_s"]
            queued = True
        e2e += record.get("e2e_s", 0.0)
        for name, stage in record.get("stages", {}).items():
            total[name] = total.get(name, 0.0) + stage["total_ms"]
            calls[name] = calls.get(name, 0) + stage["count"]
    parts = [f"queue;dur={queue * 1e3:.3f}"] if queued else []
    for name, ms in total.items():
        count = calls[name]
        parts.append(f'{name};dur={ms:.3f};desc="{count} call{"" if count == 1 else "s"}"')
    parts.append(f"e2e;dur={e2e * 1e3:.3f}")
    return ", ".join(parts)


class ServerTiming:
    """ASGI middleware: each response carries the records of the requests measured for it (see
    the module's doc). `record_header`: the header each record goes into as JSON (None: none)."""

    def __init__(self, app: ASGIApp, record_header: str | None = None) -> None:
        self.app = app
        self.record_header = record_header.lower().encode("latin-1") if record_header else None
        _inference.on_settled(_collect)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or not _state.on:
            await self.app(scope, receive, send)
            return
        records: list[RequestRecord] = []
        token = _bucket.set(records)

        async def send_with_timing(message: Message) -> None:
            if message.get("type") != "http.response.start" or not records:
                await send(message)
                return
            headers = list(message.get("headers", ()))
            headers.append((b"server-timing", server_timing(records).encode("latin-1")))
            if self.record_header is not None:
                for record in records:
                    line = json.dumps(record, separators=(",", ":"))
                    headers.append((self.record_header, line.encode("latin-1")))
            try:
                await send({**message, "headers": headers})
            except Exception as error:
                _state.warn(("asgi-send", type(error).__name__),
                            f"a response with its Server-Timing could not be sent ({error!r}: the "
                            "client hung up?); its requests' records are kept (said once)")
                raise

        try:
            await self.app(scope, receive, send_with_timing)
        finally:
            _bucket.reset(token)
