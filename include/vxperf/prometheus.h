// Serving metrics for Prometheus: the record sink that keeps them (vxperf/prometheus_sink.h) and
// the HTTP endpoint that serves them at GET /metrics (vxperf/prometheus_endpoint.h).
#pragma once

#include "vxperf/listen_address.h"
#include "vxperf/prometheus_endpoint.h"
#include "vxperf/prometheus_sink.h"
