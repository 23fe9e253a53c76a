"""vxperf's serving metrics in a Python server's own Prometheus registry.

For a server that already has a `/metrics` route built on `prometheus_client`:

    import prometheus_client, vxperf.prometheus
    vxperf.prometheus.register()          # into prometheus_client.REGISTRY, or register(registry)

(`vxperf.prometheus` is this module, vxperf.integrations.prometheus, under its short name.)

Every record the engine settles from then on is published: the same families as the C++ endpoint
(`VIDEOX_PERF_PROMETHEUS`): vxperf_requests_total{status}, vxperf_request_seconds,
vxperf_stage_seconds{stage}, vxperf_dit_tflops, vxperf_dit_mfu, vxperf_peak_memory_bytes{kind},
vxperf_train_step_seconds, vxperf_train_samples_per_second, vxperf_train_mfu, vxperf_train_hfu,
each labelled with `rank`. The metrics are kept by the C++ engine (updated once per settled
request or window, never per stage call); a scrape reads them as one consistent snapshot. While
metrics are off the collector yields nothing.
"""

from .. import _ext, _state


class Collector:
    """A `prometheus_client` custom collector over the engine's serving metrics."""

    def __init__(self):
        # Made now, so that records settled from here on are counted even before the first scrape.
        if _state.on:
            _ext.prometheus_text()

    def collect(self):
        if not _state.on:
            return
        text = _ext.prometheus_text()
        if not text:
            return
        from prometheus_client.parser import text_string_to_metric_families

        yield from text_string_to_metric_families(text)

    def describe(self):
        # Nothing to describe up front: the families appear with their first values, so
        # registering never triggers a collection.
        return []


def register(registry=None):
    """Registers a Collector with `registry` (prometheus_client's default REGISTRY when None) and
    returns it."""
    if registry is None:
        from prometheus_client import REGISTRY as registry
    collector = Collector()
    registry.register(collector)
    return collector
