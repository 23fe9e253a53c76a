// The events of a live run's raw trace (VIDEOX_PERF_TRACE), in the event-script format that
// replay reads (docs/EVENT_SCRIPTS.md). Made here and nowhere else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/json_fields.h"
#include "vxperf/engine.h"
#include "vxperf/model.h"
#include "vxperf/peak.h"

namespace vxperf::detail {

struct Request;

// The first line: the settings as variables, the device, the topology.
std::string config_event(const Settings& settings, const std::optional<std::string>& device_name,
                         int device_index, const Topology& topology);
std::string model_event(std::string_view stage, const ModelInfo& info);
// One request, begin to end. `device_ms[i]` is pair i's device span, or negative when unread.
std::vector<std::string> request_events(const Request& request,
                                        const std::vector<double>& device_ms, double t_end,
                                        const std::optional<MemoryPeaks>& peaks);
std::string finish_event(double t);
// A measured peak handed to the engine (device -1: the host).
std::string peak_event(int device, const MeasuredPeak& peak);

// Training events stay JSON until their step settles: only then are device times known.
Json train_model_event(const ModelInfo& info, std::int64_t trainable);
Json micro_event(const char* kind, double t);  // "micro_enter" / "micro_exit"
Json memory_event(const MemoryPeaks& peaks);

}  // namespace vxperf::detail
