// The live trace (VIDEOX_PERF_TRACE) as an observer: every measurement point of the run written
// in the event-script format (docs/EVENT_SCRIPTS.md), so that `vxperf replay` reproduces the run's
// records and `vxperf trace` draws it.
//
// Thread safety: requests' callbacks come from their threads; the training half's from the
// training thread (TrainTrace is touched by it alone); the writer serializes the file.
#pragma once

#include <functional>
#include <string>

#include "schema/event_kinds.h"
#include "trace/trace_events.h"
#include "trace/trace_writer.h"
#include "trace/train_trace.h"
#include "vxperf/observer.h"
#include "vxperf/sink.h"

namespace vxperf::internal {

// The trace's first line and where it goes, known once the device is: made by the engine.
struct TraceHeader {
  std::string config_line;
  int rank = 0;
  int world_size = 1;
};
using TraceHeaderFn = std::function<TraceHeader(int device)>;

class LiveTrace final : public Observer {
 public:
  // `notice` reports a path that cannot be written, once.
  LiveTrace(std::string base_path, LogFn notice, TraceHeaderFn header);

  void on_begin(const Span& span) override;
  void on_end(const Span& span) override;
  void on_request(const SettledRequest& request) override;
  void on_train_call(const TrainCall& call) override;
  void on_train_note(std::uint64_t id, const TrainCallNote& note) override;
  void on_train_settled(std::uint64_t id, std::optional<double> device_ms,
                        std::int64_t ready_after) override;
  void on_train_progress(int device, bool all) override;
  void on_window_readings(const DeviceReadings& readings,
                          std::optional<std::uint64_t> closing_call) override;
  void on_model(std::string_view stage, const ModelInfo& info) override;
  void on_train_model(const ModelInfo& info, std::int64_t trainable) override;
  void on_topology(const Topology& topology) override;
  // Every moment with nothing but its time, whatever its kind: its event, in the steps' order.
  void on_point(std::string_view event, double t) override { train_.add(point_event(event, t)); }
  void on_train_end(double t) override;
  void on_peak(int device, const MeasuredPeak& peak) override;
  void on_finish(double t) override;

 private:
  // Writes the config line first, once, with what is known of `device` now.
  void ensure_header(int device);

  TraceWriter writer_;
  TraceHeaderFn header_;
  TrainTrace train_;
};

}  // namespace vxperf::internal
