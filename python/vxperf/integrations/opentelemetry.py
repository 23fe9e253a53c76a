"""Requests as OpenTelemetry spans, through `opentelemetry-api` (imported only when turned on).

    VIDEOX_PERF=1 VIDEOX_PERF_OTEL=1 python serve.py     # or, in code:
    vxperf.integrations.opentelemetry.enable()           # the global tracer provider

Each request becomes one span named for its pipeline (`WanPipeline`; `request(name=)` for a scope)
with a child span per stage (per call too at VIDEOX_PERF=2). The spans are made from the settled
record, after the request's one synchronize, on the request's own thread: a request that runs
inside a span the server opened (an incoming W3C `traceparent` its framework turned into the
current context) is that span's child, so the trace id carries across. Nothing is made on the hot
path.

Times: the request span starts when the request began (wall clock) and lasts its `e2e_s`; a stage
span starts when the stage's first call began and lasts the stage's `total_ms` (its calls as
resolved, host or device, summed), so that the two agree to the nanosecond; a call span (level 2)
starts at its call and lasts its resolved time.

Attributes (OpenTelemetry's `gen_ai` names where one fits, `vxperf.` otherwise):

    gen_ai.operation.name           "generate_content"
    gen_ai.latency.e2e              the record's e2e_s
    gen_ai.latency.time_in_queue    queue_s (when the server said it)
    vxperf.<key>                    every other number and flag of the record's top level and of
                                    its readings (req, rank, first_step_s, video_s,
                                    realtime_factor, videos, energy_j, power_w_mean, ...)
    vxperf.dit.<key>                the DiT pricing: params, tokens, batch, flops_per_fwd, tflops,
                                    mfu, peak_tflops, effective_fwd, skipped_fwd
    vxperf.frames, .height, .width, vxperf.steps
                                    what the pipeline call asked for (num_frames, height, width,
                                    num_inference_steps)
    vxperf.stage.calls, vxperf.stage.seconds, vxperf.stage.max_ms    (stage spans)

A server that opens a span as a request arrives can set `vxperf.queued_at` (time.time() then) on
it: a request begun inside that span without a queue time of its own (a ticket, `queue_s`,
`queued_at`) takes its `queue_s` from it.

A failed request's span has status ERROR. An exporter or processor that raises is said once; the
request and its record are untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from .. import _ext, _inference, _state

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

_OPERATION = "generate_content"
_CALL_KEYS = (("num_frames", "vxperf.frames"), ("height", "vxperf.height"),
              ("width", "vxperf.width"), ("num_inference_steps", "vxperf.steps"))
_tracer: Tracer | None = None
# (opentelemetry.trace, Status, StatusCode), imported once by enable()
_api: tuple[Any, Any, Any] | None = None
#: The attribute a server sets on its request's span: when the request arrived (time.time()).
QUEUED_AT = "vxperf.queued_at"


def enable(tracer_provider: TracerProvider | None = None) -> bool:
    """Makes every request from now on a span tree, through `tracer_provider` (default: the global
    one, also when the program sets it later). Returns False, said once, where opentelemetry-api
    is not installed or metrics are off."""
    global _tracer, _api
    if not _state.on:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode
    except ImportError as error:
        _state.warn(("otel", "import"), f"VIDEOX_PERF_OTEL: opentelemetry-api cannot be imported "
                    f"({error}); no spans")
        return False
    from .. import __version__

    _api = (trace, Status, StatusCode)
    _tracer = trace.get_tracer("vxperf", __version__, tracer_provider=tracer_provider)
    _ext.keep_request_detail(True)
    _inference.on_settled(_emit)
    _inference.queued_at_source = queued_at
    return True


def disable() -> None:
    """No spans from now on."""
    global _tracer
    _inference.on_settled(_emit, add=False)
    _inference.queued_at_source = None
    _ext.keep_request_detail(False)
    _tracer = None


def queued_at() -> float | None:
    """The `vxperf.queued_at` attribute (time.time() when the request arrived) of the current
    span, where the server set one on it; None otherwise. A request that says no queue time of
    its own takes this one."""
    from opentelemetry import trace

    attributes = getattr(trace.get_current_span(), "attributes", None)
    return attributes.get(QUEUED_AT) if attributes else None


@_state.when_on
def _from_environment() -> None:
    if _tracer is None and _ext.otel_requested():
        enable()


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def attributes(settled: _inference.Settled) -> dict[str, Any]:
    """The request span's attributes, from its record and its call (see the module's doc)."""
    record = settled.record
    out: dict[str, Any] = {"gen_ai.operation.name": _OPERATION,
                           "gen_ai.latency.e2e": record["e2e_s"]}
    if record.get("queue_s") is not None:
        out["gen_ai.latency.time_in_queue"] = record["queue_s"]
    for key, value in record.items():
        if key == "readings" and isinstance(value, dict):
            out.update(_scalars("vxperf.", value))
        elif key not in ("e2e_s", "queue_s", "ts"):
            out.update(_scalars("vxperf.", {key: value}))
    if isinstance(record.get("dit"), dict):
        out.update(_scalars("vxperf.dit.", cast("Mapping[str, object]", record["dit"])))
    for key, name in _CALL_KEYS:
        value = settled.call.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def _scalars(prefix: str, values: Mapping[str, object]) -> dict[str, Any]:
    return {prefix + key: value for key, value in values.items()
            if isinstance(value, (bool, int, float, str))}


def _emit(settled: _inference.Settled) -> None:
    if _tracer is None or _api is None:
        return
    detail = _ext.last_request_detail()
    if detail is None:
        return
    trace, Status, StatusCode = _api

    failed, start_ts, calls_by_stage = detail
    start = _ns(start_ts)
    span = _tracer.start_span(settled.name, start_time=start, attributes=attributes(settled))
    try:
        if failed or settled.failed:
            span.set_status(Status(StatusCode.ERROR, "the request raised"))
        parent = trace.set_span_in_context(span)
        every_call = _ext.level() >= 2
        for (name, stage), calls in zip(settled.record["stages"].items(), calls_by_stage):
            if not calls:
                continue
            begin = start + _ns(calls[0][0])
            child = _tracer.start_span(name, context=parent, start_time=begin, attributes={
                "vxperf.stage.calls": stage["count"], "vxperf.stage.seconds":
                stage["total_ms"] / 1e3, "vxperf.stage.max_ms": stage["max_ms"]})
            if every_call:
                inner = trace.set_span_in_context(child)
                for index, (at, seconds) in enumerate(calls):
                    call_start = start + _ns(at)
                    _tracer.start_span(f"{name} call {index}", context=inner,
                                       start_time=call_start).end(call_start + _ns(seconds))
            child.end(begin + _ns(stage["total_ms"] / 1e3))
    finally:
        span.end(start + _ns(settled.record["e2e_s"]))
