"""What vxperf knows of the libraries around it, one module each:

    accelerate          the training loop's measurement points (install_training patches it)
    diffusers           pipeline classes for install(), cache hooks (track_cache), layerwise casting
    transformers        its model base class, which classifies a training model as a text encoder
    transformer_engine  its fp8 autocast, as the dtype of a priced call
    prometheus          a prometheus_client collector over the engine's serving metrics
    opentelemetry       requests as span trees (VIDEOX_PERF_OTEL=1, or enable())
    asgi                Server-Timing and the records in an HTTP response (ServerTiming)

None of them imports its library before the program has (or before an entry point asks for it).
The core modules (_reading, _training) know no library: register() hands them these readers, and
`import vxperf` calls it."""

from __future__ import annotations

# opentelemetry: imported for what it registers (its spans turn on with VIDEOX_PERF_OTEL).
from . import diffusers, opentelemetry, transformer_engine, transformers  # noqa: F401


def register() -> None:
    """Gives the core modules the readers of the libraries above (idempotent)."""
    diffusers.register()
    transformers.register()
    transformer_engine.register()
