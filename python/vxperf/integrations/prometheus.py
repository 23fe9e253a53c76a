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
request or window, never per stage call); a scrape reads them as one consistent snapshot of
structured families (no exposition text is written or parsed on the way). While metrics are off
the collector yields nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .. import _ext, _state

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import CollectorRegistry

# The engine's snapshot (vxperf._ext.prometheus_families()): one row per family.
_Snapshot = Sequence[tuple[str, str, str, list[str], list[float],
                           list[tuple[list[str], float, list[int], float, int]]]]


def _bound(value: float) -> str:
    """A bucket's upper bound as Prometheus spells it in `le` (as prometheus_client does)."""
    from prometheus_client.utils import floatToGoString

    return str(floatToGoString(value))


def _families(snapshot: _Snapshot) -> Iterator[Metric]:
    """prometheus_client metric families from the engine's structured snapshot."""
    from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                        HistogramMetricFamily)

    kinds: dict[str, Any] = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily,
             "histogram": HistogramMetricFamily}
    for name, help_text, kind, label_names, bounds, samples in snapshot:
        family = kinds[kind](name, help_text, labels=label_names)
        for label_values, value, cumulative, total, _count in samples:
            if kind == "histogram":
                les = [_bound(b) for b in bounds] + ["+Inf"]
                family.add_metric(label_values, list(zip(les, cumulative)), total)
            else:
                family.add_metric(label_values, value)
        yield family


class Collector:
    """A `prometheus_client` custom collector over the engine's serving metrics."""

    def __init__(self) -> None:
        # Made now, so that records settled from here on are counted even before the first scrape.
        if _state.on:
            _ext.prometheus_families()

    def collect(self) -> Iterator[Metric]:
        if not _state.on:
            return
        yield from _families(_ext.prometheus_families())

    def describe(self) -> list[Metric]:
        # Nothing to describe up front: the families appear with their first values, so
        # registering never triggers a collection.
        return []


def register(registry: CollectorRegistry | None = None) -> Collector:
    """Registers a Collector with `registry` (prometheus_client's default REGISTRY when None) and
    returns it."""
    if registry is None:
        from prometheus_client import REGISTRY

        registry = REGISTRY
    collector = Collector()
    registry.register(collector)
    return collector
