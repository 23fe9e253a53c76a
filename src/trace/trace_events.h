// The events of a live run's raw trace (VIDEOX_PERF_TRACE), in the event-script format that
// replay reads (docs/EVENT_SCRIPTS.md). Made here and nowhere else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/event_kinds.h"
#include "schema/json.h"
#include "vxperf/model.h"
#include "vxperf/observer.h"
#include "vxperf/peak.h"
#include "vxperf/settings.h"
#include "vxperf/topology.h"

namespace vxperf::internal {

// The first line: the settings as variables, the device, the topology, and when the process
// started (on the trace's clock), where known.
std::string config_event(const Settings& settings, const std::optional<std::string>& device_name,
                         int device_index, const Topology& topology,
                         std::optional<double> process_start = std::nullopt);
// A moment the script says with nothing but its time, {"ev", "t"} (a point kind's row:
// train_setup, train_end), so that a new such kind needs no writer of its own.
Json point_event(std::string_view event, double t);
// A change of rank, world size or layout after the first line.
std::string topology_event(const Topology& topology);
std::string model_event(std::string_view stage, const ModelInfo& info);
// One request, begin to end: its own model declarations, then its calls.
std::vector<std::string> request_events(const SettledRequest& request);
std::string finish_event(double t);
// A measured peak handed to the engine (device -1: the host).
std::string peak_event(int device, const MeasuredPeak& peak);

// Training events stay JSON until their step settles: only then are device times known.
Json train_model_event(const ModelInfo& info, std::int64_t trainable);
Json micro_event(const char* kind, double t);  // "micro_enter" / "micro_exit"
Json memory_event(const DeviceReadings& readings);

}  // namespace vxperf::internal
