"""vxperf.prometheus: the short name of vxperf.integrations.prometheus (a prometheus_client
collector over the engine's serving metrics; see there)."""

from .integrations.prometheus import Collector, register

__all__ = ["Collector", "register"]
