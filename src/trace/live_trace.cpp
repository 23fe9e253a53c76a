#include "trace/live_trace.h"

#include "schema/event_kinds.h"
#include "trace/trace_events.h"

namespace vxperf::internal {

LiveTrace::LiveTrace(std::string base_path, LogFn notice, TraceHeaderFn header)
    : writer_(std::move(base_path), std::move(notice)), header_(std::move(header)) {}

void LiveTrace::ensure_header(int device) {
  if (writer_.has_header()) return;
  TraceHeader h = header_(device);
  writer_.write_header(h.config_line, h.rank, h.world_size);
}

void LiveTrace::on_begin(const Span& span) {
  if (span.kind == SpanKind::kMicroStep) train_.add(micro_event(event_name(EventKind::kMicroEnter), span.t0));
}

void LiveTrace::on_end(const Span& span) {
  if (span.kind == SpanKind::kMicroStep) train_.add(micro_event(event_name(EventKind::kMicroExit), span.t1));
}

void LiveTrace::on_request(const SettledRequest& request) {
  ensure_header(request.device);
  writer_.write_block(request_events(request));
}

void LiveTrace::on_train_call(const TrainCall& call) { train_.add_call(call); }

void LiveTrace::on_train_note(std::uint64_t id, const TrainCallNote& note) {
  train_.note(id, note);
}

void LiveTrace::on_train_settled(std::uint64_t id, std::optional<double> device_ms,
                                 std::int64_t ready_after) {
  train_.settle(id, device_ms, ready_after);
}

void LiveTrace::on_train_progress(int device, bool all) {
  ensure_header(device);
  train_.flush(writer_, all);
}

void LiveTrace::on_window_readings(const DeviceReadings& readings,
                                   std::optional<std::uint64_t> closing_call) {
  train_.add_memory(readings, closing_call);
}

void LiveTrace::on_model(std::string_view stage, const ModelInfo& info) {
  writer_.write(model_event(stage, info));
}

void LiveTrace::on_train_model(const ModelInfo& info, std::int64_t trainable) {
  train_.add(train_model_event(info, trainable));
}

void LiveTrace::on_train_end(double /*t*/) {  // its point came through on_point, just before
  ensure_header(-1);
  train_.flush(writer_, true);
}

void LiveTrace::on_topology(const Topology& topology) {
  // Before the first line, that line will say it.
  if (writer_.has_header()) writer_.write(topology_event(topology));
}

void LiveTrace::on_peak(int device, const MeasuredPeak& peak) {
  // So that a replay prices against the same peak.
  writer_.write(peak_event(device, peak));
}

void LiveTrace::on_finish(double t) {
  ensure_header(-1);
  writer_.write(finish_event(t));
}

}  // namespace vxperf::internal
